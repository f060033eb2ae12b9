/*
 * convcache.c - the per-conversation cache record (convcache.h), pure.
 *
 * Invariants of a record: nbreaks <= CONVCACHE_BREAKS, breaks oldest
 * first; prefix.head holds min(n, HEAD) units, prefix.tail the units
 * from convcache_tail_at(n) to n - 1, prefix.cp the checkpoints below n.
 * Nothing is allocated: a record is one fixed-size struct, and a turn
 * costs one pass over its units plus a fixed amount.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "api.h"
#include "convcache.h"
#include "record.h"

static const char *const cause_names[] = {
	[CONVCACHE_NONE] = "",
	[CONVCACHE_MOVED] = "moved",
	[CONVCACHE_PREFIX_CHANGED] = "prefix_changed",
	[CONVCACHE_EXPIRED] = "expired",
	[CONVCACHE_PROVIDER_MISS] = "provider_miss",
};
#define N_CAUSES (sizeof(cause_names) / sizeof(cause_names[0]))

const char *
convcache_cause_name(enum convcache_cause c)
{
	return (size_t)c < N_CAUSES ? cause_names[c] : "";
}

/* The unit count checkpoint j stands for. */
static int64_t
cp_units(int j)
{
	return (int64_t)(2 * CONVCACHE_HEAD_UNITS) << j;
}

/* How many checkpoints a prompt of n units has. */
static int
cp_count(int64_t n)
{
	int j = 0;

	while (j < CONVCACHE_CHECKPOINTS && cp_units(j) < n)
		j++;
	return j;
}

int64_t
convcache_tail_at(int64_t n)
{
	if (n <= CONVCACHE_HEAD_UNITS)
		return n;
	return n - CONVCACHE_TAIL_UNITS > CONVCACHE_HEAD_UNITS ?
		       n - CONVCACHE_TAIL_UNITS :
		       CONVCACHE_HEAD_UNITS;
}

static uint64_t
chain(uint64_t cum, uint64_t unit_hash)
{
	return fp_hash_bytes(cum, &unit_hash, sizeof(unit_hash));
}

/* The chained hash of a list's first k units, read forwards: asking for a
 * smaller k than the last starts again from unit 0. */
struct cursor {
	const struct fp_list *fp;
	size_t k;
	uint64_t cum;
};

static uint64_t
cum_at(struct cursor *c, int64_t k)
{
	if ((size_t)k < c->k) {
		c->k = 0;
		c->cum = FP_HASH_SEED;
	}
	for (; c->k < (size_t)k; c->k++)
		c->cum = chain(c->cum, c->fp->v[c->k].hash);
	return c->cum;
}

static void
set_kind(char *dst, const char *kind)
{
	snprintf(dst, FP_KIND_MAX, "%s", kind);
}

/* The kind of the previous prompt's unit i when the record has it. */
static const char *
prev_kind(const struct convcache_prefix *p, int64_t i)
{
	int64_t ta = convcache_tail_at(p->n);

	if (i < 0 || i >= p->n)
		return "";
	if (i < CONVCACHE_HEAD_UNITS)
		return p->head[i].kind;
	if (i >= ta)
		return p->tail[i - ta].kind;
	return "";
}

/*
 * Where this prompt (fp) first differs from the previous one (p).  Sets
 * v->prefix_same, v->common, v->at and v->unit (see convcache.h).
 */
static void
compare(const struct convcache_prefix *p, const struct fp_list *fp,
	struct convcache_verdict *v)
{
	struct cursor cur = {fp, 0, FP_HASH_SEED};
	int64_t cn = (int64_t)fp->n, m = p->n < cn ? p->n : cn;
	int64_t lo, hi, ta, i, h;
	int j;

	v->prefix_same = true;
	v->common = 0;
	v->at = -1;
	v->unit[0] = '\0';
	if (p->n == 0)
		return;		/* nothing known to compare with */
	h = m < CONVCACHE_HEAD_UNITS ? m : CONVCACHE_HEAD_UNITS;
	for (i = 0; i < h; i++)
		if (p->head[i].hash != fp->v[i].hash) {
			v->at = i;
			goto found;
		}
	if (cn >= p->n && cum_at(&cur, p->n) == p->whole) {
		v->common = p->n;
		return;
	}
	/* The first difference lies in [lo, hi]: hi == m when the units
	 * up to m may all agree and this prompt is the shorter one. */
	lo = h;
	hi = m;
	for (j = 0; j < cp_count(p->n) && cp_units(j) <= m; j++) {
		if (cp_units(j) <= lo)
			continue;
		if (cum_at(&cur, cp_units(j)) != p->cp[j]) {
			hi = cp_units(j) - 1;
			break;
		}
		lo = cp_units(j);
	}
	ta = convcache_tail_at(p->n);
	if (ta < p->n && ta >= lo && ta <= hi) {
		if (cum_at(&cur, ta) == p->tail_cum) {
			for (i = ta; i < m; i++)
				if (p->tail[i - ta].hash != fp->v[i].hash) {
					v->at = i;
					goto found;
				}
			lo = m;	/* all of this shorter prompt agrees */
		} else if (ta > lo) {
			hi = ta - 1;
		}
	}
	if (lo == m) {
		/* Every unit of this prompt agrees and the previous one had
		 * more: the first missing unit is where they part. */
		v->at = m;
		goto found;
	}
	v->prefix_same = false;
	v->common = lo;
	v->at = lo;		/* at or after; its kind is not known */
	return;
found:
	v->prefix_same = false;
	v->common = v->at;
	if (v->at < cn && (v->at < CONVCACHE_HEAD_UNITS ||
			   v->at >= convcache_tail_at(p->n)))
		set_kind(v->unit, fp->v[v->at].kind);
	else
		set_kind(v->unit, prev_kind(p, v->at));
}

void
convcache_init(struct convcache *c)
{
	memset(c, 0, sizeof(*c));
}

void
convcache_classify(const struct convcache *prev,
		   const struct convcache_turn *t, int64_t ttl_s,
		   struct convcache_verdict *v)
{
	const char *prov = t->provider != NULL ? t->provider : "";
	int64_t could;

	memset(v, 0, sizeof(*v));
	compare(&prev->prefix, t->fp, v);
	if (prev->turns == 0)
		return;		/* the first turn has nothing to read */
	could = prev->last_prompt_tokens < t->prompt_tokens ?
			prev->last_prompt_tokens :
			t->prompt_tokens;
	/* cached < 0.5 * could, in integers that cannot overflow */
	if (could <= 0 || t->cached_tokens < 0 ||
	    t->cached_tokens >= could - t->cached_tokens)
		return;
	v->is_break = true;
	if (prev->provider[0] != '\0' && prov[0] != '\0' &&
	    strcmp(prev->provider, prov) != 0)
		v->cause = CONVCACHE_MOVED;
	else if (!v->prefix_same)
		v->cause = CONVCACHE_PREFIX_CHANGED;
	else if (t->now - prev->last_seen > ttl_s)
		v->cause = CONVCACHE_EXPIRED;
	else
		v->cause = CONVCACHE_PROVIDER_MISS;
}

/* p = the bounded summary of fp's units. */
static void
summarise(struct convcache_prefix *p, const struct fp_list *fp)
{
	int64_t n = (int64_t)fp->n, ta = convcache_tail_at(n), i;
	uint64_t cum = FP_HASH_SEED;
	struct convcache_unit *u;
	int j = 0;

	memset(p, 0, sizeof(*p));
	p->n = n;
	for (i = 0; i < n; i++) {
		if (i == ta)
			p->tail_cum = cum;
		if (j < CONVCACHE_CHECKPOINTS && i == cp_units(j))
			p->cp[j++] = cum;
		u = i < CONVCACHE_HEAD_UNITS ? &p->head[i] :
		    i >= ta		     ? &p->tail[i - ta] :
					       NULL;
		if (u != NULL) {
			u->hash = fp->v[i].hash;
			u->bytes = (int64_t)fp->v[i].bytes;
			set_kind(u->kind, fp->v[i].kind);
		}
		p->bytes += (int64_t)fp->v[i].bytes;
		cum = chain(cum, fp->v[i].hash);
	}
	p->whole = n > 0 ? cum : 0;	/* all zero when none known */
}

/* a + b for the sums, held at 1e15 (what decoding accepts). */
static int64_t
sum(int64_t a, int64_t b)
{
	const int64_t cap = (int64_t)1000000000000000LL;

	if (b < 0)
		b = 0;
	return a > cap - b ? cap : a + b;
}

static double
dsum(double a, double b)
{
	double s = a + b;

	return isfinite(s) ? s : a;
}

/* Appends b to c's ring, dropping the oldest when it is full. */
static void
push_break(struct convcache *c, const struct convcache_break *b)
{
	if (c->nbreaks >= CONVCACHE_BREAKS) {
		memmove(&c->breaks[0], &c->breaks[1],
			(CONVCACHE_BREAKS - 1) * sizeof(c->breaks[0]));
		c->nbreaks = CONVCACHE_BREAKS - 1;
	}
	c->breaks[c->nbreaks++] = *b;
}

void
convcache_update(struct convcache *c, const struct convcache_turn *t,
		 const struct convcache_verdict *v)
{
	const char *prov = t->provider != NULL ? t->provider : "";
	struct convcache_break b;

	if (v->is_break) {
		memset(&b, 0, sizeof(b));
		b.turn = c->turns + 1;
		b.cause = v->cause;
		b.at = v->cause == CONVCACHE_PREFIX_CHANGED ? v->at : -1;
		if (v->cause == CONVCACHE_PREFIX_CHANGED)
			set_kind(b.unit, v->unit);
		b.expected_tokens = c->last_prompt_tokens;
		b.cached_tokens = t->cached_tokens > 0 ? t->cached_tokens : 0;
		/* A clock that stepped back reads as no time at all. */
		b.idle_s = t->now > c->last_seen ? t->now - c->last_seen : 0;
		snprintf(b.provider, sizeof(b.provider), "%s", prov);
		snprintf(b.from, sizeof(b.from), "%s", c->provider);
		push_break(c, &b);
		c->breaks_total = sum(c->breaks_total, 1);
	}
	if (c->turns == 0)
		c->first_seen = t->now;
	c->turns = sum(c->turns, 1);
	c->last_seen = t->now;
	c->prompt_tokens = sum(c->prompt_tokens, t->prompt_tokens);
	c->cached_tokens = sum(c->cached_tokens, t->cached_tokens);
	c->cache_write_tokens =
		sum(c->cache_write_tokens, t->cache_write_tokens);
	c->last_prompt_tokens = t->prompt_tokens > 0 ? t->prompt_tokens : 0;
	c->cost = dsum(c->cost, t->cost);
	c->saved = dsum(c->saved, t->saved);
	snprintf(c->provider, sizeof(c->provider), "%s", prov);
	summarise(&c->prefix, t->fp);
}

/* --- the JSON codec --- */

static bool
add_hex(cJSON *o, const char *k, uint64_t h)
{
	char b[17];

	snprintf(b, sizeof(b), "%016" PRIx64, h);
	return cJSON_AddStringToObject(o, k, b) != NULL;
}

/* Appends the string s to arr. */
static bool
add_item(cJSON *arr, const char *s)
{
	cJSON *it = cJSON_CreateString(s);

	if (it == NULL || !cJSON_AddItemToArray(arr, it)) {
		cJSON_Delete(it);
		return false;
	}
	return true;
}

/*
 * A unit as one string, "<16 hex digits> <bytes> <kind>": a third of the
 * cJSON items of [hash, bytes, kind], and no number for cJSON to print
 * and read back (it prints one with "%1.15g" and checks it with sscanf).
 * The head and tail of a long conversation are 48 units, written and
 * read on every turn.
 */
static bool
add_unit(cJSON *arr, const struct convcache_unit *u)
{
	char b[64];
	int len;

	len = snprintf(b, sizeof(b), "%016" PRIx64 " %" PRId64 " %s", u->hash,
		       u->bytes, u->kind);
	return len >= 0 && (size_t)len < sizeof(b) && add_item(arr, b);
}

static bool
encode_prefix(const struct convcache_prefix *p, cJSON *obj)
{
	cJSON *o = cJSON_AddObjectToObject(obj, "prefix"), *a;
	int64_t i, ta = convcache_tail_at(p->n);
	char b[17];
	bool ok = o != NULL;
	int j;

	ok = ok && record_add_number(o, "n", (double)p->n);
	ok = ok && record_add_number(o, "bytes", (double)p->bytes);
	ok = ok && add_hex(o, "whole", p->whole);
	ok = ok && (a = cJSON_AddArrayToObject(o, "head")) != NULL;
	for (i = 0; ok && i < p->n && i < CONVCACHE_HEAD_UNITS; i++)
		ok = add_unit(a, &p->head[i]);
	ok = ok && (a = cJSON_AddArrayToObject(o, "cp")) != NULL;
	for (j = 0; ok && j < cp_count(p->n); j++) {
		snprintf(b, sizeof(b), "%016" PRIx64, p->cp[j]);
		ok = add_item(a, b);
	}
	ok = ok && add_hex(o, "tail_cum", p->tail_cum);
	ok = ok && (a = cJSON_AddArrayToObject(o, "tail")) != NULL;
	for (i = ta; ok && i < p->n; i++)
		ok = add_unit(a, &p->tail[i - ta]);
	return ok;
}

static bool
encode_break(const struct convcache_break *b, cJSON *arr)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL && cJSON_AddItemToArray(arr, o);

	if (!ok) {
		cJSON_Delete(o);
		return false;
	}
	ok = record_add_number(o, "turn", (double)b->turn);
	ok = ok && cJSON_AddStringToObject(o, "cause",
					   convcache_cause_name(b->cause));
	if (b->cause == CONVCACHE_PREFIX_CHANGED) {
		ok = ok && record_add_number(o, "at", (double)b->at);
		ok = ok && cJSON_AddStringToObject(o, "unit", b->unit);
	}
	ok = ok && record_add_number(o, "expected_tokens",
				     (double)b->expected_tokens);
	ok = ok && record_add_number(o, "cached_tokens",
				     (double)b->cached_tokens);
	ok = ok && record_add_number(o, "idle_s", (double)b->idle_s);
	ok = ok && cJSON_AddStringToObject(o, "provider", b->provider);
	ok = ok && cJSON_AddStringToObject(o, "from", b->from);
	return ok;
}

bool
convcache_encode(const struct convcache *c, cJSON *obj)
{
	cJSON *arr;
	bool ok;
	size_t i;

	ok = record_add_number(obj, "v", CONVCACHE_VERSION);
	ok = ok && record_add_number(obj, "turns", (double)c->turns);
	ok = ok && record_add_number(obj, "first_seen", (double)c->first_seen);
	ok = ok && record_add_number(obj, "last_seen", (double)c->last_seen);
	ok = ok && record_add_number(obj, "prompt_tokens",
				     (double)c->prompt_tokens);
	ok = ok && record_add_number(obj, "cached_tokens",
				     (double)c->cached_tokens);
	ok = ok && record_add_number(obj, "cache_write_tokens",
				     (double)c->cache_write_tokens);
	ok = ok && record_add_number(obj, "last_prompt_tokens",
				     (double)c->last_prompt_tokens);
	ok = ok && record_add_number(obj, "cost", c->cost);
	ok = ok && record_add_number(obj, "saved", c->saved);
	ok = ok && cJSON_AddStringToObject(obj, "provider", c->provider);
	ok = ok && record_add_number(obj, "breaks_total",
				     (double)c->breaks_total);
	ok = ok && (arr = cJSON_AddArrayToObject(obj, "breaks")) != NULL;
	for (i = 0; ok && i < c->nbreaks && i < CONVCACHE_BREAKS; i++)
		ok = encode_break(&c->breaks[i], arr);
	return ok && encode_prefix(&c->prefix, obj);
}

/* s copied into dst (n bytes), or "" when it holds a control character:
 * kinds and provider tags reach log lines and the status page. */
static bool
copy_clean(char *dst, size_t n, const char *s)
{
	const char *p;

	for (p = s; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			dst[0] = '\0';
			return false;
		}
	snprintf(dst, n, "%s", s);
	return true;
}

static void
get_str(const cJSON *o, const char *k, char *dst, size_t n)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	copy_clean(dst, n, cJSON_IsString(it) ? it->valuestring : "");
}

static int64_t
get_count(const cJSON *o, const char *k)
{
	return api_count(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* A finite number, else 0 (cJSON_GetNumberValue gives NaN for a
 * member that is not a number). */
static double
get_dbl(const cJSON *o, const char *k)
{
	double d = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k));

	return isfinite(d) ? d : 0;
}

/* The 16 hex digits at s into *h. */
static bool
hex16(const char *s, uint64_t *h)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 16; i++) {
		char ch = s[i];
		unsigned d;

		if (ch >= '0' && ch <= '9')
			d = (unsigned)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			d = (unsigned)(ch - 'a' + 10);
		else
			return false;	/* also the NUL of a short string */
		v = v << 4 | d;
	}
	*h = v;
	return true;
}

/* A string of exactly 16 hex digits into *h. */
static bool
get_hex(const cJSON *it, uint64_t *h)
{
	return cJSON_IsString(it) && hex16(it->valuestring, h) &&
	       it->valuestring[16] == '\0';
}

/* "<16 hex digits> <bytes> <kind>" (add_unit) into u. */
static bool
get_unit(const cJSON *it, struct convcache_unit *u)
{
	const char *s = cJSON_IsString(it) ? it->valuestring : NULL;
	int64_t bytes = 0;
	size_t i;

	if (s == NULL || !hex16(s, &u->hash) || s[16] != ' ')
		return false;
	for (i = 17; s[i] >= '0' && s[i] <= '9'; i++) {
		if (bytes > (INT64_MAX - 9) / 10)
			return false;
		bytes = bytes * 10 + (s[i] - '0');
	}
	if (i == 17 || s[i] != ' ' || s[i + 1] == '\0' ||
	    strlen(s + i + 1) >= sizeof(u->kind))
		return false;
	u->bytes = bytes;
	return copy_clean(u->kind, sizeof(u->kind), s + i + 1);
}

/* The prefix, or false when it does not hold together. */
static bool
decode_prefix(const cJSON *o, struct convcache_prefix *p)
{
	const cJSON *head = cJSON_GetObjectItemCaseSensitive(o, "head");
	const cJSON *cp = cJSON_GetObjectItemCaseSensitive(o, "cp");
	const cJSON *tail = cJSON_GetObjectItemCaseSensitive(o, "tail");
	int64_t n, ta, i;
	int j;

	n = p->n = get_count(o, "n");
	ta = convcache_tail_at(n);
	p->bytes = get_count(o, "bytes");
	if (n == 0)
		return true;
	if (!get_hex(cJSON_GetObjectItemCaseSensitive(o, "whole"), &p->whole) ||
	    !get_hex(cJSON_GetObjectItemCaseSensitive(o, "tail_cum"),
		     &p->tail_cum) ||
	    cJSON_GetArraySize(head) !=
		    (n < CONVCACHE_HEAD_UNITS ? n : CONVCACHE_HEAD_UNITS) ||
	    cJSON_GetArraySize(cp) != cp_count(n) ||
	    cJSON_GetArraySize(tail) != n - ta || !cJSON_IsArray(head) ||
	    !cJSON_IsArray(cp) || !cJSON_IsArray(tail))
		return false;
	for (i = 0; i < n && i < CONVCACHE_HEAD_UNITS; i++)
		if (!get_unit(cJSON_GetArrayItem(head, (int)i), &p->head[i]))
			return false;
	for (j = 0; j < cp_count(n); j++)
		if (!get_hex(cJSON_GetArrayItem(cp, j), &p->cp[j]))
			return false;
	for (i = ta; i < n; i++)
		if (!get_unit(cJSON_GetArrayItem(tail, (int)(i - ta)),
			      &p->tail[i - ta]))
			return false;
	return true;
}

static bool
decode_break(const cJSON *o, struct convcache_break *b)
{
	char cause[32];
	size_t k;

	memset(b, 0, sizeof(*b));
	get_str(o, "cause", cause, sizeof(cause));
	for (k = 1; k < N_CAUSES; k++)
		if (strcmp(cause, cause_names[k]) == 0)
			b->cause = (enum convcache_cause)k;
	if (b->cause == CONVCACHE_NONE)
		return false;
	b->turn = get_count(o, "turn");
	b->at = -1;
	if (b->cause == CONVCACHE_PREFIX_CHANGED) {
		b->at = get_count(o, "at");
		get_str(o, "unit", b->unit, sizeof(b->unit));
	}
	b->expected_tokens = get_count(o, "expected_tokens");
	b->cached_tokens = get_count(o, "cached_tokens");
	b->idle_s = get_count(o, "idle_s");
	get_str(o, "provider", b->provider, sizeof(b->provider));
	get_str(o, "from", b->from, sizeof(b->from));
	return true;
}

enum orgw_err
convcache_decode(const cJSON *obj, struct convcache *c)
{
	struct convcache_break b;
	const cJSON *it;

	convcache_init(c);
	if (!cJSON_IsObject(obj) || get_count(obj, "v") != CONVCACHE_VERSION)
		return ORGW_EINVAL;
	c->turns = get_count(obj, "turns");
	c->first_seen = get_count(obj, "first_seen");
	c->last_seen = get_count(obj, "last_seen");
	c->prompt_tokens = get_count(obj, "prompt_tokens");
	c->cached_tokens = get_count(obj, "cached_tokens");
	c->cache_write_tokens = get_count(obj, "cache_write_tokens");
	c->last_prompt_tokens = get_count(obj, "last_prompt_tokens");
	c->cost = get_dbl(obj, "cost");
	c->saved = get_dbl(obj, "saved");
	get_str(obj, "provider", c->provider, sizeof(c->provider));
	c->breaks_total = get_count(obj, "breaks_total");
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(obj, "breaks"))
	{
		if (cJSON_IsObject(it) && decode_break(it, &b))
			push_break(c, &b);
	}
	if (!decode_prefix(cJSON_GetObjectItemCaseSensitive(obj, "prefix"),
			   &c->prefix))
		memset(&c->prefix, 0, sizeof(c->prefix));
	return ORGW_OK;
}

/* --- the words --- */

/* A duration as people say it: "40 s", "7 min", "3 h". */
static void
say_time(char *b, size_t n, int64_t s)
{
	if (s < 120)
		snprintf(b, n, "%" PRId64 " s", s);
	else if (s < 2 * 3600)
		snprintf(b, n, "%" PRId64 " min", s / 60);
	else
		snprintf(b, n, "%" PRId64 " h", s / 3600);
}

/* "the system prompt changed at block 0", "the tools changed", "the user
 * message at unit 7 changed", "the prompt changed at or after unit 64". */
static int
say_prefix(char *buf, size_t n, const struct convcache_break *b)
{
	static const char *const roles[] = {"user", "assistant", "developer",
					    "tool"};
	size_t k;

	if (b->unit[0] == '\0')
		return snprintf(buf, n,
				"the prompt changed at or after unit %" PRId64,
				b->at);
	if (strcmp(b->unit, "system") == 0)
		return snprintf(buf, n,
				"the system prompt changed at block %" PRId64,
				b->at);
	if (strcmp(b->unit, "tools") == 0)
		return snprintf(buf, n, "the tool definitions changed");
	for (k = 0; k < sizeof(roles) / sizeof(roles[0]); k++)
		if (strcmp(b->unit, roles[k]) == 0)
			return snprintf(buf, n,
					"the %s message at unit %" PRId64
					" changed",
					b->unit, b->at);
	return snprintf(buf, n, "the %s item at unit %" PRId64 " changed",
			b->unit, b->at);
}

bool
convcache_words(const struct convcache_break *b, int64_t ttl_s, char *buf,
		size_t n)
{
	char idle[32], ttl[32];
	int head, len = -1;

	if (n == 0)
		return false;
	head = snprintf(buf, n, "turn %" PRId64 ": ", b->turn);
	if (head < 0 || (size_t)head >= n)
		return false;
	switch (b->cause) {
	case CONVCACHE_MOVED:
		len = snprintf(buf + head, n - head, "moved from %s to %s",
			       b->from[0] ? b->from : "one provider",
			       b->provider[0] ? b->provider : "another");
		break;
	case CONVCACHE_PREFIX_CHANGED:
		len = say_prefix(buf + head, n - head, b);
		break;
	case CONVCACHE_EXPIRED:
		say_time(idle, sizeof(idle), b->idle_s);
		say_time(ttl, sizeof(ttl), ttl_s);
		len = snprintf(buf + head, n - head,
			       "resumed after %s, past the %s cache lifetime",
			       idle, ttl);
		break;
	case CONVCACHE_PROVIDER_MISS:
		len = snprintf(buf + head, n - head,
			       "%s did not read its cache",
			       b->provider[0] ? b->provider : "the provider");
		break;
	case CONVCACHE_NONE:
	default:
		len = snprintf(buf + head, n - head, "no break");
		break;
	}
	return len >= 0 && (size_t)len < n - head;
}
