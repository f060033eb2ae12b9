/*
 * test_ledger.c - unit tests for ledger.c, ledger_render.c and
 * ledger_price.c: cells (sparse text, damaged text, sums and maxima), a
 * request's cell, the cell keys of models with ':' in their ids, /stats
 * and /metrics rendered from cells in any order with an old release's
 * records added in, money attribution and pricing.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "t.h"
#include "ledger.h"
#include "latency.h"
#include "record.h"
#include "score.h"

#define MONEY_DAY 1796083200 /* 2026-12-01 00:00:00 UTC */

/* Reads a number at a dotted path ("a.b.c"); NAN when absent. */
static double
at(const cJSON *o, const char *path)
{
	char buf[128], *p, *dot;
	const cJSON *it = o;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = buf; it != NULL; p = dot + 1) {
		dot = strchr(p, '.');
		if (dot)
			*dot = '\0';
		it = cJSON_GetObjectItemCaseSensitive(it, p);
		if (!dot)
			break;
	}
	return cJSON_IsNumber(it) ? it->valuedouble : NAN;
}

/* A delta of one ok request of 1000 prompt tokens (400 cached), 50 out. */
static void
delta_ok(struct stats_delta *d, const char *tag)
{
	memset(d, 0, sizeof(*d));
	d->tag = tag;
	d->api = "chat";
	d->requests = d->ok = 1;
	d->prompt_tokens = 1000;
	d->cached_tokens = 400;
	d->completion_tokens = 50;
	d->reasoning_tokens = 20;
	d->cost_usd = 0.002;
	d->cost_known = d->usage = true;
	d->ttfb_ms = 300;
	d->total_ms = 4000;
	d->now = MONEY_DAY + 3600;
	d->money_tag = tag;
	d->uncached_usd = 0.003;
}

/* The /stats object of the one request d, as cell (api, tag) of its day,
 * finished; the caller deletes it. */
static cJSON *
render_one(const struct stats_delta *d, const char *api, const char *tag)
{
	struct ledger_key_parts p;
	struct ledger_cell c;
	cJSON *st = cJSON_CreateObject();

	memset(&p, 0, sizeof(p));
	record_day(d->now, p.day);
	snprintf(p.model, sizeof(p.model), "m");
	snprintf(p.api, sizeof(p.api), "%s", api);
	snprintf(p.tag, sizeof(p.tag), "%s", tag);
	ledger_from_delta(&c, d);
	if (!ledger_render_cell(st, NULL, &p, &c, d->now) ||
	    !ledger_render_finish(st, d->now)) {
		cJSON_Delete(st);
		return NULL;
	}
	return st;
}

static void
test_cell_text(void)
{
	struct ledger_cell c, back;
	struct stats_delta d;
	char *t;
	cJSON *o;
	int i, same = 1;

	delta_ok(&d, "p");
	ledger_from_delta(&c, &d);
	t = ledger_cell_encode(&c);
	o = t ? cJSON_Parse(t) : NULL;
	T_ASSERT("cell: v 1, only non-zero counters",
		 o && at(o, "v") == 1 && at(o, "r") == 1 && at(o, "pt") == 1000 &&
			 cJSON_GetObjectItemCaseSensitive(o, "e429") == NULL &&
			 cJSON_GetObjectItemCaseSensitive(o, "trip") == NULL);
	{
		char tk[8], dk[8];

		snprintf(tk, sizeof(tk), "t%zu", lat_bucket_slot(300));
		snprintf(dk, sizeof(dk), "d%zu", lat_bucket_slot(4000));
		T_ASSERT("cell: one slot of each histogram",
			 o && at(o, tk) == 1 && at(o, dk) == 1 &&
				 cJSON_GetArraySize(o) < 30);
	}
	T_ASSERT("cell: decodes what it encoded",
		 t && ledger_cell_decode(t, &back) == ORGW_OK);
	for (i = 0; i < LX_N; i++)
		same = same && back.v[i] == c.v[i];
	for (i = 0; i < LAT_N_SLOTS; i++)
		same = same && back.ttfb[i] == c.ttfb[i] && back.dur[i] == c.dur[i];
	T_ASSERT("cell: every counter and slot comes back", same);
	cJSON_Delete(o);
	record_free(t);

	T_ASSERT("cell: absent text is zero",
		 ledger_cell_decode(NULL, &back) == ORGW_OK && back.v[LX_REQUESTS] == 0);
	T_ASSERT("cell: not an object is refused, zeroed",
		 ledger_cell_decode("[1,2]", &back) == ORGW_EINVAL &&
			 back.v[LX_REQUESTS] == 0 &&
			 ledger_cell_decode("{\"r\":", &back) == ORGW_EINVAL);
	T_ASSERT("cell: odd members are skipped, inf reads 0",
		 ledger_cell_decode("{\"r\":\"x\",\"ok\":1e999,\"pt\":7,"
				    "\"zz\":3,\"t99\":1,\"t3\":2,\"d\":1}",
				    &back) == ORGW_OK &&
			 back.v[LX_REQUESTS] == 0 && back.v[LX_OK] == 0 &&
			 back.v[LX_PROMPT] == 7 && back.ttfb[3] == 2);
	t = ledger_cell_encode(&back);
	T_ASSERT("cell: damage does not survive a write",
		 t && strstr(t, "zz") == NULL && strstr(t, "inf") == NULL &&
			 strstr(t, "null") == NULL);
	record_free(t);
}

static void
test_cell_add(void)
{
	struct ledger_cell a, b;
	struct stats_delta d;
	int i;

	delta_ok(&d, "p");
	ledger_from_delta(&a, &d);
	d.ttfb_ms = 100;
	d.total_ms = 9000;
	ledger_from_delta(&b, &d);
	ledger_cell_add(&a, &b);
	T_ASSERT("add: sums add", a.v[LX_REQUESTS] == 2 &&
					  a.v[LX_PROMPT] == 2000 &&
					  a.v[LX_TTFB_SUM] == 400 &&
					  a.v[LX_REASONING] == 40);
	T_ASSERT("add: maxima keep the larger",
		 a.v[LX_TTFB_MAX] == 300 && a.v[LX_TOTAL_MAX] == 9000);
	T_ASSERT("add: histogram slots add",
		 a.ttfb[lat_bucket_slot(300)] + a.ttfb[lat_bucket_slot(100)] ==
			 2);
	memset(&b, 0, sizeof(b));
	b.v[LX_REQUESTS] = INFINITY;
	b.v[LX_TTFB_MAX] = NAN;
	ledger_cell_add(&a, &b);
	T_ASSERT("add: non-finite adds nothing",
		 a.v[LX_REQUESTS] == 2 && a.v[LX_TTFB_MAX] == 300);
	for (i = 0; i < LX_N; i++)
		if (ledger_fields[i].key == NULL)
			break;
	T_ASSERT("table: every row has a cell name", i == LX_N);
}

/* The text the encoder wrote before record_add_number: every member a
 * cJSON number (kept here only, to compare against). */
static char *
cell_text_cjson(const struct ledger_cell *c)
{
	cJSON *o = cJSON_CreateObject();
	char k[16], *t;
	int i;

	cJSON_AddNumberToObject(o, "v", RECORD_VERSION);
	for (i = 0; i < LX_N; i++)
		if (c->v[i] != 0)
			cJSON_AddNumberToObject(o, ledger_fields[i].key, c->v[i]);
	for (i = 0; i < LAT_N_SLOTS; i++)
		if (c->ttfb[i] != 0) {
			snprintf(k, sizeof(k), "t%d", i);
			cJSON_AddNumberToObject(o, k, c->ttfb[i]);
		}
	for (i = 0; i < LAT_N_SLOTS; i++)
		if (c->dur[i] != 0) {
			snprintf(k, sizeof(k), "d%d", i);
			cJSON_AddNumberToObject(o, k, c->dur[i]);
		}
	t = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return t;
}

/* A whole number that "%1.15g" prints exactly. */
static bool
exact(double v)
{
	return v == floor(v) && fabs(v) < 1e15;
}

/*
 * True when the cell's text decodes back to the very same cell, has the
 * members the old encoder's text has, in its order, and the same bytes
 * for each whole number cJSON printed exactly: a release that reads
 * cells with cJSON gets the same values from either text.
 */
static bool
cell_same_text(const struct ledger_cell *c)
{
	struct ledger_cell back;
	char *t = ledger_cell_encode(c), *want = cell_text_cjson(c);
	cJSON *a = t ? cJSON_Parse(t) : NULL, *b = want ? cJSON_Parse(want) : NULL;
	cJSON *x = a ? a->child : NULL, *y = b ? b->child : NULL;
	bool ok = a != NULL && b != NULL &&
		  ledger_cell_decode(t, &back) == ORGW_OK;
	int i;

	for (i = 0; ok && i < LX_N; i++)
		ok = back.v[i] == c->v[i];
	for (i = 0; ok && i < LAT_N_SLOTS; i++)
		ok = back.ttfb[i] == c->ttfb[i] && back.dur[i] == c->dur[i];
	for (; ok && x != NULL && y != NULL; x = x->next, y = y->next)
		ok = strcmp(x->string, y->string) == 0 && cJSON_IsNumber(x) &&
		     (!exact(y->valuedouble) ||
		      x->valuedouble == y->valuedouble);
	ok = ok && x == NULL && y == NULL;
	if (!ok)
		fprintf(stderr, "  new %s\n  old %s\n", t ? t : "(null)",
			want ? want : "(null)");
	cJSON_Delete(a);
	cJSON_Delete(b);
	record_free(t);
	record_free(want);
	return ok;
}

/* A cell's numbers go in as text: it must read back exactly, and the
 * same as the old encoder's, so old and new releases read each other's
 * cells (hosts sharing a state on Redis are upgraded one at a time). */
static void
test_cell_as_cjson(void)
{
	static const double ints[] = {
		1, 2, 7, 9, 10, 99, 100, 101, 1000, 65535, 65536, 123456,
		999999, 1000000, 2147483647.0, 2147483648.0, 4294967296.0,
		5e7, 1e12, 1796083200000.0, 99999999999999.0,
		999999999999999.0, 1e15, 1000000000000001.0,
		9007199254740991.0, 9007199254740992.0, 1e17, 1e300};
	static const double money[] = {0.002, 0.1 + 0.2, 1e-7, 0.41, 12.5,
				       1.0 / 3, 123456.789, 0.003 - 0.002};
	struct ledger_cell c, sum;
	struct stats_delta d;
	uint64_t x = 88172645463325252u;
	size_t i, j, n = sizeof(ints) / sizeof(ints[0]);
	bool all = true;
	int k;

	/* A request's cell, and the sums of 1 to 1000 such requests. */
	delta_ok(&d, "p");
	ledger_from_delta(&c, &d);
	memset(&sum, 0, sizeof(sum));
	for (i = 1; i <= 1000; i++) {
		d.ttfb_ms = (int64_t)(i * 37 % 70000);
		d.total_ms = (int64_t)(i * 1009 % 900000);
		d.cost_usd = 0.0001 * (double)(i % 17);
		ledger_from_delta(&c, &d);
		ledger_cell_add(&sum, &c);
		if (i < 20 || i % 97 == 0 || i == 1000)
			all = all && cell_same_text(&sum);
	}
	T_ASSERT("cell text: a request's sums read back exactly", all);

	/* Every row and slot at each whole value, large ones too: from 1e15
	 * on cJSON prints an exponent and may lose digits; "%.17g" does not. */
	for (i = 0; i < n; i++) {
		memset(&c, 0, sizeof(c));
		for (k = 0; k < LX_N; k++)
			c.v[k] = ints[(i + (size_t)k) % n];
		for (k = 0; k < LAT_N_SLOTS; k++)
			c.ttfb[k] = c.dur[k] = ints[(i + 3 * (size_t)k) % n];
		all = all && cell_same_text(&c);
	}
	T_ASSERT("cell text: whole numbers up to 1e300", all);

	/* Random cells: whole counts of any size below 2^53, money, zeroes. */
	for (i = 0; i < 2000; i++) {
		memset(&c, 0, sizeof(c));
		for (k = 0; k < LX_N; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			j = x % 4;
			c.v[k] = j == 0 ? 0 :
				 j == 1 ? (double)(x >> (11 + x % 53)) :
				 j == 2 ? money[x % 8] * (double)(x % 1000) :
					  (double)(x % 100000);
		}
		c.ttfb[x % LAT_N_SLOTS] = (double)(x >> 40);
		c.dur[(x >> 8) % LAT_N_SLOTS] = (double)(x % 9);
		all = all && cell_same_text(&c);
	}
	T_ASSERT("cell text: 2000 random cells read back exactly", all);

	/* Negative counts are never stored, but would print the same. */
	memset(&c, 0, sizeof(c));
	c.v[LX_SAVED] = -0.5;
	c.v[LX_REQUESTS] = -3;
	c.v[LX_PROMPT] = -999999999999999.0;
	T_ASSERT("cell text: negative numbers read back exactly",
		 cell_same_text(&c));

	/* The rows' cursor: members in any order still find their rows, and
	 * no row's name looks like a histogram slot's. */
	T_ASSERT("cell: members out of the rows' order decode",
		 ledger_cell_decode("{\"t3\":2,\"tbn\":4,\"r\":5,\"lock\":1,"
				    "\"pt\":7,\"r\":6,\"ok\":3}",
				    &c) == ORGW_OK &&
			 c.v[LX_REQUESTS] == 6 && c.v[LX_OK] == 3 &&
			 c.v[LX_PROMPT] == 7 && c.v[LX_TTFB_N] == 4 &&
			 c.v[LX_LOCK_CHANGES] == 1 && c.ttfb[3] == 2);
	all = true;
	for (k = 0; k < LX_N; k++)
		all = all && !((ledger_fields[k].key[0] == 't' ||
				ledger_fields[k].key[0] == 'd') &&
			       ledger_fields[k].key[1] >= '0' &&
			       ledger_fields[k].key[1] <= '9');
	T_ASSERT("table: no row is named like a histogram slot", all);
}

/* One outcome per request: what ended it, most final first. */
static void
test_outcome(void)
{
	static const struct {
		int64_t ok, eabort, emid, etimeout, e5xx, eother, e429;
		const char *want;
		enum ledger_ix ix;
	} rows[] = {
		{1, 0, 1, 0, 1, 0, 1, "ok", LX_OK},
		{0, 1, 1, 1, 0, 0, 0, "client_abort", LX_O_ABORT},
		{0, 0, 1, 1, 1, 0, 0, "mid_stream", LX_O_MID},
		{0, 0, 0, 1, 1, 0, 1, "timeout", LX_O_TIMEOUT},
		{0, 0, 0, 0, 1, 1, 1, "5xx", LX_O_5XX},
		{0, 0, 0, 0, 0, 1, 1, "other", LX_O_OTHER},
		{0, 0, 0, 0, 0, 0, 1, "429", LX_O_429},
		{0, 0, 0, 0, 0, 0, 0, "client_error", LX_O_CLIENT},
	};
	struct stats_delta d;
	struct ledger_cell c;
	size_t i;
	char what[96];

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		memset(&d, 0, sizeof(d));
		d.requests = 1;
		d.ok = rows[i].ok;
		d.eabort = rows[i].eabort;
		d.emid = rows[i].emid;
		d.etimeout = rows[i].etimeout;
		d.e5xx = rows[i].e5xx;
		d.eother = rows[i].eother;
		d.e429 = rows[i].e429;
		d.trips = 1;
		d.ttfb_ms = d.total_ms = -1;
		ledger_from_delta(&c, &d);
		snprintf(what, sizeof(what), "outcome: %s, counted once",
			 rows[i].want);
		T_ASSERT(what, strcmp(ledger_outcome(&d), rows[i].want) == 0 &&
				       c.v[rows[i].ix] == 1 &&
				       c.v[LX_TRIPS] == 0 &&
				       c.v[LX_TTFB_N] == 0);
	}
	d.money_tag = NULL;
	T_ASSERT("provider: no money, no pin: unknown",
		 strcmp(ledger_provider(&d), RECORD_MONEY_UNKNOWN) == 0 &&
			 strcmp(ledger_api(&d), LEDGER_NONE) == 0);
	d.tag = "pin";
	T_ASSERT("provider: the pin", strcmp(ledger_provider(&d), "pin") == 0);
	d.money_tag = "served";
	T_ASSERT("provider: who the money went to",
		 strcmp(ledger_provider(&d), "served") == 0);
}

static void
test_keys(void)
{
	struct ledger_key_parts p;
	char k[256];

	T_ASSERT("key: made and split back",
		 ledger_key(k, sizeof(k), "a/b:free", "2026-12-01", "chat",
			    "deepinfra/fp8") &&
			 strcmp(k, "LEDGER:a/b:free:2026-12-01:chat:deepinfra/fp8") ==
				 0 &&
			 ledger_key_split(k, &p) &&
			 strcmp(p.model, "a/b:free") == 0 &&
			 strcmp(p.day, "2026-12-01") == 0 &&
			 strcmp(p.api, "chat") == 0 &&
			 strcmp(p.tag, "deepinfra/fp8") == 0);
	T_ASSERT("key: a tag or api with ':' is refused",
		 !ledger_key(k, sizeof(k), "m", "2026-12-01", "chat", "a:b") &&
			 !ledger_key(k, sizeof(k), "m", "2026-12-01", "c:d", "a") &&
			 !ledger_key(k, sizeof(k), "", "2026-12-01", "c", "a"));
	T_ASSERT("key: too long for the buffer is refused",
		 !ledger_key(k, 20, "model", "2026-12-01", "chat", "t"));
	T_ASSERT("split: other keys and short ones are not cells",
		 !ledger_key_split("STATS:m", &p) &&
			 !ledger_key_split("LEDGER:m:d:a", &p) &&
			 !ledger_key_split("LEDGER::d:a:t", &p) &&
			 !ledger_key_split("LEDGER:m:d::t", &p));
	T_ASSERT("day: 30 days shown, the 31st is old",
		 !ledger_day_old("2026-12-01", MONEY_DAY) &&
			 !ledger_day_old("2026-11-02", MONEY_DAY) &&
			 ledger_day_old("2026-11-01", MONEY_DAY) &&
			 !ledger_day_old(LEDGER_TOTAL, MONEY_DAY));
}

/* Cells of two days, two APIs and two providers, an event cell, a hit
 * rate and an old STATS record, added in a shuffled order. */
static void
test_render(void)
{
	const char *old_stats =
		"{\"v\":1,\"requests\":10,\"ok\":9,\"errors\":{\"429\":1},"
		"\"tokens\":{\"prompt\":5000,\"cached\":1000},"
		"\"latency\":{\"ttfb_ms_sum\":1000,\"ttfb_count\":10,"
		"\"ttfb_ms_max\":900},"
		"\"by_provider\":{\"a\":{\"requests\":10,\"hit\":{\"rate\":0.1,"
		"\"weight\":1,\"tokens\":5000}},\"b\":{\"requests\":0,"
		"\"hit\":{\"rate\":0.9,\"weight\":1,\"tokens\":7}}},"
		"\"days\":{\"2026-11-30\":{\"a\":{\"requests\":2,\"spend_usd\":1}},"
		"\"2026-10-01\":{\"a\":{\"requests\":5}}}}";
	const char *old_metrics =
		"{\"v\":1,\"providers\":{\"a\":{\"requests\":{\"ok\":9,"
		"\"429\":1},\"breaker_trips\":2}},\"lock_changes\":3,"
		"\"ttfb\":{\"buckets\":[1,1,1,1,1,1,1,1,1,1,1,1,1],"
		"\"sum_ms\":5,\"count\":13}}";
	struct stats_delta d;
	struct ledger_cell c[4];
	struct ledger_key_parts p[4];
	struct score_hit h = {"", 0.4, 100, 3000};
	cJSON *st = cJSON_CreateObject(), *mt = cJSON_CreateObject();
	int64_t now = MONEY_DAY + 7200;
	int order[4] = {2, 0, 3, 1}, i, ok = 1;

	memset(p, 0, sizeof(p));
	delta_ok(&d, "a");
	ledger_from_delta(&c[0], &d);
	snprintf(p[0].day, sizeof(p[0].day), "2026-12-01");
	snprintf(p[0].api, sizeof(p[0].api), "chat");
	snprintf(p[0].tag, sizeof(p[0].tag), "a");
	delta_ok(&d, "b");
	d.api = "messages";
	d.ok = 0;
	d.e5xx = 1;
	d.ttfb_ms = 2000;
	ledger_from_delta(&c[1], &d);
	snprintf(p[1].day, sizeof(p[1].day), "2026-11-20");
	snprintf(p[1].api, sizeof(p[1].api), "messages");
	snprintf(p[1].tag, sizeof(p[1].tag), "b");
	memset(&c[2], 0, sizeof(c[2]));
	c[2].v[LX_TRIPS] = 1;
	snprintf(p[2].day, sizeof(p[2].day), "2026-12-01");
	snprintf(p[2].api, sizeof(p[2].api), LEDGER_NONE);
	snprintf(p[2].tag, sizeof(p[2].tag), "b");
	memset(&c[3], 0, sizeof(c[3]));
	c[3].v[LX_LOCK_CHANGES] = 1;
	snprintf(p[3].day, sizeof(p[3].day), "2026-10-05");
	snprintf(p[3].api, sizeof(p[3].api), LEDGER_NONE);
	snprintf(p[3].tag, sizeof(p[3].tag), LEDGER_NONE);
	for (i = 0; i < 4; i++) {
		snprintf(p[order[i]].model, sizeof(p[0].model), "m");
		ok = ok && ledger_render_cell(st, mt, &p[order[i]], &c[order[i]],
					      now);
		if (i == 1)
			ok = ok && ledger_render_hit(st, "a", &h) &&
			     ledger_merge_legacy(st, old_stats) &&
			     ledger_merge_legacy(mt, old_metrics);
	}
	ok = ok && ledger_merge_legacy(st, "not json") &&
	     ledger_merge_legacy(st, NULL) && ledger_render_finish(st, now);
	T_ASSERT("render: every part rendered", ok);
	T_ASSERT("render: totals add cells and the old record",
		 at(st, "requests") == 12 && at(st, "ok") == 10 &&
			 at(st, "errors.5xx") == 1 && at(st, "errors.429") == 1 &&
			 at(st, "tokens.prompt") == 7000 &&
			 at(st, "tokens.reasoning") == 40 &&
			 at(st, "breaker_trips") == 1);
	T_ASSERT("render: zero counters are shown",
		 at(st, "errors.timeout") == 0 && at(st, "failovers") == 0 &&
			 at(st, "by_api.chat.tokens.cache_write") == 0);
	T_ASSERT("render: latency sums, maximum, average",
		 at(st, "latency.ttfb_ms_sum") == 3300 &&
			 at(st, "latency.ttfb_ms_max") == 2000 &&
			 T_NEAR(at(st, "latency.ttfb_ms_avg"), 3300.0 / 12));
	T_ASSERT("render: cache hit rate of the whole",
		 T_NEAR(at(st, "cache_hit_rate"), 1800.0 / 7000));
	T_ASSERT("render: by provider and by API",
		 at(st, "by_provider.a.requests") == 11 &&
			 at(st, "by_provider.b.requests") == 1 &&
			 at(st, "by_api.chat.requests") == 1 &&
			 at(st, "by_api.messages.ok") == 0 &&
			 at(st, "by_api.messages.tokens.reasoning") == 20);
	T_ASSERT("render: a HIT key wins over the old record's",
		 at(st, "by_provider.a.hit.rate") == 0.4 &&
			 at(st, "by_provider.b.hit.rate") == 0.9);
	T_ASSERT("render: days in the window only, old ones added in",
		 at(st, "days.2026-12-01.a.requests") == 1 &&
			 at(st, "days.2026-11-20.b.spend_usd") == 0.002 &&
			 at(st, "days.2026-11-30.a.spend_usd") == 1 &&
			 isnan(at(st, "days.2026-10-01.a.requests")) &&
			 at(st, "days.2026-12-01.a.prompt_tokens") == 1000);
	T_ASSERT("render: events are in no API and no day",
		 cJSON_GetObjectItemCaseSensitive(
			 cJSON_GetObjectItemCaseSensitive(st, "by_api"),
			 LEDGER_NONE) == NULL &&
			 isnan(at(st, "days.2026-12-01.b.requests")));
	T_ASSERT("metrics: outcomes per provider",
		 at(mt, "providers.a.requests.ok") == 10 &&
			 at(mt, "providers.a.requests.429") == 1 &&
			 at(mt, "providers.b.requests.5xx") == 1 &&
			 at(mt, "providers.b.tokens.input") == 1000 &&
			 at(mt, "providers.b.tokens.reasoning") == 20);
	T_ASSERT("metrics: trips per provider, lock changes per model",
		 at(mt, "providers.b.breaker_trips") == 1 &&
			 at(mt, "providers.a.breaker_trips") == 2 &&
			 at(mt, "lock_changes") == 4);
	{
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(mt, "ttfb"), "buckets");
		double sum = 0;
		const cJSON *it;

		cJSON_ArrayForEach(it, b) sum += it->valuedouble;
		T_ASSERT("metrics: histogram slots add with the old record's",
			 cJSON_GetArraySize(b) == LAT_N_SLOTS && sum == 15 &&
				 at(mt, "ttfb.count") == 15 &&
				 at(mt, "ttfb.sum_ms") == 2305);
	}
	cJSON_Delete(st);
	cJSON_Delete(mt);
}

/* A break counts under its cause's row, which a cell keeps through its
 * text, /stats shows in the model's conversations.breaks (every cause,
 * 0 too) and /metrics in the model's breaks. */
static void
test_breaks(void)
{
	struct ledger_cell c, back;
	struct ledger_key_parts p;
	cJSON *st = cJSON_CreateObject(), *mt = cJSON_CreateObject();
	char *text;
	bool ok;

	T_ASSERT("breaks: one row per cause, none for no break",
		 ledger_break_ix(CONVCACHE_MOVED) == LX_BRK_MOVED &&
			 ledger_break_ix(CONVCACHE_PREFIX_CHANGED) ==
				 LX_BRK_PREFIX &&
			 ledger_break_ix(CONVCACHE_EXPIRED) == LX_BRK_EXPIRED &&
			 ledger_break_ix(CONVCACHE_PROVIDER_MISS) ==
				 LX_BRK_MISS &&
			 ledger_break_ix(CONVCACHE_NONE) == LX_N);
	memset(&c, 0, sizeof(c));
	c.v[LX_REQUESTS] = 2;
	c.v[LX_BRK_MOVED] = 1;
	c.v[LX_BRK_MISS] = 3;
	text = ledger_cell_encode(&c);
	T_ASSERT("breaks: kept through the cell's text",
		 text != NULL && ledger_cell_decode(text, &back) == ORGW_OK &&
			 back.v[LX_BRK_MOVED] == 1 &&
			 back.v[LX_BRK_MISS] == 3 && back.v[LX_BRK_PREFIX] == 0);
	record_free(text);
	memset(&p, 0, sizeof(p));
	snprintf(p.model, sizeof(p.model), "m");
	snprintf(p.day, sizeof(p.day), "2026-12-01");
	snprintf(p.api, sizeof(p.api), "chat");
	snprintf(p.tag, sizeof(p.tag), "a");
	ok = ledger_render_cell(st, mt, &p, &c, MONEY_DAY) &&
	     ledger_render_cell(st, mt, &p, &c, MONEY_DAY) &&
	     ledger_render_finish(st, MONEY_DAY);
	T_ASSERT("breaks: /stats per model, every cause",
		 ok && at(st, "conversations.breaks.moved") == 2 &&
			 at(st, "conversations.breaks.provider_miss") == 6 &&
			 at(st, "conversations.breaks.prefix_changed") == 0 &&
			 at(st, "conversations.breaks.expired") == 0);
	T_ASSERT("breaks: not per provider or API",
		 isnan(at(st, "by_provider.a.conversations.breaks.moved")) &&
			 isnan(at(st, "by_api.chat.conversations.breaks.moved")));
	T_ASSERT("breaks: /metrics per model",
		 at(mt, "breaks.moved") == 2 &&
			 at(mt, "breaks.provider_miss") == 6 &&
			 isnan(at(mt, "providers.a.breaks.moved")));
	cJSON_Delete(st);
	cJSON_Delete(mt);
}

static void
money_cands(struct rec_cands *c, struct rec_cand v[2])
{
	struct score_terms *t;

	memset(c, 0, sizeof(*c));
	memset(v, 0, 2 * sizeof(*v));
	snprintf(v[0].tag, sizeof(v[0].tag), "ds");
	snprintf(v[0].provider_name, sizeof(v[0].provider_name), "DeepSeek");
	t = &v[0].terms;
	t->base_kind[SCORE_PROMPT] = t->base_kind[SCORE_COMPLETION] =
		SCORE_PRICE_OK;
	t->base[SCORE_PROMPT] = 1e-6;
	t->base[SCORE_COMPLETION] = 2e-6;
	t->n_win = 1;
	t->win[0].utc_start = 1630;
	t->win[0].utc_end = 30;
	t->win[0].kind[SCORE_PROMPT] = t->win[0].kind[SCORE_COMPLETION] =
		SCORE_PRICE_OK;
	t->win[0].price[SCORE_PROMPT] = 5e-7;
	t->win[0].price[SCORE_COMPLETION] = 1e-6;
	t->discount = 0.2;
	snprintf(v[1].tag, sizeof(v[1].tag), "di/fp8");
	snprintf(v[1].provider_name, sizeof(v[1].provider_name),
		 "Deep Infra");
	v[1].terms.base_kind[SCORE_PROMPT] = SCORE_PRICE_OK;
	v[1].terms.base[SCORE_PROMPT] = 3e-7;
	c->n = 2;
	c->v = v;
}


static void
test_money_price(void)
{
	struct rec_cands c;
	struct rec_cand v[2];
	struct stats_delta d;
	char day[11];

	money_cands(&c, v);
	memset(&d, 0, sizeof(d));
	d.usage = true;
	d.cost_known = true;
	d.tag = "ds";
	d.prompt_tokens = 1000;
	d.cached_tokens = 900;
	d.completion_tokens = 100;
	d.cost_usd = 1e-4;
	d.now = MONEY_DAY + 12 * 3600;
	ledger_price(&d, &c);
	T_ASSERT("money: a reported cost is kept",
		 d.cost_usd == 1e-4 && !d.cost_estimated);
	T_ASSERT("money: pinned goes to its tag",
		 d.money_tag && strcmp(d.money_tag, "ds") == 0);
	T_ASSERT("money: 12:00 base prices, discounted",
		 T_NEAR(d.uncached_usd, (1000 * 1e-6 + 100 * 2e-6) * 0.8));
	d.now = MONEY_DAY + 17 * 3600;
	ledger_price(&d, &c);
	T_ASSERT("money: 17:00 the window's prices, discounted",
		 T_NEAR(d.uncached_usd, (1000 * 5e-7 + 100 * 1e-6) * 0.8));
	d.now = MONEY_DAY + 16 * 3600 + 29 * 60;
	ledger_price(&d, &c);
	T_ASSERT("money: 16:29 is before the window",
		 T_NEAR(d.uncached_usd, (1000 * 1e-6 + 100 * 2e-6) * 0.8));
	d.now = MONEY_DAY + 86400 + 15 * 60; /* 00:15 next day: wraps */
	ledger_price(&d, &c);
	T_ASSERT("money: 00:15 still in the wrapping window",
		 T_NEAR(d.uncached_usd, (1000 * 5e-7 + 100 * 1e-6) * 0.8));

	d.tag = NULL;
	d.served = "deepseek";
	ledger_price(&d, &c);
	T_ASSERT("money: unpinned goes by display name (any case)",
		 d.money_tag && strcmp(d.money_tag, "ds") == 0 &&
			 T_NEAR(d.uncached_usd,
				(1000 * 5e-7 + 100 * 1e-6) * 0.8));
	d.tag = "di/fp8";
	d.off_pin = 1;
	d.served = "DeepSeek";
	ledger_price(&d, &c);
	T_ASSERT("money: served off its pin goes to who served",
		 d.money_tag && strcmp(d.money_tag, "ds") == 0);
	d.tag = NULL;
	d.off_pin = 0;
	d.served = "Nobody";
	ledger_price(&d, &c);
	T_ASSERT("money: an unmatched name is unknown, nothing saved",
		 d.money_tag && strcmp(d.money_tag, "unknown") == 0 &&
			 d.uncached_usd == d.cost_usd);
	d.served = "";
	ledger_price(&d, NULL);
	T_ASSERT("money: no name, no candidates: unknown",
		 d.money_tag && strcmp(d.money_tag, "unknown") == 0);
	d.served = "Deep Infra";
	ledger_price(&d, &c);
	T_ASSERT("money: a candidate without a completion price: spend",
		 d.money_tag && strcmp(d.money_tag, "di/fp8") == 0 &&
			 d.uncached_usd == d.cost_usd);
	d.usage = false;
	ledger_price(&d, &c);
	T_ASSERT("money: no usage records no money", d.money_tag == NULL);

	record_day(MONEY_DAY, day);
	T_ASSERT("record_day 2026-12-01", strcmp(day, "2026-12-01") == 0);
	record_day(951782400 + 86399, day);
	T_ASSERT("record_day 2000-02-29", strcmp(day, "2000-02-29") == 0);
	record_day(-1, day);
	T_ASSERT("record_day 1969-12-31", strcmp(day, "1969-12-31") == 0);
	record_day(0, day);
	T_ASSERT("record_day 1970-01-01", strcmp(day, "1970-01-01") == 0);
	record_day(253402300799LL, day);
	T_ASSERT("record_day 9999-12-31", strcmp(day, "9999-12-31") == 0);
	record_day(1099511627776LL, day);
	T_ASSERT("record_day of year 36812 keeps four digits",
		 strcmp(day, "6812-02-20") == 0);
}

/* An answer whose usage carries no cost (a streamed Messages answer may
 * not) is priced from the candidate's stored prices: each part of the
 * prompt at its own price, marked as estimated. */
static void
test_money_estimate(void)
{
	struct rec_cands c;
	struct rec_cand v[2];
	struct stats_delta d;
	struct score_terms *t;
	cJSON *o, *a;

	money_cands(&c, v);
	t = &v[0].terms;
	t->discount = 0;
	t->n_win = 0;
	t->base_kind[SCORE_CACHE_READ] = SCORE_PRICE_OK;
	t->base[SCORE_CACHE_READ] = 1e-7;
	t->base_kind[SCORE_CACHE_WRITE] = SCORE_PRICE_OK;
	t->base[SCORE_CACHE_WRITE] = 1.25e-6;
	memset(&d, 0, sizeof(d));
	d.usage = true;
	d.api = "messages";
	d.requests = d.ok = 1;
	d.tag = "ds";
	d.prompt_tokens = 1000;
	d.cached_tokens = 700;
	d.cache_write_tokens = 200;
	d.completion_tokens = 50;
	d.now = MONEY_DAY + 12 * 3600;
	d.ttfb_ms = d.total_ms = -1;
	ledger_price(&d, &c);
	T_ASSERT("estimate: priced part by part, marked",
		 d.cost_estimated &&
			 T_NEAR(d.cost_usd, 100 * 1e-6 + 700 * 1e-7 +
						    200 * 1.25e-6 + 50 * 2e-6));
	T_ASSERT("estimate: the saving is against the uncached price",
		 T_NEAR(d.uncached_usd, 1000 * 1e-6 + 50 * 2e-6));
	o = render_one(&d, "messages", "ds");
	a = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(o, "by_api"), "messages");
	T_ASSERT("estimate: the ledger marks the estimated cost",
		 T_NEAR(at(o, "cost_estimated_usd"), d.cost_usd) &&
			 T_NEAR(at(a, "cost_estimated_usd"), d.cost_usd));
	T_ASSERT("by_api: requests, ok and cache writes of the API",
		 at(a, "requests") == 1 && at(a, "ok") == 1 &&
			 at(a, "tokens.cache_write") == 200);
	cJSON_Delete(o);

	/* Cache prices the endpoint lacks are the prompt price. */
	t->base_kind[SCORE_CACHE_READ] = SCORE_PRICE_NONE;
	t->base_kind[SCORE_CACHE_WRITE] = SCORE_PRICE_NONE;
	d.cost_estimated = false;
	d.cost_usd = 0;
	ledger_price(&d, &c);
	T_ASSERT("estimate: no cache prices: all input at the prompt price",
		 d.cost_estimated &&
			 T_NEAR(d.cost_usd, 1000 * 1e-6 + 50 * 2e-6));
	/* Unattributed: the dearest candidate with a price (di/fp8 has
	 * no completion price, so ds), never $0. */
	d.cost_estimated = false;
	d.cost_usd = 0;
	d.tag = NULL;
	d.served = "";
	ledger_price(&d, &c);
	T_ASSERT("estimate: unattributed: the model's dearest endpoint",
		 d.cost_estimated && d.cost_basis != NULL &&
			 strcmp(d.cost_basis, LEDGER_BASIS_MODEL_MAX) == 0 &&
			 T_NEAR(d.cost_usd, 1000 * 1e-6 + 50 * 2e-6));
	v[1].terms.base_kind[SCORE_COMPLETION] = SCORE_PRICE_OK;
	v[1].terms.base[SCORE_COMPLETION] = 4e-6;
	ledger_price(&d, &c);
	T_ASSERT("estimate: ... the dearer of two for these counts",
		 T_NEAR(d.cost_usd, 1000 * 3e-7 + 50 * 4e-6 > 1000 * 1e-6 +
					    50 * 2e-6 ?
				    1000 * 3e-7 + 50 * 4e-6 :
				    1000 * 1e-6 + 50 * 2e-6));
	/* No stored price at all (an endpoints fetch that 404s, the
	 * client's own provider on an unscored model): the ceiling. */
	d.price_ceiling_usd = 1e-4;
	d.cost_estimated = false;
	d.cost_usd = 0;
	ledger_price(&d, NULL);
	T_ASSERT("estimate: no price known: the ceiling, marked, not $0",
		 d.cost_estimated && d.cost_basis != NULL &&
			 strcmp(d.cost_basis, LEDGER_BASIS_CEILING) == 0 &&
			 T_NEAR(d.cost_usd, 1050 * 1e-4));
	d.tag = "ds";
	d.price_ceiling_usd = 0;
	ledger_price(&d, &c);
	T_ASSERT("estimate: the pin's own prices come first",
		 strcmp(d.cost_basis, LEDGER_BASIS_ENDPOINT) == 0 &&
			 T_NEAR(d.cost_usd, 1000 * 1e-6 + 50 * 2e-6));
	T_ASSERT("ceiling: negative counts and a bad price are 0",
		 T_NEAR(ledger_ceiling_cost(1e-6, -5, 10), 1e-5) &&
			 ledger_ceiling_cost(NAN, 5, 10) == 0 &&
			 ledger_ceiling_cost(-1, 5, 10) == 0);
}

/* A budget hold: the body's bytes and the output limit at the dearest
 * candidate's prices, the output limit from the endpoints when the
 * request sets none, the ceiling when no price is known. */
static void
test_hold_estimate(void)
{
	struct rec_cands c;
	struct rec_cand v[2];
	int hhmm = score_hhmm(MONEY_DAY + 12 * 3600);
	const char *basis = NULL;

	money_cands(&c, v);
	v[0].terms.discount = 0;
	v[0].max_completion_tokens = 8192;
	v[1].max_completion_tokens = 65536;
	T_ASSERT("hold: prompt bytes and max_tokens at the dearest prices",
		 T_NEAR(ledger_hold_estimate(&c, hhmm, 4000, 1000, 1, NULL),
			4000 * 1e-6 + 1000 * 2e-6));
	T_ASSERT("hold: no max_tokens: the largest endpoint output limit",
		 T_NEAR(ledger_hold_estimate(&c, hhmm, 4000, 0, 1, NULL),
			4000 * 1e-6 + 65536 * 2e-6));
	T_ASSERT("hold: no price known: the ceiling, so named",
		 T_NEAR(ledger_hold_estimate(NULL, hhmm, 4000, 0, 1e-5, &basis),
			(4000 + LEDGER_HOLD_OUT_DEFAULT) * 1e-5) &&
			 strcmp(basis, LEDGER_BASIS_CEILING) == 0);
	ledger_hold_estimate(&c, hhmm, 1, 1, 1, &basis);
	T_ASSERT("hold: ...and the dearest endpoint so named",
		 strcmp(basis, LEDGER_BASIS_MODEL_MAX) == 0);
}

/* A team key's spend: the ledger's cost with usage, else the billed. */
static void
test_key_spend(void)
{
	struct stats_delta d;

	memset(&d, 0, sizeof(d));
	d.cost_usd = 0.25;
	d.key_billed_usd = 0.5;
	d.usage = true;
	T_ASSERT("key spend: usage came: its cost", ledger_key_spend(&d) == 0.25);
	d.usage = false;
	T_ASSERT("key spend: none came: what upstream billed",
		 ledger_key_spend(&d) == 0.5);
}

/* A team key's cell: the rows with a team name and the key's own, no
 * other; a model's cell none of the key's own. */
static void
test_key_cell(void)
{
	struct ledger_cell m, k;
	struct stats_delta d;
	cJSON *o;
	int i, clean = 1;

	delta_ok(&d, "p");
	ledger_from_delta(&m, &d);
	ledger_key_from_delta(&k, &d);
	for (i = 0; i < LX_N; i++)
		if ((ledger_fields[i].scope & LS_KEYONLY) && m.v[i] != 0)
			clean = 0;
	T_ASSERT("key cell: a model's cell holds none of a key's own rows",
		 clean && m.v[LX_REASONING] == 20);
	for (i = 0, clean = 1; i < LX_N; i++)
		if (!ledger_key_row(i) && k.v[i] != 0)
			clean = 0;
	for (i = 0; i < LAT_N_SLOTS; i++)
		if (k.ttfb[i] != 0 || k.dur[i] != 0)
			clean = 0;
	T_ASSERT("key cell: only the rows a key counts, no histogram", clean);
	T_ASSERT("key cell: the request, its tokens, reasoning included",
		 k.v[LX_REQUESTS] == 1 && k.v[LX_PROMPT] == 1000 &&
			 k.v[LX_CACHED] == 400 && k.v[LX_COMPLETION] == 50 &&
			 k.v[LX_REASONING] == 20);
	T_ASSERT("key cell: its spend, what cache reads saved, its last use",
		 k.v[LX_KEY_SPEND] == 0.002 &&
			 T_NEAR(k.v[LX_KEY_SAVED], 0.001) &&
			 k.v[LX_LAST_USED] == (double)d.now);
	d.cached_tokens = 0;
	ledger_key_from_delta(&k, &d);
	T_ASSERT("key cell: no cache read, nothing saved",
		 k.v[LX_KEY_SAVED] == 0);
	d.usage = false;
	d.key_billed_usd = 0.5;
	ledger_key_from_delta(&k, &d);
	T_ASSERT("key cell: no usage: what upstream billed",
		 k.v[LX_KEY_SPEND] == 0.5);
	o = cJSON_CreateObject();
	T_ASSERT("key render: every row with a team name, by that name",
		 o != NULL && ledger_render_key(o, &k) &&
			 at(o, "requests") == 1 &&
			 at(o, "reasoning_tokens") == 20 &&
			 at(o, "spend_usd") == 0.5 &&
			 at(o, "refused_model") == 0 &&
			 cJSON_GetObjectItemCaseSensitive(o, "lu") == NULL &&
			 cJSON_GetObjectItemCaseSensitive(o, "cost_usd") ==
				 NULL);
	cJSON_Delete(o);
	T_ASSERT("key rows: by their names",
		 ledger_field_ix("rt") == LX_REASONING &&
			 ledger_field_ix("lu") == LX_LAST_USED &&
			 ledger_field_ix("nope") == -1 &&
			 ledger_key_row(LX_REASONING) &&
			 ledger_key_row(LX_LAST_USED) &&
			 !ledger_key_row(LX_COST) && !ledger_key_row(-1) &&
			 !ledger_key_row(LX_N));
}

int
main(void)
{
	test_cell_text();
	test_cell_add();
	test_cell_as_cjson();
	test_outcome();
	test_keys();
	test_render();
	test_breaks();
	test_money_price();
	test_money_estimate();
	test_key_spend();
	test_key_cell();
	test_hold_estimate();
	return T_REPORT();
}
