/*
 * test_convbody.c - unit tests for convbody.c and reqval_forward_edit():
 * the upstream body edits of a conversation on the bodies the agents
 * send (tests/agents/README.md): session_id from a client's key,
 * provider-bound reasoning items left out byte for byte, OpenRouter's
 * automatic cache_control where the endpoint caches only explicitly and
 * the request has no breakpoint; and what upstream errors say
 * (invalid_encrypted_content, the provider a 429 names).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "api.h"
#include "conv.h"
#include "convbody.h"
#include "reqval.h"
#include "score.h"

#define NROWS(t) (sizeof(t) / sizeof((t)[0]))

struct bp_row {
	const char *what;
	const char *body;
	bool want;
};

static const struct bp_row bp_rows[] = {
    {"claude code: system blocks and the last message block",
     "{\"system\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\","
     "\"text\":\"b\",\"cache_control\":{\"type\":\"ephemeral\"}}],"
     "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
     "\"text\":\"hi\",\"cache_control\":{\"type\":\"ephemeral\"}}]}]}",
     true},
    {"opencode on anthropic/*: on the message objects",
     "{\"messages\":[{\"role\":\"system\",\"content\":\"s\","
     "\"cache_control\":{\"type\":\"ephemeral\"}},{\"role\":\"user\","
     "\"content\":\"hi\"}]}",
     true},
    {"a chat content part",
     "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
     "\"text\":\"hi\",\"cache_control\":{\"type\":\"ephemeral\"}}]}]}",
     true},
    {"a tool",
     "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":"
     "[{\"type\":\"function\",\"function\":{\"name\":\"f\"},"
     "\"cache_control\":{\"type\":\"ephemeral\"}}]}",
     true},
    {"a system block alone",
     "{\"system\":[{\"type\":\"text\",\"text\":\"s\",\"cache_control\":"
     "{\"type\":\"ephemeral\"}}],\"messages\":[]}",
     true},
    {"the top level", "{\"cache_control\":{\"type\":\"ephemeral\"},"
		      "\"messages\":[]}",
     true},
    {"prompt_cache_breakpoint on a message",
     "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\","
     "\"prompt_cache_breakpoint\":true}]}",
     true},
    {"opencode on other ids, aider: none",
     "{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":"
     "\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}],"
     "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
     "\"parameters\":{\"properties\":{\"cache_control\":{}}}}}]}",
     false},
    {"a string system and no messages: none",
     "{\"system\":\"s\",\"messages\":[]}", false},
};

static void
test_breakpoints(void)
{
	char what[160];
	size_t i;

	for (i = 0; i < NROWS(bp_rows); i++) {
		cJSON *b = cJSON_Parse(bp_rows[i].body);

		snprintf(what, sizeof(what), "breakpoint: %s", bp_rows[i].what);
		T_ASSERT(what, b != NULL && convbody_has_breakpoint(b) ==
						     bp_rows[i].want);
		cJSON_Delete(b);
	}
}

struct ac_row {
	const char *what;
	enum api_id api;
	bool auto_cache, explicit_endpoint, has_breakpoint, want;
};

static const struct ac_row ac_rows[] = {
    {"chat, explicit endpoint, no breakpoint: added", API_CHAT, true, true,
     false, true},
    {"messages, the same: added", API_MESSAGES, true, true, false, true},
    {"responses: never", API_RESPONSES, true, true, false, false},
    {"AUTO_CACHE=0: off", API_CHAT, false, true, false, false},
    {"an implicit or write-free endpoint: nothing", API_CHAT, true, false,
     false, false},
    {"the request's own breakpoints: as sent", API_MESSAGES, true, true,
     true, false},
};

static void
test_auto_cache(void)
{
	struct score_endpoint e;
	struct rec_cand c;
	char what[160];
	size_t i;

	for (i = 0; i < NROWS(ac_rows); i++) {
		const struct ac_row *r = &ac_rows[i];

		snprintf(what, sizeof(what), "auto cache: %s", r->what);
		T_ASSERT(what, convbody_auto_cache(r->api, r->auto_cache,
						   r->explicit_endpoint,
						   r->has_breakpoint) ==
				       r->want);
	}
	memset(&c, 0, sizeof(c));
	T_ASSERT("endpoint: no input_cache_write price: not explicit",
		 !convbody_explicit_cache(&c) && !convbody_explicit_cache(NULL));
	c.terms.base_kind[SCORE_CACHE_WRITE] = SCORE_PRICE_OK;
	c.terms.base[SCORE_CACHE_WRITE] = 3.75e-6;
	T_ASSERT("endpoint: bills cache writes, no implicit caching",
		 convbody_explicit_cache(&c));
	c.implicit_cache = true;
	T_ASSERT("endpoint: implicit caching wins",
		 !convbody_explicit_cache(&c));
	/* A freshly scored endpoint (a model scored inline) says the same. */
	memset(&e, 0, sizeof(e));
	T_ASSERT("scored endpoint: no input_cache_write price: not explicit",
		 !convbody_explicit_endpoint(&e) &&
			 !convbody_explicit_endpoint(NULL));
	e.terms.base_kind[SCORE_CACHE_WRITE] = SCORE_PRICE_OK;
	T_ASSERT("scored endpoint: bills cache writes, no implicit caching",
		 convbody_explicit_endpoint(&e));
	e.implicit_cache = true;
	T_ASSERT("scored endpoint: implicit caching wins",
		 !convbody_explicit_endpoint(&e));
}

/* Codex CLI's second turn: its first turn's reasoning item (encrypted,
 * bound to the provider that wrote it), a function call and its output,
 * a reasoning item without encrypted content, the new prompt. */
#define CODEX_T2_INPUT                                                      \
	"[{\"type\":\"message\",\"role\":\"developer\",\"content\":[{\"type\"" \
	":\"input_text\",\"text\":\"You are Codex.\"}]},{\"type\":\"message\"" \
	",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":"  \
	"\"list files\"}]}, {\"type\":\"reasoning\",\"id\":\"rs_01\","      \
	"\"summary\":[],\"encrypted_content\":\"gAAAAABo1x2y3z\"},"          \
	"{\"type\":\"function_call\",\"name\":\"shell\",\"arguments\":"      \
	"\"{\\\"command\\\":[\\\"ls\\\"]}\",\"call_id\":\"call_1\","         \
	"\"n\":9007199254740993},{\"type\":\"function_call_output\","        \
	"\"call_id\":\"call_1\",\"output\":\"a\\u0000b\"},{\"type\":"        \
	"\"reasoning\",\"id\":\"rs_02\",\"summary\":[{\"type\":"             \
	"\"summary_text\",\"text\":\"s\"}]},{\"type\":\"reasoning\",\"id\":" \
	"\"rs_03\",\"summary\":[],\"encrypted_content\":\"gAAAAABzz\"},"     \
	"{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":"    \
	"\"input_text\",\"text\":\"now count them\"}]}]"

static void
test_drop(void)
{
	static const char in[] = CODEX_T2_INPUT;
	size_t d = 99;
	char *out = convbody_drop_reasoning(in, strlen(in), CONVBODY_ALL,
					    &d);
	cJSON *a = out ? cJSON_Parse(out) : NULL;

	T_ASSERT("drop: two encrypted reasoning items left out",
		 out != NULL && d == 2 && cJSON_GetArraySize(a) == 6);
	T_ASSERT("drop: no encrypted content is left",
		 out != NULL && strstr(out, "encrypted_content") == NULL &&
			 strstr(out, "rs_01") == NULL &&
			 strstr(out, "rs_03") == NULL);
	T_ASSERT("drop: a reasoning item without encrypted content stays",
		 out != NULL && strstr(out, "\"rs_02\"") != NULL);
	T_ASSERT("drop: kept items are their own bytes (2^53+1, \\u0000)",
		 out != NULL && strstr(out, "9007199254740993") != NULL &&
			 strstr(out, "a\\u0000b") != NULL);
	T_ASSERT("drop: the order is kept",
		 out != NULL && strstr(out, "call_1") < strstr(out, "rs_02") &&
			 strstr(out, "rs_02") < strstr(out, "now count"));
	cJSON_Delete(a);
	free(out);
	out = convbody_drop_reasoning("[{\"type\":\"message\"}]", 20,
				      CONVBODY_ALL, &d);
	T_ASSERT("drop: nothing to leave out: NULL, 0",
		 out == NULL && d == 0);
	out = convbody_drop_reasoning("\"hi\"", 4, CONVBODY_ALL, &d);
	T_ASSERT("drop: a string input: NULL, 0", out == NULL && d == 0);
	out = convbody_drop_reasoning(
		"[{\"type\":\"reasoning\",\"encrypted_content\":\"e\"}]", 47,
		CONVBODY_ALL, &d);
	T_ASSERT("drop: only reasoning: an empty array",
		 out != NULL && d == 1 && strcmp(out, "[]") == 0);
	free(out);
}

/*
 * The limit: only the items below it are left out (CODEX_T2_INPUT has
 * its encrypted reasoning items at 2 and 6 of 8); what a client's
 * input says of itself without a second parse (convbody_input_items).
 */
static void
test_drop_limit(void)
{
	static const char in[] = CODEX_T2_INPUT;
	size_t d = 99, first = 0, n;
	char *out = convbody_drop_reasoning(in, strlen(in), 6, &d);
	cJSON *a = out ? cJSON_Parse(out) : NULL, *s;

	T_ASSERT("limit 6: rs_01 (at 2) left out, rs_03 (at 6) kept",
		 out != NULL && d == 1 && cJSON_GetArraySize(a) == 7 &&
			 strstr(out, "rs_01") == NULL &&
			 strstr(out, "\"rs_03\"") != NULL &&
			 strstr(out, "gAAAAABzz") != NULL);
	T_ASSERT("limit 6: the kept items are their own bytes, in order",
		 out != NULL && strstr(out, "9007199254740993") != NULL &&
			 strstr(out, "call_1") < strstr(out, "rs_03") &&
			 strstr(out, "rs_03") < strstr(out, "now count"));
	cJSON_Delete(a);
	free(out);
	out = convbody_drop_reasoning(in, strlen(in), 7, &d);
	T_ASSERT("limit 7: both left out",
		 out != NULL && d == 2 &&
			 strstr(out, "encrypted_content") == NULL);
	free(out);
	out = convbody_drop_reasoning(in, strlen(in), 100, &d);
	T_ASSERT("a limit past the input (a client that compacted): both",
		 out != NULL && d == 2);
	free(out);
	out = convbody_drop_reasoning(in, strlen(in), 2, &d);
	T_ASSERT("limit 2: none below it: NULL, 0", out == NULL && d == 0);
	out = convbody_drop_reasoning(in, strlen(in), 0, &d);
	T_ASSERT("limit 0: NULL, 0", out == NULL && d == 0);

	a = cJSON_Parse(in);
	n = convbody_input_items(a, &first);
	T_ASSERT("input items: 8, the first bound reasoning at 2",
		 n == 8 && first == 2);
	cJSON_Delete(a);
	a = cJSON_Parse("[{\"type\":\"message\"},{\"type\":\"reasoning\","
			"\"summary\":[]},{\"type\":\"reasoning\","
			"\"encrypted_content\":7}]");
	n = convbody_input_items(a, &first);
	T_ASSERT("input items: reasoning without a string "
		 "encrypted_content is not bound",
		 n == 3 && first == CONVBODY_ALL);
	cJSON_Delete(a);
	s = cJSON_CreateString("hi");
	n = convbody_input_items(s, &first);
	T_ASSERT("input items: a string input has none",
		 n == 0 && first == CONVBODY_ALL);
	cJSON_Delete(s);
	first = 0;
	T_ASSERT("input items: absent",
		 convbody_input_items(NULL, &first) == 0 &&
			 first == CONVBODY_ALL);
}

/* The Responses body whose input is CODEX_T2_INPUT, and Codex's header
 * session-id: the forwarded body after the edits of a moved turn. */
static void
test_forward(void)
{
	static const char body[] =
		"{\"model\":\"openai/gpt-5.1-codex\",\"input\":" CODEX_T2_INPUT
		",\"store\":false,\"stream\":true,\"include\":[\"reasoning."
		"encrypted_content\"],\"prompt_cache_key\":\"s-9\"}";
	static const char chat[] =
		"{\"model\":\"anthropic/claude-sonnet-4.5\",\"messages\":[{"
		"\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\","
		"\"content\":\"hi\"}],\"session_id\":\"\",\"n\":"
		"9007199254740993}";
	const char *ip = NULL;
	size_t il = 0;
	struct api_req r;
	struct reqval_edits ed;
	char err[128], *out, *in;
	const char *param;
	cJSON *o, *inp, *cc;
	size_t d;
	int n = 0;
	const cJSON *it;

	memset(&ed, 0, sizeof(ed));
	T_ASSERT("forward: the codex body parses",
		 reqval_parse(&api_responses, body, strlen(body), NULL, &r, err,
			      sizeof(err), &param) == ORGW_OK);
	T_ASSERT("forward: the input member is found",
		 reqval_input(&r, &ip, &il) && ip[0] == '[' &&
			 il == strlen(CODEX_T2_INPUT));
	in = convbody_drop_reasoning(ip, il, CONVBODY_ALL, &d);
	ed.input = in;
	ed.session_id = "s-9";
	out = reqval_forward_edit(&r, "openai", 0, &ed);
	o = out ? cJSON_Parse(out) : NULL;
	inp = cJSON_GetObjectItemCaseSensitive(o, "input");
	cJSON_ArrayForEach(it, inp)
	{
		if (cJSON_GetObjectItemCaseSensitive(it, "encrypted_content"))
			n++;
	}
	T_ASSERT("forward: input without the bound reasoning items",
		 o != NULL && d == 2 && cJSON_GetArraySize(inp) == 6 && n == 0);
	T_ASSERT("forward: session_id added, prompt_cache_key as sent",
		 cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o,
								 "session_id")) &&
			 strcmp(cJSON_GetObjectItemCaseSensitive(o, "session_id")
					->valuestring,
				"s-9") == 0 &&
			 strstr(out, "\"prompt_cache_key\":\"s-9\"") != NULL);
	T_ASSERT("forward: pinned, and nothing for caching on responses",
		 cJSON_GetObjectItemCaseSensitive(o, "provider") != NULL &&
			 cJSON_GetObjectItemCaseSensitive(o, "cache_control") ==
				 NULL);
	cJSON_Delete(o);
	cJSON_free(out);
	free(in);
	out = reqval_forward(&r, "openai", 0);
	T_ASSERT("forward: without edits, the input is as sent",
		 out != NULL && strstr(out, "gAAAAABo1x2y3z") != NULL &&
			 strstr(out, "session_id") == NULL);
	cJSON_free(out);
	reqval_free(&r);

	/* Chat: a body session_id of its own (even an empty one) is never
	 * doubled; cache_control goes at the top level. */
	T_ASSERT("forward: the chat body parses",
		 reqval_parse(&api_chat, chat, strlen(chat), NULL, &r, err,
			      sizeof(err), &param) == ORGW_OK);
	memset(&ed, 0, sizeof(ed));
	ed.session_id = "x-1";
	ed.cache_control = true;
	out = reqval_forward_edit(&r, "anthropic", 0, &ed);
	o = out ? cJSON_Parse(out) : NULL;
	cc = cJSON_GetObjectItemCaseSensitive(o, "cache_control");
	T_ASSERT("forward: top-level cache_control ephemeral",
		 cJSON_IsObject(cc) &&
			 cJSON_IsString(
				 cJSON_GetObjectItemCaseSensitive(cc, "type")) &&
			 strcmp(cJSON_GetObjectItemCaseSensitive(cc, "type")
					->valuestring,
				"ephemeral") == 0);
	T_ASSERT("forward: the body's own session_id, once, as sent",
		 out != NULL && strstr(out, "\"session_id\":\"\"") != NULL &&
			 strstr(out, "x-1") == NULL &&
			 strstr(out, "9007199254740993") != NULL);
	cJSON_Delete(o);
	cJSON_free(out);
	reqval_free(&r);
}

static void
test_errors(void)
{
	static const struct {
		const char *what, *body;
		bool want;
	} rows[] = {
	    {"in metadata.raw (OpenRouter's provider error)",
	     "{\"error\":{\"code\":400,\"message\":\"Provider returned error\","
	     "\"metadata\":{\"raw\":\"{\\\"error\\\":{\\\"message\\\":\\\"The "
	     "encrypted content for item rs_01 could not be verified.\\\","
	     "\\\"type\\\":\\\"invalid_request_error\\\",\\\"code\\\":"
	     "\\\"invalid_encrypted_content\\\"}}\",\"provider_name\":"
	     "\"Azure\"}}}",
	     true},
	    {"in message",
	     "{\"error\":{\"code\":400,\"message\":\"invalid_encrypted_content:"
	     " rs_01\"}}",
	     true},
	    {"in an object raw",
	     "{\"error\":{\"code\":400,\"message\":\"x\",\"metadata\":{\"raw\":"
	     "{\"code\":\"invalid_encrypted_content\"}}}}",
	     true},
	    {"another 400",
	     "{\"error\":{\"code\":400,\"message\":\"max_tokens too large\","
	     "\"metadata\":{\"raw\":\"bad\"}}}",
	     false},
	    {"no error object", "{\"message\":\"invalid_encrypted_content\"}",
	     false},
	};
	size_t i;
	char what[160];
	cJSON *e;

	for (i = 0; i < NROWS(rows); i++) {
		e = cJSON_Parse(rows[i].body);
		snprintf(what, sizeof(what), "invalid_encrypted_content: %s",
			 rows[i].what);
		T_ASSERT(what, e != NULL && convbody_invalid_encrypted(e) ==
						    rows[i].want);
		cJSON_Delete(e);
	}
	T_ASSERT("invalid_encrypted_content: NULL body",
		 !convbody_invalid_encrypted(NULL));
	T_ASSERT("retry without reasoning: a 400 that says so, once",
		 convbody_retry_without_reasoning(400, true, true, false) &&
			 !convbody_retry_without_reasoning(400, true, true,
							   true) &&
			 !convbody_retry_without_reasoning(400, false, true,
							   false) &&
			 !convbody_retry_without_reasoning(400, true, false,
							   false) &&
			 !convbody_retry_without_reasoning(502, true, true,
							   false));
	e = cJSON_Parse("{\"error\":{\"code\":429,\"message\":\"Provider "
			"returned error\",\"metadata\":{\"raw\":\"busy\","
			"\"provider_name\":\"BaseTen\"}}}");
	T_ASSERT("429: a provider named", convbody_429_named(e) ==
						  FAILOVER_NAMED);
	cJSON_Delete(e);
	e = cJSON_Parse("{\"error\":{\"code\":429,\"message\":\"Rate limit "
			"exceeded\",\"metadata\":{\"provider_name\":null}}}");
	T_ASSERT("429: provider_name null", convbody_429_named(e) ==
						    FAILOVER_NAMED_NULL);
	cJSON_Delete(e);
	e = cJSON_Parse("{\"error\":{\"code\":429,\"message\":\"Rate limit "
			"exceeded: free-models-per-day\"}}");
	T_ASSERT("429: no metadata", convbody_429_named(e) ==
					     FAILOVER_NAMED_ABSENT &&
					     convbody_429_named(NULL) ==
						     FAILOVER_NAMED_ABSENT);
	cJSON_Delete(e);
}

int
main(void)
{
	test_breakpoints();
	test_auto_cache();
	test_drop();
	test_drop_limit();
	test_forward();
	test_errors();
	return T_REPORT();
}
