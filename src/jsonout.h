/*
 * jsonout.h - cJSON_PrintUnformatted() with a fast path for integral
 * numbers.  Pure.  The header stays cJSON-free: struct cJSON is the tag
 * behind cJSON.h's typedef, so callers pass their cJSON * unchanged.
 */
#ifndef ORGW_JSONOUT_H
#define ORGW_JSONOUT_H

#include <stddef.h>

struct cJSON;

/*
 * Like cJSON_PrintUnformatted(item): the same bytes (cJSON 1.7.15),
 * faster numbers.  item is borrowed for the call.  Returns text
 * allocated with cJSON_malloc(), owned by the caller, who frees it with
 * cJSON_free(); or NULL when out of memory or when cJSON would refuse
 * the item too (NULL item, invalid type, cJSON_Raw without text, more
 * than INT_MAX - 2 bytes of output).  Nothing is left allocated on
 * failure.
 */
char *jsonout_print(const struct cJSON *item);

/* Room jsonout_number() needs: cJSON's number_buffer. */
#define JSONOUT_NUMBER_BYTES 26

/*
 * Writes the bytes jsonout_print() (and so cJSON_PrintUnformatted())
 * prints for a number holding d into buf, which has room for
 * JSONOUT_NUMBER_BYTES bytes; the text is not NUL-terminated.  Returns
 * its length (1 to JSONOUT_NUMBER_BYTES - 1), or 0 when cJSON's print
 * would fail.  For codecs that print numbers without a cJSON tree
 * (record_flat.c), so one piece of code decides how every number looks.
 */
size_t jsonout_number(char *buf, double d);

#endif
