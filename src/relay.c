/*
 * relay.c - the proxy of the three generation APIs (chat completions,
 * Messages, Responses): one attempt loop and one relay; what an API's
 * events, bodies and errors look like is its adapter's (api.h).
 *
 * One request runs: validate (reqval) -> route (state_route, maybe an
 * inline scoring) -> up to MAX_ATTEMPTS upstream attempts (attempt_loop;
 * failover.c decides what each one means and what comes next) -> the
 * answer -> one stats transaction (bookkeep).  The relay does the I/O and
 * holds no failover policy.  No state lock is held across network I/O.
 *
 * This file holds relay_handle(), which runs those steps, and a team
 * key's refusals; the steps live beside it, sharing struct relay through
 * relay_impl.h:
 *   relay_route.c    the route, and the ids OpenRouter does not know
 *   relay_conv.c     a conversation's key, body edits and retries
 *   relay_attempt.c  one upstream attempt, and the attempt loop
 *   relay_stream.c   the client side while upstream answers: the held
 *                    back head and events, keep-alives, the timeouts
 *   relay_reply.c    the answer after the last attempt, and the errors
 *   relay_account.c  the request's end: stats, cost look-up, log line
 *   relay_plain.c    count_tokens, forwarded as it is
 *
 * Ownership: struct relay owns everything of the request (parsed body,
 * buffers, forwarded body); relay_free() releases it once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "api.h"
#include "buf.h"
#include "clock.h"
#include "failover.h"
#include "fingerprint.h"
#include "log.h"
#include "relay.h"
#include "relay_impl.h"
#include "reqval.h"
#include "workertab.h"
#include "sse.h"
#include "state.h"

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
	workertab_mem_trim(answer);
}

const char *
pinned_tag(const struct relay *rl)
{
	return rl->route.tag[0] ? rl->route.tag : NULL;
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
int
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
