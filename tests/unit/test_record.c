/*
 * test_record.c - unit tests for record.c, the GDBM value codecs of
 * docs/design.md section 7: encode/decode round trips, damaged values read
 * as absent or zero, MODELS_SEEN add/list, the HIT codec and the old
 * release's STATS hit rates.  The counters themselves are test_ledger.c's.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "t.h"
#include "prom.h"
#include "record.h"
#include "score.h"

/* True when every number in j is finite and j holds no null. */
static int
all_finite(const cJSON *j)
{
	const cJSON *it;

	if (cJSON_IsNull(j))
		return 0;
	if (cJSON_IsNumber(j))
		return isfinite(j->valuedouble);
	cJSON_ArrayForEach(it, j)
	{
		if (!all_finite(it))
			return 0;
	}
	return 1;
}

/* True when text has "v":1 at top level. */
static int
has_v1(const char *text)
{
	cJSON *o = cJSON_Parse(text);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "v");
	int ok = cJSON_IsNumber(v) && v->valuedouble == 1;

	cJSON_Delete(o);
	return ok;
}

static int
all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

static void
test_lock(void)
{
	struct rec_lock a, b;
	char *s;
	char longtag[300];

	memset(&a, 0, sizeof(a));
	strcpy(a.tag, "deepinfra/fp8");
	/* Quote and backslash round-trip; control characters are refused
	 * on decode (below). */
	strcpy(a.provider_name, "Deep\"Infra\\ \xc3\xa9");
	a.locked_at = 1764547200;
	/* 15 digits: cJSON prints "%1.15g" and accepts it when it reads
	 * back within DBL_EPSILON, so larger integers may lose units. */
	a.last_used = 999999999999999LL;
	a.max_completion_tokens = 16384;
	s = record_lock_encode(&a);
	T_ASSERT("lock encode ok", s != NULL);
	T_ASSERT("lock text has v:1", s && has_v1(s));
	memset(&b, 0xAA, sizeof(b));
	T_ASSERT("lock decode ok", record_lock_decode(s, &b) == ORGW_OK);
	T_ASSERT("lock round trip: tag", strcmp(b.tag, a.tag) == 0);
	T_ASSERT("lock round trip: provider name with escapes",
	         strcmp(b.provider_name, a.provider_name) == 0);
	T_ASSERT("lock round trip: locked_at", b.locked_at == a.locked_at);
	T_ASSERT("lock round trip: last_used 10^15 - 1", b.last_used == a.last_used);
	T_ASSERT("lock round trip: max_completion_tokens",
	         b.max_completion_tokens == 16384);
	record_free(s);
	record_free(NULL);

	a.locked_at = -5;
	a.max_completion_tokens = 0;
	s = record_lock_encode(&a);
	T_ASSERT("lock round trip: negative and zero",
	         s && record_lock_decode(s, &b) == ORGW_OK &&
	             b.locked_at == -5 && b.max_completion_tokens == 0);
	record_free(s);

	memset(&b, 0xAA, sizeof(b));
	T_ASSERT("lock decode NULL: EINVAL",
	         record_lock_decode(NULL, &b) == ORGW_EINVAL);
	T_ASSERT("lock decode failure zeroes the struct",
	         all_zero(&b, sizeof(b)));
	T_ASSERT("lock decode garbage: EINVAL",
	         record_lock_decode("\x01\xff{not json", &b) == ORGW_EINVAL);
	T_ASSERT("lock decode array: EINVAL",
	         record_lock_decode("[{\"tag\":\"x\"}]", &b) == ORGW_EINVAL);
	T_ASSERT("lock decode number: EINVAL",
	         record_lock_decode("42", &b) == ORGW_EINVAL);
	T_ASSERT("lock decode without tag: EINVAL",
	         record_lock_decode("{\"v\":1,\"locked_at\":5}", &b) ==
	             ORGW_EINVAL);
	T_ASSERT("lock decode empty tag: EINVAL",
	         record_lock_decode("{\"tag\":\"\"}", &b) == ORGW_EINVAL);
	T_ASSERT("lock decode number tag: EINVAL",
	         record_lock_decode("{\"tag\":5}", &b) == ORGW_EINVAL);
	T_ASSERT("lock decode: a tag holding CR LF is absent: EINVAL",
	         record_lock_decode("{\"tag\":\"x\\r\\nX-Injected: 1\"}",
	                            &b) == ORGW_EINVAL && b.tag[0] == 0);
	T_ASSERT("lock decode: a name holding ESC reads empty",
	         record_lock_decode("{\"tag\":\"x\",\"provider_name\":"
	                            "\"A\\u001b[31m\"}",
	                            &b) == ORGW_OK &&
	             b.provider_name[0] == 0 && strcmp(b.tag, "x") == 0);
	T_ASSERT("lock decode: DEL in a tag: EINVAL",
	         record_lock_decode("{\"tag\":\"x\\u007f\"}", &b) ==
	             ORGW_EINVAL);
	T_ASSERT("lock decode: missing and mistyped fields read 0",
	         record_lock_decode("{\"tag\":\"x\",\"locked_at\":\"12\","
	                            "\"last_used\":null}",
	                            &b) == ORGW_OK &&
	             b.locked_at == 0 && b.last_used == 0 &&
	             b.max_completion_tokens == 0 && b.provider_name[0] == 0);
	T_ASSERT("lock decode: out-of-range numbers read 0",
	         record_lock_decode("{\"tag\":\"x\",\"locked_at\":1e300,"
	                            "\"last_used\":-1e300,"
	                            "\"max_completion_tokens\":1e999}",
	                            &b) == ORGW_OK &&
	             b.locked_at == 0 && b.last_used == 0 &&
	             b.max_completion_tokens == 0);
	memset(longtag, 'x', 299);
	longtag[299] = '\0';
	{
		char doc[400];
		snprintf(doc, sizeof(doc), "{\"tag\":\"%s\"}", longtag);
		T_ASSERT("lock decode: a 299-byte tag is cut to 127",
		         record_lock_decode(doc, &b) == ORGW_OK &&
		             strlen(b.tag) == ORGW_TAG_MAX - 1);
	}
}

static void
fill_cand(struct rec_cand *c, int k)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->tag, sizeof(c->tag), "tag-%d/fp8", k);
	snprintf(c->provider_name, sizeof(c->provider_name), "Prov \"%d\"", k);
	c->score = 1e8 / (k + 1) + 0.125;
	c->throughput = 31.5 + k;
	c->prompt = 2.8e-7 * (k + 1);
	c->completion = 4.2e-7 * (k + 1);
	c->cache_read = 2.8e-8 * (k + 1);
	c->effective_input = 7.84e-8 + k;
	c->cost = 2.8336e-7 + k;
	c->uptime = 99.2 - k;
	c->bonus = k % 2 ? 1.0 : 1.5;
	c->has_throughput = k != 1;
	c->implicit_cache = k % 2 == 0;
	c->free = k == 2;
	c->max_completion_tokens = 65536 >> k;
}

static int
cand_eq(const struct rec_cand *a, const struct rec_cand *b)
{
	return strcmp(a->tag, b->tag) == 0 &&
	       strcmp(a->provider_name, b->provider_name) == 0 &&
	       a->score == b->score && a->throughput == b->throughput &&
	       a->prompt == b->prompt && a->completion == b->completion &&
	       a->cache_read == b->cache_read &&
	       a->effective_input == b->effective_input && a->cost == b->cost &&
	       a->uptime == b->uptime && a->bonus == b->bonus &&
	       a->has_throughput == b->has_throughput &&
	       a->implicit_cache == b->implicit_cache && a->free == b->free &&
	       a->max_completion_tokens == b->max_completion_tokens;
}

static void
test_cands(void)
{
	struct rec_cand v[3];
	struct rec_cands a, b;
	char *s;
	cJSON *j;
	int k;

	for (k = 0; k < 3; k++)
		fill_cand(&v[k], k);
	memset(&a, 0, sizeof(a));
	a.scored_at = 1764547200;
	a.attempted_at = 1764547260;
	strcpy(a.error, "endpoints fetch: \"timeout\"");
	a.n = 3;
	a.v = v;
	s = record_cands_encode(&a);
	T_ASSERT("cands encode ok", s != NULL);
	T_ASSERT("cands text has v:1", s && has_v1(s));
	T_ASSERT("cands decode ok", record_cands_decode(s, &b) == ORGW_OK);
	T_ASSERT("cands round trip: times",
	         b.scored_at == a.scored_at && b.attempted_at == a.attempted_at);
	T_ASSERT("cands round trip: error", strcmp(b.error, a.error) == 0);
	T_ASSERT("cands round trip: 3 entries", b.n == 3 && b.v != NULL);
	for (k = 0; k < 3 && (size_t)k < b.n; k++) {
		char what[64];
		snprintf(what, sizeof(what),
		         "cands round trip: entry %d, every field", k);
		T_ASSERT(what, cand_eq(&b.v[k], &v[k]));
	}
	record_cands_clear(&b);
	T_ASSERT("cands clear empties", b.v == NULL && b.n == 0);
	record_cands_clear(NULL);
	record_free(s);

	/* no candidates */
	a.n = 0;
	a.v = NULL;
	a.error[0] = '\0';
	s = record_cands_encode(&a);
	T_ASSERT("empty cands round trip",
	         s && record_cands_decode(s, &b) == ORGW_OK && b.n == 0 &&
	             b.scored_at == a.scored_at);
	record_cands_clear(&b);
	record_free(s);

	/* non-finite doubles are stored as 0 */
	v[0].score = NAN;
	v[0].throughput = INFINITY;
	v[0].cost = -INFINITY;
	a.n = 1;
	a.v = v;
	s = record_cands_encode(&a);
	j = s ? cJSON_Parse(s) : NULL;
	T_ASSERT("NaN/inf candidate fields encode as finite numbers",
	         j != NULL && all_finite(j));
	T_ASSERT("NaN/inf candidate fields decode as 0",
	         s && record_cands_decode(s, &b) == ORGW_OK && b.n == 1 &&
	             b.v[0].score == 0 && b.v[0].throughput == 0 &&
	             b.v[0].cost == 0 && b.v[0].prompt == v[0].prompt);
	cJSON_Delete(j);
	record_cands_clear(&b);
	record_free(s);

	{
		int64_t fs = -1;
		char *t = record_model_seen_encode(1764547200);

		T_ASSERT("MODEL_SEEN round trip",
			 t != NULL &&
				 record_model_seen_decode(t, &fs) == ORGW_OK &&
				 fs == 1764547200);
		record_free(t);
		T_ASSERT("MODEL_SEEN garbage: EINVAL, 0",
			 record_model_seen_decode("[1]", &fs) == ORGW_EINVAL &&
				 fs == 0);
		T_ASSERT("MODEL_SEEN without first_seen: 0",
			 record_model_seen_decode("{}", &fs) == ORGW_OK &&
				 fs == 0);
	}
	T_ASSERT("cands decode: a candidate whose tag holds CR LF is "
	         "dropped, a name with a control character reads empty",
	         record_cands_decode(
	             "{\"candidates\":[{\"tag\":\"a\\r\\nX: 1\"},"
	             "{\"tag\":\"b\",\"provider_name\":\"B\\n\"}]}",
	             &b) == ORGW_OK &&
	             b.n == 1 && strcmp(b.v[0].tag, "b") == 0 &&
	             b.v[0].provider_name[0] == 0);
	record_cands_clear(&b);

	/* damaged values */
	T_ASSERT("cands decode garbage: EINVAL",
	         record_cands_decode("nope", &b) == ORGW_EINVAL && b.n == 0 &&
	             b.v == NULL);
	T_ASSERT("cands decode NULL: EINVAL",
	         record_cands_decode(NULL, &b) == ORGW_EINVAL);
	T_ASSERT("cands decode array: EINVAL",
	         record_cands_decode("[]", &b) == ORGW_EINVAL);
	T_ASSERT("cands decode: candidates not an array reads none",
	         record_cands_decode("{\"scored_at\":7,\"candidates\":{}}",
	                             &b) == ORGW_OK &&
	             b.n == 0 && b.scored_at == 7);
	record_cands_clear(&b);
	T_ASSERT("cands decode: bad entries skipped, order kept",
	         record_cands_decode(
	             "{\"candidates\":[1,{\"tag\":\"a\",\"score\":3},"
	             "{\"score\":9},{\"tag\":\"\"},null,\"b\","
	             "{\"tag\":\"c\",\"score\":\"x\",\"free\":1}]}",
	             &b) == ORGW_OK &&
	             b.n == 2 && strcmp(b.v[0].tag, "a") == 0 &&
	             b.v[0].score == 3 && strcmp(b.v[1].tag, "c") == 0 &&
	             b.v[1].score == 0 && !b.v[1].free);
	record_cands_clear(&b);
	T_ASSERT("cands decode: only bad entries reads none",
	         record_cands_decode("{\"candidates\":[1,2,{}]}", &b) ==
	                 ORGW_OK &&
	             b.n == 0);
	record_cands_clear(&b);
}

static void
test_from_score(void)
{
	struct score_endpoint e[3];
	struct score_result r;
	struct rec_cands c;
	int k;

	memset(e, 0, sizeof(e));
	memset(&r, 0, sizeof(r));
	for (k = 0; k < 3; k++) {
		snprintf(e[k].tag, sizeof(e[k].tag), "t%d", k);
		snprintf(e[k].provider_name, sizeof(e[k].provider_name),
		         "P%d", k);
		e[k].score = 10.0 - k;
		e[k].throughput = 5.0 + k;
		e[k].has_throughput = true;
		e[k].prompt = 1e-7;
		e[k].completion = 2e-7;
		e[k].cache_read = 3e-8;
		e[k].effective_input = 4e-8;
		e[k].cost = 5e-8;
		e[k].uptime = 99;
		e[k].bonus = 1.5;
		e[k].implicit_cache = true;
		e[k].free = k == 1;
		e[k].max_completion_tokens = 1000 + k;
	}
	e[2].excluded = "uptime";
	r.v = e;
	r.n = 3;
	r.n_ranked = 2;
	T_ASSERT("from_score ok",
	         record_cands_from_score(&r, 1234, &c) == ORGW_OK);
	T_ASSERT("from_score: ranked entries only", c.n == 2);
	T_ASSERT("from_score: scored_at and attempted_at are now",
	         c.scored_at == 1234 && c.attempted_at == 1234 &&
	             c.error[0] == '\0');
	T_ASSERT("from_score: fields copied in order",
	         c.n == 2 && strcmp(c.v[0].tag, "t0") == 0 &&
	             strcmp(c.v[1].provider_name, "P1") == 0 &&
	             c.v[1].score == 9.0 && c.v[1].throughput == 6.0 &&
	             c.v[1].free && !c.v[0].free && c.v[0].bonus == 1.5 &&
	             c.v[0].implicit_cache && c.v[0].has_throughput &&
	             c.v[1].max_completion_tokens == 1001 &&
	             c.v[0].cost == 5e-8 && c.v[0].cache_read == 3e-8);
	record_cands_clear(&c);
	e[2].excluded = "cooling";
	T_ASSERT("from_score: one cooling when scored is kept after the ranked",
	         record_cands_from_score(&r, 1234, &c) == ORGW_OK && c.n == 3 &&
	             strcmp(c.v[0].tag, "t0") == 0 &&
	             strcmp(c.v[2].tag, "t2") == 0 && c.v[2].score == 8.0);
	record_cands_clear(&c);
	e[2].excluded = "uptime";
	r.n_ranked = 0;
	T_ASSERT("from_score: none ranked gives an empty scored list",
	         record_cands_from_score(&r, 99, &c) == ORGW_OK && c.n == 0 &&
	             c.v == NULL && c.scored_at == 99);
	record_cands_clear(&c);
}

static void
test_failure_cooldown(void)
{
	struct rec_failure f, g;
	struct rec_cooldown c, d;
	char *s;

	memset(&f, 0, sizeof(f));
	f.count = 2;
	strcpy(f.reason, "503");
	f.last = 1764547200;
	s = record_failure_encode(&f);
	T_ASSERT("failure text has v:1", s && has_v1(s));
	T_ASSERT("failure round trip",
	         s && record_failure_decode(s, &g) == ORGW_OK &&
	             g.count == 2 && strcmp(g.reason, "503") == 0 &&
	             g.last == f.last);
	record_free(s);
	T_ASSERT("failure decode: negative count reads 0",
	         record_failure_decode("{\"count\":-3,\"reason\":\"x\"}", &g) ==
	                 ORGW_OK &&
	             g.count == 0 && strcmp(g.reason, "x") == 0);
	T_ASSERT("failure decode garbage: EINVAL",
	         record_failure_decode("{", &g) == ORGW_EINVAL && g.count == 0);
	T_ASSERT("failure decode: empty object reads zeroes",
	         record_failure_decode("{}", &g) == ORGW_OK && g.count == 0 &&
	             g.last == 0 && g.reason[0] == '\0');
	T_ASSERT("failure decode: long reason cut to 63",
	         record_failure_decode(
	             "{\"reason\":\"0123456789012345678901234567890123456789"
	             "01234567890123456789012345678901234567890123456789\"}",
	             &g) == ORGW_OK &&
	             strlen(g.reason) == REC_REASON_MAX - 1);

	memset(&c, 0, sizeof(c));
	c.until = 1764550800;
	strcpy(c.reason, "timeout");
	s = record_cooldown_encode(&c);
	T_ASSERT("cooldown text has v:1", s && has_v1(s));
	T_ASSERT("cooldown round trip",
	         s && record_cooldown_decode(s, &d) == ORGW_OK &&
	             d.until == c.until && strcmp(d.reason, "timeout") == 0);
	record_free(s);
	T_ASSERT("cooldown decode garbage: EINVAL",
	         record_cooldown_decode("true", &d) == ORGW_EINVAL &&
	             d.until == 0);
	T_ASSERT("cooldown decode: until string reads 0",
	         record_cooldown_decode("{\"until\":\"9\"}", &d) == ORGW_OK &&
	             d.until == 0);
}

struct seen {
	size_t n;
	char model[8][64];
	int64_t first[8];
};

static void
on_seen(void *arg, const char *model, int64_t first_seen)
{
	struct seen *s = arg;

	if (s->n < 8) {
		snprintf(s->model[s->n], sizeof(s->model[0]), "%s", model);
		s->first[s->n] = first_seen;
	}
	s->n++;
}

/* Index of model in s, or -1. */
static int
seen_find(const struct seen *s, const char *model)
{
	size_t i;

	for (i = 0; i < s->n && i < 8; i++)
		if (strcmp(s->model[i], model) == 0)
			return (int)i;
	return -1;
}

static void
test_seen(void)
{
	struct seen sn;
	bool added = false;
	char *t1, *t2, *t3;
	int i;

	t1 = record_seen_add(NULL, "deepseek/deepseek-v3.2", 100, &added);
	T_ASSERT("seen add to NULL: new text, added", t1 != NULL && added);
	T_ASSERT("seen text has v:1", t1 && has_v1(t1));
	added = true;
	t2 = record_seen_add(t1, "deepseek/deepseek-v3.2", 200, &added);
	T_ASSERT("seen add again: NULL, added false", t2 == NULL && !added);
	t2 = record_seen_add(t1, "a\"b/c", 300, &added);
	T_ASSERT("seen add a second model: added", t2 != NULL && added);
	memset(&sn, 0, sizeof(sn));
	T_ASSERT("seen each lists 2", record_seen_each(t2, on_seen, &sn) == 2 &&
	                                  sn.n == 2);
	i = seen_find(&sn, "deepseek/deepseek-v3.2");
	T_ASSERT("seen each: first model kept its first-seen time",
	         i >= 0 && sn.first[i] == 100);
	i = seen_find(&sn, "a\"b/c");
	T_ASSERT("seen each: second model at 300", i >= 0 && sn.first[i] == 300);
	t3 = record_seen_add(t2, "a\"b/c", 400, &added);
	T_ASSERT("seen add the second again: not added", t3 == NULL && !added);
	record_free(t1);
	record_free(t2);

	memset(&sn, 0, sizeof(sn));
	T_ASSERT("seen each NULL: 0", record_seen_each(NULL, on_seen, &sn) == 0 &&
	                                  sn.n == 0);
	T_ASSERT("seen each garbage: 0",
	         record_seen_each("{{", on_seen, &sn) == 0 && sn.n == 0);
	T_ASSERT("seen each: models an array lists none",
	         record_seen_each("{\"models\":[1,2]}", on_seen, &sn) == 0);
	T_ASSERT("seen each: non-number entries skipped",
	         record_seen_each("{\"models\":{\"a\":1,\"b\":\"x\",\"c\":null,"
	                          "\"d\":{}}}",
	                          on_seen, &sn) == 1 &&
	             sn.n == 1 && strcmp(sn.model[0], "a") == 0);
	memset(&sn, 0, sizeof(sn));
	T_ASSERT("seen each: out-of-range time reads 0 (no UB)",
	         record_seen_each("{\"models\":{\"a\":1e300,\"b\":-1e300,"
	                          "\"c\":1e999}}",
	                          on_seen, &sn) == 3 &&
	             sn.first[0] == 0 && sn.first[1] == 0 && sn.first[2] == 0);

	t1 = record_seen_add("not json", "m", 5, &added);
	T_ASSERT("seen add to garbage starts afresh", t1 && added);
	memset(&sn, 0, sizeof(sn));
	T_ASSERT("...and lists just that model",
	         t1 && record_seen_each(t1, on_seen, &sn) == 1 &&
	             strcmp(sn.model[0], "m") == 0 && sn.first[0] == 5);
	record_free(t1);
	t1 = record_seen_add("{\"models\":7,\"models\":{\"a\":1}}", "m", 5,
	                     &added);
	memset(&sn, 0, sizeof(sn));
	T_ASSERT("seen add: duplicate models, the first is the one listed",
	         t1 && added && record_seen_each(t1, on_seen, &sn) == 1 &&
	             strcmp(sn.model[0], "m") == 0);
	record_free(t1);
	t1 = record_seen_add("{\"models\":7,\"x\":1}", "m", 5, &added);
	memset(&sn, 0, sizeof(sn));
	T_ASSERT("seen add: a non-object models is replaced",
	         t1 && added && record_seen_each(t1, on_seen, &sn) == 1);
	record_free(t1);
}

static void
test_cands_terms(void)
{
	static const struct score_params p = {0.9, 2.0, 95.0, 0, NULL, 0, NULL};
	struct rec_cand v;
	struct rec_cands a, b;
	struct score_terms *t = &v.terms;
	struct score_endpoint e;
	char *s;
	double x;

	fill_cand(&v, 0);
	t->base_kind[SCORE_PROMPT] = SCORE_PRICE_OK;
	t->base[SCORE_PROMPT] = 2.8e-7;
	t->base_kind[SCORE_COMPLETION] = SCORE_PRICE_OK;
	t->base[SCORE_COMPLETION] = 4.2e-7;
	t->base_kind[SCORE_CACHE_READ] = SCORE_PRICE_BAD;
	t->discount = 0.25;
	t->n_win = 2;
	t->win[0].utc_start = 30;
	t->win[0].utc_end = 1630;
	t->win[0].kind[SCORE_PROMPT] = SCORE_PRICE_OK;
	t->win[0].price[SCORE_PROMPT] = 2.8e-7;
	t->win[1].utc_start = 1630;
	t->win[1].utc_end = 30;
	t->win[1].kind[SCORE_PROMPT] = SCORE_PRICE_OK;
	t->win[1].price[SCORE_PROMPT] = 1.4e-7;
	t->win[1].kind[SCORE_CACHE_READ] = SCORE_PRICE_OK;
	t->win[1].price[SCORE_CACHE_READ] = 1.4e-8;
	t->win[1].kind[SCORE_COMPLETION] = SCORE_PRICE_BAD;
	t->implicit_flag = -1;
	memset(&a, 0, sizeof(a));
	a.n = 1;
	a.v = &v;
	s = record_cands_encode(&a);
	T_ASSERT("terms: decode ok",
	         s && record_cands_decode(s, &b) == ORGW_OK && b.n == 1);
	if (b.n == 1) {
		const struct score_terms *d = &b.v[0].terms;
		T_ASSERT("terms round trip: base prices, unreadable one too",
		         d->base_kind[SCORE_PROMPT] == SCORE_PRICE_OK &&
		             d->base[SCORE_PROMPT] == 2.8e-7 &&
		             d->base[SCORE_COMPLETION] == 4.2e-7 &&
		             d->base_kind[SCORE_CACHE_READ] != SCORE_PRICE_OK);
		T_ASSERT("terms round trip: discount, flag absent",
		         d->discount == 0.25 && d->implicit_flag == -1);
		T_ASSERT("terms round trip: windows in order, every price kind",
		         d->n_win == 2 && d->win[0].utc_start == 30 &&
		             d->win[0].utc_end == 1630 &&
		             d->win[0].kind[SCORE_COMPLETION] ==
		                 SCORE_PRICE_NONE &&
		             d->win[1].utc_start == 1630 &&
		             d->win[1].price[SCORE_PROMPT] == 1.4e-7 &&
		             d->win[1].price[SCORE_CACHE_READ] == 1.4e-8 &&
		             d->win[1].kind[SCORE_COMPLETION] == SCORE_PRICE_BAD);
		T_ASSERT("terms round trip: throughput from the candidate",
		         d->has_throughput && d->throughput == v.throughput);
		T_ASSERT("terms re-price after the round trip (window, discount)",
		         score_terms_price(d, SCORE_PROMPT, 2000, &x) &&
		             T_NEAR(x, 1.05e-7) &&
		             score_terms_price(d, SCORE_PROMPT, 1200, &x) &&
		             T_NEAR(x, 2.1e-7));
		T_ASSERT("terms: an unreadable window price poisons its key",
		         !score_terms_price(d, SCORE_COMPLETION, 2000, &x) &&
		             score_terms_price(d, SCORE_COMPLETION, 1200, &x));
	}
	record_cands_clear(&b);
	record_free(s);

	/* Written before re-pricing: no "pricing". */
	T_ASSERT(
	    "old candidate without pricing decodes",
	    record_cands_decode(
	        "{\"v\":1,\"scored_at\":5,\"candidates\":[{\"tag\":\"deepseek\","
	        "\"score\":230497200,\"throughput\":31.5,\"has_throughput\":"
	        "true,\"prompt\":1.4e-7,\"cache_read\":1.4e-8,\"completion\":"
	        "2.1e-7,\"cost\":1.3664e-7,\"implicit_cache\":true}]}",
	        &b) == ORGW_OK &&
	        b.n == 1);
	if (b.n == 1) {
		const struct score_terms *d = &b.v[0].terms;
		T_ASSERT("old candidate: scored prices as base, no windows",
		         d->n_win == 0 && d->discount == 0 &&
		             d->base_kind[SCORE_PROMPT] == SCORE_PRICE_OK &&
		             d->base[SCORE_PROMPT] == 1.4e-7 &&
		             d->base[SCORE_CACHE_READ] == 1.4e-8 &&
		             d->base[SCORE_COMPLETION] == 2.1e-7 &&
		             d->implicit_flag == 1 && d->has_throughput);
		memset(&e, 0, sizeof(e));
		score_terms_eval(d, 1200, &p, &e);
		T_ASSERT("old candidate re-prices to its scored cost at any time",
		         e.excluded == NULL && T_NEAR(e.cost, 1.3664e-7) &&
		             T_NEAR(e.score, 31.5 / 1.3664e-7 * 2));
	}
	record_cands_clear(&b);

	/* Damaged windows: bad bounds dropped, odd prices unreadable. */
	T_ASSERT(
	    "damaged windows decode",
	    record_cands_decode(
	        "{\"candidates\":[{\"tag\":\"x\",\"pricing\":{\"prompt\":1,"
	        "\"completion\":\"1\",\"discount\":7,\"windows\":[{\"utc_start\":"
	        "100,\"utc_end\":2460,\"prompt\":2},{\"utc_start\":1.5,"
	        "\"utc_end\":200},7,{\"utc_start\":0,\"utc_end\":2400,\"prompt\":"
	        "-1}]},\"supports_implicit_caching\":\"yes\"}]}",
	        &b) == ORGW_OK &&
	        b.n == 1);
	if (b.n == 1) {
		const struct score_terms *d = &b.v[0].terms;
		T_ASSERT("damaged: only the window with valid bounds kept",
		         d->n_win == 1 && d->win[0].utc_end == 2400 &&
		             d->win[0].kind[SCORE_PROMPT] == SCORE_PRICE_BAD);
		T_ASSERT("damaged: string price unreadable, discount 7 is none",
		         d->base_kind[SCORE_COMPLETION] == SCORE_PRICE_BAD &&
		             d->discount == 0 && d->implicit_flag == -1);
	}
	record_cands_clear(&b);
}

/* True when the text record_add_number adds for d reads back (with
 * cJSON, as every release reads records) as d itself, 0 for NaN and the
 * infinities, and a whole number below RECORD_RAW_INT_LIMIT is also the
 * bytes cJSON prints for it. */
static bool
same_as_cjson(double d)
{
	cJSON *a = cJSON_CreateObject(), *b = cJSON_CreateObject(), *back;
	char *ta, *tb;
	double want = isfinite(d) ? d : 0;
	bool ok;

	cJSON_AddNumberToObject(a, "n", want);
	ok = record_add_number(b, "n", d);
	ta = cJSON_PrintUnformatted(a);
	tb = cJSON_PrintUnformatted(b);
	back = tb ? cJSON_Parse(tb) : NULL;
	ok = ok && ta && tb &&
	     cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(back, "n")) &&
	     cJSON_GetObjectItemCaseSensitive(back, "n")->valuedouble == want &&
	     (want != floor(want) || fabs(want) >= RECORD_RAW_INT_LIMIT ||
	      signbit(want) || strcmp(ta, tb) == 0);
	if (!ok)
		fprintf(stderr, "  %.17g: cJSON %s, raw %s\n", d, ta, tb);
	cJSON_Delete(back);
	cJSON_free(ta);
	cJSON_free(tb);
	cJSON_Delete(a);
	cJSON_Delete(b);
	return ok;
}

/* Numbers go in as raw text that reads back exactly, whole ones in
 * cJSON's own bytes, so old and new releases sharing a state read each
 * other's values. */
static void
test_add_number(void)
{
	static const double v[] = {
		0, -0.0, 1, -1, 7, 9, -9, 10, -10, 99, 100, 1000, 123456,
		2147483647.0, 100000000000000.0, -12345678901234.0,
		2147483648.0, -2147483649.0, 4294967296.0, 5e7,
		1796083200.0, 1796083200000.0, 999999999999999.0,
		-999999999999999.0, 1e15, -1e15, 1000000000000001.0,
		9007199254740991.0, 9007199254740992.0, 1e17, 1e300,
		0.5, 0.75, 1234.5, 0.1 + 0.2, 1.0 / 3, 1e-7, 0.41,
		999999999999999.5, NAN, INFINITY, -INFINITY};
	struct score_hit h[3] = {{"x", 0.75, 1234.5, 99},
				 {"deepinfra/fp8", 0, 0, 0},
				 {"novita", 0.7800000000000001, 1e6, 50000000}};
	struct rec_lock l = {"x", "X", 1796083200, 1796083260, 4096};
	cJSON *o, *bp, *p, *hit;
	char *t, *want;
	size_t i;
	bool all = true;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		all = same_as_cjson(v[i]) && all;
	T_ASSERT("add_number: every number reads back exactly, whole ones "
		 "in cJSON's bytes", all);
	o = cJSON_CreateObject();
	T_ASSERT("add_number: whole numbers and fractions are raw text",
		 record_add_number(o, "a", 42) && record_add_number(o, "b", 0.5) &&
			 cJSON_IsRaw(cJSON_GetObjectItemCaseSensitive(o, "a")) &&
			 cJSON_IsRaw(cJSON_GetObjectItemCaseSensitive(o, "b")) &&
			 strcmp(cJSON_GetObjectItemCaseSensitive(o, "b")->valuestring,
				"0.5") == 0);
	cJSON_Delete(o);

	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "v", 1);
	bp = cJSON_AddObjectToObject(o, "by_provider");
	for (i = 0; i < 3; i++) {
		p = cJSON_AddObjectToObject(bp, h[i].tag);
		hit = cJSON_AddObjectToObject(p, "hit");
		cJSON_AddNumberToObject(hit, "rate", h[i].rate);
		cJSON_AddNumberToObject(hit, "weight", h[i].weight);
		cJSON_AddNumberToObject(hit, "tokens", (double)h[i].tokens);
	}
	want = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	t = record_hits_encode(h, 3);
	{
		struct score_hit *back = NULL;
		size_t n = 0;

		/* cJSON prints 0.7800000000000001 as "0.78": it reads its
		 * "%1.15g" back within DBL_EPSILON, not exactly. */
		T_ASSERT("hits: the text reads back exactly, with the members "
			 "cJSON printed",
			 t && want && record_hits_decode(t, &back, &n) == ORGW_OK &&
				 n == 3 && back[2].rate == h[2].rate &&
				 back[0].weight == h[0].weight &&
				 back[2].tokens == h[2].tokens &&
				 strstr(want, "\"rate\":0.78,") != NULL &&
				 strlen(t) > strlen(want));
		free(back);
	}
	record_free(t);
	cJSON_free(want);

	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "v", 1);
	cJSON_AddStringToObject(o, "tag", l.tag);
	cJSON_AddStringToObject(o, "provider_name", l.provider_name);
	cJSON_AddNumberToObject(o, "locked_at", (double)l.locked_at);
	cJSON_AddNumberToObject(o, "last_used", (double)l.last_used);
	cJSON_AddNumberToObject(o, "max_completion_tokens",
				(double)l.max_completion_tokens);
	want = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	t = record_lock_encode(&l);
	T_ASSERT("lock: the text cJSON printed with numbers",
		 t && want && strcmp(t, want) == 0);
	record_free(t);
	cJSON_free(want);
}

/* Two candidates for the money tests: "ds" (DeepSeek) has a base price,
 * an evening window [1630, 0030) at half price and a 20 % discount;
 * "di" (Deep Infra) has flat prices and no completion price. */
/* HIT:<model> round trip, and the same decoder on the hit rates an old
 * release kept in STATS by_provider.<tag>.hit. */
static void
test_hits(void)
{
	struct score_hit h[2] = {{"x", 0.75, 1234.5, 99}, {"deepinfra/fp8", 0, 0, 0}};
	struct score_hit *v = NULL;
	size_t n = 9;
	char *t = record_hits_encode(h, 2);

	T_ASSERT("hits: encode with v 1", t && has_v1(t));
	T_ASSERT("hits: decode what was encoded, tags and all",
		 t && record_hits_decode(t, &v, &n) == ORGW_OK && n == 2 &&
			 strcmp(v[0].tag, "x") == 0 && v[0].rate == 0.75 &&
			 v[0].weight == 1234.5 && v[0].tokens == 99 &&
			 strcmp(v[1].tag, "deepinfra/fp8") == 0);
	free(v);
	v = NULL;
	record_free(t);
	t = record_hits_encode(NULL, 0);
	T_ASSERT("hits: none is an empty record",
		 t && record_hits_decode(t, &v, &n) == ORGW_OK && n == 0);
	record_free(t);

	T_ASSERT("legacy hits: two providers, one without a hit",
		 record_hits_decode("{\"v\":1,\"by_provider\":{\"a\":{\"hit\":"
				    "{\"rate\":0.5,\"weight\":10,\"tokens\":20}},"
				    "\"b\":{\"requests\":3},\"c\":{\"hit\":"
				    "{\"rate\":0.25}}}}",
				    &v, &n) == ORGW_OK &&
			 n == 2 && strcmp(v[0].tag, "a") == 0 &&
			 v[0].rate == 0.5 && v[0].tokens == 20 &&
			 strcmp(v[1].tag, "c") == 0 && v[1].rate == 0.25);
	free(v);
	v = NULL;
	T_ASSERT("hits: none in absent or odd text, damage reads 0",
		 record_hits_decode(NULL, &v, &n) == ORGW_OK && n == 0 &&
			 v == NULL &&
			 record_hits_decode("[1]", &v, &n) == ORGW_OK && n == 0 &&
			 record_hits_decode("{\"by_provider\":{\"a\":{\"hit\":"
					    "5}}}", &v, &n) == ORGW_OK && n == 0);
	free(v);
	v = NULL;
	T_ASSERT("hits: a damaged member reads 0",
		 record_hits_decode("{\"by_provider\":{\"a\":{\"hit\":"
				    "{\"rate\":\"x\",\"weight\":2}}}}",
				    &v, &n) == ORGW_OK &&
			 n == 1 && v[0].rate == 0 && v[0].weight == 2);
	free(v);
}

/* CONV: and PRESSURE: records: a round trip, the nested cache member
 * carried through untouched, damaged values read as absent. */
static void
test_conv_pressure(void)
{
	struct rec_conv c, d;
	struct rec_pressure p, q;
	cJSON *cache = cJSON_Parse("{\"v\":1,\"units\":[{\"h\":\"a1\","
				   "\"n\":120}],\"breaks\":[]}");
	cJSON *back = NULL;
	char *t, *u;

	memset(&c, 0, sizeof(c));
	snprintf(c.model, sizeof(c.model), "anthropic/claude-sonnet-4.5");
	snprintf(c.tag, sizeof(c.tag), "anthropic");
	snprintf(c.show, sizeof(c.show), "4f1c2a9e-0d1");
	snprintf(c.api, sizeof(c.api), "messages");
	c.first_seen = 1764547200;
	c.last_turn = 1764547800;
	c.turns = 5;
	c.spread = true;
	c.foreign_items = 41;
	t = record_conv_encode(&c, cache);
	T_ASSERT("conv: encode", t != NULL);
	T_ASSERT("conv: decode gives every field back",
		 record_conv_decode(t, &d, &back) == ORGW_OK &&
			 memcmp(&c, &d, sizeof(c)) == 0);
	u = back != NULL ? cJSON_PrintUnformatted(back) : NULL;
	T_ASSERT("conv: the cache member comes back as it went in",
		 u != NULL && strcmp(u, "{\"v\":1,\"units\":[{\"h\":\"a1\","
					"\"n\":120}],\"breaks\":[]}") == 0);
	cJSON_free(u);
	cJSON_Delete(back);
	T_ASSERT("conv: decode without asking for the cache",
		 record_conv_decode(t, &d, NULL) == ORGW_OK && d.turns == 5);
	T_ASSERT("conv: foreign_items written",
		 strstr(t, "\"foreign_items\":41") != NULL &&
			 d.foreign_items == 41);
	record_free(t);
	c.foreign_items = 0;
	t = record_conv_encode(&c, NULL);
	T_ASSERT("conv: foreign_items 0 is left out",
		 t != NULL && strstr(t, "foreign_items") == NULL);
	record_free(t);
	T_ASSERT("conv: a record written before foreign_items reads 0",
		 record_conv_decode("{\"v\":1,\"model\":\"m/x\",\"tag\":"
				    "\"openai\",\"show\":\"s\",\"api\":"
				    "\"responses\",\"first_seen\":1,"
				    "\"last_turn\":2,\"turns\":2,"
				    "\"spread\":false}",
				    &d, NULL) == ORGW_OK &&
			 d.turns == 2 && d.foreign_items == 0 &&
			 strcmp(d.tag, "openai") == 0);
	T_ASSERT("conv: a damaged foreign_items reads 0",
		 record_conv_decode("{\"foreign_items\":-3}", &d, NULL) ==
				 ORGW_OK &&
			 d.foreign_items == 0 &&
			 record_conv_decode("{\"foreign_items\":\"9\"}", &d,
					    NULL) == ORGW_OK &&
			 d.foreign_items == 0);
	t = record_conv_encode(&c, NULL);
	T_ASSERT("conv: no cache member: NULL back",
		 t != NULL && record_conv_decode(t, &d, &back) == ORGW_OK &&
			 back == NULL && strstr(t, "cache") == NULL);
	record_free(t);
	T_ASSERT("conv: damaged values",
		 record_conv_decode("[1]", &d, &back) == ORGW_EINVAL &&
			 back == NULL && d.tag[0] == '\0' &&
			 record_conv_decode(NULL, &d, NULL) == ORGW_EINVAL &&
			 record_conv_decode("{\"tag\":\"a\\r\\nX: y\","
					    "\"turns\":\"3\",\"cache\":7}",
					    &d, &back) == ORGW_OK &&
			 d.tag[0] == '\0' && d.turns == 0 && back == NULL);
	cJSON_Delete(cache);
	p.until = 1764547830;
	p.n429 = 3;
	t = record_pressure_encode(&p);
	T_ASSERT("pressure: round trip",
		 t != NULL && record_pressure_decode(t, &q) == ORGW_OK &&
			 q.until == p.until && q.n429 == 3);
	record_free(t);
	T_ASSERT("pressure: damaged", record_pressure_decode("x", &q) ==
						      ORGW_EINVAL &&
					      q.until == 0);
}

int
main(void)
{
	test_lock();
	test_cands();
	test_cands_terms();
	test_from_score();
	test_failure_cooldown();
	test_seen();
	test_hits();
	test_add_number();
	test_conv_pressure();
	return T_REPORT();
}
