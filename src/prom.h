/*
 * prom.h - the Prometheus text exposition format 0.0.4:
 * escaping, number formatting, the latency buckets and the GET /metrics
 * document built from what the state holds.  Pure: no I/O, no clock.
 */
#ifndef ORGW_PROM_H
#define ORGW_PROM_H

#include <stdint.h>

#include <cJSON.h>

#include "buf.h"
#include "latency.h"

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"


/* Appends v escaped as a label value (backslash, double quote and line
 * feed become \\, \" and \n; all other bytes pass).  NULL is "". */
enum orgw_err prom_escape_label(struct buf *b, const char *v);

/* Appends v escaped as HELP text (backslash and line feed only). */
enum orgw_err prom_escape_help(struct buf *b, const char *v);

/* Formats v into dst (at least 32 bytes): the shortest "%.*g" that
 * reads back as v, "+Inf", "-Inf" or "NaN".  Integers up to 2^53 come
 * out in full (no exponent below 1e17). */
void prom_number(char *dst, size_t n, double v);

/*
 * Appends the /metrics document to out.  models (borrowed) is an object
 * by model id, each member an object holding (every part optional):
 *   "stats":   the model's /stats counters (requests, tokens, money),
 *   "metrics": its per-provider outcomes, tokens and trips, latency
 *              histograms and lock changes (both ledger_render_cell),
 *   "cooling": the number of providers cooling now.
 * in_flight < 0 leaves out orgw_requests_in_flight; lost_updates (the
 * state's LOST_UPDATES) < 0 leaves out
 * orgw_state_lost_updates_total.  Every family gets
 * its HELP and TYPE lines, even with no sample.  ORGW_ENOMEM when the
 * buffer could not grow (out then holds part of the document).
 */
enum orgw_err prom_render(struct buf *out, const cJSON *models,
			  int64_t in_flight, int64_t lost_updates);

/*
 * Appends the team keys' series (orgw_key_*, labelled with the key's
 * name, never crossed with the model and provider series) from keys,
 * the /stats "keys" object (teamauth_keys_tree); nothing when it has
 * none.
 */
enum orgw_err prom_render_keys(struct buf *out, const cJSON *keys);

#endif
