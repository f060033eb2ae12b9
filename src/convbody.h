/*
 * convbody.h - what a conversation changes in the body sent upstream,
 * and what it reads in upstream's errors (pure).
 *
 *   - session_id: a key the client sent in a header, Claude Code's
 *     metadata or prompt_cache_key goes upstream as the body's
 *     "session_id" (conv_forward_session()), so OpenRouter's own
 *     per-session features see the conversation;
 *   - reasoning bound to a provider: Responses "reasoning" input items
 *     with "encrypted_content" can be read only by the provider that
 *     produced them; when a conversation moves they are left out, and an
 *     upstream 400 invalid_encrypted_content is retried once without
 *     them.  The client resends them on every later turn, so the
 *     conversation's record keeps how many leading input items such a
 *     turn carried (rec_conv.foreign_items), and later turns leave out
 *     the ones among those from their first attempt;
 *   - automatic prompt caching: an endpoint that bills cache writes and
 *     does not cache implicitly caches nothing without a breakpoint; a
 *     chat or Messages request with none of its own gets OpenRouter's
 *     top-level "cache_control": {"type": "ephemeral"}.
 * reqval_forward_edit() (reqval.h) applies the edits to the client's own
 * bytes.
 */
#ifndef ORGW_CONVBODY_H
#define ORGW_CONVBODY_H

#include <cJSON.h>

#include "api.h"
#include "failover.h"
#include "record.h"

/*
 * True when the request carries a cache breakpoint of its own: a
 * "cache_control" or "prompt_cache_breakpoint" member at the top level,
 * on a message or input item, on a content block, on a system block or
 * on a tool.  body is the parsed request (borrowed).
 */
bool convbody_has_breakpoint(const cJSON *body);

/* True when endpoint c bills cache writes (its pricing has
 * input_cache_write) and does not cache implicitly. */
bool convbody_explicit_cache(const struct rec_cand *c);

/* The same of a freshly scored endpoint (a model scored inline, whose
 * candidates were not in the state when the route was read). */
bool convbody_explicit_endpoint(const struct score_endpoint *e);

/*
 * True when orgw adds the top-level cache_control: AUTO_CACHE on
 * (auto_cache), a chat or Messages request (never Responses), pinned to
 * an endpoint that caches only explicitly (convbody_explicit_cache), and
 * no breakpoint of the request's own.
 */
bool convbody_auto_cache(enum api_id api, bool auto_cache,
			 bool explicit_endpoint, bool has_breakpoint);

/* convbody_drop_reasoning()'s limit that leaves out every such item. */
#define CONVBODY_ALL ((size_t)-1)

/*
 * The Responses "input" array text (len bytes, borrowed; text cJSON
 * accepts) without its "reasoning" items that carry a string
 * "encrypted_content" and stand at an index below limit (CONVBODY_ALL:
 * all of them); every other item is its own bytes, in order.  Returns
 * malloc'd NUL-terminated text (caller frees) and the number left out in
 * *dropped, or NULL with *dropped 0 when nothing is left out (or input
 * is not an array); NULL with *dropped 1 when out of memory.
 */
char *convbody_drop_reasoning(const char *input, size_t len, size_t limit,
			      size_t *dropped);

/*
 * Of a parsed Responses "input" (borrowed, may be NULL): its number of
 * items (0 when it is no array), and in *first_bound the index of its
 * first item convbody_drop_reasoning() would leave out at any limit
 * (CONVBODY_ALL when none).  Walks the parsed items only.
 */
size_t convbody_input_items(const cJSON *input, size_t *first_bound);

/*
 * True when an upstream error body (parsed, borrowed, may be NULL)
 * mentions invalid_encrypted_content in error.message, error.code (where
 * OpenAI puts it) or error.metadata.raw (a string, or anything else
 * printed).
 */
bool convbody_invalid_encrypted(const cJSON *err);

/*
 * Retry at once without the reasoning items: an upstream 400 that
 * mentions invalid_encrypted_content, on a body that had some
 * (has_items), not retried so already.  Not a provider failure.
 */
bool convbody_retry_without_reasoning(long status, bool mentions,
				      bool has_items, bool retried);

/* What a 429's error body (may be NULL) says about the provider:
 * error.metadata.provider_name absent, null, or a non-empty string. */
enum failover_named convbody_429_named(const cJSON *err);

#endif
