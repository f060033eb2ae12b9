/*
 * state.c - the request path's state transactions.
 *
 * Each exported function runs one transaction through state_txn(): open
 * (exclusive for writers), do the work, close.  When the store reports
 * a damaged file, state_txn repairs it (store_repair: recover, or move
 * aside and recreate) and tries once more; when it still fails the
 * caller degrades (unpinned routing, a lost counter increment is logged).
 *
 * Keys (SPEC section 7): MODEL_SEEN:<model> (the old MODELS_SEEN list is
 * read by the scorer, which migrates it), BEST_PROVIDER:<model>,
 * PROVIDER_CANDIDATE:<model>, PROVIDER_FAILURE:<model>:<tag>,
 * PROVIDER_COOLDOWN:<model>:<tag>, the ledger's cells
 * LEDGER:<model>:<day>:<api>:<tag> (ledger.h), HIT:<model>:<tag> (a
 * provider's measured hit rate) and LOCK_LOG:<model> (the recent lock
 * changes for /status): each counter is written in the same transaction
 * as the event it counts (the request, the trip's cooldown, the lock's
 * move), so it is exact.  The old release's STATS:<model> and
 * METRICS:<model> are read (hit rates, /stats) and never written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "failover.h"
#include "ledger.h"
#include "log.h"
#include "redisconf.h"
#include "reqval.h"
#include "score.h"
#include "state.h"
#include "store.h"

#define KEY_MAX (ORGW_MODEL_MAX + ORGW_TAG_MAX + 32)
#define SCORE_RETRY_SECONDS 60

enum orgw_err
state_txn(const struct orgw_conf *c, bool write,
	  enum orgw_err (*fn)(struct store *s, void *arg), void *arg)
{
	struct store *s;
	enum orgw_err err;
	bool repaired = false;
	int runs = 0;
	int64_t give_up = clock_mono_ms() + STORE_LOCK_TIMEOUT_MS;
	uint32_t rnd;

	for (;;) {
		err = store_open(&s, c, write, STORE_LOCK_TIMEOUT_MS);
		if (err == ORGW_OK) {
			err = fn(s, arg);
			if (err == ORGW_OK)
				err = store_close(s);
			else
				store_abort(s);
		}
		if (err == ORGW_ECONFLICT) {
			/* Another host changed a key this run read (Redis
			 * WATCH): nothing was written; run fn again on what
			 * the store holds now, after a jittered pause, until
			 * the time a GDBM writer may wait for its lock is
			 * spent (with 64 clients on one model's cell, a run
			 * loses the race now and then, and a loaded host
			 * makes the losing streaks longer). */
			if (clock_mono_ms() >= give_up)
				break;
			runs++;
			rnd = (uint32_t)clock_mono_us() * 2654435761u;
			clock_sleep_us(redisconf_retry_delay_us(runs - 1, rnd));
			continue;
		}
		if (err != ORGW_EIO || repaired)
			break;
		if (store_repair(c, STORE_LOCK_TIMEOUT_MS) != ORGW_OK)
			break;
		repaired = true;
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

/* Stores text (freeing it); ORGW_ENOMEM when the encoder failed. */
static enum orgw_err
put_text(struct store *s, const char *key, char *text)
{
	enum orgw_err err;

	if (text == NULL)
		return ORGW_ENOMEM;
	err = store_put(s, key, text);
	record_free(text);
	return err;
}

/*
 * Adds cell c to the ledger cell of model, the UTC day of now, api and
 * tag (ledger.h).  A cell key that cannot be made (a model too long for
 * it) counts nothing: ORGW_OK, as for a key GDBM would refuse.
 */
static enum orgw_err
cell_add(struct store *s, const char *model, int64_t now, const char *api,
	 const char *tag, const struct ledger_cell *c)
{
	char k[KEY_MAX + 64], day[11], *v = NULL;
	struct ledger_cell have;
	enum orgw_err err;

	record_day(now, day);
	if (!ledger_key(k, sizeof(k), model, day, api, tag))
		return ORGW_OK;
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	/* Damaged text starts the cell again (decode zeroes it). */
	(void)ledger_cell_decode(v, &have);
	free(v);
	ledger_cell_add(&have, c);
	return put_text(s, k, ledger_cell_encode(&have));
}

/* Counts one event of row ix (LX_TRIPS of tag, LX_LOCK_CHANGES with tag
 * NULL) in the ledger. */
static enum orgw_err
event_count(struct store *s, const char *model, int64_t now,
	    enum ledger_ix ix, const char *tag)
{
	struct ledger_cell c;

	memset(&c, 0, sizeof(c));
	c.v[ix] = 1;
	return cell_add(s, model, now, LEDGER_NONE, tag ? tag : LEDGER_NONE,
			&c);
}

static enum orgw_err lock_log(struct store *s, const char *model,
			      int64_t now, const char *from, const char *to,
			      const char *why);

/*
 * Writes model's new lock (NULL: drops it) at now.  A move off a lock on
 * another provider counts a lock change in the ledger (SPEC 7; a first
 * lock is none), and every move from one tag to another goes to LOCK_LOG with
 * why.
 */
static enum orgw_err
lock_write(struct store *s, const char *model, const struct rec_lock *old,
	   bool had_old, const struct rec_lock *lock, int64_t now,
	   const char *why)
{
	char k[KEY_MAX];
	enum orgw_err err;

	key2(k, "BEST_PROVIDER", model);
	err = lock != NULL ? put_text(s, k, record_lock_encode(lock)) :
			     store_del(s, k);
	if (err == ORGW_OK && had_old &&
	    (lock == NULL || strcmp(old->tag, lock->tag) != 0))
		err = event_count(s, model, now, LX_LOCK_CHANGES, NULL);
	if (err == ORGW_OK)
		err = lock_log(s, model, now, had_old ? old->tag : "",
			       lock != NULL ? lock->tag : "", why);
	return err;
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
	      failover_breaker_cooling(&cd, cc->now);
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

/*
 * Appends a change of model's lock from one tag to another ("" = no
 * lock) to LOCK_LOG:<model>, in the transaction that moves it.  A lock
 * renewed on the same provider is no change.
 */
static enum orgw_err
lock_log(struct store *s, const char *model, int64_t now, const char *from,
	 const char *to, const char *why)
{
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	if (strcmp(from, to) == 0)
		return ORGW_OK;
	key2(k, "LOCK_LOG", model);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	err = put_text(s, k, record_lock_log_add(v, now, from, to, why));
	free(v);
	return err;
}

/*
 * Re-ranks cands at now's UTC time (SPEC section 6) before a lock moves,
 * with the measured hit rates of model (state_hits) where their evidence
 * suffices.  Out of memory keeps the stored order, and hit rates that
 * cannot be read the assumed HIT_RATE: a lock moves either way.
 */
static enum orgw_err
rerank(struct store *s, const struct orgw_conf *c, const char *model,
       struct rec_cands *cands, int64_t now)
{
	struct score_params p;
	struct score_hit *hits = NULL;
	size_t n_hits = 0;
	enum orgw_err err;

	err = state_hits(s, model, &hits, &n_hits);
	if (err == ORGW_ENOMEM)
		log_warn("out of memory: lock moves by the assumed HIT_RATE");
	else if (err != ORGW_OK)
		return err;
	memset(&p, 0, sizeof(p));
	p.hit_rate = c->hit_rate;
	p.cache_bonus = c->cache_bonus;
	p.min_uptime = c->min_uptime;
	p.hit_evidence_tokens = c->hit_rate_evidence_tokens;
	p.hits = hits;
	p.n_hits = n_hits;
	if (route_rerank(cands, score_hhmm(now), &p) != ORGW_OK)
		log_warn("out of memory: lock moves by the stored ranking");
	free(hits);
	return ORGW_OK;
}

/*
 * Moves model's lock off off_tag, at once (a breaker trip, an operator's
 * cool): the best candidate not cooling, re-ranked at now (SPEC 5, 6),
 * becomes the lock; with none left the lock is dropped and requests go
 * unpinned until a cooldown ends or the scorer finds candidates.  r
 * (may be NULL) gets the route to continue on.  cands is the stored list
 * (have_cands false when there is none); it is re-ranked in place.
 * why goes to LOCK_LOG.
 */
static enum orgw_err
move_lock(struct store *s, const struct orgw_conf *c, const char *model,
	  const char *off_tag, const char *why, int64_t now,
	  struct rec_cands *cands, bool have_cands, struct state_route *r)
{
	struct cool_ctx cc = {s, model, now};
	const struct rec_cand *next;
	struct rec_lock lock, old;
	bool had_old;
	enum orgw_err err;

	if (have_cands && (err = rerank(s, c, model, cands, now)) != ORGW_OK)
		return err;
	if ((err = read_lock(s, model, &old, &had_old)) != ORGW_OK)
		return err;
	next = route_next(have_cands ? cands : NULL, cooling, &cc, off_tag);
	if (next == NULL) {
		err = lock_write(s, model, &old, had_old, NULL, now, why);
		if (r)
			route_set(r, ROUTE_UNPINNED, NULL, NULL, 0);
		return err;
	}
	route_lock_from(&lock, next, now);
	err = lock_write(s, model, &old, had_old, &lock, now, why);
	if (r)
		route_set(r, ROUTE_RELOCKED, lock.tag, lock.provider_name,
			  lock.max_completion_tokens);
	return err;
}

/* Decides with what the store holds and writes the lock it implies. */
static enum orgw_err
decide_and_lock(struct store *s, const struct orgw_conf *c, const char *model,
		bool client_provider, int64_t now, struct state_route *r)
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
	v.lock_idle_seconds = c->lock_idle_seconds;
	v.score_retry_seconds = SCORE_RETRY_SECONDS;
	v.lock_margin = c->lock_margin;
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
		if (have_cands && (err = rerank(s, c, model, &cands, now)) !=
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
	case ROUTE_RELOCKED: {
		const char *why = !have_lock	       ? "no lock" :
				  cooling(&cc, lock.tag) ? "cooling" :
							   "idle";
		struct rec_lock old = lock;

		route_lock_from(&lock, pick, now);
		route_set(r, ROUTE_RELOCKED, lock.tag, lock.provider_name,
			  lock.max_completion_tokens);
		err = lock_write(s, model, &old, have_lock, &lock, now, why);
		break;
	}
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
};

/*
 * Marks model seen (MODEL_SEEN:<model>, SPEC 4 step 2) once its endpoints
 * were fetched: one key per model, so what a request does under the lock
 * does not grow with the number of models.
 */
static enum orgw_err
seen_mark(struct store *s, const char *model, int64_t now)
{
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	key2(k, "MODEL_SEEN", model);
	if ((err = store_get(s, k, &v)) != ORGW_OK || v != NULL) {
		free(v);
		return err;
	}
	return put_text(s, k, record_model_seen_encode(now));
}

static enum orgw_err
do_route(struct store *s, void *arg)
{
	struct route_args *a = arg;

	return decide_and_lock(s, a->c, a->model, a->client_provider, a->now,
			       a->r);
}

enum orgw_err
state_route(const struct orgw_conf *c, const char *model,
	    bool client_provider, int64_t now, struct state_route *r)
{
	struct route_args a = {c, model, client_provider, now, r, NULL, NULL};
	enum orgw_err err;

	route_set(r, client_provider ? ROUTE_CLIENT : ROUTE_UNPINNED, NULL,
		  NULL, 0);
	err = state_txn(c, true, do_route, &a);
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
	if (a->res != NULL && (err = seen_mark(s, a->model, a->now)))
		return err;
	err = decide_and_lock(s, a->c, a->model, false, a->now, a->r);
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
	struct route_args a = {c, model, false, now, r, res, error};
	enum orgw_err err;

	route_set(r, ROUTE_UNPINNED, NULL, NULL, 0);
	err = state_txn(c, true, do_route_scored, &a);
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
	struct route_args a = {c, model, false, now, NULL, res, error};

	return state_txn(c, true, do_store_cands, &a);
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
	*a->tripped = failover_breaker_fail(&f, a->reason, a->now,
					    a->c->fail_limit,
					    a->c->cooldown_seconds, &cd);
	if ((err = put_text(s, k, record_failure_encode(&f))))
		return err;
	if (!*a->tripped)
		return ORGW_OK;
	key3(k, "PROVIDER_COOLDOWN", a->model, a->tag);
	if ((err = put_text(s, k, record_cooldown_encode(&cd))))
		return err;
	if ((err = event_count(s, a->model, a->now, LX_TRIPS, a->tag)) !=
	    ORGW_OK)
		return err;
	err = read_lock_cands(s, a->model, &lock, &have_lock, &cands,
			      &have_cands);
	if (err != ORGW_OK)
		return err;
	if (have_lock && strcmp(lock.tag, a->tag) != 0 &&
	    !cooling(&cc, lock.tag)) {
		/* Another worker re-locked already: follow it. */
		if (a->r)
			route_set(a->r, ROUTE_RELOCKED, lock.tag,
				  lock.provider_name,
				  lock.max_completion_tokens);
	} else {
		char why[REC_REASON_MAX + 16];

		snprintf(why, sizeof(why), "breaker: %s", a->reason);
		err = move_lock(s, a->c, a->model, a->tag, why, a->now,
				&cands, have_cands, a->r);
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
	err = state_txn(c, true, do_failure, &a);
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
	struct stats_delta d;
	const char *ok_tag;
	int64_t lost;		/* counts lost earlier, for LOST_UPDATES */
};

/* Adds n to LOST_UPDATES (a decimal count). */
static enum orgw_err
lost_add(struct store *s, int64_t n)
{
	char *v = NULL, num[32];
	long long have = 0;
	enum orgw_err err;

	if ((err = store_get(s, STATE_LOST_KEY, &v)) != ORGW_OK)
		return err;
	if (v != NULL)
		have = strtoll(v, NULL, 10);
	free(v);
	if (have < 0)
		have = 0;
	snprintf(num, sizeof(num), "%lld", have + (long long)n);
	return store_put(s, STATE_LOST_KEY, num);
}

/* The old release's measured hit rate of tag in STATS:<model> into h
 * (zero when none), so a HIT key starts from it. */
static enum orgw_err
legacy_hit(struct store *s, const char *model, const char *tag,
	   struct score_hit *h)
{
	struct score_hit *v = NULL;
	size_t n = 0, i;
	char k[KEY_MAX], *text = NULL;
	enum orgw_err err;

	key2(k, "STATS", model);
	if ((err = store_get(s, k, &text)) != ORGW_OK)
		return err;
	err = record_stats_hits(text, &v, &n);
	free(text);
	for (i = 0; i < n; i++)
		if (strcmp(v[i].tag, tag) == 0)
			*h = v[i];
	free(v);
	return err;
}

/*
 * Adds d's answer to its provider's measured hit rate: only what the
 * pinned provider itself served, with usage, measures its cache.
 */
static enum orgw_err
hit_count(struct store *s, const char *model, const struct stats_delta *d)
{
	struct score_hit h;
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	if (d->ok == 0 || d->off_pin != 0 || d->prompt_tokens <= 0 ||
	    d->tag == NULL || d->tag[0] == '\0')
		return ORGW_OK;
	memset(&h, 0, sizeof(h));
	key3(k, "HIT", model, d->tag);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if (v == NULL || record_hit_decode(v, &h) != ORGW_OK)
		err = legacy_hit(s, model, d->tag, &h);
	free(v);
	if (err != ORGW_OK)
		return err;
	score_hit_add(&h, d->prompt_tokens, d->cached_tokens,
		      d->hit_half_life_tokens);
	return put_text(s, k, record_hit_encode(&h));
}

struct hits_ctx {
	size_t prefix_len;
	struct score_hit *v;
	size_t n, cap;
	bool oom;
};

static struct score_hit *
hits_push(struct hits_ctx *h)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 8;
		struct score_hit *v = realloc(h->v, cap * sizeof(*v));

		if (v == NULL) {
			h->oom = true;
			return NULL;
		}
		h->v = v;
		h->cap = cap;
	}
	memset(&h->v[h->n], 0, sizeof(h->v[0]));
	return &h->v[h->n++];
}

static int
hits_cb(void *arg, const char *key, const char *val)
{
	struct hits_ctx *h = arg;
	const char *tag = key + h->prefix_len;
	struct score_hit *e;

	/* "HIT:a/b:" also begins the keys of a model "a/b:free". */
	if (strchr(tag, ':') != NULL || strlen(tag) >= ORGW_TAG_MAX)
		return 0;
	if ((e = hits_push(h)) == NULL)
		return 1;
	if (record_hit_decode(val, e) != ORGW_OK) {
		h->n--;
		return 0;
	}
	memcpy(e->tag, tag, strlen(tag) + 1);
	return 0;
}

enum orgw_err
state_hits(struct store *s, const char *model, struct score_hit **v,
	   size_t *n)
{
	struct hits_ctx h;
	struct score_hit *old = NULL;
	size_t n_old = 0, i, j;
	char k[KEY_MAX], *text = NULL;
	enum orgw_err err;

	memset(&h, 0, sizeof(h));
	*v = NULL;
	*n = 0;
	key2(k, "HIT", model);
	strcat(k, ":");
	h.prefix_len = strlen(k);
	if ((err = store_each(s, k, hits_cb, &h)) == ORGW_OK && !h.oom) {
		key2(k, "STATS", model);
		err = store_get(s, k, &text);
	}
	if (err == ORGW_OK && !h.oom)
		err = record_stats_hits(text, &old, &n_old);
	free(text);
	for (i = 0; err == ORGW_OK && !h.oom && i < n_old; i++) {
		for (j = 0; j < h.n; j++)
			if (strcmp(h.v[j].tag, old[i].tag) == 0)
				break;
		if (j == h.n && hits_push(&h) != NULL)
			h.v[h.n - 1] = old[i];
	}
	free(old);
	if (err == ORGW_OK && h.oom)
		err = ORGW_ENOMEM;
	if (err != ORGW_OK) {
		free(h.v);
		return err;
	}
	*v = h.v;
	*n = h.n;
	return ORGW_OK;
}

static enum orgw_err
do_finish(struct store *s, void *arg)
{
	struct finish_args *a = arg;
	struct rec_failure f;
	struct rec_cands cands;
	struct ledger_cell cell;
	bool have_cands;
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	if (a->lost > 0 && (err = lost_add(s, a->lost)) != ORGW_OK)
		return err;
	/* The candidates' prices and names attribute and price the
	 * request's money; without them it is "unknown".  a->d.money_tag
	 * may point into cands: they live until the cell is written. */
	if ((err = read_cands(s, a->model, &cands, &have_cands)) != ORGW_OK)
		return err;
	ledger_price(&a->d, have_cands ? &cands : NULL);
	ledger_from_delta(&cell, &a->d);
	err = cell_add(s, a->model, a->d.now, ledger_api(&a->d),
		       ledger_provider(&a->d), &cell);
	a->d.money_tag = NULL;
	record_cands_clear(&cands);
	if (err == ORGW_OK)
		err = hit_count(s, a->model, &a->d);
	if (err != ORGW_OK || a->ok_tag == NULL)
		return err;
	key3(k, "PROVIDER_FAILURE", a->model, a->ok_tag);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	/* Write only when there is a count to reset. */
	if (v != NULL && record_failure_decode(v, &f) == ORGW_OK &&
	    f.count > 0) {
		failover_breaker_ok(&f);
		err = put_text(s, k, record_failure_encode(&f));
	}
	free(v);
	return err;
}

enum orgw_err
state_finish(const struct orgw_conf *c, const char *model,
	     struct stats_delta *d, const char *ok_tag)
{
	struct finish_args a = {model, *d, ok_tag, 0};
	enum orgw_err err;

	a.d.hit_half_life_tokens = (double)c->hit_rate_half_life_tokens;
	/* Counts this process lost while the state was away go into
	 * LOST_UPDATES with this one, in the same transaction. */
	a.lost = store_lost_take();
	err = state_txn(c, true, do_finish, &a);
	if (err == ORGW_OK && a.d.cost_estimated) {
		d->cost_usd = a.d.cost_usd;
		d->cost_estimated = true;
	}
	if (err != ORGW_OK) {
		store_lost_add(a.lost + 1);
		log_warn("state unavailable (%s): request not counted "
			 "(%lld lost in this worker, for LOST_UPDATES)",
			 orgw_strerror(err), (long long)(a.lost + 1));
	} else if (a.lost > 0) {
		log_info("state: %lld request counts lost while the state "
			 "was unavailable added to LOST_UPDATES",
			 (long long)a.lost);
	}
	return err;
}

enum orgw_err
state_health(const struct orgw_conf *c, char *why, size_t n)
{
	char r[4400];
	enum orgw_err err = store_check(c, r, sizeof(r));

	if (err == ORGW_OK)
		return err;
	if (c->state_backend == CONF_BACKEND_REDIS)
		snprintf(why, n, "%s", r);	/* "redis unreachable: ..." */
	else
		snprintf(why, n, "state store %s: %s", c->state_path, r);
	return err;
}

/*
 * Operator commands.  They live apart from the request
 * path's functions above on purpose: the same keys, the same record.c
 * codecs and the same state_txn() lock, but their own transactions, so
 * a change to the request path's relock rules does not silently change
 * what an operator's command does (and the other way round).
 */

bool
state_tag_ok(const char *tag)
{
	/* A tag the scorer would accept, and no ':' (it separates the
	 * parts of PROVIDER_*:<model>:<tag> keys). */
	return tag != NULL && tag[0] != '\0' && score_tag_ok(tag) &&
	       strchr(tag, ':') == NULL;
}

struct op_args {
	const struct orgw_conf *c;
	const char *model, *tag, *reason;
	int64_t seconds, now;
	char *old_tag;
	size_t old_tag_n;
	bool *moved, *had_cooldown, *had_failures;
	struct state_route *r;
};

static enum orgw_err
do_op_unlock(struct store *s, void *arg)
{
	struct op_args *a = arg;
	struct rec_lock lock;
	bool have_lock;
	enum orgw_err err;

	snprintf(a->old_tag, a->old_tag_n, "%s", "");
	if ((err = read_lock(s, a->model, &lock, &have_lock)) != ORGW_OK)
		return err;
	/* An undecodable lock is deleted too: routing treats it as none. */
	if (have_lock)
		snprintf(a->old_tag, a->old_tag_n, "%s", lock.tag);
	return lock_write(s, a->model, &lock, have_lock, NULL, a->now,
			  "operator unlock");
}

enum orgw_err
state_op_unlock(const struct orgw_conf *c, const char *model, int64_t now,
		char *old_tag, size_t n)
{
	struct op_args a = {.c = c, .model = model, .now = now,
			    .old_tag = old_tag, .old_tag_n = n};
	char m[ORGW_MODEL_MAX * 4];
	enum orgw_err err;

	snprintf(old_tag, n, "%s", "");
	if (!reqval_model_ok(model))
		return ORGW_EINVAL;
	log_safe(m, sizeof(m), model);
	err = state_txn(c, true, do_op_unlock, &a);
	if (err != ORGW_OK)
		log_warn("operator: unlock model=%s failed: %s", m,
			 orgw_strerror(err));
	else if (old_tag[0] != '\0')
		log_info("operator: unlock model=%s was=%s: the next request "
			 "relocks",
			 m, old_tag);
	return err;
}

static enum orgw_err
do_op_cool(struct store *s, void *arg)
{
	struct op_args *a = arg;
	struct rec_cooldown cd;
	struct rec_lock lock;
	struct rec_cands cands;
	bool have_lock, have_cands;
	char k[KEY_MAX];
	enum orgw_err err;

	*a->moved = false;
	/* Cleared at out: whatever happens before it is read. */
	memset(&cands, 0, sizeof(cands));
	memset(&cd, 0, sizeof(cd));
	cd.until = a->now + a->seconds;
	snprintf(cd.reason, sizeof(cd.reason), "%s", a->reason);
	key3(k, "PROVIDER_COOLDOWN", a->model, a->tag);
	if ((err = put_text(s, k, record_cooldown_encode(&cd))) != ORGW_OK)
		return err;
	err = read_lock_cands(s, a->model, &lock, &have_lock, &cands,
			      &have_cands);
	if (err != ORGW_OK)
		goto out;
	if (!have_lock) {
		route_set(a->r, ROUTE_UNPINNED, NULL, NULL, 0);
		goto out;
	}
	if (strcmp(lock.tag, a->tag) != 0) {
		route_set(a->r, ROUTE_LOCKED, lock.tag, lock.provider_name,
			  lock.max_completion_tokens);
		goto out;
	}
	/* The live lock is the provider cooled: move it now, as a breaker
	 * trip does (SPEC 5), at today's prices (SPEC 6). */
	*a->moved = true;
	err = move_lock(s, a->c, a->model, a->tag, "operator cool", a->now,
			&cands, have_cands, a->r);
out:
	record_cands_clear(&cands);
	return err;
}

enum orgw_err
state_op_cool(const struct orgw_conf *c, const char *model, const char *tag,
	      int64_t seconds, const char *reason, int64_t now, bool *moved,
	      struct state_route *r)
{
	struct op_args a = {.c = c, .model = model, .tag = tag,
			    .reason = reason, .seconds = seconds, .now = now,
			    .moved = moved, .r = r};
	char m[ORGW_MODEL_MAX * 4], why[REC_REASON_MAX * 4];
	enum orgw_err err;

	*moved = false;
	route_set(r, ROUTE_UNPINNED, NULL, NULL, 0);
	if (!reqval_model_ok(model) || !state_tag_ok(tag) || seconds <= 0 ||
	    reason == NULL)
		return ORGW_EINVAL;
	log_safe(m, sizeof(m), model);
	log_safe(why, sizeof(why), reason);
	err = state_txn(c, true, do_op_cool, &a);
	if (err != ORGW_OK) {
		log_warn("operator: cool model=%s provider=%s failed: %s", m,
			 tag, orgw_strerror(err));
		*moved = false;
		route_set(r, ROUTE_UNPINNED, NULL, NULL, 0);
		return err;
	}
	log_info("operator: cool model=%s provider=%s seconds=%lld "
		 "reason=\"%s\" lock=%s%s",
		 m, tag, (long long)seconds, why,
		 r->tag[0] ? r->tag : "none", *moved ? " (moved)" : "");
	return err;
}

/* Deletes key, setting *had when it was there. */
static enum orgw_err
del_had(struct store *s, const char *key, bool *had)
{
	char *v = NULL;
	enum orgw_err err;

	*had = false;
	if ((err = store_get(s, key, &v)) != ORGW_OK)
		return err;
	*had = v != NULL;
	free(v);
	return *had ? store_del(s, key) : ORGW_OK;
}

static enum orgw_err
do_op_uncool(struct store *s, void *arg)
{
	struct op_args *a = arg;
	char k[KEY_MAX];
	enum orgw_err err;

	key3(k, "PROVIDER_COOLDOWN", a->model, a->tag);
	if ((err = del_had(s, k, a->had_cooldown)) != ORGW_OK)
		return err;
	key3(k, "PROVIDER_FAILURE", a->model, a->tag);
	return del_had(s, k, a->had_failures);
}

enum orgw_err
state_op_uncool(const struct orgw_conf *c, const char *model, const char *tag,
		bool *had_cooldown, bool *had_failures)
{
	struct op_args a = {.c = c, .model = model, .tag = tag,
			    .had_cooldown = had_cooldown,
			    .had_failures = had_failures};
	char m[ORGW_MODEL_MAX * 4];
	enum orgw_err err;

	*had_cooldown = *had_failures = false;
	if (!reqval_model_ok(model) || !state_tag_ok(tag))
		return ORGW_EINVAL;
	log_safe(m, sizeof(m), model);
	err = state_txn(c, true, do_op_uncool, &a);
	if (err != ORGW_OK)
		log_warn("operator: uncool model=%s provider=%s failed: %s", m,
			 tag, orgw_strerror(err));
	else if (*had_cooldown || *had_failures)
		log_info("operator: uncool model=%s provider=%s cooldown=%s "
			 "failures=%s",
			 m, tag, *had_cooldown ? "cleared" : "none",
			 *had_failures ? "cleared" : "none");
	return err;
}
