/*
 * sse.c - incremental SSE splitter.
 *
 * Invariant: s->in holds the bytes after the last complete event, and
 * s->scan is how far they were already searched for an event end, so a
 * large event arriving in many small pieces is scanned once (linear),
 * not once per piece.
 */
#include <string.h>

#include "sse.h"

#define SSE_DEFAULT_MAX_EVENT (16u * 1024 * 1024)

void
sse_init(struct sse *s, size_t max_event)
{
	memset(s, 0, sizeof(*s));
	s->max_event = max_event ? max_event : SSE_DEFAULT_MAX_EVENT;
}

void
sse_free(struct sse *s)
{
	buf_free(&s->in);
	buf_free(&s->data);
	s->scan = 0;
}

/*
 * Finds the end of the first event in p[from..n): the index just after
 * the blank line that ends it, or 0 if there is none yet.  A blank line
 * is "\n\n", "\n\r\n"; a lone "\r" line end is not supported (no
 * OpenRouter stream uses it).
 */
static size_t
event_end(const char *p, size_t n, size_t from)
{
	size_t i;

	for (i = from; i < n; i++) {
		if (p[i] != '\n')
			continue;
		if (i + 1 < n && p[i + 1] == '\n')
			return i + 2;
		if (i + 2 < n && p[i + 1] == '\r' && p[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* Classifies one event and joins its data lines into s->data. */
static enum orgw_err
parse_event(struct sse *s, char *p, size_t n, struct sse_event *ev)
{
	size_t i = 0, eol, len;
	bool comment = false, data = false, other = false;
	const char *line, *v;
	enum orgw_err err;

	buf_reset(&s->data);
	while (i < n) {
		line = p + i;
		v = memchr(line, '\n', n - i);
		eol = v ? (size_t)(v - line) : n - i;
		i += eol + 1;
		len = eol;
		if (len && line[len - 1] == '\r')
			len--;
		if (len == 0)
			continue;
		if (line[0] == ':') {
			comment = true;
			continue;
		}
		if (len >= 5 && memcmp(line, "data:", 5) == 0) {
			v = line + 5;
			len -= 5;
			if (len && *v == ' ') {
				v++;
				len--;
			}
			if (data && (err = buf_add(&s->data, "\n", 1)))
				return err;
			if ((err = buf_add(&s->data, v, len)))
				return err;
			if (s->data.p == NULL && (err = buf_add(&s->data, "", 0)))
				return err;
			data = true;
			continue;
		}
		other = true;
	}
	ev->raw = p;
	ev->raw_len = n;
	s->nodata[0] = '\0';
	ev->data = data ? s->data.p : s->nodata;
	ev->data_len = data ? s->data.len : 0;
	if (data)
		ev->kind = (s->data.len == 6 &&
			    memcmp(s->data.p, "[DONE]", 6) == 0) ?
				   SSE_DONE : SSE_DATA;
	else if (comment && !other)
		ev->kind = SSE_COMMENT;
	else
		ev->kind = SSE_OTHER;
	return ORGW_OK;
}

enum orgw_err
sse_feed(struct sse *s, const char *p, size_t n,
	 int (*fn)(void *arg, const struct sse_event *ev), void *arg,
	 int *stopped)
{
	struct sse_event ev;
	enum orgw_err err;
	size_t start = 0, end, from;
	int rc;

	if (stopped)
		*stopped = 0;
	if ((err = buf_add(&s->in, p, n)))
		return err;
	/* Step back two bytes: an event end may straddle two feeds. */
	from = s->scan > 2 ? s->scan - 2 : 0;
	while ((end = event_end(s->in.p + start, s->in.len - start,
				from)) != 0) {
		/* The cap holds for complete events too, so the outcome
		 * does not depend on how the stream was cut into feeds. */
		if (end > s->max_event) {
			buf_consume(&s->in, start);
			s->scan = 0;
			return ORGW_ETOOBIG;
		}
		if ((err = parse_event(s, s->in.p + start, end, &ev)))
			return err;
		rc = fn(arg, &ev);
		start += end;
		from = 0;
		if (rc) {
			if (stopped)
				*stopped = rc;
			buf_consume(&s->in, start);
			s->scan = 0;
			return ORGW_OK;
		}
	}
	buf_consume(&s->in, start);
	s->scan = s->in.len;
	if (s->in.len > s->max_event)
		return ORGW_ETOOBIG;
	return ORGW_OK;
}
