/*
 * api.c - what the three API adapters share (api.h): the table of
 * adapters, usage and error helpers, the OpenAI error shape.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "mask.h"

const struct api *
api_get(enum api_id id)
{
	switch (id) {
	case API_CHAT:
		return &api_chat;
	case API_MESSAGES:
		return &api_messages;
	case API_RESPONSES:
		return &api_responses;
	}
	return &api_chat;
}

void
api_answer_init(struct api_answer *ans)
{
	memset(ans, 0, sizeof(*ans));
	ans->seq = -1;
}

int64_t
api_count(const cJSON *it)
{
	if (!cJSON_IsNumber(it) || !(it->valuedouble >= 0) ||
	    it->valuedouble > 1e15)
		return 0;
	return (int64_t)it->valuedouble;
}

void
api_take_error(struct api_answer *ans, long code, const cJSON *msg,
	       const char *key)
{
	ans->has_error = true;
	ans->err_code = code;
	/* The message is decoded text: a key spelled with JSON escapes
	 * ("sk\u002dor...") only shows in it, so it is masked before orgw
	 * re-sends it, and before it is cut, so no piece of a key is
	 * left at the cut. */
	if (cJSON_IsString(msg)) {
		mask_key_str(key, msg->valuestring);
		snprintf(ans->err_msg, sizeof(ans->err_msg), "%s",
			 msg->valuestring);
	} else {
		snprintf(ans->err_msg, sizeof(ans->err_msg), "upstream error");
	}
}

void
api_take_cost(struct api_answer *ans, const cJSON *usage)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(usage, "cost");

	if (cJSON_IsNumber(c) && isfinite(c->valuedouble) &&
	    c->valuedouble >= 0 && c->valuedouble < 1e9) {
		ans->usage.have_cost = true;
		ans->usage.cost = c->valuedouble;
	}
}

void
api_take_served(struct api_answer *ans, const cJSON *o, const char *name)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, name);

	if (cJSON_IsString(p) && ans->served[0] == '\0')
		snprintf(ans->served, sizeof(ans->served), "%s",
			 p->valuestring);
}

char *
api_openai_error_json(const char *type, const char *code, const char *param,
		      const char *message)
{
	cJSON *o = cJSON_CreateObject(), *e = NULL;
	char *s = NULL;
	bool ok;

	ok = o != NULL && (e = cJSON_AddObjectToObject(o, "error")) != NULL;
	ok = ok && cJSON_AddStringToObject(e, "message", message) != NULL;
	ok = ok && cJSON_AddStringToObject(e, "type", type) != NULL;
	ok = ok && (param ? cJSON_AddStringToObject(e, "param", param) :
			    cJSON_AddNullToObject(e, "param")) != NULL;
	ok = ok && (code ? cJSON_AddStringToObject(e, "code", code) :
			   cJSON_AddNullToObject(e, "code")) != NULL;
	if (ok)
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

char *
api_openai_error(int status, const char *type, const char *code,
		 const char *param, const char *msg, const char *request_id)
{
	(void)status;
	(void)request_id;
	return api_openai_error_json(type, code, param, msg);
}

char *
api_sse(const char *event, char *json)
{
	char *out = NULL;
	size_t n;

	if (json == NULL)
		return NULL;
	n = strlen(json) + (event ? strlen(event) : 0) + 20;
	if ((out = cJSON_malloc(n)) != NULL)
		snprintf(out, n, "%s%s%sdata: %s\n\n", event ? "event: " : "",
			 event ? event : "", event ? "\n" : "", json);
	cJSON_free(json);
	return out;
}

long
api_code_status(const cJSON *code)
{
	static const struct {
		const char *name;
		long status;
	} names[] = {
		/* OpenAI's and OpenRouter's string codes (docs/upstream.md 6,
		 * 14), and Anthropic's error types (section 13). */
		{"rate_limit_exceeded", 429},	{"rate_limit_error", 429},
		{"invalid_request_error", 400}, {"invalid_request", 400},
		{"authentication_error", 401},	{"invalid_api_key", 401},
		{"billing_error", 402},		{"insufficient_quota", 402},
		{"permission_error", 403},	{"not_found_error", 404},
		{"request_too_large", 413},	{"timeout_error", 504},
		{"overloaded_error", 529},	{"server_error", 500},
		{"api_error", 500},		{"server_overloaded", 503},
	};
	size_t i;

	if (cJSON_IsNumber(code) && code->valuedouble >= 100 &&
	    code->valuedouble <= 599)
		return (long)code->valuedouble;
	if (cJSON_IsString(code))
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strcmp(code->valuestring, names[i].name) == 0)
				return names[i].status;
	return 500;
}
