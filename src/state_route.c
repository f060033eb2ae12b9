/*
 * state_route.c - the route transaction (state.h: state_route,
 * state_route_conv, state_route_scored, state_store_candidates): steps
 * 4 to 7 of docs/design.md section 4, the lock decided and written,
 * a conversation's turn sent where convroute.h says, a team key's
 * request admitted in the same transaction (state_admit.c), and the
 * route under a shared lock when it writes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convbody.h"
#include "convroute.h"
#include "log.h"
#include "state.h"
#include "state_impl.h"
#include "store.h"

#define SCORE_RETRY_SECONDS 60

/* Reads the conversation's record (its routing part); *have false when
 * there is none or it does not decode. */
static enum orgw_err
read_conv(struct store *s, const char *model, const char *hash,
	  struct rec_conv *rc, bool *have)
{
	char k[KEY_MAX], *v = NULL;
	struct conv_val *cv;
	enum orgw_err err;

	memset(rc, 0, sizeof(*rc));
	*have = false;
	key3(k, SK_CONV, model, hash);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if (v != NULL) {
		if ((cv = malloc(sizeof(*cv))) == NULL) {
			free(v);
			return ORGW_ENOMEM;
		}
		if ((*have = conv_decode(k, v, cv)))
			*rc = cv->rc;
		free(cv);
	}
	free(v);
	return ORGW_OK;
}

/* The conversation's view for convroute_decide(): its record (have),
 * the model's view rv, the pressure read through cc.  CONVERSATIONS=0
 * shows no record and no pressure: every turn goes where the model's
 * lock says, as any request (the record is still kept, for the breaks
 * and the lists). */
static void
conv_view(struct convroute_view *cvw, struct convroute_conv *conv,
	  const struct route_view *rv, const struct rec_conv *rc, bool have,
	  const struct orgw_conf *c, struct cool_ctx *cc)
{
	memset(cvw, 0, sizeof(*cvw));
	memset(conv, 0, sizeof(*conv));
	cvw->rv = rv;
	cvw->idle_seconds = c->conversation_idle_seconds;
	if (!c->conversations)
		return;
	if (have) {
		snprintf(conv->tag, sizeof(conv->tag), "%s", rc->tag);
		conv->last_turn = rc->last_turn;
	}
	cvw->conv = have ? conv : NULL;
	cvw->pressure = pressured;
	cvw->pressure_arg = cc;
}

/* Fills cv's answer from o (the conversation's decision) and says,
 * when asked, whether the pinned endpoint caches only explicitly; cands
 * is read for that when the decision did not read it. */
static enum orgw_err
conv_answer(struct store *s, const char *model, const struct rec_conv *rc,
	    bool have, const struct convroute_out *o,
	    const struct state_route *r, struct rec_cands *cands,
	    bool *cands_read, struct state_conv *cv)
{
	const struct rec_cand *pc;
	bool have_cands = true;
	enum orgw_err err;

	cv->have = have && rc->tag[0] != '\0';
	snprintf(cv->prev_tag, sizeof(cv->prev_tag), "%s",
		 have ? rc->tag : "");
	cv->warm = o->warm;
	cv->spread = o->spread;
	cv->moved = o->moved;
	cv->foreign_items = have ? rc->foreign_items : 0;
	cv->explicit_cache = false;
	if (!cv->want_explicit || r->tag[0] == '\0')
		return ORGW_OK;
	if (!*cands_read) {
		if ((err = read_cands(s, model, cands, &have_cands)) !=
		    ORGW_OK)
			return err;
		*cands_read = true;
	}
	pc = route_find(cands, r->tag);
	cv->explicit_cache = pc != NULL && convbody_explicit_cache(pc);
	return ORGW_OK;
}

/* Decides with what the store holds and writes the lock it implies;
 * for a conversation's turn (cv), where convroute_decide() says. */
enum orgw_err
decide_and_lock(struct store *s, const struct orgw_conf *c, const char *model,
		bool client_provider, int64_t now, struct state_route *r,
		struct state_conv *cv)
{
	struct rec_lock lock;
	struct rec_cands cands;
	struct rec_conv rc;
	struct cool_ctx cc = {s, model, now};
	struct route_view v;
	struct convroute_view cvw;
	struct convroute_conv conv;
	struct convroute_out o;
	const struct rec_cand *pick;
	bool have_lock, have_cands = false, have_conv = false, read = false;
	char k[KEY_MAX];
	enum orgw_err err;
	enum route_kind kind;

	memset(&cands, 0, sizeof(cands));
	memset(&o, 0, sizeof(o));
	memset(&rc, 0, sizeof(rc));
	if ((err = read_lock(s, model, &lock, &have_lock)) != ORGW_OK)
		return err;
	if (cv != NULL && !client_provider &&
	    (err = read_conv(s, model, cv->hash, &rc, &have_conv)) != ORGW_OK)
		return err;
	memset(&v, 0, sizeof(v));
	v.lock = have_lock ? &lock : NULL;
	v.cands = NULL;
	v.cooling = cooling;
	v.cooling_arg = &cc;
	v.now = now;
	v.lock_idle_seconds = c->lock_idle_seconds;
	v.score_retry_seconds = SCORE_RETRY_SECONDS;
	v.lock_margin = c->lock_margin;
	v.client_provider = client_provider;
	conv_view(&cvw, &conv, &v, &rc, have_conv, c, &cc);
	/* Most requests find a live lock (step 4) or bring their own
	 * provider (step 3), which route_decide() settles before it looks
	 * at the candidates.  So the candidate list, the largest record and
	 * the costliest to decode, is read only when that first decision
	 * falls through to steps 5 to 7 (or a conversation's answer needs
	 * it); the decision taken again with it is then the whole of
	 * docs/design.md section 4. */
	if (cv != NULL)
		convroute_decide(&cvw, &o);
	else
		o.kind = route_decide(&v, &o.pick);
	if (o.needs_cands || (o.kind != ROUTE_LOCKED && o.kind != ROUTE_CLIENT)) {
		if ((err = read_cands(s, model, &cands, &have_cands)) !=
		    ORGW_OK) {
			record_cands_clear(&cands);
			return err;
		}
		if (have_cands && (err = rerank(s, c, model, &cands, now)) !=
					  ORGW_OK) {
			record_cands_clear(&cands);
			return err;
		}
		read = true;
		v.cands = have_cands ? &cands : NULL;
		cvw.cands_read = true;
		if (cv != NULL)
			convroute_decide(&cvw, &o);
		else
			o.kind = route_decide(&v, &o.pick);
	}
	kind = o.kind;
	pick = o.pick;
	key2(k, SK_BEST_PROVIDER, model);
	if (o.conversation && pick != NULL) {
		/* The conversation's provider, not the lock's: pinned there,
		 * the lock left as it is (no renewal, no move). */
		struct rec_lock at;

		route_lock_from(&at, pick, now);
		route_set(r, ROUTE_LOCKED, at.tag, at.provider_name,
			  at.max_completion_tokens);
		r->conversation = true;
		kind = ROUTE_CLIENT;	/* nothing below writes */
	}
	switch (kind) {
	case ROUTE_LOCKED:
		route_set(r, ROUTE_LOCKED, lock.tag, lock.provider_name,
			  lock.max_completion_tokens);
		/* Renew last_used (seconds): a lock renewed earlier in the
		 * same second would be rewritten with the very same bytes. */
		if (lock.last_used == now)
			break;
		lock.last_used = now;
		err = store_put_text(s, k, record_lock_encode(&lock));
		break;
	case ROUTE_RELOCKED: {
		const char *why = !have_lock	       ? "no lock" :
				  cooling(&cc, lock.tag) ? "cooling" :
							   "idle";
		struct rec_lock old = lock;

		route_lock_from(&lock, pick, now);
		route_set(r, ROUTE_RELOCKED, lock.tag, lock.provider_name,
			  lock.max_completion_tokens);
		err = lock_write(s, model, &old, have_lock, &lock, now, why);
		break;
	}
	case ROUTE_SCORED:
		route_set(r, ROUTE_SCORED, NULL, NULL, 0);
		break;
	case ROUTE_CLIENT:
		if (!r->conversation)
			route_set(r, ROUTE_CLIENT, NULL, NULL, 0);
		break;
	case ROUTE_UNPINNED:
		route_set(r, ROUTE_UNPINNED, NULL, NULL, 0);
		break;
	}
	if (err == ORGW_OK && cv != NULL)
		err = conv_answer(s, model, &rc, have_conv, &o, r, &cands,
				  &read, cv);
	record_cands_clear(&cands);
	return err;
}

struct route_args {
	const struct orgw_conf *c;
	const char *model;
	bool client_provider;
	int64_t now;
	struct state_route *r;
	const struct score_result *res;
	const char *error;
	bool routed;		/* do_route_read settled it */
	struct state_admit *admit;	/* a team key's limits, or NULL */
	struct state_conv *conv;	/* a conversation's turn, or NULL */
};

/*
 * Marks model seen (MODEL_SEEN:<model>, docs/design.md 4 step 2) once its endpoints
 * were fetched: one key per model, so what a request does under the lock
 * does not grow with the number of models.
 */
static enum orgw_err
seen_mark(struct store *s, const char *model, int64_t now)
{
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	key2(k, SK_MODEL_SEEN, model);
	if ((err = store_get(s, k, &v)) != ORGW_OK || v != NULL) {
		free(v);
		return err;
	}
	return store_put_text(s, k, record_model_seen_encode(now));
}

static enum orgw_err
do_route(struct store *s, void *arg)
{
	struct route_args *a = arg;
	enum orgw_err err;

	if (a->admit != NULL) {
		if ((err = admit(s, a->admit, a->model)) != ORGW_OK)
			return err;
		if (a->admit->verdict != TK_OK)
			return ORGW_OK;
	}
	return decide_and_lock(s, a->c, a->model, a->client_provider, a->now,
			       a->r, a->conv);
}

/*
 * do_route_read for a conversation's turn: settled only when it goes to
 * the live lock's provider without the candidates (warm there, or new
 * and the lock not under pressure); anything else is do_route's.
 */
static enum orgw_err
route_read_conv(struct store *s, struct route_args *a,
		const struct route_view *v, struct cool_ctx *cc)
{
	struct convroute_view cvw;
	struct convroute_conv conv;
	struct convroute_out o;
	struct rec_conv rc;
	struct rec_cands cands;
	bool have, read = false;
	enum orgw_err err;

	if ((err = read_conv(s, a->model, a->conv->hash, &rc, &have)) !=
	    ORGW_OK)
		return err;
	conv_view(&cvw, &conv, v, &rc, have, a->c, cc);
	convroute_decide(&cvw, &o);
	if (o.kind != ROUTE_LOCKED || o.needs_cands || o.conversation)
		return ORGW_OK;
	route_set(a->r, ROUTE_LOCKED, v->lock->tag, v->lock->provider_name,
		  v->lock->max_completion_tokens);
	memset(&cands, 0, sizeof(cands));
	err = conv_answer(s, a->model, &rc, have, &o, a->r, &cands, &read,
			  a->conv);
	record_cands_clear(&cands);
	a->routed = err == ORGW_OK;
	return err;
}

/*
 * The route when it writes nothing: a client's own provider object, or a
 * live lock that is neither idle nor cooling and was renewed already this
 * second (renewing it would write the same bytes).  Under load, nearly
 * every request is one of these, and a shared lock lets them route side
 * by side.  Anything else leaves a->routed false for do_route.
 */
static enum orgw_err
do_route_read(struct store *s, void *arg)
{
	struct route_args *a = arg;
	struct rec_lock lock;
	struct cool_ctx cc = {s, a->model, a->now};
	struct route_view v;
	const struct rec_cand *pick;
	bool have_lock;
	enum orgw_err err;

	a->routed = false;
	if (a->client_provider) {
		route_set(a->r, ROUTE_CLIENT, NULL, NULL, 0);
		a->routed = true;
		return ORGW_OK;
	}
	if ((err = read_lock(s, a->model, &lock, &have_lock)) != ORGW_OK ||
	    !have_lock || lock.last_used != a->now)
		return err;
	memset(&v, 0, sizeof(v));
	v.lock = &lock;
	v.cooling = cooling;
	v.cooling_arg = &cc;
	v.now = a->now;
	v.lock_idle_seconds = a->c->lock_idle_seconds;
	v.score_retry_seconds = SCORE_RETRY_SECONDS;
	v.lock_margin = a->c->lock_margin;
	if (a->conv != NULL)
		return route_read_conv(s, a, &v, &cc);
	if (route_decide(&v, &pick) != ROUTE_LOCKED)
		return ORGW_OK;
	route_set(a->r, ROUTE_LOCKED, lock.tag, lock.provider_name,
		  lock.max_completion_tokens);
	a->routed = true;
	return ORGW_OK;
}

enum orgw_err
state_route(const struct orgw_conf *c, const char *model,
	    bool client_provider, int64_t now, struct state_route *r,
	    struct state_admit *ad)
{
	return state_route_conv(c, model, client_provider, now, r, ad, NULL);
}

enum orgw_err
state_route_conv(const struct orgw_conf *c, const char *model,
		 bool client_provider, int64_t now, struct state_route *r,
		 struct state_admit *ad, struct state_conv *cv)
{
	struct route_args a = {c, model, client_provider, now, r, NULL, NULL,
			       false, NULL, cv};
	enum orgw_err err;

	if (cv != NULL) {
		const char *hash = cv->hash;
		bool want = cv->want_explicit;

		memset(cv, 0, sizeof(*cv));
		cv->hash = hash;
		cv->want_explicit = want;
	}

	route_set(r, client_provider ? ROUTE_CLIENT : ROUTE_UNPINNED, NULL,
		  NULL, 0);
	if (ad != NULL) {
		ad->verdict = TK_OK;
		ad->retry_after_s = 0;
		ad->held_usd = 0;
		ad->ceiling_usd = c->price_ceiling_usd_per_mtok / 1e6;
		if (ad->key->rpm > 0 || ad->key->concurrent > 0 ||
		    ad->key->budget_day_usd > 0 || ad->key->budget_month_usd > 0)
			a.admit = ad;
	}
	/* A request whose key has limits is admitted under the exclusive
	 * lock, with what the requests before it counted. */
	if (a.admit == NULL &&
	    state_txn(c, false, do_route_read, &a) == ORGW_OK && a.routed)
		return ORGW_OK;
	err = state_txn(c, true, do_route, &a);
	if (err != ORGW_OK && a.admit != NULL) {
		/* Fail closed: a key with limits or a budget is served only
		 * when its admission was recorded, else nothing would hold
		 * its rpm, its leases or its spend (a full disk, Redis at
		 * maxmemory, a lock held too long). */
		a.admit->verdict = TK_UNAVAILABLE;
		a.admit->retry_after_s = STATE_UNAVAILABLE_RETRY_S;
		a.admit->lease = NULL;
		a.admit->hold = NULL;
		log_warn("state unavailable (%s): team key %s refused",
			 orgw_strerror(err), a.admit->key->name);
		return err;
	}
	if (err != ORGW_OK) {
		log_warn("state unavailable (%s): routing %s unpinned",
			 orgw_strerror(err),
			 client_provider ? "by the client" : "by OpenRouter");
		route_set(r, client_provider ? ROUTE_CLIENT : ROUTE_UNPINNED,
			  NULL, NULL, 0);
	}
	return err;
}

/* Writes candidates for a scoring outcome (see state_store_candidates). */
static enum orgw_err
write_cands(struct store *s, const char *model, const struct score_result *res,
	    const char *error, int64_t now)
{
	struct rec_cands cands;
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	key2(k, SK_PROVIDER_CANDIDATE, model);
	if (res != NULL) {
		if ((err = record_cands_from_score(res, now, &cands)))
			return err;
	} else {
		/* Keep what the last good scoring found. */
		if ((err = store_get(s, k, &v)) != ORGW_OK)
			return err;
		if (v == NULL || record_cands_decode(v, &cands) != ORGW_OK)
			memset(&cands, 0, sizeof(cands));
		free(v);
		cands.attempted_at = now;
		snprintf(cands.error, sizeof(cands.error), "%s",
			 error ? error : "scoring failed");
	}
	err = store_put_text(s, k, record_cands_encode(&cands));
	record_cands_clear(&cands);
	return err;
}

static enum orgw_err
do_route_scored(struct store *s, void *arg)
{
	struct route_args *a = arg;
	enum orgw_err err;

	if ((err = write_cands(s, a->model, a->res, a->error, a->now)))
		return err;
	if (a->res != NULL && (err = seen_mark(s, a->model, a->now)))
		return err;
	err = decide_and_lock(s, a->c, a->model, false, a->now, a->r, NULL);
	/* Locked by this scoring: report it as such (docs/design.md 4 step 6). */
	if (err == ORGW_OK && a->r->kind == ROUTE_RELOCKED)
		a->r->kind = ROUTE_SCORED;
	if (a->r->kind == ROUTE_SCORED && a->r->tag[0] == '\0')
		a->r->kind = ROUTE_UNPINNED;
	return err;
}

enum orgw_err
state_route_scored(const struct orgw_conf *c, const char *model,
		   const struct score_result *res, const char *error,
		   int64_t now, struct state_route *r)
{
	struct route_args a = {c, model, false, now, r, res, error, false, NULL, NULL};
	enum orgw_err err;

	route_set(r, ROUTE_UNPINNED, NULL, NULL, 0);
	err = state_txn(c, true, do_route_scored, &a);
	if (err != ORGW_OK)
		route_set(r, ROUTE_UNPINNED, NULL, NULL, 0);
	return err;
}

static enum orgw_err
do_store_cands(struct store *s, void *arg)
{
	struct route_args *a = arg;

	return write_cands(s, a->model, a->res, a->error, a->now);
}

enum orgw_err
state_store_candidates(const struct orgw_conf *c, const char *model,
		       const struct score_result *res, const char *error,
		       int64_t now)
{
	struct route_args a = {c, model, false, now, NULL, res, error, false,
			       NULL, NULL};

	return state_txn(c, true, do_store_cands, &a);
}
