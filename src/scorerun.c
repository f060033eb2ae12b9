/*
 * scorerun.c - a scoring run over many models.
 *
 * The network part (every model's fetch) happens with no state lock
 * held; each model's candidates are then written in one short
 * transaction, so live workers are never blocked by a slow fetch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "clock.h"
#include "record.h"
#include "rescore.h"
#include "scorerun.h"
#include "state.h"

size_t
scorerun_models(const struct orgw_conf *c, struct scorerun_model *v,
		size_t n, int parallel, int64_t timeout_ms, bool dry_run)
{
	size_t i, failed = 0;
	int64_t t;

	(void)parallel;
	for (i = 0; i < n; i++) {
		t = clock_mono_ms();
		v[i].err = rescore_fetch(c, v[i].model, timeout_ms, &v[i].res,
					 v[i].error, sizeof(v[i].error));
		v[i].ms = clock_mono_ms() - t;
		if (v[i].err != ORGW_OK)
			failed++;
		if (!dry_run)
			state_store_candidates(
				c, v[i].model,
				v[i].err == ORGW_OK ? &v[i].res : NULL,
				v[i].error, clock_now_s());
	}
	return failed;
}

void
scorerun_free(struct scorerun_model *v, size_t n)
{
	size_t i;

	for (i = 0; v != NULL && i < n; i++)
		score_result_free(&v[i].res);
}

struct list_ctx {
	struct scorerun_model *v;
	size_t n, cap;
	bool oom;
};

static void
list_add(void *arg, const char *model)
{
	struct list_ctx *l = arg;
	struct scorerun_model *nv;

	if (l->oom)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		if ((nv = realloc(l->v, cap * sizeof(*nv))) == NULL) {
			l->oom = true;
			return;
		}
		l->v = nv;
		l->cap = cap;
	}
	memset(&l->v[l->n], 0, sizeof(l->v[l->n]));
	snprintf(l->v[l->n].model, sizeof(l->v[l->n].model), "%s", model);
	l->n++;
}

struct scorerun_model *
scorerun_list(const struct orgw_conf *c, size_t *n)
{
	struct list_ctx l = {NULL, 0, 0, false};

	state_models(c, list_add, &l);
	if (l.oom) {
		free(l.v);
		*n = 0;
		return NULL;
	}
	*n = l.n;
	return l.v;
}

char *
scorerun_cron_json(const struct orgw_conf *c)
{
	struct scorerun_model *v;
	size_t n, i, failed;
	cJSON *o, *models, *m;
	char *s = NULL;
	bool ok;

	v = scorerun_list(c, &n);
	failed = scorerun_models(c, v, n, SCORERUN_PARALLEL,
				 SCORERUN_TIMEOUT_MS, false);
	o = cJSON_CreateObject();
	ok = o && cJSON_AddNumberToObject(o, "scored_at",
					   (double)clock_now_s()) &&
	     cJSON_AddNumberToObject(o, "models_total", (double)n) &&
	     cJSON_AddNumberToObject(o, "models_failed", (double)failed) &&
	     (models = cJSON_AddObjectToObject(o, "models")) != NULL;
	for (i = 0; ok && i < n; i++) {
		const struct scorerun_model *r = &v[i];
		ok = (m = cJSON_AddObjectToObject(models, r->model)) != NULL;
		if (ok && r->err == ORGW_OK)
			ok = cJSON_AddStringToObject(
				     m, "winner",
				     r->res.n_ranked ? r->res.v[0].tag : "") &&
			     cJSON_AddNumberToObject(m, "candidates",
						     (double)r->res.n_ranked) &&
			     cJSON_AddNumberToObject(m, "excluded",
						     (double)(r->res.n -
							      r->res.n_ranked));
		else if (ok)
			ok = cJSON_AddStringToObject(m, "error", r->error) !=
			     NULL;
		ok = ok && cJSON_AddNumberToObject(m, "fetch_ms",
						   (double)r->ms);
	}
	if (ok)
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	scorerun_free(v, n);
	free(v);
	return s;
}
