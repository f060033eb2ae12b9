/*
 * state.c - the request path's state transactions.
 *
 * Each exported function runs one transaction through state_txn(): open
 * (exclusive for writers), do the work, close.  When the store reports
 * a damaged file, state_txn repairs it (store_repair: recover, or move
 * aside and recreate) and tries once more; when it still fails the
 * caller degrades (unpinned routing, a lost counter increment is logged).
 *
 * Keys (docs/design.md section 7): MODEL_SEEN:<model> (the old MODELS_SEEN list is
 * read by the scorer, which migrates it), BEST_PROVIDER:<model>,
 * PROVIDER_CANDIDATE:<model>, PROVIDER_FAILURE:<model>:<tag>,
 * PROVIDER_COOLDOWN:<model>:<tag>, the ledger's cells
 * LEDGER:<model>:<day>:<api>:<tag> (ledger.h), HIT:<model> (its
 * providers' measured hit rates) and LOCK_LOG:<model> (the recent lock
 * changes for /status): each counter is written in the same transaction
 * as the event it counts (the request, the trip's cooldown, the lock's
 * move), so it is exact.  The old release's STATS:<model> and
 * METRICS:<model> are read (hit rates, /stats) and never written.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "convbody.h"
#include "convcache.h"
#include "convroute.h"
#include "failover.h"
#include "hold.h"
#include "ledger.h"
#include "log.h"
#include "memo.h"
#include "redisconf.h"
#include "reqval.h"
#include "score.h"
#include "slots.h"
#include "state.h"
#include "store.h"
#include "teamkey.h"

#define KEY_MAX (ORGW_MODEL_MAX + ORGW_TAG_MAX + 32)
#define SCORE_RETRY_SECONDS 60

/* state_txn() and state_txn_norepair(): repair says whether a damaged
 * file is repaired and the transaction run once more. */
static enum orgw_err
txn_run(const struct orgw_conf *c, bool write, bool repair,
	enum orgw_err (*fn)(struct store *s, void *arg), void *arg)
{
	struct store *s;
	enum orgw_err err;
	bool repaired = !repair;
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

enum orgw_err
state_txn(const struct orgw_conf *c, bool write,
	  enum orgw_err (*fn)(struct store *s, void *arg), void *arg)
{
	return txn_run(c, write, true, fn, arg);
}

enum orgw_err
state_txn_norepair(const struct orgw_conf *c, bool write,
		   enum orgw_err (*fn)(struct store *s, void *arg), void *arg)
{
	return txn_run(c, write, false, fn, arg);
}

static void
key2(char *k, enum statekey f, const char *model)
{
	(void)statekeys_make(k, KEY_MAX, f, model, NULL);
}

static void
key3(char *k, enum statekey f, const char *model, const char *tag)
{
	(void)statekeys_make(k, KEY_MAX, f, model, tag);
}

/*
 * The decoded records a request reads and writes every time, kept with
 * their text (memo.h): the cells it adds to, its model's lock, hit rates
 * and candidates.
 */
static struct memo cell_memo = MEMO_INIT(sizeof(struct ledger_cell), NULL,
					 NULL);
static struct memo lock_memo = MEMO_INIT(sizeof(struct rec_lock), NULL,
					 NULL);

/* A malloc'd copy of the n items of size bytes at src, for a memo's
 * copy of a decoded list; NULL when n is 0 or out of memory. */
static void *
items_dup(const void *src, size_t n, size_t size)
{
	void *d;

	if (n == 0 || (d = malloc(n * size)) == NULL)
		return NULL;
	memcpy(d, src, n * size);
	return d;
}

static bool
cands_copy(void *dst, const void *src)
{
	struct rec_cands *d = dst;
	const struct rec_cands *c = src;

	*d = *c;
	if ((d->v = items_dup(c->v, c->n, sizeof(*d->v))) == NULL)
		d->n = 0;
	return d->n == c->n;
}

static void
cands_clear(void *val)
{
	record_cands_clear(val);
}

static struct memo cands_memo = MEMO_INIT(sizeof(struct rec_cands),
					  cands_copy, cands_clear);

enum orgw_err
state_cell_put(struct store *s, const char *k, const struct ledger_cell *c)
{
	struct ledger_cell have;
	char *v = NULL, *text;
	enum orgw_err err;

	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	/* Damaged text starts the cell again (decode zeroes it). */
	if (!memo_get(&cell_memo, k, v, &have))
		(void)ledger_cell_decode(v, &have);
	free(v);
	ledger_cell_add(&have, c);
	if ((text = ledger_cell_encode(&have)) != NULL)
		memo_put(&cell_memo, k, text, &have);
	return store_put_text(s, k, text);
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
	char k[KEY_MAX + 64], day[11];

	record_day(now, day);
	if (!ledger_key(k, sizeof(k), model, day, api, tag))
		return ORGW_OK;
	return state_cell_put(s, k, c);
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
 * another provider counts a lock change in the ledger (docs/design.md 7; a first
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

	key2(k, SK_BEST_PROVIDER, model);
	if (lock != NULL) {
		char *text = record_lock_encode(lock);

		/* What the text decodes to: a lock has a tag. */
		if (text != NULL && lock->tag[0] != '\0')
			memo_put(&lock_memo, k, text, lock);
		err = store_put_text(s, k, text);
	} else {
		err = store_del(s, k);
	}
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

/* Reads PROVIDER_COOLDOWN of tag for model into cd; *have false when
 * there is none (or it does not decode: it cools nobody then). */
static enum orgw_err
read_cooldown(struct store *s, const char *model, const char *tag,
	      struct rec_cooldown *cd, bool *have)
{
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	memset(cd, 0, sizeof(*cd));
	*have = false;
	key3(k, SK_PROVIDER_COOLDOWN, model, tag);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	*have = v != NULL && record_cooldown_decode(v, cd) == ORGW_OK;
	free(v);
	return ORGW_OK;
}

static bool
cooling(void *arg, const char *tag)
{
	struct cool_ctx *cc = arg;
	struct rec_cooldown cd;
	bool have;

	return read_cooldown(cc->s, cc->model, tag, &cd, &have) == ORGW_OK &&
	       have && failover_breaker_cooling(&cd, cc->now);
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
	key2(k, SK_BEST_PROVIDER, model);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if (memo_get(&lock_memo, k, v, l)) {
		*have_lock = true;
	} else if (v != NULL && record_lock_decode(v, l) == ORGW_OK) {
		*have_lock = true;
		memo_put(&lock_memo, k, v, l);
	}
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
	key2(k, SK_PROVIDER_CANDIDATE, model);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if (memo_get(&cands_memo, k, v, cands)) {
		*have_cands = true;
	} else if (v != NULL && record_cands_decode(v, cands) == ORGW_OK) {
		*have_cands = true;
		memo_put(&cands_memo, k, v, cands);
	}
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
	r->conversation = false;
}

/*
 * A conversation's record decoded, routing part and cache record, kept
 * in a memo (memo.h): a conversation's next turn usually finds the text
 * this process wrote at its last one, and decoding it is most of what a
 * conversation costs a request.  Plain bytes: the memo copies them.
 */
struct conv_val {
	struct rec_conv rc;
	struct convcache cc;
};
static struct memo conv_memo = MEMO_INIT(sizeof(struct conv_val), NULL,
					 NULL);

/* Decodes text (key k) into *cv; false when it is no conversation
 * record.  A cache record that does not decode reads as none. */
static bool
conv_decode(const char *k, const char *text, struct conv_val *cv)
{
	cJSON *cache = NULL;

	if (memo_get(&conv_memo, k, text, cv))
		return true;
	if (text == NULL || record_conv_decode(text, &cv->rc, &cache) !=
				    ORGW_OK) {
		cJSON_Delete(cache);
		return false;
	}
	if (cache == NULL || convcache_decode(cache, &cv->cc) != ORGW_OK)
		convcache_init(&cv->cc);
	cJSON_Delete(cache);
	memo_put(&conv_memo, k, text, cv);
	return true;
}

/* Reads the conversation's record (its routing part); *have false when
 * there is none or it does not decode. */
static enum orgw_err
read_conv(struct store *s, const char *model, const char *hash,
	  struct rec_conv *rc, bool *have)
{
	char k[KEY_MAX], *v = NULL;
	struct conv_val *cv;
	enum orgw_err err;

	memset(rc, 0, sizeof(*rc));
	*have = false;
	key3(k, SK_CONV, model, hash);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if (v != NULL) {
		if ((cv = malloc(sizeof(*cv))) == NULL) {
			free(v);
			return ORGW_ENOMEM;
		}
		if ((*have = conv_decode(k, v, cv)))
			*rc = cv->rc;
		free(cv);
	}
	free(v);
	return ORGW_OK;
}

/* Reads PRESSURE of tag for model; *p zero when there is none. */
static enum orgw_err
read_pressure(struct store *s, const char *model, const char *tag,
	      struct rec_pressure *p)
{
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	memset(p, 0, sizeof(*p));
	key3(k, SK_PRESSURE, model, tag);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if (v != NULL && record_pressure_decode(v, p) != ORGW_OK)
		memset(p, 0, sizeof(*p));
	free(v);
	return ORGW_OK;
}

/* convroute_pressure_fn over the store (arg: a struct cool_ctx). */
static bool
pressured(void *arg, const char *tag)
{
	const struct cool_ctx *cc = arg;
	struct rec_pressure p;

	return read_pressure(cc->s, cc->model, tag, &p) == ORGW_OK &&
	       p.until > cc->now;
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
	key2(k, SK_LOCK_LOG, model);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	err = store_put_text(s, k, record_lock_log_add(v, now, from, to, why));
	free(v);
	return err;
}

/*
 * Re-ranks cands at now's UTC time (docs/design.md section 6) before a lock moves,
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
 * cool): the best candidate not cooling, re-ranked at now (docs/design.md 5, 6),
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

/* The conversation's view for convroute_decide(): its record (have),
 * the model's view rv, the pressure read through cc.  CONVERSATIONS=0
 * shows no record and no pressure: every turn goes where the model's
 * lock says, as any request (the record is still kept, for the breaks
 * and the lists). */
static void
conv_view(struct convroute_view *cvw, struct convroute_conv *conv,
	  const struct route_view *rv, const struct rec_conv *rc, bool have,
	  const struct orgw_conf *c, struct cool_ctx *cc)
{
	memset(cvw, 0, sizeof(*cvw));
	memset(conv, 0, sizeof(*conv));
	cvw->rv = rv;
	cvw->idle_seconds = c->conversation_idle_seconds;
	if (!c->conversations)
		return;
	if (have) {
		snprintf(conv->tag, sizeof(conv->tag), "%s", rc->tag);
		conv->last_turn = rc->last_turn;
	}
	cvw->conv = have ? conv : NULL;
	cvw->pressure = pressured;
	cvw->pressure_arg = cc;
}

/* Fills cv's answer from o (the conversation's decision) and says,
 * when asked, whether the pinned endpoint caches only explicitly; cands
 * is read for that when the decision did not read it. */
static enum orgw_err
conv_answer(struct store *s, const char *model, const struct rec_conv *rc,
	    bool have, const struct convroute_out *o,
	    const struct state_route *r, struct rec_cands *cands,
	    bool *cands_read, struct state_conv *cv)
{
	const struct rec_cand *pc;
	bool have_cands = true;
	enum orgw_err err;

	cv->have = have && rc->tag[0] != '\0';
	snprintf(cv->prev_tag, sizeof(cv->prev_tag), "%s",
		 have ? rc->tag : "");
	cv->warm = o->warm;
	cv->spread = o->spread;
	cv->moved = o->moved;
	cv->foreign_items = have ? rc->foreign_items : 0;
	cv->explicit_cache = false;
	if (!cv->want_explicit || r->tag[0] == '\0')
		return ORGW_OK;
	if (!*cands_read) {
		if ((err = read_cands(s, model, cands, &have_cands)) !=
		    ORGW_OK)
			return err;
		*cands_read = true;
	}
	pc = route_find(cands, r->tag);
	cv->explicit_cache = pc != NULL && convbody_explicit_cache(pc);
	return ORGW_OK;
}

/* Decides with what the store holds and writes the lock it implies;
 * for a conversation's turn (cv), where convroute_decide() says. */
static enum orgw_err
decide_and_lock(struct store *s, const struct orgw_conf *c, const char *model,
		bool client_provider, int64_t now, struct state_route *r,
		struct state_conv *cv)
{
	struct rec_lock lock;
	struct rec_cands cands;
	struct rec_conv rc;
	struct cool_ctx cc = {s, model, now};
	struct route_view v;
	struct convroute_view cvw;
	struct convroute_conv conv;
	struct convroute_out o;
	const struct rec_cand *pick;
	bool have_lock, have_cands = false, have_conv = false, read = false;
	char k[KEY_MAX];
	enum orgw_err err;
	enum route_kind kind;

	memset(&cands, 0, sizeof(cands));
	memset(&o, 0, sizeof(o));
	memset(&rc, 0, sizeof(rc));
	if ((err = read_lock(s, model, &lock, &have_lock)) != ORGW_OK)
		return err;
	if (cv != NULL && !client_provider &&
	    (err = read_conv(s, model, cv->hash, &rc, &have_conv)) != ORGW_OK)
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
	conv_view(&cvw, &conv, &v, &rc, have_conv, c, &cc);
	/* Most requests find a live lock (step 4) or bring their own
	 * provider (step 3), which route_decide() settles before it looks
	 * at the candidates.  So the candidate list, the largest record and
	 * the costliest to decode, is read only when that first decision
	 * falls through to steps 5 to 7 (or a conversation's answer needs
	 * it); the decision taken again with it is then the whole of
	 * docs/design.md section 4. */
	if (cv != NULL)
		convroute_decide(&cvw, &o);
	else
		o.kind = route_decide(&v, &o.pick);
	if (o.needs_cands || (o.kind != ROUTE_LOCKED && o.kind != ROUTE_CLIENT)) {
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
		read = true;
		v.cands = have_cands ? &cands : NULL;
		cvw.cands_read = true;
		if (cv != NULL)
			convroute_decide(&cvw, &o);
		else
			o.kind = route_decide(&v, &o.pick);
	}
	kind = o.kind;
	pick = o.pick;
	key2(k, SK_BEST_PROVIDER, model);
	if (o.conversation && pick != NULL) {
		/* The conversation's provider, not the lock's: pinned there,
		 * the lock left as it is (no renewal, no move). */
		struct rec_lock at;

		route_lock_from(&at, pick, now);
		route_set(r, ROUTE_LOCKED, at.tag, at.provider_name,
			  at.max_completion_tokens);
		r->conversation = true;
		kind = ROUTE_CLIENT;	/* nothing below writes */
	}
	switch (kind) {
	case ROUTE_LOCKED:
		route_set(r, ROUTE_LOCKED, lock.tag, lock.provider_name,
			  lock.max_completion_tokens);
		/* Renew last_used (seconds): a lock renewed earlier in the
		 * same second would be rewritten with the very same bytes. */
		if (lock.last_used == now)
			break;
		lock.last_used = now;
		err = store_put_text(s, k, record_lock_encode(&lock));
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
		if (!r->conversation)
			route_set(r, ROUTE_CLIENT, NULL, NULL, 0);
		break;
	case ROUTE_UNPINNED:
		route_set(r, ROUTE_UNPINNED, NULL, NULL, 0);
		break;
	}
	if (err == ORGW_OK && cv != NULL)
		err = conv_answer(s, model, &rc, have_conv, &o, r, &cands,
				  &read, cv);
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
	bool routed;		/* do_route_read settled it */
	struct state_admit *admit;	/* a team key's limits, or NULL */
	struct state_conv *conv;	/* a conversation's turn, or NULL */
};

/*
 * Marks model seen (MODEL_SEEN:<model>, docs/design.md 4 step 2) once its endpoints
 * were fetched: one key per model, so what a request does under the lock
 * does not grow with the number of models.
 */
static enum orgw_err
seen_mark(struct store *s, const char *model, int64_t now)
{
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	key2(k, SK_MODEL_SEEN, model);
	if ((err = store_get(s, k, &v)) != ORGW_OK || v != NULL) {
		free(v);
		return err;
	}
	return store_put_text(s, k, record_model_seen_encode(now));
}

/* The holds of key name into *hp (malloc'd, the caller frees), its key
 * into k (KEY_MAX bytes).  Damaged text starts the table again: the
 * record is soft. */
static enum orgw_err
hold_read(struct store *s, const char *name, char *k, struct holds **hp)
{
	char *v = NULL;
	enum orgw_err err;

	*hp = NULL;
	key2(k, SK_TEAMKEY_HOLD, name);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if ((*hp = malloc(sizeof(**hp))) == NULL) {
		free(v);
		return ORGW_ENOMEM;
	}
	(void)holds_decode(v, *hp);
	free(v);
	return ORGW_OK;
}

/* The most a request of model can cost (ledger_hold_estimate), at the
 * candidates stored in s; *basis (may be NULL) what it used. */
static enum orgw_err
estimate_in(struct store *s, const char *model, int64_t now_s,
	    int64_t prompt_max, int64_t out_max, double ceiling_usd,
	    double *usd, const char **basis)
{
	struct rec_cands cands;
	bool have;
	enum orgw_err err;

	if ((err = read_cands(s, model, &cands, &have)) != ORGW_OK)
		return err;
	*usd = ledger_hold_estimate(have ? &cands : NULL, score_hhmm(now_s),
				    prompt_max, out_max, ceiling_usd, basis);
	record_cands_clear(&cands);
	return ORGW_OK;
}

/*
 * The budget holds of a key with a budget (hold.h), at admission: what
 * its requests in flight hold counts as spent in day and month; when
 * that leaves nothing, or the table is full, the request is refused as
 * over its concurrency (429: the budget is free again as they end).
 * Else *hp (malloc'd, the caller frees) gets its hold added (when it
 * has an id), for hold_put once it is admitted.
 */
static enum orgw_err
hold_check(struct store *s, struct state_admit *ad, const char *model,
	   struct ledger_cell *day, struct ledger_cell *month,
	   struct holds **hp)
{
	struct holds *h;
	char k[KEY_MAX];
	double held;
	enum orgw_err err;

	*hp = NULL;
	if ((err = hold_read(s, ad->key->name, k, &h)) != ORGW_OK)
		return err;
	held = holds_total(h, ad->now_ms);
	day->v[LX_KEY_SPEND] += held;
	month->v[LX_KEY_SPEND] += held;
	if (teamkey_check_budget(ad->key, day, month) != TK_OK) {
		ad->verdict = TK_CONCURRENT;
		ad->retry_after_s = 1;
		free(h);
		return ORGW_OK;
	}
	if (ad->hold == NULL) {
		free(h);
		return ORGW_OK;
	}
	if ((err = estimate_in(s, model, ad->now_ms / 1000, ad->prompt_max,
			       ad->out_max, ad->ceiling_usd, &ad->held_usd,
			       NULL)) != ORGW_OK) {
		free(h);
		return err;
	}
	if (!holds_add(h, ad->hold, ad->now_ms + ad->lease_ms,
		       ad->held_usd)) {
		ad->verdict = TK_CONCURRENT;
		ad->retry_after_s = 1;
		free(h);
		return ORGW_OK;
	}
	*hp = h;
	return ORGW_OK;
}

/* Writes the holds of ad's key. */
static enum orgw_err
hold_put(struct store *s, const struct state_admit *ad,
	 const struct holds *h)
{
	char k[KEY_MAX];

	key2(k, SK_TEAMKEY_HOLD, ad->key->name);
	return store_put_text(s, k, holds_encode(h));
}

/* True when lease l's worker is gone (slots.h), logged for the key of
 * the admission arg. */
static bool
lease_gone(void *arg, const struct teamkey_lease *l)
{
	const struct state_admit *ad = arg;

	if (!slots_owner_gone(l->host, l->pid, l->start))
		return false;
	log_warn("team key %s: lease of worker %lld given back: the worker "
		 "is gone",
		 ad->key->name, (long long)l->pid);
	return true;
}

/*
 * A team key's request admitted or refused (teamkey_rate_admit) against
 * its TEAMKEY_RATE:<name> record, in the route transaction.  Damaged
 * text starts the window and the leases afresh: the record is soft.
 * Written only when the request is admitted, so a refusal writes
 * nothing.
 */
static enum orgw_err
admit(struct store *s, struct state_admit *ad, const char *model)
{
	struct teamkey_rate *r;
	struct holds *h = NULL;
	char k[KEY_MAX], *v = NULL;
	int64_t host, pid, start, now_ms;
	bool by_rate = false;
	enum orgw_err err;

	ad->verdict = TK_OK;
	ad->retry_after_s = 0;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return ORGW_ENOMEM;
	key2(k, SK_TEAMKEY_RATE, ad->key->name);
	if ((err = store_get(s, k, &v)) != ORGW_OK) {
		free(r);
		return err;
	}
	if (v != NULL && teamkey_rate_decode(v, r) != ORGW_OK)
		memset(r, 0, sizeof(*r));
	free(v);
	/* The rpm window and the leases are timed by the store's clock
	 * (Redis's TIME), so hosts with skewed clocks share one window; a
	 * key with only a budget needs no time of it. */
	now_ms = ad->now_ms;
	if ((ad->key->rpm > 0 || ad->key->concurrent > 0) &&
	    (err = store_now_ms(s, ad->now_ms, &now_ms)) != ORGW_OK) {
		free(r);
		return err;
	}
	if (ad->key->budget_day_usd > 0 || ad->key->budget_month_usd > 0) {
		struct ledger_cell day = *ad->day, month = *ad->month;

		teamkey_rate_use(r, ad->now_ms / 1000, &day, &month);
		ad->verdict = teamkey_check_budget(ad->key, &day, &month);
		if (ad->verdict == TK_OK &&
		    (err = hold_check(s, ad, model, &day, &month, &h)) !=
			    ORGW_OK) {
			free(r);
			return err;
		}
	}
	if (ad->verdict == TK_OK) {
		ad->verdict = teamkey_rate_admit(ad->key, r, now_ms,
						 ad->lease, ad->lease_ms,
						 &ad->retry_after_s);
		by_rate = true;
	}
	/* At the limit, a lease whose worker this host saw die (kill -9,
	 * a crash) is given back now rather than when its time ends: only
	 * then, since asking costs a system call or two per lease.  A
	 * refusal for the budget's holds (hold_check) is not the leases'
	 * to lift. */
	if (by_rate && ad->verdict == TK_CONCURRENT &&
	    teamkey_rate_drop(r, lease_gone, (void *)ad) > 0)
		ad->verdict = teamkey_rate_admit(ad->key, r, now_ms,
						 ad->lease, ad->lease_ms,
						 &ad->retry_after_s);
	if (ad->verdict == TK_OK && ad->lease != NULL &&
	    ad->key->concurrent > 0 && slots_self(&host, &pid, &start))
		(void)teamkey_rate_own(r, ad->lease, host, pid, start);
	/* Written for a key with only a budget too: its admission must
	 * show that the state records, or its spend could not be either
	 * (a store that refuses writes refuses this one, and the request
	 * with it). */
	if (ad->verdict == TK_OK)
		err = store_put_text(s, k, teamkey_rate_encode(r));
	if (err == ORGW_OK && ad->verdict == TK_OK && h != NULL)
		err = hold_put(s, ad, h);
	free(h);
	free(r);
	return err;
}

struct release_args {
	const char *name;
	size_t n;
};

static enum orgw_err
do_rate_release(struct store *s, void *arg)
{
	struct release_args *a = arg;
	struct teamkey_rate *r;
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	a->n = 0;
	snprintf(k, sizeof(k), "%s%s", STATE_RATE_PREFIX, a->name);
	if ((err = store_get(s, k, &v)) != ORGW_OK || v == NULL)
		return err;
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		free(v);
		return ORGW_ENOMEM;
	}
	/* A damaged record holds nothing to keep: it goes. */
	if (teamkey_rate_decode(v, r) != ORGW_OK) {
		err = store_del(s, k);
	} else if (r->n_leases > 0) {
		a->n = r->n_leases;
		r->n_leases = 0;
		err = store_put_text(s, k, teamkey_rate_encode(r));
	}
	free(r);
	free(v);
	return err;
}

enum orgw_err
state_rate_release(const struct orgw_conf *c, const char *name, size_t *n)
{
	struct release_args a = {name, 0};
	enum orgw_err err;

	err = state_txn(c, true, do_rate_release, &a);
	*n = err == ORGW_OK ? a.n : 0;
	return err;
}

static enum orgw_err
do_route(struct store *s, void *arg)
{
	struct route_args *a = arg;
	enum orgw_err err;

	if (a->admit != NULL) {
		if ((err = admit(s, a->admit, a->model)) != ORGW_OK)
			return err;
		if (a->admit->verdict != TK_OK)
			return ORGW_OK;
	}
	return decide_and_lock(s, a->c, a->model, a->client_provider, a->now,
			       a->r, a->conv);
}

/*
 * do_route_read for a conversation's turn: settled only when it goes to
 * the live lock's provider without the candidates (warm there, or new
 * and the lock not under pressure); anything else is do_route's.
 */
static enum orgw_err
route_read_conv(struct store *s, struct route_args *a,
		const struct route_view *v, struct cool_ctx *cc)
{
	struct convroute_view cvw;
	struct convroute_conv conv;
	struct convroute_out o;
	struct rec_conv rc;
	struct rec_cands cands;
	bool have, read = false;
	enum orgw_err err;

	if ((err = read_conv(s, a->model, a->conv->hash, &rc, &have)) !=
	    ORGW_OK)
		return err;
	conv_view(&cvw, &conv, v, &rc, have, a->c, cc);
	convroute_decide(&cvw, &o);
	if (o.kind != ROUTE_LOCKED || o.needs_cands || o.conversation)
		return ORGW_OK;
	route_set(a->r, ROUTE_LOCKED, v->lock->tag, v->lock->provider_name,
		  v->lock->max_completion_tokens);
	memset(&cands, 0, sizeof(cands));
	err = conv_answer(s, a->model, &rc, have, &o, a->r, &cands, &read,
			  a->conv);
	record_cands_clear(&cands);
	a->routed = err == ORGW_OK;
	return err;
}

struct estimate_arg {
	const char *model;
	int64_t prompt_max, out_max, now;
	double ceiling_usd, usd;
	const char *basis;
};

static enum orgw_err
do_estimate(struct store *s, void *arg)
{
	struct estimate_arg *a = arg;

	return estimate_in(s, a->model, a->now, a->prompt_max, a->out_max,
			   a->ceiling_usd, &a->usd, &a->basis);
}

enum orgw_err
state_estimate(const struct orgw_conf *c, const char *model,
	       int64_t prompt_max, int64_t out_max, double *usd,
	       const char **basis)
{
	struct estimate_arg a = {model, prompt_max, out_max, clock_now_s(),
				 c->price_ceiling_usd_per_mtok / 1e6, 0, NULL};
	enum orgw_err err;

	if ((err = state_txn(c, false, do_estimate, &a)) == ORGW_OK) {
		*usd = a.usd;
		*basis = a.basis;
	}
	return err;
}

static enum orgw_err
do_admit_plain(struct store *s, void *arg)
{
	return admit(s, arg, NULL);
}

enum orgw_err
state_admit_plain(const struct orgw_conf *c, struct state_admit *ad)
{
	enum orgw_err err;

	ad->verdict = TK_OK;
	ad->retry_after_s = 0;
	ad->held_usd = 0;
	ad->hold = NULL;
	ad->lease = NULL;
	if (ad->key->rpm <= 0 && ad->key->budget_day_usd <= 0 &&
	    ad->key->budget_month_usd <= 0)
		return ORGW_OK;
	if ((err = state_txn(c, true, do_admit_plain, ad)) != ORGW_OK)
		ad->verdict = TK_OK;
	return err;
}

/*
 * The route when it writes nothing: a client's own provider object, or a
 * live lock that is neither idle nor cooling and was renewed already this
 * second (renewing it would write the same bytes).  Under load, nearly
 * every request is one of these, and a shared lock lets them route side
 * by side.  Anything else leaves a->routed false for do_route.
 */
static enum orgw_err
do_route_read(struct store *s, void *arg)
{
	struct route_args *a = arg;
	struct rec_lock lock;
	struct cool_ctx cc = {s, a->model, a->now};
	struct route_view v;
	const struct rec_cand *pick;
	bool have_lock;
	enum orgw_err err;

	a->routed = false;
	if (a->client_provider) {
		route_set(a->r, ROUTE_CLIENT, NULL, NULL, 0);
		a->routed = true;
		return ORGW_OK;
	}
	if ((err = read_lock(s, a->model, &lock, &have_lock)) != ORGW_OK ||
	    !have_lock || lock.last_used != a->now)
		return err;
	memset(&v, 0, sizeof(v));
	v.lock = &lock;
	v.cooling = cooling;
	v.cooling_arg = &cc;
	v.now = a->now;
	v.lock_idle_seconds = a->c->lock_idle_seconds;
	v.score_retry_seconds = SCORE_RETRY_SECONDS;
	v.lock_margin = a->c->lock_margin;
	if (a->conv != NULL)
		return route_read_conv(s, a, &v, &cc);
	if (route_decide(&v, &pick) != ROUTE_LOCKED)
		return ORGW_OK;
	route_set(a->r, ROUTE_LOCKED, lock.tag, lock.provider_name,
		  lock.max_completion_tokens);
	a->routed = true;
	return ORGW_OK;
}

enum orgw_err
state_route(const struct orgw_conf *c, const char *model,
	    bool client_provider, int64_t now, struct state_route *r,
	    struct state_admit *ad)
{
	return state_route_conv(c, model, client_provider, now, r, ad, NULL);
}

enum orgw_err
state_route_conv(const struct orgw_conf *c, const char *model,
		 bool client_provider, int64_t now, struct state_route *r,
		 struct state_admit *ad, struct state_conv *cv)
{
	struct route_args a = {c, model, client_provider, now, r, NULL, NULL,
			       false, NULL, cv};
	enum orgw_err err;

	if (cv != NULL) {
		const char *hash = cv->hash;
		bool want = cv->want_explicit;

		memset(cv, 0, sizeof(*cv));
		cv->hash = hash;
		cv->want_explicit = want;
	}

	route_set(r, client_provider ? ROUTE_CLIENT : ROUTE_UNPINNED, NULL,
		  NULL, 0);
	if (ad != NULL) {
		ad->verdict = TK_OK;
		ad->retry_after_s = 0;
		ad->held_usd = 0;
		ad->ceiling_usd = c->price_ceiling_usd_per_mtok / 1e6;
		if (ad->key->rpm > 0 || ad->key->concurrent > 0 ||
		    ad->key->budget_day_usd > 0 || ad->key->budget_month_usd > 0)
			a.admit = ad;
	}
	/* A request whose key has limits is admitted under the exclusive
	 * lock, with what the requests before it counted. */
	if (a.admit == NULL &&
	    state_txn(c, false, do_route_read, &a) == ORGW_OK && a.routed)
		return ORGW_OK;
	err = state_txn(c, true, do_route, &a);
	if (err != ORGW_OK && a.admit != NULL) {
		/* Fail closed: a key with limits or a budget is served only
		 * when its admission was recorded, else nothing would hold
		 * its rpm, its leases or its spend (a full disk, Redis at
		 * maxmemory, a lock held too long). */
		a.admit->verdict = TK_UNAVAILABLE;
		a.admit->retry_after_s = STATE_UNAVAILABLE_RETRY_S;
		a.admit->lease = NULL;
		a.admit->hold = NULL;
		log_warn("state unavailable (%s): team key %s refused",
			 orgw_strerror(err), a.admit->key->name);
		return err;
	}
	if (err != ORGW_OK) {
		log_warn("state unavailable (%s): routing %s unpinned",
			 orgw_strerror(err),
			 client_provider ? "by the client" : "by OpenRouter");
		route_set(r, client_provider ? ROUTE_CLIENT : ROUTE_UNPINNED,
			  NULL, NULL, 0);
	}
	return err;
}

struct pressure_args {
	const struct orgw_conf *c;
	const char *model, *tag;
	int64_t now;
	bool want_next;
	struct state_route next;	/* out, when moved */
	bool moved;
};

static enum orgw_err
do_pressure(struct store *s, void *arg)
{
	struct pressure_args *a = arg;
	struct cool_ctx cc = {s, a->model, a->now};
	const struct rec_cand *n;
	struct rec_pressure p;
	struct rec_cands cands;
	struct rec_lock at;
	char k[KEY_MAX];
	bool have;
	enum orgw_err err;

	a->moved = false;
	if ((err = read_pressure(s, a->model, a->tag, &p)) != ORGW_OK)
		return err;
	p.until = a->now + a->c->pressure_seconds;
	p.n429++;
	key3(k, SK_PRESSURE, a->model, a->tag);
	if ((err = store_put_text(s, k, record_pressure_encode(&p))) !=
		    ORGW_OK ||
	    !a->want_next)
		return err;
	if ((err = read_cands(s, a->model, &cands, &have)) != ORGW_OK) {
		record_cands_clear(&cands);
		return err;
	}
	n = convroute_next(have ? &cands : NULL, cooling, &cc, pressured, &cc,
			   a->tag);
	if (n != NULL) {
		route_lock_from(&at, n, a->now);
		route_set(&a->next, ROUTE_LOCKED, at.tag, at.provider_name,
			  at.max_completion_tokens);
		a->next.conversation = true;
		a->moved = true;
	}
	record_cands_clear(&cands);
	return ORGW_OK;
}

enum orgw_err
state_pressure(const struct orgw_conf *c, const char *model, const char *tag,
	       int64_t now, struct state_route *next, bool *moved)
{
	struct pressure_args a;
	enum orgw_err err;

	memset(&a, 0, sizeof(a));
	a.c = c;
	a.model = model;
	a.tag = tag;
	a.now = now;
	a.want_next = next != NULL;
	if (moved != NULL)
		*moved = false;
	if (!state_tag_ok(tag))
		return ORGW_EINVAL;
	err = state_txn(c, true, do_pressure, &a);
	if (err == ORGW_OK && a.moved) {
		*next = a.next;
		if (moved != NULL)
			*moved = true;
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

	key2(k, SK_PROVIDER_CANDIDATE, model);
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
	err = store_put_text(s, k, record_cands_encode(&cands));
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
	err = decide_and_lock(s, a->c, a->model, false, a->now, a->r, NULL);
	/* Locked by this scoring: report it as such (docs/design.md 4 step 6). */
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
	struct route_args a = {c, model, false, now, r, res, error, false, NULL, NULL};
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
	struct route_args a = {c, model, false, now, NULL, res, error, false,
			       NULL, NULL};

	return state_txn(c, true, do_store_cands, &a);
}

struct fail_args {
	const struct orgw_conf *c;
	const char *model, *tag, *reason;
	int64_t now;
	bool *tripped;
	struct state_route *r;
	struct state_route r_in;	/* *r as the caller gave it */
};

/*
 * The failed provider cools already (another request tripped it while
 * this one was in flight on it): the request goes on with the model's
 * lock as it is now, as a new request would be routed (docs/design.md 4 steps 4
 * to 7, a lock on a cooling provider moved at once), so it fails over
 * before anything reached its client instead of spending its attempts on
 * a provider every other request has left.  A model that would need an
 * inline scoring goes on unpinned: the relay does not score mid-request.
 */
static enum orgw_err
follow_lock(struct store *s, const struct fail_args *a)
{
	enum orgw_err err;

	if (a->r == NULL)
		return ORGW_OK;
	err = decide_and_lock(s, a->c, a->model, false, a->now, a->r, NULL);
	if (a->r->kind == ROUTE_SCORED || a->r->tag[0] == '\0')
		route_set(a->r, ROUTE_UNPINNED, NULL, NULL, 0);
	return err;
}

static enum orgw_err
do_failure(struct store *s, void *arg)
{
	struct fail_args *a = arg;
	struct rec_failure f;
	struct rec_cooldown cd, trip;
	struct rec_lock lock;
	struct rec_cands cands;
	struct cool_ctx cc = {s, a->model, a->now};
	bool have_lock, have_cands, have_cd;
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;
	enum failover_breaker b;

	/* Set afresh on every run: a commit that lost a race runs this
	 * again (state_txn). */
	*a->tripped = false;
	if (a->r)
		*a->r = a->r_in;
	if ((err = read_cooldown(s, a->model, a->tag, &cd, &have_cd)))
		return err;
	key3(k, SK_PROVIDER_FAILURE, a->model, a->tag);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if (v == NULL || record_failure_decode(v, &f) != ORGW_OK)
		memset(&f, 0, sizeof(f));
	free(v);
	b = failover_breaker_fail(&f, have_cd ? &cd : NULL, a->reason, a->now,
				  a->c->fail_limit, a->c->cooldown_seconds,
				  &trip);
	if (b == BREAKER_COOLING)
		return follow_lock(s, a);
	if ((err = store_put_text(s, k, record_failure_encode(&f))))
		return err;
	if (b != BREAKER_TRIPPED)
		return ORGW_OK;
	*a->tripped = true;
	key3(k, SK_PROVIDER_COOLDOWN, a->model, a->tag);
	if ((err = store_put_text(s, k, record_cooldown_encode(&trip))))
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
	struct fail_args a = {c, model, tag, reason, now, tripped, r, {0}};
	enum orgw_err err;

	if (r)
		a.r_in = *r;
	*tripped = false;
	err = state_txn(c, true, do_failure, &a);
	if (err != ORGW_OK) {
		log_warn("state unavailable (%s): failure of %s not recorded",
			 orgw_strerror(err), tag);
		/* Nothing was written: no trip, and the request goes on
		 * where it was. */
		*tripped = false;
		if (r)
			*r = a.r_in;
	}
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

/*
 * A growing list of hit rates: the tag's entry (made, zeroed, when new),
 * or NULL when out of memory.
 */
static struct score_hit *
hit_of(struct score_hit **v, size_t *n, size_t *cap, const char *tag)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (strcmp((*v)[i].tag, tag) == 0)
			return &(*v)[i];
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 8;
		struct score_hit *nv = realloc(*v, c * sizeof(*nv));

		if (nv == NULL)
			return NULL;
		*v = nv;
		*cap = c;
	}
	memset(&(*v)[*n], 0, sizeof((*v)[0]));
	snprintf((*v)[*n].tag, sizeof((*v)[0].tag), "%s", tag);
	return &(*v)[(*n)++];
}

/* A HIT:<model> record decoded, for hit_memo. */
struct hits_val {
	struct score_hit *v;	/* malloc'd */
	size_t n;
};

static bool
hits_copy(void *dst, const void *src)
{
	struct hits_val *d = dst;
	const struct hits_val *h = src;

	d->n = h->n;
	if ((d->v = items_dup(h->v, h->n, sizeof(*d->v))) == NULL)
		d->n = 0;
	return d->n == h->n;
}

static void
hits_clear(void *val)
{
	free(((struct hits_val *)val)->v);
}

static struct memo hit_memo = MEMO_INIT(sizeof(struct hits_val), hits_copy,
					hits_clear);

enum orgw_err
state_hits(struct store *s, const char *model, struct score_hit **v,
	   size_t *n)
{
	struct hits_val hv;
	struct score_hit *have = NULL, *old = NULL, *e;
	size_t n_have = 0, cap, n_old = 0, i;
	char k[KEY_MAX], *text = NULL;
	enum orgw_err err;

	*v = NULL;
	*n = 0;
	key2(k, SK_HIT, model);
	if ((err = store_get(s, k, &text)) != ORGW_OK)
		return err;
	if (memo_get(&hit_memo, k, text, &hv)) {
		have = hv.v;
		n_have = hv.n;
		err = ORGW_OK;
	} else if ((err = record_hits_decode(text, &have, &n_have)) ==
		   ORGW_OK) {
		hv.v = have;
		hv.n = n_have;
		memo_put(&hit_memo, k, text, &hv);
	}
	free(text);
	text = NULL;
	cap = n_have;
	/* Providers the old release measured and this one has not yet. */
	key2(k, SK_STATS_OLD, model);
	if (err == ORGW_OK && (err = store_get(s, k, &text)) == ORGW_OK)
		err = record_hits_decode(text, &old, &n_old);
	free(text);
	for (i = 0; err == ORGW_OK && i < n_old; i++) {
		size_t before = n_have;

		if ((e = hit_of(&have, &n_have, &cap, old[i].tag)) == NULL)
			err = ORGW_ENOMEM;
		else if (n_have > before)
			*e = old[i];
	}
	free(old);
	if (err != ORGW_OK) {
		free(have);
		return err;
	}
	*v = have;
	*n = n_have;
	return ORGW_OK;
}

/*
 * The request's end, by group commit.  A thread that finishes a request
 * queues its counts and waits; one thread of the process at a time (the
 * leader) takes everything queued and writes it in one transaction, in
 * which each cell, hit rate and failure count that several requests
 * share is read and written once.  So under load the exclusive lock is
 * taken once per batch instead of once per request, and every thread
 * still returns only once its counts are committed: N requests answered,
 * N counted, and a worker killed loses only what it had in flight.
 */
struct finish_job {
	const char *model;
	const char *as;		/* the model it is counted under */
	struct stats_delta d;	/* a copy; its strings are the caller's, who
				 * waits until done */
	const char *ok_tag;
	struct state_conv_turn *ct;	/* the caller's, or NULL */
	size_t cell;		/* its ledger cell, the batch's keys[cell], */
	bool have_cell;		/* when batch_cell made one */
	enum orgw_err err;
	bool done;
	struct finish_job *next;
};

/* One cell, model's hit rates or failure count the batch writes. */
struct finish_key {
	char key[KEY_MAX + 64];
	struct ledger_cell cell;
	struct score_hit *hits;	/* HIT:<model>: malloc'd */
	size_t n_hits, cap_hits;
};

struct finish_batch {
	struct finish_job *jobs;
	size_t n_jobs;
	int64_t lost;		/* counts lost earlier, for LOST_UPDATES */
	struct finish_key *keys;	/* cells, hits and failures */
	size_t n_keys, cap_keys;
	const char *cands_model;	/* the model cands belongs to */
	struct rec_cands cands;		/* owned */
	bool have_cands;
	const char *known_model;	/* the last one found seen */
};

/* Drops the candidates the batch read. */
static void
batch_cands_clear(struct finish_batch *b)
{
	record_cands_clear(&b->cands);
	b->have_cands = false;
	b->cands_model = NULL;
}

/* The batch's entry for key, made (zeroed) when new; NULL when out of
 * memory.  *fresh says whether it was made. */
static struct finish_key *
batch_key(struct finish_batch *b, const char *key, bool *fresh)
{
	size_t i;

	*fresh = false;
	for (i = 0; i < b->n_keys; i++)
		if (strcmp(b->keys[i].key, key) == 0)
			return &b->keys[i];
	if (b->n_keys == b->cap_keys) {
		size_t cap = b->cap_keys ? b->cap_keys * 2 : 16;
		struct finish_key *v = realloc(b->keys, cap * sizeof(*v));

		if (v == NULL)
			return NULL;
		b->keys = v;
		b->cap_keys = cap;
	}
	memset(&b->keys[b->n_keys], 0, sizeof(b->keys[0]));
	snprintf(b->keys[b->n_keys].key, sizeof(b->keys[0].key), "%s", key);
	*fresh = true;
	return &b->keys[b->n_keys++];
}

/* Adds job j's cell to the batch: its money attributed and priced from
 * the candidates as stored now. */
static enum orgw_err
batch_cell(struct store *s, struct finish_batch *b, struct finish_job *j)
{
	struct ledger_cell cell;
	struct finish_key *e;
	char k[KEY_MAX + 64], day[11];
	enum orgw_err err;
	bool fresh;

	j->have_cell = false;
	/* Jobs of one model (most of a batch) read its candidates once. */
	if (b->cands_model == NULL || strcmp(b->cands_model, j->as) != 0) {
		batch_cands_clear(b);
		if ((err = read_cands(s, j->as, &b->cands, &b->have_cands)) !=
		    ORGW_OK)
			return err;
		b->cands_model = j->as;
	}
	ledger_price(&j->d, b->have_cands ? &b->cands : NULL);
	ledger_from_delta(&cell, &j->d);
	record_day(j->d.now, day);
	/* A key that cannot be made (a model id too long for it) counts
	 * nothing, as for a key GDBM would refuse. */
	if (ledger_key(k, sizeof(k), j->as, day, ledger_api(&j->d),
		       ledger_provider(&j->d))) {
		if ((e = batch_key(b, k, &fresh)) == NULL)
			return ORGW_ENOMEM;
		ledger_cell_add(&e->cell, &cell);
		j->cell = (size_t)(e - b->keys);
		j->have_cell = true;
	}
	j->d.money_tag = NULL;	/* it pointed into b->cands */
	return ORGW_OK;
}

/* Adds job j's answer to its provider's measured hit rate: only what the
 * pinned provider itself served, with usage, measures its cache. */
static enum orgw_err
batch_hit(struct store *s, struct finish_batch *b, const struct finish_job *j)
{
	const struct stats_delta *d = &j->d;
	struct finish_key *e;
	struct score_hit *h;
	char k[KEY_MAX];
	enum orgw_err err;
	bool fresh;

	if (d->ok == 0 || d->off_pin != 0 || d->prompt_tokens <= 0 ||
	    d->tag == NULL || d->tag[0] == '\0')
		return ORGW_OK;
	key2(k, SK_HIT, j->model);
	if ((e = batch_key(b, k, &fresh)) == NULL)
		return ORGW_ENOMEM;
	if (fresh) {
		if ((err = state_hits(s, j->model, &e->hits, &e->n_hits)) !=
		    ORGW_OK)
			return err;
		e->cap_hits = e->n_hits;
	}
	if ((h = hit_of(&e->hits, &e->n_hits, &e->cap_hits, d->tag)) == NULL)
		return ORGW_ENOMEM;
	score_hit_add(h, d->prompt_tokens, d->cached_tokens,
		      d->hit_half_life_tokens);
	return ORGW_OK;
}

/* Empties the batch's keys (a run that starts over, or the end). */
static void
batch_keys_clear(struct finish_batch *b)
{
	size_t i;

	for (i = 0; i < b->n_keys; i++)
		free(b->keys[i].hits);
	b->n_keys = 0;
}

/* Resets the consecutive failure count of the provider that answered
 * (written only when there is a count to reset). */
static enum orgw_err
batch_ok(struct store *s, struct finish_batch *b, const struct finish_job *j)
{
	struct rec_failure f;
	struct finish_key *e;
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;
	bool fresh;

	if (j->ok_tag == NULL)
		return ORGW_OK;
	key3(k, SK_PROVIDER_FAILURE, j->as, j->ok_tag);
	if ((e = batch_key(b, k, &fresh)) == NULL)
		return ORGW_ENOMEM;
	if (!fresh)
		return ORGW_OK;
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if (v != NULL && record_failure_decode(v, &f) == ORGW_OK &&
	    f.count > 0) {
		failover_breaker_ok(&f);
		err = store_put_text(s, k, record_failure_encode(&f));
	}
	free(v);
	return err;
}

/*
 * The model job j is counted under (j->as): its own once OpenRouter is
 * known to serve it (MODEL_SEEN:<model>: its endpoints were fetched, or
 * an earlier answer on it succeeded), or when this answer succeeded,
 * which marks it seen now (a client's own provider object on a model no
 * request scored yet).  Anything else is counted under STATE_OTHER_MODEL
 * (docs/design.md 4 step 2): invented ids, sent with their own provider object or
 * not, leave no ledger cell, hit rate or failure count of their own, so
 * a client cannot grow the state with them.
 */
static enum orgw_err
batch_model(struct store *s, struct finish_batch *b, struct finish_job *j)
{
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	j->as = j->model;
	if (strcmp(j->model, STATE_OTHER_MODEL) == 0 ||
	    (b->known_model != NULL && strcmp(b->known_model, j->model) == 0))
		return ORGW_OK;
	key2(k, SK_MODEL_SEEN, j->model);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if (v == NULL && j->d.ok == 0) {
		j->as = STATE_OTHER_MODEL;
		return ORGW_OK;
	}
	if (v == NULL)
		err = store_put_text(s, k, record_model_seen_encode(j->d.now));
	free(v);
	b->known_model = j->model;
	return err;
}

/*
 * Gives back job j's concurrency lease (teamkey.h), if it holds one (a
 * lease already expired is gone), and, when its key has a budget, adds
 * what it spent to the key's rate record: the next admission sees it
 * even before the keys store does.  Runs after batch_cell, which priced
 * an answer that did not say its cost.
 */
static enum orgw_err
batch_lease(struct store *s, const struct finish_job *j)
{
	struct teamkey_rate *r;
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;
	bool changed = false;

	if (j->d.key_name == NULL || (j->d.lease == NULL && !j->d.key_budget))
		return ORGW_OK;
	key2(k, SK_TEAMKEY_RATE, j->d.key_name);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		free(v);
		return ORGW_ENOMEM;
	}
	if (v != NULL && teamkey_rate_decode(v, r) != ORGW_OK)
		memset(r, 0, sizeof(*r));
	if (j->d.lease != NULL && teamkey_rate_release(r, j->d.lease))
		changed = true;
	if (j->d.key_budget) {
		teamkey_rate_spend(r, j->d.now, ledger_key_spend(&j->d));
		changed = true;
	}
	if (changed)
		err = store_put_text(s, k, teamkey_rate_encode(r));
	free(r);
	free(v);
	return err;
}

/* Drops job j's budget hold, if it has one: in the transaction that
 * adds its spend (batch_lease), so an admission never sees both or
 * neither. */
static enum orgw_err
batch_hold(struct store *s, const struct finish_job *j)
{
	struct holds *h;
	char k[KEY_MAX];
	enum orgw_err err;

	if (j->d.key_name == NULL || j->d.hold == NULL)
		return ORGW_OK;
	if ((err = hold_read(s, j->d.key_name, k, &h)) != ORGW_OK)
		return err;
	if (holds_drop(h, j->d.hold))
		err = store_put_text(s, k, holds_encode(h));
	free(h);
	return err;
}

/*
 * Job j's conversation turn (j->ct): on a success, its record read,
 * the turn classified against it and added (convcache.h), and the
 * record written back: one fixed-size read and write.  Runs after
 * batch_cell, which priced the turn and made its ledger cell: a break
 * adds one to its cause's row there (ledger_break_ix), so the count is
 * written with the request's other counts, in this transaction, and
 * outlives the record (which keeps only its last breaks, and which the
 * scorer's sweep drops).  Ids counted under STATE_OTHER_MODEL keep no
 * conversations: invented ids must not grow the state.
 */
static enum orgw_err
batch_conv(struct store *s, struct finish_batch *b,
	   const struct finish_job *j)
{
	struct state_conv_turn *ct = j->ct;
	const struct stats_delta *d = &j->d;
	static const struct fp_list none;
	struct convcache_verdict vd;
	struct convcache_turn t;
	struct conv_val *cv = NULL;
	cJSON *enc = NULL;
	char k[KEY_MAX], *v = NULL, *text;
	enum ledger_ix ix;
	enum orgw_err err;

	if (ct == NULL)
		return ORGW_OK;
	ct->written = false;
	ct->is_break = false;
	ct->cause = CONVCACHE_NONE;
	ct->at = -1;
	if (d->ok == 0 || strcmp(j->as, STATE_OTHER_MODEL) == 0)
		return ORGW_OK;
	key3(k, SK_CONV, j->model, ct->hash);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	err = ORGW_ENOMEM;
	if ((cv = malloc(sizeof(*cv))) == NULL)
		goto out;
	if (!conv_decode(k, v, cv)) {
		memset(&cv->rc, 0, sizeof(cv->rc));
		convcache_init(&cv->cc);
	}
	/* A body holding only new input has no prefix to compare. */
	if (ct->only_new)
		memset(&cv->cc.prefix, 0, sizeof(cv->cc.prefix));
	memset(&t, 0, sizeof(t));
	t.fp = ct->fp != NULL ? ct->fp : &none;
	t.provider = d->tag;
	t.now = d->now;
	t.prompt_tokens = d->prompt_tokens;
	t.cached_tokens = d->cached_tokens;
	t.cache_write_tokens = d->cache_write_tokens;
	t.cost = d->cost_usd;
	t.saved = d->uncached_usd > d->cost_usd ?
			  d->uncached_usd - d->cost_usd :
			  0;
	convcache_classify(&cv->cc, &t, ct->ttl_s, &vd);
	convcache_update(&cv->cc, &t, &vd);
	snprintf(cv->rc.model, sizeof(cv->rc.model), "%s", j->model);
	snprintf(cv->rc.tag, sizeof(cv->rc.tag), "%s", d->tag ? d->tag : "");
	snprintf(cv->rc.show, sizeof(cv->rc.show), "%s",
		 ct->show ? ct->show : "");
	snprintf(cv->rc.api, sizeof(cv->rc.api), "%s", ct->api ? ct->api : "");
	if (cv->rc.turns == 0) {
		cv->rc.first_seen = d->now;
		cv->rc.spread = ct->spread;
	}
	cv->rc.last_turn = d->now;
	cv->rc.turns++;
	if (ct->foreign_items >= 0)
		cv->rc.foreign_items = ct->foreign_items;
	if ((enc = cJSON_CreateObject()) == NULL ||
	    !convcache_encode(&cv->cc, enc)) {
		cJSON_Delete(enc);
		goto out;
	}
	/* enc is the record's now. */
	if ((text = record_conv_encode_take(&cv->rc, enc)) == NULL)
		goto out;
	memo_put(&conv_memo, k, text, cv);
	if ((err = store_put_text(s, k, text)) != ORGW_OK)
		goto out;
	ct->written = true;
	if (vd.is_break && j->have_cell &&
	    (ix = ledger_break_ix(vd.cause)) != LX_N)
		b->keys[j->cell].cell.v[ix] += 1;
	ct->is_break = vd.is_break;
	ct->cause = (int)vd.cause;
	ct->at = vd.is_break && vd.cause == CONVCACHE_PREFIX_CHANGED ?
			 vd.at :
			 -1;
out:
	free(cv);
	free(v);
	return err;
}

static enum orgw_err
do_finish_batch(struct store *s, void *arg)
{
	struct finish_batch *b = arg;
	struct finish_job *j;
	enum orgw_err err = ORGW_OK;
	size_t i;

	/* A failed batch is added to the lost counts (finish_lead): the
	 * store must not call a commit that went in failed. */
	store_exact_outcome(s);
	/* A transaction that runs again (a Redis conflict) starts over. */
	batch_keys_clear(b);
	batch_cands_clear(b);
	b->known_model = NULL;
	if (b->lost > 0 && (err = lost_add(s, b->lost)) != ORGW_OK)
		return err;
	for (j = b->jobs; err == ORGW_OK && j != NULL; j = j->next)
		if ((err = batch_model(s, b, j)) == ORGW_OK &&
		    (err = batch_cell(s, b, j)) == ORGW_OK &&
		    (err = batch_hit(s, b, j)) == ORGW_OK &&
		    (err = batch_ok(s, b, j)) == ORGW_OK &&
		    (err = batch_lease(s, j)) == ORGW_OK &&
		    (err = batch_hold(s, j)) == ORGW_OK)
			err = batch_conv(s, b, j);
	for (i = 0; err == ORGW_OK && i < b->n_keys; i++) {
		struct finish_key *e = &b->keys[i];

		if (statekeys_is(e->key, SK_HIT) != NULL) {
			struct hits_val hv = {e->hits, e->n_hits};
			char *text = record_hits_encode(e->hits, e->n_hits);

			if (text != NULL)
				memo_put(&hit_memo, e->key, text, &hv);
			err = store_put_text(s, e->key, text);
		} else if (statekeys_is(e->key, SK_LEDGER) != NULL)
			err = state_cell_put(s, e->key, &e->cell);
	}
	return err;
}

static pthread_mutex_t finish_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t finish_cv = PTHREAD_COND_INITIALIZER;
static struct finish_job *finish_head;
static struct finish_job **finish_tail = &finish_head;
static bool finish_leading;

/* The leader's turn: writes every job queued (finish_mu held on entry
 * and on return, released while the transaction runs). */
static void
finish_lead(const struct orgw_conf *c)
{
	struct finish_batch b;
	struct finish_job *j, *next;
	enum orgw_err err;

	memset(&b, 0, sizeof(b));
	b.jobs = finish_head;
	finish_head = NULL;
	finish_tail = &finish_head;
	for (j = b.jobs; j != NULL; j = j->next)
		b.n_jobs++;
	finish_leading = true;
	pthread_mutex_unlock(&finish_mu);

	/* Counts this process lost while the state was away go into
	 * LOST_UPDATES with these, in the same transaction. */
	b.lost = store_lost_take();
	err = state_txn(c, true, do_finish_batch, &b);
	batch_keys_clear(&b);
	free(b.keys);
	batch_cands_clear(&b);
	if (err != ORGW_OK) {
		store_lost_add(b.lost + (int64_t)b.n_jobs);
		log_warn("state unavailable (%s): %zu request%s not counted "
			 "(%lld lost in this worker, for LOST_UPDATES)",
			 orgw_strerror(err), b.n_jobs, b.n_jobs == 1 ? "" : "s",
			 (long long)(b.lost + (int64_t)b.n_jobs));
	} else if (b.lost > 0) {
		log_info("state: %lld request counts lost while the state "
			 "was unavailable added to LOST_UPDATES",
			 (long long)b.lost);
	}

	pthread_mutex_lock(&finish_mu);
	for (j = b.jobs; j != NULL; j = next) {
		next = j->next;
		j->err = err;
		j->done = true;
	}
	finish_leading = false;
	pthread_cond_broadcast(&finish_cv);
}

enum orgw_err
state_finish(const struct orgw_conf *c, const char *model,
	     struct stats_delta *d, const char *ok_tag)
{
	return state_finish_conv(c, model, d, ok_tag, NULL);
}

enum orgw_err
state_finish_conv(const struct orgw_conf *c, const char *model,
		  struct stats_delta *d, const char *ok_tag,
		  struct state_conv_turn *ct)
{
	struct finish_job job;

	memset(&job, 0, sizeof(job));
	job.ct = ct;
	job.model = model;
	job.d = *d;
	job.d.hit_half_life_tokens = (double)c->hit_rate_half_life_tokens;
	job.d.price_ceiling_usd = c->price_ceiling_usd_per_mtok / 1e6;
	job.ok_tag = ok_tag;
	pthread_mutex_lock(&finish_mu);
	*finish_tail = &job;
	finish_tail = &job.next;
	while (!job.done) {
		if (!finish_leading)
			finish_lead(c);
		else
			pthread_cond_wait(&finish_cv, &finish_mu);
	}
	pthread_mutex_unlock(&finish_mu);
	if (job.err == ORGW_OK && job.d.cost_estimated) {
		d->cost_usd = job.d.cost_usd;
		d->cost_estimated = true;
		d->cost_basis = job.d.cost_basis;
	}
	/* What it would have cost uncached, for its team key's savings. */
	d->uncached_usd = job.err == ORGW_OK ? job.d.uncached_usd : 0;
	return job.err;
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
	key3(k, SK_PROVIDER_COOLDOWN, a->model, a->tag);
	if ((err = store_put_text(s, k, record_cooldown_encode(&cd))) != ORGW_OK)
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
	 * trip does (docs/design.md 5), at today's prices (docs/design.md 6). */
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

	key3(k, SK_PROVIDER_COOLDOWN, a->model, a->tag);
	if ((err = del_had(s, k, a->had_cooldown)) != ORGW_OK)
		return err;
	key3(k, SK_PROVIDER_FAILURE, a->model, a->tag);
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
