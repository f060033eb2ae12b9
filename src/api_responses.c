/*
 * api_responses.c - the Responses adapter (docs/upstream.md 14, docs/design.md 11).
 *
 * A stream is "data:" lines (OpenRouter sends no "event:" lines, OpenAI
 * does: both work, the JSON's "type" names the event) with a
 * sequence_number each: response.created, response.in_progress,
 * output_item.added, content_part.added, then deltas, .done events, and
 * response.completed (or response.incomplete: the output limit, a
 * normal end) with the usage, then "data: [DONE]".  Every *.delta event
 * is a token (output_text, refusal, reasoning_text,
 * reasoning_summary_text, function_call_arguments, and the guide's
 * content_part.delta); the events before the first one are held back,
 * and they can be large: response.created and response.in_progress
 * echo the request's instructions and tools.  An error is
 * response.failed (its response.error), an "error" event (error nested
 * as {code, message} or flat), or response.error; a non-streamed failure
 * is a body with status "failed".
 *
 * Usage is OpenAI's: input_tokens includes the cached ones
 * (input_tokens_details.cached_tokens); cache writes are
 * input_tokens_details.cache_write_tokens.  No "provider" member: the
 * serving provider is named only in openrouter_metadata, which OpenRouter
 * adds when asked (X-OpenRouter-Metadata: enabled), as the member of the
 * body, of the terminal event or of its response.
 */
#include <stdio.h>
#include <string.h>

#include "api.h"

static bool
type_is(const cJSON *t, const char *name)
{
	return cJSON_IsString(t) && strcmp(t->valuestring, name) == 0;
}

/* Usage object u (OpenAI's names) into ans. */
static void
fold_usage(const cJSON *u, struct api_answer *ans)
{
	const cJSON *d;

	if (!cJSON_IsObject(u))
		return;
	ans->usage.have = true;
	ans->usage.prompt =
		api_count(cJSON_GetObjectItemCaseSensitive(u, "input_tokens"));
	ans->usage.completion = api_count(
		cJSON_GetObjectItemCaseSensitive(u, "output_tokens"));
	d = cJSON_GetObjectItemCaseSensitive(u, "input_tokens_details");
	ans->usage.cached =
		api_count(cJSON_GetObjectItemCaseSensitive(d, "cached_tokens"));
	ans->usage.cache_write = api_count(
		cJSON_GetObjectItemCaseSensitive(d, "cache_write_tokens"));
	d = cJSON_GetObjectItemCaseSensitive(u, "output_tokens_details");
	ans->usage.reasoning = api_count(
		cJSON_GetObjectItemCaseSensitive(d, "reasoning_tokens"));
	api_take_cost(ans, u);
}

/* The provider openrouter_metadata says was selected, from o's member
 * (OpenRouter's experimental router metadata: endpoints.available[]
 * with provider and selected). */
static void
take_metadata(const cJSON *o, struct api_answer *ans)
{
	const cJSON *md, *it;

	md = cJSON_GetObjectItemCaseSensitive(o, "openrouter_metadata");
	md = cJSON_GetObjectItemCaseSensitive(md, "endpoints");
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(md,
								"available"))
	{
		if (cJSON_IsTrue(
			    cJSON_GetObjectItemCaseSensitive(it, "selected"))) {
			api_take_served(ans, it, "provider");
			return;
		}
	}
}

/* An error object e ({code, message}) into ans; e NULL: the flat form,
 * code and message beside "type" in o. */
static void
take_error(const cJSON *o, const cJSON *e, const char *key,
	   struct api_answer *ans)
{
	if (!cJSON_IsObject(e))
		e = o;
	api_take_error(ans,
		       api_code_status(cJSON_GetObjectItemCaseSensitive(e,
									"code")),
		       cJSON_GetObjectItemCaseSensitive(e, "message"), key);
}

/* True when type t names a delta event ("response.output_text.delta"). */
static bool
is_delta(const cJSON *t)
{
	size_t n;

	if (!cJSON_IsString(t))
		return false;
	n = strlen(t->valuestring);
	return n > 6 && strcmp(t->valuestring + n - 6, ".delta") == 0;
}

static enum api_ev
responses_event(const cJSON *o, const char *key, struct api_answer *ans)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "response");
	const cJSON *sq = cJSON_GetObjectItemCaseSensitive(o,
							   "sequence_number");

	if (cJSON_IsNumber(sq) && sq->valuedouble >= 0 &&
	    sq->valuedouble < 1e15)
		ans->seq = (int64_t)sq->valuedouble;
	take_metadata(o, ans);
	take_metadata(r, ans);
	if (type_is(t, "response.failed")) {
		fold_usage(cJSON_GetObjectItemCaseSensitive(r, "usage"), ans);
		take_error(o, cJSON_GetObjectItemCaseSensitive(r, "error"), key,
			   ans);
		return API_EV_ERROR;
	}
	if (type_is(t, "error") || type_is(t, "response.error")) {
		take_error(o, cJSON_GetObjectItemCaseSensitive(o, "error"), key,
			   ans);
		return API_EV_ERROR;
	}
	if (type_is(t, "response.completed") ||
	    type_is(t, "response.incomplete") || type_is(t, "response.done")) {
		fold_usage(cJSON_GetObjectItemCaseSensitive(r, "usage"), ans);
		ans->finished = true;
		ans->done = true;
		return API_EV_END;
	}
	return is_delta(t) ? API_EV_TOKEN : API_EV_HOLD;
}

static void
responses_body(const cJSON *o, const char *key, struct api_answer *ans)
{
	take_metadata(o, ans);
	fold_usage(cJSON_GetObjectItemCaseSensitive(o, "usage"), ans);
	if (type_is(cJSON_GetObjectItemCaseSensitive(o, "status"), "failed"))
		take_error(o, cJSON_GetObjectItemCaseSensitive(o, "error"), key,
			   ans);
	else if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "error")))
		/* An OpenAI error envelope in a 200. */
		take_error(o, cJSON_GetObjectItemCaseSensitive(o, "error"), key,
			   ans);
}

/* A failed response object: what response.failed carries and what a
 * failure in a committed 200 is. */
static cJSON *
failed_response(const char *msg, const char *model, int64_t now)
{
	cJSON *r = cJSON_CreateObject(), *e;
	bool ok;

	ok = r != NULL && cJSON_AddStringToObject(r, "id", "resp_orgw_error") &&
	     cJSON_AddStringToObject(r, "object", "response") &&
	     cJSON_AddNumberToObject(r, "created_at", (double)now) &&
	     cJSON_AddStringToObject(r, "status", "failed") &&
	     cJSON_AddStringToObject(r, "model", model) &&
	     cJSON_AddArrayToObject(r, "output") &&
	     (e = cJSON_AddObjectToObject(r, "error")) != NULL &&
	     cJSON_AddStringToObject(e, "code", "server_error") &&
	     cJSON_AddStringToObject(e, "message", msg) &&
	     cJSON_AddNullToObject(r, "incomplete_details") &&
	     cJSON_AddNullToObject(r, "usage");
	if (!ok) {
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}

/* response.failed, with the sequence number after the last one sent,
 * and no response.completed after it (docs/design.md 11). */
static char *
responses_stream_error(int status, const char *code, const char *msg,
		       const char *model, int64_t now,
		       const struct api_answer *ans)
{
	cJSON *o = cJSON_CreateObject(), *r = failed_response(msg, model, now);
	char *out = NULL;
	bool ok;

	(void)status;
	(void)code;
	ok = o != NULL && r != NULL &&
	     cJSON_AddStringToObject(o, "type", "response.failed") &&
	     cJSON_AddNumberToObject(o, "sequence_number",
				     ans != NULL && ans->seq >= 0 ?
					     (double)(ans->seq + 1) :
					     0);
	if (ok && cJSON_AddItemToObject(o, "response", r))
		r = NULL;
	else
		ok = false;
	if (ok)
		out = api_sse("response.failed", cJSON_PrintUnformatted(o));
	cJSON_Delete(r);
	cJSON_Delete(o);
	return out;
}

static char *
responses_committed_error(int status, const char *code, const char *msg,
			  const char *model, int64_t now,
			  const char *request_id)
{
	cJSON *r = failed_response(msg, model, now);
	char *s = r != NULL ? cJSON_PrintUnformatted(r) : NULL;

	(void)status;
	(void)code;
	(void)request_id;
	cJSON_Delete(r);
	return s;
}

const struct api api_responses = {
	.id = API_RESPONSES,
	.name = "responses",
	.upstream_path = "/responses",
	.input = "input",
	.input_string_ok = true,
	.limits = {"max_output_tokens", NULL},
	.thinking = false,
	.held_min_bytes = 64u * 1024,
	.held_body_times = 2,
	.done_sentinel = false,
	.stream_close = "",
	.event = responses_event,
	.body = responses_body,
	.error_body = api_openai_error,
	.stream_error = responses_stream_error,
	.committed_error = responses_committed_error,
};
