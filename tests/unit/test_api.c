/*
 * test_api.c - the three API adapters (api.h), table-tested from event
 * sequences in the formats of docs/upstream.md sections 5, 6, 13 and 14:
 * what each event is (held back, a token, the answer's end, an error),
 * what usage, provider and error an answer folds to, and the shapes of
 * the errors orgw writes in each API's words.
 */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "t.h"
#include "api.h"

#define NROWS(a) (sizeof(a) / sizeof((a)[0]))
#define KEY "sk-or-v1-SECRET"

/* One event of a sequence and what it must be. */
struct ev_row {
	const char *json;
	enum api_ev want;
};

/* What the answer must hold after a whole sequence. */
struct ans_want {
	int64_t prompt, cached, cache_write, completion;
	bool have_cost;
	double cost;
	const char *served;
	bool finished, done, has_error;
	long err_code;
	int64_t seq;
};

struct seq_case {
	const char *name;
	const struct api *api;
	const struct ev_row *ev;
	size_t n;
	struct ans_want want;
};

#define SEQ(name, api, rows, ...)                                          \
	{ name, &api, rows, NROWS(rows), __VA_ARGS__ }

/* ---- chat completions (docs/upstream.md sections 5, 6) ---- */

#define CH(delta)                                                          \
	"{\"id\":\"gen-1\",\"object\":\"chat.completion.chunk\","          \
	"\"provider\":\"DeepSeek\",\"choices\":[{\"index\":0,\"delta\":"    \
	delta ",\"finish_reason\":null}]}"

static const struct ev_row chat_ok[] = {
	{CH("{\"role\":\"assistant\",\"content\":\"\"}"), API_EV_HOLD},
	{CH("{\"role\":\"assistant\",\"content\":\"Hello\"}"), API_EV_TOKEN},
	{CH("{\"content\":\" there\"}"), API_EV_TOKEN},
	{"{\"provider\":\"DeepSeek\",\"choices\":[{\"index\":0,\"delta\":"
	 "{\"content\":\"\"},\"finish_reason\":\"stop\"}]}",
	 API_EV_END},
	{"{\"provider\":\"DeepSeek\",\"choices\":[],\"usage\":{"
	 "\"prompt_tokens\":100,\"completion_tokens\":3,\"cost\":0.00012,"
	 "\"prompt_tokens_details\":{\"cached_tokens\":64,"
	 "\"cache_write_tokens\":8}}}",
	 API_EV_TOKEN},
};

/* REC: the usage chunk repeats the choice with its finish_reason. */
static const struct ev_row chat_rec[] = {
	{CH("{\"content\":\"Hi\"}"), API_EV_TOKEN},
	{"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\",\"role\":"
	 "\"assistant\"},\"finish_reason\":\"stop\"}],\"usage\":{"
	 "\"prompt_tokens\":5,\"completion_tokens\":1}}",
	 API_EV_END},
};

static const struct ev_row chat_kinds[] = {
	{CH("{}"), API_EV_HOLD},
	{CH("{\"content\":null}"), API_EV_HOLD},
	{CH("{\"reasoning\":\"\"}"), API_EV_HOLD},
	{CH("{\"tool_calls\":[]}"), API_EV_HOLD},
	{CH("{\"reasoning_details\":[]}"), API_EV_HOLD},
	{"{\"id\":\"x\"}", API_EV_HOLD},
	{"{\"choices\":[{\"index\":0}]}", API_EV_HOLD},
	{CH("{\"reasoning\":\"hm\"}"), API_EV_TOKEN},
	{CH("{\"refusal\":\"no\"}"), API_EV_TOKEN},
	{CH("{\"tool_calls\":[{\"index\":0}]}"), API_EV_TOKEN},
	{CH("{\"reasoning_details\":[{\"type\":\"x\"}]}"), API_EV_TOKEN},
	{CH("{\"content\":5}"), API_EV_TOKEN},
	{"{\"choices\":[{\"delta\":{}},{\"delta\":{\"content\":\"b\"}}]}",
	 API_EV_TOKEN},
	{"{\"usage\":null}", API_EV_TOKEN},
};

/* docs/upstream.md section 11: the mid-stream error chunk. */
static const struct ev_row chat_mid[] = {
	{CH("{\"content\":\"Hel\"}"), API_EV_TOKEN},
	{"{\"id\":\"gen-1\",\"provider\":\"DeepSeek\",\"error\":{\"code\":502,"
	 "\"message\":\"Provider disconnected unexpectedly\",\"metadata\":{"
	 "\"error_type\":\"provider_unavailable\"}},\"choices\":[{\"index\":"
	 "0,\"delta\":{\"content\":\"\"},\"finish_reason\":\"error\"}]}",
	 API_EV_ERROR},
};

static const struct ev_row chat_err_choice[] = {
	{"{\"choices\":[{\"index\":0,\"delta\":{},\"error\":{\"code\":429,"
	 "\"message\":\"slow down " KEY "\"},\"finish_reason\":\"error\"}]}",
	 API_EV_ERROR},
};

static const struct ev_row chat_err_string[] = {
	{"{\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}",
	 API_EV_ERROR},
};

/* ---- Messages (docs/upstream.md section 13) ---- */

static const struct ev_row msg_ok[] = {
	{"{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":"
	 "\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\","
	 "\"provider\":\"Anthropic\",\"stop_reason\":null,\"usage\":{"
	 "\"input_tokens\":12,\"cache_creation_input_tokens\":0,"
	 "\"cache_read_input_tokens\":7381,\"output_tokens\":1}}}",
	 API_EV_HOLD},
	{"{\"type\":\"ping\"}", API_EV_HOLD},
	{"{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{"
	 "\"type\":\"text\",\"text\":\"\"}}",
	 API_EV_HOLD},
	{"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
	 "\"text_delta\",\"text\":\"Hello\"}}",
	 API_EV_TOKEN},
	{"{\"type\":\"content_block_stop\",\"index\":0}", API_EV_HOLD},
	{"{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
	 "\"end_turn\",\"stop_sequence\":null},\"usage\":{"
	 "\"output_tokens\":15}}",
	 API_EV_END},
	{"{\"type\":\"message_stop\"}", API_EV_END},
};

/* Thinking, a tool call, a second block; usage written to the cache in
 * message_start and overwritten in message_delta; no message_stop. */
static const struct ev_row msg_tools[] = {
	{"{\"type\":\"message_start\",\"message\":{\"provider\":\"Google\","
	 "\"usage\":{\"input_tokens\":3,\"cache_creation_input_tokens\":"
	 "2000,\"cache_read_input_tokens\":0,\"output_tokens\":1}}}",
	 API_EV_HOLD},
	{"{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{"
	 "\"type\":\"thinking\",\"thinking\":\"\"}}",
	 API_EV_HOLD},
	{"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
	 "\"thinking_delta\",\"thinking\":\"hm\"}}",
	 API_EV_TOKEN},
	{"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
	 "\"signature_delta\",\"signature\":\"abc\"}}",
	 API_EV_TOKEN},
	{"{\"type\":\"content_block_stop\",\"index\":0}", API_EV_HOLD},
	{"{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{"
	 "\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Bash\",\"input\":{}}}",
	 API_EV_HOLD},
	{"{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":"
	 "\"input_json_delta\",\"partial_json\":\"{\\\"a\\\"\"}}",
	 API_EV_TOKEN},
	{"{\"type\":\"some_future_event\"}", API_EV_HOLD},
	{"{\"type\":\"message_delta\",\"delta\":{},\"usage\":{"
	 "\"output_tokens\":7}}",
	 API_EV_TOKEN},
	{"{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
	 "\"tool_use\"},\"usage\":{\"output_tokens\":9,"
	 "\"cache_creation_input_tokens\":2100,\"cost\":0.25}}",
	 API_EV_END},
};

static const struct ev_row msg_err[] = {
	{"{\"type\":\"message_start\",\"message\":{\"usage\":{"
	 "\"input_tokens\":5}}}",
	 API_EV_HOLD},
	{"{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
	 "\"message\":\"Overloaded\",\"error_type\":\"provider_overloaded\"}}",
	 API_EV_ERROR},
};

/* ---- Responses (docs/upstream.md section 14) ---- */

static const struct ev_row resp_ok[] = {
	{"{\"type\":\"response.created\",\"sequence_number\":0,\"response\":{"
	 "\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[],"
	 "\"tools\":[{\"type\":\"function\",\"name\":\"shell\"}]}}",
	 API_EV_HOLD},
	{"{\"type\":\"response.in_progress\",\"sequence_number\":1,"
	 "\"response\":{\"id\":\"resp_1\"}}",
	 API_EV_HOLD},
	{"{\"type\":\"response.output_item.added\",\"sequence_number\":2,"
	 "\"output_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_1\","
	 "\"role\":\"assistant\",\"content\":[]}}",
	 API_EV_HOLD},
	{"{\"type\":\"response.content_part.added\",\"sequence_number\":3,"
	 "\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,"
	 "\"part\":{\"type\":\"output_text\",\"text\":\"\"}}",
	 API_EV_HOLD},
	{"{\"type\":\"response.output_text.delta\",\"sequence_number\":4,"
	 "\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,"
	 "\"delta\":\"Hello\"}",
	 API_EV_TOKEN},
	{"{\"type\":\"response.output_text.done\",\"sequence_number\":5,"
	 "\"text\":\"Hello\"}",
	 API_EV_HOLD},
	{"{\"type\":\"response.content_part.done\",\"sequence_number\":6}",
	 API_EV_HOLD},
	{"{\"type\":\"response.output_item.done\",\"sequence_number\":7}",
	 API_EV_HOLD},
	{"{\"type\":\"response.completed\",\"sequence_number\":8,"
	 "\"response\":{\"status\":\"completed\",\"output\":[],\"usage\":{"
	 "\"input_tokens\":100,\"input_tokens_details\":{\"cached_tokens\":"
	 "80,\"cache_write_tokens\":5},\"output_tokens\":10,"
	 "\"output_tokens_details\":{\"reasoning_tokens\":2},"
	 "\"total_tokens\":110,\"cost\":0.001},\"openrouter_metadata\":{"
	 "\"endpoints\":{\"available\":[{\"provider\":\"Alpha\",\"selected\":"
	 "false},{\"provider\":\"Beta\",\"selected\":true}]}}}}",
	 API_EV_END},
};

static const struct ev_row resp_kinds[] = {
	{"{\"type\":\"response.reasoning_summary_part.added\","
	 "\"sequence_number\":2}",
	 API_EV_HOLD},
	{"{\"type\":\"response.reasoning_summary_text.delta\","
	 "\"sequence_number\":3,\"delta\":\"think\"}",
	 API_EV_TOKEN},
	{"{\"type\":\"response.reasoning_text.delta\",\"delta\":\"x\"}",
	 API_EV_TOKEN},
	{"{\"type\":\"response.refusal.delta\",\"delta\":\"no\"}",
	 API_EV_TOKEN},
	{"{\"type\":\"response.function_call_arguments.delta\","
	 "\"sequence_number\":9,\"delta\":\"{\\\"cmd\\\"\"}",
	 API_EV_TOKEN},
	{"{\"type\":\"response.content_part.delta\",\"delta\":\"y\"}",
	 API_EV_TOKEN},
	{"{\"type\":\"response.incomplete\",\"sequence_number\":12,"
	 "\"response\":{\"status\":\"incomplete\",\"incomplete_details\":{"
	 "\"reason\":\"max_output_tokens\"},\"usage\":{\"input_tokens\":7,"
	 "\"output_tokens\":4}}}",
	 API_EV_END},
};

static const struct ev_row resp_failed[] = {
	{"{\"type\":\"response.created\",\"sequence_number\":0}",
	 API_EV_HOLD},
	{"{\"type\":\"response.failed\",\"sequence_number\":1,\"response\":{"
	 "\"status\":\"failed\",\"error\":{\"code\":\"server_error\","
	 "\"message\":\"upstream broke\"},\"error_type\":\"server\"}}",
	 API_EV_ERROR},
};

static const struct ev_row resp_err_flat[] = {
	{"{\"type\":\"error\",\"sequence_number\":3,\"code\":"
	 "\"rate_limit_exceeded\",\"message\":\"slow down\"}",
	 API_EV_ERROR},
};

static const struct ev_row resp_err_nested[] = {
	{"{\"type\":\"error\",\"error\":{\"code\":503,\"message\":\"down\"}}",
	 API_EV_ERROR},
};

static const struct ev_row resp_err_resp_error[] = {
	{"{\"type\":\"response.error\",\"error\":{\"code\":502,\"message\":"
	 "\"bad gateway\"}}",
	 API_EV_ERROR},
};

static const struct seq_case seqs[] = {
	SEQ("chat: a whole stream", api_chat, chat_ok,
	    {100, 64, 8, 3, true, 0.00012, "DeepSeek", true, false, false, 0,
	     -1}),
	SEQ("chat: REC usage with a repeated choice", api_chat, chat_rec,
	    {5, 0, 0, 1, false, 0, "DeepSeek", true, false, false, 0, -1}),
	SEQ("chat: what is a token", api_chat, chat_kinds,
	    {0, 0, 0, 0, false, 0, "DeepSeek", false, false, false, 0, -1}),
	SEQ("chat: a mid-stream error event", api_chat, chat_mid,
	    {0, 0, 0, 0, false, 0, "DeepSeek", false, false, true, 502, -1}),
	SEQ("chat: choices[].error in a 200", api_chat, chat_err_choice,
	    {0, 0, 0, 0, false, 0, "", false, false, true, 429, -1}),
	SEQ("chat: an error code as a string", api_chat, chat_err_string,
	    {0, 0, 0, 0, false, 0, "", false, false, true, 500, -1}),
	SEQ("messages: a whole stream", api_messages, msg_ok,
	    {7393, 7381, 0, 15, false, 0, "Anthropic", true, true, false, 0,
	     -1}),
	SEQ("messages: thinking, a tool call, no message_stop", api_messages,
	    msg_tools,
	    {2103, 0, 2100, 9, true, 0.25, "Google", true, false, false, 0,
	     -1}),
	SEQ("messages: an error event", api_messages, msg_err,
	    {5, 0, 0, 0, false, 0, "", false, false, true, 529, -1}),
	SEQ("responses: a whole stream", api_responses, resp_ok,
	    {100, 80, 5, 10, true, 0.001, "Beta", true, true, false, 0, 8}),
	SEQ("responses: other deltas, response.incomplete", api_responses,
	    resp_kinds,
	    {7, 0, 0, 4, false, 0, "", true, true, false, 0, 12}),
	SEQ("responses: response.failed", api_responses, resp_failed,
	    {0, 0, 0, 0, false, 0, "", false, false, true, 500, 1}),
	SEQ("responses: a flat error event", api_responses, resp_err_flat,
	    {0, 0, 0, 0, false, 0, "", false, false, true, 429, 3}),
	SEQ("responses: a nested error event", api_responses,
	    resp_err_nested,
	    {0, 0, 0, 0, false, 0, "", false, false, true, 503, -1}),
	SEQ("responses: response.error", api_responses, resp_err_resp_error,
	    {0, 0, 0, 0, false, 0, "", false, false, true, 502, -1}),
};

static const char *
ev_name(enum api_ev e)
{
	switch (e) {
	case API_EV_HOLD:
		return "hold";
	case API_EV_TOKEN:
		return "token";
	case API_EV_END:
		return "end";
	case API_EV_ERROR:
		return "error";
	}
	return "?";
}

static void
check_answer(const char *name, const struct api_answer *a,
	     const struct ans_want *w)
{
	char what[256];

	snprintf(what, sizeof(what), "%s: usage %lld/%lld/%lld/%lld", name,
		 (long long)w->prompt, (long long)w->cached,
		 (long long)w->cache_write, (long long)w->completion);
	T_ASSERT(what, a->usage.prompt == w->prompt &&
			       a->usage.cached == w->cached &&
			       a->usage.cache_write == w->cache_write &&
			       a->usage.completion == w->completion);
	snprintf(what, sizeof(what), "%s: cost %s", name,
		 w->have_cost ? "reported" : "absent");
	T_ASSERT(what, a->usage.have_cost == w->have_cost &&
			       (!w->have_cost || T_NEAR(a->usage.cost, w->cost)));
	snprintf(what, sizeof(what), "%s: served \"%s\"", name, w->served);
	T_ASSERT(what, strcmp(a->served, w->served) == 0);
	snprintf(what, sizeof(what), "%s: finished %d done %d", name,
		 w->finished, w->done);
	T_ASSERT(what, a->finished == w->finished && a->done == w->done);
	snprintf(what, sizeof(what), "%s: error %d code %ld", name,
		 w->has_error, w->err_code);
	T_ASSERT(what, a->has_error == w->has_error &&
			       (!w->has_error || a->err_code == w->err_code));
	snprintf(what, sizeof(what), "%s: sequence number %lld", name,
		 (long long)w->seq);
	T_ASSERT(what, a->seq == w->seq);
}

static void
test_sequences(void)
{
	char what[256];
	size_t i, k;

	for (i = 0; i < NROWS(seqs); i++) {
		const struct seq_case *sc = &seqs[i];
		struct api_answer a;

		api_answer_init(&a);
		for (k = 0; k < sc->n; k++) {
			cJSON *o = cJSON_Parse(sc->ev[k].json);
			enum api_ev got = o ? sc->api->event(o, KEY, &a) :
					      API_EV_ERROR;

			snprintf(what, sizeof(what), "%s: event %zu is %s",
				 sc->name, k + 1, ev_name(sc->ev[k].want));
			T_ASSERT(what, o != NULL && got == sc->ev[k].want);
			cJSON_Delete(o);
		}
		check_answer(sc->name, &a, &sc->want);
	}
}

/* Error messages never carry the upstream key (docs/design.md section 3),
 * and are cut. */
static void
test_error_masked(void)
{
	struct api_answer a;
	cJSON *o = cJSON_Parse(chat_err_choice[0].json);
	char big[1200];

	api_answer_init(&a);
	api_chat.event(o, KEY, &a);
	T_ASSERT("error message: the key is masked",
		 strstr(a.err_msg, "SECRET") == NULL &&
			 strstr(a.err_msg, "slow down ") != NULL);
	cJSON_Delete(o);
	/* A key that straddles the 256-byte cut is masked before it. */
	memset(big, 'x', sizeof(big));
	memcpy(big, "{\"type\":\"error\",\"error\":{\"message\":\"", 36);
	memcpy(big + 36 + 240, KEY, strlen(KEY));
	memcpy(big + 600, "\"}}", 4);
	o = cJSON_Parse(big);
	api_answer_init(&a);
	T_ASSERT("error message: parsed", o != NULL &&
		 api_messages.event(o, KEY, &a) == API_EV_ERROR);
	T_ASSERT("error message: a key at the cut is masked, not cut in two",
		 strlen(a.err_msg) == sizeof(a.err_msg) - 1 &&
			 strstr(a.err_msg, "sk-or") == NULL);
	cJSON_Delete(o);
}

struct body_row {
	const char *name;
	const struct api *api;
	const char *json;
	struct ans_want want;
};

static const struct body_row bodies[] = {
	{"chat: a completion", &api_chat,
	 "{\"id\":\"gen-1\",\"object\":\"chat.completion\",\"provider\":"
	 "\"DeepInfra\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
	 "\"assistant\",\"content\":\"Hi\"},\"finish_reason\":\"stop\"}],"
	 "\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2,\"cost\":"
	 "0.5,\"prompt_tokens_details\":{\"cached_tokens\":4}}}",
	 {10, 4, 0, 2, true, 0.5, "DeepInfra", false, false, false, 0, -1}},
	{"chat: an error envelope in a 200", &api_chat,
	 "{\"error\":{\"code\":429,\"message\":\"later\"},\"user_id\":\"u\"}",
	 {0, 0, 0, 0, false, 0, "", false, false, true, 429, -1}},
	{"messages: a message", &api_messages,
	 "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\","
	 "\"content\":[{\"type\":\"text\",\"text\":\"Hi\"}],\"provider\":"
	 "\"Amazon Bedrock\",\"stop_reason\":\"end_turn\",\"usage\":{"
	 "\"input_tokens\":20,\"cache_read_input_tokens\":100,"
	 "\"cache_creation_input_tokens\":null,\"output_tokens\":6,\"cost\":"
	 "0.01}}",
	 {120, 100, 0, 6, true, 0.01, "Amazon Bedrock", false, false, false,
	  0, -1}},
	{"messages: an error body", &api_messages,
	 "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\","
	 "\"message\":\"slow\"},\"request_id\":null}",
	 {0, 0, 0, 0, false, 0, "", false, false, true, 429, -1}},
	{"responses: a response", &api_responses,
	 "{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\","
	 "\"error\":null,\"output\":[],\"usage\":{\"input_tokens\":50,"
	 "\"input_tokens_details\":{\"cached_tokens\":30,"
	 "\"cache_write_tokens\":null},\"output_tokens\":5,\"cost\":0.002},"
	 "\"openrouter_metadata\":{\"endpoints\":{\"available\":[{"
	 "\"provider\":\"Gamma\",\"selected\":true}]}}}",
	 {50, 30, 0, 5, true, 0.002, "Gamma", false, false, false, 0, -1}},
	{"responses: incomplete is an answer", &api_responses,
	 "{\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":"
	 "\"max_output_tokens\"},\"error\":null,\"usage\":{\"input_tokens\":"
	 "1,\"output_tokens\":2}}",
	 {1, 0, 0, 2, false, 0, "", false, false, false, 0, -1}},
	{"responses: a failed response", &api_responses,
	 "{\"status\":\"failed\",\"error\":{\"code\":\"server_error\","
	 "\"message\":\"x\"},\"error_type\":\"server\"}",
	 {0, 0, 0, 0, false, 0, "", false, false, true, 500, -1}},
	{"responses: an OpenAI error envelope", &api_responses,
	 "{\"error\":{\"code\":402,\"message\":\"credits\"}}",
	 {0, 0, 0, 0, false, 0, "", false, false, true, 402, -1}},
};

static void
test_bodies(void)
{
	size_t i;

	for (i = 0; i < NROWS(bodies); i++) {
		struct api_answer a;
		cJSON *o = cJSON_Parse(bodies[i].json);

		api_answer_init(&a);
		T_ASSERT(bodies[i].name, o != NULL);
		if (o != NULL)
			bodies[i].api->body(o, KEY, &a);
		check_answer(bodies[i].name, &a, &bodies[i].want);
		cJSON_Delete(o);
	}
}

static const char *
str_at(const cJSON *o, const char *a, const char *b)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, a);

	if (b != NULL)
		it = cJSON_GetObjectItemCaseSensitive(it, b);
	return cJSON_IsString(it) ? it->valuestring : "";
}

/* Anthropic's error type of each status orgw answers with (docs/design.md
 * section 11). */
static void
test_messages_error_types(void)
{
	static const struct {
		int status;
		const char *type;
	} rows[] = {
		{400, "invalid_request_error"}, {401, "authentication_error"},
		{402, "billing_error"},		{403, "permission_error"},
		{404, "not_found_error"},	{405, "invalid_request_error"},
		{413, "request_too_large"},	{415, "invalid_request_error"},
		{429, "rate_limit_error"},	{500, "api_error"},
		{502, "api_error"},		{503, "overloaded_error"},
		{504, "timeout_error"},		{529, "overloaded_error"},
	};
	char what[128], *s;
	cJSON *o;
	size_t i;

	for (i = 0; i < NROWS(rows); i++) {
		s = api_messages.error_body(rows[i].status, "x", "y", NULL,
					    "msg", i % 2 ? "gen-1-abc" : NULL);
		o = s ? cJSON_Parse(s) : NULL;
		snprintf(what, sizeof(what),
			 "messages: %d is %s, with request_id %s",
			 rows[i].status, rows[i].type,
			 i % 2 ? "gen-1-abc" : "null");
		T_ASSERT(what, strcmp(str_at(o, "type", NULL), "error") == 0 &&
				       strcmp(str_at(o, "error", "type"),
					      rows[i].type) == 0 &&
				       strcmp(str_at(o, "error", "message"),
					      "msg") == 0 &&
				       (i % 2 ? strcmp(str_at(o, "request_id",
							      NULL),
						       "gen-1-abc") == 0 :
						cJSON_IsNull(cJSON_GetObjectItem(
							o, "request_id"))));
		cJSON_Delete(o);
		cJSON_free(s);
	}
}

/* The SSE text s holds "event: <name>" (or none when name is NULL) and
 * one data line; returns its JSON (caller deletes) or NULL. */
static cJSON *
sse_json(const char *s, const char *name)
{
	const char *d;
	char head[64];
	size_t n;

	if (s == NULL)
		return NULL;
	if (name != NULL) {
		snprintf(head, sizeof(head), "event: %s\ndata: ", name);
		if (strncmp(s, head, strlen(head)) != 0)
			return NULL;
		d = s + strlen(head);
	} else {
		if (strncmp(s, "data: ", 6) != 0)
			return NULL;
		d = s + 6;
	}
	n = strlen(d);
	if (n < 2 || strcmp(d + n - 2, "\n\n") != 0)
		return NULL;
	return cJSON_ParseWithLength(d, n - 2);
}

static void
test_writers(void)
{
	struct api_answer a;
	char *s;
	cJSON *o;

	/* Their own errors: OpenAI's shape on chat and Responses. */
	s = api_responses.error_body(401, "invalid_request_error",
				     "invalid_api_key", NULL, "no", NULL);
	o = s ? cJSON_Parse(s) : NULL;
	T_ASSERT("responses: its errors are OpenAI-shaped",
		 strcmp(str_at(o, "error", "code"), "invalid_api_key") == 0 &&
			 strcmp(str_at(o, "error", "type"),
				"invalid_request_error") == 0);
	cJSON_Delete(o);
	cJSON_free(s);

	/* Mid-stream failures, each in its API's words. */
	api_answer_init(&a);
	s = api_chat.stream_error(502, "mid_stream_failure", "cut", "m/x", 7,
				  &a);
	o = sse_json(s, NULL);
	T_ASSERT("chat: a mid-stream failure is an error chunk, its code a "
		 "number (OpenRouter's form)",
		 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
			 cJSON_GetObjectItemCaseSensitive(o, "error"),
			 "code")) == 502 &&
			 strcmp(str_at(cJSON_GetObjectItemCaseSensitive(
					       o, "error"),
				       "metadata", "error_type"),
				"mid_stream_failure") == 0 &&
			 strcmp(str_at(o, "error", "message"), "cut") == 0 &&
			 strstr(s, "\"finish_reason\":\"error\"") != NULL);
	cJSON_Delete(o);
	cJSON_free(s);
	s = api_messages.stream_error(504, "mid_stream_failure", "stalled",
				      "m/x", 7, &a);
	o = sse_json(s, "error");
	T_ASSERT("messages: a mid-stream failure is an error event",
		 strcmp(str_at(o, "type", NULL), "error") == 0 &&
			 strcmp(str_at(o, "error", "type"), "timeout_error") ==
				 0 &&
			 strcmp(str_at(o, "error", "message"), "stalled") == 0);
	cJSON_Delete(o);
	cJSON_free(s);
	a.seq = 41;
	s = api_responses.stream_error(502, "mid_stream_failure", "cut",
				       "m/x", 7, &a);
	o = sse_json(s, "response.failed");
	T_ASSERT("responses: a mid-stream failure is response.failed",
		 strcmp(str_at(o, "type", NULL), "response.failed") == 0 &&
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
				 o, "sequence_number")) == 42 &&
			 strcmp(str_at(cJSON_GetObjectItemCaseSensitive(
					       o, "response"),
				       "status", NULL),
				"failed") == 0 &&
			 strcmp(str_at(cJSON_GetObjectItemCaseSensitive(
					       o, "response"),
				       "error", "message"),
				"cut") == 0);
	cJSON_Delete(o);
	cJSON_free(s);

	/* Inside a committed 200. */
	s = api_chat.committed_error(502, "upstream_error", "gone", "m/x", 7,
				     "gen-2");
	o = s ? cJSON_Parse(s) : NULL;
	T_ASSERT("chat: a committed failure is an OpenAI error object",
		 strcmp(str_at(o, "error", "message"), "gone") == 0);
	cJSON_Delete(o);
	cJSON_free(s);
	s = api_messages.committed_error(504, "request_timeout", "late",
					 "m/x", 7, "gen-2");
	o = s ? cJSON_Parse(s) : NULL;
	T_ASSERT("messages: a committed failure is an Anthropic error, with "
		 "its request_id",
		 strcmp(str_at(o, "type", NULL), "error") == 0 &&
			 strcmp(str_at(o, "error", "type"), "timeout_error") ==
				 0 &&
			 strcmp(str_at(o, "request_id", NULL), "gen-2") == 0);
	cJSON_Delete(o);
	cJSON_free(s);
	s = api_responses.committed_error(502, "upstream_error", "gone",
					  "m/x", 7, NULL);
	o = s ? cJSON_Parse(s) : NULL;
	T_ASSERT("responses: a committed failure is a failed response",
		 strcmp(str_at(o, "status", NULL), "failed") == 0 &&
			 strcmp(str_at(o, "object", NULL), "response") == 0 &&
			 strcmp(str_at(o, "error", "message"), "gone") == 0);
	cJSON_Delete(o);
	cJSON_free(s);

	/* What orgw adds to a stream that ended after its end event. */
	T_ASSERT("stream close: chat [DONE], Messages message_stop, "
		 "Responses nothing",
		 strcmp(api_chat.stream_close, "data: [DONE]\n\n") == 0 &&
			 strstr(api_messages.stream_close,
				"event: message_stop\n") ==
				 api_messages.stream_close &&
			 api_responses.stream_close[0] == '\0');
}

/* The table: names and limits of docs/design.md section 11. */
static void
test_table(void)
{
	T_ASSERT("api_get: each id its adapter",
		 api_get(API_CHAT) == &api_chat &&
			 api_get(API_MESSAGES) == &api_messages &&
			 api_get(API_RESPONSES) == &api_responses);
	T_ASSERT("upstream paths",
		 strcmp(api_chat.upstream_path, "/chat/completions") == 0 &&
			 strcmp(api_messages.upstream_path, "/messages") == 0 &&
			 strcmp(api_responses.upstream_path, "/responses") ==
				 0);
	T_ASSERT("output limits: max_tokens and max_completion_tokens, "
		 "max_tokens, max_output_tokens",
		 strcmp(api_chat.limits[1], "max_completion_tokens") == 0 &&
			 strcmp(api_messages.limits[0], "max_tokens") == 0 &&
			 api_messages.limits[1] == NULL &&
			 strcmp(api_responses.limits[0],
				"max_output_tokens") == 0);
	T_ASSERT("held back: 64 KiB, Responses twice the body more",
		 api_chat.held_min_bytes == 65536 &&
			 api_messages.held_min_bytes == 65536 &&
			 api_responses.held_body_times == 2);
}

int
main(void)
{
	test_sequences();
	test_error_masked();
	test_bodies();
	test_messages_error_types();
	test_writers();
	test_table();
	return T_REPORT();
}
