/*
 * state.c - the request path's state transactions.
 *
 * Each exported function runs one transaction through run_txn(): open
 * (exclusive for writers), do the work, close.  When the store reports
 * a damaged file, run_txn repairs it (store_repair: recover, or move
 * aside and recreate) and tries once more; when it still fails the
 * caller degrades (unpinned routing, a lost counter increment is logged).
 *
 * Keys (SPEC section 7): MODELS_SEEN, BEST_PROVIDER:<model>,
 * PROVIDER_CANDIDATE:<model>, PROVIDER_FAILURE:<model>:<tag>,
 * PROVIDER_COOLDOWN:<model>:<tag>, STATS:<model>.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "breaker.h"
#include "log.h"
#include "score.h"
#include "state.h"
#include "store.h"

#define KEY_MAX (ORGW_MODEL_MAX + ORGW_TAG_MAX + 32)
#define SCORE_RETRY_SECONDS 60

typedef enum orgw_err (*txn_fn)(struct store *s, void *arg);

static enum orgw_err
run_txn(const struct orgw_conf *c, bool write, txn_fn fn, void *arg)
{
	struct store *s;
	enum orgw_err err, cerr;
	int round;

	for (round = 0; round < 2; round++) {
		err = store_open(&s, c->state_path, write,
				 STORE_LOCK_TIMEOUT_MS);
		if (err == ORGW_OK) {
			err = fn(s, arg);
			cerr = store_close(s);
			if (err == ORGW_OK)
				err = cerr;
		}
		if (err != ORGW_EIO || round == 1)
			break;
		if (store_repair(c->state_path, STORE_LOCK_TIMEOUT_MS) !=
		    ORGW_OK)
			break;
	}
	return err;
}

static void
key2(char *k, const char *prefix, const char *model)
{
	snprintf(k, KEY_MAX, "%s:%s", prefix, model);
}

static void
key3(char *k, const char *prefix, const char *model, const char *tag)
{
	snprintf(k, KEY_MAX, "%s:%s:%s", prefix, model, tag);
}

/* Stores text (freeing it); ORGW_ENOMEM when the encoder failed.
 * quiet: counters (STATS), which leave the generation alone. */
static enum orgw_err
put_stored(struct store *s, const char *key, char *text, bool quiet)
{
	enum orgw_err err;

	if (text == NULL)
		return ORGW_ENOMEM;
	err = quiet ? store_put_quiet(s, key, text) : store_put(s, key, text);
	record_free(text);
	return err;
}

static enum orgw_err
put_text(struct store *s, const char *key, char *text)
{
	return put_stored(s, key, text, false);
}

static enum orgw_err
put_counters(struct store *s, const char *key, char *text)
{
	return put_stored(s, key, text, true);
}

struct cool_ctx {
	struct store *s;
	const char *model;
	int64_t now;
};

static bool
cooling(void *arg, const char *tag)
{
	struct cool_ctx *cc = arg;
	struct rec_cooldown cd;
	char k[KEY_MAX], *v = NULL;
	bool hot;

	key3(k, "PROVIDER_COOLDOWN", cc->model, tag);
	if (store_get(cc->s, k, &v) != ORGW_OK || v == NULL)
		return false;
	hot = record_cooldown_decode(v, &cd) == ORGW_OK &&
	      breaker_cooling(&cd, cc->now);
	free(v);
	return hot;
}

/* Reads BEST_PROVIDER for model. */
static enum orgw_err
read_lock(struct store *s, const char *model, struct rec_lock *l,
	  bool *have_lock)
{
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	/* Initialised whatever happens (absent key, read error). */
	memset(l, 0, sizeof(*l));
	*have_lock = false;
	key2(k, "BEST_PROVIDER", model);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	*have_lock = v != NULL && record_lock_decode(v, l) == ORGW_OK;
	free(v);
	return ORGW_OK;
}

/* Reads PROVIDER_CANDIDATE for model. */
static enum orgw_err
read_cands(struct store *s, const char *model, struct rec_cands *cands,
	   bool *have_cands)
{
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	/* Initialised whatever happens: callers always record_cands_clear()
	 * it, and an absent key left it as stack garbage for free() (the
	 * worker segfaults t0710 and the soak found, dmesg "segfault ... in
	 * libc.so.6" at free+101). */
	memset(cands, 0, sizeof(*cands));
	*have_cands = false;
	key2(k, "PROVIDER_CANDIDATE", model);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	*have_cands = v != NULL && record_cands_decode(v, cands) == ORGW_OK;
	free(v);
	return ORGW_OK;
}

/* Reads BEST_PROVIDER and PROVIDER_CANDIDATE for model. */
static enum orgw_err
read_lock_cands(struct store *s, const char *model, struct rec_lock *l,
		bool *have_lock, struct rec_cands *cands, bool *have_cands)
{
	enum orgw_err err;

	if ((err = read_lock(s, model, l, have_lock)) != ORGW_OK)
		return err;
	return read_cands(s, model, cands, have_cands);
}

static void
route_set(struct state_route *r, enum route_kind kind, const char *tag,
	  const char *name, int64_t max_out)
{
	r->kind = kind;
	snprintf(r->tag, sizeof(r->tag), "%s", tag ? tag : "");
	snprintf(r->provider_name, sizeof(r->provider_name), "%s",
		 name ? name : "");
	r->max_out = max_out;
}

/* Decides with what the store holds and writes the lock it implies. */
static enum orgw_err
decide_and_lock(struct store *s, const char *model, bool client_provider,
		int64_t now, int64_t idle, struct state_route *r)
{
	struct rec_lock lock;
	struct rec_cands cands;
	const struct rec_cand *pick;
	struct cool_ctx cc = {s, model, now};
	struct route_view v;
	bool have_lock, have_cands = false;
	char k[KEY_MAX];
	enum orgw_err err;
	enum route_kind kind;

	memset(&cands, 0, sizeof(cands));
	if ((err = read_lock(s, model, &lock, &have_lock)) != ORGW_OK)
		return err;
	memset(&v, 0, sizeof(v));
	v.lock = have_lock ? &lock : NULL;
	v.cands = NULL;
	v.cooling = cooling;
	v.cooling_arg = &cc;
	v.now = now;
	v.lock_idle_seconds = idle;
	v.score_retry_seconds = SCORE_RETRY_SECONDS;
	v.client_provider = client_provider;
	/* Most requests find a live lock (step 4) or bring their own
	 * provider (step 3), which route_decide() settles before it looks
	 * at the candidates.  So the candidate list, the largest record and
	 * the costliest to decode, is read only when that first decision
	 * falls through to steps 5 to 7; the decision taken again with it
	 * is then the whole of SPEC section 4. */
	kind = route_decide(&v, &pick);
	if (kind != ROUTE_LOCKED && kind != ROUTE_CLIENT) {
		if ((err = read_cands(s, model, &cands, &have_cands)) !=
		    ORGW_OK) {
			record_cands_clear(&cands);
			return err;
		}
		v.cands = have_cands ? &cands : NULL;
		kind = route_decide(&v, &pick);
	}
	key2(k, "BEST_PROVIDER", model);
	switch (kind) {
	case ROUTE_LOCKED:
		route_set(r, ROUTE_LOCKED, lock.tag, lock.provider_name,
			  lock.max_completion_tokens);
		/* Renew last_used (seconds): a lock renewed earlier in the
		 * same second would be rewritten with the very same bytes. */
		if (lock.last_used == now)
			break;
		lock.last_used = now;
		err = put_text(s, k, record_lock_encode(&lock));
		break;
	case ROUTE_RELOCKED:
		route_lock_from(&lock, pick, now);
		route_set(r, ROUTE_RELOCKED, lock.tag, lock.provider_name,
			  lock.max_completion_tokens);
		err = put_text(s, k, record_lock_encode(&lock));
		break;
	case ROUTE_SCORED:
		route_set(r, ROUTE_SCORED, NULL, NULL, 0);
		break;
	case ROUTE_CLIENT:
		route_set(r, ROUTE_CLIENT, NULL, NULL, 0);
		break;
	case ROUTE_UNPINNED:
		route_set(r, ROUTE_UNPINNED, NULL, NULL, 0);
		break;
	}
	record_cands_clear(&cands);
	return err;
}

struct route_args {
	const struct orgw_conf *c;
	const char *model;
	bool client_provider;
	int64_t now;
	struct state_route *r;
	const struct score_result *res;
	const char *error;
	uint64_t gen;		/* do_route: the generation it left */
	bool have_gen;
};

static enum orgw_err
seen_add(struct store *s, const char *model, int64_t now)
{
	char *v = NULL, *nv;
	bool added;
	enum orgw_err err;

	if ((err = store_get(s, "MODELS_SEEN", &v)) != ORGW_OK)
		return err;
	nv = record_seen_add(v, model, now, &added);
	free(v);
	if (!added)
		return ORGW_OK;
	return put_text(s, "MODELS_SEEN", nv);
}

/*
 * The route memo: what this process's last routing transactions decided,
 * per model, reused without a transaction while nothing it was decided
 * from can have changed.  Every write to those keys (lock, candidates,
 * cooldowns, failures, MODELS_SEEN; a repair) raises the store's
 * generation first (store.h), so an unchanged generation means the same
 * reads would give the same bytes.  What remains is time: a memo is
 * good for the unix second it was made in, during which the lock it
 * holds has last_used == now (it was renewed or made in that second), is
 * therefore not idle, and needs no renewal write; a cooldown on its tag
 * can only begin with a write.  So the memo answers exactly as the
 * transaction would have, for one pread(2) instead of a locked GDBM
 * open, fetch and close; the next second, the first request of each
 * process runs the transaction again.  Only "locked" and "client"
 * outcomes are kept; everything else (relocks, scoring, unpinned)
 * writes or looks further, and goes through the transaction.
 */
#define MEMO_SLOTS 8

struct route_memo {
	char model[ORGW_MODEL_MAX];
	uint64_t gen;
	int64_t second;
	bool client_provider;
	struct state_route r;
};

static struct route_memo memo[MEMO_SLOTS];
static size_t memo_next;	/* the slot a new model takes */
static char memo_path[4096];	/* the state file the memos are of */

static struct route_memo *
memo_slot(const char *model)
{
	size_t i;

	for (i = 0; i < MEMO_SLOTS; i++)
		if (strcmp(memo[i].model, model) == 0)
			return &memo[i];
	return NULL;
}

static bool
memo_lookup(const struct orgw_conf *c, const char *model,
	    bool client_provider, int64_t now, struct state_route *r)
{
	struct route_memo *m = memo_slot(model);
	uint64_t gen;

	if (m == NULL || m->second != now ||
	    strcmp(c->state_path, memo_path) != 0 ||
	    m->client_provider != client_provider ||
	    store_generation(c->state_path, &gen) != ORGW_OK || gen != m->gen)
		return false;
	*r = m->r;
	return true;
}

static void
memo_keep(const char *path, const char *model, bool client_provider,
	  int64_t now, uint64_t gen, const struct state_route *r)
{
	struct route_memo *m;

	if (strcmp(path, memo_path) != 0) {
		if (strlen(path) >= sizeof(memo_path))
			return;
		memset(memo, 0, sizeof(memo));
		snprintf(memo_path, sizeof(memo_path), "%s", path);
	}
	if ((m = memo_slot(model)) == NULL) {
		if (strlen(model) >= sizeof(m->model))
			return;
		m = &memo[memo_next];
		memo_next = (memo_next + 1) % MEMO_SLOTS;
		snprintf(m->model, sizeof(m->model), "%s", model);
	}
	m->gen = gen;
	m->second = now;
	m->client_provider = client_provider;
	m->r = *r;
	/* A relock made now is, for the rest of the second, the lock. */
	if (m->r.kind == ROUTE_RELOCKED)
		m->r.kind = ROUTE_LOCKED;
}

static void
memo_forget(const char *model)
{
	struct route_memo *m = memo_slot(model);

	if (m != NULL)
		m->second = -1;
}

static enum orgw_err
do_route(struct store *s, void *arg)
{
	struct route_args *a = arg;
	enum orgw_err err;

	if ((err = seen_add(s, a->model, a->now)) != ORGW_OK)
		return err;
	err = decide_and_lock(s, a->model, a->client_provider, a->now,
			      a->c->lock_idle_seconds, a->r);
	if (err != ORGW_OK)
		return err;
	/* The generation as this transaction leaves it (raised or not). */
	a->have_gen = store_txn_generation(s, &a->gen) == ORGW_OK;
	return ORGW_OK;
}

enum orgw_err
state_route(const struct orgw_conf *c, const char *model,
	    bool client_provider, int64_t now, struct state_route *r)
{
	struct route_args a = {c, model, client_provider, now, r, NULL, NULL,
			       0, false};
	enum orgw_err err;

	if (memo_lookup(c, model, client_provider, now, r))
		return ORGW_OK;
	memo_forget(model);
	route_set(r, client_provider ? ROUTE_CLIENT : ROUTE_UNPINNED, NULL,
		  NULL, 0);
	err = run_txn(c, true, do_route, &a);
	if (err == ORGW_OK && a.have_gen &&
	    (r->kind == ROUTE_LOCKED || r->kind == ROUTE_RELOCKED ||
	     r->kind == ROUTE_CLIENT))
		memo_keep(c->state_path, model, client_provider, now, a.gen,
			  r);
	if (err != ORGW_OK) {
		log_warn("state unavailable (%s): routing %s unpinned",
			 orgw_strerror(err),
			 client_provider ? "by the client" : "by OpenRouter");
		route_set(r, client_provider ? ROUTE_CLIENT : ROUTE_UNPINNED,
			  NULL, NULL, 0);
	}
	return err;
}

/* Writes candidates for a scoring outcome (see state_store_candidates). */
static enum orgw_err
write_cands(struct store *s, const char *model, const struct score_result *res,
	    const char *error, int64_t now)
{
	struct rec_cands cands;
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	key2(k, "PROVIDER_CANDIDATE", model);
	if (res != NULL) {
		if ((err = record_cands_from_score(res, now, &cands)))
			return err;
	} else {
		/* Keep what the last good scoring found. */
		if ((err = store_get(s, k, &v)) != ORGW_OK)
			return err;
		if (v == NULL || record_cands_decode(v, &cands) != ORGW_OK)
			memset(&cands, 0, sizeof(cands));
		free(v);
		cands.attempted_at = now;
		snprintf(cands.error, sizeof(cands.error), "%s",
			 error ? error : "scoring failed");
	}
	err = put_text(s, k, record_cands_encode(&cands));
	record_cands_clear(&cands);
	return err;
}

static enum orgw_err
do_route_scored(struct store *s, void *arg)
{
	struct route_args *a = arg;
	enum orgw_err err;

	if ((err = write_cands(s, a->model, a->res, a->error, a->now)))
		return err;
	err = decide_and_lock(s, a->model, false, a->now,
			      a->c->lock_idle_seconds, a->r);
	/* Locked by this scoring: report it as such (SPEC 4 step 6). */
	if (err == ORGW_OK && a->r->kind == ROUTE_RELOCKED)
		a->r->kind = ROUTE_SCORED;
	if (a->r->kind == ROUTE_SCORED && a->r->tag[0] == '\0')
		a->r->kind = ROUTE_UNPINNED;
	return err;
}

enum orgw_err
state_route_scored(const struct orgw_conf *c, const char *model,
		   const struct score_result *res, const char *error,
		   int64_t now, struct state_route *r)
{
	struct route_args a = {c, model, false, now, r, res, error, 0, false};
	enum orgw_err err;

	route_set(r, ROUTE_UNPINNED, NULL, NULL, 0);
	err = run_txn(c, true, do_route_scored, &a);
	if (err != ORGW_OK)
		route_set(r, ROUTE_UNPINNED, NULL, NULL, 0);
	return err;
}

static enum orgw_err
do_store_cands(struct store *s, void *arg)
{
	struct route_args *a = arg;

	return write_cands(s, a->model, a->res, a->error, a->now);
}

enum orgw_err
state_store_candidates(const struct orgw_conf *c, const char *model,
		       const struct score_result *res, const char *error,
		       int64_t now)
{
	struct route_args a = {c, model, false, now, NULL, res, error,
			       0, false};

	return run_txn(c, true, do_store_cands, &a);
}

struct fail_args {
	const struct orgw_conf *c;
	const char *model, *tag, *reason;
	int64_t now;
	bool *tripped;
	struct state_route *r;
};

static enum orgw_err
do_failure(struct store *s, void *arg)
{
	struct fail_args *a = arg;
	struct rec_failure f;
	struct rec_cooldown cd;
	struct rec_lock lock;
	struct rec_cands cands;
	const struct rec_cand *next;
	struct cool_ctx cc = {s, a->model, a->now};
	bool have_lock, have_cands;
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	*a->tripped = false;
	key3(k, "PROVIDER_FAILURE", a->model, a->tag);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if (v == NULL || record_failure_decode(v, &f) != ORGW_OK)
		memset(&f, 0, sizeof(f));
	free(v);
	*a->tripped = breaker_fail(&f, a->reason, a->now, a->c->fail_limit,
				   a->c->cooldown_seconds, &cd);
	if ((err = put_text(s, k, record_failure_encode(&f))))
		return err;
	if (!*a->tripped)
		return ORGW_OK;
	key3(k, "PROVIDER_COOLDOWN", a->model, a->tag);
	if ((err = put_text(s, k, record_cooldown_encode(&cd))))
		return err;
	err = read_lock_cands(s, a->model, &lock, &have_lock, &cands,
			      &have_cands);
	if (err != ORGW_OK)
		return err;
	key2(k, "BEST_PROVIDER", a->model);
	if (have_lock && strcmp(lock.tag, a->tag) != 0 &&
	    !cooling(&cc, lock.tag)) {
		/* Another worker re-locked already: follow it. */
		if (a->r)
			route_set(a->r, ROUTE_RELOCKED, lock.tag,
				  lock.provider_name,
				  lock.max_completion_tokens);
	} else if ((next = route_next(have_cands ? &cands : NULL, cooling, &cc,
				      a->tag)) != NULL) {
		route_lock_from(&lock, next, a->now);
		err = put_text(s, k, record_lock_encode(&lock));
		if (a->r)
			route_set(a->r, ROUTE_RELOCKED, lock.tag,
				  lock.provider_name,
				  lock.max_completion_tokens);
	} else {
		/* Nothing left: drop the lock; requests go unpinned until
		 * a cooldown ends or the scorer finds candidates. */
		err = store_del(s, k);
		if (a->r)
			route_set(a->r, ROUTE_UNPINNED, NULL, NULL, 0);
	}
	record_cands_clear(&cands);
	return err;
}

enum orgw_err
state_failure(const struct orgw_conf *c, const char *model, const char *tag,
	      const char *reason, int64_t now, bool *tripped,
	      struct state_route *r)
{
	struct fail_args a = {c, model, tag, reason, now, tripped, r};
	enum orgw_err err;

	*tripped = false;
	err = run_txn(c, true, do_failure, &a);
	if (err != ORGW_OK)
		log_warn("state unavailable (%s): failure of %s not recorded",
			 orgw_strerror(err), tag);
	if (*tripped) {
		char m[ORGW_MODEL_MAX * 4];
		log_warn("breaker tripped: model=%s provider=%s reason=%s "
			 "cooldown=%llds next=%s",
			 log_safe(m, sizeof(m), model), tag, reason,
			 (long long)c->cooldown_seconds,
			 r && r->tag[0] ? r->tag : "unpinned");
	}
	return err;
}

struct finish_args {
	const char *model;
	const struct stats_delta *d;
	const char *ok_tag;
};

static enum orgw_err
do_finish(struct store *s, void *arg)
{
	struct finish_args *a = arg;
	struct rec_failure f;
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	key2(k, "STATS", a->model);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	err = put_counters(s, k, record_stats_apply(v, a->d));
	free(v);
	v = NULL;
	if (err != ORGW_OK || a->ok_tag == NULL)
		return err;
	key3(k, "PROVIDER_FAILURE", a->model, a->ok_tag);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	/* Write only when there is a count to reset. */
	if (v != NULL && record_failure_decode(v, &f) == ORGW_OK &&
	    f.count > 0) {
		breaker_ok(&f);
		err = put_text(s, k, record_failure_encode(&f));
	}
	free(v);
	return err;
}

enum orgw_err
state_finish(const struct orgw_conf *c, const char *model,
	     const struct stats_delta *d, const char *ok_tag)
{
	struct finish_args a = {model, d, ok_tag};
	enum orgw_err err;

	err = run_txn(c, true, do_finish, &a);
	if (err != ORGW_OK)
		log_warn("state unavailable (%s): request not counted",
			 orgw_strerror(err));
	return err;
}

struct models_args {
	char *seen;
};

static enum orgw_err
do_read_seen(struct store *s, void *arg)
{
	struct models_args *a = arg;

	return store_get(s, "MODELS_SEEN", &a->seen);
}

struct each_model {
	const struct orgw_conf *c;
	void (*fn)(void *arg, const char *model);
	void *arg;
};

static void
seen_cb(void *arg, const char *model, int64_t first_seen)
{
	struct each_model *em = arg;
	size_t i;

	(void)first_seen;
	for (i = 0; i < em->c->n_target_models; i++)
		if (strcmp(em->c->target_models[i], model) == 0)
			return;	/* listed with the targets */
	em->fn(em->arg, model);
}

enum orgw_err
state_models(const struct orgw_conf *c,
	     void (*fn)(void *arg, const char *model), void *arg)
{
	struct models_args a = {NULL};
	struct each_model em = {c, fn, arg};
	size_t i;

	for (i = 0; i < c->n_target_models; i++)
		fn(arg, c->target_models[i]);
	if (run_txn(c, false, do_read_seen, &a) == ORGW_OK && a.seen)
		record_seen_each(a.seen, seen_cb, &em);
	free(a.seen);
	return ORGW_OK;
}

/* ---- GET /stats ---- */

struct stats_args {
	cJSON *models;
	int64_t now;
	bool ok;
};

static cJSON *
model_obj(struct stats_args *a, const char *model)
{
	cJSON *m = cJSON_GetObjectItemCaseSensitive(a->models, model);

	if (m == NULL && (m = cJSON_AddObjectToObject(a->models, model)) ==
				 NULL)
		a->ok = false;
	return m;
}

static void
stats_seen_cb(void *arg, const char *model, int64_t first_seen)
{
	struct stats_args *a = arg;
	cJSON *m = model_obj(a, model);

	if (m && !cJSON_AddNumberToObject(m, "first_seen", (double)first_seen))
		a->ok = false;
}

/* Splits "<model>:<tag>" at the last ':' (tags hold no ':'). */
static bool
split_model_tag(const char *rest, char *model, size_t n, const char **tag)
{
	const char *colon = strrchr(rest, ':');
	size_t len;

	if (colon == NULL)
		return false;
	len = (size_t)(colon - rest);
	if (len == 0 || len >= n)
		return false;
	memcpy(model, rest, len);
	model[len] = '\0';
	*tag = colon + 1;
	return true;
}

static void
add_lock(cJSON *m, const char *val, bool *ok)
{
	struct rec_lock l;
	cJSON *o;

	if (record_lock_decode(val, &l) != ORGW_OK)
		return;
	if ((o = cJSON_AddObjectToObject(m, "lock")) == NULL ||
	    !cJSON_AddStringToObject(o, "tag", l.tag) ||
	    !cJSON_AddStringToObject(o, "provider_name", l.provider_name) ||
	    !cJSON_AddNumberToObject(o, "locked_at", (double)l.locked_at) ||
	    !cJSON_AddNumberToObject(o, "last_used", (double)l.last_used))
		*ok = false;
}

static void
add_cands(cJSON *m, const char *val, bool *ok)
{
	cJSON *o = cJSON_Parse(val), *arr;

	if (o == NULL)
		return;
	arr = cJSON_DetachItemFromObjectCaseSensitive(o, "candidates");
	if (arr != NULL && !cJSON_AddItemToObject(m, "candidates", arr)) {
		cJSON_Delete(arr);
		*ok = false;
	}
	if (!cJSON_AddNumberToObject(
		    m, "scored_at",
		    cJSON_GetNumberValue(
			    cJSON_GetObjectItemCaseSensitive(o, "scored_at"))))
		*ok = false;
	{
		cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
		if (cJSON_IsString(e) && e->valuestring[0] != '\0' &&
		    !cJSON_AddStringToObject(m, "scoring_error",
					     e->valuestring))
			*ok = false;
	}
	cJSON_Delete(o);
}

static void
add_stats(cJSON *m, const char *val, bool *ok)
{
	cJSON *o = cJSON_Parse(val), *it, *next, *lat,
	      *tok;
	double prompt, cached, n;

	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return;
	}
	lat = cJSON_GetObjectItemCaseSensitive(o, "latency");
	if (cJSON_IsObject(lat)) {
		n = cJSON_GetNumberValue(
			cJSON_GetObjectItemCaseSensitive(lat, "ttfb_count"));
		if (n > 0 &&
		    !cJSON_AddNumberToObject(
			    lat, "ttfb_ms_avg",
			    cJSON_GetNumberValue(
				    cJSON_GetObjectItemCaseSensitive(
					    lat, "ttfb_ms_sum")) /
				    n))
			*ok = false;
		n = cJSON_GetNumberValue(
			cJSON_GetObjectItemCaseSensitive(lat, "total_count"));
		if (n > 0 &&
		    !cJSON_AddNumberToObject(
			    lat, "total_ms_avg",
			    cJSON_GetNumberValue(
				    cJSON_GetObjectItemCaseSensitive(
					    lat, "total_ms_sum")) /
				    n))
			*ok = false;
	}
	tok = cJSON_GetObjectItemCaseSensitive(o, "tokens");
	prompt = cJSON_GetNumberValue(
		cJSON_GetObjectItemCaseSensitive(tok, "prompt"));
	cached = cJSON_GetNumberValue(
		cJSON_GetObjectItemCaseSensitive(tok, "cached"));
	if (!cJSON_AddNumberToObject(o, "cache_hit_rate",
				     prompt > 0 ? cached / prompt : 0))
		*ok = false;
	cJSON_DeleteItemFromObjectCaseSensitive(o, "v");
	/* Move every counter into the model's object. */
	for (it = o->child; it != NULL; it = next) {
		next = it->next;
		cJSON_DetachItemViaPointer(o, it);
		if (!cJSON_AddItemToObject(m, it->string, it)) {
			cJSON_Delete(it);
			*ok = false;
		}
	}
	cJSON_Delete(o);
}

static void
add_tagged(cJSON *m, const char *field, const char *tag, const char *val,
	   int64_t now, bool *ok)
{
	cJSON *o = cJSON_GetObjectItemCaseSensitive(m, field), *e;

	if (o == NULL && (o = cJSON_AddObjectToObject(m, field)) == NULL) {
		*ok = false;
		return;
	}
	if (strcmp(field, "failures") == 0) {
		struct rec_failure f;
		if (record_failure_decode(val, &f) == ORGW_OK &&
		    !cJSON_AddNumberToObject(o, tag, (double)f.count))
			*ok = false;
		return;
	}
	struct rec_cooldown cd;
	if (record_cooldown_decode(val, &cd) != ORGW_OK ||
	    !breaker_cooling(&cd, now))
		return;
	if ((e = cJSON_AddObjectToObject(o, tag)) == NULL ||
	    !cJSON_AddNumberToObject(e, "until", (double)cd.until) ||
	    !cJSON_AddStringToObject(e, "reason", cd.reason))
		*ok = false;
}

static int
stats_key_cb(void *arg, const char *key, const char *val)
{
	static const struct {
		const char *prefix, *field;
	} tagged[] = {{"PROVIDER_FAILURE:", "failures"},
		      {"PROVIDER_COOLDOWN:", "cooldowns"}};
	struct stats_args *a = arg;
	char model[ORGW_MODEL_MAX];
	const char *tag;
	cJSON *m;
	size_t i;

	if (strncmp(key, "BEST_PROVIDER:", 14) == 0) {
		if ((m = model_obj(a, key + 14)) != NULL)
			add_lock(m, val, &a->ok);
	} else if (strncmp(key, "PROVIDER_CANDIDATE:", 19) == 0) {
		if ((m = model_obj(a, key + 19)) != NULL)
			add_cands(m, val, &a->ok);
	} else if (strncmp(key, "STATS:", 6) == 0) {
		if ((m = model_obj(a, key + 6)) != NULL)
			add_stats(m, val, &a->ok);
	} else {
		for (i = 0; i < 2; i++) {
			size_t pl = strlen(tagged[i].prefix);
			if (strncmp(key, tagged[i].prefix, pl) != 0 ||
			    !split_model_tag(key + pl, model, sizeof(model),
					     &tag))
				continue;
			if ((m = model_obj(a, model)) != NULL)
				add_tagged(m, tagged[i].field, tag, val,
					   a->now, &a->ok);
		}
	}
	return a->ok ? 0 : 1;
}

static enum orgw_err
do_stats(struct store *s, void *arg)
{
	struct stats_args *a = arg;
	char *seen = NULL;
	enum orgw_err err;

	if ((err = store_get(s, "MODELS_SEEN", &seen)) != ORGW_OK)
		return err;
	if (seen != NULL)
		record_seen_each(seen, stats_seen_cb, a);
	free(seen);
	return store_each(s, "", stats_key_cb, a);
}

char *
state_stats_json(const struct orgw_conf *c, int64_t now)
{
	cJSON *root = cJSON_CreateObject();
	struct stats_args a;
	enum orgw_err err;
	char *out = NULL;

	memset(&a, 0, sizeof(a));
	a.now = now;
	a.ok = root != NULL &&
	       cJSON_AddNumberToObject(root, "generated_at", (double)now) &&
	       (a.models = cJSON_AddObjectToObject(root, "models")) != NULL;
	if (a.ok) {
		err = run_txn(c, false, do_stats, &a);
		if (err != ORGW_OK &&
		    !cJSON_AddStringToObject(root, "state_error",
					     orgw_strerror(err)))
			a.ok = false;
	}
	if (a.ok)
		out = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return out;
}

static enum orgw_err
do_nothing(struct store *s, void *arg)
{
	(void)s;
	(void)arg;
	return ORGW_OK;
}

enum orgw_err
state_health(const struct orgw_conf *c, char *why, size_t n)
{
	enum orgw_err err = run_txn(c, true, do_nothing, NULL);

	if (err != ORGW_OK)
		snprintf(why, n, "state store %s: %s", c->state_path,
			 orgw_strerror(err));
	return err;
}
