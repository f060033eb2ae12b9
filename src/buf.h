/*
 * buf.h - a growable byte buffer, always NUL-terminated after its bytes
 * (so JSON and text can be parsed in place).  Pure.
 */
#ifndef ORGW_BUF_H
#define ORGW_BUF_H

#include <stdbool.h>
#include <stddef.h>

#include "orgw.h"

struct buf {
	char *p;	/* malloc'd, owned by the buf; NULL while empty */
	size_t len;	/* bytes used, not counting the NUL */
	size_t cap;	/* bytes allocated */
	size_t max;	/* 0 = unlimited; else buf_add fails past max bytes */
};

/* Appends n bytes.  ORGW_ETOOBIG past b->max, ORGW_ENOMEM. */
enum orgw_err buf_add(struct buf *b, const void *data, size_t n);

/* Appends a NUL-terminated string. */
enum orgw_err buf_adds(struct buf *b, const char *s);

/* Drops the first n bytes (n <= len), keeping the rest. */
void buf_consume(struct buf *b, size_t n);

/* Empties b, keeping its memory. */
void buf_reset(struct buf *b);

/* Frees b's memory; b may be reused after.  NULL is a no-op. */
void buf_free(struct buf *b);

/*
 * The strings after sep, up to a NULL, joined with sep between them (no
 * separator when sep is '\0') into dst, n > 0 bytes, NUL-terminated:
 * what snprintf(dst, n, "%s:%s", ...) writes for a key or a path, without
 * a format to parse (some 1,000 instructions a call, and a request builds
 * about ten).  True when it fit; false when it was cut at n - 1 bytes,
 * as snprintf cuts.
 */
bool buf_join(char *dst, size_t n, char sep, ...)
	__attribute__((sentinel));

#endif
