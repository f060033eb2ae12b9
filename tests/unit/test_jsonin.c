/*
 * test_jsonin.c - unit tests for jsonin.c: jsonin_parse() must give the
 * tree cJSON_ParseWithLength() gives, or refuse what it refuses, for the
 * edge cases one by one (numbers, strings and escapes, whitespace, BOM,
 * trailing bytes, nesting), under failing allocations, and for thousands
 * of pseudo-random texts (fixed seed) and mutations of them, compared
 * node by node with the real cJSON.
 */
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "t.h"
#include "jsontree.h"
#include "jsonin.h"

#define RANDOM_TEXTS 4000
#define MUTATIONS_PER_TEXT 4

static int shown;	/* differences shown so far; stop at 10 */

static void
show(const char *s, size_t n)
{
	size_t i;

	printf("#   input (%zu bytes): ", n);
	for (i = 0; i < n && i < 200; i++)
		if (s[i] >= 0x20 && s[i] < 0x7f)
			putchar(s[i]);
		else
			printf("\\x%02x", (unsigned char)s[i]);
	printf("%s\n", n > 200 ? "..." : "");
}

/* jsonin_parse and cJSON_ParseWithLength agree on s[0..n).  The text is
 * copied to a buffer of exactly n bytes so ASan sees any over-read by
 * jsonin.  *accepted tells whether cJSON took it. */
static bool
agree(const char *s, size_t n, bool *accepted)
{
	char *copy = malloc(n ? n : 1);
	cJSON *want, *got;
	bool ok;

	if (copy == NULL)
		return false;
	memcpy(copy, s, n);
	want = cJSON_ParseWithLength(copy, n);
	got = jsonin_parse(copy, n);
	ok = same_tree(want, got);
	if (!ok && shown++ < 10) {
		show(s, n);
		printf("#   cJSON %s, jsonin %s\n", want ? "tree" : "NULL",
		       got ? "tree" : "NULL");
	}
	if (accepted != NULL)
		*accepted = want != NULL;
	cJSON_Delete(want);
	cJSON_Delete(got);
	free(copy);
	return ok;
}

static bool
agrees(const char *s)
{
	return agree(s, strlen(s), NULL);
}

/* The text s (strlen) parses, agrees with cJSON, and is the number d
 * with valueint vi. */
static bool
is_number(const char *s, double d, int vi)
{
	cJSON *j = jsonin_parse(s, strlen(s));
	bool ok = j != NULL && cJSON_IsNumber(j) &&
		  memcmp(&j->valuedouble, &d, sizeof(d)) == 0 &&
		  j->valueint == vi;

	cJSON_Delete(j);
	return ok && agrees(s);
}

/* s[0..n) is refused by both. */
static bool
refused(const char *s, size_t n)
{
	cJSON *j = jsonin_parse(s, n);
	bool ok = j == NULL;

	cJSON_Delete(j);
	return ok && agree(s, n, NULL);
}

#define REFUSED(lit) refused(lit, sizeof(lit) - 1)

/* s[0..n) parses to a string whose C string is want. */
static bool
is_string(const char *s, size_t n, const char *want)
{
	cJSON *j = jsonin_parse(s, n);
	bool ok = j != NULL && cJSON_IsString(j) &&
		  strcmp(j->valuestring, want) == 0;

	cJSON_Delete(j);
	return ok && agree(s, n, NULL);
}

#define IS_STRING(lit, want) is_string(lit, sizeof(lit) - 1, want)

static void
test_numbers(void)
{
	T_ASSERT("0, 7, -7, 123456789012345 (fast path)",
		 is_number("0", 0, 0) && is_number("7", 7, 7) &&
			 is_number("-7", -7, -7) &&
			 is_number("123456789012345", 123456789012345.0,
				   INT_MAX));
	T_ASSERT("-0 and -000 are negative zero, bit for bit",
		 is_number("-0", -0.0, 0) && is_number("-000", -0.0, 0));
	T_ASSERT("leading zeros: 007 is 7, [01] is [1]",
		 is_number("007", 7, 7) && agrees("[01]") && agrees("[-01]"));
	T_ASSERT("valueint saturates at INT_MAX / INT_MIN",
		 is_number("2147483647", 2147483647.0, INT_MAX) &&
			 is_number("2147483648", 2147483648.0, INT_MAX) &&
			 is_number("-2147483648", -2147483648.0, INT_MIN) &&
			 is_number("-2147483647", -2147483647.0, -INT_MAX) &&
			 is_number("-2147483649", -2147483649.0, INT_MIN));
	T_ASSERT("15, 16, 17, 20 and 25 digits",
		 is_number("999999999999999", 999999999999999.0, INT_MAX) &&
			 is_number("-999999999999999", -999999999999999.0,
				   INT_MIN) &&
			 agrees("9007199254740993") &&
			 agrees("12345678901234567") &&
			 agrees("-12345678901234567890") &&
			 agrees("1234567890123456789012345") &&
			 agrees("[1234567890123456789012345,-0]"));
	T_ASSERT("100 digits: Debian's CVE-2023-26819 fix takes the run whole",
		 agrees("[1111111111111111111111111111111111111111111111111111"
			"111111111111111111111111111111111111111111111111]"));
	T_ASSERT("fractions and exponents go through strtod",
		 is_number("1.5", 1.5, 1) && is_number("-2.5e-7", -2.5e-7, 0) &&
			 is_number("1E3", 1000, 1000) &&
			 is_number("1e+2", 100, 100) && agrees("0.1") &&
			 agrees("[3.141592653589793238462643383279]"));
	T_ASSERT("1e999 is inf (INT_MAX), -1e999 -inf (INT_MIN)",
		 is_number("1e999", INFINITY, INT_MAX) &&
			 is_number("-1e999", -INFINITY, INT_MIN) &&
			 is_number("1e-999", 0, 0));
	T_ASSERT("a partial number at top level: 1.2.3 is 1.2, 1e is 1",
		 is_number("1.2.3", 1.2, 1) && is_number("1e", 1, 1) &&
			 is_number("1-2", 1, 1) && is_number("1e+", 1, 1) &&
			 is_number("2.", 2, 2));
	T_ASSERT("... and refused inside a container",
		 REFUSED("[1.2.3]") && REFUSED("[1e]") && REFUSED("[1-2]") &&
			 REFUSED("{\"a\":1e}"));
	T_ASSERT("-.5 is -0.5 (strtod takes it)",
		 is_number("-.5", -0.5, 0) && agrees("[-.5]"));
	T_ASSERT("-, +1, .5, -e5, -- refused",
		 REFUSED("-") && REFUSED("+1") && REFUSED(".5") &&
			 REFUSED("-e5") && REFUSED("--1") && REFUSED("[-]"));
	T_ASSERT("hex: 0x10 is 0 at top level, refused in an array",
		 is_number("0x10", 0, 0) && REFUSED("[0x10]"));
	T_ASSERT("NaN, Infinity, -Infinity, inf refused",
		 REFUSED("NaN") && REFUSED("Infinity") &&
			 REFUSED("-Infinity") && REFUSED("inf") &&
			 REFUSED("[nan]") && REFUSED("-inf"));
	T_ASSERT("a number cut by len: \"123\" with len 2 is 12",
		 agree("123", 2, NULL) && agree("-", 1, NULL));
}

static void
test_strings(void)
{
	T_ASSERT("plain and escaped strings",
		 IS_STRING("\"abc\"", "abc") && IS_STRING("\"\"", "") &&
			 IS_STRING("\"a\\\"b\\\\c\\/d\"", "a\"b\\c/d") &&
			 IS_STRING("\"\\b\\f\\n\\r\\t\"", "\b\f\n\r\t"));
	T_ASSERT("\\u escapes to UTF-8 (1, 2, 3 bytes; upper and lower hex)",
		 IS_STRING("\"\\u0041\\u00e9\\u20AC\"",
			   "A\xc3\xa9\xe2\x82\xac"));
	T_ASSERT("a surrogate pair gives 4 bytes",
		 IS_STRING("\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80") &&
			 IS_STRING("\"\\uDBFF\\uDFFF\"", "\xf4\x8f\xbf\xbf"));
	T_ASSERT("lone, reversed or broken surrogates are refused",
		 REFUSED("\"\\ud800\"") && REFUSED("\"\\udc00\"") &&
			 REFUSED("\"\\ud800\\u0041\"") &&
			 REFUSED("\"\\ud800x\\udc00\"") &&
			 REFUSED("\"\\ud800\\ud800\"") &&
			 REFUSED("\"\\udc00\\ud800\""));
	T_ASSERT("\\u0000 ends the C string there",
		 IS_STRING("\"a\\u0000b\"", "a"));
	T_ASSERT("a bad hex digit in \\u reads as \\u0000",
		 IS_STRING("\"x\\u00zzy\"", "x") && IS_STRING("\"\\uG000\"", ""));
	T_ASSERT("short \\u and unknown escapes are refused",
		 REFUSED("\"\\u12\"") && REFUSED("\"\\u\"") &&
			 REFUSED("\"\\x41\"") && REFUSED("\"\\a\""));
	T_ASSERT("a backslash before the closing quote, or at the end",
		 REFUSED("\"abc\\\"") && REFUSED("\"abc\\") &&
			 REFUSED("\"abc"));
	T_ASSERT("a backslash inside \\uXXXX (cJSON's scanner and decoder "
		 "disagree; mirrored)",
		 agrees("\"\\u000\\\\\"") && agrees("\"\\u000\\\"x\"") &&
			 agrees("[\"\\u12\\\"34\",1]"));
	T_ASSERT("raw control bytes and bytes >= 0x80 are kept",
		 IS_STRING("\"a\x01\x1f\n\x7f\xff\"", "a\x01\x1f\n\x7f\xff"));
	T_ASSERT("a raw NUL inside a string ends the C string",
		 IS_STRING("\"a\0b\"", "a"));
	T_ASSERT("keys: escapes, empty, duplicates kept in order",
		 agrees("{\"a\\nb\":1,\"\":2,\"a\":3,\"a\":4}") &&
			 agrees("{\"\\u00e9\":\"x\"}"));
}

static void
test_shapes(void)
{
	char *deep;
	size_t i, n = 1001;
	bool ok;
	cJSON *j;

	T_ASSERT("literals; true has valueint 1",
		 agrees("null") && agrees("true") && agrees("false") &&
			 agrees("[true,false,null]") && REFUSED("nul") &&
			 REFUSED("tru") && REFUSED("True") && REFUSED("nulL"));
	j = jsonin_parse("true", 4);
	T_ASSERT("true valueint", j != NULL && j->valueint == 1);
	cJSON_Delete(j);
	T_ASSERT("empty, nested, mixed containers",
		 agrees("[]") && agrees("{}") && agrees("[[],{},[[]]]") &&
			 agrees("{\"a\":{\"b\":[1,{\"c\":null}]},\"d\":\"e\"}"));
	T_ASSERT("malformed containers refused",
		 REFUSED("[1,]") && REFUSED("[,1]") && REFUSED("{\"a\"}") &&
			 REFUSED("{\"a\":}") && REFUSED("{\"a\":1,}") &&
			 REFUSED("{a:1}") && REFUSED("[1 2]") && REFUSED("[") &&
			 REFUSED("{") && REFUSED("{\"a\":1") &&
			 REFUSED("[1,") && REFUSED("{\"a\":1,") &&
			 REFUSED("{\"a\":") && REFUSED("{\"a\"") &&
			 REFUSED("[1}") && REFUSED("{\"a\":1]"));
	T_ASSERT("whitespace is every byte <= 0x20, NUL included",
		 agrees(" \t\r\n1 ") && agree("\0\x01\x1f 7", 5, NULL) &&
			 agree("[1,\0 2]", 7, NULL) &&
			 agree("{\x02\"a\"\x03:\x04[\x05]\x06}", 11, NULL));
	j = jsonin_parse("[1,\0 2]", 7);
	T_ASSERT("[1,<NUL> 2] has two elements",
		 j != NULL && cJSON_GetArraySize(j) == 2);
	cJSON_Delete(j);
	T_ASSERT("empty or blank input refused",
		 refused("", 0) && REFUSED(" ") && REFUSED("\n\t ") &&
			 refused("\0", 1) && jsonin_parse(NULL, 5) == NULL);
	T_ASSERT("trailing bytes after the value are ignored",
		 agrees("{} garbage") && agrees("[1]]") && agrees("1 2") &&
			 agrees("\"a\"\"b\"") && agrees("nullx"));
	T_ASSERT("len counts: text need not be NUL-terminated, NUL in len ok",
		 agree("[1,2]xyz", 5, NULL) && agree("[1,2]", 4, NULL) &&
			 agree("{\"a\":1}\0", 8, NULL));
	T_ASSERT("UTF-8 BOM skipped only when the text has 5+ bytes",
		 REFUSED("\xEF\xBB\xBF" "1") && agrees("\xEF\xBB\xBF" "12") &&
			 agrees("\xEF\xBB\xBF" "[1]") &&
			 agrees("\xEF\xBB\xBF" " 1") &&
			 REFUSED("\xEF\xBB\xBF") && REFUSED("\xEF\xBB" "[1]") &&
			 REFUSED(" \xEF\xBB\xBF" "[1]"));

	/* CJSON_NESTING_LIMIT: 1000 open containers parse, 1001 do not. */
	deep = malloc(2 * n + 10);
	if (deep == NULL)
		return;
	for (i = 0; i < n; i++) {
		deep[i] = '[';
		deep[2 * n - 1 - i] = ']';
	}
	ok = refused(deep, 2 * n) && agree(deep + 1, 2 * n - 2, NULL);
	j = jsonin_parse(deep + 1, 2 * n - 2);
	ok = ok && j != NULL;
	cJSON_Delete(j);
	T_ASSERT("1000 nested arrays parse, 1001 are refused", ok);
	free(deep);
	/* {"":[{"":[ ... 1000 levels, then one more around it. */
	{
		char *t = malloc(6 * n + 10);
		size_t k = 0, m;

		if (t == NULL)
			return;
		for (m = 0; m < 1000; m++) {
			if (m % 2 == 0) {
				memcpy(t + k, "{\"\":", 4);
				k += 4;
			} else {
				t[k++] = '[';
			}
		}
		t[k++] = '1';
		for (m = 1000; m-- > 0;)
			t[k++] = m % 2 == 0 ? '}' : ']';
		ok = agree(t, k, NULL);
		j = jsonin_parse(t, k);
		ok = ok && j != NULL;
		cJSON_Delete(j);
		/* one more level inside: 1001 */
		memmove(t + 1, t, k);
		t[0] = '[';
		t[k + 1] = ']';
		ok = ok && refused(t, k + 2);
		free(t);
	}
	T_ASSERT("1000 nested objects/arrays parse, 1001 are refused", ok);
}

/* Allocation failures: every cJSON_malloc may fail in turn; jsonin
 * returns NULL and frees what it had (ASan's leak check). */
static long nomem_left;

static void *
nomem_malloc(size_t n)
{
	if (nomem_left-- == 0)
		return NULL;
	return malloc(n);
}

static void
test_nomem(void)
{
	static const char text[] =
		"{\"a\":[1,2.5,\"x\\n\",{\"b\":null,\"c\":true}],"
		"\"d\":\"e\",\"f\":123456789012345678901234567890123456789"
		"01234567890123456789012345678901234567890}";
	cJSON_Hooks h = {nomem_malloc, free};
	cJSON *j, *want;
	long k;
	bool ok = true, finished = false;

	want = cJSON_Parse(text);
	cJSON_InitHooks(&h);
	for (k = 0; k < 100 && !finished; k++) {
		nomem_left = k;
		j = jsonin_parse(text, sizeof(text));
		if (j != NULL) {
			finished = true;
			ok = ok && same_tree(want, j);
		}
		cJSON_Delete(j);
	}
	cJSON_InitHooks(NULL);
	cJSON_Delete(want);
	printf("# succeeded with %ld allocations\n", k - 1);
	T_ASSERT("each failed allocation gives NULL, no leak; then the tree",
		 ok && finished && k > 10);
}

struct tbuf {
	char b[16384];
	size_t n;
};

static void
put(struct tbuf *t, const char *s, size_t n)
{
	if (n > sizeof(t->b) - t->n)
		n = sizeof(t->b) - t->n;
	memcpy(t->b + t->n, s, n);
	t->n += n;
}

static void
putc1(struct tbuf *t, char c)
{
	put(t, &c, 1);
}

static void
put_ws(struct tbuf *t)
{
	static const char ws[] = " \t\n\r";

	while (t_below(4) == 0)
		putc1(t, t_below(10) ? ws[t_below(4)] : (char)t_below(33));
}

static void
put_digits(struct tbuf *t, unsigned n)
{
	while (n-- > 0)
		putc1(t, (char)('0' + t_below(10)));
}

static void
put_number(struct tbuf *t)
{
	if (t_below(3) == 0)
		putc1(t, '-');
	switch (t_below(6)) {
	case 0:
		putc1(t, '0');	/* 0, -0, maybe with a fraction */
		break;
	case 1:	/* leading zeros, sometimes */
		putc1(t, '0');
		put_digits(t, 1 + t_below(4));
		break;
	default:
		putc1(t, (char)('1' + t_below(9)));
		put_digits(t, t_below(t_below(2) ? 16 : 25));
	}
	if (t_below(4) == 0) {
		putc1(t, '.');
		put_digits(t, 1 + t_below(18));
	}
	if (t_below(5) == 0) {
		putc1(t, t_below(2) ? 'e' : 'E');
		if (t_below(2))
			putc1(t, t_below(2) ? '+' : '-');
		put_digits(t, 1 + t_below(3));
	}
}

static void
put_string(struct tbuf *t)
{
	static const char esc[] = "bfnrt\"\\/";
	static const char hex[] = "0123456789abcdefABCDEF";
	char u[16];
	unsigned i, n = t_below(t_below(4) ? 8 : 40), c;

	putc1(t, '"');
	for (i = 0; i < n; i++) {
		switch (t_below(8)) {
		case 0:
			putc1(t, '\\');
			putc1(t, esc[t_below(8)]);
			break;
		case 1:	/* \uXXXX, sometimes a pair, sometimes invalid */
			switch (t_below(5)) {
			case 0:
				c = 0xD800 + t_below(0x400);
				snprintf(u, sizeof(u), "\\u%04x", c);
				put(t, u, 6);
				c = t_below(4) ? 0xDC00 + t_below(0x400) :
						 t_below(0x10000);
				snprintf(u, sizeof(u), "\\u%04X", c);
				put(t, u, 6);
				break;
			case 1:
				put(t, "\\u", 2);
				for (c = 0; c < 4; c++)
					putc1(t, hex[t_below(22)]);
				break;
			case 2:
				put(t, t_below(2) ? "\\u0000" : "\\udc00", 6);
				break;
			default:
				snprintf(u, sizeof(u), "\\u%04x",
					 t_below(2) ? t_below(0x80) :
						      t_below(0x10000));
				put(t, u, 6);
			}
			break;
		case 2:	/* any byte 1..255 but the quote and backslash */
			do
				c = 1 + t_below(255);
			while (c == '"' || c == '\\');
			putc1(t, (char)c);
			break;
		default:
			putc1(t, (char)('a' + t_below(26)));
		}
	}
	putc1(t, '"');
}

static void
put_value(struct tbuf *t, int depth)
{
	unsigned i, n;

	put_ws(t);
	switch (t_below(depth > 5 ? 6 : 8)) {
	case 0:
		put(t, "null", 4);
		break;
	case 1:
		if (t_below(2))
			put(t, "true", 4);
		else
			put(t, "false", 5);
		break;
	case 2:
	case 3:
		put_number(t);
		break;
	case 4:
	case 5:
		put_string(t);
		break;
	case 6:
		putc1(t, '[');
		n = t_below(6);
		for (i = 0; i < n; i++) {
			if (i > 0)
				putc1(t, ',');
			put_value(t, depth + 1);
		}
		put_ws(t);
		putc1(t, ']');
		break;
	default:
		putc1(t, '{');
		n = t_below(6);
		for (i = 0; i < n; i++) {
			if (i > 0)
				putc1(t, ',');
			put_ws(t);
			put_string(t);
			put_ws(t);
			putc1(t, ':');
			put_value(t, depth + 1);
		}
		put_ws(t);
		putc1(t, '}');
	}
	put_ws(t);
}

static void
mutate(struct tbuf *t)
{
	static const char tok[] = ",:[]{}\"\\-+.eE0123456789u \x00";
	size_t at;

	if (t->n == 0)
		return;
	at = t_below((unsigned)t->n);
	switch (t_below(4)) {
	case 0:	/* flip a byte */
		t->b[at] = t_below(2) ? (char)t_below(256) :
					tok[t_below(sizeof(tok) - 1)];
		break;
	case 1:	/* truncate */
		t->n = at;
		break;
	case 2:	/* insert */
		if (t->n < sizeof(t->b)) {
			memmove(t->b + at + 1, t->b + at, t->n - at);
			t->b[at] = t_below(2) ? (char)t_below(256)
					 : tok[t_below(sizeof(tok) - 1)];
			t->n++;
		}
		break;
	default:	/* delete */
		memmove(t->b + at, t->b + at + 1, t->n - at - 1);
		t->n--;
	}
}

static void
test_random(void)
{
	static struct tbuf t, m;
	long i, k, bad = 0, tried = 0, took = 0, mtook = 0;
	bool acc;

	for (i = 0; i < RANDOM_TEXTS; i++) {
		t.n = 0;
		if (t_below(8) == 0)
			put(&t, "\xEF\xBB\xBF", 3);
		put_value(&t, 0);
		tried++;
		if (!agree(t.b, t.n, &acc))
			bad++;
		took += acc;
		for (k = 0; k < MUTATIONS_PER_TEXT; k++) {
			m = t;
			mutate(&m);
			if (t_below(2))
				mutate(&m);
			tried++;
			if (!agree(m.b, m.n, &acc))
				bad++;
			mtook += acc;
		}
	}
	printf("# %ld texts: %ld of %d valid ones and %ld of %d mutants "
	       "accepted by cJSON; %ld differ\n",
	       tried, took, RANDOM_TEXTS, mtook,
	       RANDOM_TEXTS * MUTATIONS_PER_TEXT, bad);
	T_ASSERT("random texts and mutants parse exactly as cJSON parses them",
		 bad == 0);
	T_ASSERT("most random texts are valid, some mutants are not",
		 took > RANDOM_TEXTS / 2 &&
			 mtook < RANDOM_TEXTS * MUTATIONS_PER_TEXT);
}

int
main(void)
{
	t_seed(0x6a736f6e696eULL);	/* the same random texts every run */
	test_numbers();
	test_strings();
	test_shapes();
	test_nomem();
	test_random();
	return T_REPORT();
}
