/*
 * fuzz_record.c - libFuzzer target for record.c (docs/style.md
 * section 11: a stored value), the codec of the GDBM values of
 * docs/design.md section 7.
 *
 * The input, with a NUL after it, is taken as a stored value and given to
 * every decoder, to MODELS_SEEN add/list and to the ledger (a cell, an
 * old STATS or METRICS record, a cell key, a hit rate).
 * Invariants (a violation aborts):
 *   - decoded strings are NUL-terminated within their arrays, doubles are
 *     finite, counts are >= 0, a decoded lock has a tag, candidates have
 *     tags and n never exceeds the array;
 *   - decode(encode(decode(x))) equals decode(x) (numbers within the
 *     15 significant digits cJSON prints);
 *   - seen_add of a new model lists it, and adding it again is refused;
 *   - a cell's counters are finite, never NaN or inf, and "requests"
 *     grows by exactly one request's delta; what /stats and /metrics
 *     render from a cell and an old record holds only finite numbers
 *     and no null; a cell key that splits is made back the same.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "ledger.h"
#include "record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_str(const char *s, size_t n)
{
	if (memchr(s, '\0', n) == NULL)
		abort();
}

/* a == b within the precision cJSON keeps when printing. */
static bool
near(double a, double b)
{
	return a == b || fabs(a - b) <= 1e-14 * fmax(fabs(a), fabs(b));
}

static void
check_cand(const struct rec_cand *c)
{
	check_str(c->tag, sizeof(c->tag));
	check_str(c->provider_name, sizeof(c->provider_name));
	if (c->tag[0] == '\0' || !isfinite(c->score) ||
	    !isfinite(c->throughput) || !isfinite(c->prompt) ||
	    !isfinite(c->completion) || !isfinite(c->cache_read) ||
	    !isfinite(c->effective_input) || !isfinite(c->cost) ||
	    !isfinite(c->uptime) || !isfinite(c->bonus))
		abort();
}

static bool
cand_near(const struct rec_cand *a, const struct rec_cand *b)
{
	return strcmp(a->tag, b->tag) == 0 &&
	       strcmp(a->provider_name, b->provider_name) == 0 &&
	       near(a->score, b->score) && near(a->throughput, b->throughput) &&
	       near(a->prompt, b->prompt) && near(a->completion, b->completion) &&
	       near(a->cache_read, b->cache_read) &&
	       near(a->effective_input, b->effective_input) &&
	       near(a->cost, b->cost) && near(a->uptime, b->uptime) &&
	       near(a->bonus, b->bonus) &&
	       a->has_throughput == b->has_throughput &&
	       a->implicit_cache == b->implicit_cache && a->free == b->free &&
	       near((double)a->max_completion_tokens,
	            (double)b->max_completion_tokens);
}

static void
fuzz_lock(const char *text)
{
	struct rec_lock a, b;
	char *s;

	if (record_lock_decode(text, &a) != ORGW_OK)
		return;
	check_str(a.tag, sizeof(a.tag));
	check_str(a.provider_name, sizeof(a.provider_name));
	if (a.tag[0] == '\0' || (s = record_lock_encode(&a)) == NULL)
		abort();
	if (record_lock_decode(s, &b) != ORGW_OK ||
	    strcmp(a.tag, b.tag) != 0 ||
	    strcmp(a.provider_name, b.provider_name) != 0 ||
	    !near((double)a.locked_at, (double)b.locked_at) ||
	    !near((double)a.last_used, (double)b.last_used) ||
	    !near((double)a.max_completion_tokens,
	          (double)b.max_completion_tokens))
		abort();
	record_free(s);
}

static void
fuzz_cands(const char *text)
{
	struct rec_cands a, b;
	size_t i;
	char *s;

	if (record_cands_decode(text, &a) != ORGW_OK) {
		if (a.v != NULL || a.n != 0)
			abort();
		return;
	}
	check_str(a.error, sizeof(a.error));
	if (a.n > 0 && a.v == NULL)
		abort();
	for (i = 0; i < a.n; i++)
		check_cand(&a.v[i]);
	if ((s = record_cands_encode(&a)) == NULL)
		abort();
	if (record_cands_decode(s, &b) != ORGW_OK || b.n != a.n ||
	    strcmp(a.error, b.error) != 0 ||
	    !near((double)a.scored_at, (double)b.scored_at) ||
	    !near((double)a.attempted_at, (double)b.attempted_at))
		abort();
	for (i = 0; i < a.n; i++)
		if (!cand_near(&a.v[i], &b.v[i]))
			abort();
	record_free(s);
	record_cands_clear(&a);
	record_cands_clear(&b);
}

static void
fuzz_failure_cooldown(const char *text)
{
	struct rec_failure f, g;
	struct rec_cooldown c, d;
	char *s;

	if (record_failure_decode(text, &f) == ORGW_OK) {
		check_str(f.reason, sizeof(f.reason));
		if (f.count < 0 || (s = record_failure_encode(&f)) == NULL)
			abort();
		if (record_failure_decode(s, &g) != ORGW_OK ||
		    !near((double)f.count, (double)g.count) ||
		    !near((double)f.last, (double)g.last) ||
		    strcmp(f.reason, g.reason) != 0)
			abort();
		record_free(s);
	}
	if (record_cooldown_decode(text, &c) == ORGW_OK) {
		check_str(c.reason, sizeof(c.reason));
		if ((s = record_cooldown_encode(&c)) == NULL)
			abort();
		if (record_cooldown_decode(s, &d) != ORGW_OK ||
		    !near((double)c.until, (double)d.until) ||
		    strcmp(c.reason, d.reason) != 0)
			abort();
		record_free(s);
	}
}

/* CONV: and PRESSURE: records: decode(encode(decode(x))) is decode(x),
 * the cache member included. */
static void
fuzz_conv_pressure(const char *text)
{
	struct rec_conv c, d;
	struct rec_pressure p, q;
	cJSON *cache = NULL, *back = NULL;
	char *s;

	if (record_conv_decode(text, &c, &cache) == ORGW_OK) {
		check_str(c.model, sizeof(c.model));
		check_str(c.tag, sizeof(c.tag));
		check_str(c.show, sizeof(c.show));
		if ((s = record_conv_encode(&c, cache)) == NULL)
			abort();
		if (record_conv_decode(s, &d, &back) != ORGW_OK ||
		    strcmp(c.tag, d.tag) != 0 || strcmp(c.model, d.model) != 0 ||
		    !near((double)c.last_turn, (double)d.last_turn) ||
		    !near((double)c.turns, (double)d.turns) ||
		    c.spread != d.spread ||
		    !near((double)c.foreign_items, (double)d.foreign_items) ||
		    (cache == NULL) != (back == NULL))
			abort();
		record_free(s);
	}
	cJSON_Delete(cache);
	cJSON_Delete(back);
	if (record_pressure_decode(text, &p) == ORGW_OK) {
		if ((s = record_pressure_encode(&p)) == NULL)
			abort();
		if (record_pressure_decode(s, &q) != ORGW_OK ||
		    !near((double)p.until, (double)q.until) ||
		    !near((double)p.n429, (double)q.n429))
			abort();
		record_free(s);
	}
}

struct seen {
	size_t n;
	bool found;
};

static void
on_seen(void *arg, const char *model, int64_t first_seen)
{
	struct seen *s = arg;

	s->n++;
	if (strcmp(model, "fuzz/model") == 0 && first_seen == 1764547200)
		s->found = true;
}

static void
fuzz_seen(const char *text)
{
	struct seen a = {0}, b = {0};
	bool added = false;
	char *s, *t;
	size_t n;

	n = record_seen_each(text, on_seen, &a);
	if (n != a.n)
		abort();
	s = record_seen_add(text, "fuzz/model", 1764547200, &added);
	if (s == NULL) {
		if (added)
			abort();	/* out of memory: not expected here */
		return;
	}
	if (!added || record_seen_each(s, on_seen, &b) < 1 || !b.found)
		abort();
	t = record_seen_add(s, "fuzz/model", 1, &added);
	if (t != NULL || added)
		abort();
	record_free(s);
}

/* Every number in j is finite and j holds no null. */
static void
need_finite_tree(const cJSON *j)
{
	const cJSON *it;

	if (cJSON_IsNull(j))
		abort();
	if (cJSON_IsNumber(j) && !isfinite(j->valuedouble))
		abort();
	cJSON_ArrayForEach(it, j) need_finite_tree(it);
}

static void
need_finite_cell(const struct ledger_cell *c)
{
	size_t i;

	for (i = 0; i < LX_N; i++)
		if (!isfinite(c->v[i]))
			abort();
	for (i = 0; i < LAT_N_SLOTS; i++)
		if (!isfinite(c->ttfb[i]) || !isfinite(c->dur[i]))
			abort();
}

/* The input as a ledger cell, an old STATS or METRICS record, a key and
 * a hit rate: a cell's counters stay finite and grow by exactly one
 * request, the rendered trees hold only finite numbers. */
static void
fuzz_ledger(const char *text, const uint8_t *data, size_t size)
{
	struct stats_delta d;
	struct ledger_cell c, one, back;
	struct ledger_key_parts p;
	char *s, k[512];
	double before;
	cJSON *st, *mt;

	memset(&d, 0, sizeof(d));
	d.tag = size % 3 == 0 ? NULL : "deepseek";
	d.requests = 1;
	d.ok = size % 2;
	d.e5xx = 1;
	d.prompt_tokens = size ? data[0] : 0;
	d.cost_usd = size % 5 == 0 ? NAN : size % 5 == 1 ? INFINITY : 0.001;
	d.ttfb_ms = size % 7 == 0 ? -1 : (int64_t)size;
	d.total_ms = (int64_t)size * 3;
	d.money_tag = size % 2 ? "deepseek" : NULL;
	(void)ledger_cell_decode(text, &c);
	need_finite_cell(&c);
	before = c.v[LX_REQUESTS];
	ledger_from_delta(&one, &d);
	ledger_cell_add(&c, &one);
	need_finite_cell(&c);
	if ((s = ledger_cell_encode(&c)) == NULL)
		abort();
	if (ledger_cell_decode(s, &back) != ORGW_OK)
		abort();
	need_finite_cell(&back);
	if (!near(back.v[LX_REQUESTS], before + 1) && isfinite(before + 1))
		abort();
	record_free(s);

	st = cJSON_CreateObject();
	mt = cJSON_CreateObject();
	memset(&p, 0, sizeof(p));
	snprintf(p.model, sizeof(p.model), "m");
	snprintf(p.day, sizeof(p.day), "2026-12-01");
	snprintf(p.api, sizeof(p.api), "chat");
	snprintf(p.tag, sizeof(p.tag), "deepseek");
	if (st == NULL || mt == NULL || !ledger_merge_legacy(st, text) ||
	    !ledger_merge_legacy(mt, text) ||
	    !ledger_render_cell(st, mt, &p, &back, 1796083200) ||
	    !ledger_render_finish(st, 1796083200))
		abort();
	need_finite_tree(st);
	need_finite_tree(mt);
	cJSON_Delete(st);
	cJSON_Delete(mt);

	if (ledger_key_split(text, &p) &&
	    ledger_key(k, sizeof(k), p.model, p.day, p.api, p.tag) &&
	    strcmp(k, text) != 0)
		abort();
	{
		struct score_hit *hv = NULL;
		size_t hn = 0, i;
		char *t;

		if (record_hits_decode(text, &hv, &hn) == ORGW_OK) {
			for (i = 0; i < hn; i++)
				if (!isfinite(hv[i].rate) || !isfinite(hv[i].weight))
					abort();
			/* What is read is written back and read the same. */
			if ((t = record_hits_encode(hv, hn)) != NULL) {
				struct score_hit *w = NULL;
				size_t wn = 0;

				if (record_hits_decode(t, &w, &wn) != ORGW_OK ||
				    wn != hn)
					abort();
				free(w);
				record_free(t);
			}
		}
		free(hv);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if ((text = malloc(size + 1)) == NULL)
		return 0;
	if (size)
		memcpy(text, data, size);
	text[size] = '\0';
	fuzz_lock(text);
	fuzz_cands(text);
	fuzz_failure_cooldown(text);
	fuzz_conv_pressure(text);
	fuzz_seen(text);
	fuzz_ledger(text, data, size);
	free(text);
	return 0;
}
