/*
 * hold.h - what a team key's requests in flight may still spend (pure).
 *
 * A budget is checked when a request comes, but its cost is known only
 * when it ends: without a hold, any number of requests admitted side by
 * side each see the same unspent budget.  So each request of a key with
 * a budget holds an estimate of the most it can cost (its prompt and its
 * output limit at the model's dearest known prices) from its admission
 * to its end, in the routing state under TEAMKEY_HOLD:<name>; admission
 * counts what is held as spent.  At its end the hold is dropped in the
 * transaction that adds the real spend.  A hold of a request that never
 * ends (its worker killed) lapses with its deadline.
 *
 * Nothing here reads the clock: the caller passes now.
 */
#ifndef ORGW_HOLD_H
#define ORGW_HOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "orgw.h"
#include "teamkey.h"

#define HOLD_MAX 256		/* most requests of one key held at once */

struct hold {
	char id[TEAMKEY_LEASE_ID_MAX + 1];	/* the request's lease id */
	int64_t until_ms;	/* it lapses then (unix ms) */
	double usd;		/* what it may spend at most */
};

struct holds {
	struct hold v[HOLD_MAX];
	size_t n;
};

/*
 * The record's text (malloc'd by cJSON: free with free()), NULL when out
 * of memory or when h would not decode (an id not 1..32 hex digits, a
 * figure negative, not finite or over 10^15, more than HOLD_MAX); and
 * back: absent (NULL) text is no holds, damaged text ORGW_EINVAL (h
 * emptied: the record is soft, the caller starts it again).
 */
char *holds_encode(const struct holds *h);
enum orgw_err holds_decode(const char *text, struct holds *h);

/* Drops the holds lapsed at now_ms (until_ms <= now_ms) and returns the
 * sum of the rest. */
double holds_total(struct holds *h, int64_t now_ms);

/* Adds a hold of usd (not finite or negative: 0) on id until until_ms;
 * false, h unchanged, when h is full or id is not 1..32 hex digits. */
bool holds_add(struct holds *h, const char *id, int64_t until_ms, double usd);

/* Drops the hold of id; false when there was none (it lapsed). */
bool holds_drop(struct holds *h, const char *id);

#endif
