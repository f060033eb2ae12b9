/*
 * relay_plain.c - a request that is no generation (Messages'
 * count_tokens), forwarded unpinned and relayed as it comes back
 * (relay_plain in relay.h): no attempts, no stream, no counts per model.
 */
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "log.h"
#include "mask.h"
#include "relay.h"
#include "relay_impl.h"
#include "upstream.h"
#define PLAIN_MAX_BYTES (1u * 1024 * 1024)	/* count_tokens' answer cap */

/* What relay_plain collects. */
struct plain {
	long status;
	struct buf body;
	bool gone;
};

static void
plain_headers(void *arg, long status, const char *ctype, int retry_after,
	      const char *generation_id)
{
	struct plain *pl = arg;

	(void)ctype;
	(void)retry_after;
	(void)generation_id;
	pl->status = status;
}

static int
plain_data(void *arg, const char *p, size_t n)
{
	struct plain *pl = arg;

	return buf_add(&pl->body, p, n) == ORGW_OK ? 0 : 1;
}

static void
plain_gone(void *arg)
{
	struct plain *pl = arg;

	pl->gone = true;
}

int
relay_plain(const struct orgw_conf *c, const struct orgw_io *io,
	    const struct relay_in *in, const char *upstream_path)
{
	struct upstream_call call;
	struct upstream_result r;
	struct plain pl;
	char url[4096];
	const char *p;
	size_t len;
	enum teamkey_verdict v;
	int rc, status;
	int64_t t0 = clock_mono_ms();

	/* A team key's count is held to its rpm and budget too. */
	if (in->team != NULL && (v = teamauth_check_plain(c, in->team)) !=
					TK_OK) {
		struct relay rl;

		memset(&rl, 0, sizeof(rl));
		rl.c = c;
		rl.io = io;
		rl.in = in;
		rl.api = in->api;
		rc = team_refuse(&rl, v);
		log_msg("req",
			"time=%lld api=%s path=%s status=%d outcome=%s key=%s",
			(long long)clock_now_s(), in->api->name, upstream_path,
			rl.final_status, teamauth_code(v), in->team->key.name);
		return rc;
	}
	memset(&pl, 0, sizeof(pl));
	pl.body.max = PLAIN_MAX_BYTES;
	if (!upstream_url(c, in, upstream_path, url, sizeof(url)))
		url[0] = '\0';
	memset(&call, 0, sizeof(call));
	call.url = url;
	call.key = c->openrouter_api_key;
	call.headers = in->headers;
	call.body = in->body;
	call.body_len = in->len;
	call.connect_timeout_ms = CONNECT_TIMEOUT_MS;
	call.total_timeout_ms = c->upstream_timeout_ms;
	call.client_fd = io->client_fd;
	call.client_events = io->client_events;
	call.on_headers = plain_headers;
	call.on_data = plain_data;
	call.on_client_gone = plain_gone;
	call.arg = &pl;
	if (url[0] == '\0' || upstream_perform(&call, &r) != ORGW_OK)
		r.fail = UP_OTHER;
	mask_key(c->openrouter_api_key, pl.body.p, pl.body.len);
	p = pl.body.p ? pl.body.p : "";
	len = pl.body.len;
	if (pl.gone) {
		rc = -1;
		status = 499;
	} else if (r.fail != UP_OK || pl.status < 200 || pl.status > 599 ||
		   (pl.status >= 300 && pl.status <= 399) || len == 0) {
		status = 502;
		rc = relay_error(io, in->api, 502, "upstream_error",
				 "upstream_unavailable", NULL,
				 "no answer from upstream", NULL);
	} else {
		status = (int)pl.status;
		rc = http_json(io, status, NULL, p, len);
	}
	log_msg("req", "time=%lld api=%s path=%s status=%d total_ms=%lld",
		(long long)clock_now_s(), in->api->name, upstream_path, status,
		(long long)(clock_mono_ms() - t0));
	buf_free(&pl.body);
	return rc;
}
