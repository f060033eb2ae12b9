/*
 * sse.h - incremental Server-Sent Events splitter (pure).
 *
 * Upstream bytes arrive in arbitrary pieces; sse_feed() keeps the partial
 * event and hands every complete event (ended by a blank line, LF or
 * CRLF, per the WHATWG event-stream grammar) to a callback.  OpenRouter
 * sends ": OPENROUTER PROCESSING" comments, "data: {json}" events and a
 * final "data: [DONE]" (docs/upstream.md section 5).
 */
#ifndef ORGW_SSE_H
#define ORGW_SSE_H

#include "buf.h"

enum sse_kind {
	SSE_COMMENT,	/* only ':' comment lines */
	SSE_DATA,	/* has data: lines; data holds the payload */
	SSE_DONE,	/* data is exactly "[DONE]" */
	SSE_OTHER,	/* event:/id:/retry: only, or unknown fields */
};

/* The bytes are the splitter's, lent to the callback until it returns;
 * it may change them in place (chat.c masks the upstream key). */
struct sse_event {
	enum sse_kind kind;
	char *raw;		/* the whole event incl. its blank line */
	size_t raw_len;
	char *data;		/* data payload, NUL-terminated; "" if none */
	size_t data_len;
};

struct sse {
	struct buf in;		/* bytes not yet part of a complete event */
	struct buf data;	/* scratch for the joined data lines */
	size_t scan;		/* in.p[0..scan) holds no event end */
	size_t max_event;	/* ORGW_ETOOBIG when an event grows past it */
	char nodata[1];		/* the "" of an event without data */
};

/* Prepares s; max_event 0 means 16 MiB.  Pair with sse_free(). */
void sse_init(struct sse *s, size_t max_event);

/* Frees what s holds; s may be sse_init'ed again. */
void sse_free(struct sse *s);

/*
 * Appends n bytes and calls fn for each complete event, in order.  The
 * event's pointers are borrowed until fn returns.  fn returns 0 to go on;
 * any other value stops and is passed back in *stopped (when non-NULL)
 * with ORGW_OK.  Errors: ORGW_ETOOBIG (event over max_event), ORGW_ENOMEM.
 */
enum orgw_err sse_feed(struct sse *s, const char *p, size_t n,
		       int (*fn)(void *arg, const struct sse_event *ev),
		       void *arg, int *stopped);

#endif
