/*
 * convroute.c - a conversation's provider (convroute.h), pure.
 *
 * Built on route_decide(): the model's lock stays the default for new
 * conversations, and its bookkeeping (renewal, moves) is route.c's.
 * This file only says when a turn goes somewhere else: to its
 * conversation's warm provider, or past a lock under pressure.
 */
#include <string.h>

#include "convroute.h"

static bool
is_cooling(const struct route_view *rv, const char *tag)
{
	return rv->cooling != NULL && rv->cooling(rv->cooling_arg, tag);
}

static bool
is_pressed(const struct convroute_view *v, const char *tag)
{
	return v->pressure != NULL && v->pressure(v->pressure_arg, tag);
}

const struct rec_cand *
convroute_next(const struct rec_cands *c, route_cooling_fn cooling,
	       void *carg, convroute_pressure_fn pressure, void *parg,
	       const char *skip_tag)
{
	size_t i;

	for (i = 0; c != NULL && i < c->n; i++) {
		const char *t = c->v[i].tag;

		if ((skip_tag != NULL && strcmp(t, skip_tag) == 0) ||
		    (cooling != NULL && cooling(carg, t)) ||
		    (pressure != NULL && pressure(parg, t)))
			continue;
		return &c->v[i];
	}
	return NULL;
}

void
convroute_decide(const struct convroute_view *v, struct convroute_out *o)
{
	const struct route_view *rv = v->rv;
	const struct convroute_conv *cv = v->conv;
	const struct rec_cand *alt;
	const char *lock_tag = NULL;
	bool have;

	memset(o, 0, sizeof(*o));
	o->kind = route_decide(rv, &o->pick);
	if (o->kind == ROUTE_CLIENT)
		return;
	if (o->kind == ROUTE_LOCKED)
		lock_tag = rv->lock->tag;
	else if (o->kind == ROUTE_RELOCKED)
		lock_tag = o->pick->tag;
	have = cv != NULL && cv->tag[0] != '\0';

	/* Affinity: the provider of the last successful turn, while it is
	 * warm, pinned (the model is not unpinned), not cooling. */
	if (have && lock_tag != NULL &&
	    rv->now - cv->last_turn < v->idle_seconds &&
	    !is_cooling(rv, cv->tag)) {
		if (strcmp(cv->tag, lock_tag) == 0) {
			o->warm = true;
			o->tag = o->kind == ROUTE_RELOCKED ? lock_tag : NULL;
			return;
		}
		if (!v->cands_read) {
			o->needs_cands = true;
			return;
		}
		/* Still a candidate (not excluded, not gone)? */
		if ((alt = route_find(rv->cands, cv->tag)) != NULL) {
			o->warm = true;
			o->conversation = true;
			o->pick = alt;
			o->tag = alt->tag;
			return;
		}
	}
	/* No warm provider: where a new conversation goes.  The lock,
	 * unless it is under pressure; then the best candidate that is
	 * neither cooling nor under pressure, when there is one (else the
	 * lock after all: degrade, never refuse). */
	o->tag = o->kind == ROUTE_RELOCKED ? lock_tag : NULL;
	if (lock_tag != NULL && is_pressed(v, lock_tag)) {
		if (!v->cands_read) {
			o->needs_cands = true;
			return;
		}
		alt = convroute_next(rv->cands, rv->cooling, rv->cooling_arg,
				     v->pressure, v->pressure_arg, lock_tag);
		if (alt != NULL) {
			o->conversation = true;
			o->spread = true;
			o->pick = alt;
			o->tag = alt->tag;
			lock_tag = alt->tag;
		}
	}
	/* Unpinned or scored inline, the provider is not known yet: the
	 * conversation may land anywhere. */
	o->moved = have && (lock_tag == NULL || strcmp(lock_tag, cv->tag) != 0);
}

const char *
convroute_name(const struct convroute_out *o)
{
	return o->conversation ? "conversation" : route_name(o->kind);
}
