/*
 * test_jsonscan.c - unit tests for jsonscan.c: the byte ranges of the
 * top-level members of objects cJSON accepts (BOM and whitespace around,
 * nested objects and strings holding braces, brackets, commas, colons and
 * quotes, escapes, every kind of scalar), the end of the walk, bounded
 * reads on text cJSON refuses, and jsonscan_has_nul() against cJSON's own
 * decoding.
 */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "t.h"
#include "jsonscan.h"

#define MAX_MEMBERS 16

/* Scans text; "key=value|key=value|..." with each range's bytes, or
 * "!" when begin fails.  Static buffer. */
static const char *
ranges(const char *text, size_t len)
{
	static char out[1024];
	struct jsonscan_member m;
	struct jsonscan s;
	size_t o = 0;

	out[0] = '\0';
	if (!jsonscan_begin(&s, text, len))
		return "!";
	while (jsonscan_next(&s, &m) && o < sizeof(out) - 4) {
		int n = snprintf(out + o, sizeof(out) - o, "%s%.*s=%.*s",
		                 o ? "|" : "", (int)m.key_len, text + m.key_off,
		                 (int)m.val_len, text + m.val_off);
		if (n < 0 || (size_t)n >= sizeof(out) - o)
			break;
		o += (size_t)n;
	}
	return out;
}

static int
scans(const char *text, const char *want)
{
	const char *got = ranges(text, strlen(text));

	if (strcmp(got, want) != 0) {
		printf("#   got  %s\n#   want %s\n", got, want);
		return 0;
	}
	return 1;
}

static void
test_ranges(void)
{
	T_ASSERT("empty object: no members", scans("{}", ""));
	T_ASSERT("empty object with whitespace: no members",
	         scans(" {\n\t} ", ""));
	T_ASSERT("one member", scans("{\"a\":1}", "\"a\"=1"));
	T_ASSERT("whitespace around and inside, BOM before",
	         scans("\xEF\xBB\xBF \r\n{ \"a\" :\t1 ,\n\"b\" : \"x\" }\n",
	               "\"a\"=1|\"b\"=\"x\""));
	T_ASSERT("control bytes count as whitespace, as in cJSON",
	         scans("\x01{\x02\"a\"\x1f:\x7f\x01}", "\"a\"=\x7f"));
	T_ASSERT("scalars of every kind",
	         scans("{\"t\":true,\"f\":false,\"n\":null,\"x\":-1.5E+3,"
	               "\"o\":01,\"s\":\"\"}",
	               "\"t\"=true|\"f\"=false|\"n\"=null|\"x\"=-1.5E+3|"
	               "\"o\"=01|\"s\"=\"\""));
	T_ASSERT("nested containers and strings with braces and quotes",
	         scans("{\"m\":[{\"c\":\"} ] { [ , : \\\" \\\\\"},[]],"
	               "\"o\":{\"\":{\"}\":\"{\"}},\"\\\"}\":\"]\"}",
	               "\"m\"=[{\"c\":\"} ] { [ , : \\\" \\\\\"},[]]|"
	               "\"o\"={\"\":{\"}\":\"{\"}}|\"\\\"}\"=\"]\""));
	T_ASSERT("a key with escapes is reported as written",
	         scans("{\"pro\\u0076ider\":null}", "\"pro\\u0076ider\"=null"));
	T_ASSERT("duplicate keys: each copy reported",
	         scans("{\"a\":1,\"a\":2}", "\"a\"=1|\"a\"=2"));
	T_ASSERT("an array is not an object", scans("[1]", "!"));
	T_ASSERT("a string is not an object", scans("\"{\"", "!"));
	T_ASSERT("empty text", scans("", "!"));
	T_ASSERT("bytes after the object are not looked at",
	         scans("{\"a\":1}{\"b\":2}", "\"a\"=1"));
}

/* Text cJSON refuses: the walk ends, in bounds (under ASan: each case
 * is copied to a buffer of exactly its length). */
static void
test_refused(void)
{
	static const char *const bad[] = {
		"{", "{\"", "{\"a", "{\"a\"", "{\"a\":", "{\"a\":1",
		"{\"a\":1,", "{\"a\":[", "{\"a\":\"x", "{\"a\":\"\\",
		"{\"a\":{\"b\":[1,2", "{,}", "{\"a\" 1}", "{1:2}",
		"{\"a\":}", "{\"a\":1 \"b\":2}",
	};
	struct jsonscan_member m;
	struct jsonscan s;
	size_t i, n, len;
	int ok = 1;
	char *p;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		len = strlen(bad[i]);
		if ((p = malloc(len ? len : 1)) == NULL)
			abort();
		memcpy(p, bad[i], len);
		n = 0;
		if (jsonscan_begin(&s, p, len))
			while (jsonscan_next(&s, &m) && n < 10) {
				ok = ok && m.val_off + m.val_len <= len;
				n++;
			}
		ok = ok && n < 10 && !jsonscan_next(&s, &m);
		free(p);
	}
	T_ASSERT("refused text: the walk ends within the bytes", ok);
	T_ASSERT("refused text: an unterminated value is no member",
	         scans("{\"a\":1,\"b\":\"x", "\"a\"=1") &&
	             scans("{\"a\":[1,{}", ""));
}

/* jsonscan_has_nul(tok) is true exactly when cJSON's decoded string is
 * shorter than the string JSON.parse would read. */
static int
nul(const char *tok)
{
	return jsonscan_has_nul(tok, strlen(tok));
}

static void
test_has_nul(void)
{
	static const char raw[] = "\"a\0b\"";

	T_ASSERT("has_nul: plain string", !nul("\"abc\""));
	T_ASSERT("has_nul: empty string", !nul("\"\""));
	T_ASSERT("has_nul: \\u0000", nul("\"a\\u0000b\""));
	T_ASSERT("has_nul: \\u0000 first and last",
	         nul("\"\\u0000\"") && nul("\"ab\\u0000\""));
	T_ASSERT("has_nul: an escaped backslash before u0000 is no escape",
	         !nul("\"a\\\\u0000\""));
	T_ASSERT("has_nul: \\\\ then \\u0000 is one",
	         nul("\"a\\\\\\u0000\""));
	T_ASSERT("has_nul: a bad hex digit reads as 0 in cJSON",
	         nul("\"\\u00zz\"") && nul("\"\\ug000\""));
	T_ASSERT("has_nul: other \\u escapes",
	         !nul("\"\\u0001\\u00e9\\uFFFF\\u0076\""));
	T_ASSERT("has_nul: a surrogate pair",
	         !nul("\"\\ud83d\\ude00x\"") && nul("\"\\ud83d\\ude00\\u0000\""));
	T_ASSERT("has_nul: simple escapes",
	         !nul("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\""));
	T_ASSERT("has_nul: a raw NUL byte",
	         jsonscan_has_nul(raw, sizeof(raw) - 1));
	T_ASSERT("has_nul: too short to be a string", !jsonscan_has_nul("\"", 1));
}

/* The same as cJSON, on each key of an object with many kinds. */
static void
test_against_cjson(void)
{
	static const char text[] =
		"{\"a\":\"x\\u0000y\",\"b\\u0000\":1,\"c\":\"\\u00e9\","
		"\"d\":\"\\\\u0000\",\"e\":12345678901234567890,"
		"\"f\":[\"\\u0000\"]}";
	struct jsonscan_member m;
	struct jsonscan s;
	cJSON *root = cJSON_Parse(text), *it, *v;
	int ok = root != NULL && jsonscan_begin(&s, text, strlen(text));

	for (it = root ? root->child : NULL; ok && it != NULL;
	     it = it->next) {
		ok = jsonscan_next(&s, &m);
		if (!ok)
			break;
		v = cJSON_ParseWithLength(text + m.val_off, m.val_len);
		ok = cJSON_Compare(v, it, 1);
		cJSON_Delete(v);
	}
	T_ASSERT("against cJSON: every value range parses to the member",
	         ok && !jsonscan_next(&s, &m));
	T_ASSERT("against cJSON: cut strings are the ones has_nul names",
	         root != NULL &&
	             strcmp(cJSON_GetObjectItem(root, "a")->valuestring, "x") ==
	                 0 &&
	             cJSON_GetObjectItem(root, "b") != NULL &&
	             nul("\"x\\u0000y\"") && nul("\"b\\u0000\"") &&
	             !nul("\"\\\\u0000\""));
	cJSON_Delete(root);
}

/* The array walk: each element's bytes, as many as cJSON's children. */
static void
test_array(void)
{
	static const char a[] = " [ {\"a\":[1,\"]\"]} ,\"x,y\", 12 ,null,"
				"[[]] ] ";
	static const char *const want[] = {"{\"a\":[1,\"]\"]}", "\"x,y\"",
					   "12", "null", "[[]]"};
	struct jsonscan s;
	size_t off, n, i = 0;
	bool ok = jsonscan_begin_array(&s, a, strlen(a));

	while (ok && jsonscan_next_elem(&s, &off, &n)) {
		ok = i < 5 && n == strlen(want[i]) &&
		     memcmp(a + off, want[i], n) == 0;
		i++;
	}
	T_ASSERT("array: every element's bytes, in order", ok && i == 5);
	T_ASSERT("array: an empty array has none",
		 jsonscan_begin_array(&s, "[ ]", 3) &&
			 !jsonscan_next_elem(&s, &off, &n));
	T_ASSERT("array: an object is no array",
		 !jsonscan_begin_array(&s, "{}", 2) &&
			 !jsonscan_next_elem(&s, &off, &n));
}

int
main(void)
{
	test_array();
	test_ranges();
	test_refused();
	test_has_nul();
	test_against_cjson();
	return T_REPORT();
}
