/*
 * score.h - pure scoring of a model's endpoints (docs/design.md section 6).
 *
 * Input is the body of GET /models/{author}/{slug}/endpoints
 * (docs/upstream.md section 1) and the current UTC time; output is every
 * endpoint with every term of the formula, ranked best first, with the
 * excluded ones after the included ones and a reason each.
 *
 * No I/O, no clock: the caller passes the time.
 */
#ifndef ORGW_SCORE_H
#define ORGW_SCORE_H

#include "orgw.h"

/*
 * The measured cache hit rate of one provider for one model:
 * the cached share of its prompt tokens as a decayed average, and the
 * undecayed total of prompt tokens behind it.  The evidence threshold
 * is checked against the undecayed total, so a provider that once
 * crossed it stays measured: the choice cannot flap around it.
 */
struct score_hit {
	char tag[ORGW_TAG_MAX];
	double rate;		/* decayed cached/prompt, 0..1 */
	double weight;		/* decayed prompt tokens behind rate */
	int64_t tokens;		/* prompt tokens seen in all, undecayed */
};

/* What an endpoint's tag and name read as when they held the upstream key
 * (struct score_params, secret). */
#define SCORE_WITHHELD "(withheld)"

struct score_params {
	double hit_rate;	/* HIT_RATE, 0..1: the prior */
	double cache_bonus;	/* CACHE_BONUS */
	double min_uptime;	/* MIN_UPTIME, percent */
	int64_t hit_evidence_tokens;	/* HIT_RATE_EVIDENCE_TOKENS */
	const struct score_hit *hits;	/* borrowed; may be NULL */
	size_t n_hits;
	/* OPENROUTER_API_KEY, borrowed; NULL or "": none.  An endpoint whose
	 * tag or provider_name holds it is excluded ("secret") with both
	 * strings withheld, so the key never reaches the state, a header,
	 * a log line or orgw-score's table (docs/design.md section 3). */
	const char *secret;
};

/* The price keys the formula reads (docs/upstream.md section 2). */
enum score_key {
	SCORE_PROMPT,		/* "prompt" */
	SCORE_COMPLETION,	/* "completion" */
	SCORE_CACHE_READ,	/* "input_cache_read" */
	SCORE_CACHE_WRITE,	/* "input_cache_write": only for pricing an
				 * answer whose cost upstream did not say;
				 * never ranked on */
	SCORE_KEYS
};

/* The names of enum score_key, as OpenRouter's pricing spells them and
 * as PROVIDER_CANDIDATE stores them. */
extern const char *const score_key_name[SCORE_KEYS];

/* True when d is an HHMM window bound: an integer 0..2400 whose minutes
 * are below 60 (2400 is the end of the day). */
bool score_hhmm_valid(double d);

/* How one price is given: not at all, as a valid price (finite, >= 0),
 * or unreadable.  An unreadable override price poisons its key while its
 * window applies (later entries win per key, valid or not). */
enum score_price_kind {
	SCORE_PRICE_NONE,
	SCORE_PRICE_OK,
	SCORE_PRICE_BAD
};

/*
 * Time windows kept per endpoint: enough for hourly prices tiling a
 * day.  An endpoint with more is excluded ("price"): its price could not
 * be re-computed at another time of day.
 */
#define SCORE_WINDOWS_MAX 24

/* One pricing.overrides entry that can apply for ranking. */
struct score_window {
	int utc_start, utc_end;	/* HHMM, [start, end), may wrap midnight;
				 * [0, 2400) for an entry without condition */
	unsigned char kind[SCORE_KEYS];	/* enum score_price_kind */
	double price[SCORE_KEYS];	/* USD/token when kind is OK */
};

/*
 * Everything the formula reads from one endpoint, valid at any time of
 * day: stored with each candidate, so that a lock that moves re-ranks
 * the candidates at the time it moves (docs/design.md section 6).  Entries with
 * min_prompt_tokens and entries whose window is unreadable never apply
 * and are not kept; an entry without condition is the window [0, 2400).
 */
struct score_terms {
	unsigned char base_kind[SCORE_KEYS];	/* enum score_price_kind */
	double base[SCORE_KEYS];	/* top-level prices, USD/token */
	struct score_window win[SCORE_WINDOWS_MAX];	/* in input order */
	size_t n_win;
	double discount;	/* 0..1; 0 when absent or invalid */
	double throughput;	/* throughput_last_30m.p50 */
	bool has_throughput;
	int implicit_flag;	/* supports_implicit_caching: 1, 0, -1 absent */
};

struct score_endpoint {
	char tag[ORGW_TAG_MAX];		/* routing slug, e.g. "deepinfra/fp8" */
	char provider_name[ORGW_TAG_MAX]; /* display name, e.g. "DeepInfra" */
	double prompt;		/* USD/token now (overrides, discount applied) */
	double completion;	/* USD/token now */
	double cache_read;	/* USD/token now; = prompt when none priced */
	double hit_rate;	/* the rate effective_input used */
	bool hit_measured;	/* measured (else HIT_RATE, assumed) */
	int64_t hit_tokens;	/* prompt tokens measured on, undecayed */
	double effective_input;	/* hit*cache_read + (1-hit)*prompt */
	double cost;		/* effective_input*0.4 + completion*0.6 */
	double throughput;	/* throughput_last_30m.p50; 0 when null */
	bool has_throughput;	/* false when throughput was null/absent */
	double uptime;		/* uptime_last_30m in percent; 0 when null */
	bool has_uptime;
	bool implicit_cache;	/* earns CACHE_BONUS */
	double bonus;		/* 1 or CACHE_BONUS */
	double score;		/* finite, >= 0; see score.c for ordering */
	bool free;		/* cost == 0: ranked by throughput alone */
	int64_t max_completion_tokens;	/* 0 when null/absent */
	int status;		/* endpoint status, 0 when absent */
	const char *excluded;	/* NULL when ranked; else a static reason */
	char why[96];		/* detail for the reason, e.g. "uptime 80.0 < 95" */
	struct score_terms terms;	/* what the prices above came from */
};

struct score_result {
	char model[ORGW_MODEL_MAX];	/* data.id */
	struct score_endpoint *v;	/* malloc'd; ranked first, then excluded */
	size_t n;			/* all endpoints */
	size_t n_ranked;		/* v[0..n_ranked) are candidates */
};

/*
 * Parses the endpoints JSON (len bytes, need not be NUL-terminated) and
 * scores every endpoint at UTC clock time utc_hhmm (hour*100+minute).
 * On ORGW_OK, out is filled and owned by the caller (score_result_free).
 * ORGW_EINVAL when the document is not an endpoints response; ORGW_ENOMEM.
 */
enum orgw_err score_endpoints(const char *json, size_t len, int utc_hhmm,
			      const struct score_params *p,
			      struct score_result *out);

/* Releases what score_endpoints() allocated; safe on a zeroed result. */
void score_result_free(struct score_result *r);

/*
 * True when s can be a provider tag: a routing slug ("deepinfra/fp8") of
 * printable ASCII without blanks, shorter than ORGW_TAG_MAX.  Anything
 * else would be echoed into provider.order and state keys, so the scorer
 * refuses it rather than trusting it.
 */
bool score_tag_ok(const char *s);

/*
 * Moves ranked endpoint r->v[i] (i < r->n_ranked) to the excluded ones,
 * with reason (static) and why (copied, truncated); the ranked ones
 * after it keep their order.  For exclusions scoring cannot see from the
 * endpoints alone (a cooldown in the state).  No-op when i is not ranked.
 */
void score_result_exclude(struct score_result *r, size_t i,
			  const char *reason, const char *why);

/*
 * The formula of docs/design.md section 6 at clock time utc_hhmm, from stored terms
 * t, with the hit rate score_hit_pick(p, e->tag) (so e->tag must be set):
 * sets e's prices now, hit rate and its source, effective_input, cost,
 * throughput, implicit
 * cache flag, bonus, free and score; on a price missing now, sets
 * e->excluded to "price" (unless already excluded).  Other fields of e
 * are left alone.  score_endpoints() uses it for every endpoint and the
 * lock's re-ranking (route_rerank) for every stored candidate.
 */
void score_terms_eval(const struct score_terms *t, int utc_hhmm,
		      const struct score_params *p, struct score_endpoint *e);

/*
 * The ranking order, qsort style, of two endpoints scored by
 * score_terms_eval(): has_throughput desc, free desc, score desc, cost
 * asc, tag asc.  0 when they tie (callers break ties by position).
 */
int score_rank_cmp(const struct score_endpoint *a,
		   const struct score_endpoint *b);

/*
 * Adds one answer's usage to h (pure arithmetic): the old evidence
 * weighs 0.5^(prompt/half_life_tokens), then prompt tokens of which
 * cached were read from the cache join it.  cached is clamped to
 * 0..prompt; prompt <= 0 changes nothing; a half-life <= 0 or not
 * finite keeps no old evidence.  A damaged h (non-finite, out of range)
 * starts again from this answer.
 */
void score_hit_add(struct score_hit *h, int64_t prompt, int64_t cached,
		   double half_life_tokens);

/*
 * The hit rate the formula uses for tag: the measured one of p->hits
 * once its undecayed tokens reach p->hit_evidence_tokens (*measured
 * true), else p->hit_rate (the prior).  *tokens is the undecayed total
 * known for tag (0 when none).  Any out pointer may be NULL.
 */
double score_hit_pick(const struct score_params *p, const char *tag,
		      bool *measured, int64_t *tokens);

/* The price of key k in t at utc_hhmm (windows, then discount); false
 * when it is missing or unreadable then. */
bool score_terms_price(const struct score_terms *t, enum score_key k,
		       int utc_hhmm, double *out);

/*
 * What one request would have cost with every prompt token at the
 * prompt price in force at utc_hhmm (windows, then discount): prompt
 * tokens at the prompt price plus completion tokens at the completion
 * price ("money saved").  Negative counts are zero.  False,
 * *out untouched, when either price is missing or unreadable then.
 */
bool score_uncached_cost(const struct score_terms *t, int utc_hhmm,
			 int64_t prompt, int64_t completion, double *out);

/*
 * What one request cost at the prices in force at utc_hhmm, for an
 * answer whose usage did not say (docs/design.md 11: a streamed Messages answer
 * may carry no cost): the prompt tokens neither read from nor written
 * to a cache at the prompt price, cached at input_cache_read, cache
 * writes at input_cache_write (each the prompt price when the endpoint
 * has none), completion at the completion price.  Negative counts are
 * zero.  False, *out untouched, when the prompt or the completion price
 * is missing or unreadable then.
 */
bool score_estimate_cost(const struct score_terms *t, int utc_hhmm,
			 int64_t prompt, int64_t cached, int64_t cache_write,
			 int64_t completion, double *out);

/* The UTC clock time HHMM (hour*100+minute) of unix time t. */
int score_hhmm(int64_t t);

/*
 * The price of key ("prompt", "completion", "input_cache_read") for one
 * endpoint pricing object (a cJSON object passed as const void * so this
 * header stays cJSON-free) at utc_hhmm: base price, then matching
 * overrides (utc_start/utc_end HHMM, half-open, may wrap midnight; later
 * entries win per key; entries with min_prompt_tokens are ignored),
 * then discount.  Returns false when the price is missing or not a
 * non-negative decimal, or key is none of those three.  The same path as
 * scoring: the pricing is read into terms, then score_terms_price().
 */
bool score_price_now(const void *pricing, const char *key, int utc_hhmm,
		     double *out);

/* True when HHMM time t is in [start, end), wrapping midnight when
 * start > end; start == end is an empty window. */
bool score_window_match(int start, int end, int t);

#endif
