/*
 * test_http.c - unit tests for the pure helpers of http.c: the route path
 * (docs/design.md section 2), client-key auth (docs/design.md section 3),
 * reason phrases, and the header block and OpenAI-shaped error written
 * through a fake struct orgw_io that records into a buffer.
 */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "t.h"
#include "buf.h"
#include "http.h"

/* ---- route path ---- */

static char *
dup(const char *s)
{
	char *p;

	if (s == NULL)
		return NULL;
	if ((p = malloc(strlen(s) + 1)) == NULL)
		abort();
	memcpy(p, s, strlen(s) + 1);
	return p;
}

/* The route path for PATH_INFO pi and REQUEST_URI uri, into out[n]. */
static const char *
rpath(const char *pi, const char *uri, char *out, size_t n)
{
	struct orgw_env e;

	memset(&e, 0, sizeof(e));
	e.path_info = dup(pi);
	e.request_uri = dup(uri);
	http_route_path(&e, out, n);
	http_env_free(&e);
	return out;
}

static int
path_is(const char *pi, const char *uri, const char *want)
{
	char out[256];

	memset(out, 'Z', sizeof(out));
	return strcmp(rpath(pi, uri, out, sizeof(out)), want) == 0;
}

static void
test_route_path(void)
{
	char small[16];

	T_ASSERT("PATH_INFO wins over REQUEST_URI",
	         path_is("/v1/chat/completions", "/cgi-bin/orgw.fcgi/x?y",
	                 "/chat/completions"));
	T_ASSERT("empty PATH_INFO falls back to REQUEST_URI",
	         path_is("", "/v1/models?x=1", "/models"));
	T_ASSERT("REQUEST_URI query stripped",
	         path_is(NULL, "/v1/chat/completions?stream=1&a=b",
	                 "/chat/completions"));
	T_ASSERT("REQUEST_URI fragment stripped",
	         path_is(NULL, "/stats#top", "/stats"));
	T_ASSERT("/api/v1/x -> /x",
	         path_is(NULL, "/api/v1/chat/completions?x",
	                 "/chat/completions"));
	T_ASSERT("/api/v1/x in PATH_INFO -> /x",
	         path_is("/api/v1/models", NULL, "/models"));
	T_ASSERT("/api/x -> /x (base URL https://host/api)",
	         path_is(NULL, "/api/chat/completions", "/chat/completions"));
	T_ASSERT("/x as is (base URL https://host)",
	         path_is(NULL, "/chat/completions", "/chat/completions"));
	T_ASSERT("/api/v1 alone -> /", path_is(NULL, "/api/v1", "/"));
	T_ASSERT("/v1 alone -> /", path_is(NULL, "/v1", "/"));
	T_ASSERT("/api/v1/ -> /", path_is(NULL, "/api/v1/", "/"));
	T_ASSERT("/api/v1?q -> /", path_is(NULL, "/api/v1?q=1", "/"));
	T_ASSERT("/apiv1/models untouched",
	         path_is(NULL, "/apiv1/models", "/apiv1/models"));
	T_ASSERT("/api/v1x: /api dropped, /v1x is no /v1 segment",
	         path_is(NULL, "/api/v1x", "/v1x"));
	T_ASSERT("/v1x/models untouched",
	         path_is(NULL, "/v1x/models", "/v1x/models"));
	T_ASSERT("/api/v2/models -> /v2/models",
	         path_is(NULL, "/api/v2/models", "/v2/models"));
	T_ASSERT("/api/healthz -> /healthz",
	         path_is(NULL, "/api/healthz", "/healthz"));
	T_ASSERT("/healthz as is", path_is("/healthz", NULL, "/healthz"));
	T_ASSERT("only one /api is dropped",
	         path_is(NULL, "/api/api/v1/x", "/api/v1/x"));
	T_ASSERT("only one /v1 is dropped",
	         path_is(NULL, "/v1/v1/models", "/v1/models"));
	T_ASSERT("/v1 before /api is not an /api prefix",
	         path_is(NULL, "/v1/api/models", "/api/models"));
	T_ASSERT("query only gives \"\"", path_is(NULL, "?a=b", ""));
	T_ASSERT("neither set gives \"\"", path_is(NULL, NULL, ""));
	T_ASSERT("empty PATH_INFO, no REQUEST_URI gives \"\"",
	         path_is("", NULL, ""));

	T_ASSERT("exact fit: 9 chars into 10 bytes",
	         strcmp(rpath("/x/models", "/v1/x/models", small, 10),
	                "/x/models") == 0);
	memset(small, 'Z', sizeof(small));
	T_ASSERT("one short: 10 chars into 10 bytes gives \"\"",
	         rpath("/xx/models", NULL, small, 10)[0] == '\0');
	memset(small, 'Z', sizeof(small));
	rpath("/v1/models", NULL, small, 0);
	T_ASSERT("size 0: nothing written", small[0] == 'Z');
}

/* ---- auth ---- */

static void
test_auth(void)
{
	const char *key = "sk-orgw-0123456789";

	T_ASSERT("Bearer + key ok",
	         http_auth_ok("Bearer sk-orgw-0123456789", key));
	T_ASSERT("bearer lower-case ok",
	         http_auth_ok("bearer sk-orgw-0123456789", key));
	T_ASSERT("BEARER upper-case ok",
	         http_auth_ok("BEARER sk-orgw-0123456789", key));
	T_ASSERT("BeArEr mixed case ok",
	         http_auth_ok("BeArEr sk-orgw-0123456789", key));
	T_ASSERT("several spaces after the scheme ok",
	         http_auth_ok("Bearer   sk-orgw-0123456789", key));
	T_ASSERT("wrong key refused",
	         !http_auth_ok("Bearer sk-orgw-0123456780", key));
	T_ASSERT("key differing in the first byte refused",
	         !http_auth_ok("Bearer Sk-orgw-0123456789", key));
	T_ASSERT("key case matters",
	         !http_auth_ok("Bearer SK-ORGW-0123456789", key));
	T_ASSERT("prefix of the key refused",
	         !http_auth_ok("Bearer sk-orgw-012345678", key));
	T_ASSERT("key plus extra refused",
	         !http_auth_ok("Bearer sk-orgw-0123456789x", key));
	T_ASSERT("key plus trailing space refused",
	         !http_auth_ok("Bearer sk-orgw-0123456789 ", key));
	T_ASSERT("empty token refused", !http_auth_ok("Bearer ", key));
	T_ASSERT("scheme only refused", !http_auth_ok("Bearer", key));
	T_ASSERT("no space after scheme refused",
	         !http_auth_ok("Bearersk-orgw-0123456789", key));
	T_ASSERT("tab after scheme refused",
	         !http_auth_ok("Bearer\tsk-orgw-0123456789", key));
	T_ASSERT("Basic scheme refused",
	         !http_auth_ok("Basic sk-orgw-0123456789", key));
	T_ASSERT("bare key without scheme refused",
	         !http_auth_ok("sk-orgw-0123456789", key));
	T_ASSERT("NULL header refused", !http_auth_ok(NULL, key));
	T_ASSERT("empty header refused", !http_auth_ok("", key));
	T_ASSERT("NULL key configured refused",
	         !http_auth_ok("Bearer sk-orgw-0123456789", NULL));
	T_ASSERT("empty key configured refused (even with an empty token)",
	         !http_auth_ok("Bearer ", "") && !http_auth_ok("Bearer x", ""));
	T_ASSERT("one-byte key ok", http_auth_ok("Bearer k", "k"));
	T_ASSERT("token longer than a one-byte key refused",
	         !http_auth_ok("Bearer kk", "k"));
}

/* ---- output through a fake orgw_io ---- */

struct sink {
	struct buf out;
	int writes, flushes;
	int fail_at;		/* write number that fails (1-based), 0 none */
	int flush_fail;
	size_t len_at_flush;
};

static int
sink_write(void *ctx, const char *p, size_t n)
{
	struct sink *s = ctx;

	s->writes++;
	if (s->fail_at && s->writes >= s->fail_at)
		return -1;
	return buf_add(&s->out, p, n) == ORGW_OK ? 0 : -1;
}

static int
sink_flush(void *ctx)
{
	struct sink *s = ctx;

	s->flushes++;
	s->len_at_flush = s->out.len;
	return s->flush_fail ? -1 : 0;
}

static struct orgw_io
sink_io(struct sink *s)
{
	struct orgw_io io;

	memset(&io, 0, sizeof(io));
	memset(s, 0, sizeof(*s));
	io.ctx = s;
	io.write = sink_write;
	io.flush = sink_flush;
	io.client_fd = -1;
	return io;
}

/* The body after the blank line ending the header block, or NULL. */
static const char *
body_of(const struct sink *s)
{
	const char *p = s->out.p ? strstr(s->out.p, "\r\n\r\n") : NULL;

	return p ? p + 4 : NULL;
}

static const char *
str_at(const cJSON *o, const char *k)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

static void
test_error(void)
{
	static const char msg[] = "Incorrect \"key\"\nprovided \\ <x> \001";
	struct sink s;
	struct orgw_io io = sink_io(&s);
	const char *body;
	cJSON *o, *e;
	const char *v;

	T_ASSERT("http_error 401 returns 0",
	         http_error(&io, 401, "invalid_request_error",
	                    "invalid_api_key", NULL, msg,
	                    "WWW-Authenticate: Bearer\r\n") == 0);
	T_ASSERT("Status line first",
	         s.out.p && strncmp(s.out.p, "Status: 401 Unauthorized\r\n",
	                            26) == 0);
	T_ASSERT("Content-Type application/json",
	         s.out.p &&
	             strstr(s.out.p, "\r\nContent-Type: application/json\r\n"));
	T_ASSERT("extra header inside the header block",
	         s.out.p && (v = strstr(s.out.p, "WWW-Authenticate: Bearer\r\n")) &&
	             body_of(&s) && v < body_of(&s));
	body = body_of(&s);
	{
		char want[64];
		snprintf(want, sizeof(want), "\r\nContent-Length: %zu\r\n",
			 body ? strlen(body) : 0);
		T_ASSERT("Content-Length is the body's length, in the header "
			 "block",
			 body && (v = strstr(s.out.p, want)) && v < body);
	}
	o = body ? cJSON_Parse(body) : NULL;
	T_ASSERT("body is a JSON object", cJSON_IsObject(o));
	T_ASSERT("body has only \"error\"",
	         cJSON_GetArraySize(o) == 1 &&
	             cJSON_IsObject(e = cJSON_GetObjectItem(o, "error")));
	e = cJSON_GetObjectItem(o, "error");
	T_ASSERT("error.message round-trips exactly (escaped)",
	         (v = str_at(e, "message")) && strcmp(v, msg) == 0);
	T_ASSERT("error.type", (v = str_at(e, "type")) &&
	                           strcmp(v, "invalid_request_error") == 0);
	T_ASSERT("error.code", (v = str_at(e, "code")) &&
	                           strcmp(v, "invalid_api_key") == 0);
	T_ASSERT("error.param null",
	         cJSON_IsNull(cJSON_GetObjectItem(e, "param")));
	T_ASSERT("not flushed: the request's end sends it with END_REQUEST",
	         s.flushes == 0);
	cJSON_Delete(o);
	buf_free(&s.out);

	io = sink_io(&s);
	T_ASSERT("http_error with param and NULL code",
	         http_error(&io, 400, "invalid_request_error", NULL, "model",
	                    "bad model", NULL) == 0);
	body = body_of(&s);
	o = body ? cJSON_Parse(body) : NULL;
	e = cJSON_GetObjectItem(o, "error");
	T_ASSERT("400 status line",
	         s.out.p && strncmp(s.out.p, "Status: 400 Bad Request\r\n",
	                            25) == 0);
	T_ASSERT("code null", cJSON_IsNull(cJSON_GetObjectItem(e, "code")));
	T_ASSERT("param \"model\"",
	         (v = str_at(e, "param")) && strcmp(v, "model") == 0);
	{
		char want[200];
		snprintf(want, sizeof(want),
			 "Status: 400 Bad Request\r\n"
			 "Content-Type: application/json\r\n"
			 "Content-Length: %zu\r\n\r\n",
			 body ? strlen(body) : 0);
		T_ASSERT("no extra: header block is status, type, length",
			 s.out.p && body &&
				 (size_t)(body - s.out.p) == strlen(want) &&
				 strncmp(s.out.p, want, strlen(want)) == 0);
	}
	cJSON_Delete(o);
	buf_free(&s.out);

	io = sink_io(&s);
	s.fail_at = 1;
	T_ASSERT("client gone at the first write: -1",
	         http_error(&io, 503, "server_error", NULL, NULL, "x", NULL) ==
	             -1);
	T_ASSERT("client gone: no flush", s.flushes == 0);
	buf_free(&s.out);

	io = sink_io(&s);
	s.fail_at = 4;	/* head, length, blank line ok; body fails */
	T_ASSERT("client gone at the body: -1, no flush",
	         http_json(&io, 200, NULL, "{}", 2) == -1 && s.flushes == 0);
	buf_free(&s.out);

	io = sink_io(&s);
	s.flush_fail = 1;
	T_ASSERT("a flush that would fail is not called: 0",
	         http_json(&io, 200, NULL, "{}", 2) == 0 && s.flushes == 0);
	buf_free(&s.out);

	io = sink_io(&s);
	T_ASSERT("http_json 200 writes the exact bytes",
	         http_json(&io, 200, "X-Orgw-Route: locked\r\n", "{\"a\":1}",
	                   7) == 0 &&
	             s.out.p &&
	             strcmp(s.out.p, "Status: 200 OK\r\n"
	                             "Content-Type: application/json\r\n"
	                             "X-Orgw-Route: locked\r\n"
	                             "Content-Length: 7\r\n\r\n"
	                             "{\"a\":1}") == 0);
	buf_free(&s.out);

	io = sink_io(&s);
	{
		char ctype[600];
		memset(ctype, 'c', sizeof(ctype) - 1);
		ctype[sizeof(ctype) - 1] = '\0';
		T_ASSERT("header block that does not fit: -1, nothing written",
		         http_head(&io, 200, ctype, NULL) == -1 &&
		             s.out.len == 0 && s.writes == 0);
	}
	buf_free(&s.out);

	io = sink_io(&s);
	T_ASSERT("unregistered status: its class's name",
	         http_head(&io, 599, "text/plain", NULL) == 0 && s.out.p &&
	             strncmp(s.out.p, "Status: 599 Server Error\r\n", 26) == 0);
	buf_free(&s.out);

	io = sink_io(&s);
	T_ASSERT("the /status login's 303 goes out as See Other",
	         http_head(&io, 303, "text/html", NULL) == 0 && s.out.p &&
	             strncmp(s.out.p, "Status: 303 See Other\r\n", 23) == 0);
	buf_free(&s.out);
}

static void
test_reason(void)
{
	static const struct {
		int status;
		const char *reason;
	} k[] = {
	    /* Every status orgw itself answers with. */
	    {200, "OK"},
	    {303, "See Other"},
	    {400, "Bad Request"},
	    {401, "Unauthorized"},
	    {402, "Payment Required"},
	    {403, "Forbidden"},
	    {404, "Not Found"},
	    {405, "Method Not Allowed"},
	    {411, "Length Required"},
	    {413, "Payload Too Large"},
	    {415, "Unsupported Media Type"},
	    {429, "Too Many Requests"},
	    {500, "Internal Server Error"},
	    {502, "Bad Gateway"},
	    {503, "Service Unavailable"},
	    {504, "Gateway Timeout"},
	    /* Statuses upstream may send and orgw relays. */
	    {204, "No Content"},
	    {408, "Request Timeout"},
	    {409, "Conflict"},
	    {422, "Unprocessable Entity"},
	    {524, "A Timeout Occurred"},
	    {529, "Site Overloaded"},
	    /* Unregistered: the class's name. */
	    {299, "Successful"},
	    {399, "Redirection"},
	    {418, "Client Error"},
	    {599, "Server Error"},
	    {99, "Unknown"},
	    {600, "Unknown"},
	};
	size_t i;
	int ok = 1;

	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		char what[64];
		snprintf(what, sizeof(what), "reason %d is \"%s\"", k[i].status,
		         k[i].reason);
		T_ASSERT(what, strcmp(http_reason(k[i].status), k[i].reason) ==
		                   0);
	}
	/* "Error" was the old fallback: a 303 went out to Apache's
	 * clients as "303 Error". */
	for (i = 100; i < 600; i++)
		if (http_reason((int)i) == NULL || http_reason((int)i)[0] == 0 ||
		    strcmp(http_reason((int)i), "Error") == 0)
			ok = 0;
	T_ASSERT("every status 100..599 has its phrase or its class's", ok);
}

/* ---- env ---- */

/* A constant array as the environment http_env_load() takes (it never
 * writes to it: environ and FastCGI's envp just are not const). */
#define WRITABLE(a) ((char *const *)(uintptr_t)(a))

static void
test_env(void)
{
	static const char *const envp[] = {
	    "REQUEST_METHOD=POST", "PATH_INFO=/v1/chat/completions",
	    "HTTP_AUTHORIZATION=Bearer k", "CONTENT_LENGTH=12",
	    "HTTP_X_OTHER=ignored", "NOEQUALS", "HTTP=short", "PATH_INFO_X=long",
	    "REQUEST_METHOD=GET", NULL};
	/* Every variable orgw reads, each found in one walk. */
	static const char *const all[] = {
	    "SCRIPT_NAME=a", "REQUEST_URI=b", "REQUEST_SCHEME=c",
	    "REQUEST_METHOD=d", "REMOTE_ADDR=e", "QUERY_STRING=f",
	    "PATH_INFO=g", "HTTP_X_OPENROUTER_METADATA=h", "HTTP_X_API_KEY=i",
	    "HTTP_X_ANTHROPIC_BETA=j", "HTTP_COOKIE=k",
	    "HTTP_CONTENT_ENCODING=l", "HTTP_AUTHORIZATION=m",
	    "HTTP_ANTHROPIC_VERSION=n", "HTTP_ANTHROPIC_BETA=o", "HTTPS=p",
	    "CONTENT_TYPE=q", "CONTENT_LENGTH=", "HTTP_X_SESSION_ID=r",
	    "HTTP_X_CLAUDE_CODE_SESSION_ID=s", "HTTP_SESSION_ID=t", NULL};
	struct orgw_env e;
	const char *const *kv = envp;

	T_ASSERT("env: an empty environment loads",
		 http_env_load(&e, NULL) == ORGW_OK && e.method == NULL);
	T_ASSERT("env: every variable read is found",
		 http_env_load(&e, WRITABLE(all)) == ORGW_OK && e.script_name &&
			 strcmp(e.script_name, "a") == 0 && e.request_uri &&
			 strcmp(e.request_uri, "b") == 0 && e.scheme &&
			 strcmp(e.scheme, "c") == 0 && e.method &&
			 strcmp(e.method, "d") == 0 && e.remote_addr &&
			 strcmp(e.remote_addr, "e") == 0 && e.query &&
			 strcmp(e.query, "f") == 0 && e.path_info &&
			 strcmp(e.path_info, "g") == 0 && e.or_metadata &&
			 strcmp(e.or_metadata, "h") == 0 && e.x_api_key &&
			 strcmp(e.x_api_key, "i") == 0 && e.x_anthropic_beta &&
			 strcmp(e.x_anthropic_beta, "j") == 0 && e.cookie &&
			 strcmp(e.cookie, "k") == 0 && e.content_encoding &&
			 strcmp(e.content_encoding, "l") == 0 &&
			 e.authorization && strcmp(e.authorization, "m") == 0 &&
			 e.anthropic_version &&
			 strcmp(e.anthropic_version, "n") == 0 &&
			 e.anthropic_beta && strcmp(e.anthropic_beta, "o") == 0 &&
			 e.https && strcmp(e.https, "p") == 0 && e.content_type &&
			 strcmp(e.content_type, "q") == 0 && e.content_length &&
			 e.content_length[0] == '\0' && e.x_session_id &&
			 strcmp(e.x_session_id, "r") == 0 &&
			 e.claude_session_id &&
			 strcmp(e.claude_session_id, "s") == 0 &&
			 e.session_id && strcmp(e.session_id, "t") == 0);
	http_env_free(&e);
	T_ASSERT("env load ok", http_env_load(&e, WRITABLE(envp)) == ORGW_OK);
	T_ASSERT("env: set variables copied",
	         e.method && strcmp(e.method, "POST") == 0 && e.path_info &&
	             strcmp(e.path_info, "/v1/chat/completions") == 0 &&
	             e.authorization && strcmp(e.authorization, "Bearer k") == 0 &&
	             e.content_length && strcmp(e.content_length, "12") == 0);
	T_ASSERT("env: the first of two equal names counts, as getenv",
	         strcmp(e.method, "POST") == 0);
	T_ASSERT("env: copies, not the caller's pointers",
	         e.method != kv[0] + 15 && e.path_info != kv[1] + 10);
	T_ASSERT("env: unset variables NULL",
	         e.request_uri == NULL && e.script_name == NULL &&
	             e.content_type == NULL && e.https == NULL);
	http_env_free(&e);
	T_ASSERT("env free clears", e.method == NULL && e.path_info == NULL);
	http_env_free(NULL);
}

static void
test_content_length(void)
{
	unsigned long long n = 7;

	T_ASSERT("CONTENT_LENGTH NULL is not set", !http_content_length_set(NULL));
	T_ASSERT("CONTENT_LENGTH empty is not set", !http_content_length_set(""));
	T_ASSERT("CONTENT_LENGTH 0 is set", http_content_length_set("0"));
	T_ASSERT("CONTENT_LENGTH 1234 parses",
		 http_content_length("1234", &n) == ORGW_OK && n == 1234);
	T_ASSERT("CONTENT_LENGTH 0 parses",
		 http_content_length("0", &n) == ORGW_OK && n == 0);
	T_ASSERT("CONTENT_LENGTH missing refused",
		 http_content_length(NULL, &n) == ORGW_EINVAL && n == 0);
	T_ASSERT("CONTENT_LENGTH negative refused",
		 http_content_length("-1", &n) == ORGW_EINVAL);
	T_ASSERT("CONTENT_LENGTH trailing bytes refused",
		 http_content_length("12abc", &n) == ORGW_EINVAL && n == 0);
	T_ASSERT("CONTENT_LENGTH +5 refused",
		 http_content_length("+5", &n) == ORGW_EINVAL && n == 0);
	T_ASSERT("CONTENT_LENGTH ' 5' refused",
		 http_content_length(" 5", &n) == ORGW_EINVAL && n == 0);
	T_ASSERT("CONTENT_LENGTH ' -5' refused",
		 http_content_length(" -5", &n) == ORGW_EINVAL && n == 0);
	T_ASSERT("CONTENT_LENGTH '5 ' refused",
		 http_content_length("5 ", &n) == ORGW_EINVAL && n == 0);
	T_ASSERT("CONTENT_LENGTH 0x5 refused",
		 http_content_length("0x5", &n) == ORGW_EINVAL && n == 0);
	T_ASSERT("CONTENT_LENGTH out of range refused",
		 http_content_length("99999999999999999999999", &n) ==
			 ORGW_EINVAL);
}

int
main(void)
{
	test_route_path();
	test_auth();
	test_error();
	test_reason();
	test_env();
	test_content_length();
	return T_REPORT();
}
