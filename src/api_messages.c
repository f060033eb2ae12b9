/*
 * api_messages.c - the Anthropic Messages adapter (docs/upstream.md 13,
 * docs/design.md 11).
 *
 * A stream is message_start, ping, then per content block
 * content_block_start, content_block_delta..., content_block_stop, then
 * message_delta (stop_reason, output usage) and message_stop; each event
 * an "event:" line and a "data:" line whose "type" names it.  The
 * first token is the first content_block_delta (text, thinking, a tool's
 * input, citations); what comes before it is held back, since the
 * Anthropic SDK throws on a second message_start and a failover must
 * not show the client one.  A message_delta with a stop_reason completes
 * the answer (orgw adds the message_stop a stream then lacks).  An error
 * is an "error" event, or a body {"type":"error","error":{...}}, whose
 * error.type names its status.
 *
 * Usage is Anthropic's: input_tokens excludes what was read from or
 * written to the cache, so the prompt is input_tokens +
 * cache_read_input_tokens + cache_creation_input_tokens; message_start
 * carries the input side, message_delta the output side, and a later
 * value overwrites an earlier one.
 */
#include <stdio.h>
#include <string.h>

#include "api.h"

/* Folds an Anthropic usage object u into ans, member by member. */
static void
fold_usage(const cJSON *u, struct api_answer *ans)
{
	static const char *const names[] = {"input_tokens",
					    "cache_read_input_tokens",
					    "cache_creation_input_tokens",
					    "output_tokens"};
	int64_t *slots[] = {&ans->usage_input, &ans->usage.cached,
			    &ans->usage.cache_write, &ans->usage.completion};
	const cJSON *it;
	size_t i;

	if (!cJSON_IsObject(u))
		return;
	ans->usage.have = true;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		it = cJSON_GetObjectItemCaseSensitive(u, names[i]);
		if (it != NULL && !cJSON_IsNull(it))
			*slots[i] = api_count(it);
	}
	ans->usage.prompt =
		ans->usage_input + ans->usage.cached + ans->usage.cache_write;
	api_take_cost(ans, u);
}

/* {"type":"error","error":{"type":T,"message":M}} into ans. */
static void
take_error(const cJSON *o, const char *key, struct api_answer *ans)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");

	api_take_error(ans,
		       api_code_status(cJSON_GetObjectItemCaseSensitive(e,
									"type")),
		       cJSON_GetObjectItemCaseSensitive(e, "message"), key);
}

static bool
type_is(const cJSON *t, const char *name)
{
	return cJSON_IsString(t) && strcmp(t->valuestring, name) == 0;
}

static enum api_ev
messages_event(const cJSON *o, const char *key, struct api_answer *ans)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type"), *m, *d;

	if (type_is(t, "error")) {
		take_error(o, key, ans);
		return API_EV_ERROR;
	}
	if (type_is(t, "message_start")) {
		m = cJSON_GetObjectItemCaseSensitive(o, "message");
		api_take_served(ans, m, "provider");
		fold_usage(cJSON_GetObjectItemCaseSensitive(m, "usage"), ans);
		return API_EV_HOLD;
	}
	if (type_is(t, "content_block_delta"))
		return API_EV_TOKEN;
	if (type_is(t, "message_delta")) {
		fold_usage(cJSON_GetObjectItemCaseSensitive(o, "usage"), ans);
		d = cJSON_GetObjectItemCaseSensitive(o, "delta");
		d = cJSON_GetObjectItemCaseSensitive(d, "stop_reason");
		if (cJSON_IsString(d)) {
			ans->finished = true;
			return API_EV_END;
		}
		return API_EV_TOKEN;
	}
	if (type_is(t, "message_stop")) {
		ans->finished = true;
		ans->done = true;
		return API_EV_END;
	}
	/* ping, content_block_start, content_block_stop, and types this
	 * version does not know. */
	return API_EV_HOLD;
}

static void
messages_body(const cJSON *o, const char *key, struct api_answer *ans)
{
	if (type_is(cJSON_GetObjectItemCaseSensitive(o, "type"), "error")) {
		take_error(o, key, ans);
		return;
	}
	api_take_served(ans, o, "provider");
	fold_usage(cJSON_GetObjectItemCaseSensitive(o, "usage"), ans);
}

/* Anthropic's error type for an HTTP status (docs/design.md 11). */
static const char *
error_type(int status)
{
	switch (status) {
	case 400:
	case 405:
	case 411:
	case 415:
		return "invalid_request_error";
	case 401:
		return "authentication_error";
	case 402:
		return "billing_error";
	case 403:
		return "permission_error";
	case 404:
		return "not_found_error";
	case 413:
		return "request_too_large";
	case 429:
		return "rate_limit_error";
	case 503:
	case 529:
		return "overloaded_error";
	case 504:
		return "timeout_error";
	default:
		break;
	}
	return status >= 400 && status < 500 ? "invalid_request_error" :
					       "api_error";
}

/* {"type":"error","error":{"type":T,"message":M}}, and with_id:
 * "request_id" (Anthropic's error shape; request_id, or null when NULL);
 * cJSON_free() it. */
static char *
error_json(int status, const char *msg, bool with_id, const char *request_id)
{
	cJSON *o = cJSON_CreateObject(), *e;
	char *s = NULL;

	if (o != NULL && cJSON_AddStringToObject(o, "type", "error") &&
	    (e = cJSON_AddObjectToObject(o, "error")) != NULL &&
	    cJSON_AddStringToObject(e, "type", error_type(status)) &&
	    cJSON_AddStringToObject(e, "message", msg) &&
	    (!with_id ||
	     (request_id != NULL ?
		      cJSON_AddStringToObject(o, "request_id", request_id) :
		      cJSON_AddNullToObject(o, "request_id")) != NULL))
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

static char *
messages_error_body(int status, const char *type, const char *code,
		    const char *param, const char *msg,
		    const char *request_id)
{
	(void)type;
	(void)code;
	(void)param;
	return error_json(status, msg, true, request_id);
}

/* An "error" event and nothing after it: no message_stop, so the SDK
 * throws instead of taking a cut answer for a whole one. */
static char *
messages_stream_error(int status, const char *code, const char *msg,
		      const char *model, int64_t now,
		      const struct api_answer *ans)
{
	(void)code;
	(void)model;
	(void)now;
	(void)ans;
	return api_sse("error", error_json(status, msg, false, NULL));
}

static char *
messages_committed_error(int status, const char *code, const char *msg,
			 const char *model, int64_t now,
			 const char *request_id)
{
	(void)code;
	(void)model;
	(void)now;
	return error_json(status, msg, true, request_id);
}

const struct api api_messages = {
	.id = API_MESSAGES,
	.name = "messages",
	.upstream_path = "/messages",
	.input = "messages",
	.input_string_ok = false,
	.limits = {"max_tokens", NULL},
	.thinking = true,
	.held_min_bytes = 64u * 1024,
	.held_body_times = 0,
	.done_sentinel = false,
	.stream_close = "event: message_stop\ndata: {\"type\":\"message_stop\"}"
			"\n\n",
	.event = messages_event,
	.body = messages_body,
	.error_body = messages_error_body,
	.stream_error = messages_stream_error,
	.committed_error = messages_committed_error,
};
