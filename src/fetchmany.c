/*
 * fetchmany.c - bounded parallel GETs over one libcurl multi handle.
 *
 * Shape: a fixed pool of min(parallel, n) slots, each with its own easy
 * handle (reused, curl_easy_reset between transfers) and body buffer.
 * Items are started in order as slots free up, so at most `parallel`
 * transfers run at once.  The multi handle owns the connection cache,
 * so a slot that moves on to its next item reuses the connection the
 * previous one left open (one TLS handshake per slot, not per model).
 *
 * Why not curl_multi_socket_action with an event loop: the run is one
 * short batch in a scorer process (or one /__cron request), so
 * curl_multi_poll, which waits on every transfer's sockets with curl's
 * own timeout, is all it needs.
 *
 * Ownership: everything (multi, easy handles, header list, buffers) is
 * made and released inside fetchmany_run(); a body is freed right after
 * its done() call, so at most `parallel` bodies exist at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "buf.h"
#include "clock.h"
#include "curlsetup.h"
#include "fetchmany.h"
#include "log.h"

/* curl_multi_poll wakes up at least this often even with nothing to do
 * (curl's own timers usually wake it sooner). */
#define FETCHMANY_POLL_MS 1000

struct slot {
	CURL *h;
	struct buf b;		/* the body so far, capped at max_bytes */
	size_t idx;		/* item being fetched */
	int64_t t0;		/* mono ms at its start */
	bool busy;
	bool too_big;
	bool oom;
	char errbuf[CURL_ERROR_SIZE];
};

struct run {
	struct fetchmany_item *v;
	size_t n;
	const struct fetchmany_opts *o;
	CURLM *m;
	struct curl_slist *hdr;	/* shared by every transfer */
	struct slot *slots;
	size_t nslots;
	size_t next;		/* first item not started yet */
	size_t active;		/* transfers on the multi handle */
};

/* libcurl write callback: append to the slot's capped buffer. */
static size_t
fm_write(char *p, size_t size, size_t nmemb, void *arg)
{
	struct slot *s = arg;
	size_t n = size * nmemb;
	enum orgw_err err;

	if ((err = buf_add(&s->b, p, n)) != ORGW_OK) {
		if (err == ORGW_ETOOBIG)
			s->too_big = true;
		else
			s->oom = true;
		return CURL_WRITEFUNC_ERROR;
	}
	return n;
}

/* Copies s into the item's error text, cut to fit (it is only shown). */
static void
fm_why(struct fetchmany_item *it, const char *s)
{
	size_t n = strlen(s);

	if (n >= sizeof(it->error))
		n = sizeof(it->error) - 1;
	memcpy(it->error, s, n);
	it->error[n] = '\0';
}

/* Hands item i its (failed) outcome without a transfer. */
static void
fm_fail(struct run *r, size_t i, enum orgw_err err, const char *why)
{
	struct fetchmany_item *it = &r->v[i];

	it->err = err;
	it->status = 0;
	it->body = NULL;
	it->len = 0;
	it->ms = 0;
	fm_why(it, why);
	r->o->done(r->o->arg, i, it);
}

/* Sets up slot s for item i and adds it to the multi handle. */
static bool
fm_start(struct run *r, struct slot *s, size_t i)
{
	const struct fetchmany_opts *o = r->o;
	long tmo = (long)o->timeout_ms;
	long ctmo = tmo < FETCHMANY_CONNECT_TIMEOUT_MS ?
			    tmo :
			    FETCHMANY_CONNECT_TIMEOUT_MS;
	bool ok;

	buf_free(&s->b);
	s->b.max = o->max_bytes;
	s->too_big = s->oom = false;
	s->errbuf[0] = '\0';
	s->idx = i;
	curl_easy_reset(s->h);
	ok = curlsetup_easy(s->h, r->hdr, ctmo, tmo, s->errbuf) &&
	     curl_easy_setopt(s->h, CURLOPT_URL, r->v[i].url) == CURLE_OK &&
	     curl_easy_setopt(s->h, CURLOPT_HTTPGET, 1L) == CURLE_OK &&
	     curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, fm_write) ==
		     CURLE_OK &&
	     curl_easy_setopt(s->h, CURLOPT_WRITEDATA, s) == CURLE_OK &&
	     curl_easy_setopt(s->h, CURLOPT_MAXFILESIZE_LARGE,
			      (curl_off_t)o->max_bytes) == CURLE_OK;
	if (!ok) {
		fm_fail(r, i, ORGW_ENOMEM, "could not set up the transfer");
		return false;
	}
	s->t0 = clock_mono_ms();
	if (curl_multi_add_handle(r->m, s->h) != CURLM_OK) {
		fm_fail(r, i, ORGW_ENOMEM, "could not start the transfer");
		return false;
	}
	s->busy = true;
	r->active++;
	return true;
}

/* Starts items on free slot s until one is running or none is left. */
static void
fm_refill(struct run *r, struct slot *s)
{
	while (!s->busy && r->next < r->n)
		(void)fm_start(r, s, r->next++);
}

/* Removes s's finished transfer from the multi handle. */
static void
fm_detach(struct run *r, struct slot *s)
{
	CURLMcode mc = curl_multi_remove_handle(r->m, s->h);

	if (mc != CURLM_OK)
		log_warn("fetchmany: remove handle: %s",
			 curl_multi_strerror(mc));
	s->busy = false;
	r->active--;
}

/* Records the outcome of slot s's transfer (rc) and calls done(). */
static void
fm_finish(struct run *r, struct slot *s, CURLcode rc)
{
	struct fetchmany_item *it = &r->v[s->idx];
	long code = 0;

	it->ms = clock_mono_ms() - s->t0;
	it->body = NULL;
	it->len = 0;
	it->error[0] = '\0';
	if (curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code) !=
	    CURLE_OK)
		code = 0;
	it->status = code;
	if (s->too_big || rc == CURLE_FILESIZE_EXCEEDED) {
		it->err = ORGW_ETOOBIG;
		snprintf(it->error, sizeof(it->error),
			 "response over %zu bytes", r->o->max_bytes);
	} else if (s->oom) {
		it->err = ORGW_ENOMEM;
		snprintf(it->error, sizeof(it->error), "out of memory");
	} else if (rc == CURLE_OPERATION_TIMEDOUT) {
		it->err = ORGW_EUPSTREAM;
		snprintf(it->error, sizeof(it->error), "timeout after %lld ms",
			 (long long)it->ms);
	} else if (rc != CURLE_OK) {
		it->err = ORGW_EUPSTREAM;
		/* curl's detail names host and port, never the headers. */
		fm_why(it, s->errbuf[0] ? s->errbuf : curl_easy_strerror(rc));
	} else {
		it->err = ORGW_OK;
		it->body = s->b.p != NULL ? s->b.p : "";
		it->len = s->b.len;
	}
	r->o->done(r->o->arg, s->idx, it);
	it->body = NULL;
	buf_free(&s->b);
}

/* A multi-level failure: every running and waiting item fails. */
static void
fm_abort(struct run *r, const char *why)
{
	size_t k;

	for (k = 0; k < r->nslots; k++) {
		struct slot *s = &r->slots[k];
		if (!s->busy)
			continue;
		fm_detach(r, s);
		buf_free(&s->b);
		fm_fail(r, s->idx, ORGW_EUPSTREAM, why);
	}
	while (r->next < r->n)
		fm_fail(r, r->next++, ORGW_EUPSTREAM, why);
}

/* Drains finished transfers; each freed slot takes the next item. */
static void
fm_collect(struct run *r)
{
	CURLMsg *msg;
	CURL *h;
	CURLcode rc;
	size_t k;
	int left;

	while ((msg = curl_multi_info_read(r->m, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		/* msg is gone once the handle is removed: copy first. */
		h = msg->easy_handle;
		rc = msg->data.result;
		for (k = 0; k < r->nslots; k++)
			if (r->slots[k].busy && r->slots[k].h == h)
				break;
		if (k == r->nslots)
			continue;
		fm_detach(r, &r->slots[k]);
		fm_finish(r, &r->slots[k], rc);
		fm_refill(r, &r->slots[k]);
	}
}

enum orgw_err
fetchmany_run(struct fetchmany_item *v, size_t n,
	      const struct fetchmany_opts *o)
{
	static const char *const accept_json[] = {"Accept: application/json",
						  NULL};
	struct run r;
	enum orgw_err err = ORGW_OK;
	CURLMcode mc;
	size_t k;
	int running;

	if (o == NULL || o->done == NULL || o->parallel < 1 ||
	    o->parallel > FETCHMANY_PARALLEL_MAX || o->timeout_ms <= 0 ||
	    o->timeout_ms > (int64_t)0x7fffffff || o->max_bytes == 0 ||
	    (v == NULL && n > 0))
		return ORGW_EINVAL;
	memset(&r, 0, sizeof(r));
	r.v = v;
	r.n = n;
	r.o = o;
	if (n == 0)
		return ORGW_OK;
	r.nslots = n < (size_t)o->parallel ? n : (size_t)o->parallel;
	if ((r.m = curl_multi_init()) == NULL ||
	    (r.hdr = curlsetup_headers(o->key, accept_json)) == NULL ||
	    (r.slots = calloc(r.nslots, sizeof(*r.slots))) == NULL) {
		err = ORGW_ENOMEM;
		goto out;
	}
	for (k = 0; k < r.nslots; k++)
		if ((r.slots[k].h = curl_easy_init()) == NULL) {
			err = ORGW_ENOMEM;
			goto out;
		}
	for (k = 0; k < r.nslots; k++)
		fm_refill(&r, &r.slots[k]);
	while (r.active > 0) {
		if ((mc = curl_multi_perform(r.m, &running)) != CURLM_OK) {
			fm_abort(&r, curl_multi_strerror(mc));
			break;
		}
		fm_collect(&r);
		if (r.active == 0)
			break;
		mc = curl_multi_poll(r.m, NULL, 0, FETCHMANY_POLL_MS, NULL);
		if (mc != CURLM_OK) {
			fm_abort(&r, curl_multi_strerror(mc));
			break;
		}
	}
out:
	if (err != ORGW_OK)
		while (r.next < r.n)
			fm_fail(&r, r.next++, err, "out of memory");
	for (k = 0; r.slots != NULL && k < r.nslots; k++) {
		if (r.slots[k].busy)
			fm_detach(&r, &r.slots[k]);
		if (r.slots[k].h != NULL)
			curl_easy_cleanup(r.slots[k].h);
		buf_free(&r.slots[k].b);
	}
	free(r.slots);
	curl_slist_free_all(r.hdr);
	if (r.m != NULL && (mc = curl_multi_cleanup(r.m)) != CURLM_OK)
		log_warn("fetchmany: multi cleanup: %s",
			 curl_multi_strerror(mc));
	return err;
}
