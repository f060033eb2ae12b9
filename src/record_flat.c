/*
 * record_flat.c - the fast path of record_stats_apply() (record.h), pure.
 *
 * STATS:<model> without a tree.  record_stats_apply() runs once per
 * request under the store lock, and the tree path (record.c) spends most of
 * its time on one malloc and free per node and key.  The flat path reads
 * the text into one array of entries on the stack (about 10 KiB) whose
 * keys point into the text, applies the same steps in the same order,
 * and prints into one buffer of a size known in advance, copying the
 * numbers it did not change.  It takes only what record.c writes: an
 * object of numbers and objects, at most FLAT_MAX_DEPTH deep and
 * FLAT_MAX_ENTRIES members, no whitespace, no escapes or control bytes
 * in keys, no key twice in one object, numbers strtod() reads whole, the
 * text ending at the closing brace.  For those texts jsonin_parse() (like
 * cJSON) builds exactly the tree the array mirrors, so the same steps
 * give the tree path's bytes; everything else goes to
 * record_stats_apply_tree().  tests/unit/test_statsrec.c and
 * tests/fuzz/fuzz_stats.c compare the two paths byte for byte.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "jsonout.h"
#include "record.h"

/* The top level takes 28 entries, each provider 8: 256 holds 28
 * providers, more than a model has; a bigger record takes the tree. */
#define FLAT_MAX_ENTRIES 256

/* The top level, by_provider, <tag>, tokens. */
#define FLAT_MAX_DEPTH 4

/* Keys are counted in a uint8_t. */
#define FLAT_MAX_KEY_BYTES 255

/* Number runs strtod() reads from a copy, as jsonin.c's stack buffer;
 * longer ones (nothing this file writes) take the tree. */
#define FLAT_NUMBUF_BYTES 64

/* Significant digits a double keeps through decimal and back (DBL_DIG). */
#define FLAT_EXACT_DIGITS 15

/* Entry 0 is the top level, which is nobody's member, so 0 ends a list. */
#define FLAT_NONE 0

struct flat_ent {
	const char *key;	/* borrowed: the text, a literal or d->tag */
	const char *txt;	/* number: its text if jsonout_number(v)
				 * prints exactly that, else NULL */
	double v;		/* number: the value jsonin_parse() reads */
	uint16_t child;		/* object: first member, or FLAT_NONE */
	uint16_t last;		/* object: last member */
	uint16_t next;		/* the next member of the parent */
	uint16_t cur;		/* object: where flat_find starts */
	uint8_t klen;
	uint8_t tlen;
	bool obj;
	bool quoted;		/* key is in the text, as "key": */
};

struct flat {
	struct flat_ent e[FLAT_MAX_ENTRIES];
	size_t n;
	size_t bound;	/* the most bytes the printed text can take */
};

/* A literal key and its length. */
#define K(s) (s), (sizeof(s) - 1)

/* 10^k, exact in a double for k <= 22; a canonical number (flat_canon)
 * has at most 3 + FLAT_EXACT_DIGITS digits after its point. */
static const double flat_p10[] = {
	1e0,  1e1,  1e2,  1e3,	1e4,  1e5,  1e6,  1e7,	1e8,  1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
};

/* Bytes a key may hold as printed: cJSON escapes '"', '\\' and < 0x20
 * (a table: keys are most of the text, and this is the test per byte). */
static const bool flat_key_bytes[256] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,	/* 0x00 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,	/* 0x10 */
	1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0x20 '"' */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0x30 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0x40 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,	/* 0x50 '\\' */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0x60 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0x70 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0x80 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0x90 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0xa0 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0xb0 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0xc0 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0xd0 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0xe0 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0xf0 */
};

static bool
flat_key_byte(unsigned char c)
{
	return flat_key_bytes[c];
}

/* The bytes in "0123456789+-eE." that make up a number run (jsonin.c). */
static bool
flat_num_byte(unsigned char c)
{
	return (c >= '0' && c <= '9') || c == '+' || c == '-' || c == 'e' ||
	       c == 'E' || c == '.';
}

static bool
flat_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static bool
flat_is(const struct flat_ent *e, const char *k, size_t klen)
{
	return e->klen == klen && memcmp(e->key, k, klen) == 0;
}

/*
 * obj's member k, or -1.  Members are unique (flat_members refuses a key
 * twice, flat_add runs only for a key not found), so this is the member
 * cJSON finds first wherever the scan starts; it starts after the last
 * one found, since the steps visit keys in the order they are written.
 */
static int
flat_find(struct flat *f, int obj, const char *k, size_t klen)
{
	struct flat_ent *o = &f->e[obj];
	unsigned i, start = o->cur != FLAT_NONE ? o->cur : o->child;

	for (i = start; i != FLAT_NONE; i = f->e[i].next)
		if (flat_is(&f->e[i], k, klen))
			goto found;
	for (i = o->child; i != start; i = f->e[i].next)
		if (flat_is(&f->e[i], k, klen))
			goto found;
	return -1;
found:
	o->cur = f->e[i].next;
	return (int)i;
}

/* Whether obj has a member k; for the check for keys given twice, which
 * runs before members are known to be unique. */
static bool
flat_has(const struct flat *f, int obj, const char *k, size_t klen)
{
	unsigned i;

	for (i = f->e[obj].child; i != FLAT_NONE; i = f->e[i].next)
		if (flat_is(&f->e[i], k, klen))
			return true;
	return false;
}

/* Appends member k (klen <= FLAT_MAX_KEY_BYTES) to obj, as
 * cJSON_AddItemToObject does; the new entry, or -1 when full. */
static int
flat_add(struct flat *f, int obj, const char *k, size_t klen, bool isobj)
{
	struct flat_ent *e, *o = &f->e[obj];

	if (f->n == FLAT_MAX_ENTRIES)
		return -1;
	e = &f->e[f->n];
	memset(e, 0, sizeof(*e));
	e->key = k;
	e->klen = (uint8_t)klen;
	e->obj = isobj;
	if (o->child == FLAT_NONE)
		o->child = (uint16_t)f->n;
	else
		f->e[o->last].next = (uint16_t)f->n;
	o->last = (uint16_t)f->n;
	/* ,"key": and the value: a number or {} fits
	 * JSONOUT_NUMBER_BYTES. */
	f->bound += klen + 4 + JSONOUT_NUMBER_BYTES;
	return (int)f->n++;
}

/*
 * Whether a number text (a '-' if neg, nint digits at in, then '.' and
 * nfrac digits if dot) is exactly what jsonout_number() prints for the
 * value it reads as, so it can be copied instead of printed.  That is
 * "%1.15g" fixed notation: no leading zero, no trailing zero after the
 * point, no "-0", at most 15 significant digits, exponent -4 to 14.  A
 * decimal of at most DBL_DIG digits reads into a double and prints back
 * to the same digits, so "%1.15g" gives the text and cJSON's round trip
 * check holds; an integral value below 1e15 prints its digits either way.
 */
static bool
flat_canon(bool neg, const char *in, size_t nint, bool dot, size_t nfrac)
{
	size_t z = 0;

	if (nint == 0 || (nint > 1 && in[0] == '0'))
		return false;
	if (!dot)
		return nint <= FLAT_EXACT_DIGITS && !(neg && in[0] == '0');
	if (nfrac == 0 || in[nint + nfrac] == '0')
		return false;
	if (in[0] != '0')
		return nint + nfrac <= FLAT_EXACT_DIGITS;
	while (in[2 + z] == '0')
		z++;
	return z <= 3 && nfrac - z <= FLAT_EXACT_DIGITS;
}

/* Reads the number run at s (at most FLAT_NUMBUF_BYTES - 1 bytes) with
 * strtod, as jsonin.c and cJSON do; the byte after it, or NULL when
 * strtod stops inside the run (cJSON then refuses the text). */
static const char *
flat_strtod(struct flat_ent *e, const char *s)
{
	char buf[FLAT_NUMBUF_BYTES], *end;
	const char *q;
	size_t n;

	for (q = s; flat_num_byte((unsigned char)*q); q++)
		;
	n = (size_t)(q - s);
	if (n >= sizeof(buf))
		return NULL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	e->v = strtod(buf, &end);
	return end == buf + n ? q : NULL;
}

/*
 * Reads the number at s into e and returns the byte after it; NULL when
 * it is not a number the flat path takes.  jsonin.c parse_number() gives
 * what strtod() gives for the run; so does this.  An optional '-' and up
 * to 15 digits, optionally a point and more digits, is m / 10^nfrac with
 * m < 10^15 < 2^53 and 10^nfrac exact: one correctly rounded division,
 * the same double as strtod's correctly rounded reading (Clinger's fast
 * path), given FLT_EVAL_METHOD 0 (no wider intermediate to round twice).
 */
static const char *
flat_number(struct flat_ent *e, const char *s)
{
	const char *in = s + (*s == '-'), *q = in;
	size_t nint, nfrac = 0;
	uint64_t m = 0;
	bool dot;

	if (!flat_digit((unsigned char)*in))
		return *s == '-' ? flat_strtod(e, s) : NULL;
	/* m wraps (defined for unsigned) past 19 digits; it is used only
	 * for at most 15 significant digits after at most 3 zeros. */
	for (; flat_digit((unsigned char)*q); q++)
		m = m * 10 + (uint64_t)(*q - '0');
	nint = (size_t)(q - in);
	if ((dot = *q == '.'))
		for (q++; flat_digit((unsigned char)*q); q++)
			m = m * 10 + (uint64_t)(*q - '0');
	if (dot)
		nfrac = (size_t)(q - in) - nint - 1;
	if (flat_num_byte((unsigned char)*q) || FLT_EVAL_METHOD != 0)
		return flat_strtod(e, s);
	if (flat_canon(s != in, in, nint, dot, nfrac)) {
		e->txt = s;
		e->tlen = (uint8_t)(q - s);
	} else if (dot || nint > FLAT_EXACT_DIGITS) {
		return flat_strtod(e, s);
	}
	e->v = (double)m / flat_p10[nfrac];
	if (s != in)
		e->v = -e->v;
	return q;
}

/* One of 64 bits for key k, from its length and its end bytes. */
static uint64_t
flat_key_bit(const char *k, size_t klen)
{
	size_t h = klen * 7;

	if (klen > 0)
		h += (unsigned char)k[0] + (unsigned char)k[klen - 1];
	return (uint64_t)1 << (h & 63);
}

/*
 * Reads the members of the object at p (its '{') into obj, depth objects
 * deep; the byte after its '}', or NULL when the text is outside the
 * flat grammar or the array is full.
 */
static const char *
flat_members(struct flat *f, int obj, const char *p, unsigned depth)
{
	uint64_t seen = 0, bit;
	const char *k;
	size_t klen;
	int i;

	if (*++p == '}')
		return p + 1;
	for (;;) {
		if (*p != '"')
			return NULL;
		for (k = ++p; flat_key_byte((unsigned char)*p); p++)
			;
		klen = (size_t)(p - k);
		if (*p++ != '"' || *p++ != ':' || klen > FLAT_MAX_KEY_BYTES)
			return NULL;
		/* A key given twice takes the tree.  seen is a one-word
		 * filter of the keys so far, so most keys skip the scan. */
		bit = flat_key_bit(k, klen);
		if ((seen & bit) && flat_has(f, obj, k, klen))
			return NULL;
		seen |= bit;
		if ((i = flat_add(f, obj, k, klen, *p == '{')) < 0)
			return NULL;
		f->e[i].quoted = true;
		if (*p != '{')
			p = flat_number(&f->e[i], p);
		else if (depth < FLAT_MAX_DEPTH)
			p = flat_members(f, i, p, depth + 1);
		else
			return NULL;
		if (p == NULL)
			return NULL;
		if (*p == '}')
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

/* Sets a number entry to v, keeping its text when v is the same. */
static void
flat_set(struct flat_ent *e, double v)
{
	if (e->txt != NULL && v == e->v && !signbit(v) == !signbit(e->v))
		return;
	e->v = v;
	e->txt = NULL;
}

/* Makes e a new number or a new empty object, as cJSON replaces an item
 * (its old members drop out of the text). */
static void
flat_reset(struct flat_ent *e, bool isobj, double v)
{
	e->obj = isobj;
	e->child = e->last = e->cur = FLAT_NONE;
	e->txt = NULL;
	e->v = v;
}

/* bump() on the flat path; false when obj is -1 or the array is full. */
static bool
flat_bump(struct flat *f, int obj, const char *k, size_t klen, double d)
{
	struct flat_ent *e;
	double v;
	int i;

	if (obj < 0)
		return false;
	if (!isfinite(d))
		d = 0;
	if ((i = flat_find(f, obj, k, klen)) < 0) {
		if ((i = flat_add(f, obj, k, klen, false)) < 0)
			return false;
		f->e[i].v = d;
		return true;
	}
	e = &f->e[i];
	if (e->obj) {
		flat_reset(e, false, d);
		return true;
	}
	v = isfinite(e->v) ? e->v + d : d;
	flat_set(e, isfinite(v) ? v : 0);
	return true;
}

/* bump_max() on the flat path. */
static bool
flat_bump_max(struct flat *f, int obj, const char *k, size_t klen, double d)
{
	struct flat_ent *e;
	int i;

	if (obj < 0)
		return false;
	if ((i = flat_find(f, obj, k, klen)) < 0 || f->e[i].obj)
		return flat_bump(f, obj, k, klen, d);
	e = &f->e[i];
	if (d > e->v || !isfinite(e->v))
		flat_set(e, isfinite(d) ? d : 0);
	return true;
}

/* child_obj() on the flat path; -1 when obj is -1 or the array is full. */
static int
flat_child(struct flat *f, int obj, const char *k, size_t klen)
{
	int i;

	if (obj < 0)
		return -1;
	if ((i = flat_find(f, obj, k, klen)) < 0)
		return flat_add(f, obj, k, klen, true);
	if (!f->e[i].obj)
		flat_reset(&f->e[i], true, 0);
	return i;
}

/* bump_tokens() on the flat path. */
static bool
flat_tokens(struct flat *f, int obj, const struct stats_delta *d)
{
	int t = flat_child(f, obj, K("tokens"));

	return flat_bump(f, t, K("prompt"), (double)d->prompt_tokens) &&
	       flat_bump(f, t, K("cached"), (double)d->cached_tokens) &&
	       flat_bump(f, t, K("completion"),
			 (double)d->completion_tokens) &&
	       flat_bump(f, obj, K("cost_usd"), d->cost_usd);
}

/* record_stats_apply_tree()'s steps, in its order, on the top level 0. */
static bool
flat_apply(struct flat *f, const struct stats_delta *d, size_t taglen)
{
	int e, lat, bp, p;
	bool ok;

	ok = flat_bump(f, 0, K("v"), 0) &&
	     flat_bump(f, 0, K("requests"), (double)d->requests) &&
	     flat_bump(f, 0, K("ok"), (double)d->ok);
	e = ok ? flat_child(f, 0, K("errors")) : -1;
	ok = ok && flat_bump(f, e, K("429"), (double)d->e429) &&
	     flat_bump(f, e, K("5xx"), (double)d->e5xx) &&
	     flat_bump(f, e, K("timeout"), (double)d->etimeout) &&
	     flat_bump(f, e, K("slow"), (double)d->eslow) &&
	     flat_bump(f, e, K("mid_stream"), (double)d->emid) &&
	     flat_bump(f, e, K("client_abort"), (double)d->eabort) &&
	     flat_bump(f, e, K("other"), (double)d->eother);
	ok = ok && flat_bump(f, 0, K("retries_429"), (double)d->retries_429) &&
	     flat_bump(f, 0, K("failovers"), (double)d->failovers) &&
	     flat_bump(f, 0, K("breaker_trips"), (double)d->trips) &&
	     flat_bump(f, 0, K("off_pin"), (double)d->off_pin) &&
	     flat_tokens(f, 0, d);
	lat = ok ? flat_child(f, 0, K("latency")) : -1;
	if (ok && d->ttfb_ms >= 0)
		ok = flat_bump(f, lat, K("ttfb_ms_sum"), (double)d->ttfb_ms) &&
		     flat_bump(f, lat, K("ttfb_count"), 1) &&
		     flat_bump_max(f, lat, K("ttfb_ms_max"),
				   (double)d->ttfb_ms);
	if (ok && d->total_ms >= 0)
		ok = flat_bump(f, lat, K("total_ms_sum"),
			       (double)d->total_ms) &&
		     flat_bump(f, lat, K("total_count"), 1) &&
		     flat_bump_max(f, lat, K("total_ms_max"),
				   (double)d->total_ms);
	if (ok && taglen > 0) {
		bp = flat_child(f, 0, K("by_provider"));
		p = flat_child(f, bp, d->tag, taglen);
		ok = flat_bump(f, p, K("requests"), (double)d->requests) &&
		     flat_bump(f, p, K("ok"), (double)d->ok) &&
		     flat_tokens(f, p, d);
	}
	/* bump() made "v" a number; the tree path then sets it to 1. */
	if (ok)
		flat_set(&f->e[flat_find(f, 0, K("v"))], RECORD_VERSION);
	return ok;
}

/* Prints object obj at p, within the room f->bound counted; the byte
 * after it, or NULL when jsonout_number() fails (cJSON's print would). */
static char *
flat_print(const struct flat *f, int obj, char *p)
{
	const struct flat_ent *e;
	unsigned i;
	size_t n;

	*p++ = '{';
	for (i = f->e[obj].child; i != FLAT_NONE; i = e->next) {
		e = &f->e[i];
		if (i != f->e[obj].child)
			*p++ = ',';
		if (e->quoted && e->txt != NULL) {
			/* "key":number as it stands in the text. */
			n = (size_t)(e->txt + e->tlen - (e->key - 1));
			memcpy(p, e->key - 1, n);
			p += n;
			continue;
		}
		if (e->quoted) {
			memcpy(p, e->key - 1, e->klen + 3u);
			p += e->klen + 3u;
		} else {
			*p++ = '"';
			memcpy(p, e->key, e->klen);
			p += e->klen;
			*p++ = '"';
			*p++ = ':';
		}
		if (e->obj) {
			if ((p = flat_print(f, (int)i, p)) == NULL)
				return NULL;
		} else if (e->txt != NULL) {
			memcpy(p, e->txt, e->tlen);
			p += e->tlen;
		} else {
			if ((n = jsonout_number(p, e->v)) == 0)
				return NULL;
			p += n;
		}
	}
	*p++ = '}';
	return p;
}

/* Whether tag, as a key, is printed as its bytes and fits a flat entry. */
static bool
flat_tag_ok(const char *tag, size_t *taglen)
{
	const char *q;

	*taglen = 0;
	if (tag == NULL)
		return true;
	for (q = tag; *q != '\0'; q++)
		if (!flat_key_byte((unsigned char)*q))
			return false;
	*taglen = (size_t)(q - tag);
	return *taglen <= FLAT_MAX_KEY_BYTES;
}

enum orgw_err
record_stats_apply_flat(const char *text, const struct stats_delta *d,
			char **out)
{
	struct flat f;
	const char *end;
	size_t taglen;
	char *s, *p;

	*out = NULL;
	if (!flat_tag_ok(d->tag, &taglen))
		return ORGW_EINVAL;
	memset(&f.e[0], 0, sizeof(f.e[0]));
	f.e[0].obj = true;
	f.n = 1;
	f.bound = 3;	/* {} and the NUL */
	if (text != NULL) {
		if (*text != '{')
			return ORGW_EINVAL;
		end = flat_members(&f, 0, text, 1);
		/* cJSON ignores bytes after the value; we hand them to it. */
		if (end == NULL || *end != '\0')
			return ORGW_EINVAL;
	}
	if (!flat_apply(&f, d, taglen))
		return ORGW_EINVAL;
	if ((s = cJSON_malloc(f.bound)) == NULL)
		return ORGW_ENOMEM;
	if ((p = flat_print(&f, 0, s)) == NULL) {
		cJSON_free(s);
		return ORGW_EINVAL;
	}
	*p = '\0';
	*out = s;
	return ORGW_OK;
}

