/*
 * state.c - the request path's state transactions: the runner and what
 * the state modules share.
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
 *
 * The transactions are split by job, one module each: state_route.c
 * (the route), state_admit.c (a team key's admission), state_fail.c (a
 * provider's failures, pressure and hit rates), state_batch.c (the
 * request's end, by group commit), state_ops.c (the operator's
 * commands); the upkeep before a scoring run is state_upkeep.c's.  This
 * file holds the runner, the keys and the reads and writes they share
 * (state_impl.h); state.h is their interface.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "failover.h"
#include "log.h"
#include "redisconf.h"
#include "state.h"
#include "state_impl.h"
#include "store.h"

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

void
key2(char *k, enum statekey f, const char *model)
{
	(void)statekeys_make(k, KEY_MAX, f, model, NULL);
}

void
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
void *
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
enum orgw_err
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
enum orgw_err
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

/* Reads PROVIDER_COOLDOWN of tag for model into cd; *have false when
 * there is none (or it does not decode: it cools nobody then). */
enum orgw_err
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

bool
cooling(void *arg, const char *tag)
{
	struct cool_ctx *cc = arg;
	struct rec_cooldown cd;
	bool have;

	return read_cooldown(cc->s, cc->model, tag, &cd, &have) == ORGW_OK &&
	       have && failover_breaker_cooling(&cd, cc->now);
}

/* Reads BEST_PROVIDER for model. */
enum orgw_err
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
enum orgw_err
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
enum orgw_err
read_lock_cands(struct store *s, const char *model, struct rec_lock *l,
		bool *have_lock, struct rec_cands *cands, bool *have_cands)
{
	enum orgw_err err;

	if ((err = read_lock(s, model, l, have_lock)) != ORGW_OK)
		return err;
	return read_cands(s, model, cands, have_cands);
}

void
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

/* The conversations' records decoded (struct conv_val, state_impl.h). */
struct memo conv_memo = MEMO_INIT(sizeof(struct conv_val), NULL, NULL);

/* Decodes text (key k) into *cv; false when it is no conversation
 * record.  A cache record that does not decode reads as none. */
bool
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

/* Reads PRESSURE of tag for model; *p zero when there is none. */
enum orgw_err
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
bool
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
enum orgw_err
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
enum orgw_err
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

bool
state_tag_ok(const char *tag)
{
	/* A tag the scorer would accept, and no ':' (it separates the
	 * parts of PROVIDER_*:<model>:<tag> keys). */
	return tag != NULL && tag[0] != '\0' && score_tag_ok(tag) &&
	       strchr(tag, ':') == NULL;
}
