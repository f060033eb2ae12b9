/*
 * test_sse.c - unit tests for sse.c, the incremental SSE splitter.
 *
 * The central property: however the byte stream is cut into sse_feed()
 * calls (one byte at a time, at every single split point, at every pair
 * of split points, in random chunk sizes), the callback sees the same
 * events, and the raw events put back together are the input.  Each run
 * is recorded as a canonical log (kind, data, raw of every event) and
 * the logs are compared byte for byte.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "sse.h"

/* A realistic OpenRouter-style stream with every line kind. */
static const char STREAM[] =
    ": OPENROUTER PROCESSING\n\n"		/* 0 comment */
    "data: {\"a\":1}\n\n"			/* 1 data */
    "data:{\"b\":2}\r\n\r\n"			/* 2 data, CRLF, no space */
    "data: line1\ndata: line2\n\n"		/* 3 multi-line data */
    "event: ping\nid: 7\n\n"			/* 4 other */
    "event: msg\ndata: x\n\n"			/* 5 event + data = data */
    "retry: 100\r\n\r\n"			/* 6 other, CRLF */
    ": c1\r\n: c2\r\n\r\n"			/* 7 two comments */
    ": keep\ndata:  two spaces\n\n"		/* 8 comment + data */
    "data: [DONE]\n\n";				/* 9 done */

struct want {
	enum sse_kind kind;
	const char *data;
	const char *raw;
};

static const struct want WANT[] = {
	{SSE_COMMENT, "", ": OPENROUTER PROCESSING\n\n"},
	{SSE_DATA, "{\"a\":1}", "data: {\"a\":1}\n\n"},
	{SSE_DATA, "{\"b\":2}", "data:{\"b\":2}\r\n\r\n"},
	{SSE_DATA, "line1\nline2", "data: line1\ndata: line2\n\n"},
	{SSE_OTHER, "", "event: ping\nid: 7\n\n"},
	{SSE_DATA, "x", "event: msg\ndata: x\n\n"},
	{SSE_OTHER, "", "retry: 100\r\n\r\n"},
	{SSE_COMMENT, "", ": c1\r\n: c2\r\n\r\n"},
	{SSE_DATA, " two spaces", ": keep\ndata:  two spaces\n\n"},
	{SSE_DONE, "[DONE]", "data: [DONE]\n\n"},
};
#define NWANT (sizeof(WANT) / sizeof(WANT[0]))

#define MAXEV 64

struct got {
	size_t n;
	enum sse_kind kind[MAXEV];
	char *data[MAXEV];
	size_t data_len[MAXEV];
	struct buf log;		/* canonical record of every event */
	struct buf raws;	/* the raw events concatenated */
	int bad;		/* an event broke the callback contract */
	size_t stop_at;		/* return stop_rc from event #stop_at (1-based) */
	int stop_rc;
};

static void
got_free(struct got *g)
{
	size_t i;

	for (i = 0; i < g->n && i < MAXEV; i++)
		free(g->data[i]);
	buf_free(&g->log);
	buf_free(&g->raws);
	memset(g, 0, sizeof(*g));
}

static int
collect(void *arg, const struct sse_event *ev)
{
	struct got *g = arg;
	char head[64];
	int n;

	if (ev->data == NULL || ev->raw == NULL || ev->data[ev->data_len] != '\0')
		g->bad = 1;
	if ((ev->kind == SSE_COMMENT || ev->kind == SSE_OTHER) &&
	    ev->data_len != 0)
		g->bad = 1;
	if (g->n < MAXEV) {
		g->kind[g->n] = ev->kind;
		g->data_len[g->n] = ev->data_len;
		if ((g->data[g->n] = malloc(ev->data_len + 1)) == NULL)
			abort();
		memcpy(g->data[g->n], ev->data, ev->data_len + 1);
	}
	g->n++;
	n = snprintf(head, sizeof(head), "%d %zu %zu\n", (int)ev->kind,
	             ev->data_len, ev->raw_len);
	if (buf_add(&g->log, head, (size_t)n) || buf_add(&g->log, ev->data,
	                                                  ev->data_len) ||
	    buf_add(&g->log, "\n", 1) ||
	    buf_add(&g->log, ev->raw, ev->raw_len) ||
	    buf_add(&g->raws, ev->raw, ev->raw_len))
		abort();
	if (g->stop_at && g->n == g->stop_at)
		return g->stop_rc;
	return 0;
}

/*
 * Whether s holds part of an unfinished event, seen from outside: a
 * blank line ends the stream, and what it flushes out holds more than
 * blanks exactly when part of an event was held (a stream that ended
 * there was cut mid-event).  Delivers that event: for the end of a
 * stream or of a test.
 */
static bool
held(struct sse *s)
{
	struct got e = {0};
	bool any = false;
	size_t i;

	if (sse_feed(s, "\n\n", 2, collect, &e, NULL) != ORGW_OK || e.n == 0)
		abort();
	for (i = 0; i < e.raws.len; i++)
		if (e.raws.p[i] != '\n' && e.raws.p[i] != '\r' &&
		    e.raws.p[i] != ' ' && e.raws.p[i] != '\t')
			any = true;
	got_free(&e);
	return any;
}

/* Feeds p[0..n) cut at the sorted positions cuts[0..ncuts); returns the
 * first error (or ORGW_OK).  g receives the events. */
static enum orgw_err
feed_cut(struct sse *s, const char *p, size_t n, const size_t *cuts,
         size_t ncuts, struct got *g)
{
	size_t i, at = 0, to;
	enum orgw_err err;

	for (i = 0; i <= ncuts; i++) {
		to = i < ncuts ? cuts[i] : n;
		if ((err = sse_feed(s, p + at, to - at, collect, g, NULL)))
			return err;
		at = to;
	}
	return ORGW_OK;
}

/* Runs the whole of p through a fresh splitter cut at cuts; true when
 * the log equals want_log and nothing is left pending. */
static int
same_as(const char *p, size_t n, const size_t *cuts, size_t ncuts,
        const struct buf *want_log)
{
	struct sse s;
	struct got g = {0};
	int ok;

	sse_init(&s, 0);
	ok = feed_cut(&s, p, n, cuts, ncuts, &g) == ORGW_OK && !g.bad &&
	     g.log.len == want_log->len &&
	     memcmp(g.log.p, want_log->p, g.log.len) == 0 && !held(&s);
	sse_free(&s);
	got_free(&g);
	return ok;
}

static void
test_whole(struct buf *ref)
{
	struct sse s;
	struct got g = {0};
	size_t i, n = sizeof(STREAM) - 1;
	int stopped = -1;

	sse_init(&s, 0);
	T_ASSERT("whole stream: feed ok",
	         sse_feed(&s, STREAM, n, collect, &g, &stopped) == ORGW_OK);
	T_ASSERT("whole stream: stopped set to 0", stopped == 0);
	T_ASSERT("whole stream: callback contract held", !g.bad);
	T_ASSERT("whole stream: 10 events", g.n == NWANT);
	for (i = 0; i < NWANT && i < g.n; i++) {
		char what[96];

		snprintf(what, sizeof(what), "event %zu: kind %d", i,
		         (int)WANT[i].kind);
		T_ASSERT(what, g.kind[i] == WANT[i].kind);
		snprintf(what, sizeof(what), "event %zu: data as expected", i);
		T_ASSERT(what, g.data_len[i] == strlen(WANT[i].data) &&
		                   strcmp(g.data[i], WANT[i].data) == 0);
	}
	T_ASSERT("whole stream: raws put together are the input",
	         g.raws.len == n && memcmp(g.raws.p, STREAM, n) == 0);
	T_ASSERT("whole stream: nothing pending after a clean end",
	         !held(&s));
	/* Each raw is the exact event text, blank line included. */
	{
		size_t off = 0, k;
		int ok = 1;

		for (k = 0; k < NWANT; k++) {
			size_t rl = strlen(WANT[k].raw);
			if (memcmp(g.raws.p + off, WANT[k].raw, rl) != 0)
				ok = 0;
			off += rl;
		}
		T_ASSERT("every raw covers its event incl. the blank line",
		         ok && off == n);
	}
	if (buf_add(ref, g.log.p, g.log.len))
		abort();
	sse_free(&s);
	got_free(&g);
}

static void
test_chunking(const struct buf *ref)
{
	size_t n = sizeof(STREAM) - 1, i, j, cuts[600], nc;
	int ok;
	uint32_t seed = 12345;

	/* one byte at a time */
	for (i = 0; i + 1 < n; i++)
		cuts[i] = i + 1;
	T_ASSERT("1 byte per feed gives the same events",
	         same_as(STREAM, n, cuts, n - 1, ref));

	/* every single split point, including empty first/last pieces */
	ok = 1;
	for (i = 0; i <= n && ok; i++) {
		cuts[0] = i;
		ok = same_as(STREAM, n, cuts, 1, ref);
	}
	T_ASSERT("every single split point gives the same events", ok);

	/* every pair of split points */
	ok = 1;
	for (i = 0; i <= n && ok; i++)
		for (j = i; j <= n && ok; j++) {
			cuts[0] = i;
			cuts[1] = j;
			ok = same_as(STREAM, n, cuts, 2, ref);
		}
	T_ASSERT("every pair of split points gives the same events", ok);

	/* random chunk sizes 0..7, 2000 runs, fixed seed */
	ok = 1;
	for (i = 0; i < 2000 && ok; i++) {
		size_t at = 0;

		nc = 0;
		for (;;) {
			seed = seed * 1103515245u + 12345u;
			at += (seed >> 16) % 8;
			if (at >= n)
				break;
			cuts[nc++] = at;
		}
		ok = same_as(STREAM, n, cuts, nc, ref);
	}
	T_ASSERT("2000 random chunkings give the same events", ok);
}

/* Feeds text whole and returns the events in g. */
static enum orgw_err
one(const char *text, struct got *g, struct sse *s)
{
	sse_init(s, 0);
	return sse_feed(s, text, strlen(text), collect, g, NULL);
}

static void
test_kinds(void)
{
	struct sse s;
	struct got g = {0};

	one("data:[DONE]\n\n", &g, &s);
	T_ASSERT("data:[DONE] without space is DONE",
	         g.n == 1 && g.kind[0] == SSE_DONE);
	sse_free(&s), got_free(&g);

	one("data: [DONE] \n\n", &g, &s);
	T_ASSERT("[DONE] with a trailing space is DATA",
	         g.n == 1 && g.kind[0] == SSE_DATA &&
	             strcmp(g.data[0], "[DONE] ") == 0);
	sse_free(&s), got_free(&g);

	one("data: [DONE]\ndata: more\n\n", &g, &s);
	T_ASSERT("[DONE] plus another data line is DATA",
	         g.n == 1 && g.kind[0] == SSE_DATA);
	sse_free(&s), got_free(&g);

	one("data:\n\n", &g, &s);
	T_ASSERT("empty data line is DATA with \"\"",
	         g.n == 1 && g.kind[0] == SSE_DATA && g.data_len[0] == 0 &&
	             g.data[0][0] == '\0');
	sse_free(&s), got_free(&g);

	one("data: a\ndata:\ndata: b\n\n", &g, &s);
	T_ASSERT("an empty middle data line joins as an empty line",
	         g.n == 1 && strcmp(g.data[0], "a\n\nb") == 0);
	sse_free(&s), got_free(&g);

	one("data: a\r\ndata: b\r\n\r\n", &g, &s);
	T_ASSERT("CRLF data lines join with \\n, CR dropped",
	         g.n == 1 && strcmp(g.data[0], "a\nb") == 0);
	sse_free(&s), got_free(&g);

	one(": c\nevent: e\n\n", &g, &s);
	T_ASSERT("comment + event line is OTHER",
	         g.n == 1 && g.kind[0] == SSE_OTHER);
	sse_free(&s), got_free(&g);

	one("foo: bar\n\n", &g, &s);
	T_ASSERT("unknown field is OTHER", g.n == 1 && g.kind[0] == SSE_OTHER);
	sse_free(&s), got_free(&g);

	one("id: 1\n\n", &g, &s);
	T_ASSERT("id only is OTHER", g.n == 1 && g.kind[0] == SSE_OTHER);
	sse_free(&s), got_free(&g);

	one("dat: x\n\n", &g, &s);
	T_ASSERT("dat: is not data", g.n == 1 && g.kind[0] == SSE_OTHER);
	sse_free(&s), got_free(&g);

	one("data: {\"x\":1}\n: trailing comment\n\n", &g, &s);
	T_ASSERT("data then comment is DATA with only the data",
	         g.n == 1 && g.kind[0] == SSE_DATA &&
	             strcmp(g.data[0], "{\"x\":1}") == 0);
	sse_free(&s), got_free(&g);

	one("data: a\n\r\n", &g, &s);
	T_ASSERT("LF then CRLF blank line ends an event",
	         g.n == 1 && strcmp(g.data[0], "a") == 0 && !held(&s));
	sse_free(&s), got_free(&g);

	one("data: a\r\n\n", &g, &s);
	T_ASSERT("CRLF then LF blank line ends an event",
	         g.n == 1 && strcmp(g.data[0], "a") == 0);
	sse_free(&s), got_free(&g);

	/* A NUL byte inside data is kept; data_len counts it. */
	sse_init(&s, 0);
	sse_feed(&s, "data: a\0b\n\n", 11, collect, &g, NULL);
	T_ASSERT("NUL inside data: data_len 3, bytes kept",
	         g.n == 1 && g.data_len[0] == 3 &&
	             memcmp(g.data[0], "a\0b", 4) == 0);
	sse_free(&s), got_free(&g);
}

static void
test_blank_runs(void)
{
	static const char in[] = "\n\ndata: a\n\n\n\n\r\ndata: b\n\n\n";
	struct sse s;
	struct got g = {0};
	size_t i, nd = 0, n = sizeof(in) - 1;
	int order = 1;

	one(in, &g, &s);
	for (i = 0; i < g.n; i++) {
		if (g.kind[i] == SSE_DATA) {
			if (strcmp(g.data[i], nd == 0 ? "a" : "b") != 0)
				order = 0;
			nd++;
		} else if (g.kind[i] == SSE_DONE) {
			order = 0;
		}
	}
	T_ASSERT("extra blank lines: exactly the data events a, b",
	         nd == 2 && order);
	T_ASSERT("extra blank lines: raws + leftover are the input",
	         g.raws.len + s.in.len == n &&
	             memcmp(g.raws.p, in, g.raws.len) == 0);
	T_ASSERT("extra blank lines: a lone trailing LF is not pending",
	         !held(&s));
	sse_free(&s), got_free(&g);
}

static void
test_stop(void)
{
	struct sse s;
	struct got g = {0};
	int stopped = -1;
	size_t n = sizeof(STREAM) - 1;

	sse_init(&s, 0);
	g.stop_at = 2;
	g.stop_rc = 7;
	T_ASSERT("stop: feed returns OK",
	         sse_feed(&s, STREAM, n, collect, &g, &stopped) == ORGW_OK);
	T_ASSERT("stop: *stopped is the callback's value", stopped == 7);
	T_ASSERT("stop: no event after the stopping one", g.n == 2);
	g.stop_at = 0;
	T_ASSERT("stop: the rest stays buffered; a later empty feed goes on",
	         sse_feed(&s, NULL, 0, collect, &g, &stopped) == ORGW_OK &&
	             stopped == 0);
	T_ASSERT("stop: all events seen in the end, once each",
	         g.n == NWANT && g.raws.len == n &&
	             memcmp(g.raws.p, STREAM, n) == 0);
	sse_free(&s), got_free(&g);

	sse_init(&s, 0);
	g.stop_at = 1;
	g.stop_rc = -1;
	T_ASSERT("stop with stopped == NULL is ok",
	         sse_feed(&s, STREAM, n, collect, &g, NULL) == ORGW_OK &&
	             g.n == 1);
	sse_free(&s), got_free(&g);
}

static void
test_limits(void)
{
	struct sse s;
	struct got g = {0};
	char ev[128];
	size_t i, err_at = 0, n;
	enum orgw_err err = ORGW_OK;

	sse_init(&s, 0);
	T_ASSERT("max_event 0 means 16 MiB", s.max_event == 16u * 1024 * 1024);
	sse_free(&s);

	/* "data: " + 25 x's + "\n\n" = 33 bytes: one over a max of 32. */
	n = (size_t)snprintf(ev, sizeof(ev), "data: %s\n\n",
	                     "xxxxxxxxxxxxxxxxxxxxxxxxx");
	T_ASSERT("fixture is 33 bytes", n == 33);

	sse_init(&s, 33);
	T_ASSERT("event of exactly max_event bytes passes (one feed)",
	         sse_feed(&s, ev, n, collect, &g, NULL) == ORGW_OK &&
	             g.n == 1);
	sse_free(&s), got_free(&g);

	sse_init(&s, 33);
	for (i = 0; i < n && err == ORGW_OK; i++)
		err = sse_feed(&s, ev + i, 1, collect, &g, NULL);
	T_ASSERT("event of exactly max_event bytes passes (byte-wise)",
	         err == ORGW_OK && g.n == 1);
	sse_free(&s), got_free(&g);

	sse_init(&s, 32);
	T_ASSERT("event one byte over max_event, one feed: ETOOBIG",
	         sse_feed(&s, ev, n, collect, &g, NULL) == ORGW_ETOOBIG);
	T_ASSERT("the oversized event is not delivered", g.n == 0);
	sse_free(&s), got_free(&g);

	sse_init(&s, 32);
	err = ORGW_OK;
	for (i = 0; i < n && err == ORGW_OK; i++)
		if ((err = sse_feed(&s, ev + i, 1, collect, &g, NULL)))
			err_at = i + 1;
	T_ASSERT("event one byte over max_event, byte-wise: ETOOBIG",
	         err == ORGW_ETOOBIG && g.n == 0);
	T_ASSERT("byte-wise: refused when the event completes", err_at == 33);
	sse_free(&s), got_free(&g);

	sse_init(&s, 16);
	err = ORGW_OK;
	err_at = 0;
	for (i = 0; i < n && err == ORGW_OK; i++)
		if ((err = sse_feed(&s, ev + i, 1, collect, &g, NULL)))
			err_at = i + 1;
	T_ASSERT("partial event past max_event: ETOOBIG at byte 17",
	         err == ORGW_ETOOBIG && err_at == 17);
	sse_free(&s), got_free(&g);

	/* Events before the oversized one are delivered either way. */
	sse_init(&s, 32);
	{
		char two[160];
		size_t m = (size_t)snprintf(two, sizeof(two),
		                            "data: ok\n\n%s", ev);
		T_ASSERT("small event then oversized: ETOOBIG",
		         sse_feed(&s, two, m, collect, &g, NULL) ==
		             ORGW_ETOOBIG);
		T_ASSERT("the small event before it was delivered",
		         g.n == 1 && strcmp(g.data[0], "ok") == 0);
	}
	sse_free(&s), got_free(&g);
}

static void
test_pending(void)
{
	struct sse s;
	struct got g = {0};

	sse_init(&s, 0);
	T_ASSERT("fresh splitter: nothing pending", !held(&s));
	sse_free(&s);

	sse_init(&s, 0);
	sse_feed(&s, "data: {\"a\"", 10, collect, &g, NULL);
	T_ASSERT("cut mid-line: no event yet", g.n == 0);
	T_ASSERT("cut mid-line: pending", held(&s));
	sse_free(&s), got_free(&g);

	sse_init(&s, 0);
	sse_feed(&s, "data: {\"a\"", 10, collect, &g, NULL);
	sse_feed(&s, ":1}\n", 4, collect, &g, NULL);
	T_ASSERT("cut after one newline: no event yet", g.n == 0);
	T_ASSERT("cut after one newline: still pending", held(&s));
	sse_free(&s), got_free(&g);

	sse_init(&s, 0);
	sse_feed(&s, "data: {\"a\"", 10, collect, &g, NULL);
	sse_feed(&s, ":1}\n", 4, collect, &g, NULL);
	sse_feed(&s, "\n", 1, collect, &g, NULL);
	T_ASSERT("blank line completes it: 1 event",
	         g.n == 1 && strcmp(g.data[0], "{\"a\":1}") == 0);
	T_ASSERT("blank line completes it: not pending", !held(&s));
	sse_free(&s), got_free(&g);

	sse_init(&s, 0);
	sse_feed(&s, "data: a\n\n\r\n \t", 13, collect, &g, NULL);
	T_ASSERT("whitespace-only leftover is not pending",
	         g.n == 1 && !held(&s));
	sse_free(&s), got_free(&g);

	sse_init(&s, 0);
	sse_feed(&s, "data: a\n\n:", 10, collect, &g, NULL);
	T_ASSERT("a lone ':' is pending", g.n == 1 && held(&s));
	sse_free(&s), got_free(&g);

	sse_init(&s, 0);
	sse_feed(&s, "data: cut", 9, collect, &g, NULL);
	sse_free(&s);
	T_ASSERT("sse_free empties the splitter", !held(&s));
	sse_free(&s);	/* what held() fed */
	sse_init(&s, 0);
	sse_feed(&s, "data: again\n\n", 13, collect, &g, NULL);
	T_ASSERT("a freed splitter can be initialised and used again",
	         g.n == 1 && strcmp(g.data[0], "again") == 0);
	sse_free(&s), got_free(&g);
}

/* A 1 MiB event in 997-byte pieces, then a small one (checks the
 * resumed scan finds an event end straddling two feeds). */
static void
test_big(void)
{
	struct sse s;
	struct got g = {0};
	struct buf in = {0};
	size_t i, n, at, len = 1024 * 1024;
	enum orgw_err err = ORGW_OK;
	char *x = malloc(len);

	if (x == NULL)
		abort();
	memset(x, 'q', len);
	if (buf_adds(&in, "data: ") || buf_add(&in, x, len) ||
	    buf_adds(&in, "\r\n\r\ndata: tail\n\n"))
		abort();
	n = in.len;
	sse_init(&s, 0);
	for (at = 0; at < n && err == ORGW_OK; at += 997)
		err = sse_feed(&s, in.p + at, at + 997 > n ? n - at : 997,
		               collect, &g, NULL);
	T_ASSERT("1 MiB event in 997-byte pieces: ok", err == ORGW_OK);
	T_ASSERT("1 MiB event: two events", g.n == 2);
	for (i = 0; g.n >= 1 && i < len; i++)
		if (g.data[0][i] != 'q')
			break;
	T_ASSERT("1 MiB event: data intact",
	         g.n >= 1 && g.data_len[0] == len && i == len);
	T_ASSERT("1 MiB event: tail event after it",
	         g.n == 2 && strcmp(g.data[1], "tail") == 0);
	sse_free(&s), got_free(&g);
	buf_free(&in);
	free(x);
}

int
main(void)
{
	struct buf ref = {0};

	test_whole(&ref);
	test_chunking(&ref);
	test_kinds();
	test_blank_runs();
	test_stop();
	test_limits();
	test_pending();
	test_big();
	buf_free(&ref);
	return T_REPORT();
}
