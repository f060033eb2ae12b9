/*
 * relay_attempt.c - the attempts of a generation request (docs/design.md
 * section 5): one upstream call with the body, the pin and the headers
 * it goes with (run_attempt), its outcome described to failover.c
 * (judge_attempt), and the loop that retries a 429 on the same provider
 * after RETRY_429_DELAYS and fails over on a failure, until an attempt
 * is final, none is left or the request's time is up (attempt_loop).
 * What an attempt means and what comes next is failover.c's; this file
 * only runs it.
 */
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "api.h"
#include "buf.h"
#include "clock.h"
#include "failover.h"
#include "jsonscan.h"
#include "log.h"
#include "mask.h"
#include "relay.h"
#include "relay_impl.h"
#include "reqval.h"
#include "sse.h"
#include "state.h"
#include "upstream.h"
#define WAIT_TICK_MS 50			/* a 429 wait looks around this often */

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

/* The upstream key masked in p[0..n) (mask.c, docs/design.md 3); t0780 and t0800
 * check it. */
static void
relay_mask(const struct relay *rl, char *p, size_t n)
{
	mask_key(rl->c->openrouter_api_key, p, n);
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
void
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
bool
upstream_url(const struct orgw_conf *c, const struct relay_in *in,
	     const char *path, char *dst, size_t n)
{
	const char *q = in->query;
	int k = snprintf(dst, n, "%s%s%s%s", c->upstream_url, path,
			 q != NULL && q[0] != '\0' ? "?" : "", q ? q : "");

	return k > 0 && (size_t)k < n;
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
int
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
