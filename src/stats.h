/*
 * stats.h - the GET /stats document (docs/design.md section 7).
 */
#ifndef ORGW_STATS_H
#define ORGW_STATS_H

#include <stdint.h>

#include <cJSON.h>

#include "buf.h"
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

/*
 * Appends the GET /metrics document (Prometheus text 0.0.4, prom.h) at
 * now (unix seconds) to out, from one reader transaction, with in_flight
 * the requests being served on this host (< 0: unknown, as in a CGI run;
 * the series is left out).  Unlike /stats, a state that cannot be read
 * is an error (the state's orgw_strerror code): a scrape that failed
 * must not look like counters reset to zero.  out belongs to the caller.
 */
enum orgw_err stats_metrics(const struct orgw_conf *c, int64_t now,
			    int64_t in_flight, struct buf *out);

#endif
