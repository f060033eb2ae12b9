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
	enum orgw_err err;		/* ORGW_OK when scored */
	char error[128];		/* why not, when err != ORGW_OK */
	struct score_result res;	/* valid when err == ORGW_OK */
	int64_t ms;			/* fetch time */
};

/*
 * Scores the n models of v (model names filled in by the caller), at
 * most parallel fetches at once, each bounded by timeout_ms.  Unless
 * dry_run, writes each model's candidates (failures keep the old ones).
 * Returns how many failed.  Free results with scorerun_free().
 */
size_t scorerun_models(const struct orgw_conf *c, struct scorerun_model *v,
		       size_t n, int parallel, int64_t timeout_ms,
		       bool dry_run);

void scorerun_free(struct scorerun_model *v, size_t n);

/*
 * Lists every model to score (MODELS_SEEN plus TARGET_MODEL) into a
 * malloc'd array (*n entries); caller frees with scorerun_free + free.
 */
struct scorerun_model *scorerun_list(const struct orgw_conf *c, size_t *n);

/*
 * POST /__cron: scores every seen and target model and returns a JSON
 * summary (cJSON-allocated; free with record_free), or NULL.
 */
char *scorerun_cron_json(const struct orgw_conf *c);

#endif
