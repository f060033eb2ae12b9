/*
 * ledger_price.c - what a request costs by the candidates' prices (see
 * ledger.h): the dearest candidate's estimate, the ceiling a hold is
 * made for, and the price a finished request is counted at, with what
 * it would have cost uncached.  Pure, like ledger.c.
 */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "ledger.h"
#include "score.h"

bool
ledger_dearest(const struct rec_cands *c, int hhmm, int64_t prompt,
	       int64_t cached, int64_t cache_write, int64_t completion,
	       double *out)
{
	double v, max = 0;
	bool any = false;
	size_t i;

	for (i = 0; c != NULL && i < c->n; i++)
		if (score_estimate_cost(&c->v[i].terms, hhmm, prompt, cached,
					cache_write, completion, &v) &&
		    isfinite(v) && (!any || v > max)) {
			max = v;
			any = true;
		}
	if (any)
		*out = max;
	return any;
}

double
ledger_ceiling_cost(double usd_per_token, int64_t prompt, int64_t completion)
{
	double n = (double)(prompt > 0 ? prompt : 0) +
		   (double)(completion > 0 ? completion : 0);

	return isfinite(usd_per_token) && usd_per_token > 0 ? n * usd_per_token :
							      0;
}

double
ledger_hold_estimate(const struct rec_cands *c, int hhmm, int64_t prompt_max,
		     int64_t out_max, double ceiling_usd, const char **basis)
{
	const char *dummy;
	int64_t most = 0;
	double usd;
	size_t i;

	for (i = 0; out_max <= 0 && c != NULL && i < c->n; i++)
		if (c->v[i].max_completion_tokens > most)
			most = c->v[i].max_completion_tokens;
	if (out_max <= 0)
		out_max = most;
	if (out_max <= 0)
		out_max = LEDGER_HOLD_OUT_DEFAULT;
	if (basis == NULL)
		basis = &dummy;
	*basis = LEDGER_BASIS_MODEL_MAX;
	if (ledger_dearest(c, hhmm, prompt_max, 0, 0, out_max, &usd))
		return usd;
	*basis = LEDGER_BASIS_CEILING;
	return ledger_ceiling_cost(ceiling_usd, prompt_max, out_max);
}

/*
 * Prices an answer whose usage did not say its cost: from the prices of
 * the candidate e it is attributed to, else from the dearest candidate
 * of the model (it may have been served by any of them), else at the
 * configured ceiling.  An answer is never counted at $0 only because
 * its price is unknown.
 */
static void
price_unknown(struct stats_delta *d, const struct rec_cand *e,
	      const struct rec_cands *c)
{
	int hhmm = score_hhmm(d->now);

	if (e != NULL &&
	    score_estimate_cost(&e->terms, hhmm, d->prompt_tokens,
				d->cached_tokens, d->cache_write_tokens,
				d->completion_tokens, &d->cost_usd))
		d->cost_basis = LEDGER_BASIS_ENDPOINT;
	else if (ledger_dearest(c, hhmm, d->prompt_tokens, d->cached_tokens,
				d->cache_write_tokens, d->completion_tokens,
				&d->cost_usd))
		d->cost_basis = LEDGER_BASIS_MODEL_MAX;
	else {
		d->cost_usd = ledger_ceiling_cost(d->price_ceiling_usd,
						  d->prompt_tokens,
						  d->completion_tokens);
		d->cost_basis = LEDGER_BASIS_CEILING;
	}
	d->cost_estimated = true;
}

void
ledger_price(struct stats_delta *d, const struct rec_cands *c)
{
	const struct rec_cand *e = NULL;
	size_t i, n = c != NULL ? c->n : 0;

	d->money_tag = NULL;
	d->uncached_usd = 0;
	if (!d->usage)
		return;
	if (d->tag != NULL && d->tag[0] != '\0' && d->off_pin == 0) {
		d->money_tag = d->tag;
		for (i = 0; i < n && e == NULL; i++)
			if (strcmp(c->v[i].tag, d->tag) == 0)
				e = &c->v[i];
	} else if (d->served != NULL && d->served[0] != '\0') {
		for (i = 0; i < n && e == NULL; i++)
			if (strcasecmp(c->v[i].provider_name, d->served) == 0 ||
			    strcasecmp(c->v[i].tag, d->served) == 0)
				e = &c->v[i];
		if (e != NULL)
			d->money_tag = e->tag;
	}
	if (d->money_tag == NULL)
		d->money_tag = RECORD_MONEY_UNKNOWN;
	if (!d->cost_known)
		price_unknown(d, e, c);
	if (e == NULL ||
	    !score_uncached_cost(&e->terms, score_hhmm(d->now),
				 d->prompt_tokens, d->completion_tokens,
				 &d->uncached_usd))
		d->uncached_usd = d->cost_usd;
}
