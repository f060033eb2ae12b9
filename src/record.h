/*
 * record.h - the GDBM value codec (docs/design.md section 7), pure.
 *
 * Every value is JSON text with a "v" version field so gdbmtool shows
 * it readably.  Decoders accept missing fields (zero) and reject values
 * that are not JSON objects (ORGW_EINVAL: the caller treats the key as
 * absent, since the state is soft).  Encoders return cJSON-allocated
 * text; the caller frees it with record_free().
 */
#ifndef ORGW_RECORD_H
#define ORGW_RECORD_H

#include "orgw.h"
#include "score.h"

#define REC_REASON_MAX 64

/* The "v" every value carries. */
#define RECORD_VERSION 1

struct rec_lock {		/* BEST_PROVIDER:<model> */
	char tag[ORGW_TAG_MAX];
	char provider_name[ORGW_TAG_MAX];
	int64_t locked_at;	/* unix seconds */
	int64_t last_used;	/* unix seconds */
	int64_t max_completion_tokens;	/* 0 = unknown */
};

/*
 * One candidate: the terms as scored (shown by /stats) and, in terms,
 * what re-pricing needs (base prices, time windows, discount, throughput,
 * caching flag), stored as "pricing" and "supports_implicit_caching".  A
 * record written before re-pricing has neither: it decodes with its
 * scored prices as base prices, no windows, no discount.
 */
struct rec_cand {
	char tag[ORGW_TAG_MAX];
	char provider_name[ORGW_TAG_MAX];
	double score, throughput, prompt, completion, cache_read;
	double effective_input, cost, uptime, bonus;
	double hit_rate;	/* the hit rate effective_input used */
	bool hit_measured;	/* "measured", else "assumed" (HIT_RATE) */
	int64_t hit_tokens;	/* prompt tokens the measure rests on */
	bool has_throughput, implicit_cache, free;
	int64_t max_completion_tokens;
	struct score_terms terms;
};

struct rec_cands {		/* PROVIDER_CANDIDATE:<model> */
	int64_t scored_at;	/* last successful scoring; 0 = never */
	int64_t attempted_at;	/* last attempt, failed or not */
	char error[128];	/* why the last attempt failed, or "" */
	size_t n;
	struct rec_cand *v;	/* malloc'd, best first */
};

struct rec_failure {		/* PROVIDER_FAILURE:<model>:<tag> */
	int64_t count;		/* consecutive failures */
	char reason[REC_REASON_MAX];
	int64_t last;
};

struct rec_cooldown {		/* PROVIDER_COOLDOWN:<model>:<tag> */
	int64_t until;
	char reason[REC_REASON_MAX];
};

/* One request's counts (ledger.h). */
struct stats_delta {
	const char *tag;	/* provider that served, or NULL (unpinned) */
	const char *api;	/* the API it came by (api.h name: "chat",
				 * "messages", "responses"), counted under
				 * by_api; NULL: none */
	int64_t requests, ok;
	int64_t e429, e5xx, etimeout, eslow, emid, eabort, eother;
	int64_t retries_429, failovers, trips, off_pin;
	int64_t prompt_tokens, cached_tokens, cache_write_tokens;
	int64_t completion_tokens;
	int64_t reasoning_tokens;	/* of completion_tokens */
	double cost_usd;
	/* cost_known: the answer's usage said what it cost.  Else
	 * ledger_price() prices it from the stored prices of the
	 * candidate it attributes the answer to, sets cost_usd and
	 * cost_estimated, and the ledger counts that cost under
	 * cost_estimated_usd too. */
	bool cost_known;
	bool cost_estimated;
	const char *cost_basis;	/* an estimate's LEDGER_BASIS_*, static */
	double price_ceiling_usd;	/* a token's price when nothing
					 * else is known (state_finish) */
	int64_t ttfb_ms, total_ms;	/* -1 when not measured */
	/* HIT_RATE_HALF_LIFE_TOKENS: an ok answer of tag, on its pin
	 * (off_pin 0), with prompt tokens, updates the provider's measured
	 * hit rate HIT:<model>:<tag> (score_hit_add) with this half-life. */
	double hit_half_life_tokens;
	/* Money saved.  The caller sets usage (the answer
	 * reported usage), served (its "provider" display name, or NULL)
	 * and now (unix seconds: the UTC day and the price time);
	 * ledger_price() sets money_tag and uncached_usd.  A NULL
	 * money_tag records no money. */
	bool usage;
	const char *served;
	int64_t now;
	const char *money_tag;	/* a candidate's tag, or "unknown" */
	double uncached_usd;
	/* A team key's request: its name, and the concurrency lease it
	 * holds (state.h), given back in the same transaction; NULL
	 * both for the operator's key. */
	const char *key_name;
	const char *lease;
	bool key_budget;	/* the key has a budget: its spend goes
				 * into TEAMKEY_RATE:<name> too */
	const char *hold;	/* its budget hold (state.h), or NULL */
	double key_billed_usd;	/* no usage came: what upstream billed
				 * (GET /generation), else 0 */
};

/* The provider that money goes to when no candidate matches. */
#define RECORD_MONEY_UNKNOWN "unknown"

/* Frees text returned by an encoder.  NULL is a no-op. */
void record_free(char *text);

/*
 * Adds the number d to object o as member k, for a record's tree that is
 * printed and never read back as a tree: the member is cJSON_Raw text,
 * the decimal digits of a whole number below RECORD_RAW_INT_LIMIT in
 * magnitude (the bytes cJSON prints for it) and strfromd("%.17g") for any
 * other (17 significant digits always read back as the same double).
 * cJSON itself prints a number with "%1.15g", reads it
 * back with sscanf and, when that differs, prints it again with
 * "%1.17g": two to three times the instructions, for every number of
 * every record a request writes.  NaN and infinities are added as 0.
 * The member is not a number: cJSON_SetNumberValue() and
 * cJSON_IsNumber() on it do not work.  k is borrowed for the life of o
 * (cJSON_AddItemToObjectCS: a literal or a constant table's name).
 * False when out of memory.
 */
struct cJSON;
bool record_add_number(struct cJSON *o, const char *k, double d);

/* From 1e15 up, "%1.15g" prints an exponent ("1e+15"). */
#define RECORD_RAW_INT_LIMIT 1e15

char *record_lock_encode(const struct rec_lock *l);
enum orgw_err record_lock_decode(const char *text, struct rec_lock *l);

/* cands_decode allocates c->v; release with record_cands_clear(). */
char *record_cands_encode(const struct rec_cands *c);
enum orgw_err record_cands_decode(const char *text, struct rec_cands *c);
void record_cands_clear(struct rec_cands *c);

/* Copies into d what the formula computed for e: the score, its terms
 * at the time scored (prices, throughput, bonus) and the hit rate used.
 * Names, uptime, limits and the stored price terms are left alone (the
 * scorer's list and route_rerank() both call it). */
void record_cand_priced(struct rec_cand *d, const struct score_endpoint *e);

/* Fills c from a scoring result, scored now: the ranked endpoints, best
 * first, then those excluded only as "cooling" (kept for when their
 * cooldown ends; routing skips them until then). */
enum orgw_err record_cands_from_score(const struct score_result *r,
				      int64_t now, struct rec_cands *c);

char *record_failure_encode(const struct rec_failure *f);
enum orgw_err record_failure_decode(const char *text, struct rec_failure *f);

char *record_cooldown_encode(const struct rec_cooldown *c);
enum orgw_err record_cooldown_decode(const char *text,
				     struct rec_cooldown *c);

/*
 * CONV:<model>:<conversation hash> (conv.h), one conversation's routing
 * record: fixed in size, whatever the number of turns.  The value
 * {"v":1,"model","tag","show","api","first_seen","last_turn","turns",
 * "spread","foreign_items","cache":{...}}: "cache" is the
 * per-conversation cache record, another module's to decode; this codec
 * carries it through as a cJSON tree.  "foreign_items" is left out at 0
 * and absent reads 0 (records written before it).
 */
#define REC_CONV_SHOW_MAX 16
#define REC_CONV_API_MAX 16
struct rec_conv {
	char model[ORGW_MODEL_MAX];
	char tag[ORGW_TAG_MAX];		/* the provider of its last
					 * successful turn; "" none */
	char show[REC_CONV_SHOW_MAX];	/* the key as shown (conv_show) */
	char api[REC_CONV_API_MAX];	/* "chat", "messages", "responses" */
	int64_t first_seen, last_turn;	/* unix seconds */
	int64_t turns;			/* successful turns */
	bool spread;			/* it started elsewhere because the
					 * lock was under pressure */
	int64_t foreign_items;		/* Responses: the encrypted reasoning
					 * items among the first this many
					 * input items were written by
					 * another provider than tag (the
					 * input of the last turn that left
					 * them out); 0 none */
};

/*
 * encode: cache (borrowed, may be NULL for none) is copied in as the
 * "cache" member.  Returns cJSON-allocated text (free with record_free)
 * or NULL.  decode: text absent or not an object is ORGW_EINVAL (c
 * zeroed); with cache non-NULL, *cache is the "cache" member when it is
 * an object (caller deletes with cJSON_Delete), else NULL.
 */
char *record_conv_encode(const struct rec_conv *c,
			 const struct cJSON *cache);
enum orgw_err record_conv_decode(const char *text, struct rec_conv *c,
				 struct cJSON **cache);
/* record_conv_encode() that takes cache (may be NULL) instead of
 * copying it: it is the record's, or deleted on failure. */
char *record_conv_encode_take(const struct rec_conv *c, struct cJSON *cache);

/*
 * PRESSURE:<model>:<tag>: the provider answered a provider 429 for the
 * model; it takes no new conversations of it until "until".
 * {"v":1,"until","n429"}.  Ownership as the cooldown's.
 */
struct rec_pressure {
	int64_t until;		/* unix seconds */
	int64_t n429;		/* provider 429s counted */
};

char *record_pressure_encode(const struct rec_pressure *p);
enum orgw_err record_pressure_decode(const char *text,
				     struct rec_pressure *p);

/*
 * MODEL_SEEN:<model> (one key per model, docs/design.md 4 step 2): the value
 * {"v":1,"first_seen":T}.  encode returns cJSON-allocated text (free
 * with record_free) or NULL; decode gives first_seen (0 when absent),
 * ORGW_EINVAL for text that is not an object.
 */
char *record_model_seen_encode(int64_t first_seen);
enum orgw_err record_model_seen_decode(const char *text, int64_t *first_seen);

/*
 * MODELS_SEEN (the old single list, still read so existing state works):
 * adds model (first seen at now) to the document text
 * (NULL or undecodable = empty).  Returns the new text, or NULL with
 * *added false when the model was already there; NULL with *added true
 * means out of memory.
 */
char *record_seen_add(const char *text, const char *model, int64_t now,
		      bool *added);

/*
 * Lists the models of MODELS_SEEN text: calls fn(arg, model, first_seen)
 * for each; returns how many.
 */
size_t record_seen_each(const char *text,
			void (*fn)(void *arg, const char *model,
				   int64_t first_seen),
			void *arg);

/*
 * LOCK_LOG:<model>, the recent lock changes:
 * {"v":1,"changes":[{"at","from","to","reason"}...]}, oldest first, the
 * last RECORD_LOCK_LOG_MAX kept.  Adds one change at unix time at (from
 * or to "" for no lock) to text (borrowed; NULL or undecodable = none).
 * Returns the new text (free with record_free) or NULL (out of memory).
 */
#define RECORD_LOCK_LOG_MAX 20
char *record_lock_log_add(const char *text, int64_t at, const char *from,
			  const char *to, const char *reason);

/* The UTC date "YYYY-MM-DD" of unix time t into dst (11 bytes). */
void record_day(int64_t t, char dst[11]);

/*
 * HIT:<model>, the measured prompt-cache hit rates of a model's providers
 * (score_hit_add): {"v":1,"by_provider":{"<tag>":{"hit":{"rate","weight",
 * "tokens"}}}}, the shape an old release's STATS:<model> kept them in,
 * so one decoder reads both.  encode returns cJSON-allocated text (free
 * with record_free) or NULL.  decode: *v is malloc'd (caller frees; NULL
 * when none), *n its length; text that is absent or not an object gives
 * none, ORGW_ENOMEM leaves *v NULL and *n 0.
 */
char *record_hits_encode(const struct score_hit *v, size_t n);
enum orgw_err record_hits_decode(const char *text, struct score_hit **v,
				 size_t *n);

#endif
