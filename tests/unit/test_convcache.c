/*
 * test_convcache.c - unit tests for convcache.c: the classification of a
 * turn as a table (every cause, and the warm turns that must not be
 * breaks: the first turn, Claude Code moving its cache_control marker, a
 * turn that only appends), what the bounded prefix of a long
 * conversation still tells, the update and its ring of 8 breaks, the
 * JSON codec and the words for /status.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "t.h"
#include "convcache.h"
#include "fingerprint.h"

#define T0 1796083200	/* 2026-12-01 00:00:00 UTC */
#define TTL 300

/* A prompt of n units: 3 system blocks, the tools, then user and
 * assistant messages in turn; unit i's hash is drawn from i alone, so
 * two prompts agree wherever they are not changed on purpose. */
static void
fp_make(struct fp_list *l, size_t n)
{
	size_t i;
	uint64_t z;

	fp_list_clear(l);
	l->v = calloc(n ? n : 1, sizeof(*l->v));
	l->n = l->cap = n;
	for (i = 0; l->v != NULL && i < n; i++) {
		z = (i + 1) * 0x9e3779b97f4a7c15ULL;
		z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ULL;
		l->v[i].hash = z ^ (z >> 29);
		l->v[i].bytes = 100;
		snprintf(l->v[i].kind, sizeof(l->v[i].kind), "%s",
			 i < 3 ? "system" : i == 3 ? "tools" :
			 i % 2 ? "assistant" : "user");
	}
}

/* A record after one turn of prev_n units on provider prov at T0 with
 * prompt tokens. */
static void
rec_after(struct convcache *c, size_t prev_n, const char *prov,
	  int64_t prompt)
{
	struct fp_list l = {0};
	struct convcache_turn t = {0};
	struct convcache_verdict v;

	convcache_init(c);
	fp_make(&l, prev_n);
	t.fp = &l;
	t.provider = prov;
	t.now = T0;
	t.prompt_tokens = prompt;
	convcache_classify(c, &t, TTL, &v);
	convcache_update(c, &t, &v);
	fp_list_clear(&l);
}

struct row {
	const char *what;
	int first;		/* the record is empty: this is turn 1 */
	size_t prev_n;		/* units of the previous prompt */
	int64_t prev_prompt;	/* its prompt tokens */
	size_t n;		/* units of this prompt */
	long change;		/* this unit's hash differs, or -1 */
	const char *prov;	/* this turn's provider ("A" before) */
	int64_t dt;		/* seconds since the previous turn */
	int64_t prompt, cached;
	/* expected */
	int is_break;
	enum convcache_cause cause;
	int64_t at;
	const char *unit;
};

static const struct row rows[] = {
	{"first turn: never a break", 1, 0, 0, 5, -1, "A", 0, 10000, 0, 0,
	 CONVCACHE_NONE, -1, ""},
	{"appends only, read it all: warm", 0, 5, 10000, 7, -1, "A", 30,
	 10500, 9900, 0, CONVCACHE_NONE, -1, ""},
	{"read exactly half: not a break", 0, 5, 10000, 7, -1, "A", 30, 10500,
	 5000, 0, CONVCACHE_NONE, -1, ""},
	{"read just under half: provider_miss", 0, 5, 10000, 7, -1, "A", 30,
	 10500, 4999, 1, CONVCACHE_PROVIDER_MISS, -1, ""},
	{"appends only, nothing read: provider_miss", 0, 5, 10000, 7, -1, "A",
	 30, 10500, 0, 1, CONVCACHE_PROVIDER_MISS, -1, ""},
	{"another provider: moved", 0, 5, 10000, 7, -1, "B", 30, 10500, 0, 1,
	 CONVCACHE_MOVED, -1, ""},
	{"another provider and a changed prefix: moved first", 0, 5, 10000, 7,
	 0, "B", 400, 10500, 0, 1, CONVCACHE_MOVED, -1, ""},
	{"system block 0 rewritten: prefix_changed at 0", 0, 5, 10000, 7, 0,
	 "A", 30, 10500, 0, 1, CONVCACHE_PREFIX_CHANGED, 0, "system"},
	{"tools changed: prefix_changed at 3", 0, 5, 10000, 7, 3, "A", 30,
	 10500, 100, 1, CONVCACHE_PREFIX_CHANGED, 3, "tools"},
	{"a changed prefix that is also late: prefix_changed first", 0, 5,
	 10000, 7, 4, "A", 900, 10500, 0, 1, CONVCACHE_PREFIX_CHANGED, 4,
	 "user"},
	{"changed after the previous prompt's end: not its prefix", 0, 5,
	 10000, 7, 5, "A", 30, 10500, 0, 1, CONVCACHE_PROVIDER_MISS, -1, ""},
	{"a changed prefix that still read most: not a break", 0, 9, 10000,
	 11, 8, "A", 30, 10500, 9000, 0, CONVCACHE_NONE, -1, ""},
	{"301 s later: expired", 0, 5, 10000, 7, -1, "A", 301, 10500, 0, 1,
	 CONVCACHE_EXPIRED, -1, ""},
	{"300 s later: still in time, provider_miss", 0, 5, 10000, 7, -1, "A",
	 300, 10500, 0, 1, CONVCACHE_PROVIDER_MISS, -1, ""},
	{"no provider known this turn: not moved", 0, 5, 10000, 7, -1, "", 30,
	 10500, 0, 1, CONVCACHE_PROVIDER_MISS, -1, ""},
	{"a shorter prompt: half of it is the bar", 0, 9, 10000, 5, -1, "A",
	 30, 2000, 1000, 0, CONVCACHE_NONE, -1, ""},
	{"a shorter prompt read under half: prefix_changed where it ends", 0,
	 9, 10000, 5, -1, "A", 30, 2000, 999, 1, CONVCACHE_PREFIX_CHANGED, 5,
	 "assistant"},
	{"previous usage unknown: no break", 0, 5, 0, 7, -1, "A", 30, 10500, 0,
	 0, CONVCACHE_NONE, -1, ""},
	{"this turn's usage unknown: no break", 0, 5, 10000, 7, -1, "A", 30, 0,
	 0, 0, CONVCACHE_NONE, -1, ""},
};

static void
test_table(void)
{
	struct convcache c;
	struct fp_list l = {0};
	struct convcache_turn t;
	struct convcache_verdict v;
	size_t i;
	char what[200];

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];

		if (r->first)
			convcache_init(&c);
		else
			rec_after(&c, r->prev_n, "A", r->prev_prompt);
		fp_make(&l, r->n);
		if (r->change >= 0)
			l.v[r->change].hash ^= 1;
		memset(&t, 0, sizeof(t));
		t.fp = &l;
		t.provider = r->prov;
		t.now = T0 + r->dt;
		t.prompt_tokens = r->prompt;
		t.cached_tokens = r->cached;
		convcache_classify(&c, &t, TTL, &v);
		snprintf(what, sizeof(what), "%s (%s %s@%lld %s)", r->what,
			 v.is_break ? "break" : "warm",
			 convcache_cause_name(v.cause),
			 v.cause == CONVCACHE_PREFIX_CHANGED ? (long long)v.at :
							       -1LL,
			 v.unit);
		T_ASSERT(what,
			 v.is_break == r->is_break && v.cause == r->cause &&
				 (r->cause != CONVCACHE_PREFIX_CHANGED ||
				  (v.at == r->at &&
				   strcmp(v.unit, r->unit) == 0)));
	}
	fp_list_clear(&l);
}

/* A fixture body (tests/fixtures/agents, relative to the top of the
 * tree, where tests/run.sh runs), or NULL. */
static cJSON *
load(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long len;
	cJSON *j = NULL;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)len + 1)) != NULL &&
	    fread(buf, 1, (size_t)len, f) == (size_t)len) {
		buf[len] = '\0';
		j = cJSON_Parse(buf);
	}
	free(buf);
	fclose(f);
	return j;
}

/* Three turns of a real agent: warm turns read most of the previous
 * prompt and are never breaks; the same turns reading nothing are the
 * provider's miss, never a prefix the client changed. */
static void
test_agent(const char *agent, enum api_id api)
{
	struct fp_list l[3] = {{0}};
	struct convcache c;
	struct convcache_turn t = {0};
	struct convcache_verdict v, cold;
	char path[128], what[160];
	bool read = true, warm = true, miss = true;
	cJSON *j;
	int k;

	convcache_init(&c);
	for (k = 0; k < 3; k++) {
		snprintf(path, sizeof(path),
			 "tests/fixtures/agents/%s-turn%d.json", agent, k + 1);
		j = load(path);
		read = read && j != NULL &&
		       fp_compute(j, api, &l[k]) == ORGW_OK && l[k].n > 0;
		cJSON_Delete(j);
		if (!read)
			break;
		t.fp = &l[k];
		t.provider = "p";
		t.now = T0 + 20 * k;
		t.prompt_tokens = 9700 + 40 * k;
		t.cached_tokens = 0;
		convcache_classify(&c, &t, TTL, &cold);
		t.cached_tokens = k ? 9690 : 0;
		convcache_classify(&c, &t, TTL, &v);
		warm = warm && !v.is_break && v.prefix_same &&
		       v.common == (k ? (int64_t)l[k - 1].n : 0);
		miss = miss && (k == 0 ? !cold.is_break :
				 cold.is_break &&
					 cold.cause == CONVCACHE_PROVIDER_MISS);
		convcache_update(&c, &t, &v);
	}
	snprintf(what, sizeof(what), "%s: fixtures read", agent);
	T_ASSERT(what, read);
	snprintf(what, sizeof(what),
		 "%s turns 1-3: no break, each prompt leads with the last",
		 agent);
	T_ASSERT(what, read && warm && c.turns == 3 && c.nbreaks == 0);
	snprintf(what, sizeof(what),
		 "%s turns 2-3 reading nothing: provider_miss, not a prefix",
		 agent);
	T_ASSERT(what, read && miss);
	for (k = 0; k < 3; k++)
		fp_list_clear(&l[k]);
}

/* A conversation of 2,000 units: what the bounded summary still says. */
static void
test_long(void)
{
	static const struct {
		const char *what;
		size_t n;
		long change;
		int same;
		int64_t at;
		const char *unit;
	} cases[] = {
		{"2000 -> 2002 appended: same prefix", 2002, -1, 1, -1, ""},
		{"unit 11 changed: exact, from the head", 2002, 11, 0, 11,
		 "assistant"},
		{"unit 1990 changed: exact, from the tail", 2002, 1990, 0, 1990,
		 "user"},
		{"unit 1984 (first of the tail) changed: exact", 2002, 1984, 0,
		 1984, "user"},
		{"unit 300 changed: at or after 256", 2002, 300, 0, 256, ""},
		{"unit 40 changed: at or after 32", 2002, 40, 0, 32, ""},
		{"unit 1500 changed: at or after 1024", 2002, 1500, 0, 1024,
		 ""},
		{"cut to 1990 units: exact, the first unit missing", 1990, -1, 0,
		 1990, "user"},
		{"cut to 1500 units: at or after 1024", 1500, -1, 0, 1024, ""},
		{"cut to 20 units: exact", 20, -1, 0, 20, "user"},
	};
	struct convcache c;
	struct fp_list l = {0};
	struct convcache_turn t = {0};
	struct convcache_verdict v;
	cJSON *o;
	char *s, what[200];
	size_t i, len2000;

	rec_after(&c, 2000, "A", 100000);
	T_ASSERT("2000 units kept as a bounded summary",
		 c.prefix.n == 2000 && c.prefix.bytes == 200000);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fp_make(&l, cases[i].n);
		if (cases[i].change >= 0)
			l.v[cases[i].change].hash ^= 1;
		t.fp = &l;
		t.now = T0 + 10;
		t.provider = "A";
		t.prompt_tokens = 100000;
		convcache_classify(&c, &t, TTL, &v);
		snprintf(what, sizeof(what), "%s (same %d at %lld unit '%s')",
			 cases[i].what, v.prefix_same, (long long)v.at, v.unit);
		T_ASSERT(what, v.prefix_same == cases[i].same &&
				       v.at == cases[i].at &&
				       strcmp(v.unit, cases[i].unit) == 0);
	}
	/* The record's JSON does not grow with the conversation. */
	o = cJSON_CreateObject();
	convcache_encode(&c, o);
	s = cJSON_PrintUnformatted(o);
	len2000 = s ? strlen(s) : 0;
	cJSON_free(s);
	cJSON_Delete(o);
	rec_after(&c, 200000, "A", 100000);
	o = cJSON_CreateObject();
	convcache_encode(&c, o);
	s = cJSON_PrintUnformatted(o);
	printf("# record: %zu bytes in memory, JSON %zu bytes at 2,000 units, "
	       "%zu at 200,000\n",
	       sizeof(c), len2000, s ? strlen(s) : 0);
	T_ASSERT("JSON of 2,000 and 200,000 units: under 4 KB both",
		 len2000 > 0 && len2000 < 4096 && s != NULL &&
			 strlen(s) < 4096);
	cJSON_free(s);
	cJSON_Delete(o);
	fp_list_clear(&l);
}

static void
test_update(void)
{
	struct convcache c;
	struct fp_list l = {0};
	struct convcache_turn t = {0};
	struct convcache_verdict v;
	int k;
	bool ok = true;

	convcache_init(&c);
	fp_make(&l, 5);
	t.fp = &l;
	t.provider = "A";
	for (k = 1; k <= 12; k++) {
		t.now = T0 + 10 * k;
		t.prompt_tokens = 1000;
		/* turns 3..12 read nothing: ten breaks */
		t.cached_tokens = k <= 2 ? 900 : 0;
		t.cache_write_tokens = 10;
		t.cost = 0.01;
		t.saved = 0.002;
		convcache_classify(&c, &t, TTL, &v);
		convcache_update(&c, &t, &v);
	}
	T_ASSERT("12 turns counted, sums and times",
		 c.turns == 12 && c.first_seen == T0 + 10 &&
			 c.last_seen == T0 + 120 && c.prompt_tokens == 12000 &&
			 c.cached_tokens == 1800 && c.cache_write_tokens == 120 &&
			 c.last_prompt_tokens == 1000 && T_NEAR(c.cost, 0.12) &&
			 T_NEAR(c.saved, 0.024) &&
			 strcmp(c.provider, "A") == 0);
	T_ASSERT("ten breaks: the last 8 kept, oldest first",
		 c.breaks_total == 10 && c.nbreaks == 8);
	for (k = 0; k < 8; k++)
		ok = ok && c.breaks[k].turn == 5 + k &&
		     c.breaks[k].cause == CONVCACHE_PROVIDER_MISS &&
		     c.breaks[k].expected_tokens == 1000 &&
		     c.breaks[k].cached_tokens == 0 &&
		     c.breaks[k].idle_s == 10 && c.breaks[k].at == -1 &&
		     strcmp(c.breaks[k].provider, "A") == 0;
	T_ASSERT("each break: turn, cause, expected and cached tokens", ok);
	/* A move is recorded with where from and where to. */
	t.provider = "B";
	t.now = T0 + 1000;
	convcache_classify(&c, &t, TTL, &v);
	convcache_update(&c, &t, &v);
	T_ASSERT("a move records from and to",
		 c.breaks[7].cause == CONVCACHE_MOVED &&
			 strcmp(c.breaks[7].from, "A") == 0 &&
			 strcmp(c.breaks[7].provider, "B") == 0 &&
			 c.breaks[7].turn == 13 && c.breaks[0].turn == 6);
	fp_list_clear(&l);
}

/* Encoded, printed, parsed, decoded: the same record. */
static char *
print_rec(const struct convcache *c)
{
	cJSON *o = cJSON_CreateObject();
	char *s = NULL;

	if (o != NULL && convcache_encode(c, o))
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

static enum orgw_err
decode_text(const char *text, struct convcache *c)
{
	cJSON *o = cJSON_Parse(text);
	enum orgw_err err = convcache_decode(o, c);

	cJSON_Delete(o);
	return err;
}

static void
test_codec(void)
{
	struct convcache c, d;
	struct fp_list l = {0};
	struct convcache_turn t = {0};
	struct convcache_verdict v, w;
	char *s, *s2;

	/* A record with breaks of every cause and a 300-unit prefix. */
	rec_after(&c, 300, "A", 5000);
	fp_make(&l, 302);
	l.v[3].hash ^= 1;
	t.fp = &l;
	t.provider = "A";
	t.now = T0 + 20;
	t.prompt_tokens = 5100;
	t.cost = 0.5;
	t.saved = 0.25;
	convcache_classify(&c, &t, TTL, &v);
	convcache_update(&c, &t, &v);
	t.provider = "B";
	t.now = T0 + 40;
	convcache_classify(&c, &t, TTL, &v);
	convcache_update(&c, &t, &v);
	t.now = T0 + 1000;
	convcache_classify(&c, &t, TTL, &v);
	convcache_update(&c, &t, &v);
	T_ASSERT("codec: a record with three breaks",
		 c.nbreaks == 3 &&
			 c.breaks[0].cause == CONVCACHE_PREFIX_CHANGED &&
			 c.breaks[1].cause == CONVCACHE_MOVED &&
			 c.breaks[2].cause == CONVCACHE_EXPIRED);
	s = print_rec(&c);
	T_ASSERT("codec: decodes what it encodes",
		 s != NULL && decode_text(s, &d) == ORGW_OK);
	s2 = print_rec(&d);
	T_ASSERT("codec: and encodes it again the same",
		 s2 != NULL && strcmp(s, s2) == 0);
	T_ASSERT("codec: \"v\":1, hashes as hex, break fields",
		 s != NULL && strncmp(s, "{\"v\":1,", 7) == 0 &&
			 strstr(s, "\"cause\":\"prefix_changed\",\"at\":3,"
				   "\"unit\":\"tools\"") != NULL &&
			 strstr(s, "\"whole\":\"") != NULL);
	fp_make(&l, 304);
	l.v[3].hash ^= 1;	/* as the record's last prompt had it */
	l.v[200].hash ^= 1;
	t.now = T0 + 1010;
	convcache_classify(&c, &t, TTL, &v);
	convcache_classify(&d, &t, TTL, &w);
	T_ASSERT("codec: the decoded record classifies the same",
		 v.prefix_same == w.prefix_same && v.at == w.at &&
			 v.at == 128 && v.cause == w.cause &&
			 v.is_break == w.is_break);
	cJSON_free(s2);

	T_ASSERT("decode: not an object, another version: EINVAL, empty",
		 decode_text("[1]", &d) == ORGW_EINVAL && d.turns == 0 &&
			 decode_text("{\"v\":2,\"turns\":5}", &d) ==
				 ORGW_EINVAL &&
			 d.turns == 0 && convcache_decode(NULL, &d) ==
						 ORGW_EINVAL);
	T_ASSERT("decode: missing members read as zero",
		 decode_text("{\"v\":1}", &d) == ORGW_OK && d.turns == 0 &&
			 d.prefix.n == 0 && d.nbreaks == 0);
	T_ASSERT("decode: control characters, negatives, unknown causes",
		 decode_text("{\"v\":1,\"turns\":-4,\"provider\":\"a\\r\\nb\","
			     "\"cost\":\"x\",\"breaks\":[{\"cause\":\"odd\"},"
			     "{\"cause\":\"moved\",\"turn\":3,\"from\":\"\\u0001\"}"
			     ",7]}",
			     &d) == ORGW_OK &&
			 d.turns == 0 && d.provider[0] == '\0' && d.cost == 0 &&
			 d.nbreaks == 1 && d.breaks[0].turn == 3 &&
			 d.breaks[0].from[0] == '\0' && d.breaks[0].at == -1);
	T_ASSERT("decode: of 9 breaks the last 8",
		 decode_text("{\"v\":1,\"breaks\":[{\"cause\":\"moved\",\"turn\":1},"
			     "{\"cause\":\"moved\",\"turn\":2},{\"cause\":\"moved\","
			     "\"turn\":3},{\"cause\":\"moved\",\"turn\":4},"
			     "{\"cause\":\"moved\",\"turn\":5},{\"cause\":"
			     "\"moved\",\"turn\":6},{\"cause\":\"moved\",\"turn\":"
			     "7},{\"cause\":\"moved\",\"turn\":8},{\"cause\":"
			     "\"moved\",\"turn\":9},{\"cause\":\"bad\"}]}",
			     &d) == ORGW_OK &&
			 d.nbreaks == 8 && d.breaks[0].turn == 2 &&
			 d.breaks[7].turn == 9);
	/* A prefix that does not hold together reads as none known. */
	{
		char *bad = strdup(s), *p = strstr(bad, "\"whole\":\"");

		if (p != NULL)
			p[9] = 'g';
		T_ASSERT("decode: a bad hash drops the prefix, not the record",
			 decode_text(bad, &d) == ORGW_OK && d.prefix.n == 0 &&
				 d.turns == 4 && d.nbreaks == 3);
		free(bad);
	}
	T_ASSERT("decode: a prefix whose counts disagree reads as none",
		 decode_text("{\"v\":1,\"prefix\":{\"n\":3,\"whole\":"
			     "\"0000000000000001\",\"tail_cum\":\"0000000000000000\","
			     "\"head\":[\"0000000000000001 1 user\"],"
			     "\"cp\":[],\"tail\":[]}}",
			     &d) == ORGW_OK &&
			 d.prefix.n == 0);
	{
		static const char *const units[] = {
			"0000000000000001 7 user",	/* the good one */
			"000000000000001 7 user",	/* 15 digits */
			"000000000000000G 7 user",
			"0000000000000001 -7 user",
			"0000000000000001  user",
			"0000000000000001 7 ",
			"0000000000000001 7",
			"0000000000000001 99999999999999999999 user",
			"0000000000000001 7 this_kind_is_far_too_long_to_keep",
			"0000000000000001 7 us\\u0007er",
		};
		char text[256];
		size_t k;
		bool ok = true;

		for (k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
			snprintf(text, sizeof(text),
				 "{\"v\":1,\"prefix\":{\"n\":1,\"whole\":"
				 "\"0000000000000002\",\"tail_cum\":"
				 "\"0000000000000000\",\"head\":[\"%s\"],"
				 "\"cp\":[],\"tail\":[]}}",
				 units[k]);
			ok = ok && decode_text(text, &d) == ORGW_OK &&
			     d.prefix.n == (k == 0 ? 1 : 0) &&
			     (k != 0 || (d.prefix.head[0].hash == 1 &&
					 d.prefix.head[0].bytes == 7 &&
					 strcmp(d.prefix.head[0].kind,
						"user") == 0));
		}
		T_ASSERT("decode: a unit is \"<16 hex> <bytes> <kind>\", "
			 "else the prefix reads as none",
			 ok);
	}
	cJSON_free(s);
	fp_list_clear(&l);
}

static void
test_words(void)
{
	static const struct {
		struct convcache_break b;
		const char *want;
	} cases[] = {
		{{3, CONVCACHE_PREFIX_CHANGED, 0, "system", 0, 0, 0, "", ""},
		 "turn 3: the system prompt changed at block 0"},
		{{4, CONVCACHE_PREFIX_CHANGED, 3, "tools", 0, 0, 0, "", ""},
		 "turn 4: the tool definitions changed"},
		{{7, CONVCACHE_PREFIX_CHANGED, 9, "user", 0, 0, 0, "", ""},
		 "turn 7: the user message at unit 9 changed"},
		{{8, CONVCACHE_PREFIX_CHANGED, 12, "function_call_output", 0, 0,
		  0, "", ""},
		 "turn 8: the function_call_output item at unit 12 changed"},
		{{9, CONVCACHE_PREFIX_CHANGED, 256, "", 0, 0, 0, "", ""},
		 "turn 9: the prompt changed at or after unit 256"},
		{{5, CONVCACHE_PROVIDER_MISS, -1, "", 9000, 0, 20, "Prov A", "Prov A"},
		 "turn 5: Prov A did not read its cache"},
		{{6, CONVCACHE_MOVED, -1, "", 9000, 0, 20, "B", "A"},
		 "turn 6: moved from A to B"},
		{{4, CONVCACHE_EXPIRED, -1, "", 9000, 0, 420, "A", "A"},
		 "turn 4: resumed after 7 min, past the 5 min cache lifetime"},
		{{2, CONVCACHE_EXPIRED, -1, "", 9000, 0, 9000, "A", "A"},
		 "turn 2: resumed after 2 h, past the 5 min cache lifetime"},
	};
	char buf[160], what[256];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool ok = convcache_words(&cases[i].b, TTL, buf, sizeof(buf));

		snprintf(what, sizeof(what), "words: \"%s\"", buf);
		T_ASSERT(what, ok && strcmp(buf, cases[i].want) == 0);
	}
	T_ASSERT("words: a small buffer is cut and says so",
		 !convcache_words(&cases[0].b, TTL, buf, 12) &&
			 strlen(buf) == 11);
	T_ASSERT("words: no room at all",
		 !convcache_words(&cases[0].b, TTL, buf, 0));
	T_ASSERT("cause names",
		 strcmp(convcache_cause_name(CONVCACHE_PREFIX_CHANGED),
			"prefix_changed") == 0 &&
			 strcmp(convcache_cause_name(CONVCACHE_NONE), "") == 0 &&
			 strcmp(convcache_cause_name((enum convcache_cause)99),
				"") == 0);
}

int
main(void)
{
	test_table();
	/* Claude Code moves its cache_control marker to the newest message
	 * every turn; Codex and opencode send none. */
	test_agent("claude", API_MESSAGES);
	test_agent("codex", API_RESPONSES);
	test_agent("opencode", API_CHAT);
	test_long();
	test_update();
	test_codec();
	test_words();
	return T_REPORT();
}
