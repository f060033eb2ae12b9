/*
 * score.c - pure scoring of a model's endpoints (docs/design.md section 6).
 *
 * Input: the body of GET /models/{author}/{slug}/endpoints (docs/upstream.md
 * section 1), the current UTC clock as HHMM and the scoring parameters.
 * Output: one struct score_endpoint per input endpoint, carrying every
 * term of the formula, the candidates ranked best first and the excluded
 * endpoints after them in input order, each with a static reason.
 *
 * Invariants:
 *   - No I/O, no clock, no environment: the caller passes the time, so
 *     the tests are deterministic.
 *   - Every double stored in a result is finite and >= 0.  Upstream data
 *     is untrusted: cJSON turns "1e999" into inf, prices may be garbage,
 *     parameters may be anything, so each step guards instead of trusting.
 *   - Any field may be absent or null; a value of the wrong type is
 *     treated as missing; unknown fields are ignored (docs/upstream.md:
 *     "read every member as optional and ignore what is unknown").
 *
 * Two steps per endpoint: its JSON is read into struct score_terms
 * (base prices, the override windows that can apply for ranking,
 * discount, throughput, caching flag), then the formula runs on those
 * terms alone (score_terms_eval).  The terms are stored with each
 * candidate, so the gateway re-ranks at another time of day with this
 * very formula when a lock moves (route_rerank).
 *
 * Ownership: score_endpoints() fills a struct score_result whose v is
 * malloc'd; score_result_free() releases it.  Nothing here keeps state
 * between calls, and the cJSON tree never outlives score_endpoints().
 *
 * Ranking (docs/design.md section 6): has_throughput desc, free desc, score desc,
 * cost asc, tag asc, input position asc.  Free endpoints (cost == 0)
 * cannot be divided by, so their score is throughput * bonus and they
 * rank above every paid endpoint with a throughput: "zero cost ranks by
 * throughput alone", and a free endpoint is never worse for the user
 * than a paid one.  Endpoints with no throughput (null without an API
 * key) score 0 and rank below every endpoint that has one.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "score.h"

/*
 * A model has tens of endpoints.  The cap bounds what a hostile or broken
 * upstream body ("[{},{},...]" is 3 bytes an endpoint) can make us
 * allocate; a bigger list is not an endpoints response we accept.
 */
#define SCORE_MAX_ENDPOINTS 4096

/* docs/design.md section 6: cost = effective_input * 0.4 + completion * 0.6. */
#define SCORE_INPUT_WEIGHT 0.4
#define SCORE_OUTPUT_WEIGHT 0.6

/* Latest HHMM a window bound may name; 2400 is the end of the day. */
#define SCORE_HHMM_MAX 2400

/* One ranked endpoint and its input position, for a stable qsort. */
struct score_slot {
	const struct score_endpoint *e;
	size_t idx;
};

/*
 * Returns the member key of object o, or NULL when o is not an object,
 * key is absent or its value is JSON null ("absent or null" are one case).
 */
static const cJSON *
json_get(const cJSON *o, const char *key)
{
	const cJSON *j;

	if (!cJSON_IsObject(o))
		return NULL;
	j = cJSON_GetObjectItemCaseSensitive(o, key);
	if (j == NULL || cJSON_IsNull(j))
		return NULL;
	return j;
}

/* True and *out set when j is a finite JSON number. */
static bool
json_number(const cJSON *j, double *out)
{
	if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble))
		return false;
	*out = j->valuedouble;
	return true;
}

/*
 * Copies src into dst (size dstsz > 0), truncating so that dst is always
 * NUL-terminated and never ends in a partial UTF-8 sequence.
 */
static void
copy_str(char *dst, size_t dstsz, const char *src)
{
	size_t n;

	n = strlen(src);
	if (n >= dstsz) {
		n = dstsz - 1;
		/* Back off to the lead byte of the character we cut. */
		while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/*
 * Marks e excluded with the static reason and a formatted detail.  The
 * first reason wins: later checks still fill the terms for display.
 * A truncated detail is acceptable (it is only shown), so the snprintf
 * length is deliberately not checked.
 */
static void __attribute__((format(printf, 3, 4)))
exclude(struct score_endpoint *e, const char *reason, const char *fmt, ...)
{
	va_list ap;

	if (e->excluded != NULL)
		return;
	e->excluded = reason;
	va_start(ap, fmt);
	(void)vsnprintf(e->why, sizeof(e->why), fmt, ap);
	va_end(ap);
}

/*
 * Parses one price: a decimal string (docs/upstream.md sections 1 and 12)
 * or, leniently, a JSON number.  The string must be all digits, '.',
 * 'e', 'E', '+' and '-', so strtod's extras (leading blanks, hex floats,
 * "inf", "nan") are refused before it runs, and the end pointer must
 * reach the NUL.  Nothing in orgw calls setlocale, so strtod reads '.'
 * as the decimal point.  Overflow gives inf and is refused; underflow
 * gives a tiny or zero value, which is a valid price.
 */
static bool
price_parse(const cJSON *j, double *out)
{
	const char *s;
	char *end;
	double d;

	if (cJSON_IsNumber(j)) {
		d = j->valuedouble;
	} else if (cJSON_IsString(j) && j->valuestring != NULL) {
		s = j->valuestring;
		if (*s == '\0' || s[strspn(s, "0123456789.eE+-")] != '\0')
			return false;
		d = strtod(s, &end);
		if (end == s || *end != '\0')
			return false;
	} else
		return false;
	if (!isfinite(d) || d < 0)
		return false;
	*out = d == 0 ? 0.0 : d; /* no -0 */
	return true;
}

bool
score_hhmm_valid(double d)
{
	return d >= 0 && d <= SCORE_HHMM_MAX && d == floor(d) &&
	       (int)d % 100 < 60;
}

/* True and *out set when j is an HHMM bound (score_hhmm_valid). */
static bool
hhmm_parse(const cJSON *j, int *out)
{
	double d;

	if (!json_number(j, &d) || !score_hhmm_valid(d))
		return false;
	*out = (int)d;
	return true;
}

/* The pricing key names of enum score_key (docs/upstream.md section 1). */
const char *const score_key_name[SCORE_KEYS] = {"prompt", "completion",
						"input_cache_read",
						"input_cache_write"};

/* The kind of price j is (NULL: not given), its value in *out when OK. */
static unsigned char
price_kind(const cJSON *j, double *out)
{
	if (j == NULL)
		return SCORE_PRICE_NONE;
	return price_parse(j, out) ? SCORE_PRICE_OK : SCORE_PRICE_BAD;
}

/*
 * The window of override entry ov, when it can apply for ranking.
 * docs/upstream.md section 2: an entry applies when all its condition
 * fields match.  For ranking:
 *   - min_prompt_tokens present: ignored (docs/design.md section 6); the tier
 *     depends on the request, which scoring does not know.
 *   - utc_start and utc_end: both needed; one alone, or a bound that is
 *     not a valid HHMM, is a condition we cannot evaluate, so the entry
 *     never applies (rather than applying always).
 *   - no condition field at all: applies always, [0, 2400).
 * A condition field the schema gains later would go unnoticed here and
 * the entry would apply always; re-check docs/upstream.md when it changes.
 */
static bool
override_window(const cJSON *ov, int *start, int *end)
{
	const cJSON *js, *je;

	if (!cJSON_IsObject(ov) || json_get(ov, "min_prompt_tokens") != NULL)
		return false;
	js = json_get(ov, "utc_start");
	je = json_get(ov, "utc_end");
	if (js == NULL && je == NULL) {
		*start = 0;
		*end = SCORE_HHMM_MAX;
		return true;
	}
	return hhmm_parse(js, start) && hhmm_parse(je, end);
}

/*
 * Reads pricing (any cJSON value) into the price terms of t: the base
 * prices, every override entry that can apply for ranking and carries one
 * of our keys (in order: later entries win per key), the discount (a
 * number in [0, 1]; anything else is none).  False when there are more
 * such entries than SCORE_WINDOWS_MAX.
 */
static bool
terms_pricing(const cJSON *pr, struct score_terms *t)
{
	const cJSON *ovs, *ov;
	struct score_window w;
	double d;
	bool any;
	int k;

	for (k = 0; k < SCORE_KEYS; k++)
		t->base_kind[k] = price_kind(json_get(pr, score_key_name[k]),
					     &t->base[k]);
	ovs = json_get(pr, "overrides");
	if (cJSON_IsArray(ovs)) {
		for (ov = ovs->child; ov != NULL; ov = ov->next) {
			memset(&w, 0, sizeof(w));
			if (!override_window(ov, &w.utc_start, &w.utc_end))
				continue;
			any = false;
			for (k = 0; k < SCORE_KEYS; k++) {
				w.kind[k] = price_kind(json_get(ov, score_key_name[k]),
						       &w.price[k]);
				any = any || w.kind[k] != SCORE_PRICE_NONE;
			}
			if (!any)
				continue;
			if (t->n_win == SCORE_WINDOWS_MAX)
				return false;
			t->win[t->n_win++] = w;
		}
	}
	if (json_number(json_get(pr, "discount"), &d) && d >= 0 && d <= 1)
		t->discount = d;
	return true;
}

bool
score_window_match(int start, int end, int t)
{
	if (start == end)
		return false;
	if (start < end)
		return t >= start && t < end;
	return t >= start || t < end; /* wraps midnight */
}

/*
 * Base price, then every window that matches in order: one that carries
 * the key replaces the value so far, valid or not (later entries win per
 * key, docs/upstream.md section 2), so a garbage base price is cured by a
 * valid override that applies now and a garbage override poisons it.
 * Then the endpoint-wide discount.  Terms may come from a damaged state
 * record, so the result is checked again.
 */
bool
score_terms_price(const struct score_terms *t, enum score_key k,
		  int utc_hhmm, double *out)
{
	const struct score_window *w;
	double v, disc;
	bool ok;
	size_t i;

	if (t == NULL || out == NULL || (int)k < 0 || k >= SCORE_KEYS)
		return false;
	v = t->base[k];
	ok = t->base_kind[k] == SCORE_PRICE_OK;
	for (i = 0; i < t->n_win && i < SCORE_WINDOWS_MAX; i++) {
		w = &t->win[i];
		if (w->kind[k] == SCORE_PRICE_NONE ||
		    !score_window_match(w->utc_start, w->utc_end, utc_hhmm))
			continue;
		ok = w->kind[k] == SCORE_PRICE_OK;
		v = w->price[k];
	}
	if (!ok || !isfinite(v) || v < 0)
		return false;
	disc = t->discount;
	if (disc > 0 && disc <= 1)
		v *= 1 - disc;
	*out = v == 0 ? 0.0 : v; /* no -0 */
	return true;
}

bool
score_price_now(const void *pricing, const char *key, int utc_hhmm, double *out)
{
	struct score_terms t;
	int k;

	if (pricing == NULL || key == NULL || out == NULL ||
	    !cJSON_IsObject((const cJSON *)pricing))
		return false;
	for (k = 0; k < SCORE_KEYS; k++)
		if (strcmp(key, score_key_name[k]) == 0)
			break;
	memset(&t, 0, sizeof(t));
	if (k == SCORE_KEYS || !terms_pricing(pricing, &t))
		return false;
	return score_terms_price(&t, (enum score_key)k, utc_hhmm, out);
}

bool
score_uncached_cost(const struct score_terms *t, int utc_hhmm, int64_t prompt,
		    int64_t completion, double *out)
{
	double pp, cp, v;

	if (out == NULL || !score_terms_price(t, SCORE_PROMPT, utc_hhmm, &pp) ||
	    !score_terms_price(t, SCORE_COMPLETION, utc_hhmm, &cp))
		return false;
	v = (double)(prompt > 0 ? prompt : 0) * pp +
	    (double)(completion > 0 ? completion : 0) * cp;
	if (!isfinite(v))
		return false;
	*out = v;
	return true;
}

bool
score_estimate_cost(const struct score_terms *t, int utc_hhmm, int64_t prompt,
		    int64_t cached, int64_t cache_write, int64_t completion,
		    double *out)
{
	double pp, cp, rp, wp, v;
	int64_t plain;

	if (out == NULL || !score_terms_price(t, SCORE_PROMPT, utc_hhmm, &pp) ||
	    !score_terms_price(t, SCORE_COMPLETION, utc_hhmm, &cp))
		return false;
	if (!score_terms_price(t, SCORE_CACHE_READ, utc_hhmm, &rp))
		rp = pp;
	if (!score_terms_price(t, SCORE_CACHE_WRITE, utc_hhmm, &wp))
		wp = pp;
	prompt = prompt > 0 ? prompt : 0;
	cached = cached > 0 ? cached : 0;
	cache_write = cache_write > 0 ? cache_write : 0;
	plain = prompt - cached - cache_write;
	v = (double)(plain > 0 ? plain : 0) * pp + (double)cached * rp +
	    (double)cache_write * wp +
	    (double)(completion > 0 ? completion : 0) * cp;
	if (!isfinite(v))
		return false;
	*out = v;
	return true;
}

int
score_hhmm(int64_t t)
{
	int64_t s = t % 86400;

	if (s < 0)
		s += 86400;
	return (int)(s / 3600 * 100 + s % 3600 / 60);
}

/* Saturating conversion of a finite double to int. */
static int
clamp_int(double d)
{
	if (d >= (double)INT_MAX)
		return INT_MAX;
	if (d <= (double)INT_MIN)
		return INT_MIN;
	return (int)d;
}

bool
score_tag_ok(const char *s)
{
	const unsigned char *p;

	if (strlen(s) >= ORGW_TAG_MAX)
		return false;
	for (p = (const unsigned char *)s; *p != '\0'; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			return false;
	return true;
}

/* Scoring parameters made safe to compute with. */
static void
params_sanitize(const struct score_params *in, struct score_params *p)
{
	p->hit_rate = in->hit_rate;
	if (!(p->hit_rate >= 0)) /* also NaN */
		p->hit_rate = 0;
	if (p->hit_rate > 1)
		p->hit_rate = 1;
	p->cache_bonus = in->cache_bonus;
	if (!isfinite(p->cache_bonus) || p->cache_bonus < 0)
		p->cache_bonus = 1;
	p->min_uptime = in->min_uptime;
	if (!isfinite(p->min_uptime))
		p->min_uptime = 0;
	p->hit_evidence_tokens = in->hit_evidence_tokens;
	p->hits = in->hits;
	p->n_hits = in->hits != NULL ? in->n_hits : 0;
	p->secret = in->secret;
}

void
score_hit_add(struct score_hit *h, int64_t prompt, int64_t cached,
	      double half_life_tokens)
{
	double keep = 0, w;

	if (prompt <= 0)
		return;
	if (cached < 0)
		cached = 0;
	if (cached > prompt)
		cached = prompt;
	if (!(h->rate >= 0 && h->rate <= 1) || !(h->weight >= 0) ||
	    !isfinite(h->weight))
		h->rate = h->weight = 0;
	if (isfinite(half_life_tokens) && half_life_tokens > 0)
		keep = pow(0.5, (double)prompt / half_life_tokens);
	w = h->weight * keep + (double)prompt;
	h->rate = (h->rate * h->weight * keep + (double)cached) / w;
	if (!(h->rate >= 0))
		h->rate = 0;
	if (h->rate > 1)
		h->rate = 1;
	h->weight = w;
	h->tokens = h->tokens < 0 || h->tokens > INT64_MAX - prompt ?
			    prompt :
			    h->tokens + prompt;
}

double
score_hit_pick(const struct score_params *p, const char *tag, bool *measured,
	       int64_t *tokens)
{
	const struct score_hit *h = NULL;
	double r = p->hit_rate;
	size_t i;

	for (i = 0; p->hits != NULL && tag != NULL && i < p->n_hits; i++)
		if (strcmp(p->hits[i].tag, tag) == 0) {
			h = &p->hits[i];
			break;
		}
	if (measured != NULL)
		*measured = false;
	if (tokens != NULL)
		*tokens = h != NULL ? h->tokens : 0;
	if (h != NULL && h->tokens > 0 &&
	    h->tokens >= p->hit_evidence_tokens && h->rate >= 0 &&
	    h->rate <= 1) {
		r = h->rate;
		if (measured != NULL)
			*measured = true;
	}
	return r;
}

/* The metadata of endpoint ep: names, status, uptime, limits. */
/* True when j is a string that holds secret (a non-empty key). */
static bool
holds_secret(const cJSON *j, const char *secret)
{
	return secret != NULL && secret[0] != '\0' && cJSON_IsString(j) &&
	       j->valuestring != NULL && strstr(j->valuestring, secret) != NULL;
}

static void
endpoint_meta(const cJSON *ep, const struct score_params *p,
              struct score_endpoint *e)
{
	const cJSON *j;

	const cJSON *name = json_get(ep, "provider_name");
	const cJSON *tag = json_get(ep, "tag");
	double d;

	/*
	 * A hostile or broken upstream may echo the key into an endpoint's
	 * names; from the state they would reach X-Orgw-Provider, the log,
	 * /metrics, /stats and /status.  Checked on the whole strings, before
	 * copy_str cuts them, so not even a prefix of the key is kept.
	 */
	if (holds_secret(name, p->secret) || holds_secret(tag, p->secret)) {
		copy_str(e->provider_name, sizeof(e->provider_name),
		         SCORE_WITHHELD);
		copy_str(e->tag, sizeof(e->tag), SCORE_WITHHELD);
		exclude(e, "secret", "tag or name holds the upstream key");
		return;
	}
	if (cJSON_IsString(name) && name->valuestring != NULL)
		copy_str(e->provider_name, sizeof(e->provider_name),
		         name->valuestring);

	/* The tag is what provider.order takes (docs/design.md section 4). */
	if (cJSON_IsString(tag) && tag->valuestring != NULL &&
	    tag->valuestring[0] != '\0') {
		copy_str(e->tag, sizeof(e->tag), tag->valuestring);
		if (!score_tag_ok(tag->valuestring))
			exclude(e, "bad tag", "tag too long or not a slug");
	} else
		exclude(e, "no tag", "tag missing or not a string");

	/* status: 0 is normal, other values undocumented (docs/upstream.md 1). */
	if (json_number(json_get(ep, "status"), &d)) {
		e->status = clamp_int(d);
		if (d != 0)
			exclude(e, "status", "status %g", d);
	}

	/*
	 * uptime_last_30m is percent, 0..100 (docs/design.md section 6, docs/upstream.md
	 * section 1): 1 means 1 %, not a fraction of one.  A value outside
	 * 0..100 is nonsense and counts as missing; missing (null) is never
	 * excluded.
	 */
	if (json_number(json_get(ep, "uptime_last_30m"), &d) && d >= 0 &&
	    d <= 100) {
		e->uptime = d;
		e->has_uptime = true;
		if (d < p->min_uptime)
			exclude(e, "uptime", "uptime %.1f < %g", d,
				p->min_uptime);
	}

	/* Tokens per second; higher is better; null without a key. */
	j = json_get(ep, "throughput_last_30m");
	if (json_number(json_get(j, "p50"), &d) && d >= 0) {
		e->terms.throughput = d;
		e->terms.has_throughput = true;
	}

	/* docs/design.md section 6: the flag, or (when absent) a cheaper cache read,
	 * decided at the time the prices are computed. */
	j = json_get(ep, "supports_implicit_caching");
	e->terms.implicit_flag = cJSON_IsBool(j) ? cJSON_IsTrue(j) : -1;
	if (!terms_pricing(json_get(ep, "pricing"), &e->terms))
		exclude(e, "price", "more than %d price windows",
			SCORE_WINDOWS_MAX);

	if (json_number(json_get(ep, "max_completion_tokens"), &d) && d > 0)
		e->max_completion_tokens =
		    d >= 9223372036854775807.0 ? INT64_MAX : (int64_t)d;
}

/* Prices now, every term of the formula, and the score, from t; p is
 * sanitized. */
static void
terms_eval(const struct score_terms *t, int hhmm,
	   const struct score_params *p, struct score_endpoint *e)
{
	double cr, s;

	e->throughput = t->has_throughput && isfinite(t->throughput) &&
				t->throughput >= 0 ?
			    t->throughput :
			    0;
	e->has_throughput = t->has_throughput;
	if (!score_terms_price(t, SCORE_PROMPT, hhmm, &e->prompt)) {
		exclude(e, "price", "prompt price missing or invalid");
		return;
	}
	if (!score_terms_price(t, SCORE_COMPLETION, hhmm, &e->completion)) {
		exclude(e, "price", "completion price missing or invalid");
		return;
	}
	/* A missing or garbage cache price means no cache pricing. */
	e->cache_read = e->prompt;
	if (score_terms_price(t, SCORE_CACHE_READ, hhmm, &cr))
		e->cache_read = cr;
	e->hit_rate = score_hit_pick(p, e->tag, &e->hit_measured,
				     &e->hit_tokens);
	e->effective_input =
	    e->hit_rate * e->cache_read + (1 - e->hit_rate) * e->prompt;
	e->cost = e->effective_input * SCORE_INPUT_WEIGHT +
	          e->completion * SCORE_OUTPUT_WEIGHT;
	if (!isfinite(e->cost) || !isfinite(e->effective_input)) {
		e->effective_input = e->cost = 0;
		exclude(e, "price", "price too large");
		return;
	}

	/* docs/design.md section 6: the flag, or a cheaper cache read without one. */
	if (t->implicit_flag >= 0)
		e->implicit_cache = t->implicit_flag > 0;
	else
		e->implicit_cache = e->cache_read < e->prompt;
	e->bonus = e->implicit_cache ? p->cache_bonus : 1.0;

	e->free = e->cost == 0;
	if (!e->has_throughput)
		s = 0;
	else if (e->free)
		s = e->throughput * e->bonus;
	else
		s = e->throughput / e->cost * e->bonus;
	/* A denormal cost or a huge bonus can overflow; NaN cannot occur
	 * (every input is finite and >= 0, cost > 0) but is guarded. */
	if (isnan(s) || s < 0)
		s = 0;
	else if (isinf(s))
		s = DBL_MAX;
	e->score = s;
}

void
score_terms_eval(const struct score_terms *t, int utc_hhmm,
		 const struct score_params *p, struct score_endpoint *e)
{
	struct score_params pp;

	params_sanitize(p, &pp);
	terms_eval(t, utc_hhmm, &pp, e);
}

/* Fills e from endpoint ep (any cJSON value) at clock t. */
static void
endpoint_eval(const cJSON *ep, int t, const struct score_params *p,
              struct score_endpoint *e)
{
	memset(e, 0, sizeof(*e));
	if (!cJSON_IsObject(ep)) {
		exclude(e, "malformed", "endpoint is not an object");
		return;
	}
	endpoint_meta(ep, p, e);
	terms_eval(&e->terms, t, p, e);
}

int
score_rank_cmp(const struct score_endpoint *a, const struct score_endpoint *b)
{
	if (a->has_throughput != b->has_throughput)
		return a->has_throughput ? -1 : 1;
	if (a->free != b->free)
		return a->free ? -1 : 1;
	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	if (a->cost != b->cost)
		return a->cost < b->cost ? -1 : 1;
	return strcmp(a->tag, b->tag);
}

/* qsort order of the ranked endpoints; see the file header. */
static int
slot_cmp(const void *va, const void *vb)
{
	const struct score_slot *sa = va, *sb = vb;
	int c = score_rank_cmp(sa->e, sb->e);

	if (c != 0)
		return c;
	return sa->idx < sb->idx ? -1 : sa->idx > sb->idx;
}

enum orgw_err
score_endpoints(const char *json, size_t len, int utc_hhmm,
                const struct score_params *p, struct score_result *out)
{
	struct score_params pp;
	struct score_endpoint *all = NULL;
	struct score_slot *slots = NULL;
	const cJSON *data, *eps, *ep, *id;
	const char *end = NULL;
	cJSON *root = NULL;
	char *buf = NULL;
	enum orgw_err err = ORGW_EINVAL;
	size_t n, i, nr;

	if (out == NULL)
		return ORGW_EINVAL;
	memset(out, 0, sizeof(*out));
	if (json == NULL || p == NULL || len == 0 || len == SIZE_MAX)
		return ORGW_EINVAL;
	params_sanitize(p, &pp);

	/*
	 * docs/style.md 5: parse a NUL-terminated copy, the length counting the
	 * NUL, so cJSON never depends on the caller's buffer being
	 * terminated.  An embedded NUL stops the parse early; the end check
	 * refuses it along with trailing garbage.
	 */
	if ((buf = malloc(len + 1)) == NULL) {
		err = ORGW_ENOMEM;
		goto out;
	}
	memcpy(buf, json, len);
	buf[len] = '\0';
	root = cJSON_ParseWithLengthOpts(buf, len + 1, &end, 1);
	if (root == NULL || end != buf + len)
		goto out;

	/* docs/upstream.md section 1: {"data": {"id", ..., "endpoints": []}} */
	data = json_get(root, "data");
	eps = json_get(data, "endpoints");
	if (!cJSON_IsArray(eps))
		goto out;
	id = json_get(data, "id");
	if (cJSON_IsString(id) && id->valuestring != NULL)
		copy_str(out->model, sizeof(out->model), id->valuestring);

	n = 0;
	for (ep = eps->child; ep != NULL; ep = ep->next) {
		if (++n > SCORE_MAX_ENDPOINTS)
			goto out;
	}
	if (n == 0) {
		err = ORGW_OK;
		goto out;
	}
	if ((all = calloc(n, sizeof(*all))) == NULL ||
	    (slots = calloc(n, sizeof(*slots))) == NULL ||
	    (out->v = calloc(n, sizeof(*out->v))) == NULL) {
		err = ORGW_ENOMEM;
		goto out;
	}

	i = nr = 0;
	for (ep = eps->child; ep != NULL; ep = ep->next) {
		endpoint_eval(ep, utc_hhmm, &pp, &all[i]);
		if (all[i].excluded == NULL) {
			slots[nr].e = &all[i];
			slots[nr].idx = i;
			nr++;
		}
		i++;
	}
	qsort(slots, nr, sizeof(*slots), slot_cmp);
	for (i = 0; i < nr; i++)
		out->v[i] = *slots[i].e;
	out->n_ranked = nr;
	for (i = 0; i < n; i++)
		if (all[i].excluded != NULL)
			out->v[nr++] = all[i];
	out->n = n;
	err = ORGW_OK;
out:
	if (err != ORGW_OK) {
		free(out->v);
		memset(out, 0, sizeof(*out));
	}
	free(slots);
	free(all);
	cJSON_Delete(root);
	free(buf);
	return err;
}

void
score_result_exclude(struct score_result *r, size_t i, const char *reason,
		     const char *why)
{
	struct score_endpoint e;

	if (r == NULL || r->v == NULL || i >= r->n_ranked)
		return;
	e = r->v[i];
	memmove(&r->v[i], &r->v[i + 1],
		(r->n_ranked - i - 1) * sizeof(r->v[0]));
	r->n_ranked--;
	e.excluded = reason;
	copy_str(e.why, sizeof(e.why), why != NULL ? why : "");
	r->v[r->n_ranked] = e;
}

void
score_result_free(struct score_result *r)
{
	if (r == NULL)
		return;
	free(r->v);
	memset(r, 0, sizeof(*r));
}
