/*
 * test_teamkey.c - unit tests for teamkey.c, teamkey_codec.c and
 * teamkey_rate.c: names and globs, glob matching (case, '/' and
 * openrouter/auto), the keyed hash against RFC 4231, the plain key's
 * shape and making, the three records' round trips
 * and the damaged texts they refuse, use sums, UTC days and months at
 * their edges, the key, budget and rate checks with time injected.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "teamkey.h"

#define HASH_A "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
#define MIN_MS 60000LL
#define T0_MS (1798761600LL * 1000) /* 2027-01-01 00:00:00 UTC, a minute */

struct str_case {
	const char *in;
	bool ok;
};

/* s for a test's name: NULL as "(null)", bytes not printable as '?', so
 * every check stays one line of output. */
static const char *
shown(const char *s, char *buf, size_t n)
{
	size_t i;

	if (s == NULL)
		return "(null)";
	for (i = 0; s[i] != '\0' && i + 1 < n; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	buf[i] = '\0';
	return buf;
}

static void
test_names_globs(void)
{
	static const struct str_case names[] = {
		{"a", true},
		{"Z", true},
		{"0", true},
		{"team-a", true},
		{"ci.build_01", true},
		{"A.b-c_D9", true},
		{"0123456789012345678901234567890123456789012345678901234567890123",
		 true},
		{"01234567890123456789012345678901234567890123456789012345678901234",
		 false},
		{"", false},
		{"-a", false},
		{".a", false},
		{"_a", false},
		{"a b", false},
		{"a/b", false},
		{"a:b", false},
		{"a<b>", false},
		{"caf\xc3\xa9", false},
		{"a\n", false},
		{"a\"", false},
		{NULL, false},
	};
	static const struct str_case globs[] = {
		{"*", true},
		{"openai/*", true},
		{"deepseek/deepseek-chat-v3*", true},
		{"openrouter/auto", true},
		{"anthropic/claude-?.5-sonnet", true},
		{"[a-z]*/gpt-4o", true},
		{"x:free", true},
		{"~!@#$%^&*()_+{}|:\"<>?`-=[]\\;'./", true},
		{"", false},
		{"a,b", false},
		{"a b", false},
		{"a\tb", false},
		{"a\x7f", false},
		{"caf\xc3\xa9", false},
		{NULL, false},
	};
	char buf[200], what[300];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(what, sizeof(what), "name_ok(\"%s\") is %d",
			 shown(names[i].in, buf, sizeof(buf)), names[i].ok);
		T_ASSERT(what, teamkey_name_ok(names[i].in) == names[i].ok);
	}
	for (i = 0; i < sizeof(globs) / sizeof(globs[0]); i++) {
		snprintf(what, sizeof(what), "glob_ok(\"%s\") is %d",
			 shown(globs[i].in, buf, sizeof(buf)), globs[i].ok);
		T_ASSERT(what, teamkey_glob_ok(globs[i].in) == globs[i].ok);
	}
	memset(buf, 'g', 128);
	buf[128] = '\0';
	T_ASSERT("glob_ok: 128 characters", teamkey_glob_ok(buf));
	buf[128] = 'g';
	buf[129] = '\0';
	T_ASSERT("glob_ok: 129 characters refused", !teamkey_glob_ok(buf));
}

struct globs_case {
	const char *list;
	enum orgw_err err;
	size_t n;
	const char *first, *last;
};

static void
test_set_globs(void)
{
	static const struct globs_case cases[] = {
		{"", ORGW_OK, 0, NULL, NULL},
		{"*", ORGW_OK, 0, NULL, NULL},
		{"deepseek/*", ORGW_OK, 1, "deepseek/*", "deepseek/*"},
		{"deepseek/*,openai/gpt-4o-mini", ORGW_OK, 2, "deepseek/*",
		 "openai/gpt-4o-mini"},
		{"a,a", ORGW_OK, 2, "a", "a"},
		{"*,openai/*", ORGW_OK, 2, "*", "openai/*"},
		{"a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p", ORGW_OK, 16, "a", "p"},
		{"a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q", ORGW_EINVAL, 0, NULL,
		 NULL},
		{",", ORGW_EINVAL, 0, NULL, NULL},
		{"a,", ORGW_EINVAL, 0, NULL, NULL},
		{",a", ORGW_EINVAL, 0, NULL, NULL},
		{"a,,b", ORGW_EINVAL, 0, NULL, NULL},
		{"a, b", ORGW_EINVAL, 0, NULL, NULL},
		{" ", ORGW_EINVAL, 0, NULL, NULL},
		{"**", ORGW_OK, 1, "**", "**"},
	};
	struct teamkey k;
	char what[200], big[300];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct globs_case *c = &cases[i];
		enum orgw_err err;

		memset(&k, 0, sizeof(k));
		snprintf(k.globs[0], sizeof(k.globs[0]), "keep");
		k.n_globs = 1;
		err = teamkey_set_globs(&k, c->list);
		snprintf(what, sizeof(what), "set_globs(\"%s\"): err %d n %zu",
			 c->list, (int)c->err, c->n);
		if (c->err != ORGW_OK) {
			T_ASSERT(what, err == c->err && k.n_globs == 1 &&
					       strcmp(k.globs[0], "keep") == 0);
			continue;
		}
		T_ASSERT(what,
			 err == ORGW_OK && k.n_globs == c->n &&
				 (c->n == 0 ||
				  (strcmp(k.globs[0], c->first) == 0 &&
				   strcmp(k.globs[c->n - 1], c->last) == 0)));
	}
	T_ASSERT("set_globs(NULL) refused",
		 teamkey_set_globs(&k, NULL) == ORGW_EINVAL);
	memset(big, 'g', 129);
	big[129] = '\0';
	T_ASSERT("set_globs: a 129-character glob refused",
		 teamkey_set_globs(&k, big) == ORGW_EINVAL);
	big[128] = '\0';
	T_ASSERT("set_globs: a 128-character glob taken",
		 teamkey_set_globs(&k, big) == ORGW_OK && k.n_globs == 1 &&
			 strlen(k.globs[0]) == 128);
}

struct match_case {
	const char *globs, *model;
	bool ok;
};

static void
test_model_ok(void)
{
	static const struct match_case cases[] = {
		{"", "openai/gpt-4o", true},
		{"", "openrouter/auto", true},
		{"*", "anything/at-all", true},
		{"openai/*", "openai/gpt-4o", true},
		{"openai/*", "openai/o1/mini", true},
		{"openai/*", "openai/", true},
		{"openai/*", "openai", false},
		{"openai/*", "anthropic/claude-3.5-sonnet", false},
		{"openai/*", "xopenai/gpt-4o", false},
		{"openai*mini", "openai/gpt-4o-mini", true},
		{"*", "openrouter/auto", true},
		{"openai/*", "openrouter/auto", false},
		{"openai/*,openrouter/auto", "openrouter/auto", true},
		{"openrouter/*", "openrouter/auto", true},
		{"openai/gpt-4o", "openai/gpt-4o", true},
		{"openai/gpt-4o", "openai/gpt-4o-mini", false},
		{"openai/gpt-4o", "OpenAI/GPT-4o", true},
		{"OPENAI/*", "openai/gpt-4o", true},
		{"deepseek/*,openai/gpt-4o-mini", "openai/gpt-4o-mini", true},
		{"deepseek/*,openai/gpt-4o-mini", "deepseek/deepseek-r1", true},
		{"deepseek/*,openai/gpt-4o-mini", "openai/gpt-4o", false},
		{"*:free", "meta-llama/llama-3-8b:free", true},
		{"*:free", "meta-llama/llama-3-8b", false},
		{"anthropic/claude-?", "anthropic/claude-3", true},
		{"anthropic/claude-?", "anthropic/claude-35", false},
		{"[ab]*", "anthropic/x", true},
		{"[ab]*", "cohere/x", false},
		{"openai/*", "", false},
		{"*", "", true},
	};
	struct teamkey k;
	char what[300];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&k, 0, sizeof(k));
		if (teamkey_set_globs(&k, cases[i].globs) != ORGW_OK) {
			T_ASSERT("model_ok: globs parse", false);
			continue;
		}
		snprintf(what, sizeof(what), "model_ok([%s], \"%s\") is %d",
			 cases[i].globs, cases[i].model, cases[i].ok);
		T_ASSERT(what, teamkey_model_ok(&k, cases[i].model) ==
				       cases[i].ok);
	}
	memset(&k, 0, sizeof(k));
	T_ASSERT("model_ok: NULL model, no globs", teamkey_model_ok(&k, NULL));
	(void)teamkey_set_globs(&k, "*x");
	T_ASSERT("model_ok: NULL model, globs", !teamkey_model_ok(&k, NULL));
}

static void
test_hash(void)
{
	char hex[TEAMKEY_HASH_HEX + 1], other[TEAMKEY_HASH_HEX + 1];
	char upper[TEAMKEY_HASH_HEX + 1];
	size_t i;

	/* RFC 4231 section 4.3, test case 2 (HMAC-SHA-256). */
	T_ASSERT("hash: RFC 4231 case 2",
		 teamkey_hash("Jefe", "what do ya want for nothing?", hex) &&
			 strcmp(hex, HASH_A) == 0);
	T_ASSERT("hash: 64 lower-case hex digits", strlen(hex) == 64 &&
			 strspn(hex, "0123456789abcdef") == 64);
	T_ASSERT("hash: another secret, another hash",
		 teamkey_hash("jefe", "what do ya want for nothing?", other) &&
			 strcmp(other, hex) != 0);
	T_ASSERT("hash: another key, another hash",
		 teamkey_hash("Jefe", "what do ya want for nothing!", other) &&
			 strcmp(other, hex) != 0);
	T_ASSERT("hash: empty secret refused",
		 !teamkey_hash("", "x", other) && other[0] == '\0');
	T_ASSERT("hash: NULL secret refused", !teamkey_hash(NULL, "x", other));
	T_ASSERT("hash: NULL key refused", !teamkey_hash("s", NULL, other));
	T_ASSERT("hash: empty key hashes", teamkey_hash("s", "", other) &&
						   strlen(other) == 64);

	T_ASSERT("hash_eq: equal", teamkey_hash_eq(hex, HASH_A));
	memcpy(other, hex, sizeof(other));
	other[63] = other[63] == '3' ? '4' : '3';
	T_ASSERT("hash_eq: last digit differs", !teamkey_hash_eq(hex, other));
	memcpy(other, hex, sizeof(other));
	other[0] = 'f';
	T_ASSERT("hash_eq: first digit differs", !teamkey_hash_eq(hex, other));
	other[63] = '\0';
	memcpy(other, hex, 63);
	T_ASSERT("hash_eq: a prefix is not equal",
		 !teamkey_hash_eq(hex, other) && !teamkey_hash_eq(other, hex));
	T_ASSERT("hash_eq: NULL", !teamkey_hash_eq(hex, NULL) &&
					  !teamkey_hash_eq(NULL, hex) &&
					  !teamkey_hash_eq(NULL, NULL));
	T_ASSERT("hash_eq: empty", !teamkey_hash_eq("", ""));
	for (i = 0; i < 64; i++)
		upper[i] = hex[i] >= 'a' ? (char)(hex[i] - 32) : hex[i];
	upper[64] = '\0';
	T_ASSERT("hash_eq: case matters", !teamkey_hash_eq(hex, upper));
	T_ASSERT("hash_eq: longer is not equal",
		 !teamkey_hash_eq(hex, HASH_A "0"));
}

static void
test_plain(void)
{
	static const struct str_case shapes[] = {
		{"orgw-AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", true},
		{"orgw-__________________________________________8", true},
		{"orgw--------------------------------------------", true},
		{"orgw-AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh", false},
		{"orgw-AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8A", false},
		{"orgw-AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh=", false},
		{"orgw-AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdH+8", false},
		{"orgw-AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdH/8", false},
		{"orgw-AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdH 8", false},
		{"orgx-AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", false},
		{"ORGW-AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", false},
		{"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8AAAAA", false},
		{"sk-or-v1-0123456789abcdef0123456789abcdef0123", false},
		{"orgw-", false},
		{"", false},
		{NULL, false},
	};
	unsigned char rnd[32];
	char plain[TEAMKEY_PLAIN_MAX], what[200];
	size_t i;

	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		snprintf(what, sizeof(what), "plain_shape(\"%s\") is %d",
			 shapes[i].in ? shapes[i].in : "(null)", shapes[i].ok);
		T_ASSERT(what, teamkey_plain_shape(shapes[i].in) ==
				       shapes[i].ok);
	}
	for (i = 0; i < 32; i++)
		rnd[i] = (unsigned char)i;
	teamkey_plain_make(rnd, plain);
	T_ASSERT("plain_make: bytes 0..31",
		 strcmp(plain,
			"orgw-AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8") ==
			 0);
	memset(rnd, 0xff, sizeof(rnd));
	teamkey_plain_make(rnd, plain);
	T_ASSERT("plain_make: 0xff gives '_', no '/' or '='",
		 strcmp(plain,
			"orgw-__________________________________________8") ==
			 0);
	for (i = 0; i < 32; i++)
		rnd[i] = (unsigned char)(i % 3 == 0 ? 0xfb :
					 i % 3 == 1 ? 0xef : 0xbe);
	teamkey_plain_make(rnd, plain);
	T_ASSERT("plain_make: 0xfbefbe gives '-', no '+'",
		 strcmp(plain,
			"orgw-------------------------------------------8") ==
			 0);
	t_seed(4231);
	for (i = 0; i < 200; i++) {
		size_t j;

		for (j = 0; j < 32; j++)
			rnd[j] = (unsigned char)t_below(256);
		teamkey_plain_make(rnd, plain);
		if (strlen(plain) != 5 + 43 || !teamkey_plain_shape(plain))
			break;
	}
	T_ASSERT("plain_make: 200 random keys have the shape (5 + 43)",
		 i == 200);
}

/* A key with every member set. */
static void
full_key(struct teamkey *k)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->name, sizeof(k->name), "team-a");
	snprintf(k->hash, sizeof(k->hash), "%s", HASH_A);
	(void)teamkey_set_globs(k, "deepseek/*,openai/gpt-4o-mini");
	k->budget_day_usd = 2.5;
	k->budget_month_usd = 40.125;
	k->rpm = 60;
	k->concurrent = 4;
	k->expires = 1798761599;
	k->created = 1764547200;
	k->rotated = 1767225600;
	k->admin = true;
	k->disabled = false;
}

static bool
key_eq(const struct teamkey *a, const struct teamkey *b)
{
	size_t i;

	if (strcmp(a->name, b->name) != 0 || strcmp(a->hash, b->hash) != 0 ||
	    a->n_globs != b->n_globs ||
	    a->budget_day_usd != b->budget_day_usd ||
	    a->budget_month_usd != b->budget_month_usd || a->rpm != b->rpm ||
	    a->concurrent != b->concurrent || a->expires != b->expires ||
	    a->created != b->created || a->rotated != b->rotated ||
	    a->admin != b->admin || a->disabled != b->disabled)
		return false;
	for (i = 0; i < a->n_globs; i++)
		if (strcmp(a->globs[i], b->globs[i]) != 0)
			return false;
	return true;
}

static bool
key_zero(const struct teamkey *k)
{
	static const struct teamkey z;

	return memcmp(k, &z, sizeof(z)) == 0;
}

#define GOOD_KEY                                                           \
	"{\"v\":1,\"name\":\"team-a\",\"hash\":\"" HASH_A "\","             \
	"\"models\":[\"deepseek/*\"],\"budget_day\":1,\"budget_month\":10,"  \
	"\"rpm\":5,\"concurrent\":2,\"expires\":0,\"created\":1,"           \
	"\"rotated\":0,\"admin\":false,\"disabled\":false}"

static void
test_key_record(void)
{
	/* GOOD_KEY with one thing broken each. */
	static const char *const bad[] = {
		"",
		"{",
		"[]",
		"null",
		"\"x\"",
		GOOD_KEY "x",
		GOOD_KEY " {}",
		"{\"v\":2,\"name\":\"team-a\",\"hash\":\"" HASH_A
		"\",\"models\":[],\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"name\":\"team-a\",\"hash\":\"" HASH_A
		"\",\"models\":[],\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"-a\",\"hash\":\"" HASH_A
		"\",\"models\":[],\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\\nb\",\"hash\":\"" HASH_A
		"\",\"models\":[],\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":1,\"hash\":\"" HASH_A
		"\",\"models\":[],\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		/* The hash upper case, short, long, not hex. */
		"{\"v\":1,\"name\":\"a\",\"hash\":"
		"\"5BDCC146BF60754E6A042426089575C75A003F089D2739839DEC58B964EC3843\""
		",\"models\":[],\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\",\"hash\":\"5bdc\",\"models\":[],"
		"\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "0\",\"models\":[],"
		"\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\",\"hash\":"
		"\"zbdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843\""
		",\"models\":[],\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		/* models missing, not an array, a bad glob, 17 globs. */
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "\","
		"\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "\",\"models\":\"*\","
		"\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "\","
		"\"models\":[\"a b\"],\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "\","
		"\"models\":[\"a,b\"],\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "\","
		"\"models\":[\"\"],\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "\","
		"\"models\":[1],\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "\",\"models\":"
		"[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\","
		"\"k\",\"l\",\"m\",\"n\",\"o\",\"p\",\"q\"],"
		"\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		/* Numbers negative, a string, null, fractional, too big,
		 * missing. */
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "\",\"models\":[],"
		"\"budget_day\":-1,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "\",\"models\":[],"
		"\"budget_day\":\"1\",\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "\",\"models\":[],"
		"\"budget_day\":0,\"budget_month\":null,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "\",\"models\":[],"
		"\"budget_day\":0,\"budget_month\":1e999,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "\",\"models\":[],"
		"\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":-5,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "\",\"models\":[],"
		"\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":1.5,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "\",\"models\":[],"
		"\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":1e300,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "\",\"models\":[],"
		"\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false,\"disabled\":false}",
		/* Bools as numbers, missing. */
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "\",\"models\":[],"
		"\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":1,\"disabled\":false}",
		"{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A "\",\"models\":[],"
		"\"budget_day\":0,\"budget_month\":0,"
		"\"rpm\":0,\"concurrent\":0,\"expires\":0,\"created\":0,"
		"\"rotated\":0,\"admin\":false}",
	};
	struct teamkey k, back;
	char *s, what[100];
	size_t i;

	full_key(&k);
	s = teamkey_encode(&k);
	T_ASSERT("key: encodes", s != NULL);
	T_ASSERT("key: compact, members named",
		 s != NULL && strchr(s, ' ') == NULL && strchr(s, '\n') == NULL &&
			 strstr(s, "\"v\":1") != NULL &&
			 strstr(s, "\"name\":\"team-a\"") != NULL &&
			 strstr(s, "\"models\":[\"deepseek/*\","
				   "\"openai/gpt-4o-mini\"]") != NULL &&
			 strstr(s, "\"budget_day\":2.5") != NULL &&
			 strstr(s, "\"admin\":true") != NULL &&
			 strstr(s, "\"disabled\":false") != NULL);
	T_ASSERT("key: round trip", teamkey_decode(s, &back) == ORGW_OK &&
					    key_eq(&k, &back));
	free(s);

	memset(&k, 0, sizeof(k));
	snprintf(k.name, sizeof(k.name), "z");
	snprintf(k.hash, sizeof(k.hash), "%s", HASH_A);
	k.disabled = true;
	s = teamkey_encode(&k);
	T_ASSERT("key: every model, zeros: round trip",
		 s != NULL && strstr(s, "\"models\":[]") != NULL &&
			 teamkey_decode(s, &back) == ORGW_OK &&
			 key_eq(&k, &back) && back.n_globs == 0 &&
			 back.disabled);
	free(s);

	T_ASSERT("key: the example record decodes",
		 teamkey_decode(GOOD_KEY, &back) == ORGW_OK &&
			 strcmp(back.name, "team-a") == 0 &&
			 back.n_globs == 1 && back.rpm == 5 &&
			 back.concurrent == 2 && back.budget_month_usd == 10);
	T_ASSERT("key: unknown members are ignored",
		 teamkey_decode("{\"later\":[1,2],\"v\":1,\"name\":\"a\","
				"\"hash\":\"" HASH_A "\",\"models\":[],"
				"\"budget_day\":0,\"budget_month\":0,"
				"\"rpm\":0,\"concurrent\":0,\"expires\":0,"
				"\"created\":0,\"rotated\":0,\"admin\":false,"
				"\"disabled\":false}",
				&back) == ORGW_OK);
	T_ASSERT("key: 10^15 is the largest number",
		 teamkey_decode("{\"v\":1,\"name\":\"a\",\"hash\":\"" HASH_A
				"\",\"models\":[],\"budget_day\":0,"
				"\"budget_month\":0,\"rpm\":0,\"concurrent\":0,"
				"\"expires\":1000000000000000,\"created\":0,"
				"\"rotated\":0,\"admin\":false,"
				"\"disabled\":false}",
				&back) == ORGW_OK &&
			 back.expires == 1000000000000000LL);
	T_ASSERT("key: NULL text refused",
		 teamkey_decode(NULL, &back) == ORGW_EINVAL && key_zero(&back));

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		full_key(&back);
		snprintf(what, sizeof(what), "key: damaged text %zu refused, k zeroed",
			 i);
		T_ASSERT(what, teamkey_decode(bad[i], &back) == ORGW_EINVAL &&
				       key_zero(&back));
	}

	/* encode refuses what decode would. */
	full_key(&k);
	k.name[0] = '_';
	T_ASSERT("key encode: bad name", teamkey_encode(&k) == NULL);
	full_key(&k);
	k.hash[10] = 'G';
	T_ASSERT("key encode: bad hash", teamkey_encode(&k) == NULL);
	full_key(&k);
	k.hash[0] = '\0';
	T_ASSERT("key encode: no hash", teamkey_encode(&k) == NULL);
	full_key(&k);
	snprintf(k.globs[1], sizeof(k.globs[1]), "a b");
	T_ASSERT("key encode: bad glob", teamkey_encode(&k) == NULL);
	full_key(&k);
	k.n_globs = TEAMKEY_GLOBS_MAX + 1;
	T_ASSERT("key encode: too many globs", teamkey_encode(&k) == NULL);
	full_key(&k);
	k.budget_day_usd = NAN;
	T_ASSERT("key encode: NaN budget", teamkey_encode(&k) == NULL);
	full_key(&k);
	k.budget_month_usd = INFINITY;
	T_ASSERT("key encode: inf budget", teamkey_encode(&k) == NULL);
	full_key(&k);
	k.budget_month_usd = -0.5;
	T_ASSERT("key encode: negative budget", teamkey_encode(&k) == NULL);
	full_key(&k);
	k.rpm = -1;
	T_ASSERT("key encode: negative rpm", teamkey_encode(&k) == NULL);
	full_key(&k);
	k.created = INT64_MAX;
	T_ASSERT("key encode: a time over 10^15", teamkey_encode(&k) == NULL);
}

static void
test_use_record(void)
{
	struct ledger_cell u, back, a, b;
	char *s;
	int i;

	memset(&u, 0xff, sizeof(u));
	T_ASSERT("use: NULL decodes to zeros",
		 teamkey_use_decode(NULL, &u) == ORGW_OK &&
			 u.v[LX_REQUESTS] == 0 && u.v[LX_KEY_SPEND] == 0 &&
			 u.v[LX_LAST_USED] == 0);
	u.v[LX_REQUESTS] = 12;
	u.v[LX_PROMPT] = 34000;
	u.v[LX_CACHED] = 1200;
	u.v[LX_COMPLETION] = 560;
	u.v[LX_REASONING] = 300;
	u.v[LX_KEY_SPEND] = 0.123456789012345;
	u.v[LX_KEY_SAVED] = 0.01;
	u.v[LX_REFUSED_RPM] = 1;
	u.v[LX_REFUSED_CONCURRENT] = 2;
	u.v[LX_REFUSED_BUDGET] = 3;
	u.v[LX_REFUSED_MODEL] = 4;
	u.v[LX_LAST_USED] = 1798761599;
	s = teamkey_use_encode(&u);
	T_ASSERT("use: a ledger cell of every row",
		 s != NULL &&
			 strcmp(s, "{\"v\":1,\"r\":12,\"pt\":34000,"
				   "\"ct\":1200,\"out\":560,\"rt\":300,"
				   "\"ksp\":0.123456789012345,"
				   "\"ksv\":0.01,\"xrpm\":1,\"xconc\":2,"
				   "\"xbud\":3,\"xmod\":4,"
				   "\"lu\":1798761599}") == 0);
	T_ASSERT("use: round trip",
		 teamkey_use_decode(s, &back) == ORGW_OK &&
			 memcmp(&u, &back, sizeof(u)) == 0);
	free(s);
	T_ASSERT("use: a record of the older shape reads into the rows",
		 teamkey_use_decode(
			 "{\"v\":1,\"requests\":12,\"prompt\":34000,"
			 "\"cached\":1200,\"completion\":560,"
			 "\"spend_usd\":0.123456789012345,"
			 "\"saved_usd\":0.01,\"refused_rpm\":1,"
			 "\"refused_concurrent\":2,\"refused_budget\":3,"
			 "\"refused_model\":4,\"last_used\":1798761599}",
			 &back) == ORGW_OK &&
			 back.v[LX_REQUESTS] == 12 &&
			 back.v[LX_PROMPT] == 34000 &&
			 back.v[LX_CACHED] == 1200 &&
			 back.v[LX_COMPLETION] == 560 &&
			 back.v[LX_REASONING] == 0 &&
			 back.v[LX_KEY_SPEND] == 0.123456789012345 &&
			 back.v[LX_KEY_SAVED] == 0.01 &&
			 back.v[LX_REFUSED_RPM] == 1 &&
			 back.v[LX_REFUSED_CONCURRENT] == 2 &&
			 back.v[LX_REFUSED_BUDGET] == 3 &&
			 back.v[LX_REFUSED_MODEL] == 4 &&
			 back.v[LX_LAST_USED] == 1798761599);
	T_ASSERT("use: ...and is written back as a cell",
		 (s = teamkey_use_encode(&back)) != NULL &&
			 strstr(s, "\"requests\"") == NULL &&
			 strstr(s, "\"r\":12") != NULL);
	free(s);
	T_ASSERT("use: absent members are 0",
		 teamkey_use_decode("{\"v\":1,\"r\":3}", &back) ==
				 ORGW_OK &&
			 back.v[LX_REQUESTS] == 3 && back.v[LX_PROMPT] == 0 &&
			 back.v[LX_KEY_SPEND] == 0);
	T_ASSERT("use: rows a key does not count are left out",
		 teamkey_use_decode("{\"v\":1,\"r\":3,\"usd\":5,\"t2\":1,"
				    "\"sp\":\"x\"}",
				    &back) == ORGW_OK &&
			 back.v[LX_REQUESTS] == 3 && back.v[LX_COST] == 0 &&
			 back.v[LX_SPEND] == 0 && back.ttfb[2] == 0);
	T_ASSERT("use: damaged: not JSON",
		 teamkey_use_decode("{\"v\":1,", &back) == ORGW_EINVAL &&
			 back.v[LX_REQUESTS] == 0);
	T_ASSERT("use: damaged: empty",
		 teamkey_use_decode("", &back) == ORGW_EINVAL);
	T_ASSERT("use: damaged: no v",
		 teamkey_use_decode("{\"r\":3}", &back) == ORGW_EINVAL &&
			 back.v[LX_REQUESTS] == 0);
	T_ASSERT("use: damaged: negative",
		 teamkey_use_decode("{\"v\":1,\"r\":3,\"pt\":-1}",
				    &back) == ORGW_EINVAL &&
			 back.v[LX_REQUESTS] == 0);
	T_ASSERT("use: damaged: negative, in the older shape",
		 teamkey_use_decode("{\"v\":1,\"requests\":3,"
				    "\"prompt\":-1}",
				    &back) == ORGW_EINVAL);
	T_ASSERT("use: damaged: string spend",
		 teamkey_use_decode("{\"v\":1,\"ksp\":\"1\"}", &back) ==
			 ORGW_EINVAL);
	T_ASSERT("use: damaged: string spend, in the older shape",
		 teamkey_use_decode("{\"v\":1,\"spend_usd\":\"1\"}",
				    &back) == ORGW_EINVAL);
	T_ASSERT("use: damaged: inf spend",
		 teamkey_use_decode("{\"v\":1,\"ksp\":1e999}", &back) ==
			 ORGW_EINVAL);
	T_ASSERT("use: damaged: fractional count",
		 teamkey_use_decode("{\"v\":1,\"ct\":0.5}", &back) ==
			 ORGW_EINVAL);
	T_ASSERT("use: damaged: fractional count, in the older shape",
		 teamkey_use_decode("{\"v\":1,\"cached\":0.5}", &back) ==
			 ORGW_EINVAL);
	T_ASSERT("use: damaged: trailing text",
		 teamkey_use_decode("{\"v\":1} x", &back) == ORGW_EINVAL);
	T_ASSERT("use: damaged: an array",
		 teamkey_use_decode("[1]", &back) == ORGW_EINVAL);
	back = u;
	back.v[LX_KEY_SPEND] = NAN;
	T_ASSERT("use encode: NaN spend refused",
		 teamkey_use_encode(&back) == NULL);
	back = u;
	back.v[LX_KEY_SAVED] = -1;
	T_ASSERT("use encode: negative saved refused",
		 teamkey_use_encode(&back) == NULL);
	back = u;
	back.v[LX_KEY_SPEND] = 1.7976931348623157e308;
	T_ASSERT("use encode: a spend over 10^15 refused",
		 teamkey_use_encode(&back) == NULL);
	T_ASSERT("use: damaged: a count over 10^15",
		 teamkey_use_decode("{\"v\":1,\"pt\":1000000000000001}",
				    &back) == ORGW_EINVAL);
	T_ASSERT("use: 10^15 dollars decode",
		 teamkey_use_decode("{\"v\":1,\"ksp\":1e15}", &back) ==
				 ORGW_OK &&
			 back.v[LX_KEY_SPEND] == 1e15);
	back = u;
	back.v[LX_COMPLETION] = -1;
	T_ASSERT("use encode: negative count refused",
		 teamkey_use_encode(&back) == NULL);
	back = u;
	back.v[LX_COMPLETION] = 0.5;
	T_ASSERT("use encode: fractional count refused",
		 teamkey_use_encode(&back) == NULL);
	back = u;
	back.v[LX_COST] = 1;
	T_ASSERT("use encode: a row a key does not count refused",
		 teamkey_use_encode(&back) == NULL);
	back = u;
	back.dur[3] = 1;
	T_ASSERT("use encode: a histogram slot refused",
		 teamkey_use_encode(&back) == NULL);

	memset(&a, 0, sizeof(a));
	a.v[LX_REQUESTS] = 1;
	a.v[LX_PROMPT] = 100;
	a.v[LX_REASONING] = 5;
	a.v[LX_KEY_SPEND] = 0.5;
	a.v[LX_REFUSED_BUDGET] = 1;
	a.v[LX_LAST_USED] = 2000;
	b = u;
	teamkey_use_add(&b, &a);
	T_ASSERT("use add: counters sum",
		 b.v[LX_REQUESTS] == 13 && b.v[LX_PROMPT] == 34100 &&
			 b.v[LX_CACHED] == 1200 && b.v[LX_REASONING] == 305 &&
			 b.v[LX_REFUSED_BUDGET] == 4 &&
			 b.v[LX_REFUSED_MODEL] == 4 &&
			 T_NEAR(b.v[LX_KEY_SPEND], u.v[LX_KEY_SPEND] + 0.5) &&
			 b.v[LX_KEY_SAVED] == 0.01);
	T_ASSERT("use add: last_used keeps the later",
		 b.v[LX_LAST_USED] == 1798761599);
	teamkey_use_add(&a, &u);
	T_ASSERT("use add: last_used takes the later",
		 a.v[LX_LAST_USED] == 1798761599 && a.v[LX_REQUESTS] == 13);
	memset(&a, 0, sizeof(a));
	a.v[LX_PROMPT] = 9e18;
	a.v[LX_KEY_SPEND] = 1e300;
	b = a;
	teamkey_use_add(&a, &b);
	s = teamkey_use_encode(&a);
	T_ASSERT("use add: saturates and still encodes",
		 a.v[LX_PROMPT] == 1e15 && a.v[LX_KEY_SPEND] == 1e15 &&
			 s != NULL);
	free(s);
	for (i = 0; i < LX_N; i++)
		if (ledger_fields[i].team != NULL)
			T_ASSERT("use: a row with a team name is a key's",
				 ledger_key_row(i));
}

struct date_case {
	int64_t t;
	const char *day, *month;
};

static void
test_dates(void)
{
	static const struct date_case cases[] = {
		{0, "1970-01-01", "1970-01"},
		{86399, "1970-01-01", "1970-01"},
		{86400, "1970-01-02", "1970-01"},
		{951782400, "2000-02-29", "2000-02"},
		{951868799, "2000-02-29", "2000-02"},
		{951868800, "2000-03-01", "2000-03"},
		{1709164800, "2024-02-29", "2024-02"},
		{1767225599, "2025-12-31", "2025-12"},
		{1767225600, "2026-01-01", "2026-01"},
		{1798761599, "2026-12-31", "2026-12"},
		{1798761600, "2027-01-01", "2027-01"},
	};
	char day[11], month[8], what[100];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		teamkey_day(cases[i].t, day);
		teamkey_month(cases[i].t, month);
		snprintf(what, sizeof(what), "day/month of %lld: %s, %s",
			 (long long)cases[i].t, cases[i].day, cases[i].month);
		T_ASSERT(what, strcmp(day, cases[i].day) == 0 &&
				       strcmp(month, cases[i].month) == 0);
	}
}

static void
test_check_key(void)
{
	static const char *const ok2[] = {"deepseek/deepseek-r1",
					  "openai/gpt-4o-mini"};
	static const char *const bad2[] = {"deepseek/deepseek-r1",
					   "openai/gpt-4o"};
	struct teamkey k;

	full_key(&k);
	T_ASSERT("check_key: ok",
		 teamkey_check_key(&k, 1798761598, "deepseek/deepseek-chat",
				   NULL, 0) == TK_OK);
	T_ASSERT("check_key: expires at its second",
		 teamkey_check_key(&k, 1798761599, "deepseek/x", NULL, 0) ==
			 TK_UNKNOWN);
	T_ASSERT("check_key: expired, model unknown too: TK_UNKNOWN first",
		 teamkey_check_key(&k, 1798761600, "x/y", NULL, 0) ==
			 TK_UNKNOWN);
	k.expires = 0;
	T_ASSERT("check_key: expires 0 is never",
		 teamkey_check_key(&k, INT64_MAX, "deepseek/x", NULL, 0) ==
			 TK_OK);
	k.disabled = true;
	T_ASSERT("check_key: disabled",
		 teamkey_check_key(&k, 0, "deepseek/x", NULL, 0) == TK_UNKNOWN);
	k.disabled = false;
	T_ASSERT("check_key: model outside the globs",
		 teamkey_check_key(&k, 0, "openai/gpt-4o", NULL, 0) ==
			 TK_MODEL);
	T_ASSERT("check_key: openrouter/auto outside the globs",
		 teamkey_check_key(&k, 0, "openrouter/auto", NULL, 0) ==
			 TK_MODEL);
	T_ASSERT("check_key: model NULL is not checked",
		 teamkey_check_key(&k, 0, NULL, NULL, 0) == TK_OK);
	T_ASSERT("check_key: models all inside",
		 teamkey_check_key(&k, 0, NULL, ok2, 2) == TK_OK);
	T_ASSERT("check_key: one of the models outside",
		 teamkey_check_key(&k, 0, NULL, bad2, 2) == TK_MODEL);
	T_ASSERT("check_key: model inside, models not",
		 teamkey_check_key(&k, 0, "deepseek/x", bad2, 2) == TK_MODEL);
	T_ASSERT("check_key: model outside, models inside",
		 teamkey_check_key(&k, 0, "x/y", ok2, 2) == TK_MODEL);
	T_ASSERT("check_key: only the first n models",
		 teamkey_check_key(&k, 0, NULL, bad2, 1) == TK_OK);
	k.n_globs = 0;
	T_ASSERT("check_key: no globs, every model",
		 teamkey_check_key(&k, 0, "openrouter/auto", bad2, 2) == TK_OK);
	T_ASSERT("verdict names",
		 strcmp(teamkey_verdict_name(TK_OK), "ok") == 0 &&
			 strcmp(teamkey_verdict_name(TK_UNKNOWN), "unknown") ==
				 0 &&
			 strcmp(teamkey_verdict_name(TK_MODEL), "model") == 0 &&
			 strcmp(teamkey_verdict_name(TK_BUDGET), "budget") ==
				 0 &&
			 strcmp(teamkey_verdict_name(TK_RPM), "rpm") == 0 &&
			 strcmp(teamkey_verdict_name(TK_CONCURRENT),
				"concurrent") == 0);
}

struct budget_case {
	double bday, bmonth, day, month;
	bool day_null, month_null;
	enum teamkey_verdict v;
	const char *what;
};

/* A lease id from fixed bytes, which an admission takes. */
static void
test_lease_make(void)
{
	static const unsigned char b[16] = {0x00, 0x01, 0x7f, 0x80, 0xab,
					    0xcd, 0xef, 0xff, 0x10, 0x20,
					    0x30, 0x40, 0x50, 0x60, 0x70,
					    0x9a};
	struct teamkey_rate *r = calloc(1, sizeof(*r));
	struct teamkey k;
	char id[TEAMKEY_LEASE_ID_MAX + 1];

	memset(&k, 0, sizeof(k));
	k.concurrent = 1;
	teamkey_lease_make(b, id);
	T_ASSERT("lease: 32 lower-case hex digits",
		 strcmp(id, "00017f80abcdefff102030405060709a") == 0);
	T_ASSERT("lease: admitted with it, and released",
		 r != NULL &&
			 teamkey_rate_admit(&k, r, 1000, id, 60000, NULL) ==
				 TK_OK &&
			 teamkey_rate_release(r, id));
	free(r);
}

/* The state the operator sees, the same rule the checks let in by. */
static void
test_state(void)
{
	struct teamkey k;

	memset(&k, 0, sizeof(k));
	T_ASSERT("state: active", strcmp(teamkey_state(&k, 100), "active") == 0);
	k.expires = 100;
	T_ASSERT("state: expired at its second",
		 strcmp(teamkey_state(&k, 100), "expired") == 0 &&
			 strcmp(teamkey_state(&k, 99), "active") == 0);
	k.disabled = true;
	T_ASSERT("state: disabled first",
		 strcmp(teamkey_state(&k, 100), "disabled") == 0);
}

static void
test_check_budget(void)
{
	static const struct budget_case cases[] = {
		{0, 0, 1e9, 1e9, false, false, TK_OK, "no budgets"},
		{1, 0, 0.99, 1e9, false, false, TK_OK, "day under"},
		{1, 0, 1, 0, false, false, TK_BUDGET, "day reached"},
		{1, 0, 1.01, 0, false, false, TK_BUDGET, "day over"},
		{0, 10, 1e9, 9.99, false, false, TK_OK, "month under"},
		{0, 10, 0, 10, false, false, TK_BUDGET, "month reached"},
		{1, 10, 0.5, 10.5, false, false, TK_BUDGET, "month over, day under"},
		{1, 10, 1.5, 5, false, false, TK_BUDGET, "day over, month under"},
		{1, 10, 0, 0, true, true, TK_OK, "NULL use is none"},
		{1, 10, 0, 11, true, false, TK_BUDGET, "day NULL, month over"},
		{1, 10, 2, 0, false, true, TK_BUDGET, "month NULL, day over"},
		{1, 0, NAN, 0, false, false, TK_BUDGET, "NaN day spend"},
		{0, 1, 0, NAN, false, false, TK_BUDGET, "NaN month spend"},
		{1, 0, INFINITY, 0, false, false, TK_BUDGET, "inf spend"},
		{0, 0, NAN, NAN, false, false, TK_OK, "NaN spend, no budget"},
		{0.000001, 0, 0, 0, false, false, TK_OK, "tiny budget, nothing spent"},
	};
	struct ledger_cell d, m;
	struct teamkey k;
	char what[100];
	size_t i;

	full_key(&k);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct budget_case *c = &cases[i];

		k.budget_day_usd = c->bday;
		k.budget_month_usd = c->bmonth;
		memset(&d, 0, sizeof(d));
		memset(&m, 0, sizeof(m));
		d.v[LX_KEY_SPEND] = c->day;
		m.v[LX_KEY_SPEND] = c->month;
		snprintf(what, sizeof(what), "check_budget: %s", c->what);
		T_ASSERT(what, teamkey_check_budget(&k, c->day_null ? NULL : &d,
						    c->month_null ? NULL : &m) ==
				       c->v);
	}
}

static void
test_rate_record(void)
{
	static const char *const bad[] = {
		"",
		"{}",
		"{\"v\":1,\"slot\":-1}",
		"{\"v\":1,\"window\":3}",
		"{\"v\":1,\"window\":[1,2]}",
		"{\"v\":1,\"window\":[0,0,0,0,0,0,0,0,0,0,0,0,-1]}",
		"{\"v\":1,\"window\":[0,0,0,0,0,0,0,0,0,0,0,0,0.5]}",
		"{\"v\":1,\"window\":[0,0,0,0,0,0,0,0,0,0,0,0,\"1\"]}",
		"{\"v\":1,\"window\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0]}",
		"{\"v\":1,\"leases\":{}}",
		"{\"v\":1,\"leases\":[1]}",
		"{\"v\":1,\"leases\":[{\"id\":\"ab\"}]}",
		"{\"v\":1,\"leases\":[{\"until_ms\":5}]}",
		"{\"v\":1,\"leases\":[{\"id\":\"\",\"until_ms\":5}]}",
		"{\"v\":1,\"leases\":[{\"id\":\"xyz\",\"until_ms\":5}]}",
		"{\"v\":1,\"leases\":[{\"id\":\"a b\",\"until_ms\":5}]}",
		"{\"v\":1,\"leases\":[{\"id\":"
		"\"0123456789abcdef0123456789abcdef0\",\"until_ms\":5}]}",
		"{\"v\":1,\"leases\":[{\"id\":\"ab\",\"until_ms\":-5}]}",
		"{\"v\":1,\"leases\":[{\"id\":\"ab\",\"until_ms\":5.5}]}",
	};
	struct teamkey_rate *r = calloc(1, sizeof(*r));
	struct teamkey_rate *back = calloc(1, sizeof(*back));
	char *s, *big, what[100];
	size_t i, at, cap;

	if (r == NULL || back == NULL) {
		T_ASSERT("rate: memory", false);
		goto out;
	}
	r->slot = T0_MS / TEAMKEY_RPM_SLOT_MS;
	r->slots[0] = 7;
	r->slots[12] = 2;
	snprintf(r->leases[0].id, sizeof(r->leases[0].id), "0a1b");
	r->leases[0].until_ms = T0_MS + 1000;
	snprintf(r->leases[1].id, sizeof(r->leases[1].id),
		 "0123456789abcdef0123456789ABCDEF");
	r->leases[1].until_ms = T0_MS + 2000;
	r->n_leases = 2;
	s = teamkey_rate_encode(r);
	T_ASSERT("rate: encodes",
		 s != NULL && strstr(s, "\"leases\":[{\"id\":\"0a1b\","
					"\"until_ms\":1798761601000}") != NULL);
	T_ASSERT("rate: round trip",
		 teamkey_rate_decode(s, back) == ORGW_OK &&
			 back->slot == r->slot && back->slots[0] == 7 &&
			 back->slots[12] == 2 &&
			 back->n_leases == 2 &&
			 strcmp(back->leases[1].id, r->leases[1].id) == 0 &&
			 back->leases[1].until_ms == T0_MS + 2000);
	free(s);
	T_ASSERT("rate: absent members are 0",
		 teamkey_rate_decode("{\"v\":1}", back) == ORGW_OK &&
			 teamkey_rate_count(back, T0_MS) == 0 &&
			 back->n_leases == 0);
	T_ASSERT("rate: a fixed minute's record (older) reads as an empty "
		 "window",
		 teamkey_rate_decode("{\"v\":1,\"minute\":29979360,"
				     "\"count\":3}",
				     back) == ORGW_OK &&
			 teamkey_rate_count(back, T0_MS) == 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		back->slots[0] = 9;
		back->n_leases = 1;
		snprintf(what, sizeof(what), "rate: damaged text %zu refused",
			 i);
		T_ASSERT(what, teamkey_rate_decode(bad[i], back) ==
					       ORGW_EINVAL &&
				       back->slots[0] == 0 &&
				       back->n_leases == 0);
	}

	/* TEAMKEY_LEASES_MAX leases decode; one more is refused. */
	cap = 64 + (TEAMKEY_LEASES_MAX + 1) * 40;
	if ((big = malloc(cap)) == NULL) {
		T_ASSERT("rate: memory", false);
		goto out;
	}
	at = (size_t)snprintf(big, cap, "{\"v\":1,\"leases\":[");
	for (i = 0; i < TEAMKEY_LEASES_MAX; i++)
		at += (size_t)snprintf(big + at, cap - at,
				       "%s{\"id\":\"%zx\",\"until_ms\":1}",
				       i ? "," : "", i + 1);
	snprintf(big + at, cap - at, "]}");
	T_ASSERT("rate: TEAMKEY_LEASES_MAX leases decode",
		 teamkey_rate_decode(big, back) == ORGW_OK &&
			 back->n_leases == TEAMKEY_LEASES_MAX);
	s = teamkey_rate_encode(back);
	T_ASSERT("rate: a full table encodes", s != NULL);
	free(s);
	snprintf(big + at, cap - at, ",{\"id\":\"ff\",\"until_ms\":1}]}");
	T_ASSERT("rate: one lease more is refused",
		 teamkey_rate_decode(big, back) == ORGW_EINVAL &&
			 back->n_leases == 0);
	free(big);

	r->n_leases = TEAMKEY_LEASES_MAX + 1;
	T_ASSERT("rate encode: too many leases",
		 teamkey_rate_encode(r) == NULL);
	r->n_leases = 2;
	r->leases[0].id[0] = 'x';
	T_ASSERT("rate encode: bad lease id", teamkey_rate_encode(r) == NULL);
	r->leases[0].id[0] = '\0';
	T_ASSERT("rate encode: empty lease id", teamkey_rate_encode(r) == NULL);
	snprintf(r->leases[0].id, sizeof(r->leases[0].id), "ab");
	r->slots[3] = -1;
	T_ASSERT("rate encode: negative count", teamkey_rate_encode(r) == NULL);
out:
	free(r);
	free(back);
}

static void
test_rate_rpm(void)
{
	struct teamkey_rate *r = calloc(1, sizeof(*r));
	struct teamkey k;
	int64_t ra = -1, t, in_60s;
	int i, admitted = 0;

	if (r == NULL) {
		T_ASSERT("rpm: memory", false);
		return;
	}
	full_key(&k);
	k.rpm = 3;
	k.concurrent = 0;
	for (i = 0; i < 5; i++)
		if (teamkey_rate_admit(&k, r, T0_MS + 1000 * i, NULL, 0, &ra) ==
		    TK_OK)
			admitted++;
	T_ASSERT("rpm: 3 of 5 admitted in 4 s",
		 admitted == 3 && teamkey_rate_count(r, T0_MS + 4000) == 3 &&
			 r->n_leases == 0);
	T_ASSERT("rpm: retry when their slot (0:00-0:05) leaves the window "
		 "(at 1:05: 61 s at 0:04)",
		 ra == 61);
	T_ASSERT("rpm: across the minute's end it still slides: refused at "
		 "1:00.001",
		 teamkey_rate_admit(&k, r, T0_MS + MIN_MS + 1, NULL, 0, &ra) ==
				 TK_RPM &&
			 ra == 5);
	T_ASSERT("rpm: refused at 1:04.999, retry at least 1",
		 teamkey_rate_admit(&k, r, T0_MS + 64999, NULL, 0, &ra) ==
				 TK_RPM &&
			 ra == 1);
	T_ASSERT("rpm: a refusal counts nothing",
		 teamkey_rate_count(r, T0_MS + 64999) == 3);
	T_ASSERT("rpm: retry_after_s may be NULL",
		 teamkey_rate_admit(&k, r, T0_MS + 30000, NULL, 0, NULL) ==
			 TK_RPM);
	T_ASSERT("rpm: once their slot left the window (1:05), admitted",
		 teamkey_rate_admit(&k, r, T0_MS + 65000, NULL, 0, &ra) ==
				 TK_OK &&
			 teamkey_rate_count(r, T0_MS + 65000) == 1 && ra == 0);
	T_ASSERT("rpm: a window much later is empty",
		 teamkey_rate_admit(&k, r, T0_MS + 90 * MIN_MS + 5, NULL, 0,
				    &ra) == TK_OK &&
			 teamkey_rate_count(r, T0_MS + 90 * MIN_MS + 5) == 1);

	/* A request every 250 ms for 5 minutes on an rpm-5 key: no 60 s
	 * ever hold more than 5 admitted, minute boundaries included, and
	 * the key still gets its 5 a minute (the window is at most 65 s). */
	{
		int64_t at[200];
		int n = 0, j, worst = 0;

		memset(r, 0, sizeof(*r));
		k.rpm = 5;
		for (t = T0_MS - 30000; t < T0_MS + 270000; t += 250)
			if (teamkey_rate_admit(&k, r, t, NULL, 0, NULL) ==
				    TK_OK &&
			    n < 200)
				at[n++] = t;
		for (i = 0; i < n; i++) {
			for (j = i, in_60s = 0; j < n && at[j] < at[i] + MIN_MS;
			     j++)
				in_60s++;
			if (in_60s > worst)
				worst = (int)in_60s;
		}
		T_ASSERT("rpm: sliding: at most 5 in any 60 s", worst == 5);
		T_ASSERT("rpm: ...and at least 5 every 65 s (23 in 300 s)",
			 n >= 5 * 300 / 65);
	}
	k.rpm = 0;
	for (i = 0, admitted = 0; i < 1000; i++)
		if (teamkey_rate_admit(&k, r, T0_MS + 90 * MIN_MS + i, NULL, 0,
				       NULL) == TK_OK)
			admitted++;
	T_ASSERT("rpm: 0 is none", admitted == 1000);
	free(r);
}

static void
test_rate_concurrent(void)
{
	struct teamkey_rate *r = calloc(1, sizeof(*r));
	struct teamkey k;
	char id[33];
	int64_t ra = -1;
	size_t i;

	if (r == NULL) {
		T_ASSERT("concurrent: memory", false);
		return;
	}
	full_key(&k);
	k.rpm = 0;
	k.concurrent = 2;
	T_ASSERT("concurrent: first lease",
		 teamkey_rate_admit(&k, r, T0_MS, "a1", 30000, &ra) == TK_OK &&
			 r->n_leases == 1 && strcmp(r->leases[0].id, "a1") == 0 &&
			 r->leases[0].until_ms == T0_MS + 30000 && ra == 0);
	T_ASSERT("concurrent: second lease",
		 teamkey_rate_admit(&k, r, T0_MS + 10000, "b2", 30000, &ra) ==
				 TK_OK &&
			 r->n_leases == 2);
	T_ASSERT("concurrent: third refused, retry when a1 ends (20 s)",
		 teamkey_rate_admit(&k, r, T0_MS + 10000, "c3", 30000, &ra) ==
				 TK_CONCURRENT &&
			 ra == 20 && r->n_leases == 2 &&
			 teamkey_rate_count(r, T0_MS + 10000) == 2);
	T_ASSERT("concurrent: retry rounds up (29.5 s left -> 20 at 10.5 s)",
		 teamkey_rate_admit(&k, r, T0_MS + 10500, "c3", 30000, &ra) ==
				 TK_CONCURRENT &&
			 ra == 20);
	T_ASSERT("concurrent: retry at least 1",
		 teamkey_rate_admit(&k, r, T0_MS + 29999, "c3", 30000, &ra) ==
				 TK_CONCURRENT &&
			 ra == 1);
	T_ASSERT("concurrent: a1 expired at its until_ms, c3 admitted",
		 teamkey_rate_admit(&k, r, T0_MS + 30000, "c3", 30000, &ra) ==
				 TK_OK &&
			 r->n_leases == 2 && strcmp(r->leases[0].id, "b2") == 0 &&
			 strcmp(r->leases[1].id, "c3") == 0);
	T_ASSERT("concurrent: release b2",
		 teamkey_rate_release(r, "b2") && r->n_leases == 1 &&
			 strcmp(r->leases[0].id, "c3") == 0);
	T_ASSERT("concurrent: release b2 again is false",
		 !teamkey_rate_release(r, "b2") && r->n_leases == 1);
	T_ASSERT("concurrent: release of an unknown id is false",
		 !teamkey_rate_release(r, "dead") &&
			 !teamkey_rate_release(r, NULL) &&
			 !teamkey_rate_release(r, "") && r->n_leases == 1);
	T_ASSERT("concurrent: a bad lease id is refused",
		 teamkey_rate_admit(&k, r, T0_MS + 30001, "not-hex", 30000,
				    &ra) == TK_CONCURRENT &&
			 r->n_leases == 1);
	T_ASSERT("concurrent: a NULL lease id is refused",
		 teamkey_rate_admit(&k, r, T0_MS + 30001, NULL, 30000, &ra) ==
			 TK_CONCURRENT);
	T_ASSERT("concurrent: a 33-digit lease id is refused",
		 teamkey_rate_admit(&k, r, T0_MS + 30001,
				    "0123456789abcdef0123456789abcdef0", 30000,
				    &ra) == TK_CONCURRENT);
	T_ASSERT("concurrent: release c3, table empty",
		 teamkey_rate_release(r, "c3") && r->n_leases == 0);
	T_ASSERT("concurrent: a bad id with no lease held: retry 1",
		 teamkey_rate_admit(&k, r, T0_MS + 30001, "zz", 30000, &ra) ==
				 TK_CONCURRENT &&
			 ra == 1);
	T_ASSERT("concurrent: a long lease: retry clamped to 60",
		 teamkey_rate_admit(&k, r, T0_MS + 40000, "d4", 3600000,
				    &ra) == TK_OK &&
			 teamkey_rate_admit(&k, r, T0_MS + 40000, "e5", 3600000,
					    &ra) == TK_OK &&
			 teamkey_rate_admit(&k, r, T0_MS + 40000, "f6", 3600000,
					    &ra) == TK_CONCURRENT &&
			 ra == 60);
	T_ASSERT("concurrent: every lease expired at once",
		 teamkey_rate_admit(&k, r, T0_MS + 40000 + 3600000, "f6", 1000,
				    &ra) == TK_OK &&
			 r->n_leases == 1);
	T_ASSERT("concurrent: a lease of 0 ms still holds 1 ms",
		 teamkey_rate_release(r, "f6") &&
			 teamkey_rate_admit(&k, r, T0_MS + 5000000, "a", 0,
					    &ra) == TK_OK &&
			 r->leases[0].until_ms == T0_MS + 5000001);
	(void)teamkey_rate_release(r, "a");

	/* rpm is checked before concurrency. */
	k.rpm = 1;
	memset(r, 0, sizeof(*r));
	(void)teamkey_rate_admit(&k, r, T0_MS, "a", 30000, &ra);
	T_ASSERT("concurrent: rpm first",
		 teamkey_rate_admit(&k, r, T0_MS + 1000, "b", 30000, &ra) ==
				 TK_RPM &&
			 ra == 64);

	/* A full table refuses, whatever the limit. */
	k.rpm = 0;
	k.concurrent = 100000;
	memset(r, 0, sizeof(*r));
	for (i = 0; i < TEAMKEY_LEASES_MAX; i++) {
		snprintf(id, sizeof(id), "%zx", i + 1);
		if (teamkey_rate_admit(&k, r, T0_MS, id, 45000, NULL) != TK_OK)
			break;
	}
	T_ASSERT("concurrent: TEAMKEY_LEASES_MAX leases admitted",
		 i == TEAMKEY_LEASES_MAX && r->n_leases == TEAMKEY_LEASES_MAX);
	T_ASSERT("concurrent: a full table refuses, retry 45",
		 teamkey_rate_admit(&k, r, T0_MS, "ffff", 45000, &ra) ==
				 TK_CONCURRENT &&
			 ra == 45 && r->n_leases == TEAMKEY_LEASES_MAX);
	T_ASSERT("concurrent: release from the middle keeps order",
		 teamkey_rate_release(r, "80") &&
			 r->n_leases == TEAMKEY_LEASES_MAX - 1 &&
			 strcmp(r->leases[127].id, "81") == 0 &&
			 strcmp(r->leases[TEAMKEY_LEASES_MAX - 2].id, "100") ==
				 0);
	T_ASSERT("concurrent: a place again",
		 teamkey_rate_admit(&k, r, T0_MS, "ffff", 45000, &ra) == TK_OK);

	/* No limit: no lease is taken, any id does. */
	k.concurrent = 0;
	memset(r, 0, sizeof(*r));
	T_ASSERT("concurrent: 0 is none, no lease kept",
		 teamkey_rate_admit(&k, r, T0_MS, NULL, 30000, &ra) == TK_OK &&
			 teamkey_rate_admit(&k, r, T0_MS, "bad id", 30000,
					    &ra) == TK_OK &&
			 r->n_leases == 0 &&
			 teamkey_rate_count(r, T0_MS) == 2);
	free(r);
}

/* The spend mirror: windows that roll over, the larger figure read. */
/* The lease of pid 2 is gone (a fake worker table). */
static bool
pid2_gone(void *arg, const struct teamkey_lease *l)
{
	(*(int *)arg)++;
	return l->pid == 2;
}

/*
 * A lease names its worker (host, pid, start): kept by the codec (and
 * left out when unknown), set on the last lease of an id, and a lease
 * whose worker is gone is dropped, so a key at its limit is admitted
 * again at once.
 */
static void
test_rate_owner(void)
{
	struct teamkey_rate *r = calloc(1, sizeof(*r));
	struct teamkey_rate *back = calloc(1, sizeof(*back));
	struct teamkey k;
	char *text = NULL;
	int asked = 0;

	if (r == NULL || back == NULL) {
		T_ASSERT("owner: memory", false);
		goto out;
	}
	full_key(&k);
	k.rpm = 0;
	k.concurrent = 2;
	T_ASSERT("owner: two leases, each owned by its worker",
		 teamkey_rate_admit(&k, r, T0_MS, "a1", 600000, NULL) ==
				 TK_OK &&
			 teamkey_rate_own(r, "a1", 77, 1, 1000) &&
			 teamkey_rate_admit(&k, r, T0_MS, "b2", 600000, NULL) ==
				 TK_OK &&
			 teamkey_rate_own(r, "b2", 77, 2, 2000) &&
			 r->leases[1].host == 77 && r->leases[1].pid == 2 &&
			 r->leases[1].start == 2000 && r->leases[0].pid == 1);
	T_ASSERT("owner: an id not held, or a number out of range, sets "
		 "nothing",
		 !teamkey_rate_own(r, "c3", 77, 3, 1) &&
			 !teamkey_rate_own(r, "a1", -1, 3, 1) &&
			 !teamkey_rate_own(r, NULL, 77, 3, 1) &&
			 r->leases[0].pid == 1);
	text = teamkey_rate_encode(r);
	T_ASSERT("owner: the codec keeps it",
		 text != NULL && strstr(text, "\"host\":77") != NULL &&
			 teamkey_rate_decode(text, back) == ORGW_OK &&
			 back->n_leases == 2 && back->leases[1].host == 77 &&
			 back->leases[1].pid == 2 &&
			 back->leases[1].start == 2000);
	free(text);
	T_ASSERT("owner: a record without owners (older) decodes, host 0",
		 teamkey_rate_decode("{\"v\":1,\"leases\":[{\"id\":\"ab\","
				     "\"until_ms\":5}]}",
				     back) == ORGW_OK &&
			 back->n_leases == 1 && back->leases[0].host == 0);
	T_ASSERT("owner: a negative pid is refused",
		 teamkey_rate_decode("{\"v\":1,\"leases\":[{\"id\":\"ab\","
				     "\"until_ms\":5,\"host\":1,\"pid\":-2,"
				     "\"start\":1}]}",
				     back) == ORGW_EINVAL);
	T_ASSERT("owner: at its limit, the key is refused",
		 teamkey_rate_admit(&k, r, T0_MS + 1, "c3", 600000, NULL) ==
			 TK_CONCURRENT);
	T_ASSERT("owner: the lease of the worker gone is dropped, the other "
		 "kept",
		 teamkey_rate_drop(r, pid2_gone, &asked) == 1 && asked == 2 &&
			 r->n_leases == 1 &&
			 strcmp(r->leases[0].id, "a1") == 0);
	T_ASSERT("owner: ...and the key is admitted again at once",
		 teamkey_rate_admit(&k, r, T0_MS + 1, "c3", 600000, NULL) ==
			 TK_OK);
out:
	free(r);
	free(back);
}

static void
test_rate_spend(void)
{
	struct teamkey_rate *r = calloc(1, sizeof(*r)), *back;
	struct ledger_cell day, month;
	/* 2026-12-31 23:59:59 UTC, and a second later. */
	const int64_t dec31 = 1798761599, jan1 = 1798761600;
	char *t = NULL;

	back = calloc(1, sizeof(*back));
	if (r == NULL || back == NULL) {
		T_ASSERT("spend: memory", false);
		free(r);
		free(back);
		return;
	}
	teamkey_rate_spend(r, dec31, 0.25);
	teamkey_rate_spend(r, dec31, 0.5);
	teamkey_rate_spend(r, dec31, -1);
	teamkey_rate_spend(r, dec31, NAN);
	T_ASSERT("spend: adds up in the day and month, ignores negative "
		 "and NaN",
		 r->spent_day == 0.75 && r->spent_month == 0.75 &&
			 r->day == dec31 / 86400 &&
			 r->month == 2026 * 12 + 11);
	T_ASSERT("spend: round trip",
		 (t = teamkey_rate_encode(r)) != NULL &&
			 teamkey_rate_decode(t, back) == ORGW_OK &&
			 back->spent_day == 0.75 && back->month == r->month &&
			 back->day == r->day);
	free(t);
	memset(&day, 0, sizeof(day));
	memset(&month, 0, sizeof(month));
	day.v[LX_KEY_SPEND] = 0.5;
	month.v[LX_KEY_SPEND] = 2;
	teamkey_rate_use(r, dec31, &day, &month);
	T_ASSERT("use: the mirror raises the day, not the month it is under",
		 day.v[LX_KEY_SPEND] == 0.75 && month.v[LX_KEY_SPEND] == 2);
	memset(&day, 0, sizeof(day));
	memset(&month, 0, sizeof(month));
	teamkey_rate_use(r, jan1, &day, &month);
	T_ASSERT("use: another day and month: the mirror does not count",
		 day.v[LX_KEY_SPEND] == 0 && month.v[LX_KEY_SPEND] == 0);
	teamkey_rate_spend(r, jan1, 0.125);
	T_ASSERT("spend: a new day and month start again",
		 r->spent_day == 0.125 && r->spent_month == 0.125 &&
			 r->month == 2027 * 12);
	r->spent_day = -1;
	T_ASSERT("spend: a negative figure is not encoded",
		 teamkey_rate_encode(r) == NULL);
	T_ASSERT("spend: nor decoded",
		 teamkey_rate_decode("{\"v\":1,\"minute\":0,\"count\":0,"
				     "\"spent_day\":-1}",
				     back) == ORGW_EINVAL);
	free(r);
	free(back);
}

int
main(void)
{
	test_names_globs();
	test_set_globs();
	test_model_ok();
	test_hash();
	test_plain();
	test_key_record();
	test_use_record();
	test_dates();
	test_check_key();
	test_state();
	test_lease_make();
	test_check_budget();
	test_rate_record();
	test_rate_rpm();
	test_rate_concurrent();
	test_rate_owner();
	test_rate_spend();
	return T_REPORT();
}
