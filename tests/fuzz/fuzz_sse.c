/*
 * fuzz_sse.c - libFuzzer target for sse_feed() (docs/style.md section 11:
 * random chunking).
 *
 * Input layout: byte 0 = low 4 bits: number of cut points k; high 4 bits:
 * max_event choice and the event after which the callback stops once.
 * Then 2*k bytes of cut positions (16-bit, taken modulo the payload
 * length), then the payload: the upstream byte stream.
 *
 * The payload is fed four ways: whole, cut at the k points, one byte at a
 * time (payloads up to 4 KiB), and whole again with the callback stopping
 * once and empty feeds resuming.  Invariants (a violation aborts):
 *   - every way delivers the same events (kind, data, raw) and ends with
 *     the same result (ORGW_OK or ORGW_ETOOBIG);
 *   - on ORGW_OK the raw events put together, followed by what is still
 *     buffered, are the payload, and a blank line fed after it flushes
 *     that rest out whole, in events that hold more than blanks exactly
 *     when the rest did (it was part of an event);
 *   - each event: data NUL-terminated at data_len; DONE iff data is
 *     "[DONE]" among data events; COMMENT/OTHER carry no data; raw ends
 *     with a blank line and is within max_event.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct run {
	struct buf log;		/* canonical record of every event */
	struct buf raws;	/* raw events concatenated */
	size_t max_event;
	size_t n;		/* events seen */
	size_t stop_at;		/* stop once at this event (1-based), 0 never */
};

static void
put(struct buf *b, const void *p, size_t n)
{
	if (buf_add(b, p, n) != ORGW_OK)
		abort();
}

/* True when some line of p[0..n) starts with "data:". */
static bool
has_data_line(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i + 5 <= n; i++)
		if ((i == 0 || p[i - 1] == '\n') && memcmp(p + i, "data:", 5) == 0)
			return true;
	return false;
}

static int
on_event(void *arg, const struct sse_event *ev)
{
	struct run *r = arg;
	size_t hdr[3];

	if (ev->data == NULL || ev->raw == NULL || ev->raw_len < 2 ||
	    ev->data[ev->data_len] != '\0' || ev->raw_len > r->max_event)
		abort();
	if (ev->raw[ev->raw_len - 1] != '\n' ||
	    (ev->raw[ev->raw_len - 2] != '\n' &&
	     (ev->raw_len < 3 || ev->raw[ev->raw_len - 2] != '\r' ||
	      ev->raw[ev->raw_len - 3] != '\n')))
		abort();
	switch (ev->kind) {
	case SSE_COMMENT:
	case SSE_OTHER:
		if (ev->data_len != 0)
			abort();
		break;
	case SSE_DONE:
		if (ev->data_len != 6 || memcmp(ev->data, "[DONE]", 6) != 0)
			abort();
		break;
	case SSE_DATA:
		if (ev->data_len == 6 && memcmp(ev->data, "[DONE]", 6) == 0)
			abort();
		if (!has_data_line(ev->raw, ev->raw_len))
			abort();
		break;
	default:
		abort();
	}
	hdr[0] = (size_t)ev->kind;
	hdr[1] = ev->data_len;
	hdr[2] = ev->raw_len;
	put(&r->log, hdr, sizeof(hdr));
	put(&r->log, ev->data, ev->data_len);
	put(&r->log, ev->raw, ev->raw_len);
	put(&r->raws, ev->raw, ev->raw_len);
	r->n++;
	if (r->stop_at != 0 && r->n == r->stop_at) {
		r->stop_at = 0;
		return 3;
	}
	return 0;
}

static int
cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

static void
run_free(struct run *r)
{
	buf_free(&r->log);
	buf_free(&r->raws);
}

static bool
blank_only(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != '\r' && p[i] != '\n' && p[i] != ' ' && p[i] != '\t')
			return false;
	return true;
}

/*
 * Checks the leftover after a clean run against the payload, then ends
 * the stream with a blank line: the events that flushes out are the
 * rest followed by blanks (nothing is lost or left but blanks), and
 * they hold more than blanks exactly when the rest did (part of an
 * event was pending).  s is used up.
 */
static void
check_rest(struct sse *s, const struct run *r, const uint8_t *p, size_t n)
{
	struct run end = {0};
	size_t rest = s->in.len;
	bool blank;

	if (r->raws.len + s->in.len != n ||
	    (r->raws.len && memcmp(r->raws.p, p, r->raws.len) != 0) ||
	    (s->in.len && memcmp(s->in.p, p + r->raws.len, s->in.len) != 0))
		abort();
	blank = blank_only(s->in.p, s->in.len);
	if (rest + 2 > s->max_event)
		return;	/* the flushed event could be over the cap */
	end.max_event = s->max_event;
	if (sse_feed(s, "\n\n", 2, on_event, &end, NULL) != ORGW_OK ||
	    end.n == 0 || end.raws.len < rest ||
	    end.raws.len + s->in.len != rest + 2 ||
	    (rest && memcmp(end.raws.p, p + r->raws.len, rest) != 0) ||
	    !blank_only(end.raws.p + rest, end.raws.len - rest) ||
	    !blank_only(s->in.p, s->in.len) ||
	    blank_only(end.raws.p, end.raws.len) != blank)
		abort();
	run_free(&end);
}

static void
same(const struct run *a, enum orgw_err ea, const struct run *b,
     enum orgw_err eb)
{
	if (ea != eb || a->n != b->n || a->log.len != b->log.len ||
	    (a->log.len && memcmp(a->log.p, b->log.p, a->log.len) != 0))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t maxes[4] = {0, 16, 100, 4096};
	struct run whole = {0}, cut = {0}, bytes = {0}, stop = {0};
	struct sse s;
	size_t k, i, at, cuts[15], n, max_event;
	const uint8_t *p;
	enum orgw_err ew, ec, eb, es;
	int stopped = 0, guard;

	if (size < 1)
		return 0;
	k = data[0] & 0x0f;
	max_event = maxes[(data[0] >> 4) & 3];
	if (size < 1 + 2 * k)
		return 0;
	p = data + 1 + 2 * k;
	n = size - 1 - 2 * k;
	for (i = 0; i < k; i++)
		cuts[i] = n ? ((size_t)data[1 + 2 * i] << 8 |
		               data[2 + 2 * i]) % (n + 1)
		            : 0;
	qsort(cuts, k, sizeof(cuts[0]), cmp_size);

	/* whole */
	sse_init(&s, max_event);
	whole.max_event = cut.max_event = bytes.max_event = stop.max_event =
	    s.max_event;
	ew = sse_feed(&s, (const char *)p, n, on_event, &whole, &stopped);
	if (stopped != 0 || (ew != ORGW_OK && ew != ORGW_ETOOBIG))
		abort();
	if (ew == ORGW_OK)
		check_rest(&s, &whole, p, n);
	sse_free(&s);

	/* at the cut points */
	sse_init(&s, max_event);
	ec = ORGW_OK;
	for (i = 0, at = 0; i <= k && ec == ORGW_OK; i++) {
		size_t to = i < k ? cuts[i] : n;
		ec = sse_feed(&s, (const char *)p + at, to - at, on_event,
		              &cut, NULL);
		at = to;
	}
	same(&whole, ew, &cut, ec);
	if (ec == ORGW_OK)
		check_rest(&s, &cut, p, n);
	sse_free(&s);

	/* one byte at a time */
	if (n <= 4096) {
		sse_init(&s, max_event);
		eb = ORGW_OK;
		for (i = 0; i < n && eb == ORGW_OK; i++)
			eb = sse_feed(&s, (const char *)p + i, 1, on_event,
			              &bytes, NULL);
		same(&whole, ew, &bytes, eb);
		sse_free(&s);
	}

	/* stop once, then resume with empty feeds */
	if (ew == ORGW_OK) {
		stop.stop_at = (size_t)(data[0] >> 6) + 1;
		sse_init(&s, max_event);
		es = sse_feed(&s, (const char *)p, n, on_event, &stop, &stopped);
		for (guard = 0; es == ORGW_OK && stopped != 0; guard++) {
			if (stopped != 3 || guard > 1)
				abort();
			es = sse_feed(&s, NULL, 0, on_event, &stop, &stopped);
		}
		same(&whole, ew, &stop, es);
		check_rest(&s, &stop, p, n);
		sse_free(&s);
	}

	run_free(&whole);
	run_free(&cut);
	run_free(&bytes);
	run_free(&stop);
	return 0;
}
