/*
 * teamkey_codec.c - the codecs of a team key's three records (see
 * teamkey.h): TEAMKEY:<name>, its use TEAMKEY_USE:<name>:<when> (a
 * ledger cell, ledger.c's codec checked strictly) and its minute's count
 * TEAMKEY_RATE:<name>.  The records are cJSON's (docs/style.md 0).  Pure
 * and free of process-wide state, like teamkey.c.
 *
 * Decoders are strict where record.c is lenient: a key record grants
 * access and money, so a damaged one is refused (ORGW_EINVAL, the struct
 * zeroed) rather than read as a looser key.  Every number a record holds
 * is finite and in 0..TK_NUM_MAX, whole where the struct says int64_t.
 * Encoders check the same rules and return NULL for a struct that
 * breaks them, so what they write always decodes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "teamkey.h"
#include "teamkey_impl.h"

#define TK_VERSION 1
#define TK_LEASE_ID_MAX 32	/* hex digits of a lease id */

/* ---- the records' numbers and strings ---- */

bool
dbl_ok(double d)
{
	return isfinite(d) && d >= 0 && d <= (double)TK_NUM_MAX;
}

bool
int_ok(int64_t v)
{
	return v >= 0 && v <= TK_NUM_MAX;
}

/*
 * Member name of o as a number in 0..TK_NUM_MAX into *out.  Absent: *out 0,
 * true unless required.  Anything else (a string, null, a negative
 * number) is false.
 */
static bool
dbl_get(const cJSON *o, const char *name, bool required, double *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);

	*out = 0;
	if (it == NULL)
		return !required;
	if (!cJSON_IsNumber(it) || !dbl_ok(it->valuedouble))
		return false;
	*out = it->valuedouble;
	return true;
}

/* The same for a whole number (in range before the cast: a double
 * outside int64_t makes it undefined behaviour). */
static bool
int_get(const cJSON *o, const char *name, bool required, int64_t *out)
{
	double d;

	*out = 0;
	if (!dbl_get(o, name, required, &d) || d != floor(d))
		return false;
	*out = (int64_t)d;
	return true;
}

/* Member name as a bool; absent is false unless required. */
static bool
bool_get(const cJSON *o, const char *name, bool required, bool *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);

	*out = false;
	if (it == NULL)
		return !required;
	if (!cJSON_IsBool(it))
		return false;
	*out = cJSON_IsTrue(it);
	return true;
}

/* String it into dst (n bytes); false when not a string or too long. */
static bool
str_copy(const cJSON *it, char *dst, size_t n)
{
	size_t len;

	if (!cJSON_IsString(it) || (len = strlen(it->valuestring)) >= n)
		return false;
	memcpy(dst, it->valuestring, len + 1);
	return true;
}

static bool
add_int(cJSON *o, const char *name, int64_t v)
{
	return cJSON_AddNumberToObject(o, name, (double)v) != NULL;
}

static bool
add_dbl(cJSON *o, const char *name, double v)
{
	return cJSON_AddNumberToObject(o, name, v) != NULL;
}

/* Text of a record o being built (deleted here); NULL when !ok or out
 * of memory.  cJSON allocates it with malloc: orgw gives cJSON no other
 * hooks, so free() and record_free() both release it. */
static char *
finish(cJSON *o, bool ok)
{
	char *s = NULL;

	if (ok && o != NULL)
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/* The object in text, NUL-terminated with nothing after it; NULL for
 * text that is absent, damaged or not an object, or without "v":1. */
static cJSON *
parse_record(const char *text)
{
	cJSON *o;
	int64_t v;

	if (text == NULL)
		return NULL;
	o = cJSON_ParseWithOpts(text, NULL, 1);
	if (!cJSON_IsObject(o) || !int_get(o, "v", true, &v) ||
	    v != TK_VERSION) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* ---- TEAMKEY:<name> ---- */

static bool
hash_hex_ok(const char *h)
{
	size_t i;

	for (i = 0; i < TEAMKEY_HASH_HEX; i++)
		if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')))
			return false;
	return h[TEAMKEY_HASH_HEX] == '\0';
}

bool
teamkey_ok(const struct teamkey *k)
{
	size_t i;

	if (!teamkey_name_ok(k->name) || !hash_hex_ok(k->hash) ||
	    k->n_globs > TEAMKEY_GLOBS_MAX || !dbl_ok(k->budget_day_usd) ||
	    !dbl_ok(k->budget_month_usd) || !int_ok(k->rpm) ||
	    !int_ok(k->concurrent) || !int_ok(k->expires) ||
	    !int_ok(k->created) || !int_ok(k->rotated))
		return false;
	for (i = 0; i < k->n_globs; i++)
		if (memchr(k->globs[i], '\0', sizeof(k->globs[i])) == NULL ||
		    !teamkey_glob_ok(k->globs[i]))
			return false;
	return true;
}

char *
teamkey_encode(const struct teamkey *k)
{
	cJSON *o, *models = NULL;
	bool ok;
	size_t i;

	if (!teamkey_ok(k))
		return NULL;
	o = cJSON_CreateObject();
	ok = o != NULL && add_int(o, "v", TK_VERSION) &&
	     cJSON_AddStringToObject(o, "name", k->name) &&
	     cJSON_AddStringToObject(o, "hash", k->hash) &&
	     (models = cJSON_AddArrayToObject(o, "models")) != NULL;
	for (i = 0; ok && i < k->n_globs; i++) {
		cJSON *g = cJSON_CreateString(k->globs[i]);

		ok = g != NULL && cJSON_AddItemToArray(models, g);
		if (!ok)
			cJSON_Delete(g);
	}
	ok = ok && add_dbl(o, "budget_day", k->budget_day_usd) &&
	     add_dbl(o, "budget_month", k->budget_month_usd) &&
	     add_int(o, "rpm", k->rpm) &&
	     add_int(o, "concurrent", k->concurrent) &&
	     add_int(o, "expires", k->expires) &&
	     add_int(o, "created", k->created) &&
	     add_int(o, "rotated", k->rotated) &&
	     cJSON_AddBoolToObject(o, "admin", k->admin) &&
	     cJSON_AddBoolToObject(o, "disabled", k->disabled);
	return finish(o, ok);
}

/* The members of a key record into k (zeroed); false for any that is
 * missing or not of its kind.  Every member encode writes is required:
 * a record that lost "models" or "budget_day" must not read as a key
 * with every model or no budget. */
static bool
key_from(const cJSON *o, struct teamkey *k)
{
	const cJSON *models = cJSON_GetObjectItemCaseSensitive(o, "models");
	const cJSON *g;

	if (!str_copy(cJSON_GetObjectItemCaseSensitive(o, "name"), k->name,
		      sizeof(k->name)) ||
	    !str_copy(cJSON_GetObjectItemCaseSensitive(o, "hash"), k->hash,
		      sizeof(k->hash)) ||
	    !cJSON_IsArray(models) ||
	    cJSON_GetArraySize(models) > TEAMKEY_GLOBS_MAX)
		return false;
	cJSON_ArrayForEach(g, models)
	{
		if (!str_copy(g, k->globs[k->n_globs],
			      sizeof(k->globs[k->n_globs])))
			return false;
		k->n_globs++;
	}
	return dbl_get(o, "budget_day", true, &k->budget_day_usd) &&
	       dbl_get(o, "budget_month", true, &k->budget_month_usd) &&
	       int_get(o, "rpm", true, &k->rpm) &&
	       int_get(o, "concurrent", true, &k->concurrent) &&
	       int_get(o, "expires", true, &k->expires) &&
	       int_get(o, "created", true, &k->created) &&
	       int_get(o, "rotated", true, &k->rotated) &&
	       bool_get(o, "admin", true, &k->admin) &&
	       bool_get(o, "disabled", true, &k->disabled) && teamkey_ok(k);
}

enum orgw_err
teamkey_decode(const char *text, struct teamkey *k)
{
	cJSON *o = parse_record(text);
	bool ok;

	memset(k, 0, sizeof(*k));
	ok = o != NULL && key_from(o, k);
	cJSON_Delete(o);
	if (!ok) {
		memset(k, 0, sizeof(*k));
		return ORGW_EINVAL;
	}
	return ORGW_OK;
}

/* ---- TEAMKEY_USE:<name>:<when> ---- */

/* The members of a use record before it was a ledger cell, by the row
 * each counts in now: such a record reads as the cell it would be. */
static const struct {
	const char *name;
	enum ledger_ix ix;
} use_v1[] = {
	{"requests", LX_REQUESTS},
	{"prompt", LX_PROMPT},
	{"cached", LX_CACHED},
	{"completion", LX_COMPLETION},
	{"spend_usd", LX_KEY_SPEND},
	{"saved_usd", LX_KEY_SAVED},
	{"refused_rpm", LX_REFUSED_RPM},
	{"refused_concurrent", LX_REFUSED_CONCURRENT},
	{"refused_budget", LX_REFUSED_BUDGET},
	{"refused_model", LX_REFUSED_MODEL},
	{"last_used", LX_LAST_USED},
};

#define N_USE_V1 (sizeof(use_v1) / sizeof(use_v1[0]))

/* The row a key counts named name in a cell, or in a record of the
 * older shape; -1 for any other member. */
static int
use_row(const char *name)
{
	int i = ledger_field_ix(name);
	size_t j;

	if (i >= 0)
		return ledger_key_row(i) ? i : -1;
	for (j = 0; j < N_USE_V1; j++)
		if (strcmp(use_v1[j].name, name) == 0)
			return (int)use_v1[j].ix;
	return -1;
}

/* True when v may be row i of a key's use: in 0..TK_NUM_MAX, and whole
 * but for a dollar amount (a team name ending in "_usd"). */
static bool
use_value_ok(int i, double v)
{
	const char *t = ledger_fields[i].team;
	size_t n = t != NULL ? strlen(t) : 0;

	if (!dbl_ok(v))
		return false;
	return (n > 4 && strcmp(t + n - 4, "_usd") == 0) || v == floor(v);
}

char *
teamkey_use_encode(const struct ledger_cell *u)
{
	int i;

	for (i = 0; i < LX_N; i++)
		if (ledger_key_row(i) ? !use_value_ok(i, u->v[i]) :
					u->v[i] != 0)
			return NULL;
	for (i = 0; i < LAT_N_SLOTS; i++)
		if (u->ttfb[i] != 0 || u->dur[i] != 0)
			return NULL;
	return ledger_cell_encode(u);
}

enum orgw_err
teamkey_use_decode(const char *text, struct ledger_cell *u)
{
	const cJSON *it;
	cJSON *o;
	bool ok;
	int i;

	memset(u, 0, sizeof(*u));
	if (text == NULL)
		return ORGW_OK;
	o = parse_record(text);
	ok = o != NULL;
	/* Absent members are 0: a window's record only grows. */
	for (it = ok ? o->child : NULL; ok && it != NULL; it = it->next) {
		if (it->string == NULL || (i = use_row(it->string)) < 0)
			continue;
		ok = cJSON_IsNumber(it) && use_value_ok(i, it->valuedouble);
		if (ok)
			u->v[i] = it->valuedouble;
	}
	cJSON_Delete(o);
	if (!ok) {
		memset(u, 0, sizeof(*u));
		return ORGW_EINVAL;
	}
	return ORGW_OK;
}

/* a + b for counters, held in 0..TK_NUM_MAX so the sum cannot overflow
 * and still encodes. */
int64_t
count_add(int64_t a, int64_t b)
{
	a = a < 0 ? 0 : a > TK_NUM_MAX ? TK_NUM_MAX : a;
	b = b < 0 ? 0 : b > TK_NUM_MAX ? TK_NUM_MAX : b;
	return a > TK_NUM_MAX - b ? TK_NUM_MAX : a + b;
}

void
teamkey_use_add(struct ledger_cell *dst, const struct ledger_cell *src)
{
	int i;

	ledger_cell_add(dst, src);
	for (i = 0; i < LX_N; i++)
		if (!(dst->v[i] >= 0))
			dst->v[i] = 0;
		else if (dst->v[i] > (double)TK_NUM_MAX)
			dst->v[i] = (double)TK_NUM_MAX;
}

/* ---- TEAMKEY_RATE:<name> ---- */

bool
lease_id_ok(const char *id)
{
	size_t i;

	if (id == NULL)
		return false;
	for (i = 0; id[i] != '\0'; i++)
		if (i >= TK_LEASE_ID_MAX ||
		    !((id[i] >= '0' && id[i] <= '9') ||
		      (id[i] >= 'a' && id[i] <= 'f') ||
		      (id[i] >= 'A' && id[i] <= 'F')))
			return false;
	return i > 0;
}

static bool
rate_ok(const struct teamkey_rate *r)
{
	size_t i;

	for (i = 0; i < TEAMKEY_RPM_SLOTS; i++)
		if (!int_ok(r->slots[i]))
			return false;
	if (!int_ok(r->slot) || r->n_leases > TEAMKEY_LEASES_MAX || !int_ok(r->day) ||
	    !int_ok(r->month) || !dbl_ok(r->spent_day) ||
	    !dbl_ok(r->spent_month))
		return false;
	for (i = 0; i < r->n_leases; i++)
		if (memchr(r->leases[i].id, '\0', sizeof(r->leases[i].id)) ==
			    NULL ||
		    !lease_id_ok(r->leases[i].id) ||
		    !int_ok(r->leases[i].until_ms) ||
		    !int_ok(r->leases[i].host) || !int_ok(r->leases[i].pid) ||
		    !int_ok(r->leases[i].start))
			return false;
	return true;
}

char *
teamkey_rate_encode(const struct teamkey_rate *r)
{
	cJSON *o, *arr = NULL, *win = NULL;
	bool ok;
	size_t i;

	if (!rate_ok(r))
		return NULL;
	o = cJSON_CreateObject();
	ok = o != NULL && add_int(o, "v", TK_VERSION) &&
	     add_int(o, "slot", r->slot) &&
	     (win = cJSON_AddArrayToObject(o, "window")) != NULL;
	for (i = 0; ok && i < TEAMKEY_RPM_SLOTS; i++) {
		cJSON *n = cJSON_CreateNumber((double)r->slots[i]);

		ok = n != NULL && cJSON_AddItemToArray(win, n);
		if (!ok)
			cJSON_Delete(n);
	}
	ok = ok && add_int(o, "day", r->day) && add_dbl(o, "spent_day", r->spent_day) &&
	     add_int(o, "month", r->month) &&
	     add_dbl(o, "spent_month", r->spent_month) &&
	     (arr = cJSON_AddArrayToObject(o, "leases")) != NULL;
	for (i = 0; ok && i < r->n_leases; i++) {
		cJSON *l = cJSON_CreateObject();

		if (l == NULL || !cJSON_AddItemToArray(arr, l)) {
			cJSON_Delete(l);
			ok = false;
			break;
		}
		ok = cJSON_AddStringToObject(l, "id", r->leases[i].id) &&
		     add_int(l, "until_ms", r->leases[i].until_ms);
		/* The owner only when known: a record stays small. */
		if (ok && r->leases[i].host != 0)
			ok = add_int(l, "host", r->leases[i].host) &&
			     add_int(l, "pid", r->leases[i].pid) &&
			     add_int(l, "start", r->leases[i].start);
	}
	return finish(o, ok);
}

static bool
rate_from(const cJSON *o, struct teamkey_rate *r)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "leases");
	const cJSON *win = cJSON_GetObjectItemCaseSensitive(o, "window");
	const cJSON *l;
	size_t i = 0;

	/* A record of the fixed minute ("minute", "count") reads as an
	 * empty window: the record is soft, and that minute ends anyway. */
	if (win != NULL) {
		if (!cJSON_IsArray(win) ||
		    cJSON_GetArraySize(win) != TEAMKEY_RPM_SLOTS)
			return false;
		cJSON_ArrayForEach(l, win)
		{
			if (!cJSON_IsNumber(l) || !dbl_ok(l->valuedouble) ||
			    l->valuedouble != floor(l->valuedouble))
				return false;
			r->slots[i++] = (int64_t)l->valuedouble;
		}
	}
	if (!int_get(o, "slot", false, &r->slot) ||
	    !int_get(o, "day", false, &r->day) ||
	    !dbl_get(o, "spent_day", false, &r->spent_day) ||
	    !int_get(o, "month", false, &r->month) ||
	    !dbl_get(o, "spent_month", false, &r->spent_month))
		return false;
	if (arr == NULL)
		return true;
	if (!cJSON_IsArray(arr) ||
	    cJSON_GetArraySize(arr) > TEAMKEY_LEASES_MAX)
		return false;
	cJSON_ArrayForEach(l, arr)
	{
		struct teamkey_lease *d = &r->leases[r->n_leases];

		if (!cJSON_IsObject(l) ||
		    !str_copy(cJSON_GetObjectItemCaseSensitive(l, "id"), d->id,
			      sizeof(d->id)) ||
		    !int_get(l, "until_ms", true, &d->until_ms) ||
		    !int_get(l, "host", false, &d->host) ||
		    !int_get(l, "pid", false, &d->pid) ||
		    !int_get(l, "start", false, &d->start))
			return false;
		r->n_leases++;
	}
	return rate_ok(r);
}

enum orgw_err
teamkey_rate_decode(const char *text, struct teamkey_rate *r)
{
	cJSON *o = parse_record(text);
	bool ok;

	memset(r, 0, sizeof(*r));
	ok = o != NULL && rate_from(o, r);
	cJSON_Delete(o);
	if (!ok) {
		memset(r, 0, sizeof(*r));
		return ORGW_EINVAL;
	}
	return ORGW_OK;
}
