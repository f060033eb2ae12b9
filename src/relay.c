/*
 * relay.c - the proxy of the three generation APIs (chat completions,
 * Messages, Responses): one attempt loop and one relay; what an API's
 * events, bodies and errors look like is its adapter's (api.h).
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
 *
 * An id OpenRouter does not know (its endpoints answer 404) leaves no
 * state of its own (docs/design.md 4 step 2): it goes unpinned, and is counted in
 * the one STATE_OTHER_MODEL bucket; each process remembers such ids for
 * UNKNOWN_TTL_MS, so their requests do not each fetch endpoints first.
 *
 * Ownership: struct relay owns everything of the request (parsed body,
 * buffers, forwarded body); relay_free() releases it once.
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "api.h"
#include "buf.h"
#include "clock.h"
#include "conv.h"
#include "convbody.h"
#include "convcache.h"
#include "failover.h"
#include "fingerprint.h"
#include "genq.h"
#include "jsonscan.h"
#include "log.h"
#include "mask.h"
#include "relay.h"
#include "reqval.h"
#include "score.h"
#include "scorerun.h"
#include "slots.h"
#include "sse.h"
#include "state.h"
#include "upstream.h"

#define KEEPALIVE_COMMIT_MS 3000	/* hold headers at most this long */
#define KEEPALIVE_EVERY_MS 250		/* then never silent longer: some
					 * servers see a departed client
					 * only at their 2nd to 4th write */
#define WAIT_TICK_MS 50			/* a 429 wait looks around this often */
#define CONNECT_TIMEOUT_MS 10000
#define PLAIN_MAX_BYTES (1u * 1024 * 1024)	/* count_tokens' answer cap */
#define UNKNOWN_TTL_MS 60000		/* an unknown id is not fetched again
					 * for this long */
#define UNKNOWN_SLOTS 64		/* unknown ids a process remembers */

struct attempt {
	long status;
	char ctype[128];
	int retry_after;
	bool is_sse;
	struct buf body;	/* non-SSE body (or an error body) */
	struct sse sse;
	int64_t t_start;
	/* Stream: the first and the last token (an event with content).
	 * Non-streamed: the first and the last body byte, padding
	 * included.  0 when none came yet.  Silence is measured from
	 * t_last (a stall) or from t_start (a timeout). */
	int64_t t_first, t_last;
	bool nonws;		/* non-streamed: a body byte that is not
				 * whitespace padding came */
	size_t tree_bytes;	/* non-streamed: its cJSON tree at most
				 * (jsonscan_tree_bytes), 0 unparsed */
	bool content;		/* data relayed in this attempt */
	bool done_line;		/* a [DONE] came after the end event */
	char gen_id[128];	/* upstream's X-Generation-Id, "" none */
	unsigned after_end;	/* events dropped after the stream's end */
	enum failover_abort why;
	struct api_answer ans;	/* what the answer said (api.h) */
};

/* A conversation's turn (conv.h): its key, what the route said of it,
 * its prompt's fingerprints and the body edits it asks for. */
struct relay_conv {
	bool on;			/* the request has a conversation */
	struct conv_key key;
	char show[CONV_SHOW_MAX];
	struct state_conv route;	/* the route transaction's answer */
	struct state_conv_turn turn;	/* the finish's */
	struct fp_list fp;		/* owned */
	bool has_breakpoint;		/* the body has a cache breakpoint */
	bool only_new;			/* Responses with previous_response_id */
	char explicit_tag[ORGW_TAG_MAX]; /* the pin route.explicit_cache is
					  * about */
	size_t n_items;			/* Responses: the input's items */
	size_t first_bound;		/* ... the index of its first
					 * provider-bound reasoning item,
					 * CONVBODY_ALL none */
	char *input;			/* input without the provider-bound
					 * reasoning items below input_limit
					 * (malloc'd), once made */
	size_t dropped;			/* items it leaves out */
	size_t input_limit;
	bool input_made;
	bool all;			/* attempts leave out every such item
					 * (moved, or upstream could not read
					 * them) */
	bool all_sent;			/* ... the last attempt did */
	bool retried;			/* retried for invalid_encrypted */
	size_t dropped_sent;		/* items left out of what was sent */
};

struct relay {
	const struct orgw_conf *c;
	const struct orgw_io *io;
	const struct relay_in *in;
	const struct api *api;
	struct api_req req;
	struct state_route route;
	bool unknown;		/* an id OpenRouter does not know: counted
				 * under STATE_OTHER_MODEL */
	char used_tag[ORGW_TAG_MAX];	/* pin of the last attempt, "" none */
	enum route_kind used_route;	/* route of the last attempt */
	bool used_conv;			/* ... pinned to its conversation's
					 * provider, not the lock */
	char *fwd;		/* forwarded body (cJSON allocated) */
	int attempts;
	bool head_sent;		/* the client has its header block */
	bool json_head;		/* ... of a non-streamed 200: whitespace and
				 * then one JSON document follow */
	int64_t t_wrote;	/* the last write to the client */
	size_t held_max;	/* bound of what is held back (api.h) */
	struct buf held;	/* comments held before the header block */
	struct buf pending;	/* events held until a token follows */
	struct attempt a;
	struct failover_verdict v;	/* what the last attempt means */
	struct stats_delta d;
	char generation_id[128];	/* the last attempt's, "" none */
	int64_t t0;
	int final_status;
	bool ok;		/* a success, for the stats and the breaker */
	const char *result;	/* outcome= in the log */
	int rc;			/* what relay_handle returns */
	struct relay_conv cv;
};

/* Starts an attempt whose non-streamed answer may be max bytes
 * (MAX_ANSWER_BYTES). */
static void
attempt_reset(struct attempt *a, size_t max)
{
	buf_free(&a->body);
	sse_free(&a->sse);
	memset(a, 0, sizeof(*a));
	a->body.max = max;
	a->retry_after = -1;
	api_answer_init(&a->ans);
	sse_init(&a->sse, 0);
}

static void
relay_free(struct relay *rl)
{
	size_t answer = rl->a.body.len + rl->a.tree_bytes;

	reqval_free(&rl->req);
	fp_list_clear(&rl->cv.fp);
	free(rl->cv.input);
	cJSON_free(rl->fwd);
	buf_free(&rl->held);
	buf_free(&rl->pending);
	buf_free(&rl->a.body);
	sse_free(&rl->a.sse);
	/* A large answer's buffer and tree are free now: back to the
	 * system, not kept by the worker for good. */
	slots_mem_trim(answer);
}

static const char *
pinned_tag(const struct relay *rl)
{
	return rl->route.tag[0] ? rl->route.tag : NULL;
}

/* The X-Orgw-* response headers (docs/design.md section 2), and upstream's
 * X-Generation-Id when the last attempt had one (OpenRouter's own
 * clients look the cost up with it; Messages clients read it as
 * Anthropic's request-id). */
static void
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
static int
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
static int
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
 * Keeps the client connection from going silent (docs/design.md 5, "Keeping
 * the client's connection alive"); called about every 50 ms while upstream
 * works and while a 429 retry waits.  A stream's head goes out after
 * KEEPALIVE_COMMIT_MS, with what was held; a non-streamed answer's only
 * while upstream pads its own committed 200 (before that, failover stays
 * invisible, status and all).  After the head, a comment (stream; an SSE
 * comment on every API) or a newline (JSON) whenever nothing was written
 * for KEEPALIVE_EVERY_MS.  -1: the client is gone.
 */
static int
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

static void
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

/* The upstream key masked in p[0..n) (mask.c, docs/design.md 3); t0780 and t0800
 * check it. */
static void
relay_mask(const struct relay *rl, char *p, size_t n)
{
	mask_key(rl->c->openrouter_api_key, p, n);
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

static int
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

static int
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

static void
on_client_gone(void *arg)
{
	struct relay *rl = arg;

	rl->a.why = AB_GONE;
}

/* Parses a finished non-SSE body into the attempt's answer: usage,
 * provider, an embedded error.  False when it is not a JSON object, or
 * is not parsed: more values than MAX_JSON_NODES (a->why AB_TOO_BIG; a
 * tree of small values takes about 40 times their bytes), or the
 * request's REQUEST_TIMEOUT_MS is up (AB_DEADLINE).  The count and the
 * bytes bound how long cJSON takes (tens of milliseconds at the
 * defaults), so the parse ends within the deadline it started in. */
static bool
parse_body(struct relay *rl)
{
	struct attempt *a = &rl->a;
	const char *p = a->body.p ? a->body.p : "";
	struct jsonscan_size z;
	size_t len;
	cJSON *o;

	p += padding_len(p, a->body.len);
	len = strlen(p);
	if (clock_mono_ms() - rl->t0 >= rl->c->request_timeout_ms) {
		a->why = AB_DEADLINE;
		return false;
	}
	jsonscan_size(p, len, &z);
	if (z.nodes > rl->c->max_json_nodes) {
		a->why = AB_TOO_BIG;
		snprintf(a->ans.err_msg, sizeof(a->ans.err_msg),
			 "upstream answer holds more than %zu JSON values",
			 rl->c->max_json_nodes);
		return false;
	}
	a->tree_bytes = jsonscan_tree_bytes(len, &z);
	o = cJSON_ParseWithLength(p, len + 1);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return false;
	}
	rl->api->body(o, rl->c->openrouter_api_key, &a->ans);
	cJSON_Delete(o);
	return true;
}

/* Feeds a failure to the breaker; the next attempt goes where it says:
 * the re-lock of a trip, or the model's current lock when the provider
 * was cooling already (state_failure leaves next alone otherwise). */
static void
provider_failed(struct relay *rl, enum failover_kind kind)
{
	bool tripped = false;
	struct state_route next = rl->route;
	const char *tag = rl->used_tag;

	if (tag[0] == '\0' || rl->route.kind == ROUTE_CLIENT)
		return;
	state_failure(rl->c, rl->req.model, tag, failover_kind_name(kind),
		      clock_now_s(), &tripped, &next);
	if (tripped)
		rl->d.trips++;
	rl->route = next;
}

/* Sleeps for a 429 retry while watching the client and keeping its
 * connection alive (keep_alive()); -1 if it left. */
static int
wait_429(struct relay *rl, int64_t ms)
{
	struct pollfd pfd;
	int64_t now, end = clock_mono_ms() + ms, left;

	while ((left = end - (now = clock_mono_ms())) > 0) {
		if (keep_alive(rl, now) != 0)
			return -1;
		if (left > WAIT_TICK_MS)
			left = WAIT_TICK_MS;
		if (rl->io->client_fd < 0) {
			clock_sleep_ms(left);
			continue;
		}
		pfd.fd = rl->io->client_fd;
		pfd.events = rl->io->client_events;
		pfd.revents = 0;
		if (poll(&pfd, 1, (int)left) > 0)
			return -1;
	}
	return 0;
}

/* Writes text (cJSON-allocated, freed here; NULL: out of memory) to the
 * client and flushes; 0, or -1 when it is gone. */
static int
send_text(struct relay *rl, char *text)
{
	int rc = -1;

	if (text != NULL)
		rc = send_now(rl, text, strlen(text));
	cJSON_free(text);
	return rc;
}

/* Ends a stream broken after content with the API's error event (no
 * normal end after it, docs/design.md 5 and 11).  status is what the failure
 * stands for (502, 504, or the upstream error's). */
static void
send_stream_error(struct relay *rl, int status, const char *code,
		  const char *msg)
{
	if (send_stream_head(rl) != 0)
		return;
	(void)send_text(rl, rl->api->stream_error(status, code, msg,
						  rl->req.model, clock_now_s(),
						  &rl->a.ans));
}

/* The gateway's own error when no upstream response can be relayed, in
 * the API's shape: its HTTP error, or inside an answer already
 * committed. */
static int
error_reply(const struct orgw_io *io, const struct api *api, int status,
	    const char *type, const char *code, const char *param,
	    const char *msg, const char *extra, const char *request_id)
{
	char *s = api->error_body(status, type, code, param, msg,
				  request_id);
	int rc;

	if (s == NULL)
		/* Out of memory: a fixed body still tells the client. */
		return http_json(io, 500, NULL, HTTP_OOM_JSON,
				 sizeof(HTTP_OOM_JSON) - 1);
	rc = http_json(io, status, extra, s, strlen(s));
	cJSON_free(s);
	return rc;
}

int
relay_error(const struct orgw_io *io, const struct api *api, int status,
	    const char *type, const char *code, const char *param,
	    const char *msg, const char *extra)
{
	return error_reply(io, api, status, type, code, param, msg, extra,
			   NULL);
}

static int
relay_gateway_error(struct relay *rl, int status, const char *code,
		    const char *msg)
{
	const char *id = rl->a.gen_id[0] ? rl->a.gen_id : NULL;
	char extra[512];

	if (rl->json_head)
		return send_text(rl, rl->api->committed_error(
					     status, code, msg, rl->req.model,
					     clock_now_s(), id));
	if (rl->head_sent) {
		send_stream_error(rl, status, code, msg);
		return 0;
	}
	rl->final_status = status;
	orgw_headers(rl, extra, sizeof(extra));
	return error_reply(rl->io, rl->api, status, "upstream_error", code,
			   NULL, msg, extra, id);
}

/* The status an error event or an error in a 200 stands for, when it
 * goes to the client as an HTTP status of its own. */
static int
error_status(const struct attempt *a)
{
	return a->ans.err_code >= 400 && a->ans.err_code <= 599 ?
		       (int)a->ans.err_code :
		       502;
}

/* Relays a finished non-streamed upstream response (or error body). */
static int
relay_body(struct relay *rl)
{
	struct attempt *a = &rl->a;
	const char *p = a->body.p ? a->body.p : "";
	size_t len = a->body.len, pad;
	char extra[512];
	int status = (int)(a->status ? a->status : 502);

	/* OpenRouter pads slow responses with whitespace (docs/upstream.md 5);
	 * clients' JSON parsers must not see it. */
	pad = padding_len(p, len);
	p += pad;
	len -= pad;
	/* A redirect is not followed and has no meaning for the client
	 * (no Location is relayed): a gateway error. */
	if (status >= 300 && status <= 399)
		return relay_gateway_error(rl, 502, "upstream_error",
					   "upstream answered with a redirect");
	if (status >= 200 && status <= 299 && a->ans.err_msg[0] != '\0') {
		/* An error inside a 200 (body or SSE event): the client
		 * gets it with the status it stands for, not as a 200. */
		status = error_status(a);
		if (a->is_sse || len == 0)
			return relay_gateway_error(rl, status, "upstream_error",
						   a->ans.err_msg);
	}
	if (rl->json_head)	/* committed: the document, as it came */
		return len ? send_now(rl, p, len) :
			     relay_gateway_error(rl, status, "upstream_error",
						 "upstream returned an empty "
						 "response");
	if (rl->head_sent) {
		/* A stream already began (keep-alives); say it in-band. */
		send_stream_error(rl, status, "upstream_error",
				  a->ans.err_msg[0] ? a->ans.err_msg :
						      "upstream request failed");
		return 0;
	}
	if (len == 0)
		return relay_gateway_error(rl, status, "upstream_error",
					   "upstream returned an empty "
					   "response");
	rl->final_status = status;
	orgw_headers(rl, extra, sizeof(extra));
	return http_json(rl->io, status, extra, p, len);
}

/* The answer when the last attempt failed and no attempt is left. */
static int
relay_failure(struct relay *rl)
{
	const struct attempt *a = &rl->a;

	if (a->status >= 300 && !a->is_sse && a->body.len > 0)
		return relay_body(rl);
	if (rl->v.kind == FK_TIMEOUT)
		return relay_gateway_error(rl, 504, "upstream_timeout",
					   "upstream did not answer in time");
	return relay_gateway_error(rl, 502, "upstream_unavailable",
				   a->ans.err_msg[0] ? a->ans.err_msg :
						       "upstream failed");
}

/*
 * The ids this process learned OpenRouter does not know (their endpoints
 * answered 404), for UNKNOWN_TTL_MS each: shared by the threads under
 * unknown_mu, the oldest slot reused.  Nothing about them goes into the
 * state (docs/design.md 4 step 2: invented ids must not grow it).
 */
static pthread_mutex_t unknown_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char model[ORGW_MODEL_MAX];
	int64_t at;
} unknown_ids[UNKNOWN_SLOTS];

static bool
unknown_recent(const char *model, int64_t now)
{
	bool hit = false;
	size_t i;

	pthread_mutex_lock(&unknown_mu);
	for (i = 0; i < UNKNOWN_SLOTS && !hit; i++)
		hit = unknown_ids[i].at != 0 &&
		      now - unknown_ids[i].at < UNKNOWN_TTL_MS &&
		      strcmp(unknown_ids[i].model, model) == 0;
	pthread_mutex_unlock(&unknown_mu);
	return hit;
}

static void
unknown_note(const char *model, int64_t now)
{
	size_t i, old = 0;

	pthread_mutex_lock(&unknown_mu);
	for (i = 0; i < UNKNOWN_SLOTS; i++) {
		if (strcmp(unknown_ids[i].model, model) == 0) {
			old = i;
			break;
		}
		if (unknown_ids[i].at < unknown_ids[old].at)
			old = i;
	}
	snprintf(unknown_ids[old].model, sizeof(unknown_ids[old].model),
		 "%s", model);
	unknown_ids[old].at = now != 0 ? now : 1;
	pthread_mutex_unlock(&unknown_mu);
}

/* A model scored inline had no candidates when the route transaction
 * asked whether its pin caches only explicitly: ask the fresh scores,
 * so a model's first request gets the automatic cache_control too. */
static void
scored_explicit(struct relay *rl, const struct score_result *res)
{
	size_t i;

	if (!rl->cv.on || !rl->cv.route.want_explicit ||
	    rl->route.tag[0] == '\0')
		return;
	for (i = 0; i < res->n_ranked; i++)
		if (strcmp(res->v[i].tag, rl->route.tag) == 0) {
			rl->cv.route.explicit_cache =
				convbody_explicit_endpoint(&res->v[i]);
			snprintf(rl->cv.explicit_tag,
				 sizeof(rl->cv.explicit_tag), "%s",
				 rl->route.tag);
			return;
		}
}

/* Route the request (docs/design.md section 4), scoring inline when needed. */
static void
route_request(struct relay *rl)
{
	struct score_result res;
	char err[128], m[ORGW_MODEL_MAX * 4];
	int64_t now = clock_now_s();
	enum orgw_err e;

	bool unknown = !rl->req.has_provider &&
		       unknown_recent(rl->req.model, clock_mono_ms());

	/* A team key's request is admitted (its limits, its budget hold)
	 * even for a model known to have no endpoints. */
	if (unknown && rl->in->team == NULL) {
		rl->unknown = true;
		rl->route.kind = ROUTE_UNPINNED;
		return;
	}
	state_route_conv(rl->c, rl->req.model, rl->req.has_provider, now,
			 &rl->route, rl->in->team ? &rl->in->team->admit : NULL,
			 rl->cv.on ? &rl->cv.route : NULL);
	if (rl->cv.on && rl->cv.route.explicit_cache)
		snprintf(rl->cv.explicit_tag, sizeof(rl->cv.explicit_tag),
			 "%s", rl->route.tag);
	if (rl->in->team != NULL && rl->in->team->admit.verdict != TK_OK)
		return;
	if (unknown) {
		rl->unknown = true;
		rl->route.kind = ROUTE_UNPINNED;
		return;
	}
	if (rl->route.kind != ROUTE_SCORED)
		return;
	e = scorerun_fetch(rl->c, rl->req.model, SCORERUN_INLINE_TIMEOUT_MS,
			   &res, err, sizeof(err));
	if (e == ORGW_OK) {
		state_route_scored(rl->c, rl->req.model, &res, NULL, now,
				   &rl->route);
		scored_explicit(rl, &res);
		score_result_free(&res);
		return;
	}
	log_safe(m, sizeof(m), rl->req.model);
	if (e == ORGW_ENOENT) {
		/* No such model: forwarded unpinned, OpenRouter's answer
		 * reaches the client, nothing of it is kept (docs/design.md 4
		 * step 2). */
		log_info("model %s has no endpoints (%s): unpinned, counted "
			 "as " STATE_OTHER_MODEL,
			 m, err);
		unknown_note(rl->req.model, clock_mono_ms());
		rl->unknown = true;
		rl->route.kind = ROUTE_UNPINNED;
		return;
	}
	log_warn("inline scoring of %s failed: %s; unpinned", m, err);
	state_route_scored(rl->c, rl->req.model, NULL, err, now, &rl->route);
}

static void
log_request(const struct relay *rl, const char *outcome, int64_t ttfb,
	    int64_t total)
{
	char m[ORGW_MODEL_MAX * 4], asked[ORGW_MODEL_MAX * 4 + 8];
	char conv[160];
	const struct api_usage *u = &rl->a.ans.usage;
	const struct relay_conv *cv = &rl->cv;
	char basis[32];

	/* Where an estimated cost came from (ledger.h). */
	basis[0] = '\0';
	if (rl->d.cost_estimated && rl->d.cost_basis != NULL)
		snprintf(basis, sizeof(basis), " cost_basis=%s",
			 rl->d.cost_basis);
	asked[0] = '\0';
	if (rl->req.asked[0] != '\0') {
		snprintf(asked, sizeof(asked), " alias_of=");
		log_safe(asked + 10, sizeof(asked) - 10, rl->req.asked);
	}
	conv[0] = '\0';
	if (cv->on) {
		char show[CONV_SHOW_MAX * 4];
		int k = snprintf(conv, sizeof(conv), " conv=%s",
				 log_safe(show, sizeof(show), cv->show));

		if (cv->dropped_sent > 0 && k > 0 && (size_t)k < sizeof(conv))
			k += snprintf(conv + k, sizeof(conv) - (size_t)k,
				      " reasoning_dropped=%zu",
				      cv->dropped_sent);
		if (cv->turn.is_break && k > 0 && (size_t)k < sizeof(conv)) {
			k += snprintf(conv + k, sizeof(conv) - (size_t)k,
				      " break=%s",
				      convcache_cause_name(cv->turn.cause));
			if (cv->turn.at >= 0 && k > 0 &&
			    (size_t)k < sizeof(conv))
				snprintf(conv + k, sizeof(conv) - (size_t)k,
					 "@%lld", (long long)cv->turn.at);
		}
	}
	log_msg("req",
		"time=%lld api=%s model=%s%s route=%s provider=%s status=%d "
		"attempts=%d ttfb_ms=%lld total_ms=%lld prompt=%lld "
		"cached=%lld cache_write=%lld completion=%lld cost=%.8f%s%s%s "
		"stream=%d outcome=%s%s%s",
		(long long)clock_now_s(), rl->api->name,
		log_safe(m, sizeof(m), rl->req.model), asked,
		(rl->attempts ? rl->used_conv : rl->route.conversation) ?
			"conversation" :
			route_name(rl->attempts ? rl->used_route :
						  rl->route.kind),
		rl->used_tag[0] ? rl->used_tag : "auto", rl->final_status,
		rl->attempts, (long long)ttfb, (long long)total,
		(long long)u->prompt, (long long)u->cached,
		(long long)u->cache_write, (long long)u->completion,
		rl->d.cost_usd, rl->d.cost_estimated ? " cost_estimated=1" : "",
		basis, conv, rl->req.stream ? 1 : 0, outcome,
		rl->in->team ? " key=" : "",
		rl->in->team ? rl->in->team->key.name : "");
}

/* The off-pin check: did the pinned provider really serve? */
static void
check_served(struct relay *rl)
{
	char m[ORGW_MODEL_MAX * 4], s[ORGW_TAG_MAX * 4];
	const char *served = rl->a.ans.served;

	if (rl->route.kind == ROUTE_CLIENT || rl->route.kind == ROUTE_UNPINNED ||
	    rl->route.provider_name[0] == '\0' || served[0] == '\0')
		return;
	if (strcasecmp(served, rl->route.provider_name) == 0 ||
	    strcasecmp(served, rl->route.tag) == 0)
		return;
	rl->d.off_pin++;
	log_warn("off-pin: model=%s pinned=%s served=%s",
		 log_safe(m, sizeof(m), rl->req.model), rl->route.tag,
		 log_safe(s, sizeof(s), served));
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
 * rl->v; fills in the message a failure is reported with. */
static void
judge_attempt(struct relay *rl, const struct upstream_result *r)
{
	struct attempt *a = &rl->a;
	struct failover_attempt fa;

	memset(&fa, 0, sizeof(fa));
	fa.status = a->status;
	fa.is_sse = a->is_sse;
	fa.pinned = rl->used_tag[0] != '\0';
	fa.content = a->content;
	fa.done = a->ans.done;
	fa.why = a->why;
	/* Stopped by us after the stream's end: the answer is whole. */
	fa.net = a->after_end > 0 && r->fail == UP_ABORTED ? NET_OK :
							     net_of(r->fail);
	/* Usage, provider and an embedded error are read from a complete
	 * 2xx body only. */
	if (!a->is_sse && a->status >= 200 && a->status <= 299 &&
	    a->why == AB_NONE && r->fail == UP_OK)
		fa.body_ok = parse_body(rl);
	fa.why = a->why;	/* the parse may have set it */
	fa.has_error = a->ans.err_msg[0] != '\0';
	fa.err_code = a->ans.err_code;
	fa.finished = a->ans.finished;
	rl->v = failover_classify(&fa);
	if (rl->v.mid_msg != NULL && a->ans.err_msg[0] == '\0')
		snprintf(a->ans.err_msg, sizeof(a->ans.err_msg), "%s",
			 rl->v.mid_msg);
	if (rl->v.out == FO_FAIL && r->fail != UP_OK && a->why == AB_NONE)
		snprintf(a->ans.err_msg, sizeof(a->ans.err_msg), "%s",
			 r->error);
}

/* The upstream URL of the request: UPSTREAM_URL, the API's path, and the
 * client's query string.  False when it does not fit. */
static bool
upstream_url(const struct orgw_conf *c, const struct relay_in *in,
	     const char *path, char *dst, size_t n)
{
	const char *q = in->query;
	int k = snprintf(dst, n, "%s%s%s%s", c->upstream_url, path,
			 q != NULL && q[0] != '\0' ? "?" : "", q ? q : "");

	return k > 0 && (size_t)k < n;
}

/* Makes cv->input for limit (convbody_drop_reasoning), unless it was
 * made for it already.  -1 when out of memory. */
static int
conv_input(struct relay *rl, size_t limit)
{
	struct relay_conv *cv = &rl->cv;
	const char *p;
	size_t n;

	if (cv->input_made && cv->input_limit == limit)
		return 0;
	free(cv->input);
	cv->input = NULL;
	cv->dropped = 0;
	cv->input_made = true;
	cv->input_limit = limit;
	if (reqval_input(&rl->req, &p, &n)) {
		cv->input = convbody_drop_reasoning(p, n, limit, &cv->dropped);
		if (cv->input == NULL && cv->dropped != 0) {
			cv->input_made = false;
			cv->dropped = 0;
			return -1;
		}
	}
	return 0;
}

/*
 * What a conversation changes in the attempt's body (convbody.h): its
 * session_id, the automatic cache_control when the pinned endpoint
 * caches only explicitly, and the input without provider-bound reasoning
 * items: all of them when the turn goes elsewhere than its last provider
 * (or an upstream 400 said they are unreadable), else those among the
 * first foreign_items of the record, which an earlier provider wrote
 * (the client's input only grows from turn to turn).  -1 when out of
 * memory.
 */
static int
conv_edits(struct relay *rl, struct reqval_edits *ed)
{
	struct relay_conv *cv = &rl->cv;
	const char *pin = pinned_tag(rl);
	size_t limit;

	memset(ed, 0, sizeof(*ed));
	cv->dropped_sent = 0;
	if (!cv->on || rl->route.kind == ROUTE_CLIENT)
		return 0;
	ed->session_id = conv_forward_session(&cv->key);
	ed->cache_control = convbody_auto_cache(
		rl->api->id, rl->c->auto_cache != 0,
		cv->route.explicit_cache && pin != NULL &&
			strcmp(pin, cv->explicit_tag) == 0,
		cv->has_breakpoint);
	if (rl->api->id != API_RESPONSES)
		return 0;
	/* Moved: another provider than the one that served the last turn
	 * (a conversation unknown here has none to be bound to). */
	if (cv->route.have &&
	    (pin == NULL || strcmp(pin, cv->route.prev_tag) != 0))
		cv->all = true;
	cv->all_sent = cv->all;
	if (cv->all)
		limit = CONVBODY_ALL;
	else
		limit = cv->route.foreign_items > 0 ?
				(size_t)cv->route.foreign_items :
				0;
	/* Most turns have nothing to leave out: no second parse. */
	if (cv->first_bound >= limit)
		return 0;
	if (conv_input(rl, limit) != 0)
		return -1;
	ed->input = cv->input;
	cv->dropped_sent = cv->input != NULL ? cv->dropped : 0;
	return 0;
}

/* The error object of the attempt's error body (caller deletes), or
 * NULL. */
static cJSON *
attempt_error(const struct attempt *a)
{
	const char *p = a->body.p ? a->body.p : "";

	if (a->is_sse || a->body.len == 0)
		return NULL;
	p += padding_len(p, a->body.len);
	return cJSON_ParseWithLength(p, strlen(p));
}

/*
 * A 429 on a conversation's turn: a provider 429 (one naming it) puts the
 * provider under pressure for the model; a turn without a warm provider
 * then goes at once to the next candidate neither cooling nor under
 * pressure.  True when it moved (the attempt loop retries without a
 * wait).  With CONVERSATIONS=0 a 429 is any request's: retried on the
 * same provider after RETRY_429_DELAYS, no pressure written.
 */
static bool
conv_429(struct relay *rl)
{
	struct state_route next = rl->route;
	bool moved = false, p429;
	cJSON *err;

	if (!rl->cv.on || !rl->c->conversations || rl->used_tag[0] == '\0' ||
	    rl->route.kind == ROUTE_CLIENT)
		return false;
	err = attempt_error(&rl->a);
	p429 = failover_provider_429(true, convbody_429_named(err), false);
	cJSON_Delete(err);
	if (!p429)
		return false;
	(void)state_pressure(rl->c, rl->req.model, rl->used_tag, clock_now_s(),
			     rl->cv.route.warm ? NULL : &next, &moved);
	if (!failover_429_moves(p429, rl->cv.route.warm, moved, rl->attempts,
				rl->c->max_attempts))
		return false;
	rl->route = next;
	return true;
}

/*
 * An upstream 400 saying a reasoning item's encrypted_content cannot be
 * read (another provider made it): retried once at once without those
 * items; not a provider failure.  True when it is to be retried.
 */
static bool
conv_invalid_encrypted(struct relay *rl)
{
	struct relay_conv *cv = &rl->cv;
	cJSON *err;
	bool mentions;

	/* Only a conversation's body is edited (conv_edits). */
	if (rl->api->id != API_RESPONSES || rl->a.status != 400 ||
	    cv->retried || !cv->on || rl->route.kind == ROUTE_CLIENT ||
	    cv->first_bound == CONVBODY_ALL)
		return false;
	err = attempt_error(&rl->a);
	mentions = convbody_invalid_encrypted(err);
	cJSON_Delete(err);
	if (!mentions)
		return false;
	/* Out of memory: the 400 goes to the client. */
	if (conv_input(rl, CONVBODY_ALL) != 0)
		return false;
	/* Items to leave out that the attempt still sent. */
	if (!convbody_retry_without_reasoning(
		    rl->a.status, mentions,
		    cv->input != NULL && cv->dropped > cv->dropped_sent,
		    cv->retried))
		return false;
	cv->retried = true;
	cv->all = true;
	return true;
}

/* One upstream attempt; its verdict in rl->v.  -1 when out of memory. */
static int
run_attempt(struct relay *rl)
{
	struct upstream_call call;
	struct upstream_result r;
	struct reqval_edits ed;
	char url[4096];

	attempt_reset(&rl->a, rl->c->max_answer_bytes);
	/* What an earlier attempt held back (keep-alives, its first
	 * events) is dropped: this attempt's stream brings its own. */
	if (!rl->head_sent)
		buf_reset(&rl->held);
	buf_reset(&rl->pending);
	cJSON_free(rl->fwd);
	if (conv_edits(rl, &ed) != 0)
		return -1;
	rl->fwd = reqval_forward_edit(&rl->req, pinned_tag(rl),
				      rl->route.max_out, &ed);
	if (rl->fwd == NULL)
		return -1;
	if (!upstream_url(rl->c, rl->in, rl->api->upstream_path, url,
			  sizeof(url)))
		return -1;
	memset(&call, 0, sizeof(call));
	call.url = url;
	call.key = rl->c->openrouter_api_key;
	call.headers = rl->in->headers;
	call.body = rl->fwd;
	call.body_len = strlen(rl->fwd);
	call.connect_timeout_ms = CONNECT_TIMEOUT_MS < rl->c->upstream_timeout_ms ?
					  CONNECT_TIMEOUT_MS :
					  rl->c->upstream_timeout_ms;
	call.client_fd = rl->io->client_fd;
	call.client_events = rl->io->client_events;
	call.on_headers = on_headers;
	call.on_data = on_data;
	call.on_tick = on_tick;
	call.on_client_gone = on_client_gone;
	call.arg = rl;
	/* An answer cut short has its cost looked up by this id. */
	call.want_generation_id = true;
	/* A failover: this attempt goes to another provider than the last
	 * one (a trip re-locked the model); one per request.  A trip that
	 * left the request unpinned moved it to no provider. */
	if (rl->attempts > 0 && rl->used_tag[0] != '\0' && pinned_tag(rl) &&
	    strcmp(rl->used_tag, pinned_tag(rl)) != 0)
		rl->d.failovers = 1;
	rl->attempts++;
	/* A trip may re-lock rl->route later on; stats and the log must
	 * name the provider this attempt really went to. */
	snprintf(rl->used_tag, sizeof(rl->used_tag), "%s",
		 pinned_tag(rl) ? pinned_tag(rl) : "");
	rl->used_route = rl->route.kind;
	rl->used_conv = rl->route.conversation;
	rl->a.t_start = clock_mono_ms();
	if (upstream_perform(&call, &r) != ORGW_OK)
		return -1;
	memcpy(rl->generation_id, r.generation_id, sizeof(r.generation_id));
	if (rl->a.after_end > 0)
		log_warn("upstream sent %u event(s) after the end of a %s "
			 "stream (model %s); dropped, stream closed",
			 rl->a.after_end, rl->api->name, rl->req.model);
	relay_mask(rl, rl->a.body.p, rl->a.body.len);
	judge_attempt(rl, &r);
	return 0;
}

/* Runs attempts until one is final or none is left (docs/design.md 5): a 429
 * waits and retries the same provider, a failure is counted and fails
 * over.  -1 when out of memory; else 0 with the last verdict in rl->v. */
static int
attempt_loop(struct relay *rl)
{
	const struct orgw_conf *c = rl->c;
	size_t n429 = 0;
	int64_t ms;

	while (rl->attempts < c->max_attempts) {
		/* No new attempt past the request's deadline. */
		if (rl->attempts > 0 &&
		    clock_mono_ms() - rl->t0 >= c->request_timeout_ms) {
			rl->v.out = FO_DEADLINE;
			rl->v.kind = FK_TIMEOUT;
			return 0;
		}
		if (run_attempt(rl) != 0)
			return -1;
		if (rl->v.out == FO_429)
			rl->d.e429 = 1;	/* requests that met a 429 */
		if (rl->attempts < c->max_attempts &&
		    ((rl->v.out == FO_429 && conv_429(rl)) ||
		     (rl->v.out == FO_CLIENT && conv_invalid_encrypted(rl))))
			continue;
		if (rl->v.out == FO_FAIL) {
			failover_count(&rl->d, rl->v.kind);
			provider_failed(rl, rl->v.kind);
		}
		switch (failover_next(rl->v.out, rl->attempts, c->max_attempts,
				      n429, c->n_retry_429_delays)) {
		case FAILOVER_STOP:
			return 0;
		case FAILOVER_RETRY:
			break;
		case FAILOVER_WAIT_429:
			/* Jitter so workers limited together do not retry in
			 * lockstep. */
			ms = failover_delay_429_ms(c->retry_429_delays[n429],
						   rl->a.retry_after,
						   clock_mono_ms() % 251);
			/* A retry that could not start before the deadline:
			 * the 429 goes to the client now. */
			if (clock_mono_ms() + ms - rl->t0 >=
			    c->request_timeout_ms)
				return 0;
			if (wait_429(rl, ms) != 0) {
				rl->v.out = FO_GONE;
				return 0;
			}
			n429++;
			rl->d.retries_429++;
			break;
		}
	}
	return 0;
}

/* Answers the client after the last attempt's verdict. */
static void
answer(struct relay *rl)
{
	struct attempt *a = &rl->a;
	const char *close = rl->api->stream_close;

	switch (rl->v.out) {
	case FO_OK:
		rl->ok = true;
		rl->result = "ok";
		if (!a->is_sse)
			rl->rc = relay_body(rl);
		else if (!a->ans.done && close[0] != '\0')
			/* Complete after its end event (docs/design.md 5, 11): the
			 * last event upstream did not send. */
			rl->rc = send_now(rl, close, strlen(close));
		break;
	case FO_DEADLINE:
		failover_count(&rl->d, FK_TIMEOUT);
		rl->result = "request_timeout";
		rl->rc = relay_gateway_error(rl, 504, "request_timeout",
					     "the request took longer than "
					     "REQUEST_TIMEOUT_MS");
		break;
	case FO_CLIENT:
	case FO_429:
		rl->result = rl->v.out == FO_429 ? "rate_limited" :
						   "upstream_4xx";
		rl->rc = relay_body(rl);
		break;
	case FO_GONE:
		rl->d.eabort = 1;
		rl->result = "client_abort";
		rl->final_status = 499;
		rl->rc = -1;
		break;
	case FO_MID:
		failover_count(&rl->d, rl->v.kind);
		provider_failed(rl, rl->v.kind);
		send_stream_error(rl,
				  a->why == AB_STALL ? 504 :
				  a->why == AB_ERROR_EVENT ? error_status(a) :
							     502,
				  "mid_stream_failure", a->ans.err_msg);
		rl->result = "mid_stream";
		break;
	case FO_FAIL:
		rl->result = "failed";
		rl->rc = relay_failure(rl);
		break;
	}
}

/* The request's output limit in tokens (the larger of its API's two),
 * 0 when it sets none. */
static int64_t
out_limit(const struct api_req *q)
{
	double m = q->limit[0] > q->limit[1] ? q->limit[0] : q->limit[1];

	return m >= 1 && m < 1e12 ? (int64_t)m : 0;
}

/* The look-up of what rl's answer cost (genq.h), and its ledger model
 * (job->model, set whether or not it is queued). */
static void
gen_job(const struct relay *rl, struct genq_job *job)
{
	const struct teamauth *t = rl->in->team;

	memset(job, 0, sizeof(*job));
	snprintf(job->id, sizeof(job->id), "%s", rl->generation_id);
	snprintf(job->model, sizeof(job->model), "%s",
		 rl->unknown ? STATE_OTHER_MODEL : rl->req.model);
	snprintf(job->tag, sizeof(job->tag), "%s", rl->used_tag);
	job->api = rl->api->name;
	if (t != NULL) {
		snprintf(job->key, sizeof(job->key), "%s", t->key.name);
		job->key_budget = rl->d.key_budget;
		if (t->admit.hold != NULL)
			snprintf(job->hold, sizeof(job->hold), "%s",
				 t->admit.hold);
		job->prompt_max = t->admit.prompt_max;
		job->out_max = t->admit.out_max;
	} else {
		job->prompt_max = (int64_t)rl->in->len;
		job->out_max = out_limit(&rl->req);
	}
}

/* The request's end: stats, the lag rule, the breaker reset, the log. */
static void
bookkeep(struct relay *rl)
{
	const struct orgw_io *io = rl->io;
	const struct api_usage *u = &rl->a.ans.usage;
	int64_t ttfb = -1, total = clock_mono_ms() - rl->t0;
	struct genq_job job;
	bool lookup;

	if (rl->a.t_first)
		ttfb = rl->a.t_first - rl->t0;
	/* The client has all it will get: let the web server end its
	 * response now rather than after the state write and the log. */
	if (io->finish)
		io->finish(io->ctx);
	if (rl->ok) {
		/* Before a possible re-lock below changes rl->route. */
		check_served(rl);
		/* Lag: relayed, but counted toward the breaker (docs/design.md 5). */
		if (failover_lagged(rl->used_tag[0] != '\0', rl->a.t_start,
				    rl->a.t_first, rl->c->slow_threshold_ms)) {
			failover_count(&rl->d, FK_SLOW);
			provider_failed(rl, FK_SLOW);
		}
		rl->d.ok = 1;
	}
	rl->d.requests = 1;
	rl->d.api = rl->api->name;
	rl->d.tag = rl->used_tag[0] ? rl->used_tag : NULL;
	rl->d.prompt_tokens = u->prompt;
	rl->d.cached_tokens = u->cached;
	rl->d.cache_write_tokens = u->cache_write;
	rl->d.completion_tokens = u->completion;
	rl->d.reasoning_tokens = u->reasoning;
	rl->d.cost_usd = u->cost;
	rl->d.cost_known = u->have_cost;
	rl->d.usage = u->have;
	rl->d.served = rl->a.ans.served;
	rl->d.now = clock_now_s();
	rl->d.ttfb_ms = ttfb;
	rl->d.total_ms = total;
	if (rl->in->team != NULL) {
		const struct teamkey *k = &rl->in->team->key;

		rl->d.key_name = k->name;
		rl->d.lease = rl->in->team->admit.lease;
		rl->d.hold = rl->in->team->admit.hold;
		rl->d.key_budget = k->budget_day_usd > 0 ||
				   k->budget_month_usd > 0;
	}
	/* An answer cut short (its client left, or upstream broke off
	 * after sending some) is billed without usage reaching orgw: its
	 * cost is looked up after the request has given its thread and
	 * lease back, and added then; its budget hold stays until. */
	lookup = !u->have && rl->generation_id[0] != '\0' &&
		 (rl->a.why == AB_GONE || rl->a.content);
	if (lookup) {
		gen_job(rl, &job);
		rl->d.hold = NULL;
	}
	if (rl->cv.on) {
		rl->cv.turn.hash = rl->cv.key.hash;
		rl->cv.turn.show = rl->cv.show;
		rl->cv.turn.api = rl->api->name;
		rl->cv.turn.fp = &rl->cv.fp;
		rl->cv.turn.only_new = rl->cv.only_new;
		rl->cv.turn.spread = rl->cv.route.spread;
		/* A turn that left every reasoning item out is on a provider
		 * that wrote none of its input's. */
		rl->cv.turn.foreign_items =
			rl->cv.all_sent ? (int64_t)rl->cv.n_items : -1;
		rl->cv.turn.ttl_s = rl->c->cache_ttl_seconds;
	}
	state_finish_conv(rl->c,
			  rl->unknown ? STATE_OTHER_MODEL : rl->req.model,
			  &rl->d,
			  rl->ok && rl->d.eslow == 0 ? rl->d.tag : NULL,
			  rl->cv.on ? &rl->cv.turn : NULL);
	/* A request looked up is counted in its key's use with its
	 * spend, once that is known. */
	if (rl->in->team != NULL && !lookup)
		teamauth_finish(rl->c, rl->in->team, &rl->d);
	log_request(rl, rl->result, ttfb, total);
	if (lookup && !genq_push(rl->c, &job))
		genq_settle(rl->c, &job, false, 0);
}

/*
 * A team key's checks before anything goes upstream (teamauth.h): the
 * model and the "models" array against its globs (403), its budget
 * (402).  TK_OK, or the refusal (answered, logged and counted).
 */
static enum teamkey_verdict
team_check(struct relay *rl)
{
	return teamauth_check(rl->c, rl->in->team, rl->req.model,
			      rl->req.models, rl->req.n_models);
}

/* Answers a team key's refusal v in the API's shape, counts it in the
 * key's use and logs it. */
static int
team_refuse(struct relay *rl, enum teamkey_verdict v)
{
	const struct teamauth *t = rl->in->team;
	char extra[64], msg[256], m[ORGW_MODEL_MAX * 4];
	const char *type = "invalid_request_error";
	int status = teamauth_status(v);

	extra[0] = '\0';
	switch (v) {
	case TK_MODEL:
		type = "permission_error";
		snprintf(msg, sizeof(msg),
			 "this key may not use model %s",
			 log_safe(m, sizeof(m), rl->req.model));
		break;
	case TK_BUDGET:
		type = "insufficient_quota";
		snprintf(msg, sizeof(msg),
			 "this key's budget is spent; it starts again with "
			 "the next UTC %s",
			 t->key.budget_month_usd > 0 &&
					 (t->key.budget_day_usd <= 0 ||
					  t->month.v[LX_KEY_SPEND] >=
						  t->key.budget_month_usd) ?
				 "month" :
				 "day");
		break;
	case TK_RPM:
	case TK_CONCURRENT:
		type = "rate_limit_error";
		snprintf(extra, sizeof(extra), "Retry-After: %lld\r\n",
			 (long long)(t->admit.retry_after_s > 0 ?
					     t->admit.retry_after_s :
					     1));
		if (v == TK_CONCURRENT && t->key.concurrent == 0) {
			snprintf(msg, sizeof(msg),
				 "what is left of this key's budget is held "
				 "by its requests in flight; retry after "
				 "Retry-After seconds");
			break;
		}
		snprintf(msg, sizeof(msg), v == TK_RPM ?
			 "this key's limit of %lld requests a minute is "
			 "reached; retry after Retry-After seconds" :
			 "this key's limit of %lld requests at once is "
			 "reached; retry after Retry-After seconds",
			 (long long)(v == TK_RPM ? t->key.rpm :
						   t->key.concurrent));
		break;
	case TK_UNAVAILABLE:
		type = "server_error";
		snprintf(extra, sizeof(extra), "Retry-After: %lld\r\n",
			 (long long)STATE_UNAVAILABLE_RETRY_S);
		snprintf(msg, sizeof(msg),
			 "the gateway cannot record this key's limits or "
			 "spend now (its state store refuses writes); retry "
			 "after Retry-After seconds");
		break;
	case TK_OK:
	case TK_UNKNOWN:
		snprintf(msg, sizeof(msg), "incorrect API key provided");
		break;
	}
	rl->final_status = status;
	teamauth_refused(rl->c, t, v, clock_now_s());
	return relay_error(rl->io, rl->api, status, type, teamauth_code(v),
			   v == TK_MODEL ? "model" : NULL, msg,
			   extra[0] ? extra : NULL);
}

/*
 * The request's conversation, from the body reqval parsed (which is
 * then freed: a large body is parsed once): its key, scoped by the team
 * key's name ("" for the operator's key) and the model; the prompt's
 * fingerprints; whether it carries a cache breakpoint.  A client's own
 * provider object routes itself: no conversation.  Out of memory leaves
 * the request without one.
 */
static void
conv_prepare(struct relay *rl)
{
	struct relay_conv *cv = &rl->cv;
	const cJSON *tree = rl->req.tree, *prev;

	if (tree == NULL || rl->req.has_provider)
		goto out;
	if (conv_key_of(tree, &rl->in->conv,
			rl->in->team ? rl->in->team->key.name : "",
			rl->req.model, &cv->key) != ORGW_OK ||
	    fp_compute(tree, rl->api->id, &cv->fp) != ORGW_OK)
		goto out;
	conv_show(&cv->key, cv->show, sizeof(cv->show));
	cv->has_breakpoint = convbody_has_breakpoint(tree);
	prev = cJSON_GetObjectItemCaseSensitive(tree, "previous_response_id");
	cv->only_new = rl->api->id == API_RESPONSES && cJSON_IsString(prev);
	cv->first_bound = CONVBODY_ALL;
	if (rl->api->id == API_RESPONSES)
		cv->n_items = convbody_input_items(
			cJSON_GetObjectItemCaseSensitive(tree, rl->api->input),
			&cv->first_bound);
	cv->route.hash = cv->key.hash;
	cv->route.want_explicit =
		rl->c->auto_cache != 0 && rl->api->id != API_RESPONSES &&
		!cv->has_breakpoint;
	cv->on = true;
out:
	cJSON_Delete(rl->req.tree);
	rl->req.tree = NULL;
}

/* What is held back before the first token is bounded (docs/design.md 5), and the
 * bound admits what the API legitimately holds (api.h): Responses' first
 * two events each echo the request's instructions and tools, so its
 * bound is 64 KiB more than twice the request body. */
static size_t
held_bound(const struct api *api, size_t body_len)
{
	size_t n = api->held_min_bytes;

	if (api->held_body_times > 0 &&
	    body_len <= (SIZE_MAX - n) / api->held_body_times)
		n += body_len * api->held_body_times;
	return n;
}

int
relay_handle(const struct orgw_conf *c, const struct orgw_io *io,
	     const struct relay_in *in)
{
	struct relay rl;
	const char *param = NULL, *alias;
	enum teamkey_verdict v;
	char err[256];
	int rc;

	memset(&rl, 0, sizeof(rl));
	rl.c = c;
	rl.io = io;
	rl.in = in;
	rl.api = in->api;
	rl.t0 = clock_mono_ms();
	rl.d.ttfb_ms = -1;
	rl.v.out = FO_FAIL;
	rl.v.kind = FK_OTHER;
	rl.result = "error";
	rl.held_max = held_bound(in->api, in->len);
	sse_init(&rl.a.sse, 0);
	api_answer_init(&rl.a.ans);
	if (reqval_parse(in->api, in->body, in->len,
			 c->n_target_models == 1 ? c->target_models[0] : NULL,
			 &rl.req, err, sizeof(err), &param) != ORGW_OK) {
		rc = relay_error(io, in->api, 400, "invalid_request_error",
				 "invalid_request", param, err, NULL);
		/* Logged too (docs/design.md 9), as not routed. */
		rl.route.kind = ROUTE_UNPINNED;
		rl.final_status = 400;
		log_request(&rl, "invalid_request", -1,
			    clock_mono_ms() - rl.t0);
		goto out;
	}
	if ((alias = conf_alias(c, rl.req.model)) != NULL)
		reqval_alias(&rl.req, alias);
	/* Nothing of a refused team key's request goes upstream, nor
	 * into the ledger: it is counted in the key's use. */
	if (in->team != NULL && (v = team_check(&rl)) != TK_OK) {
		rl.route.kind = ROUTE_UNPINNED;
		rc = team_refuse(&rl, v);
		log_request(&rl, teamauth_code(v), -1,
			    clock_mono_ms() - rl.t0);
		goto out;
	}
	if (in->team != NULL) {
		/* What bounds its cost, for its budget hold. */
		in->team->admit.prompt_max = (int64_t)in->len;
		in->team->admit.out_max = out_limit(&rl.req);
	}
	conv_prepare(&rl);
	route_request(&rl);
	if (in->team != NULL && in->team->admit.verdict != TK_OK) {
		rc = team_refuse(&rl, in->team->admit.verdict);
		log_request(&rl, teamauth_code(in->team->admit.verdict), -1,
			    clock_mono_ms() - rl.t0);
		goto out;
	}
	if (attempt_loop(&rl) == 0) {
		answer(&rl);
	} else {
		rl.rc = relay_gateway_error(&rl, 500, "internal_error",
					    "out of memory");
		rl.result = "oom";
	}
	bookkeep(&rl);
	rc = rl.rc;
out:
	relay_free(&rl);
	return rc;
}

/* What relay_plain collects. */
struct plain {
	long status;
	struct buf body;
	bool gone;
};

static void
plain_headers(void *arg, long status, const char *ctype, int retry_after,
	      const char *generation_id)
{
	struct plain *pl = arg;

	(void)ctype;
	(void)retry_after;
	(void)generation_id;
	pl->status = status;
}

static int
plain_data(void *arg, const char *p, size_t n)
{
	struct plain *pl = arg;

	return buf_add(&pl->body, p, n) == ORGW_OK ? 0 : 1;
}

static void
plain_gone(void *arg)
{
	struct plain *pl = arg;

	pl->gone = true;
}

int
relay_plain(const struct orgw_conf *c, const struct orgw_io *io,
	    const struct relay_in *in, const char *upstream_path)
{
	struct upstream_call call;
	struct upstream_result r;
	struct plain pl;
	char url[4096];
	const char *p;
	size_t len;
	enum teamkey_verdict v;
	int rc, status;
	int64_t t0 = clock_mono_ms();

	/* A team key's count is held to its rpm and budget too. */
	if (in->team != NULL && (v = teamauth_check_plain(c, in->team)) !=
					TK_OK) {
		struct relay rl;

		memset(&rl, 0, sizeof(rl));
		rl.c = c;
		rl.io = io;
		rl.in = in;
		rl.api = in->api;
		rc = team_refuse(&rl, v);
		log_msg("req",
			"time=%lld api=%s path=%s status=%d outcome=%s key=%s",
			(long long)clock_now_s(), in->api->name, upstream_path,
			rl.final_status, teamauth_code(v), in->team->key.name);
		return rc;
	}
	memset(&pl, 0, sizeof(pl));
	pl.body.max = PLAIN_MAX_BYTES;
	if (!upstream_url(c, in, upstream_path, url, sizeof(url)))
		url[0] = '\0';
	memset(&call, 0, sizeof(call));
	call.url = url;
	call.key = c->openrouter_api_key;
	call.headers = in->headers;
	call.body = in->body;
	call.body_len = in->len;
	call.connect_timeout_ms = CONNECT_TIMEOUT_MS;
	call.total_timeout_ms = c->upstream_timeout_ms;
	call.client_fd = io->client_fd;
	call.client_events = io->client_events;
	call.on_headers = plain_headers;
	call.on_data = plain_data;
	call.on_client_gone = plain_gone;
	call.arg = &pl;
	if (url[0] == '\0' || upstream_perform(&call, &r) != ORGW_OK)
		r.fail = UP_OTHER;
	mask_key(c->openrouter_api_key, pl.body.p, pl.body.len);
	p = pl.body.p ? pl.body.p : "";
	len = pl.body.len;
	if (pl.gone) {
		rc = -1;
		status = 499;
	} else if (r.fail != UP_OK || pl.status < 200 || pl.status > 599 ||
		   (pl.status >= 300 && pl.status <= 399) || len == 0) {
		status = 502;
		rc = relay_error(io, in->api, 502, "upstream_error",
				 "upstream_unavailable", NULL,
				 "no answer from upstream", NULL);
	} else {
		status = (int)pl.status;
		rc = http_json(io, status, NULL, p, len);
	}
	log_msg("req", "time=%lld api=%s path=%s status=%d total_ms=%lld",
		(long long)clock_now_s(), in->api->name, upstream_path, status,
		(long long)(clock_mono_ms() - t0));
	buf_free(&pl.body);
	return rc;
}
