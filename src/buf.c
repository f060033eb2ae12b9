/*
 * buf.c - growable byte buffer.  The buffer owns p; every operation keeps
 * p[len] == '\0' once anything was added.  Growth doubles, checked for
 * overflow before adding (docs/style.md 4).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

enum orgw_err
buf_add(struct buf *b, const void *data, size_t n)
{
	size_t need, cap;
	char *p;

	if (n > SIZE_MAX - b->len - 1)
		return ORGW_ETOOBIG;
	need = b->len + n + 1;
	if (b->max && b->len + n > b->max)
		return ORGW_ETOOBIG;
	if (need > b->cap) {
		cap = b->cap ? b->cap : 256;
		while (cap < need) {
			if (cap > SIZE_MAX / 2)
				return ORGW_ETOOBIG;
			cap *= 2;
		}
		if ((p = realloc(b->p, cap)) == NULL)
			return ORGW_ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return ORGW_OK;
}

enum orgw_err
buf_adds(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

void
buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		buf_reset(b);
		return;
	}
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
	b->p[b->len] = '\0';
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
}

void
buf_free(struct buf *b)
{
	if (b == NULL)
		return;
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

bool
buf_join(char *dst, size_t n, char sep, ...)
{
	va_list ap;
	const char *part;
	size_t len = 0, k;
	bool fit = true, first = true;

	va_start(ap, sep);
	while (fit && (part = va_arg(ap, const char *)) != NULL) {
		if (!first && sep != '\0') {
			if (len + 1 >= n) {
				fit = false;
				break;
			}
			dst[len++] = sep;
		}
		first = false;
		k = strlen(part);
		if (k >= n - len) {
			k = n - len - 1;
			fit = false;
		}
		memcpy(dst + len, part, k);
		len += k;
	}
	va_end(ap);
	dst[len] = '\0';
	return fit;
}
