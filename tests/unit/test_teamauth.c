/*
 * test_teamauth.c - teamauth.c over the in-memory back-end (store_mem.c):
 * spend billed while the keys store refuses writes is kept in the
 * process, a key with limits or a budget is refused (TK_UNAVAILABLE)
 * while it cannot be recorded, and the next admission with the store
 * back records it once, in the keys store and in the use the budget is
 * checked against (so a budget it spent refuses at once).  A key
 * without limits is still served.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "clock.h"
#include "conf.h"
#include "keystore.h"
#include "ledger.h"
#include "store.h"
#include "store_mem.h"
#include "teamauth.h"
#include "teamkey.h"

static struct orgw_conf conf;

struct use_call {
	const char *name;
	int64_t now;
	struct ledger_cell day, month;
};

static enum orgw_err
do_use(struct store *s, void *arg)
{
	struct use_call *u = arg;

	return keystore_use(s, u->name, u->now, &u->day, &u->month);
}

/* Today's spend of name in the keys store; -1 when it cannot be read. */
static double
spent_today(const char *name)
{
	struct use_call u;

	memset(&u, 0, sizeof(u));
	u.name = name;
	u.now = clock_now_s();
	if (keystore_txn(&conf, false, do_use, &u) != ORGW_OK)
		return -1;
	return u.day.v[LX_KEY_SPEND];
}

/* A request of t's that ended having cost usd (as upstream's usage said). */
static void
finish(const struct teamauth *t, double usd)
{
	struct stats_delta d;

	memset(&d, 0, sizeof(d));
	d.requests = 1;
	d.usage = true;
	d.cost_known = true;
	d.cost_usd = usd;
	d.now = clock_now_s();
	teamauth_finish(&conf, t, &d);
}

static void
key_init(struct teamauth *t, const char *name, double budget_day)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->key.name, sizeof(t->key.name), "%s", name);
	t->key.budget_day_usd = budget_day;
}

static void
test_kept_spend(void)
{
	struct teamauth t, free_key;

	store_mem_reset();
	key_init(&t, "budget", 0.05);
	T_ASSERT("kept: admitted while the store records",
		 teamauth_check(&conf, &t, "m/x", NULL, 0) == TK_OK);
	store_mem_refuse(true);
	finish(&t, 0.03);
	finish(&t, 0.03);
	T_ASSERT("kept: a key with a budget whose spend cannot be recorded "
		 "is refused as unavailable",
		 teamauth_check(&conf, &t, "m/x", NULL, 0) == TK_UNAVAILABLE);
	key_init(&free_key, "nolimits", 0);
	T_ASSERT("kept: a key without limits is still served",
		 teamauth_check(&conf, &free_key, "m/x", NULL, 0) == TK_OK);
	store_mem_refuse(false);
	T_ASSERT("kept: nothing was recorded while refused",
		 spent_today("budget") == 0);
	key_init(&t, "budget", 0.05);
	T_ASSERT("kept: with the store back, the next admission records "
		 "the kept spend first, and its budget (0.06 of 0.05) "
		 "refuses",
		 teamauth_check(&conf, &t, "m/x", NULL, 0) == TK_BUDGET &&
			 spent_today("budget") > 0.0599 &&
			 spent_today("budget") < 0.0601 &&
			 t.day.v[LX_KEY_SPEND] > 0.0599);
	key_init(&t, "budget", 0.05);
	T_ASSERT("kept: ...once: the admission after adds nothing",
		 teamauth_check(&conf, &t, "m/x", NULL, 0) == TK_OK &&
			 spent_today("budget") < 0.0601 &&
			 t.day.v[LX_KEY_SPEND] == 0);
	T_ASSERT("kept: nothing else kept: settle is true",
		 teamauth_settle(&conf, &t, clock_now_s()));
}

int
main(void)
{
	if (conf_init(&conf) != ORGW_OK)
		return 1;
	conf.state_backend = CONF_BACKEND_MEMORY;
	test_kept_spend();
	store_mem_reset();
	conf_free(&conf);
	return T_REPORT();
}
