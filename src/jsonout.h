/*
 * jsonout.h - cJSON_PrintUnformatted() with a fast path for integral
 * numbers.  Pure.  The header stays cJSON-free: struct cJSON is the tag
 * behind cJSON.h's typedef, so callers pass their cJSON * unchanged.
 */
#ifndef ORGW_JSONOUT_H
#define ORGW_JSONOUT_H

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

#endif
