/*
 * gateway.c - the route table and the small handlers.
 *
 * Order of checks for every request: path known (404), method allowed
 * (405 + Allow), configuration usable (503), client key (401), body size
 * (413, before reading a byte), the host's memory for it (503), body
 * read in full (400; 408 past its time), its JSON values and nesting
 * (413, 400) counted before any parse, then the handler.  A host's worker threads are shared out before the key is
 * checked (load.h): a generation may not take the last one, and the other
 * paths but /healthz hold a quarter of them at most (503, Retry-After).  Every error is JSON in the shape of the API asked: Anthropic's
 * on the Messages paths, OpenAI's everywhere else (docs/design.md 2, 11).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "api.h"
#include "buf.h"
#include "clock.h"
#include "gateway.h"
#include "guard.h"
#include "jsonscan.h"
#include "load.h"
#include "log.h"
#include "mask.h"
#include "prom.h"
#include "record.h"
#include "relay.h"
#include "reqval.h"
#include "scorerun.h"
#include "slots.h"
#include "state.h"
#include "stats.h"
#include "statusauth.h"
#include "statuspage.h"
#include "teamauth.h"
#include "upstream.h"
#include "version.h"

#define MODELS_CACHE_MS 60000
#define MODELS_MAX_BYTES (32u * 1024 * 1024)
#define PATH_MAX_BYTES 2048
#define HEALTH_CACHE_MS 1000
#define STATUS_FORM_MAX_BYTES 4096
#define QUERY_MAX_BYTES 1024
#define FWD_HEADER_MAX_BYTES 4096
#define FWD_HEADERS 4

enum route_id {
	R_CHAT,
	R_MESSAGES,
	R_COUNT_TOKENS,
	R_RESPONSES,
	R_ROOT,
	R_MODELS,
	R_KEY,
	R_STATS,
	R_METRICS,
	R_CRON,
	R_HEALTH,
	R_STATUS,
	R_STATUS_POST,
	R_NONE
};

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

/*
 * Per-process cache of GET /v1/models (docs/design.md 2: "cached briefly"), shared
 * by the threads under models_mu.  The entry is reference-counted so a
 * thread writes it to its client without holding the mutex while another
 * replaces it.
 */
struct models_entry {
	unsigned refs;		/* under models_mu */
	size_t len;
	int64_t at;		/* clock_mono_ms() of the fetch */
	char body[];
};

static pthread_mutex_t models_mu = PTHREAD_MUTEX_INITIALIZER;
static struct models_entry *models_cache;

/* Drops one reference to e (NULL: no-op); frees it with the last. */
static void
models_put(struct models_entry *e)
{
	bool last;

	if (e == NULL)
		return;
	pthread_mutex_lock(&models_mu);
	last = --e->refs == 0;
	pthread_mutex_unlock(&models_mu);
	if (last)
		free(e);
}

/* The /healthz state check result, kept a second and shared by the
 * threads under health_mu (state_health may wait a second: one thread
 * waits, the others take its answer). */
static pthread_mutex_t health_mu = PTHREAD_MUTEX_INITIALIZER;
static char health_why[512], health_logged[512];
static int64_t health_at = -HEALTH_CACHE_MS;

/* Adds the host's load to o: in_flight (other requests being served)
 * and, for /healthz, capacity and saturated, or for /stats the peak. */
static bool
add_load(cJSON *o, const struct orgw_load *l, bool health)
{
	if (!cJSON_AddNumberToObject(o, "in_flight", load_in_flight(l)))
		return false;
	if (!health)
		return cJSON_AddNumberToObject(o, "in_flight_peak", l->peak) !=
		       NULL;
	return cJSON_AddNumberToObject(o, "capacity", l->capacity) != NULL &&
	       cJSON_AddBoolToObject(o, "saturated", load_saturated(l)) !=
		       NULL;
}

/*
 * GET /healthz needs no key, so anyone may ask it, often.  It answers ok,
 * or a short generic reason; the detail (setting values, paths, system
 * errors) goes to the log (once per change) and to a caller that sent the
 * client key.  The state check takes a shared lock at most,
 * waits a second at most and opens no GDBM (state_health), and its result
 * is kept for a second per worker.
 */
static int
handle_health(const struct orgw_io *io, const struct orgw_env *env,
	      const struct orgw_conf *c, const char *conf_err,
	      const struct orgw_load *load)
{
	char why[512], body[1024];
	const char *shown;
	int64_t now = clock_mono_ms();
	cJSON *o;
	char *s;
	int rc;

	why[0] = '\0';
	shown = NULL;
	if (conf_err != NULL) {
		snprintf(why, sizeof(why), "configuration: %s", conf_err);
		shown = "configuration refused; see the log";
	} else if (c->custom_access_key == NULL) {
		snprintf(why, sizeof(why),
			 "CUSTOM_ACCESS_KEY is not set: the gateway fails "
			 "closed");
	} else if (c->openrouter_api_key == NULL) {
		snprintf(why, sizeof(why), "OPENROUTER_API_KEY is not set");
	} else {
		pthread_mutex_lock(&health_mu);
		if (now - health_at >= HEALTH_CACHE_MS) {
			health_why[0] = '\0';
			state_health(c, health_why, sizeof(health_why));
			health_at = now;
		}
		snprintf(why, sizeof(why), "%s", health_why);
		pthread_mutex_unlock(&health_mu);
		shown = "state store unavailable; see the log";
	}
	pthread_mutex_lock(&health_mu);
	if (why[0] != '\0' && strcmp(why, health_logged) != 0) {
		log_warn("healthz: %s", why);
		snprintf(health_logged, sizeof(health_logged), "%s", why);
	}
	pthread_mutex_unlock(&health_mu);
	/* The detail for the client key only. */
	if (shown == NULL || http_key_ok(env, c->custom_access_key))
		shown = why;
	o = cJSON_CreateObject();
	if (o == NULL ||
	    !cJSON_AddStringToObject(o, "status", why[0] ? "error" : "ok") ||
	    !cJSON_AddStringToObject(o, "version", orgw_version) ||
	    (why[0] && !cJSON_AddStringToObject(o, "reason", shown)) ||
	    (load != NULL && !add_load(o, load, true)) ||
	    (s = cJSON_PrintUnformatted(o)) == NULL) {
		cJSON_Delete(o);
		snprintf(body, sizeof(body), "{\"status\":\"error\"}");
		return http_json(io, 503, NULL, body, strlen(body));
	}
	cJSON_Delete(o);
	rc = http_json(io, why[0] ? 503 : 200, "Cache-Control: no-cache\r\n",
		       s, strlen(s));
	cJSON_free(s);
	return rc;
}

/* Writes s, JSON text cJSON printed (freed here), with status 200, or a
 * 500 saying what failed when s is NULL. */
static int
json_text_send(const struct orgw_io *io, const char *extra, char *s,
	       const char *what)
{
	int rc;

	if (s == NULL)
		return http_error(io, 500, "server_error", NULL, NULL, what,
				  NULL);
	rc = http_json(io, 200, extra, s, strlen(s));
	cJSON_free(s);
	return rc;
}

/*
 * A model list's body with only the models team key k may use (its
 * "data" entries whose "id" matches one of its globs), written to io;
 * a body that is not a model list is written as it came.
 */
static int
models_for_key(const struct orgw_io *io, const char *extra, const char *body,
	       size_t len, const struct teamkey *k)
{
	cJSON *o = cJSON_ParseWithLength(body, len);
	cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
	cJSON *e, *next, *id;
	char *s;

	if (!cJSON_IsArray(data)) {
		cJSON_Delete(o);
		return http_json(io, 200, extra, body, len);
	}
	for (e = data->child; e != NULL; e = next) {
		next = e->next;
		id = cJSON_GetObjectItemCaseSensitive(e, "id");
		if (!cJSON_IsString(id) ||
		    !teamkey_model_ok(k, id->valuestring))
			cJSON_Delete(cJSON_DetachItemViaPointer(data, e));
	}
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return json_text_send(io, extra, s, "out of memory");
}

/* Writes a model list's body: all of it for the operator (k NULL) or a
 * key with every model, else models_for_key(). */
static int
models_send(const struct orgw_io *io, const char *extra, const char *body,
	    size_t len, const struct teamkey *k)
{
	if (k == NULL || k->n_globs == 0)
		return http_json(io, 200, extra, body, len);
	return models_for_key(io, extra, body, len, k);
}

static int
handle_models(const struct orgw_io *io, const struct orgw_conf *c,
	      const struct teamkey *k)
{
	char url[4096], *body = NULL;
	size_t len = 0;
	long status = 0;
	int64_t now = clock_mono_ms();
	struct models_entry *e = NULL;
	int rc;

	pthread_mutex_lock(&models_mu);
	if (models_cache != NULL && now - models_cache->at < MODELS_CACHE_MS) {
		e = models_cache;
		e->refs++;
	}
	pthread_mutex_unlock(&models_mu);
	if (e != NULL) {
		rc = models_send(io, "X-Orgw-Cache: hit\r\n", e->body, e->len,
				 k);
		models_put(e);
		return rc;
	}
	snprintf(url, sizeof(url), "%s/models", c->upstream_url);
	if (upstream_get(url, c->openrouter_api_key, c->upstream_timeout_ms,
			 MODELS_MAX_BYTES, &body, &len, &status) != ORGW_OK)
		return http_error(io, 502, "upstream_error",
				  "upstream_unavailable", NULL,
				  "could not fetch the model list", NULL);
	/* Every byte relayed from upstream is masked (docs/design.md 3), the cache
	 * included; a redirect is a gateway error (no Location goes on). */
	mask_key(c->openrouter_api_key, body, len);
	if (status >= 300 && status <= 399) {
		free(body);
		return http_error(io, 502, "upstream_error",
				  "upstream_unavailable", NULL,
				  "upstream answered with a redirect", NULL);
	}
	if (status == 200 && len <= SIZE_MAX - sizeof(*e) &&
	    (e = malloc(sizeof(*e) + len)) != NULL) {
		struct models_entry *old;

		memcpy(e->body, body, len);
		e->len = len;
		e->at = now;
		e->refs = 1;	/* the cache's */
		pthread_mutex_lock(&models_mu);
		old = models_cache;
		models_cache = e;
		pthread_mutex_unlock(&models_mu);
		models_put(old);
		rc = models_send(io, "X-Orgw-Cache: miss\r\n", body, len, k);
		free(body);
		return rc;
	}
	rc = http_json(io, (int)status, NULL, body, len);
	free(body);
	return rc;
}

/*
 * GET /v1/key (and OpenRouter's older /v1/auth/key): a team key's name,
 * limits and use today and this month, in OpenRouter's shape; the
 * operator's key gets OpenRouter's answer for the gateway's own key,
 * the upstream key masked.
 */
static int
handle_key(const struct orgw_io *io, const struct orgw_conf *c,
	   const struct teamauth *t)
{
	char url[4096], *body = NULL;
	size_t len = 0;
	long status = 0;
	int rc;

	if (t != NULL)
		return json_text_send(io, "Cache-Control: no-cache\r\n",
				      teamauth_key_json(t), "out of memory");
	snprintf(url, sizeof(url), "%s/key", c->upstream_url);
	if (upstream_get(url, c->openrouter_api_key, c->upstream_timeout_ms,
			 MODELS_MAX_BYTES, &body, &len, &status) != ORGW_OK ||
	    status < 200 || status > 599 || (status >= 300 && status <= 399)) {
		free(body);
		return http_error(io, 502, "upstream_error",
				  "upstream_unavailable", NULL,
				  "could not fetch the key's status", NULL);
	}
	mask_key(c->openrouter_api_key, body, len);
	rc = http_json(io, (int)status, "Cache-Control: no-cache\r\n", body,
		       len);
	free(body);
	return rc;
}

static int
handle_stats(const struct orgw_io *io, const struct orgw_conf *c,
	     const struct orgw_load *load)
{
	cJSON *o = stats_tree(c, clock_now_s());
	char *s = NULL;

	/* The host's load, added at the top level: stats.c reads the
	 * state, this is the worker table's (slots.c). */
	if (o != NULL && (load == NULL || add_load(o, load, false)))
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return json_text_send(io, "Cache-Control: no-cache\r\n", s,
			      "could not build stats");
}

/* Headers of every /status answer: never cached, never framed, and no
 * script runs even if an escape were missed (the page has none). */
#define STATUS_HEADERS                                                     \
	"Cache-Control: no-store\r\n"                                       \
	"X-Frame-Options: DENY\r\n"                                         \
	"Referrer-Policy: no-referrer\r\n"                                  \
	"Content-Security-Policy: default-src 'none'; style-src "           \
	"'unsafe-inline'; form-action 'self'; frame-ancestors 'none'\r\n"

static int
status_send(const struct orgw_io *io, int status, const char *extra,
	    char *html, size_t len)
{
	char hdr[1024];
	int rc;

	if (html == NULL)
		return http_error(io, 500, "server_error", NULL, NULL,
				  "could not build the status page", NULL);
	snprintf(hdr, sizeof(hdr), "%s%s", STATUS_HEADERS, extra ? extra : "");
	rc = http_head(io, status, "text/html; charset=utf-8", hdr);
	if (rc == 0 && len > 0)
		rc = io->write(io->ctx, html, len);
	free(html);
	return rc;
}

/* 303 See Other with extra (Location, Set-Cookie), no body. */
static int
status_redirect(const struct orgw_io *io, const char *extra)
{
	char hdr[2048];

	snprintf(hdr, sizeof(hdr), "%s%s", STATUS_HEADERS, extra);
	return http_head(io, 303, "text/html; charset=utf-8", hdr);
}

static int
status_login(const struct orgw_io *io, int status, const char *message)
{
	size_t len = 0;
	char *html = statuspage_login_html(message, &len);

	return status_send(io, status, NULL, html, len);
}

/* GET /status: the page with a valid cookie, else the login form. */
static int
handle_status(const struct orgw_io *io, const struct orgw_env *env,
	      const struct orgw_conf *c)
{
	struct statuspage_opts o;
	int64_t now = clock_now_s();
	cJSON *tree;
	char *html;
	size_t len = 0;

	if (!statusauth_cookie_ok(env->cookie, c->custom_access_key, now))
		return status_login(io, 200, NULL);
	if ((tree = stats_tree(c, now)) == NULL)
		return status_send(io, 500, NULL, NULL, 0);
	o.now = now;
	o.lock_idle_seconds = c->lock_idle_seconds;
	html = statuspage_html(tree, &o, &len);
	cJSON_Delete(tree);
	return status_send(io, 200, NULL, html, len);
}

/* Where a login or logout sends the browser: the path it posted to, as
 * the client asked for it (/status, /v1/status, a mount prefix...), when
 * that is a plain absolute path; else "status" relative to it. */
static void
status_location(const struct orgw_env *env, char *dst, size_t n)
{
	const char *u = env->request_uri;
	size_t i;

	snprintf(dst, n, "status");
	if (u == NULL || u[0] != '/' || u[1] == '/')
		return;
	for (i = 0; u[i] != '\0' && u[i] != '?' && u[i] != '#'; i++)
		if (u[i] <= ' ' || u[i] >= 0x7f || u[i] == '\\' || i + 1 >= n)
			return;
	memcpy(dst, u, i);
	dst[i] = '\0';
}

/* Refused keys per client address and per key in this process
 * (guard.h). */
static struct guard key_guard;
static pthread_mutex_t key_guard_mu = PTHREAD_MUTEX_INITIALIZER;

/* The guard's hash of a presented key (the first 8 bytes of its
 * SHA-256: the guard keeps no key, and tells keys apart); 0 for none. */
static uint64_t
guard_hash(const char *key)
{
	unsigned char d[SHA256_DIGEST_LENGTH];
	uint64_t h = 0;
	size_t i;

	if (key == NULL || key[0] == '\0' ||
	    SHA256((const unsigned char *)key, strlen(key), d) == NULL)
		return 0;
	for (i = 0; i < 8; i++)
		h = h << 8 | d[i];
	return h != 0 ? h : 1;
}

/*
 * A key was sent and refused (what: client_key, metrics_key,
 * status_login): one log line with the client's address, the line a
 * fail2ban filter matches (README, Security), and a count towards that
 * address's 429.  Never the key itself.
 */
static void
key_refused(const struct orgw_env *env, const char *what, const char *path,
	    uint64_t key)
{
	char a[GUARD_ADDR_MAX * 4], p[PATH_MAX_BYTES * 4];

	log_msg("auth", "time=%lld refused=%s addr=%s path=%s",
		(long long)clock_now_s(), what,
		log_safe(a, sizeof(a),
			 env->remote_addr != NULL ? env->remote_addr : "-"),
		log_safe(p, sizeof(p), path));
	pthread_mutex_lock(&key_guard_mu);
	guard_fail(&key_guard, env->remote_addr, key, clock_now_s());
	pthread_mutex_unlock(&key_guard_mu);
}

/*
 * 429 with Retry-After, at once, to an address that had too many keys
 * refused this minute, or for a key refused too often, whatever key it
 * sends now (a right guess must not be told apart), but the operator's
 * (is_operator): a guesser on the operator's own host must not lock the
 * operator out.  1 when answered so, else 0 with *rc untouched.  No
 * sleep: a wait would hold a worker thread per guess.
 */
static int
key_guard_answer(const struct orgw_io *io, const struct orgw_env *env,
		 const struct api *api, const char *path, uint64_t key,
		 bool is_operator, int *rc)
{
	char extra[64], a[GUARD_ADDR_MAX * 4], p[PATH_MAX_BYTES * 4];
	int64_t wait;

	if (is_operator)
		return 0;
	pthread_mutex_lock(&key_guard_mu);
	wait = guard_wait(&key_guard, env->remote_addr, key, clock_now_s());
	pthread_mutex_unlock(&key_guard_mu);
	if (wait == 0)
		return 0;
	log_msg("auth", "time=%lld held addr=%s path=%s retry_after=%lld",
		(long long)clock_now_s(),
		log_safe(a, sizeof(a), env->remote_addr),
		log_safe(p, sizeof(p), path), (long long)wait);
	snprintf(extra, sizeof(extra), "Retry-After: %lld\r\n",
		 (long long)wait);
	*rc = relay_error(io, api, 429, "rate_limit_error",
			  "too_many_refused_keys", NULL,
			  "too many wrong keys from this address; retry "
			  "after Retry-After seconds",
			  extra);
	return 1;
}

/* What key is among the team keys: TEAM_ADMIN, a key given --admin (it
 * may read what the operator's key reads: /stats, /metrics, /status,
 * /__cron); TEAM_PLAIN, another active key (a valid key that lacks that
 * right: 403, not a wrong key); TEAM_NONE, no team key (or the keys store
 * could not say). */
enum team_kind { TEAM_NONE, TEAM_PLAIN, TEAM_ADMIN };

static enum team_kind
team_key_kind(const struct orgw_conf *c, const char *key)
{
	struct teamauth t;

	if (key == NULL ||
	    teamauth_identify_key(c, key, clock_now_s(), &t) != TA_TEAM)
		return TEAM_NONE;
	return t.key.admin ? TEAM_ADMIN : TEAM_PLAIN;
}

/*
 * POST /status, application/x-www-form-urlencoded: "key=<client key>"
 * logs in (303 back to the page with the cookie; the key compared in
 * constant time), a wrong key gets the form again with 401, and
 * "logout=1" clears the cookie.  The key never goes into a URL (access
 * logs keep query strings) nor into the cookie (statusauth.h).
 */
static int
handle_status_post(const struct orgw_io *io, const struct orgw_env *env,
		   const struct orgw_conf *c, const struct api *api)
{
	char body[STATUS_FORM_MAX_BYTES + 1], key[STATUS_FORM_MAX_BYTES];
	char tok[STATUSAUTH_TOKEN_MAX], where[512], extra[1024], flag[8];
	const char *secure;
	unsigned long long cl;
	enum team_kind kind = TEAM_NONE;
	size_t got = 0;
	uint64_t hash;
	ssize_t n;
	int rc;
	bool ok;

	if (http_content_length(env->content_length, &cl) != ORGW_OK ||
	    cl > STATUS_FORM_MAX_BYTES)
		return status_login(io, 400, "the form could not be read");
	if (env->content_type == NULL ||
	    strncasecmp(env->content_type,
			"application/x-www-form-urlencoded", 33) != 0)
		return status_login(io, 415, "send the form");
	while (got < (size_t)cl &&
	       (n = io->read(io->ctx, body + got, (size_t)cl - got)) > 0)
		got += (size_t)n;
	if (got < (size_t)cl)
		return status_login(io, 400, "the form could not be read");
	body[got] = '\0';
	status_location(env, where, sizeof(where));
	secure = (env->https != NULL && strcasecmp(env->https, "on") == 0) ||
				 (env->scheme != NULL &&
				  strcasecmp(env->scheme, "https") == 0) ?
			 "; Secure" :
			 "";
	if (statusauth_form_get(body, got, "logout", flag, sizeof(flag))) {
		snprintf(extra, sizeof(extra),
			 "Location: %s\r\nSet-Cookie: " STATUSAUTH_COOKIE
			 "=; Max-Age=0; HttpOnly; SameSite=Strict; Path=/%s\r\n",
			 where, secure);
		return status_redirect(io, extra);
	}
	if (!statusauth_form_get(body, got, "key", key, sizeof(key)))
		key[0] = '\0';
	ok = key[0] != '\0' && statusauth_key_eq(key, c->custom_access_key);
	hash = guard_hash(key);
	/* The guard after the form is read: it lets the operator's key
	 * through, and only the form carries the key here. */
	if (key_guard_answer(io, env, api, "/status", hash, ok, &rc)) {
		OPENSSL_cleanse(key, sizeof(key));
		OPENSSL_cleanse(body, sizeof(body));
		return rc;
	}
	if (!ok && key[0] != '\0')
		kind = team_key_kind(c, key);
	OPENSSL_cleanse(key, sizeof(key));
	OPENSSL_cleanse(body, sizeof(body));
	if (kind == TEAM_PLAIN)
		return status_login(io, 403,
				    "this key may not open the status page; "
				    "it needs the operator's key or --admin");
	if (!ok && kind != TEAM_ADMIN) {
		key_refused(env, "status_login", "/status", hash);
		return status_login(io, 401, "wrong key");
	}
	if (statusauth_token(c->custom_access_key,
			     clock_now_s() + STATUSAUTH_TTL_SECONDS, tok,
			     sizeof(tok)) != ORGW_OK)
		return status_login(io, 500, "could not make a token");
	snprintf(extra, sizeof(extra),
		 "Location: %s\r\nSet-Cookie: " STATUSAUTH_COOKIE
		 "=%s; Max-Age=%d; HttpOnly; SameSite=Strict; Path=/%s\r\n",
		 where, tok, STATUSAUTH_TTL_SECONDS, secure);
	return status_redirect(io, extra);
}


/*
 * GET /metrics: Prometheus text 0.0.4.  A scraper's
 * key, METRICS_KEY, lets it read the counters without being able to
 * send chat requests; the client key works too (it reads /stats, the
 * same numbers).  Both compared in constant time (http_key_ok).
 */
static int
handle_metrics(const struct orgw_io *io, const struct orgw_env *env,
	       const struct orgw_conf *c, const struct orgw_load *load)
{
	enum team_kind kind = TEAM_NONE;
	struct buf out = {0};
	char h[128];
	enum orgw_err err;
	int n, rc = -1;

	if (!http_key_ok(env, c->metrics_key) &&
	    !http_key_ok(env, c->custom_access_key) &&
	    (kind = team_key_kind(c, http_key_token(env))) != TEAM_ADMIN) {
		if (kind == TEAM_PLAIN)
			return http_error(io, 403, "permission_error",
					  "admin_key_required", NULL,
					  "this key may not read this path; "
					  "it needs the operator's key, "
					  "METRICS_KEY or --admin",
					  NULL);
		if (http_key_sent(env))
			key_refused(env, "metrics_key", "/metrics",
				    guard_hash(http_key_token(env)));
		return http_error(io, 401, "invalid_request_error",
				  "invalid_api_key", NULL,
				  http_key_sent(env) ?
					  "incorrect API key provided" :
					  "missing API key: send "
					  "Authorization: Bearer <METRICS_KEY>",
				  "WWW-Authenticate: Bearer\r\n");
	}
	err = stats_metrics(c, clock_now_s(),
			    load != NULL ? (int64_t)load_in_flight(load) : -1,
			    &out);
	if (err != ORGW_OK) {
		buf_free(&out);
		log_warn("metrics: state unreadable: %s", orgw_strerror(err));
		return http_error(io, 503, "server_error", NULL, NULL,
				  "state unavailable", NULL);
	}
	n = snprintf(h, sizeof(h),
		     "Cache-Control: no-cache\r\nContent-Length: %zu\r\n",
		     out.len);
	if (n > 0 && (size_t)n < sizeof(h) &&
	    http_head(io, 200, PROM_CONTENT_TYPE, h) == 0 &&
	    io->write(io->ctx, out.p, out.len) == 0)
		rc = 0;
	buf_free(&out);
	return rc;
}

/* POST /__cron: one scoring run at a time, at most every
 * CRON_MIN_INTERVAL_SECONDS (429 with Retry-After otherwise). */
static int
handle_cron(const struct orgw_io *io, const struct orgw_conf *c)
{
	char *s, extra[64];
	int64_t retry = 0;
	enum orgw_err err;

	err = scorerun_cron_locked(c, c->cron_min_interval_seconds,
				   clock_now_s(), &s, &retry);
	if (err == ORGW_EBUSY) {
		snprintf(extra, sizeof(extra), "Retry-After: %lld\r\n",
			 (long long)retry);
		return http_error(io, 429, "rate_limit_exceeded",
				  "rate_limit_exceeded", NULL,
				  "a scoring run is in progress or ran less "
				  "than CRON_MIN_INTERVAL_SECONDS ago",
				  extra);
	}
	if (err != ORGW_OK)
		return http_error(io, 503, "server_error", NULL, NULL,
				  "the scoring lock is unavailable", NULL);
	return json_text_send(io, NULL, s, "scoring run failed");
}

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

static int overloaded(const struct orgw_io *io, const struct api *api,
		      const char *msg);

/* How long a request body may take to arrive: 10 s, and a second more
 * per 64 kB (an 8 MiB body: 141 s, the pace of a 0.5 Mbit/s uplink). */
#define BODY_READ_BASE_MS 10000
#define BODY_READ_BYTES_PER_MS 64

/* What overloaded() tells the client: every thread of the host is busy,
 * or the host's requests hold HOST_PARSE_MEMORY_BYTES already. */
static const char threads_busy[] =
	"every worker thread of the gateway is busy; retry after "
	"Retry-After seconds";
static const char mem_busy[] =
	"the gateway holds as much request memory as it may; retry after "
	"Retry-After seconds";

/* Reads the body per RFC 3875 4.1.2 and hands it to the relay, which
 * logs the request itself (*logged).  The body and the cJSON tree its
 * parse will build are counted in the host's memory budget
 * (slots_mem_take) before either is allocated: the body at its
 * Content-Length, the tree from one pass over the body (jsonscan_size),
 * so a body of millions of small values is refused, not parsed. */
static int
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
	if (!slots_mem_take((size_t)cl, c->host_parse_memory_bytes))
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
	if (!slots_mem_take(tree, c->host_parse_memory_bytes)) {
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
	slots_mem_give(held);
	return rc;
}

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
		slots_peek(&now);
		if (!load_saturated(&now))
			return false;
	}
	return true;
}

/* 503 server_overloaded with Retry-After, in the API's shape; msg says
 * what the host is out of. */
static int
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
	side = slots_side_enter();
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
	slots_side_leave();
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
				      statusauth_cookie_ok(env->cookie,
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
