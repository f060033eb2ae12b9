/*
 * gateway.c - the route table and the dispatch of a request to its
 * handler.
 *
 * Order of checks for every request: path known (404), method allowed
 * (405 + Allow), configuration usable (503), client key (401), body size
 * (413, before reading a byte), the host's memory for it (503), body
 * read in full (400; 408 past its time), its JSON values and nesting
 * (413, 400) counted before any parse, then the handler.  A host's
 * worker threads are shared out before the key is checked (load.h): a
 * generation may not take the last one, and the other paths but
 * /healthz hold a quarter of them at most (503, Retry-After).  Every
 * error is JSON in the shape of the API asked: Anthropic's on the
 * Messages paths, OpenAI's everywhere else (docs/design.md 2, 11).
 *
 * The handlers live beside this file, sharing gateway_impl.h:
 *   gateway_gen.c     the generation paths: the body read and checked,
 *                     then handed to the relay (relay.h)
 *   gateway_auth.c    refused keys: the guard, the log line, and what
 *                     a team key may read
 *   gateway_ops.c     /healthz, /stats, /metrics and /__cron
 *   gateway_models.c  /v1/models (cached) and /v1/key
 *   gateway_status.c  /status: the page, its login and logout
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "clock.h"
#include "gateway.h"
#include "gateway_impl.h"
#include "load.h"
#include "log.h"
#include "relay.h"
#include "workertab.h"
#include "statuslogin.h"
#include "teamauth.h"

static const struct {
	const char *path;
	const char *method;
	enum route_id id;
	bool auth;
	const struct api *api;	/* the API of the path: its errors' shape,
				 * and the adapter of a generation */
} routes[] = {
	/* Paths as http_route_path() gives them: /v1 and /api dropped. */
	{"/chat/completions", "POST", R_CHAT, true, &api_chat},
	{"/messages", "POST", R_MESSAGES, true, &api_messages},
	{"/messages/count_tokens", "POST", R_COUNT_TOKENS, true,
	 &api_messages},
	{"/responses", "POST", R_RESPONSES, true, &api_responses},
	/* Claude Code checks its base URL with HEAD / first. */
	{"/", "GET", R_ROOT, false, &api_chat},
	{"/models", "GET", R_MODELS, true, &api_chat},
	/* OpenRouter's key status: a team key's own figures. */
	{"/key", "GET", R_KEY, true, &api_chat},
	{"/auth/key", "GET", R_KEY, true, &api_chat},
	{"/stats", "GET", R_STATS, true, &api_chat},
	/* METRICS_KEY or the client key, checked by handle_metrics. */
	{"/metrics", "GET", R_METRICS, true, &api_chat},
	{"/__cron", "POST", R_CRON, true, &api_chat},
	{"/healthz", "GET", R_HEALTH, false, &api_chat},
	/* The status page logs in with a form and a cookie, not with
	 * Authorization: see handle_status. */
	{"/status", "GET", R_STATUS, false, &api_chat},
	{"/status", "POST", R_STATUS_POST, false, &api_chat},
};

/* What overloaded() tells the client: every thread of the host is busy,
 * or the host's requests hold HOST_PARSE_MEMORY_BYTES already. */
static const char threads_busy[] =
	"every worker thread of the gateway is busy; retry after "
	"Retry-After seconds";
const char mem_busy[] =
	"the gateway holds as much request memory as it may; retry after "
	"Retry-After seconds";

/* GET / (and HEAD /, which Claude Code sends to check its base URL): a
 * few words saying what answers here. */
static int
handle_root(const struct orgw_io *io)
{
	static const char text[] =
		"orgw: an OpenRouter gateway. POST /v1/chat/completions, "
		"/v1/messages and /v1/responses with the client key; the "
		"operator's page is /status.\n";

	if (http_head(io, 200, "text/plain; charset=utf-8",
		      "Cache-Control: no-cache\r\n") != 0)
		return -1;
	return io->write(io->ctx, text, sizeof(text) - 1);
}

/* True when path is seg or below it ("/messages", "/messages/x"). */
static bool
under(const char *path, const char *seg)
{
	size_t n = strlen(seg);

	return strncmp(path, seg, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The API whose shape a 404 or 405 takes: an API's path and its
 * sub-paths belong to it (docs/design.md 11). */
static const struct api *
api_of_path(const char *path)
{
	if (under(path, "/messages"))
		return &api_messages;
	if (under(path, "/responses"))
		return &api_responses;
	return &api_chat;
}

/* True for the routes that relay a generation (and hold a thread for as
 * long as it lasts). */
static bool
is_generation(enum route_id id)
{
	return id == R_CHAT || id == R_MESSAGES || id == R_RESPONSES ||
	       id == R_COUNT_TOKENS;
}

/* Side requests (load.h, load_side_refused): every path but the
 * generation APIs, /healthz and the gateway's one-line root. */
static bool
is_side(enum route_id id)
{
	return !is_generation(id) && id != R_HEALTH && id != R_ROOT &&
	       id != R_NONE;
}

/*
 * True when a generation must be refused (load_saturated) after waiting
 * up to LOAD_WAIT_MS for a thread of the host to come free: a thread
 * that answered and commits its counts is still busy for a moment, and
 * a burst of short requests would otherwise be refused for threads that
 * are about to be idle.
 */
static bool
host_full(const struct orgw_load *load)
{
	struct orgw_load now = *load;
	int64_t until;

	if (!load_saturated(&now))
		return false;
	until = clock_mono_ms() + LOAD_WAIT_MS;
	while (clock_mono_ms() < until) {
		clock_sleep_us(1000);
		workertab_peek(&now);
		if (!load_saturated(&now))
			return false;
	}
	return true;
}

/* 503 server_overloaded with Retry-After, in the API's shape; msg says
 * what the host is out of. */
int
overloaded(const struct orgw_io *io, const struct api *api, const char *msg)
{
	char extra[64];

	snprintf(extra, sizeof(extra), "Retry-After: %d\r\n",
		 LOAD_RETRY_AFTER_SECONDS);
	return relay_error(io, api, 503, "server_overloaded",
			   "server_overloaded", NULL, msg, extra);
}

static int serve(const struct orgw_io *io, const struct orgw_env *env,
		 const struct orgw_conf *c, const char *conf_err,
		 const char *path, enum route_id id, const struct api *api,
		 const struct orgw_load *load, bool *logged);

/* Routes the request to its handler; the checks in the order of the
 * file's header comment. */
static int
dispatch(const struct orgw_io *io, const struct orgw_env *env,
	 const struct orgw_conf *c, const char *conf_err, const char *path,
	 const struct orgw_load *load, bool *logged)
{
	const char *method = env->method ? env->method : "GET";
	const struct api *api;
	char allow[64];
	size_t i;
	unsigned side;
	int rc;
	bool path_known = false;

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		if (strcmp(path, routes[i].path) != 0)
			continue;
		path_known = true;
		if (strcmp(method, routes[i].method) == 0 ||
		    (strcmp(method, "HEAD") == 0 &&
		     strcmp(routes[i].method, "GET") == 0))
			break;
	}
	if (!path_known)
		return relay_error(io, api_of_path(path), 404,
				   "invalid_request_error", "not_found", NULL,
				   "unknown path; try POST /v1/chat/completions, "
				   "/v1/messages or /v1/responses",
				   NULL);
	if (i == sizeof(routes) / sizeof(routes[0])) {
		/* Every method the path takes (GET and POST for /status). */
		snprintf(allow, sizeof(allow), "Allow: ");
		for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
			if (strcmp(path, routes[i].path) == 0)
				snprintf(allow + strlen(allow),
					 sizeof(allow) - strlen(allow), "%s%s",
					 allow[7] ? ", " : "",
					 routes[i].method);
		snprintf(allow + strlen(allow), sizeof(allow) - strlen(allow),
			 "\r\n");
		return relay_error(io, api_of_path(path), 405,
				   "invalid_request_error",
				   "method_not_allowed", NULL,
				   "method not allowed for this path", allow);
	}
	api = routes[i].api;
	if (!is_side(routes[i].id) || load == NULL)
		return serve(io, env, c, conf_err, path, routes[i].id, api,
			     load, logged);
	side = workertab_side_enter();
	if (load_side_refused(load, side)) {
		rc = overloaded(io, api, threads_busy);
	} else {
		/* Its answer is ready in full: a client that reads takes it
		 * at once, one that does not must not hold the thread for
		 * the minute a generation's writes may take. */
		if (io->send_timeout != NULL &&
		    c->client_send_timeout_ms > LOAD_SIDE_SEND_TIMEOUT_MS)
			io->send_timeout(io->ctx, LOAD_SIDE_SEND_TIMEOUT_MS);
		rc = serve(io, env, c, conf_err, path, routes[i].id, api,
			   load, logged);
	}
	workertab_side_leave();
	return rc;
}

/* Serves a request on a known path and method, after the thread checks. */
static int
serve(const struct orgw_io *io, const struct orgw_env *env,
      const struct orgw_conf *c, const char *conf_err, const char *path,
      enum route_id id, const struct api *api, const struct orgw_load *load,
      bool *logged)
{
	struct teamauth team;
	enum teamauth_who who;
	int rc;

	if (id == R_HEALTH)
		return handle_health(io, env, c, conf_err, load);
	if (id == R_ROOT)
		return handle_root(io);
	/* A login's key is in its form: handle_status_post guards it.  A
	 * valid /status cookie is the operator's too (made from its key). */
	if (id != R_STATUS_POST &&
	    key_guard_answer(io, env, api, path,
			     guard_hash(http_key_token(env)),
			     http_key_ok(env, c->custom_access_key) ||
				     (id == R_STATUS &&
				      c->custom_access_key != NULL &&
				      statuslogin_cookie_ok(env->cookie,
							    c->custom_access_key,
							    clock_now_s())),
			     &rc))
		return rc;
	if (id == R_STATUS || id == R_STATUS_POST) {
		if (conf_err != NULL || c->custom_access_key == NULL)
			return http_error(io, 503, "server_error",
					  "not_configured", NULL,
					  "the gateway is not configured; see "
					  "/healthz",
					  NULL);
		return id == R_STATUS ? handle_status(io, env, c) :
					handle_status_post(io, env, c, api);
	}
	if (conf_err != NULL || c->custom_access_key == NULL ||
	    c->openrouter_api_key == NULL)
		return relay_error(io, api, 503, "server_error",
				   "not_configured", NULL,
				   "the gateway is not configured; see /healthz",
				   NULL);
	if (id == R_METRICS)
		return handle_metrics(io, env, c, load);
	who = teamauth_identify(c, env, clock_now_s(), &team);
	if (who == TA_UNAVAILABLE)
		return relay_error(io, api, 503, "server_error",
				   "keys_unavailable", NULL,
				   "the keys store is unavailable; retry "
				   "later",
				   "Retry-After: 5\r\n");
	if (who == TA_TEAM && !team.key.admin &&
	    (id == R_STATS || id == R_CRON))
		return relay_error(io, api, 403, "permission_error",
				   "admin_key_required", NULL,
				   "this key may not read this path; it "
				   "needs the operator's key or --admin",
				   NULL);
	if (who != TA_OPERATOR && who != TA_TEAM) {
		if (http_key_sent(env))
			key_refused(env, "client_key", path,
				    guard_hash(http_key_token(env)));
		return relay_error(io, api, 401, "invalid_request_error",
				   "invalid_api_key", NULL,
				   http_key_sent(env) ?
					   "incorrect API key provided" :
					   "missing API key: send "
					   "Authorization: Bearer <key> or "
					   "x-api-key: <key>",
				   "WWW-Authenticate: Bearer\r\n");
	}
	/* The host's last idle thread never takes a stream, which could
	 * hold it for minutes: a generation then gets 503 once no thread
	 * has come free for LOAD_WAIT_MS (host_full).  The OpenAI and
	 * Anthropic SDKs retry a 503 after Retry-After, so the clients'
	 * retries are the queue; a longer wait here would be silent for a
	 * request that is not streamed, and a held stream that keeps the
	 * last thread leaves /healthz and /stats unanswered. */
	if (is_generation(id) && load != NULL && host_full(load))
		return overloaded(io, api, threads_busy);
	switch (id) {
	case R_CHAT:
	case R_MESSAGES:
	case R_RESPONSES:
	case R_COUNT_TOKENS:
		return handle_generation(io, env, c, id, api,
					 who == TA_TEAM ? &team : NULL,
					 logged);
	case R_MODELS:
		return handle_models(io, c, who == TA_TEAM ? &team.key : NULL);
	case R_KEY:
		return handle_key(io, c, who == TA_TEAM ? &team : NULL);
	case R_STATS:
		return handle_stats(io, c, load);
	case R_CRON:
		return handle_cron(io, c);
	default:
		break;
	}
	return http_error(io, 404, "invalid_request_error", "not_found", NULL,
			  "unknown path", NULL);
}

int
orgw_handle(const struct orgw_io *io, const struct orgw_env *env,
	    const struct orgw_conf *c, const char *conf_err,
	    const struct orgw_load *load)
{
	char path[PATH_MAX_BYTES], m[64], pth[PATH_MAX_BYTES * 4];
	struct orgw_io rio = *io;
	int64_t t0 = clock_mono_ms();
	int status = 0, rc;
	bool logged = false;

	/* Every request gets one log line (docs/design.md section 9): the chat proxy
	 * writes its own, with the model and the route; the rest, the
	 * refusals before it included, get this one. */
	rio.status = &status;
	http_route_path(env, path, sizeof(path));
	rc = dispatch(&rio, env, c, conf_err, path, load, &logged);
	if (!logged)
		log_msg("req", "time=%lld method=%s path=%s status=%d "
			"total_ms=%lld",
			(long long)clock_now_s(),
			log_safe(m, sizeof(m), env->method ? env->method : "-"),
			log_safe(pth, sizeof(pth), path), status,
			(long long)(clock_mono_ms() - t0));
	return rc;
}
