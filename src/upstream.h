/*
 * upstream.h - HTTP to OpenRouter over libcurl (the edge; no policy).
 *
 * One easy handle per process is reused across requests so the
 * connection to OpenRouter stays open (TLS set-up is the largest cost of
 * a cold request).  The transfer runs on a multi handle so the wait can
 * also watch the client's socket: a client that goes away aborts the
 * upstream transfer at once, which stops billing (docs/design.md section 5).
 */
#ifndef ORGW_UPSTREAM_H
#define ORGW_UPSTREAM_H

#include "orgw.h"

enum up_fail {
	UP_OK,		/* the transfer completed (any HTTP status) */
	UP_CONNECT,	/* could not connect / resolve */
	UP_RESET,	/* connection broke (reset, closed early, bad HTTP) */
	UP_TIMEOUT,	/* curl's own timeout fired */
	UP_ABORTED,	/* a callback asked to stop (see the callback's why) */
	UP_OTHER,	/* anything else */
};

struct upstream_call {
	const char *url;
	const char *key;	/* bearer token; never logged */
	/* More request headers ("Name: value"), NULL-terminated; NULL for
	 * none.  Borrowed for the call. */
	const char *const *headers;
	const char *body;	/* POST body, or NULL for GET */
	size_t body_len;
	int64_t connect_timeout_ms;
	int64_t total_timeout_ms;	/* 0 = none */
	int client_fd;		/* watched for hang-up; -1 = none */
	bool want_generation_id;	/* fill upstream_result's
					 * generation_id */
	short client_events;	/* as struct orgw_io's */
	/* Called once, when the status line and headers are in;
	 * generation_id is the response's X-Generation-Id of OpenRouter's
	 * shape (letters, digits, '-', '_'), "" when none; borrowed for the
	 * call. */
	void (*on_headers)(void *arg, long status, const char *ctype,
			   int retry_after_s, const char *generation_id);
	/* Body bytes; return 0 to go on, non-zero to abort. */
	int (*on_data)(void *arg, const char *p, size_t n);
	/* About every 50 ms; return non-zero to abort (deadlines). */
	int (*on_tick)(void *arg, int64_t now_ms);
	/* The client went away (client_fd hung up). */
	void (*on_client_gone)(void *arg);
	void *arg;
};

struct upstream_result {
	enum up_fail fail;
	long status;		/* 0 when no response arrived */
	char error[256];	/* curl's message, when fail != UP_OK */
	/* The response's X-Generation-Id (OpenRouter's id of the
	 * generation, for GET /api/v1/generation) when the call asked for
	 * it (want_generation_id), "" when none. */
	char generation_id[128];
};

/* curl_global_init; once per process, from main(), before any thread
 * starts.  upstream_global_cleanup() also frees the calling thread's
 * handles; call it last, after every other thread ended. */
enum orgw_err upstream_global_init(void);
void upstream_global_cleanup(void);

/* Frees the calling thread's libcurl handles, header list and URL (each
 * thread has its own); a worker thread calls it as it ends.  A thread
 * that never made a call frees nothing. */
void upstream_thread_cleanup(void);

/* Runs one request to completion (or abort).  ORGW_ENOMEM on set-up
 * failure; otherwise ORGW_OK with the outcome in *res. */
enum orgw_err upstream_perform(const struct upstream_call *c,
			       struct upstream_result *res);

/*
 * Convenience: GET url with the key, body collected into *out (malloc'd,
 * NUL-terminated; caller frees), up to max_bytes.  *status gets the HTTP
 * status (0 on transport failure).  ORGW_EUPSTREAM on transport failure,
 * ORGW_ETOOBIG past max_bytes.
 */
enum orgw_err upstream_get(const char *url, const char *key,
			   int64_t timeout_ms, size_t max_bytes, char **out,
			   size_t *out_len, long *status);

#endif
