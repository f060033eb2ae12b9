/*
 * test_record.c - unit tests for record.c, the GDBM value codecs of SPEC
 * section 7: encode/decode round trips, damaged values read as absent or
 * zero, MODELS_SEEN add/list, and exact STATS counters (no NaN, inf or
 * null ever reaches the stored text).
 */
#include <math.h>
#include <stdint.h>
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

static void
test_stats(void)
{
	/* 7 deltas: tags t1, t2, NULL (unpinned), "" (unpinned) */
	static const char *const tags[] = {"t1", "t2", NULL, "t1", "",
	                                    "t2", "t1"};
	struct stats_delta d;
	double want_cost = 0, t1_cost = 0;
	int64_t sum[20] = {0}, t1_req = 0, t1_ok = 0, t1_prompt = 0,
	        t2_req = 0, t2_completion = 0;
	int64_t ttfb_sum = 0, ttfb_n = 0, ttfb_max = 0;
	int64_t total_sum = 0, total_n = 0, total_max = 0;
	char *text = NULL, *next;
	cJSON *o;
	int k, ok = 1;

	for (k = 0; k < 7; k++) {
		memset(&d, 0, sizeof(d));
		d.tag = tags[k];
		d.requests = 1;
		d.ok = k % 3 != 0;
		d.e429 = k == 1;
		d.e5xx = k == 0 ? 2 : 0;
		d.etimeout = k == 3;
		d.eslow = k == 4;
		d.emid = k == 5;
		d.eabort = k == 6;
		d.eother = k == 2;
		d.retries_429 = k;
		d.failovers = k % 2;
		d.trips = k == 0;
		d.off_pin = k == 2;
		d.prompt_tokens = 1000 * (k + 1);
		d.cached_tokens = 100 * k;
		d.completion_tokens = 10 * (k + 1);
		d.cost_usd = 0.001 * (k + 1);
		d.ttfb_ms = k == 2 ? -1 : 100 + 50 * k;
		d.total_ms = k == 4 ? -1 : 1000 * (k + 1) - 7 * k * k;

		sum[0] += d.requests, sum[1] += d.ok, sum[2] += d.e429;
		sum[3] += d.e5xx, sum[4] += d.etimeout, sum[5] += d.eslow;
		sum[6] += d.emid, sum[7] += d.eabort, sum[8] += d.eother;
		sum[9] += d.retries_429, sum[10] += d.failovers;
		sum[11] += d.trips, sum[12] += d.off_pin;
		sum[13] += d.prompt_tokens, sum[14] += d.cached_tokens;
		sum[15] += d.completion_tokens;
		want_cost += d.cost_usd;
		if (d.ttfb_ms >= 0) {
			ttfb_sum += d.ttfb_ms;
			ttfb_n++;
			if (d.ttfb_ms > ttfb_max)
				ttfb_max = d.ttfb_ms;
		}
		if (d.total_ms >= 0) {
			total_sum += d.total_ms;
			total_n++;
			if (d.total_ms > total_max)
				total_max = d.total_ms;
		}
		if (d.tag && strcmp(d.tag, "t1") == 0) {
			t1_req += d.requests;
			t1_ok += d.ok;
			t1_prompt += d.prompt_tokens;
			t1_cost += d.cost_usd;
		}
		if (d.tag && strcmp(d.tag, "t2") == 0) {
			t2_req += d.requests;
			t2_completion += d.completion_tokens;
		}
		next = record_stats_apply(text, &d);
		if (next == NULL)
			ok = 0;
		record_free(text);
		text = next;
	}
	T_ASSERT("stats: 7 applies ok", ok && text != NULL);
	o = text ? cJSON_Parse(text) : NULL;
	T_ASSERT("stats: text is an object with v:1", cJSON_IsObject(o) &&
	                                                  at(o, "v") == 1);
	T_ASSERT("stats: requests", at(o, "requests") == sum[0]);
	T_ASSERT("stats: ok", at(o, "ok") == sum[1]);
	T_ASSERT("stats: errors.429", at(o, "errors.429") == sum[2]);
	T_ASSERT("stats: errors.5xx", at(o, "errors.5xx") == sum[3]);
	T_ASSERT("stats: errors.timeout", at(o, "errors.timeout") == sum[4]);
	T_ASSERT("stats: errors.slow", at(o, "errors.slow") == sum[5]);
	T_ASSERT("stats: errors.mid_stream",
	         at(o, "errors.mid_stream") == sum[6]);
	T_ASSERT("stats: errors.client_abort",
	         at(o, "errors.client_abort") == sum[7]);
	T_ASSERT("stats: errors.other", at(o, "errors.other") == sum[8]);
	T_ASSERT("stats: retries_429", at(o, "retries_429") == sum[9]);
	T_ASSERT("stats: failovers", at(o, "failovers") == sum[10]);
	T_ASSERT("stats: breaker_trips", at(o, "breaker_trips") == sum[11]);
	T_ASSERT("stats: off_pin", at(o, "off_pin") == sum[12]);
	T_ASSERT("stats: tokens.prompt", at(o, "tokens.prompt") == sum[13]);
	T_ASSERT("stats: tokens.cached", at(o, "tokens.cached") == sum[14]);
	T_ASSERT("stats: tokens.completion",
	         at(o, "tokens.completion") == sum[15]);
	T_ASSERT("stats: cost_usd", T_NEAR(at(o, "cost_usd"), want_cost));
	T_ASSERT("stats: latency.ttfb_ms_sum",
	         at(o, "latency.ttfb_ms_sum") == ttfb_sum);
	T_ASSERT("stats: latency.ttfb_count (unmeasured skipped)",
	         at(o, "latency.ttfb_count") == ttfb_n && ttfb_n == 6);
	T_ASSERT("stats: latency.ttfb_ms_max",
	         at(o, "latency.ttfb_ms_max") == ttfb_max);
	T_ASSERT("stats: latency.total_ms_sum",
	         at(o, "latency.total_ms_sum") == total_sum);
	T_ASSERT("stats: latency.total_count",
	         at(o, "latency.total_count") == total_n && total_n == 6);
	T_ASSERT("stats: latency.total_ms_max",
	         at(o, "latency.total_ms_max") == total_max);
	T_ASSERT("stats: by_provider.t1.requests",
	         at(o, "by_provider.t1.requests") == t1_req && t1_req == 3);
	T_ASSERT("stats: by_provider.t1.ok", at(o, "by_provider.t1.ok") == t1_ok);
	T_ASSERT("stats: by_provider.t1.tokens.prompt",
	         at(o, "by_provider.t1.tokens.prompt") == t1_prompt);
	T_ASSERT("stats: by_provider.t1.cost_usd",
	         T_NEAR(at(o, "by_provider.t1.cost_usd"), t1_cost));
	T_ASSERT("stats: by_provider.t2.requests",
	         at(o, "by_provider.t2.requests") == t2_req && t2_req == 2);
	T_ASSERT("stats: by_provider.t2.tokens.completion",
	         at(o, "by_provider.t2.tokens.completion") == t2_completion);
	T_ASSERT("stats: unpinned requests have no by_provider entry",
	         cJSON_GetArraySize(cJSON_GetObjectItem(o, "by_provider")) ==
	             2);
	T_ASSERT("stats: everything finite, nothing null", all_finite(o));
	cJSON_Delete(o);
	record_free(text);
}

static void
test_stats_exact(void)
{
	struct stats_delta d;
	char *text = NULL, *next;
	cJSON *o;
	int k, ok = 1;

	memset(&d, 0, sizeof(d));
	d.tag = "p";
	d.requests = 1;
	d.ok = 1;
	d.prompt_tokens = 123457;
	d.ttfb_ms = -1;
	d.total_ms = -1;
	for (k = 0; k < 2000; k++) {
		if ((next = record_stats_apply(text, &d)) == NULL)
			ok = 0;
		record_free(text);
		text = next;
	}
	o = text ? cJSON_Parse(text) : NULL;
	T_ASSERT("2000 applies: requests exactly 2000",
	         ok && at(o, "requests") == 2000);
	T_ASSERT("2000 applies: prompt tokens exactly 2000 * 123457",
	         at(o, "tokens.prompt") == 2000.0 * 123457 &&
	             at(o, "by_provider.p.tokens.prompt") == 2000.0 * 123457);
	T_ASSERT("unmeasured latency never counted",
	         isnan(at(o, "latency.ttfb_count")) &&
	             isnan(at(o, "latency.total_ms_sum")));
	cJSON_Delete(o);
	record_free(text);
}

/*
 * Issue 17: by_provider.<tag>.hit follows pinned ok answers with usage
 * only; record_stats_hits() reads it back for the scorer.
 */
static void
test_stats_hits(void)
{
	struct stats_delta d;
	struct score_hit *hits = NULL;
	size_t n = 9;
	char *t1, *t2 = NULL, *t3 = NULL;
	cJSON *o;

	memset(&d, 0, sizeof(d));
	d.tag = "slow";
	d.requests = d.ok = 1;
	d.prompt_tokens = 1000;
	d.cached_tokens = 250;
	d.hit_half_life_tokens = 1000;
	d.ttfb_ms = d.total_ms = -1;
	t1 = record_stats_apply(NULL, &d);
	d.cached_tokens = 1000;
	if (t1)
		t2 = record_stats_apply(t1, &d);
	o = t2 ? cJSON_Parse(t2) : NULL;
	T_ASSERT("hit: decayed rate, weight and undecayed tokens stored",
		 o && T_NEAR(at(o, "by_provider.slow.hit.rate"), 0.75) &&
			 T_NEAR(at(o, "by_provider.slow.hit.weight"), 1500) &&
			 at(o, "by_provider.slow.hit.tokens") == 2000);
	cJSON_Delete(o);
	/* Not evidence: a failed answer, an off-pin answer, no usage. */
	d.ok = 0;
	record_free(t1);
	t1 = t2 ? record_stats_apply(t2, &d) : NULL;
	d.ok = 1;
	d.off_pin = 1;
	t3 = t1 ? record_stats_apply(t1, &d) : NULL;
	d.off_pin = 0;
	d.prompt_tokens = 0;
	record_free(t1);
	t1 = t3 ? record_stats_apply(t3, &d) : NULL;
	o = t1 ? cJSON_Parse(t1) : NULL;
	T_ASSERT("hit: failed, off-pin and usage-less answers leave it",
		 o && at(o, "by_provider.slow.hit.tokens") == 2000 &&
			 T_NEAR(at(o, "by_provider.slow.hit.rate"), 0.75) &&
			 at(o, "by_provider.slow.requests") == 5);
	cJSON_Delete(o);
	d.tag = "warm";
	d.prompt_tokens = 400;
	d.cached_tokens = 360;
	record_free(t2);
	t2 = t1 ? record_stats_apply(t1, &d) : NULL;
	T_ASSERT("hits: both providers read back",
		 t2 && record_stats_hits(t2, &hits, &n) == ORGW_OK && n == 2 &&
			 strcmp(hits[0].tag, "slow") == 0 &&
			 T_NEAR(hits[0].rate, 0.75) &&
			 hits[0].tokens == 2000 &&
			 strcmp(hits[1].tag, "warm") == 0 &&
			 T_NEAR(hits[1].rate, 0.9) && hits[1].tokens == 400);
	free(hits);
	T_ASSERT("hits: none in absent or broken text",
		 record_stats_hits(NULL, &hits, &n) == ORGW_OK && n == 0 &&
			 hits == NULL &&
			 record_stats_hits("[1]", &hits, &n) == ORGW_OK &&
			 n == 0 &&
			 record_stats_hits("{\"by_provider\":{\"a\":{\"hit\":"
					   "3},\"b\":{}}}",
					   &hits, &n) == ORGW_OK &&
			 n == 0 && hits == NULL);
	record_free(t1);
	record_free(t2);
	record_free(t3);
}

static void
test_stats_nonfinite(void)
{
	struct stats_delta d;
	char *t1, *t2;
	cJSON *o;

	memset(&d, 0, sizeof(d));
	d.tag = "p";
	d.requests = 1;
	d.cost_usd = 0.25;
	d.ttfb_ms = 10;
	d.total_ms = 20;
	t1 = record_stats_apply(NULL, &d);
	d.cost_usd = NAN;
	t2 = t1 ? record_stats_apply(t1, &d) : NULL;
	o = t2 ? cJSON_Parse(t2) : NULL;
	T_ASSERT("NaN cost: text has no nan/inf/null",
	         t2 && strstr(t2, "nan") == NULL && strstr(t2, "inf") == NULL &&
	             all_finite(o));
	T_ASSERT("NaN cost: the total so far is kept, not zeroed",
	         at(o, "cost_usd") == 0.25 && at(o, "by_provider.p.cost_usd") ==
	                                          0.25);
	T_ASSERT("NaN cost: requests still counted", at(o, "requests") == 2);
	cJSON_Delete(o);
	record_free(t2);
	d.cost_usd = INFINITY;
	t2 = t1 ? record_stats_apply(t1, &d) : NULL;
	o = t2 ? cJSON_Parse(t2) : NULL;
	T_ASSERT("inf cost: total kept, all finite",
	         o && all_finite(o) && at(o, "cost_usd") == 0.25);
	cJSON_Delete(o);
	record_free(t2);
	d.cost_usd = NAN;
	t2 = record_stats_apply(NULL, &d);
	o = t2 ? cJSON_Parse(t2) : NULL;
	T_ASSERT("NaN cost on empty stats: 0", o && at(o, "cost_usd") == 0 &&
	                                           all_finite(o));
	cJSON_Delete(o);
	record_free(t2);
	record_free(t1);

	/* Stored text with overflowing numbers (cJSON reads 1e999 as inf). */
	d.cost_usd = 0.5;
	t2 = record_stats_apply("{\"requests\":1e999,\"cost_usd\":1e999,"
	                        "\"tokens\":{\"prompt\":-1e999},"
	                        "\"latency\":{\"ttfb_ms_max\":1e999,"
	                        "\"total_ms_max\":-1e999}}",
	                        &d);
	o = t2 ? cJSON_Parse(t2) : NULL;
	T_ASSERT("inf in stored stats: output all finite, nothing null",
	         o && all_finite(o));
	T_ASSERT("inf in stored stats: a damaged counter restarts from the "
	         "delta",
	         at(o, "requests") == 1 && at(o, "cost_usd") == 0.5 &&
	             at(o, "tokens.prompt") == 0);
	T_ASSERT("inf in stored stats: max restarts from this request",
	         at(o, "latency.ttfb_ms_max") == 10 &&
	             at(o, "latency.total_ms_max") == 20);
	cJSON_Delete(o);
	record_free(t2);

	/* Damaged stored stats: wrong types are replaced, not crashed on. */
	memset(&d, 0, sizeof(d));
	d.tag = "p";
	d.requests = 1;
	d.ttfb_ms = d.total_ms = -1;
	t2 = record_stats_apply("{\"errors\":5,\"tokens\":\"x\",\"latency\":[],"
	                        "\"by_provider\":[1],\"requests\":\"7\","
	                        "\"v\":\"old\"}",
	                        &d);
	o = t2 ? cJSON_Parse(t2) : NULL;
	T_ASSERT("damaged stats: requests restart at 1",
	         at(o, "requests") == 1 && at(o, "v") == 1);
	T_ASSERT("damaged stats: children rebuilt as objects",
	         cJSON_IsObject(cJSON_GetObjectItem(o, "errors")) &&
	             cJSON_IsObject(cJSON_GetObjectItem(o, "tokens")) &&
	             at(o, "by_provider.p.requests") == 1);
	cJSON_Delete(o);
	record_free(t2);
	/* A damaged value holding a key twice: the copy readers find first
	 * is the one updated (replaced in place, not appended). */
	t2 = record_stats_apply("{\"requests\":\"x\",\"requests\":5,"
	                        "\"errors\":1,\"errors\":{\"5xx\":9}}",
	                        &d);
	o = t2 ? cJSON_Parse(t2) : NULL;
	T_ASSERT("duplicate keys: the first copy is the one updated",
	         at(o, "requests") == 1 && at(o, "errors.5xx") == 0);
	cJSON_Delete(o);
	record_free(t2);
	o = NULL;
	t2 = record_stats_apply("[1,2]", &d);
	T_ASSERT("stats on a non-object: starts from zero",
	         t2 && (o = cJSON_Parse(t2)) != NULL && at(o, "requests") == 1);
	cJSON_Delete(o);
	record_free(t2);
}

/* What the tree path keeps (moved from test_statsrec.c with the flat
 * codec): member order, new keys last, counters past INT_MAX exact (cJSON
 * prints 15 significant digits, so up to 10^15 - 1). */
static void
test_stats_order(void)
{
	struct stats_delta d;
	char *t;
	cJSON *o;

	memset(&d, 0, sizeof(d));
	d.requests = 1;
	d.ok = 1;
	d.ttfb_ms = d.total_ms = -1;
	t = record_stats_apply("{\"zz\":7,\"requests\":2147483647,"
	                       "\"v\":1,\"ok\":999999999999998}",
	                       &d);
	T_ASSERT("stats: stored members keep their order, new keys go last",
	         t != NULL &&
	             strncmp(t, "{\"zz\":7,\"requests\":2147483648,\"v\":1,"
	                        "\"ok\":999999999999999,\"errors\":{",
	                     67) == 0);
	o = t ? cJSON_Parse(t) : NULL;
	T_ASSERT("stats: counters past INT_MAX and up to 10^15 stay exact",
	         at(o, "requests") == 2147483648.0 &&
	             at(o, "ok") == 999999999999999.0);
	cJSON_Delete(o);
	record_free(t);
}

/*
 * The re-pricing terms of a candidate (issue 14 item 6) survive the
 * state: base prices, windows (valid, unreadable and absent prices),
 * discount, caching flag.  A candidate from before re-pricing (no
 * "pricing") decodes with its scored prices as base and no windows, and
 * re-prices to what it was scored at.
 */
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

/* Two candidates for the money tests: "ds" (DeepSeek) has a base price,
 * an evening window [1630, 0030) at half price and a 20 % discount;
 * "di" (Deep Infra) has flat prices and no completion price. */
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

#define MONEY_DAY 1796083200 /* 2026-12-01 00:00:00 UTC */

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
	record_money_price(&d, &c);
	T_ASSERT("money: a reported cost is kept",
		 d.cost_usd == 1e-4 && !d.cost_estimated);
	T_ASSERT("money: pinned goes to its tag",
		 d.money_tag && strcmp(d.money_tag, "ds") == 0);
	T_ASSERT("money: 12:00 base prices, discounted",
		 T_NEAR(d.uncached_usd, (1000 * 1e-6 + 100 * 2e-6) * 0.8));
	d.now = MONEY_DAY + 17 * 3600;
	record_money_price(&d, &c);
	T_ASSERT("money: 17:00 the window's prices, discounted",
		 T_NEAR(d.uncached_usd, (1000 * 5e-7 + 100 * 1e-6) * 0.8));
	d.now = MONEY_DAY + 16 * 3600 + 29 * 60;
	record_money_price(&d, &c);
	T_ASSERT("money: 16:29 is before the window",
		 T_NEAR(d.uncached_usd, (1000 * 1e-6 + 100 * 2e-6) * 0.8));
	d.now = MONEY_DAY + 86400 + 15 * 60; /* 00:15 next day: wraps */
	record_money_price(&d, &c);
	T_ASSERT("money: 00:15 still in the wrapping window",
		 T_NEAR(d.uncached_usd, (1000 * 5e-7 + 100 * 1e-6) * 0.8));

	d.tag = NULL;
	d.served = "deepseek";
	record_money_price(&d, &c);
	T_ASSERT("money: unpinned goes by display name (any case)",
		 d.money_tag && strcmp(d.money_tag, "ds") == 0 &&
			 T_NEAR(d.uncached_usd,
				(1000 * 5e-7 + 100 * 1e-6) * 0.8));
	d.tag = "di/fp8";
	d.off_pin = 1;
	d.served = "DeepSeek";
	record_money_price(&d, &c);
	T_ASSERT("money: served off its pin goes to who served",
		 d.money_tag && strcmp(d.money_tag, "ds") == 0);
	d.tag = NULL;
	d.off_pin = 0;
	d.served = "Nobody";
	record_money_price(&d, &c);
	T_ASSERT("money: an unmatched name is unknown, nothing saved",
		 d.money_tag && strcmp(d.money_tag, "unknown") == 0 &&
			 d.uncached_usd == d.cost_usd);
	d.served = "";
	record_money_price(&d, NULL);
	T_ASSERT("money: no name, no candidates: unknown",
		 d.money_tag && strcmp(d.money_tag, "unknown") == 0);
	d.served = "Deep Infra";
	record_money_price(&d, &c);
	T_ASSERT("money: a candidate without a completion price: spend",
		 d.money_tag && strcmp(d.money_tag, "di/fp8") == 0 &&
			 d.uncached_usd == d.cost_usd);
	d.usage = false;
	record_money_price(&d, &c);
	T_ASSERT("money: no usage records no money", d.money_tag == NULL);

	record_day(MONEY_DAY, day);
	T_ASSERT("record_day 2026-12-01", strcmp(day, "2026-12-01") == 0);
	record_day(951782400 + 86399, day);
	T_ASSERT("record_day 2000-02-29", strcmp(day, "2000-02-29") == 0);
	record_day(-1, day);
	T_ASSERT("record_day 1969-12-31", strcmp(day, "1969-12-31") == 0);
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
	char *s;
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
	record_money_price(&d, &c);
	T_ASSERT("estimate: priced part by part, marked",
		 d.cost_estimated &&
			 T_NEAR(d.cost_usd, 100 * 1e-6 + 700 * 1e-7 +
						    200 * 1.25e-6 + 50 * 2e-6));
	T_ASSERT("estimate: the saving is against the uncached price",
		 T_NEAR(d.uncached_usd, 1000 * 1e-6 + 50 * 2e-6));
	s = record_stats_apply(NULL, &d);
	o = s ? cJSON_Parse(s) : NULL;
	a = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(o, "by_api"), "messages");
	T_ASSERT("estimate: STATS marks the estimated cost",
		 T_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
				o, "cost_estimated_usd")),
			d.cost_usd) &&
			 T_NEAR(cJSON_GetNumberValue(
					cJSON_GetObjectItemCaseSensitive(
						a, "cost_estimated_usd")),
				d.cost_usd));
	T_ASSERT("by_api: requests, ok and cache writes of the API",
		 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
			 a, "requests")) == 1 &&
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
				 a, "ok")) == 1 &&
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
				 cJSON_GetObjectItemCaseSensitive(a, "tokens"),
				 "cache_write")) == 200);
	cJSON_Delete(o);
	record_free(s);

	/* Cache prices the endpoint lacks are the prompt price. */
	t->base_kind[SCORE_CACHE_READ] = SCORE_PRICE_NONE;
	t->base_kind[SCORE_CACHE_WRITE] = SCORE_PRICE_NONE;
	d.cost_estimated = false;
	d.cost_usd = 0;
	record_money_price(&d, &c);
	T_ASSERT("estimate: no cache prices: all input at the prompt price",
		 d.cost_estimated &&
			 T_NEAR(d.cost_usd, 1000 * 1e-6 + 50 * 2e-6));
	/* No candidate, no price: nothing estimated. */
	d.cost_estimated = false;
	d.cost_usd = 0;
	d.tag = NULL;
	d.served = "";
	record_money_price(&d, &c);
	T_ASSERT("estimate: unattributed: no estimate, cost 0",
		 !d.cost_estimated && d.cost_usd == 0);
}

static void
test_money_stats(void)
{
	struct stats_delta d;
	char *t1, *t2;
	cJSON *o, *days;
	int k;

	memset(&d, 0, sizeof(d));
	d.requests = 1;
	d.ttfb_ms = d.total_ms = -1;
	d.money_tag = "ds";
	d.cost_usd = 1e-4;
	d.uncached_usd = 4e-4;
	d.now = MONEY_DAY + 3600;
	t1 = record_stats_apply("{\"days\":{\"bad\":{},\"2026-13\":1}}", &d);
	d.money_tag = "unknown";
	d.cost_usd = 3e-4;
	d.uncached_usd = 2e-4; /* a cache write dearer than the prompt */
	t2 = t1 ? record_stats_apply(t1, &d) : NULL;
	o = t2 ? cJSON_Parse(t2) : NULL;
	T_ASSERT("money stats: totals",
		 o && T_NEAR(at(o, "spend_usd"), 4e-4) &&
			 T_NEAR(at(o, "uncached_usd"), 6e-4) &&
			 T_NEAR(at(o, "saved_usd"), 2e-4));
	T_ASSERT("money stats: by_provider, negative saving kept",
		 o && T_NEAR(at(o, "by_provider.ds.saved_usd"), 3e-4) &&
			 T_NEAR(at(o, "by_provider.unknown.saved_usd"), -1e-4) &&
			 T_NEAR(at(o, "by_provider.unknown.spend_usd"), 3e-4));
	T_ASSERT("money stats: per day and provider",
		 o && at(o, "days.2026-12-01.ds.requests") == 1 &&
			 T_NEAR(at(o, "days.2026-12-01.ds.uncached_usd"),
				4e-4) &&
			 at(o, "days.2026-12-01.unknown.requests") == 1);
	days = o ? cJSON_GetObjectItemCaseSensitive(o, "days") : NULL;
	T_ASSERT("money stats: damaged day keys dropped",
		 cJSON_GetArraySize(days) == 1);
	cJSON_Delete(o);
	record_free(t1);
	/* One request a day for 40 days: the 30 last stay. */
	d.money_tag = "ds";
	d.cost_usd = 1e-4;
	d.uncached_usd = 4e-4;
	for (k = 1; k < 40 && t2 != NULL; k++) {
		d.now = MONEY_DAY + (int64_t)k * 86400;
		t1 = record_stats_apply(t2, &d);
		record_free(t2);
		t2 = t1;
		if (k == 29) {
			o = t2 ? cJSON_Parse(t2) : NULL;
			days = o ? cJSON_GetObjectItemCaseSensitive(o, "days")
				 : NULL;
			T_ASSERT("money stats: day 30 keeps the first",
				 cJSON_GetArraySize(days) == 30 &&
					 at(o, "days.2026-12-01.ds.requests") ==
						 1);
			cJSON_Delete(o);
		}
	}
	o = t2 ? cJSON_Parse(t2) : NULL;
	days = o ? cJSON_GetObjectItemCaseSensitive(o, "days") : NULL;
	T_ASSERT("money stats: 40 days keep the last 30",
		 cJSON_GetArraySize(days) == 30 &&
			 isnan(at(o, "days.2026-12-10.ds.requests")) &&
			 at(o, "days.2026-12-11.ds.requests") == 1 &&
			 at(o, "days.2027-01-09.ds.requests") == 1);
	T_ASSERT("money stats: totals keep every day",
		 o && T_NEAR(at(o, "by_provider.ds.spend_usd"), 40 * 1e-4));
	cJSON_Delete(o);
	d.money_tag = NULL;
	d.now = MONEY_DAY + 100 * 86400;
	t1 = t2 ? record_stats_apply(t2, &d) : NULL;
	o = t1 ? cJSON_Parse(t1) : NULL;
	T_ASSERT("money stats: a request without money leaves the days",
		 o && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
			      o, "days")) == 30);
	cJSON_Delete(o);
	record_free(t1);
	record_free(t2);
}

static void
test_metrics(void)
{
	struct stats_delta d;
	char *t1 = NULL, *t2;
	cJSON *o, *b;
	int i;

	memset(&d, 0, sizeof(d));
	d.ttfb_ms = -1;
	d.total_ms = -1;
	T_ASSERT("outcome: nothing counted is client_error",
		 strcmp(record_outcome(&d), "client_error") == 0);
	d.e429 = 1;
	T_ASSERT("outcome: 429", strcmp(record_outcome(&d), "429") == 0);
	d.e5xx = 1;
	T_ASSERT("outcome: 5xx before 429",
		 strcmp(record_outcome(&d), "5xx") == 0);
	d.etimeout = 1;
	T_ASSERT("outcome: timeout before 5xx",
		 strcmp(record_outcome(&d), "timeout") == 0);
	d.emid = 1;
	T_ASSERT("outcome: mid_stream before timeout",
		 strcmp(record_outcome(&d), "mid_stream") == 0);
	d.eabort = 1;
	T_ASSERT("outcome: client_abort before mid_stream",
		 strcmp(record_outcome(&d), "client_abort") == 0);
	d.ok = 1;
	d.eslow = 1;
	T_ASSERT("outcome: ok wins (a slow answer was delivered)",
		 strcmp(record_outcome(&d), "ok") == 0);
	memset(&d, 0, sizeof(d));
	T_ASSERT("provider: none is unknown",
		 strcmp(record_metrics_provider(&d), "unknown") == 0);
	d.tag = "pin";
	T_ASSERT("provider: the pin",
		 strcmp(record_metrics_provider(&d), "pin") == 0);
	d.money_tag = "served";
	T_ASSERT("provider: where the money went first",
		 strcmp(record_metrics_provider(&d), "served") == 0);

	/* Three requests: 100 ms ok, 250 ms (bucket edge) ok, 700 s 5xx. */
	for (i = 0; i < 3; i++) {
		memset(&d, 0, sizeof(d));
		d.requests = 1;
		d.ok = i < 2;
		d.e5xx = i == 2;
		d.tag = "p";
		d.prompt_tokens = 1000;
		d.cached_tokens = 900;
		d.completion_tokens = 7;
		d.ttfb_ms = i == 2 ? -1 : (i == 0 ? 100 : 250);
		d.total_ms = i == 2 ? 700000 : 250;
		t2 = record_metrics_apply(t1, &d);
		record_free(t1);
		t1 = t2;
	}
	o = t1 ? cJSON_Parse(t1) : NULL;
	T_ASSERT("metrics: requests by outcome",
		 at(o, "providers.p.requests.ok") == 2 &&
			 at(o, "providers.p.requests.5xx") == 1 &&
			 at(o, "v") == 1);
	T_ASSERT("metrics: tokens in GenAI words",
		 at(o, "providers.p.tokens.input") == 3000 &&
			 at(o, "providers.p.tokens.cache_read") == 2700 &&
			 at(o, "providers.p.tokens.output") == 21);
	T_ASSERT("metrics: ttfb counts only the measured",
		 at(o, "ttfb.count") == 2 && at(o, "ttfb.sum_ms") == 350);
	b = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(o, "ttfb"), "buckets");
	T_ASSERT("metrics: 100 and 250 ms both in le=0.25",
		 cJSON_GetArraySize(b) == PROM_N_SLOTS &&
			 cJSON_GetArrayItem(b, 0)->valuedouble == 2);
	b = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(o, "duration"), "buckets");
	T_ASSERT("metrics: 700 s in +Inf",
		 cJSON_GetArraySize(b) == PROM_N_SLOTS &&
			 cJSON_GetArrayItem(b, 0)->valuedouble == 2 &&
			 cJSON_GetArrayItem(b, PROM_N_BUCKETS)->valuedouble ==
				 1 &&
			 at(o, "duration.sum_ms") == 700500);
	cJSON_Delete(o);
	t2 = record_metrics_event(t1, "p");
	record_free(t1);
	t1 = record_metrics_event(t2, NULL);
	record_free(t2);
	t2 = record_metrics_event(t1, NULL);
	record_free(t1);
	o = t2 ? cJSON_Parse(t2) : NULL;
	T_ASSERT("metrics: a trip and two lock changes",
		 at(o, "providers.p.breaker_trips") == 1 &&
			 at(o, "lock_changes") == 2 &&
			 at(o, "providers.p.requests.ok") == 2);
	cJSON_Delete(o);
	record_free(t2);
	t1 = record_metrics_apply("{\"ttfb\":{\"buckets\":[1,\"x\"]},"
				  "\"v\":\"junk\"}",
				  &d);
	o = t1 ? cJSON_Parse(t1) : NULL;
	b = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(o, "duration"), "buckets");
	T_ASSERT("metrics: damaged record starts again where damaged",
		 o != NULL && at(o, "v") == 1 &&
			 cJSON_GetArrayItem(b, PROM_N_BUCKETS)->valuedouble ==
				 1);
	cJSON_Delete(o);
	record_free(t1);
	t1 = record_metrics_apply("[1,2]", &d);
	T_ASSERT("metrics: not an object reads as empty",
		 t1 != NULL && strstr(t1, "\"5xx\":1") != NULL);
	record_free(t1);
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
	test_stats();
	test_stats_exact();
	test_stats_hits();
	test_stats_nonfinite();
	test_stats_order();
	test_money_price();
	test_money_estimate();
	test_money_stats();
	test_metrics();
	return T_REPORT();
}
