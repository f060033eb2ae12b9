/*
 * fuzz_convcache.c - libFuzzer target for convcache.c (the per-
 * conversation cache record) and fingerprint.c.
 *
 * The input, parsed as JSON, is taken both as a stored record and as a
 * request body of each API.  Invariants (a violation aborts):
 *   - a decoded record's strings are NUL-terminated within their arrays,
 *     its counts >= 0, its doubles finite, nbreaks <= CONVCACHE_BREAKS,
 *     every kept break has a cause, and its prefix holds together;
 *   - encode(decode(x)) printed, parsed and decoded encodes the same;
 *   - the body's units hash the same when fingerprinted twice;
 *   - classifying the body's units against the record and updating it
 *     keeps those invariants, counts the turn, and a prompt compared
 *     with itself right after is the same prefix;
 *   - the words of every break are NUL-terminated and non-empty.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "convcache.h"
#include "fingerprint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_str(const char *s, size_t n)
{
	if (memchr(s, '\0', n) == NULL)
		abort();
}

static void
check_unit(const struct convcache_unit *u)
{
	check_str(u->kind, sizeof(u->kind));
	if (u->bytes < 0)
		abort();
}

static void
check_rec(const struct convcache *c)
{
	char words[256];
	int64_t i, ta;
	size_t k;

	check_str(c->provider, sizeof(c->provider));
	if (c->turns < 0 || c->first_seen < 0 || c->last_seen < 0 ||
	    c->prompt_tokens < 0 || c->cached_tokens < 0 ||
	    c->cache_write_tokens < 0 || c->last_prompt_tokens < 0 ||
	    c->breaks_total < 0 || !isfinite(c->cost) ||
	    !isfinite(c->saved) || c->nbreaks > CONVCACHE_BREAKS ||
	    c->prefix.n < 0 || c->prefix.bytes < 0)
		abort();
	for (k = 0; k < c->nbreaks; k++) {
		const struct convcache_break *b = &c->breaks[k];

		check_str(b->unit, sizeof(b->unit));
		check_str(b->provider, sizeof(b->provider));
		check_str(b->from, sizeof(b->from));
		if (b->cause == CONVCACHE_NONE ||
		    convcache_cause_name(b->cause)[0] == '\0' ||
		    (b->cause != CONVCACHE_PREFIX_CHANGED && b->at != -1))
			abort();
		convcache_words(b, 300, words, sizeof(words));
		check_str(words, sizeof(words));
		if (words[0] == '\0')
			abort();
	}
	ta = convcache_tail_at(c->prefix.n);
	if (ta > c->prefix.n || c->prefix.n - ta > CONVCACHE_TAIL_UNITS)
		abort();
	for (i = 0; i < c->prefix.n && i < CONVCACHE_HEAD_UNITS; i++)
		check_unit(&c->prefix.head[i]);
	for (i = ta; i < c->prefix.n; i++)
		check_unit(&c->prefix.tail[i - ta]);
}

/* c encoded and printed; cJSON-allocated, caller frees. */
static char *
print_rec(const struct convcache *c)
{
	cJSON *o = cJSON_CreateObject();
	char *s = NULL;

	if (o == NULL)
		return NULL;
	if (convcache_encode(c, o))
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

static void
round_trip(const struct convcache *c)
{
	struct convcache d;
	char *s = print_rec(c), *t;
	cJSON *o;

	if (s == NULL)
		abort();	/* out of memory: not expected here */
	o = cJSON_Parse(s);
	if (convcache_decode(o, &d) != ORGW_OK)
		abort();
	cJSON_Delete(o);
	check_rec(&d);
	if ((t = print_rec(&d)) == NULL || strcmp(s, t) != 0)
		abort();
	cJSON_free(s);
	cJSON_free(t);
}

static void
turn(struct convcache *c, const cJSON *body, enum api_id api, int64_t now)
{
	struct fp_list a = {0}, b = {0};
	struct convcache_turn t = {0};
	struct convcache_verdict v;
	size_t i;
	int64_t turns = c->turns;

	if (fp_compute(body, api, &a) != ORGW_OK ||
	    fp_compute(body, api, &b) != ORGW_OK || a.n != b.n)
		abort();
	for (i = 0; i < a.n; i++) {
		check_str(a.v[i].kind, sizeof(a.v[i].kind));
		if (a.v[i].hash != b.v[i].hash || a.v[i].bytes != b.v[i].bytes)
			abort();
	}
	t.fp = &a;
	t.provider = api == API_CHAT ? "a" : "b";
	t.now = now;
	t.prompt_tokens = (int64_t)a.n * 100;
	t.cached_tokens = (int64_t)a.n * 10;
	t.cost = 0.01;
	convcache_classify(c, &t, 300, &v);
	check_str(v.unit, sizeof(v.unit));
	if (v.is_break != (v.cause != CONVCACHE_NONE))
		abort();
	convcache_update(c, &t, &v);
	check_rec(c);
	if (c->turns != turns + 1 && turns < 1000000000000000LL)
		abort();
	convcache_classify(c, &t, 300, &v);
	if (!v.prefix_same || v.common != (int64_t)a.n)
		abort();
	fp_list_clear(&a);
	fp_list_clear(&b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct convcache c;
	cJSON *j = cJSON_ParseWithLength((const char *)data, size);

	(void)convcache_decode(j, &c);
	check_rec(&c);
	round_trip(&c);
	turn(&c, j, API_MESSAGES, c.last_seen + 10);
	turn(&c, j, API_RESPONSES, c.last_seen + 400);
	turn(&c, j, API_CHAT, c.last_seen + 1);
	round_trip(&c);
	cJSON_Delete(j);
	return 0;
}
