/*
 * gateway_status.c - the operator's page: GET /status (the page with a
 * valid cookie, else the login form) and POST /status (log in with the
 * client key, or log out).  Logins go through the key guard
 * (gateway_auth.c); the cookie is statuslogin.h's, the HTML
 * statuspage.h's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>
#include <openssl/crypto.h>

#include "api.h"
#include "clock.h"
#include "gateway_impl.h"
#include "stats.h"
#include "statuslogin.h"
#include "statuspage.h"
#define STATUS_FORM_MAX_BYTES 4096

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
int
handle_status(const struct orgw_io *io, const struct orgw_env *env,
	      const struct orgw_conf *c)
{
	struct statuspage_opts o;
	int64_t now = clock_now_s();
	cJSON *tree;
	char *html;
	size_t len = 0;

	if (!statuslogin_cookie_ok(env->cookie, c->custom_access_key, now))
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

/*
 * POST /status, application/x-www-form-urlencoded: "key=<client key>"
 * logs in (303 back to the page with the cookie; the key compared in
 * constant time), a wrong key gets the form again with 401, and
 * "logout=1" clears the cookie.  The key never goes into a URL (access
 * logs keep query strings) nor into the cookie (statuslogin.h).
 */
int
handle_status_post(const struct orgw_io *io, const struct orgw_env *env,
		   const struct orgw_conf *c, const struct api *api)
{
	char body[STATUS_FORM_MAX_BYTES + 1], key[STATUS_FORM_MAX_BYTES];
	char tok[STATUSLOGIN_TOKEN_MAX], where[512], extra[1024], flag[8];
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
	if (statuslogin_form_get(body, got, "logout", flag, sizeof(flag))) {
		snprintf(extra, sizeof(extra),
			 "Location: %s\r\nSet-Cookie: " STATUSLOGIN_COOKIE
			 "=; Max-Age=0; HttpOnly; SameSite=Strict; Path=/%s\r\n",
			 where, secure);
		return status_redirect(io, extra);
	}
	if (!statuslogin_form_get(body, got, "key", key, sizeof(key)))
		key[0] = '\0';
	ok = key[0] != '\0' && statuslogin_key_eq(key, c->custom_access_key);
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
	if (statuslogin_token(c->custom_access_key,
			      clock_now_s() + STATUSLOGIN_TTL_SECONDS, tok,
			      sizeof(tok)) != ORGW_OK)
		return status_login(io, 500, "could not make a token");
	snprintf(extra, sizeof(extra),
		 "Location: %s\r\nSet-Cookie: " STATUSLOGIN_COOKIE
		 "=%s; Max-Age=%d; HttpOnly; SameSite=Strict; Path=/%s\r\n",
		 where, tok, STATUSLOGIN_TTL_SECONDS, secure);
	return status_redirect(io, extra);
}
