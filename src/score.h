/*
 * score.h - pure scoring of a model's endpoints (SPEC section 6).
 *
 * Input is the body of GET /models/{author}/{slug}/endpoints
 * (OPENROUTER.md section 1) and the current UTC time; output is every
 * endpoint with every term of the formula, ranked best first, with the
 * excluded ones after the included ones and a reason each.
 *
 * No I/O, no clock: the caller passes the time.
 */
#ifndef ORGW_SCORE_H
#define ORGW_SCORE_H

#include "orgw.h"

struct score_params {
	double hit_rate;	/* HIT_RATE, 0..1 */
	double cache_bonus;	/* CACHE_BONUS */
	double min_uptime;	/* MIN_UPTIME, percent */
};

struct score_endpoint {
	char tag[ORGW_TAG_MAX];		/* routing slug, e.g. "deepinfra/fp8" */
	char provider_name[ORGW_TAG_MAX]; /* display name, e.g. "DeepInfra" */
	double prompt;		/* USD/token now (overrides, discount applied) */
	double completion;	/* USD/token now */
	double cache_read;	/* USD/token now; = prompt when none priced */
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
 * The price of key ("prompt", "completion", "input_cache_read") for one
 * endpoint pricing object (a cJSON object passed as const void * so this
 * header stays cJSON-free) at utc_hhmm: base price, then matching
 * overrides (utc_start/utc_end HHMM, half-open, may wrap midnight; later
 * entries win per key; entries with min_prompt_tokens are ignored),
 * then discount.  Returns false when the price is missing or not a
 * non-negative decimal.
 */
bool score_price_now(const void *pricing, const char *key, int utc_hhmm,
		     double *out);

/* True when HHMM time t is in [start, end), wrapping midnight when
 * start > end; start == end is an empty window. */
bool score_window_match(int start, int end, int t);

#endif
