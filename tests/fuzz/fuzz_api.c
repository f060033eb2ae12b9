/*
 * fuzz_api.c - libFuzzer target for the three API adapters (api.h): what
 * an upstream event or body means, whatever upstream sends.
 *
 * Input layout: byte 0 picks the adapter (% 3: chat, Messages,
 * Responses); the rest is a sequence of JSON texts separated by "\n\n",
 * as a stream's data payloads come.  Each is parsed with cJSON; a JSON
 * object goes to the adapter's event() in order, folding into one
 * answer, and the last one also to body() on a fresh answer.
 * Invariants (a violation aborts):
 *   - event() returns one of the four classes;
 *   - the answer stays sane: token counts 0..1e15, a cost only when
 *     have_cost and then finite and >= 0, served and err_msg
 *     NUL-terminated within their arrays, err_code set (100..599) when
 *     has_error, seq >= -1;
 *   - an event classified API_EV_ERROR leaves has_error set;
 *   - the upstream key (whole) never survives in err_msg;
 *   - the writers (stream_error, committed_error, error_body) give
 *     text for every status and the answer as it is, and the SSE ones
 *     end with a blank line.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KEY "sk-or-v1-FUZZKEY"

static void
check_answer(const struct api_answer *a)
{
	const struct api_usage *u = &a->usage;

	if (u->prompt < 0 || u->prompt > 3e15 || u->cached < 0 ||
	    u->cached > 1e15 || u->cache_write < 0 || u->cache_write > 1e15 ||
	    u->completion < 0 || u->completion > 1e15)
		abort();
	if (u->have_cost && (!isfinite(u->cost) || u->cost < 0))
		abort();
	if (memchr(a->served, '\0', sizeof(a->served)) == NULL ||
	    memchr(a->err_msg, '\0', sizeof(a->err_msg)) == NULL)
		abort();
	if (a->has_error && (a->err_code < 100 || a->err_code > 599))
		abort();
	if (a->seq < -1 || strstr(a->err_msg, KEY) != NULL)
		abort();
}

static void
check_writers(const struct api *api, const struct api_answer *a)
{
	static const int status[] = {400, 401, 404, 413, 429, 500, 502, 503,
				     504, 529, 299, 600};
	char *s;
	size_t i, n;

	for (i = 0; i < sizeof(status) / sizeof(status[0]); i++) {
		s = api->stream_error(status[i], "mid_stream_failure",
				      a->err_msg, "m/x", 1, a);
		if (s == NULL || (n = strlen(s)) < 2 ||
		    strcmp(s + n - 2, "\n\n") != 0)
			abort();
		cJSON_free(s);
		s = api->committed_error(status[i], "upstream_error",
					 a->err_msg, "m/x", 1, "gen-1");
		if (s == NULL)
			abort();
		cJSON_free(s);
		s = api->error_body(status[i], "t", NULL, NULL, a->err_msg,
				    NULL);
		if (s == NULL)
			abort();
		cJSON_free(s);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct api *api;
	struct api_answer a, b;
	char *text, *p, *end, *cut;
	cJSON *o, *last = NULL;
	enum api_ev ev;

	if (size < 1)
		return 0;
	api = api_get((enum api_id)(data[0] % 3));
	if ((text = malloc(size)) == NULL)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	api_answer_init(&a);
	end = text + strlen(text);
	for (p = text; p < end; p = cut + 2) {
		if ((cut = strstr(p, "\n\n")) == NULL)
			cut = end;
		*cut = '\0';
		o = cJSON_Parse(p);
		if (cJSON_IsObject(o)) {
			ev = api->event(o, KEY, &a);
			if (ev != API_EV_HOLD && ev != API_EV_TOKEN &&
			    ev != API_EV_END && ev != API_EV_ERROR)
				abort();
			if (ev == API_EV_ERROR && !a.has_error)
				abort();
			check_answer(&a);
			cJSON_Delete(last);
			last = o;
		} else {
			cJSON_Delete(o);
		}
		if (cut == end)
			break;
	}
	check_writers(api, &a);
	if (last != NULL) {
		api_answer_init(&b);
		api->body(last, KEY, &b);
		check_answer(&b);
		check_writers(api, &b);
	}
	cJSON_Delete(last);
	free(text);
	return 0;
}
