/*
 * test_jsonin.c - unit tests for jsonin.c: jsonin_parse() must give the
 * tree cJSON_ParseWithLength() gives, or refuse what it refuses, for the
 * edge cases one by one (numbers, strings and escapes, whitespace, BOM,
 * trailing bytes, nesting), under failing allocations, and for thousands
 * of pseudo-random texts (fixed seed) and mutations of them, compared
 * node by node with the real cJSON.  jsonin_parse_ex() the same way:
 * with a keep list it must give cJSON's tree minus the root members not
 * listed (and refuse exactly what cJSON refuses, whatever the skipped
 * members hold), with require_end what cJSON_ParseWithLengthOpts(..., 1)
 * gives; plus every short number run, and the allocations skipping saves.
 * jsonin_parse_top() with a shallow list: cJSON's tree with the listed
 * root members' children deleted (top_only, jsontree.h), by hand-made
 * cases and the random texts, refusing exactly what cJSON refuses.
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

/*
 * jsonin_parse_ex().  The reference is cJSON itself: for every text,
 * each of the four ways to call jsonin_parse_ex must give what cJSON
 * gives, with the root members not in keep deleted from cJSON's tree
 * (keep_only, jsontree.h):
 *
 *   ex(NULL, false) == cJSON_ParseWithLength
 *   ex(keep, false) == keep_only(cJSON_ParseWithLength)
 *                   == keep_only(jsonin_parse), NULL iff jsonin_parse is
 *   ex(NULL, true)  == cJSON_ParseWithLengthOpts(.., NULL, 1)
 *   ex(keep, true)  == keep_only(cJSON_ParseWithLengthOpts(.., NULL, 1))
 */
struct exstats {
	long texts, took, took_end, pruned, refused_end;
};

static bool
agree_one(const char *what, const char *s, size_t n, cJSON *want,
	  cJSON *got)
{
	bool ok = same_tree(want, got);

	if (!ok && shown++ < 10) {
		show(s, n);
		printf("#   %s: want %s, jsonin_parse_ex %s\n", what,
		       want ? "tree" : "NULL", got ? "tree" : "NULL");
	}
	cJSON_Delete(want);
	cJSON_Delete(got);
	return ok;
}

static bool
agree_ex(const char *s, size_t n, const char *const *keep,
	 struct exstats *st)
{
	char *copy = malloc(n ? n : 1);
	cJSON *full, *end;
	bool ok;
	int before = 0;

	if (copy == NULL)
		return false;
	memcpy(copy, s, n);
	full = cJSON_ParseWithLength(copy, n);
	end = cJSON_ParseWithLengthOpts(copy, n, NULL, 1);
	if (st != NULL) {
		st->texts++;
		st->took += full != NULL;
		st->took_end += end != NULL;
		st->refused_end += full != NULL && end == NULL;
		before = cJSON_GetArraySize(full);
	}
	ok = agree_one("ex(NULL,false)", s, n,
		       cJSON_ParseWithLength(copy, n),
		       jsonin_parse_ex(copy, n, NULL, false));
	ok = agree_one("ex(NULL,true)", s, n,
		       cJSON_ParseWithLengthOpts(copy, n, NULL, 1),
		       jsonin_parse_ex(copy, n, NULL, true)) && ok;
	ok = agree_one("ex(keep,false) vs jsonin_parse", s, n,
		       keep_only(jsonin_parse(copy, n), keep),
		       jsonin_parse_ex(copy, n, keep, false)) && ok;
	ok = agree_one("ex(keep,true)", s, n, keep_only(end, keep),
		       jsonin_parse_ex(copy, n, keep, true)) && ok;
	keep_only(full, keep);
	if (st != NULL && cJSON_IsObject(full) &&
	    cJSON_GetArraySize(full) < before)
		st->pruned++;
	ok = agree_one("ex(keep,false)", s, n, full,
		       jsonin_parse_ex(copy, n, keep, false)) && ok;
	free(copy);
	return ok;
}

static const char *const meta_keys[] = {"provider", "usage", "error", NULL};

static bool
ex_agrees_n(const char *s, size_t n)
{
	return agree_ex(s, n, meta_keys, NULL);
}

#define EX_AGREES(lit) ex_agrees_n(lit, sizeof(lit) - 1)

/* The '|'-ended token at *list is tok: then *list moves past it. */
static bool
next_token(const char **list, const char *tok)
{
	const char *bar = strchr(*list, '|');

	if (bar == NULL || strlen(tok) != (size_t)(bar - *list) ||
	    memcmp(tok, *list, (size_t)(bar - *list)) != 0)
		return false;
	*list = bar + 1;
	return true;
}

/* s (strlen) parses with keep to an object whose root keys are, in
 * order, the names in want, each ended by '|' ("" for none, "||" for two
 * empty keys), and agrees with cJSON every way (agree_ex). */
static bool
keeps(const char *s, const char *const *keep, const char *want)
{
	cJSON *j = jsonin_parse_ex(s, strlen(s), keep, false), *c;
	const char *w = want;
	bool ok = cJSON_IsObject(j);

	for (c = ok ? j->child : NULL; ok && c != NULL; c = c->next)
		ok = next_token(&w, c->string);
	ok = ok && *w == '\0';
	cJSON_Delete(j);
	return ok && agree_ex(s, strlen(s), keep, NULL);
}

/* s[0..n) is refused by jsonin_parse_ex with meta_keys (and agrees). */
static bool
ex_refused(const char *s, size_t n)
{
	cJSON *j = jsonin_parse_ex(s, n, meta_keys, false);
	bool ok = j == NULL;

	cJSON_Delete(j);
	return ok && ex_agrees_n(s, n);
}

#define EX_REFUSED(lit) ex_refused(lit, sizeof(lit) - 1)

/* {"skip":<depth arrays>,"provider":1}, a C string of *n bytes: the
 * root object is level 1. */
static char *
deep_member(size_t depth, size_t *n)
{
	static const char head[] = "{\"skip\":", tail[] = ",\"provider\":1}";
	char *t = malloc(sizeof(head) + 2 * depth + sizeof(tail));
	size_t i, k = sizeof(head) - 1;

	if (t == NULL)
		return NULL;
	memcpy(t, head, k);
	for (i = 0; i < depth; i++)
		t[k++] = '[';
	for (i = 0; i < depth; i++)
		t[k++] = ']';
	memcpy(t + k, tail, sizeof(tail));	/* with its NUL */
	*n = k + sizeof(tail) - 1;
	return t;
}

static void
test_keep_cases(void)
{
	static const char *const none[] = {NULL};
	static const char *const empty_key[] = {"", NULL};
	static const char *const emoji[] = {"\xf0\x9f\x98\x80", NULL};
	static const char *const twice[] = {"usage", "usage", NULL};
	char *t, *long_key;
	size_t n, i;
	bool ok;
	cJSON *j;

	T_ASSERT("only the listed root members, in document order",
		 keeps("{\"id\":\"x\",\"usage\":{\"a\":1},\"choices\":[1],"
		       "\"provider\":\"p\",\"model\":\"m\"}",
		       meta_keys, "usage|provider|"));
	T_ASSERT("a kept key twice gives both members, in order",
		 keeps("{\"provider\":\"a\",\"x\":1,\"provider\":\"b\"}",
		       meta_keys, "provider|provider|"));
	j = jsonin_parse_ex("{\"provider\":\"a\",\"provider\":\"b\"}", 31,
			    meta_keys, false);
	T_ASSERT("... with their own values",
		 cJSON_GetArraySize(j) == 2 &&
			 strcmp(j->child->valuestring, "a") == 0 &&
			 strcmp(j->child->next->valuestring, "b") == 0 &&
			 j->child->prev == j->child->next);
	cJSON_Delete(j);
	T_ASSERT("a key listed twice in keep still builds the member once",
		 keeps("{\"usage\":1}", twice, "usage|"));
	T_ASSERT("keys compare decoded: pro\\u0076ider is provider",
		 keeps("{\"pro\\u0076ider\":\"p\",\"\\u0075sage\":1}",
		       meta_keys, "provider|usage|"));
	T_ASSERT("... up to the C string's NUL: provider\\u0000x and a raw NUL",
		 keeps("{\"provider\\u0000x\":1}", meta_keys, "provider|") &&
			 agree_ex("{\"error\0x\":1}", 13, meta_keys, NULL));
	j = jsonin_parse_ex("{\"error\0x\":1}", 13, meta_keys, false);
	T_ASSERT("... the raw-NUL key is kept",
		 cJSON_GetArraySize(j) == 1);
	cJSON_Delete(j);
	T_ASSERT("case and spacing matter: Provider, \"provider \", provide",
		 keeps("{\"Provider\":1,\"provider \":2,\"provide\":3,"
		       "\"providers\":4}",
		       meta_keys, ""));
	T_ASSERT("a surrogate-pair key matches its UTF-8",
		 keeps("{\"\\ud83d\\ude00\":1,\"\xf0\x9f\x98\x80\":2,\"x\":3}",
		       emoji, "\xf0\x9f\x98\x80|\xf0\x9f\x98\x80|"));
	T_ASSERT("an empty keep list gives an empty object",
		 keeps("{\"provider\":1}", none, "") &&
			 keeps("{}", none, ""));
	T_ASSERT("the empty key can be kept",
		 keeps("{\"\":1,\"a\":2,\"\":3}", empty_key, "||"));
	T_ASSERT("nested members are built whole, whatever their keys",
		 keeps("{\"usage\":{\"x\":1,\"provider\":[{\"id\":2}]}}",
		       meta_keys, "usage|") &&
			 EX_AGREES("{\"a\":{\"provider\":1},\"error\":{\"b\":2}}"));
	T_ASSERT("a root that is not an object is built whole",
		 EX_AGREES("[{\"id\":1,\"provider\":2}]") &&
			 EX_AGREES("\"provider\"") && EX_AGREES("12") &&
			 EX_AGREES("null"));
	/* A key of 128+ raw bytes with an escape: decoded on the heap. */
	long_key = malloc(400);
	if (long_key == NULL)
		return;
	n = (size_t)snprintf(long_key, 400, "{\"a\":1,\"\\u0070rovider\\u0000");
	for (i = 0; i < 150; i++)
		long_key[n++] = 'x';
	memcpy(long_key + n, "\":2,\"\\u0070", 11);
	n += 11;
	for (i = 0; i < 150; i++)
		long_key[n++] = 'y';
	memcpy(long_key + n, "\":3}", 5);
	n += 4;
	ok = keeps(long_key, meta_keys, "provider|");
	long_key[n - 4] = '\\';	/* "...yy\:3}": unterminated now */
	ok = ok && ex_refused(long_key, n);
	free(long_key);
	T_ASSERT("long escaped keys compare right, kept or not", ok);

	T_ASSERT("bad escapes in a skipped member are refused",
		 EX_REFUSED("{\"skip\":\"\\x\",\"provider\":1}") &&
			 EX_REFUSED("{\"skip\":[\"\\a\"],\"provider\":1}") &&
			 EX_REFUSED("{\"s\\q\":1,\"provider\":1}") &&
			 EX_REFUSED("{\"skip\":\"\\u12\"}") &&
			 EX_REFUSED("{\"skip\":{\"k\":\"\\u\"}}"));
	T_ASSERT("bad surrogates in a skipped member or key are refused",
		 EX_REFUSED("{\"skip\":\"\\ud800\",\"provider\":1}") &&
			 EX_REFUSED("{\"skip\":\"\\udc00\"}") &&
			 EX_REFUSED("{\"skip\":\"\\ud800\\u0041\"}") &&
			 EX_REFUSED("{\"\\ud800x\\udc00\":1}") &&
			 EX_REFUSED("{\"provider\":1,\"s\":[\"\\udbff\"]}"));
	T_ASSERT("... and the quirks cJSON takes are taken",
		 keeps("{\"skip\":\"\\u00zz\\uG000\",\"provider\":1}",
		       meta_keys, "provider|") &&
			 keeps("{\"s\":\"\\u000\\\\\",\"error\":2}", meta_keys,
			       "error|") &&
			 keeps("{\"s\":\"a\x01\\ud83d\\ude00\",\"usage\":3}",
			       meta_keys, "usage|"));
	T_ASSERT("unterminated strings in a skipped member are refused",
		 EX_REFUSED("{\"provider\":1,\"skip\":\"abc}") &&
			 EX_REFUSED("{\"provider\":1,\"skip\":\"abc\\\"}") &&
			 EX_REFUSED("{\"provider\":1,\"skip\":\"abc\\") &&
			 EX_REFUSED("{\"provider\":1,\"skip") &&
			 EX_REFUSED("{\"provider\":1,\"skip\":[\"a"));
	T_ASSERT("huge and odd numbers in a skipped member",
		 keeps("{\"s\":1e999,\"t\":-1e999,\"u\":[1e-999,-0,-.5],"
		       "\"provider\":1}",
		       meta_keys, "provider|") &&
			 keeps("{\"s\":12345678901234567890123456789012345678"
			       "90123456789012345678901234567890123456789012"
			       "3456789012345678901234567890,\"usage\":1}",
			       meta_keys, "usage|") &&
			 EX_REFUSED("{\"s\":1.2.3,\"provider\":1}") &&
			 EX_REFUSED("{\"s\":1e,\"provider\":1}") &&
			 EX_REFUSED("{\"s\":-,\"provider\":1}") &&
			 EX_REFUSED("{\"s\":[0x10],\"provider\":1}") &&
			 EX_REFUSED("{\"s\":+1}") && EX_REFUSED("{\"s\":.5}"));
	T_ASSERT("bad literals and shapes in a skipped member are refused",
		 EX_REFUSED("{\"s\":nul,\"provider\":1}") &&
			 EX_REFUSED("{\"s\":[1,],\"provider\":1}") &&
			 EX_REFUSED("{\"s\":{\"a\"},\"provider\":1}") &&
			 EX_REFUSED("{\"s\":[1}") && EX_REFUSED("{\"s\":tru") &&
			 EX_REFUSED("{\"s\":{\"a\":1,}}") &&
			 EX_REFUSED("{\"provider\":1,}"));

	/* Nesting: the root object is level 1, so a skipped member may open
	 * 999 more and no more. */
	t = deep_member(999, &n);
	ok = t != NULL && keeps(t, meta_keys, "provider|");
	free(t);
	t = deep_member(1000, &n);
	ok = t != NULL && ex_refused(t, n) && ok;
	free(t);
	t = deep_member(5000, &n);
	ok = t != NULL && ex_refused(t, n) && ok;
	free(t);
	T_ASSERT("999 levels inside a skipped member parse, 1000 are refused",
		 ok);
}

static void
test_require_end(void)
{
	/* Each must agree with cJSON_ParseWithLengthOpts(.., 1); the ones
	 * marked also check the answer itself. */
	static const struct {
		const char *s;
		size_t n;
		bool take;
	} cases[] = {
		{"1", 1, false},	  {"1\0", 2, true},
		{"1 \0", 3, true},	  {"1\0 ", 3, false},
		{"1\0x", 3, false},	  {"1\0\0\0", 4, true},
		{"[1] \t\r\n\0", 8, true}, {"[1] \t", 5, false},
		{"[1]", 3, false},	  {"", 0, false},
		{"\0", 1, false},	  {" \0", 2, false},
		{"{}\0\0", 4, true},	  {"1 2\0", 4, false},
		{"\"a\"\0", 4, true},	  {"\"a\"\"b\"\0", 7, false},
		{"1.2.3\0", 6, false},	  {"1e\0", 3, false},
		{"1e5\0", 4, true},	  {"-0\0", 3, true},
		{"null\0", 5, true},	  {"nullx\0", 6, false},
		{"\xEF\xBB\xBF" "1\0", 5, true},
		{"\x01[\x02]\x03\x1f\0", 7, true},
		{"[1]\0\x01\0", 6, true}, {"[1]\0\x01\0\x21", 7, false},
		{"{\"a\":1}\n", 8, false},
	};
	size_t i;
	bool ok = true, answers = true;
	cJSON *j;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ok = agree_ex(cases[i].s, cases[i].n, meta_keys, NULL) && ok;
		j = jsonin_parse_ex(cases[i].s, cases[i].n, NULL, true);
		if ((j != NULL) != cases[i].take) {
			answers = false;
			show(cases[i].s, cases[i].n);
		}
		cJSON_Delete(j);
	}
	T_ASSERT("require_end agrees with cJSON on the hand-made tails", ok);
	T_ASSERT("... whitespace then a final NUL, nothing else", answers);
	T_ASSERT("NULL text refused",
		 jsonin_parse_ex(NULL, 3, NULL, true) == NULL &&
			 jsonin_parse_ex(NULL, 3, meta_keys, false) == NULL);
}

/*
 * num_len() must be strtod's prefix exactly.  Every run of up to 6 bytes
 * over "05+-eE." (which has every kind of byte a run can hold) is parsed
 * alone, with a NUL after it (require_end), in an array, and as a skipped
 * and a kept member, against cJSON.
 */
static void
test_number_runs(void)
{
	static const char alpha[] = "05+-eE.";
	char run[8], buf[64];
	size_t len, i, k, n;
	long tried = 0, bad = 0, took = 0;
	unsigned idx[6];
	bool acc;

	for (len = 1; len <= 6; len++) {
		memset(idx, 0, sizeof(idx));
		for (;;) {
			for (i = 0; i < len; i++)
				run[i] = alpha[idx[i]];
			run[len] = '\0';
			tried++;
			if (!agree(run, len, &acc))
				bad++;
			took += acc;
			n = (size_t)snprintf(buf, sizeof(buf), "%s", run);
			if (!agree_ex(buf, n + 1, meta_keys, NULL))
				bad++;
			n = (size_t)snprintf(buf, sizeof(buf), "[%s]", run);
			if (!agree(buf, n, NULL))
				bad++;
			n = (size_t)snprintf(buf, sizeof(buf),
					     "{\"s\":%s,\"usage\":%s}", run,
					     run);
			if (!agree_ex(buf, n, meta_keys, NULL))
				bad++;
			for (k = 0; k < len && ++idx[k] == sizeof(alpha) - 1;
			     k++)
				idx[k] = 0;
			if (k == len)
				break;
		}
	}
	printf("# %ld number runs, %ld taken by cJSON; %ld differ\n", tried,
	       took, bad);
	T_ASSERT("every short number run reads as strtod reads it",
		 bad == 0 && took > 1000 && took < tried);
}

/* Skipping allocates nothing: a text whose root members are all skipped
 * costs one allocation (the root), however big its members. */
static long allocs;

static void *
counting_malloc(size_t n)
{
	allocs++;
	return malloc(n);
}

static void
test_skip_allocs(void)
{
	static const char text[] =
		"{\"id\":\"gen-1\",\"choices\":[{\"message\":{\"content\":"
		"\"a\\nb\\\"c\\u00e9\\ud83d\\ude00\"},\"logprobs\":null}],"
		"\"big\":1234567890123456789012345678901234567890123456789012"
		"34567890123456789012345678901234567890,\"f\":-2.5e-7,"
		"\"k\\u0065y\":[true,false,{}],\"usage\":{\"total\":3}}";
	cJSON_Hooks h = {counting_malloc, free};
	cJSON *j, *full;
	long skipped, built;

	cJSON_InitHooks(&h);
	allocs = 0;
	j = jsonin_parse_ex(text, sizeof(text) - 1, meta_keys, false);
	built = allocs;
	cJSON_Delete(j);
	j = jsonin_parse_ex(text, sizeof(text) - 1, meta_keys + 2, false);
	skipped = allocs - built;
	cJSON_InitHooks(NULL);
	T_ASSERT("all members skipped: one allocation, an empty object",
		 skipped == 1 && cJSON_IsObject(j) && j->child == NULL);
	cJSON_Delete(j);
	full = jsonin_parse(text, sizeof(text) - 1);
	T_ASSERT("usage kept: root, usage node and key, total node and key (5)",
		 built == 5 && full != NULL);
	cJSON_Delete(full);
}

/*
 * jsonin_parse_top(text, len, keep, shallow, true) with the k-th
 * allocation failing, k = 0, 1, ... until one run succeeds: every failed
 * run must give NULL (ASan sees any leak), the successful one want's
 * tree.  Returns the k that succeeded plus one, or 0 when none did in
 * 100 tries; *ok false on a tree that differs.
 */
static long
nomem_runs(const char *text, size_t len, const char *const *keep,
	   const char *const *shallow, const cJSON *want, bool *ok)
{
	cJSON_Hooks h = {nomem_malloc, free};
	cJSON *j;
	long k;

	cJSON_InitHooks(&h);
	for (k = 0; k < 100; k++) {
		nomem_left = k;
		j = jsonin_parse_top(text, len, keep, shallow, true);
		if (j != NULL) {
			*ok = *ok && same_tree(want, j);
			cJSON_Delete(j);
			break;
		}
	}
	cJSON_InitHooks(NULL);
	return k < 100 ? k + 1 : 0;
}

/* Failing allocations with a keep list (the heap key path included). */
static void
test_nomem_ex(void)
{
	char text[512];
	cJSON *want;
	size_t n;
	long k;
	bool ok = true;

	n = (size_t)snprintf(
		text, sizeof(text),
		"{\"a\":[1,2.5,\"x\\n\"],\"provider\":\"p\\u00e9\","
		"\"usage\":{\"b\":12345678901234567890123456789012345678901"
		"234567890123456789012345678901234567890123456789},"
		"\"\\u0065rror%0140d\":1,\"error\":{\"c\":[null]}}",
		0);
	want = keep_only(jsonin_parse(text, n), meta_keys);
	k = nomem_runs(text, n + 1, meta_keys, NULL, want, &ok);
	printf("# keep: succeeded with %ld allocations\n", k - 1);
	T_ASSERT("keep: each failed allocation gives NULL, no leak; then the "
		 "tree",
		 ok && k > 8 && cJSON_GetArraySize(want) == 3);
	cJSON_Delete(want);
}

/* Raw JSON keys that decode to kept names, near misses, and others. */
static const struct {
	const char *s;
	size_t n;
} key_pool[] = {
#define K(lit) {lit, sizeof(lit) - 1}
	K("\"provider\""),	 K("\"usage\""),
	K("\"error\""),		 K("\"id\""),
	K("\"choices\""),	 K("\"\""),
	K("\"pro\\u0076ider\""), K("\"usage\\u0000x\""),
	K("\"error\0x\""),	 K("\"Provider\""),
	K("\"provider \""),	 K("\"\\ud83d\\ude00\""),
	K("\"\\u0075sag\\u0065\""), K("\"e\\rror\""),
#undef K
};

/* Decoded names to draw a keep list from. */
static const char *const keep_pool[] = {
	"provider", "usage", "error", "id", "", "\xf0\x9f\x98\x80",
	"choices",  "e\rror", "x",
};

#define KEEP_POOL (sizeof(keep_pool) / sizeof(keep_pool[0]))

/* A random keep list of 0 to 4 names into keep[0..5). */
static void
draw_keep(const char *keep[5])
{
	unsigned i, n = t_below(5);

	for (i = 0; i < n; i++)
		keep[i] = keep_pool[t_below(KEEP_POOL)];
	keep[n] = NULL;
}

/* A root object whose keys mostly come from key_pool. */
static void
put_root_object(struct tbuf *t)
{
	unsigned i, n = t_below(9), k;

	put_ws(t);
	putc1(t, '{');
	for (i = 0; i < n; i++) {
		if (i > 0)
			putc1(t, ',');
		put_ws(t);
		if (t_below(4) != 0) {
			k = t_below(sizeof(key_pool) / sizeof(key_pool[0]));
			put(t, key_pool[k].s, key_pool[k].n);
		} else {
			put_string(t);
		}
		put_ws(t);
		putc1(t, ':');
		put_value(t, 1);
	}
	put_ws(t);
	putc1(t, '}');
}

/* What may follow a value: nothing, NULs, whitespace, garbage. */
static void
put_tail(struct tbuf *t)
{
	static const char junk[] = "x]}1,\"\x7f\xff";

	switch (t_below(7)) {
	case 0:
		break;
	case 1:
		putc1(t, '\0');
		break;
	case 2:	/* whitespace, then a NUL, sometimes more NULs */
		put_ws(t);
		putc1(t, '\0');
		while (t_below(3) == 0)
			putc1(t, '\0');
		break;
	case 3:	/* whitespace only */
		putc1(t, (char)(1 + t_below(32)));
		put_ws(t);
		break;
	case 4:	/* a NUL, then garbage */
		putc1(t, '\0');
		putc1(t, junk[t_below(sizeof(junk) - 1)]);
		break;
	case 5:	/* garbage */
		putc1(t, junk[t_below(sizeof(junk) - 1)]);
		put_ws(t);
		break;
	default:	/* NUL, whitespace, NUL */
		putc1(t, '\0');
		put_ws(t);
		putc1(t, (char)t_below(2));
	}
}

static void
test_random_ex(void)
{
	static struct tbuf t, m;
	struct exstats st = {0, 0, 0, 0, 0};
	const char *keep[5];
	long i, k, bad = 0;

	for (i = 0; i < RANDOM_TEXTS; i++) {
		t.n = 0;
		if (t_below(8) == 0)
			put(&t, "\xEF\xBB\xBF", 3);
		if (t_below(4) != 0)
			put_root_object(&t);
		else
			put_value(&t, 0);
		put_tail(&t);
		draw_keep(keep);
		if (!agree_ex(t.b, t.n, keep, &st))
			bad++;
		for (k = 0; k < MUTATIONS_PER_TEXT; k++) {
			m = t;
			mutate(&m);
			if (t_below(2))
				mutate(&m);
			draw_keep(keep);
			if (!agree_ex(m.b, m.n, keep, &st))
				bad++;
		}
	}
	printf("# %ld texts: %ld accepted, %ld with require_end (%ld refused "
	       "only for their tail), %ld pruned by keep; %ld differ\n",
	       st.texts, st.took, st.took_end, st.refused_end, st.pruned,
	       bad);
	T_ASSERT("random texts, tails and keep lists: jsonin_parse_ex agrees "
		 "with cJSON",
		 bad == 0);
	T_ASSERT("... with many texts accepted, pruned, and refused by their "
		 "tail",
		 st.took > st.texts / 4 && st.took < st.texts &&
			 st.took_end > st.took / 5 &&
			 st.refused_end > st.took / 5 &&
			 st.pruned > st.texts / 10);
}

/* jsonin_strict(): what cJSON takes but JSON.parse would not. */
static void
test_strict(void)
{
	static const struct {
		const char *text;
		bool strict;
	} cases[] = {
		{"{\"a\":[1,-0,0.5,10,1e5,1E+5,-1.25e-3,true,false,null]}", true},
		{"{ \"a\" :\t[ \"x\\ny\\\"\\\\\" ]\r\n}", true},
		{"\"\\u00e9\\ud83d\\ude00\"", true},
		{"{\"e\":\"true false null 01 1. \\u0001\"}", true},
		{"01", false},
		{"-01", false},
		{"1.", false},
		{"-.5", false},
		{"1.e5", false},
		{"[1e5,00]", false},
		{"\"tab\there\"", false},
		{"\"nl\nhere\"", false},
		{"[1,\x01 2]", false},
		{"[1,\x0b 2]", false},
		{"[\"a\"]\x1f", false},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *t = cases[i].text;
		cJSON *o = jsonin_parse(t, strlen(t) + 1);
		T_ASSERT("strict: cJSON takes the case", o != NULL);
		T_ASSERT(cases[i].strict ? "strict: taken as strict JSON" :
					   "strict: refused as not strict JSON",
			 jsonin_strict(t, strlen(t)) == cases[i].strict);
		cJSON_Delete(o);
	}
	T_ASSERT("strict: a NUL among the bytes is not strict",
		 !jsonin_strict("[1]\0", 4));
}


/*
 * jsonin_parse_top().  For every text, with keep and shallow lists:
 *
 *   top(keep, shallow, false) == top_only(cJSON_ParseWithLength)
 *                             == top_only(jsonin_parse)
 *   top(keep, shallow, true)  == top_only(cJSON_ParseWithLengthOpts(..1))
 *   top(keep, NULL, x)        == ex(keep, x)
 *
 * *emptied counts the texts where a shallow member lost children, so a
 * caller can tell the lists did something.
 */
static bool
agree_top(const char *s, size_t n, const char *const *keep,
	  const char *const *shallow, long *emptied)
{
	char *copy = malloc(n ? n : 1);
	cJSON *full, *c;
	bool ok;

	if (copy == NULL)
		return false;
	memcpy(copy, s, n);
	full = cJSON_ParseWithLength(copy, n);
	if (emptied != NULL && cJSON_IsObject(full) && shallow != NULL) {
		for (c = full->child; c != NULL; c = c->next)
			if (c->child != NULL && kept_key(c->string, shallow))
				break;
		*emptied += c != NULL;
	}
	ok = agree_one("top(keep,shallow,false)", s, n,
		       top_only(full, keep, shallow),
		       jsonin_parse_top(copy, n, keep, shallow, false));
	ok = agree_one("top(keep,shallow,false) vs jsonin_parse", s, n,
		       top_only(jsonin_parse(copy, n), keep, shallow),
		       jsonin_parse_top(copy, n, keep, shallow, false)) && ok;
	ok = agree_one("top(keep,shallow,true)", s, n,
		       top_only(cJSON_ParseWithLengthOpts(copy, n, NULL, 1),
				keep, shallow),
		       jsonin_parse_top(copy, n, keep, shallow, true)) && ok;
	ok = agree_one("top(keep,NULL,true) vs ex", s, n,
		       jsonin_parse_ex(copy, n, keep, true),
		       jsonin_parse_top(copy, n, keep, NULL, true)) && ok;
	free(copy);
	return ok;
}

static const char *const shallow_m[] = {"m", NULL};

/* s (strlen) with keep and shallow_m: root keys as in keeps() (want),
 * each member's type and child count as in shape ("a0" array without
 * children, "o0", "s" string, "n" number, "A2" array with 2 children,
 * ...; one token per member, ended by '|'), and agreeing with cJSON. */
static bool
shallows(const char *s, const char *const *keep, const char *want,
	 const char *shape)
{
	cJSON *j = jsonin_parse_top(s, strlen(s), keep, shallow_m, false), *c;
	const char *w = want, *h = shape;
	char tok[16];
	bool ok = cJSON_IsObject(j);

	for (c = ok ? j->child : NULL; ok && c != NULL; c = c->next) {
		snprintf(tok, sizeof(tok), "%c%d",
			 cJSON_IsArray(c) ? (c->child ? 'A' : 'a') :
			 cJSON_IsObject(c) ? (c->child ? 'O' : 'o') :
			 cJSON_IsString(c) ? 's' :
			 cJSON_IsNumber(c) ? 'n' : 'l',
			 cJSON_GetArraySize(c));
		if (strchr("snl", tok[0]) != NULL)
			tok[1] = '\0';
		ok = next_token(&w, c->string) && next_token(&h, tok);
	}
	ok = ok && *w == '\0' && *h == '\0';
	cJSON_Delete(j);
	return ok && agree_top(s, strlen(s), keep, shallow_m, NULL) &&
	       agree_top(s, strlen(s) + 1, keep, shallow_m, NULL);
}

/* s[0..n) is refused by jsonin_parse_top with shallow_m, whatever keep,
 * and agrees with cJSON. */
static bool
top_refused(const char *s, size_t n)
{
	static const char *const none[] = {NULL};
	cJSON *a = jsonin_parse_top(s, n, NULL, shallow_m, false);
	cJSON *b = jsonin_parse_top(s, n, none, shallow_m, true);
	bool ok = a == NULL && b == NULL;

	cJSON_Delete(a);
	cJSON_Delete(b);
	return ok && agree_top(s, n, NULL, shallow_m, NULL) &&
	       agree_top(s, n, meta_keys, shallow_m, NULL);
}

#define TOP_REFUSED(lit) top_refused(lit, sizeof(lit) - 1)

/* {"m":<depth arrays>,"provider":1}: the root object is level 1. */
static char *
deep_shallow(size_t depth, size_t *n)
{
	char *t = deep_member(depth, n);

	if (t != NULL)
		memcpy(t + 2, "m\":   ", 6);	/* {"skip": -> {"m":    */
	return t;
}

static void
test_shallow_cases(void)
{
	static const char *const none[] = {NULL};
	static const char *const keep_m[] = {"m", "x", NULL};
	char *t;
	size_t n;
	bool ok;

	T_ASSERT("shallow object and array: typed nodes without children",
		 shallows("{\"m\":{\"a\":1,\"b\":[2]},\"x\":[1,2]}", NULL,
			  "m|x|", "o0|A2|") &&
			 shallows("{\"x\":{\"k\":3},\"m\":[{\"r\":\"u\"},[],7]}",
				  NULL, "x|m|", "O1|a0|"));
	T_ASSERT("empty shallow containers, and whitespace around them",
		 shallows("{ \"m\" : [ ] , \"x\":1}", NULL, "m|x|", "a0|n|") &&
			 shallows("{\"m\"\t:\n{}\r}", NULL, "m|", "o0|"));
	T_ASSERT("a shallow leaf is built as usual",
		 shallows("{\"m\":\"s\\u00e9\"}", NULL, "m|", "s|") &&
			 shallows("{\"m\":-1.5e3}", NULL, "m|", "n|") &&
			 shallows("{\"m\":true}", NULL, "m|", "l|") &&
			 shallows("{\"m\":null}", NULL, "m|", "l|"));
	T_ASSERT("shallow wins over keep; a shallow key keep leaves out is "
		 "built",
		 shallows("{\"m\":[1],\"x\":[1],\"y\":2}", keep_m, "m|x|",
			  "a0|A1|") &&
			 shallows("{\"m\":[1],\"x\":[1]}", none, "m|", "a0|") &&
			 shallows("{\"m\":{\"a\":1},\"usage\":{\"b\":2}}",
				  meta_keys, "m|usage|", "o0|O1|"));
	T_ASSERT("a duplicated shallow key: each copy, shallow, in order",
		 shallows("{\"m\":[1],\"x\":0,\"m\":{\"a\":[]},\"m\":\"s\"}",
			  none, "m|m|m|", "a0|o0|s|"));
	T_ASSERT("keys compare decoded: \\u006d and m\\u0000x are m",
		 shallows("{\"\\u006d\":[1],\"m\\u0000x\":{\"a\":1}}", none,
			  "m|m|", "a0|o0|"));
	T_ASSERT("only root members: nested m and a non-object root whole",
		 shallows("{\"x\":{\"m\":[1]}}", NULL, "x|", "O1|") &&
			 agree_top("[{\"m\":[1]}]", 11, NULL, shallow_m, NULL) &&
			 agree_top("\"m\"", 3, none, shallow_m, NULL));
	T_ASSERT("bad escapes and surrogates inside a shallow member refused",
		 TOP_REFUSED("{\"m\":[\"\\x\"],\"x\":1}") &&
			 TOP_REFUSED("{\"m\":{\"k\":\"\\u12\"}}") &&
			 TOP_REFUSED("{\"m\":{\"\\q\":1}}") &&
			 TOP_REFUSED("{\"m\":[\"\\ud800\"]}") &&
			 TOP_REFUSED("{\"m\":[{\"c\":\"\\udc00x\"}]}") &&
			 TOP_REFUSED("{\"m\":\"\\a\"}"));
	T_ASSERT("bad shapes, numbers, literals inside a shallow member "
		 "refused",
		 TOP_REFUSED("{\"m\":[1,]}") && TOP_REFUSED("{\"m\":{\"a\"}}") &&
			 TOP_REFUSED("{\"m\":[1}") &&
			 TOP_REFUSED("{\"m\":[1.2.3]}") &&
			 TOP_REFUSED("{\"m\":[nul]}") &&
			 TOP_REFUSED("{\"m\":{\"a\":1,}}") &&
			 TOP_REFUSED("{\"m\":[\"abc") && TOP_REFUSED("{\"m\":[") &&
			 TOP_REFUSED("{\"m\":") && TOP_REFUSED("{\"m\"") &&
			 TOP_REFUSED("{\"m\":[]") && TOP_REFUSED("{\"m\":[],}"));
	T_ASSERT("... and the quirks cJSON takes are taken",
		 shallows("{\"m\":[\"\\u00zz\",\"a\x01\",-0,1e999]}", NULL, "m|",
			  "a0|"));
	t = deep_shallow(999, &n);
	ok = t != NULL && shallows(t, meta_keys, "m|provider|", "a0|n|");
	free(t);
	t = deep_shallow(1000, &n);
	ok = t != NULL && top_refused(t, n) && ok;
	free(t);
	t = deep_shallow(5000, &n);
	ok = t != NULL && top_refused(t, n) && ok;
	free(t);
	T_ASSERT("999 levels inside a shallow member parse, 1000 are refused",
		 ok);
	T_ASSERT("NULL text and empty text refused",
		 jsonin_parse_top(NULL, 3, NULL, shallow_m, true) == NULL &&
			 jsonin_parse_top("", 0, NULL, shallow_m, false) ==
				 NULL);
}

/* A shallow member costs its node and key: a text whose only member
 * kept is a big shallow one makes 3 allocations. */
static void
test_shallow_allocs(void)
{
	static const char *const none[] = {NULL};
	static const char text[] =
		"{\"model\":\"x\",\"m\":[{\"role\":\"user\",\"content\":"
		"\"a\\nb\\\"c\\u00e9\\ud83d\\ude00\"},{\"content\":[{\"t\":1.5,"
		"\"u\":[true,null,12345678901234567890123456789012345678901"
		"23456789012345678901234567890]}]}],\"n\":1}";
	cJSON_Hooks h = {counting_malloc, free};
	cJSON *j;
	long used;

	cJSON_InitHooks(&h);
	allocs = 0;
	j = jsonin_parse_top(text, sizeof(text), none, shallow_m, true);
	used = allocs;
	cJSON_InitHooks(NULL);
	T_ASSERT("shallow: root, the node and its key (3 allocations)",
		 used == 3 && cJSON_GetArraySize(j) == 1 &&
			 cJSON_IsArray(j->child) && j->child->child == NULL);
	cJSON_Delete(j);
}

/* Failing allocations with a shallow list (plus keep). */
static void
test_nomem_top(void)
{
	static const char text[] =
		"{\"a\":[1,\"x\\n\"],\"m\":[{\"r\":\"u\",\"c\":[1,2]}],"
		"\"provider\":{\"o\":[\"p\"]},\"m\":\"s\\u00e9\",\"error\":2}";
	cJSON *want;
	long k;
	bool ok = true;

	want = top_only(jsonin_parse(text, sizeof(text) - 1), meta_keys,
			shallow_m);
	k = nomem_runs(text, sizeof(text), meta_keys, shallow_m, want, &ok);
	printf("# shallow: succeeded with %ld allocations\n", k - 1);
	T_ASSERT("shallow: each failed allocation gives NULL, no leak; then "
		 "the tree",
		 ok && k > 8 && cJSON_GetArraySize(want) == 4);
	cJSON_Delete(want);
}

/* The random texts of test_random_ex, with a shallow list too: drawn
 * like a keep list, or half the time most names key_pool decodes to, so
 * that many members with children are built shallow. */
static void
test_random_top(void)
{
	static const char *const wide[] = {"provider", "usage", "error", "id",
					   "choices", "", "Provider", NULL};
	static struct tbuf t, m;
	const char *keep[5], *shallow[5];
	long i, k, bad = 0, texts = 0, emptied = 0;

	for (i = 0; i < RANDOM_TEXTS; i++) {
		t.n = 0;
		if (t_below(8) == 0)
			put(&t, "\xEF\xBB\xBF", 3);
		if (t_below(4) != 0)
			put_root_object(&t);
		else
			put_value(&t, 0);
		put_tail(&t);
		for (k = 0; k <= MUTATIONS_PER_TEXT; k++) {
			m = t;
			if (k > 0)
				mutate(&m);
			draw_keep(keep);
			draw_keep(shallow);
			texts++;
			if (!agree_top(m.b, m.n, t_below(4) ? keep : NULL,
				       t_below(2) ? wide :
				       t_below(4) ? shallow : NULL,
				       &emptied))
				bad++;
		}
	}
	printf("# %ld texts with shallow lists, %ld had children removed; "
	       "%ld differ\n",
	       texts, emptied, bad);
	T_ASSERT("random texts, keep and shallow lists: jsonin_parse_top "
		 "agrees with cJSON",
		 bad == 0);
	T_ASSERT("... with many shallow members that had children",
		 emptied > texts / 50);
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
	test_keep_cases();
	test_require_end();
	test_number_runs();
	test_skip_allocs();
	test_nomem_ex();
	test_random_ex();
	test_shallow_cases();
	test_shallow_allocs();
	test_nomem_top();
	test_random_top();
	test_strict();
	return T_REPORT();
}
