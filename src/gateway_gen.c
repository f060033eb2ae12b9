/*
 * gateway_gen.c - the generation paths (chat completions, Messages,
 * Responses, count_tokens): the request body read within its time and
 * checked before any parse (size, the host's memory for it and for its
 * cJSON tree, its values and nesting), the client's headers and query
 * that go upstream, then the relay (relay.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "api.h"
#include "buf.h"
#include "clock.h"
#include "gateway_impl.h"
#include "jsonscan.h"
#include "log.h"
#include "relay.h"
#include "reqval.h"
#include "workertab.h"
#include "teamauth.h"
#define QUERY_MAX_BYTES 1024
#define FWD_HEADER_MAX_BYTES 4096
#define FWD_HEADERS 4

/* True when a query string may go into the upstream URL as it is:
 * RFC 3986 query characters only, so nothing can end the URL or start a
 * header. */
static bool
query_ok(const char *q)
{
	size_t i, n = strlen(q);

	if (n > QUERY_MAX_BYTES)
		return false;
	for (i = 0; i < n; i++)
		if (!((q[i] >= 'a' && q[i] <= 'z') ||
		      (q[i] >= 'A' && q[i] <= 'Z') ||
		      (q[i] >= '0' && q[i] <= '9') ||
		      strchr("-._~!$&'()*+,;=:@/?%", q[i]) != NULL))
			return false;
	return true;
}

/* True when a header value the client sent may be forwarded: printable
 * ASCII (tabs too), not too long. */
static bool
header_value_ok(const char *v)
{
	size_t i, n = strlen(v);

	if (n == 0 || n > FWD_HEADER_MAX_BYTES)
		return false;
	for (i = 0; i < n; i++)
		if ((v[i] < 0x20 && v[i] != '\t') || v[i] == 0x7f)
			return false;
	return true;
}

/*
 * The headers forwarded upstream (docs/design.md 11): the Anthropic ones as the
 * client sent them, and X-OpenRouter-Metadata, which a Responses request
 * always carries (its answers name the serving provider only there).
 * Each line is formatted into lines[i] (FWD_HEADER_MAX_BYTES + 64 bytes
 * each); ptrs gets them, NULL-terminated.
 */
static void
forward_headers(const struct orgw_env *env, const struct api *api,
		char lines[FWD_HEADERS][FWD_HEADER_MAX_BYTES + 64],
		const char *ptrs[FWD_HEADERS + 1])
{
	const struct {
		const char *name, *value;
	} h[FWD_HEADERS] = {
		{"anthropic-version", env->anthropic_version},
		{"anthropic-beta", env->anthropic_beta},
		{"x-anthropic-beta", env->x_anthropic_beta},
		{"X-OpenRouter-Metadata",
		 env->or_metadata != NULL ? env->or_metadata :
		 api->id == API_RESPONSES ? "enabled" :
					    NULL},
	};
	size_t i, n = 0;

	for (i = 0; i < FWD_HEADERS; i++) {
		if (h[i].value == NULL || !header_value_ok(h[i].value))
			continue;
		snprintf(lines[n], sizeof(lines[n]), "%s: %s", h[i].name,
			 h[i].value);
		ptrs[n] = lines[n];
		n++;
	}
	ptrs[n] = NULL;
}

/*
 * Whether team key k may count tokens for body: its model-selecting
 * members read as a generation's are (reqval_parse: found by decoded
 * name, each once, "models" entries too) and held to the same globs.
 * ORGW_OK to go on; ORGW_EINVAL with the message in err (param in
 * *param) for a body reqval refuses; ORGW_EBUSY for a model outside
 * the globs.
 */
static enum orgw_err
count_tokens_allowed(const struct orgw_conf *c, const struct api *api,
		     const struct teamkey *k, const char *body, size_t len,
		     char *err, size_t errlen, const char **param)
{
	struct api_req r;
	enum orgw_err e;

	e = reqval_parse(api, body, len,
			 c->n_target_models == 1 ? c->target_models[0] : NULL,
			 &r, err, errlen, param);
	if (e != ORGW_OK)
		return e;
	if (teamkey_check_key(k, clock_now_s(), r.model, r.models,
			      r.n_models) == TK_MODEL)
		e = ORGW_EBUSY;
	reqval_free(&r);
	return e;
}

/* How long a request body may take to arrive: 10 s, and a second more
 * per 64 kB (an 8 MiB body: 141 s, the pace of a 0.5 Mbit/s uplink). */
#define BODY_READ_BASE_MS 10000
#define BODY_READ_BYTES_PER_MS 64

/* Reads the body per RFC 3875 4.1.2 and hands it to the relay, which
 * logs the request itself (*logged).  The body and the cJSON tree its
 * parse will build are counted in the host's memory budget
 * (workertab_mem_take) before either is allocated: the body at its
 * Content-Length, the tree from one pass over the body (jsonscan_size),
 * so a body of millions of small values is refused, not parsed. */
int
handle_generation(const struct orgw_io *io, const struct orgw_env *env,
		  const struct orgw_conf *c, enum route_id id,
		  const struct api *api, struct teamauth *team, bool *logged)
{
	char lines[FWD_HEADERS][FWD_HEADER_MAX_BYTES + 64];
	const char *hdrs[FWD_HEADERS + 1];
	struct relay_in in;
	struct buf body = {0};
	struct jsonscan_size z;
	enum orgw_err e = ORGW_OK;
	const char *param = NULL;
	char err[256];
	unsigned long long cl;
	char chunk[16384], msg[160];
	ssize_t n;
	size_t want, held = 0, tree;
	int64_t deadline, allowed_ms;
	int rc;

	if (env->content_encoding != NULL && env->content_encoding[0] != '\0' &&
	    strcasecmp(env->content_encoding, "identity") != 0)
		return relay_error(io, api, 415, "invalid_request_error",
				   "unsupported_media_type", NULL,
				   "a compressed request body is not "
				   "supported; send it with no "
				   "Content-Encoding",
				   NULL);
	if (env->query != NULL && !query_ok(env->query))
		return relay_error(io, api, 400, "invalid_request_error",
				   "invalid_request", NULL,
				   "the query string holds characters a URL "
				   "query may not",
				   NULL);
	if (!http_content_length_set(env->content_length))
		return relay_error(io, api, 411, "invalid_request_error",
				   "length_required", NULL,
				   "a Content-Length is required", NULL);
	if (http_content_length(env->content_length, &cl) != ORGW_OK)
		return relay_error(io, api, 400, "invalid_request_error",
				   "invalid_request", NULL,
				   "Content-Length is not a number", NULL);
	if (cl > c->max_body_bytes) {
		snprintf(msg, sizeof(msg),
			 "request body of %llu bytes is over the limit of %zu",
			 cl, c->max_body_bytes);
		return relay_error(io, api, 413, "invalid_request_error",
				   "request_too_large", NULL, msg, NULL);
	}
	if (!workertab_mem_take((size_t)cl, c->host_parse_memory_bytes))
		return overloaded(io, api, mem_busy);
	held = (size_t)cl;
	body.max = (size_t)cl;
	/* The web server may hand the body on as it arrives (so that a
	 * client without the key, refused above, holds nothing): a client
	 * that drips it must not hold this thread for as long as it likes. */
	allowed_ms = BODY_READ_BASE_MS + (int64_t)(cl / BODY_READ_BYTES_PER_MS);
	deadline = clock_mono_ms() + allowed_ms;
	while (body.len < (size_t)cl) {
		int64_t left = deadline - clock_mono_ms();

		if (left <= 0)
			break;
		if (io->recv_timeout != NULL)
			io->recv_timeout(io->ctx, left);
		want = (size_t)cl - body.len;
		if (want > sizeof(chunk))
			want = sizeof(chunk);
		n = io->read(io->ctx, chunk, want);
		if (n <= 0)
			break;
		if (buf_add(&body, chunk, (size_t)n) != ORGW_OK) {
			rc = relay_error(io, api, 500, "server_error", NULL,
					 NULL, "out of memory", NULL);
			goto out;
		}
	}
	if (io->recv_timeout != NULL)
		io->recv_timeout(io->ctx, 0);
	/* A read cut by the socket's timeout may come back a little before
	 * the deadline by the monotonic clock. */
	if (body.len < (size_t)cl && deadline - clock_mono_ms() < 1000) {
		snprintf(msg, sizeof(msg),
			 "request body of %llu bytes not received within %lld "
			 "s",
			 cl, (long long)(allowed_ms / 1000));
		rc = relay_error(io, api, 408, "invalid_request_error",
				 "request_timeout", NULL, msg, NULL);
		goto out;
	}
	if (body.len < (size_t)cl) {
		rc = relay_error(io, api, 400, "invalid_request_error",
				 "invalid_request", NULL,
				 "request body shorter than Content-Length",
				 NULL);
		goto out;
	}
	if (body.p == NULL && buf_add(&body, "", 0) != ORGW_OK) {
		rc = -1;
		goto out;
	}
	jsonscan_size(body.p, body.len, &z);
	if (z.nodes > c->max_json_nodes) {
		snprintf(msg, sizeof(msg),
			 "request body holds more than %zu JSON values "
			 "(MAX_JSON_NODES)",
			 c->max_json_nodes);
		rc = relay_error(io, api, 413, "invalid_request_error",
				 "request_too_large", NULL, msg, NULL);
		goto out;
	}
	/* cJSON refuses deeper nesting as invalid JSON; said plainly. */
	if (z.depth > CJSON_NESTING_LIMIT) {
		snprintf(msg, sizeof(msg),
			 "request body nests arrays and objects more than %d "
			 "deep",
			 CJSON_NESTING_LIMIT);
		rc = relay_error(io, api, 400, "invalid_request_error",
				 "invalid_request", NULL, msg, NULL);
		goto out;
	}
	tree = jsonscan_tree_bytes(body.len, &z) - body.len;
	if (!workertab_mem_take(tree, c->host_parse_memory_bytes)) {
		rc = overloaded(io, api, mem_busy);
		goto out;
	}
	held += tree;
	/* Quiet the client socket so a hang-up is all it can signal. */
	if (io->drain)
		io->drain(io->ctx);
	forward_headers(env, api, lines, hdrs);
	memset(&in, 0, sizeof(in));
	in.api = api;
	in.body = body.p;
	in.len = body.len;
	in.query = env->query;
	in.headers = hdrs;
	in.team = team;
	in.conv.x_session_id = env->x_session_id;
	in.conv.claude_session_id = env->claude_session_id;
	in.conv.session_id = env->session_id;
	if (id == R_COUNT_TOKENS && team != NULL &&
	    (e = count_tokens_allowed(c, api, &team->key, body.p, body.len,
				      err, sizeof(err), &param)) != ORGW_OK &&
	    e != ORGW_EBUSY) {
		buf_free(&body);
		log_msg("req",
			"time=%lld api=%s path=/messages/count_tokens "
			"status=400 outcome=invalid_request key=%s",
			(long long)clock_now_s(), api->name, team->key.name);
		*logged = true;
		return relay_error(io, api, 400, "invalid_request_error",
				   "invalid_request", param, err, NULL);
	}
	if (id == R_COUNT_TOKENS && team != NULL && e == ORGW_EBUSY) {
		buf_free(&body);
		/* Counted as the generations' refusals are (refused_model,
		 * orgw_key_refused_total{reason="model"}). */
		teamauth_refused(c, team, TK_MODEL, clock_now_s());
		log_msg("req",
			"time=%lld api=%s path=/messages/count_tokens "
			"status=403 outcome=model_not_allowed key=%s",
			(long long)clock_now_s(), api->name, team->key.name);
		*logged = true;
		rc = relay_error(io, api, 403, "permission_error",
				 "model_not_allowed", "model",
				 "this key may not use this model", NULL);
		goto out;
	}
	*logged = true;
	if (id == R_COUNT_TOKENS)
		rc = relay_plain(c, io, &in, "/messages/count_tokens");
	else
		rc = relay_handle(c, io, &in);
out:
	buf_free(&body);
	workertab_mem_give(held);
	return rc;
}
