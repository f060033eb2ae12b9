/*
 * reqval.h - a generation request body, validated (pure), for any of the
 * three APIs (api.h).
 *
 * reqval_parse() checks what the gateway relies on (docs/design.md section 4
 * step 1, section 11), reading every value with cJSON, and keeps what
 * reqval_forward() needs to produce the body sent upstream: the client's
 * bytes with the provider pin added and the output limits clamped, every
 * other member untouched (jsonscan.h finds the members).
 */
#ifndef ORGW_REQVAL_H
#define ORGW_REQVAL_H

#include "orgw.h"

struct api;
struct cJSON;
struct jsonscan_member;

/* A validated request: what orgw read, and where the members it may
 * edit sit in the client's bytes. */
struct api_req {
	const struct api *api;		/* whose field names it has */
	const char *body;		/* the client's bytes, borrowed */
	size_t body_len;
	struct jsonscan_member *mem;	/* malloc'd: the top-level members,
					 * in order */
	size_t n_mem;
	char model[ORGW_MODEL_MAX];	/* the model routed and sent */
	char asked[ORGW_MODEL_MAX];	/* the id the client sent, when
					 * reqval_alias() replaced it; "" */
	bool stream;
	bool has_provider;		/* the client sent its own "provider"
					 * object */
	bool has_model;			/* ... and a string "model" */
	/* Indexes into mem, n_mem when absent: "model", "models",
	 * "provider", the
	 * API's two output limits (api->limits), "thinking". */
	size_t at_model, at_models, at_provider, at_limit[2], at_thinking;
	size_t at_input;		/* the API's input member */
	bool has_session;		/* a "session_id" member, of any
					 * value */
	double limit[2];		/* the limits' values; 0: absent or
					 * null */
	double budget;			/* thinking.budget_tokens of an
					 * enabled thinking, else 0 */
	/* The ids of a "models" fallback list (OpenRouter routes to each
	 * in turn), each a valid model id; borrowed from models_doc, which
	 * r owns.  n_models 0: none, or "models" absent or null. */
	const char **models;
	size_t n_models;
	struct cJSON *models_doc;	/* the "models" value's copy */
	struct cJSON *tree;		/* the parsed body, owned (reqval_free
					 * deletes it; the caller may delete
					 * it earlier and set it NULL) */
};

/*
 * Parses body (len bytes followed by a NUL, as buf.h guarantees) as a
 * request of api; body must outlive r: reqval_forward() may send its
 * bytes.  default_model (may be NULL) is used when "model" is absent.
 * On ORGW_EINVAL, err holds a message for the client (param name in
 * *param, static, may be NULL) and r owns nothing (ORGW_ENOMEM: the
 * same, memory ran out).  Refused besides what cJSON refuses or the
 * checks name: a second copy of a member orgw reads (cJSON reads the
 * first, JSON.parse upstream the last), a top-level key holding \u0000
 * (cJSON cuts it, so it would name another member here than upstream).
 * Members are found by their decoded names ("m\u006fdels" is models).
 * A model holding \u0000 is not a valid model id, since the upstream
 * reads it whole.  "models" (the ids OpenRouter may route to besides
 * "model") must be null or an array of valid model ids: a team key's
 * globs check each (r->models).  On ORGW_OK the caller owns r
 * (reqval_free).
 */
enum orgw_err reqval_parse(const struct api *api, const char *body,
			   size_t len, const char *default_model,
			   struct api_req *r, char *err, size_t errlen,
			   const char **param);

/* True when id is a model id we accept: 1..ORGW_MODEL_MAX-1 bytes of
 * [A-Za-z0-9._:/@+~-], no leading '/', no "..". */
bool reqval_model_ok(const char *id);

/*
 * Routes and sends r as model to (MODEL_ALIASES): r->asked keeps the id
 * the client sent, and reqval_forward() puts to in the body.  to must
 * pass reqval_model_ok (conf_list.c checks the aliases at start).
 */
void reqval_alias(struct api_req *r, const char *to);

/*
 * Returns the body to send upstream (caller frees with cJSON_free()),
 * or NULL on allocation failure.  It is the client's object, each member
 * its own bytes, with only these edits: without a client provider
 * object, a "provider": null is dropped and, with pin_tag non-NULL,
 * "provider": {"order":[pin_tag],"allow_fallbacks":false} is added; the
 * API's output limits above max_out (when max_out > 0) become max_out,
 * and for an API with extended thinking a budget_tokens that would then
 * not stay below max_tokens is lowered to max_out - 1; when that is
 * under the 1024 minimum, nothing is clamped (OpenRouter answers); a
 * model the client did not send (or sent as null), or one an alias
 * replaced, is the resolved one.  Whitespace between members is
 * dropped.  r is not changed: each call starts from the client's bytes.
 */
char *reqval_forward(struct api_req *r, const char *pin_tag,
		     int64_t max_out);

/* What a conversation changes besides the pin and the clamp
 * (convbody.h). */
struct reqval_edits {
	const char *session_id;	/* added as "session_id" when the body has
				 * none; NULL for nothing */
	bool cache_control;	/* add "cache_control":{"type":"ephemeral"} */
	const char *input;	/* JSON text replacing the input member's
				 * value (convbody_drop_reasoning()); NULL:
				 * as sent */
};

/* The input member's value as sent: *p (borrowed from r->body) and
 * *n bytes.  False when the request has none. */
bool reqval_input(const struct api_req *r, const char **p, size_t *n);

/*
 * reqval_forward() with the edits of ed (may be NULL: none) as well;
 * the added members follow the pin.  Ownership as reqval_forward().
 */
char *reqval_forward_edit(struct api_req *r, const char *pin_tag,
			  int64_t max_out, const struct reqval_edits *ed);

/* The smallest thinking budget Anthropic accepts. */
#define REQVAL_THINKING_MIN 1024

/* Frees what r owns.  NULL is a no-op. */
void reqval_free(struct api_req *r);

#endif
