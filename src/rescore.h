/*
 * rescore.h - fetch a model's endpoints from OpenRouter and score them
 * (the network half of scoring; score.c is the pure half).  Used inline
 * by the gateway on a model's first request, by POST /__cron and by
 * orgw-score.
 */
#ifndef ORGW_RESCORE_H
#define ORGW_RESCORE_H

#include "conf.h"
#include "score.h"

/*
 * Endpoints body cap.  A real response is a few KiB (one object per
 * provider); score.c refuses more than SCORE_MAX_ENDPOINTS (4096) anyway,
 * about 3 MiB.  Reading a larger body only to parse it and refuse it cost
 * a worker over 400 MiB of RSS for a 50 MB response (t0770), and
 * orgw-score fetches up to 8 at once, so bodies past 4 MiB are refused
 * while they arrive.
 */
#define RESCORE_MAX_BYTES (4u * 1024 * 1024)
#define RESCORE_INLINE_TIMEOUT_MS 5000

/* Writes "<UPSTREAM_URL>/models/<model>/endpoints" into dst (size n); the
 * model's '/' stays a path separator, never %2F (OPENROUTER.md 12.1).
 * Returns false when it does not fit. */
bool rescore_url(const struct orgw_conf *c, const char *model, char *dst,
		 size_t n);

/* Fills p from the configuration. */
void rescore_params(const struct orgw_conf *c, struct score_params *p);

/*
 * Scores an endpoints answer that arrived with HTTP status at clock time
 * utc_hhmm.  On ORGW_OK the caller owns *res (score_result_free);
 * otherwise err says why ("endpoints HTTP 404", "endpoints response
 * unreadable").  Shared by rescore_fetch() and the parallel scorer.
 */
enum orgw_err rescore_answer(const struct score_params *p, long status,
			     const char *body, size_t len, int utc_hhmm,
			     struct score_result *res, char *err,
			     size_t errlen);

/*
 * GETs and scores the endpoints of model at the current UTC time.  On
 * ORGW_OK the caller owns *res (score_result_free).  Otherwise err holds
 * a short reason ("endpoints HTTP 404", "timeout", ...).
 */
enum orgw_err rescore_fetch(const struct orgw_conf *c, const char *model,
			    int64_t timeout_ms, struct score_result *res,
			    char *err, size_t errlen);

#endif
