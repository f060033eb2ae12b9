/*
 * state_upkeep.c - the state's upkeep before a scoring run that writes
 * (orgw-score, POST /__cron; declared in scorerun.h): the old
 * MODELS_SEEN list migrated, the seen models pruned past MAX_MODELS and
 * the keys of models no longer kept swept (scorerun_prune), the
 * ledger's old days folded (scorerun_fold), the conversations and ended
 * pressure records swept (scorerun_conv_sweep); and the models a run
 * scores, read from the same records (scorerun_list).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ledger.h"
#include "log.h"
#include "record.h"
#include "reqval.h"
#include "scorerun.h"
#include "state.h"
#include "store.h"

#define SEEN_PREFIX statekeys_prefix(SK_MODEL_SEEN)

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
