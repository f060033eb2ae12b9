/*
 * route.h - which provider a request goes to (docs/design.md section 4), pure.
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
	double lock_margin;		/* LOCK_MARGIN: an idle lock moves
					 * only to a candidate this much
					 * better */
	bool client_provider;
};

/*
 * Decides the route.  For ROUTE_RELOCKED *pick is the candidate to lock
 * (borrowed from v->cands); otherwise *pick is NULL.  ROUTE_LOCKED means
 * use v->lock (and renew it): a live lock, or an idle one whose
 * provider the best candidate does not beat by v->lock_margin
 * (route_margin_keeps).  A cooling lock moves at once.
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
 * stored terms (docs/design.md section 6: when a lock moves, a time-of-day price
 * counts from its first minute), with the formula and order of score.c:
 * each candidate's scored fields become its terms now, the list is
 * sorted best first (ties keep their stored order), and a candidate
 * without a valid price now is dropped (c->n shrinks; c->v is still the
 * one allocation record_cands_clear() frees).  ORGW_ENOMEM leaves c as
 * it was: the stored order, the best that is known.
 */
enum orgw_err route_rerank(struct rec_cands *c, int utc_hhmm,
			   const struct score_params *p);

/* The candidate of c whose tag is tag (borrowed), or NULL. */
const struct rec_cand *route_find(const struct rec_cands *c, const char *tag);

/*
 * LOCK_MARGIN: true when an idle lock on held should stay
 * rather than move to best, i.e. best's score is at most
 * held's * (1 + margin).  Only within one ranking class: a best with a
 * throughput where held has none, or free where held is not, always
 * wins.  held NULL (the lock's provider is no candidate now): false.
 * held and best the same provider: true.  margin <= 0 or not finite:
 * false (no margin).
 */
bool route_margin_keeps(const struct rec_cand *held,
			const struct rec_cand *best, double margin);

/* Fills a lock record for candidate c, taken at now. */
void route_lock_from(struct rec_lock *l, const struct rec_cand *c,
		     int64_t now);

#endif
