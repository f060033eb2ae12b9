/*
 * teamauth.c - a team key on the request path (teamauth.h).
 *
 * Spend billed and not recorded: when the keys store refuses the write
 * of a request's use (a full disk, Redis at maxmemory, a lock held too
 * long), the use is kept in this process (pending[], under pending_mu,
 * at most PENDING_MAX key-days) and settled before that key's next
 * admission here; a key with limits or a budget is refused while it
 * cannot be.  A worker that ends (recycled, killed) loses what it kept,
 * and says so in its log when it keeps it.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <cJSON.h>

#include "clock.h"
#include "keystore.h"
#include "ledger.h"
#include "log.h"
#include "store.h"
#include "teamauth.h"

struct find_arg {
	const char *secret, *plain;
	int64_t now_s;
	struct teamauth *t;
};

static enum orgw_err
do_find(struct store *s, void *arg)
{
	struct find_arg *a = arg;
	enum orgw_err err;

	err = keystore_find(s, a->secret, a->plain, &a->t->key);
	if (err != ORGW_OK)
		return err;
	return keystore_use(s, a->t->key.name, a->now_s, &a->t->day,
			    &a->t->month);
}

enum teamauth_who
teamauth_identify_key(const struct orgw_conf *c, const char *key,
		      int64_t now_s, struct teamauth *t)
{
	struct find_arg a = {c->keys_secret, key, now_s, t};
	enum orgw_err err;

	memset(t, 0, sizeof(*t));
	if (key == NULL || key[0] == '\0')
		return TA_NONE;
	if (c->keys_secret == NULL || !teamkey_plain_shape(key))
		return TA_BAD;
	err = keystore_txn(c, false, do_find, &a);
	if (err == ORGW_ENOENT)
		return TA_BAD;
	if (err != ORGW_OK) {
		log_warn("keys store unreadable (%s): team keys refused",
			 orgw_strerror(err));
		return TA_UNAVAILABLE;
	}
	if (teamkey_check_key(&t->key, now_s, NULL, NULL, 0) != TK_OK)
		return TA_BAD;
	return TA_TEAM;
}

enum teamauth_who
teamauth_identify(const struct orgw_conf *c, const struct orgw_env *env,
		  int64_t now_s, struct teamauth *t)
{
	const char *key = http_key_token(env);

	memset(t, 0, sizeof(*t));
	if (key == NULL)
		return TA_NONE;
	if (http_key_ok(env, c->custom_access_key))
		return TA_OPERATOR;
	return teamauth_identify_key(c, key, now_s, t);
}

/* A fresh lease id from 16 random bytes; false when none could be had. */
static bool
lease_make(char id[TEAMKEY_LEASE_ID_MAX + 1])
{
	unsigned char b[16];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return false;
	teamkey_lease_make(b, id);
	return true;
}

enum teamkey_verdict
teamauth_check(const struct orgw_conf *c, struct teamauth *t,
	       const char *model, const char *const *models, size_t n)
{
	enum teamkey_verdict v;
	bool budget = t->key.budget_day_usd > 0 || t->key.budget_month_usd > 0;

	v = teamkey_check_key(&t->key, clock_now_s(), model, models, n);
	if (v != TK_OK)
		return v;
	/* What this key spent and could not record comes first; while it
	 * cannot be, a key with limits or a budget is not served. */
	if (!teamauth_settle(c, t, clock_now_s()) &&
	    (t->key.rpm > 0 || t->key.concurrent > 0 ||
	     t->key.budget_day_usd > 0 || t->key.budget_month_usd > 0))
		return TK_UNAVAILABLE;
	if ((v = teamkey_check_budget(&t->key, &t->day, &t->month)) != TK_OK)
		return v;
	memset(&t->admit, 0, sizeof(t->admit));
	t->admit.key = &t->key;
	t->admit.now_ms = clock_now_ms();
	t->admit.lease_ms = c->request_timeout_ms;
	t->admit.day = &t->day;
	t->admit.month = &t->month;
	/* No lease without a random id: refused as over the limit.  A
	 * budget's hold (hold.h) goes by the same id. */
	if ((t->key.concurrent > 0 || budget) && !lease_make(t->lease))
		return TK_CONCURRENT;
	t->admit.lease = t->key.concurrent > 0 ? t->lease : NULL;
	t->admit.hold = budget ? t->lease : NULL;
	return TK_OK;
}

enum teamkey_verdict
teamauth_check_plain(const struct orgw_conf *c, struct teamauth *t)
{
	struct teamkey *k;
	enum teamkey_verdict v;

	if ((v = teamkey_check_budget(&t->key, &t->day, &t->month)) != TK_OK)
		return v;
	/* Its rpm and budget, not its concurrency: it holds nothing. */
	if ((k = malloc(sizeof(*k))) == NULL)
		return TK_CONCURRENT;
	*k = t->key;
	k->concurrent = 0;
	memset(&t->admit, 0, sizeof(t->admit));
	t->admit.key = k;
	t->admit.now_ms = clock_now_ms();
	t->admit.lease_ms = c->request_timeout_ms;
	t->admit.day = &t->day;
	t->admit.month = &t->month;
	(void)state_admit_plain(c, &t->admit);
	t->admit.key = &t->key;
	free(k);
	return t->admit.verdict;
}

struct use_arg {
	const char *name;
	int64_t now_s;
	const struct ledger_cell *u;
};

static enum orgw_err
do_use_add(struct store *s, void *arg)
{
	struct use_arg *a = arg;

	/* Counted once: a commit whose answer was lost (Redis) is
	 * settled, not run again. */
	store_exact_outcome(s);
	return keystore_use_add(s, a->name, a->now_s, a->u);
}

static enum orgw_err
use_add(const struct orgw_conf *c, const char *name, int64_t now_s,
	const struct ledger_cell *u)
{
	struct use_arg a = {name, now_s, u};

	return keystore_txn(c, true, do_use_add, &a);
}

/* Key-days of use kept while the keys store refuses writes: a worker
 * serves a few dozen keys at most, and each day's use is one entry. */
#define PENDING_MAX 64

struct pending {
	char name[TEAMKEY_NAME_MAX + 1];	/* "": free */
	int64_t now_s;		/* in the UTC day the use is counted in */
	struct ledger_cell u;
};

static pthread_mutex_t pending_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pending pending[PENDING_MAX];

/* Keeps u (of name, at now_s) to be settled; false when the table is
 * full.  Merged with what the key already has kept for that day. */
static bool
pending_keep(const char *name, int64_t now_s, const struct ledger_cell *u)
{
	char day[11], d[11];
	struct pending *free_e = NULL;
	size_t i;
	bool ok = true;

	teamkey_day(now_s, day);
	pthread_mutex_lock(&pending_mu);
	for (i = 0; i < PENDING_MAX; i++) {
		struct pending *e = &pending[i];

		if (e->name[0] == '\0') {
			if (free_e == NULL)
				free_e = e;
			continue;
		}
		teamkey_day(e->now_s, d);
		if (strcmp(e->name, name) == 0 && strcmp(d, day) == 0) {
			teamkey_use_add(&e->u, u);
			goto out;
		}
	}
	if (free_e == NULL) {
		ok = false;
		goto out;
	}
	snprintf(free_e->name, sizeof(free_e->name), "%s", name);
	free_e->now_s = now_s;
	free_e->u = *u;
out:
	pthread_mutex_unlock(&pending_mu);
	return ok;
}

/* Takes out one entry of name into *out; false when it has none. */
static bool
pending_take(const char *name, struct pending *out)
{
	size_t i;
	bool found = false;

	pthread_mutex_lock(&pending_mu);
	for (i = 0; i < PENDING_MAX && !found; i++)
		if (pending[i].name[0] != '\0' &&
		    strcmp(pending[i].name, name) == 0) {
			*out = pending[i];
			memset(&pending[i], 0, sizeof(pending[i]));
			found = true;
		}
	pthread_mutex_unlock(&pending_mu);
	return found;
}

bool
teamauth_settle(const struct orgw_conf *c, struct teamauth *t, int64_t now_s)
{
	struct pending e;
	char day[11], month[8], d[11], m[8];
	enum orgw_err err;

	teamkey_day(now_s, day);
	teamkey_month(now_s, month);
	while (pending_take(t->key.name, &e)) {
		if ((err = use_add(c, e.name, e.now_s, &e.u)) != ORGW_OK) {
			/* Back in the table (another thread may have
			 * filled its room meanwhile). */
			if (pending_keep(e.name, e.now_s, &e.u))
				log_warn("keys store: kept use of key %s still "
					 "not recorded (%s)",
					 e.name, orgw_strerror(err));
			else
				log_err("keys store: use of key %s not counted "
					"(%s), no room to keep it: "
					"requests=%.0f spend_usd=%.8f",
					e.name, orgw_strerror(err),
					e.u.v[LX_REQUESTS],
					e.u.v[LX_KEY_SPEND]);
			return false;
		}
		log_info("keys store: kept use of key %s recorded: "
			 "requests=%.0f spend_usd=%.8f",
			 e.name, e.u.v[LX_REQUESTS], e.u.v[LX_KEY_SPEND]);
		/* t's use was read before this went in. */
		teamkey_day(e.now_s, d);
		teamkey_month(e.now_s, m);
		if (strcmp(d, day) == 0)
			teamkey_use_add(&t->day, &e.u);
		if (strcmp(m, month) == 0)
			teamkey_use_add(&t->month, &e.u);
	}
	return true;
}

void
teamauth_refused(const struct orgw_conf *c, const struct teamauth *t,
		 enum teamkey_verdict verdict, int64_t now_s)
{
	struct ledger_cell u;
	enum ledger_ix ix = teamkey_refused_ix(verdict);
	enum orgw_err err;

	if (ix == LX_N)
		return;
	memset(&u, 0, sizeof(u));
	u.v[ix] = 1;
	if ((err = use_add(c, t->key.name, now_s, &u)) != ORGW_OK)
		log_err("keys store: refusal of key %s not counted (%s)",
			t->key.name, orgw_strerror(err));
}

/* Adds u to key name's use, or keeps it in this worker to be settled
 * when the keys store refuses the write: spend billed is never
 * dropped while there is room to keep it. */
static void
use_record(const struct orgw_conf *c, const char *name, int64_t now_s,
	   const struct ledger_cell *u)
{
	enum orgw_err err;

	if ((err = use_add(c, name, now_s, u)) == ORGW_OK)
		return;
	if (pending_keep(name, now_s, u))
		log_warn("keys store: use of key %s not recorded (%s), kept "
			 "in this worker until it can be: requests=%.0f "
			 "spend_usd=%.8f",
			 name, orgw_strerror(err), u->v[LX_REQUESTS],
			 u->v[LX_KEY_SPEND]);
	else
		log_err("keys store: use of key %s not counted (%s), no "
			"room to keep it: requests=%.0f spend_usd=%.8f",
			name, orgw_strerror(err), u->v[LX_REQUESTS],
			u->v[LX_KEY_SPEND]);
}

void
teamauth_spend(const struct orgw_conf *c, const char *name, int64_t now_s,
	       int64_t requests, double usd)
{
	struct ledger_cell u;

	memset(&u, 0, sizeof(u));
	u.v[LX_REQUESTS] = (double)requests;
	u.v[LX_KEY_SPEND] = usd;
	u.v[LX_LAST_USED] = (double)now_s;
	use_record(c, name, now_s, &u);
}

void
teamauth_finish(const struct orgw_conf *c, const struct teamauth *t,
		const struct stats_delta *d)
{
	struct ledger_cell u;

	ledger_key_from_delta(&u, d);
	use_record(c, t->key.name, d->now, &u);
}

int
teamauth_status(enum teamkey_verdict v)
{
	switch (v) {
	case TK_MODEL:
		return 403;
	case TK_BUDGET:
		return 402;
	case TK_RPM:
	case TK_CONCURRENT:
		return 429;
	case TK_UNKNOWN:
		return 401;
	case TK_UNAVAILABLE:
		return 503;
	case TK_OK:
		break;
	}
	return 200;
}

const char *
teamauth_code(enum teamkey_verdict v)
{
	switch (v) {
	case TK_MODEL:
		return "model_not_allowed";
	case TK_BUDGET:
		return "budget_exceeded";
	case TK_RPM:
		return "rate_limit_exceeded";
	case TK_CONCURRENT:
		return "concurrency_limit_exceeded";
	case TK_UNKNOWN:
		return "invalid_api_key";
	case TK_UNAVAILABLE:
		return "state_unavailable";
	case TK_OK:
		break;
	}
	return "ok";
}

/* One window's figures (the key's ledger rows) as o's object name. */
static bool
add_use(cJSON *o, const char *name, const struct ledger_cell *u)
{
	cJSON *w = cJSON_AddObjectToObject(o, name);

	return w != NULL && ledger_render_key(w, u);
}

/* A budget's figure for /v1/key: null when there is none. */
static cJSON *
limit_of(double budget)
{
	return budget > 0 ? cJSON_CreateNumber(budget) : cJSON_CreateNull();
}

/* What is left of a budget: null when there is none. */
static cJSON *
remaining(double budget, double spent)
{
	if (budget <= 0)
		return cJSON_CreateNull();
	return cJSON_CreateNumber(budget > spent ? budget - spent : 0);
}

/* k's model globs as o's array "models": ["*"] for every model. */
static bool
add_models(cJSON *o, const struct teamkey *k)
{
	cJSON *m = cJSON_AddArrayToObject(o, "models");
	size_t i;

	if (m == NULL)
		return false;
	if (k->n_globs == 0)
		return cJSON_AddItemToArray(m, cJSON_CreateString("*"));
	for (i = 0; i < k->n_globs; i++)
		if (!cJSON_AddItemToArray(m, cJSON_CreateString(k->globs[i])))
			return false;
	return true;
}

char *
teamauth_key_json(const struct teamauth *t)
{
	const struct teamkey *k = &t->key;
	cJSON *o, *d, *rl, *own;
	double limit = 0, used = 0;
	const char *reset = NULL;
	char *s = NULL;
	bool ok;

	/* OpenRouter's key has one limit: the month's when set (the
	 * longer window), else the day's. */
	if (k->budget_month_usd > 0) {
		limit = k->budget_month_usd;
		used = t->month.v[LX_KEY_SPEND];
		reset = "monthly";
	} else if (k->budget_day_usd > 0) {
		limit = k->budget_day_usd;
		used = t->day.v[LX_KEY_SPEND];
		reset = "daily";
	}
	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	d = cJSON_AddObjectToObject(o, "data");
	ok = d != NULL && cJSON_AddStringToObject(d, "label", k->name) &&
	     cJSON_AddItemToObject(d, "limit", limit_of(limit)) &&
	     cJSON_AddItemToObject(d, "limit_remaining",
				   remaining(limit, used)) &&
	     (reset ? cJSON_AddStringToObject(d, "limit_reset", reset) :
		      cJSON_AddNullToObject(d, "limit_reset")) &&
	     cJSON_AddNumberToObject(d, "usage", t->month.v[LX_KEY_SPEND]) &&
	     cJSON_AddNumberToObject(d, "usage_daily",
				     t->day.v[LX_KEY_SPEND]) &&
	     cJSON_AddNumberToObject(d, "usage_monthly",
				     t->month.v[LX_KEY_SPEND]) &&
	     cJSON_AddFalseToObject(d, "is_free_tier") &&
	     cJSON_AddFalseToObject(d, "is_management_key") &&
	     cJSON_AddFalseToObject(d, "is_provisioning_key");
	if (ok && k->expires > 0) {
		char when[32];
		struct tm tm;
		time_t e = (time_t)k->expires;

		gmtime_r(&e, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		ok = cJSON_AddStringToObject(d, "expires_at", when) != NULL;
	} else if (ok) {
		ok = cJSON_AddNullToObject(d, "expires_at") != NULL;
	}
	rl = ok ? cJSON_AddObjectToObject(d, "rate_limit") : NULL;
	ok = rl != NULL &&
	     (k->rpm > 0 ?
		      cJSON_AddNumberToObject(rl, "requests", (double)k->rpm) :
		      cJSON_AddNullToObject(rl, "requests")) &&
	     cJSON_AddStringToObject(rl, "interval", "1m");
	/* What OpenRouter's shape has no field for: orgw's own. */
	own = ok ? cJSON_AddObjectToObject(d, "orgw") : NULL;
	ok = own != NULL && add_models(own, k) &&
	     cJSON_AddItemToObject(own, "budget_usd_day",
				   limit_of(k->budget_day_usd)) &&
	     cJSON_AddItemToObject(own, "budget_usd_month",
				   limit_of(k->budget_month_usd)) &&
	     cJSON_AddNumberToObject(own, "concurrent",
				     (double)k->concurrent) &&
	     cJSON_AddNumberToObject(own, "requests_today",
				     t->day.v[LX_REQUESTS]) &&
	     cJSON_AddNumberToObject(own, "requests_month",
				     t->month.v[LX_REQUESTS]) &&
	     add_use(own, "today", &t->day) && add_use(own, "month", &t->month);
	if (ok)
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

struct tree_arg {
	struct store *s;
	int64_t now_s;
	cJSON *keys;
	enum orgw_err err;
};

static int
tree_key(void *arg, const struct teamkey *k)
{
	struct tree_arg *a = arg;
	struct ledger_cell day, month;
	cJSON *o;
	bool ok;

	if ((a->err = keystore_use(a->s, k->name, a->now_s, &day, &month)) !=
	    ORGW_OK)
		return 1;
	o = cJSON_AddObjectToObject(a->keys, k->name);
	ok = o != NULL &&
	     cJSON_AddStringToObject(o, "state",
				     teamkey_state(k, a->now_s)) &&
	     cJSON_AddBoolToObject(o, "admin", k->admin) && add_models(o, k) &&
	     cJSON_AddNumberToObject(o, "rpm", (double)k->rpm) &&
	     cJSON_AddNumberToObject(o, "concurrent", (double)k->concurrent) &&
	     cJSON_AddItemToObject(o, "budget_usd_day",
				   limit_of(k->budget_day_usd)) &&
	     cJSON_AddItemToObject(o, "budget_usd_month",
				   limit_of(k->budget_month_usd)) &&
	     cJSON_AddItemToObject(o, "remaining_usd_day",
				   remaining(k->budget_day_usd,
					     day.v[LX_KEY_SPEND])) &&
	     cJSON_AddItemToObject(o, "remaining_usd_month",
				   remaining(k->budget_month_usd,
					     month.v[LX_KEY_SPEND])) &&
	     cJSON_AddNumberToObject(o, "last_used",
				     day.v[LX_LAST_USED] >
						     month.v[LX_LAST_USED] ?
					     day.v[LX_LAST_USED] :
					     month.v[LX_LAST_USED]) &&
	     add_use(o, "today", &day) && add_use(o, "month", &month);
	if (!ok)
		a->err = ORGW_ENOMEM;
	return ok ? 0 : 1;
}

static enum orgw_err
do_tree(struct store *s, void *arg)
{
	struct tree_arg *a = arg;
	cJSON *e;
	enum orgw_err err;

	/* A run again starts from no keys. */
	while ((e = a->keys->child) != NULL)
		cJSON_Delete(cJSON_DetachItemViaPointer(a->keys, e));
	a->s = s;
	a->err = ORGW_OK;
	err = keystore_each(s, tree_key, a);
	return a->err != ORGW_OK ? a->err : err;
}

enum orgw_err
teamauth_keys_tree(const struct orgw_conf *c, int64_t now_s, cJSON *keys)
{
	struct tree_arg a = {NULL, now_s, keys, ORGW_OK};

	if (c->keys_secret == NULL)
		return ORGW_OK;
	return keystore_txn(c, false, do_tree, &a);
}
