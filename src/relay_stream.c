/*
 * relay_stream.c - the client's side while upstream answers: upstream's
 * callbacks (upstream.h) for the attempt running, and every write to the
 * client before the answer is complete.
 *
 * Streaming: the client's header block is held back until the first
 * token (or for KEEPALIVE_COMMIT_MS at most), so a provider that fails
 * before its first token can still be replaced without the client
 * noticing; the events before the first token (a role-only chunk,
 * message_start and ping, response.created ...) are held until a token
 * follows them, so a client never sees an answer start twice.  Once
 * content has been relayed, a failure ends the client's stream with the
 * API's error event and without its normal end (docs/design.md sections 5, 11), so
 * a truncated answer never looks finished.
 *
 * Durations (docs/design.md 5, "Time"): a request lasts up to minutes.  The first
 * token of a stream is its first chunk with content; the first byte of a
 * non-streamed answer is its first byte, padding included.  Silence, not
 * length, is a timeout; REQUEST_TIMEOUT_MS bounds the whole request.
 * The client connection is never silent for long (keep_alive()): web
 * servers notice a departed client only when they write to it.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "api.h"
#include "buf.h"
#include "clock.h"
#include "failover.h"
#include "mask.h"
#include "relay.h"
#include "relay_impl.h"
#include "sse.h"

#define KEEPALIVE_COMMIT_MS 3000	/* hold headers at most this long */
#define KEEPALIVE_EVERY_MS 250		/* then never silent longer: some
					 * servers see a departed client
					 * only at their 2nd to 4th write */

/* The X-Orgw-* response headers (docs/design.md section 2), and upstream's
 * X-Generation-Id when the last attempt had one (OpenRouter's own
 * clients look the cost up with it; Messages clients read it as
 * Anthropic's request-id). */
void
orgw_headers(const struct relay *rl, char *dst, size_t n)
{
	const char *id = rl->a.gen_id;
	bool anth = id[0] != '\0' && rl->api->id == API_MESSAGES;

	snprintf(dst, n,
		 "X-Orgw-Provider: %s\r\nX-Orgw-Route: %s\r\n"
		 "X-Orgw-Attempts: %d\r\n%s%s%s%s%s%s",
		 pinned_tag(rl) ? pinned_tag(rl) : "auto",
		 rl->route.conversation ? "conversation" :
					  route_name(rl->route.kind),
		 rl->attempts,
		 id[0] ? "X-Generation-Id: " : "", id, id[0] ? "\r\n" : "",
		 anth ? "request-id: " : "", anth ? id : "",
		 anth ? "\r\n" : "");
}

/* Writes the stream's head and what was held back, unflushed: the
 * caller flushes after the event that follows, so the head and the first
 * token leave in one write. */
int
send_stream_head(struct relay *rl)
{
	char extra[512], h[700];
	const struct orgw_io *io = rl->io;

	if (rl->head_sent)
		return 0;
	orgw_headers(rl, extra, sizeof(extra));
	snprintf(h, sizeof(h), "Cache-Control: no-cache\r\n"
			       "X-Accel-Buffering: no\r\n%s",
		 extra);
	rl->head_sent = true;
	rl->final_status = 200;
	if (http_head(io, 200, "text/event-stream", h) != 0)
		return -1;
	if (rl->held.len && io->write(io->ctx, rl->held.p, rl->held.len))
		return -1;
	buf_reset(&rl->held);
	return 0;
}

/* Writes n bytes to the client and flushes: 0, or -1 when it is gone. */
int
send_now(struct relay *rl, const char *p, size_t n)
{
	const struct orgw_io *io = rl->io;

	if ((n && io->write(io->ctx, p, n)) || io->flush(io->ctx))
		return -1;
	rl->t_wrote = clock_mono_ms();
	return 0;
}

/*
 * Commits a non-streamed answer: its 200 head, so that whitespace can
 * keep the connection alive while upstream pads its own committed 200.
 * Any later answer is one JSON document after the whitespace, an error
 * too (as OpenRouter answers).  -1: the client is gone.
 */
static int
send_json_head(struct relay *rl)
{
	char extra[512];

	orgw_headers(rl, extra, sizeof(extra));
	rl->head_sent = true;
	rl->json_head = true;
	rl->final_status = 200;
	if (http_head(rl->io, 200, "application/json", extra) != 0)
		return -1;
	return send_now(rl, "\n", 1);
}

/* How many of the n bytes at p are the whitespace OpenRouter pads a
 * non-streamed answer with before its JSON (docs/upstream.md 5). */
size_t
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
 * Keeps the client connection from going silent (docs/design.md 5, "Keeping
 * the client's connection alive"); called about every 50 ms while upstream
 * works and while a 429 retry waits.  A stream's head goes out after
 * KEEPALIVE_COMMIT_MS, with what was held; a non-streamed answer's only
 * while upstream pads its own committed 200 (before that, failover stays
 * invisible, status and all).  After the head, a comment (stream; an SSE
 * comment on every API) or a newline (JSON) whenever nothing was written
 * for KEEPALIVE_EVERY_MS.  -1: the client is gone.
 */
int
keep_alive(struct relay *rl, int64_t now)
{
	if (!rl->head_sent) {
		if (now - rl->t0 < KEEPALIVE_COMMIT_MS)
			return 0;
		if (rl->req.stream)
			return send_stream_head(rl) == 0 ? send_now(rl, "", 0) :
							   -1;
		return upstream_pads(&rl->a) ? send_json_head(rl) : 0;
	}
	if (now - rl->t_wrote < KEEPALIVE_EVERY_MS)
		return 0;
	if (rl->json_head)
		return send_now(rl, "\n", 1);
	return send_now(rl, ": keep-alive\n\n", 14);
}

void
on_headers(void *arg, long status, const char *ctype, int retry_after,
	   const char *generation_id)
{
	struct relay *rl = arg;
	struct attempt *a = &rl->a;

	/* Relayed as X-Generation-Id (clients look the cost up with it),
	 * unless it holds the upstream key (its shape allows one). */
	snprintf(a->gen_id, sizeof(a->gen_id), "%s", generation_id);
	mask_key(rl->c->openrouter_api_key, a->gen_id, strlen(a->gen_id));
	if (strchr(a->gen_id, '*') != NULL)
		a->gen_id[0] = '\0';
	a->status = status;
	snprintf(a->ctype, sizeof(a->ctype), "%s", ctype);
	a->retry_after = retry_after;
	a->is_sse = status == 200 &&
		    strncasecmp(ctype, "text/event-stream", 17) == 0;
}

/* Writes the head (once) and the events held for the token that follows
 * them, unflushed: that token's write flushes.  -1 when the client is
 * gone. */
static int
send_pending(struct relay *rl)
{
	const struct orgw_io *io = rl->io;

	if (send_stream_head(rl) != 0)
		return -1;
	if (rl->pending.len && io->write(io->ctx, rl->pending.p,
					 rl->pending.len) != 0)
		return -1;
	buf_reset(&rl->pending);
	return 0;
}

/* Writes an event as it came (after the held-back head) and flushes: 0,
 * or -1 when the client is gone. */
static int
relay_raw(struct relay *rl, const struct sse_event *ev)
{
	if (send_stream_head(rl) != 0)
		return -1;
	return send_now(rl, ev->raw, ev->raw_len);
}

/* A comment (keep-alive) or other event: held back with the head, which
 * goes out after KEEPALIVE_COMMIT_MS at the latest (keep_alive()).
 * -1: client gone. */
static int
on_comment(struct relay *rl, const struct sse_event *ev)
{
	if (rl->head_sent)
		return relay_raw(rl, ev);
	if (rl->held.len + ev->raw_len <= rl->held_max)
		(void)buf_add(&rl->held, ev->raw, ev->raw_len);
	return keep_alive(rl, clock_mono_ms());
}

/* An event that is no token: before the first token of the attempt it is
 * held (so a provider that fails after it can still be replaced without
 * the client seeing an answer start twice, even once the head went out
 * with keep-alives), after it relayed as it comes.  1 stops the attempt
 * (a->why says why). */
static int
hold(struct relay *rl, const struct sse_event *ev)
{
	struct attempt *a = &rl->a;

	if (a->content) {
		if (relay_raw(rl, ev) == 0)
			return 0;
		a->why = AB_GONE;
		return 1;
	}
	if (rl->pending.len + ev->raw_len > rl->held_max ||
	    buf_add(&rl->pending, ev->raw, ev->raw_len) != ORGW_OK) {
		a->why = AB_TOO_BIG;
		snprintf(a->ans.err_msg, sizeof(a->ans.err_msg),
			 "upstream sent more than %zu bytes before its first "
			 "token",
			 rl->held_max);
		return 1;
	}
	return 0;
}

/* A data event, classified by the API's adapter: relayed when it carries
 * content; 1 stops the attempt (a->why says why). */
static int
on_data_event(struct relay *rl, const struct sse_event *ev)
{
	struct attempt *a = &rl->a;
	enum api_ev kind;
	cJSON *o;

	o = cJSON_ParseWithLength(ev->data, ev->data_len);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		a->why = AB_MALFORMED;
		snprintf(a->ans.err_msg, sizeof(a->ans.err_msg),
			 "upstream sent a malformed event");
		return 1;
	}
	kind = rl->api->event(o, rl->c->openrouter_api_key, &a->ans);
	cJSON_Delete(o);
	switch (kind) {
	case API_EV_ERROR:
		a->why = AB_ERROR_EVENT;
		return 1;
	case API_EV_HOLD:
		return hold(rl, ev);
	case API_EV_TOKEN:
	case API_EV_END:
		break;
	}
	a->t_last = clock_mono_ms();
	if (a->t_first == 0)
		a->t_first = a->t_last;
	if (send_pending(rl) != 0 || relay_raw(rl, ev) != 0) {
		a->why = AB_GONE;
		return 1;
	}
	a->content = true;
	return 0;
}

/*
 * True when ev comes after the stream's own last event (chat's [DONE],
 * Messages' message_stop, Responses' response.completed or .incomplete
 * and then one [DONE]): it is no part of the answer, and a client that
 * reads on would take it for one, so it is dropped and counted, and the
 * attempt stops at the end of what upstream sent with it (on_data).  A
 * [DONE] after message_stop (OpenRouter may send one) is dropped
 * without a count: Anthropic's stream has no such line.
 */
static bool
after_end(struct relay *rl, const struct sse_event *ev)
{
	struct attempt *a = &rl->a;

	if (!a->ans.done)
		return false;
	if (ev->kind == SSE_DONE && !a->done_line && a->after_end == 0 &&
	    !rl->api->done_sentinel) {
		a->done_line = true;
		return rl->api->id != API_RESPONSES;
	}
	a->after_end++;
	return true;
}

static int
on_event(void *arg, const struct sse_event *ev)
{
	struct relay *rl = arg;

	if (after_end(rl, ev))
		return 0;
	/* The event's bytes live in the splitter's buffers (sse.h), which
	 * are ours to change until we return. */
	mask_key_split(rl->c->openrouter_api_key, ev->raw, ev->raw_len);
	mask_key_split(rl->c->openrouter_api_key, ev->data, ev->data_len);

	switch (ev->kind) {
	case SSE_COMMENT:
	case SSE_OTHER:
		if (on_comment(rl, ev) == 0)
			return 0;
		break;
	case SSE_DONE:
		/* Chat's end of stream; on the other APIs a [DONE] after
		 * their own last event, relayed like any event. */
		if (!rl->api->done_sentinel)
			return hold(rl, ev);
		rl->a.ans.done = true;
		if (relay_raw(rl, ev) == 0)
			return 0;
		break;
	case SSE_DATA:
		return on_data_event(rl, ev);
	}
	rl->a.why = AB_GONE;
	return 1;
}

int
on_data(void *arg, const char *p, size_t n)
{
	struct relay *rl = arg;
	struct attempt *a = &rl->a;
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
			if (err == ORGW_ETOOBIG)
				snprintf(a->ans.err_msg,
					 sizeof(a->ans.err_msg),
					 "upstream answer too large (over %zu "
					 "bytes)",
					 a->body.max);
			return 1;
		}
		return 0;
	}
	err = sse_feed(&a->sse, p, n, on_event, rl, &stopped);
	if (err != ORGW_OK) {
		a->why = AB_TOO_BIG;
		snprintf(a->ans.err_msg, sizeof(a->ans.err_msg),
			 "upstream event too large");
		return 1;
	}
	/* Events after the end: the answer is whole, the rest unread. */
	return stopped || a->after_end > 0;
}

int
on_tick(void *arg, int64_t now)
{
	struct relay *rl = arg;
	struct attempt *a = &rl->a;
	int64_t limit = rl->c->upstream_timeout_ms;

	if (now - rl->t0 >= rl->c->request_timeout_ms) {
		a->why = AB_DEADLINE;
		return 1;
	}
	/* A stream needs tokens: comments keep its line open but do not
	 * answer.  A non-streamed answer's padding does (docs/design.md 5). */
	if (a->t_first == 0 && now - a->t_start >= limit) {
		a->why = AB_TIMEOUT;
		return 1;
	}
	if (a->t_first != 0 && now - a->t_last >= limit) {
		a->why = AB_STALL;
		return 1;
	}
	if (keep_alive(rl, now) != 0) {
		a->why = AB_GONE;
		return 1;
	}
	return 0;
}

void
on_client_gone(void *arg)
{
	struct relay *rl = arg;

	rl->a.why = AB_GONE;
}
