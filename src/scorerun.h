/*
 * scorerun.h - fetch models' endpoints from OpenRouter and score them
 * (the network half of scoring; score.c is the pure half): one model
 * inline (scorerun_fetch: the gateway, on a model's first request) or a
 * run over many (orgw-score, POST /__cron: fetch every model's
 * endpoints in parallel, bounded, score, and write each model's
 * candidates).  Never touches a live lock.  The state's upkeep before a
 * run (scorerun_prune, scorerun_fold, scorerun_conv_sweep) and the list
 * of models it scores (scorerun_list) are state_upkeep.c's.
 */
#ifndef ORGW_SCORERUN_H
#define ORGW_SCORERUN_H

#include "conf.h"
#include "score.h"

#define SCORERUN_PARALLEL 8
#define SCORERUN_TIMEOUT_MS 15000

/*
 * Endpoints body cap.  A real response is a few KiB (one object per
 * provider); score.c refuses more than SCORE_MAX_ENDPOINTS (4096) anyway,
 * about 3 MiB.  Reading a larger body only to parse it and refuse it cost
 * a worker over 400 MiB of RSS for a 50 MB response (t0770), and
 * orgw-score fetches up to 8 at once, so bodies past 4 MiB are refused
 * while they arrive.
 */
#define SCORERUN_MAX_BYTES (4u * 1024 * 1024)
#define SCORERUN_INLINE_TIMEOUT_MS 5000

/* Writes "<UPSTREAM_URL>/models/<model>/endpoints" into dst (size n); the
 * model's '/' stays a path separator, never %2F (docs/upstream.md 1).
 * Returns false when it does not fit. */
bool scorerun_url(const struct orgw_conf *c, const char *model, char *dst,
		  size_t n);

/*
 * Scores an endpoints answer that arrived with HTTP status at clock time
 * utc_hhmm.  On ORGW_OK the caller owns *res (score_result_free);
 * otherwise err says why ("endpoints HTTP 404", "endpoints response
 * unreadable"), and ORGW_ENOENT means the model does not exist (404,
 * or 400 for an id that is no model id).
 * Shared by scorerun_fetch() and the parallel run.
 */
enum orgw_err scorerun_answer(const struct score_params *p, long status,
			      const char *body, size_t len, int utc_hhmm,
			      struct score_result *res, char *err,
			      size_t errlen);

/*
 * GETs and scores the endpoints of model at the current UTC time.  On
 * ORGW_OK the caller owns *res (score_result_free).  Otherwise err holds
 * a short reason ("endpoints HTTP 404", "timeout", ...); ORGW_ENOENT
 * when OpenRouter does not know the model.
 */
enum orgw_err scorerun_fetch(const struct orgw_conf *c, const char *model,
			     int64_t timeout_ms, struct score_result *res,
			     char *err, size_t errlen);

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
 * Before a scoring run that writes (orgw-score without --dry-run,
 * POST /__cron): in one exclusive transaction, migrates the old
 * MODELS_SEEN list to MODEL_SEEN:<model> keys and, past MAX_MODELS,
 * drops the longest unused models (last use: the lock's last_used, else
 * first seen).  *dropped says how many.  Then folds the ledger's old
 * days (scorerun_fold) and sweeps the conversations
 * (scorerun_conv_sweep).  Logs and returns the pruning's error.
 */
enum orgw_err scorerun_prune(const struct orgw_conf *c, size_t *dropped);

/* A conversation record unused this long is dropped: a day, far past any
 * provider's cache lifetime. */
#define SCORERUN_CONV_MAX_AGE_S 86400

/*
 * In one exclusive transaction: drops the conversation records
 * (CONV:<model>:<hash>) whose last turn is more than a day before now,
 * and past MAX_CONVERSATIONS the least recently used; and the pressure
 * records (PRESSURE:<model>:<tag>) that ended.  *dropped says how many
 * conversations went.  scorerun_prune() runs it.  Logs its error.
 */
enum orgw_err scorerun_conv_sweep(const struct orgw_conf *c, int64_t now,
				  size_t *dropped);

/*
 * In one exclusive transaction, adds every ledger cell of a day before
 * the LEDGER_DAYS that end at now to its model, API and provider's
 * LEDGER_TOTAL cell and deletes it.  *folded says how many cells.  Logs
 * and returns the error.
 */
enum orgw_err scorerun_fold(const struct orgw_conf *c, int64_t now,
			    size_t *folded);

/*
 * Lists every model to score (TARGET_MODEL, then MODEL_SEEN:<model> keys
 * and the old MODELS_SEEN list) into a
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

/*
 * POST /__cron under the run lock, so the gateway needs no store of its
 * own: begins a run (store_run_begin(): one at a time, at most every
 * min_interval_s seconds at now), runs scorerun_cron_json() into *json
 * (free with record_free; NULL when the run failed), and ends the run.
 * ORGW_EBUSY with *retry_after_s when another run holds or held the
 * lock too recently, another error when the lock is unavailable (*json
 * then NULL).
 */
enum orgw_err scorerun_cron_locked(const struct orgw_conf *c,
				   int64_t min_interval_s, int64_t now,
				   char **json, int64_t *retry_after_s);

#endif
