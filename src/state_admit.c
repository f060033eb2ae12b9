/*
 * state_admit.c - a team key's admission (state.h: the ad of
 * state_route, state_admit_plain, state_estimate): its rpm window and
 * concurrency leases (TEAMKEY_RATE:<name>, teamkey.h) and its budget's
 * holds (TEAMKEY_HOLD:<name>, hold.h), judged and written in the
 * transaction that routes the request.
 */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hold.h"
#include "log.h"
#include "workertab.h"
#include "state.h"
#include "state_impl.h"
#include "store.h"

/* The holds of key name into *hp (malloc'd, the caller frees), its key
 * into k (KEY_MAX bytes).  Damaged text starts the table again: the
 * record is soft. */
enum orgw_err
hold_read(struct store *s, const char *name, char *k, struct holds **hp)
{
	char *v = NULL;
	enum orgw_err err;

	*hp = NULL;
	key2(k, SK_TEAMKEY_HOLD, name);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if ((*hp = malloc(sizeof(**hp))) == NULL) {
		free(v);
		return ORGW_ENOMEM;
	}
	(void)holds_decode(v, *hp);
	free(v);
	return ORGW_OK;
}

/* The most a request of model can cost (ledger_hold_estimate), at the
 * candidates stored in s; *basis (may be NULL) what it used. */
static enum orgw_err
estimate_in(struct store *s, const char *model, int64_t now_s,
	    int64_t prompt_max, int64_t out_max, double ceiling_usd,
	    double *usd, const char **basis)
{
	struct rec_cands cands;
	bool have;
	enum orgw_err err;

	if ((err = read_cands(s, model, &cands, &have)) != ORGW_OK)
		return err;
	*usd = ledger_hold_estimate(have ? &cands : NULL, score_hhmm(now_s),
				    prompt_max, out_max, ceiling_usd, basis);
	record_cands_clear(&cands);
	return ORGW_OK;
}

/*
 * The budget holds of a key with a budget (hold.h), at admission: what
 * its requests in flight hold counts as spent in day and month; when
 * that leaves nothing, or the table is full, the request is refused as
 * over its concurrency (429: the budget is free again as they end).
 * Else *hp (malloc'd, the caller frees) gets its hold added (when it
 * has an id), for hold_put once it is admitted.
 */
static enum orgw_err
hold_check(struct store *s, struct state_admit *ad, const char *model,
	   struct ledger_cell *day, struct ledger_cell *month,
	   struct holds **hp)
{
	struct holds *h;
	char k[KEY_MAX];
	double held;
	enum orgw_err err;

	*hp = NULL;
	if ((err = hold_read(s, ad->key->name, k, &h)) != ORGW_OK)
		return err;
	held = holds_total(h, ad->now_ms);
	day->v[LX_KEY_SPEND] += held;
	month->v[LX_KEY_SPEND] += held;
	if (teamkey_check_budget(ad->key, day, month) != TK_OK) {
		ad->verdict = TK_CONCURRENT;
		ad->retry_after_s = 1;
		free(h);
		return ORGW_OK;
	}
	if (ad->hold == NULL) {
		free(h);
		return ORGW_OK;
	}
	if ((err = estimate_in(s, model, ad->now_ms / 1000, ad->prompt_max,
			       ad->out_max, ad->ceiling_usd, &ad->held_usd,
			       NULL)) != ORGW_OK) {
		free(h);
		return err;
	}
	if (!holds_add(h, ad->hold, ad->now_ms + ad->lease_ms,
		       ad->held_usd)) {
		ad->verdict = TK_CONCURRENT;
		ad->retry_after_s = 1;
		free(h);
		return ORGW_OK;
	}
	*hp = h;
	return ORGW_OK;
}

/* Writes the holds of ad's key. */
static enum orgw_err
hold_put(struct store *s, const struct state_admit *ad,
	 const struct holds *h)
{
	char k[KEY_MAX];

	key2(k, SK_TEAMKEY_HOLD, ad->key->name);
	return store_put_text(s, k, holds_encode(h));
}

/* True when lease l's worker is gone (workertab.h), logged for the key of
 * the admission arg. */
static bool
lease_gone(void *arg, const struct teamkey_lease *l)
{
	const struct state_admit *ad = arg;

	if (!workertab_owner_gone(l->host, l->pid, l->start))
		return false;
	log_warn("team key %s: lease of worker %lld given back: the worker "
		 "is gone",
		 ad->key->name, (long long)l->pid);
	return true;
}

/*
 * A team key's request admitted or refused (teamkey_rate_admit) against
 * its TEAMKEY_RATE:<name> record, in the route transaction.  Damaged
 * text starts the window and the leases afresh: the record is soft.
 * Written only when the request is admitted, so a refusal writes
 * nothing.
 */
enum orgw_err
admit(struct store *s, struct state_admit *ad, const char *model)
{
	struct teamkey_rate *r;
	struct holds *h = NULL;
	char k[KEY_MAX], *v = NULL;
	int64_t host, pid, start, now_ms;
	bool by_rate = false;
	enum orgw_err err;

	ad->verdict = TK_OK;
	ad->retry_after_s = 0;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return ORGW_ENOMEM;
	key2(k, SK_TEAMKEY_RATE, ad->key->name);
	if ((err = store_get(s, k, &v)) != ORGW_OK) {
		free(r);
		return err;
	}
	if (v != NULL && teamkey_rate_decode(v, r) != ORGW_OK)
		memset(r, 0, sizeof(*r));
	free(v);
	/* The rpm window and the leases are timed by the store's clock
	 * (Redis's TIME), so hosts with skewed clocks share one window; a
	 * key with only a budget needs no time of it. */
	now_ms = ad->now_ms;
	if ((ad->key->rpm > 0 || ad->key->concurrent > 0) &&
	    (err = store_now_ms(s, ad->now_ms, &now_ms)) != ORGW_OK) {
		free(r);
		return err;
	}
	if (ad->key->budget_day_usd > 0 || ad->key->budget_month_usd > 0) {
		struct ledger_cell day = *ad->day, month = *ad->month;

		teamkey_rate_use(r, ad->now_ms / 1000, &day, &month);
		ad->verdict = teamkey_check_budget(ad->key, &day, &month);
		if (ad->verdict == TK_OK &&
		    (err = hold_check(s, ad, model, &day, &month, &h)) !=
			    ORGW_OK) {
			free(r);
			return err;
		}
	}
	if (ad->verdict == TK_OK) {
		ad->verdict = teamkey_rate_admit(ad->key, r, now_ms,
						 ad->lease, ad->lease_ms,
						 &ad->retry_after_s);
		by_rate = true;
	}
	/* At the limit, a lease whose worker this host saw die (kill -9,
	 * a crash) is given back now rather than when its time ends: only
	 * then, since asking costs a system call or two per lease.  A
	 * refusal for the budget's holds (hold_check) is not the leases'
	 * to lift. */
	if (by_rate && ad->verdict == TK_CONCURRENT &&
	    teamkey_rate_drop(r, lease_gone, (void *)ad) > 0)
		ad->verdict = teamkey_rate_admit(ad->key, r, now_ms,
						 ad->lease, ad->lease_ms,
						 &ad->retry_after_s);
	if (ad->verdict == TK_OK && ad->lease != NULL &&
	    ad->key->concurrent > 0 && workertab_self(&host, &pid, &start))
		(void)teamkey_rate_own(r, ad->lease, host, pid, start);
	/* Written for a key with only a budget too: its admission must
	 * show that the state records, or its spend could not be either
	 * (a store that refuses writes refuses this one, and the request
	 * with it). */
	if (ad->verdict == TK_OK)
		err = store_put_text(s, k, teamkey_rate_encode(r));
	if (err == ORGW_OK && ad->verdict == TK_OK && h != NULL)
		err = hold_put(s, ad, h);
	free(h);
	free(r);
	return err;
}

struct estimate_arg {
	const char *model;
	int64_t prompt_max, out_max, now;
	double ceiling_usd, usd;
	const char *basis;
};

static enum orgw_err
do_estimate(struct store *s, void *arg)
{
	struct estimate_arg *a = arg;

	return estimate_in(s, a->model, a->now, a->prompt_max, a->out_max,
			   a->ceiling_usd, &a->usd, &a->basis);
}

enum orgw_err
state_estimate(const struct orgw_conf *c, const char *model,
	       int64_t prompt_max, int64_t out_max, double *usd,
	       const char **basis)
{
	struct estimate_arg a = {model, prompt_max, out_max, clock_now_s(),
				 c->price_ceiling_usd_per_mtok / 1e6, 0, NULL};
	enum orgw_err err;

	if ((err = state_txn(c, false, do_estimate, &a)) == ORGW_OK) {
		*usd = a.usd;
		*basis = a.basis;
	}
	return err;
}

static enum orgw_err
do_admit_plain(struct store *s, void *arg)
{
	return admit(s, arg, NULL);
}

enum orgw_err
state_admit_plain(const struct orgw_conf *c, struct state_admit *ad)
{
	enum orgw_err err;

	ad->verdict = TK_OK;
	ad->retry_after_s = 0;
	ad->held_usd = 0;
	ad->hold = NULL;
	ad->lease = NULL;
	if (ad->key->rpm <= 0 && ad->key->budget_day_usd <= 0 &&
	    ad->key->budget_month_usd <= 0)
		return ORGW_OK;
	if ((err = state_txn(c, true, do_admit_plain, ad)) != ORGW_OK)
		ad->verdict = TK_OK;
	return err;
}
