/*
 * relay.h - the generation APIs' proxy (docs/design.md sections 4, 5 and 11): one
 * attempt loop and relay for chat completions, Messages and Responses,
 * with provider pinning, 429 backoff, the circuit breaker and stream
 * relay; what differs between the APIs is their adapter (api.h).
 */
#ifndef ORGW_RELAY_H
#define ORGW_RELAY_H

#include "api.h"
#include "conf.h"
#include "conv.h"
#include "http.h"
#include "teamauth.h"

/* One generation request, as the gateway read it. */
struct relay_in {
	const struct api *api;
	const char *body;	/* len bytes, NUL-terminated (buf.h) */
	size_t len;
	const char *query;	/* forwarded after the upstream path, as
				 * the client sent it (Claude Code's
				 * "beta=true"); NULL or "" for none */
	/* Headers forwarded upstream ("Name: value"), NULL-terminated;
	 * NULL for none.  Borrowed for the call. */
	const char *const *headers;
	/* The team key that sent it (teamauth.h), NULL for the
	 * operator's: its model, budget and rate limits are checked
	 * before anything goes upstream, its use counted at the end. */
	struct teamauth *team;
	/* The headers a conversation's key may come from (conv.h). */
	struct conv_headers conv;
};

/*
 * Handles one generation request whose body was read already.  Writes
 * the whole response to io, in the API's shapes.  Returns 0, or -1 when
 * the client went away.
 */
int relay_handle(const struct orgw_conf *c, const struct orgw_io *io,
		 const struct relay_in *in);

/*
 * Forwards a request that is not a generation (Messages' count_tokens)
 * to upstream_path below UPSTREAM_URL unpinned, and relays the answer's
 * status and body (the upstream key masked), or a 502 in api's shape
 * when none came.  Logged, not counted per model.  Returns 0, or -1
 * when the client went away.
 */
int relay_plain(const struct orgw_conf *c, const struct orgw_io *io,
		const struct relay_in *in, const char *upstream_path);

/*
 * Writes an error orgw answers itself, in api's shape (api->error_body;
 * OpenAI's for chat and Responses, Anthropic's for Messages): status,
 * the OpenAI error type and code (may be NULL), param (may be NULL),
 * the message, extra header lines (may be NULL).  Returns 0, or -1 when
 * the client is gone.
 */
int relay_error(const struct orgw_io *io, const struct api *api, int status,
		const char *type, const char *code, const char *param,
		const char *msg, const char *extra);

#endif
