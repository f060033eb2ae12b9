/*
 * scorerun.h - one scoring run over many models (orgw-score, POST
 * /__cron): fetch every model's endpoints (in parallel, bounded), score,
 * and write each model's candidates.  Never touches a live lock.
 */
#ifndef ORGW_SCORERUN_H
#define ORGW_SCORERUN_H

#include "conf.h"
#include "score.h"

#define SCORERUN_PARALLEL 8
#define SCORERUN_TIMEOUT_MS 15000

struct scorerun_model {
	char model[ORGW_MODEL_MAX];
	enum orgw_err err;		/* ORGW_OK when fetched and scored */
	char error[128];		/* why not, when err != ORGW_OK */
	struct score_result res;	/* valid when err == ORGW_OK */
	int64_t ms;			/* fetch time */
	int64_t scored_at;		/* unix seconds the result is for */
	int utc_hhmm;			/* price clock used (HHMM, UTC) */
	bool saved;			/* the state write succeeded */
	enum orgw_err save_err;		/* ORGW_OK, or why the write failed
					 * (not tried in a dry run) */
};

/*
 * Scores the n models of v (model names filled in by the caller, the
 * rest zeroed), at most parallel fetches at once, each bounded by
 * timeout_ms from its own start.  Each model is scored at the UTC time
 * its fetch completed.  Unless dry_run, writes each model's candidates
 * in its own short transaction as soon as its fetch ends (a failed
 * fetch keeps the old candidates and records the error); no lock is
 * held during any fetch.  Returns how many models failed (fetch, score
 * or state write).  Results stay in v; free them with scorerun_free().
 * curl_global_init must have run.
 */
size_t scorerun_models(const struct orgw_conf *c, struct scorerun_model *v,
		       size_t n, int parallel, int64_t timeout_ms,
		       bool dry_run);

/* Frees the score results held by the n entries of v (not v itself). */
void scorerun_free(struct scorerun_model *v, size_t n);

/*
 * Lists every model to score (TARGET_MODEL, then MODELS_SEEN) into a
 * malloc'd array (*n entries); caller frees with scorerun_free + free.
 * NULL with *n == 0 when there is none or memory ran out.  Reads the
 * store in one reader transaction and never repairs it, so the state
 * file is left untouched (a dry run relies on this).
 */
struct scorerun_model *scorerun_list(const struct orgw_conf *c, size_t *n);

/*
 * Adds model to the malloc'd list *v of *n entries (growing it), unless
 * it is already there.  ORGW_EINVAL when model is not a valid model id
 * (reqval_model_ok), ORGW_ENOMEM.
 */
enum orgw_err scorerun_add(struct scorerun_model **v, size_t *n,
			   const char *model);

/*
 * POST /__cron: scores every seen and target model (writing the
 * candidates) and returns a JSON summary, cJSON-allocated (free with
 * record_free), or NULL:
 *   {"scored_at", "models_total", "models_failed", "models": {"<id>":
 *    {"winner", "scored_at", "candidates", "excluded", "fetch_ms"} or
 *    {"error", "fetch_ms"}}}
 */
char *scorerun_cron_json(const struct orgw_conf *c);

#endif
