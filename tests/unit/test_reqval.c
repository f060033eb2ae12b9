/*
 * test_reqval.c - unit tests for reqval.c: request validation
 * (docs/design.md section 4 step 1) and the forwarded body (step 8: provider
 * pin and the max_tokens clamp).  Forwarded bodies are parsed back with cJSON
 * and compared field by field with the client's document, and compared byte
 * for byte with what the client sent: its members go as they are, with only
 * what orgw must change replaced, dropped or added.
 */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "t.h"
#include "api.h"
#include "reqval.h"

#define ERRLEN 256

static char err[ERRLEN];
static const char *param;

static enum orgw_err
parse(const char *body, const char *def, struct api_req *r)
{
	err[0] = '\0';
	param = "unset";
	return reqval_parse(&api_chat, body, strlen(body), def, r, err, sizeof(err),
	                    &param);
}

/* True when body is refused with a message and param p (NULL or name). */
static int
refused(const char *body, const char *def, const char *p)
{
	struct api_req r;
	enum orgw_err e = parse(body, def, &r);
	int ok = e == ORGW_EINVAL && err[0] != '\0' && r.mem == NULL &&
	         (p == NULL ? param == NULL
	                    : (param != NULL && strcmp(param, p) == 0));

	if (e == ORGW_OK)
		reqval_free(&r);
	return ok;
}

static int
accepted(const char *body, const char *def)
{
	struct api_req r;
	enum orgw_err e = parse(body, def, &r);

	reqval_free(&r);
	return e == ORGW_OK;
}

/* {"model":"a","messages":[[...]]} with depth nested arrays; caller
 * frees. */
static char *
nested(size_t depth)
{
	static const char pfx[] = "{\"model\":\"a\",\"messages\":";
	size_t n = sizeof(pfx) - 1;
	char *b = malloc(n + 2 * depth + 2);

	if (b == NULL)
		abort();
	memcpy(b, pfx, n);
	memset(b + n, '[', depth);
	memset(b + n + depth, ']', depth);
	b[n + 2 * depth] = '}';
	b[n + 2 * depth + 1] = '\0';
	return b;
}

static void
test_parse(void)
{
	struct api_req r;
	char *deep;

	T_ASSERT("valid body parses",
	         parse("{\"model\":\"deepseek/deepseek-v3.2\","
	               "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	               "\"stream\":true,\"max_tokens\":100}",
	               NULL, &r) == ORGW_OK);
	T_ASSERT("valid: model copied",
	         strcmp(r.model, "deepseek/deepseek-v3.2") == 0);
	T_ASSERT("valid: stream true", r.stream);
	T_ASSERT("valid: no provider", !r.has_provider);
	T_ASSERT("valid: members kept", r.mem != NULL && r.n_mem == 4);
	T_ASSERT("valid: param left NULL", param == NULL);
	reqval_free(&r);
	T_ASSERT("reqval_free clears members", r.mem == NULL);
	reqval_free(&r);	/* twice is safe */
	reqval_free(NULL);

	T_ASSERT("stream absent is false",
	         parse("{\"model\":\"a\",\"messages\":[]}", NULL, &r) ==
	                 ORGW_OK &&
	             !r.stream);
	reqval_free(&r);
	T_ASSERT("stream null is false",
	         parse("{\"model\":\"a\",\"messages\":[],\"stream\":null}",
	               NULL, &r) == ORGW_OK &&
	             !r.stream);
	reqval_free(&r);
	T_ASSERT("stream false is false",
	         parse("{\"model\":\"a\",\"messages\":[],\"stream\":false}",
	               NULL, &r) == ORGW_OK &&
	             !r.stream);
	reqval_free(&r);
	T_ASSERT("whitespace around the object is fine",
	         accepted(" \r\n\t{\"model\":\"a\",\"messages\":[]}\n ", NULL));

	/* not JSON / not an object */
	{
		struct api_req e;
		T_ASSERT("empty body refused",
		         reqval_parse(&api_chat, "", 0, NULL, &e, err, sizeof(err),
		                      &param) == ORGW_EINVAL &&
		             err[0] != '\0');
	}
	T_ASSERT("not JSON refused", refused("hello", NULL, NULL));
	T_ASSERT("truncated JSON refused",
	         refused("{\"model\":\"a\",\"messages\":[", NULL, NULL));
	T_ASSERT("trailing garbage refused",
	         refused("{\"model\":\"a\",\"messages\":[]} x", NULL, NULL));
	T_ASSERT("two objects refused",
	         refused("{\"model\":\"a\",\"messages\":[]}{}", NULL, NULL));
	T_ASSERT("JSON array refused",
	         refused("[{\"model\":\"a\",\"messages\":[]}]", NULL, NULL));
	T_ASSERT("JSON string refused", refused("\"x\"", NULL, NULL));
	T_ASSERT("JSON null refused", refused("null", NULL, NULL));
	{
		static const char b[] =
		    "{\"model\":\"a\",\"messages\":[]}\0{\"junk\":1}";
		struct api_req e;
		enum orgw_err rc = reqval_parse(&api_chat, b, sizeof(b) - 1, NULL, &e,
		                                err, sizeof(err), &param);
		T_ASSERT("bytes after an embedded NUL refused",
		         rc == ORGW_EINVAL);
		if (rc == ORGW_OK)
			reqval_free(&e);
	}
	{
		/* cJSON takes both (a NUL is whitespace to it, and raw
		 * bytes in strings); the forwarded C string could not. */
		static const char in_str[] =
		    "{\"model\":\"a\",\"messages\":[\"x\0y\"]}";
		static const char as_ws[] =
		    "{\"model\":\"a\",\0\"messages\":[]}";
		struct api_req e;
		enum orgw_err r1 = reqval_parse(&api_chat, in_str, sizeof(in_str) - 1, NULL,
		                                &e, err, sizeof(err), &param);
		enum orgw_err r2;

		if (r1 == ORGW_OK)
			reqval_free(&e);
		r2 = reqval_parse(&api_chat, as_ws, sizeof(as_ws) - 1, NULL, &e, err,
		                  sizeof(err), &param);
		if (r2 == ORGW_OK)
			reqval_free(&e);
		T_ASSERT("a NUL byte in a string or between members refused",
		         r1 == ORGW_EINVAL && r2 == ORGW_EINVAL &&
		             strstr(err, "NUL") != NULL);
	}

	/* messages */
	T_ASSERT("missing messages refused, param messages",
	         refused("{\"model\":\"a\"}", NULL, "messages"));
	T_ASSERT("messages object refused",
	         refused("{\"model\":\"a\",\"messages\":{}}", NULL, "messages"));
	T_ASSERT("messages string refused",
	         refused("{\"model\":\"a\",\"messages\":\"hi\"}", NULL,
	                 "messages"));
	T_ASSERT("messages null refused",
	         refused("{\"model\":\"a\",\"messages\":null}", NULL,
	                 "messages"));
	T_ASSERT("key match is case-sensitive (Messages)",
	         refused("{\"model\":\"a\",\"Messages\":[]}", NULL, "messages"));

	/* model */
	T_ASSERT("model missing, no default: refused, param model",
	         refused("{\"messages\":[]}", NULL, "model"));
	T_ASSERT("model missing, default used",
	         parse("{\"messages\":[]}", "deepseek/deepseek-v3.2", &r) ==
	                 ORGW_OK &&
	             strcmp(r.model, "deepseek/deepseek-v3.2") == 0);
	reqval_free(&r);
	T_ASSERT("model null, default used",
	         parse("{\"model\":null,\"messages\":[]}", "x/y", &r) ==
	                 ORGW_OK &&
	             strcmp(r.model, "x/y") == 0);
	reqval_free(&r);
	T_ASSERT("model null, no default: refused",
	         refused("{\"model\":null,\"messages\":[]}", NULL, "model"));
	T_ASSERT("client model wins over the default",
	         parse("{\"model\":\"c/m\",\"messages\":[]}", "x/y", &r) ==
	                 ORGW_OK &&
	             strcmp(r.model, "c/m") == 0);
	reqval_free(&r);
	T_ASSERT("model number refused",
	         refused("{\"model\":123,\"messages\":[]}", NULL, "model"));
	T_ASSERT("model number refused even with a default",
	         refused("{\"model\":123,\"messages\":[]}", "x/y", "model"));
	T_ASSERT("model array refused",
	         refused("{\"model\":[\"a\"],\"messages\":[]}", NULL, "model"));
	T_ASSERT("model true refused",
	         refused("{\"model\":true,\"messages\":[]}", NULL, "model"));
	T_ASSERT("model with a space refused",
	         refused("{\"model\":\"a b\",\"messages\":[]}", NULL, "model"));
	T_ASSERT("model with CR LF refused",
	         refused("{\"model\":\"a\\r\\nX-Evil: 1\",\"messages\":[]}",
	                 NULL, "model"));
	T_ASSERT("model with .. refused",
	         refused("{\"model\":\"a/../b\",\"messages\":[]}", NULL,
	                 "model"));
	T_ASSERT("model empty refused",
	         refused("{\"model\":\"\",\"messages\":[]}", NULL, "model"));
	T_ASSERT("invalid default model refused",
	         refused("{\"messages\":[]}", "bad model", "model"));

	/* stream */
	T_ASSERT("stream string refused",
	         refused("{\"model\":\"a\",\"messages\":[],\"stream\":\"true\"}",
	                 NULL, "stream"));
	T_ASSERT("stream number refused",
	         refused("{\"model\":\"a\",\"messages\":[],\"stream\":1}", NULL,
	                 "stream"));

	/* max_tokens */
	T_ASSERT("max_tokens negative refused",
	         refused("{\"model\":\"a\",\"messages\":[],\"max_tokens\":-5}",
	                 NULL, "max_tokens"));
	T_ASSERT("max_tokens zero refused",
	         refused("{\"model\":\"a\",\"messages\":[],\"max_tokens\":0}",
	                 NULL, "max_tokens"));
	T_ASSERT("max_tokens string refused",
	         refused("{\"model\":\"a\",\"messages\":[],"
	                 "\"max_tokens\":\"100\"}",
	                 NULL, "max_tokens"));
	T_ASSERT("max_tokens 1 accepted",
	         accepted("{\"model\":\"a\",\"messages\":[],\"max_tokens\":1}",
	                  NULL));
	T_ASSERT("max_tokens null accepted",
	         accepted("{\"model\":\"a\",\"messages\":[],"
	                  "\"max_tokens\":null}",
	                  NULL));
	T_ASSERT("max_completion_tokens zero refused, param names it",
	         refused("{\"model\":\"a\",\"messages\":[],"
	                 "\"max_completion_tokens\":0}",
	                 NULL, "max_completion_tokens"));
	T_ASSERT("bad max_completion_tokens beside a good max_tokens refused",
	         refused("{\"model\":\"a\",\"messages\":[],\"max_tokens\":5,"
	                 "\"max_completion_tokens\":-1}",
	                 NULL, "max_completion_tokens"));
	T_ASSERT("max_tokens 0.5 refused",
	         refused("{\"model\":\"a\",\"messages\":[],"
	                 "\"max_tokens\":0.5}",
	                 NULL, "max_tokens"));
	T_ASSERT("max_completion_tokens 10 accepted",
	         accepted("{\"model\":\"a\",\"messages\":[],"
	                  "\"max_completion_tokens\":10}",
	                  NULL));

	/* duplicate keys orgw reads: cJSON reads the first, OpenRouter
	 * the last, so they would disagree */
	T_ASSERT("duplicate max_tokens refused",
	         refused("{\"model\":\"a\",\"messages\":[],\"max_tokens\":1,"
	                 "\"max_tokens\":999999}",
	                 NULL, "max_tokens"));
	T_ASSERT("duplicate stream refused",
	         refused("{\"model\":\"a\",\"messages\":[],\"stream\":false,"
	                 "\"stream\":true}",
	                 NULL, "stream"));
	T_ASSERT("duplicate model refused",
	         refused("{\"model\":\"a\",\"model\":\"../x\",\"messages\":[]}",
	                 NULL, "model"));
	T_ASSERT("duplicate keys orgw ignores are kept",
	         accepted("{\"model\":\"a\",\"messages\":[],\"temperature\":1,"
	                  "\"temperature\":2}",
	                  NULL));

	/* client provider */
	T_ASSERT("provider object: has_provider",
	         parse("{\"model\":\"a\",\"messages\":[],"
	               "\"provider\":{\"order\":[\"x\"]}}",
	               NULL, &r) == ORGW_OK &&
	             r.has_provider);
	reqval_free(&r);

	/* deep nesting: cJSON's limit refuses it, no stack overflow */
	deep = nested(2000);
	T_ASSERT("2000 nested arrays refused without a crash",
	         refused(deep, NULL, NULL));
	free(deep);
}

static void
test_model_ok(void)
{
	char id[300];

	T_ASSERT("model ok: deepseek/deepseek-v3.2",
	         reqval_model_ok("deepseek/deepseek-v3.2"));
	T_ASSERT("model ok: openai/gpt-4o:free",
	         reqval_model_ok("openai/gpt-4o:free"));
	T_ASSERT("model ok: all allowed punctuation",
	         reqval_model_ok("A-z_0.9:x/y@v+w~u"));
	T_ASSERT("model ok: single char", reqval_model_ok("a"));
	T_ASSERT("model ok: single dot", reqval_model_ok("a.b"));
	T_ASSERT("model bad: empty", !reqval_model_ok(""));
	T_ASSERT("model bad: space", !reqval_model_ok("a b"));
	T_ASSERT("model bad: CR", !reqval_model_ok("a\rb"));
	T_ASSERT("model bad: LF", !reqval_model_ok("a\nb"));
	T_ASSERT("model bad: tab", !reqval_model_ok("a\tb"));
	T_ASSERT("model bad: control byte 0x01", !reqval_model_ok("a\001b"));
	T_ASSERT("model bad: DEL", !reqval_model_ok("a\177b"));
	T_ASSERT("model bad: UTF-8 byte", !reqval_model_ok("caf\303\251"));
	T_ASSERT("model bad: ..", !reqval_model_ok("a..b"));
	T_ASSERT("model bad: leading ..", !reqval_model_ok("../etc"));
	T_ASSERT("model bad: leading /", !reqval_model_ok("/a"));
	T_ASSERT("model bad: quote", !reqval_model_ok("a\"b"));
	T_ASSERT("model bad: backslash", !reqval_model_ok("a\\b"));
	T_ASSERT("model bad: percent", !reqval_model_ok("a%2e"));
	T_ASSERT("model bad: question mark", !reqval_model_ok("a?b"));
	memset(id, 'm', 255);
	id[255] = '\0';
	T_ASSERT("model ok: 255 chars", reqval_model_ok(id));
	id[255] = 'm';
	id[256] = '\0';
	T_ASSERT("model bad: 256 chars", !reqval_model_ok(id));
	memset(id, 'm', 299);
	id[299] = '\0';
	T_ASSERT("model bad: 299 chars", !reqval_model_ok(id));
}

/* Number of members of o named k. */
static int
count_key(const cJSON *o, const char *k)
{
	const cJSON *it;
	int n = 0;

	cJSON_ArrayForEach(it, o)
	{
		if (it->string != NULL && strcmp(it->string, k) == 0)
			n++;
	}
	return n;
}

/* True when out["provider"] is exactly the pin for tag. */
static int
is_pin(const cJSON *out, const char *tag)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(out, "provider");
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(p, "order");
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(p, "allow_fallbacks");

	return count_key(out, "provider") == 1 && cJSON_IsObject(p) &&
	       cJSON_GetArraySize(p) == 2 && cJSON_IsArray(o) &&
	       cJSON_GetArraySize(o) == 1 &&
	       cJSON_IsString(cJSON_GetArrayItem(o, 0)) &&
	       strcmp(cJSON_GetArrayItem(o, 0)->valuestring, tag) == 0 &&
	       cJSON_IsFalse(f);
}

/* True when every member of in other than the keys in skip is equal in
 * out, and out has no member outside in and {provider, model}. */
static int
same_fields(const cJSON *in, const cJSON *out)
{
	static const char *const skip[] = {"provider", "model", "max_tokens",
	                                   "max_completion_tokens"};
	const cJSON *it;
	size_t k;

	cJSON_ArrayForEach(it, in)
	{
		for (k = 0; k < 4; k++)
			if (strcmp(it->string, skip[k]) == 0)
				break;
		if (k < 4)
			continue;
		if (count_key(out, it->string) != 1 ||
		    !cJSON_Compare(it,
		                   cJSON_GetObjectItemCaseSensitive(out,
		                                                    it->string),
		                   1))
			return 0;
	}
	cJSON_ArrayForEach(it, out)
	{
		if (strcmp(it->string, "provider") != 0 &&
		    strcmp(it->string, "model") != 0 &&
		    cJSON_GetObjectItemCaseSensitive(in, it->string) == NULL)
			return 0;
	}
	return 1;
}

static double
num(const cJSON *o, const char *k)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(it) ? it->valuedouble : -1;
}

static const char BODY[] =
    "{\"model\":\"deepseek/deepseek-v3.2\","
    "\"messages\":[{\"role\":\"system\",\"content\":\"be \\\"brief\\\"\"},"
    "{\"role\":\"user\",\"content\":[{\"type\":\"text\","
    "\"text\":\"caf\\u00e9 \\ud83d\\ude00 \\n\"}]}],"
    "\"temperature\":0.7,\"top_p\":1,\"seed\":-42,"
    "\"stop\":[\"\\n\\n\",\"END\"],\"stream\":true,"
    "\"stream_options\":{\"include_usage\":true},"
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{}}}}],"
    "\"reasoning\":{\"effort\":\"high\",\"exclude\":false},"
    "\"user\":null,\"logit_bias\":{\"50256\":-100},"
    "\"max_tokens\":100000,\"max_completion_tokens\":70000}";

static void
test_forward(void)
{
	struct api_req r;
	cJSON *in, *out;
	char *s;

	in = cJSON_Parse(BODY);
	if (in == NULL || parse(BODY, NULL, &r) != ORGW_OK)
		abort();

	s = reqval_forward(&r, "deepseek", 0);
	out = s ? cJSON_Parse(s) : NULL;
	T_ASSERT("forward: output is a JSON object", cJSON_IsObject(out));
	T_ASSERT("forward: pin {order:[deepseek],allow_fallbacks:false}",
	         is_pin(out, "deepseek"));
	T_ASSERT("forward: other fields unchanged", same_fields(in, out));
	T_ASSERT("forward: model written once",
	         count_key(out, "model") == 1 &&
	             strcmp(cJSON_GetObjectItem(out, "model")->valuestring,
	                    "deepseek/deepseek-v3.2") == 0);
	T_ASSERT("forward: max_out 0 clamps nothing",
	         num(out, "max_tokens") == 100000 &&
	             num(out, "max_completion_tokens") == 70000);
	cJSON_Delete(out);
	cJSON_free(s);

	s = reqval_forward(&r, "deepinfra/fp8", 65536);
	out = s ? cJSON_Parse(s) : NULL;
	T_ASSERT("second call: pin replaced by the new tag",
	         is_pin(out, "deepinfra/fp8"));
	T_ASSERT("second call: max_tokens clamped to 65536",
	         num(out, "max_tokens") == 65536);
	T_ASSERT("second call: max_completion_tokens clamped to 65536",
	         num(out, "max_completion_tokens") == 65536);
	T_ASSERT("second call: clamped number printed as an integer",
	         s != NULL && strstr(s, "\"max_tokens\":65536") != NULL);
	T_ASSERT("second call: other fields unchanged", same_fields(in, out));
	cJSON_Delete(out);
	cJSON_free(s);

	s = reqval_forward(&r, NULL, -1);
	out = s ? cJSON_Parse(s) : NULL;
	T_ASSERT("NULL tag: pin removed",
	         cJSON_IsObject(out) && count_key(out, "provider") == 0);
	T_ASSERT("NULL tag: each call starts from the client's values, "
	         "negative max_out clamps nothing",
	         num(out, "max_tokens") == 100000 &&
	             num(out, "max_completion_tokens") == 70000);
	T_ASSERT("NULL tag: other fields unchanged", same_fields(in, out));
	T_ASSERT("NULL tag: model still there", count_key(out, "model") == 1);
	cJSON_Delete(out);
	cJSON_free(s);
	reqval_free(&r);
	cJSON_Delete(in);

	/* clamp only when above */
	if (parse("{\"model\":\"a\",\"messages\":[],\"max_tokens\":100,"
	          "\"max_completion_tokens\":4096}",
	          NULL, &r) != ORGW_OK)
		abort();
	s = reqval_forward(&r, "t", 4096);
	out = s ? cJSON_Parse(s) : NULL;
	T_ASSERT("below the cap: max_tokens unchanged",
	         num(out, "max_tokens") == 100);
	T_ASSERT("equal to the cap: max_completion_tokens unchanged",
	         num(out, "max_completion_tokens") == 4096);
	cJSON_Delete(out);
	cJSON_free(s);
	s = reqval_forward(&r, "t", 99);
	out = s ? cJSON_Parse(s) : NULL;
	T_ASSERT("one above the cap: clamped to 99",
	         num(out, "max_tokens") == 99 &&
	             num(out, "max_completion_tokens") == 99);
	cJSON_Delete(out);
	cJSON_free(s);
	reqval_free(&r);

	/* no max_tokens: none added */
	if (parse("{\"model\":\"a\",\"messages\":[]}", NULL, &r) != ORGW_OK)
		abort();
	s = reqval_forward(&r, "t", 100);
	out = s ? cJSON_Parse(s) : NULL;
	T_ASSERT("no max_tokens: clamping adds none",
	         cJSON_IsObject(out) && count_key(out, "max_tokens") == 0 &&
	             count_key(out, "max_completion_tokens") == 0);
	cJSON_Delete(out);
	cJSON_free(s);
	reqval_free(&r);

	/* default model is written into the forwarded body */
	if (parse("{\"messages\":[]}", "dflt/model", &r) != ORGW_OK)
		abort();
	s = reqval_forward(&r, NULL, 0);
	out = s ? cJSON_Parse(s) : NULL;
	T_ASSERT("default model written into the body",
	         cJSON_IsString(cJSON_GetObjectItem(out, "model")) &&
	             strcmp(cJSON_GetObjectItem(out, "model")->valuestring,
	                    "dflt/model") == 0);
	cJSON_Delete(out);
	cJSON_free(s);
	reqval_free(&r);

	/* the client's provider object is forwarded untouched */
	{
		static const char b[] =
		    "{\"model\":\"a\",\"messages\":[],\"max_tokens\":500,"
		    "\"provider\":{\"order\":[\"x\",\"y\"],"
		    "\"allow_fallbacks\":true,\"sort\":\"price\"}}";
		cJSON *want;

		if (parse(b, NULL, &r) != ORGW_OK)
			abort();
		want = cJSON_Parse(b);
		s = reqval_forward(&r, "deepseek", 100);
		out = s ? cJSON_Parse(s) : NULL;
		T_ASSERT("client provider: kept untouched with a tag",
		         count_key(out, "provider") == 1 &&
		             cJSON_Compare(cJSON_GetObjectItem(want, "provider"),
		                           cJSON_GetObjectItem(out, "provider"),
		                           1));
		T_ASSERT("client provider: max_tokens still clamped",
		         num(out, "max_tokens") == 100);
		cJSON_Delete(out);
		cJSON_free(s);
		s = reqval_forward(&r, NULL, 0);
		out = s ? cJSON_Parse(s) : NULL;
		T_ASSERT("client provider: NULL tag does not remove it",
		         cJSON_Compare(cJSON_GetObjectItem(want, "provider"),
		                       cJSON_GetObjectItem(out, "provider"), 1));
		cJSON_Delete(out);
		cJSON_free(s);
		cJSON_Delete(want);
		reqval_free(&r);
	}

	/* nesting just under cJSON's limit: accepted and re-printed */
	{
		char *b = nested(900);

		T_ASSERT("900 nested arrays accepted",
		         parse(b, NULL, &r) == ORGW_OK);
		s = reqval_forward(&r, "t", 1);
		T_ASSERT("900 nested arrays forwarded",
		         s != NULL && strstr(s, "[[[[") != NULL);
		cJSON_free(s);
		reqval_free(&r);
		free(b);
	}
}

/* A conversation of n messages; caller frees. */
static char *
conversation(size_t n, const char *head)
{
	size_t cap = 256 + n * 128, k = 0, i;
	char *b = malloc(cap);

	if (b == NULL)
		abort();
	k += (size_t)snprintf(b + k, cap - k, "{%s\"messages\":[", head);
	for (i = 0; i < n; i++)
		k += (size_t)snprintf(b + k, cap - k,
		                      "%s{\"role\":\"%s\",\"content\":\"turn "
		                      "%zu: \\\"x\\\"\\n\\u00e9\",\"n\":[%zu,{}]}",
		                      i ? "," : "", i % 2 ? "assistant" : "user",
		                      i, i);
	snprintf(b + k, cap - k, "],\"temperature\":0.5,\"tools\":[{\"a\":1}]}");
	return b;
}

/* out (a forwarded body) holds body's messages array, whole, and every
 * member of body but the four reqval may change. */
static int
full_messages(const char *out, const char *body)
{
	cJSON *o = out ? cJSON_Parse(out) : NULL, *in = cJSON_Parse(body);
	cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "messages");
	int ok = cJSON_IsArray(m) && cJSON_GetArraySize(m) > 0 &&
	         cJSON_Compare(m, cJSON_GetObjectItemCaseSensitive(in,
	                                                           "messages"),
	                       1) &&
	         same_fields(in, o);

	cJSON_Delete(o);
	cJSON_Delete(in);
	return ok;
}

static long fail_left = -1;	/* allocations before one fails; -1 none */

static void *
failing_malloc(size_t n)
{
	if (fail_left == 0) {
		fail_left = -1;
		return NULL;
	}
	if (fail_left > 0)
		fail_left--;
	return malloc(n);
}

/* True when reqval_forward(body parsed with def, tag, max_out) gives
 * exactly want. */
static int
forwards(const char *body, const char *def, const char *tag,
         int64_t max_out, const char *want)
{
	struct api_req r;
	char *s;
	int ok;

	if (parse(body, def, &r) != ORGW_OK)
		return 0;
	s = reqval_forward(&r, tag, max_out);
	ok = s != NULL && strcmp(s, want) == 0;
	if (!ok)
		printf("#   got  %s\n#   want %s\n", s ? s : "(null)", want);
	cJSON_free(s);
	reqval_free(&r);
	return ok;
}

#define PIN(t) "\"provider\":{\"order\":[\"" t "\"],\"allow_fallbacks\":false}"

/* The client's own bytes, member by member, with orgw's edits only. */
static void
test_bytes(void)
{
	static const char spaced[] =
		"\xEF\xBB\xBF \n{ \"model\" : \"a/b\",\r\n\t\"messages\":[{\"role\":"
		"\"user\",\"content\":\"x\\u00e9\\n\\\"y\"}],\"n\":-0.5e+2,"
		"\"max_tokens\":100}  \n";
	struct api_req r;
	char *s;

	T_ASSERT("bytes: BOM and whitespace around the object dropped, "
	         "members as sent, pin added last",
	         forwards(spaced, NULL, "deepinfra/fp8", 0,
	                  "{\"model\" : \"a/b\",\"messages\":[{\"role\":\"user\","
	                  "\"content\":\"x\\u00e9\\n\\\"y\"}],\"n\":-0.5e+2,"
	                  "\"max_tokens\":100," PIN("deepinfra/fp8") "}"));
	T_ASSERT("bytes: no tag, max_tokens at the cap: the members as sent",
	         forwards(spaced, NULL, NULL, 100,
	                  "{\"model\" : \"a/b\",\"messages\":[{\"role\":\"user\","
	                  "\"content\":\"x\\u00e9\\n\\\"y\"}],\"n\":-0.5e+2,"
	                  "\"max_tokens\":100}"));
	T_ASSERT("bytes: clamp replaces only the value",
	         forwards(spaced, NULL, "t", 99,
	                  "{\"model\" : \"a/b\",\"messages\":[{\"role\":\"user\","
	                  "\"content\":\"x\\u00e9\\n\\\"y\"}],\"n\":-0.5e+2,"
	                  "\"max_tokens\":99," PIN("t") "}"));
	T_ASSERT("bytes: clamp keeps the bytes between key and value",
	         forwards("{\"max_completion_tokens\" :\t5000 ,\"messages\":[],"
	                  "\"model\":\"a\"}",
	                  NULL, NULL, 4096,
	                  "{\"max_completion_tokens\" :\t4096,\"messages\":[],"
	                  "\"model\":\"a\"}"));
	T_ASSERT("bytes: provider null replaced by the pin",
	         forwards("{\"model\":\"a\",\"provider\":null,\"messages\":[]}",
	                  NULL, "t", 0,
	                  "{\"model\":\"a\",\"messages\":[]," PIN("t") "}"));
	T_ASSERT("bytes: provider null dropped without a tag",
	         forwards("{\"provider\" : null , \"model\":\"a\","
	                  "\"messages\":[]}",
	                  NULL, NULL, 0, "{\"model\":\"a\",\"messages\":[]}"));
	T_ASSERT("bytes: the client's provider object kept, no pin",
	         forwards("{\"model\":\"a\",\"provider\":{ \"sort\":\"price\" },"
	                  "\"messages\":[]}",
	                  NULL, "t", 0,
	                  "{\"model\":\"a\",\"provider\":{ \"sort\":\"price\" },"
	                  "\"messages\":[]}"));
	T_ASSERT("bytes: default model written when absent",
	         forwards("{\"messages\":[]}", "d/m", "t", 0,
	                  "{\"messages\":[],\"model\":\"d/m\"," PIN("t") "}"));
	T_ASSERT("bytes: default model written in place of null",
	         forwards("{\"model\":null,\"messages\":[]}", "d/m", NULL, 0,
	                  "{\"messages\":[],\"model\":\"d/m\"}"));
	T_ASSERT("bytes: a tag needing escapes is escaped by cJSON",
	         forwards("{\"model\":\"a\",\"messages\":[]}", NULL, "q\"uote",
	                  0,
	                  "{\"model\":\"a\",\"messages\":[],"
	                  "\"provider\":{\"order\":[\"q\\\"uote\"],"
	                  "\"allow_fallbacks\":false}}"));
	T_ASSERT("bytes: empty messages in an object with no other member",
	         forwards("{\"messages\":[]}", "d/m", NULL, 0,
	                  "{\"messages\":[],\"model\":\"d/m\"}"));

	/* What a reprint by cJSON would change goes as sent. */
	T_ASSERT("bytes: \\u0000 in a message and an integer above 2^53 "
	         "forwarded as sent",
	         forwards("{\"model\":\"a/b\",\"messages\":[{\"role\":\"user\","
	                  "\"content\":\"x\\u0000y\"}],"
	                  "\"seed\":12345678901234567891,"
	                  "\"logit_bias\":{\"9007199254740993\":1e400}}",
	                  NULL, "t", 0,
	                  "{\"model\":\"a/b\",\"messages\":[{\"role\":\"user\","
	                  "\"content\":\"x\\u0000y\"}],"
	                  "\"seed\":12345678901234567891,"
	                  "\"logit_bias\":{\"9007199254740993\":1e400},"
	                  PIN("t") "}"));
	T_ASSERT("bytes: braces, brackets, commas and quotes inside strings "
	         "and nested objects",
	         forwards("{\"model\":\"a\",\"messages\":[{\"content\":"
	                  "\"} { \\\" ] [ , : \\\\\"}],\"x\":{\"y\":\"}\\\"\","
	                  "\"z\":[{},[]],\"w\":{\"\":\"{\"}},\"\\\"}\":1,"
	                  "\"max_tokens\":500}",
	                  NULL, NULL, 10,
	                  "{\"model\":\"a\",\"messages\":[{\"content\":"
	                  "\"} { \\\" ] [ , : \\\\\"}],\"x\":{\"y\":\"}\\\"\","
	                  "\"z\":[{},[]],\"w\":{\"\":\"{\"}},\"\\\"}\":1,"
	                  "\"max_tokens\":10}"));
	T_ASSERT("bytes: scalars of every kind end where cJSON ends them",
	         forwards("{\"a\":true,\"b\":false ,\"c\":null\n,\"d\":-1.5E+3,"
	                  "\"e\":01,\"model\":\"m\",\"messages\":[ ]}",
	                  NULL, NULL, 0,
	                  "{\"a\":true,\"b\":false,\"c\":null,\"d\":-1.5E+3,"
	                  "\"e\":01,\"model\":\"m\",\"messages\":[ ]}"));

	/* Member identity as cJSON decodes the key, which JSON.parse
	 * upstream decodes the same way. */
	T_ASSERT("bytes: an escaped \"provider\" key is the client's provider",
	         parse("{\"model\":\"a\",\"messages\":[],"
	               "\"pro\\u0076ider\":{\"order\":[\"x\"]}}",
	               NULL, &r) == ORGW_OK &&
	             r.has_provider);
	s = reqval_forward(&r, "t", 0);
	T_ASSERT("bytes: ... kept as sent, no pin",
	         s != NULL && strstr(s, "pro\\u0076ider") != NULL &&
	             strstr(s, "allow_fallbacks") == NULL);
	cJSON_free(s);
	reqval_free(&r);
	T_ASSERT("bytes: an escaped \"provider\": null is dropped, one pin",
	         forwards("{\"model\":\"a\",\"messages\":[],"
	                  "\"pro\\u0076ider\":null}",
	                  NULL, "t", 0,
	                  "{\"model\":\"a\",\"messages\":[]," PIN("t") "}"));
	T_ASSERT("bytes: an escaped max_tokens is clamped",
	         forwards("{\"model\":\"a\",\"messages\":[],"
	                  "\"max\\u005ftokens\":900}",
	                  NULL, NULL, 10,
	                  "{\"model\":\"a\",\"messages\":[],"
	                  "\"max\\u005ftokens\":10}"));
	T_ASSERT("bytes: provider and pro\\u0076ider: a duplicate, refused",
	         refused("{\"model\":\"a\",\"messages\":[],\"provider\":null,"
	                 "\"pro\\u0076ider\":{\"order\":[\"x\"]}}",
	                 NULL, "provider"));
	T_ASSERT("bytes: model and mod\\u0065l: a duplicate, refused",
	         refused("{\"model\":\"a\",\"mod\\u0065l\":\"b/c\","
	                 "\"messages\":[]}",
	                 NULL, "model"));
	T_ASSERT("bytes: a top-level key holding \\u0000 refused",
	         refused("{\"model\\u0000x\":\"a\",\"messages\":[]}", "d/m",
	                 NULL) &&
	             refused("{\"model\":\"a\",\"messages\":[],"
	                     "\"x\\u0000\":1}",
	                     NULL, NULL));
	T_ASSERT("bytes: a \\u0000 in a nested key is the client's business",
	         accepted("{\"model\":\"a\",\"messages\":[{\"x\\u0000\":1}]}",
	                  NULL));
	/* cJSON would read "a/b": upstream reads the whole string. */
	T_ASSERT("bytes: a model holding \\u0000 refused",
	         refused("{\"model\":\"a/b\\u0000X\",\"messages\":[]}", NULL,
	                 "model") &&
	             refused("{\"model\":\"a/b\\u00zzX\",\"messages\":[]}",
	                     NULL, "model"));
	T_ASSERT("bytes: a model with other escapes is read as decoded",
	         parse("{\"model\":\"a\\/b\\u002dc\",\"messages\":[]}", NULL,
	               &r) == ORGW_OK &&
	             strcmp(r.model, "a/b-c") == 0);
	reqval_free(&r);

	/* Out of memory: NULL, and r still usable. */
	{
		cJSON_Hooks hk = {failing_malloc, free};
		int k, nulls = 0;

		if (parse("{\"model\":\"a\",\"messages\":[],\"max_tokens\":50}",
		          NULL, &r) != ORGW_OK)
			abort();
		cJSON_InitHooks(&hk);
		for (k = 0; k < 8; k++) {
			fail_left = k;
			s = reqval_forward(&r, "t", 10);
			nulls += s == NULL;
			cJSON_free(s);
		}
		fail_left = -1;
		cJSON_InitHooks(NULL);
		s = reqval_forward(&r, "t", 10);
		T_ASSERT("out of memory: NULL, then the same body again",
		         nulls > 0 && s != NULL &&
		             strcmp(s, "{\"model\":\"a\",\"messages\":[],"
		                       "\"max_tokens\":10," PIN("t") "}") == 0);
		cJSON_free(s);
		reqval_free(&r);
	}
}

/* Every edit leaves the messages whole; what cJSON refuses inside them
 * is refused. */
static void
test_messages(void)
{
	static const char *const heads[] = {
		"\"model\":\"a/b\",\"max_tokens\":500,",	/* clamp */
		"\"model\":\"a/b\",\"provider\":null,",	/* provider null */
		"",						/* default model */
		"\"model\":null,",				/* model null */
		"\"model\":\"a/b\",\"x\":01,",		/* not strict JSON */
		"\"model\":\"a/b\",\"provider\":{\"sort\":\"price\"},",
	};
	struct api_req r;
	char *b, *s;
	size_t i;
	int ok;

	for (i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		b = conversation(5 + 10 * i, heads[i]);
		if (parse(b, "d/m", &r) != ORGW_OK)
			abort();
		s = reqval_forward(&r, i % 2 ? "q\"uote" : "t", 100);
		ok = full_messages(s, b);
		cJSON_free(s);
		s = reqval_forward(&r, NULL, 100);
		ok = ok && full_messages(s, b);
		cJSON_free(s);
		printf("# head %zu\n", i);
		T_ASSERT("messages: every edit forwards the whole messages "
		         "array, twice",
		         ok);
		reqval_free(&r);
		free(b);
	}

	T_ASSERT("messages object with contents refused",
	         refused("{\"model\":\"a\",\"messages\":{\"a\":[1]}}", NULL,
	                 "messages"));
	T_ASSERT("duplicate messages refused, param messages",
	         refused("{\"model\":\"a\",\"messages\":[{\"r\":1}],"
	                 "\"messages\":[]}",
	                 NULL, "messages"));
	T_ASSERT("a bad escape inside messages refused",
	         refused("{\"model\":\"a\",\"messages\":[{\"c\":\"\\x\"}]}",
	                 NULL, NULL) &&
	             refused("{\"model\":\"a\",\"messages\":[\"\\ud800\"]}",
	                     NULL, NULL));
	T_ASSERT("a bad shape inside messages refused",
	         refused("{\"model\":\"a\",\"messages\":[{\"c\":1,}]}", NULL,
	                 NULL) &&
	             refused("{\"model\":\"a\",\"messages\":[1.2.3]}", NULL,
	                     NULL));
}

/* Parses body as a request of api; 0 on success. */
static enum orgw_err
parse_api(const struct api *api, const char *body, struct api_req *r)
{
	err[0] = '\0';
	param = "unset";
	return reqval_parse(api, body, strlen(body), NULL, r, err,
	                    sizeof(err), &param);
}

static bool
refused_api(const struct api *api, const char *body, const char *p,
            const char *msg)
{
	struct api_req r;
	enum orgw_err e = parse_api(api, body, &r);

	if (e == ORGW_OK) {
		reqval_free(&r);
		return false;
	}
	return e == ORGW_EINVAL && param != NULL && strcmp(param, p) == 0 &&
	       strcmp(err, msg) == 0;
}

/* The API's own field names (docs/design.md section 11): Messages needs
 * messages, Responses input (a string or items); each clamps its own
 * limit. */
static void
test_other_apis(void)
{
	struct api_req r;
	cJSON *out;
	char *s;

	T_ASSERT("messages: 'messages' is required",
	         refused_api(&api_messages, "{\"model\":\"a/b\"}", "messages",
	                     "'messages' is required"));
	T_ASSERT("responses: 'input' is required",
	         refused_api(&api_responses,
	                     "{\"model\":\"a/b\",\"messages\":[]}", "input",
	                     "'input' is required"));
	T_ASSERT("responses: 'input' must be a string or an array",
	         refused_api(&api_responses, "{\"model\":\"a/b\",\"input\":5}",
	                     "input", "'input' must be a string or an array"));
	T_ASSERT("chat: 'messages' may not be a string",
	         refused_api(&api_chat,
	                     "{\"model\":\"a/b\",\"messages\":\"hi\"}",
	                     "messages", "'messages' must be an array"));
	T_ASSERT("responses: a string input is a request",
	         parse_api(&api_responses,
	                   "{\"model\":\"a/b\",\"input\":\"hi\"}", &r) ==
	             ORGW_OK);
	reqval_free(&r);
	T_ASSERT("responses: max_output_tokens must be positive",
	         refused_api(&api_responses,
	                     "{\"model\":\"a/b\",\"input\":[],"
	                     "\"max_output_tokens\":0}",
	                     "max_output_tokens",
	                     "'max_output_tokens' must be a positive integer"));
	T_ASSERT("responses: a second max_output_tokens is refused",
	         refused_api(&api_responses,
	                     "{\"model\":\"a/b\",\"input\":[],"
	                     "\"max_output_tokens\":5,"
	                     "\"max_output_tokens\":9}",
	                     "max_output_tokens",
	                     "a field orgw reads appears more than once"));
	T_ASSERT("messages: a second thinking is refused",
	         refused_api(&api_messages,
	                     "{\"model\":\"a/b\",\"messages\":[],"
	                     "\"thinking\":{},\"thinking\":{}}",
	                     "thinking",
	                     "a field orgw reads appears more than once"));

	/* Responses: max_output_tokens clamped, max_tokens is not its. */
	if (parse_api(&api_responses,
	              "{\"model\":\"a/b\",\"input\":\"hi\","
	              "\"max_output_tokens\":90000,\"max_tokens\":90000}",
	              &r) != ORGW_OK)
		abort();
	s = reqval_forward(&r, "alpha", 32768);
	out = s ? cJSON_Parse(s) : NULL;
	T_ASSERT("responses: max_output_tokens clamped to the endpoint's",
	         num(out, "max_output_tokens") == 32768 &&
	             num(out, "max_tokens") == 90000 && is_pin(out, "alpha"));
	cJSON_Delete(out);
	cJSON_free(s);
	reqval_free(&r);
}

/* Extended thinking: budget_tokens stays below the clamped max_tokens,
 * never under 1024 (docs/design.md section 11), with Claude Code's own
 * numbers. */
static void
test_thinking(void)
{
	static const char CC[] =
	    "{\"model\":\"anthropic/claude-sonnet-4.5\",\"messages\":[{"
	    "\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":32000,"
	    "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":31999},"
	    "\"stream\":true}";
	struct api_req r;
	cJSON *out, *t;
	char *s;

	if (parse_api(&api_messages, CC, &r) != ORGW_OK)
		abort();
	T_ASSERT("thinking: the budget is read", r.budget == 31999);
	s = reqval_forward(&r, "beta", 16384);
	out = s ? cJSON_Parse(s) : NULL;
	t = cJSON_GetObjectItemCaseSensitive(out, "thinking");
	T_ASSERT("thinking: max_tokens 32000 clamped to 16384",
	         num(out, "max_tokens") == 16384);
	T_ASSERT("thinking: budget 31999 lowered to 16383",
	         num(t, "budget_tokens") == 16383 &&
	             strcmp(cJSON_GetObjectItemCaseSensitive(t, "type")
	                        ->valuestring,
	                    "enabled") == 0);
	T_ASSERT("thinking: the rest of the body as sent",
	         s != NULL && strstr(s, "\"stream\":true") != NULL &&
	             is_pin(out, "beta"));
	cJSON_Delete(out);
	cJSON_free(s);

	s = reqval_forward(&r, "alpha", 32768);
	out = s ? cJSON_Parse(s) : NULL;
	t = cJSON_GetObjectItemCaseSensitive(out, "thinking");
	T_ASSERT("thinking: no clamp, the budget as sent",
	         num(out, "max_tokens") == 32000 &&
	             num(t, "budget_tokens") == 31999 && s != NULL &&
	             strstr(s, "\"budget_tokens\":31999") != NULL);
	cJSON_Delete(out);
	cJSON_free(s);

	s = reqval_forward(&r, "tiny", 1024);
	out = s ? cJSON_Parse(s) : NULL;
	t = cJSON_GetObjectItemCaseSensitive(out, "thinking");
	T_ASSERT("thinking: a budget that cannot fit leaves both as sent",
	         num(out, "max_tokens") == 32000 &&
	             num(t, "budget_tokens") == 31999);
	cJSON_Delete(out);
	cJSON_free(s);

	s = reqval_forward(&r, "small", 1025);
	out = s ? cJSON_Parse(s) : NULL;
	t = cJSON_GetObjectItemCaseSensitive(out, "thinking");
	T_ASSERT("thinking: 1025 gives max 1025 and budget 1024",
	         num(out, "max_tokens") == 1025 &&
	             num(t, "budget_tokens") == 1024);
	cJSON_Delete(out);
	cJSON_free(s);
	reqval_free(&r);

	/* A budget already below the clamped max stays as sent. */
	if (parse_api(&api_messages,
	              "{\"model\":\"a/b\",\"messages\":[],\"max_tokens\":"
	              "32000,\"thinking\":{\"type\":\"enabled\","
	              "\"budget_tokens\":4000}}",
	              &r) != ORGW_OK)
		abort();
	s = reqval_forward(&r, "beta", 16384);
	T_ASSERT("thinking: a small budget is left alone",
	         s != NULL && strstr(s, "\"max_tokens\":16384") != NULL &&
	             strstr(s, "{\"type\":\"enabled\",\"budget_tokens\":4000}") !=
	                 NULL);
	cJSON_free(s);
	reqval_free(&r);

	/* Disabled or adaptive thinking has no budget to keep below. */
	if (parse_api(&api_messages,
	              "{\"model\":\"a/b\",\"messages\":[],\"max_tokens\":"
	              "32000,\"thinking\":{\"type\":\"disabled\","
	              "\"budget_tokens\":31999}}",
	              &r) != ORGW_OK)
		abort();
	s = reqval_forward(&r, "beta", 16384);
	T_ASSERT("thinking: disabled thinking is not edited",
	         r.budget == 0 && s != NULL &&
	             strstr(s, "\"budget_tokens\":31999") != NULL);
	cJSON_free(s);
	reqval_free(&r);

	/* Chat has no thinking member of its own: never edited. */
	if (parse_api(&api_chat,
	              "{\"model\":\"a/b\",\"messages\":[],\"max_tokens\":"
	              "32000,\"thinking\":{\"type\":\"enabled\","
	              "\"budget_tokens\":31999}}",
	              &r) != ORGW_OK)
		abort();
	s = reqval_forward(&r, "beta", 16384);
	T_ASSERT("thinking: chat leaves a thinking member alone",
	         s != NULL && strstr(s, "\"budget_tokens\":31999") != NULL &&
	             strstr(s, "\"max_tokens\":16384") != NULL);
	cJSON_free(s);
	reqval_free(&r);
}

/* MODEL_ALIASES: the target is routed and sent, the asked id kept. */
static void
test_alias(void)
{
	struct api_req r;
	cJSON *out;
	char *s;

	if (parse_api(&api_messages,
	              "{\"model\":\"claude-sonnet-4-5-20250929\","
	              "\"messages\":[],\"max_tokens\":5}",
	              &r) != ORGW_OK)
		abort();
	reqval_alias(&r, "anthropic/claude-sonnet-4.5");
	T_ASSERT("alias: the target is the model, the asked id kept",
	         strcmp(r.model, "anthropic/claude-sonnet-4.5") == 0 &&
	             strcmp(r.asked, "claude-sonnet-4-5-20250929") == 0);
	s = reqval_forward(&r, "anthropic", 0);
	out = s ? cJSON_Parse(s) : NULL;
	T_ASSERT("alias: the body names the target, once, in place",
	         count_key(out, "model") == 1 && s != NULL &&
	             strncmp(s, "{\"model\":\"anthropic/claude-sonnet-4.5\"",
	                     38) == 0);
	cJSON_Delete(out);
	cJSON_free(s);
	reqval_free(&r);

	if (parse_api(&api_chat, "{\"model\":\"a/b\",\"messages\":[]}", &r) !=
	    ORGW_OK)
		abort();
	reqval_alias(&r, "a/b");
	T_ASSERT("alias: to itself is no alias", r.asked[0] == '\0');
	reqval_free(&r);
}

/* The members that choose a model ("model", "models"), found by their
 * decoded names, each allowed once, on every API: OpenRouter reads the
 * last copy, so a second one (however spelled) is refused, and every id
 * of "models" is kept for the team key's globs. */
static void
test_models(void)
{
	static const struct api *apis[] = {&api_chat, &api_messages,
	                                   &api_responses};
	static const char *in[] = {"\"messages\":[]", "\"messages\":[]",
	                           "\"input\":\"hi\""};
	/* Refused, each as a field read twice: a second copy of "models"
	 * or "model", however spelled. */
	static const struct {
		const char *members, *param, *what;
	} dup[] = {
		{"\"models\":[\"qwen/q\"],\"m\\u006fdels\":[\"openai/gpt-5\"]",
		 "models", "models and m\\u006fdels"},
		{"\"models\":[\"qwen/q\"],\"models\":[\"openai/gpt-5\"]",
		 "models", "two models members"},
		{"\"m\\u006fdel\":\"openai/gpt-5\"", "model",
		 "model and m\\u006fdel"},
	};
	struct api_req r;
	char b[512], what[128];
	size_t i, j;

	for (i = 0; i < 3; i++) {
		for (j = 0; j < sizeof(dup) / sizeof(dup[0]); j++) {
			snprintf(b, sizeof(b), "{\"model\":\"qwen/q\",%s,%s}",
			         in[i], dup[j].members);
			snprintf(what, sizeof(what), "%s: %s: refused",
			         apis[i]->name, dup[j].what);
			T_ASSERT(what, refused_api(apis[i], b, dup[j].param,
			                           "a field orgw reads appears "
			                           "more than once"));
		}
		snprintf(b, sizeof(b),
		         "{\"model\":\"qwen/q\",%s,"
		         "\"m\\u006fdels\":[\"qwen/a\",\"openai\\/gpt-5\"]}",
		         in[i]);
		snprintf(what, sizeof(what),
		         "%s: an escaped models member: both ids kept, decoded",
		         apis[i]->name);
		T_ASSERT(what, parse_api(apis[i], b, &r) == ORGW_OK &&
		                   r.n_models == 2 &&
		                   strcmp(r.models[0], "qwen/a") == 0 &&
		                   strcmp(r.models[1], "openai/gpt-5") == 0);
		reqval_free(&r);
	}
	T_ASSERT("models: null is no list",
	         parse_api(&api_chat,
	                   "{\"model\":\"a/b\",\"messages\":[],\"models\":null}",
	                   &r) == ORGW_OK &&
	             r.n_models == 0 && r.models == NULL);
	reqval_free(&r);
	T_ASSERT("models: a string is refused",
	         refused_api(&api_chat,
	                     "{\"model\":\"a/b\",\"messages\":[],"
	                     "\"models\":\"openai/gpt-5\"}",
	                     "models", "'models' must be an array of model ids"));
	T_ASSERT("models: an entry that is no string is refused",
	         refused_api(&api_chat,
	                     "{\"model\":\"a/b\",\"messages\":[],"
	                     "\"models\":[\"a/b\",{\"id\":\"openai/gpt-5\"}]}",
	                     "models", "'models' must be an array of model ids"));
	T_ASSERT("models: an id cut by cJSON at \\u0000 is refused",
	         refused_api(&api_chat,
	                     "{\"model\":\"a/b\",\"messages\":[],"
	                     "\"models\":[\"qwen/\\u0000openai/gpt-5\"]}",
	                     "models", "'models' must be an array of model ids"));
	T_ASSERT("models: an invalid id is refused",
	         refused_api(&api_chat,
	                     "{\"model\":\"a/b\",\"messages\":[],"
	                     "\"models\":[\"../x\"]}",
	                     "models", "'models' must be an array of model ids"));
	T_ASSERT("models: an empty list is none",
	         parse_api(&api_chat,
	                   "{\"model\":\"a/b\",\"messages\":[],\"models\":[]}",
	                   &r) == ORGW_OK &&
	             r.n_models == 0);
	reqval_free(&r);
}

int
main(void)
{
	test_parse();
	test_model_ok();
	test_forward();
	test_bytes();
	test_messages();
	test_other_apis();
	test_thinking();
	test_alias();
	test_models();
	return T_REPORT();
}
