/*
 * teamauth.h - a team key on the request path: who sent a request,
 * what its key may do, and what it spent (teamkey.h is the pure part,
 * keystore.h the keys' durable store, state.h the soft rate records).
 *
 * A request is the operator's when it sends CUSTOM_ACCESS_KEY, a team
 * key's when it sends a key of the store that is neither disabled,
 * revoked nor expired; anything else is refused with the same 401.  A
 * refused key costs one shared-lock read of the keys store and writes
 * nothing.
 */
#ifndef ORGW_TEAMAUTH_H
#define ORGW_TEAMAUTH_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "conf.h"
#include "http.h"
#include "record.h"
#include "state.h"
#include "teamkey.h"

enum teamauth_who {
	TA_NONE,		/* no key was sent */
	TA_BAD,			/* a key that is none of these: 401 */
	TA_OPERATOR,		/* CUSTOM_ACCESS_KEY: everything allowed */
	TA_TEAM,		/* an active team key */
	TA_UNAVAILABLE		/* a team key's shape, and the keys store
				 * could not be read: 503 */
};

/* A team key's request. */
struct teamauth {
	struct teamkey key;
	struct ledger_cell day, month;	/* its use when it came */
	char lease[TEAMKEY_LEASE_ID_MAX + 1];	/* its concurrency lease id */
	struct state_admit admit;	/* for state_route() */
};

/* Who sent env's key, at now_s; t is filled for TA_TEAM. */
enum teamauth_who teamauth_identify(const struct orgw_conf *c,
				    const struct orgw_env *env, int64_t now_s,
				    struct teamauth *t);

/* The same for a key's text (the status page's login form). */
enum teamauth_who teamauth_identify_key(const struct orgw_conf *c,
					const char *key, int64_t now_s,
					struct teamauth *t);

/*
 * What t's key allows for a request of model (and the ids of its
 * "models" array, models[0..n)): TK_MODEL (403), TK_UNAVAILABLE (503)
 * for a key with limits or a budget whose unrecorded spend could not be
 * settled (teamauth_settle), TK_BUDGET (402) from the use read when it
 * came and the spend settled, or TK_OK.  Fills t->admit for the route
 * transaction, with a fresh lease id when the key has a concurrency
 * limit.
 */
enum teamkey_verdict teamauth_check(const struct orgw_conf *c,
				    struct teamauth *t, const char *model,
				    const char *const *models, size_t n);

/*
 * What t's key allows for a request that costs nothing
 * (count_tokens): TK_BUDGET when its budget is spent, TK_RPM over its
 * rpm (the request is counted in it), TK_OK; never a lease.  t->admit
 * holds the retry time of a refusal.
 */
enum teamkey_verdict teamauth_check_plain(const struct orgw_conf *c,
					  struct teamauth *t);

/*
 * Records what t's key spent in this worker and could not record when
 * it ended (teamauth_finish kept it: the keys store refused the write)
 * into the keys store, and adds it to t->day and t->month where those
 * are now_s's day and month.  True when nothing of the key is kept any
 * more; false (logged, still kept) when the store refused again.
 * teamauth_check calls it first.  Thread-safe.
 */
bool teamauth_settle(const struct orgw_conf *c, struct teamauth *t,
		     int64_t now_s);

/* Counts one refusal of t's request (verdict) in its use. */
void teamauth_refused(const struct orgw_conf *c, const struct teamauth *t,
		      enum teamkey_verdict verdict, int64_t now_s);

/* Adds requests and usd to the use of key name today and this month:
 * a request whose cost was learnt after it ended (genq.h), counted in
 * its key's use once that is known. */
void teamauth_spend(const struct orgw_conf *c, const char *name,
		    int64_t now_s, int64_t requests, double usd);

/*
 * The request's end, after its state_finish: adds d (its tokens, and
 * its cost and savings as the ledger counted them; without usage,
 * d->key_billed_usd) to t's use of today and this month in the keys
 * store, once: on Redis a commit whose answer was lost is settled, not
 * run again.  When the store refuses the write, the use is kept in this
 * worker (bounded) for teamauth_settle.
 */
void teamauth_finish(const struct orgw_conf *c, const struct teamauth *t,
		     const struct stats_delta *d);

/* The HTTP status and OpenAI error code of a refusal. */
int teamauth_status(enum teamkey_verdict v);
const char *teamauth_code(enum teamkey_verdict v);

/*
 * GET /v1/key's body for t (OpenRouter's shape: the key's name, limits
 * and usage today and this month; under data.orgw its own figures of
 * today and this month, ledger_render_key), cJSON-allocated (free with
 * cJSON_free), NULL when out of memory.
 */
char *teamauth_key_json(const struct teamauth *t);

/*
 * Adds every team key to keys (an object, by name): its state, models,
 * limits, remaining budgets, last use, and its figures of today and
 * this month (ledger_render_key: requests, tokens, spend, savings and
 * refusals), for /stats, /status and /metrics.  Nothing without
 * KEYS_SECRET.  The keys store's error (keys holds what was added
 * before it), else ORGW_OK.
 */
enum orgw_err teamauth_keys_tree(const struct orgw_conf *c, int64_t now_s,
				 cJSON *keys);

#endif
