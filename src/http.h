/*
 * http.h - the request as the web server hands it over (CGI/FastCGI
 * variables, copied once: cgit prepare_context) and the response side
 * (CGI-style "Status:" header block, OpenAI-shaped JSON errors).
 *
 * struct orgw_io lets CGI mode, FastCGI mode and the tests share one
 * code path (kcgi runs its tests both ways).
 */
#ifndef ORGW_HTTP_H
#define ORGW_HTTP_H

#include <sys/types.h>

#include "orgw.h"

struct orgw_io {
	void *ctx;
	/* Reads up to n body bytes: >0 bytes, 0 at end, -1 on error. */
	ssize_t (*read)(void *ctx, char *buf, size_t n);
	/* Writes n bytes: 0, or -1 when the client is gone. */
	int (*write)(void *ctx, const char *p, size_t n);
	/* Pushes written bytes to the web server: 0, or -1 (gone). */
	int (*flush)(void *ctx);
	/* Reads and drops any rest of the request body (so the client
	 * socket is quiet while we wait on upstream). */
	void (*drain)(void *ctx);
	/* Ends the response now, so the web server can finish it towards
	 * the client while the caller does its bookkeeping; any later
	 * write or flush fails.  NULL when the transport cannot. */
	void (*finish)(void *ctx);
	int client_fd;		/* polled for hang-up; -1 when unknown */
	/* poll() events on client_fd that mean the client left: POLLIN
	 * for a FastCGI connection (an abort or a close), 0 for CGI's
	 * stdout (only a hang-up or an error counts). */
	short client_events;
	/* Where http_head() records the status it sent (for the request's
	 * log line); NULL for nowhere. */
	int *status;
	/* Sets how long a write may make no progress before it fails, from
	 * now on in this request (ms > 0); NULL when the transport cannot. */
	void (*send_timeout)(void *ctx, int64_t ms);
	/* Sets how long a read may wait for the next byte, from now on in
	 * this request (ms > 0; 0: as long as it takes); NULL when the
	 * transport cannot. */
	void (*recv_timeout)(void *ctx, int64_t ms);
};

/* The CGI variables orgw uses (RFC 3875 4.1), each a malloc'd copy or
 * NULL when unset.  Each member has its row, the variable's name, in
 * http.c's env_vars, which loads and frees them. */
struct orgw_env {
	char *method;		/* REQUEST_METHOD */
	char *path_info;	/* PATH_INFO */
	char *request_uri;	/* REQUEST_URI */
	char *script_name;	/* SCRIPT_NAME */
	char *authorization;	/* HTTP_AUTHORIZATION */
	char *content_length;	/* CONTENT_LENGTH */
	char *content_type;	/* CONTENT_TYPE */
	char *cookie;		/* HTTP_COOKIE (GET /status) */
	char *https;		/* HTTPS ("on" over TLS) */
	char *scheme;		/* REQUEST_SCHEME */
	char *x_api_key;	/* HTTP_X_API_KEY: Anthropic clients' key */
	char *content_encoding;	/* HTTP_CONTENT_ENCODING */
	char *query;		/* QUERY_STRING */
	/* Forwarded upstream unchanged (docs/design.md 11). */
	char *anthropic_version;	/* HTTP_ANTHROPIC_VERSION */
	char *anthropic_beta;		/* HTTP_ANTHROPIC_BETA */
	char *x_anthropic_beta;		/* HTTP_X_ANTHROPIC_BETA */
	char *or_metadata;		/* HTTP_X_OPENROUTER_METADATA */
	/* A conversation's key (conv.h): opencode's and OpenRouter's
	 * sticky header, Claude Code's, Codex CLI's. */
	char *x_session_id;		/* HTTP_X_SESSION_ID */
	char *claude_session_id;	/* HTTP_X_CLAUDE_CODE_SESSION_ID */
	char *session_id;		/* HTTP_SESSION_ID */
	char *remote_addr;	/* REMOTE_ADDR: the client, as the web server
				 * saw it (a front proxy's own address behind
				 * one) */
};

/* Fills e with copies of the variables of envp, an array of "NAME=value"
 * strings ended by NULL (borrowed for the call: environ, or a FastCGI
 * request's envp).  Returns ORGW_ENOMEM on failure (e is then freed). */
enum orgw_err http_env_load(struct orgw_env *e, char *const *envp);
void http_env_free(struct orgw_env *e);

/*
 * The request path below the mount point: PATH_INFO when set and not
 * empty, else REQUEST_URI without its query (and without a SCRIPT_NAME
 * prefix the web server mounted it under), with a leading "/api"
 * segment and then a leading "/v1" segment dropped, so /api/v1/x, /v1/x,
 * /api/x and /x are the same path /x (docs/design.md section 2).  Writes into dst
 * (size n); "" when nothing fits.
 */
void http_route_path(const struct orgw_env *e, char *dst, size_t n);

/*
 * Parses a CONTENT_LENGTH value (RFC 3875 4.1.2) into *out.  ORGW_OK;
 * ORGW_EINVAL when it is missing or empty (*out 0), or not a number
 * (negative, trailing bytes, out of range).  Use http_content_length_set()
 * to tell the two apart.
 */
enum orgw_err http_content_length(const char *s, unsigned long long *out);

/* True when a CONTENT_LENGTH value was given at all (not NULL, not ""). */
bool http_content_length_set(const char *s);

/* The standard reason phrase for status ("OK", "See Other", ...); a
 * code without one gets its class's name ("Client Error"), a code
 * outside 100..599 "Unknown".  A static string. */
const char *http_reason(int status);

/*
 * Writes a header block: "Status: <status> <reason>", Content-Type,
 * then extra (NULL or preformatted "Name: value\r\n" lines), then the
 * blank line.  Returns 0 or -1 (client gone).
 */
int http_head(const struct orgw_io *io, int status, const char *ctype,
	      const char *extra);

/* Writes a complete JSON response (header block and body), unflushed:
 * the caller ends the request next (io->finish or FCGX_Finish_r). */
int http_json(const struct orgw_io *io, int status, const char *extra,
	      const char *body, size_t len);

#define HTTP_OOM_JSON                                                      \
	"{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\","   \
	"\"param\":null,\"code\":null}}"

/*
 * Writes an OpenAI-shaped error (api_openai_error_json()) with status.
 */
int http_error(const struct orgw_io *io, int status, const char *type,
	       const char *code, const char *param, const char *message,
	       const char *extra);

/*
 * Constant-time check of an "Authorization: Bearer <key>" header
 * against key (docs/design.md section 3).  False when either is NULL or empty.
 */
bool http_auth_ok(const char *header, const char *key);

/*
 * The client sent key: as "Authorization: Bearer <key>" (OpenAI
 * clients) or as "x-api-key: <key>" (Anthropic clients), each compared
 * in constant time (docs/design.md sections 3, 11).  False when key is NULL or
 * empty.
 */
bool http_key_ok(const struct orgw_env *e, const char *key);

/* The key the request sent: the Bearer token, else x-api-key; NULL when
 * it sent none.  Borrowed from e. */
const char *http_key_token(const struct orgw_env *e);

/* True when the request sent a key at all, either way. */
bool http_key_sent(const struct orgw_env *e);

#endif
