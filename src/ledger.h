/*
 * ledger.h - what orgw counts (docs/design.md section 7), pure.
 *
 * A request adds its counts to one small cell: the counters of one
 * model, UTC day, API and provider, stored under
 *   LEDGER:<model>:<day>:<api>:<tag>
 * (the model may hold ':', the last three parts never do).  A cell holds
 * only its non-zero counters, so what a request reads and writes stays
 * the same size however long the state has been counting: history lives
 * in the other days' cells, which no request rewrites.  Events that are
 * not requests (a breaker trip, a lock change) go to the cell of their
 * day with the API LEDGER_NONE, the trip under its provider, the lock
 * change under the provider LEDGER_NONE.  Cells of days before the
 * LEDGER_DAYS last are folded by the scorer into the day LEDGER_TOTAL.
 *
 * Every counter is one row of ledger_fields: its name in a cell, where
 * /stats shows it (a path in the model's object, and whether it is also
 * broken down by provider, by API and by day), where /metrics reads it
 * and its name in a team key's figures.  /stats, /status and /metrics
 * are all rendered from these rows, so a new counter is one row here and
 * one line where the request sets it.
 *
 * A team key's use is counted in cells of the same codec, one per key
 * and UTC day or month, in the keys store (TEAMKEY_USE:<name>:<when>,
 * keystore.h; teamkey_use_decode reads them strictly): a key's cell
 * holds the rows with a team name and the key's own rows (LS_KEYONLY:
 * its spend, savings, refusals and last use), which no model's cell
 * holds.  So a row given a team name is a figure of every key in
 * /stats, /status, /metrics, /v1/key and `orgw-score key list`.
 *
 * The records of earlier releases (STATS:<model>, METRICS:<model>) are
 * read and added in (ledger_merge_legacy), never written.
 */
#ifndef ORGW_LEDGER_H
#define ORGW_LEDGER_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "orgw.h"
#include "convcache.h"
#include "latency.h"
#include "record.h"
#include "statekeys.h"

/* The days /stats shows day by day: today (UTC) and the 29 before. */
#define LEDGER_DAYS 30

/* The API or provider part of an event's cell. */
#define LEDGER_NONE "-"

/* The day part of the cell that holds the folded older days. */
#define LEDGER_TOTAL "total"

#define LEDGER_PREFIX STATEKEY_P_LEDGER

enum ledger_ix {
	LX_REQUESTS,
	LX_OK,
	LX_E429,
	LX_E5XX,
	LX_ETIMEOUT,
	LX_ESLOW,
	LX_EMID,
	LX_EABORT,
	LX_EOTHER,
	LX_RETRIES_429,
	LX_FAILOVERS,
	LX_TRIPS,
	LX_OFF_PIN,
	LX_PROMPT,
	LX_CACHED,
	LX_CACHE_WRITE,
	LX_COMPLETION,
	LX_REASONING,
	LX_COST,
	LX_COST_EST,
	LX_TTFB_SUM,
	LX_TTFB_N,
	LX_TTFB_MAX,
	LX_TOTAL_SUM,
	LX_TOTAL_N,
	LX_TOTAL_MAX,
	LX_SPEND,
	LX_UNCACHED,
	LX_SAVED,
	LX_PRICED,		/* requests with usage: money's requests */
	LX_O_ABORT,		/* the request's one outcome, for /metrics */
	LX_O_MID,
	LX_O_TIMEOUT,
	LX_O_5XX,
	LX_O_OTHER,
	LX_O_429,
	LX_O_CLIENT,
	LX_LOCK_CHANGES,
	LX_BRK_MOVED,		/* a conversation's cache breaks, by cause */
	LX_BRK_PREFIX,
	LX_BRK_EXPIRED,
	LX_BRK_MISS,
	LX_KEY_SPEND,		/* a team key's own rows (LS_KEYONLY): */
	LX_KEY_SAVED,		/* its spend, what cache reads saved it, */
	LX_REFUSED_RPM,		/* its refusals by reason */
	LX_REFUSED_CONCURRENT,
	LX_REFUSED_BUDGET,
	LX_REFUSED_MODEL,
	LX_LAST_USED,		/* unix s of its last request counted */
	LX_N
};

/* Where a row shows in /stats: the model's object always; these add the
 * break-downs (by_provider.<tag>, by_api.<api>, days.<day>.<tag>). */
#define LS_PROVIDER 1u
#define LS_API 2u
#define LS_MAX 4u		/* a maximum, not a sum */
#define LS_KEYONLY 8u		/* counted in team keys' cells only */

struct ledger_field {
	const char *key;	/* name in a cell */
	const char *stats;	/* path in /stats' model object ("a.b"), or
				 * NULL: not shown there */
	unsigned scope;		/* LS_* */
	const char *day;	/* name under days.<day>.<tag>, or NULL */
	const char *metrics;	/* path in the /metrics provider object
				 * (metrics_model false) or model object,
				 * or NULL */
	bool metrics_model;
	const char *team;	/* its name in a team key's figures of a
				 * window (/stats keys.<name>.today and
				 * .month), or NULL: not one.  A key's
				 * cell holds these rows and the
				 * LS_KEYONLY ones. */
};

extern const struct ledger_field ledger_fields[LX_N];

struct ledger_cell {
	double v[LX_N];
	double ttfb[LAT_N_SLOTS];	/* histogram counts per slot */
	double dur[LAT_N_SLOTS];
};

/* Cell text, parsed: absent or damaged text (or members) count as 0.
 * Returns ORGW_EINVAL for text that is not a JSON object (c zeroed). */
enum orgw_err ledger_cell_decode(const char *text, struct ledger_cell *c);

/* The text of c (cJSON-allocated: free with record_free), or NULL when
 * out of memory. */
char *ledger_cell_encode(const struct ledger_cell *c);

/* dst += src (a maximum for LS_MAX rows); non-finite values count 0. */
void ledger_cell_add(struct ledger_cell *dst, const struct ledger_cell *src);

/* The row whose name in a cell is key, or -1. */
int ledger_field_ix(const char *key);

/* True when row i is counted in a team key's cells (a team name, or
 * LS_KEYONLY). */
bool ledger_key_row(int i);

/* The cell of one request d (money already priced by
 * ledger_price()).  The breaker trips of d are not in it: the trip's
 * own transaction counts them (ledger_event). */
void ledger_from_delta(struct ledger_cell *c, const struct stats_delta *d);

/*
 * The cell of one request d in its team key's use: the rows of
 * ledger_from_delta() a key counts (ledger_key_row), its spend
 * (ledger_key_spend), what cache reads saved it (the uncached cost over
 * the cost of an answer with usage and cached tokens; nothing else
 * saves) and d->now as its last use.
 */
void ledger_key_from_delta(struct ledger_cell *c, const struct stats_delta *d);

/* Adds c's figures to o (one number member per row with a team name, by
 * that name, in the rows' order): a team key's window as /stats, /v1/key
 * and `orgw-score key list --json` show it.  False when out of memory. */
bool ledger_render_key(cJSON *o, const struct ledger_cell *c);

/* The row that counts a conversation's cache break of cause (its
 * request's cell adds one to it), or LX_N for CONVCACHE_NONE or a cause
 * it does not know.  Unlike the kept conversation records, which hold
 * the last CONVCACHE_BREAKS breaks each and are dropped by the
 * scorer's sweep, these rows only grow: /metrics' counter and /stats'
 * breaks by cause read them. */
enum ledger_ix ledger_break_ix(enum convcache_cause cause);

/* The provider a request's counts go to: the one its money went to,
 * else its pin, else RECORD_MONEY_UNKNOWN.  Borrowed from d or static. */
const char *ledger_provider(const struct stats_delta *d);

/* What a team key's request d spent, for its budget and its use: the
 * cost of an answer with usage (priced by ledger_price() when it did not
 * say), else what upstream billed for it (d->key_billed_usd). */
double ledger_key_spend(const struct stats_delta *d);

/* The API part of d's cell: d->api, or LEDGER_NONE. */
const char *ledger_api(const struct stats_delta *d);

/*
 * The key of a cell into k (n bytes): false when it does not fit or a
 * part is empty or holds ':' where it must not.  day is "YYYY-MM-DD" or
 * LEDGER_TOTAL.
 */
bool ledger_key(char *k, size_t n, const char *model, const char *day,
		const char *api, const char *tag);

struct ledger_key_parts {
	char model[ORGW_MODEL_MAX];
	char day[16];
	char api[32];
	char tag[ORGW_TAG_MAX];
};

/* Splits a LEDGER: key; false when it is not one. */
bool ledger_key_split(const char *key, struct ledger_key_parts *p);

/* True when day (a cell's day part) is older than the LEDGER_DAYS
 * days that end on today's UTC date at now: the scorer folds it. */
bool ledger_day_old(const char *day, int64_t now);

/*
 * Rendering.  A model's counters are added up in two cJSON objects, the
 * /stats one and the /metrics one (prom.h "stats" and "metrics"), by
 * ledger_render_cell() for each of its cells and
 * ledger_merge_legacy() for its old records, in any order; then
 * ledger_render_finish() completes them.  Each returns false when out
 * of memory.
 */
bool ledger_render_cell(cJSON *stats, cJSON *metrics,
			const struct ledger_key_parts *p,
			const struct ledger_cell *c, int64_t now);

/* A provider's measured hit rate (one of HIT:<model>'s) into
 * stats.by_provider.<tag>.hit. */
bool ledger_render_hit(cJSON *stats, const char *tag,
		       const struct score_hit *h);

/* Adds an old STATS (metrics false) or METRICS record's text: every
 * number added in (a maximum for *_max), the measured hit rate kept
 * where no HIT key gave one.  Undecodable text adds nothing. */
bool ledger_merge_legacy(cJSON *dst, const char *text);

/* Drops days older than LEDGER_DAYS, fills in the counters every model,
 * provider and API shows even at 0, and adds the averages and the
 * cache hit rate /stats shows. */
bool ledger_render_finish(cJSON *stats, int64_t now);

/*
 * Attributes and prices d's money using the candidates c (may be NULL):
 * an answer with usage goes to its pin d->tag when served on it
 * (off_pin 0), else to the first candidate whose provider_name (or tag)
 * is the response's display name d->served (case-insensitive), else to
 * RECORD_MONEY_UNKNOWN.  d->uncached_usd is the attributed candidate's
 * score_uncached_cost() at the UTC hhmm of d->now, or d->cost_usd when
 * no price is known (nothing saved).  An answer with usage but no cost
 * (d->cost_known false) is priced from that candidate's prices
 * (score_estimate_cost), else from the dearest candidate's
 * (ledger_dearest), else at d->price_ceiling_usd a token: d->cost_usd,
 * d->cost_estimated and d->cost_basis (never $0 for want of a price,
 * so a budget cannot be spent unseen).  No usage:
 * money_tag NULL.  d->money_tag borrows from d->tag, c, or a static
 * string.
 */
void ledger_price(struct stats_delta *d, const struct rec_cands *c);

/* What d->cost_basis names: where an estimated cost came from. */
#define LEDGER_BASIS_ENDPOINT "endpoint"	/* the serving endpoint's prices */
#define LEDGER_BASIS_MODEL_MAX "model_max"	/* the model's dearest endpoint */
#define LEDGER_BASIS_CEILING "ceiling"	/* PRICE_CEILING_USD_PER_MTOK */

/*
 * The highest score_estimate_cost() of the counts among the candidates
 * c (may be NULL) at utc hhmm, into *out: what the request cost at
 * most, whichever of them served it.  False, *out untouched, when no
 * candidate has a readable price.
 */
bool ledger_dearest(const struct rec_cands *c, int hhmm, int64_t prompt,
		    int64_t cached, int64_t cache_write, int64_t completion,
		    double *out);

/* prompt + completion tokens (negative: 0) at usd_per_token each (not
 * finite or not positive: 0), the price of last resort. */
double ledger_ceiling_cost(double usd_per_token, int64_t prompt,
			   int64_t completion);

/* The output a request may make when neither it nor any endpoint of its
 * model says. */
#define LEDGER_HOLD_OUT_DEFAULT 32768

/*
 * The most a request can cost, for its budget hold (hold.h): prompt_max
 * prompt tokens (its body's bytes: no token is shorter than a byte) and
 * out_max output tokens (its output limit; <= 0: the largest
 * max_completion_tokens of the candidates c, else
 * LEDGER_HOLD_OUT_DEFAULT), at the dearest candidate's prices
 * (ledger_dearest), else at ceiling_usd a token; *basis (basis may be
 * NULL) the LEDGER_BASIS_* it used.
 */
double ledger_hold_estimate(const struct rec_cands *c, int hhmm,
			    int64_t prompt_max, int64_t out_max,
			    double ceiling_usd, const char **basis);

/* The request's one outcome: "ok", else what ended it (client_abort,
 * mid_stream, timeout, 5xx, other, 429), else "client_error" (an
 * upstream 4xx relayed as it came).  Static string. */
const char *ledger_outcome(const struct stats_delta *d);

#endif
