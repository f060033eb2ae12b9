/*
 * dump.h - the JSON-lines form of the whole state (orgw-score --dump and
 * --load), the same for both back-ends, so a state moves with
 *   STATE_BACKEND=gdbm orgw-score --dump | STATE_BACKEND=redis orgw-score --load
 * One line per key: {"key":"<key>","value":<value>}, where value is the
 * stored JSON itself when it is an object or an array (every record of
 * docs/design.md 7), else the stored text as a JSON string.  Pure (cJSON only).
 */
#ifndef ORGW_DUMP_H
#define ORGW_DUMP_H

#include "orgw.h"

/* The line for key and val, without '\n': cJSON-allocated text (free
 * with dump_free), or NULL when out of memory. */
char *dump_line(const char *key, const char *val);

/*
 * Parses one line (len bytes, no need for a NUL; a trailing '\n' or
 * "\r\n" is allowed): *key and *val are malloc'd (caller frees both) and
 * val is the text to store.  ORGW_EINVAL for a line that is not such an
 * object (an empty key, a key with a control character, extra members
 * are allowed and ignored), ORGW_ENOMEM.
 */
enum orgw_err dump_parse(const char *line, size_t len, char **key,
			 char **val);

/* Frees a dump_line() result; NULL is a no-op. */
void dump_free(char *line);

#endif
