/*
 * jsonin.h - cJSON_ParseWithLength() with a fast path for small integers.
 * Pure.  The header stays cJSON-free: struct cJSON is the tag behind
 * cJSON.h's typedef, so callers get a cJSON * they use unchanged.
 */
#ifndef ORGW_JSONIN_H
#define ORGW_JSONIN_H

#include <stddef.h>

struct cJSON;

/*
 * Like cJSON_ParseWithLength(text, len) (cJSON 1.7.15 as Debian 12 ships
 * it): the same tree or the same refusal, faster numbers.  text is
 * borrowed for the call and need not be NUL-terminated; bytes after the
 * first complete value are ignored, as cJSON ignores them.  To get
 * cJSON_Parse(s) exactly, pass strlen(s) + 1.  Returns a tree whose
 * nodes, keys and strings come from cJSON_malloc(), owned by the caller,
 * who frees it with cJSON_Delete(); or NULL when cJSON would refuse the
 * text or memory ran out (nothing is left allocated then).
 */
struct cJSON *jsonin_parse(const char *text, size_t len);

#endif
