/*
 * record_cands.c - the JSON codec of a model's candidates
 * (PROVIDER_CANDIDATE:<model>, record.h: struct rec_cands): each
 * provider's score terms, prices and price windows, and the candidates
 * made from a scoring run (record_cands_from_score).
 *
 * Pure, like record.c, whose helpers it shares (record_impl.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "record.h"
#include "record_impl.h"
#include "score.h"

/* Adds price k of kind[k]/price[k] to o: a number when valid, null when
 * unreadable (it poisons its key while its window applies), nothing when
 * not given. */
static bool
add_price(cJSON *o, int k, const unsigned char *kind, const double *price)
{
	if (kind[k] == SCORE_PRICE_OK)
		return rec_add_num(o, score_key_name[k], price[k]);
	if (kind[k] == SCORE_PRICE_BAD)
		return cJSON_AddNullToObject(o, score_key_name[k]) != NULL;
	return true;
}

/* "pricing": {base prices, "discount", "windows": [{"utc_start",
 * "utc_end", prices}]} and "supports_implicit_caching" (null when the
 * endpoint did not say). */
static bool
terms_to_json(cJSON *o, const struct score_terms *t)
{
	cJSON *pr, *arr = NULL, *w = NULL;
	bool ok;
	size_t i;
	int k;

	ok = (pr = cJSON_AddObjectToObject(o, "pricing")) != NULL;
	for (k = 0; ok && k < SCORE_KEYS; k++)
		ok = add_price(pr, k, t->base_kind, t->base);
	ok = ok && rec_add_num(pr, "discount", t->discount);
	ok = ok && (arr = cJSON_AddArrayToObject(pr, "windows")) != NULL;
	for (i = 0; ok && i < t->n_win && i < SCORE_WINDOWS_MAX; i++) {
		const struct score_window *sw = &t->win[i];

		ok = (w = cJSON_CreateObject()) != NULL &&
		     cJSON_AddItemToArray(arr, w);
		if (!ok) {
			cJSON_Delete(w);
			break;
		}
		ok = rec_add_num(w, "utc_start", sw->utc_start) &&
		     rec_add_num(w, "utc_end", sw->utc_end);
		for (k = 0; ok && k < SCORE_KEYS; k++)
			ok = add_price(w, k, sw->kind, sw->price);
	}
	if (ok && t->implicit_flag < 0)
		return cJSON_AddNullToObject(o, "supports_implicit_caching") !=
		       NULL;
	return ok && cJSON_AddBoolToObject(o, "supports_implicit_caching",
					   t->implicit_flag > 0) != NULL;
}

static cJSON *
cand_to_json(const struct rec_cand *c)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;

	ok = ok && cJSON_AddStringToObject(o, "tag", c->tag);
	ok = ok && cJSON_AddStringToObject(o, "provider_name",
					   c->provider_name);
	ok = ok && rec_add_num(o, "score", c->score);
	ok = ok && rec_add_num(o, "throughput", c->throughput);
	ok = ok && cJSON_AddBoolToObject(o, "has_throughput",
					 c->has_throughput);
	ok = ok && rec_add_num(o, "prompt", c->prompt);
	ok = ok && rec_add_num(o, "cache_read", c->cache_read);
	ok = ok && rec_add_num(o, "completion", c->completion);
	ok = ok && rec_add_num(o, "effective_input", c->effective_input);
	ok = ok && rec_add_num(o, "cost", c->cost);
	ok = ok && rec_add_num(o, "uptime", c->uptime);
	ok = ok && rec_add_num(o, "bonus", c->bonus);
	ok = ok && cJSON_AddBoolToObject(o, "implicit_cache",
					 c->implicit_cache);
	ok = ok && cJSON_AddBoolToObject(o, "free", c->free);
	ok = ok && rec_add_num(o, "hit_rate", c->hit_rate);
	ok = ok && cJSON_AddStringToObject(o, "hit_source",
					   c->hit_measured ? "measured" :
							     "assumed");
	ok = ok && rec_add_num(o, "hit_tokens", (double)c->hit_tokens);
	ok = ok && rec_add_num(o, "max_completion_tokens",
			   (double)c->max_completion_tokens);
	ok = ok && terms_to_json(o, &c->terms);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* A stored price: absent (NONE), a finite number >= 0 (OK), anything
 * else (BAD). */
static unsigned char
price_get(const cJSON *o, int k, double *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, score_key_name[k]);

	if (it == NULL)
		return SCORE_PRICE_NONE;
	if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) ||
	    it->valuedouble < 0)
		return SCORE_PRICE_BAD;
	*out = it->valuedouble;
	return SCORE_PRICE_OK;
}

/* An HHMM window bound: an integer 0..2400 with minutes below 60. */
static bool
hhmm_get(const cJSON *o, const char *k, int *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);
	double d;

	if (!cJSON_IsNumber(it))
		return false;
	d = it->valuedouble;
	if (!score_hhmm_valid(d))
		return false;
	*out = (int)d;
	return true;
}

/*
 * The re-pricing terms of candidate it into d->terms (after d's scored
 * fields).  A candidate written before re-pricing has no "pricing": its
 * scored prices become the base prices (they had any discount and the
 * window of their time applied already), without windows: state is soft,
 * such a candidate is re-ranked at its old prices until the next scoring.
 * Windows with unreadable bounds never apply and are dropped; past
 * SCORE_WINDOWS_MAX, the rest are dropped.
 */
static void
terms_from_json(const cJSON *it, struct rec_cand *d)
{
	struct score_terms *t = &d->terms;
	const cJSON *pr, *flag, *w;
	int k;

	t->throughput = d->throughput;
	t->has_throughput = d->has_throughput;
	pr = cJSON_GetObjectItemCaseSensitive(it, "pricing");
	if (!cJSON_IsObject(pr)) {
		t->base[SCORE_PROMPT] = d->prompt;
		t->base[SCORE_COMPLETION] = d->completion;
		t->base[SCORE_CACHE_READ] = d->cache_read;
		for (k = 0; k < SCORE_KEYS; k++)
			t->base_kind[k] = k == SCORE_CACHE_WRITE ?
						  SCORE_PRICE_NONE :
						  SCORE_PRICE_OK;
		t->implicit_flag = d->implicit_cache;
		return;
	}
	for (k = 0; k < SCORE_KEYS; k++)
		t->base_kind[k] = price_get(pr, k, &t->base[k]);
	t->discount = rec_get_dbl(pr, "discount");
	if (!(t->discount >= 0 && t->discount <= 1))
		t->discount = 0;
	cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(pr, "windows"))
	{
		struct score_window *sw = &t->win[t->n_win];

		if (t->n_win == SCORE_WINDOWS_MAX)
			break;
		if (!cJSON_IsObject(w) ||
		    !hhmm_get(w, "utc_start", &sw->utc_start) ||
		    !hhmm_get(w, "utc_end", &sw->utc_end))
			continue;
		for (k = 0; k < SCORE_KEYS; k++)
			sw->kind[k] = price_get(w, k, &sw->price[k]);
		t->n_win++;
	}
	flag = cJSON_GetObjectItemCaseSensitive(it, "supports_implicit_caching");
	t->implicit_flag = cJSON_IsBool(flag) ? cJSON_IsTrue(flag) : -1;
}

char *
record_cands_encode(const struct rec_cands *c)
{
	cJSON *o = cJSON_CreateObject(), *arr, *it;
	bool ok = o != NULL;
	size_t i;

	ok = ok && rec_add_num(o, "v", RECORD_VERSION);
	ok = ok && rec_add_num(o, "scored_at", (double)c->scored_at);
	ok = ok && rec_add_num(o, "attempted_at", (double)c->attempted_at);
	ok = ok && cJSON_AddStringToObject(o, "error", c->error);
	ok = ok && (arr = cJSON_AddArrayToObject(o, "candidates")) != NULL;
	for (i = 0; ok && i < c->n; i++) {
		it = cand_to_json(&c->v[i]);
		ok = it != NULL && cJSON_AddItemToArray(arr, it);
	}
	return rec_finish(o, ok);
}

enum orgw_err
record_cands_decode(const char *text, struct rec_cands *c)
{
	cJSON *o = rec_parse_obj(text), *arr, *it;
	struct rec_cand *v;
	size_t n, i = 0;

	memset(c, 0, sizeof(*c));
	if (o == NULL)
		return ORGW_EINVAL;
	c->scored_at = rec_get_i64(o, "scored_at");
	c->attempted_at = rec_get_i64(o, "attempted_at");
	rec_get_str(o, "error", c->error, sizeof(c->error));
	arr = cJSON_GetObjectItemCaseSensitive(o, "candidates");
	n = cJSON_IsArray(arr) ? (size_t)cJSON_GetArraySize(arr) : 0;
	if (n > 0) {
		if ((v = calloc(n, sizeof(*v))) == NULL) {
			cJSON_Delete(o);
			return ORGW_ENOMEM;
		}
		cJSON_ArrayForEach(it, arr)
		{
			struct rec_cand *d = &v[i];
			char src[16];

			if (!cJSON_IsObject(it))
				continue;
			rec_get_str(it, "tag", d->tag, sizeof(d->tag));
			if (d->tag[0] == '\0')
				continue;
			rec_get_str(it, "provider_name", d->provider_name,
				sizeof(d->provider_name));
			d->score = rec_get_dbl(it, "score");
			d->throughput = rec_get_dbl(it, "throughput");
			d->has_throughput = cJSON_IsTrue(
				cJSON_GetObjectItemCaseSensitive(
					it, "has_throughput"));
			d->prompt = rec_get_dbl(it, "prompt");
			d->cache_read = rec_get_dbl(it, "cache_read");
			d->completion = rec_get_dbl(it, "completion");
			d->effective_input = rec_get_dbl(it, "effective_input");
			d->cost = rec_get_dbl(it, "cost");
			d->uptime = rec_get_dbl(it, "uptime");
			d->bonus = rec_get_dbl(it, "bonus");
			d->implicit_cache = cJSON_IsTrue(
				cJSON_GetObjectItemCaseSensitive(
					it, "implicit_cache"));
			d->free = cJSON_IsTrue(
				cJSON_GetObjectItemCaseSensitive(it, "free"));
			d->hit_rate = rec_get_dbl(it, "hit_rate");
			rec_get_str(it, "hit_source", src, sizeof(src));
			d->hit_measured = strcmp(src, "measured") == 0;
			d->hit_tokens = rec_get_i64(it, "hit_tokens");
			d->max_completion_tokens =
				rec_get_i64(it, "max_completion_tokens");
			terms_from_json(it, d);
			i++;
		}
		c->v = v;
		c->n = i;
	}
	cJSON_Delete(o);
	return ORGW_OK;
}

void
record_cands_clear(struct rec_cands *c)
{
	if (c == NULL)
		return;
	free(c->v);
	c->v = NULL;
	c->n = 0;
}

/* True when e was excluded only for cooling down (scorerun.c). */
static bool
stored_cooling(const struct score_endpoint *e)
{
	return e->excluded != NULL && strcmp(e->excluded, "cooling") == 0;
}

void
record_cand_priced(struct rec_cand *d, const struct score_endpoint *e)
{
	d->score = e->score;
	d->throughput = e->throughput;
	d->has_throughput = e->has_throughput;
	d->prompt = e->prompt;
	d->cache_read = e->cache_read;
	d->completion = e->completion;
	d->effective_input = e->effective_input;
	d->cost = e->cost;
	d->bonus = e->bonus;
	d->implicit_cache = e->implicit_cache;
	d->free = e->free;
	d->hit_rate = e->hit_rate;
	d->hit_measured = e->hit_measured;
	d->hit_tokens = e->hit_tokens;
}

static void
cand_from_endpoint(struct rec_cand *d, const struct score_endpoint *e)
{
	snprintf(d->tag, sizeof(d->tag), "%s", e->tag);
	snprintf(d->provider_name, sizeof(d->provider_name), "%s",
		 e->provider_name);
	record_cand_priced(d, e);
	d->uptime = e->uptime;
	d->max_completion_tokens = e->max_completion_tokens;
	d->terms = e->terms;
}

enum orgw_err
record_cands_from_score(const struct score_result *r, int64_t now,
			struct rec_cands *c)
{
	size_t i, n = 0;

	memset(c, 0, sizeof(*c));
	c->scored_at = now;
	c->attempted_at = now;
	/* The ranked endpoints, best first, then those excluded only
	 * because they were cooling down when scored: routing skips them
	 * while they cool, and once the cooldown ends the next lock move
	 * (re-ranked at that time) can take them again without waiting
	 * for the next scoring run. */
	for (i = 0; i < r->n; i++)
		if (i < r->n_ranked || stored_cooling(&r->v[i]))
			n++;
	if (n == 0)
		return ORGW_OK;
	if ((c->v = calloc(n, sizeof(*c->v))) == NULL)
		return ORGW_ENOMEM;
	for (i = 0; i < r->n; i++)
		if (i < r->n_ranked || stored_cooling(&r->v[i]))
			cand_from_endpoint(&c->v[c->n++], &r->v[i]);
	return ORGW_OK;
}
