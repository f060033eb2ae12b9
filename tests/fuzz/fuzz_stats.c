/*
 * fuzz_stats.c - libFuzzer target for record_stats_apply()'s two paths
 * (record.c): the flat codec must give the tree path's bytes, or decline.
 *
 * The input, with a NUL after it, is a stored STATS:<model> value; a
 * delta is drawn from the input's bytes (a hash seeds the numbers, so a
 * one-byte change moves every field).  Invariants (a violation aborts):
 *   - record_stats_apply() gives exactly record_stats_apply_tree()'s
 *     bytes, and neither gives NULL (no allocation fails here);
 *   - record_stats_apply_flat() answers ORGW_OK with those same bytes,
 *     or ORGW_EINVAL with *out NULL;
 *   - the same holds for a second delta applied to the first output,
 *     which the flat path must take when the tag prints as its bytes and
 *     the output is what orgw writes: numbers and objects only, at most
 *     4 deep, plain keys each once per object, under 200 members.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* FNV-1a, then splitmix64 steps: numbers drawn from the input. */
struct draw {
	uint64_t s;
};

static uint64_t
next(struct draw *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int64_t
count(struct draw *r)
{
	uint64_t u = next(r);

	switch (u % 8) {
	case 0:
		return 0;
	case 1:
		return (int64_t)(u >> 33);	/* crosses INT_MAX */
	case 2:
		return (int64_t)(u >> 11);	/* crosses 2^53 */
	case 3:
		return (int64_t)(u >> 1);
	case 4:
		return -(int64_t)(u >> 40);
	default:
		return (int64_t)((u >> 8) % 100000);
	}
}

static double
cost(struct draw *r)
{
	uint64_t u = next(r);

	switch (u % 10) {
	case 0:
		return NAN;
	case 1:
		return u & 256 ? INFINITY : -INFINITY;
	case 2:
		return -0.0;
	case 3:
		return 1e300 * (double)(u >> 60);
	case 4:
		return ldexp((double)(u >> 11), -80);
	default:
		return (double)((u >> 8) % 500000) * 1e-8;
	}
}

static const char *const tags[] = {
	NULL, "", "deepseek", "deepinfra/fp8", "novita", "requests", "tokens",
	"v", "a\"b", "\t",
};

static void
delta(struct draw *r, struct stats_delta *d)
{
	memset(d, 0, sizeof(*d));
	d->tag = tags[next(r) % (sizeof(tags) / sizeof(tags[0]))];
	d->requests = next(r) % 4 ? 1 : count(r);
	d->ok = count(r);
	d->e429 = count(r);
	d->e5xx = count(r);
	d->etimeout = count(r);
	d->eslow = count(r);
	d->emid = count(r);
	d->eabort = count(r);
	d->eother = count(r);
	d->retries_429 = count(r);
	d->failovers = count(r);
	d->trips = count(r);
	d->off_pin = count(r);
	d->prompt_tokens = count(r);
	d->cached_tokens = count(r);
	d->completion_tokens = count(r);
	d->cost_usd = cost(r);
	d->ttfb_ms = next(r) % 3 ? count(r) : -1;
	d->total_ms = next(r) % 3 ? count(r) : -1;
}

/* Both paths on text; aborts unless they agree.  Returns the tree's text
 * (caller frees) and whether the flat path took it. */
static char *
both(const char *text, const struct stats_delta *d, bool *took)
{
	char *t, *s, *f = (char *)1;
	enum orgw_err err;

	t = record_stats_apply_tree(text, d);
	s = record_stats_apply(text, d);
	err = record_stats_apply_flat(text, d, &f);
	if (t == NULL || s == NULL || strcmp(t, s) != 0)
		abort();
	if (err == ORGW_OK) {
		if (f == NULL || strcmp(t, f) != 0)
			abort();
	} else if (err != ORGW_EINVAL || f != NULL) {
		abort();
	}
	*took = err == ORGW_OK;
	record_free(s);
	record_free(f);
	return t;
}

/* Whether key prints as its bytes and fits a flat entry. */
static bool
plain_key(const char *k)
{
	const unsigned char *p;

	for (p = (const unsigned char *)k; *p != '\0'; p++)
		if (*p < 0x20 || *p == '"' || *p == '\\')
			return false;
	return p - (const unsigned char *)k <= 255;
}

/*
 * Whether object o (depth objects deep) is what the flat path takes: only
 * numbers and objects, at most 4 deep, keys plain and each once per
 * object.  Counts its members into *n.
 */
static bool
plain_tree(const cJSON *o, int depth, size_t *n)
{
	const cJSON *c, *e;

	if (depth > 4)
		return false;
	for (c = o->child; c != NULL; c = c->next) {
		++*n;
		if (c->string == NULL || !plain_key(c->string))
			return false;
		for (e = o->child; e != c; e = e->next)
			if (strcmp(e->string, c->string) == 0)
				return false;
		if (cJSON_IsObject(c)) {
			if (!plain_tree(c, depth + 1, n))
				return false;
		} else if (!cJSON_IsNumber(c)) {
			return false;
		}
	}
	return true;
}

/* Whether the tree path's text t is one the flat path must take: what
 * orgw writes looks like this, and the 256 entries leave room for the 36
 * a delta can add. */
static bool
plain_record(const char *t)
{
	cJSON *o = cJSON_Parse(t);
	size_t n = 0;
	bool ok = cJSON_IsObject(o) && plain_tree(o, 1, &n) && n < 200;

	cJSON_Delete(o);
	return ok;
}

/* Whether tag prints as its bytes (and fits the flat path's keys). */
static bool
plain_tag(const char *tag)
{
	return tag == NULL || plain_key(tag);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stats_delta d;
	struct draw r = {0xcbf29ce484222325ULL};
	char *text, *t, *u;
	bool took;
	size_t i;

	if ((text = malloc(size + 1)) == NULL)
		return 0;
	if (size)
		memcpy(text, data, size);
	text[size] = '\0';
	for (i = 0; i < size; i++)
		r.s = (r.s ^ data[i]) * 0x100000001b3ULL;
	delta(&r, &d);
	t = both(size == 0 && r.s % 2 ? NULL : text, &d, &took);
	delta(&r, &d);
	u = both(t, &d, &took);
	/* A record orgw could have written, with a tag as plain: the
	 * flat path must not decline it (it is the point of the path). */
	if (!took && plain_tag(d.tag) && plain_record(t))
		abort();
	record_free(u);
	record_free(t);
	free(text);
	return 0;
}
