/*
 * upstream.c - libcurl transfers to OpenRouter.
 *
 * Ownership: each thread's easy and multi handles, request header list
 * and parsed URL live in thread-local statics, created on first use and
 * kept (connection reuse; the options and headers are the same for every
 * transfer) until upstream_thread_cleanup() (upstream_global_cleanup()
 * for the main thread).  Threads share nothing here: a libcurl easy
 * handle must never be used by two threads at once.
 * Callbacks run in the caller's stack frame; their arg is borrowed.
 */
#include <ctype.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "buf.h"
#include "clock.h"
#include "curlsetup.h"
#include "log.h"
#include "upstream.h"

#define TICK_MS 50

static _Thread_local CURL *up_easy;
static _Thread_local CURLM *up_multi;
static _Thread_local struct curl_slist *up_headers;	/* for up_headers_key */
static _Thread_local char *up_headers_key;
static _Thread_local CURLU *up_url;			/* up_url_text, parsed */
static _Thread_local char *up_url_text;

struct xfer {
	const struct upstream_call *c;
	struct curl_slist *own;	/* this call's header list, when it adds
				 * headers of its own; freed at its end */
	long status;
	bool headers_done;
	bool aborted;
};

enum orgw_err
upstream_global_init(void)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return ORGW_EUPSTREAM;
	return ORGW_OK;
}

/* Drops the kept header list and wipes the copy of the key. */
static void
forget_headers(void)
{
	curl_slist_free_all(up_headers);
	up_headers = NULL;
	if (up_headers_key != NULL)
		memset(up_headers_key, 0, strlen(up_headers_key));
	free(up_headers_key);
	up_headers_key = NULL;
}

void
upstream_thread_cleanup(void)
{
	if (up_multi != NULL)
		curl_multi_cleanup(up_multi);
	if (up_easy != NULL)
		curl_easy_cleanup(up_easy);
	up_multi = NULL;
	up_easy = NULL;
	forget_headers();
	curl_url_cleanup(up_url);
	up_url = NULL;
	free(up_url_text);
	up_url_text = NULL;
}

void
upstream_global_cleanup(void)
{
	upstream_thread_cleanup();
	curl_global_cleanup();
}

static long
response_code(void)
{
	long code = 0;

	if (curl_easy_getinfo(up_easy, CURLINFO_RESPONSE_CODE, &code) !=
		    CURLE_OK ||
	    code < 0)
		code = 0;
	return code;
}

/*
 * The X-Generation-Id of the response just received into dst (n bytes),
 * when it has one of the shape OpenRouter gives ("gen-" and letters,
 * digits, '-' or '_'): the id GET /api/v1/generation looks up; "" when
 * not.  libcurl keeps the last response's headers until the handle's
 * next transfer.
 */
static void
generation_id(char *dst, size_t n_dst)
{
	struct curl_header *h;
	size_t i, n;

	dst[0] = '\0';
	if (curl_easy_header(up_easy, "X-Generation-Id", 0, CURLH_HEADER, -1,
			     &h) != CURLHE_OK ||
	    h->value == NULL)
		return;
	n = strlen(h->value);
	if (n == 0 || n >= n_dst)
		return;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)h->value[i]) &&
		    h->value[i] != '-' && h->value[i] != '_')
			return;
	memcpy(dst, h->value, n + 1);
}

/*
 * Hands the caller the response's status, Content-Type and Retry-After,
 * once, before its first body byte (or at the end of a response without
 * a body).  libcurl has parsed them by then: CURLINFO_CONTENT_TYPE, and
 * CURLINFO_RETRY_AFTER, which reads both forms of RFC 9110 10.2.3
 * (delay-seconds and HTTP-date) and reports 0 when there is none.  With
 * FOLLOWLOCATION off and 1xx responses never handed to the write
 * callback, these are the final response's.
 */
static void
headers_done(struct xfer *x)
{
	curl_off_t ra = 0;
	char *ct = NULL, gid[128];
	const char *ctype = "";

	if (x->headers_done)
		return;
	x->headers_done = true;
	x->status = response_code();
	if (curl_easy_getinfo(up_easy, CURLINFO_CONTENT_TYPE, &ct) ==
		    CURLE_OK &&
	    ct != NULL)
		ctype = ct;
	if (curl_easy_getinfo(up_easy, CURLINFO_RETRY_AFTER, &ra) !=
		    CURLE_OK ||
	    ra <= 0)
		ra = -1;
	else if (ra > INT_MAX)
		ra = INT_MAX;
	if (x->c->on_headers) {
		generation_id(gid, sizeof(gid));
		x->c->on_headers(x->c->arg, x->status, ctype, (int)ra, gid);
	}
}


static size_t
write_cb(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t n = size * nmemb;

	headers_done(x);
	if (x->c->on_data && x->c->on_data(x->c->arg, p, n) != 0) {
		x->aborted = true;
		return CURL_WRITEFUNC_ERROR;
	}
	return n;
}

/*
 * The request headers: built once for a key and kept with the handle,
 * since most transfers of a process send the same ones.  "Expect:" is
 * off: no 100-continue round trip for large bodies.  A call with headers
 * of its own (the Anthropic ones a Messages client sends) gets a list of
 * its own in x->own, freed when the call ends.
 */
static struct curl_slist *
headers_for(const char *key, const char *const *more, struct xfer *x)
{
	static const char *const extra[] = {"Content-Type: application/json",
					    "Expect:", NULL};
	const char *all[16];
	struct curl_slist *h;
	size_t i, n;

	if (key == NULL)
		key = "";
	if (more != NULL && more[0] != NULL) {
		for (n = 0; extra[n] != NULL; n++)
			all[n] = extra[n];
		for (i = 0; more[i] != NULL && n + 1 < sizeof(all) /
							sizeof(all[0]);
		     i++)
			all[n++] = more[i];
		all[n] = NULL;
		x->own = curlsetup_headers(key, all);
		return x->own;
	}
	if (up_headers != NULL && strcmp(up_headers_key, key) == 0)
		return up_headers;
	if ((h = curlsetup_headers(key, extra)) == NULL)
		return NULL;
	/* The old list may still be set on the handle: the caller sets the
	 * new one before the next transfer. */
	forget_headers();
	if ((up_headers_key = strdup(key)) == NULL) {
		curl_slist_free_all(h);
		return NULL;
	}
	up_headers = h;
	return up_headers;
}

/*
 * The URL, parsed once and kept: every chat call of a process goes to one
 * URL, and handing libcurl a parsed one (CURLOPT_CURLU) spares it parsing
 * the text again on every transfer.  A call to another URL (the model
 * list, a scoring run) replaces it.
 */
static CURLUcode
url_for(const char *text, CURLU **out)
{
	CURLU *u;
	CURLUcode uc;
	char *copy;

	if (up_url != NULL && strcmp(up_url_text, text) == 0) {
		*out = up_url;
		return CURLUE_OK;
	}
	if ((u = curl_url()) == NULL)
		return CURLUE_OUT_OF_MEMORY;
	/* The flags libcurl itself parses CURLOPT_URL with. */
	uc = curl_url_set(u, CURLUPART_URL, text,
			  CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME);
	copy = uc == CURLUE_OK ? strdup(text) : NULL;
	if (copy == NULL) {
		curl_url_cleanup(u);
		return uc != CURLUE_OK ? uc : CURLUE_OUT_OF_MEMORY;
	}
	/* The old handle may still be set on the easy handle: the caller
	 * sets the new one before the next transfer. */
	curl_url_cleanup(up_url);
	free(up_url_text);
	up_url = u;
	up_url_text = copy;
	*out = up_url;
	return CURLUE_OK;
}

/*
 * Sets what differs between transfers.  The handle is not reset between
 * them (curl_easy_reset and the fixed options cost more than the
 * transfer's own set-up), so every option any call sets is set by every
 * call.  False with *bad_url set: the URL does not parse (a failed
 * transfer, as libcurl would report it); with it clear: out of memory.
 */
static bool
setup(const struct upstream_call *c, struct xfer *x, bool *bad_url)
{
	struct curl_slist *h;
	CURLUcode uc;
	CURLU *u;

	*bad_url = false;

	if (up_easy == NULL) {
		if ((up_easy = curl_easy_init()) == NULL)
			return false;
		if (curl_easy_setopt(up_easy, CURLOPT_WRITEFUNCTION,
				     write_cb) != CURLE_OK) {
			curl_easy_cleanup(up_easy);
			up_easy = NULL;
			return false;
		}
	}
	if (up_multi == NULL && (up_multi = curl_multi_init()) == NULL)
		return false;
	if ((uc = url_for(c->url, &u)) != CURLUE_OK) {
		*bad_url = uc != CURLUE_OUT_OF_MEMORY;
		return false;
	}
	if ((h = headers_for(c->key, c->headers, x)) == NULL)
		return false;
	/* The client sees curl_easy_strerror()'s text, not the error
	 * buffer's, which names hosts and ports: no buffer here. */
	if (!curlsetup_easy(up_easy, h, c->connect_timeout_ms,
			    c->total_timeout_ms, NULL) ||
	    curl_easy_setopt(up_easy, CURLOPT_CURLU, u) != CURLE_OK ||
	    curl_easy_setopt(up_easy, CURLOPT_WRITEDATA, x) != CURLE_OK)
		return false;
	/* No pointer to an earlier call's (freed) body stays set. */
	if (c->body == NULL)
		return curl_easy_setopt(up_easy, CURLOPT_POSTFIELDS, NULL) ==
			       CURLE_OK &&
		       curl_easy_setopt(up_easy, CURLOPT_HTTPGET, 1L) ==
			       CURLE_OK;
	return curl_easy_setopt(up_easy, CURLOPT_POSTFIELDSIZE_LARGE,
				(curl_off_t)c->body_len) == CURLE_OK &&
	       curl_easy_setopt(up_easy, CURLOPT_POSTFIELDS, c->body) ==
		       CURLE_OK;
}

static enum up_fail
classify(CURLcode rc)
{
	switch (rc) {
	case CURLE_OK:
		return UP_OK;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_SSL_CONNECT_ERROR:
		return UP_CONNECT;
	case CURLE_OPERATION_TIMEDOUT:
		return UP_TIMEOUT;
	case CURLE_WRITE_ERROR:
	case CURLE_ABORTED_BY_CALLBACK:
		return UP_ABORTED;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return UP_RESET;
	default:
		return UP_OTHER;
	}
}

/* True when client_fd reports what c says means the client left (struct
 * orgw_io's client_events; a hang-up or an error always). */
static bool
client_left(const struct upstream_call *c)
{
	struct pollfd p;

	p.fd = c->client_fd;
	p.events = c->client_events;
	p.revents = 0;
	return poll(&p, 1, 0) > 0 && p.revents != 0;
}

enum orgw_err
upstream_perform(const struct upstream_call *c, struct upstream_result *res)
{
	struct xfer x;
	struct curl_waitfd wfd;
	CURLMsg *msg;
	CURLcode rc = CURLE_OK;
	int running = 1, left;
	bool done = false, bad_url, wake;

	memset(res, 0, sizeof(*res));
	memset(&x, 0, sizeof(x));
	x.c = c;
	if (!setup(c, &x, &bad_url)) {
		curl_slist_free_all(x.own);
		if (!bad_url)
			return ORGW_ENOMEM;
		res->fail = classify(CURLE_URL_MALFORMAT);
		snprintf(res->error, sizeof(res->error), "%s",
			 curl_easy_strerror(CURLE_URL_MALFORMAT));
		return ORGW_OK;
	}
	if (curl_multi_add_handle(up_multi, up_easy) != CURLM_OK) {
		curl_slist_free_all(x.own);
		return ORGW_ENOMEM;
	}
	while (!done) {
		if (curl_multi_perform(up_multi, &running) != CURLM_OK)
			break;
		while ((msg = curl_multi_info_read(up_multi, &left)) != NULL)
			if (msg->msg == CURLMSG_DONE) {
				rc = msg->data.result;
				done = true;
			}
		if (done || running == 0)
			break;
		/* libcurl reports POLLIN on an extra fd, not a bare hang-up:
		 * a FastCGI connection wakes the wait, CGI's stdout is
		 * looked at once a tick (client_left()). */
		memset(&wfd, 0, sizeof(wfd));
		wfd.fd = c->client_fd;
		wfd.events = CURL_WAIT_POLLIN;
		wake = c->client_fd >= 0 && (c->client_events & POLLIN);
		if (curl_multi_poll(up_multi, wake ? &wfd : NULL, wake ? 1 : 0,
				    TICK_MS, NULL) != CURLM_OK)
			break;
		if (c->client_fd >= 0 && (wfd.revents != 0 || client_left(c))) {
			/* Everything the web server had to send for this
			 * request was read before we started, so anything
			 * readable now is an abort or a close. */
			if (c->on_client_gone)
				c->on_client_gone(c->arg);
			x.aborted = true;
			rc = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		if (c->on_tick && c->on_tick(c->arg, clock_mono_ms()) != 0) {
			x.aborted = true;
			rc = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
	}
	/* A whole response without a body (a bare 429, a 204) never
	 * reached write_cb: report its headers now. */
	if (!x.headers_done && !x.aborted && rc == CURLE_OK &&
	    response_code() > 0)
		headers_done(&x);
	res->status = response_code();
	if (c->want_generation_id)
		generation_id(res->generation_id, sizeof(res->generation_id));
	curl_multi_remove_handle(up_multi, up_easy);
	/* The handle keeps pointing at the list until the next call sets
	 * its own; no transfer runs in between. */
	curl_slist_free_all(x.own);
	res->fail = x.aborted ? UP_ABORTED : classify(rc);
	if (res->fail != UP_OK)
		snprintf(res->error, sizeof(res->error), "%s",
			 curl_easy_strerror(rc));
	return ORGW_OK;
}

struct get_ctx {
	struct buf b;
	bool too_big;
};

static int
get_data(void *arg, const char *p, size_t n)
{
	struct get_ctx *g = arg;
	enum orgw_err err = buf_add(&g->b, p, n);

	if (err == ORGW_ETOOBIG)
		g->too_big = true;
	return err != ORGW_OK;
}

enum orgw_err
upstream_get(const char *url, const char *key, int64_t timeout_ms,
	     size_t max_bytes, char **out, size_t *out_len, long *status)
{
	struct get_ctx g;
	struct upstream_call c;
	struct upstream_result r;
	enum orgw_err err;

	memset(&g, 0, sizeof(g));
	memset(&c, 0, sizeof(c));
	g.b.max = max_bytes;
	c.url = url;
	c.key = key;
	c.connect_timeout_ms = timeout_ms < 5000 ? timeout_ms : 5000;
	c.total_timeout_ms = timeout_ms;
	c.client_fd = -1;
	c.on_data = get_data;
	c.arg = &g;
	*out = NULL;
	*out_len = 0;
	*status = 0;
	if ((err = upstream_perform(&c, &r)) != ORGW_OK) {
		buf_free(&g.b);
		return err;
	}
	*status = r.status;
	if (g.too_big) {
		buf_free(&g.b);
		return ORGW_ETOOBIG;
	}
	if (r.fail != UP_OK) {
		buf_free(&g.b);
		return ORGW_EUPSTREAM;
	}
	if (g.b.p == NULL && buf_add(&g.b, "", 0) != ORGW_OK)
		return ORGW_ENOMEM;
	*out = g.b.p;
	*out_len = g.b.len;
	return ORGW_OK;
}
