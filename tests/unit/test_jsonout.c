/*
 * test_jsonout.c - unit tests for jsonout.c: jsonout_print() must give
 * the bytes cJSON_PrintUnformatted() gives, for the edge cases one by
 * one (numbers, escapes, keys, Raw, references, invalid types), under
 * failing allocations, and for thousands of pseudo-random trees (fixed
 * seed) compared against the real cJSON byte for byte.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "t.h"
#include "jsonout.h"

#define RANDOM_TREES 5000
#define RANDOM_NUMBERS 100000

/* Prints s, or its first n bytes, on a "#" line. */
static void
show(const char *who, const char *s)
{
	if (s == NULL)
		printf("#   %-8s (NULL)\n", who);
	else if (strlen(s) > 300)
		printf("#   %-8s %.300s... (%zu bytes)\n", who, s, strlen(s));
	else
		printf("#   %-8s %s\n", who, s);
}

static int shown;	/* differences shown so far; stop at 10 */

/* True when jsonout_print(j) and cJSON_PrintUnformatted(j) agree: the
 * same text, or both NULL.  Shows both when they differ. */
static bool
same(const cJSON *j)
{
	char *want = cJSON_PrintUnformatted(j), *got = jsonout_print(j);
	bool ok = (want == NULL && got == NULL) ||
		  (want != NULL && got != NULL && strcmp(want, got) == 0);

	if (!ok && shown++ < 10) {
		show("cJSON:", want);
		show("jsonout:", got);
	}
	cJSON_free(want);
	cJSON_free(got);
	return ok;
}

/* True when jsonout_print(j) is exactly want (NULL = refused) and
 * cJSON agrees.  Deletes j. */
static bool
prints(cJSON *j, const char *want)
{
	char *got = jsonout_print(j);
	bool ok = (want == NULL && got == NULL) ||
		  (want != NULL && got != NULL && strcmp(want, got) == 0);

	if (!ok) {
		show("want:", want);
		show("got:", got);
	}
	ok = same(j) && ok;
	cJSON_free(got);
	cJSON_Delete(j);
	return ok;
}

/* jsonout and cJSON print d alike (shows the first differences). */
static bool
same_num(double d)
{
	cJSON *j = cJSON_CreateNumber(d);
	bool ok = j == NULL || same(j);

	cJSON_Delete(j);
	return ok;
}

static bool
num_prints(double d, const char *want)
{
	return prints(cJSON_CreateNumber(d), want);
}

static void
test_numbers(void)
{
	cJSON *n;

	T_ASSERT("0", num_prints(0, "0"));
	T_ASSERT("-0.0 prints -0 (cJSON 1.7.15 has no valueint path)",
		 num_prints(-0.0, "-0"));
	T_ASSERT("1 and -1", num_prints(1, "1") && num_prints(-1, "-1"));
	T_ASSERT("INT_MAX, INT_MIN, INT_MAX + 1",
		 num_prints(INT_MAX, "2147483647") &&
			 num_prints(INT_MIN, "-2147483648") &&
			 num_prints(2147483648.0, "2147483648"));
	T_ASSERT("1e15 - 1 is the last integer printed as digits",
		 num_prints(999999999999999.0, "999999999999999") &&
			 num_prints(-999999999999999.0, "-999999999999999"));
	T_ASSERT("1e15 and 1e15 + 1 go through %g",
		 num_prints(1e15, "1e+15") && num_prints(-1e15, "-1e+15") &&
			 num_prints(1e15 + 1, "1000000000000001"));
	/* cJSON's round-trip check is "within DBL_EPSILON", not "equal":
	 * 9.00719925474099e+15 is 1 or 2 away from 2^53 - 1 and 2^53,
	 * close enough for it, and a strtod-exact check would print 17
	 * digits instead. */
	T_ASSERT("2^53 - 1, 2^53 keep 15 digits (cJSON compare_double)",
		 num_prints(9007199254740991.0, "9.00719925474099e+15") &&
			 num_prints(9007199254740992.0,
				    "9.00719925474099e+15") &&
			 num_prints(-9007199254740992.0,
				    "-9.00719925474099e+15"));
	T_ASSERT("2^53 + 2 is too far off and gets 17 digits",
		 num_prints(9007199254740994.0, "9007199254740994"));
	T_ASSERT("0.1 and 1/3 (17 digits needed)",
		 num_prints(0.1, "0.1") &&
			 num_prints(1.0 / 3, "0.33333333333333331"));
	T_ASSERT("1.5, -2.5e-7, 123.25",
		 num_prints(1.5, "1.5") && num_prints(-2.5e-7, "-2.5e-07") &&
			 num_prints(123.25, "123.25"));
	/* DBL_MAX to 15 digits reads back as inf, and inf is "within
	 * DBL_EPSILON" of anything for compare_double: cJSON keeps a text
	 * that overflows when parsed.  Mirrored, not fixed. */
	T_ASSERT("1e300, 1e21, DBL_MAX (15 digits, as cJSON does)",
		 num_prints(1e300, "1e+300") && num_prints(1e21, "1e+21") &&
			 num_prints(DBL_MAX, "1.79769313486232e+308"));
	n = cJSON_CreateNumber(DBL_MIN / 3);
	T_ASSERT("denormals: 5e-324, DBL_MIN / 3",
		 num_prints(5e-324, "4.94065645841247e-324") && same(n));
	cJSON_Delete(n);
	T_ASSERT("NaN, inf and -inf print null",
		 num_prints(NAN, "null") && num_prints(INFINITY, "null") &&
			 num_prints(-INFINITY, "null"));
	T_ASSERT("int64 extremes",
		 num_prints(9223372036854775807.0, "9.2233720368547758e+18") &&
			 num_prints(-9223372036854775807.0 - 1,
				    "-9.2233720368547758e+18"));

	/* cJSON 1.7.15 prints valuedouble only; a stale valueint must not
	 * leak into the text. */
	n = cJSON_CreateNumber(3);
	n->valueint = 7;
	T_ASSERT("valueint is ignored (3 with valueint 7 prints 3)",
		 prints(n, "3"));
	n = cJSON_CreateNumber(-0.0);
	n->valueint = 1;
	T_ASSERT("-0.0 with valueint 1 prints -0", prints(n, "-0"));
}

static void
test_strings(void)
{
	static const char letter[0x20] = {
		['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r',
		['\t'] = 't',
	};
	char all[256], want[512], *w, key[4];
	cJSON *s, *o;
	int i;

	T_ASSERT("plain string",
		 prints(cJSON_CreateString("hello"), "\"hello\""));
	T_ASSERT("empty string", prints(cJSON_CreateString(""), "\"\""));
	T_ASSERT("quote, backslash; slash and DEL not escaped",
		 prints(cJSON_CreateString("a\"b\\c/d\x7f"),
			"\"a\\\"b\\\\c/d\x7f\""));
	T_ASSERT("\\b \\f \\n \\r \\t",
		 prints(cJSON_CreateString("\b\f\n\r\t"),
			"\"\\b\\f\\n\\r\\t\""));
	T_ASSERT("other control bytes as lower-case \\u00xx",
		 prints(cJSON_CreateString("\x01\x1f\x0b\x1a"),
			"\"\\u0001\\u001f\\u000b\\u001a\""));
	T_ASSERT("bytes >= 0x80 pass through, valid UTF-8 or not",
		 prints(cJSON_CreateString("\xc3\xa9\xff\x80"),
			"\"\xc3\xa9\xff\x80\""));
	/* The expected text, written out independently of jsonout.c. */
	w = want;
	*w++ = '"';
	for (i = 1; i < 256; i++) {
		all[i - 1] = (char)i;
		if (i == '"' || i == '\\') {
			*w++ = '\\';
			*w++ = (char)i;
		} else if (i >= 0x20) {
			*w++ = (char)i;
		} else if (letter[i] != '\0') {
			*w++ = '\\';
			*w++ = letter[i];
		} else {
			w += snprintf(w, 7, "\\u%04x", (unsigned)i);
		}
	}
	all[255] = '\0';
	*w++ = '"';
	*w = '\0';
	T_ASSERT("every byte 1..255 in one string",
		 prints(cJSON_CreateString(all), want));

	s = cJSON_CreateString("x");
	cJSON_free(s->valuestring);
	s->valuestring = NULL;
	T_ASSERT("NULL valuestring prints \"\"", prints(s, "\"\""));

	o = cJSON_CreateObject();
	for (i = 1; i < 256; i += 17) {
		key[0] = (char)i;
		key[1] = '"';
		key[2] = (char)(256 - i);
		key[3] = '\0';
		cJSON_AddNumberToObject(o, key, i);
	}
	T_ASSERT("keys are escaped like strings", same(o));
	cJSON_Delete(o);

	o = cJSON_CreateObject();
	cJSON_AddItemToArray(o, cJSON_CreateNumber(1));	/* no key */
	cJSON_AddNumberToObject(o, "", 2);
	T_ASSERT("NULL key prints \"\", empty key too",
		 prints(o, "{\"\":1,\"\":2}"));

	o = cJSON_CreateObject();
	cJSON_AddItemToObjectCS(o, "const", cJSON_CreateTrue());
	T_ASSERT("cJSON_StringIsConst key", prints(o, "{\"const\":true}"));
}

static void
test_shapes(void)
{
	cJSON *a, *o, *r, *shared;

	T_ASSERT("null, true, false",
		 prints(cJSON_CreateNull(), "null") &&
			 prints(cJSON_CreateTrue(), "true") &&
			 prints(cJSON_CreateFalse(), "false"));
	T_ASSERT("empty array and object",
		 prints(cJSON_CreateArray(), "[]") &&
			 prints(cJSON_CreateObject(), "{}"));

	a = cJSON_CreateArray();
	cJSON_AddItemToArray(a, cJSON_CreateArray());
	cJSON_AddItemToArray(a, cJSON_CreateObject());
	cJSON_AddItemToArray(a, cJSON_CreateNull());
	o = cJSON_CreateObject();
	cJSON_AddItemToArray(a, o);
	cJSON_AddObjectToObject(o, "e");
	cJSON_AddArrayToObject(o, "f");
	cJSON_AddNumberToObject(o, "n", 1.5);
	T_ASSERT("nested containers",
		 prints(a, "[[],{},null,{\"e\":{},\"f\":[],\"n\":1.5}]"));

	T_ASSERT("Raw prints verbatim",
		 prints(cJSON_CreateRaw("{\"a\": [1, 2]}"),
			"{\"a\": [1, 2]}"));
	T_ASSERT("empty Raw prints nothing",
		 prints(cJSON_CreateRaw(""), ""));
	o = cJSON_CreateObject();
	cJSON_AddRawToObject(o, "r", "\x01 not json \"");
	T_ASSERT("Raw in an object, not escaped",
		 prints(o, "{\"r\":\x01 not json \"}"));
	r = cJSON_CreateRaw("x");
	cJSON_free(r->valuestring);
	r->valuestring = NULL;
	T_ASSERT("Raw without text is refused", prints(r, NULL));

	shared = cJSON_CreateArray();
	cJSON_AddItemToArray(shared, cJSON_CreateString("s"));
	cJSON_AddItemToArray(shared, cJSON_CreateNumber(2));
	a = cJSON_CreateArray();
	cJSON_AddItemToArray(a, cJSON_CreateStringReference("ref\n"));
	cJSON_AddItemToArray(a, cJSON_CreateArrayReference(shared->child));
	cJSON_AddItemReferenceToArray(a, shared);
	o = cJSON_CreateObject();
	cJSON_AddItemReferenceToObject(o, "k", shared);
	cJSON_AddItemToArray(a, o);
	T_ASSERT("references print like the items they refer to",
		 prints(a, "[\"ref\\n\",[\"s\",2],[\"s\",2],"
			   "{\"k\":[\"s\",2]}]"));
	cJSON_Delete(shared);

	T_ASSERT("NULL item is refused", jsonout_print(NULL) == NULL);
	r = cJSON_CreateNull();
	r->type = cJSON_Invalid;
	T_ASSERT("cJSON_Invalid is refused", prints(r, NULL));
	r = cJSON_CreateNull();
	r->type = cJSON_True | cJSON_False;
	T_ASSERT("two type bits are refused", prints(r, NULL));
	r = cJSON_CreateNumber(4);
	r->type |= cJSON_IsReference;
	T_ASSERT("flags above 0xFF are masked", prints(r, "4"));
	a = cJSON_CreateArray();
	cJSON_AddItemToArray(a, cJSON_CreateNumber(1));
	r = cJSON_CreateNull();
	r->type = 0x100 | 0x300;
	cJSON_AddItemToArray(a, r);
	T_ASSERT("an invalid item deep inside refuses the whole tree",
		 prints(a, NULL));
}

static void
test_big(void)
{
	cJSON *a, *inner, *s;
	char *text;
	size_t i;
	bool ok;

	text = malloc(200001);
	for (i = 0; i < 200000; i++)
		text[i] = (char)(i % 7 == 0 ? '\n' : 'a' + i % 26);
	text[200000] = '\0';
	s = cJSON_CreateString(text);
	free(text);
	T_ASSERT("a 200000-byte string with escapes (buffer growth)",
		 same(s));
	cJSON_Delete(s);

	a = cJSON_CreateArray();
	for (i = 0; i < 20000; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber((double)i * 1.25));
	T_ASSERT("an array of 20000 numbers", same(a));
	cJSON_Delete(a);

	/* Deeper than CJSON_NESTING_LIMIT: only parsing is limited. */
	a = cJSON_CreateArray();
	for (i = 0, inner = a; i < 3000; i++) {
		cJSON *n = cJSON_CreateObject();

		cJSON_AddItemToArray(inner, n);
		inner = cJSON_AddArrayToObject(n, "d");
	}
	ok = same(a);
	T_ASSERT("3000 levels of nesting", ok);
	cJSON_Delete(a);
}

/* Allocation hooks: the next fail_at-th allocation fails (-1: never);
 * live counts blocks allocated and not yet freed through the hooks. */
static long fail_at = -1, live;

static void *
t_malloc(size_t n)
{
	void *p;

	if (fail_at == 0)
		return NULL;
	if (fail_at > 0)
		fail_at--;
	if ((p = malloc(n)) != NULL)
		live++;
	return p;
}

static void
t_free(void *p)
{
	if (p != NULL)
		live--;
	free(p);
}

static void
test_nomem(void)
{
	cJSON_Hooks hooks = {t_malloc, t_free};
	cJSON *a;
	char *want, *got, big[3000];
	long k, refused = 0, printed = 0, leaked = 0, wrong = 0;
	int i;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	a = cJSON_CreateArray();
	for (i = 0; i < 40; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(big));
	want = cJSON_PrintUnformatted(a);	/* built before the hooks */

	cJSON_InitHooks(&hooks);
	for (k = 0; k < 20; k++) {
		fail_at = k;
		live = 0;
		got = jsonout_print(a);
		fail_at = -1;
		if (got == NULL) {
			refused++;
		} else {
			printed++;
			if (strcmp(got, want) != 0)
				wrong++;
			cJSON_free(got);
		}
		if (live != 0)
			leaked++;
	}
	cJSON_InitHooks(NULL);
	T_ASSERT("failing allocations: refused early, printed once enough",
		 refused >= 3 && printed > 0 && wrong == 0);
	T_ASSERT("failing allocations: nothing leaked, output from hooks",
		 leaked == 0);
	cJSON_free(want);
	cJSON_Delete(a);
}

static double
from_bits(uint64_t u)
{
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

static double
rand_number(void)
{
	static const double special[] = {
		0.0, -0.0, 1e15, -1e15, 1e15 - 1, 1e15 + 1, 1e15 + 2,
		-1e15 + 1, -1e15 - 1, 9007199254740991.0, 9007199254740992.0,
		9007199254740993.0, 9007199254740994.0, -9007199254740993.0,
		1e300, -1e300, 1e308, DBL_MAX, -DBL_MAX, DBL_MIN, 5e-324,
		-5e-324, 2.2250738585072009e-308, 0.1, 0.2, 0.3, 1.0 / 3,
		2.0 / 3, 0.5, 2147483647.0, 2147483648.0, -2147483648.0,
		-2147483649.0, 9223372036854775807.0, 1e-7, 123456789012345.6,
	};
	char text[64];
	const char *sign;
	unsigned a, b, c;
	uint64_t u;
	double d;
	int e;

	/* One generator call per statement: the order of calls inside one
	 * expression is unspecified, and the trees must not depend on the
	 * compiler. */
	switch (t_below(12)) {
	case 0:	/* integers of every magnitude */
		u = t_rand();
		d = (double)(u >> t_below(64));
		return t_below(2) ? -d : d;
	case 1:
		return (double)((int)t_below(2001) - 1000);
	case 2:
		return special[t_below(sizeof(special) / sizeof(special[0]))];
	case 3:	/* 0.1-style fractions */
		d = (double)((int)t_below(200001) - 100000);
		return d / pow(10, 1 + t_below(6));
	case 4:	/* around the 1e15 and 2^53 edges */
		d = t_below(2) ? 1e15 : 9007199254740992.0;
		d += (double)((int)t_below(41) - 20);
		return t_below(2) ? -d : d;
	case 5:	/* denormals */
		d = from_bits(t_rand() & ((UINT64_C(1) << 52) - 1));
		return t_below(2) ? -d : d;
	case 6: {
		static const double bad[] = {NAN, -NAN, INFINITY, -INFINITY};

		return bad[t_below(4)];
	}
	case 7:	/* any bit pattern: NaN payloads, huge, tiny */
		return from_bits(t_rand());
	case 8:	/* a uniform mantissa at a random scale */
		d = (double)(t_rand() >> 11) / 9007199254740992.0;
		return d * pow(10, (int)t_below(61) - 30);
	case 9:	/* decimal text as a request body would carry it */
		sign = t_below(2) ? "-" : "";
		a = t_below(100000);
		b = t_below(12);
		c = t_below(1000000000);
		e = (int)t_below(80) - 40;
		(void)snprintf(text, sizeof(text), "%s%u.%0*ue%d", sign, a,
			       (int)b, c, e);
		return strtod(text, NULL);
	case 10:	/* halves and quarters of big integers */
		u = t_rand();
		d = (double)(u >> t_below(64));
		return d / (1 << t_below(3));
	default:	/* integral, nearly 1e15, both sides */
		d = 1e15 - (double)t_below(100000);
		return t_below(2) ? d : -d + (double)t_below(3);
	}
}

/* A random string in buf: half the time any bytes 1..255, else mostly
 * plain ASCII with a few escapes (so runs get long). */
static const char *
rand_string(char *buf, size_t size)
{
	size_t n = t_below(4) ? t_below(24) : t_below((unsigned)size - 1), i;
	bool any = t_below(2);

	for (i = 0; i < n; i++) {
		if (any || t_below(16) == 0)
			buf[i] = (char)(1 + t_below(255));
		else
			buf[i] = (char)(' ' + t_below(95));
	}
	buf[n] = '\0';
	return buf;
}

static const char *const ref_strings[] = {"", "plain", "q\"b\\", "\x1f\x7f"};

/* A random leaf; rarely one cJSON refuses to print. */
static cJSON *
rand_leaf(const cJSON *shared)
{
	char s[400];
	cJSON *j;

	switch (t_below(40)) {
	case 0:
	case 1:
		return cJSON_CreateNull();
	case 2:
	case 3:
		return cJSON_CreateBool(t_below(2) != 0);
	case 4:
		return cJSON_CreateRaw(rand_string(s, sizeof(s)));
	case 5:
		return cJSON_CreateStringReference(ref_strings[t_below(4)]);
	case 6:
		j = cJSON_CreateString("");
		cJSON_free(j->valuestring);
		j->valuestring = NULL;
		return j;
	case 7:
		return t_below(2) ? cJSON_CreateArrayReference(shared->child) :
				  cJSON_CreateObjectReference(NULL);
	case 8:
		j = cJSON_CreateNull();
		if (t_below(50) == 0)	/* about one tree in 30 */
			/* Raw without text, no type, two types */
			j->type = t_below(3) == 0 ? cJSON_Raw :
				  t_below(2)      ? cJSON_Invalid :
						  cJSON_String | cJSON_Number;
		return j;
	default:
		if (t_below(3) == 0)
			return cJSON_CreateString(rand_string(s, sizeof(s)));
		j = cJSON_CreateNumber(rand_number());
		if (t_below(8) == 0)	/* stale valueint, ignored */
			j->valueint = (int)t_below(100);
		return j;
	}
}

static cJSON *
rand_tree(const cJSON *shared, int depth, int *budget)
{
	char key[400];
	cJSON *j, *c;
	unsigned n, i;
	bool obj;

	if (--*budget <= 0 || depth > 7 || t_below(3) == 0)
		return rand_leaf(shared);
	obj = t_below(2);
	j = obj ? cJSON_CreateObject() : cJSON_CreateArray();
	n = t_below(4) ? t_below(6) : t_below(20);
	for (i = 0; i < n; i++) {
		c = rand_tree(shared, depth + 1, budget);
		if (!obj || t_below(30) == 0)	/* NULL key in an object */
			cJSON_AddItemToArray(j, c);
		else
			cJSON_AddItemToObject(j, rand_string(key, sizeof(key)),
					      c);
	}
	return j;
}

static void
test_random(void)
{
	cJSON *shared, *j;
	char *s;
	long bad = 0, refused = 0, i;
	int budget;

	shared = cJSON_CreateArray();
	cJSON_AddItemToArray(shared, cJSON_CreateString("shared\t"));
	cJSON_AddItemToArray(shared, cJSON_CreateNumber(0.1));
	cJSON_AddItemToArray(shared, cJSON_CreateObject());

	for (i = 0; i < RANDOM_TREES; i++) {
		budget = 1 + (int)t_below(300);
		j = rand_tree(shared, 0, &budget);
		if (same(j)) {
			s = jsonout_print(j);
			refused += s == NULL;
			cJSON_free(s);
		} else if (++bad <= 3) {
			printf("#   (tree %ld differs)\n", i);
		}
		cJSON_Delete(j);
	}
	printf("# %d random trees, %ld refused by both\n", RANDOM_TREES,
	       refused);
	T_ASSERT("random trees print exactly as cJSON prints them",
		 bad == 0);
	T_ASSERT("some random trees are refused by both (invalid types)",
		 refused > 0 && refused < RANDOM_TREES / 10);

	for (i = 0, bad = 0; i < RANDOM_NUMBERS; i++) {
		j = cJSON_CreateNumber(rand_number());
		if (!same(j) && ++bad <= 3)
			printf("#   (number %.17g differs)\n", j->valuedouble);
		cJSON_Delete(j);
	}
	T_ASSERT("random numbers print exactly as cJSON prints them",
		 bad == 0);
	cJSON_Delete(shared);
}

/*
 * Short decimals (jsonout.c short_decimal): m / 10^k for random m of 1
 * to 16 digits and k of 0 to 20, sums of them as costs add up, their
 * neighbours one ulp away, and the edges of the range, each against
 * cJSON's own print.  Counts how many took the short way, so the test
 * fails if the fast path never runs.
 */
static void
test_short_decimals(void)
{
	static const double edges[] = {1e-4, 9.999999999999999e-5, 1.0001e-4,
				       0.1, 0.7, 999999999999999.9,
				       99999999999999.98, 1e15 - 0.5,
				       0.000123, 1.5e-4, 12.5, -0.25};
	long tried = 0, bad = 0, shortened = 0;
	double sum = 0, d, p;
	char buf[JSONOUT_NUMBER_BYTES], ref[64];
	size_t i, n;
	int k;

	for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		tried++;
		bad += !same_num(edges[i]);
	}
	for (i = 0; i < 40000; i++) {
		uint64_t m = t_rand() % 10000000000000000ULL >>
			     t_below(50);
		k = (int)t_below(21);
		for (p = 1, d = (double)m; k > 0; k--)
			p *= 10;
		d /= p;
		if (t_below(2))
			d = -d;
		if (t_below(4) == 0)
			d = nextafter(d, t_below(2) ? INFINITY : -INFINITY);
		sum += fabs(d) < 1 ? fabs(d) : 0;
		tried += 2;
		bad += !same_num(d) + !same_num(sum);
		n = jsonout_number(buf, d);
		snprintf(ref, sizeof(ref), "%1.15g", d);
		if (n > 0 && fabs(d) >= 1e-4 && fabs(d) < 1e15 &&
		    d != floor(d) && n == strlen(ref) &&
		    memcmp(buf, ref, n) == 0 && strtod(ref, NULL) == d)
			shortened++;
	}
	T_ASSERT("short decimals: jsonout prints what cJSON prints", bad == 0);
	T_ASSERT("short decimals: many were in the short-decimal domain",
		 shortened > 1000);
	printf("# short decimals: %ld numbers, %ld differ, %ld short\n", tried,
	       bad, shortened);
}

int
main(void)
{
	t_seed(0x6f72677721);	/* the same random trees every run */
	test_numbers();
	test_strings();
	test_shapes();
	test_big();
	test_nomem();
	test_random();
	test_short_decimals();
	return T_REPORT();
}
