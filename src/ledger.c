/*
 * ledger.c - what orgw counts: the cells a request adds to (ledger.h),
 * their text, what a request's delta adds to them, and their keys in the
 * state.  Pure.  Beside it ledger_render.c (the /stats and /metrics
 * trees rendered from the cells) and ledger_price.c (a request's price
 * from its candidates), sharing ledger_impl.h.
 *
 * A cell's text is {"v":1,"<key>":n,...,"t<slot>":n,"d<slot>":n}: only
 * the non-zero counters of ledger_fields, then the non-zero histogram
 * slots of the time to first byte (t) and the duration (d).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ledger.h"
#include "ledger_impl.h"

const struct ledger_field ledger_fields[LX_N] = {
	[LX_REQUESTS] = {"r", "requests", LS_PROVIDER | LS_API, NULL, NULL,
			 false, "requests"},
	[LX_OK] = {"ok", "ok", LS_PROVIDER | LS_API, NULL, "requests.ok",
		   false},
	[LX_E429] = {"e429", "errors.429", 0, NULL, NULL, false},
	[LX_E5XX] = {"e5xx", "errors.5xx", 0, NULL, NULL, false},
	[LX_ETIMEOUT] = {"eto", "errors.timeout", 0, NULL, NULL, false},
	[LX_ESLOW] = {"eslow", "errors.slow", 0, NULL, NULL, false},
	[LX_EMID] = {"emid", "errors.mid_stream", 0, NULL, NULL, false},
	[LX_EABORT] = {"eab", "errors.client_abort", 0, NULL, NULL, false},
	[LX_EOTHER] = {"eoth", "errors.other", 0, NULL, NULL, false},
	[LX_RETRIES_429] = {"r429", "retries_429", 0, NULL, NULL, false},
	[LX_FAILOVERS] = {"fo", "failovers", 0, NULL, NULL, false},
	[LX_TRIPS] = {"trip", "breaker_trips", 0, NULL, "breaker_trips",
		      false},
	[LX_OFF_PIN] = {"off", "off_pin", 0, NULL, NULL, false},
	[LX_PROMPT] = {"pt", "tokens.prompt", LS_PROVIDER | LS_API,
		       "prompt_tokens", "tokens.input", false, "prompt_tokens"},
	[LX_CACHED] = {"ct", "tokens.cached", LS_PROVIDER | LS_API,
		       "cached_tokens", "tokens.cache_read", false,
		       "cached_tokens"},
	[LX_CACHE_WRITE] = {"cw", "tokens.cache_write", LS_PROVIDER | LS_API,
			    NULL, "tokens.cache_write", false},
	[LX_COMPLETION] = {"out", "tokens.completion", LS_PROVIDER | LS_API,
			   NULL, "tokens.output", false, "completion_tokens"},
	[LX_REASONING] = {"rt", "tokens.reasoning", LS_PROVIDER | LS_API,
			  NULL, "tokens.reasoning", false, "reasoning_tokens"},
	[LX_COST] = {"usd", "cost_usd", LS_PROVIDER | LS_API, NULL, NULL,
		     false},
	[LX_COST_EST] = {"eusd", "cost_estimated_usd", LS_PROVIDER | LS_API,
			 NULL, NULL, false},
	[LX_TTFB_SUM] = {"tbs", "latency.ttfb_ms_sum", 0, NULL, "ttfb.sum_ms",
			 true},
	[LX_TTFB_N] = {"tbn", "latency.ttfb_count", 0, NULL, "ttfb.count",
		       true},
	[LX_TTFB_MAX] = {"tbx", "latency.ttfb_ms_max", LS_MAX, NULL, NULL,
			 false},
	[LX_TOTAL_SUM] = {"tts", "latency.total_ms_sum", 0, NULL,
			  "duration.sum_ms", true},
	[LX_TOTAL_N] = {"ttn", "latency.total_count", 0, NULL,
			"duration.count", true},
	[LX_TOTAL_MAX] = {"ttx", "latency.total_ms_max", LS_MAX, NULL, NULL,
			  false},
	[LX_SPEND] = {"sp", "spend_usd", LS_PROVIDER, "spend_usd", NULL,
		      false},
	[LX_UNCACHED] = {"un", "uncached_usd", LS_PROVIDER, "uncached_usd",
			 NULL, false},
	[LX_SAVED] = {"sv", "saved_usd", LS_PROVIDER, "saved_usd", NULL,
		      false},
	[LX_PRICED] = {"pr", NULL, 0, "requests", NULL, false},
	[LX_O_ABORT] = {"oab", NULL, 0, NULL, "requests.client_abort", false},
	[LX_O_MID] = {"omid", NULL, 0, NULL, "requests.mid_stream", false},
	[LX_O_TIMEOUT] = {"oto", NULL, 0, NULL, "requests.timeout", false},
	[LX_O_5XX] = {"o5xx", NULL, 0, NULL, "requests.5xx", false},
	[LX_O_OTHER] = {"ooth", NULL, 0, NULL, "requests.other", false},
	[LX_O_429] = {"o429", NULL, 0, NULL, "requests.429", false},
	[LX_O_CLIENT] = {"ocl", NULL, 0, NULL, "requests.client_error",
			 false},
	[LX_LOCK_CHANGES] = {"lock", NULL, 0, NULL, "lock_changes", true},
	[LX_BRK_MOVED] = {"bmv", "conversations.breaks.moved", 0, NULL,
			  "breaks.moved", true},
	[LX_BRK_PREFIX] = {"bpc", "conversations.breaks.prefix_changed", 0,
			   NULL, "breaks.prefix_changed", true},
	[LX_BRK_EXPIRED] = {"bex", "conversations.breaks.expired", 0, NULL,
			    "breaks.expired", true},
	[LX_BRK_MISS] = {"bpm", "conversations.breaks.provider_miss", 0,
			 NULL, "breaks.provider_miss", true},
	[LX_KEY_SPEND] = {"ksp", NULL, LS_KEYONLY, NULL, NULL, false,
			  "spend_usd"},
	[LX_KEY_SAVED] = {"ksv", NULL, LS_KEYONLY, NULL, NULL, false,
			  "saved_usd"},
	[LX_REFUSED_RPM] = {"xrpm", NULL, LS_KEYONLY, NULL, NULL, false,
			    "refused_rpm"},
	[LX_REFUSED_CONCURRENT] = {"xconc", NULL, LS_KEYONLY, NULL, NULL,
				   false, "refused_concurrent"},
	[LX_REFUSED_BUDGET] = {"xbud", NULL, LS_KEYONLY, NULL, NULL, false,
			       "refused_budget"},
	[LX_REFUSED_MODEL] = {"xmod", NULL, LS_KEYONLY, NULL, NULL, false,
			      "refused_model"},
	[LX_LAST_USED] = {"lu", NULL, LS_KEYONLY | LS_MAX, NULL, NULL, false,
			  NULL},
};

double
fin(double v)
{
	return isfinite(v) ? v : 0;
}

/* The row named key, or -1.  The search starts at row *from and wraps
 * around, and *from moves past the row found: a cell's members come in
 * the order of the rows (ledger_cell_encode), so each is found at the
 * first try instead of after a strcmp with every row before it. */
static int
field_of(const char *key, int *from)
{
	int i, n;

	for (n = 0, i = *from; n < LX_N; n++, i = (i + 1) % LX_N)
		if (strcmp(ledger_fields[i].key, key) == 0) {
			*from = (i + 1) % LX_N;
			return i;
		}
	return -1;
}

int
ledger_field_ix(const char *key)
{
	int from = 0;

	return field_of(key, &from);
}

bool
ledger_key_row(int i)
{
	return i >= 0 && i < LX_N &&
	       (ledger_fields[i].team != NULL ||
		(ledger_fields[i].scope & LS_KEYONLY));
}

/* A histogram member "t<slot>" or "d<slot>": the slot array, else NULL. */
static double *
slot_of(struct ledger_cell *c, const char *key)
{
	char *end;
	long i;

	if ((key[0] != 't' && key[0] != 'd') || key[1] < '0' || key[1] > '9')
		return NULL;
	i = strtol(key + 1, &end, 10);
	if (*end != '\0' || i < 0 || i >= LAT_N_SLOTS)
		return NULL;
	return key[0] == 't' ? &c->ttfb[i] : &c->dur[i];
}

enum orgw_err
ledger_cell_decode(const char *text, struct ledger_cell *c)
{
	cJSON *o, *it;
	double *slot;
	int i, from = 0;

	memset(c, 0, sizeof(*c));
	if (text == NULL)
		return ORGW_OK;
	o = cJSON_Parse(text);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return ORGW_EINVAL;
	}
	cJSON_ArrayForEach(it, o)
	{
		if (it->string == NULL || !cJSON_IsNumber(it) ||
		    strcmp(it->string, "v") == 0)
			continue;
		/* No row's name is a letter and a digit like a slot's. */
		if ((slot = slot_of(c, it->string)) != NULL)
			*slot = fin(it->valuedouble);
		else if ((i = field_of(it->string, &from)) >= 0)
			c->v[i] = fin(it->valuedouble);
	}
	cJSON_Delete(o);
	return ORGW_OK;
}

/* A non-zero counter into the cell's tree: the counts (whole numbers)
 * as the text cJSON would print for them, the money as cJSON numbers. */
static bool
put_num(cJSON *o, const char *k, double v)
{
	return v == 0 || record_add_number(o, k, v);
}

/* The members of the histogram slots, "t0".."t12" and "d0".."d12". */
_Static_assert(LAT_N_SLOTS == 13, "one name per histogram slot");
static const char *const ttfb_names[LAT_N_SLOTS] = {
	"t0", "t1", "t2", "t3", "t4", "t5", "t6",
	"t7", "t8", "t9", "t10", "t11", "t12"};
static const char *const dur_names[LAT_N_SLOTS] = {
	"d0", "d1", "d2", "d3", "d4", "d5", "d6",
	"d7", "d8", "d9", "d10", "d11", "d12"};

static bool
put_slots(cJSON *o, const char *const *names, const double *v)
{
	size_t i;

	for (i = 0; i < LAT_N_SLOTS; i++)
		if (!put_num(o, names[i], v[i]))
			return false;
	return true;
}

char *
ledger_cell_encode(const struct ledger_cell *c)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL && record_add_number(o, "v", RECORD_VERSION);
	char *text;
	int i;

	for (i = 0; ok && i < LX_N; i++)
		ok = put_num(o, ledger_fields[i].key, fin(c->v[i]));
	ok = ok && put_slots(o, ttfb_names, c->ttfb) &&
	     put_slots(o, dur_names, c->dur);
	text = ok ? cJSON_PrintUnformatted(o) : NULL;
	cJSON_Delete(o);
	return text;
}

void
ledger_cell_add(struct ledger_cell *dst, const struct ledger_cell *src)
{
	size_t i;

	for (i = 0; i < LX_N; i++) {
		double s = fin(src->v[i]);

		if (ledger_fields[i].scope & LS_MAX) {
			if (s > dst->v[i])
				dst->v[i] = s;
		} else {
			dst->v[i] = fin(dst->v[i] + s);
		}
	}
	for (i = 0; i < LAT_N_SLOTS; i++) {
		dst->ttfb[i] = fin(dst->ttfb[i] + fin(src->ttfb[i]));
		dst->dur[i] = fin(dst->dur[i] + fin(src->dur[i]));
	}
}

/* The request's one outcome row: what ended it, so the outcomes add up
 * to the requests; a request that met several failures is named by what
 * ended it, most final first (slow answers were delivered: ok). */
static enum ledger_ix
outcome_ix(const struct stats_delta *d)
{
	if (d->ok > 0)
		return LX_OK;
	if (d->eabort > 0)
		return LX_O_ABORT;
	if (d->emid > 0)
		return LX_O_MID;
	if (d->etimeout > 0)
		return LX_O_TIMEOUT;
	if (d->e5xx > 0)
		return LX_O_5XX;
	if (d->eother > 0)
		return LX_O_OTHER;
	if (d->e429 > 0)
		return LX_O_429;
	return LX_O_CLIENT;
}

const char *
ledger_outcome(const struct stats_delta *d)
{
	/* The row's /metrics name, "requests.<outcome>". */
	return ledger_fields[outcome_ix(d)].metrics + strlen("requests.");
}

/* Every row of d, a model's and its key's (ledger_from_delta and
 * ledger_key_from_delta keep theirs). */
static void
delta_rows(struct ledger_cell *c, const struct stats_delta *d)
{
	double spend = fin(d->cost_usd);

	memset(c, 0, sizeof(*c));
	c->v[LX_REQUESTS] = (double)d->requests;
	c->v[LX_OK] = (double)d->ok;
	c->v[LX_E429] = (double)d->e429;
	c->v[LX_E5XX] = (double)d->e5xx;
	c->v[LX_ETIMEOUT] = (double)d->etimeout;
	c->v[LX_ESLOW] = (double)d->eslow;
	c->v[LX_EMID] = (double)d->emid;
	c->v[LX_EABORT] = (double)d->eabort;
	c->v[LX_EOTHER] = (double)d->eother;
	c->v[LX_RETRIES_429] = (double)d->retries_429;
	c->v[LX_FAILOVERS] = (double)d->failovers;
	c->v[LX_OFF_PIN] = (double)d->off_pin;
	c->v[LX_PROMPT] = (double)d->prompt_tokens;
	c->v[LX_CACHED] = (double)d->cached_tokens;
	c->v[LX_CACHE_WRITE] = (double)d->cache_write_tokens;
	c->v[LX_COMPLETION] = (double)d->completion_tokens;
	c->v[LX_REASONING] = (double)d->reasoning_tokens;
	c->v[LX_COST] = spend;
	c->v[LX_COST_EST] = d->cost_estimated ? spend : 0;
	if (d->ok == 0 && d->requests > 0)
		c->v[outcome_ix(d)] = (double)d->requests;
	if (d->ttfb_ms >= 0) {
		c->v[LX_TTFB_SUM] = (double)d->ttfb_ms;
		c->v[LX_TTFB_N] = 1;
		c->v[LX_TTFB_MAX] = (double)d->ttfb_ms;
		c->ttfb[lat_bucket_slot(d->ttfb_ms)] = 1;
	}
	if (d->total_ms >= 0) {
		c->v[LX_TOTAL_SUM] = (double)d->total_ms;
		c->v[LX_TOTAL_N] = 1;
		c->v[LX_TOTAL_MAX] = (double)d->total_ms;
		c->dur[lat_bucket_slot(d->total_ms)] = 1;
	}
	if (d->money_tag != NULL && d->money_tag[0] != '\0') {
		double unc = fin(d->uncached_usd);

		c->v[LX_SPEND] = spend;
		c->v[LX_UNCACHED] = unc;
		c->v[LX_SAVED] = unc - spend;
		c->v[LX_PRICED] = 1;
	}
	c->v[LX_KEY_SPEND] = fin(ledger_key_spend(d));
	/* Only cache reads save a key money (the rest is rounding). */
	if (d->usage && d->cached_tokens > 0 && d->uncached_usd > d->cost_usd)
		c->v[LX_KEY_SAVED] = fin(d->uncached_usd - d->cost_usd);
	c->v[LX_LAST_USED] = (double)d->now;
}

void
ledger_from_delta(struct ledger_cell *c, const struct stats_delta *d)
{
	int i;

	delta_rows(c, d);
	for (i = 0; i < LX_N; i++)
		if (ledger_fields[i].scope & LS_KEYONLY)
			c->v[i] = 0;
}

void
ledger_key_from_delta(struct ledger_cell *c, const struct stats_delta *d)
{
	int i;

	delta_rows(c, d);
	for (i = 0; i < LX_N; i++)
		if (!ledger_key_row(i))
			c->v[i] = 0;
	memset(c->ttfb, 0, sizeof(c->ttfb));
	memset(c->dur, 0, sizeof(c->dur));
}

bool
ledger_render_key(cJSON *o, const struct ledger_cell *c)
{
	int i;

	for (i = 0; i < LX_N; i++)
		if (ledger_fields[i].team != NULL &&
		    cJSON_AddNumberToObject(o, ledger_fields[i].team,
					    fin(c->v[i])) == NULL)
			return false;
	return true;
}

enum ledger_ix
ledger_break_ix(enum convcache_cause cause)
{
	switch (cause) {
	case CONVCACHE_MOVED:
		return LX_BRK_MOVED;
	case CONVCACHE_PREFIX_CHANGED:
		return LX_BRK_PREFIX;
	case CONVCACHE_EXPIRED:
		return LX_BRK_EXPIRED;
	case CONVCACHE_PROVIDER_MISS:
		return LX_BRK_MISS;
	case CONVCACHE_NONE:
		break;
	}
	return LX_N;
}

const char *
ledger_provider(const struct stats_delta *d)
{
	if (d->money_tag != NULL && d->money_tag[0] != '\0')
		return d->money_tag;
	if (d->tag != NULL && d->tag[0] != '\0')
		return d->tag;
	return RECORD_MONEY_UNKNOWN;
}

double
ledger_key_spend(const struct stats_delta *d)
{
	return d->usage ? d->cost_usd : d->key_billed_usd;
}

const char *
ledger_api(const struct stats_delta *d)
{
	return d->api != NULL && d->api[0] != '\0' ? d->api : LEDGER_NONE;
}

static bool
part_ok(const char *s, bool colon_ok)
{
	return s != NULL && s[0] != '\0' && (colon_ok || !strchr(s, ':'));
}

bool
ledger_key(char *k, size_t n, const char *model, const char *day,
	   const char *api, const char *tag)
{
	size_t pl = strlen(LEDGER_PREFIX);

	if (!part_ok(model, true) || !part_ok(day, false) ||
	    !part_ok(api, false) || !part_ok(tag, false) || n <= pl)
		return false;
	memcpy(k, LEDGER_PREFIX, pl);
	return buf_join(k + pl, n - pl, ':', model, day, api, tag,
			(char *)NULL);
}

/* The last ':' in [s, e), or NULL. */
static const char *
last_colon(const char *s, const char *e)
{
	while (e > s)
		if (*--e == ':')
			return e;
	return NULL;
}

/* Copies the part [s, e) into dst (n bytes); false when empty or too
 * long. */
bool
part_copy(char *dst, size_t n, const char *s, const char *e)
{
	size_t len = (size_t)(e - s);

	if (len == 0 || len >= n)
		return false;
	memcpy(dst, s, len);
	dst[len] = '\0';
	return true;
}

bool
ledger_key_split(const char *key, struct ledger_key_parts *p)
{
	const char *s, *e, *c1, *c2, *c3;

	if ((s = statekeys_is(key, SK_LEDGER)) == NULL)
		return false;
	e = s + strlen(s);
	if ((c3 = last_colon(s, e)) == NULL ||
	    (c2 = last_colon(s, c3)) == NULL ||
	    (c1 = last_colon(s, c2)) == NULL)
		return false;
	return part_copy(p->model, sizeof(p->model), s, c1) &&
	       part_copy(p->day, sizeof(p->day), c1 + 1, c2) &&
	       part_copy(p->api, sizeof(p->api), c2 + 1, c3) &&
	       part_copy(p->tag, sizeof(p->tag), c3 + 1, e);
}

/* True when s is "YYYY-MM-DD" in digits and dashes. */
bool
day_ok(const char *s)
{
	int i;

	for (i = 0; i < 10; i++)
		if (i == 4 || i == 7 ? s[i] != '-' : (s[i] < '0' || s[i] > '9'))
			return false;
	return s[10] == '\0';
}

/* The first day /stats shows day by day at now. */
void
first_day(int64_t now, char dst[11])
{
	record_day(now - (int64_t)(LEDGER_DAYS - 1) * 86400, dst);
}

bool
ledger_day_old(const char *day, int64_t now)
{
	char first[11];

	if (!day_ok(day))
		return false;
	first_day(now, first);
	return strcmp(day, first) < 0;
}
