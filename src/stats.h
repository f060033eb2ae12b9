/*
 * stats.h - the GET /stats document (SPEC section 7).
 */
#ifndef ORGW_STATS_H
#define ORGW_STATS_H

#include <cJSON.h>

#include "conf.h"

/*
 * The GET /stats document at now (unix seconds) as a cJSON tree (the
 * /status page renders it).  Returns a tree the caller frees with
 * cJSON_Delete, or NULL when out of memory.
 */
cJSON *stats_tree(const struct orgw_conf *c, int64_t now);

/*
 * Builds the GET /stats document at now (unix seconds) from one reader
 * transaction on the state; a store that cannot be read gives the
 * document with "state_error" and no models.  Returns cJSON-allocated
 * text (caller frees with record_free) or NULL when out of memory.
 */
char *stats_json(const struct orgw_conf *c, int64_t now);

#endif
