/*
 * conv.h - which conversation a generation request belongs to (pure).
 *
 * A provider's prompt cache holds conversations, not models, so orgw
 * keeps a provider per conversation (convroute.h).  The key comes from
 * what the client says about its session, the first found wins:
 *   1. body "session_id" (a non-empty string);
 *   2. header x-session-id (opencode, OpenRouter's own sticky header);
 *   3. header x-claude-code-session-id, or the session_id inside Claude
 *      Code's metadata.user_id (a JSON string);
 *   4. header session-id, or body "prompt_cache_key" (Codex CLI sends
 *      both, equal);
 *   5. else a key derived from the model, the first system/developer
 *      content and the first other message, as OpenRouter derives its
 *      own sticky-routing key.
 * A key carries identity only: one over CONV_KEY_MAX bytes, or holding a
 * byte outside printable ASCII, is replaced by its hex SHA-256, so it is
 * bounded and always safe to put in a JSON body or a state key.  Keys
 * are scoped by the client key's name and the model: the same session
 * id under two client keys is two conversations (conv_key.hash).
 *
 * No I/O, no clock: the parsed body and the header values come in.
 */
#ifndef ORGW_CONV_H
#define ORGW_CONV_H

#include <cJSON.h>

#include "orgw.h"

#define CONV_KEY_MAX 256	/* the longest key kept as sent (OpenRouter's
				 * limit for session_id) */
#define CONV_HASH_HEX 64	/* hex digits of a SHA-256 */
#define CONV_SHOW_MAX 13	/* conv_show(): 12 characters and a NUL */

/* Where a key came from (the numbers of the list above). */
enum conv_src {
	CONV_SRC_BODY = 1,	/* body session_id */
	CONV_SRC_HEADER,	/* x-session-id */
	CONV_SRC_CLAUDE,	/* x-claude-code-session-id, metadata.user_id */
	CONV_SRC_CODEX,		/* session-id, prompt_cache_key */
	CONV_SRC_DERIVED,	/* hash of the opening messages */
};

/* The request headers the key may come from; each NULL when absent.
 * Borrowed for the call. */
struct conv_headers {
	const char *x_session_id;	/* x-session-id */
	const char *claude_session_id;	/* x-claude-code-session-id */
	const char *session_id;		/* session-id */
};

struct conv_key {
	enum conv_src src;
	/* The key: as sent when it is 1..CONV_KEY_MAX bytes of printable
	 * ASCII, else the hex SHA-256 of it; a derived key is "h:" and
	 * the hex SHA-256 of the model and the opening messages. */
	char id[CONV_KEY_MAX + 1];
	/* Hex SHA-256 of the scope, the model and id: the conversation's
	 * name in the state, the same for every host. */
	char hash[CONV_HASH_HEX + 1];
};

/*
 * The conversation key of a request: body is the parsed request (a JSON
 * object, borrowed), h its headers (may be NULL), scope the client key's
 * name ("" for the operator's key), model the model it is routed as.
 * Fills *k.  ORGW_EINVAL when body is not an object or scope/model is
 * NULL; ORGW_ENOMEM when hashing fails.
 */
enum orgw_err conv_key_of(const cJSON *body, const struct conv_headers *h,
			  const char *scope, const char *model,
			  struct conv_key *k);

/* "session_id", "x-session-id", "claude-code", "codex", "derived".
 * Static. */
const char *conv_src_name(enum conv_src src);

/*
 * The key as shown in logs and /stats: its first 12 characters, a
 * derived one as "h:" and 10 hex digits.  Writes into dst (at least
 * CONV_SHOW_MAX bytes).
 */
void conv_show(const struct conv_key *k, char *dst, size_t n);

/*
 * The session_id orgw adds to the forwarded body (OpenRouter's Sessions
 * view and provider-side session affinity): k->id when the key came
 * from a header, Claude Code's metadata or prompt_cache_key (sources 2
 * to 4), else NULL (a body session_id goes as sent, a derived key is
 * orgw's own guess and not the client's).  Borrowed from k.
 */
const char *conv_forward_session(const struct conv_key *k);

/*
 * Writes the lower-case hex SHA-256 of the n bytes at p into hex
 * (CONV_HASH_HEX + 1 bytes).  ORGW_ENOMEM when libcrypto fails.
 */
enum orgw_err conv_sha256_hex(const void *p, size_t n, char *hex);

#endif
