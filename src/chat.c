/*
 * chat.c - the chat-completions proxy.
 *
 * One request runs: validate (reqval) -> route (state_route, maybe an
 * inline scoring) -> up to MAX_ATTEMPTS upstream attempts (attempt_loop;
 * failover.c decides what each one means and what comes next) -> the
 * answer -> one stats transaction (bookkeep).  This file does the I/O and
 * holds no failover policy.  No state lock is held across network I/O.
 *
 * Streaming: the client's header block is held back until the first
 * token (or for KEEPALIVE_COMMIT_MS at most), so a provider that fails
 * before its first token can still be replaced without the client
 * noticing; role-only chunks are held until a token follows them.  Once
 * content has been relayed, a failure ends the client's stream with an
 * SSE error event and no "[DONE]" (SPEC section 5), so a truncated answer
 * never looks finished.
 *
 * Real durations (SPEC 5): a request lasts up to minutes.  The first
 * token of a stream is its first chunk with content; the first byte of a
 * non-streamed answer is its first byte, padding included.  Silence, not
 * length, is a timeout; REQUEST_TIMEOUT_MS bounds the whole request.
 * The client connection is never silent for long (keep_alive()): web
 * servers notice a departed client only when they write to it.
 *
 * Ownership: struct chat owns everything of the request (parsed body,
 * buffers, forwarded body); chat_free() releases it once.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "buf.h"
#include "chat.h"
#include "clock.h"
#include "failover.h"
#include "log.h"
#include "mask.h"
#include "reqval.h"
#include "score.h"
#include "scorerun.h"
#include "sse.h"
#include "state.h"
#include "upstream.h"

#define KEEPALIVE_COMMIT_MS 3000	/* hold headers at most this long */
#define KEEPALIVE_EVERY_MS 250		/* then never silent longer: some
					 * servers see a departed client
					 * only at their 2nd to 4th write */
#define WAIT_TICK_MS 50			/* a 429 wait looks around this often */
#define HELD_MAX_BYTES (64u * 1024)
#define BODY_MAX_BYTES (64u * 1024 * 1024)	/* non-stream response cap */
#define CONNECT_TIMEOUT_MS 10000

struct attempt {
	long status;
	char ctype[128];
	int retry_after;
	bool is_sse;
	struct buf body;	/* non-SSE body (or an error body) */
	struct sse sse;
	int64_t t_start;
	/* Stream: the first and the last token (a chunk with content).
	 * Non-streamed: the first and the last body byte, padding
	 * included.  0 when none came yet.  Silence is measured from
	 * t_last (a stall) or from t_start (a timeout). */
	int64_t t_first, t_last;
	bool nonws;		/* non-streamed: a body byte that is not
				 * whitespace padding came */
	bool content;		/* data relayed in this attempt */
	bool done;		/* saw data: [DONE] */
	bool finished;		/* a chunk carried a finish_reason */
	enum failover_abort why;
	long err_code;		/* error object's code, in body or event */
	char err_msg[256];
	char served[ORGW_TAG_MAX];	/* response "provider" */
	bool have_usage;
	int64_t prompt, cached, completion;
	double cost;
};

struct chat {
	const struct orgw_conf *c;
	const struct orgw_io *io;
	struct chat_req req;
	struct state_route route;
	char used_tag[ORGW_TAG_MAX];	/* pin of the last attempt, "" none */
	enum route_kind used_route;	/* route of the last attempt */
	char *fwd;		/* forwarded body (cJSON allocated) */
	int attempts;
	bool head_sent;		/* the client has its header block */
	bool json_head;		/* ... of a non-streamed 200: whitespace and
				 * then one JSON document follow */
	int64_t t_wrote;	/* the last write to the client */
	struct buf held;	/* comments held before the header block */
	struct buf pending;	/* role-only chunks, until a token follows */
	struct attempt a;
	struct failover_verdict v;	/* what the last attempt means */
	struct stats_delta d;
	int64_t t0;
	int final_status;
	bool ok;		/* a success, for the stats and the breaker */
	const char *result;	/* outcome= in the log */
	int rc;			/* what chat_handle returns */
};

static void
attempt_reset(struct attempt *a)
{
	buf_free(&a->body);
	sse_free(&a->sse);
	memset(a, 0, sizeof(*a));
	a->body.max = BODY_MAX_BYTES;
	a->retry_after = -1;
	sse_init(&a->sse, 0);
}

static void
chat_free(struct chat *ch)
{
	reqval_free(&ch->req);
	cJSON_free(ch->fwd);
	buf_free(&ch->held);
	buf_free(&ch->pending);
	buf_free(&ch->a.body);
	sse_free(&ch->a.sse);
}

static const char *
pinned_tag(const struct chat *ch)
{
	return ch->route.tag[0] ? ch->route.tag : NULL;
}

/* The X-Orgw-* response headers (SPEC section 2). */
static void
orgw_headers(const struct chat *ch, char *dst, size_t n)
{
	snprintf(dst, n,
		 "X-Orgw-Provider: %s\r\nX-Orgw-Route: %s\r\n"
		 "X-Orgw-Attempts: %d\r\n",
		 pinned_tag(ch) ? pinned_tag(ch) : "auto",
		 route_name(ch->route.kind), ch->attempts);
}

/* Writes the stream's head and what was held back, unflushed: the
 * caller flushes after the event that follows, so the head and the first
 * token leave in one write. */
static int
send_stream_head(struct chat *ch)
{
	char extra[512], h[700];
	const struct orgw_io *io = ch->io;

	if (ch->head_sent)
		return 0;
	orgw_headers(ch, extra, sizeof(extra));
	snprintf(h, sizeof(h), "Cache-Control: no-cache\r\n"
			       "X-Accel-Buffering: no\r\n%s",
		 extra);
	ch->head_sent = true;
	ch->final_status = 200;
	if (http_head(io, 200, "text/event-stream", h) != 0)
		return -1;
	if (ch->held.len && io->write(io->ctx, ch->held.p, ch->held.len))
		return -1;
	buf_reset(&ch->held);
	return 0;
}

/* Writes n bytes to the client and flushes: 0, or -1 when it is gone. */
static int
send_now(struct chat *ch, const char *p, size_t n)
{
	const struct orgw_io *io = ch->io;

	if ((n && io->write(io->ctx, p, n)) || io->flush(io->ctx))
		return -1;
	ch->t_wrote = clock_mono_ms();
	return 0;
}

/*
 * Commits a non-streamed answer: its 200 head, so that whitespace can
 * keep the connection alive while upstream pads its own committed 200.
 * Any later answer is one JSON document after the whitespace, an error
 * too (as OpenRouter answers).  -1: the client is gone.
 */
static int
send_json_head(struct chat *ch)
{
	char extra[512];

	orgw_headers(ch, extra, sizeof(extra));
	ch->head_sent = true;
	ch->json_head = true;
	ch->final_status = 200;
	if (http_head(ch->io, 200, "application/json", extra) != 0)
		return -1;
	return send_now(ch, "\n", 1);
}

/* How many of the n bytes at p are the whitespace OpenRouter pads a
 * non-streamed answer with before its JSON (OPENROUTER.md 5). */
static size_t
padding_len(const char *p, size_t n)
{
	size_t i = 0;

	while (i < n && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' ||
			 p[i] == '\t'))
		i++;
	return i;
}

/* True when the attempt is a non-streamed 200 that has sent only
 * whitespace padding so far: upstream committed and works. */
static bool
upstream_pads(const struct attempt *a)
{
	return !a->is_sse && a->status == 200 && a->body.len > 0 && !a->nonws;
}

/*
 * Keeps the client connection from going silent (SPEC 5, "Keeping the
 * client connection alive"); called about every 50 ms while upstream
 * works and while a 429 retry waits.  A stream's head goes out after
 * KEEPALIVE_COMMIT_MS, with what was held; a non-streamed answer's only
 * while upstream pads its own committed 200 (before that, failover stays
 * invisible, status and all).  After the head, a comment (stream) or a
 * newline (JSON) whenever nothing was written for KEEPALIVE_EVERY_MS.
 * -1: the client is gone.
 */
static int
keep_alive(struct chat *ch, int64_t now)
{
	if (!ch->head_sent) {
		if (now - ch->t0 < KEEPALIVE_COMMIT_MS)
			return 0;
		if (ch->req.stream)
			return send_stream_head(ch) == 0 ? send_now(ch, "", 0) :
							   -1;
		return upstream_pads(&ch->a) ? send_json_head(ch) : 0;
	}
	if (now - ch->t_wrote < KEEPALIVE_EVERY_MS)
		return 0;
	if (ch->json_head)
		return send_now(ch, "\n", 1);
	return send_now(ch, ": keep-alive\n\n", 14);
}

/* A token count from usage: a non-negative number, else 0. */
static int64_t
count(const cJSON *it)
{
	if (!cJSON_IsNumber(it) || !(it->valuedouble >= 0) ||
	    it->valuedouble > 1e15)
		return 0;
	return (int64_t)it->valuedouble;
}

/*
 * The error a choice carries: how OpenRouter reports a provider error
 * after it committed its 200 (choices[].error with finish_reason
 * "error", OPENROUTER.md 6), in a body or a chunk.  NULL when none.
 */
static const cJSON *
choice_error(const cJSON *o)
{
	const cJSON *c, *e;

	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(o, "choices"))
	{
		e = cJSON_GetObjectItemCaseSensitive(c, "error");
		if (cJSON_IsObject(e))
			return e;
	}
	return NULL;
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

/* Takes provider, usage and error out of a response or chunk object.
 * The error message is decoded text: a key spelled with JSON escapes
 * ("sk\u002dor...") only shows in it, so it is masked (key) before
 * orgw re-sends it. */
static void
read_meta(struct attempt *a, const cJSON *o, const char *key)
{
	const cJSON *p, *u, *e, *d;

	p = cJSON_GetObjectItemCaseSensitive(o, "provider");
	if (cJSON_IsString(p) && a->served[0] == '\0')
		snprintf(a->served, sizeof(a->served), "%s", p->valuestring);
	u = cJSON_GetObjectItemCaseSensitive(o, "usage");
	if (cJSON_IsObject(u)) {
		a->have_usage = true;
		a->prompt = count(cJSON_GetObjectItemCaseSensitive(
			u, "prompt_tokens"));
		a->completion = count(cJSON_GetObjectItemCaseSensitive(
			u, "completion_tokens"));
		d = cJSON_GetObjectItemCaseSensitive(u,
						     "prompt_tokens_details");
		a->cached = count(
			cJSON_GetObjectItemCaseSensitive(d, "cached_tokens"));
		d = cJSON_GetObjectItemCaseSensitive(u, "cost");
		a->cost = cJSON_IsNumber(d) && d->valuedouble >= 0 &&
					  d->valuedouble < 1e9 ?
				  d->valuedouble :
				  0;
	}
	e = cJSON_GetObjectItemCaseSensitive(o, "error");
	if (!cJSON_IsObject(e))
		e = choice_error(o);
	if (cJSON_IsObject(e)) {
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
		const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e,
								    "message");
		a->err_code = cJSON_IsNumber(code) ? (long)code->valuedouble :
							 500;
		if (cJSON_IsString(msg))
			mask_key_str(key, msg->valuestring);
		snprintf(a->err_msg, sizeof(a->err_msg), "%s",
			 cJSON_IsString(msg) ? msg->valuestring :
					       "upstream error");
	}
}

static void
on_headers(void *arg, long status, const char *ctype, int retry_after)
{
	struct chat *ch = arg;
	struct attempt *a = &ch->a;

	a->status = status;
	snprintf(a->ctype, sizeof(a->ctype), "%s", ctype);
	a->retry_after = retry_after;
	a->is_sse = status == 200 &&
		    strncasecmp(ctype, "text/event-stream", 17) == 0;
}

/* The upstream key masked in p[0..n) (mask.c, SPEC 3); t0780 and t0800
 * check it. */
static void
chat_mask(const struct chat *ch, char *p, size_t n)
{
	mask_key(ch->c->openrouter_api_key, p, n);
}

/* Writes the head (once) and the role-only chunks held for the token
 * that follows them, unflushed: that token's write flushes.  -1 when the
 * client is gone. */
static int
send_pending(struct chat *ch)
{
	const struct orgw_io *io = ch->io;

	if (send_stream_head(ch) != 0)
		return -1;
	if (ch->pending.len && io->write(io->ctx, ch->pending.p,
					 ch->pending.len) != 0)
		return -1;
	buf_reset(&ch->pending);
	return 0;
}

/* Writes an event as it came (after the held-back head) and flushes: 0,
 * or -1 when the client is gone. */
static int
relay_raw(struct chat *ch, const struct sse_event *ev)
{
	if (send_stream_head(ch) != 0)
		return -1;
	return send_now(ch, ev->raw, ev->raw_len);
}

/* A comment (keep-alive) or other event: held back with the head, which
 * goes out after KEEPALIVE_COMMIT_MS at the latest (keep_alive()).
 * -1: client gone. */
static int
on_comment(struct chat *ch, const struct sse_event *ev)
{
	if (ch->head_sent)
		return relay_raw(ch, ev);
	if (ch->held.len + ev->raw_len <= HELD_MAX_BYTES)
		(void)buf_add(&ch->held, ev->raw, ev->raw_len);
	return keep_alive(ch, clock_mono_ms());
}

/* A data event: relayed when it carries content; 1 stops the attempt
 * (a->why says why). */
static int
on_chunk(struct chat *ch, const struct sse_event *ev)
{
	struct attempt *a = &ch->a;
	bool content;
	cJSON *o;

	o = cJSON_ParseWithLength(ev->data, ev->data_len);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		a->why = AB_MALFORMED;
		snprintf(a->err_msg, sizeof(a->err_msg),
			 "upstream sent a malformed chunk");
		return 1;
	}
	read_meta(a, o, ch->c->openrouter_api_key);
	content = failover_carries_content(o);
	if (has_finish(o))
		a->finished = true;
	cJSON_Delete(o);
	if (a->err_msg[0] != '\0') {
		a->why = AB_ERROR_EVENT;
		return 1;
	}
	if (!content) {
		/* A role-only chunk is not a token (SPEC 5): hold it, so a
		 * provider that fails after it can still be replaced
		 * without the client seeing two starts, even once the head
		 * went out with keep-alives. */
		if (ch->pending.len + ev->raw_len > HELD_MAX_BYTES ||
		    buf_add(&ch->pending, ev->raw, ev->raw_len) != ORGW_OK) {
			a->why = AB_TOO_BIG;
			return 1;
		}
		return 0;
	}
	a->t_last = clock_mono_ms();
	if (a->t_first == 0)
		a->t_first = a->t_last;
	if (send_pending(ch) != 0 || relay_raw(ch, ev) != 0) {
		a->why = AB_GONE;
		return 1;
	}
	a->content = true;
	return 0;
}

static int
on_event(void *arg, const struct sse_event *ev)
{
	struct chat *ch = arg;

	/* The event's bytes live in the splitter's buffers (sse.h), which
	 * are ours to change until we return. */
	chat_mask(ch, ev->raw, ev->raw_len);
	chat_mask(ch, ev->data, ev->data_len);

	switch (ev->kind) {
	case SSE_COMMENT:
	case SSE_OTHER:
		if (on_comment(ch, ev) == 0)
			return 0;
		break;
	case SSE_DONE:
		ch->a.done = true;
		if (relay_raw(ch, ev) == 0)
			return 0;
		break;
	case SSE_DATA:
		return on_chunk(ch, ev);
	}
	ch->a.why = AB_GONE;
	return 1;
}

static int
on_data(void *arg, const char *p, size_t n)
{
	struct chat *ch = arg;
	struct attempt *a = &ch->a;
	enum orgw_err err;
	int stopped = 0;

	if (!a->is_sse) {
		/* Padding is a byte too: upstream committed and works. */
		a->t_last = clock_mono_ms();
		if (a->t_first == 0)
			a->t_first = a->t_last;
		if (!a->nonws && padding_len(p, n) < n)
			a->nonws = true;
		if ((err = buf_add(&a->body, p, n)) != ORGW_OK) {
			a->why = AB_TOO_BIG;
			return 1;
		}
		return 0;
	}
	err = sse_feed(&a->sse, p, n, on_event, ch, &stopped);
	if (err != ORGW_OK) {
		a->why = AB_TOO_BIG;
		snprintf(a->err_msg, sizeof(a->err_msg),
			 "upstream event too large");
		return 1;
	}
	return stopped;
}

static int
on_tick(void *arg, int64_t now)
{
	struct chat *ch = arg;
	struct attempt *a = &ch->a;
	int64_t limit = ch->c->upstream_timeout_ms;

	if (now - ch->t0 >= ch->c->request_timeout_ms) {
		a->why = AB_DEADLINE;
		return 1;
	}
	/* A stream needs tokens: comments keep its line open but do not
	 * answer.  A non-streamed answer's padding does (SPEC 5). */
	if (a->t_first == 0 && now - a->t_start >= limit) {
		a->why = AB_TIMEOUT;
		return 1;
	}
	if (a->t_first != 0 && now - a->t_last >= limit) {
		a->why = AB_STALL;
		return 1;
	}
	if (keep_alive(ch, now) != 0) {
		a->why = AB_GONE;
		return 1;
	}
	return 0;
}

static void
on_client_gone(void *arg)
{
	struct chat *ch = arg;

	ch->a.why = AB_GONE;
}

/* Parses a finished non-SSE body: usage, provider, embedded error. */
static bool
parse_body(struct attempt *a, const char *key)
{
	const char *p = a->body.p ? a->body.p : "";
	cJSON *o;

	p += padding_len(p, a->body.len);
	o = cJSON_ParseWithLength(p, strlen(p) + 1);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return false;
	}
	read_meta(a, o, key);
	cJSON_Delete(o);
	return true;
}

/* Feeds a failure to the breaker; follows a re-lock on a trip. */
static void
provider_failed(struct chat *ch, enum failover_kind kind)
{
	bool tripped = false;
	struct state_route next = ch->route;
	const char *tag = ch->used_tag;

	if (tag[0] == '\0' || ch->route.kind == ROUTE_CLIENT)
		return;
	state_failure(ch->c, ch->req.model, tag, failover_kind_name(kind),
		      clock_now_s(), &tripped, &next);
	if (tripped) {
		ch->d.trips++;
		ch->route = next;
	}
}

/* Sleeps for a 429 retry while watching the client and keeping its
 * connection alive (keep_alive()); -1 if it left. */
static int
wait_429(struct chat *ch, int64_t ms)
{
	struct pollfd pfd;
	int64_t now, end = clock_mono_ms() + ms, left;

	while ((left = end - (now = clock_mono_ms())) > 0) {
		if (keep_alive(ch, now) != 0)
			return -1;
		if (left > WAIT_TICK_MS)
			left = WAIT_TICK_MS;
		if (ch->io->client_fd < 0) {
			clock_sleep_ms(left);
			continue;
		}
		pfd.fd = ch->io->client_fd;
		pfd.events = ch->io->client_events;
		pfd.revents = 0;
		if (poll(&pfd, 1, (int)left) > 0)
			return -1;
	}
	return 0;
}

/* Sends the SSE error event that ends a broken stream (no [DONE]). */
static void
send_stream_error(struct chat *ch, const char *code, const char *msg)
{
	cJSON *o = cJSON_CreateObject(), *ch0, *arr, *e;
	char *s = NULL;
	bool ok;

	ok = o && cJSON_AddStringToObject(o, "id", "orgw-error") &&
	     cJSON_AddStringToObject(o, "object", "chat.completion.chunk") &&
	     cJSON_AddNumberToObject(o, "created", (double)clock_now_s()) &&
	     cJSON_AddStringToObject(o, "model", ch->req.model) &&
	     (arr = cJSON_AddArrayToObject(o, "choices")) != NULL &&
	     (ch0 = cJSON_CreateObject()) != NULL &&
	     cJSON_AddItemToArray(arr, ch0) &&
	     cJSON_AddNumberToObject(ch0, "index", 0) &&
	     cJSON_AddObjectToObject(ch0, "delta") &&
	     cJSON_AddStringToObject(ch0, "finish_reason", "error") &&
	     (e = cJSON_AddObjectToObject(o, "error")) != NULL &&
	     cJSON_AddStringToObject(e, "message", msg) &&
	     cJSON_AddStringToObject(e, "type", "upstream_error") &&
	     cJSON_AddStringToObject(e, "code", code);
	if (ok && (s = cJSON_PrintUnformatted(o)) != NULL &&
	    send_stream_head(ch) == 0) {
		if (ch->io->write(ch->io->ctx, "data: ", 6) == 0 &&
		    ch->io->write(ch->io->ctx, s, strlen(s)) == 0 &&
		    ch->io->write(ch->io->ctx, "\n\n", 2) == 0)
			ch->io->flush(ch->io->ctx);
	}
	cJSON_free(s);
	cJSON_Delete(o);
}

static int relay_gateway_error(struct chat *ch, int status, const char *code,
			       const char *msg);

/* Relays a finished non-streamed upstream response (or error body). */
static int
relay_body(struct chat *ch)
{
	struct attempt *a = &ch->a;
	const char *p = a->body.p ? a->body.p : "";
	size_t len = a->body.len, pad;
	char extra[512];
	int status = (int)(a->status ? a->status : 502);

	/* OpenRouter pads slow responses with whitespace (OPENROUTER.md 5);
	 * clients' JSON parsers must not see it. */
	pad = padding_len(p, len);
	p += pad;
	len -= pad;
	/* A redirect is not followed and has no meaning for the client
	 * (no Location is relayed): a gateway error. */
	if (status >= 300 && status <= 399)
		return relay_gateway_error(ch, 502, "upstream_error",
					   "upstream answered with a redirect");
	if (status >= 200 && status <= 299 && a->err_msg[0] != '\0') {
		/* An error inside a 200 (body or SSE event): the client
		 * gets it with the status it stands for, not as a 200. */
		status = a->err_code >= 400 && a->err_code <= 599 ?
				 (int)a->err_code :
				 502;
		if (a->is_sse || len == 0)
			return relay_gateway_error(ch, status, "upstream_error",
						   a->err_msg);
	}
	if (ch->json_head)	/* committed: the document, as it came */
		return len ? send_now(ch, p, len) :
			     relay_gateway_error(ch, status, "upstream_error",
						 "upstream returned an empty "
						 "response");
	if (ch->head_sent) {
		/* A stream already began (keep-alives); say it in-band. */
		send_stream_error(ch, "upstream_error",
				  a->err_msg[0] ? a->err_msg :
						  "upstream request failed");
		return 0;
	}
	ch->final_status = status;
	orgw_headers(ch, extra, sizeof(extra));
	if (len == 0)
		return http_error(ch->io, status, "upstream_error", NULL, NULL,
				  "upstream returned an empty response",
				  extra);
	return http_json(ch->io, status, extra, p, len);
}

/* The gateway's own error when no upstream response can be relayed. */
static int
relay_gateway_error(struct chat *ch, int status, const char *code,
		    const char *msg)
{
	char extra[512], *s;
	int rc;

	if (ch->json_head) {
		/* A committed 200: an OpenAI error object after the
		 * whitespace, as OpenRouter answers then. */
		s = http_error_json("upstream_error", code, NULL, msg);
		rc = s ? send_now(ch, s, strlen(s)) :
			 send_now(ch, HTTP_OOM_JSON, sizeof(HTTP_OOM_JSON) - 1);
		cJSON_free(s);
		return rc;
	}
	if (ch->head_sent) {
		send_stream_error(ch, code, msg);
		return 0;
	}
	ch->final_status = status;
	orgw_headers(ch, extra, sizeof(extra));
	return http_error(ch->io, status, "upstream_error", code, NULL, msg,
			  extra);
}

/* The answer when the last attempt failed and no attempt is left. */
static int
relay_failure(struct chat *ch)
{
	const struct attempt *a = &ch->a;

	if (a->status >= 300 && !a->is_sse && a->body.len > 0)
		return relay_body(ch);
	if (ch->v.kind == FK_TIMEOUT)
		return relay_gateway_error(ch, 504, "upstream_timeout",
					   "upstream did not answer in time");
	return relay_gateway_error(ch, 502, "upstream_unavailable",
				   a->err_msg[0] ? a->err_msg :
						   "upstream failed");
}

/* Route the request (SPEC section 4), scoring inline when needed. */
static void
route_request(struct chat *ch)
{
	struct score_result res;
	char err[128];
	int64_t now = clock_now_s();

	state_route(ch->c, ch->req.model, ch->req.has_provider, now,
		    &ch->route);
	if (ch->route.kind != ROUTE_SCORED)
		return;
	if (scorerun_fetch(ch->c, ch->req.model, SCORERUN_INLINE_TIMEOUT_MS,
			   &res, err, sizeof(err)) == ORGW_OK) {
		state_route_scored(ch->c, ch->req.model, &res, NULL, now,
				   &ch->route);
		score_result_free(&res);
	} else {
		char m[ORGW_MODEL_MAX * 4];
		log_warn("inline scoring of %s failed: %s; unpinned",
			 log_safe(m, sizeof(m), ch->req.model), err);
		state_route_scored(ch->c, ch->req.model, NULL, err, now,
				   &ch->route);
	}
}

static void
log_request(const struct chat *ch, const char *outcome, int64_t ttfb,
	    int64_t total)
{
	char m[ORGW_MODEL_MAX * 4];

	log_msg("req",
		"time=%lld model=%s route=%s provider=%s status=%d attempts=%d "
		"ttfb_ms=%lld total_ms=%lld prompt=%lld cached=%lld "
		"completion=%lld cost=%.8f stream=%d outcome=%s",
		(long long)clock_now_s(), log_safe(m, sizeof(m), ch->req.model),
		route_name(ch->attempts ? ch->used_route : ch->route.kind),
		ch->used_tag[0] ? ch->used_tag : "auto", ch->final_status,
		ch->attempts, (long long)ttfb, (long long)total,
		(long long)ch->a.prompt, (long long)ch->a.cached,
		(long long)ch->a.completion, ch->a.cost, ch->req.stream ? 1 : 0,
		outcome);
}

/* The off-pin check: did the pinned provider really serve? */
static void
check_served(struct chat *ch)
{
	char m[ORGW_MODEL_MAX * 4], s[ORGW_TAG_MAX * 4];

	if (ch->route.kind == ROUTE_CLIENT || ch->route.kind == ROUTE_UNPINNED ||
	    ch->route.provider_name[0] == '\0' || ch->a.served[0] == '\0')
		return;
	if (strcasecmp(ch->a.served, ch->route.provider_name) == 0 ||
	    strcasecmp(ch->a.served, ch->route.tag) == 0)
		return;
	ch->d.off_pin++;
	log_warn("off-pin: model=%s pinned=%s served=%s",
		 log_safe(m, sizeof(m), ch->req.model), ch->route.tag,
		 log_safe(s, sizeof(s), ch->a.served));
}

static enum failover_net
net_of(enum up_fail f)
{
	switch (f) {
	case UP_OK:
		return NET_OK;
	case UP_CONNECT:
		return NET_CONNECT;
	case UP_TIMEOUT:
		return NET_TIMEOUT;
	case UP_RESET:
	case UP_ABORTED:
	case UP_OTHER:
		break;
	}
	return NET_BROKEN;
}

/* Describes the finished attempt to failover.c and keeps its verdict in
 * ch->v; fills in the message a failure is reported with. */
static void
judge_attempt(struct chat *ch, const struct upstream_result *r)
{
	struct attempt *a = &ch->a;
	struct failover_attempt fa;

	memset(&fa, 0, sizeof(fa));
	fa.status = a->status;
	fa.is_sse = a->is_sse;
	fa.pinned = ch->used_tag[0] != '\0';
	fa.content = a->content;
	fa.done = a->done;
	fa.why = a->why;
	fa.net = net_of(r->fail);
	/* Usage, provider and an embedded error are read from a complete
	 * 2xx body only. */
	if (!a->is_sse && a->status >= 200 && a->status <= 299 &&
	    a->why == AB_NONE && r->fail == UP_OK)
		fa.body_ok = parse_body(a, ch->c->openrouter_api_key);
	fa.has_error = a->err_msg[0] != '\0';
	fa.err_code = a->err_code;
	fa.finished = a->finished;
	ch->v = failover_classify(&fa);
	if (ch->v.mid_msg != NULL && a->err_msg[0] == '\0')
		snprintf(a->err_msg, sizeof(a->err_msg), "%s", ch->v.mid_msg);
	if (ch->v.out == FO_FAIL && r->fail != UP_OK && a->why == AB_NONE)
		snprintf(a->err_msg, sizeof(a->err_msg), "%s", r->error);
}

/* One upstream attempt; its verdict in ch->v.  -1 when out of memory. */
static int
run_attempt(struct chat *ch)
{
	struct upstream_call call;
	struct upstream_result r;
	char url[4096];

	attempt_reset(&ch->a);
	/* What an earlier attempt held back (keep-alives, its role chunk)
	 * is dropped: this attempt's stream brings its own. */
	if (!ch->head_sent)
		buf_reset(&ch->held);
	buf_reset(&ch->pending);
	cJSON_free(ch->fwd);
	ch->fwd = reqval_forward(&ch->req, pinned_tag(ch), ch->route.max_out);
	if (ch->fwd == NULL)
		return -1;
	snprintf(url, sizeof(url), "%s/chat/completions", ch->c->upstream_url);
	memset(&call, 0, sizeof(call));
	call.url = url;
	call.key = ch->c->openrouter_api_key;
	call.body = ch->fwd;
	call.body_len = strlen(ch->fwd);
	call.connect_timeout_ms = CONNECT_TIMEOUT_MS < ch->c->upstream_timeout_ms ?
					  CONNECT_TIMEOUT_MS :
					  ch->c->upstream_timeout_ms;
	call.client_fd = ch->io->client_fd;
	call.client_events = ch->io->client_events;
	call.on_headers = on_headers;
	call.on_data = on_data;
	call.on_tick = on_tick;
	call.on_client_gone = on_client_gone;
	call.arg = ch;
	/* A failover: this attempt goes to another provider than the last
	 * one (a trip re-locked the model); one per request.  A trip that
	 * left the request unpinned moved it to no provider. */
	if (ch->attempts > 0 && ch->used_tag[0] != '\0' && pinned_tag(ch) &&
	    strcmp(ch->used_tag, pinned_tag(ch)) != 0)
		ch->d.failovers = 1;
	ch->attempts++;
	/* A trip may re-lock ch->route later on; stats and the log must
	 * name the provider this attempt really went to. */
	snprintf(ch->used_tag, sizeof(ch->used_tag), "%s",
		 pinned_tag(ch) ? pinned_tag(ch) : "");
	ch->used_route = ch->route.kind;
	ch->a.t_start = clock_mono_ms();
	if (upstream_perform(&call, &r) != ORGW_OK)
		return -1;
	chat_mask(ch, ch->a.body.p, ch->a.body.len);
	judge_attempt(ch, &r);
	return 0;
}

/* Runs attempts until one is final or none is left (SPEC 5): a 429
 * waits and retries the same provider, a failure is counted and fails
 * over.  -1 when out of memory; else 0 with the last verdict in ch->v. */
static int
attempt_loop(struct chat *ch)
{
	const struct orgw_conf *c = ch->c;
	size_t n429 = 0;
	int64_t ms;

	while (ch->attempts < c->max_attempts) {
		/* No new attempt past the request's deadline. */
		if (ch->attempts > 0 &&
		    clock_mono_ms() - ch->t0 >= c->request_timeout_ms) {
			ch->v.out = FO_DEADLINE;
			ch->v.kind = FK_TIMEOUT;
			return 0;
		}
		if (run_attempt(ch) != 0)
			return -1;
		if (ch->v.out == FO_429)
			ch->d.e429 = 1;	/* requests that met a 429 */
		if (ch->v.out == FO_FAIL) {
			failover_count(&ch->d, ch->v.kind);
			provider_failed(ch, ch->v.kind);
		}
		switch (failover_next(ch->v.out, ch->attempts, c->max_attempts,
				      n429, c->n_retry_429_delays)) {
		case FAILOVER_STOP:
			return 0;
		case FAILOVER_RETRY:
			break;
		case FAILOVER_WAIT_429:
			/* Jitter so workers limited together do not retry in
			 * lockstep. */
			ms = failover_delay_429_ms(c->retry_429_delays[n429],
						   ch->a.retry_after,
						   clock_mono_ms() % 251);
			/* A retry that could not start before the deadline:
			 * the 429 goes to the client now. */
			if (clock_mono_ms() + ms - ch->t0 >=
			    c->request_timeout_ms)
				return 0;
			if (wait_429(ch, ms) != 0) {
				ch->v.out = FO_GONE;
				return 0;
			}
			n429++;
			ch->d.retries_429++;
			break;
		}
	}
	return 0;
}

/* Answers the client after the last attempt's verdict. */
static void
answer(struct chat *ch)
{
	struct attempt *a = &ch->a;

	switch (ch->v.out) {
	case FO_OK:
		ch->ok = true;
		ch->result = "ok";
		if (!a->is_sse)
			ch->rc = relay_body(ch);
		else if (!a->done)
			/* Complete after its finish_reason (SPEC 5): the
			 * [DONE] upstream did not send. */
			ch->rc = send_now(ch, "data: [DONE]\n\n", 14);
		break;
	case FO_DEADLINE:
		failover_count(&ch->d, FK_TIMEOUT);
		ch->result = "request_timeout";
		ch->rc = relay_gateway_error(ch, 504, "request_timeout",
					     "the request took longer than "
					     "REQUEST_TIMEOUT_MS");
		break;
	case FO_CLIENT:
	case FO_429:
		ch->result = ch->v.out == FO_429 ? "rate_limited" :
						   "upstream_4xx";
		ch->rc = relay_body(ch);
		break;
	case FO_GONE:
		ch->d.eabort = 1;
		ch->result = "client_abort";
		ch->final_status = 499;
		ch->rc = -1;
		break;
	case FO_MID:
		failover_count(&ch->d, ch->v.kind);
		provider_failed(ch, ch->v.kind);
		send_stream_error(ch, "mid_stream_failure", a->err_msg);
		ch->result = "mid_stream";
		break;
	case FO_FAIL:
		ch->result = "failed";
		ch->rc = relay_failure(ch);
		break;
	}
}

/* The request's end: stats, the lag rule, the breaker reset, the log. */
static void
bookkeep(struct chat *ch)
{
	const struct orgw_io *io = ch->io;
	int64_t ttfb = -1, total = clock_mono_ms() - ch->t0;

	if (ch->a.t_first)
		ttfb = ch->a.t_first - ch->t0;
	/* The client has all it will get: let the web server end its
	 * response now rather than after the state write and the log. */
	if (io->finish)
		io->finish(io->ctx);
	if (ch->ok) {
		/* Before a possible re-lock below changes ch->route. */
		check_served(ch);
		/* Lag: relayed, but counted toward the breaker (SPEC 5). */
		if (failover_lagged(ch->used_tag[0] != '\0', ch->a.t_start,
				    ch->a.t_first, ch->c->slow_threshold_ms)) {
			failover_count(&ch->d, FK_SLOW);
			provider_failed(ch, FK_SLOW);
		}
		ch->d.ok = 1;
	}
	ch->d.requests = 1;
	ch->d.tag = ch->used_tag[0] ? ch->used_tag : NULL;
	ch->d.prompt_tokens = ch->a.prompt;
	ch->d.cached_tokens = ch->a.cached;
	ch->d.completion_tokens = ch->a.completion;
	ch->d.cost_usd = ch->a.cost;
	ch->d.usage = ch->a.have_usage;
	ch->d.served = ch->a.served;
	ch->d.now = clock_now_s();
	ch->d.ttfb_ms = ttfb;
	ch->d.total_ms = total;
	state_finish(ch->c, ch->req.model, &ch->d,
		     ch->ok && ch->d.eslow == 0 ? ch->d.tag : NULL);
	log_request(ch, ch->result, ttfb, total);
}

int
chat_handle(const struct orgw_conf *c, const struct orgw_io *io,
	    const char *body, size_t len)
{
	struct chat ch;
	const char *param = NULL;
	char err[256];
	int rc;

	memset(&ch, 0, sizeof(ch));
	ch.c = c;
	ch.io = io;
	ch.t0 = clock_mono_ms();
	ch.d.ttfb_ms = -1;
	ch.v.out = FO_FAIL;
	ch.v.kind = FK_OTHER;
	ch.result = "error";
	sse_init(&ch.a.sse, 0);
	if (reqval_parse(body, len,
			 c->n_target_models == 1 ? c->target_models[0] : NULL,
			 &ch.req, err, sizeof(err), &param) != ORGW_OK) {
		rc = http_error(io, 400, "invalid_request_error",
				"invalid_request", param, err, NULL);
		/* Logged too (SPEC 9), as not routed. */
		ch.route.kind = ROUTE_UNPINNED;
		ch.final_status = 400;
		log_request(&ch, "invalid_request", -1,
			    clock_mono_ms() - ch.t0);
		goto out;
	}
	route_request(&ch);
	if (attempt_loop(&ch) == 0) {
		answer(&ch);
	} else {
		ch.rc = relay_gateway_error(&ch, 500, "internal_error",
					    "out of memory");
		ch.result = "oom";
	}
	bookkeep(&ch);
	rc = ch.rc;
out:
	chat_free(&ch);
	return rc;
}
