/*
 * api.h - the three generation APIs orgw serves (docs/design.md section 11) as
 * pure adapters over one relay (relay.c).
 *
 * chat completions (OpenAI SDKs, opencode, Aider, Cline), the Anthropic
 * Messages API (Claude Code, Anthropic SDKs) and the Responses API (Codex
 * CLI, the openai SDK's client.responses) share the routing core, the
 * failover policy (failover.c) and the accounting.  What differs is
 * small and lives in one table per API (api_chat.c, api_messages.c,
 * api_responses.c):
 *   - the request's field names: the required input ("messages" or
 *     "input"), the output limits orgw clamps, extended thinking;
 *   - what one stream event means (docs/design.md 11's table): held back until a
 *     token, a token, the answer's end, an upstream error;
 *   - where usage, the serving provider and an error sit in an event or
 *     a non-streamed body, in the API's own units;
 *   - how orgw writes an error: its own errors, a failure in the middle
 *     of a stream, a failure inside a committed 200.
 *
 * Pure: cJSON in, values out; no I/O, no clock (times are arguments).
 * Writers return cJSON-allocated text the caller frees with cJSON_free().
 */
#ifndef ORGW_API_H
#define ORGW_API_H

#include <cJSON.h>

#include "orgw.h"

enum api_id {
	API_CHAT,
	API_MESSAGES,
	API_RESPONSES,
};
#define API_N 3

/* What one upstream stream event is (docs/design.md 11, "first token",
 * "held back until then", "whole", "upstream error event"). */
enum api_ev {
	API_EV_HOLD,	/* no token: held back before the first token (a
			 * role-only chunk, message_start, ping,
			 * content_block_start, response.created, ...),
			 * relayed as it comes after it */
	API_EV_TOKEN,	/* a token (content, reasoning, a tool call's
			 * input), or anything else a client must not see
			 * twice (chat's usage chunk) */
	API_EV_END,	/* completes the answer: a finish_reason, a
			 * message_delta with a stop_reason, message_stop,
			 * response.completed, response.incomplete */
	API_EV_ERROR,	/* an upstream error event */
};

/* Usage in orgw's units, whatever the API's (docs/design.md 11, "Accounting"):
 * prompt counts every input token, cached the part read from a cache,
 * cache_write the part written to one. */
struct api_usage {
	bool have;		/* a usage object was seen */
	int64_t prompt, cached, cache_write, completion;
	int64_t reasoning;	/* of completion: thinking the answer
				 * does not show (0 for Messages, whose
				 * usage does not say) */
	bool have_cost;		/* upstream said what it billed */
	double cost;		/* USD */
};

/*
 * What an attempt's answer said, folded from its events in order (a
 * stream) or from its body: later values overwrite earlier ones field by
 * field (Messages sends the input side of its usage in message_start and
 * the output side in message_delta).
 */
struct api_answer {
	struct api_usage usage;
	int64_t usage_input;		/* Messages: input_tokens as sent,
					 * neither read from nor written to
					 * a cache */
	char served[ORGW_TAG_MAX];	/* the serving provider's display
					 * name, "" when not named */
	bool has_error;			/* an error object, in a body or an
					 * error event */
	long err_code;			/* the HTTP status it stands for */
	char err_msg[256];		/* its message, the key masked */
	bool finished;			/* an API_EV_END came */
	bool done;			/* the stream's own last event came
					 * (message_stop, response.completed
					 * or .incomplete; chat: [DONE]) */
	int64_t seq;			/* Responses: the last
					 * sequence_number, -1 none */
};

struct api {
	enum api_id id;
	const char *name;		/* "chat", "messages", "responses":
					 * log api=, /stats by_api, the
					 * /metrics api label */
	const char *upstream_path;	/* below UPSTREAM_URL */
	const char *input;		/* the member a request needs */
	bool input_string_ok;		/* ... may be a string (Responses) */
	const char *limits[2];		/* output limits clamped to the
					 * pinned endpoint's; NULL unused */
	bool thinking;			/* thinking.budget_tokens stays below
					 * the clamped max_tokens */
	size_t held_min_bytes;		/* the events held back before the
					 * first token are bounded by this */
	unsigned held_body_times;	/* ... plus this many times the
					 * request body (Responses' first two
					 * events echo its tools) */
	bool done_sentinel;		/* "data: [DONE]" ends the stream */
	const char *stream_close;	/* what orgw adds to a stream that
					 * ended after its API_EV_END but
					 * without its own last event; ""
					 * for nothing */

	/* Classifies one data event (a parsed JSON object, borrowed) and
	 * folds what it says into ans.  key (may be NULL) is masked out of
	 * error messages. */
	enum api_ev (*event)(const cJSON *o, const char *key,
			     struct api_answer *ans);
	/* Folds a complete non-streamed answer (a JSON object) into ans;
	 * ans->has_error when it is a failure inside a 200. */
	void (*body)(const cJSON *o, const char *key, struct api_answer *ans);
	/* The body of an error orgw answers itself: status, the OpenAI
	 * error type and code (code may be NULL), param (may be NULL),
	 * the message; request_id (may be NULL: none) is upstream's id of
	 * the request, which Anthropic's shape carries as "request_id"
	 * (null without one). */
	char *(*error_body)(int status, const char *type, const char *code,
			    const char *param, const char *msg,
			    const char *request_id);
	/* The SSE bytes that end a stream broken after content reached
	 * the client (no normal end follows): status is what the failure
	 * stands for (502, 504, ...), code orgw's short name of it.
	 * model and now (unix seconds) fill the event; ans (may be NULL)
	 * is what the attempt said so far. */
	char *(*stream_error)(int status, const char *code, const char *msg,
			      const char *model, int64_t now,
			      const struct api_answer *ans);
	/* A failure reported inside a non-streamed 200 already committed
	 * (whitespace went out first): the JSON document that follows. */
	char *(*committed_error)(int status, const char *code,
				 const char *msg, const char *model,
				 int64_t now, const char *request_id);
};

extern const struct api api_chat;
extern const struct api api_messages;
extern const struct api api_responses;

/* The adapter of id.  Never NULL for a valid id. */
const struct api *api_get(enum api_id id);

/* Clears ans for a new attempt. */
void api_answer_init(struct api_answer *ans);

/* Helpers the adapters share (api.c). */

/* A token count: a finite number 0..1e15, else 0. */
int64_t api_count(const cJSON *it);

/* Sets ans's error: code, and msg (a string, else "upstream error")
 * with key masked before it is cut to fit. */
void api_take_error(struct api_answer *ans, long code, const cJSON *msg,
		    const char *key);

/* Sets ans->usage.cost from a usage object's "cost" when it is a
 * finite number 0..1e9. */
void api_take_cost(struct api_answer *ans, const cJSON *usage);

/* Copies a string member name of o into ans->served (first one wins). */
void api_take_served(struct api_answer *ans, const cJSON *o,
		     const char *name);

/*
 * The OpenAI-shaped error object {"error":{"message","type","param",
 * "code"}}; code and param may be NULL (then null).  Returns text the
 * caller frees with cJSON_free(), or NULL when out of memory (then
 * HTTP_OOM_JSON, http.h, says so).
 */
char *api_openai_error_json(const char *type, const char *code,
			    const char *param, const char *msg);

/* The same as an adapter's error_body (chat completions and Responses;
 * status and request_id are not part of the shape). */
char *api_openai_error(int status, const char *type, const char *code,
		       const char *param, const char *msg,
		       const char *request_id);

/* One SSE event: "event: <event>\n" (none when event is NULL), then
 * "data: <json>\n\n".  Takes json (cJSON-allocated; NULL: out of memory)
 * and frees it; returns cJSON-allocated text, or NULL. */
char *api_sse(const char *event, char *json);

/* The HTTP status an error "code" stands for: a number as it is; the
 * strings OpenAI and OpenRouter use ("rate_limit_exceeded", ...) by
 * meaning; anything else 500. */
long api_code_status(const cJSON *code);

#endif
