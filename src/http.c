/*
 * http.c - CGI/FastCGI request variables in, CGI response headers and
 * OpenAI-shaped JSON errors out.  Escaping happens here, at the output
 * edge, with cJSON (never string concatenation of untrusted text).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "api.h"
#include "http.h"
#include "statuslogin.h"

/* The variables orgw reads, sorted by name for bsearch. */
static const struct env_var {
	const char *name;
	size_t off;	/* of its char * in struct orgw_env */
} env_vars[] = {
	{"CONTENT_LENGTH", offsetof(struct orgw_env, content_length)},
	{"CONTENT_TYPE", offsetof(struct orgw_env, content_type)},
	{"HTTPS", offsetof(struct orgw_env, https)},
	{"HTTP_ANTHROPIC_BETA", offsetof(struct orgw_env, anthropic_beta)},
	{"HTTP_ANTHROPIC_VERSION",
	 offsetof(struct orgw_env, anthropic_version)},
	{"HTTP_AUTHORIZATION", offsetof(struct orgw_env, authorization)},
	{"HTTP_CONTENT_ENCODING", offsetof(struct orgw_env, content_encoding)},
	{"HTTP_COOKIE", offsetof(struct orgw_env, cookie)},
	{"HTTP_SESSION_ID", offsetof(struct orgw_env, session_id)},
	{"HTTP_X_ANTHROPIC_BETA", offsetof(struct orgw_env, x_anthropic_beta)},
	{"HTTP_X_API_KEY", offsetof(struct orgw_env, x_api_key)},
	{"HTTP_X_CLAUDE_CODE_SESSION_ID",
	 offsetof(struct orgw_env, claude_session_id)},
	{"HTTP_X_OPENROUTER_METADATA", offsetof(struct orgw_env, or_metadata)},
	{"HTTP_X_SESSION_ID", offsetof(struct orgw_env, x_session_id)},
	{"PATH_INFO", offsetof(struct orgw_env, path_info)},
	{"QUERY_STRING", offsetof(struct orgw_env, query)},
	{"REMOTE_ADDR", offsetof(struct orgw_env, remote_addr)},
	{"REQUEST_METHOD", offsetof(struct orgw_env, method)},
	{"REQUEST_SCHEME", offsetof(struct orgw_env, scheme)},
	{"REQUEST_URI", offsetof(struct orgw_env, request_uri)},
	{"SCRIPT_NAME", offsetof(struct orgw_env, script_name)},
};
/* One row for every member: http_env_free() frees them through it. */
_Static_assert(sizeof(struct orgw_env) ==
		       sizeof(env_vars) / sizeof(env_vars[0]) * sizeof(char *),
	       "a member of struct orgw_env without its row in env_vars");

/* The member of e that v fills. */
static char **
env_slot(struct orgw_env *e, const struct env_var *v)
{
	return (char **)(void *)((char *)e + v->off);
}

/* A "NAME=value" string's name, for bsearch. */
struct env_name {
	const char *p;
	size_t len;
};

static int
env_cmp(const void *key, const void *elt)
{
	const struct env_name *k = key;
	const struct env_var *v = elt;
	int c = strncmp(k->p, v->name, k->len);

	return c != 0 ? c : v->name[k->len] == '\0' ? 0 : -1;
}

enum orgw_err
http_env_load(struct orgw_env *e, char *const *envp)
{
	const struct env_var *v;
	struct env_name k;
	const char *eq;
	char **slot;

	memset(e, 0, sizeof(*e));
	/* One walk of the environment, where a lookup of each name in
	 * turn (getenv, FCGX_GetParam) walks it 18 times.  The first of
	 * two equal names counts, as with those. */
	for (; envp != NULL && *envp != NULL; envp++) {
		if ((eq = strchr(*envp, '=')) == NULL)
			continue;
		k.p = *envp;
		k.len = (size_t)(eq - *envp);
		v = bsearch(&k, env_vars, sizeof(env_vars) / sizeof(env_vars[0]),
			    sizeof(env_vars[0]), env_cmp);
		if (v == NULL)
			continue;
		slot = env_slot(e, v);
		if (*slot == NULL && (*slot = strdup(eq + 1)) == NULL) {
			http_env_free(e);
			return ORGW_ENOMEM;
		}
	}
	return ORGW_OK;
}

void
http_env_free(struct orgw_env *e)
{
	size_t i;

	if (e == NULL)
		return;
	for (i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++)
		free(*env_slot(e, &env_vars[i]));
	memset(e, 0, sizeof(*e));
}

/* True when p[0..len) begins with the path segment seg ("/api"). */
static bool
segment(const char *p, size_t len, const char *seg)
{
	size_t k = strlen(seg);

	return len >= k && memcmp(p, seg, k) == 0 && (len == k || p[k] == '/');
}

void
http_route_path(const struct orgw_env *e, char *dst, size_t n)
{
	const char *p;
	size_t len, sl;

	if (n == 0)
		return;
	dst[0] = '\0';
	if (e->path_info != NULL && e->path_info[0] != '\0') {
		p = e->path_info;
		len = strlen(p);
	} else if (e->request_uri != NULL) {
		p = e->request_uri;
		len = strcspn(p, "?#");
		/* Mounted below a prefix (SCRIPT_NAME /orgw, REQUEST_URI
		 * /orgw/v1/...): the path is what follows the prefix. */
		sl = e->script_name ? strlen(e->script_name) : 0;
		if (sl > 1 && sl < len && p[sl] == '/' &&
		    memcmp(p, e->script_name, sl) == 0) {
			p += sl;
			len -= sl;
		}
	} else {
		return;
	}
	/* One leading "/api", then one leading "/v1", each a whole
	 * segment: https://host, /v1, /api and /api/v1 all work as an OpenAI
	 * SDK's base URL (docs/design.md section 2). */
	if (segment(p, len, "/api")) {
		p += 4;
		len -= 4;
	}
	if (segment(p, len, "/v1")) {
		p += 3;
		len -= 3;
		if (len == 0) {
			p = "/";
			len = 1;
		}
	}
	if (len >= n)
		return;
	memcpy(dst, p, len);
	dst[len] = '\0';
}

bool
http_content_length_set(const char *s)
{
	return s != NULL && s[0] != '\0';
}

enum orgw_err
http_content_length(const char *s, unsigned long long *out)
{
	char *end;

	*out = 0;
	/* Digits only (docs/style.md 5): strtoull alone takes a sign, leading
	 * space and more. */
	if (!http_content_length_set(s) || strspn(s, "0123456789") != strlen(s))
		return ORGW_EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0') {
		*out = 0;
		return ORGW_EINVAL;
	}
	return ORGW_OK;
}

/* RFC 9110 section 15 and the IANA registry, plus the 5xx that
 * Cloudflare (524) and OpenRouter/Anthropic (529) answer with and orgw
 * relays.  Apache passes a CGI's phrase on to the client as it is, so
 * every status orgw may send needs its own. */
static const struct {
	int status;
	const char *phrase;
} reasons[] = {
	{100, "Continue"},
	{101, "Switching Protocols"},
	{102, "Processing"},
	{103, "Early Hints"},
	{200, "OK"},
	{201, "Created"},
	{202, "Accepted"},
	{203, "Non-Authoritative Information"},
	{204, "No Content"},
	{205, "Reset Content"},
	{206, "Partial Content"},
	{207, "Multi-Status"},
	{208, "Already Reported"},
	{226, "IM Used"},
	{300, "Multiple Choices"},
	{301, "Moved Permanently"},
	{302, "Found"},
	{303, "See Other"},
	{304, "Not Modified"},
	{305, "Use Proxy"},
	{307, "Temporary Redirect"},
	{308, "Permanent Redirect"},
	{400, "Bad Request"},
	{401, "Unauthorized"},
	{402, "Payment Required"},
	{403, "Forbidden"},
	{404, "Not Found"},
	{405, "Method Not Allowed"},
	{406, "Not Acceptable"},
	{407, "Proxy Authentication Required"},
	{408, "Request Timeout"},
	{409, "Conflict"},
	{410, "Gone"},
	{411, "Length Required"},
	{412, "Precondition Failed"},
	{413, "Payload Too Large"},
	{414, "URI Too Long"},
	{415, "Unsupported Media Type"},
	{416, "Range Not Satisfiable"},
	{417, "Expectation Failed"},
	{421, "Misdirected Request"},
	{422, "Unprocessable Entity"},
	{423, "Locked"},
	{424, "Failed Dependency"},
	{425, "Too Early"},
	{426, "Upgrade Required"},
	{428, "Precondition Required"},
	{429, "Too Many Requests"},
	{431, "Request Header Fields Too Large"},
	{451, "Unavailable For Legal Reasons"},
	{500, "Internal Server Error"},
	{501, "Not Implemented"},
	{502, "Bad Gateway"},
	{503, "Service Unavailable"},
	{504, "Gateway Timeout"},
	{505, "HTTP Version Not Supported"},
	{506, "Variant Also Negotiates"},
	{507, "Insufficient Storage"},
	{508, "Loop Detected"},
	{510, "Not Extended"},
	{511, "Network Authentication Required"},
	{524, "A Timeout Occurred"},
	{529, "Site Overloaded"},
};

const char *
http_reason(int status)
{
	/* An unregistered code (a relayed 418 or 599) gets its class's
	 * name (RFC 9110 section 15): a client treats it as x00 of the
	 * class anyway, and "Error" would be wrong for 1xx to 3xx. */
	static const char *const cls[] = {"Informational", "Successful",
					  "Redirection", "Client Error",
					  "Server Error"};
	size_t i;

	for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (reasons[i].status == status)
			return reasons[i].phrase;
	if (status >= 100 && status <= 599)
		return cls[status / 100 - 1];
	return "Unknown";
}

int
http_head(const struct orgw_io *io, int status, const char *ctype,
	  const char *extra)
{
	char h[512];
	int n;

	n = snprintf(h, sizeof(h), "Status: %d %s\r\nContent-Type: %s\r\n",
		     status, http_reason(status), ctype);
	if (n < 0 || (size_t)n >= sizeof(h))
		return -1;
	if (io->status != NULL)
		*io->status = status;
	if (io->write(io->ctx, h, (size_t)n) != 0)
		return -1;
	if (extra != NULL && io->write(io->ctx, extra, strlen(extra)) != 0)
		return -1;
	return io->write(io->ctx, "\r\n", 2);
}

int
http_json(const struct orgw_io *io, int status, const char *extra,
	  const char *body, size_t len)
{
	char h[1024];
	int n;

	/* The length lets the web server pass the body on as it is and
	 * end the client's response with its last byte, not when this
	 * worker ends the request (lighttpd otherwise chunks it and waits
	 * for FCGI_END_REQUEST). */
	n = snprintf(h, sizeof(h), "%sContent-Length: %zu\r\n",
		     extra ? extra : "", len);
	/* Not flushed: every caller ends the request next, and the end
	 * (FCGX_Finish_r) flushes, so the body and FCGI_END_REQUEST leave
	 * in one write.  Flushed apart, lighttpd had the whole body first,
	 * closed, and the END_REQUEST met EPIPE and a SIGPIPE per request. */
	if (n < 0 || (size_t)n >= sizeof(h) ||
	    http_head(io, status, "application/json", h) != 0 ||
	    io->write(io->ctx, body, len) != 0)
		return -1;
	return 0;
}

int
http_error(const struct orgw_io *io, int status, const char *type,
	   const char *code, const char *param, const char *message,
	   const char *extra)
{
	char *s = api_openai_error_json(type, code, param, message);
	int rc;

	if (s != NULL)
		rc = http_json(io, status, extra, s, strlen(s));
	else
		/* Out of memory: a fixed body still tells the client. */
		rc = http_json(io, 500, NULL, HTTP_OOM_JSON,
			       sizeof(HTTP_OOM_JSON) - 1);
	cJSON_free(s);
	return rc;
}

bool
http_auth_ok(const char *header, const char *key)
{
	const char *tok;

	if (header == NULL || key == NULL || key[0] == '\0')
		return false;
	/* RFC 6750 2.1: the scheme is case-insensitive. */
	if (strncasecmp(header, "Bearer ", 7) != 0)
		return false;
	tok = header + 7;
	while (*tok == ' ')
		tok++;
	/* The same constant-time compare as the status page's login. */
	return statuslogin_key_eq(tok, key);
}

bool
http_key_ok(const struct orgw_env *e, const char *key)
{
	bool bearer, xkey;

	if (key == NULL || key[0] == '\0')
		return false;
	/* Both compared, whichever was sent, so the time taken does not
	 * say which one a guess was checked against. */
	bearer = http_auth_ok(e->authorization, key);
	xkey = e->x_api_key != NULL && statuslogin_key_eq(e->x_api_key, key);
	return bearer || xkey;
}

const char *
http_key_token(const struct orgw_env *e)
{
	const char *tok;

	if (e->authorization != NULL &&
	    strncasecmp(e->authorization, "Bearer ", 7) == 0) {
		tok = e->authorization + 7;
		while (*tok == ' ')
			tok++;
		if (*tok != '\0')
			return tok;
	}
	if (e->x_api_key != NULL && e->x_api_key[0] != '\0')
		return e->x_api_key;
	return NULL;
}

bool
http_key_sent(const struct orgw_env *e)
{
	return (e->authorization != NULL && e->authorization[0] != '\0') ||
	       (e->x_api_key != NULL && e->x_api_key[0] != '\0');
}
