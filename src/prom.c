/*
 * prom.c - the Prometheus text exposition format 0.0.4.
 *
 * Format (prometheus.io/docs/instrumenting/exposition_formats): one
 * "# HELP name text" and one "# TYPE name type" line per family, then
 * its samples, each "name{label="value",...} number\n"; all samples of
 * a family follow its TYPE line.  Label values escape \, " and line
 * feed; HELP text escapes \ and line feed.  Numbers are Go ParseFloat
 * text: "+Inf", "-Inf" and "NaN" included.
 *
 * Names follow the Prometheus conventions: the orgw_ prefix, base units
 * (seconds, USD) in the name, _total on counters.  Token types use the
 * OpenTelemetry GenAI wording (gen_ai.token.type input / output, and
 * cache_read for the cached share of the input).
 *
 * Pure: the caller reads the state and hands over a cJSON tree
 * (prom_render's contract); nothing here does I/O.  Ownership: out
 * belongs to the caller, models is borrowed for the call.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"
#include "prom.h"

static enum orgw_err
escape(struct buf *b, const char *v, bool quote)
{
	const char *p, *run;
	enum orgw_err err = ORGW_OK;

	if (v == NULL)
		return ORGW_OK;
	for (run = p = v; *p != '\0' && err == ORGW_OK; p++) {
		const char *rep = NULL;

		if (*p == '\\')
			rep = "\\\\";
		else if (*p == '\n')
			rep = "\\n";
		else if (*p == '"' && quote)
			rep = "\\\"";
		if (rep == NULL)
			continue;
		err = buf_add(b, run, (size_t)(p - run));
		if (err == ORGW_OK)
			err = buf_adds(b, rep);
		run = p + 1;
	}
	if (err == ORGW_OK)
		err = buf_add(b, run, (size_t)(p - run));
	return err;
}

enum orgw_err
prom_escape_label(struct buf *b, const char *v)
{
	return escape(b, v, true);
}

enum orgw_err
prom_escape_help(struct buf *b, const char *v)
{
	return escape(b, v, false);
}

void
prom_number(char *dst, size_t n, double v)
{
	int prec;

	if (isnan(v)) {
		snprintf(dst, n, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(dst, n, "%s", v > 0 ? "+Inf" : "-Inf");
		return;
	}
	/* Integers (token counts, request counts) in full, not 1.2e+07. */
	if (v == floor(v) && fabs(v) < 1e17) {
		snprintf(dst, n, "%.0f", v);
		return;
	}
	/* The shortest text that reads back as v: 0.1, not
	 * 0.10000000000000001. */
	for (prec = 15; prec <= 17; prec++) {
		snprintf(dst, n, "%.*g", prec, v);
		if (strtod(dst, NULL) == v)
			return;
	}
}

/* What a family is written with; err keeps the first failure. */
struct emit {
	struct buf *b;
	enum orgw_err err;
};

static void
put(struct emit *e, const char *s)
{
	if (e->err == ORGW_OK)
		e->err = buf_adds(e->b, s);
}

static void
family(struct emit *e, const char *name, const char *type, const char *help)
{
	put(e, "# HELP ");
	put(e, name);
	put(e, " ");
	if (e->err == ORGW_OK)
		e->err = prom_escape_help(e->b, help);
	put(e, "\n# TYPE ");
	put(e, name);
	put(e, " ");
	put(e, type);
	put(e, "\n");
}

/* One sample: name{k1="v1",...} v; lv holds names and values in turn,
 * ending at a NULL name. */
static void
sample(struct emit *e, const char *name, const char *const *lv, double v)
{
	char num[64];
	size_t i;

	put(e, name);
	for (i = 0; lv != NULL && lv[i] != NULL; i += 2) {
		put(e, i == 0 ? "{" : ",");
		put(e, lv[i]);
		put(e, "=\"");
		if (e->err == ORGW_OK)
			e->err = prom_escape_label(e->b, lv[i + 1]);
		put(e, "\"");
	}
	if (lv != NULL && lv[0] != NULL)
		put(e, "}");
	prom_number(num, sizeof(num), v);
	put(e, " ");
	put(e, num);
	put(e, "\n");
}

static const cJSON *
get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* A stored count: a finite number, or a flag as 1 or 0 (a provider under
 * pressure), else false (left out). */
static bool
count_of(const cJSON *it, double *v)
{
	if (cJSON_IsBool(it)) {
		*v = cJSON_IsTrue(it) ? 1 : 0;
		return true;
	}
	if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
		return false;
	*v = it->valuedouble;
	return true;
}

/* orgw_requests_total and orgw_tokens_total: METRICS providers.<p>.<sub>
 * members as the label lname. */
static void
provider_counts(struct emit *e, const cJSON *models, const char *name,
		const char *sub, const char *lname)
{
	const cJSON *m, *p, *it;
	double v;

	cJSON_ArrayForEach(m, models)
	{
		cJSON_ArrayForEach(p, get(get(m, "metrics"), "providers"))
		{
			cJSON_ArrayForEach(it, get(p, sub))
			{
				const char *lv[] = {"model", m->string,
						    "provider", p->string,
						    lname, it->string, NULL};
				if (count_of(it, &v))
					sample(e, name, lv, v);
			}
		}
	}
}

/* A number per model and member of m[rec][obj], the member's name as the
 * label lname: its field, or the member itself when field is NULL. */
static void
member_value(struct emit *e, const cJSON *models, const char *rec,
	     const char *obj, const char *lname, const char *field,
	     const char *name)
{
	const cJSON *m, *p;
	double v;

	cJSON_ArrayForEach(m, models)
	{
		cJSON_ArrayForEach(p, get(get(m, rec), obj))
		{
			const char *lv[] = {"model", m->string, lname,
					    p->string, NULL};
			if (count_of(field ? get(p, field) : p, &v))
				sample(e, name, lv, v);
		}
	}
}

/* A per-provider number: from the "stats" tree's by_provider (money),
 * the "metrics" tree's providers or the "conversations" providers. */
static void
provider_value(struct emit *e, const cJSON *models, const char *rec,
	       const char *obj, const char *field, const char *name)
{
	member_value(e, models, rec, obj, "provider", field, name);
}

/* A per-model number; absent counts as 0 so every model has a sample. */
static void
model_value(struct emit *e, const cJSON *models, const char *rec,
	    const char *field, const char *name)
{
	const cJSON *m;
	double v;

	cJSON_ArrayForEach(m, models)
	{
		const char *lv[] = {"model", m->string, NULL};
		const cJSON *it = rec ? get(get(m, rec), field) : get(m, field);
		if (!count_of(it, &v))
			v = 0;
		sample(e, name, lv, v);
	}
}

/* The per-API counters of the "stats" tree's by_api (docs/state.md): one
 * sample per model and API, or per model, API and token type. */
static void
api_counts(struct emit *e, const cJSON *models, const char *field,
	   const char *name)
{
	const cJSON *m, *a;
	double v;
	size_t i;

	cJSON_ArrayForEach(m, models)
	{
		cJSON_ArrayForEach(a, get(get(m, "stats"), "by_api"))
		{
			const char *lv[] = {"model", m->string, "api",
					    a->string, NULL, NULL, NULL};

			if (field != NULL) {
				if (count_of(get(a, field), &v))
					sample(e, name, lv, v);
				continue;
			}
			/* Every token row of the ledger, under the type
			 * name orgw_tokens_total gives it. */
			lv[4] = "type";
			for (i = 0; i < LX_N; i++) {
				const struct ledger_field *f = &ledger_fields[i];

				if (f->stats == NULL || f->metrics == NULL ||
				    strncmp(f->stats, "tokens.", 7) != 0 ||
				    strncmp(f->metrics, "tokens.", 7) != 0)
					continue;
				lv[5] = f->metrics + 7;
				if (count_of(get(get(a, "tokens"), f->stats + 7),
					     &v))
					sample(e, name, lv, v);
			}
		}
	}
}

/* The ledger's break rows (metrics "breaks.<cause>", per model): every
 * cause of every model, 0 when none was counted, so a series is there
 * from the model's first scrape on. */
static void
cause_counts(struct emit *e, const cJSON *models, const char *name)
{
	const cJSON *m, *b;
	double v;
	size_t i;

	cJSON_ArrayForEach(m, models)
	{
		b = get(get(m, "metrics"), "breaks");
		for (i = 0; i < LX_N; i++) {
			const char *p = ledger_fields[i].metrics;
			const char *lv[] = {"model", m->string, "cause", NULL,
					    NULL};

			if (p == NULL || strncmp(p, "breaks.", 7) != 0)
				continue;
			lv[3] = p + 7;
			if (!count_of(get(b, lv[3]), &v))
				v = 0;
			sample(e, name, lv, v);
		}
	}
}

/* A histogram per model from METRICS <field>: {"buckets":[one count per
 * slot, not cumulative], "sum_ms", "count"}. */
static void
histogram(struct emit *e, const cJSON *models, const char *field,
	  const char *base)
{
	char name[128], le[64];
	const cJSON *m, *h, *bk;
	double cum, v, sum_ms;
	size_t i;

	cJSON_ArrayForEach(m, models)
	{
		h = get(get(m, "metrics"), field);
		if (!cJSON_IsObject(h))
			continue;
		bk = get(h, "buckets");
		cum = 0;
		for (i = 0; i < LAT_N_SLOTS; i++) {
			const char *lv[] = {"model", m->string, "le", le,
					    NULL};
			if (count_of(cJSON_GetArrayItem(bk, (int)i), &v))
				cum += v;
			if (i < LAT_N_BUCKETS)
				prom_number(le, sizeof(le),
					    (double)lat_bucket_ms[i] / 1000);
			else
				snprintf(le, sizeof(le), "+Inf");
			snprintf(name, sizeof(name), "%s_bucket", base);
			sample(e, name, lv, cum);
		}
		{
			const char *lv[] = {"model", m->string, NULL};
			if (!count_of(get(h, "sum_ms"), &sum_ms))
				sum_ms = 0;
			snprintf(name, sizeof(name), "%s_sum", base);
			sample(e, name, lv, sum_ms / 1000);
			/* _count is the +Inf bucket, by definition. */
			snprintf(name, sizeof(name), "%s_count", base);
			sample(e, name, lv, cum);
		}
	}
}

enum orgw_err
prom_render(struct buf *out, const cJSON *models, int64_t in_flight,
	    int64_t lost_updates)
{
	struct emit e = {out, ORGW_OK};

	family(&e, "orgw_requests_total", "counter",
	       "Requests answered, by model, provider (the one that served "
	       "or was tried last; unknown when unpinned and unattributed) "
	       "and outcome (ok, or what ended the request: client_abort, "
	       "mid_stream, timeout, 5xx, other, 429, client_error).");
	provider_counts(&e, models, "orgw_requests_total", "requests",
			"outcome");
	family(&e, "orgw_tokens_total", "counter",
	       "Tokens by model, provider and type (OpenTelemetry GenAI: "
	       "input = prompt tokens, cache_read = the cached part of the "
	       "input, cache_write = the part written to a cache, output = "
	       "completion tokens, reasoning = the part of the output spent "
	       "thinking).");
	provider_counts(&e, models, "orgw_tokens_total", "tokens", "type");
	family(&e, "orgw_spend_usd_total", "counter",
	       "What OpenRouter billed (usage.cost; priced from the "
	       "endpoint's prices when an answer did not say), USD.");
	provider_value(&e, models, "stats", "by_provider", "spend_usd",
		       "orgw_spend_usd_total");
	family(&e, "orgw_api_requests_total", "counter",
	       "Requests answered, by model and the API they came by (chat, "
	       "messages, responses).");
	api_counts(&e, models, "requests", "orgw_api_requests_total");
	family(&e, "orgw_api_tokens_total", "counter",
	       "Tokens by model, API and type (as orgw_tokens_total).");
	api_counts(&e, models, NULL, "orgw_api_tokens_total");
	family(&e, "orgw_api_spend_usd_total", "counter",
	       "Spend by model and API, USD.");
	api_counts(&e, models, "cost_usd", "orgw_api_spend_usd_total");
	family(&e, "orgw_cache_savings_usd", "gauge",
	       "Saved by cache reads against every prompt token at the "
	       "prompt price, USD; a gauge because cache writes priced over "
	       "the prompt price make it go down.");
	provider_value(&e, models, "stats", "by_provider", "saved_usd",
		       "orgw_cache_savings_usd");
	family(&e, "orgw_time_to_first_token_seconds", "histogram",
	       "From the request's arrival to the first byte of the answer.");
	histogram(&e, models, "ttfb", "orgw_time_to_first_token_seconds");
	family(&e, "orgw_request_duration_seconds", "histogram",
	       "From the request's arrival to its end.");
	histogram(&e, models, "duration", "orgw_request_duration_seconds");
	family(&e, "orgw_breaker_trips_total", "counter",
	       "Circuit breaker trips (a provider put into cooldown).");
	provider_value(&e, models, "metrics", "providers", "breaker_trips",
		       "orgw_breaker_trips_total");
	family(&e, "orgw_cooldowns_active", "gauge",
	       "Providers of the model cooling down now.");
	model_value(&e, models, NULL, "cooling", "orgw_cooldowns_active");
	family(&e, "orgw_lock_changes_total", "counter",
	       "Lock moves to another provider (breaker trip, operator "
	       "cool, idle lock re-ranked); a first lock is not a change.");
	model_value(&e, models, "metrics", "lock_changes",
		    "orgw_lock_changes_total");
	family(&e, "orgw_conversations_active", "gauge",
	       "Conversations whose last turn is within "
	       "CONVERSATION_IDLE_SECONDS, by the provider that served it.");
	provider_value(&e, models, "conversations", "providers", "active",
		       "orgw_conversations_active");
	family(&e, "orgw_cache_breaks_total", "counter",
	       "Turns that read less than half of what the previous turn's "
	       "prompt could give from the cache, by cause (moved, "
	       "prefix_changed, expired, provider_miss), counted with the "
	       "request: dropping conversation records takes none away.");
	cause_counts(&e, models, "orgw_cache_breaks_total");
	family(&e, "orgw_conversations_spread", "gauge",
	       "Kept conversations that started on another provider "
	       "because the model's lock was under pressure.");
	model_value(&e, models, "conversations", "spread",
		    "orgw_conversations_spread");
	family(&e, "orgw_provider_429s", "gauge",
	       "Provider 429s (a 429 naming the provider) counted in the "
	       "model's pressure record for that provider.");
	provider_value(&e, models, "conversations", "providers",
		       "provider_429s", "orgw_provider_429s");
	family(&e, "orgw_provider_under_pressure", "gauge",
	       "1 while the provider takes no new conversations of the "
	       "model (a provider 429 within PRESSURE_SECONDS).");
	provider_value(&e, models, "conversations", "providers",
		       "under_pressure", "orgw_provider_under_pressure");
	if (in_flight >= 0) {
		family(&e, "orgw_requests_in_flight", "gauge",
		       "Requests being answered now.");
		sample(&e, "orgw_requests_in_flight", NULL, (double)in_flight);
	}
	if (lost_updates >= 0) {
		family(&e, "orgw_state_lost_updates_total", "counter",
		       "Request counts the state could not record (its "
		       "store was away), added once it was back.");
		sample(&e, "orgw_state_lost_updates_total", NULL,
		       (double)lost_updates);
	}
	return e.err;
}

/* A team key's figure of this month ("month" in its /stats object). */
static void
key_value(struct emit *e, const cJSON *keys, const char *field,
	  const char *name, const char *lname, const char *lvalue)
{
	const cJSON *k;
	double v;

	cJSON_ArrayForEach(k, keys)
	{
		const char *lv[] = {"key", k->string, lname, lvalue, NULL};

		if (count_of(get(get(k, "month"), field), &v))
			sample(e, name, lv, v);
	}
}

enum orgw_err
prom_render_keys(struct buf *out, const cJSON *keys)
{
	struct emit e = {out, ORGW_OK};
	const cJSON *k;
	double v;
	size_t i;

	if (keys == NULL || keys->child == NULL)
		return ORGW_OK;
	family(&e, "orgw_key_requests_total", "counter",
	       "Requests of a team key this UTC month (the key label is its "
	       "name), refusals not included.");
	key_value(&e, keys, "requests", "orgw_key_requests_total", NULL, NULL);
	family(&e, "orgw_key_tokens_total", "counter",
	       "Tokens of a team key this UTC month, by type (as "
	       "orgw_tokens_total).");
	/* Every token row of the ledger a key counts, under the type
	 * orgw_tokens_total gives it. */
	for (i = 0; i < LX_N; i++) {
		const struct ledger_field *f = &ledger_fields[i];

		if (f->team != NULL && f->metrics != NULL &&
		    strncmp(f->metrics, "tokens.", 7) == 0)
			key_value(&e, keys, f->team, "orgw_key_tokens_total",
				  "type", f->metrics + 7);
	}
	family(&e, "orgw_key_spend_usd_total", "counter",
	       "What a team key spent this UTC month, USD.");
	key_value(&e, keys, "spend_usd", "orgw_key_spend_usd_total", NULL,
		  NULL);
	family(&e, "orgw_key_savings_usd_total", "counter",
	       "What cache reads saved a team key this UTC month, USD.");
	key_value(&e, keys, "saved_usd", "orgw_key_savings_usd_total", NULL,
		  NULL);
	family(&e, "orgw_key_refused_total", "counter",
	       "Requests of a team key refused this UTC month, by reason "
	       "(rpm, concurrent, budget, model).");
	/* Every refusal row, "refused_<reason>". */
	for (i = 0; i < LX_N; i++) {
		const char *t = ledger_fields[i].team;

		if (t != NULL && strncmp(t, "refused_", 8) == 0)
			key_value(&e, keys, t, "orgw_key_refused_total",
				  "reason", t + 8);
	}
	family(&e, "orgw_key_budget_remaining_usd", "gauge",
	       "What is left of a team key's budget, by window (day, "
	       "month); only for keys with that budget.");
	cJSON_ArrayForEach(k, keys)
	{
		const char *day[] = {"key", k->string, "window", "day", NULL};
		const char *month[] = {"key", k->string, "window", "month",
				       NULL};

		if (count_of(get(k, "remaining_usd_day"), &v))
			sample(&e, "orgw_key_budget_remaining_usd", day, v);
		if (count_of(get(k, "remaining_usd_month"), &v))
			sample(&e, "orgw_key_budget_remaining_usd", month, v);
	}
	return e.err;
}
