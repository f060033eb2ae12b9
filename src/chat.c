/*
 * chat.c - the chat-completions proxy.
 *
 * One request runs: validate (reqval) -> route (state_route, maybe an
 * inline scoring) -> up to MAX_ATTEMPTS upstream attempts -> one stats
 * transaction.  No state lock is held across network I/O.
 *
 * Streaming: the client's header block is held back until the first data
 * event (or until keep-alive comments have run for KEEPALIVE_COMMIT_MS,
 * so proxies in front of us do not time out), so a provider that fails
 * before its first token can still be replaced without the client
 * noticing.  Once content has been relayed, a failure ends the client's
 * stream with an SSE error event and no "[DONE]" (SPEC section 5), so a
 * truncated answer never looks finished.
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
#include "log.h"
#include "reqval.h"
#include "rescore.h"
#include "score.h"
#include "sse.h"
#include "state.h"
#include "upstream.h"

#define KEEPALIVE_COMMIT_MS 3000	/* hold headers at most this long */
#define RETRY_AFTER_CAP_S 30
#define HELD_MAX_BYTES (64u * 1024)
#define BODY_MAX_BYTES (64u * 1024 * 1024)	/* non-stream response cap */
#define CONNECT_TIMEOUT_MS 10000

enum outcome {
	OUT_OK,		/* 2xx relayed, stream completed */
	OUT_429,	/* rate limited: retry the same provider */
	OUT_FAIL,	/* provider failure, nothing relayed: fail over */
	OUT_MID,	/* failure after content reached the client */
	OUT_CLIENT,	/* upstream 4xx etc.: relay as is */
	OUT_GONE,	/* the client went away */
};

enum abort_why {
	AB_NONE,
	AB_TIMEOUT,	/* no first byte in time */
	AB_STALL,	/* stream went quiet */
	AB_MALFORMED,	/* an unparseable chunk */
	AB_ERROR_EVENT,	/* upstream sent an SSE error event */
	AB_GONE,	/* client went away (write failed or hung up) */
	AB_TOO_BIG,	/* response over the cap */
};

struct attempt {
	long status;
	char ctype[128];
	int retry_after;
	bool is_sse;
	struct buf body;	/* non-SSE body (or an error body) */
	struct sse sse;
	int64_t t_start, t_first, t_last;
	bool content;		/* data relayed in this attempt */
	bool done;		/* saw data: [DONE] */
	enum abort_why why;
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
	bool content_sent;	/* ...and some content */
	struct buf held;	/* comments held before the header block */
	struct attempt a;
	struct stats_delta d;
	int64_t t0;
	int final_status;
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

/* A token count from usage: a non-negative number, else 0. */
static int64_t
count(const cJSON *it)
{
	if (!cJSON_IsNumber(it) || !(it->valuedouble >= 0) ||
	    it->valuedouble > 1e15)
		return 0;
	return (int64_t)it->valuedouble;
}

/* Takes provider, usage and error out of a response or chunk object. */
static void
read_meta(struct attempt *a, const cJSON *o)
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
	if (cJSON_IsObject(e)) {
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
		const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e,
								    "message");
		a->err_code = cJSON_IsNumber(code) ? (long)code->valuedouble :
							 500;
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

/*
 * True when a chunk says something the client must not see twice: text,
 * reasoning, tool calls, a refusal, a finish reason or usage.  The first
 * chunk of a stream (role "assistant", content "") is not content.
 */
static bool
carries_content(const cJSON *o)
{
	const cJSON *choices, *c, *d, *it;
	static const char *const fields[] = {"content", "reasoning",
					     "refusal", "tool_calls",
					     "reasoning_details"};
	size_t i;

	if (cJSON_GetObjectItemCaseSensitive(o, "usage") != NULL)
		return true;
	choices = cJSON_GetObjectItemCaseSensitive(o, "choices");
	cJSON_ArrayForEach(c, choices)
	{
		it = cJSON_GetObjectItemCaseSensitive(c, "finish_reason");
		if (it != NULL && !cJSON_IsNull(it))
			return true;
		d = cJSON_GetObjectItemCaseSensitive(c, "delta");
		for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
			it = cJSON_GetObjectItemCaseSensitive(d, fields[i]);
			if (it == NULL || cJSON_IsNull(it))
				continue;
			if (cJSON_IsString(it) && it->valuestring[0] == '\0')
				continue;
			if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 0)
				continue;
			return true;
		}
	}
	return false;
}

/*
 * Overwrites every copy of the upstream key in p[0..n) with '*', in place
 * and at the same length (so JSON around it stays valid).  An upstream
 * that quotes the key back ("Incorrect API key provided: sk-...") must
 * not hand it to the client (SPEC 3); t0780 checks this.
 */
static void
mask_key(const struct chat *ch, char *p, size_t n)
{
	const char *k = ch->c->openrouter_api_key;
	size_t kl = k != NULL ? strlen(k) : 0, i = 0;
	char *q;

	if (kl == 0 || p == NULL)
		return;
	/* memchr finds the candidates (word at a time), memcmp checks. */
	while (i + kl <= n && (q = memchr(p + i, k[0], n - i)) != NULL) {
		i = (size_t)(q - p);
		if (i + kl > n)
			break;
		if (memcmp(q, k, kl) == 0) {
			memset(q, '*', kl);
			i += kl;
		} else {
			i++;
		}
	}
}

static int
on_event(void *arg, const struct sse_event *ev)
{
	struct chat *ch = arg;
	struct attempt *a = &ch->a;
	const struct orgw_io *io = ch->io;
	bool content;
	cJSON *o;

	/* The event's bytes live in the splitter's buffers (sse.h), which
	 * are ours to change until we return. */
	mask_key(ch, (char *)(uintptr_t)ev->raw, ev->raw_len);
	mask_key(ch, (char *)(uintptr_t)ev->data, ev->data_len);

	switch (ev->kind) {
	case SSE_COMMENT:
	case SSE_OTHER:
		if (ch->head_sent) {
			if (io->write(io->ctx, ev->raw, ev->raw_len) ||
			    io->flush(io->ctx))
				goto gone;
			return 0;
		}
		if (ch->held.len + ev->raw_len <= HELD_MAX_BYTES &&
		    buf_add(&ch->held, ev->raw, ev->raw_len) != ORGW_OK)
			return 0;
		if (clock_mono_ms() - ch->t0 >= KEEPALIVE_COMMIT_MS &&
		    (send_stream_head(ch) != 0 || io->flush(io->ctx)))
			goto gone;
		return 0;
	case SSE_DONE:
		a->done = true;
		if (send_stream_head(ch) != 0 ||
		    io->write(io->ctx, ev->raw, ev->raw_len) ||
		    io->flush(io->ctx))
			goto gone;
		return 0;
	case SSE_DATA:
		break;
	}
	if (a->t_first == 0)
		a->t_first = clock_mono_ms();
	o = cJSON_ParseWithLength(ev->data, ev->data_len);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		a->why = AB_MALFORMED;
		snprintf(a->err_msg, sizeof(a->err_msg),
			 "upstream sent a malformed chunk");
		return 1;
	}
	read_meta(a, o);
	content = carries_content(o);
	cJSON_Delete(o);
	if (a->err_msg[0] != '\0') {
		a->why = AB_ERROR_EVENT;
		return 1;
	}
	if (!content && !ch->head_sent) {
		/* A role-only chunk: hold it with the comments, so a
		 * provider that fails right after it can still be replaced
		 * without the client seeing two starts. */
		if (buf_add(&ch->held, ev->raw, ev->raw_len) != ORGW_OK) {
			a->why = AB_TOO_BIG;
			return 1;
		}
		return 0;
	}
	if (send_stream_head(ch) != 0 ||
	    io->write(io->ctx, ev->raw, ev->raw_len) || io->flush(io->ctx))
		goto gone;
	a->content = true;
	ch->content_sent = true;
	return 0;
gone:
	a->why = AB_GONE;
	return 1;
}

static int
on_data(void *arg, const char *p, size_t n)
{
	struct chat *ch = arg;
	struct attempt *a = &ch->a;
	enum orgw_err err;
	int stopped = 0;
	size_t i;

	a->t_last = clock_mono_ms();
	if (!a->is_sse) {
		if (a->t_first == 0)
			for (i = 0; i < n; i++)
				if (p[i] != ' ' && p[i] != '\n' &&
				    p[i] != '\r' && p[i] != '\t') {
					a->t_first = a->t_last;
					break;
				}
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

	/* Keep-alive comments and whitespace padding are not a first
	 * byte: a provider that only keeps the line open is not answering. */
	if (a->t_first == 0 && now - a->t_start >= limit) {
		a->why = AB_TIMEOUT;
		return 1;
	}
	if (a->t_first != 0 && now - (a->t_last ? a->t_last : a->t_start) >=
				       limit) {
		a->why = AB_STALL;
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
parse_body(struct attempt *a)
{
	const char *p = a->body.p ? a->body.p : "";
	cJSON *o;

	while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
		p++;
	o = cJSON_ParseWithLength(p, strlen(p) + 1);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return false;
	}
	read_meta(a, o);
	cJSON_Delete(o);
	return true;
}

static bool
is_5xx(long s)
{
	return s >= 500 && s <= 599;
}

/* Decides what one finished attempt means.  *kind gets the stats class. */
static enum outcome
classify(struct chat *ch, const struct upstream_result *r,
	 const char **kind)
{
	struct attempt *a = &ch->a;

	*kind = "other";
	if (a->why == AB_GONE)
		return OUT_GONE;
	if (a->content) {
		/* Content reached the client: anything short of a clean
		 * [DONE] is a mid-stream failure. */
		if (a->done && r->fail == UP_OK && a->why == AB_NONE)
			return OUT_OK;
		*kind = "mid_stream";
		if (a->err_msg[0] == '\0')
			snprintf(a->err_msg, sizeof(a->err_msg), "%s",
				 a->why == AB_STALL ? "upstream stream stalled" :
				 a->done ? "upstream stream ended badly" :
					   "upstream stream ended before [DONE]");
		return OUT_MID;
	}
	if (a->why == AB_TIMEOUT || r->fail == UP_TIMEOUT) {
		*kind = "timeout";
		return OUT_FAIL;
	}
	if (a->why == AB_STALL) {
		*kind = "timeout";
		return OUT_FAIL;
	}
	if (r->fail != UP_OK && a->why == AB_NONE) {
		*kind = r->fail == UP_CONNECT ? "connect" : "reset";
		return OUT_FAIL;
	}
	if (a->status == 429)
		return OUT_429;
	if (is_5xx(a->status)) {
		*kind = "5xx";
		return OUT_FAIL;
	}
	if (a->status == 404 && pinned_tag(ch)) {
		*kind = "no_endpoint";
		return OUT_FAIL;
	}
	if (a->status < 200 || a->status > 299)
		return OUT_CLIENT;
	if (a->is_sse) {
		/* 200 SSE with no content relayed yet. */
		if (a->why == AB_ERROR_EVENT)
			return a->err_code == 429 ? OUT_429 :
			       (a->err_code >= 400 && a->err_code < 500 &&
				a->err_code != 404 && a->err_code != 408) ?
						    OUT_CLIENT :
						    (*kind = "5xx", OUT_FAIL);
		if (a->done)
			return OUT_OK;	/* a stream with no content at all */
		*kind = a->why == AB_MALFORMED ? "malformed" : "reset";
		return OUT_FAIL;
	}
	if (a->why == AB_TOO_BIG || !parse_body(a)) {
		*kind = "malformed";
		return OUT_FAIL;
	}
	if (a->err_msg[0] != '\0') {
		/* An error object inside a 200 body (OPENROUTER.md 6). */
		if (a->err_code == 429)
			return OUT_429;
		if (a->err_code >= 500 || a->err_code == 408) {
			*kind = "5xx";
			return OUT_FAIL;
		}
		return OUT_CLIENT;
	}
	return OUT_OK;
}

/* Counts a failure kind into the stats delta. */
static void
count_failure(struct stats_delta *d, const char *kind)
{
	if (strcmp(kind, "timeout") == 0)
		d->etimeout++;
	else if (strcmp(kind, "mid_stream") == 0)
		d->emid++;
	else if (strcmp(kind, "5xx") == 0 || strcmp(kind, "connect") == 0 ||
		 strcmp(kind, "reset") == 0)
		d->e5xx++;
	else
		d->eother++;
}

/* Feeds a failure to the breaker; follows a re-lock on a trip. */
static void
provider_failed(struct chat *ch, const char *kind)
{
	bool tripped = false;
	struct state_route next = ch->route;
	const char *tag = ch->used_tag;

	if (tag[0] == '\0' || ch->route.kind == ROUTE_CLIENT)
		return;
	state_failure(ch->c, ch->req.model, tag, kind, clock_now_s(),
		      &tripped, &next);
	if (tripped) {
		ch->d.trips++;
		if (strcmp(next.tag, tag) != 0) {
			ch->d.failovers++;
			ch->route = next;
		}
	}
}

/* Sleeps for a 429 retry while watching the client; -1 if it left. */
static int
wait_429(struct chat *ch, int64_t ms)
{
	struct pollfd pfd;
	int64_t end = clock_mono_ms() + ms, left;

	while ((left = end - clock_mono_ms()) > 0) {
		if (ch->io->client_fd < 0) {
			clock_sleep_ms(left);
			continue;
		}
		pfd.fd = ch->io->client_fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, (int)left) > 0)
			return -1;
	}
	return 0;
}

/* The 429 delay for retry number n (0-based): configured, or a larger
 * Retry-After capped at 30 s, plus up to 250 ms of jitter so workers
 * rate-limited together do not retry in lockstep. */
static int64_t
delay_429(const struct chat *ch, size_t n)
{
	int64_t ms = (int64_t)ch->c->retry_429_delays[n] * 1000;
	int ra = ch->a.retry_after;

	if (ra > RETRY_AFTER_CAP_S)
		ra = RETRY_AFTER_CAP_S;
	if ((int64_t)ra * 1000 > ms)
		ms = (int64_t)ra * 1000;
	return ms + (int64_t)(clock_mono_ms() % 251);
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
	size_t len = a->body.len;
	char extra[512];
	int status = (int)(a->status ? a->status : 502);

	/* OpenRouter pads slow responses with whitespace (OPENROUTER.md 5);
	 * clients' JSON parsers must not see it. */
	while (len && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) {
		p++;
		len--;
	}
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
	ch->final_status = status;
	if (ch->head_sent) {
		/* A stream already began (keep-alives); say it in-band. */
		send_stream_error(ch, "upstream_error",
				  a->err_msg[0] ? a->err_msg :
						  "upstream request failed");
		return 0;
	}
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
	char extra[512];

	ch->final_status = status;
	if (ch->head_sent) {
		send_stream_error(ch, code, msg);
		return 0;
	}
	orgw_headers(ch, extra, sizeof(extra));
	return http_error(ch->io, status, "upstream_error", code, NULL, msg,
			  extra);
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
	if (rescore_fetch(ch->c, ch->req.model, RESCORE_INLINE_TIMEOUT_MS,
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

static int
run_attempt(struct chat *ch, const char **kind, enum outcome *out)
{
	struct upstream_call call;
	struct upstream_result r;
	char url[4096];

	attempt_reset(&ch->a);
	/* What an earlier attempt held back (keep-alives, its role chunk)
	 * is dropped: this attempt's stream brings its own. */
	if (!ch->head_sent)
		buf_reset(&ch->held);
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
	call.on_headers = on_headers;
	call.on_data = on_data;
	call.on_tick = on_tick;
	call.on_client_gone = on_client_gone;
	call.arg = ch;
	ch->attempts++;
	/* A trip may re-lock ch->route later on; stats and the log must
	 * name the provider this attempt really went to. */
	snprintf(ch->used_tag, sizeof(ch->used_tag), "%s",
		 pinned_tag(ch) ? pinned_tag(ch) : "");
	ch->used_route = ch->route.kind;
	ch->a.t_start = clock_mono_ms();
	if (upstream_perform(&call, &r) != ORGW_OK)
		return -1;
	mask_key(ch, ch->a.body.p, ch->a.body.len);
	*out = classify(ch, &r, kind);
	if (*out == OUT_FAIL && r.fail != UP_OK && ch->a.why == AB_NONE)
		snprintf(ch->a.err_msg, sizeof(ch->a.err_msg), "%s", r.error);
	return 0;
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

int
chat_handle(const struct orgw_conf *c, const struct orgw_io *io,
	    const char *body, size_t len)
{
	struct chat ch;
	const char *param = NULL, *kind = "other", *result = "error";
	char err[256];
	enum outcome out = OUT_FAIL;
	size_t n429 = 0;
	int rc = 0;
	int64_t ttfb = -1, total;
	bool ok = false;

	memset(&ch, 0, sizeof(ch));
	ch.c = c;
	ch.io = io;
	ch.t0 = clock_mono_ms();
	ch.d.ttfb_ms = -1;
	sse_init(&ch.a.sse, 0);
	if (reqval_parse(body, len,
			 c->n_target_models == 1 ? c->target_models[0] : NULL,
			 &ch.req, err, sizeof(err), &param) != ORGW_OK) {
		rc = http_error(io, 400, "invalid_request_error",
				"invalid_request", param, err, NULL);
		chat_free(&ch);
		return rc;
	}
	route_request(&ch);
	while (ch.attempts < c->max_attempts) {
		if (run_attempt(&ch, &kind, &out) != 0) {
			rc = relay_gateway_error(&ch, 500, "internal_error",
						 "out of memory");
			result = "oom";
			goto done;
		}
		switch (out) {
		case OUT_OK:
		case OUT_CLIENT:
		case OUT_GONE:
		case OUT_MID:
			goto finished;
		case OUT_429:
			ch.d.e429++;
			if (n429 >= c->n_retry_429_delays ||
			    ch.attempts >= c->max_attempts)
				goto finished;
			if (wait_429(&ch, delay_429(&ch, n429)) != 0) {
				out = OUT_GONE;
				goto finished;
			}
			n429++;
			ch.d.retries_429++;
			continue;
		case OUT_FAIL:
			count_failure(&ch.d, kind);
			provider_failed(&ch, kind);
			continue;
		}
	}
finished:
	switch (out) {
	case OUT_OK:
		ok = true;
		result = "ok";
		if (!ch.a.is_sse)
			rc = relay_body(&ch);
		else
			ch.final_status = 200;
		break;
	case OUT_CLIENT:
	case OUT_429:
		result = out == OUT_429 ? "rate_limited" : "upstream_4xx";
		rc = relay_body(&ch);
		break;
	case OUT_GONE:
		ch.d.eabort++;
		result = "client_abort";
		ch.final_status = 499;
		rc = -1;
		break;
	case OUT_MID:
		count_failure(&ch.d, "mid_stream");
		provider_failed(&ch, "mid_stream");
		send_stream_error(&ch, "mid_stream_failure", ch.a.err_msg);
		result = "mid_stream";
		break;
	case OUT_FAIL:
		result = "failed";
		if (ch.a.status >= 300 && !ch.a.is_sse && ch.a.body.len > 0)
			rc = relay_body(&ch);
		else if (strcmp(kind, "timeout") == 0)
			rc = relay_gateway_error(&ch, 504, "upstream_timeout",
						 "upstream did not answer in "
						 "time");
		else
			rc = relay_gateway_error(
				&ch, 502, "upstream_unavailable",
				ch.a.err_msg[0] ? ch.a.err_msg :
						  "upstream failed");
		break;
	}
done:
	total = clock_mono_ms() - ch.t0;
	if (ch.a.t_first)
		ttfb = ch.a.t_first - ch.t0;
	/* The client has all it will get: let the web server end its
	 * response now rather than after the state write and the log. */
	if (io->finish)
		io->finish(io->ctx);
	if (ok) {
		/* Before a possible re-lock below changes ch.route. */
		check_served(&ch);
		/* Lag: relayed, but counted toward the breaker (SPEC 5). */
		if (ch.a.t_first &&
		    ch.a.t_first - ch.a.t_start > c->slow_threshold_ms &&
		    ch.used_tag[0] != '\0') {
			ch.d.eslow++;
			provider_failed(&ch, "slow");
		}
		ch.d.ok = 1;
	}
	ch.d.requests = 1;
	ch.d.tag = ch.used_tag[0] ? ch.used_tag : NULL;
	ch.d.prompt_tokens = ch.a.prompt;
	ch.d.cached_tokens = ch.a.cached;
	ch.d.completion_tokens = ch.a.completion;
	ch.d.cost_usd = ch.a.cost;
	ch.d.ttfb_ms = ttfb;
	ch.d.total_ms = total;
	state_finish(c, ch.req.model, &ch.d,
		     ok && ch.d.eslow == 0 ? ch.d.tag : NULL);
	log_request(&ch, result, ttfb, total);
	chat_free(&ch);
	return rc;
}
