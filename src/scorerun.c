/*
 * scorerun.c - scoring runs: one model inline (the gateway, on a model's
 * first request) or many in parallel (orgw-score, POST /__cron).
 *
 * Shape: fetchmany_run() fetches every model's endpoints on one libcurl
 * multi handle, at most `parallel` at once, each with its own timeout.
 * As each fetch ends, its done() callback scores the body (score.c, at
 * the UTC time of that moment; providers cooling down are excluded, as
 * "cooling") and, unless this is a dry run, writes the
 * model's candidates with state_store_candidates(): one short exclusive
 * transaction per model.  No state lock is ever held while waiting on
 * the network, so live workers are never blocked by a slow fetch, and
 * the live lock BEST_PROVIDER is never written here.
 *
 * A model whose fetch, status or body is bad keeps its old candidates
 * (state_store_candidates records the error and the attempt time) and
 * does not stop the others.
 *
 * One model alone (the gateway's inline scoring on a model's first
 * request) goes through scorerun_fetch(): a blocking upstream_get() of
 * its endpoints, scored by the same scorerun_answer() as a run's
 * fetches.  No state access there: the caller writes the result with
 * state_route_scored(), outside of any network wait.
 *
 * Ownership: a struct scorerun_model owns its score_result
 * (scorerun_free); lists are malloc'd arrays the caller frees.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "clock.h"
#include "failover.h"
#include "fetchmany.h"
#include "log.h"
#include "record.h"
#include "reqval.h"
#include "scorerun.h"
#include "state.h"
#include "store.h"
#include "upstream.h"

bool
scorerun_url(const struct orgw_conf *c, const char *model, char *dst,
	     size_t n)
{
	int r = snprintf(dst, n, "%s/models/%s/endpoints", c->upstream_url,
			 model);

	return r > 0 && (size_t)r < n;
}

static void
run_params(const struct orgw_conf *c, struct score_params *p)
{
	p->hit_rate = c->hit_rate;
	p->cache_bonus = c->cache_bonus;
	p->min_uptime = c->min_uptime;
	p->hit_evidence_tokens = c->hit_rate_evidence_tokens;
	p->hits = NULL;
	p->n_hits = 0;
	p->secret = c->openrouter_api_key;
}

enum orgw_err
scorerun_answer(const struct score_params *p, long status, const char *body,
		size_t len, int utc_hhmm, struct score_result *res, char *err,
		size_t errlen)
{
	enum orgw_err e;

	memset(res, 0, sizeof(*res));
	if (status != 200) {
		/* docs/upstream.md 1: 403, 404 (unknown model), 500; an id
		 * that is no valid model id at all is answered 400. */
		snprintf(err, errlen, "endpoints HTTP %ld", status);
		return status == 404 || status == 400 ? ORGW_ENOENT :
							 ORGW_EUPSTREAM;
	}
	e = score_endpoints(body, len, utc_hhmm, p, res);
	if (e != ORGW_OK)
		snprintf(err, errlen, "endpoints response unreadable");
	return e;
}

enum orgw_err
scorerun_fetch(const struct orgw_conf *c, const char *model,
	       int64_t timeout_ms, struct score_result *res, char *err,
	       size_t errlen)
{
	struct score_params p;
	char url[4096], *body = NULL;
	size_t len = 0;
	long status = 0;
	enum orgw_err e;

	memset(res, 0, sizeof(*res));
	if (!scorerun_url(c, model, url, sizeof(url))) {
		snprintf(err, errlen, "model id too long");
		return ORGW_EINVAL;
	}
	e = upstream_get(url, c->openrouter_api_key, timeout_ms,
			 SCORERUN_MAX_BYTES, &body, &len, &status);
	if (e != ORGW_OK) {
		snprintf(err, errlen, "endpoints fetch: %s",
			 e == ORGW_ETOOBIG ? "response too large" :
					     "no response");
		free(body);
		return e;
	}
	run_params(c, &p);
	e = scorerun_answer(&p, status, body, len, clock_utc_hhmm(), res, err,
			    errlen);
	free(body);
	return e;
}

struct run_ctx {
	const struct orgw_conf *c;
	struct scorerun_model *v;
	size_t *map;		/* fetch item -> index into v */
	struct score_params p;
	bool dry_run;
};

/*
 * docs/design.md section 6: a provider cooling down (PROVIDER_COOLDOWN:<model>:<tag>
 * until > now) is never ranked; orgw-score shows it as "cooling".  Moves
 * such endpoints of res to the excluded ones.  Reads the store in one
 * reader transaction that never repairs it (a dry run leaves the file as
 * it is); a store that cannot be read excludes nothing, with a warning.
 */
static void
exclude_cooling(const struct orgw_conf *c, const char *model,
		struct score_result *res, int64_t now)
{
	struct rec_cooldown cd;
	struct store *s = NULL;
	char k[ORGW_MODEL_MAX + ORGW_TAG_MAX + 32], why[96], *v;
	enum orgw_err err;
	size_t i;

	if (res->n_ranked == 0)
		return;
	err = store_open(&s, c, false, STORE_LOCK_TIMEOUT_MS);
	/* Downwards: an exclusion shifts only the ranked ones after it. */
	for (i = res->n_ranked; err == ORGW_OK && i-- > 0;) {
		v = NULL;
		(void)statekeys_make(k, sizeof(k), SK_PROVIDER_COOLDOWN, model,
				     res->v[i].tag);
		err = store_get(s, k, &v);
		if (err == ORGW_OK && v != NULL &&
		    record_cooldown_decode(v, &cd) == ORGW_OK &&
		    failover_breaker_cooling(&cd, now)) {
			snprintf(why, sizeof(why),
				 "%lld s left (%.40s)",
				 (long long)(cd.until - now), cd.reason);
			score_result_exclude(res, i, "cooling", why);
		}
		free(v);
	}
	if (s != NULL && store_close(s) != ORGW_OK && err == ORGW_OK)
		err = ORGW_EIO;
	if (err != ORGW_OK)
		log_warn("scorer: %s: cooldowns not read from %s: %s", model,
			 c->state_path, orgw_strerror(err));
}

/*
 * The measured hit rates of model (state_hits) into *hits (malloc'd,
 * caller frees; NULL when none), read in one reader transaction that
 * never repairs the store.  A store that cannot be read gives none, with
 * a warning: the model is scored with HIT_RATE.
 */
static void
read_hits(const struct orgw_conf *c, const char *model,
	  struct score_hit **hits, size_t *n)
{
	struct store *s = NULL;
	enum orgw_err err;

	*hits = NULL;
	*n = 0;
	err = store_open(&s, c, false, STORE_LOCK_TIMEOUT_MS);
	if (err == ORGW_OK)
		err = state_hits(s, model, hits, n);
	if (s != NULL && store_close(s) != ORGW_OK && err == ORGW_OK)
		err = ORGW_EIO;
	if (err != ORGW_OK) {
		free(*hits);
		*hits = NULL;
		*n = 0;
		log_warn("scorer: %s: hit rates not read from %s: %s", model,
			 c->state_path, orgw_strerror(err));
	}
}

/* fetchmany done(): score model i and write its candidates. */
static void
run_done(void *arg, size_t i, struct fetchmany_item *it)
{
	struct run_ctx *x = arg;
	struct scorerun_model *r = &x->v[x->map[i]];

	r->ms = it->ms;
	r->scored_at = clock_now_s();
	r->utc_hhmm = clock_utc_hhmm();
	if (it->err != ORGW_OK) {
		r->err = it->err;
		snprintf(r->error, sizeof(r->error), "endpoints fetch: %.100s",
			 it->error);
	} else {
		struct score_params p = x->p;
		struct score_hit *hits;

		read_hits(x->c, r->model, &hits, &p.n_hits);
		p.hits = hits;
		r->err = scorerun_answer(&p, it->status, it->body,
					 it->len, r->utc_hhmm, &r->res,
					 r->error, sizeof(r->error));
		free(hits);
		if (r->err == ORGW_OK)
			exclude_cooling(x->c, r->model, &r->res,
					r->scored_at);
	}
	if (x->dry_run)
		return;
	r->save_err = state_store_candidates(x->c, r->model,
					     r->err == ORGW_OK ? &r->res : NULL,
					     r->error, r->scored_at);
	r->saved = r->save_err == ORGW_OK;
	if (!r->saved)
		log_warn("scorer: %s: candidates not written: %s", r->model,
			 orgw_strerror(r->save_err));
}

size_t
scorerun_models(const struct orgw_conf *c, struct scorerun_model *v,
		size_t n, int parallel, int64_t timeout_ms, bool dry_run)
{
	struct fetchmany_item *items = NULL;
	struct fetchmany_opts o;
	struct run_ctx x;
	char *urls = NULL;
	size_t i, k = 0, failed = 0, ulen;
	enum orgw_err err = ORGW_OK;

	if (n == 0)
		return 0;
	memset(&x, 0, sizeof(x));
	x.c = c;
	x.v = v;
	x.dry_run = dry_run;
	run_params(c, &x.p);
	if (parallel < 1)
		parallel = 1;
	if (parallel > FETCHMANY_PARALLEL_MAX)
		parallel = FETCHMANY_PARALLEL_MAX;
	if (timeout_ms <= 0)
		timeout_ms = SCORERUN_TIMEOUT_MS;
	for (i = 0; i < n; i++) {
		score_result_free(&v[i].res);
		v[i].err = ORGW_EUPSTREAM;
		v[i].error[0] = '\0';
		v[i].ms = 0;
		v[i].saved = false;
		v[i].save_err = ORGW_OK;
	}
	/* Room for "<UPSTREAM_URL>/models/<model>/endpoints" each. */
	ulen = strlen(c->upstream_url) + ORGW_MODEL_MAX +
	       sizeof("/models//endpoints");
	if (n > SIZE_MAX / ulen ||
	    (items = calloc(n, sizeof(*items))) == NULL ||
	    (x.map = calloc(n, sizeof(*x.map))) == NULL ||
	    (urls = malloc(n * ulen)) == NULL) {
		err = ORGW_ENOMEM;
		goto out;
	}
	/*
	 * A model id the gateway would not accept, or one that makes an
	 * over-long URL, is never fetched (nor written): it fails here.
	 * scorerun_url keeps the id's '/' a path separator, never %2F
	 * (docs/upstream.md section 1).
	 */
	for (i = 0; i < n; i++) {
		char *u = urls + k * ulen;
		if (!reqval_model_ok(v[i].model) ||
		    !scorerun_url(c, v[i].model, u, ulen)) {
			v[i].err = ORGW_EINVAL;
			snprintf(v[i].error, sizeof(v[i].error),
				 "not a usable model id");
			continue;
		}
		items[k].url = u;
		x.map[k++] = i;
	}
	memset(&o, 0, sizeof(o));
	o.key = c->openrouter_api_key;
	o.parallel = parallel;
	o.timeout_ms = timeout_ms;
	o.max_bytes = SCORERUN_MAX_BYTES;
	o.done = run_done;
	o.arg = &x;
	err = fetchmany_run(items, k, &o);
out:
	for (i = 0; i < n; i++) {
		if (err != ORGW_OK && v[i].error[0] == '\0') {
			v[i].err = err;
			snprintf(v[i].error, sizeof(v[i].error),
				 "scoring run: %s", orgw_strerror(err));
		}
		if (v[i].err != ORGW_OK || (!dry_run && !v[i].saved))
			failed++;
	}
	free(urls);
	free(x.map);
	free(items);
	return failed;
}

void
scorerun_free(struct scorerun_model *v, size_t n)
{
	size_t i;

	for (i = 0; v != NULL && i < n; i++)
		score_result_free(&v[i].res);
}

enum orgw_err
scorerun_add(struct scorerun_model **v, size_t *n, const char *model)
{
	struct scorerun_model *nv;
	size_t i;

	if (!reqval_model_ok(model))
		return ORGW_EINVAL;
	for (i = 0; i < *n; i++)
		if (strcmp((*v)[i].model, model) == 0)
			return ORGW_OK;
	if (*n >= SIZE_MAX / sizeof(**v) - 1)
		return ORGW_ENOMEM;
	if ((nv = realloc(*v, (*n + 1) * sizeof(**v))) == NULL)
		return ORGW_ENOMEM;
	*v = nv;
	memset(&nv[*n], 0, sizeof(nv[*n]));
	snprintf(nv[*n].model, sizeof(nv[*n].model), "%s", model);
	(*n)++;
	return ORGW_OK;
}

/* The /__cron entry of one model into models; false on allocation
 * failure. */
static bool
cron_model(cJSON *models, const struct scorerun_model *r)
{
	const char *err = NULL;
	cJSON *m;
	bool ok;

	if ((m = cJSON_AddObjectToObject(models, r->model)) == NULL)
		return false;
	if (r->err != ORGW_OK)
		err = r->error;
	else if (!r->saved)
		err = "candidates not written: state store busy or broken";
	ok = true;
	if (r->err == ORGW_OK)
		ok = cJSON_AddStringToObject(m, "winner",
					     r->res.n_ranked ? r->res.v[0].tag :
							       "") != NULL &&
		     cJSON_AddNumberToObject(m, "scored_at",
					     (double)r->scored_at) != NULL &&
		     cJSON_AddNumberToObject(m, "candidates",
					     (double)r->res.n_ranked) != NULL &&
		     cJSON_AddNumberToObject(
			     m, "excluded",
			     (double)(r->res.n - r->res.n_ranked)) != NULL;
	if (ok && err != NULL)
		ok = cJSON_AddStringToObject(m, "error", err) != NULL;
	return ok && cJSON_AddNumberToObject(m, "fetch_ms", (double)r->ms) !=
			     NULL;
}

char *
scorerun_cron_json(const struct orgw_conf *c)
{
	struct scorerun_model *v;
	size_t n, i, failed, dropped;
	cJSON *o, *models = NULL;
	char *s = NULL;
	int64_t now = clock_now_s();
	bool ok;

	(void)scorerun_prune(c, &dropped);
	v = scorerun_list(c, &n);
	failed = scorerun_models(c, v, n, SCORERUN_PARALLEL,
				 SCORERUN_TIMEOUT_MS, false);
	o = cJSON_CreateObject();
	ok = o != NULL &&
	     cJSON_AddNumberToObject(o, "scored_at", (double)now) != NULL &&
	     cJSON_AddNumberToObject(o, "models_total", (double)n) != NULL &&
	     cJSON_AddNumberToObject(o, "models_failed", (double)failed) !=
		     NULL &&
	     (models = cJSON_AddObjectToObject(o, "models")) != NULL;
	for (i = 0; ok && i < n; i++)
		ok = cron_model(models, &v[i]);
	if (ok)
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	scorerun_free(v, n);
	free(v);
	return s;
}

enum orgw_err
scorerun_cron_locked(const struct orgw_conf *c, int64_t min_interval_s,
		     int64_t now, char **json, int64_t *retry_after_s)
{
	struct store_run *run = NULL;
	enum orgw_err err;

	*json = NULL;
	err = store_run_begin(c, min_interval_s, now, &run, retry_after_s);
	if (err != ORGW_OK)
		return err;
	*json = scorerun_cron_json(c);
	store_run_end(run);
	return ORGW_OK;
}
