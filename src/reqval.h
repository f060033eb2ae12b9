/*
 * reqval.h - an OpenAI chat-completions request body, validated (pure).
 *
 * reqval_parse() checks what the gateway relies on (SPEC section 4 step
 * 1) and keeps what reqval_forward() needs to produce the body sent
 * upstream: the client's JSON with the provider pin added and max_tokens
 * clamped, every other field untouched.
 */
#ifndef ORGW_REQVAL_H
#define ORGW_REQVAL_H

#include "orgw.h"

/*
 * root: until edited, only the root members reqval reads ("model",
 * "stream", "max_tokens", "max_completion_tokens", "provider", each
 * copy of a duplicate included), plus "messages" built shallow (its node
 * with no children: an empty array); other members are left out.  Once
 * edited, the whole document with reqval_forward()'s edits.
 */
struct chat_req {
	void *root;			/* cJSON *, owned; see above */
	const char *body;		/* the client's bytes, borrowed */
	size_t body_len;
	char model[ORGW_MODEL_MAX];
	bool stream;
	bool has_provider;		/* the client sent its own "provider" */
	bool edited;			/* root is whole and no longer matches
					 * body */
	signed char verbatim;		/* body can go as it is: -1 not known */
};

/*
 * Parses body (len bytes followed by a NUL, as buf.h guarantees), which
 * must outlive r: reqval_forward() may send its bytes.
 * default_model (may be NULL) is used when "model" is absent.  On
 * ORGW_EINVAL, err holds a message for the client (param name in
 * *param, static, may be NULL).  On ORGW_OK the caller owns r
 * (reqval_free).
 */
enum orgw_err reqval_parse(const char *body, size_t len,
			   const char *default_model, struct chat_req *r,
			   char *err, size_t errlen, const char **param);

/* True when id is a model id we accept: 1..ORGW_MODEL_MAX-1 bytes of
 * [A-Za-z0-9._:/@+~-], no leading '/', no "..". */
bool reqval_model_ok(const char *id);

/*
 * Returns the body to send upstream (caller frees with cJSON_free()),
 * or NULL on allocation failure.  With pin_tag non-NULL (and no client
 * provider object) sets "provider": {"order":[pin_tag],
 * "allow_fallbacks":false}; a NULL pin_tag removes a pin added by an
 * earlier call.  max_tokens and max_completion_tokens above max_out
 * (when max_out > 0) are clamped to it.  Always writes the resolved model.
 * When nothing but the pin changes and the client's bytes mean to a
 * strict JSON parser what the tree means here, those bytes are sent with
 * the pin spliced in before the closing brace; otherwise the first such
 * call parses body again into the whole document (r->edited), and the
 * edited document is printed.
 */
char *reqval_forward(struct chat_req *r, const char *pin_tag,
		     int64_t max_out);

/* Frees what r owns.  NULL is a no-op. */
void reqval_free(struct chat_req *r);

#endif
