/*
 * gateway_ops.c - the operator's paths: GET /healthz (no key; its state
 * check cached a second per worker), GET /stats, GET /metrics
 * (Prometheus text, METRICS_KEY or the client key) and POST /__cron (a
 * scoring run).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "buf.h"
#include "clock.h"
#include "gateway_impl.h"
#include "load.h"
#include "log.h"
#include "prom.h"
#include "scorerun.h"
#include "state.h"
#include "stats.h"
#include "version.h"
#define HEALTH_CACHE_MS 1000

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
int
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
			/* Kept a second from the answer, not the ask: a
			 * check that waited its second is not asked again by
			 * the next request. */
			health_at = clock_mono_ms();
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
int
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

int
handle_stats(const struct orgw_io *io, const struct orgw_conf *c,
	     const struct orgw_load *load)
{
	cJSON *o = stats_tree(c, clock_now_s());
	char *s = NULL;

	/* The host's load, added at the top level: stats.c reads the
	 * state, this is the worker table's (workertab.c). */
	if (o != NULL && (load == NULL || add_load(o, load, false)))
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return json_text_send(io, "Cache-Control: no-cache\r\n", s,
			      "could not build stats");
}


/*
 * GET /metrics: Prometheus text 0.0.4.  A scraper's
 * key, METRICS_KEY, lets it read the counters without being able to
 * send chat requests; the client key works too (it reads /stats, the
 * same numbers).  Both compared in constant time (http_key_ok).
 */
int
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
int
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
