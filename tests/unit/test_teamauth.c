/*
 * test_teamauth.c - teamauth.c over the in-memory back-end (store_mem.c):
 * spend billed while the keys store refuses writes is kept in the
 * process, a key with limits or a budget is refused (TK_UNAVAILABLE)
 * while it cannot be recorded, and the next admission with the store
 * back records it once, in the keys store and in the use the budget is
 * checked against (so a budget it spent refuses at once).  A key
 * without limits is still served.  A request's reasoning tokens are
 * counted in its key's use and shown in /v1/key and the /stats keys
 * tree, as every ledger row with a team name is.
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

static enum orgw_err
do_put(struct store *s, void *arg)
{
	return keystore_put(s, arg);
}

/* The number at path a.b.c (dots) of the JSON text, or -1. */
static double
json_num(const char *text, const char *path)
{
	cJSON *o = cJSON_Parse(text);
	const cJSON *it = o;
	char part[64];
	const char *p = path, *dot;
	double v = -1;

	while (it != NULL && (dot = strchr(p, '.')) != NULL) {
		snprintf(part, sizeof(part), "%.*s", (int)(dot - p), p);
		it = cJSON_GetObjectItemCaseSensitive(it, part);
		p = dot + 1;
	}
	it = cJSON_GetObjectItemCaseSensitive(it, p);
	if (cJSON_IsNumber(it))
		v = it->valuedouble;
	cJSON_Delete(o);
	return v;
}

static void
test_key_figures(void)
{
	unsigned char rnd[32];
	char plain[TEAMKEY_PLAIN_MAX], *text;
	struct teamauth t;
	struct stats_delta d;
	struct use_call u;
	cJSON *keys;

	store_mem_reset();
	key_init(&t, "thinker", 0);
	memset(rnd, 7, sizeof(rnd));
	teamkey_plain_make(rnd, plain);
	T_ASSERT("figures: the key made",
		 teamkey_hash(conf.keys_secret, plain, t.key.hash) &&
			 keystore_txn(&conf, true, do_put, &t.key) ==
				 ORGW_OK);
	memset(&d, 0, sizeof(d));
	d.requests = 1;
	d.usage = true;
	d.cost_known = true;
	d.cost_usd = 0.01;
	d.prompt_tokens = 30;
	d.completion_tokens = 100;
	d.reasoning_tokens = 64;
	d.now = clock_now_s();
	teamauth_finish(&conf, &t, &d);
	teamauth_finish(&conf, &t, &d);
	memset(&u, 0, sizeof(u));
	u.name = "thinker";
	u.now = clock_now_s();
	T_ASSERT("figures: the reasoning tokens counted in the key's day "
		 "and month",
		 keystore_txn(&conf, false, do_use, &u) == ORGW_OK &&
			 u.day.v[LX_REASONING] == 128 &&
			 u.month.v[LX_REASONING] == 128 &&
			 u.day.v[LX_COMPLETION] == 200 &&
			 u.day.v[LX_REQUESTS] == 2);
	t.day = u.day;
	t.month = u.month;
	text = teamauth_key_json(&t);
	T_ASSERT("figures: /v1/key shows them",
		 text != NULL &&
			 json_num(text, "data.orgw.today.reasoning_tokens") ==
				 128 &&
			 json_num(text, "data.orgw.month.reasoning_tokens") ==
				 128 &&
			 json_num(text, "data.orgw.requests_today") == 2);
	cJSON_free(text);
	keys = cJSON_CreateObject();
	text = NULL;
	T_ASSERT("figures: /stats keys shows them",
		 keys != NULL &&
			 teamauth_keys_tree(&conf, clock_now_s(), keys) ==
				 ORGW_OK &&
			 (text = cJSON_PrintUnformatted(keys)) != NULL &&
			 json_num(text, "thinker.today.reasoning_tokens") ==
				 128 &&
			 json_num(text, "thinker.month.completion_tokens") ==
				 200);
	cJSON_free(text);
	cJSON_Delete(keys);
}

int
main(void)
{
	if (conf_init(&conf) != ORGW_OK)
		return 1;
	conf.state_backend = CONF_BACKEND_MEMORY;
	test_kept_spend();
	if ((conf.keys_secret = strdup("0123456789abcdef-test")) == NULL)
		return 1;
	test_key_figures();
	store_mem_reset();
	conf_free(&conf);
	return T_REPORT();
}
