/*
 * test_route.c - unit tests for route.c, docs/design.md section 4 steps 3
 * to 7: every branch of route_decide(), route_next() skipping and cooling,
 * and route_lock_from().  Cooling is a set of tags here.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "t.h"
#include "route.h"
#include "score.h"

/* The cooling set: a NULL-terminated list of tags. */
static bool
cooling(void *arg, const char *tag)
{
	const char *const *set = arg;

	for (; set != NULL && *set != NULL; set++)
		if (strcmp(*set, tag) == 0)
			return true;
	return false;
}

static struct rec_cand V[3];
static struct rec_cands CANDS;
static struct rec_lock LOCK;

static void
setup(void)
{
	static const char *const tags[] = {"deepseek", "deepinfra/fp8",
	                                   "novita"};
	size_t i;

	memset(V, 0, sizeof(V));
	for (i = 0; i < 3; i++) {
		snprintf(V[i].tag, sizeof(V[i].tag), "%s", tags[i]);
		snprintf(V[i].provider_name, sizeof(V[i].provider_name),
		         "Name%zu", i);
		V[i].score = 30.0 - (double)i;
		V[i].max_completion_tokens = 1000 * (int64_t)(i + 1);
	}
	memset(&CANDS, 0, sizeof(CANDS));
	CANDS.scored_at = 1000;
	CANDS.attempted_at = 1000;
	CANDS.n = 3;
	CANDS.v = V;
	memset(&LOCK, 0, sizeof(LOCK));
	snprintf(LOCK.tag, sizeof(LOCK.tag), "deepinfra/fp8");
	LOCK.locked_at = 5000;
	LOCK.last_used = 9000;
}

/* A view at now=10000, idle 3600, retry 300, nothing cooling. */
static struct route_view
view(const char *const *cool)
{
	struct route_view v;

	memset(&v, 0, sizeof(v));
	v.lock = &LOCK;
	v.cands = &CANDS;
	v.cooling = cooling;
	v.cooling_arg = (void *)(uintptr_t)cool;
	v.now = 10000;
	v.lock_idle_seconds = 3600;
	v.score_retry_seconds = 300;
	return v;
}

static void
test_names(void)
{
	T_ASSERT("name client", strcmp(route_name(ROUTE_CLIENT), "client") == 0);
	T_ASSERT("name locked", strcmp(route_name(ROUTE_LOCKED), "locked") == 0);
	T_ASSERT("name relocked",
	         strcmp(route_name(ROUTE_RELOCKED), "relocked") == 0);
	T_ASSERT("name scored", strcmp(route_name(ROUTE_SCORED), "scored") == 0);
	T_ASSERT("name unpinned",
	         strcmp(route_name(ROUTE_UNPINNED), "unpinned") == 0);
}

static void
test_decide(void)
{
	static const char *const cool_lock[] = {"deepinfra/fp8", NULL};
	static const char *const cool_first_two[] = {"deepinfra/fp8",
	                                             "deepseek", NULL};
	static const char *const cool_all[] = {"deepseek", "deepinfra/fp8",
	                                       "novita", NULL};
	static const char *const cool_other[] = {"novita", NULL};
	const struct rec_cand *pick = &V[0];
	struct route_view v;
	struct rec_cands none;

	setup();
	v = view(NULL);
	v.client_provider = true;
	T_ASSERT("client provider: ROUTE_CLIENT, no pick",
	         route_decide(&v, &pick) == ROUTE_CLIENT && pick == NULL);
	v = view(cool_all);
	v.client_provider = true;
	v.lock = NULL;
	v.cands = NULL;
	T_ASSERT("client provider wins even with nothing usable",
	         route_decide(&v, &pick) == ROUTE_CLIENT);

	v = view(NULL);
	pick = &V[0];
	T_ASSERT("live lock: ROUTE_LOCKED, no pick",
	         route_decide(&v, &pick) == ROUTE_LOCKED && pick == NULL);
	v = view(cool_other);
	T_ASSERT("live lock with another provider cooling: LOCKED",
	         route_decide(&v, &pick) == ROUTE_LOCKED);
	v = view(NULL);
	v.cooling = NULL;
	T_ASSERT("no cooling callback: LOCKED",
	         route_decide(&v, &pick) == ROUTE_LOCKED);
	LOCK.last_used = v.now - 3599;
	T_ASSERT("idle one second short of the limit: LOCKED",
	         route_decide(&v, &pick) == ROUTE_LOCKED);
	LOCK.last_used = v.now - 3600;
	v = view(NULL);
	T_ASSERT("idle exactly the limit: RELOCKED to the best",
	         route_decide(&v, &pick) == ROUTE_RELOCKED && pick == &V[0]);
	LOCK.last_used = 0;
	T_ASSERT("idle long expired: RELOCKED to the best",
	         route_decide(&v, &pick) == ROUTE_RELOCKED && pick == &V[0]);
	LOCK.last_used = 9000;

	v = view(cool_lock);
	T_ASSERT("lock cooling: RELOCKED to the best not cooling",
	         route_decide(&v, &pick) == ROUTE_RELOCKED && pick == &V[0]);
	v = view(cool_first_two);
	T_ASSERT("lock and best cooling: RELOCKED to the third",
	         route_decide(&v, &pick) == ROUTE_RELOCKED && pick == &V[2]);

	v = view(NULL);
	LOCK.tag[0] = '\0';
	T_ASSERT("lock with an empty tag is no lock: RELOCKED",
	         route_decide(&v, &pick) == ROUTE_RELOCKED && pick == &V[0]);
	setup();
	v = view(NULL);
	v.lock = NULL;
	T_ASSERT("no lock, candidates: RELOCKED to the best",
	         route_decide(&v, &pick) == ROUTE_RELOCKED && pick == &V[0]);

	/* never scored */
	v = view(NULL);
	v.lock = NULL;
	v.cands = NULL;
	pick = &V[0];
	T_ASSERT("no lock, never scored: SCORED, no pick",
	         route_decide(&v, &pick) == ROUTE_SCORED && pick == NULL);
	v.lock = &LOCK;
	v.now = LOCK.last_used + 3600;
	T_ASSERT("idle lock, never scored: SCORED",
	         route_decide(&v, &pick) == ROUTE_SCORED);

	/* scored with no candidates */
	memset(&none, 0, sizeof(none));
	none.scored_at = 1000;
	none.attempted_at = 1000;
	v = view(NULL);
	v.lock = NULL;
	v.cands = &none;
	T_ASSERT("scored, no candidates: UNPINNED",
	         route_decide(&v, &pick) == ROUTE_UNPINNED && pick == NULL);

	/* failed inline scoring: scored_at 0, attempted_at set */
	none.scored_at = 0;
	none.attempted_at = v.now - 299;
	T_ASSERT("failed attempt 299 s ago (retry 300): UNPINNED",
	         route_decide(&v, &pick) == ROUTE_UNPINNED);
	none.attempted_at = v.now - 300;
	T_ASSERT("failed attempt exactly 300 s ago: SCORED",
	         route_decide(&v, &pick) == ROUTE_SCORED);
	none.attempted_at = 0;
	T_ASSERT("never attempted (zeroed record): SCORED",
	         route_decide(&v, &pick) == ROUTE_SCORED);

	/* all cooling */
	v = view(cool_all);
	T_ASSERT("all cooling (lock too): UNPINNED",
	         route_decide(&v, &pick) == ROUTE_UNPINNED && pick == NULL);
	v.lock = NULL;
	T_ASSERT("all cooling, no lock: UNPINNED",
	         route_decide(&v, &pick) == ROUTE_UNPINNED);
	/* all cooling but the last attempt failed long ago and nothing was
	 * ever scored successfully: try scoring again */
	CANDS.scored_at = 0;
	CANDS.attempted_at = 0;
	T_ASSERT("all cooling, never scored ok, retry due: SCORED",
	         route_decide(&v, &pick) == ROUTE_SCORED);
	setup();
}

static void
test_next_find(void)
{
	static const char *const cool_best[] = {"deepseek", NULL};
	static const char *const cool_all[] = {"deepseek", "deepinfra/fp8",
	                                       "novita", NULL};
	struct rec_cands empty;

	setup();
	T_ASSERT("next: best first",
	         route_next(&CANDS, NULL, NULL, NULL) == &V[0]);
	T_ASSERT("next: skip_tag skips the best",
	         route_next(&CANDS, NULL, NULL, "deepseek") == &V[1]);
	T_ASSERT("next: skip_tag not present changes nothing",
	         route_next(&CANDS, NULL, NULL, "other") == &V[0]);
	T_ASSERT("next: cooling skips the best",
	         route_next(&CANDS, cooling, (void *)(uintptr_t)cool_best,
	                    NULL) == &V[1]);
	T_ASSERT("next: cooling best and skip second gives the third",
	         route_next(&CANDS, cooling, (void *)(uintptr_t)cool_best,
	                    "deepinfra/fp8") == &V[2]);
	T_ASSERT("next: all cooling gives NULL",
	         route_next(&CANDS, cooling, (void *)(uintptr_t)cool_all,
	                    NULL) == NULL);
	T_ASSERT("next: NULL candidates gives NULL",
	         route_next(NULL, NULL, NULL, NULL) == NULL);
	memset(&empty, 0, sizeof(empty));
	T_ASSERT("next: empty candidates gives NULL",
	         route_next(&empty, NULL, NULL, NULL) == NULL);
	T_ASSERT("next: skip_tag is an exact match, not a prefix",
	         route_next(&CANDS, NULL, NULL, "deep") == &V[0]);
}

static void
test_lock_from(void)
{
	struct rec_lock l;

	setup();
	memset(&l, 0x5A, sizeof(l));
	route_lock_from(&l, &V[1], 4242);
	T_ASSERT("lock_from: tag", strcmp(l.tag, "deepinfra/fp8") == 0);
	T_ASSERT("lock_from: provider name",
	         strcmp(l.provider_name, "Name1") == 0);
	T_ASSERT("lock_from: locked_at and last_used are now",
	         l.locked_at == 4242 && l.last_used == 4242);
	T_ASSERT("lock_from: max_completion_tokens copied",
	         l.max_completion_tokens == 2000);
	T_ASSERT("lock_from: tag buffer NUL-padded (no stale bytes)",
	         l.tag[sizeof(l.tag) - 1] == '\0' &&
	             l.provider_name[sizeof(l.provider_name) - 1] == '\0');
}

/* A candidate with flat prices (USD/token), 100 tok/s, no caching. */
static void
cand(struct rec_cand *c, const char *tag, double prompt, double completion)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->tag, sizeof(c->tag), "%s", tag);
	c->terms.base_kind[SCORE_PROMPT] = SCORE_PRICE_OK;
	c->terms.base[SCORE_PROMPT] = prompt;
	c->terms.base_kind[SCORE_COMPLETION] = SCORE_PRICE_OK;
	c->terms.base[SCORE_COMPLETION] = completion;
	c->terms.throughput = 100;
	c->terms.has_throughput = true;
	c->terms.implicit_flag = 0;
}

/* Adds the window [start, end) at prompt/completion prices to c. */
static void
window(struct rec_cand *c, int start, int end, double prompt,
       double completion)
{
	struct score_window *w = &c->terms.win[c->terms.n_win++];

	w->utc_start = start;
	w->utc_end = end;
	w->kind[SCORE_PROMPT] = SCORE_PRICE_OK;
	w->price[SCORE_PROMPT] = prompt;
	w->kind[SCORE_COMPLETION] = SCORE_PRICE_OK;
	w->price[SCORE_COMPLETION] = completion;
}

static const char *
order(const struct rec_cands *c, char *buf, size_t n)
{
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < c->n && o < n; i++)
		o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? "," : "",
		                      c->v[i].tag);
	return buf;
}

/*
 * docs/design.md section 6: when a lock moves, the stored candidates are
 * re-ranked at the current time.  steady costs 1.6e-7 (score 6.25e8), mid
 * 3.2e-7 (3.125e8), night 6.4e-7 (1.5625e8) but 2.4e-7 (4.17e8) from 16:30
 * to 00:30.  Stored at 12:00: steady, mid, night.  At 20:00: steady, night,
 * mid, so a trip of steady moves the lock to night, not mid.
 */
static void
test_rerank(void)
{
	static const struct score_params p = {0.9, 1.0, 95.0, 0, NULL, 0, NULL};
	static const char *const cool_steady[] = {"steady", NULL};
	struct rec_cand v[4];
	struct rec_cands c;
	const struct rec_cand *next;
	char buf[128];

	cand(&v[0], "steady", 1e-7, 2e-7);
	cand(&v[1], "mid", 2e-7, 4e-7);
	cand(&v[2], "night", 4e-7, 8e-7);
	window(&v[2], 1630, 30, 1.5e-7, 3e-7);
	memset(&c, 0, sizeof(c));
	c.v = v;
	c.n = 3;
	T_ASSERT("rerank at 12:00 keeps the peak order",
	         route_rerank(&c, 1200, &p) == ORGW_OK &&
	             strcmp(order(&c, buf, sizeof(buf)), "steady,mid,night") ==
	                 0);
	T_ASSERT("rerank at 12:00: night scored at its peak price",
	         T_NEAR(c.v[2].score, 100 / 6.4e-7) &&
	             T_NEAR(c.v[2].cost, 6.4e-7));
	next = route_next(&c, cooling, (void *)(uintptr_t)cool_steady, NULL);
	T_ASSERT("at 12:00 a trip of steady moves the lock to mid",
	         next != NULL && strcmp(next->tag, "mid") == 0);

	T_ASSERT("rerank at 20:00: night's off-peak price counts now",
	         route_rerank(&c, 2000, &p) == ORGW_OK &&
	             strcmp(order(&c, buf, sizeof(buf)), "steady,night,mid") ==
	                 0);
	T_ASSERT("rerank at 20:00: night's terms are the off-peak ones",
	         T_NEAR(c.v[1].score, 100 / 2.4e-7) &&
	             T_NEAR(c.v[1].prompt, 1.5e-7) &&
	             T_NEAR(c.v[1].completion, 3e-7));
	next = route_next(&c, cooling, (void *)(uintptr_t)cool_steady, NULL);
	T_ASSERT("at 20:00 a trip of steady moves the lock to night",
	         next != NULL && strcmp(next->tag, "night") == 0);
	next = route_next(&c, cooling, NULL, "steady");
	T_ASSERT("route_next skipping steady at 20:00: night",
	         next != NULL && strcmp(next->tag, "night") == 0);
	T_ASSERT("00:30 ends the window: back to the peak order",
	         route_rerank(&c, 30, &p) == ORGW_OK &&
	             strcmp(order(&c, buf, sizeof(buf)), "steady,mid,night") ==
	                 0);

	/* The best at night only: an idle lock moving at 20:00 takes it. */
	window(&v[2], 1630, 30, 0.5e-7, 1e-7);
	T_ASSERT("rerank at 20:00: the cheaper night window makes night best",
	         route_rerank(&c, 2000, &p) == ORGW_OK &&
	             strcmp(c.v[0].tag, "night") == 0);

	/* A price unreadable now drops the candidate; ties keep order. */
	cand(&v[0], "a", 1e-7, 2e-7);
	cand(&v[1], "b", 1e-7, 2e-7);
	cand(&v[2], "c", 1e-7, 2e-7);
	cand(&v[3], "d", 1e-7, 2e-7);
	v[3].terms.win[0].utc_start = 1800;
	v[3].terms.win[0].utc_end = 1900;
	v[3].terms.win[0].kind[SCORE_PROMPT] = SCORE_PRICE_BAD;
	v[3].terms.n_win = 1;
	snprintf(v[2].tag, sizeof(v[2].tag), "a");
	c.n = 4;
	T_ASSERT("equal candidates keep their stored order (tag, position)",
	         route_rerank(&c, 1200, &p) == ORGW_OK &&
	             strcmp(order(&c, buf, sizeof(buf)), "a,a,b,d") == 0 &&
	             c.v[0].terms.base[SCORE_PROMPT] == 1e-7);
	T_ASSERT("a candidate without a valid price now is dropped",
	         route_rerank(&c, 1830, &p) == ORGW_OK && c.n == 3 &&
	             strcmp(order(&c, buf, sizeof(buf)), "a,a,b") == 0);
	c.n = 0;
	T_ASSERT("rerank of no candidates is ok",
	         route_rerank(&c, 1200, &p) == ORGW_OK &&
	             route_rerank(NULL, 1200, &p) == ORGW_OK);
}

/*
 * LOCK_MARGIN: route_margin_keeps() row by row.  held is the
 * idle lock's provider, best the best candidate now.
 */
static void
test_margin_rows(void)
{
	static const struct {
		double held, best, margin;
		bool held_tp, best_tp, held_free, best_free;
		bool keeps;
		const char *what;
	} rows[] = {
		{100, 105, 0.10, true, true, false, false, true,
		 "5 % better: the lock stays"},
		{100, 110, 0.10, true, true, false, false, true,
		 "exactly 10 % better: the lock stays"},
		{100, 110.5, 0.10, true, true, false, false, false,
		 "10.5 % better: the lock moves"},
		{100, 200, 0.10, true, true, false, false, false,
		 "twice as good: the lock moves"},
		{100, 101, 0, true, true, false, false, false,
		 "margin 0: any better candidate takes the lock"},
		{100, 101, -1, true, true, false, false, false,
		 "negative margin counts as none"},
		{0, 1, 0.10, true, true, false, false, false,
		 "held scored 0: a positive best moves it"},
		{0, 5, 0.10, false, true, false, false, false,
		 "best has a throughput, held none: other class, moves"},
		{100, 50, 0.10, true, true, false, true, false,
		 "best is free, held is not: other class, moves"},
		{100, 1000, 100, true, true, false, false, true,
		 "a huge margin keeps the lock"},
	};
	struct rec_cand held, best;
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		memset(&held, 0, sizeof(held));
		memset(&best, 0, sizeof(best));
		snprintf(held.tag, sizeof(held.tag), "held");
		snprintf(best.tag, sizeof(best.tag), "best");
		held.score = rows[i].held;
		best.score = rows[i].best;
		held.has_throughput = rows[i].held_tp;
		best.has_throughput = rows[i].best_tp;
		held.free = rows[i].held_free;
		best.free = rows[i].best_free;
		T_ASSERT(rows[i].what,
			 route_margin_keeps(&held, &best, rows[i].margin) ==
				 rows[i].keeps);
	}
	T_ASSERT("margin: lock provider no candidate (NULL) moves",
		 !route_margin_keeps(NULL, &best, 0.10));
	T_ASSERT("margin: the same provider keeps",
		 route_margin_keeps(&best, &best, 0.10));
}

/*
 * route_decide with LOCK_MARGIN: deepseek 30, deepinfra/fp8 29 (the
 * lock), novita 28.  An idle lock stays on deepinfra/fp8 with a 10 %
 * margin (30 < 29 * 1.1), moves with none, and a cooling lock moves at
 * once whatever the margin.
 */
static void
test_decide_margin(void)
{
	static const char *const cool_lock[] = {"deepinfra/fp8", NULL};
	static const char *const cool_best[] = {"deepseek", NULL};
	const struct rec_cand *pick;
	struct route_view v;

	setup();
	LOCK.last_used = 10000 - 3600;
	v = view(NULL);
	v.lock_margin = 0.10;
	T_ASSERT("idle lock, best within the margin: renewed (locked)",
		 route_decide(&v, &pick) == ROUTE_LOCKED && pick == NULL);
	v.lock_margin = 0;
	T_ASSERT("idle lock, no margin: the best takes it",
		 route_decide(&v, &pick) == ROUTE_RELOCKED &&
			 strcmp(pick->tag, "deepseek") == 0);
	V[0].score = 29 * 1.1 + 0.01;
	v.lock_margin = 0.10;
	T_ASSERT("idle lock, best beyond the margin: moves",
		 route_decide(&v, &pick) == ROUTE_RELOCKED &&
			 strcmp(pick->tag, "deepseek") == 0);
	V[0].score = 30;
	v = view(cool_lock);
	v.lock_margin = 0.10;
	T_ASSERT("cooling lock moves at once despite the margin",
		 route_decide(&v, &pick) == ROUTE_RELOCKED &&
			 strcmp(pick->tag, "deepseek") == 0);
	LOCK.last_used = 10000 - 3600;
	v = view(cool_best);
	v.lock_margin = 0.10;
	T_ASSERT("idle lock, best cooling: the lock is the best, kept",
		 route_decide(&v, &pick) == ROUTE_RELOCKED &&
			 strcmp(pick->tag, "deepinfra/fp8") == 0);
	snprintf(LOCK.tag, sizeof(LOCK.tag), "gone");
	v = view(NULL);
	v.lock_margin = 0.10;
	T_ASSERT("idle lock whose provider is no candidate: moves",
		 route_decide(&v, &pick) == ROUTE_RELOCKED &&
			 strcmp(pick->tag, "deepseek") == 0);
	setup();
	v = view(NULL);
	v.lock_margin = 0.10;
	T_ASSERT("live lock: locked, margin or not",
		 route_decide(&v, &pick) == ROUTE_LOCKED);
}

/*
 * The re-rank with measured hit rates: cheap (prompt 1e-7, cache 1e-8)
 * and dear (prompt 1.2e-7, cache 1.2e-8), same completion 1e-7.  With
 * the assumed 0.9 cheap ranks first; once cheap is measured at 0.2 and
 * dear at 0.9 on enough tokens, dear ranks first; below the evidence
 * threshold the prior stays.
 */
static void
test_rerank_hits(void)
{
	struct score_hit hits[2];
	struct score_params p = {0.9, 1.0, 95.0, 1000, NULL, 0, NULL};
	struct rec_cand v[2];
	struct rec_cands c;
	char buf[64];
	int i;

	for (i = 0; i < 2; i++) {
		cand(&v[i], i ? "dear" : "cheap", i ? 1.2e-7 : 1e-7, 1e-7);
		v[i].terms.base_kind[SCORE_CACHE_READ] = SCORE_PRICE_OK;
		v[i].terms.base[SCORE_CACHE_READ] = i ? 1.2e-8 : 1e-8;
	}
	memset(&c, 0, sizeof(c));
	c.v = v;
	c.n = 2;
	memset(hits, 0, sizeof(hits));
	snprintf(hits[0].tag, sizeof(hits[0].tag), "cheap");
	hits[0].rate = 0.2;
	hits[0].weight = hits[0].tokens = 999;
	snprintf(hits[1].tag, sizeof(hits[1].tag), "dear");
	hits[1].rate = 0.9;
	hits[1].weight = hits[1].tokens = 5000;
	T_ASSERT("no hits: assumed rate, cheap first",
		 route_rerank(&c, 1200, &p) == ORGW_OK &&
			 strcmp(order(&c, buf, sizeof(buf)), "cheap,dear") ==
				 0 &&
			 !c.v[0].hit_measured && T_NEAR(c.v[0].hit_rate, 0.9));
	p.hits = hits;
	p.n_hits = 2;
	T_ASSERT("cheap below the evidence: still assumed, cheap first",
		 route_rerank(&c, 1200, &p) == ORGW_OK &&
			 strcmp(order(&c, buf, sizeof(buf)), "cheap,dear") ==
				 0 &&
			 !c.v[0].hit_measured && c.v[0].hit_tokens == 999 &&
			 c.v[1].hit_measured && c.v[1].hit_tokens == 5000);
	hits[0].tokens = 1000;
	T_ASSERT("cheap measured at 0.2: dear ranks first",
		 route_rerank(&c, 1200, &p) == ORGW_OK &&
			 strcmp(order(&c, buf, sizeof(buf)), "dear,cheap") ==
				 0 &&
			 c.v[1].hit_measured && T_NEAR(c.v[1].hit_rate, 0.2) &&
			 T_NEAR(c.v[1].effective_input,
				0.2 * 1e-8 + 0.8 * 1e-7));
}

int
main(void)
{
	test_names();
	test_decide();
	test_next_find();
	test_lock_from();
	test_rerank();
	test_margin_rows();
	test_decide_margin();
	test_rerank_hits();
	return T_REPORT();
}
