/*
 * test_store.c - the store's generation (store.h) and the route memo it
 * makes safe (state.c), on real GDBM files in a temporary directory.
 *
 * What must hold: every change a reader could decide from raises the
 * generation, counters do not, and a route decided from the state is
 * never reused after another process changed the lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "t.h"
#include "conf.h"
#include "record.h"
#include "state.h"
#include "store.h"

#define M "deepseek/deepseek-v3.2"

static char dir[] = "/tmp/orgw-test-store.XXXXXX";
static char path[256];

static uint64_t
gen_now(void)
{
	uint64_t g = 12345;

	if (store_generation(path, &g) != ORGW_OK)
		return 12345;
	return g;
}

/* One write transaction: put (or quiet put, or delete) key. */
static enum orgw_err
txn(const char *key, const char *val, int how)
{
	struct store *s;
	enum orgw_err err;

	if ((err = store_open(&s, path, true, 1000)) != ORGW_OK)
		return err;
	err = how == 0 ? store_put(s, key, val) :
	      how == 1 ? store_put_quiet(s, key, val) :
			 store_del(s, key);
	if (store_close(s) != ORGW_OK)
		err = ORGW_EIO;
	return err;
}

static void
test_generation(void)
{
	struct store *s;
	uint64_t g0, g1, in_txn = 0;
	char lp[300];

	T_ASSERT("no lock file yet: no generation (a memo cannot match)",
		 store_generation(path, &g0) == ORGW_EIO);
	T_ASSERT("first quiet put creates the store",
		 txn("STATS:m", "{}", 1) == ORGW_OK);
	g0 = gen_now();
	T_ASSERT("a new store reads generation 0 (empty lock file)", g0 == 0);
	T_ASSERT("put ok", txn("BEST_PROVIDER:m", "{}", 0) == ORGW_OK);
	T_ASSERT("a put raises the generation by one", gen_now() == g0 + 1);
	T_ASSERT("quiet put ok", txn("STATS:m", "{}", 1) == ORGW_OK);
	T_ASSERT("a quiet put (counters) leaves it", gen_now() == g0 + 1);
	T_ASSERT("delete ok", txn("BEST_PROVIDER:m", NULL, 2) == ORGW_OK);
	T_ASSERT("a delete raises it", gen_now() == g0 + 2);

	/* Several changes in one transaction: raised once, before the
	 * first, and the transaction reports the raised value. */
	g1 = gen_now();
	T_ASSERT("open", store_open(&s, path, true, 1000) == ORGW_OK);
	T_ASSERT("put 1", store_put(s, "A", "1") == ORGW_OK);
	T_ASSERT("raised before the transaction ends (a reader sees it)",
		 gen_now() == g1 + 1);
	T_ASSERT("put 2", store_put(s, "B", "2") == ORGW_OK);
	T_ASSERT("txn generation",
		 store_txn_generation(s, &in_txn) == ORGW_OK);
	T_ASSERT("close", store_close(s) == ORGW_OK);
	T_ASSERT("two puts in one transaction raise it once",
		 gen_now() == g1 + 1 && in_txn == g1 + 1);

	/* A read-only transaction sees the same value and keeps it. */
	T_ASSERT("reader open", store_open(&s, path, false, 1000) == ORGW_OK);
	T_ASSERT("reader's generation is the current one",
		 store_txn_generation(s, &in_txn) == ORGW_OK &&
			 in_txn == g1 + 1);
	T_ASSERT("reader close", store_close(s) == ORGW_OK);
	T_ASSERT("a reader leaves it", gen_now() == g1 + 1);

	g1 = gen_now();
	T_ASSERT("repair ok", store_repair(path, 1000) == ORGW_OK);
	T_ASSERT("a repair raises it", gen_now() > g1);

	/* A lock file removed behind our back: the next transaction opens
	 * the new one, and store_generation follows it. */
	snprintf(lp, sizeof(lp), "%s.lock", path);
	T_ASSERT("unlink the lock file", unlink(lp) == 0);
	T_ASSERT("put after the lock file went", txn("X", "1", 0) == ORGW_OK);
	T_ASSERT("the generation is read from the new lock file (0 + 1)",
		 gen_now() == 1);
}

/* Writes BEST_PROVIDER:M for tag, used now, as another worker would. */
static void
write_lock(const char *tag, int how)
{
	struct rec_lock l;
	char *v;

	memset(&l, 0, sizeof(l));
	snprintf(l.tag, sizeof(l.tag), "%s", tag);
	snprintf(l.provider_name, sizeof(l.provider_name), "%s", tag);
	l.locked_at = l.last_used = (int64_t)time(NULL);
	v = record_lock_encode(&l);
	T_ASSERT("lock encoded", v != NULL);
	if (v != NULL)
		T_ASSERT("lock written", txn("BEST_PROVIDER:" M, v, how) ==
						 ORGW_OK);
	record_free(v);
}

static void
test_route_memo(void)
{
	struct orgw_conf c;
	struct state_route r;
	int64_t now;
	int i;

	T_ASSERT("conf_init", conf_init(&c) == ORGW_OK);
	free(c.state_path);
	c.state_path = strdup(path);
	/* The memo is good for the second the caller names (now), which
	 * the calls below hold fixed. */
	write_lock("alpha", 0);
	now = (int64_t)time(NULL);
	T_ASSERT("route 1 ok", state_route(&c, M, false, now, &r) == ORGW_OK);
	T_ASSERT("route 1: the lock", r.kind == ROUTE_LOCKED &&
					      strcmp(r.tag, "alpha") == 0);
	for (i = 0; i < 3; i++)
		T_ASSERT("repeat: the same lock",
			 state_route(&c, M, false, now, &r) == ORGW_OK &&
				 r.kind == ROUTE_LOCKED &&
				 strcmp(r.tag, "alpha") == 0);

	/* Another process re-locks (a breaker trip does this): the next
	 * request, in the same second, must follow at once. */
	write_lock("beta", 0);
	T_ASSERT("after another worker re-locks: the new lock at once",
		 state_route(&c, M, false, now, &r) == ORGW_OK &&
			 r.kind == ROUTE_LOCKED && strcmp(r.tag, "beta") == 0);

	/* The memo is really used: a change that does not raise the
	 * generation (only counters may do that) goes unseen within the
	 * second, and is seen the next second. */
	write_lock("gamma", 1);
	T_ASSERT("a quiet change is not seen within the second (memo used)",
		 state_route(&c, M, false, now, &r) == ORGW_OK &&
			 strcmp(r.tag, "beta") == 0);
	T_ASSERT("...and is seen the next second",
		 state_route(&c, M, false, now + 1, &r) == ORGW_OK &&
			 strcmp(r.tag, "gamma") == 0);

	/* A client-chosen provider routes by the client, memo or not. */
	T_ASSERT("client provider",
		 state_route(&c, M, true, now + 1, &r) == ORGW_OK &&
			 r.kind == ROUTE_CLIENT);
	T_ASSERT("client provider again",
		 state_route(&c, M, true, now + 1, &r) == ORGW_OK &&
			 r.kind == ROUTE_CLIENT);
	T_ASSERT("and the pinned route is still the lock",
		 state_route(&c, M, false, now + 1, &r) == ORGW_OK &&
			 r.kind == ROUTE_LOCKED && strcmp(r.tag, "gamma") == 0);
	conf_free(&c);
}

int
main(void)
{
	char cmd[300];

	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/state.gdbm", dir);
	test_generation();
	snprintf(path, sizeof(path), "%s/state2.gdbm", dir);
	test_route_memo();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return T_REPORT();
}
