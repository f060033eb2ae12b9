/*
 * failover.h - the failover policy of docs/design.md section 5, pure.
 *
 * relay_attempt.c runs an attempt (I/O), describes it in a struct
 * failover_attempt and asks this module what it means: relay it, retry the
 * provider after a 429 delay, fail over to the next attempt, end a broken
 * stream.  The module also names the stats counter a failure bumps, the lag
 * rule and the circuit breaker's arithmetic (consecutive failures counted in
 * a rec_failure; at fail_limit a cooldown; a success resets the count; 429s
 * and client disconnects never reach the breaker).
 *
 * No I/O and no clock: times and the 429 jitter are arguments, so every
 * rule is a row in tests/unit/test_failover.c.
 */
#ifndef ORGW_FAILOVER_H
#define ORGW_FAILOVER_H

#include "record.h"

/* What one finished attempt means for the request. */
enum failover_outcome {
	FO_OK,		/* 2xx relayed, stream completed */
	FO_429,		/* rate limited: retry the same provider */
	FO_FAIL,	/* provider failure, nothing relayed: fail over */
	FO_MID,		/* failure after content reached the client */
	FO_CLIENT,	/* upstream 4xx etc.: relay as is */
	FO_GONE,	/* the client went away */
	FO_DEADLINE,	/* REQUEST_TIMEOUT_MS passed: final, not retried
			 * (the generation may have been billed), and
			 * no provider failure */
};

/* Why the I/O side stopped an attempt early. */
enum failover_abort {
	AB_NONE,
	AB_TIMEOUT,	/* no first token/byte in time */
	AB_STALL,	/* stream went quiet */
	AB_MALFORMED,	/* an unparseable chunk */
	AB_ERROR_EVENT,	/* upstream sent an SSE error event */
	AB_GONE,	/* client went away (write failed or hung up) */
	AB_TOO_BIG,	/* response over the cap */
	AB_DEADLINE,	/* the whole request reached REQUEST_TIMEOUT_MS */
};

/* How the transfer itself ended (upstream.h's up_fail, folded). */
enum failover_net {
	NET_OK,		/* completed, any HTTP status, or stopped by us */
	NET_CONNECT,	/* could not connect / resolve */
	NET_TIMEOUT,	/* the transport's own timeout */
	NET_BROKEN,	/* reset, closed early, bad HTTP, anything else */
};

/* The stats class of an attempt; failover_kind_name() is the reason
 * stored with a failure and a cooldown. */
enum failover_kind {
	FK_OTHER,
	FK_TIMEOUT,
	FK_5XX,
	FK_CONNECT,
	FK_RESET,
	FK_MALFORMED,
	FK_NO_ENDPOINT,
	FK_MID_STREAM,
	FK_SLOW,	/* lag: relayed, but counted toward the breaker */
};

/*
 * One finished attempt, as the I/O side saw it.  Times are not in it:
 * what a first token, a first byte, a timeout and a stall are (docs/design.md
 * section 5, "Time") is decided while the attempt runs, and
 * arrives here as why.
 */
struct failover_attempt {
	long status;		/* HTTP status; 0 when none arrived */
	bool is_sse;		/* a 200 text/event-stream */
	bool pinned;		/* the request named a provider (a lock) */
	bool content;		/* content reached the client this attempt */
	bool done;		/* saw data: [DONE] */
	enum failover_abort why;
	enum failover_net net;
	/* Read from a complete non-SSE 2xx body (why AB_NONE, NET_OK): */
	bool body_ok;		/* it parsed as a JSON object */
	bool has_error;		/* its error object has a message */
	/* The error object's code (body, or the SSE error event that set
	 * AB_ERROR_EVENT); 500 when it had none. */
	long err_code;
	bool finished;		/* stream: a chunk carried a finish_reason */
};

struct failover_verdict {
	enum failover_outcome out;
	enum failover_kind kind;	/* FK_OTHER unless a failure */
	/* FO_MID: what to tell the client when the attempt gave no
	 * message of its own; NULL otherwise.  Static. */
	const char *mid_msg;
};

/* Decides what a finished attempt means (docs/design.md section 5). */
struct failover_verdict failover_classify(const struct failover_attempt *a);

/* What the request does after a verdict. */
enum failover_step {
	FAILOVER_STOP,		/* relay what the last attempt left */
	FAILOVER_RETRY,		/* another attempt now (failover) */
	FAILOVER_WAIT_429,	/* wait failover_delay_429_ms(), same provider */
};

/*
 * After attempts attempts (of max_attempts) and n429 429-retries (of
 * n_delays configured delays): retry, wait, or stop.  Only FO_FAIL and
 * FO_429 go on; the others are final.
 */
enum failover_step failover_next(enum failover_outcome out, int attempts,
				 int max_attempts, size_t n429,
				 size_t n_delays);

/* What a 429's error said about the provider
 * (error.metadata.provider_name). */
enum failover_named {
	FAILOVER_NAMED_ABSENT,	/* no provider_name member */
	FAILOVER_NAMED_NULL,	/* provider_name: null, OpenRouter itself */
	FAILOVER_NAMED,		/* a provider's display name */
};

/*
 * True when a 429 is a provider 429, about the capacity of the provider
 * that answered (it puts that provider under pressure for the model):
 * it names the provider, or it names none but the request was pinned
 * and so could only have been served there.  A 429 about the account is
 * not: provider_name null (OpenRouter itself failed), or OpenRouter's
 * own rate-limit headers (platform_limit: X-RateLimit-*, which only its
 * own limits carry), or unpinned with no name.
 */
bool failover_provider_429(bool pinned, enum failover_named named,
			   bool platform_limit);

/*
 * After a 429 on a conversation's turn: true when the request goes at
 * once to another provider (have_next: a candidate neither cooling nor
 * under pressure) instead of waiting out RETRY_429_DELAYS on this one.
 * Only a provider 429 on a turn without a warm provider moves (there is
 * no cache to lose); a warm one retries there, and an account 429 would
 * meet the next provider too.  attempts of max_attempts bound it as
 * every retry.
 */
bool failover_429_moves(bool provider_429, bool warm, bool have_next,
			int attempts, int max_attempts);

/*
 * The 429 wait in ms: delay_s (the configured delay for this retry), or
 * a larger Retry-After (retry_after_s, negative when absent) capped at
 * 30 s, plus jitter_ms (the caller draws it, 0..250, so workers limited
 * together do not retry in lockstep).
 */
int64_t failover_delay_429_ms(int delay_s, int retry_after_s,
			      int64_t jitter_ms);

/*
 * Lag (docs/design.md 5): true when a pinned attempt's first token (stream) or
 * first byte (non-streamed) came later than slow_ms after it started.
 * t_first 0 means none came.  Both times from the same monotonic clock.
 * Unpinned, there is no provider to count it against.
 */
bool failover_lagged(bool pinned, int64_t t_start, int64_t t_first,
		     int64_t slow_ms);

/*
 * Marks the error class of failure kind k in d (its counter becomes 1):
 * The ledger's errors.<class> count requests that met that error at least
 * once, not the attempts that did (docs/design.md section 7, and errors.* in
 * docs/state.md).
 */
void failover_count(struct stats_delta *d, enum failover_kind k);

/* "timeout", "5xx", ... as stored in PROVIDER_FAILURE.  Static. */
const char *failover_kind_name(enum failover_kind k);

/* What one failure did to the provider's breaker. */
enum failover_breaker {
	BREAKER_COUNTED,	/* counted, below fail_limit: retry it */
	BREAKER_TRIPPED,	/* the fail_limit-th: it cools from now on */
	BREAKER_COOLING,	/* it cools already: not counted */
};

/*
 * The breaker: one failure (reason is copied, truncated) at now of a
 * provider whose stored cooldown is cd (NULL when none).  A provider
 * that cools already is not counted again (BREAKER_COOLING, f left
 * alone): the requests that were in flight on it when another one
 * tripped it fail too, and counting them would trip it a second time
 * and stretch its cooldown for failures it was already cooling for.
 * Otherwise the failure is counted in f; at fail_limit it returns
 * BREAKER_TRIPPED with the cooldown (until now + cooldown_seconds) in
 * *trip and f->count back to 0.  *trip is written only on a trip.
 */
enum failover_breaker failover_breaker_fail(struct rec_failure *f,
					    const struct rec_cooldown *cd,
					    const char *reason, int64_t now,
					    int fail_limit,
					    int64_t cooldown_seconds,
					    struct rec_cooldown *trip);

/* Records a success: the consecutive count starts again. */
void failover_breaker_ok(struct rec_failure *f);

/* True when c (may be NULL) says the provider still cools down at now. */
bool failover_breaker_cooling(const struct rec_cooldown *c, int64_t now);

#endif
