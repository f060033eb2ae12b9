/*
 * route.c - the provider choice of SPEC section 4, steps 3 to 7.
 *
 * Pure: the lock, candidates, cooldowns and the time come in as
 * arguments.  A lock is kept while it is used (renewed on every request)
 * so long jobs never switch provider mid-run; it moves only when idle
 * past LOCK_IDLE_SECONDS or when its provider is cooling down.
 */
#include <stdio.h>
#include <string.h>

#include "route.h"

const char *
route_name(enum route_kind k)
{
	switch (k) {
	case ROUTE_CLIENT:
		return "client";
	case ROUTE_LOCKED:
		return "locked";
	case ROUTE_RELOCKED:
		return "relocked";
	case ROUTE_SCORED:
		return "scored";
	case ROUTE_UNPINNED:
		return "unpinned";
	}
	return "unpinned";
}

const struct rec_cand *
route_next(const struct rec_cands *c, route_cooling_fn cooling, void *arg,
	   const char *skip_tag)
{
	size_t i;

	if (c == NULL)
		return NULL;
	for (i = 0; i < c->n; i++) {
		if (skip_tag != NULL && strcmp(c->v[i].tag, skip_tag) == 0)
			continue;
		if (cooling != NULL && cooling(arg, c->v[i].tag))
			continue;
		return &c->v[i];
	}
	return NULL;
}

void
route_lock_from(struct rec_lock *l, const struct rec_cand *c, int64_t now)
{
	memset(l, 0, sizeof(*l));
	snprintf(l->tag, sizeof(l->tag), "%s", c->tag);
	snprintf(l->provider_name, sizeof(l->provider_name), "%s",
		 c->provider_name);
	l->locked_at = now;
	l->last_used = now;
	l->max_completion_tokens = c->max_completion_tokens;
}

enum route_kind
route_decide(const struct route_view *v, const struct rec_cand **pick)
{
	const struct rec_lock *l = v->lock;
	const struct rec_cands *c = v->cands;

	*pick = NULL;
	if (v->client_provider)
		return ROUTE_CLIENT;
	/* Step 4: a live lock that is neither idle nor cooling. */
	if (l != NULL && l->tag[0] != '\0' &&
	    v->now - l->last_used < v->lock_idle_seconds &&
	    (v->cooling == NULL || !v->cooling(v->cooling_arg, l->tag)))
		return ROUTE_LOCKED;
	/* Step 5: the best candidate not cooling down. */
	if ((*pick = route_next(c, v->cooling, v->cooling_arg, NULL)) != NULL)
		return ROUTE_RELOCKED;
	/* Step 6: never scored, or the last inline attempt is old enough
	 * to try again (a failed attempt must not cost every request an
	 * endpoints fetch). */
	if (c == NULL ||
	    (c->scored_at == 0 &&
	     v->now - c->attempted_at >= v->score_retry_seconds))
		return ROUTE_SCORED;
	/* Step 7: degrade, never refuse. */
	return ROUTE_UNPINNED;
}
