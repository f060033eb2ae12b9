/*
 * record.c - JSON codecs for the GDBM values of docs/design.md section 7.
 *
 * Pure.  Encoders build with cJSON and return cJSON_PrintUnformatted()
 * text (members in insertion order), the whole numbers of the records
 * written on every request added as the text cJSON would print for them
 * (record_add_number); decoders parse with cJSON_Parse()
 * and copy into fixed structs with bounded string copies, so a damaged
 * or hostile value can at worst read as zeroes.  The counters' cells are
 * ledger.c's, the candidates' codec record_cands.c's (it shares the
 * helpers of record_impl.h).
 */
#define __STDC_WANT_IEC_60559_BFP_EXT__ 1	/* strfromd */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "record.h"
#include "record_impl.h"
#include "score.h"

void
record_free(char *text)
{
	cJSON_free(text);
}

cJSON *
rec_parse_obj(const char *text)
{
	cJSON *o;

	if (text == NULL)
		return NULL;
	o = cJSON_Parse(text);
	if (o != NULL && !cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* it as an int64_t; 0 when not a number or out of range (a double
 * outside int64_t makes the cast undefined behaviour). */
static int64_t
num_i64(const cJSON *it)
{
	double d;

	if (!cJSON_IsNumber(it))
		return 0;
	d = it->valuedouble;
	if (!isfinite(d) || d > 9e18 || d < -9e18)
		return 0;
	return (int64_t)d;
}

int64_t
rec_get_i64(const cJSON *o, const char *k)
{
	return num_i64(cJSON_GetObjectItemCaseSensitive(o, k));
}

double
rec_get_dbl(const cJSON *o, const char *k)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
		return 0;
	return it->valuedouble;
}

/* True when s holds a control character (C0 or DEL). */
static bool
has_ctl(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* A string member of the state, or "" when absent.  A value holding a
 * control character is treated as absent: tags and names from the state
 * file go into response headers (X-Orgw-Provider) and log lines, where
 * CR LF would inject a header or break the line. */
void
rec_get_str(const cJSON *o, const char *k, char *dst, size_t n)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	snprintf(dst, n, "%s",
		 cJSON_IsString(it) && !has_ctl(it->valuestring) ?
			 it->valuestring :
			 "");
}

/* Adds a number; NaN/inf become 0 so no state ever holds them. */
bool
rec_add_num(cJSON *o, const char *k, double d)
{
	if (!isfinite(d))
		d = 0;
	return cJSON_AddNumberToObject(o, k, d) != NULL;
}

/*
 * v in decimal into b (room for 21 bytes: a sign, 19 digits, the NUL), as
 * snprintf("%lld") prints it; its length.  Most of a request's records
 * are whole numbers, and snprintf spent some 1,100 instructions on each
 * one (a fifth of all a cell's encoding) parsing its format; redis prints
 * its integers the same way (ll2string in util.c).
 */
static int
whole_text(char b[21], long long v)
{
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v :
				       (unsigned long long)v;
	char rev[20];
	int n = 0, len = 0;

	do
		rev[n++] = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		b[len++] = '-';
	while (n > 0)
		b[len++] = rev[--n];
	b[len] = '\0';
	return len;
}

bool
record_add_number(cJSON *o, const char *k, double d)
{
	cJSON *item;
	char b[32];
	int len;

	if (!isfinite(d))
		d = 0;
	/* -0 is whole, but "%lld" prints it "0".  strfromd() prints what
	 * snprintf("%.17g") does, without a format string to parse. */
	if (d != floor(d) || fabs(d) >= RECORD_RAW_INT_LIMIT ||
	    (d == 0 && signbit(d)))
		len = strfromd(b, sizeof(b), "%.17g", d);
	else
		len = whole_text(b, (long long)d);
	if (len <= 0 || (size_t)len >= sizeof(b) ||
	    (item = cJSON_CreateRaw(b)) == NULL)
		return false;
	/* k is the caller's constant (record.h): the tree keeps the
	 * pointer instead of a copy of its own. */
	if (!cJSON_AddItemToObjectCS(o, k, item)) {
		cJSON_Delete(item);
		return false;
	}
	return true;
}

char *
rec_finish(cJSON *o, bool ok)
{
	char *s = NULL;

	if (ok)
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

char *
record_lock_encode(const struct rec_lock *l)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;

	ok = ok && record_add_number(o, "v", RECORD_VERSION);
	ok = ok && cJSON_AddStringToObject(o, "tag", l->tag);
	ok = ok && cJSON_AddStringToObject(o, "provider_name",
					   l->provider_name);
	ok = ok && record_add_number(o, "locked_at", (double)l->locked_at);
	ok = ok && record_add_number(o, "last_used", (double)l->last_used);
	ok = ok && record_add_number(o, "max_completion_tokens",
				     (double)l->max_completion_tokens);
	return rec_finish(o, ok);
}

enum orgw_err
record_lock_decode(const char *text, struct rec_lock *l)
{
	cJSON *o = rec_parse_obj(text);

	memset(l, 0, sizeof(*l));
	if (o == NULL)
		return ORGW_EINVAL;
	rec_get_str(o, "tag", l->tag, sizeof(l->tag));
	rec_get_str(o, "provider_name", l->provider_name,
		sizeof(l->provider_name));
	l->locked_at = rec_get_i64(o, "locked_at");
	l->last_used = rec_get_i64(o, "last_used");
	l->max_completion_tokens = rec_get_i64(o, "max_completion_tokens");
	cJSON_Delete(o);
	return l->tag[0] ? ORGW_OK : ORGW_EINVAL;
}


char *
record_failure_encode(const struct rec_failure *f)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;

	ok = ok && rec_add_num(o, "v", RECORD_VERSION);
	ok = ok && rec_add_num(o, "count", (double)f->count);
	ok = ok && cJSON_AddStringToObject(o, "reason", f->reason);
	ok = ok && rec_add_num(o, "last", (double)f->last);
	return rec_finish(o, ok);
}

enum orgw_err
record_failure_decode(const char *text, struct rec_failure *f)
{
	cJSON *o = rec_parse_obj(text);

	memset(f, 0, sizeof(*f));
	if (o == NULL)
		return ORGW_EINVAL;
	f->count = rec_get_i64(o, "count");
	if (f->count < 0)
		f->count = 0;
	rec_get_str(o, "reason", f->reason, sizeof(f->reason));
	f->last = rec_get_i64(o, "last");
	cJSON_Delete(o);
	return ORGW_OK;
}

char *
record_cooldown_encode(const struct rec_cooldown *c)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;

	ok = ok && rec_add_num(o, "v", RECORD_VERSION);
	ok = ok && rec_add_num(o, "until", (double)c->until);
	ok = ok && cJSON_AddStringToObject(o, "reason", c->reason);
	return rec_finish(o, ok);
}

enum orgw_err
record_cooldown_decode(const char *text, struct rec_cooldown *c)
{
	cJSON *o = rec_parse_obj(text);

	memset(c, 0, sizeof(*c));
	if (o == NULL)
		return ORGW_EINVAL;
	c->until = rec_get_i64(o, "until");
	rec_get_str(o, "reason", c->reason, sizeof(c->reason));
	cJSON_Delete(o);
	return ORGW_OK;
}

char *
record_conv_encode(const struct rec_conv *c, const cJSON *cache)
{
	cJSON *cc = NULL;

	if (cache != NULL && (cc = cJSON_Duplicate(cache, 1)) == NULL)
		return NULL;
	return record_conv_encode_take(c, cc);
}

char *
record_conv_encode_take(const struct rec_conv *c, cJSON *cc)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;

	ok = ok && rec_add_num(o, "v", RECORD_VERSION);
	ok = ok && cJSON_AddStringToObject(o, "model", c->model) != NULL;
	ok = ok && cJSON_AddStringToObject(o, "tag", c->tag) != NULL;
	ok = ok && cJSON_AddStringToObject(o, "show", c->show) != NULL;
	ok = ok && cJSON_AddStringToObject(o, "api", c->api) != NULL;
	ok = ok && rec_add_num(o, "first_seen", (double)c->first_seen);
	ok = ok && rec_add_num(o, "last_turn", (double)c->last_turn);
	ok = ok && rec_add_num(o, "turns", (double)c->turns);
	ok = ok && cJSON_AddBoolToObject(o, "spread", c->spread) != NULL;
	if (c->foreign_items > 0)
		ok = ok && rec_add_num(o, "foreign_items",
				   (double)c->foreign_items);
	if (cc != NULL) {
		ok = ok && cJSON_AddItemToObject(o, "cache", cc);
		if (!ok)
			cJSON_Delete(cc);
	}
	return rec_finish(o, ok);
}

enum orgw_err
record_conv_decode(const char *text, struct rec_conv *c, cJSON **cache)
{
	cJSON *o = rec_parse_obj(text), *cc;

	memset(c, 0, sizeof(*c));
	if (cache != NULL)
		*cache = NULL;
	if (o == NULL)
		return ORGW_EINVAL;
	rec_get_str(o, "model", c->model, sizeof(c->model));
	rec_get_str(o, "tag", c->tag, sizeof(c->tag));
	rec_get_str(o, "show", c->show, sizeof(c->show));
	rec_get_str(o, "api", c->api, sizeof(c->api));
	c->first_seen = rec_get_i64(o, "first_seen");
	c->last_turn = rec_get_i64(o, "last_turn");
	c->turns = rec_get_i64(o, "turns");
	c->spread = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "spread"));
	c->foreign_items = rec_get_i64(o, "foreign_items");
	if (c->foreign_items < 0)
		c->foreign_items = 0;
	cc = cJSON_GetObjectItemCaseSensitive(o, "cache");
	if (cache != NULL && cJSON_IsObject(cc))
		*cache = cJSON_DetachItemViaPointer(o, cc);
	cJSON_Delete(o);
	return ORGW_OK;
}

char *
record_pressure_encode(const struct rec_pressure *p)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;

	ok = ok && rec_add_num(o, "v", RECORD_VERSION);
	ok = ok && rec_add_num(o, "until", (double)p->until);
	ok = ok && rec_add_num(o, "n429", (double)p->n429);
	return rec_finish(o, ok);
}

enum orgw_err
record_pressure_decode(const char *text, struct rec_pressure *p)
{
	cJSON *o = rec_parse_obj(text);

	memset(p, 0, sizeof(*p));
	if (o == NULL)
		return ORGW_EINVAL;
	p->until = rec_get_i64(o, "until");
	p->n429 = rec_get_i64(o, "n429");
	cJSON_Delete(o);
	return ORGW_OK;
}

/* Puts n in place of o's first member k (so a damaged value holding k
 * twice cannot have its other copy become the one readers find); false
 * on failure, n then still belongs to the caller. */
static bool
replace(cJSON *o, const char *k, cJSON *n)
{
	return n != NULL && cJSON_ReplaceItemInObjectCaseSensitive(o, k, n);
}

/* Returns o[k] as an object, creating it (or replacing a non-object). */
static cJSON *
child_obj(cJSON *o, const char *k)
{
	cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k), *n;

	if (cJSON_IsObject(it))
		return it;
	if (it == NULL)
		return cJSON_AddObjectToObject(o, k);
	n = cJSON_CreateObject();
	if (!replace(o, k, n)) {
		cJSON_Delete(n);
		return NULL;
	}
	return n;
}

char *
record_model_seen_encode(int64_t first_seen)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;

	ok = ok && rec_add_num(o, "v", RECORD_VERSION);
	ok = ok && rec_add_num(o, "first_seen", (double)first_seen);
	return rec_finish(o, ok);
}

enum orgw_err
record_model_seen_decode(const char *text, int64_t *first_seen)
{
	cJSON *o = rec_parse_obj(text);

	*first_seen = 0;
	if (o == NULL)
		return ORGW_EINVAL;
	*first_seen = rec_get_i64(o, "first_seen");
	cJSON_Delete(o);
	return ORGW_OK;
}

char *
record_seen_add(const char *text, const char *model, int64_t now,
		bool *added)
{
	cJSON *o = rec_parse_obj(text), *models;
	bool ok;

	*added = true;
	if (o == NULL && (o = cJSON_CreateObject()) == NULL)
		return NULL;
	if ((models = child_obj(o, "models")) == NULL)
		return rec_finish(o, false);
	if (cJSON_GetObjectItemCaseSensitive(models, model) != NULL) {
		*added = false;
		return rec_finish(o, false);
	}
	cJSON_DeleteItemFromObjectCaseSensitive(o, "v");
	ok = rec_add_num(o, "v", RECORD_VERSION);
	ok = ok && rec_add_num(models, model, (double)now);
	return rec_finish(o, ok);
}

size_t
record_seen_each(const char *text,
		 void (*fn)(void *arg, const char *model, int64_t first_seen),
		 void *arg)
{
	cJSON *o = rec_parse_obj(text), *models, *it;
	size_t n = 0;

	if (o == NULL)
		return 0;
	models = cJSON_GetObjectItemCaseSensitive(o, "models");
	cJSON_ArrayForEach(it, models)
	{
		if (it->string == NULL || !cJSON_IsNumber(it))
			continue;
		fn(arg, it->string, num_i64(it));
		n++;
	}
	cJSON_Delete(o);
	return n;
}

/* o[k] += d, creating the number; false on allocation failure.  A
 * non-finite d counts as 0: one bad delta must not wipe the total. */
static bool
bump(cJSON *o, const char *k, double d)
{
	cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	if (o == NULL)
		return false;
	if (!isfinite(d))
		d = 0;
	if (cJSON_IsNumber(it)) {
		/* A stored inf (cJSON reads 1e999 as one) is damage: the
		 * counter starts again from d, like a missing one. */
		double v = isfinite(it->valuedouble) ? it->valuedouble + d : d;
		cJSON_SetNumberValue(it, isfinite(v) ? v : 0);
		return true;
	}
	if (it != NULL) {
		cJSON *n = cJSON_CreateNumber(d);
		if (!replace(o, k, n)) {
			cJSON_Delete(n);
			return false;
		}
		return true;
	}
	return rec_add_num(o, k, d);
}

/* A hit-rate object's fields into h (zero when absent). */
static void
hit_get_fields(const cJSON *o, struct score_hit *h)
{
	h->rate = rec_get_dbl(o, "rate");
	h->weight = rec_get_dbl(o, "weight");
	h->tokens = rec_get_i64(o, "tokens");
}

/* The stored "hit" of an old STATS provider object p into h. */
static void
hit_get(const cJSON *p, struct score_hit *h)
{
	hit_get_fields(cJSON_GetObjectItemCaseSensitive(p, "hit"), h);
}

enum orgw_err
record_hits_decode(const char *text, struct score_hit **v, size_t *n)
{
	cJSON *o = rec_parse_obj(text), *it;
	const cJSON *bp;
	size_t k = 0;

	*v = NULL;
	*n = 0;
	if (o == NULL)
		return ORGW_OK;
	bp = cJSON_GetObjectItemCaseSensitive(o, "by_provider");
	cJSON_ArrayForEach(it, bp)
	{
		if (it->string != NULL && cJSON_IsObject(it) &&
		    cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(it, "hit")))
			k++;
	}
	if (k > 0 && (*v = calloc(k, sizeof(**v))) == NULL) {
		cJSON_Delete(o);
		return ORGW_ENOMEM;
	}
	cJSON_ArrayForEach(it, bp)
	{
		struct score_hit *h;

		if (*n == k || it->string == NULL || !cJSON_IsObject(it) ||
		    !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(it, "hit")))
			continue;
		h = &(*v)[*n];
		if ((size_t)snprintf(h->tag, sizeof(h->tag), "%s",
				     it->string) >= sizeof(h->tag))
			continue;
		hit_get(it, h);
		(*n)++;
	}
	cJSON_Delete(o);
	return ORGW_OK;
}

void
record_day(int64_t t, char dst[11])
{
	/* civil_from_days (H. Hinnant), valid for every int64_t day. */
	int64_t z = (t >= 0 ? t : t - 86399) / 86400 + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	int64_t dd = doy - (153 * mp + 2) / 5 + 1;
	int64_t mm = mp < 10 ? mp + 3 : mp - 9;
	int64_t yy = yoe + era * 400 + (mm <= 2);

	int y = (int)((yy % 10000 + 10000) % 10000);

	/* "%04d-%02d-%02d", digit by digit: a request names its day for
	 * every cell key it builds. */
	dst[0] = (char)('0' + y / 1000);
	dst[1] = (char)('0' + y / 100 % 10);
	dst[2] = (char)('0' + y / 10 % 10);
	dst[3] = (char)('0' + y % 10);
	dst[4] = '-';
	dst[5] = (char)('0' + mm / 10);
	dst[6] = (char)('0' + mm % 10);
	dst[7] = '-';
	dst[8] = (char)('0' + dd / 10);
	dst[9] = (char)('0' + dd % 10);
	dst[10] = '\0';
}

char *
record_lock_log_add(const char *text, int64_t at, const char *from,
		    const char *to, const char *reason)
{
	cJSON *o = rec_parse_obj(text), *arr, *e;
	bool ok;

	if (o == NULL && (o = cJSON_CreateObject()) == NULL)
		return NULL;
	arr = cJSON_GetObjectItemCaseSensitive(o, "changes");
	if (!cJSON_IsArray(arr)) {
		cJSON_DeleteItemFromObjectCaseSensitive(o, "changes");
		arr = cJSON_AddArrayToObject(o, "changes");
	}
	ok = arr != NULL && bump(o, "v", 0);
	while (ok && cJSON_GetArraySize(arr) >= RECORD_LOCK_LOG_MAX)
		cJSON_DeleteItemFromArray(arr, 0);
	e = ok ? cJSON_CreateObject() : NULL;
	if (e != NULL && !cJSON_AddItemToArray(arr, e)) {
		cJSON_Delete(e);
		e = NULL;
	}
	ok = e != NULL && rec_add_num(e, "at", (double)at) &&
	     cJSON_AddStringToObject(e, "from", from ? from : "") &&
	     cJSON_AddStringToObject(e, "to", to ? to : "") &&
	     cJSON_AddStringToObject(e, "reason", reason ? reason : "");
	if (ok)
		cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "v"),
				     RECORD_VERSION);
	return rec_finish(o, ok);
}

char *
record_hits_encode(const struct score_hit *v, size_t n)
{
	cJSON *o = cJSON_CreateObject(), *bp, *p, *h;
	bool ok = o != NULL && record_add_number(o, "v", RECORD_VERSION) &&
		  (bp = cJSON_AddObjectToObject(o, "by_provider")) != NULL;
	size_t i;

	/* Numbers as record_add_number() prints them; the provider's tag
	 * is copied, the member names are constants. */
	for (i = 0; ok && i < n; i++) {
		ok = (p = cJSON_AddObjectToObject(bp, v[i].tag)) != NULL &&
		     (h = cJSON_AddObjectToObject(p, "hit")) != NULL &&
		     record_add_number(h, "rate", v[i].rate) &&
		     record_add_number(h, "weight", v[i].weight) &&
		     record_add_number(h, "tokens", (double)v[i].tokens);
	}
	return rec_finish(o, ok);
}
