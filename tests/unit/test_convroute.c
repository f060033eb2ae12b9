/*
 * test_convroute.c - unit tests for convroute.c: every rule of
 * conversation affinity and of spreading new conversations under
 * pressure is one row (a lock, a conversation record, cooldowns and
 * pressure in; the route, the provider and the flags out), then
 * convroute_next().
 *
 * Candidates, best first: deepseek, deepinfra/fp8, novita.  The lock is
 * on deepinfra/fp8 (the second: a lock that was best when taken).
 */
#include <stdio.h>
#include <string.h>

#include "t.h"
#include "convroute.h"

#define NROWS(t) (sizeof(t) / sizeof((t)[0]))
#define NOW 10000
#define IDLE 600

static struct rec_cand V[3];
static struct rec_cands CANDS;

/* A set of tags: a NULL-terminated list. */
static bool
in_set(void *arg, const char *tag)
{
	const char *const *set = arg;

	for (; set != NULL && *set != NULL; set++)
		if (strcmp(*set, tag) == 0)
			return true;
	return false;
}

static void
setup(void)
{
	static const char *const tags[] = {"deepseek", "deepinfra/fp8",
					   "novita"};
	size_t i;

	memset(V, 0, sizeof(V));
	for (i = 0; i < 3; i++) {
		snprintf(V[i].tag, sizeof(V[i].tag), "%s", tags[i]);
		V[i].score = 30.0 - (double)i;
	}
	memset(&CANDS, 0, sizeof(CANDS));
	CANDS.scored_at = CANDS.attempted_at = 1000;
	CANDS.n = 3;
	CANDS.v = V;
}

#define SET(...) ((const char *const[]){__VA_ARGS__, NULL})

struct row {
	const char *rule;
	/* in */
	const char *lock;		/* NULL: no lock */
	int64_t lock_used;		/* the lock's last_used */
	const char *conv;		/* NULL: no record */
	int64_t conv_turn;		/* its last turn */
	const char *const *cooling;
	const char *const *pressure;
	bool client, unread, no_cands;
	/* out */
	enum route_kind kind;
	const char *name;		/* convroute_name() */
	const char *tag;		/* the provider pinned (the lock's
					 * for ROUTE_LOCKED) */
	bool warm, spread, moved, needs;
};

static const struct row rows[] = {
    {"the client's provider object wins over a warm conversation",
     "deepinfra/fp8", NOW, "deepseek", NOW - 10, NULL, NULL, true, false,
     false, ROUTE_CLIENT, "client", NULL, false, false, false, false},
    {"a first turn goes to the lock", "deepinfra/fp8", NOW - 5, NULL, 0,
     NULL, NULL, false, false, false, ROUTE_LOCKED, "locked",
     "deepinfra/fp8", false, false, false, false},
    {"a first turn on a lock under pressure: the best not under it",
     "deepinfra/fp8", NOW - 5, NULL, 0, NULL, SET("deepinfra/fp8"), false,
     false, false, ROUTE_LOCKED, "conversation", "deepseek", false, true,
     false, false},
    {"... skipping the candidates under pressure too", "deepinfra/fp8",
     NOW - 5, NULL, 0, NULL, SET("deepinfra/fp8", "deepseek"), false, false,
     false, ROUTE_LOCKED, "conversation", "novita", false, true, false,
     false},
    {"... and those cooling", "deepinfra/fp8", NOW - 5, NULL, 0,
     SET("deepseek"), SET("deepinfra/fp8"), false, false, false,
     ROUTE_LOCKED, "conversation", "novita", false, true, false, false},
    {"every other candidate cooling or under pressure: the lock after all",
     "deepinfra/fp8", NOW - 5, NULL, 0, SET("novita"),
     SET("deepinfra/fp8", "deepseek"), false, false, false, ROUTE_LOCKED,
     "locked", "deepinfra/fp8", false, false, false, false},
    {"pressure with the candidates unread: read them", "deepinfra/fp8",
     NOW - 5, NULL, 0, NULL, SET("deepinfra/fp8"), false, true, false,
     ROUTE_LOCKED, "locked", "deepinfra/fp8", false, false, false, true},
    {"a warm conversation on the lock: locked, warm", "deepinfra/fp8",
     NOW - 5, "deepinfra/fp8", NOW - 100, NULL, NULL, false, true, false,
     ROUTE_LOCKED, "locked", "deepinfra/fp8", true, false, false, false},
    {"a warm conversation on the lock stays under pressure too",
     "deepinfra/fp8", NOW - 5, "deepinfra/fp8", NOW - 100, NULL,
     SET("deepinfra/fp8"), false, false, false, ROUTE_LOCKED, "locked",
     "deepinfra/fp8", true, false, false, false},
    {"the lock moved since: the conversation keeps its provider",
     "deepinfra/fp8", NOW - 5, "deepseek", NOW - 100, NULL, NULL, false,
     false, false, ROUTE_LOCKED, "conversation", "deepseek", true, false,
     false, false},
    {"... under pressure too (conversations on it stay)", "deepinfra/fp8",
     NOW - 5, "novita", NOW - 100, NULL, SET("novita"), false, false,
     false, ROUTE_LOCKED, "conversation", "novita", true, false, false,
     false},
    {"... with the candidates unread: read them", "deepinfra/fp8", NOW - 5,
     "deepseek", NOW - 100, NULL, NULL, false, true, false, ROUTE_LOCKED,
     "locked", "deepinfra/fp8", false, false, false, true},
    {"idle past CONVERSATION_IDLE_SECONDS: back to the lock, moved",
     "deepinfra/fp8", NOW - 5, "deepseek", NOW - IDLE, NULL, NULL, false,
     false, false, ROUTE_LOCKED, "locked", "deepinfra/fp8", false, false,
     true, false},
    {"one second before that: still warm", "deepinfra/fp8", NOW - 5,
     "deepseek", NOW - IDLE + 1, NULL, NULL, false, false, false,
     ROUTE_LOCKED, "conversation", "deepseek", true, false, false, false},
    {"its provider cools down: it leaves, to the lock", "deepinfra/fp8",
     NOW - 5, "deepseek", NOW - 100, SET("deepseek"), NULL, false, false,
     false, ROUTE_LOCKED, "locked", "deepinfra/fp8", false, false, true,
     false},
    {"its provider cools and the lock is under pressure: spread",
     "deepinfra/fp8", NOW - 5, "deepseek", NOW - 100, SET("deepseek"),
     SET("deepinfra/fp8"), false, false, false, ROUTE_LOCKED,
     "conversation", "novita", false, true, true, false},
    {"its provider is no candidate any more (excluded, gone)",
     "deepinfra/fp8", NOW - 5, "parasail", NOW - 100, NULL, NULL, false,
     false, false, ROUTE_LOCKED, "locked", "deepinfra/fp8", false, false,
     true, false},
    {"an idle lock moves; the warm conversation stays, lock untouched",
     "deepinfra/fp8", NOW - 7200, "deepinfra/fp8", NOW - 100, NULL, NULL,
     false, false, false, ROUTE_RELOCKED, "conversation", "deepinfra/fp8",
     true, false, false, false},
    {"the lock moves onto the conversation's provider: relocked, warm",
     "deepinfra/fp8", NOW - 7200, "deepseek", NOW - 100, NULL, NULL, false,
     false, false, ROUTE_RELOCKED, "relocked", "deepseek", true, false,
     false, false},
    {"a cooling lock moves; a conversation elsewhere stays",
     "deepinfra/fp8", NOW - 5, "novita", NOW - 100, SET("deepinfra/fp8"),
     NULL, false, false, false, ROUTE_RELOCKED, "conversation", "novita",
     true, false, false, false},
    {"no lock, the best under pressure: the next, the lock not taken",
     NULL, 0, NULL, 0, NULL, SET("deepseek"), false, false, false,
     ROUTE_RELOCKED, "conversation", "deepinfra/fp8", false, true, false,
     false},
    {"the model goes unpinned: the conversation leaves", "deepinfra/fp8",
     NOW - 5, "deepseek", NOW - 100,
     SET("deepinfra/fp8", "deepseek", "novita"), NULL, false, false, false,
     ROUTE_UNPINNED, "unpinned", NULL, false, false, true, false},
    {"never scored: scored inline, the conversation may move", NULL, 0,
     "deepseek", NOW - 100, NULL, NULL, false, false, true, ROUTE_SCORED,
     "scored", NULL, false, false, true, false},
    {"an expired conversation back on its own provider: not moved",
     "deepinfra/fp8", NOW - 5, "deepinfra/fp8", NOW - 5000, NULL, NULL,
     false, false, false, ROUTE_LOCKED, "locked", "deepinfra/fp8", false,
     false, false, false},
};

static void
test_rows(void)
{
	char what[200];
	size_t i;

	for (i = 0; i < NROWS(rows); i++) {
		const struct row *r = &rows[i];
		struct rec_lock lock;
		struct convroute_conv cv;
		struct route_view rv;
		struct convroute_view v;
		struct convroute_out o;
		const char *tag;

		setup();
		memset(&lock, 0, sizeof(lock));
		if (r->lock != NULL) {
			snprintf(lock.tag, sizeof(lock.tag), "%s", r->lock);
			lock.locked_at = 100;
			lock.last_used = r->lock_used;
		}
		memset(&cv, 0, sizeof(cv));
		if (r->conv != NULL) {
			snprintf(cv.tag, sizeof(cv.tag), "%s", r->conv);
			cv.last_turn = r->conv_turn;
		}
		memset(&rv, 0, sizeof(rv));
		rv.lock = r->lock != NULL ? &lock : NULL;
		rv.cands = r->unread || r->no_cands ? NULL : &CANDS;
		rv.cooling = in_set;
		rv.cooling_arg = (void *)(uintptr_t)r->cooling;
		rv.now = NOW;
		rv.lock_idle_seconds = 3600;
		rv.score_retry_seconds = 300;
		rv.client_provider = r->client;
		memset(&v, 0, sizeof(v));
		v.rv = &rv;
		v.cands_read = !r->unread;
		v.conv = r->conv != NULL ? &cv : NULL;
		v.idle_seconds = IDLE;
		v.pressure = in_set;
		v.pressure_arg = (void *)(uintptr_t)r->pressure;
		convroute_decide(&v, &o);
		tag = o.tag != NULL		? o.tag :
		      o.kind == ROUTE_LOCKED	? lock.tag :
						  NULL;
		snprintf(what, sizeof(what), "route: %s", r->rule);
		T_ASSERT(what,
			 o.kind == r->kind &&
				 strcmp(convroute_name(&o), r->name) == 0 &&
				 (r->tag == NULL ? tag == NULL :
						   tag != NULL &&
							   strcmp(tag, r->tag) ==
								   0) &&
				 o.warm == r->warm && o.spread == r->spread &&
				 o.moved == r->moved && o.needs_cands == r->needs &&
				 (!o.conversation ||
				  (o.pick != NULL &&
				   strcmp(o.pick->tag, o.tag) == 0)));
	}
}

static void
test_next(void)
{
	const struct rec_cand *c;

	setup();
	c = convroute_next(&CANDS, in_set, NULL, in_set, NULL, NULL);
	T_ASSERT("next: the best when nothing is excluded",
		 c != NULL && strcmp(c->tag, "deepseek") == 0);
	c = convroute_next(&CANDS, in_set, (void *)(uintptr_t)SET("deepseek"),
			   in_set, (void *)(uintptr_t)SET("deepinfra/fp8"),
			   NULL);
	T_ASSERT("next: past cooling and pressure",
		 c != NULL && strcmp(c->tag, "novita") == 0);
	c = convroute_next(&CANDS, NULL, NULL, NULL, NULL, "deepseek");
	T_ASSERT("next: past the skipped tag",
		 c != NULL && strcmp(c->tag, "deepinfra/fp8") == 0);
	c = convroute_next(&CANDS, in_set, (void *)(uintptr_t)SET("novita"),
			   in_set, (void *)(uintptr_t)SET("deepseek"),
			   "deepinfra/fp8");
	T_ASSERT("next: none left", c == NULL);
	T_ASSERT("next: no candidates",
		 convroute_next(NULL, NULL, NULL, NULL, NULL, NULL) == NULL);
}

int
main(void)
{
	test_rows();
	test_next();
	return T_REPORT();
}
