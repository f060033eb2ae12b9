/*
 * gateway_models.c - GET /v1/models, OpenRouter's model list cached
 * briefly per process and cut to a team key's models, and GET /v1/key
 * (a team key's own figures, or OpenRouter's answer for the operator's
 * key).  Every byte relayed from upstream is masked.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "clock.h"
#include "gateway_impl.h"
#include "mask.h"
#include "teamauth.h"
#include "upstream.h"

#define MODELS_CACHE_MS 60000
#define MODELS_MAX_BYTES (32u * 1024 * 1024)

/*
 * Per-process cache of GET /v1/models (docs/design.md 2: "cached briefly"), shared
 * by the threads under models_mu.  The entry is reference-counted so a
 * thread writes it to its client without holding the mutex while another
 * replaces it.
 */
struct models_entry {
	unsigned refs;		/* under models_mu */
	size_t len;
	int64_t at;		/* clock_mono_ms() of the fetch */
	char body[];
};

static pthread_mutex_t models_mu = PTHREAD_MUTEX_INITIALIZER;
static struct models_entry *models_cache;

/* Drops one reference to e (NULL: no-op); frees it with the last. */
static void
models_put(struct models_entry *e)
{
	bool last;

	if (e == NULL)
		return;
	pthread_mutex_lock(&models_mu);
	last = --e->refs == 0;
	pthread_mutex_unlock(&models_mu);
	if (last)
		free(e);
}

/*
 * A model list's body with only the models team key k may use (its
 * "data" entries whose "id" matches one of its globs), written to io;
 * a body that is not a model list is written as it came.
 */
static int
models_for_key(const struct orgw_io *io, const char *extra, const char *body,
	       size_t len, const struct teamkey *k)
{
	cJSON *o = cJSON_ParseWithLength(body, len);
	cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
	cJSON *e, *next, *id;
	char *s;

	if (!cJSON_IsArray(data)) {
		cJSON_Delete(o);
		return http_json(io, 200, extra, body, len);
	}
	for (e = data->child; e != NULL; e = next) {
		next = e->next;
		id = cJSON_GetObjectItemCaseSensitive(e, "id");
		if (!cJSON_IsString(id) ||
		    !teamkey_model_ok(k, id->valuestring))
			cJSON_Delete(cJSON_DetachItemViaPointer(data, e));
	}
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return json_text_send(io, extra, s, "out of memory");
}

/* Writes a model list's body: all of it for the operator (k NULL) or a
 * key with every model, else models_for_key(). */
static int
models_send(const struct orgw_io *io, const char *extra, const char *body,
	    size_t len, const struct teamkey *k)
{
	if (k == NULL || k->n_globs == 0)
		return http_json(io, 200, extra, body, len);
	return models_for_key(io, extra, body, len, k);
}

int
handle_models(const struct orgw_io *io, const struct orgw_conf *c,
	      const struct teamkey *k)
{
	char url[4096], *body = NULL;
	size_t len = 0;
	long status = 0;
	int64_t now = clock_mono_ms();
	struct models_entry *e = NULL;
	int rc;

	pthread_mutex_lock(&models_mu);
	if (models_cache != NULL && now - models_cache->at < MODELS_CACHE_MS) {
		e = models_cache;
		e->refs++;
	}
	pthread_mutex_unlock(&models_mu);
	if (e != NULL) {
		rc = models_send(io, "X-Orgw-Cache: hit\r\n", e->body, e->len,
				 k);
		models_put(e);
		return rc;
	}
	snprintf(url, sizeof(url), "%s/models", c->upstream_url);
	if (upstream_get(url, c->openrouter_api_key, c->upstream_timeout_ms,
			 MODELS_MAX_BYTES, &body, &len, &status) != ORGW_OK)
		return http_error(io, 502, "upstream_error",
				  "upstream_unavailable", NULL,
				  "could not fetch the model list", NULL);
	/* Every byte relayed from upstream is masked (docs/design.md 3), the cache
	 * included; a redirect is a gateway error (no Location goes on). */
	mask_key(c->openrouter_api_key, body, len);
	if (status >= 300 && status <= 399) {
		free(body);
		return http_error(io, 502, "upstream_error",
				  "upstream_unavailable", NULL,
				  "upstream answered with a redirect", NULL);
	}
	if (status == 200 && len <= SIZE_MAX - sizeof(*e) &&
	    (e = malloc(sizeof(*e) + len)) != NULL) {
		struct models_entry *old;

		memcpy(e->body, body, len);
		e->len = len;
		e->at = now;
		e->refs = 1;	/* the cache's */
		pthread_mutex_lock(&models_mu);
		old = models_cache;
		models_cache = e;
		pthread_mutex_unlock(&models_mu);
		models_put(old);
		rc = models_send(io, "X-Orgw-Cache: miss\r\n", body, len, k);
		free(body);
		return rc;
	}
	rc = http_json(io, (int)status, NULL, body, len);
	free(body);
	return rc;
}

/*
 * GET /v1/key (and OpenRouter's older /v1/auth/key): a team key's name,
 * limits and use today and this month, in OpenRouter's shape; the
 * operator's key gets OpenRouter's answer for the gateway's own key,
 * the upstream key masked.
 */
int
handle_key(const struct orgw_io *io, const struct orgw_conf *c,
	   const struct teamauth *t)
{
	char url[4096], *body = NULL;
	size_t len = 0;
	long status = 0;
	int rc;

	if (t != NULL)
		return json_text_send(io, "Cache-Control: no-cache\r\n",
				      teamauth_key_json(t), "out of memory");
	snprintf(url, sizeof(url), "%s/key", c->upstream_url);
	if (upstream_get(url, c->openrouter_api_key, c->upstream_timeout_ms,
			 MODELS_MAX_BYTES, &body, &len, &status) != ORGW_OK ||
	    status < 200 || status > 599 || (status >= 300 && status <= 399)) {
		free(body);
		return http_error(io, 502, "upstream_error",
				  "upstream_unavailable", NULL,
				  "could not fetch the key's status", NULL);
	}
	mask_key(c->openrouter_api_key, body, len);
	rc = http_json(io, (int)status, "Cache-Control: no-cache\r\n", body,
		       len);
	free(body);
	return rc;
}
