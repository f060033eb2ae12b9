/*
 * chat.h - POST /v1/chat/completions: the proxy with provider pinning,
 * 429 backoff, the circuit breaker and stream relay (SPEC sections 4, 5).
 */
#ifndef ORGW_CHAT_H
#define ORGW_CHAT_H

#include "conf.h"
#include "http.h"

/*
 * Handles one chat request whose body (len bytes, NUL-terminated) was
 * read already.  Writes the whole response to io.  Returns 0, or -1 when
 * the client went away.
 */
int chat_handle(const struct orgw_conf *c, const struct orgw_io *io,
		const char *body, size_t len);

#endif
