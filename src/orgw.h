/*
 * orgw.h - things every orgw module shares: the error enum and a few
 * limits.  No I/O here; safe to include from the pure core.
 */
#ifndef ORGW_H
#define ORGW_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

enum orgw_err {
	ORGW_OK = 0,
	ORGW_ENOMEM,	/* allocation failed */
	ORGW_EINVAL,	/* bad input (client, config or upstream data) */
	ORGW_EIO,	/* file or state store I/O failed */
	ORGW_EBUSY,	/* lock not obtained in time */
	ORGW_EUPSTREAM,	/* upstream unreachable or broken */
	ORGW_ETOOBIG,	/* a size limit was exceeded */
	ORGW_ECONFLICT,	/* a store transaction lost a race: run it again */
	ORGW_ENOENT,	/* no such thing (a model OpenRouter does not know) */
};

/* Returns a static string naming err; never NULL. */
const char *orgw_strerror(enum orgw_err err);

/* Writes the n bytes of b as 2n lower-case hex digits and a NUL into dst
 * (2n + 1 bytes). */
void orgw_hex(const unsigned char *b, size_t n, char *dst);

#define ORGW_TAG_MAX 128	/* longest provider tag or name we keep */
#define ORGW_MODEL_MAX 256	/* longest model id we accept */

#endif
