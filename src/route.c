/*
 * route.c - the provider choice of docs/design.md section 4, steps 3 to 7.
 *
 * Pure: the lock, candidates, cooldowns and the time come in as
 * arguments.  A lock is kept while it is used (renewed on every request)
 * so long jobs never switch provider mid-run; it moves only when idle
 * past LOCK_IDLE_SECONDS or when its provider is cooling down.  Before a
 * lock moves, the caller re-ranks the stored candidates at the current
 * UTC clock with route_rerank() (score.c's formula on each candidate's
 * stored price terms), so the move follows the prices of now, not those
 * of the last scoring run, which may be hours old.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "route.h"
#include "score.h"

/* A candidate scored now, and where it was in the stored list. */
struct route_slot {
	struct score_endpoint e;
	size_t idx;
};

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

const struct rec_cand *
route_find(const struct rec_cands *c, const char *tag)
{
	size_t i;

	for (i = 0; c != NULL && tag != NULL && i < c->n; i++)
		if (strcmp(c->v[i].tag, tag) == 0)
			return &c->v[i];
	return NULL;
}

static int
slot_cmp(const void *va, const void *vb)
{
	const struct route_slot *a = va, *b = vb;
	int c = score_rank_cmp(&a->e, &b->e);

	if (c != 0)
		return c;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

enum orgw_err
route_rerank(struct rec_cands *c, int utc_hhmm, const struct score_params *p)
{
	struct route_slot *s;
	struct rec_cand *v;
	size_t i, n = 0;

	if (c == NULL || c->n == 0)
		return ORGW_OK;
	if ((s = calloc(c->n, sizeof(*s))) == NULL ||
	    (v = calloc(c->n, sizeof(*v))) == NULL) {
		free(s);
		return ORGW_ENOMEM;
	}
	for (i = 0; i < c->n; i++) {
		snprintf(s[i].e.tag, sizeof(s[i].e.tag), "%s", c->v[i].tag);
		score_terms_eval(&c->v[i].terms, utc_hhmm, p, &s[i].e);
		s[i].idx = i;
	}
	qsort(s, c->n, sizeof(*s), slot_cmp);
	for (i = 0; i < c->n; i++) {
		const struct score_endpoint *e = &s[i].e;
		struct rec_cand *d;

		if (e->excluded != NULL)
			continue;
		d = &v[n++];
		*d = c->v[s[i].idx];
		record_cand_priced(d, e);
	}
	memcpy(c->v, v, n * sizeof(*v));
	c->n = n;
	free(v);
	free(s);
	return ORGW_OK;
}

bool
route_margin_keeps(const struct rec_cand *held, const struct rec_cand *best,
		   double margin)
{
	if (held == NULL || best == NULL || held == best ||
	    strcmp(held->tag, best->tag) == 0)
		return held != NULL;
	if (!(margin > 0) || !isfinite(margin))
		return false;
	/* A better class (a throughput where the lock has none, a free
	 * model) wins outright: the margin compares scores of one class. */
	if (held->has_throughput != best->has_throughput ||
	    held->free != best->free)
		return false;
	return best->score <= held->score * (1 + margin);
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
	/* Step 5: the best candidate not cooling down.  An idle lock whose
	 * provider is still a candidate and not cooling is
	 * kept unless the best beats it by LOCK_MARGIN, so near-equal
	 * providers do not alternate and lose their caches. */
	if ((*pick = route_next(c, v->cooling, v->cooling_arg, NULL)) != NULL) {
		if (l != NULL && l->tag[0] != '\0' &&
		    strcmp(l->tag, (*pick)->tag) != 0 &&
		    (v->cooling == NULL ||
		     !v->cooling(v->cooling_arg, l->tag)) &&
		    route_margin_keeps(route_find(c, l->tag), *pick,
				       v->lock_margin)) {
			*pick = NULL;
			return ROUTE_LOCKED;
		}
		return ROUTE_RELOCKED;
	}
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
