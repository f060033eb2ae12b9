/*
 * ledger_render.c - the /stats and /metrics trees rendered from the
 * ledger's cells (see ledger.h): a cell's counters and histograms added
 * into a tree, a model's hit rates, an older release's tree merged in,
 * and the averages and zeroed days a finished tree gets.  Pure, like
 * ledger.c.
 */
#include <string.h>

#include "ledger.h"
#include "ledger_impl.h"
#include "score.h"

/* The object o[k], made when absent or not an object; NULL when out of
 * memory. */
static cJSON *
child(cJSON *o, const char *k)
{
	cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k), *n;

	if (o == NULL)
		return NULL;
	if (cJSON_IsObject(it))
		return it;
	if ((n = cJSON_CreateObject()) == NULL)
		return NULL;
	if (it != NULL ? !cJSON_ReplaceItemInObjectCaseSensitive(o, k, n) :
			 !cJSON_AddItemToObject(o, k, n)) {
		cJSON_Delete(n);
		return NULL;
	}
	return n;
}

/* o[k] += v (max: o[k] = max(o[k], v)), made when absent. */
static bool
bump(cJSON *o, const char *k, double v, bool max)
{
	cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	if (o == NULL)
		return false;
	v = fin(v);
	if (cJSON_IsNumber(it)) {
		double have = fin(it->valuedouble);
		cJSON_SetNumberValue(it, max ? (v > have ? v : have) :
					       fin(have + v));
		return true;
	}
	if (it != NULL)
		cJSON_DeleteItemFromObjectCaseSensitive(o, k);
	return cJSON_AddNumberToObject(o, k, v) != NULL;
}

/* Adds v at the dotted path in o ("a.b": o.a.b). */
static bool
bump_path(cJSON *o, const char *path, double v, bool max)
{
	char part[64];
	const char *dot;

	while ((dot = strchr(path, '.')) != NULL) {
		if (!part_copy(part, sizeof(part), path, dot))
			return false;
		if ((o = child(o, part)) == NULL)
			return false;
		path = dot + 1;
	}
	return bump(o, path, v, max);
}

/* The counters of c that show at one level of /stats: every row with
 * all of need in its scope (zero rows too when fill). */
static bool
stats_rows(cJSON *o, const struct ledger_cell *c, unsigned need, bool fill)
{
	int i;

	for (i = 0; i < LX_N; i++) {
		const struct ledger_field *f = &ledger_fields[i];

		if (f->stats == NULL || (f->scope & need) != need)
			continue;
		if ((c->v[i] != 0 || fill) &&
		    !bump_path(o, f->stats, c->v[i], f->scope & LS_MAX))
			return false;
	}
	return true;
}

/* Adds a histogram's slot counts to o.buckets (made with LAT_N_SLOTS
 * zeroes when absent or of another size). */
static bool
hist_add(cJSON *o, const double *v)
{
	cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "buckets"), *it;
	size_t i;

	if (o == NULL)
		return false;
	if (!cJSON_IsArray(b) || cJSON_GetArraySize(b) != LAT_N_SLOTS) {
		double zero[LAT_N_SLOTS] = {0};

		cJSON_DeleteItemFromObjectCaseSensitive(o, "buckets");
		b = cJSON_CreateDoubleArray(zero, LAT_N_SLOTS);
		if (b == NULL || !cJSON_AddItemToObject(o, "buckets", b)) {
			cJSON_Delete(b);
			return false;
		}
	}
	for (i = 0, it = b->child; it != NULL && i < LAT_N_SLOTS;
	     i++, it = it->next)
		if (v[i] != 0)
			cJSON_SetNumberValue(it, fin(fin(it->valuedouble) + v[i]));
	return true;
}

static bool
any(const double *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] != 0)
			return true;
	return false;
}

bool
ledger_render_cell(cJSON *stats, cJSON *metrics,
		   const struct ledger_key_parts *p,
		   const struct ledger_cell *c, int64_t now)
{
	bool tagged = strcmp(p->tag, LEDGER_NONE) != 0;
	bool api = strcmp(p->api, LEDGER_NONE) != 0;
	cJSON *prov = NULL, *o;
	char first[11];
	int i;

	if (stats != NULL) {
		if (!stats_rows(stats, c, 0, false))
			return false;
		if (tagged && ((o = child(child(stats, "by_provider"),
					  p->tag)) == NULL ||
			       !stats_rows(o, c, LS_PROVIDER, false)))
			return false;
		if (api && ((o = child(child(stats, "by_api"), p->api)) ==
				    NULL ||
			    !stats_rows(o, c, LS_API, false)))
			return false;
		first_day(now, first);
		if (tagged && c->v[LX_PRICED] != 0 && day_ok(p->day) &&
		    strcmp(p->day, first) >= 0) {
			o = child(child(child(stats, "days"), p->day), p->tag);
			for (i = 0; i < LX_N; i++)
				if (ledger_fields[i].day != NULL &&
				    !bump(o, ledger_fields[i].day, c->v[i],
					  false))
					return false;
		}
	}
	if (metrics == NULL)
		return true;
	if (tagged && (prov = child(child(metrics, "providers"), p->tag)) ==
			      NULL)
		return false;
	for (i = 0; i < LX_N; i++) {
		const struct ledger_field *f = &ledger_fields[i];
		cJSON *at = f->metrics_model ? metrics : prov;

		if (f->metrics == NULL || at == NULL || c->v[i] == 0)
			continue;
		if (!bump_path(at, f->metrics, c->v[i], false))
			return false;
	}
	if (any(c->ttfb, LAT_N_SLOTS) && !hist_add(child(metrics, "ttfb"),
						    c->ttfb))
		return false;
	if (any(c->dur, LAT_N_SLOTS) &&
	    !hist_add(child(metrics, "duration"), c->dur))
		return false;
	return true;
}

bool
ledger_render_hit(cJSON *stats, const char *tag, const struct score_hit *h)
{
	cJSON *p = child(child(stats, "by_provider"), tag), *o;

	if (p == NULL || (o = cJSON_CreateObject()) == NULL)
		return false;
	if (!cJSON_AddNumberToObject(o, "rate", h->rate) ||
	    !cJSON_AddNumberToObject(o, "weight", h->weight) ||
	    !cJSON_AddNumberToObject(o, "tokens", (double)h->tokens) ||
	    (cJSON_GetObjectItemCaseSensitive(p, "hit") != NULL ?
		     !cJSON_ReplaceItemInObjectCaseSensitive(p, "hit", o) :
		     !cJSON_AddItemToObject(p, "hit", o))) {
		cJSON_Delete(o);
		return false;
	}
	return true;
}

/* True when k ends in "_max": a maximum, not a sum. */
static bool
is_max(const char *k)
{
	size_t n = strlen(k);

	return n > 4 && strcmp(k + n - 4, "_max") == 0;
}

/* An array of n zeroes as dst[k]; NULL when out of memory. */
static cJSON *
zero_array(cJSON *dst, const char *k, int n)
{
	cJSON *a = cJSON_CreateArray();
	int i;

	for (i = 0; a != NULL && i < n; i++)
		if (!cJSON_AddItemToArray(a, cJSON_CreateNumber(0))) {
			cJSON_Delete(a);
			a = NULL;
		}
	if (a != NULL && !cJSON_AddItemToObject(dst, k, a)) {
		cJSON_Delete(a);
		a = NULL;
	}
	return a;
}

/* dst += src member by member: numbers added (maxima kept), objects
 * merged, arrays of numbers (histogram slots) added slot by slot when
 * both have the same size; strings and other arrays are left out, and a
 * non-finite number counts 0.  A "hit" object is taken only where dst
 * has none (a HIT key's rate is newer than an old record's). */
static bool
tree_add(cJSON *dst, const cJSON *src)
{
	const cJSON *it;

	if (dst == NULL)
		return false;
	cJSON_ArrayForEach(it, src)
	{
		cJSON *have;

		if (it->string == NULL || strcmp(it->string, "v") == 0)
			continue;
		have = cJSON_GetObjectItemCaseSensitive(dst, it->string);
		if (cJSON_IsNumber(it)) {
			if (!bump(dst, it->string, it->valuedouble,
				  is_max(it->string)))
				return false;
		} else if (cJSON_IsObject(it)) {
			if (strcmp(it->string, "hit") == 0 && have != NULL)
				continue;
			if (!tree_add(child(dst, it->string), it))
				return false;
		} else if (cJSON_IsArray(it) && strcmp(it->string, "buckets") == 0) {
			int n = cJSON_GetArraySize(it);
			cJSON *a;
			const cJSON *b;

			if (have == NULL &&
			    (have = zero_array(dst, it->string, n)) == NULL)
				return false;
			if (!cJSON_IsArray(have) || cJSON_GetArraySize(have) != n)
				continue;
			for (a = have->child, b = it->child;
			     a != NULL && b != NULL; a = a->next, b = b->next)
				if (cJSON_IsNumber(a) && cJSON_IsNumber(b))
					cJSON_SetNumberValue(
						a, fin(fin(a->valuedouble) +
						       fin(b->valuedouble)));
		}
	}
	return true;
}

bool
ledger_merge_legacy(cJSON *dst, const char *text)
{
	cJSON *o = text != NULL ? cJSON_Parse(text) : NULL;
	bool ok = true;

	if (cJSON_IsObject(o) && dst != NULL)
		ok = tree_add(dst, o);
	cJSON_Delete(o);
	return ok;
}

/* avg = sum / n under o, when n > 0. */
static bool
average(cJSON *o, const char *sum, const char *n, const char *avg)
{
	double c = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, n));
	double s =
		cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, sum));

	if (!(c > 0))
		return true;
	cJSON_DeleteItemFromObjectCaseSensitive(o, avg);
	return cJSON_AddNumberToObject(o, avg, s / c) != NULL;
}

bool
ledger_render_finish(cJSON *stats, int64_t now)
{
	struct ledger_cell zero;
	cJSON *days = cJSON_GetObjectItemCaseSensitive(stats, "days"), *it,
	      *next, *lat, *tok;
	char first[11];
	double prompt, cached;

	memset(&zero, 0, sizeof(zero));
	first_day(now, first);
	for (it = days != NULL ? days->child : NULL; it != NULL; it = next) {
		next = it->next;
		if (it->string == NULL || !day_ok(it->string) ||
		    strcmp(it->string, first) < 0 || !cJSON_IsObject(it))
			cJSON_Delete(cJSON_DetachItemViaPointer(days, it));
	}
	if (!stats_rows(stats, &zero, 0, true))
		return false;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(stats,
								"by_provider"))
	{
		if (cJSON_IsObject(it) && !stats_rows(it, &zero, LS_PROVIDER, true))
			return false;
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(stats, "by_api"))
	{
		if (cJSON_IsObject(it) && !stats_rows(it, &zero, LS_API, true))
			return false;
	}
	lat = cJSON_GetObjectItemCaseSensitive(stats, "latency");
	if (!average(lat, "ttfb_ms_sum", "ttfb_count", "ttfb_ms_avg") ||
	    !average(lat, "total_ms_sum", "total_count", "total_ms_avg"))
		return false;
	tok = cJSON_GetObjectItemCaseSensitive(stats, "tokens");
	prompt = cJSON_GetNumberValue(
		cJSON_GetObjectItemCaseSensitive(tok, "prompt"));
	cached = cJSON_GetNumberValue(
		cJSON_GetObjectItemCaseSensitive(tok, "cached"));
	cJSON_DeleteItemFromObjectCaseSensitive(stats, "cache_hit_rate");
	return cJSON_AddNumberToObject(stats, "cache_hit_rate",
				       prompt > 0 ? cached / prompt : 0) !=
	       NULL;
}
