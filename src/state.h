/*
 * state.h - the request path's transactions on the shared state
 * (docs/design.md sections 4, 5 and 7), built from store.c, record.c, route.c and
 * failover.c.  Each function is one short transaction: read, decide,
 * write, close.  None does network I/O.  The transactions are split by
 * job: state.c (the runner, what the others share), state_route.c,
 * state_admit.c, state_fail.c, state_batch.c and state_ops.c.
 *
 * Every function degrades instead of failing: a state store that cannot
 * be opened in time is reported (ORGW_EBUSY/ORGW_EIO) and the caller
 * routes unpinned; a damaged file is repaired once and retried.
 */
#ifndef ORGW_STATE_H
#define ORGW_STATE_H

#include "conf.h"
#include "record.h"
#include "route.h"
#include "statekeys.h"
#include "teamkey.h"

struct score_result;
struct store;

/*
 * Requests not counted because the state was unavailable (Redis away,
 * GDBM busy or damaged), added up by state_finish() once it is back: a
 * decimal count, in /stats as "lost_updates" (for /metrics:
 * orgw_state_lost_updates_total).
 */
#define STATE_LOST_KEY STATEKEY_P_LOST_UPDATES

/*
 * The one model every request on an id OpenRouter does not know is
 * counted under (docs/design.md 4 step 2): N sent is still N counted, and invented
 * ids leave no state of their own.  No client can name it: '(' is not
 * in a model id (reqval_model_ok).
 */
#define STATE_OTHER_MODEL "(other)"

/*
 * One transaction on the state store: opens it (exclusive when write),
 * runs fn(s, arg), commits (store_close) or, when fn failed, aborts.  A
 * commit that lost a race (ORGW_ECONFLICT, Redis) runs fn again after a
 * jittered backoff (redisconf.h) for up to STORE_LOCK_TIMEOUT_MS, as long
 * as a GDBM writer may wait for the file's lock: fn must
 * leave nothing behind but its writes to s and outputs it sets afresh
 * on every run.  A damaged file (ORGW_EIO) is repaired (store_repair)
 * and the whole transaction run once more.  Returns fn's error, else the
 * commit's; s is borrowed by fn for the call only.
 */
enum orgw_err state_txn(const struct orgw_conf *c, bool write,
			enum orgw_err (*fn)(struct store *s, void *arg),
			void *arg);

/*
 * state_txn() without the repair: a damaged file is returned as
 * ORGW_EIO and left as it is (keystore.h: the team keys are not soft).
 * Conflicts are run again as by state_txn().
 */
enum orgw_err state_txn_norepair(const struct orgw_conf *c, bool write,
				 enum orgw_err (*fn)(struct store *s,
						     void *arg),
				 void *arg);

/* What the request path learns before its first upstream attempt. */
struct state_route {
	enum route_kind kind;
	char tag[ORGW_TAG_MAX];		/* "" when unpinned or client */
	char provider_name[ORGW_TAG_MAX];
	int64_t max_out;		/* pinned endpoint's output cap, 0 = none */
	bool conversation;		/* tag is a conversation's provider,
					 * not the model's lock (X-Orgw-Route:
					 * conversation); any re-route clears
					 * it */
};

/*
 * A team key's per-minute count and concurrency leases (teamkey.h) live
 * in the routing state under TEAMKEY_RATE:<name>: they are soft, and a
 * lost record forgets a minute's count and leases that expire anyway.
 */
#define STATE_RATE_PREFIX STATEKEY_P_TEAMKEY_RATE
/* What a key's requests in flight hold of its budget (hold.h). */
#define STATE_HOLD_PREFIX STATEKEY_P_TEAMKEY_HOLD

/* A team key's request, admitted in the route transaction. */
struct state_admit {
	const struct teamkey *key;	/* its limits (rpm, concurrent) */
	const char *lease;		/* the request's lease id; set to
					 * NULL when none was taken */
	int64_t now_ms;			/* unix ms, the host's (the rpm
					 * window and the leases take the
					 * store's, store_now_ms) */
	int64_t lease_ms;		/* a lease expires this long after */
	/* Its use as the keys store had it when the request came, which
	 * the budget is checked against, raised to the spend of the
	 * requests that ended since (teamkey_rate_use). */
	const struct ledger_cell *day, *month;
	/* A key with a budget: the request's hold id (its lease id; set
	 * to NULL when none was taken), and what bounds its cost: its
	 * body's bytes and its output limit (0: none), priced at the
	 * model's dearest stored prices, else at ceiling_usd a token
	 * (ledger_hold_estimate).  held_usd: what it holds. */
	const char *hold;
	int64_t prompt_max, out_max;
	double ceiling_usd, held_usd;
	enum teamkey_verdict verdict;	/* TK_OK, TK_BUDGET, TK_RPM or
					 * TK_CONCURRENT (also: the rest
					 * of the budget is held by
					 * requests in flight) */
	int64_t retry_after_s;		/* for a refusal */
};

/* The Retry-After of a team key refused because the state could not
 * record its admission. */
#define STATE_UNAVAILABLE_RETRY_S 5

/*
 * Steps 4 to 7 of docs/design.md section 4 for model: decides and writes the lock
 * (one model's keys only: the cost does not grow with the number of
 * models).  Returns ORGW_OK with
 * r->kind ROUTE_SCORED when the caller must score inline and then call
 * state_route_scored().  Errors leave r unpinned.
 *
 * ad (NULL for the operator's key) admits a team key's request in the
 * same transaction, before anything is decided: a key with a budget is
 * refused (TK_BUDGET) when it is spent; a key with an rpm or
 * concurrency limit counts the request and takes its lease there
 * (teamkey_rate_admit); a refusal (ad->verdict) writes nothing and
 * leaves r unpinned.  With the state unavailable (the transaction
 * failed: no lock in time, writes refused) the request is refused
 * (ad->verdict TK_UNAVAILABLE, ad->lease NULL): what is not recorded
 * cannot be held.  The request's state_finish
 * gives the lease back and adds its spend to the record in the same
 * transaction (d->key_name, d->lease, d->key_budget), so a budget is
 * overshot only by requests in flight when it was reached.  A key with
 * a budget also holds the most each request can cost (hold.h) from its
 * admission to its state_finish (d->hold), and a request is admitted
 * only while spend plus holds is below the budget: with every hold at
 * least its request's cost, the budget is overshot by less than the
 * cost of one request, whatever the concurrency.
 */
enum orgw_err state_route(const struct orgw_conf *c, const char *model,
			  bool client_provider, int64_t now,
			  struct state_route *r, struct state_admit *ad);

/*
 * A conversation's part of the route (conv.h, convroute.h).  Its record
 * (CONV:<model>:<hash>) and the pressure of the providers it may go to
 * (PRESSURE:<model>:<tag>) are read in the route transaction the request
 * makes anyway: fixed-size reads, whatever the number of conversations.
 */
struct state_conv {
	const char *hash;		/* in: conv_key.hash (borrowed) */
	bool want_explicit;		/* in: say whether the pinned endpoint
					 * caches only explicitly */
	/* Out (zeroed first). */
	bool have;			/* the conversation had a provider */
	char prev_tag[ORGW_TAG_MAX];	/* that provider, "" none */
	bool warm;			/* the turn goes to its warm provider */
	bool spread;			/* a new conversation started off the
					 * lock's provider under pressure */
	bool moved;			/* the turn may go to another provider
					 * than its last one */
	bool explicit_cache;		/* want_explicit: the pinned endpoint
					 * bills cache writes and does not
					 * cache implicitly */
	int64_t foreign_items;		/* the record's (rec_conv), 0 none */
};
/*
 * state_route() for a conversation's turn (cv non-NULL): the provider
 * comes from convroute_decide().  A turn pinned to its conversation's
 * provider (r->conversation) leaves the lock alone.  cv == NULL is
 * state_route().
 */
enum orgw_err state_route_conv(const struct orgw_conf *c, const char *model,
			       bool client_provider, int64_t now,
			       struct state_route *r, struct state_admit *ad,
			       struct state_conv *cv);
/*
 * A provider 429 of tag for model: writes PRESSURE:<model>:<tag> (until
 * now + PRESSURE_SECONDS, one more 429 counted).  With next non-NULL,
 * also finds the best candidate other than tag neither cooling nor under
 * pressure: *next gets it as a conversation route (r->conversation) and
 * *moved is true; else both are left alone.  The lock never moves.
 */
enum orgw_err state_pressure(const struct orgw_conf *c, const char *model,
			     const char *tag, int64_t now,
			     struct state_route *next, bool *moved);
/*
 * Admits a team key's request that routes nothing and costs nothing
 * (count_tokens) in one transaction: counted against ad->key's rpm, and
 * refused (TK_BUDGET, or TK_CONCURRENT while holds take the rest) when
 * its budget is spent; no lease and no hold (ad->lease and ad->hold are
 * set to NULL; ad->key's concurrency is the caller's to leave out).
 * With the state unavailable, the error and ad->verdict TK_OK, as for
 * state_route.
 */
enum orgw_err state_admit_plain(const struct orgw_conf *c,
				struct state_admit *ad);

/*
 * The most a request of model can cost (ledger_hold_estimate at its
 * stored prices, now): *usd, and *basis the LEDGER_BASIS_* it used.  The
 * store's error leaves both untouched.
 */
enum orgw_err state_estimate(const struct orgw_conf *c, const char *model,
			     int64_t prompt_max, int64_t out_max, double *usd,
			     const char **basis);

/*
 * Gives back every concurrency lease of team key name, held or not
 * (orgw-score key release NAME, for a lease whose worker is on a host
 * that cannot judge it); the requests in flight run on, unlimited.  The
 * rpm window and the spend of ended requests stay.  *n: how many were
 * released.  The state's error, or ORGW_OK (also when the key holds
 * none).
 */
enum orgw_err state_rate_release(const struct orgw_conf *c, const char *name,
				 size_t *n);

/*
 * After an inline scoring (res NULL when it failed, with error saying
 * why): writes the candidates (keeping the old ones on failure), marks
 * the model seen (MODEL_SEEN:<model>, docs/design.md 4 step 2) when its endpoints
 * were fetched, and locks the best one unless another worker locked
 * meanwhile.
 */
enum orgw_err state_route_scored(const struct orgw_conf *c,
				 const char *model,
				 const struct score_result *res,
				 const char *error, int64_t now,
				 struct state_route *r);

/*
 * Writes the candidates of a scoring (scorer and /__cron).  On failure
 * (res NULL) keeps the old candidates and records error and the attempt
 * time.  Never touches the live lock.
 */
enum orgw_err state_store_candidates(const struct orgw_conf *c,
				     const char *model,
				     const struct score_result *res,
				     const char *error, int64_t now);

/*
 * Records a failure of tag for model (reason: "5xx", "timeout", ...).
 * When the breaker trips, writes the cooldown and re-locks the model to
 * the next candidate not cooling; *tripped is set and r (when non-NULL)
 * gets the route to continue on (ROUTE_RELOCKED, or ROUTE_UNPINNED when
 * nothing is left).  A failure of a provider that cools already (tripped
 * by another request meanwhile) is not counted: no trip, and r gets the
 * model's lock as a new request would find it (ROUTE_LOCKED or
 * ROUTE_RELOCKED on another provider, or ROUTE_UNPINNED).  Otherwise,
 * and when the state is unavailable, r is left alone.
 */
enum orgw_err state_failure(const struct orgw_conf *c, const char *model,
			    const char *tag, const char *reason, int64_t now,
			    bool *tripped, struct state_route *r);

/*
 * The request's end: adds d to its ledger cell (ledger.h) and its
 * provider's measured hit rate and, when ok_tag is not NULL, resets that
 * provider's consecutive failure count.  A model not seen
 * (MODEL_SEEN:<model>) is counted under STATE_OTHER_MODEL, unless d is a
 * success (OpenRouter served it), which marks it seen.  A cost the answer did not
 * report is priced in the transaction (ledger_price): d->cost_usd and
 * d->cost_estimated say what was counted, for the request's log line, and
 * d->uncached_usd what it would have cost uncached (0 when unpriced).
 */
enum orgw_err state_finish(const struct orgw_conf *c, const char *model,
			   struct stats_delta *d, const char *ok_tag);
/*
 * A conversation's turn at the request's end (state_finish_conv): on a
 * success, its record is read, the turn classified (convcache.h) and
 * the record written back in the same batch, with the served provider,
 * the time and the turn's usage.
 */
struct fp_list;
struct state_conv_turn {
	const char *hash;		/* conv_key.hash (borrowed) */
	const char *show;		/* conv_show() of the key */
	const char *api;		/* the API's name ("chat"...) */
	const struct fp_list *fp;	/* this prompt's units (borrowed) */
	bool only_new;			/* the body holds only new input
					 * (previous_response_id): no prefix
					 * comparison */
	bool spread;			/* state_conv.spread */
	int64_t foreign_items;		/* >= 0: the record's foreign_items
					 * becomes this (the turn left
					 * reasoning items out); -1 keeps
					 * it */
	int64_t ttl_s;			/* CACHE_TTL_SECONDS */
	/* Out. */
	bool written;			/* the record was written */
	bool is_break;
	int cause;			/* enum convcache_cause */
	int64_t at;			/* -1 none */
};
/* state_finish() with a conversation's turn ct (NULL: none). */
enum orgw_err state_finish_conv(const struct orgw_conf *c, const char *model,
				struct stats_delta *d, const char *ok_tag,
				struct state_conv_turn *ct);

/* Checks that the store could be opened for writing (for /healthz),
 * with a shared lock at most (store_check); ORGW_OK or the error, with a
 * reason naming paths in why. */
/*
 * The measured hit rates of model, in a transaction s already open: its
 * HIT:<model>:<tag> keys, and for providers without one the old
 * release's STATS:<model>.  *v is malloc'd (caller frees; NULL when
 * none), *n its length.
 */
enum orgw_err state_hits(struct store *s, const char *model,
			 struct score_hit **v, size_t *n);

/* Adds cell c to the stored ledger cell at key k (ledger.h), in a write
 * transaction s already open; damaged text there starts it again. */
struct ledger_cell;
enum orgw_err state_cell_put(struct store *s, const char *k,
			     const struct ledger_cell *c);

enum orgw_err state_health(const struct orgw_conf *c, char *why, size_t n);

/*
 * Operator commands (orgw-score status/unlock/cool/uncool): each is
 * one exclusive transaction, under the same lock as the workers, and
 * logs one "operator: ..." line when it changed the state.  model must pass reqval_model_ok and tag state_tag_ok
 * (ORGW_EINVAL otherwise, nothing written); other errors are the
 * store's (ORGW_EBUSY, ORGW_EIO), logged.
 */

/* True when tag can name a provider in a state key: 1..ORGW_TAG_MAX-1
 * bytes of printable ASCII, no blank, no ':' (keys split at the last
 * ':'). */
bool state_tag_ok(const char *tag);

/*
 * Deletes BEST_PROVIDER:<model>: the next request locks the best
 * candidate again (route "relocked").  *old_tag (n bytes) gets the tag
 * that was locked, "" when there was no lock (ORGW_OK, nothing logged);
 * a lock removed goes to LOCK_LOG at now.
 */
enum orgw_err state_op_unlock(const struct orgw_conf *c, const char *model,
			      int64_t now, char *old_tag, size_t n);

/*
 * Cools tag down for model until now + seconds (PROVIDER_COOLDOWN, with
 * reason), as a breaker trip does but without touching the failure
 * count.  When tag holds the live lock the model is re-locked at once
 * to the next candidate not cooling (re-ranked at now), or the lock is
 * dropped when none is left; *moved says so.  r gets the model's lock
 * after the change: ROUTE_LOCKED (unchanged), ROUTE_RELOCKED (moved),
 * or ROUTE_UNPINNED (no lock).
 */
enum orgw_err state_op_cool(const struct orgw_conf *c, const char *model,
			    const char *tag, int64_t seconds,
			    const char *reason, int64_t now, bool *moved,
			    struct state_route *r);

/*
 * Deletes PROVIDER_COOLDOWN:<model>:<tag> and
 * PROVIDER_FAILURE:<model>:<tag>: the provider is ranked and locked
 * again from the next lock move or scoring.  *had_cooldown and
 * *had_failures say what was there (nothing there: ORGW_OK, not
 * logged).  Never moves the live lock.
 */
enum orgw_err state_op_uncool(const struct orgw_conf *c, const char *model,
			      const char *tag, bool *had_cooldown,
			      bool *had_failures);

#endif
