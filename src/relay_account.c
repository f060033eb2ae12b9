/*
 * relay_account.c - a generation request's end (bookkeep): its usage,
 * cost and outcome into one stats transaction (state_finish_conv), the
 * lag rule and the off-pin check, a team key's use, the look-up of what
 * an answer cut short cost (genq.h), and the request's log line
 * (docs/design.md section 9).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api.h"
#include "clock.h"
#include "conv.h"
#include "convcache.h"
#include "failover.h"
#include "genq.h"
#include "log.h"
#include "relay.h"
#include "relay_impl.h"
#include "reqval.h"
#include "state.h"

void
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

/* The request's output limit in tokens (the larger of its API's two),
 * 0 when it sets none. */
int64_t
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
void
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
