/*
 * test_state.c - the state's transactions (state.c and its modules
 * state_*.c) on the in-memory back-end (store_mem.c), without files,
 * sockets or servers: routing (a table of locks, candidates, cooldowns
 * and clients), renewal, the shared-lock route that writes nothing,
 * relocks and their lock log and ledger events, the breaker (and a
 * failure of a provider that cools already: not counted, the request
 * sent after the current lock), the bookkeeping of many threads at once
 * (group commit: N finished, N counted), a state that refuses to open
 * (counts kept for LOST_UPDATES), the operator commands, and a team
 * key's admission (rpm, concurrency leases, budget) in the route
 * transaction and outside it.
 *
 * By module: state_route.c test_route_table, test_relock_events,
 * test_unseen, test_conv, test_conv_off, test_conv_foreign (the route
 * reads it); state_fail.c test_breaker, test_breaker_cooling, test_conv
 * and test_conv_off (pressure), test_other_writer (hit rates);
 * state_batch.c test_finish, test_other_writer, test_conv (its turns),
 * test_conv_breaks (the breaks counted), test_conv_foreign (the finish
 * writes it); state_admit.c test_admit, test_admit_unavailable,
 * test_admit_plain; state_ops.c test_operator, test_rate_release;
 * state.c (the runner, the reads and writes they share) all of them.
 * state_upkeep.c is test_scorerun.c's, and test_conv_breaks' sweep.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "t.h"
#include "buf.h"
#include "conf.h"
#include "convcache.h"
#include "fingerprint.h"
#include "ledger.h"
#include "record.h"
#include "scorerun.h"
#include "state.h"
#include "stats.h"
#include "store.h"
#include "store_mem.h"
#include "teamkey.h"

#define NOW 1796083200 /* 2026-12-01 00:00:00 UTC */
#define M "test/model"

static struct orgw_conf conf;

/* The value of key (malloc'd; NULL when absent). */
static char *
get(const char *key)
{
	struct store *s;
	char *v = NULL;

	if (store_open(&s, &conf, false, 100) != ORGW_OK)
		return NULL;
	(void)store_get(s, key, &v);
	(void)store_close(s);
	return v;
}

static void
put(const char *key, const char *val)
{
	struct store *s;

	if (store_open(&s, &conf, true, 100) != ORGW_OK)
		return;
	(void)store_put(s, key, val);
	(void)store_close(s);
}

/* Candidates tags[0..n), best first, scored at NOW. */
static void
put_cands(const char *const *tags, size_t n)
{
	struct rec_cands c;
	struct rec_cand v[4];
	char *t;
	size_t i;

	memset(&c, 0, sizeof(c));
	memset(v, 0, sizeof(v));
	for (i = 0; i < n && i < 4; i++) {
		snprintf(v[i].tag, sizeof(v[i].tag), "%s", tags[i]);
		snprintf(v[i].provider_name, sizeof(v[i].provider_name), "P-%s",
			 tags[i]);
		v[i].score = 100.0 - 10.0 * (double)i;
		v[i].uptime = 1;
		v[i].max_completion_tokens = 1000 * (int64_t)(i + 1);
		/* Each one twice the price of the one before, at the same
		 * speed: a re-rank keeps the order, and by far more than
		 * LOCK_MARGIN. */
		v[i].throughput = v[i].terms.throughput = 100;
		v[i].has_throughput = v[i].terms.has_throughput = true;
		v[i].terms.base_kind[SCORE_PROMPT] = SCORE_PRICE_OK;
		v[i].terms.base[SCORE_PROMPT] = 1e-6 * (double)(1u << i);
		v[i].terms.base_kind[SCORE_COMPLETION] = SCORE_PRICE_OK;
		v[i].terms.base[SCORE_COMPLETION] = 2e-6 * (double)(1u << i);
	}
	c.n = n;
	c.v = v;
	c.scored_at = c.attempted_at = NOW - 60;
	t = record_cands_encode(&c);
	if (t != NULL)
		put("PROVIDER_CANDIDATE:" M, t);
	record_free(t);
}

static void
put_lock(const char *tag, int64_t last_used)
{
	struct rec_lock l;
	char *t;

	memset(&l, 0, sizeof(l));
	snprintf(l.tag, sizeof(l.tag), "%s", tag);
	snprintf(l.provider_name, sizeof(l.provider_name), "P-%s", tag);
	l.locked_at = NOW - 3600;
	l.last_used = last_used;
	t = record_lock_encode(&l);
	if (t != NULL)
		put("BEST_PROVIDER:" M, t);
	record_free(t);
}

static void
put_cooling(const char *tag, int64_t until)
{
	struct rec_cooldown cd;
	char k[128], *t;

	memset(&cd, 0, sizeof(cd));
	cd.until = until;
	snprintf(cd.reason, sizeof(cd.reason), "test");
	snprintf(k, sizeof(k), "PROVIDER_COOLDOWN:" M ":%s", tag);
	t = record_cooldown_encode(&cd);
	if (t != NULL)
		put(k, t);
	record_free(t);
}

/* The stored lock's tag and last_used ("" and 0 when none). */
static void
lock_now(char tag[ORGW_TAG_MAX], int64_t *last_used)
{
	char *v = get("BEST_PROVIDER:" M);
	struct rec_lock l;

	tag[0] = '\0';
	*last_used = 0;
	if (v != NULL && record_lock_decode(v, &l) == ORGW_OK) {
		snprintf(tag, ORGW_TAG_MAX, "%s", l.tag);
		*last_used = l.last_used;
	}
	free(v);
}

/* A counter of one ledger cell (0 when absent). */
static double
cell(const char *day, const char *api, const char *tag, enum ledger_ix ix)
{
	struct ledger_cell c;
	char k[256], *v;

	snprintf(k, sizeof(k), "LEDGER:" M ":%s:%s:%s", day, api, tag);
	v = get(k);
	(void)ledger_cell_decode(v, &c);
	free(v);
	return c.v[ix];
}

static size_t
lock_log_len(void)
{
	char *v = get("LOCK_LOG:" M);
	cJSON *o = v ? cJSON_Parse(v) : NULL;
	int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "changes"));

	cJSON_Delete(o);
	free(v);
	return (size_t)n;
}

static void
test_route_table(void)
{
	static const char *const ab[] = {"a", "b"};
	static const struct {
		const char *what;
		size_t n_cands;		/* of ab; 0: none stored */
		const char *lock;	/* NULL: none */
		int64_t last_used;	/* seconds before NOW */
		const char *cool;	/* a tag cooling, or NULL */
		const char *cool2;
		bool client;
		enum route_kind want;
		const char *want_tag;	/* the route's and then the lock's */
		bool writes;		/* a write transaction ran */
	} rows[] = {
		{"never scored: score inline", 0, NULL, 0, NULL, NULL, false,
		 ROUTE_SCORED, "", false},
		{"scored, no lock: the best", 2, NULL, 0, NULL, NULL, false,
		 ROUTE_RELOCKED, "a", true},
		{"a live lock: kept and renewed", 2, "b", 60, NULL, NULL, false,
		 ROUTE_LOCKED, "b", true},
		{"renewed this second: nothing written", 2, "b", 0, NULL, NULL,
		 false, ROUTE_LOCKED, "b", false},
		{"the lock cooling: the next", 2, "a", 0, "a", NULL, false,
		 ROUTE_RELOCKED, "b", true},
		{"an idle lock moves to a better best", 2, "b", 7200, NULL,
		 NULL, false, ROUTE_RELOCKED, "a", true},
		{"everything cooling: unpinned, the lock left", 2, "a", 10, "a",
		 "b", false, ROUTE_UNPINNED, "", false},
		{"the client's provider: nothing read or written", 2, "a", 10,
		 NULL, NULL, true, ROUTE_CLIENT, "", false},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct state_route r;
		char what[160], tag[ORGW_TAG_MAX];
		int64_t lu, writes;
		bool ok;

		store_mem_reset();
		if (rows[i].n_cands > 0)
			put_cands(ab, rows[i].n_cands);
		if (rows[i].lock != NULL)
			put_lock(rows[i].lock, NOW - rows[i].last_used);
		if (rows[i].cool != NULL)
			put_cooling(rows[i].cool, NOW + 600);
		if (rows[i].cool2 != NULL)
			put_cooling(rows[i].cool2, NOW + 600);
		writes = store_mem_writes();
		ok = state_route(&conf, M, rows[i].client, NOW, &r, NULL) ==
		     ORGW_OK;
		lock_now(tag, &lu);
		snprintf(what, sizeof(what), "route: %s", rows[i].what);
		T_ASSERT(what, ok && r.kind == rows[i].want &&
				       strcmp(r.tag, rows[i].want_tag) == 0);
		snprintf(what, sizeof(what), "route: %s (%s)", rows[i].what,
			 rows[i].writes ? "written" : "read only");
		T_ASSERT(what, (store_mem_writes() > writes) == rows[i].writes);
		if (rows[i].want == ROUTE_LOCKED ||
		    rows[i].want == ROUTE_RELOCKED) {
			snprintf(what, sizeof(what), "route: %s: lock %s at now",
				 rows[i].what, rows[i].want_tag);
			T_ASSERT(what, strcmp(tag, rows[i].want_tag) == 0 &&
					       lu == NOW);
		}
	}
}

/* A move counts a lock change in the day's event cell and the lock log;
 * a first lock is no change. */
static void
test_relock_events(void)
{
	static const char *const ab[] = {"a", "b"};
	struct state_route r;
	char day[11];

	store_mem_reset();
	record_day(NOW, day);
	put_cands(ab, 2);
	T_ASSERT("relock: first lock",
		 state_route(&conf, M, false, NOW, &r, NULL) == ORGW_OK &&
			 r.kind == ROUTE_RELOCKED && strcmp(r.tag, "a") == 0 &&
			 r.max_out == 1000);
	T_ASSERT("relock: a first lock is logged, no change counted",
		 lock_log_len() == 1 &&
			 cell(day, LEDGER_NONE, LEDGER_NONE, LX_LOCK_CHANGES) == 0);
	put_cooling("a", NOW + 600);
	T_ASSERT("relock: off a cooling lock",
		 state_route(&conf, M, false, NOW + 1, &r, NULL) == ORGW_OK &&
			 r.kind == ROUTE_RELOCKED && strcmp(r.tag, "b") == 0);
	T_ASSERT("relock: the move is logged and counted once",
		 lock_log_len() == 2 &&
			 cell(day, LEDGER_NONE, LEDGER_NONE, LX_LOCK_CHANGES) == 1);
}

static void
test_breaker(void)
{
	static const char *const ab[] = {"a", "b"};
	struct state_route r;
	char tag[ORGW_TAG_MAX], day[11];
	int64_t lu;
	bool tripped = true;
	int i, trips = 0;

	store_mem_reset();
	record_day(NOW, day);
	put_cands(ab, 2);
	put_lock("a", NOW);
	for (i = 0; i < conf.fail_limit - 1; i++) {
		memset(&r, 0, sizeof(r));
		if (state_failure(&conf, M, "a", "5xx", NOW, &tripped, &r) ==
			    ORGW_OK &&
		    tripped)
			trips++;
	}
	lock_now(tag, &lu);
	T_ASSERT("breaker: below FAIL_LIMIT nothing trips",
		 trips == 0 && strcmp(tag, "a") == 0 &&
			 get("PROVIDER_COOLDOWN:" M ":a") == NULL);
	T_ASSERT("breaker: the FAIL_LIMIT-th failure trips",
		 state_failure(&conf, M, "a", "5xx", NOW, &tripped, &r) ==
				 ORGW_OK &&
			 tripped && r.kind == ROUTE_RELOCKED &&
			 strcmp(r.tag, "b") == 0);
	lock_now(tag, &lu);
	{
		char *cd = get("PROVIDER_COOLDOWN:" M ":a");
		struct rec_cooldown c;

		T_ASSERT("breaker: a cools for COOLDOWN_SECONDS, the lock is b",
			 cd != NULL && record_cooldown_decode(cd, &c) == ORGW_OK &&
				 c.until == NOW + conf.cooldown_seconds &&
				 strcmp(tag, "b") == 0);
		free(cd);
	}
	T_ASSERT("breaker: the trip counted under a, the move once",
		 cell(day, LEDGER_NONE, "a", LX_TRIPS) == 1 &&
			 cell(day, LEDGER_NONE, LEDGER_NONE, LX_LOCK_CHANGES) == 1);
}

/* The consecutive failures stored for tag (-1 when no record). */
static int64_t
failures_of(const char *tag)
{
	char k[128], *v;
	struct rec_failure f;
	int64_t n = -1;

	snprintf(k, sizeof(k), "PROVIDER_FAILURE:" M ":%s", tag);
	v = get(k);
	if (v != NULL && record_failure_decode(v, &f) == ORGW_OK)
		n = f.count;
	free(v);
	return n;
}

/*
 * A failure of a provider that cools already (another request tripped
 * it while this one was in flight on it): not counted, no second trip,
 * and the request goes on with the model's lock as it is now.
 */
static void
test_breaker_cooling(void)
{
	static const char *const abc[] = {"a", "b", "c"};
	static const struct {
		const char *what;
		const char *lock;	/* NULL: none */
		int64_t a_until;	/* a's cooldown, seconds after NOW */
		bool b_cools, c_cools;
		int failures;		/* of a, in a row */
		bool tripped;		/* by the last of them */
		enum route_kind want;
		const char *want_tag;	/* the route's */
		const char *want_lock;	/* the stored lock's after */
		int64_t a_count;	/* a's stored count after (-1: none) */
		double trips, changes;	/* ledger events after */
	} rows[] = {
		{"a cooling, the lock on b: followed, not counted", "b", 600,
		 false, false, 1, false, ROUTE_LOCKED, "b", "b", -1, 0, 0},
		{"a cooling: FAIL_LIMIT more failures never trip again", "b",
		 600, false, false, 3, false, ROUTE_LOCKED, "b", "b", -1, 0, 0},
		{"a cooling, the lock still on a: moved to b", "a", 600, false,
		 false, 1, false, ROUTE_RELOCKED, "b", "b", -1, 0, 1},
		{"a cooling, the lock on b cooling too: c", "b", 600, true,
		 false, 1, false, ROUTE_RELOCKED, "c", "c", -1, 0, 1},
		{"all cooling: unpinned, the lock left", "b", 600, true, true,
		 1, false, ROUTE_UNPINNED, "", "b", -1, 0, 0},
		{"a's cooldown over: counted again, the route left on a", "b",
		 0, false, false, 1, false, ROUTE_LOCKED, "a", "b", 1, 0, 0},
		{"a's cooldown over: trips again at FAIL_LIMIT", "a", 0, false,
		 false, 3, true, ROUTE_RELOCKED, "b", "b", 0, 1, 1},
	};
	size_t i;

	/* The rows count to the default limit. */
	conf.fail_limit = 3;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct state_route r;
		char what[160], tag[ORGW_TAG_MAX], day[11];
		bool tripped = false, ok = true;
		int64_t lu;
		int j;

		store_mem_reset();
		record_day(NOW, day);
		put_cands(abc, 3);
		if (rows[i].lock != NULL)
			put_lock(rows[i].lock, NOW - 10);
		put_cooling("a", NOW + rows[i].a_until);
		if (rows[i].b_cools)
			put_cooling("b", NOW + 600);
		if (rows[i].c_cools)
			put_cooling("c", NOW + 600);
		for (j = 0; j < rows[i].failures; j++) {
			/* The request as it was routed: to a, which the
			 * failure is of. */
			memset(&r, 0, sizeof(r));
			r.kind = ROUTE_LOCKED;
			snprintf(r.tag, sizeof(r.tag), "a");
			if (state_failure(&conf, M, "a", "5xx", NOW, &tripped,
					  &r) != ORGW_OK)
				ok = false;
		}
		snprintf(what, sizeof(what), "breaker cooling: %s: route",
			 rows[i].what);
		T_ASSERT(what, ok && tripped == rows[i].tripped &&
				       r.kind == rows[i].want &&
				       strcmp(r.tag, rows[i].want_tag) == 0);
		lock_now(tag, &lu);
		snprintf(what, sizeof(what), "breaker cooling: %s: the lock",
			 rows[i].what);
		T_ASSERT(what, strcmp(tag, rows[i].want_lock) == 0);
		snprintf(what, sizeof(what),
			 "breaker cooling: %s: count and ledger events",
			 rows[i].what);
		T_ASSERT(what,
			 failures_of("a") == rows[i].a_count &&
				 cell(day, LEDGER_NONE, "a", LX_TRIPS) ==
					 rows[i].trips &&
				 cell(day, LEDGER_NONE, LEDGER_NONE,
				      LX_LOCK_CHANGES) == rows[i].changes);
	}

	/* Without a route to fill (r NULL) it still counts nothing. */
	store_mem_reset();
	put_cands(abc, 3);
	put_lock("b", NOW - 10);
	put_cooling("a", NOW + 600);
	{
		bool tripped = true;

		T_ASSERT("breaker cooling: no route asked: nothing counted",
			 state_failure(&conf, M, "a", "5xx", NOW, &tripped,
				       NULL) == ORGW_OK &&
				 !tripped && failures_of("a") == -1);
	}
}

struct finisher {
	int n;
	int failed;
};

static void *
finish_many(void *arg)
{
	struct finisher *f = arg;
	struct stats_delta d;
	int i;

	for (i = 0; i < f->n; i++) {
		memset(&d, 0, sizeof(d));
		d.tag = "a";
		d.api = "chat";
		d.requests = d.ok = 1;
		d.prompt_tokens = 1000;
		d.cached_tokens = 500;
		d.completion_tokens = 10;
		d.cost_usd = 0.001;
		d.cost_known = d.usage = true;
		d.ttfb_ms = d.total_ms = 5;
		d.now = NOW;
		if (state_finish(&conf, M, &d, "a") != ORGW_OK)
			f->failed++;
	}
	return NULL;
}

/* Threads finishing at once are committed in batches, every request
 * counted once; the hit rate learns from each; the failure count of the
 * provider that answered is reset. */
static void
test_finish(void)
{
	static const char *const ab[] = {"a", "b"};
	struct finisher f[8];
	pthread_t th[8];
	char day[11], *v;
	struct rec_failure fl;
	int64_t before;
	int i, failed = 0;

	store_mem_reset();
	record_day(NOW, day);
	put_cands(ab, 2);
	memset(&fl, 0, sizeof(fl));
	fl.count = 2;
	v = record_failure_encode(&fl);
	put("PROVIDER_FAILURE:" M ":a", v);
	record_free(v);
	before = store_mem_writes();
	for (i = 0; i < 8; i++) {
		f[i].n = 25;
		f[i].failed = 0;
		pthread_create(&th[i], NULL, finish_many, &f[i]);
	}
	for (i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		failed += f[i].failed;
	}
	T_ASSERT("finish: 200 requests from 8 threads, 200 counted",
		 failed == 0 && cell(day, "chat", "a", LX_REQUESTS) == 200 &&
			 cell(day, "chat", "a", LX_PROMPT) == 200000);
	T_ASSERT("finish: no more write transactions than requests",
		 store_mem_writes() - before <= 200);
	v = get("HIT:" M);
	{
		struct score_hit *hv = NULL;
		size_t hn = 0;

		T_ASSERT("finish: the hit rate learnt from every answer",
			 v != NULL && record_hits_decode(v, &hv, &hn) == ORGW_OK &&
				 hn == 1 && strcmp(hv[0].tag, "a") == 0 &&
				 hv[0].tokens == 200000 && T_NEAR(hv[0].rate, 0.5));
		free(hv);
	}
	free(v);
	v = get("PROVIDER_FAILURE:" M ":a");
	T_ASSERT("finish: the answering provider's failures are reset",
		 v != NULL && record_failure_decode(v, &fl) == ORGW_OK &&
			 fl.count == 0);
	free(v);
	T_ASSERT("finish: money priced from the stored candidates",
		 T_NEAR(cell(day, "chat", "a", LX_UNCACHED),
			200 * (1000 * 1e-6 + 10 * 2e-6)));

	/* A state that cannot be opened: not counted, kept for
	 * LOST_UPDATES, added with the next request that is. */
	store_mem_refuse(true);
	f[0].n = 1;
	f[0].failed = 0;
	finish_many(&f[0]);
	store_mem_refuse(false);
	T_ASSERT("finish: a refused state loses the count, kept aside",
		 f[0].failed == 1 && store_lost_peek() == 1);
	finish_many(&f[0]);
	v = get(STATE_LOST_KEY);
	T_ASSERT("finish: ...and added to LOST_UPDATES with the next",
		 v != NULL && strcmp(v, "1") == 0 && store_lost_peek() == 0 &&
			 cell(day, "chat", "a", LX_REQUESTS) == 201);
	free(v);
}

/*
 * The decoded records a process keeps (memo.h) never hide what another
 * process wrote: a cell, hit rate, lock or candidate list rewritten
 * behind this one's back is read as stored.
 */
static void
test_other_writer(void)
{
	static const char *const ab[] = {"a", "b"};
	struct ledger_cell c;
	struct finisher f = {1, 0};
	struct state_route r;
	struct score_hit h, *hv = NULL;
	char day[11], k[256], *v;
	size_t hn = 0;

	store_mem_reset();
	record_day(NOW, day);
	put_cands(ab, 2);
	finish_many(&f);
	finish_many(&f);
	T_ASSERT("other writer: two requests counted",
		 cell(day, "chat", "a", LX_REQUESTS) == 2);
	/* Another process counts 40 more, and measures no cache at all. */
	memset(&c, 0, sizeof(c));
	snprintf(k, sizeof(k), "LEDGER:" M ":%s:chat:a", day);
	v = get(k);
	(void)ledger_cell_decode(v, &c);
	free(v);
	c.v[LX_REQUESTS] += 40;
	v = ledger_cell_encode(&c);
	put(k, v);
	record_free(v);
	memset(&h, 0, sizeof(h));
	snprintf(h.tag, sizeof(h.tag), "a");
	h.weight = 1e9;
	h.tokens = 1000000000;
	v = record_hits_encode(&h, 1);
	put("HIT:" M, v);
	record_free(v);
	finish_many(&f);
	T_ASSERT("other writer: its cell is added to, not this one's copy",
		 cell(day, "chat", "a", LX_REQUESTS) == 43);
	v = get("HIT:" M);
	T_ASSERT("other writer: its hit rate is learnt on, not this one's",
		 v != NULL && record_hits_decode(v, &hv, &hn) == ORGW_OK &&
			 hn == 1 && hv[0].tokens == 1000000000 + 1000 &&
			 hv[0].rate < 0.001);
	free(hv);
	free(v);
	/* Routed once on a, then an operator moves the lock to b. */
	put_lock("a", NOW);
	T_ASSERT("other writer: routed on the stored lock",
		 state_route(&conf, M, false, NOW, &r, NULL) == ORGW_OK &&
			 strcmp(r.tag, "a") == 0);
	put_lock("b", NOW);
	T_ASSERT("other writer: routed on the lock it moved",
		 state_route(&conf, M, false, NOW, &r, NULL) == ORGW_OK &&
			 strcmp(r.tag, "b") == 0);
}

/* One finished request on model (ok or not), at NOW. */
static enum orgw_err
finish_one(const char *model, bool ok)
{
	struct stats_delta d;

	memset(&d, 0, sizeof(d));
	d.api = "chat";
	d.requests = 1;
	d.ok = ok ? 1 : 0;
	d.now = NOW;
	d.ttfb_ms = d.total_ms = 5;
	return state_finish(&conf, model, &d, NULL);
}

/* A cell's requests, by model, day and API, for any provider tag. */
static double
requests_of(const char *model, const char *day)
{
	char k[256], *v;
	struct ledger_cell c;

	snprintf(k, sizeof(k), "LEDGER:%s:%s:chat:%s", model, day,
		 RECORD_MONEY_UNKNOWN);
	v = get(k);
	(void)ledger_cell_decode(v, &c);
	free(v);
	return c.v[LX_REQUESTS];
}

/*
 * Ids OpenRouter is not known to serve leave no key of their own: their
 * requests are counted under STATE_OTHER_MODEL until one succeeds (which
 * marks the model seen).
 */
static void
test_unseen(void)
{
	struct state_route r;
	char day[11], *v = NULL;

	record_day(NOW, day);
	store_mem_reset();
	T_ASSERT("unseen: a failed request on an id never seen is counted "
		 "under (other)",
		 finish_one("x/invented", false) == ORGW_OK &&
			 requests_of(STATE_OTHER_MODEL, day) == 1 &&
			 store_mem_count("LEDGER:x/invented:") == 0 &&
			 store_mem_count("MODEL_SEEN:x/invented") == 0);
	T_ASSERT("unseen: a success marks it seen and counts it as its own",
		 finish_one("x/real", true) == ORGW_OK &&
			 requests_of("x/real", day) == 1 &&
			 store_mem_count("MODEL_SEEN:x/real") == 1);
	T_ASSERT("unseen: once seen, a failure counts as its own too",
		 finish_one("x/real", false) == ORGW_OK &&
			 requests_of("x/real", day) == 2 &&
			 requests_of(STATE_OTHER_MODEL, day) == 1);
	/* A failed first scoring keeps its error record (no worker fetches
	 * again for a minute), which marks nothing seen: the scorer's run
	 * drops it (test_scorerun). */
	T_ASSERT("unseen: a failed first scoring is recorded, not seen",
		 state_route_scored(&conf, "x/broken", NULL,
				    "endpoints HTTP 500", NOW, &r) == ORGW_OK &&
			 r.kind == ROUTE_UNPINNED &&
			 (v = get("PROVIDER_CANDIDATE:x/broken")) != NULL &&
			 strstr(v, "endpoints HTTP 500") != NULL &&
			 store_mem_count("MODEL_SEEN:x/broken") == 0);
	free(v);
}

static void
test_operator(void)
{
	static const char *const ab[] = {"a", "b"};
	struct state_route r;
	char old[ORGW_TAG_MAX], tag[ORGW_TAG_MAX];
	int64_t lu;
	bool moved = false, had_cd = false, had_f = true;

	store_mem_reset();
	put_cands(ab, 2);
	put_lock("a", NOW);
	T_ASSERT("operator: unlock drops the lock and says which",
		 state_op_unlock(&conf, M, NOW, old, sizeof(old)) == ORGW_OK &&
			 strcmp(old, "a") == 0 &&
			 get("BEST_PROVIDER:" M) == NULL);
	T_ASSERT("operator: unlock without a lock is no change",
		 state_op_unlock(&conf, M, NOW, old, sizeof(old)) == ORGW_OK &&
			 old[0] == '\0');
	put_lock("a", NOW);
	T_ASSERT("operator: cooling the lock moves it at once",
		 state_op_cool(&conf, M, "a", 300, "maint", NOW, &moved, &r) ==
				 ORGW_OK &&
			 moved && r.kind == ROUTE_RELOCKED &&
			 strcmp(r.tag, "b") == 0);
	lock_now(tag, &lu);
	T_ASSERT("operator: ...to b", strcmp(tag, "b") == 0);
	T_ASSERT("operator: uncool clears the cooldown, never the lock",
		 state_op_uncool(&conf, M, "a", &had_cd, &had_f) == ORGW_OK &&
			 had_cd && !had_f &&
			 get("PROVIDER_COOLDOWN:" M ":a") == NULL);
	lock_now(tag, &lu);
	T_ASSERT("operator: the lock stays on b", strcmp(tag, "b") == 0);
	T_ASSERT("operator: a bad tag is refused, nothing written",
		 state_op_cool(&conf, M, "a:b", 300, "x", NOW, &moved, &r) ==
			 ORGW_EINVAL);
}

/* One team key's request routed with admission at now_ms (lease id
 * lease, or NULL): its verdict. */
static enum teamkey_verdict
admit_one(const struct teamkey *k, int64_t now_ms, const char *lease,
	  const struct ledger_cell *day, const struct ledger_cell *month,
	  int64_t *retry)
{
	struct state_admit ad;
	struct state_route r;

	memset(&ad, 0, sizeof(ad));
	ad.key = k;
	ad.lease = lease;
	ad.now_ms = now_ms;
	ad.lease_ms = 600000;
	ad.day = day;
	ad.month = month;
	if (state_route(&conf, M, false, now_ms / 1000, &r, &ad) != ORGW_OK)
		return TK_UNKNOWN;
	if (retry != NULL)
		*retry = ad.retry_after_s;
	return ad.verdict;
}

/* admit_one with a budget hold of id, for a body of prompt_max bytes
 * and an output limit out_max: its verdict, *held what it holds. */
static enum teamkey_verdict
admit_held(const struct teamkey *k, int64_t now_ms, const char *id,
	   int64_t prompt_max, int64_t out_max, double *held)
{
	static const struct ledger_cell none;
	struct state_admit ad;
	struct state_route r;

	memset(&ad, 0, sizeof(ad));
	ad.key = k;
	ad.hold = id;
	ad.prompt_max = prompt_max;
	ad.out_max = out_max;
	ad.now_ms = now_ms;
	ad.lease_ms = 600000;
	ad.day = &none;
	ad.month = &none;
	if (state_route(&conf, M, false, now_ms / 1000, &r, &ad) != ORGW_OK)
		return TK_UNKNOWN;
	if (held != NULL)
		*held = ad.held_usd;
	return ad.verdict;
}

/* A team key's request ends: its lease back, usd spent. */
static enum orgw_err
finish_key(const char *name, const char *lease, bool budget, double usd)
{
	struct stats_delta d;

	memset(&d, 0, sizeof(d));
	d.api = "chat";
	d.requests = 1;
	d.ok = 1;
	d.now = NOW;
	d.usage = true;
	d.cost_known = true;
	d.cost_usd = usd;
	d.key_name = name;
	d.lease = lease;
	d.key_budget = budget;
	return state_finish(&conf, M, &d, NULL);
}

/*
 * Budget holds: an admitted request holds the most it can cost, a
 * request finds the budget held by those in flight refused (429, as
 * over its concurrency) though nothing is spent yet, and a finish
 * drops its hold in the transaction that adds its spend.
 */
static void
test_admit_holds(struct teamkey *k, int64_t now_ms)
{
	struct stats_delta d;
	double held = 0, first, total;
	char *v;

	store_mem_reset();
	k->concurrent = 0;
	k->budget_day_usd = 1.0;
	T_ASSERT("hold: the first request is admitted, holding > 0",
		 admit_held(k, now_ms, "aa01", 1000, 100000, &held) == TK_OK &&
			 held > 0);
	first = total = held;
	T_ASSERT("hold: ...its hold is in the state",
		 (v = get(STATE_HOLD_PREFIX "team")) != NULL &&
			 strstr(v, "\"aa01\"") != NULL);
	free(v);
	while (total < 1.0 && admit_held(k, now_ms, "aa02", 1000, 100000,
					 &held) == TK_OK)
		total += held;
	T_ASSERT("hold: admitted while spend plus holds is under the budget, "
		 "then 429 with nothing spent",
		 admit_held(k, now_ms, "aa03", 1000, 100000, NULL) ==
				 TK_CONCURRENT &&
			 total >= 1.0 && total < 1.0 + first);
	memset(&d, 0, sizeof(d));
	d.api = "chat";
	d.requests = d.ok = 1;
	d.now = now_ms / 1000;
	d.usage = d.cost_known = true;
	d.cost_usd = 0.001;
	d.key_name = "team";
	d.key_budget = true;
	d.hold = "aa01";
	T_ASSERT("hold: a finish drops its hold: the next is admitted",
		 state_finish(&conf, M, &d, NULL) == ORGW_OK &&
			 admit_held(k, now_ms, "aa04", 1000, 100000, NULL) ==
				 TK_OK);
	T_ASSERT("hold: holds lapse after their lease time",
		 admit_held(k, now_ms + 600001, "aa05", 1000, 100000, NULL) ==
			 TK_OK);
}

/*
 * Team keys in the route transaction: rpm and concurrency counted and
 * refused there, a refusal writes nothing, the finish gives the lease
 * back, and a budget sees what ended requests spent before the keys
 * store has it (the spend mirror), so only requests in flight overshoot.
 */
/* Routes conversation hash at now; the route in *r, the answer in *cv. */
static enum orgw_err
conv_route(const char *hash, int64_t now, struct state_route *r,
	   struct state_conv *cv)
{
	memset(cv, 0, sizeof(*cv));
	cv->hash = hash;
	return state_route_conv(&conf, M, false, now, r, NULL, cv);
}

/* A successful turn of conversation hash served by tag at now, with a
 * prompt of units (their hashes 1..units) and its usage, foreign its
 * state_conv_turn.foreign_items; ct says how it was classified. */
static enum orgw_err
conv_turn_f(const char *hash, const char *tag, int64_t now, size_t units,
	    int64_t prompt, int64_t cached, int64_t foreign,
	    struct state_conv_turn *ct)
{
	struct fp_unit u[8];
	struct fp_list fp = {0, 0, u};
	struct stats_delta d;
	size_t i;

	for (i = 0; i < units && i < 8; i++) {
		u[i].hash = 1000 + i;
		u[i].bytes = 100;
		snprintf(u[i].kind, sizeof(u[i].kind), "%s",
			 i == 0 ? "system" : i % 2 ? "user" : "assistant");
	}
	fp.n = fp.cap = i;
	memset(&d, 0, sizeof(d));
	d.api = "messages";
	d.requests = 1;
	d.ok = 1;
	d.tag = tag;
	d.now = now;
	d.prompt_tokens = prompt;
	d.cached_tokens = cached;
	d.usage = true;
	d.ttfb_ms = d.total_ms = 5;
	memset(ct, 0, sizeof(*ct));
	ct->hash = hash;
	ct->show = "sess-1";
	ct->fp = &fp;
	ct->ttl_s = 300;
	ct->foreign_items = foreign;
	return state_finish_conv(&conf, M, &d, tag, ct);
}

/* conv_turn_f() of a turn that left no reasoning items out. */
static enum orgw_err
conv_turn(const char *hash, const char *tag, int64_t now, size_t units,
	  int64_t prompt, int64_t cached, struct state_conv_turn *ct)
{
	return conv_turn_f(hash, tag, now, units, prompt, cached, -1, ct);
}

/* The stored conversation's provider and turns ("" and 0 when none). */
static int64_t
conv_now(const char *hash, char tag[ORGW_TAG_MAX])
{
	char k[256], *v;
	struct rec_conv rc;
	int64_t turns = 0;

	snprintf(k, sizeof(k), "CONV:" M ":%s", hash);
	v = get(k);
	tag[0] = '\0';
	if (v != NULL && record_conv_decode(v, &rc, NULL) == ORGW_OK) {
		snprintf(tag, ORGW_TAG_MAX, "%s", rc.tag);
		turns = rc.turns;
	}
	free(v);
	return turns;
}

/*
 * A conversation's routing through the state: its first turn on the
 * lock, kept on its provider when the lock moves (without renewing or
 * moving the lock), moved once when its provider cools, its record
 * written at the finish; a provider 429 puts the provider under
 * pressure, which sends new conversations elsewhere and leaves warm ones
 * where they are; a turn past CONVERSATION_IDLE_SECONDS goes to the
 * lock; the finish classifies a turn that read nothing as a break.
 */
static void
test_conv(void)
{
	static const char *const abc[] = {"a", "b", "c"};
	static const char h1[] = "1111", h2[] = "2222", h3[] = "3333";
	struct state_route r, next;
	struct state_conv cv;
	struct state_conv_turn ct;
	char tag[ORGW_TAG_MAX], *pv;
	int64_t lu;
	bool moved = false;

	store_mem_reset();
	put_cands(abc, 3);
	put_lock("a", NOW);
	T_ASSERT("conv: a first turn goes to the lock, no record yet",
		 conv_route(h1, NOW, &r, &cv) == ORGW_OK &&
			 strcmp(r.tag, "a") == 0 && !r.conversation &&
			 !cv.have && !cv.warm && !cv.moved);
	T_ASSERT("conv: its finish writes the record (provider a, 1 turn)",
		 conv_turn(h1, "a", NOW, 2, 1000, 0, &ct) == ORGW_OK &&
			 ct.written && !ct.is_break &&
			 conv_now(h1, tag) == 1 && strcmp(tag, "a") == 0);
	put_lock("b", NOW + 10);
	T_ASSERT("conv: the lock moved to b, the warm conversation stays "
		 "on a (route conversation)",
		 conv_route(h1, NOW + 20, &r, &cv) == ORGW_OK &&
			 strcmp(r.tag, "a") == 0 && r.conversation &&
			 cv.warm && cv.have && strcmp(cv.prev_tag, "a") == 0);
	lock_now(tag, &lu);
	T_ASSERT("conv: ... and leaves the lock alone",
		 strcmp(tag, "b") == 0 && lu == NOW + 10);
	T_ASSERT("conv: a new conversation goes to the lock",
		 conv_route(h2, NOW + 20, &r, &cv) == ORGW_OK &&
			 strcmp(r.tag, "b") == 0 && !r.conversation);
	put_cooling("a", NOW + 600);
	T_ASSERT("conv: its provider cools: it moves to the lock (moved)",
		 conv_route(h1, NOW + 30, &r, &cv) == ORGW_OK &&
			 strcmp(r.tag, "b") == 0 && !r.conversation &&
			 cv.moved && !cv.warm);
	T_ASSERT("conv: served there, it is b's",
		 conv_turn(h1, "b", NOW + 30, 4, 2000, 1500, &ct) == ORGW_OK &&
			 conv_now(h1, tag) == 2 && strcmp(tag, "b") == 0);
	T_ASSERT("conv: a provider 429 on b: pressure, and the next "
		 "candidate neither cooling nor under pressure is c",
		 state_pressure(&conf, M, "b", NOW + 40, &next, &moved) ==
				 ORGW_OK &&
			 moved && strcmp(next.tag, "c") == 0 &&
			 next.conversation);
	pv = get("PRESSURE:" M ":b");
	T_ASSERT("conv: the pressure record is there", pv != NULL);
	free(pv);
	T_ASSERT("conv: a new conversation under pressure starts on c "
		 "(spread)",
		 conv_route(h3, NOW + 41, &r, &cv) == ORGW_OK &&
			 strcmp(r.tag, "c") == 0 && r.conversation &&
			 cv.spread);
	T_ASSERT("conv: the warm conversation on b stays there",
		 conv_route(h1, NOW + 41, &r, &cv) == ORGW_OK &&
			 strcmp(r.tag, "b") == 0 && cv.warm && !cv.spread);
	T_ASSERT("conv: after PRESSURE_SECONDS a new one goes to the lock",
		 conv_route(h3, NOW + 40 + conf.pressure_seconds + 1, &r,
			    &cv) == ORGW_OK &&
			 strcmp(r.tag, "b") == 0 && !cv.spread);
	T_ASSERT("conv: a turn past CONVERSATION_IDLE_SECONDS on c goes to "
		 "the lock b",
		 conv_turn(h3, "c", NOW + 50, 2, 1000, 0, &ct) == ORGW_OK &&
			 conv_route(h3,
				    NOW + 50 + conf.conversation_idle_seconds,
				    &r, &cv) == ORGW_OK &&
			 strcmp(r.tag, "b") == 0 && cv.moved);
	T_ASSERT("conv: same provider, same prefix, in time, nothing read: "
		 "provider_miss",
		 conv_turn(h1, "b", NOW + 60, 6, 3000, 0, &ct) == ORGW_OK &&
			 ct.is_break && ct.cause == CONVCACHE_PROVIDER_MISS &&
			 conv_now(h1, tag) == 3);
	T_ASSERT("conv: a warm turn that read its prefix is no break",
		 conv_turn(h1, "b", NOW + 70, 8, 4000, 2900, &ct) == ORGW_OK &&
			 !ct.is_break);
	T_ASSERT("conv: a client's own provider object wins",
		 state_route_conv(&conf, M, true, NOW + 71, &r, NULL, &cv) ==
				 ORGW_OK &&
			 r.kind == ROUTE_CLIENT && !r.conversation);
}

/*
 * CONVERSATIONS=0: a turn goes where the model's lock says, as any
 * request: a warm conversation follows the lock when it moves (and
 * renews it), and a new one goes to the lock under pressure; the record
 * is still written at the finish.
 */
static void
test_conv_off(void)
{
	static const char *const abc[] = {"a", "b", "c"};
	static const char h1[] = "4444", h2[] = "5555";
	struct state_route r, next;
	struct state_conv cv;
	struct state_conv_turn ct;
	char tag[ORGW_TAG_MAX];
	int64_t lu;
	bool moved = false;

	store_mem_reset();
	conf.conversations = 0;
	put_cands(abc, 3);
	put_lock("a", NOW);
	T_ASSERT("conv off: a first turn goes to the lock",
		 conv_route(h1, NOW, &r, &cv) == ORGW_OK &&
			 strcmp(r.tag, "a") == 0 && !r.conversation);
	T_ASSERT("conv off: its finish still writes the record",
		 conv_turn(h1, "a", NOW, 2, 1000, 0, &ct) == ORGW_OK &&
			 ct.written && conv_now(h1, tag) == 1 &&
			 strcmp(tag, "a") == 0);
	put_lock("b", NOW + 10);
	T_ASSERT("conv off: the lock moved to b, the warm conversation "
		 "follows it (route locked, not warm)",
		 conv_route(h1, NOW + 20, &r, &cv) == ORGW_OK &&
			 strcmp(r.tag, "b") == 0 && r.kind == ROUTE_LOCKED &&
			 !r.conversation && !cv.warm && !cv.moved);
	lock_now(tag, &lu);
	T_ASSERT("conv off: ... and renews the lock",
		 strcmp(tag, "b") == 0 && lu == NOW + 20);
	T_ASSERT("conv off: a provider 429 on b is recorded as pressure",
		 state_pressure(&conf, M, "b", NOW + 30, &next, &moved) ==
				 ORGW_OK &&
			 moved);
	T_ASSERT("conv off: a new conversation still goes to the lock b "
		 "(no spread)",
		 conv_route(h2, NOW + 31, &r, &cv) == ORGW_OK &&
			 strcmp(r.tag, "b") == 0 && !r.conversation &&
			 !cv.spread);
	conf.conversations = 1;
	T_ASSERT("conv on again: the same new conversation spreads to a "
		 "(the best candidate not under pressure)",
		 conv_route(h2, NOW + 31, &r, &cv) == ORGW_OK &&
			 strcmp(r.tag, "a") == 0 && r.conversation &&
			 cv.spread);
}

/* The breaks of cause ix in the day's cells of both providers. */
static double
breaks(const char *day, enum ledger_ix ix)
{
	return cell(day, "messages", "a", ix) + cell(day, "messages", "b", ix);
}

/* m.conversations.breaks.<cause> of /stats at now (-1 when absent). */
static double
stats_breaks(int64_t now, const char *cause)
{
	cJSON *t = stats_tree(&conf, now), *it;
	double v;

	it = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(t, "models"),
				M),
			"conversations"),
		"breaks");
	it = cJSON_GetObjectItemCaseSensitive(it, cause);
	v = cJSON_IsNumber(it) ? it->valuedouble : -1;
	cJSON_Delete(t);
	return v;
}

/* True when /metrics at now has the line want. */
static bool
metrics_has(int64_t now, const char *want)
{
	struct buf out = {0};
	bool ok = stats_metrics(&conf, now, -1, &out) == ORGW_OK &&
		  buf_adds(&out, "") == ORGW_OK && strstr(out.p, want) != NULL;

	buf_free(&out);
	return ok;
}

/*
 * A conversation's cache breaks are counted in the ledger cell of the
 * request whose turn broke, one under its cause, in the finish's own
 * transaction; the scorer's sweep drops the record that held them and
 * the counts stay, in /stats and /metrics too, and grow from there.
 */
static void
test_conv_breaks(void)
{
	static const char *const ab[] = {"a", "b"};
	static const char h1[] = "1111", h2[] = "2222";
	struct state_conv_turn ct;
	char day[11], *v;
	size_t dropped = 0;
	int max = conf.max_conversations;
	bool swept;

	store_mem_reset();
	record_day(NOW, day);
	put_cands(ab, 2);
	put_lock("a", NOW);
	T_ASSERT("breaks: a first turn is none, none counted",
		 conv_turn(h1, "a", NOW, 2, 1000, 0, &ct) == ORGW_OK &&
			 ct.written && !ct.is_break &&
			 breaks(day, LX_BRK_MISS) == 0 &&
			 breaks(day, LX_BRK_MOVED) == 0);
	T_ASSERT("breaks: a provider_miss adds one to its cause, in the "
		 "request's cell",
		 conv_turn(h1, "a", NOW + 10, 4, 2000, 0, &ct) == ORGW_OK &&
			 ct.is_break && ct.cause == CONVCACHE_PROVIDER_MISS &&
			 cell(day, "messages", "a", LX_BRK_MISS) == 1 &&
			 cell(day, "messages", "a", LX_REQUESTS) == 2 &&
			 breaks(day, LX_BRK_MOVED) == 0);
	T_ASSERT("breaks: a move adds one to moved, under the provider that "
		 "served",
		 conv_turn(h1, "b", NOW + 20, 6, 3000, 0, &ct) == ORGW_OK &&
			 ct.is_break && ct.cause == CONVCACHE_MOVED &&
			 cell(day, "messages", "b", LX_BRK_MOVED) == 1 &&
			 breaks(day, LX_BRK_MOVED) == 1 &&
			 breaks(day, LX_BRK_MISS) == 1);
	T_ASSERT("breaks: a warm turn adds none",
		 conv_turn(h1, "b", NOW + 30, 8, 4000, 2900, &ct) == ORGW_OK &&
			 !ct.is_break && breaks(day, LX_BRK_MOVED) == 1 &&
			 breaks(day, LX_BRK_MISS) == 1 &&
			 breaks(day, LX_BRK_PREFIX) == 0 &&
			 breaks(day, LX_BRK_EXPIRED) == 0);
	T_ASSERT("breaks: /stats and /metrics read them",
		 stats_breaks(NOW + 35, "moved") == 1 &&
			 stats_breaks(NOW + 35, "provider_miss") == 1 &&
			 stats_breaks(NOW + 35, "expired") == 0 &&
			 metrics_has(NOW + 35, "orgw_cache_breaks_total{model=\""
					       M "\",cause=\"moved\"} 1\n"));
	/* A newer conversation, and MAX_CONVERSATIONS 1: the sweep keeps
	 * only it. */
	conf.max_conversations = 1;
	swept = conv_turn(h2, "a", NOW + 40, 2, 1000, 0, &ct) == ORGW_OK &&
		scorerun_conv_sweep(&conf, NOW + 50, &dropped) == ORGW_OK;
	conf.max_conversations = max;
	v = get("CONV:" M ":1111");
	T_ASSERT("breaks: the sweep dropped the record that held them",
		 swept && dropped == 1 && v == NULL);
	free(v);
	T_ASSERT("breaks: ... and the counts stay",
		 breaks(day, LX_BRK_MOVED) == 1 &&
			 breaks(day, LX_BRK_MISS) == 1 &&
			 stats_breaks(NOW + 50, "moved") == 1 &&
			 stats_breaks(NOW + 50, "provider_miss") == 1 &&
			 metrics_has(NOW + 50, "orgw_cache_breaks_total{model=\""
					       M "\",cause=\"moved\"} 1\n") &&
			 metrics_has(NOW + 50,
				     "orgw_cache_breaks_total{model=\"" M
				     "\",cause=\"provider_miss\"} 1\n"));
	T_ASSERT("breaks: the conversation starts again; its next break "
		 "adds to the count",
		 conv_turn(h1, "b", NOW + 60, 2, 1000, 0, &ct) == ORGW_OK &&
			 !ct.is_break &&
			 conv_turn(h1, "b", NOW + 70, 4, 2000, 0, &ct) ==
				 ORGW_OK &&
			 ct.cause == CONVCACHE_PROVIDER_MISS &&
			 breaks(day, LX_BRK_MISS) == 2 &&
			 metrics_has(NOW + 70,
				     "orgw_cache_breaks_total{model=\"" M
				     "\",cause=\"provider_miss\"} 2\n"));
}

/* The stored conversation's foreign_items, -1 when there is none. */
static int64_t
conv_foreign(const char *hash)
{
	char k[256], *v;
	struct rec_conv rc;
	int64_t n = -1;

	snprintf(k, sizeof(k), "CONV:" M ":%s", hash);
	v = get(k);
	if (v != NULL && record_conv_decode(v, &rc, NULL) == ORGW_OK)
		n = rc.foreign_items;
	free(v);
	return n;
}

/*
 * How far a conversation's input holds another provider's reasoning
 * (rec_conv.foreign_items): written by the finish of a turn that left
 * them out, kept by the turns after it, read back by the route, set anew
 * by the next turn that leaves them out.
 */
static void
test_conv_foreign(void)
{
	static const char *const ab[] = {"a", "b"};
	static const char h[] = "4444";
	struct state_route r;
	struct state_conv cv;
	struct state_conv_turn ct;
	char tag[ORGW_TAG_MAX];

	store_mem_reset();
	put_cands(ab, 2);
	put_lock("a", NOW);
	T_ASSERT("foreign: a new conversation has none",
		 conv_route(h, NOW, &r, &cv) == ORGW_OK &&
			 cv.foreign_items == 0);
	T_ASSERT("foreign: a turn that left nothing out: 0 stored",
		 conv_turn(h, "a", NOW, 2, 1000, 0, &ct) == ORGW_OK &&
			 ct.written && conv_foreign(h) == 0);
	put_cooling("a", NOW + 600);
	T_ASSERT("foreign: a moved turn's finish writes its input's length",
		 conv_route(h, NOW + 10, &r, &cv) == ORGW_OK && cv.moved &&
			 strcmp(r.tag, "b") == 0 &&
			 conv_turn_f(h, "b", NOW + 10, 4, 2000, 0, 12, &ct) ==
				 ORGW_OK &&
			 conv_foreign(h) == 12);
	T_ASSERT("foreign: the next turn's route reads it",
		 conv_route(h, NOW + 20, &r, &cv) == ORGW_OK &&
			 strcmp(r.tag, "b") == 0 && cv.have &&
			 strcmp(cv.prev_tag, "b") == 0 && !cv.moved &&
			 cv.foreign_items == 12);
	T_ASSERT("foreign: a turn that left nothing out keeps it",
		 conv_turn(h, "b", NOW + 20, 6, 3000, 1900, &ct) == ORGW_OK &&
			 conv_foreign(h) == 12 && conv_now(h, tag) == 3);
	T_ASSERT("foreign: a later turn that left them out sets it anew",
		 conv_turn_f(h, "b", NOW + 30, 8, 4000, 2900, 20, &ct) ==
				 ORGW_OK &&
			 conv_foreign(h) == 20 &&
			 conv_route(h, NOW + 40, &r, &cv) == ORGW_OK &&
			 cv.foreign_items == 20);
}

/* A fresh state, candidates a and b, the lock on a, and *k the team key
 * "team" without limits. */
static void
team_state(struct teamkey *k)
{
	static const char *const ab[] = {"a", "b"};

	store_mem_reset();
	put_cands(ab, 2);
	put_lock("a", NOW);
	memset(k, 0, sizeof(*k));
	snprintf(k->name, sizeof(k->name), "team");
}

static void
test_admit(void)
{
	static const char *const ab[] = {"a", "b"};
	static const struct ledger_cell none;
	struct teamkey k;
	struct ledger_cell day, month;
	int64_t now_ms = (int64_t)NOW * 1000 + 1000, retry = 0, writes;
	char *v = NULL;

	team_state(&k);
	k.rpm = 2;
	T_ASSERT("admit: rpm 2 admits two in a minute",
		 admit_one(&k, now_ms, NULL, &none, &none, NULL) == TK_OK &&
			 admit_one(&k, now_ms + 1, NULL, &none, &none, NULL) ==
				 TK_OK);
	writes = store_mem_writes();
	T_ASSERT("admit: ...refuses the third with Retry-After to when "
		 "their slot leaves the sliding window, writing nothing",
		 admit_one(&k, now_ms + 2, NULL, &none, &none, &retry) ==
				 TK_RPM &&
			 retry == 64 && store_mem_writes() == writes);
	T_ASSERT("admit: ...still refused a minute on",
		 admit_one(&k, now_ms + 60000, NULL, &none, &none, NULL) ==
			 TK_RPM);
	T_ASSERT("admit: ...and admitted once the slot left the window",
		 admit_one(&k, now_ms + 64000, NULL, &none, &none, NULL) ==
			 TK_OK);

	store_mem_reset();
	put_cands(ab, 2);
	put_lock("a", NOW);
	k.rpm = 0;
	k.concurrent = 2;
	T_ASSERT("admit: concurrency 2 takes two leases",
		 admit_one(&k, now_ms, "a1", &none, &none, NULL) == TK_OK &&
			 admit_one(&k, now_ms, "a2", &none, &none, NULL) ==
				 TK_OK);
	T_ASSERT("admit: ...refuses a third",
		 admit_one(&k, now_ms, "a3", &none, &none, &retry) ==
				 TK_CONCURRENT &&
			 retry >= 1 && retry <= 60);
	T_ASSERT("admit: a finish gives its lease back: the third goes in",
		 finish_key("team", "a1", false, 0) == ORGW_OK &&
			 admit_one(&k, now_ms, "a3", &none, &none, NULL) ==
				 TK_OK);
	T_ASSERT("admit: a lease not given back ends after its time",
		 admit_one(&k, now_ms + 600001, "a4", &none, &none, NULL) ==
			 TK_OK);

	store_mem_reset();
	put_cands(ab, 2);
	put_lock("a", NOW);
	k.concurrent = 0;
	k.budget_day_usd = 1.0;
	memset(&day, 0, sizeof(day));
	memset(&month, 0, sizeof(month));
	day.v[LX_KEY_SPEND] = month.v[LX_KEY_SPEND] = 1.2;
	T_ASSERT("admit: the keys store's figure over the budget refuses",
		 admit_one(&k, now_ms, NULL, &day, &month, NULL) == TK_BUDGET);
	day.v[LX_KEY_SPEND] = month.v[LX_KEY_SPEND] = 0.5;
	T_ASSERT("admit: a budget half spent admits",
		 admit_one(&k, now_ms, NULL, &day, &month, NULL) == TK_OK);
	T_ASSERT("admit: requests that ended are counted in the mirror",
		 finish_key("team", NULL, true, 0.3) == ORGW_OK &&
			 finish_key("team", NULL, true, 0.3) == ORGW_OK &&
			 (v = get(STATE_RATE_PREFIX "team")) != NULL &&
			 strstr(v, "\"spent_day\":0.6") != NULL);
	free(v);
	T_ASSERT("admit: ...0.6 mirrored, 0.5 read: still admitted",
		 admit_one(&k, now_ms, NULL, &day, &month, NULL) == TK_OK);
	T_ASSERT("admit: ...1.1 mirrored refuses before the keys store has "
		 "it",
		 finish_key("team", NULL, true, 0.5) == ORGW_OK &&
			 admit_one(&k, now_ms, NULL, &day, &month, NULL) ==
				 TK_BUDGET);
	day.v[LX_KEY_SPEND] = month.v[LX_KEY_SPEND] = 0;
	T_ASSERT("admit: the mirror of another day does not count",
		 admit_one(&k, now_ms + 86400000, NULL, &day, &month, NULL) ==
			 TK_OK);
	writes = store_mem_writes();
	T_ASSERT("admit: a key with only a budget writes its admission",
		 admit_one(&k, now_ms + 86400000, NULL, &day, &month, NULL) ==
				 TK_OK &&
			 store_mem_writes() == writes + 1);
	test_admit_holds(&k, now_ms + 2 * 86400000);
}

/*
 * A team key admitted outside a route (count_tokens) and its hold's
 * estimate (state_admit.c): an rpm key counted and refused as in the
 * route, a key without limits written nothing, and the most a request
 * can cost at the stored candidates' dearest prices, else at the price
 * ceiling.
 */
static void
test_admit_plain(void)
{
	static const char *const ab[] = {"a", "b"};
	static const struct ledger_cell none;
	struct state_admit ad;
	struct teamkey k;
	const char *basis = NULL;
	double usd = -1;
	int64_t writes;
	char *v = NULL;

	store_mem_reset();
	memset(&k, 0, sizeof(k));
	snprintf(k.name, sizeof(k.name), "team");
	memset(&ad, 0, sizeof(ad));
	ad.key = &k;
	ad.lease = ad.hold = "p1";
	ad.now_ms = (int64_t)NOW * 1000;
	ad.day = ad.month = &none;
	writes = store_mem_writes();
	T_ASSERT("plain: a key without limits is admitted, nothing written, "
		 "no lease or hold",
		 state_admit_plain(&conf, &ad) == ORGW_OK &&
			 ad.verdict == TK_OK && ad.lease == NULL &&
			 ad.hold == NULL && store_mem_writes() == writes);
	k.rpm = 1;
	T_ASSERT("plain: rpm 1 admits one, counted in its rate record",
		 state_admit_plain(&conf, &ad) == ORGW_OK &&
			 ad.verdict == TK_OK &&
			 (v = get(STATE_RATE_PREFIX "team")) != NULL);
	free(v);
	writes = store_mem_writes();
	ad.now_ms += 1000;
	T_ASSERT("plain: ...and refuses the next, writing nothing",
		 state_admit_plain(&conf, &ad) == ORGW_OK &&
			 ad.verdict == TK_RPM && ad.retry_after_s > 0 &&
			 store_mem_writes() == writes);

	T_ASSERT("estimate: without candidates, at the price ceiling",
		 state_estimate(&conf, M, 1000, 100, &usd, &basis) ==
				 ORGW_OK &&
			 basis != NULL &&
			 strcmp(basis, LEDGER_BASIS_CEILING) == 0 &&
			 usd > 0 &&
			 usd == ledger_ceiling_cost(
					conf.price_ceiling_usd_per_mtok / 1e6,
					1000, 100));
	put_cands(ab, 2);
	/* b, the dearer: 1000 prompt tokens at 2e-6, 100 out at 4e-6. */
	T_ASSERT("estimate: ...with them, at the dearest one's prices",
		 state_estimate(&conf, M, 1000, 100, &usd, &basis) ==
				 ORGW_OK &&
			 strcmp(basis, LEDGER_BASIS_MODEL_MAX) == 0 &&
			 usd > 0.0024 - 1e-12 && usd < 0.0024 + 1e-12);
}

/*
 * orgw-score key release (state_rate_release, state_ops.c): every lease
 * of a key given back at once and its rpm window kept; a key without a
 * record releases none, and a damaged record goes.
 */
static void
test_rate_release(void)
{
	static const struct ledger_cell none;
	struct teamkey k;
	int64_t now_ms = (int64_t)NOW * 1000 + 1000;
	size_t n = 9;
	char *v = NULL;

	team_state(&k);
	k.rpm = 3;
	k.concurrent = 2;
	T_ASSERT("release: a key without a record releases none",
		 state_rate_release(&conf, "team", &n) == ORGW_OK && n == 0);
	T_ASSERT("release: two leases taken, a third refused",
		 admit_one(&k, now_ms, "c1", &none, &none, NULL) == TK_OK &&
			 admit_one(&k, now_ms, "c2", &none, &none, NULL) ==
				 TK_OK &&
			 admit_one(&k, now_ms, "c3", &none, &none, NULL) ==
				 TK_CONCURRENT);
	T_ASSERT("release: gives both back",
		 state_rate_release(&conf, "team", &n) == ORGW_OK && n == 2);
	T_ASSERT("release: ...so the third goes in",
		 admit_one(&k, now_ms, "c3", &none, &none, NULL) == TK_OK);
	T_ASSERT("release: ...and the rpm window stays: a fourth is over "
		 "rpm 3",
		 admit_one(&k, now_ms, "c4", &none, &none, NULL) == TK_RPM);
	put(STATE_RATE_PREFIX "team", "{not json");
	T_ASSERT("release: a damaged record is deleted, none released",
		 state_rate_release(&conf, "team", &n) == ORGW_OK && n == 0 &&
			 (v = get(STATE_RATE_PREFIX "team")) == NULL);
	free(v);
}

/* A state that cannot record refuses the keys with limits or a budget
 * (TK_UNAVAILABLE, no lease), and still routes the operator's key. */
static void
test_admit_unavailable(void)
{
	static const struct ledger_cell none;
	struct state_admit ad;
	struct state_route r;
	struct teamkey k;
	int64_t now_ms = (int64_t)NOW * 1000 + 1000;
	int i;

	for (i = 0; i < 3; i++) {
		team_state(&k);
		if (i == 0)
			k.rpm = 2;
		else if (i == 1)
			k.concurrent = 1;
		else
			k.budget_day_usd = 0.01;
		memset(&ad, 0, sizeof(ad));
		ad.key = &k;
		ad.lease = "a1";
		ad.now_ms = now_ms;
		ad.lease_ms = 600000;
		ad.day = &none;
		ad.month = &none;
		store_mem_refuse(true);
		T_ASSERT(i == 0   ? "unavailable: an rpm key is refused" :
			 i == 1 ? "unavailable: a concurrency key is refused, "
				  "no lease" :
				  "unavailable: a budget key is refused",
			 state_route(&conf, M, false, NOW, &r, &ad) !=
					 ORGW_OK &&
				 ad.verdict == TK_UNAVAILABLE &&
				 ad.lease == NULL && ad.retry_after_s > 0);
		T_ASSERT("unavailable: ...and the operator's key is routed",
			 state_route(&conf, M, false, NOW, &r, NULL) !=
					 ORGW_OK &&
				 r.kind == ROUTE_UNPINNED);
		store_mem_refuse(false);
	}
}

int
main(void)
{
	if (conf_init(&conf) != ORGW_OK)
		return 1;
	conf.state_backend = CONF_BACKEND_MEMORY;
	test_route_table();
	test_relock_events();
	test_breaker();
	test_breaker_cooling();
	test_finish();
	test_other_writer();
	test_unseen();
	test_operator();
	test_admit();
	test_admit_unavailable();
	test_admit_plain();
	test_rate_release();
	test_conv();
	test_conv_off();
	test_conv_breaks();
	test_conv_foreign();
	store_mem_reset();
	conf_free(&conf);
	return T_REPORT();
}
