/* failover.c - the failover policy of docs/design.md section 5; see failover.h. */
#include <stdio.h>
#include <string.h>

#include "failover.h"

#define RETRY_AFTER_CAP_S 30

static bool
is_5xx(long s)
{
	return s >= 500 && s <= 599;
}

static struct failover_verdict
verdict(enum failover_outcome out, enum failover_kind kind)
{
	struct failover_verdict v = {out, kind, NULL};

	return v;
}

/* Content reached the client: complete after a clean [DONE], or after a
 * chunk with a finish_reason (its usage follows it) whatever the line did
 * next; anything else is a mid-stream failure. */
static struct failover_verdict
classify_relayed(const struct failover_attempt *a)
{
	struct failover_verdict v = verdict(FO_MID, FK_MID_STREAM);

	if (a->why == AB_NONE &&
	    ((a->done && a->net == NET_OK) || a->finished))
		return verdict(FO_OK, FK_OTHER);
	v.mid_msg = a->why == AB_STALL ? "upstream stream stalled" :
		    a->done ? "upstream stream ended badly" :
			      "upstream stream ended before [DONE]";
	return v;
}

/*
 * An error object inside a 200 (an SSE error event, or the body's
 * "error" or choices[].error, docs/upstream.md 6) by its code: 429 is
 * retried on the provider, another 4xx but 404 and 408 is the client's,
 * anything else a provider failure.  One rule for streams and bodies.
 */
static struct failover_verdict
classify_error_code(long e)
{
	if (e == 429)
		return verdict(FO_429, FK_OTHER);
	if (e >= 400 && e < 500 && e != 404 && e != 408)
		return verdict(FO_CLIENT, FK_OTHER);
	return verdict(FO_FAIL, FK_5XX);
}

/* A 200 stream that relayed no content yet. */
static struct failover_verdict
classify_stream(const struct failover_attempt *a)
{
	if (a->why == AB_ERROR_EVENT)
		return classify_error_code(a->err_code);
	if (a->done)	/* a stream with no content at all */
		return verdict(FO_OK, FK_OTHER);
	return verdict(FO_FAIL,
		       a->why == AB_MALFORMED ? FK_MALFORMED : FK_RESET);
}

/* A complete non-streamed 2xx body. */
static struct failover_verdict
classify_body(const struct failover_attempt *a)
{
	if (a->why == AB_TOO_BIG || !a->body_ok)
		return verdict(FO_FAIL, FK_MALFORMED);
	if (!a->has_error)
		return verdict(FO_OK, FK_OTHER);
	return classify_error_code(a->err_code);
}

struct failover_verdict
failover_classify(const struct failover_attempt *a)
{
	if (a->why == AB_GONE)
		return verdict(FO_GONE, FK_OTHER);
	if (a->why == AB_DEADLINE)
		return verdict(FO_DEADLINE, FK_TIMEOUT);
	if (a->content)
		return classify_relayed(a);
	if (a->why == AB_TIMEOUT || a->why == AB_STALL ||
	    a->net == NET_TIMEOUT)
		return verdict(FO_FAIL, FK_TIMEOUT);
	if (a->net != NET_OK && a->why == AB_NONE)
		return verdict(FO_FAIL,
			       a->net == NET_CONNECT ? FK_CONNECT : FK_RESET);
	if (a->status == 429)
		return verdict(FO_429, FK_OTHER);
	if (is_5xx(a->status))
		return verdict(FO_FAIL, FK_5XX);
	if (a->status == 404 && a->pinned)
		return verdict(FO_FAIL, FK_NO_ENDPOINT);
	if (a->status < 200 || a->status > 299)
		return verdict(FO_CLIENT, FK_OTHER);
	if (a->is_sse)
		return classify_stream(a);
	return classify_body(a);
}

enum failover_step
failover_next(enum failover_outcome out, int attempts, int max_attempts,
	      size_t n429, size_t n_delays)
{
	if (attempts >= max_attempts)
		return FAILOVER_STOP;
	if (out == FO_FAIL)
		return FAILOVER_RETRY;
	if (out == FO_429 && n429 < n_delays)
		return FAILOVER_WAIT_429;
	return FAILOVER_STOP;
}

bool
failover_provider_429(bool pinned, enum failover_named named,
		      bool platform_limit)
{
	if (named == FAILOVER_NAMED)
		return true;
	if (named == FAILOVER_NAMED_NULL || platform_limit)
		return false;
	return pinned;
}

bool
failover_429_moves(bool provider_429, bool warm, bool have_next,
		   int attempts, int max_attempts)
{
	return provider_429 && !warm && have_next && attempts < max_attempts;
}

int64_t
failover_delay_429_ms(int delay_s, int retry_after_s, int64_t jitter_ms)
{
	int64_t ms = (int64_t)delay_s * 1000;
	int ra = retry_after_s;

	if (ra > RETRY_AFTER_CAP_S)
		ra = RETRY_AFTER_CAP_S;
	if ((int64_t)ra * 1000 > ms)
		ms = (int64_t)ra * 1000;
	return ms + jitter_ms;
}

bool
failover_lagged(bool pinned, int64_t t_start, int64_t t_first,
		int64_t slow_ms)
{
	return pinned && t_first != 0 && t_first - t_start > slow_ms;
}

void
failover_count(struct stats_delta *d, enum failover_kind k)
{
	switch (k) {
	case FK_TIMEOUT:
		d->etimeout = 1;
		break;
	case FK_MID_STREAM:
		d->emid = 1;
		break;
	case FK_5XX:
	case FK_CONNECT:
	case FK_RESET:
		d->e5xx = 1;
		break;
	case FK_SLOW:
		d->eslow = 1;
		break;
	case FK_OTHER:
	case FK_MALFORMED:
	case FK_NO_ENDPOINT:
		d->eother = 1;
		break;
	}
}

const char *
failover_kind_name(enum failover_kind k)
{
	switch (k) {
	case FK_OTHER:
		return "other";
	case FK_TIMEOUT:
		return "timeout";
	case FK_5XX:
		return "5xx";
	case FK_CONNECT:
		return "connect";
	case FK_RESET:
		return "reset";
	case FK_MALFORMED:
		return "malformed";
	case FK_NO_ENDPOINT:
		return "no_endpoint";
	case FK_MID_STREAM:
		return "mid_stream";
	case FK_SLOW:
		return "slow";
	}
	return "other";
}

enum failover_breaker
failover_breaker_fail(struct rec_failure *f, const struct rec_cooldown *cd,
		      const char *reason, int64_t now, int fail_limit,
		      int64_t cooldown_seconds, struct rec_cooldown *trip)
{
	if (failover_breaker_cooling(cd, now))
		return BREAKER_COOLING;
	f->count++;
	f->last = now;
	snprintf(f->reason, sizeof(f->reason), "%s", reason);
	if (f->count < fail_limit)
		return BREAKER_COUNTED;
	memset(trip, 0, sizeof(*trip));
	trip->until = now + cooldown_seconds;
	snprintf(trip->reason, sizeof(trip->reason), "%s", reason);
	f->count = 0;
	return BREAKER_TRIPPED;
}

void
failover_breaker_ok(struct rec_failure *f)
{
	f->count = 0;
}

bool
failover_breaker_cooling(const struct rec_cooldown *c, int64_t now)
{
	return c != NULL && c->until > now;
}
