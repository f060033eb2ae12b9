/*
 * rescore.c - endpoints fetch + score for one model.  No state access:
 * callers write the result with state_store_candidates() or
 * state_route_scored(), outside of any network wait.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "rescore.h"
#include "upstream.h"

bool
rescore_url(const struct orgw_conf *c, const char *model, char *dst,
	    size_t n)
{
	int r = snprintf(dst, n, "%s/models/%s/endpoints", c->upstream_url,
			 model);

	return r > 0 && (size_t)r < n;
}

void
rescore_params(const struct orgw_conf *c, struct score_params *p)
{
	p->hit_rate = c->hit_rate;
	p->cache_bonus = c->cache_bonus;
	p->min_uptime = c->min_uptime;
}

enum orgw_err
rescore_answer(const struct score_params *p, long status, const char *body,
	       size_t len, int utc_hhmm, struct score_result *res, char *err,
	       size_t errlen)
{
	enum orgw_err e;

	memset(res, 0, sizeof(*res));
	if (status != 200) {
		/* OPENROUTER.md 1: 403, 404 (unknown model), 500. */
		snprintf(err, errlen, "endpoints HTTP %ld", status);
		return ORGW_EUPSTREAM;
	}
	e = score_endpoints(body, len, utc_hhmm, p, res);
	if (e != ORGW_OK)
		snprintf(err, errlen, "endpoints response unreadable");
	return e;
}

enum orgw_err
rescore_fetch(const struct orgw_conf *c, const char *model,
	      int64_t timeout_ms, struct score_result *res, char *err,
	      size_t errlen)
{
	struct score_params p;
	char url[4096], *body = NULL;
	size_t len = 0;
	long status = 0;
	enum orgw_err e;

	memset(res, 0, sizeof(*res));
	if (!rescore_url(c, model, url, sizeof(url))) {
		snprintf(err, errlen, "model id too long");
		return ORGW_EINVAL;
	}
	e = upstream_get(url, c->openrouter_api_key, timeout_ms,
			 RESCORE_MAX_BYTES, &body, &len, &status);
	if (e != ORGW_OK) {
		snprintf(err, errlen, "endpoints fetch: %s",
			 e == ORGW_ETOOBIG ? "response too large" :
					     "no response");
		free(body);
		return e;
	}
	rescore_params(c, &p);
	e = rescore_answer(&p, status, body, len, clock_utc_hhmm(), res, err,
			   errlen);
	free(body);
	return e;
}
