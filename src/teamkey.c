/*
 * teamkey.c - the pure core of team keys (see teamkey.h): names and
 * model globs, the keyed hash of a key, the codecs of its three records
 * (its use a ledger cell, ledger.c's codec checked strictly) and the
 * checks made before a request goes upstream.
 *
 * Pure: no clock, no environment, no file.  The HMAC and the
 * constant-time compare are libcrypto's, the globs fnmatch(3)'s, the
 * records cJSON's (docs/style.md 0).  Nothing here is process-wide state, so
 * every function is safe from any thread.
 *
 * Decoders are strict where record.c is lenient: a key record grants
 * access and money, so a damaged one is refused (ORGW_EINVAL, the struct
 * zeroed) rather than read as a looser key.  Every number a record holds
 * is finite and in 0..TK_NUM_MAX, whole where the struct says int64_t.
 * Encoders check the same rules and return NULL for a struct that
 * breaks them, so what they write always decodes.
 */
#define _GNU_SOURCE		/* FNM_CASEFOLD (glibc, musl, the BSDs) */

#include <fnmatch.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "teamkey.h"
#include "record.h"

#define TK_VERSION 1
/*
 * The largest number a record holds, 10^15: cJSON prints numbers with
 * 15 significant digits (print_number, "%1.15g", accepting a reading
 * back within DBL_EPSILON), so every whole number up to it is written
 * exactly, and a dollar amount up to it is written within 1e-15 and
 * never rounded past the bound (DBL_MAX would be written as a number
 * that reads back as inf).  Milliseconds of unix time are 13 digits.
 */
#define TK_NUM_MAX 1000000000000000LL
#define TK_PLAIN_B64 43		/* base64url characters of 32 bytes */
#define TK_LEASE_ID_MAX 32	/* hex digits of a lease id */

bool
teamkey_name_ok(const char *name)
{
	size_t i;

	if (name == NULL)
		return false;
	for (i = 0; name[i] != '\0'; i++) {
		unsigned char c = (unsigned char)name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9');

		if (i >= TEAMKEY_NAME_MAX || (!alnum && i == 0) ||
		    (!alnum && c != '.' && c != '_' && c != '-'))
			return false;
	}
	return i > 0;
}

bool
teamkey_glob_ok(const char *glob)
{
	size_t i;

	if (glob == NULL)
		return false;
	for (i = 0; glob[i] != '\0'; i++)
		if (i >= TEAMKEY_GLOB_MAX || glob[i] < 0x21 || glob[i] > 0x7e ||
		    glob[i] == ',')
			return false;
	return i > 0;
}

enum orgw_err
teamkey_set_globs(struct teamkey *k, const char *list)
{
	char globs[TEAMKEY_GLOBS_MAX][TEAMKEY_GLOB_MAX + 1];
	const char *p, *end;
	size_t n = 0, len;

	if (list == NULL)
		return ORGW_EINVAL;
	if (strcmp(list, "") == 0 || strcmp(list, "*") == 0) {
		k->n_globs = 0;
		return ORGW_OK;
	}
	/* Into a copy first: k's globs stay as they were on an error. */
	for (p = list;; p = end + 1) {
		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		if (n == TEAMKEY_GLOBS_MAX || len == 0 || len > TEAMKEY_GLOB_MAX)
			return ORGW_EINVAL;
		memcpy(globs[n], p, len);
		globs[n][len] = '\0';
		if (!teamkey_glob_ok(globs[n++]))
			return ORGW_EINVAL;
		if (end == NULL)
			break;
	}
	memcpy(k->globs, globs, n * sizeof(globs[0]));
	k->n_globs = n;
	return ORGW_OK;
}

bool
teamkey_model_ok(const struct teamkey *k, const char *model)
{
	size_t i;

	if (k->n_globs == 0)
		return true;
	if (model == NULL)
		return false;
	/* No FNM_PATHNAME: '*' crosses '/', so "openai*mini" takes
	 * "openai/gpt-4o-mini" too.  OpenRouter's ids are lower case, and a
	 * client that sends "OpenAI/GPT-4o" means the same model. */
	for (i = 0; i < k->n_globs && i < TEAMKEY_GLOBS_MAX; i++)
		if (fnmatch(k->globs[i], model, FNM_CASEFOLD) == 0)
			return true;
	return false;
}

bool
teamkey_hash(const char *secret, const char *plain,
	     char hex[TEAMKEY_HASH_HEX + 1])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	size_t slen;

	hex[0] = '\0';
	/* An empty secret would make every hash one anyone can compute. */
	if (secret == NULL || plain == NULL || secret[0] == '\0' ||
	    (slen = strlen(secret)) > (size_t)INT_MAX)
		return false;
	if (HMAC(EVP_sha256(), secret, (int)slen, (const unsigned char *)plain,
		 strlen(plain), mac, &maclen) == NULL ||
	    maclen * 2 != TEAMKEY_HASH_HEX) {
		OPENSSL_cleanse(mac, sizeof(mac));
		return false;
	}
	orgw_hex(mac, maclen, hex);
	OPENSSL_cleanse(mac, sizeof(mac));
	return true;
}

bool
teamkey_hash_eq(const char *a, const char *b)
{
	/* The lengths are no secret (every hash has 64 digits); the digits
	 * are compared in constant time. */
	return a != NULL && b != NULL &&
	       strnlen(a, TEAMKEY_HASH_HEX + 1) == TEAMKEY_HASH_HEX &&
	       strnlen(b, TEAMKEY_HASH_HEX + 1) == TEAMKEY_HASH_HEX &&
	       CRYPTO_memcmp(a, b, TEAMKEY_HASH_HEX) == 0;
}

/* True for the characters of base64url (RFC 4648 section 5). */
static bool
b64url_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_';
}

bool
teamkey_plain_shape(const char *plain)
{
	size_t i, pl = strlen(TEAMKEY_PREFIX);

	if (plain == NULL || strncmp(plain, TEAMKEY_PREFIX, pl) != 0)
		return false;
	for (i = 0; i < TK_PLAIN_B64; i++)
		if (!b64url_char(plain[pl + i]))
			return false;
	return plain[pl + TK_PLAIN_B64] == '\0';
}

void
teamkey_plain_make(const unsigned char rnd[32], char plain[TEAMKEY_PLAIN_MAX])
{
	/* EVP_EncodeBlock writes standard base64 with padding: 44
	 * characters and a NUL for 32 bytes; base64url is the same with
	 * "+/" as "-_" and no '=' (RFC 4648 section 5). */
	unsigned char b64[4 * ((32 + 2) / 3) + 1];
	size_t pl = strlen(TEAMKEY_PREFIX), i;

	(void)EVP_EncodeBlock(b64, rnd, 32);
	memcpy(plain, TEAMKEY_PREFIX, pl);
	for (i = 0; i < TK_PLAIN_B64; i++)
		plain[pl + i] = b64[i] == '+' ? '-' :
				b64[i] == '/' ? '_' : (char)b64[i];
	plain[pl + TK_PLAIN_B64] = '\0';
	OPENSSL_cleanse(b64, sizeof(b64));
}

/* ---- the records' numbers and strings ---- */

static bool
dbl_ok(double d)
{
	return isfinite(d) && d >= 0 && d <= (double)TK_NUM_MAX;
}

static bool
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
static int64_t
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

void
teamkey_day(int64_t now_s, char day[11])
{
	record_day(now_s, day);
}

void
teamkey_month(int64_t now_s, char month[8])
{
	char day[11];

	record_day(now_s, day);
	memcpy(month, day, 7);
	month[7] = '\0';
}

/* ---- the checks ---- */

const char *
teamkey_verdict_name(enum teamkey_verdict v)
{
	switch (v) {
	case TK_OK:
		return "ok";
	case TK_UNKNOWN:
		return "unknown";
	case TK_MODEL:
		return "model";
	case TK_BUDGET:
		return "budget";
	case TK_RPM:
		return "rpm";
	case TK_CONCURRENT:
		return "concurrent";
	case TK_UNAVAILABLE:
		return "unavailable";
	}
	return "unknown";
}

enum ledger_ix
teamkey_refused_ix(enum teamkey_verdict v)
{
	switch (v) {
	case TK_MODEL:
		return LX_REFUSED_MODEL;
	case TK_BUDGET:
		return LX_REFUSED_BUDGET;
	case TK_RPM:
		return LX_REFUSED_RPM;
	case TK_CONCURRENT:
		return LX_REFUSED_CONCURRENT;
	case TK_OK:
	case TK_UNKNOWN:
	case TK_UNAVAILABLE:
		break;
	}
	return LX_N;
}

enum teamkey_verdict
teamkey_check_key(const struct teamkey *k, int64_t now_s, const char *model,
		  const char *const *models, size_t n_models)
{
	size_t i;

	if (strcmp(teamkey_state(k, now_s), "active") != 0)
		return TK_UNKNOWN;
	if (model != NULL && !teamkey_model_ok(k, model))
		return TK_MODEL;
	for (i = 0; i < n_models; i++)
		if (!teamkey_model_ok(k, models[i]))
			return TK_MODEL;
	return TK_OK;
}

const char *
teamkey_state(const struct teamkey *k, int64_t now_s)
{
	if (k->disabled)
		return "disabled";
	if (k->expires != 0 && now_s >= k->expires)
		return "expired";
	return "active";
}

/* True when spend has reached budget (0: none).  NaN or inf spend is
 * over: a spend that cannot be read must not reopen a spent budget. */
static bool
over(double spend, double budget)
{
	return budget > 0 && !(spend < budget);
}

enum teamkey_verdict
teamkey_check_budget(const struct teamkey *k, const struct ledger_cell *day,
		     const struct ledger_cell *month)
{
	if (over(day ? day->v[LX_KEY_SPEND] : 0, k->budget_day_usd) ||
	    over(month ? month->v[LX_KEY_SPEND] : 0, k->budget_month_usd))
		return TK_BUDGET;
	return TK_OK;
}

/* ---- TEAMKEY_RATE:<name> ---- */

static bool
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

/* a / b rounded down, for b > 0 (C's '/' rounds toward zero). */
static int64_t
div_floor(int64_t a, int64_t b)
{
	return a / b - (a % b < 0);
}

/* ms as whole seconds, rounded up, in [lo, hi]. */
static int64_t
ceil_s(int64_t ms, int64_t lo, int64_t hi)
{
	int64_t s = ms <= 0 ? 0 : ms / 1000 + (ms % 1000 != 0);

	return s < lo ? lo : s > hi ? hi : s;
}

/* Moves r's window to the slot of now_ms: the slots that left it are
 * zeroed.  A now before r->slot (a clock stepped back) counts in the
 * newest slot: nothing leaves the window early. */
static void
window_move(struct teamkey_rate *r, int64_t now_ms)
{
	int64_t slot = div_floor(now_ms, TEAMKEY_RPM_SLOT_MS), d;

	if (slot <= r->slot)
		return;
	d = slot - r->slot;
	if (d >= TEAMKEY_RPM_SLOTS) {
		memset(r->slots, 0, sizeof(r->slots));
	} else {
		memmove(&r->slots[d], &r->slots[0],
			(size_t)(TEAMKEY_RPM_SLOTS - d) * sizeof(r->slots[0]));
		memset(r->slots, 0, (size_t)d * sizeof(r->slots[0]));
	}
	r->slot = slot;
}

int64_t
teamkey_rate_count(const struct teamkey_rate *r, int64_t now_ms)
{
	struct teamkey_rate w;
	int64_t n = 0;
	size_t i;

	memcpy(w.slots, r->slots, sizeof(w.slots));
	w.slot = r->slot;
	window_move(&w, now_ms);
	for (i = 0; i < TEAMKEY_RPM_SLOTS; i++)
		n = count_add(n, w.slots[i]);
	return n;
}

/* The ms until r's window (moved to now_ms) holds fewer than rpm: the
 * oldest slots leave it one by one, slot s when now reaches the start
 * of slot s + TEAMKEY_RPM_SLOTS. */
static int64_t
window_wait_ms(const struct teamkey_rate *r, int64_t now_ms, int64_t rpm)
{
	int64_t n = teamkey_rate_count(r, now_ms);
	size_t i;

	for (i = TEAMKEY_RPM_SLOTS; i-- > 0 && n >= rpm;) {
		n -= r->slots[i];
		if (n < rpm)
			return (r->slot - (int64_t)i + TEAMKEY_RPM_SLOTS) *
				       TEAMKEY_RPM_SLOT_MS -
			       now_ms;
	}
	return TEAMKEY_RPM_SLOTS * TEAMKEY_RPM_SLOT_MS;
}

enum teamkey_verdict
teamkey_rate_admit(const struct teamkey *k, struct teamkey_rate *r,
		   int64_t now_ms, const char *lease_id, int64_t lease_ms,
		   int64_t *retry_after_s)
{
	int64_t first, retry = 0;
	enum teamkey_verdict v = TK_OK;
	size_t i, n = 0;

	/* Leases end when they end, held or not: a request that died
	 * without releasing frees its place after lease_ms. */
	if (r->n_leases > TEAMKEY_LEASES_MAX)
		r->n_leases = TEAMKEY_LEASES_MAX;
	for (i = 0; i < r->n_leases; i++)
		if (r->leases[i].until_ms > now_ms)
			r->leases[n++] = r->leases[i];
	r->n_leases = n;

	window_move(r, now_ms);
	if (k->rpm > 0 && teamkey_rate_count(r, now_ms) >= k->rpm) {
		retry = ceil_s(window_wait_ms(r, now_ms, k->rpm), 1,
			       TEAMKEY_RPM_SLOTS * TEAMKEY_RPM_SLOT_MS / 1000);
		v = TK_RPM;
	} else if (k->concurrent > 0 &&
		   ((int64_t)n >= k->concurrent || n >= TEAMKEY_LEASES_MAX ||
		    !lease_id_ok(lease_id))) {
		/* A bad id is refused too: a request admitted without its
		 * lease would not count against the limit. */
		first = INT64_MAX;
		for (i = 0; i < n; i++)
			if (r->leases[i].until_ms < first)
				first = r->leases[i].until_ms;
		retry = n ? ceil_s(first - now_ms, 1, 60) : 1;
		v = TK_CONCURRENT;
	} else {
		r->slots[0] = count_add(r->slots[0], 1);
		if (k->concurrent > 0) {
			struct teamkey_lease *l = &r->leases[r->n_leases++];

			snprintf(l->id, sizeof(l->id), "%s", lease_id);
			/* At least 1 ms, so the lease is held at all, and
			 * no later than a record can say. */
			lease_ms = lease_ms < 1 ? 1 :
				   lease_ms > TK_NUM_MAX ? TK_NUM_MAX : lease_ms;
			l->until_ms = now_ms > TK_NUM_MAX - lease_ms ?
					      TK_NUM_MAX :
					      now_ms + lease_ms;
		}
	}
	if (retry_after_s != NULL)
		*retry_after_s = retry;
	return v;
}

void
teamkey_lease_make(const unsigned char rnd[16],
		   char id[TEAMKEY_LEASE_ID_MAX + 1])
{
	orgw_hex(rnd, 16, id);
}

bool
teamkey_rate_release(struct teamkey_rate *r, const char *lease_id)
{
	size_t i;

	if (lease_id == NULL)
		return false;
	for (i = 0; i < r->n_leases && i < TEAMKEY_LEASES_MAX; i++)
		if (strcmp(r->leases[i].id, lease_id) == 0) {
			memmove(&r->leases[i], &r->leases[i + 1],
				(r->n_leases - i - 1) * sizeof(r->leases[0]));
			r->n_leases--;
			return true;
		}
	return false;
}

bool
teamkey_rate_own(struct teamkey_rate *r, const char *lease_id, int64_t host,
		 int64_t pid, int64_t start)
{
	size_t i;

	if (lease_id == NULL || !int_ok(host) || !int_ok(pid) ||
	    !int_ok(start))
		return false;
	for (i = r->n_leases < TEAMKEY_LEASES_MAX ? r->n_leases :
						      TEAMKEY_LEASES_MAX;
	     i-- > 0;)
		if (strcmp(r->leases[i].id, lease_id) == 0) {
			r->leases[i].host = host;
			r->leases[i].pid = pid;
			r->leases[i].start = start;
			return true;
		}
	return false;
}

size_t
teamkey_rate_drop(struct teamkey_rate *r,
		  bool (*gone)(void *arg, const struct teamkey_lease *l),
		  void *arg)
{
	size_t i, n = 0, held = r->n_leases < TEAMKEY_LEASES_MAX ?
					r->n_leases :
					TEAMKEY_LEASES_MAX;

	for (i = 0; i < held; i++)
		if (!gone(arg, &r->leases[i]))
			r->leases[n++] = r->leases[i];
	r->n_leases = n;
	return held - n;
}

/* The windows of now_s: unix day, and year * 12 + month - 1. */
static void
windows_of(int64_t now_s, int64_t *day, int64_t *month)
{
	char m[8];

	teamkey_month(now_s, m);
	*day = div_floor(now_s, 86400);
	*month = strtoll(m, NULL, 10) * 12 + strtoll(m + 5, NULL, 10) - 1;
}

void
teamkey_rate_spend(struct teamkey_rate *r, int64_t now_s, double usd)
{
	int64_t day, month;

	windows_of(now_s, &day, &month);
	if (r->day != day) {
		r->day = day;
		r->spent_day = 0;
	}
	if (r->month != month) {
		r->month = month;
		r->spent_month = 0;
	}
	if (!isfinite(usd) || usd <= 0)
		return;
	/* Held below what a record can say, as every spend is. */
	r->spent_day = dbl_ok(r->spent_day + usd) ? r->spent_day + usd :
						     (double)TK_NUM_MAX;
	r->spent_month = dbl_ok(r->spent_month + usd) ? r->spent_month + usd :
							 (double)TK_NUM_MAX;
}

void
teamkey_rate_use(const struct teamkey_rate *r, int64_t now_s,
		 struct ledger_cell *day, struct ledger_cell *month)
{
	int64_t d, m;

	windows_of(now_s, &d, &m);
	if (r->day == d && r->spent_day > day->v[LX_KEY_SPEND])
		day->v[LX_KEY_SPEND] = r->spent_day;
	if (r->month == m && r->spent_month > month->v[LX_KEY_SPEND])
		month->v[LX_KEY_SPEND] = r->spent_month;
}
