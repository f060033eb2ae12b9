/*
 * route.h - which provider a request goes to (SPEC section 4), pure.
 *
 * The caller reads the lock, the candidates and the cooldowns inside a
 * state transaction, asks route_decide(), and writes back what it says.
 */
#ifndef ORGW_ROUTE_H
#define ORGW_ROUTE_H

#include "record.h"

enum route_kind {
	ROUTE_CLIENT,	/* the client sent its own provider object */
	ROUTE_LOCKED,	/* the live lock is used (and renewed) */
	ROUTE_RELOCKED,	/* a candidate becomes the new lock */
	ROUTE_SCORED,	/* never scored: score inline, then lock the best */
	ROUTE_UNPINNED,	/* nothing usable: OpenRouter routes */
};

/* "client", "locked", ... as in the X-Orgw-Route header.  Static. */
const char *route_name(enum route_kind k);

/* Answers whether tag is cooling down now. */
typedef bool (*route_cooling_fn)(void *arg, const char *tag);

struct route_view {
	const struct rec_lock *lock;	/* NULL when there is none */
	const struct rec_cands *cands;	/* NULL when never written */
	route_cooling_fn cooling;
	void *cooling_arg;
	int64_t now;			/* unix seconds */
	int64_t lock_idle_seconds;
	int64_t score_retry_seconds;	/* wait between failed inline scorings */
	bool client_provider;
};

/*
 * Decides the route.  For ROUTE_RELOCKED *pick is the candidate to lock
 * (borrowed from v->cands); otherwise *pick is NULL.  ROUTE_LOCKED means
 * use v->lock.
 */
enum route_kind route_decide(const struct route_view *v,
			     const struct rec_cand **pick);

/*
 * The best candidate that is not cooling and is not skip_tag (may be
 * NULL); NULL when none.  Borrowed from c.
 */
const struct rec_cand *route_next(const struct rec_cands *c,
				  route_cooling_fn cooling, void *arg,
				  const char *skip_tag);

/*
 * Re-ranks the candidates of c at UTC clock time utc_hhmm from their
 * stored terms (SPEC section 6: when a lock moves, a time-of-day price
 * counts from its first minute), with the formula and order of score.c:
 * each candidate's scored fields become its terms now, the list is
 * sorted best first (ties keep their stored order), and a candidate
 * without a valid price now is dropped (c->n shrinks; c->v is still the
 * one allocation record_cands_clear() frees).  ORGW_ENOMEM leaves c as
 * it was: the stored order, the best that is known.
 */
enum orgw_err route_rerank(struct rec_cands *c, int utc_hhmm,
			   const struct score_params *p);

/* Fills a lock record for candidate c, taken at now. */
void route_lock_from(struct rec_lock *l, const struct rec_cand *c,
		     int64_t now);

#endif
