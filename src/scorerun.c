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
#include "ledger.h"
#include "log.h"
#include "record.h"
#include "reqval.h"
#include "scorerun.h"
#include "state.h"
#include "store.h"

#define SEEN_PREFIX statekeys_prefix(SK_MODEL_SEEN)
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

struct list_ctx {
	struct scorerun_model *v;
	size_t n;
	bool oom;
};

static void
list_seen(void *arg, const char *model, int64_t first_seen)
{
	struct list_ctx *l = arg;
	char safe[ORGW_MODEL_MAX];

	(void)first_seen;
	switch (scorerun_add(&l->v, &l->n, model)) {
	case ORGW_OK:
		break;
	case ORGW_EINVAL:
		log_warn("scorer: a seen model has a bad id \"%s\"",
			 log_safe(safe, sizeof(safe), model));
		break;
	default:
		l->oom = true;
		break;
	}
}

struct seen_ent {
	char model[ORGW_MODEL_MAX];
	int64_t first_seen, used;	/* used: last use, for pruning */
	bool legacy;			/* from MODELS_SEEN only */
};

struct prune_ctx {
	struct seen_ent *v;
	size_t n, cap;
	bool oom;
};

static void
prune_add(struct prune_ctx *p, const char *model, int64_t first_seen,
	  bool legacy)
{
	struct seen_ent *nv;
	size_t i;

	if (!reqval_model_ok(model) || strlen(model) >= ORGW_MODEL_MAX)
		return;
	for (i = 0; legacy && i < p->n; i++)
		if (strcmp(p->v[i].model, model) == 0)
			return;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		if ((nv = realloc(p->v, cap * sizeof(*nv))) == NULL) {
			p->oom = true;
			return;
		}
		p->v = nv;
		p->cap = cap;
	}
	memset(&p->v[p->n], 0, sizeof(p->v[0]));
	snprintf(p->v[p->n].model, sizeof(p->v[0].model), "%s", model);
	p->v[p->n].first_seen = first_seen;
	p->v[p->n].legacy = legacy;
	p->n++;
}

static int
prune_key(void *arg, const char *key, const char *val)
{
	int64_t fs = 0;

	(void)record_model_seen_decode(val, &fs);
	prune_add(arg, statekeys_is(key, SK_MODEL_SEEN), fs, false);
	return 0;
}

static void
prune_legacy(void *arg, const char *model, int64_t first_seen)
{
	prune_add(arg, model, first_seen, true);
}

static int
by_use(const void *a, const void *b)
{
	const struct seen_ent *x = a, *y = b;

	return x->used < y->used ? -1 : x->used > y->used;
}

/* Seen models in the order they were first seen (then by id). */
static int
by_first_seen(const void *a, const void *b)
{
	const struct seen_ent *x = a, *y = b;

	if (x->first_seen != y->first_seen)
		return x->first_seen < y->first_seen ? -1 : 1;
	return strcmp(x->model, y->model);
}

/* Seen models by id, for keep_has(). */
static int
by_model(const void *a, const void *b)
{
	return strcmp(((const struct seen_ent *)a)->model,
		      ((const struct seen_ent *)b)->model);
}

/*
 * The models the state keeps keys for: the seen ones (v, sorted by_model),
 * TARGET_MODEL's, and STATE_OTHER_MODEL, where requests on the others
 * are counted.
 */
struct keep {
	const struct orgw_conf *c;
	const struct seen_ent *v;
	size_t n;
};

static bool
keep_has(const struct keep *k, const char *model)
{
	struct seen_ent key;
	size_t i;

	if (strcmp(model, STATE_OTHER_MODEL) == 0)
		return true;
	for (i = 0; i < k->c->n_target_models; i++)
		if (strcmp(k->c->target_models[i], model) == 0)
			return true;
	if (strlen(model) >= sizeof(key.model))
		return false;
	snprintf(key.model, sizeof(key.model), "%s", model);
	return k->n > 0 &&
	       bsearch(&key, k->v, k->n, sizeof(*k->v), by_model) != NULL;
}

/*
 * The model of a key of a family the scorer sweeps (STATEKEY_SWEPT in
 * statekeys.c: every per-model family but MODEL_SEEN, which the prune
 * keeps, and the ledger's cells, which the fold keeps) into model (n
 * bytes); false for any other key.  The old release's STATS:/METRICS:
 * records are history that /stats adds in, never deleted.
 */
static bool
key_model(const char *key, char *model, size_t n)
{
	struct statekey_parts p;

	if (!statekeys_parse(key, &p) ||
	    !(statekeys_family(p.family)->flags & STATEKEY_SWEPT) ||
	    strlen(p.first) >= n)
		return false;
	memcpy(model, p.first, strlen(p.first) + 1);
	return true;
}

/* The keys of models the state no longer keeps, collected while the
 * store is walked and deleted after it. */
struct sweep_ctx {
	const struct keep *k;
	char **v;
	size_t n, cap;
	bool oom;
};

static int
sweep_key(void *arg, const char *key, const char *val)
{
	struct sweep_ctx *sw = arg;
	char model[ORGW_MODEL_MAX];

	(void)val;
	if (!key_model(key, model, sizeof(model)) || keep_has(sw->k, model))
		return 0;
	if (sw->n == sw->cap) {
		size_t cap = sw->cap ? sw->cap * 2 : 64;
		char **v = realloc(sw->v, cap * sizeof(*v));

		if (v == NULL) {
			sw->oom = true;
			return 1;
		}
		sw->v = v;
		sw->cap = cap;
	}
	if ((sw->v[sw->n] = strdup(key)) == NULL) {
		sw->oom = true;
		return 1;
	}
	sw->n++;
	return 0;
}

/* Deletes every per-model key of a model k does not keep; *n says how
 * many. */
static enum orgw_err
sweep(struct store *s, const struct keep *k, size_t *n)
{
	struct sweep_ctx sw = {k, NULL, 0, 0, false};
	enum orgw_err err;
	size_t i;

	err = store_each(s, "", sweep_key, &sw);
	if (err == ORGW_OK && sw.oom)
		err = ORGW_ENOMEM;
	for (i = 0; err == ORGW_OK && i < sw.n; i++)
		err = store_del(s, sw.v[i]);
	*n = err == ORGW_OK ? sw.n : 0;
	for (i = 0; i < sw.n; i++)
		free(sw.v[i]);
	free(sw.v);
	return err;
}

/* Reads the seen models (MODEL_SEEN:<model> keys and the old MODELS_SEEN
 * list) into p, sorted by id. */
static enum orgw_err
seen_read(struct store *s, struct prune_ctx *p)
{
	char *v = NULL;
	enum orgw_err err;

	if ((err = store_each(s, SEEN_PREFIX, prune_key, p)) != ORGW_OK ||
	    (err = store_get(s, statekeys_prefix(SK_MODELS_SEEN_OLD), &v)) != ORGW_OK)
		return err;
	if (v != NULL)
		(void)record_seen_each(v, prune_legacy, p);
	free(v);
	if (p->oom)
		return ORGW_ENOMEM;
	if (p->n > 1)
		qsort(p->v, p->n, sizeof(p->v[0]), by_model);
	return ORGW_OK;
}

struct scorerun_model *
scorerun_list(const struct orgw_conf *c, size_t *n)
{
	struct list_ctx l = {NULL, 0, false};
	struct prune_ctx p = {NULL, 0, 0, false};
	struct store *s = NULL;
	char *seen = NULL;
	enum orgw_err err;
	size_t i;

	*n = 0;
	for (i = 0; i < c->n_target_models && !l.oom; i++)
		if (scorerun_add(&l.v, &l.n, c->target_models[i]) ==
		    ORGW_ENOMEM)
			l.oom = true;
	/*
	 * A reader transaction, without the repair state_txn would try: a dry
	 * run must leave the file as it is.  An unreadable store lists the
	 * targets only; the writes that follow repair it.  The old
	 * MODELS_SEEN list is read too, until scorerun_prune() migrates it.
	 */
	err = store_open(&s, c, false, STORE_LOCK_TIMEOUT_MS);
	if (err == ORGW_OK) {
		err = store_each(s, SEEN_PREFIX, prune_key, &p);
		if (err == ORGW_OK)
			err = store_get(s, statekeys_prefix(SK_MODELS_SEEN_OLD), &seen);
		if (store_close(s) != ORGW_OK && err == ORGW_OK)
			err = ORGW_EIO;
	}
	if (err != ORGW_OK)
		log_warn("scorer: cannot read the seen models from %s: %s",
			 c->state_path, orgw_strerror(err));
	else if (seen != NULL)
		(void)record_seen_each(seen, prune_legacy, &p);
	free(seen);
	if (p.n > 1)
		qsort(p.v, p.n, sizeof(p.v[0]), by_first_seen);
	for (i = 0; i < p.n && !l.oom; i++)
		list_seen(&l, p.v[i].model, p.v[i].first_seen);
	if (p.oom)
		l.oom = true;
	free(p.v);
	if (l.oom) {
		free(l.v);
		return NULL;
	}
	*n = l.n;
	return l.v;
}

struct prune_args {
	const struct orgw_conf *c;
	size_t dropped;
	size_t swept;		/* keys of models no longer kept */
};

/* The pruning transaction: see scorerun_prune(). */
static enum orgw_err
do_prune(struct store *s, void *arg)
{
	struct prune_args *pa = arg;
	struct prune_ctx p = {NULL, 0, 0, false};
	struct rec_lock lock;
	char k[ORGW_MODEL_MAX + 32], *v = NULL;
	enum orgw_err err;
	size_t i, drop = 0;

	if ((err = store_each(s, SEEN_PREFIX, prune_key, &p)) != ORGW_OK)
		goto out;
	if ((err = store_get(s, statekeys_prefix(SK_MODELS_SEEN_OLD), &v)) != ORGW_OK)
		goto out;
	if (v != NULL)
		(void)record_seen_each(v, prune_legacy, &p);
	err = ORGW_ENOMEM;
	if (p.oom)
		goto out;
	for (i = 0; i < p.n; i++) {
		struct seen_ent *e = &p.v[i];
		char *t = NULL, *lv = NULL;

		(void)statekeys_make(k, sizeof(k), SK_MODEL_SEEN, e->model,
				     NULL);
		if (e->legacy &&
		    ((t = record_model_seen_encode(e->first_seen)) == NULL ||
		     (err = store_put(s, k, t)) != ORGW_OK)) {
			record_free(t);
			goto out;
		}
		record_free(t);
		e->used = e->first_seen;
		(void)statekeys_make(k, sizeof(k), SK_BEST_PROVIDER, e->model,
				     NULL);
		if ((err = store_get(s, k, &lv)) != ORGW_OK)
			goto out;
		if (lv != NULL && record_lock_decode(lv, &lock) == ORGW_OK &&
		    lock.last_used > e->used)
			e->used = lock.last_used;
		free(lv);
	}
	if (v != NULL && (err = store_del(s, statekeys_prefix(SK_MODELS_SEEN_OLD))) != ORGW_OK)
		goto out;
	if (p.n > (size_t)pa->c->max_models) {
		drop = p.n - (size_t)pa->c->max_models;
		qsort(p.v, p.n, sizeof(p.v[0]), by_use);
	}
	for (i = 0; i < drop; i++) {
		(void)statekeys_make(k, sizeof(k), SK_MODEL_SEEN, p.v[i].model,
				     NULL);
		if ((err = store_del(s, k)) != ORGW_OK)
			goto out;
	}
	pa->dropped = drop;
	/* A model dropped takes its other keys with it, and so does any
	 * model that was never seen (an error record of a failed first
	 * scoring written by an older release, a cooldown of a dropped
	 * model's provider): what is left is bounded by MAX_MODELS.  Its
	 * ledger cells are folded into STATE_OTHER_MODEL's (scorerun_fold). */
	{
		struct keep kp = {pa->c, NULL, p.n - drop};

		if (kp.n > 0) {
			kp.v = p.v + drop;
			qsort(p.v + drop, kp.n, sizeof(p.v[0]), by_model);
		}
		err = sweep(s, &kp, &pa->swept);
	}
out:
	free(v);
	free(p.v);
	return err;
}

/* One cell of a day the ledger no longer shows day by day. */
struct fold_ent {
	char *old_key;
	char total_key[ORGW_MODEL_MAX + ORGW_TAG_MAX + 64];
	struct ledger_cell cell;
};

struct fold_ctx {
	int64_t now;
	struct fold_ent *v;
	size_t n, cap;
	bool oom;
	struct keep keep;	/* the models whose cells stay their own */
};

/* Empties f's list of cells (a transaction run again starts over). */
static void
fold_clear(struct fold_ctx *f)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		free(f->v[i].old_key);
	f->n = 0;
}

static int
fold_key(void *arg, const char *key, const char *val)
{
	struct fold_ctx *f = arg;
	struct ledger_key_parts p;
	struct fold_ent *e;

	bool old, gone;

	if (!ledger_key_split(key, &p))
		return 0;
	old = ledger_day_old(p.day, f->now);
	gone = !keep_has(&f->keep, p.model);
	if (!old && !gone)
		return 0;
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		struct fold_ent *v = realloc(f->v, cap * sizeof(*v));

		if (v == NULL) {
			f->oom = true;
			return 1;
		}
		f->v = v;
		f->cap = cap;
	}
	e = &f->v[f->n];
	if (!ledger_key(e->total_key, sizeof(e->total_key),
			gone ? STATE_OTHER_MODEL : p.model,
			old ? LEDGER_TOTAL : p.day, p.api, p.tag))
		return 0;
	if ((e->old_key = strdup(key)) == NULL) {
		f->oom = true;
		return 1;
	}
	/* A damaged cell folds as zero and is dropped. */
	(void)ledger_cell_decode(val, &e->cell);
	f->n++;
	return 0;
}

static int
by_total_key(const void *a, const void *b)
{
	return strcmp(((const struct fold_ent *)a)->total_key,
		      ((const struct fold_ent *)b)->total_key);
}

/*
 * The folding transaction: every cell of a day before the LEDGER_DAYS
 * that /stats shows day by day is added to its model, API and
 * provider's LEDGER_TOTAL cell and deleted, so the cells a /stats walk
 * reads stay bounded however long the state counts.  The cells of a
 * model the state no longer keeps (dropped past MAX_MODELS, or never
 * seen) are added to STATE_OTHER_MODEL's cell of the same day, API and
 * provider: the totals over all models (requests, tokens, spend) stay
 * exact while the model's own rows go.  The cells are collected first
 * (no write while the store is walked) and each total is read and
 * written once (a Redis transaction does not read its own writes).
 */
static enum orgw_err
do_fold(struct store *s, void *arg)
{
	struct fold_ctx *f = arg;
	struct prune_ctx seen = {NULL, 0, 0, false};
	enum orgw_err err;
	size_t i, j;

	fold_clear(f);
	if ((err = seen_read(s, &seen)) != ORGW_OK) {
		free(seen.v);
		return err;
	}
	f->keep.v = seen.v;
	f->keep.n = seen.n;
	err = store_each(s, LEDGER_PREFIX, fold_key, f);
	f->keep.v = NULL;
	f->keep.n = 0;
	free(seen.v);
	if (err != ORGW_OK)
		return err;
	if (f->oom)
		return ORGW_ENOMEM;
	if (f->n > 1)
		qsort(f->v, f->n, sizeof(f->v[0]), by_total_key);
	for (i = 0; i < f->n; i = j) {
		struct ledger_cell sum;

		memset(&sum, 0, sizeof(sum));
		for (j = i; j < f->n && strcmp(f->v[j].total_key,
					       f->v[i].total_key) == 0;
		     j++)
			ledger_cell_add(&sum, &f->v[j].cell);
		err = state_cell_put(s, f->v[i].total_key, &sum);
		for (; err == ORGW_OK && i < j; i++)
			err = store_del(s, f->v[i].old_key);
		if (err != ORGW_OK)
			return err;
	}
	return ORGW_OK;
}

enum orgw_err
scorerun_fold(const struct orgw_conf *c, int64_t now, size_t *folded)
{
	struct fold_ctx f;
	enum orgw_err err;

	memset(&f, 0, sizeof(f));
	f.now = now;
	f.keep.c = c;
	err = state_txn(c, true, do_fold, &f);
	*folded = err == ORGW_OK ? f.n : 0;
	fold_clear(&f);
	free(f.v);
	if (err != ORGW_OK)
		log_warn("scorer: folding the ledger's old days of %s: %s",
			 c->state_path, orgw_strerror(err));
	return err;
}

/* The conversation records and pressure records, collected while the
 * store is walked: what is dropped is deleted after it. */
struct conv_ent {
	char *key;
	int64_t last;		/* a conversation's last turn, a pressure's
				 * end */
};

struct conv_sweep {
	int64_t now;
	int max;
	struct conv_ent *conv, *press;
	size_t n_conv, cap_conv, n_press, cap_press;
	bool oom;
	size_t dropped;		/* out */
};

static void
conv_sweep_clear(struct conv_sweep *cs)
{
	size_t i;

	for (i = 0; i < cs->n_conv; i++)
		free(cs->conv[i].key);
	for (i = 0; i < cs->n_press; i++)
		free(cs->press[i].key);
	free(cs->conv);
	free(cs->press);
	cs->conv = cs->press = NULL;
	cs->n_conv = cs->cap_conv = cs->n_press = cs->cap_press = 0;
	cs->oom = false;
}

static bool
conv_ent_add(struct conv_ent **v, size_t *n, size_t *cap, const char *key,
	     int64_t last)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct conv_ent *nv = realloc(*v, nc * sizeof(*nv));

		if (nv == NULL)
			return false;
		*v = nv;
		*cap = nc;
	}
	if (((*v)[*n].key = strdup(key)) == NULL)
		return false;
	(*v)[(*n)++].last = last;
	return true;
}

static int
conv_key_seen(void *arg, const char *key, const char *val)
{
	struct conv_sweep *cs = arg;
	struct rec_conv rc;

	/* A record that does not decode is as old as can be. */
	if (record_conv_decode(val, &rc, NULL) != ORGW_OK)
		rc.last_turn = 0;
	if (!conv_ent_add(&cs->conv, &cs->n_conv, &cs->cap_conv, key,
			  rc.last_turn)) {
		cs->oom = true;
		return 1;
	}
	return 0;
}

static int
press_key_seen(void *arg, const char *key, const char *val)
{
	struct conv_sweep *cs = arg;
	struct rec_pressure p;

	if (record_pressure_decode(val, &p) != ORGW_OK)
		p.until = 0;
	if (p.until > cs->now)
		return 0;
	if (!conv_ent_add(&cs->press, &cs->n_press, &cs->cap_press, key,
			  p.until)) {
		cs->oom = true;
		return 1;
	}
	return 0;
}

/* Newest first. */
static int
by_last_desc(const void *a, const void *b)
{
	const struct conv_ent *x = a, *y = b;

	return x->last < y->last ? 1 : x->last > y->last ? -1 : 0;
}

static enum orgw_err
do_conv_sweep(struct store *s, void *arg)
{
	struct conv_sweep *cs = arg;
	enum orgw_err err;
	size_t i, keep = 0;

	conv_sweep_clear(cs);
	cs->dropped = 0;
	if ((err = store_each(s, statekeys_prefix(SK_CONV), conv_key_seen, cs)) != ORGW_OK ||
	    (err = store_each(s, statekeys_prefix(SK_PRESSURE),
				 press_key_seen, cs)) != ORGW_OK)
		return err;
	if (cs->oom)
		return ORGW_ENOMEM;
	/* The most recently used MAX_CONVERSATIONS that were used within a
	 * day stay; the rest go, the oldest first. */
	if (cs->n_conv > 0)
		qsort(cs->conv, cs->n_conv, sizeof(*cs->conv), by_last_desc);
	while (keep < cs->n_conv && keep < (size_t)cs->max &&
	       cs->now - cs->conv[keep].last <= SCORERUN_CONV_MAX_AGE_S)
		keep++;
	for (i = keep; err == ORGW_OK && i < cs->n_conv; i++)
		err = store_del(s, cs->conv[i].key);
	for (i = 0; err == ORGW_OK && i < cs->n_press; i++)
		err = store_del(s, cs->press[i].key);
	if (err == ORGW_OK)
		cs->dropped = cs->n_conv - keep;
	return err;
}

enum orgw_err
scorerun_conv_sweep(const struct orgw_conf *c, int64_t now, size_t *dropped)
{
	struct conv_sweep cs;
	enum orgw_err err;

	memset(&cs, 0, sizeof(cs));
	cs.now = now;
	cs.max = c->max_conversations;
	err = state_txn(c, true, do_conv_sweep, &cs);
	*dropped = err == ORGW_OK ? cs.dropped : 0;
	conv_sweep_clear(&cs);
	if (err != ORGW_OK)
		log_warn("scorer: sweeping the conversations of %s: %s",
			 c->state_path, orgw_strerror(err));
	return err;
}

enum orgw_err
scorerun_prune(const struct orgw_conf *c, size_t *dropped)
{
	struct prune_args pa = {c, 0, 0};
	enum orgw_err err = state_txn(c, true, do_prune, &pa);
	size_t folded, convs;

	*dropped = pa.dropped;
	(void)scorerun_fold(c, clock_now_s(), &folded);
	(void)scorerun_conv_sweep(c, clock_now_s(), &convs);
	if (err != ORGW_OK)
		log_warn("scorer: pruning the seen models of %s: %s",
			 c->state_path, orgw_strerror(err));
	else if (pa.dropped > 0)
		log_warn("scorer: %zu seen models over MAX_MODELS (%d) dropped, "
			 "the longest unused first", pa.dropped, c->max_models);
	if (err == ORGW_OK && pa.swept > 0)
		log_info("scorer: %zu keys of models not kept deleted",
			 pa.swept);
	return err;
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
