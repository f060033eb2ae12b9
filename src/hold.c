/*
 * hold.c - what a team key's requests in flight may still spend
 * (hold.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "hold.h"

#define HOLD_VERSION 1
#define HOLD_NUM_MAX 1e15	/* the largest figure a record holds */

static bool
id_ok(const char *id)
{
	size_t i;

	for (i = 0; id[i] != '\0'; i++)
		if (i >= TEAMKEY_LEASE_ID_MAX ||
		    !((id[i] >= '0' && id[i] <= '9') ||
		      (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return i > 0;
}

static bool
num_ok(double d)
{
	return isfinite(d) && d >= 0 && d <= HOLD_NUM_MAX;
}

char *
holds_encode(const struct holds *h)
{
	cJSON *o, *arr = NULL, *e;
	char *s = NULL;
	bool ok;
	size_t i;

	if (h->n > HOLD_MAX)
		return NULL;
	o = cJSON_CreateObject();
	ok = o != NULL && cJSON_AddNumberToObject(o, "v", HOLD_VERSION) &&
	     (arr = cJSON_AddArrayToObject(o, "holds")) != NULL;
	for (i = 0; ok && i < h->n; i++) {
		const struct hold *x = &h->v[i];

		ok = id_ok(x->id) && x->until_ms >= 0 &&
		     num_ok((double)x->until_ms) && num_ok(x->usd) &&
		     (e = cJSON_CreateObject()) != NULL &&
		     cJSON_AddItemToArray(arr, e) &&
		     cJSON_AddStringToObject(e, "id", x->id) &&
		     cJSON_AddNumberToObject(e, "until_ms",
					     (double)x->until_ms) &&
		     cJSON_AddNumberToObject(e, "usd", x->usd);
	}
	if (ok)
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/* One hold of the record's array into x; false when it is not one. */
static bool
hold_from(const cJSON *e, struct hold *x)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
	const cJSON *until = cJSON_GetObjectItemCaseSensitive(e, "until_ms");
	const cJSON *usd = cJSON_GetObjectItemCaseSensitive(e, "usd");

	if (!cJSON_IsString(id) || !id_ok(id->valuestring) ||
	    !cJSON_IsNumber(until) || !num_ok(until->valuedouble) ||
	    until->valuedouble != floor(until->valuedouble) ||
	    !cJSON_IsNumber(usd) || !num_ok(usd->valuedouble))
		return false;
	memcpy(x->id, id->valuestring, strlen(id->valuestring) + 1);
	x->until_ms = (int64_t)until->valuedouble;
	x->usd = usd->valuedouble;
	return true;
}

enum orgw_err
holds_decode(const char *text, struct holds *h)
{
	cJSON *o;
	const cJSON *v, *arr, *e;
	bool ok;

	h->n = 0;
	if (text == NULL)
		return ORGW_OK;
	o = cJSON_ParseWithOpts(text, NULL, 1);
	v = cJSON_GetObjectItemCaseSensitive(o, "v");
	arr = cJSON_GetObjectItemCaseSensitive(o, "holds");
	ok = cJSON_IsObject(o) && cJSON_IsNumber(v) &&
	     v->valuedouble == HOLD_VERSION && cJSON_IsArray(arr) &&
	     cJSON_GetArraySize(arr) <= HOLD_MAX;
	if (ok)
		cJSON_ArrayForEach(e, arr)
			if (!(ok = hold_from(e, &h->v[h->n++])))
				break;
	cJSON_Delete(o);
	if (!ok) {
		h->n = 0;
		return ORGW_EINVAL;
	}
	return ORGW_OK;
}

double
holds_total(struct holds *h, int64_t now_ms)
{
	double sum = 0;
	size_t i, n = 0;

	for (i = 0; i < h->n; i++)
		if (h->v[i].until_ms > now_ms) {
			h->v[n++] = h->v[i];
			sum += h->v[i].usd;
		}
	h->n = n;
	return sum;
}

bool
holds_add(struct holds *h, const char *id, int64_t until_ms, double usd)
{
	struct hold *x;

	if (h->n >= HOLD_MAX || id == NULL || !id_ok(id))
		return false;
	x = &h->v[h->n++];
	memcpy(x->id, id, strlen(id) + 1);
	x->until_ms = until_ms < 0 ? 0 : until_ms;
	x->usd = num_ok(usd) ? usd : usd > 0 ? HOLD_NUM_MAX : 0;
	return true;
}

bool
holds_drop(struct holds *h, const char *id)
{
	size_t i;

	for (i = 0; id != NULL && i < h->n; i++)
		if (strcmp(h->v[i].id, id) == 0) {
			h->v[i] = h->v[--h->n];
			return true;
		}
	return false;
}
