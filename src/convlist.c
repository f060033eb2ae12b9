/*
 * convlist.c - the conversations as /stats, /metrics, /status and the
 * CLI show them (convlist.h); pure.
 *
 * Invariants: rows[0..n-1] are the kept rows, newest first (last turn,
 * then the shown id, so two walks of one state give one order); rows[n]
 * is the scratch a record is decoded into, so keeping a row or dropping
 * the oldest moves pointers, never the rows themselves.  The per-model
 * objects live in agg, built as records come and copied out by
 * convlist_render().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "convcache.h"
#include "convlist.h"
#include "record.h"

struct convlist_row {
	char model[ORGW_MODEL_MAX];
	struct rec_conv rec;
	struct convcache cache;
	int64_t last;		/* the last turn, unix seconds */
};

struct convlist {
	struct convlist_opts o;
	size_t n;			/* rows kept */
	struct convlist_row **rows;	/* max_rows + 1 pointers */
	struct convlist_row *pool;	/* what they point to */
	cJSON *agg;			/* by model */
	bool ok;
};

struct convlist *
convlist_new(const struct convlist_opts *o)
{
	struct convlist *l = calloc(1, sizeof(*l));
	size_t i;

	if (l == NULL)
		return NULL;
	l->o = *o;
	if (l->o.max_rows > CONVLIST_ROWS)
		l->o.max_rows = CONVLIST_ROWS;
	l->rows = calloc(l->o.max_rows + 1, sizeof(*l->rows));
	l->pool = calloc(l->o.max_rows + 1, sizeof(*l->pool));
	l->agg = cJSON_CreateObject();
	if (l->rows == NULL || l->pool == NULL || l->agg == NULL) {
		convlist_free(l);
		return NULL;
	}
	for (i = 0; i <= l->o.max_rows; i++)
		l->rows[i] = &l->pool[i];
	l->ok = true;
	return l;
}

void
convlist_free(struct convlist *l)
{
	if (l == NULL)
		return;
	free(l->rows);
	free(l->pool);
	cJSON_Delete(l->agg);
	free(l);
}

/* o[k], an object, added when missing; NULL when out of memory. */
static cJSON *
obj_at(cJSON *o, const char *k)
{
	cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	if (it == NULL)
		it = cJSON_AddObjectToObject(o, k);
	return it;
}

/* o[k] += d (a number, added as d when missing). */
static bool
bump(cJSON *o, const char *k, double d)
{
	cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	if (it == NULL)
		return o != NULL && cJSON_AddNumberToObject(o, k, d) != NULL;
	cJSON_SetNumberValue(it, it->valuedouble + d);
	return true;
}

/* The members of a model's "conversations" object, added to m where
 * absent, so each model always has the same ones (the /metrics series
 * of a model do not come and go with its conversations). */
static bool
agg_fill(cJSON *m)
{
	return m != NULL &&
	       (cJSON_HasObjectItem(m, "active") ||
		cJSON_AddNumberToObject(m, "active", 0) != NULL) &&
	       (cJSON_HasObjectItem(m, "spread") ||
		cJSON_AddNumberToObject(m, "spread", 0) != NULL) &&
	       (cJSON_HasObjectItem(m, "providers") ||
		cJSON_AddObjectToObject(m, "providers") != NULL);
}

/* The model's aggregate, every member present. */
static cJSON *
model_agg(struct convlist *l, const char *model)
{
	cJSON *m = cJSON_GetObjectItemCaseSensitive(l->agg, model);

	if (m != NULL)
		return m;
	m = cJSON_AddObjectToObject(l->agg, model);
	return agg_fill(m) ? m : NULL;
}

/* The model's provider entry, with the same members for every one. */
static cJSON *
provider_agg(cJSON *m, const char *tag)
{
	cJSON *ps = cJSON_GetObjectItemCaseSensitive(m, "providers");
	cJSON *p = cJSON_GetObjectItemCaseSensitive(ps, tag);

	if (p != NULL)
		return p;
	p = cJSON_AddObjectToObject(ps, tag);
	if (p == NULL || !cJSON_AddNumberToObject(p, "active", 0) ||
	    !cJSON_AddNumberToObject(p, "provider_429s", 0) ||
	    !cJSON_AddBoolToObject(p, "under_pressure", false) ||
	    !cJSON_AddNullToObject(p, "pressure_until"))
		return NULL;
	return p;
}

/* A number member: cJSON's own, so /status, the CLI and the metrics
 * read it back as a number (record_add_number() writes raw text). */
static bool
add_num(cJSON *o, const char *k, double d)
{
	return cJSON_AddNumberToObject(o, k, d) != NULL;
}

/* a newer than b (the list's order). */
static bool
newer(const struct convlist_row *a, const struct convlist_row *b)
{
	int c;

	if (a->last != b->last)
		return a->last > b->last;
	c = strcmp(a->rec.show, b->rec.show);
	return c != 0 ? c < 0 : strcmp(a->model, b->model) < 0;
}

/* Keeps the scratch row rows[n] when it is among the newest max_rows. */
static void
keep_row(struct convlist *l)
{
	struct convlist_row *r = l->rows[l->n];
	size_t pos = l->n;

	while (pos > 0 && newer(r, l->rows[pos - 1]))
		pos--;
	if (pos >= l->o.max_rows)
		return;
	/* With the list full, the oldest row shifts into rows[n] and
	 * becomes the scratch: dropped. */
	memmove(&l->rows[pos + 1], &l->rows[pos],
		(l->n - pos) * sizeof(*l->rows));
	l->rows[pos] = r;
	if (l->n < l->o.max_rows)
		l->n++;
}

static void
add_conv(struct convlist *l, const struct statekey_parts *k, const char *val)
{
	struct convlist_row *r = l->rows[l->n];
	cJSON *cache = NULL, *m, *p;

	memset(r, 0, sizeof(*r));
	if (k->last[0] == '\0' ||
	    snprintf(r->model, sizeof(r->model), "%s", k->first) >=
		    (int)sizeof(r->model) ||
	    record_conv_decode(val, &r->rec, &cache) != ORGW_OK) {
		cJSON_Delete(cache);
		return;
	}
	/* A record without a cache member, or one from another version,
	 * reads as an empty cache record: its routing is still shown. */
	(void)convcache_decode(cache, &r->cache);
	cJSON_Delete(cache);
	if (r->rec.tag[0] == '\0')
		snprintf(r->rec.tag, sizeof(r->rec.tag), "%s",
			 r->cache.provider);
	r->last = r->rec.last_turn > r->cache.last_seen ? r->rec.last_turn :
							    r->cache.last_seen;
	if ((m = model_agg(l, r->model)) == NULL) {
		l->ok = false;
		return;
	}
	if (r->rec.spread)
		l->ok = l->ok && bump(m, "spread", 1);
	if (r->rec.tag[0] != '\0' && r->last > l->o.now - l->o.idle_s) {
		l->ok = l->ok && bump(m, "active", 1);
		p = provider_agg(m, r->rec.tag);
		l->ok = l->ok && p != NULL && bump(p, "active", 1);
	}
	keep_row(l);
}

static void
add_pressure(struct convlist *l, const struct statekey_parts *k,
	     const char *val)
{
	struct rec_pressure pr;
	cJSON *m, *p;
	bool now_on;

	if (k->last[0] == '\0' || record_pressure_decode(val, &pr) != ORGW_OK)
		return;
	if ((m = model_agg(l, k->first)) == NULL ||
	    (p = provider_agg(m, k->last)) == NULL) {
		l->ok = false;
		return;
	}
	now_on = pr.until > l->o.now;
	cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(p,
							      "provider_429s"),
			     (double)pr.n429);
	cJSON_ReplaceItemInObjectCaseSensitive(p, "under_pressure",
					       cJSON_CreateBool(now_on));
	if (now_on)
		cJSON_ReplaceItemInObjectCaseSensitive(
			p, "pressure_until", cJSON_CreateNumber((double)pr.until));
	/* A replacement that could not be made leaves a member out. */
	if (!cJSON_HasObjectItem(p, "under_pressure") ||
	    !cJSON_HasObjectItem(p, "pressure_until"))
		l->ok = false;
}

bool
convlist_add(struct convlist *l, const struct statekey_parts *k,
	     const char *val)
{
	if (k->family == SK_CONV) {
		add_conv(l, k, val);
		return true;
	}
	if (k->family == SK_PRESSURE) {
		add_pressure(l, k, val);
		return true;
	}
	return false;
}

static bool
render_break(const struct convlist *l, const struct convcache_break *b,
	     cJSON *arr)
{
	char words[CONVLIST_WORDS_MAX];
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL && cJSON_AddItemToArray(arr, o);
	bool pc = b->cause == CONVCACHE_PREFIX_CHANGED;

	if (!ok) {
		cJSON_Delete(o);
		return false;
	}
	(void)convcache_words(b, l->o.ttl_s, words, sizeof(words));
	ok = add_num(o, "turn", (double)b->turn) &&
	     cJSON_AddStringToObject(o, "cause",
				     convcache_cause_name(b->cause)) &&
	     (pc ? add_num(o, "at", (double)b->at) :
		   cJSON_AddNullToObject(o, "at") != NULL) &&
	     (pc ? cJSON_AddStringToObject(o, "unit", b->unit) != NULL :
		   cJSON_AddNullToObject(o, "unit") != NULL) &&
	     add_num(o, "expected_tokens",
			       (double)b->expected_tokens) &&
	     add_num(o, "cached_tokens", (double)b->cached_tokens) &&
	     add_num(o, "idle_s", (double)b->idle_s) &&
	     cJSON_AddStringToObject(o, "provider", b->provider) &&
	     cJSON_AddStringToObject(o, "from", b->from) &&
	     cJSON_AddStringToObject(o, "words", words);
	return ok;
}

static bool
render_row(const struct convlist *l, const struct convlist_row *r,
	   cJSON *arr)
{
	const struct convcache *c = &r->cache;
	cJSON *o = cJSON_CreateObject(), *br;
	bool ok = o != NULL && cJSON_AddItemToArray(arr, o);
	size_t i;

	if (!ok) {
		cJSON_Delete(o);
		return false;
	}
	ok = cJSON_AddStringToObject(o, "id", r->rec.show) &&
	     cJSON_AddStringToObject(o, "model", r->model) &&
	     cJSON_AddStringToObject(o, "api", r->rec.api) &&
	     cJSON_AddStringToObject(o, "provider", r->rec.tag) &&
	     add_num(o, "turns",
			       (double)(r->rec.turns ? r->rec.turns :
						       c->turns)) &&
	     add_num(o, "first_seen",
			       (double)(r->rec.first_seen ? r->rec.first_seen :
							    c->first_seen)) &&
	     add_num(o, "last_seen", (double)r->last) &&
	     add_num(o, "prompt_tokens", (double)c->prompt_tokens) &&
	     add_num(o, "cached_tokens", (double)c->cached_tokens) &&
	     add_num(o, "cache_write_tokens",
			       (double)c->cache_write_tokens) &&
	     add_num(o, "cost", c->cost) &&
	     add_num(o, "saved", c->saved) &&
	     cJSON_AddBoolToObject(o, "spread", r->rec.spread) &&
	     add_num(o, "breaks_total", (double)c->breaks_total) &&
	     (br = cJSON_AddArrayToObject(o, "breaks")) != NULL;
	for (i = 0; ok && i < c->nbreaks; i++)
		ok = render_break(l, &c->breaks[i], br);
	return ok;
}

bool
convlist_render(const struct convlist *l, cJSON *root, cJSON *models)
{
	const cJSON *agg = models != NULL ? l->agg : NULL;
	cJSON *arr, *m, *dst, *dup, *have, *it;
	bool ok = l->ok;
	size_t i;

	if (ok && root != NULL) {
		ok = (arr = cJSON_AddArrayToObject(root, "conversations")) !=
		     NULL;
		for (i = 0; ok && i < l->n; i++)
			ok = render_row(l, l->rows[i], arr);
	}
	cJSON_ArrayForEach(m, agg)
	{
		if (!ok)
			break;
		dst = obj_at(models, m->string);
		have = cJSON_GetObjectItemCaseSensitive(dst, "conversations");
		if (cJSON_IsObject(have)) {
			/* The ledger's breaks by cause are there already
			 * (/stats): the records' members join them. */
			cJSON_ArrayForEach(it, m)
			{
				if (!ok)
					break;
				if (cJSON_HasObjectItem(have, it->string))
					continue;
				dup = cJSON_Duplicate(it, 1);
				ok = dup != NULL &&
				     cJSON_AddItemToObject(have, it->string,
							   dup);
				if (!ok)
					cJSON_Delete(dup);
			}
			continue;
		}
		dup = cJSON_Duplicate(m, 1);
		ok = dst != NULL && dup != NULL &&
		     cJSON_AddItemToObject(dst, "conversations", dup);
		if (!ok)
			cJSON_Delete(dup);
	}
	/* A model with breaks counted but no record kept now. */
	cJSON_ArrayForEach(m, models)
	{
		have = cJSON_GetObjectItemCaseSensitive(m, "conversations");
		if (ok && cJSON_IsObject(have))
			ok = agg_fill(have);
	}
	return ok;
}

const char *
convlist_row_last_words(const cJSON *row)
{
	const cJSON *br = cJSON_GetObjectItemCaseSensitive(row, "breaks");
	const cJSON *w;
	int n = cJSON_GetArraySize(br);

	if (n <= 0)
		return NULL;
	w = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(br, n - 1),
					     "words");
	return cJSON_IsString(w) ? w->valuestring : NULL;
}

double
convlist_row_cached_share(const cJSON *row)
{
	double p = cJSON_GetNumberValue(
		cJSON_GetObjectItemCaseSensitive(row, "prompt_tokens"));
	double c = cJSON_GetNumberValue(
		cJSON_GetObjectItemCaseSensitive(row, "cached_tokens"));

	if (!(p > 0) || !(c >= 0))
		return 0;
	return c > p ? 1 : c / p;
}
