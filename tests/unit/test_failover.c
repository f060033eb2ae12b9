/*
 * test_failover.c - unit tests for failover.c: every rule of docs/design.md
 * section 5 as orgw implements it is one row of a table (an attempt as
 * chat.c describes it -> outcome and stats class), then tables for the next
 * step, the 429 delay, what a chunk carries, the lag rule, the stats
 * counters, and the breaker's arithmetic (FAIL_LIMIT, tripping exactly at
 * the limit with until = now + cooldown, the count starting again after a
 * trip or a success, the cooling boundary, a failure on a provider that
 * cools already counted for nothing).
 */
#include <stddef.h>
#include <string.h>

#include "t.h"
#include "failover.h"

#define NROWS(t) (sizeof(t) / sizeof((t)[0]))

/* Shorthands for the table: an attempt's inputs. */
#define SSE true
#define BODY false
#define PIN true
#define NOPIN false

struct classify_row {
	const char *rule;
	struct failover_attempt a;
	enum failover_outcome out;
	enum failover_kind kind;
	const char *mid_msg;	/* expected; NULL for all but FO_MID */
};

/* status, is_sse, pinned, content, done, why, net, body_ok, has_error,
 * err_code */
#define A(st, sse, pin, content, done, why, net, ok, err, code)            \
	{st, sse, pin, content, done, why, net, ok, err, code, false}
/* A complete non-streamed answer with a readable body. */
#define BODY_OK(st, pin) A(st, BODY, pin, 0, 0, AB_NONE, NET_OK, 1, 0, 0)
/* A complete 200 body that carries an error object with code. */
#define BODY_ERR(code) A(200, BODY, PIN, 0, 0, AB_NONE, NET_OK, 1, 1, code)
/* A stream whose content reached the client and that saw a chunk with a
 * finish_reason, then ended with why and net (no [DONE]). */
#define FINISHED(why, net)                                                 \
	{200, SSE, PIN, 1, 0, why, net, 0, 0, 0, true}
/* A 200 stream that sent an error event before any content. */
#define EVENT_ERR(code)                                                    \
	A(200, SSE, PIN, 0, 0, AB_ERROR_EVENT, NET_BROKEN, 0, 1, code)

static const char *const STALLED = "upstream stream stalled";
static const char *const BADLY = "upstream stream ended badly";
static const char *const EARLY = "upstream stream ended before [DONE]";

static const struct classify_row classify_rows[] = {
	/* Success (2xx, stream completed). */
	{"200 body: ok", BODY_OK(200, PIN), FO_OK, FK_OTHER, NULL},
	{"201 body unpinned: ok", BODY_OK(201, NOPIN), FO_OK, FK_OTHER, NULL},
	{"stream with content and [DONE]: ok",
	 A(200, SSE, PIN, 1, 1, AB_NONE, NET_OK, 0, 0, 0), FO_OK, FK_OTHER,
	 NULL},
	{"stream with [DONE] and no content at all: ok",
	 A(200, SSE, PIN, 0, 1, AB_NONE, NET_OK, 0, 0, 0), FO_OK, FK_OTHER,
	 NULL},

	/* 429: retry the same provider; never a failure. */
	{"429 pinned: retry same provider", BODY_OK(429, PIN), FO_429,
	 FK_OTHER, NULL},
	{"429 unpinned: retry", BODY_OK(429, NOPIN), FO_429, FK_OTHER, NULL},
	{"200 body with error code 429: retry", BODY_ERR(429), FO_429,
	 FK_OTHER, NULL},
	{"error event 429 before content: retry", EVENT_ERR(429), FO_429,
	 FK_OTHER, NULL},

	/* Failure = 5xx: fail over. */
	{"500: failure 5xx", BODY_OK(500, PIN), FO_FAIL, FK_5XX, NULL},
	{"502: failure 5xx", BODY_OK(502, PIN), FO_FAIL, FK_5XX, NULL},
	{"503: failure 5xx", BODY_OK(503, PIN), FO_FAIL, FK_5XX, NULL},
	{"504: failure 5xx", BODY_OK(504, PIN), FO_FAIL, FK_5XX, NULL},
	{"524: failure 5xx", BODY_OK(524, PIN), FO_FAIL, FK_5XX, NULL},
	{"529: failure 5xx", BODY_OK(529, NOPIN), FO_FAIL, FK_5XX, NULL},
	{"599: failure 5xx", BODY_OK(599, PIN), FO_FAIL, FK_5XX, NULL},

	/* Failure = connect error, broken transfer, timeout. */
	{"connect error: failure connect",
	 A(0, BODY, PIN, 0, 0, AB_NONE, NET_CONNECT, 0, 0, 0), FO_FAIL,
	 FK_CONNECT, NULL},
	{"connection reset: failure reset",
	 A(0, BODY, PIN, 0, 0, AB_NONE, NET_BROKEN, 0, 0, 0), FO_FAIL,
	 FK_RESET, NULL},
	{"reset after a 200 header: failure reset",
	 A(200, BODY, PIN, 0, 0, AB_NONE, NET_BROKEN, 0, 0, 0), FO_FAIL,
	 FK_RESET, NULL},
	{"no first byte in time: failure timeout",
	 A(0, BODY, PIN, 0, 0, AB_TIMEOUT, NET_BROKEN, 0, 0, 0), FO_FAIL,
	 FK_TIMEOUT, NULL},
	{"no first token in time (stream): failure timeout",
	 A(200, SSE, PIN, 0, 0, AB_TIMEOUT, NET_BROKEN, 0, 0, 0), FO_FAIL,
	 FK_TIMEOUT, NULL},
	{"stall before content: failure timeout",
	 A(200, SSE, PIN, 0, 0, AB_STALL, NET_BROKEN, 0, 0, 0), FO_FAIL,
	 FK_TIMEOUT, NULL},
	{"transport timeout: failure timeout",
	 A(0, BODY, PIN, 0, 0, AB_NONE, NET_TIMEOUT, 0, 0, 0), FO_FAIL,
	 FK_TIMEOUT, NULL},
	{"timeout wins over a 5xx status",
	 A(503, BODY, PIN, 0, 0, AB_TIMEOUT, NET_BROKEN, 0, 0, 0), FO_FAIL,
	 FK_TIMEOUT, NULL},

	/* Failure = a pinned 404 (no endpoint matched). */
	{"404 pinned: failure no_endpoint", BODY_OK(404, PIN), FO_FAIL,
	 FK_NO_ENDPOINT, NULL},
	{"404 unpinned: the client's, relayed", BODY_OK(404, NOPIN),
	 FO_CLIENT, FK_OTHER, NULL},

	/* Failure = a 200 whose answer carries an error, before content. */
	/* chat.c reads an error object without a code as 500. */
	{"200 body, error 500: failure 5xx", BODY_ERR(500), FO_FAIL, FK_5XX,
	 NULL},
	{"200 body, error 502: failure 5xx", BODY_ERR(502), FO_FAIL, FK_5XX,
	 NULL},
	{"200 body, error 408: failure 5xx", BODY_ERR(408), FO_FAIL, FK_5XX,
	 NULL},
	{"200 body, error 400: relayed", BODY_ERR(400), FO_CLIENT, FK_OTHER,
	 NULL},
	{"200 body, error 402: relayed", BODY_ERR(402), FO_CLIENT, FK_OTHER,
	 NULL},
	{"200 body, error 404: failure 5xx, as an error event",
	 BODY_ERR(404), FO_FAIL, FK_5XX, NULL},
	{"200 body, error 403: relayed", BODY_ERR(403), FO_CLIENT, FK_OTHER,
	 NULL},
	{"error event 500 before content: failure 5xx", EVENT_ERR(500),
	 FO_FAIL, FK_5XX, NULL},
	{"error event 502 before content: failure 5xx", EVENT_ERR(502),
	 FO_FAIL, FK_5XX, NULL},
	{"error event 404 before content: failure 5xx", EVENT_ERR(404),
	 FO_FAIL, FK_5XX, NULL},
	{"error event 408 before content: failure 5xx", EVENT_ERR(408),
	 FO_FAIL, FK_5XX, NULL},
	{"error event 400 before content: relayed", EVENT_ERR(400),
	 FO_CLIENT, FK_OTHER, NULL},
	{"error event 403 before content: relayed", EVENT_ERR(403),
	 FO_CLIENT, FK_OTHER, NULL},

	/* Malformed answers before content: fail over. */
	{"200 body that is not JSON: failure malformed",
	 A(200, BODY, PIN, 0, 0, AB_NONE, NET_OK, 0, 0, 0), FO_FAIL,
	 FK_MALFORMED, NULL},
	{"200 body over the cap: failure malformed",
	 A(200, BODY, PIN, 0, 0, AB_TOO_BIG, NET_BROKEN, 0, 0, 0), FO_FAIL,
	 FK_MALFORMED, NULL},
	{"malformed chunk before content: failure malformed",
	 A(200, SSE, PIN, 0, 0, AB_MALFORMED, NET_BROKEN, 0, 0, 0), FO_FAIL,
	 FK_MALFORMED, NULL},
	{"oversized event before content: failure reset",
	 A(200, SSE, PIN, 0, 0, AB_TOO_BIG, NET_BROKEN, 0, 0, 0), FO_FAIL,
	 FK_RESET, NULL},
	/* Before the first token: a drop right after a role-only chunk. */
	{"stream ends before content and [DONE]: failure reset",
	 A(200, SSE, PIN, 0, 0, AB_NONE, NET_OK, 0, 0, 0), FO_FAIL, FK_RESET,
	 NULL},

	/* Other 4xx: the client's or the account's, relayed, not counted. */
	{"400: relayed", BODY_OK(400, PIN), FO_CLIENT, FK_OTHER, NULL},
	{"401: relayed", BODY_OK(401, PIN), FO_CLIENT, FK_OTHER, NULL},
	{"402: relayed", BODY_OK(402, PIN), FO_CLIENT, FK_OTHER, NULL},
	{"403: relayed", BODY_OK(403, PIN), FO_CLIENT, FK_OTHER, NULL},
	{"408: relayed", BODY_OK(408, PIN), FO_CLIENT, FK_OTHER, NULL},
	{"413: relayed", BODY_OK(413, PIN), FO_CLIENT, FK_OTHER, NULL},
	{"422: relayed", BODY_OK(422, PIN), FO_CLIENT, FK_OTHER, NULL},
	{"302: relayed", BODY_OK(302, PIN), FO_CLIENT, FK_OTHER, NULL},

	/* Mid-stream: after content reached the client. */
	{"stall after content: mid-stream",
	 A(200, SSE, PIN, 1, 0, AB_STALL, NET_BROKEN, 0, 0, 0), FO_MID,
	 FK_MID_STREAM, STALLED},
	{"drop after content: mid-stream",
	 A(200, SSE, PIN, 1, 0, AB_NONE, NET_BROKEN, 0, 0, 0), FO_MID,
	 FK_MID_STREAM, EARLY},
	{"clean end without [DONE] after content: mid-stream",
	 A(200, SSE, PIN, 1, 0, AB_NONE, NET_OK, 0, 0, 0), FO_MID,
	 FK_MID_STREAM, EARLY},
	{"error event after content: mid-stream",
	 A(200, SSE, PIN, 1, 0, AB_ERROR_EVENT, NET_BROKEN, 0, 1, 500),
	 FO_MID, FK_MID_STREAM, EARLY},
	{"error event 429 after content: mid-stream, not a retry",
	 A(200, SSE, PIN, 1, 0, AB_ERROR_EVENT, NET_BROKEN, 0, 1, 429),
	 FO_MID, FK_MID_STREAM, EARLY},
	{"malformed chunk after content: mid-stream",
	 A(200, SSE, PIN, 1, 0, AB_MALFORMED, NET_BROKEN, 0, 0, 0), FO_MID,
	 FK_MID_STREAM, EARLY},
	{"finish_reason and usage, no [DONE], clean end: complete",
	 FINISHED(AB_NONE, NET_OK), FO_OK, FK_OTHER, NULL},
	{"finish_reason, then the line breaks: complete",
	 FINISHED(AB_NONE, NET_BROKEN), FO_OK, FK_OTHER, NULL},
	{"finish_reason, then a malformed chunk: mid-stream",
	 FINISHED(AB_MALFORMED, NET_BROKEN), FO_MID, FK_MID_STREAM, EARLY},
	{"finish_reason, then a stall: mid-stream",
	 FINISHED(AB_STALL, NET_BROKEN), FO_MID, FK_MID_STREAM, STALLED},
	{"[DONE] then a broken transfer: mid-stream",
	 A(200, SSE, PIN, 1, 1, AB_NONE, NET_BROKEN, 0, 0, 0), FO_MID,
	 FK_MID_STREAM, BADLY},
	{"[DONE] then an oversized event: mid-stream",
	 A(200, SSE, PIN, 1, 1, AB_TOO_BIG, NET_BROKEN, 0, 0, 0), FO_MID,
	 FK_MID_STREAM, BADLY},
	{"timeout after content: mid-stream",
	 A(200, SSE, PIN, 1, 0, AB_TIMEOUT, NET_BROKEN, 0, 0, 0), FO_MID,
	 FK_MID_STREAM, EARLY},

	/* REQUEST_TIMEOUT_MS: final, a timeout, in any phase. */
	{"request deadline before any byte",
	 A(0, BODY, PIN, 0, 0, AB_DEADLINE, NET_BROKEN, 0, 0, 0),
	 FO_DEADLINE, FK_TIMEOUT, NULL},
	{"request deadline during a padded 200",
	 A(200, BODY, PIN, 0, 0, AB_DEADLINE, NET_BROKEN, 0, 0, 0),
	 FO_DEADLINE, FK_TIMEOUT, NULL},
	{"request deadline mid-stream",
	 A(200, SSE, PIN, 1, 0, AB_DEADLINE, NET_BROKEN, 0, 0, 0),
	 FO_DEADLINE, FK_TIMEOUT, NULL},
	{"client gone wins over the deadline",
	 A(200, SSE, PIN, 1, 0, AB_GONE, NET_BROKEN, 0, 0, 0), FO_GONE,
	 FK_OTHER, NULL},

	/* Client disconnect, in any phase: no provider failure. */
	{"client gone before the answer",
	 A(0, BODY, PIN, 0, 0, AB_GONE, NET_BROKEN, 0, 0, 0), FO_GONE,
	 FK_OTHER, NULL},
	{"client gone during a 503",
	 A(503, BODY, PIN, 0, 0, AB_GONE, NET_BROKEN, 0, 0, 0), FO_GONE,
	 FK_OTHER, NULL},
	{"client gone mid-stream",
	 A(200, SSE, PIN, 1, 0, AB_GONE, NET_BROKEN, 0, 0, 0), FO_GONE,
	 FK_OTHER, NULL},
};

static void
test_classify(void)
{
	char what[200];
	size_t i;

	for (i = 0; i < NROWS(classify_rows); i++) {
		const struct classify_row *r = &classify_rows[i];
		struct failover_verdict v = failover_classify(&r->a);
		bool msg_ok = r->mid_msg == NULL ?
				      v.mid_msg == NULL :
				      v.mid_msg != NULL &&
					  strcmp(v.mid_msg, r->mid_msg) == 0;

		snprintf(what, sizeof(what), "classify: %s", r->rule);
		T_ASSERT(what,
			 v.out == r->out && v.kind == r->kind && msg_ok);
	}
}

struct next_row {
	const char *rule;
	enum failover_outcome out;
	int attempts, max_attempts;
	size_t n429, n_delays;
	enum failover_step step;
};

static const struct next_row next_rows[] = {
	{"ok is final", FO_OK, 1, 4, 0, 3, FAILOVER_STOP},
	{"a relayed 4xx is final", FO_CLIENT, 1, 4, 0, 3, FAILOVER_STOP},
	{"client gone: no further attempt", FO_GONE, 1, 4, 0, 3,
	 FAILOVER_STOP},
	{"mid-stream is final", FO_MID, 1, 4, 0, 3, FAILOVER_STOP},
	{"request deadline is final, never retried", FO_DEADLINE, 1, 4, 0,
	 3, FAILOVER_STOP},
	{"failure with attempts left: fail over", FO_FAIL, 1, 4, 0, 3,
	 FAILOVER_RETRY},
	{"failure, last attempt left: fail over", FO_FAIL, 3, 4, 0, 0,
	 FAILOVER_RETRY},
	{"failure at MAX_ATTEMPTS: stop", FO_FAIL, 4, 4, 0, 3,
	 FAILOVER_STOP},
	{"429 with delays left: wait", FO_429, 1, 4, 0, 3,
	 FAILOVER_WAIT_429},
	{"429, third delay: wait", FO_429, 3, 4, 2, 3, FAILOVER_WAIT_429},
	{"429 with delays used up: relay it", FO_429, 2, 4, 3, 3,
	 FAILOVER_STOP},
	{"429 at MAX_ATTEMPTS: relay it", FO_429, 4, 4, 0, 3,
	 FAILOVER_STOP},
	{"429 with no delays configured: relay it", FO_429, 1, 4, 0, 0,
	 FAILOVER_STOP},
};

static void
test_next(void)
{
	char what[200];
	size_t i;

	for (i = 0; i < NROWS(next_rows); i++) {
		const struct next_row *r = &next_rows[i];

		snprintf(what, sizeof(what), "next: %s", r->rule);
		T_ASSERT(what, failover_next(r->out, r->attempts,
					     r->max_attempts, r->n429,
					     r->n_delays) == r->step);
	}
}

/* docs/design.md 12.3: which 429 is a provider 429 (pressure), and
 * when a turn moves at once instead of waiting. */
struct p429_row {
	const char *rule;
	bool pinned;
	enum failover_named named;
	bool platform_limit, want;
};

static const struct p429_row p429_rows[] = {
	{"a named provider, pinned", true, FAILOVER_NAMED, false, true},
	{"a named provider, unpinned", false, FAILOVER_NAMED, false, true},
	{"provider_name null: OpenRouter itself, the account", true,
	 FAILOVER_NAMED_NULL, false, false},
	{"no name, pinned: only that provider could have served it", true,
	 FAILOVER_NAMED_ABSENT, false, true},
	{"no name, unpinned: nobody to blame", false, FAILOVER_NAMED_ABSENT,
	 false, false},
	{"no name, OpenRouter's own rate-limit headers: the account", true,
	 FAILOVER_NAMED_ABSENT, true, false},
	{"a name wins over rate-limit headers", true, FAILOVER_NAMED, true,
	 true},
};

struct move_row {
	const char *rule;
	bool provider_429, warm, have_next;
	int attempts, max_attempts;
	bool want;
};

static const struct move_row move_rows[] = {
	{"no warm provider, provider 429: moves at once", true, false, true, 1,
	 4, true},
	{"warm: retries its own provider (its cache is there)", true, true,
	 true, 1, 4, false},
	{"account 429: not pressure, waits (docs/design.md section 5)", false,
	 false, true,
	 1, 4, false},
	{"nowhere to go (all cooling or under pressure): waits", true, false,
	 false, 1, 4, false},
	{"attempts used up: stops", true, false, true, 4, 4, false},
	{"the last attempt left: moves", true, false, true, 3, 4, true},
};

static void
test_429_pressure(void)
{
	char what[200];
	size_t i;

	for (i = 0; i < NROWS(p429_rows); i++) {
		const struct p429_row *r = &p429_rows[i];

		snprintf(what, sizeof(what), "provider 429: %s", r->rule);
		T_ASSERT(what, failover_provider_429(r->pinned, r->named,
						     r->platform_limit) ==
				       r->want);
	}
	for (i = 0; i < NROWS(move_rows); i++) {
		const struct move_row *r = &move_rows[i];

		snprintf(what, sizeof(what), "429 move: %s", r->rule);
		T_ASSERT(what, failover_429_moves(r->provider_429, r->warm,
						  r->have_next, r->attempts,
						  r->max_attempts) == r->want);
	}
}

struct delay_row {
	const char *rule;
	int delay_s, retry_after_s;
	int64_t jitter_ms, want_ms;
};

static const struct delay_row delay_rows[] = {
	{"no Retry-After: the configured delay", 2, -1, 0, 2000},
	{"Retry-After 0: the configured delay", 2, 0, 0, 2000},
	{"larger Retry-After wins", 2, 5, 0, 5000},
	{"smaller Retry-After loses", 8, 5, 0, 8000},
	{"equal Retry-After", 4, 4, 0, 4000},
	{"Retry-After capped at 30 s", 2, 60, 0, 30000},
	{"Retry-After 31 capped at 30 s", 2, 31, 0, 30000},
	{"Retry-After 30 is not cut", 2, 30, 0, 30000},
	{"the cap is for Retry-After only", 40, 5, 0, 40000},
	{"jitter is added", 2, -1, 250, 2250},
	{"jitter is added to a capped Retry-After", 2, 600, 7, 30007},
};

static void
test_delay(void)
{
	char what[200];
	size_t i;

	for (i = 0; i < NROWS(delay_rows); i++) {
		const struct delay_row *r = &delay_rows[i];

		snprintf(what, sizeof(what), "delay_429: %s", r->rule);
		T_ASSERT(what, failover_delay_429_ms(r->delay_s,
						     r->retry_after_s,
						     r->jitter_ms) ==
				       r->want_ms);
	}
}

struct lag_row {
	const char *rule;
	bool pinned;
	int64_t t_start, t_first, slow_ms;
	bool want;
};

static const struct lag_row lag_rows[] = {
	{"fast first token: no lag", PIN, 1000, 1050, 100, false},
	{"first token at the threshold: no lag", PIN, 1000, 1100, 100,
	 false},
	{"first token past the threshold: lag", PIN, 1000, 1101, 100, true},
	{"no first token: no lag", PIN, 1000, 0, 100, false},
	{"unpinned: never lag", NOPIN, 1000, 9000, 100, false},
};

static void
test_lagged(void)
{
	char what[200];
	size_t i;

	for (i = 0; i < NROWS(lag_rows); i++) {
		const struct lag_row *r = &lag_rows[i];

		snprintf(what, sizeof(what), "lagged: %s", r->rule);
		T_ASSERT(what, failover_lagged(r->pinned, r->t_start,
					       r->t_first, r->slow_ms) ==
				       r->want);
	}
}

struct count_row {
	enum failover_kind kind;
	const char *name;	/* failover_kind_name() */
	size_t counter;		/* offsetof the stats_delta member bumped */
};

static const struct count_row count_rows[] = {
	{FK_TIMEOUT, "timeout", offsetof(struct stats_delta, etimeout)},
	{FK_5XX, "5xx", offsetof(struct stats_delta, e5xx)},
	{FK_CONNECT, "connect", offsetof(struct stats_delta, e5xx)},
	{FK_RESET, "reset", offsetof(struct stats_delta, e5xx)},
	{FK_MID_STREAM, "mid_stream", offsetof(struct stats_delta, emid)},
	{FK_SLOW, "slow", offsetof(struct stats_delta, eslow)},
	{FK_MALFORMED, "malformed", offsetof(struct stats_delta, eother)},
	{FK_NO_ENDPOINT, "no_endpoint",
	 offsetof(struct stats_delta, eother)},
	{FK_OTHER, "other", offsetof(struct stats_delta, eother)},
};

/* The counters failover_count() may touch; all the others stay 0. */
static const size_t counters[] = {
	offsetof(struct stats_delta, requests),
	offsetof(struct stats_delta, ok),
	offsetof(struct stats_delta, e429),
	offsetof(struct stats_delta, e5xx),
	offsetof(struct stats_delta, etimeout),
	offsetof(struct stats_delta, eslow),
	offsetof(struct stats_delta, emid),
	offsetof(struct stats_delta, eabort),
	offsetof(struct stats_delta, eother),
	offsetof(struct stats_delta, retries_429),
	offsetof(struct stats_delta, failovers),
	offsetof(struct stats_delta, trips),
	offsetof(struct stats_delta, off_pin),
};

static int64_t
at(const struct stats_delta *d, size_t off)
{
	int64_t v;

	memcpy(&v, (const char *)d + off, sizeof(v));
	return v;
}

static void
test_count(void)
{
	char what[200];
	size_t i, j;

	for (i = 0; i < NROWS(count_rows); i++) {
		const struct count_row *r = &count_rows[i];
		struct stats_delta d;
		bool only = true;

		memset(&d, 0, sizeof(d));
		failover_count(&d, r->kind);
		failover_count(&d, r->kind);	/* a request counts once */
		for (j = 0; j < NROWS(counters); j++)
			if (counters[j] != r->counter && at(&d, counters[j]))
				only = false;
		snprintf(what, sizeof(what),
			 "count: %s sets its counter to 1 (twice met, once counted) and no other", r->name);
		T_ASSERT(what, at(&d, r->counter) == 1 && only);
		snprintf(what, sizeof(what), "kind name: %s", r->name);
		T_ASSERT(what, strcmp(failover_kind_name(r->kind), r->name) == 0);
	}
}

static void
test_breaker_counting(void)
{
	struct rec_failure f;
	struct rec_cooldown trip, sentinel;

	memset(&f, 0, sizeof(f));
	memset(&sentinel, 0x33, sizeof(sentinel));
	trip = sentinel;
	T_ASSERT("1st failure of 3: no trip",
	         failover_breaker_fail(&f, NULL, "503", 100, 3, 600, &trip) == BREAKER_COUNTED);
	T_ASSERT("1st failure: count 1, last and reason set",
	         f.count == 1 && f.last == 100 && strcmp(f.reason, "503") == 0);
	T_ASSERT("no trip leaves *trip untouched",
	         memcmp(&trip, &sentinel, sizeof(trip)) == 0);
	T_ASSERT("2nd failure of 3: no trip",
	         failover_breaker_fail(&f, NULL, "timeout", 110, 3, 600, &trip) == BREAKER_COUNTED);
	T_ASSERT("2nd failure: count 2, reason is the latest",
	         f.count == 2 && f.last == 110 &&
	             strcmp(f.reason, "timeout") == 0);
	T_ASSERT("3rd failure of 3: trips",
	         failover_breaker_fail(&f, NULL, "502", 120, 3, 600, &trip) == BREAKER_TRIPPED);
	T_ASSERT("trip: until = now + cooldown", trip.until == 720);
	T_ASSERT("trip: reason is the tripping failure's",
	         strcmp(trip.reason, "502") == 0);
	T_ASSERT("trip: count back to 0, last still set",
	         f.count == 0 && f.last == 120);
	T_ASSERT("after a trip: next failure counts from 1, no trip",
	         failover_breaker_fail(&f, NULL, "503", 130, 3, 600, &trip) == BREAKER_COUNTED && f.count == 1);
	T_ASSERT("...2, no trip",
	         failover_breaker_fail(&f, NULL, "503", 131, 3, 600, &trip) == BREAKER_COUNTED && f.count == 2);
	T_ASSERT("...3 trips again with the new time",
	         failover_breaker_fail(&f, NULL, "503", 132, 3, 600, &trip) == BREAKER_TRIPPED &&
	             trip.until == 732 && f.count == 0);

	failover_breaker_fail(&f, NULL, "503", 140, 3, 600, &trip);
	failover_breaker_fail(&f, NULL, "503", 141, 3, 600, &trip);
	failover_breaker_ok(&f);
	T_ASSERT("success resets the count", f.count == 0);
	T_ASSERT("after a success: two failures do not trip",
	         failover_breaker_fail(&f, NULL, "x", 150, 3, 600, &trip) == BREAKER_COUNTED &&
	             failover_breaker_fail(&f, NULL, "x", 151, 3, 600, &trip) == BREAKER_COUNTED &&
	             f.count == 2);

	memset(&f, 0, sizeof(f));
	T_ASSERT("fail_limit 1: the first failure trips",
	         failover_breaker_fail(&f, NULL, "524", 1000, 1, 30, &trip) == BREAKER_TRIPPED &&
	             trip.until == 1030 && f.count == 0);

	/* A count already past the limit (limit lowered in the config). */
	memset(&f, 0, sizeof(f));
	f.count = 7;
	T_ASSERT("count above the limit trips on the next failure",
	         failover_breaker_fail(&f, NULL, "503", 5, 3, 10, &trip) == BREAKER_TRIPPED && trip.until == 15 &&
	             f.count == 0);
}

static void
test_breaker_reason(void)
{
	struct rec_failure f;
	struct rec_cooldown trip;
	char longr[200];

	memset(longr, 'r', sizeof(longr) - 1);
	longr[sizeof(longr) - 1] = '\0';
	memset(&f, 0, sizeof(f));
	T_ASSERT("long reason: trips",
	         failover_breaker_fail(&f, NULL, longr, 1, 1, 1, &trip) == BREAKER_TRIPPED);
	T_ASSERT("long reason: failure reason cut, NUL-terminated",
	         strlen(f.reason) == REC_REASON_MAX - 1);
	T_ASSERT("long reason: cooldown reason cut, NUL-terminated",
	         strlen(trip.reason) == REC_REASON_MAX - 1);
}

static void
test_breaker_cooling(void)
{
	struct rec_cooldown c;

	memset(&c, 0, sizeof(c));
	c.until = 1000;
	T_ASSERT("cooling one second before until", failover_breaker_cooling(&c, 999));
	T_ASSERT("not cooling at until", !failover_breaker_cooling(&c, 1000));
	T_ASSERT("not cooling after until", !failover_breaker_cooling(&c, 1001));
	T_ASSERT("NULL cooldown is not cooling", !failover_breaker_cooling(NULL, 0));
	memset(&c, 0, sizeof(c));
	T_ASSERT("zeroed cooldown is not cooling at time 0",
	         !failover_breaker_cooling(&c, 0));
	c.until = -5;
	T_ASSERT("negative until is not cooling at 0", !failover_breaker_cooling(&c, 0));
	T_ASSERT("negative until is cooling before it",
	         failover_breaker_cooling(&c, -6));
}

/* A failure on a provider whose stored cooldown is until (0: none) at
 * now, with count consecutive failures before it and a limit of 3. */
struct cooled_row {
	const char *rule;
	bool has_cd;
	int64_t until, now;
	int count;
	enum failover_breaker want;
	int count_after;
	bool trip_written;
};

static const struct cooled_row cooled_rows[] = {
	{"no cooldown: counted", false, 0, 100, 0, BREAKER_COUNTED, 1, false},
	{"no cooldown, at the limit: trips", false, 0, 100, 2,
	 BREAKER_TRIPPED, 0, true},
	{"cooling: not counted", true, 700, 100, 0, BREAKER_COOLING, 0, false},
	{"cooling, one short of the limit: no second trip", true, 700, 100, 2,
	 BREAKER_COOLING, 2, false},
	{"cooling a second more: still not counted", true, 101, 100, 2,
	 BREAKER_COOLING, 2, false},
	{"cooldown ends at now: counted again", true, 100, 100, 0,
	 BREAKER_COUNTED, 1, false},
	{"cooldown over, at the limit: trips again", true, 50, 100, 2,
	 BREAKER_TRIPPED, 0, true},
};

static void
test_breaker_cooled(void)
{
	struct rec_failure f;
	struct rec_cooldown cd, trip, sentinel;
	char what[160];
	size_t i;

	memset(&sentinel, 0x33, sizeof(sentinel));
	for (i = 0; i < NROWS(cooled_rows); i++) {
		const struct cooled_row *r = &cooled_rows[i];
		enum failover_breaker got;

		memset(&f, 0, sizeof(f));
		f.count = r->count;
		f.last = 7;
		memset(&cd, 0, sizeof(cd));
		cd.until = r->until;
		trip = sentinel;
		got = failover_breaker_fail(&f, r->has_cd ? &cd : NULL, "503",
					    r->now, 3, 600, &trip);
		snprintf(what, sizeof(what), "breaker, cooldown: %s", r->rule);
		T_ASSERT(what, got == r->want && f.count == r->count_after &&
				       (memcmp(&trip, &sentinel,
					       sizeof(trip)) != 0) ==
					       r->trip_written);
		snprintf(what, sizeof(what),
			 "breaker, cooldown: %s: last failure %s", r->rule,
			 r->want == BREAKER_COOLING ? "untouched" : "now");
		T_ASSERT(what, f.last == (r->want == BREAKER_COOLING ? 7 :
								       r->now));
	}
}

int
main(void)
{
	test_classify();
	test_next();
	test_429_pressure();
	test_delay();
	test_lagged();
	test_count();
	test_breaker_counting();
	test_breaker_reason();
	test_breaker_cooling();
	test_breaker_cooled();
	return T_REPORT();
}
