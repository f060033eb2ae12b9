/*
 * state_fail.c - what a provider's answers leave in the state (state.h):
 * its failures and the breaker (PROVIDER_FAILURE, PROVIDER_COOLDOWN; a
 * trip moves the lock, state_failure), its 429s (PRESSURE,
 * state_pressure) and its measured hit rates (HIT, state_hits).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convroute.h"
#include "failover.h"
#include "log.h"
#include "state.h"
#include "state_impl.h"
#include "store.h"

struct pressure_args {
	const struct orgw_conf *c;
	const char *model, *tag;
	int64_t now;
	bool want_next;
	struct state_route next;	/* out, when moved */
	bool moved;
};

static enum orgw_err
do_pressure(struct store *s, void *arg)
{
	struct pressure_args *a = arg;
	struct cool_ctx cc = {s, a->model, a->now};
	const struct rec_cand *n;
	struct rec_pressure p;
	struct rec_cands cands;
	struct rec_lock at;
	char k[KEY_MAX];
	bool have;
	enum orgw_err err;

	a->moved = false;
	if ((err = read_pressure(s, a->model, a->tag, &p)) != ORGW_OK)
		return err;
	p.until = a->now + a->c->pressure_seconds;
	p.n429++;
	key3(k, SK_PRESSURE, a->model, a->tag);
	if ((err = store_put_text(s, k, record_pressure_encode(&p))) !=
		    ORGW_OK ||
	    !a->want_next)
		return err;
	if ((err = read_cands(s, a->model, &cands, &have)) != ORGW_OK) {
		record_cands_clear(&cands);
		return err;
	}
	n = convroute_next(have ? &cands : NULL, cooling, &cc, pressured, &cc,
			   a->tag);
	if (n != NULL) {
		route_lock_from(&at, n, a->now);
		route_set(&a->next, ROUTE_LOCKED, at.tag, at.provider_name,
			  at.max_completion_tokens);
		a->next.conversation = true;
		a->moved = true;
	}
	record_cands_clear(&cands);
	return ORGW_OK;
}

enum orgw_err
state_pressure(const struct orgw_conf *c, const char *model, const char *tag,
	       int64_t now, struct state_route *next, bool *moved)
{
	struct pressure_args a;
	enum orgw_err err;

	memset(&a, 0, sizeof(a));
	a.c = c;
	a.model = model;
	a.tag = tag;
	a.now = now;
	a.want_next = next != NULL;
	if (moved != NULL)
		*moved = false;
	if (!state_tag_ok(tag))
		return ORGW_EINVAL;
	err = state_txn(c, true, do_pressure, &a);
	if (err == ORGW_OK && a.moved) {
		*next = a.next;
		if (moved != NULL)
			*moved = true;
	}
	return err;
}

struct fail_args {
	const struct orgw_conf *c;
	const char *model, *tag, *reason;
	int64_t now;
	bool *tripped;
	struct state_route *r;
	struct state_route r_in;	/* *r as the caller gave it */
};

/*
 * The failed provider cools already (another request tripped it while
 * this one was in flight on it): the request goes on with the model's
 * lock as it is now, as a new request would be routed (docs/design.md 4 steps 4
 * to 7, a lock on a cooling provider moved at once), so it fails over
 * before anything reached its client instead of spending its attempts on
 * a provider every other request has left.  A model that would need an
 * inline scoring goes on unpinned: the relay does not score mid-request.
 */
static enum orgw_err
follow_lock(struct store *s, const struct fail_args *a)
{
	enum orgw_err err;

	if (a->r == NULL)
		return ORGW_OK;
	err = decide_and_lock(s, a->c, a->model, false, a->now, a->r, NULL);
	if (a->r->kind == ROUTE_SCORED || a->r->tag[0] == '\0')
		route_set(a->r, ROUTE_UNPINNED, NULL, NULL, 0);
	return err;
}

static enum orgw_err
do_failure(struct store *s, void *arg)
{
	struct fail_args *a = arg;
	struct rec_failure f;
	struct rec_cooldown cd, trip;
	struct rec_lock lock;
	struct rec_cands cands;
	struct cool_ctx cc = {s, a->model, a->now};
	bool have_lock, have_cands, have_cd;
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;
	enum failover_breaker b;

	/* Set afresh on every run: a commit that lost a race runs this
	 * again (state_txn). */
	*a->tripped = false;
	if (a->r)
		*a->r = a->r_in;
	if ((err = read_cooldown(s, a->model, a->tag, &cd, &have_cd)))
		return err;
	key3(k, SK_PROVIDER_FAILURE, a->model, a->tag);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if (v == NULL || record_failure_decode(v, &f) != ORGW_OK)
		memset(&f, 0, sizeof(f));
	free(v);
	b = failover_breaker_fail(&f, have_cd ? &cd : NULL, a->reason, a->now,
				  a->c->fail_limit, a->c->cooldown_seconds,
				  &trip);
	if (b == BREAKER_COOLING)
		return follow_lock(s, a);
	if ((err = store_put_text(s, k, record_failure_encode(&f))))
		return err;
	if (b != BREAKER_TRIPPED)
		return ORGW_OK;
	*a->tripped = true;
	key3(k, SK_PROVIDER_COOLDOWN, a->model, a->tag);
	if ((err = store_put_text(s, k, record_cooldown_encode(&trip))))
		return err;
	if ((err = event_count(s, a->model, a->now, LX_TRIPS, a->tag)) !=
	    ORGW_OK)
		return err;
	err = read_lock_cands(s, a->model, &lock, &have_lock, &cands,
			      &have_cands);
	if (err != ORGW_OK)
		return err;
	if (have_lock && strcmp(lock.tag, a->tag) != 0 &&
	    !cooling(&cc, lock.tag)) {
		/* Another worker re-locked already: follow it. */
		if (a->r)
			route_set(a->r, ROUTE_RELOCKED, lock.tag,
				  lock.provider_name,
				  lock.max_completion_tokens);
	} else {
		char why[REC_REASON_MAX + 16];

		snprintf(why, sizeof(why), "breaker: %s", a->reason);
		err = move_lock(s, a->c, a->model, a->tag, why, a->now,
				&cands, have_cands, a->r);
	}
	record_cands_clear(&cands);
	return err;
}

enum orgw_err
state_failure(const struct orgw_conf *c, const char *model, const char *tag,
	      const char *reason, int64_t now, bool *tripped,
	      struct state_route *r)
{
	struct fail_args a = {c, model, tag, reason, now, tripped, r, {0}};
	enum orgw_err err;

	if (r)
		a.r_in = *r;
	*tripped = false;
	err = state_txn(c, true, do_failure, &a);
	if (err != ORGW_OK) {
		log_warn("state unavailable (%s): failure of %s not recorded",
			 orgw_strerror(err), tag);
		/* Nothing was written: no trip, and the request goes on
		 * where it was. */
		*tripped = false;
		if (r)
			*r = a.r_in;
	}
	if (*tripped) {
		char m[ORGW_MODEL_MAX * 4];
		log_warn("breaker tripped: model=%s provider=%s reason=%s "
			 "cooldown=%llds next=%s",
			 log_safe(m, sizeof(m), model), tag, reason,
			 (long long)c->cooldown_seconds,
			 r && r->tag[0] ? r->tag : "unpinned");
	}
	return err;
}

/*
 * A growing list of hit rates: the tag's entry (made, zeroed, when new),
 * or NULL when out of memory.
 */
struct score_hit *
hit_of(struct score_hit **v, size_t *n, size_t *cap, const char *tag)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (strcmp((*v)[i].tag, tag) == 0)
			return &(*v)[i];
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 8;
		struct score_hit *nv = realloc(*v, c * sizeof(*nv));

		if (nv == NULL)
			return NULL;
		*v = nv;
		*cap = c;
	}
	memset(&(*v)[*n], 0, sizeof((*v)[0]));
	snprintf((*v)[*n].tag, sizeof((*v)[0].tag), "%s", tag);
	return &(*v)[(*n)++];
}

static bool
hits_copy(void *dst, const void *src)
{
	struct hits_val *d = dst;
	const struct hits_val *h = src;

	d->n = h->n;
	if ((d->v = items_dup(h->v, h->n, sizeof(*d->v))) == NULL)
		d->n = 0;
	return d->n == h->n;
}

static void
hits_clear(void *val)
{
	free(((struct hits_val *)val)->v);
}

struct memo hit_memo = MEMO_INIT(sizeof(struct hits_val), hits_copy,
				 hits_clear);

enum orgw_err
state_hits(struct store *s, const char *model, struct score_hit **v,
	   size_t *n)
{
	struct hits_val hv;
	struct score_hit *have = NULL, *old = NULL, *e;
	size_t n_have = 0, cap, n_old = 0, i;
	char k[KEY_MAX], *text = NULL;
	enum orgw_err err;

	*v = NULL;
	*n = 0;
	key2(k, SK_HIT, model);
	if ((err = store_get(s, k, &text)) != ORGW_OK)
		return err;
	if (memo_get(&hit_memo, k, text, &hv)) {
		have = hv.v;
		n_have = hv.n;
		err = ORGW_OK;
	} else if ((err = record_hits_decode(text, &have, &n_have)) ==
		   ORGW_OK) {
		hv.v = have;
		hv.n = n_have;
		memo_put(&hit_memo, k, text, &hv);
	}
	free(text);
	text = NULL;
	cap = n_have;
	/* Providers the old release measured and this one has not yet. */
	key2(k, SK_STATS_OLD, model);
	if (err == ORGW_OK && (err = store_get(s, k, &text)) == ORGW_OK)
		err = record_hits_decode(text, &old, &n_old);
	free(text);
	for (i = 0; err == ORGW_OK && i < n_old; i++) {
		size_t before = n_have;

		if ((e = hit_of(&have, &n_have, &cap, old[i].tag)) == NULL)
			err = ORGW_ENOMEM;
		else if (n_have > before)
			*e = old[i];
	}
	free(old);
	if (err != ORGW_OK) {
		free(have);
		return err;
	}
	*v = have;
	*n = n_have;
	return ORGW_OK;
}
