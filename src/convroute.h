/*
 * convroute.h - which provider a conversation's turn goes to (pure):
 * affinity, and spreading a team's new conversations under pressure.
 *
 * route.h decides for the model (its lock); this module decides for the
 * turn, on top of that decision:
 *   - a conversation keeps the provider of its last successful turn for
 *     CONVERSATION_IDLE_SECONDS after it, even when the model's lock has
 *     moved since: its cache is there;
 *   - it leaves it only when it must: the provider cools down, is no
 *     longer a candidate, or the model goes unpinned; it then goes where
 *     a new conversation goes;
 *   - a new conversation (or one without a warm provider) goes to the
 *     model's lock, unless the lock's provider is under pressure (it
 *     answered a provider 429 for the model within PRESSURE_SECONDS):
 *     then to the best candidate neither cooling nor under pressure.
 *     The lock itself does not move for pressure;
 *   - a client's own provider object wins over all of it.
 * The caller reads the lock, the candidates, the cooldowns, the pressure
 * and the conversation's record in the route transaction it already
 * makes, and writes back what the answer says.
 */
#ifndef ORGW_CONVROUTE_H
#define ORGW_CONVROUTE_H

#include "route.h"

/* What the routing needs of a conversation's record. */
struct convroute_conv {
	char tag[ORGW_TAG_MAX];	/* the provider of its last successful
				 * turn; "" none */
	int64_t last_turn;	/* unix seconds of that turn */
};

/* Answers whether tag is under pressure for the model now. */
typedef bool (*convroute_pressure_fn)(void *arg, const char *tag);

struct convroute_view {
	/* The model's view (lock, candidates, cooldowns, now, the client's
	 * provider object). */
	const struct route_view *rv;
	/* rv->cands was read (NULL then means there are none).  The
	 * caller may leave them unread while the turn goes to the live
	 * lock's provider; any other answer needs them, and says so
	 * (needs_cands). */
	bool cands_read;
	const struct convroute_conv *conv;	/* NULL: no record (a first
						 * turn) */
	int64_t idle_seconds;			/* CONVERSATION_IDLE_SECONDS */
	convroute_pressure_fn pressure;		/* NULL: none */
	void *pressure_arg;
};

struct convroute_out {
	/* The model's decision (route_decide) and what to do with the
	 * lock, when the turn goes to the lock's provider (!conversation):
	 * ROUTE_LOCKED renew it, ROUTE_RELOCKED lock pick, ... */
	enum route_kind kind;
	/* The turn goes to tag, which is not the model's lock: pin it and
	 * leave the lock alone (no renewal, no move).  X-Orgw-Route:
	 * conversation. */
	bool conversation;
	/* ROUTE_RELOCKED: the candidate to lock; conversation: the
	 * candidate of tag; else NULL.  Borrowed from rv->cands. */
	const struct rec_cand *pick;
	/* The provider the turn is pinned to; NULL for ROUTE_LOCKED
	 * (rv->lock's), ROUTE_SCORED, ROUTE_UNPINNED and ROUTE_CLIENT.
	 * Borrowed from the view. */
	const char *tag;
	bool warm;	/* the conversation has a warm provider and the turn
			 * goes there: a provider 429 waits there as
			 * docs/design.md 5 says (switching would lose its
			 * cache) */
	bool spread;	/* a new conversation started elsewhere because the
			 * lock's provider is under pressure */
	bool moved;	/* the conversation had a provider and this turn may
			 * go to another: provider-bound reasoning items are
			 * left out of the body */
	bool needs_cands;	/* the answer needs rv->cands, which were
				 * not read: read them and decide again */
};

/*
 * Decides a turn's provider (see the file comment).  Never fails: with
 * nothing usable it says what route_decide says.
 */
void convroute_decide(const struct convroute_view *v,
		      struct convroute_out *o);

/* "conversation" when o->conversation, else route_name(o->kind).
 * Static. */
const char *convroute_name(const struct convroute_out *o);

/*
 * The best candidate of c that is neither cooling nor under pressure
 * nor skip_tag (may be NULL); NULL when none.  Borrowed from c.
 */
const struct rec_cand *convroute_next(const struct rec_cands *c,
				      route_cooling_fn cooling, void *carg,
				      convroute_pressure_fn pressure,
				      void *parg, const char *skip_tag);

#endif
