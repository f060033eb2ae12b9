/*
 * api_chat.c - the chat-completions adapter (docs/upstream.md 5 and 6,
 * docs/design.md 11): OpenAI's chunks, usage and errors.
 *
 * A chunk is a token when it carries content, reasoning, a refusal or a
 * tool call; a role-only first chunk (role "assistant", content "") is
 * not.  A usage chunk is no token but must not reach a client twice, so
 * it counts as one.  A finish_reason other than "error" ends the answer
 * (its usage chunk and [DONE] may follow).  An error comes as a
 * top-level "error" object or, after OpenRouter committed its 200, as
 * choices[].error with finish_reason "error".
 */
#include <stdio.h>
#include <string.h>

#include "api.h"

/* A delta member that says nothing: absent, null, "" or []. */
static bool
is_empty(const cJSON *it)
{
	return it == NULL || cJSON_IsNull(it) ||
	       (cJSON_IsString(it) && it->valuestring[0] == '\0') ||
	       (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 0);
}

/* True when a chunk says something the client must not see twice:
 * text, reasoning, tool calls, a refusal, a finish reason or usage. */
static bool
carries_content(const cJSON *chunk)
{
	static const char *const fields[] = {"content", "reasoning",
					     "refusal", "tool_calls",
					     "reasoning_details"};
	const cJSON *c, *d, *it;
	size_t i;

	if (cJSON_GetObjectItemCaseSensitive(chunk, "usage") != NULL)
		return true;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(chunk,
							       "choices"))
	{
		it = cJSON_GetObjectItemCaseSensitive(c, "finish_reason");
		if (it != NULL && !cJSON_IsNull(it))
			return true;
		d = cJSON_GetObjectItemCaseSensitive(c, "delta");
		for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
			if (!is_empty(cJSON_GetObjectItemCaseSensitive(
				    d, fields[i])))
				return true;
	}
	return false;
}

/* True when a choice of o carries a finish_reason other than "error". */
static bool
has_finish(const cJSON *o)
{
	const cJSON *c, *f;

	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(o, "choices"))
	{
		f = cJSON_GetObjectItemCaseSensitive(c, "finish_reason");
		if (cJSON_IsString(f) && strcmp(f->valuestring, "error") != 0)
			return true;
	}
	return false;
}

/* The error of a response or chunk: its "error" object, else the one a
 * choice carries.  NULL when none. */
static const cJSON *
error_of(const cJSON *o)
{
	const cJSON *c, *e = cJSON_GetObjectItemCaseSensitive(o, "error");

	if (cJSON_IsObject(e))
		return e;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(o, "choices"))
	{
		e = cJSON_GetObjectItemCaseSensitive(c, "error");
		if (cJSON_IsObject(e))
			return e;
	}
	return NULL;
}

/* Provider, usage and error of a response or a chunk into ans. */
static void
read_meta(const cJSON *o, const char *key, struct api_answer *ans)
{
	const cJSON *u, *d, *e;

	api_take_served(ans, o, "provider");
	u = cJSON_GetObjectItemCaseSensitive(o, "usage");
	if (cJSON_IsObject(u)) {
		ans->usage.have = true;
		ans->usage.prompt = api_count(
			cJSON_GetObjectItemCaseSensitive(u, "prompt_tokens"));
		ans->usage.completion = api_count(
			cJSON_GetObjectItemCaseSensitive(u,
							 "completion_tokens"));
		d = cJSON_GetObjectItemCaseSensitive(u,
						     "prompt_tokens_details");
		ans->usage.cached = api_count(
			cJSON_GetObjectItemCaseSensitive(d, "cached_tokens"));
		ans->usage.cache_write = api_count(
			cJSON_GetObjectItemCaseSensitive(d,
							 "cache_write_tokens"));
		d = cJSON_GetObjectItemCaseSensitive(
			u, "completion_tokens_details");
		ans->usage.reasoning = api_count(
			cJSON_GetObjectItemCaseSensitive(d, "reasoning_tokens"));
		api_take_cost(ans, u);
	}
	if ((e = error_of(o)) != NULL)
		api_take_error(ans,
			       api_code_status(
				       cJSON_GetObjectItemCaseSensitive(e,
									"code")),
			       cJSON_GetObjectItemCaseSensitive(e, "message"),
			       key);
}

static enum api_ev
chat_event(const cJSON *o, const char *key, struct api_answer *ans)
{
	/* An error ends the attempt: none came before this event. */
	read_meta(o, key, ans);
	if (ans->has_error)
		return API_EV_ERROR;
	if (has_finish(o)) {
		ans->finished = true;
		return API_EV_END;
	}
	return carries_content(o) ? API_EV_TOKEN : API_EV_HOLD;
}

static void
chat_body(const cJSON *o, const char *key, struct api_answer *ans)
{
	read_meta(o, key, ans);
}

/* The chunk that ends a broken stream: an error object and a
 * finish_reason "error" (docs/design.md 5), in OpenRouter's own form
 * (docs/upstream.md 5 and 11): a numeric code, the HTTP status the failure
 * stands for, and orgw's name of it in metadata.error_type.  Clients decide
 * on the number: opencode re-sends a request whose stream ended with a
 * numeric code and gives up on any other. */
static char *
chat_stream_error(int status, const char *code, const char *msg,
		  const char *model, int64_t now, const struct api_answer *ans)
{
	cJSON *o = cJSON_CreateObject(), *ch0, *arr, *e, *md;
	char *out = NULL;
	bool ok;

	(void)ans;
	ok = o && cJSON_AddStringToObject(o, "id", "orgw-error") &&
	     cJSON_AddStringToObject(o, "object", "chat.completion.chunk") &&
	     cJSON_AddNumberToObject(o, "created", (double)now) &&
	     cJSON_AddStringToObject(o, "model", model) &&
	     (arr = cJSON_AddArrayToObject(o, "choices")) != NULL &&
	     (ch0 = cJSON_CreateObject()) != NULL &&
	     cJSON_AddItemToArray(arr, ch0) &&
	     cJSON_AddNumberToObject(ch0, "index", 0) &&
	     cJSON_AddObjectToObject(ch0, "delta") &&
	     cJSON_AddStringToObject(ch0, "finish_reason", "error") &&
	     (e = cJSON_AddObjectToObject(o, "error")) != NULL &&
	     cJSON_AddNumberToObject(e, "code",
				     status >= 400 && status <= 599 ? status :
								      502) &&
	     cJSON_AddStringToObject(e, "message", msg) &&
	     cJSON_AddStringToObject(e, "type", "upstream_error") &&
	     (md = cJSON_AddObjectToObject(e, "metadata")) != NULL &&
	     cJSON_AddStringToObject(md, "error_type", code);
	if (ok)
		out = api_sse(NULL, cJSON_PrintUnformatted(o));
	cJSON_Delete(o);
	return out;
}

/* In a committed 200: an OpenAI error object after the whitespace, as
 * OpenRouter answers then. */
static char *
chat_committed_error(int status, const char *code, const char *msg,
		     const char *model, int64_t now, const char *request_id)
{
	(void)status;
	(void)request_id;
	(void)model;
	(void)now;
	return api_openai_error_json("upstream_error", code, NULL, msg);
}

const struct api api_chat = {
	.id = API_CHAT,
	.name = "chat",
	.upstream_path = "/chat/completions",
	.input = "messages",
	.input_string_ok = false,
	.limits = {"max_tokens", "max_completion_tokens"},
	.thinking = false,
	.held_min_bytes = 64u * 1024,
	.held_body_times = 0,
	.done_sentinel = true,
	.stream_close = "data: [DONE]\n\n",
	.event = chat_event,
	.body = chat_body,
	.error_body = api_openai_error,
	.stream_error = chat_stream_error,
	.committed_error = chat_committed_error,
};
