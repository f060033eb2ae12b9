/*
 * test_jsonscan.c - unit tests for jsonscan.c: the byte ranges of the
 * top-level members of objects cJSON accepts (BOM and whitespace around,
 * nested objects and strings holding braces, brackets, commas, colons and
 * quotes, escapes, every kind of scalar), the end of the walk, bounded
 * reads on text cJSON refuses, jsonscan_has_nul() against cJSON's own
 * decoding, and jsonscan_size() against the trees cJSON builds (their
 * nodes, and the bytes their allocations take).
 */
#include <malloc.h>
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

/* The nodes of a cJSON tree. */
static size_t
tree_nodes(const cJSON *o)
{
	size_t n = 1;
	const cJSON *c;

	for (c = o->child; c != NULL; c = c->next)
		n += tree_nodes(c);
	return n;
}

/* The most bytes cJSON's chunks took at once (usable size and glibc's
 * 8-byte header), through its hooks: the Debian build's parse_number
 * mallocs a copy of each number and frees it at once. */
static size_t live_bytes, peak_bytes;

static void *
count_malloc(size_t n)
{
	void *p = malloc(n);

	if (p != NULL) {
		live_bytes += malloc_usable_size(p) + 8;
		if (live_bytes > peak_bytes)
			peak_bytes = live_bytes;
	}
	return p;
}

static void
count_free(void *p)
{
	if (p != NULL)
		live_bytes -= malloc_usable_size(p) + 8;
	free(p);
}

/* Parses text under the counting hooks: its tree's nodes in *nodes and
 * the most bytes it held in *bytes; false when cJSON refuses it. */
static bool
measured(const char *text, size_t len, size_t *nodes, size_t *bytes)
{
	cJSON_Hooks h = { count_malloc, count_free };
	cJSON *o;

	live_bytes = peak_bytes = 0;
	cJSON_InitHooks(&h);
	o = cJSON_ParseWithLength(text, len);
	*bytes = peak_bytes;
	*nodes = o != NULL ? tree_nodes(o) : 0;
	cJSON_Delete(o);
	cJSON_InitHooks(NULL);
	return o != NULL;
}

/* True when jsonscan_size() of text counts nodes, strings and depth,
 * its nodes bound cJSON's, and the tree's bytes bound what cJSON
 * allocated. */
static bool
sized(const char *text, size_t nodes, size_t strings, size_t depth)
{
	struct jsonscan_size z;
	size_t len = strlen(text), n, b;

	jsonscan_size(text, len, &z);
	if (z.nodes != nodes || z.strings != strings || z.depth != depth)
		return false;
	if (!measured(text, len, &n, &b))
		return false;
	return n <= z.nodes && b <= jsonscan_tree_bytes(len, &z);
}

static void
test_size(void)
{
	struct jsonscan_size z;
	size_t i, len, n, b, est;
	char *big;

	T_ASSERT("size: a scalar", sized("1", 1, 0, 0));
	T_ASSERT("size: each array value a node", sized("[0,0,0]", 4, 0, 1));
	T_ASSERT("size: empty containers counted, a bound",
		 sized("{\"a\":[],\"b\":{}}", 5, 2, 2));
	T_ASSERT("size: brackets and commas inside strings are not nodes",
		 sized("[\"{[,,]}\"]", 2, 1, 1));
	T_ASSERT("size: an escaped quote does not end a string",
		 sized("[\"a\\\"[,\", 1]", 3, 1, 1));
	T_ASSERT("size: a backslash before the closing quote",
		 sized("[\"a\\\\\",{\"k\":[[\"v\"]]}]", 6, 3, 4));
	T_ASSERT("size: long strings, their bytes counted once",
		 sized("{\"content\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		       "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}",
		       2, 2, 1));
	/* Text cJSON refuses: counted within len, nothing more. */
	jsonscan_size("\"abc\\", 5, &z);
	T_ASSERT("size: an unterminated string stays within len",
		 z.nodes == 1 && z.strings == 1 && z.depth == 0);
	jsonscan_size("]]]}", 4, &z);
	T_ASSERT("size: closing brackets alone", z.depth == 0 &&
		 z.nodes == 1);
	jsonscan_size("", 0, &z);
	T_ASSERT("size: empty text", z.nodes == 1 && z.strings == 0);
	z.nodes = SIZE_MAX / 2;
	z.strings = 0;
	T_ASSERT("size: tree bytes saturate",
		 jsonscan_tree_bytes(100, &z) == SIZE_MAX);

	/* The attack's shape: a body of small values, one node each, costs
	 * about 40 times its bytes, which the estimate must cover and not
	 * overstate by much. */
	len = 2 * 100000 + 1;
	big = malloc(len + 1);
	T_ASSERT("size: big text allocated", big != NULL);
	if (big == NULL)
		return;
	big[0] = '[';
	for (i = 0; i < 100000; i++) {
		big[1 + 2 * i] = '0';
		big[2 + 2 * i] = i + 1 < 100000 ? ',' : ']';
	}
	big[len] = '\0';
	jsonscan_size(big, len, &z);
	est = jsonscan_tree_bytes(len, &z);
	T_ASSERT("size: small values parse", measured(big, len, &n, &b));
	T_ASSERT("size: small values, nodes exact", z.nodes == n &&
		 n == 100001);
	T_ASSERT("size: small values, tree bytes bound what cJSON took",
		 b <= est && b > 30 * len);
	T_ASSERT("size: ... and within 1.5 times it", est <= b + b / 2);
	free(big);
}

int
main(void)
{
	test_array();
	test_ranges();
	test_refused();
	test_has_nul();
	test_against_cjson();
	test_size();
	return T_REPORT();
}
