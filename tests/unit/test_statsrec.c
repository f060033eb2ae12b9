/*
 * test_statsrec.c - record_stats_apply()'s flat path against the tree
 * path it replaces (record_stats_apply_tree), byte for byte.
 *
 *  (a) long runs of random deltas from nothing: tags from a small set
 *      (NULL and "" included), unmeasured latencies, NaN, inf, negative,
 *      huge and fractional costs, counters crossing INT_MAX and 2^53;
 *  (b) mutated records: keys deleted, duplicated, reordered or added,
 *      values turned into strings, arrays, null, deep objects, numbers
 *      written every way JSON and cJSON allow, whitespace, escapes,
 *      truncation, garbage;
 *  (c) the flat path is the one taken for what orgw itself writes, and
 *      declines (falls back to the tree) where it must.
 *
 * Every comparison calls all three entry points: the tree, the flat path
 * directly (record_stats_apply_flat: ORGW_OK with the tree's bytes, or
 * ORGW_EINVAL) and record_stats_apply().  Random inputs come from t.h's
 * seeded splitmix64, so every run tests the same inputs.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "t.h"
#include "jsonout.h"
#include "record.h"

#define RUNS 120		/* (a): runs of random deltas ... */
#define STEPS 60		/* ... of this many steps each */
#define MUTANTS 6000		/* (b): mutated records */
#define TEXT_MAX 65536		/* room for a mutated record */
#define SHOW_MAX 3		/* mismatches printed in full */

struct tally {
	long steps;	/* comparisons made */
	long bad;	/* ... that disagreed */
	long flat;	/* ... where the flat path answered */
};

static int shown;

/*
 * Applies d to text through the tree, the flat path and
 * record_stats_apply(); true when all agree.  *took says whether the
 * flat path answered.  *next (if not NULL) gets the tree's text, which
 * the caller frees with record_free().
 */
static bool
agree(const char *text, const struct stats_delta *d, bool *took, char **next)
{
	char *t, *s, *f, unset;
	enum orgw_err err;
	bool ok;

	t = record_stats_apply_tree(text, d);
	s = record_stats_apply(text, d);
	f = &unset;	/* the flat path must set *out either way */
	err = record_stats_apply_flat(text, d, &f);
	ok = t != NULL && s != NULL && strcmp(t, s) == 0 && f != &unset;
	if (f == &unset)
		f = NULL;
	if (err == ORGW_OK)
		ok = ok && f != NULL && strcmp(t, f) == 0;
	else
		ok = ok && err == ORGW_EINVAL && f == NULL;
	*took = err == ORGW_OK;
	if (!ok && shown++ < SHOW_MAX)
		printf("# mismatch (flat %s, tag %s)\n# text: %s\n# tree: %s\n"
		       "# api:  %s\n# flat: %s\n",
		       err == ORGW_OK ? "took it" : "declined",
		       d->tag ? d->tag : "(null)", text ? text : "(null)",
		       t ? t : "(null)", s ? s : "(null)", f ? f : "(null)");
	record_free(s);
	record_free(f);
	if (next != NULL)
		*next = t;
	else
		record_free(t);
	return ok;
}

static void
count(struct tally *c, bool ok, bool took)
{
	c->steps++;
	c->bad += !ok;
	c->flat += took;
}

/* ---- random deltas ---- */

/* A counter delta: mostly small, sometimes big enough that sums cross
 * INT_MAX, 2^53 and, through the int64 range, precision altogether. */
static int64_t
rand_count(void)
{
	switch (t_below(16)) {
	case 0:
		return 0;
	case 1:
		return (int64_t)(t_rand() >> 33);	/* up to 2^31 */
	case 2:
		return INT_MAX;
	case 3:
		return (int64_t)(t_rand() >> 11);	/* up to 2^53 */
	case 4:
		return ((int64_t)1 << 53) + 1;
	case 5:
		return (int64_t)(t_rand() >> 1);	/* up to 2^63 */
	case 6:
		return INT64_MAX;
	case 7:
		return -(int64_t)t_below(1000);
	case 8:
		return INT64_MIN;
	default:
		return (int64_t)t_below(t_below(2) ? 3 : 100000);
	}
}

static double
rand_cost(void)
{
	switch (t_below(48)) {
	case 0:
		return NAN;
	case 1:
		return INFINITY;
	case 2:
		return -INFINITY;
	case 3:
		return -0.0;
	case 4:
		return -(double)t_below(10000) / 1e6;
	case 5:
		return 1e300 * (1 + t_below(9));	/* sums overflow */
	case 6:
		return DBL_MAX;
	case 7:	/* subnormal, or 0 */
		return t_below(4) ? DBL_MIN / (1 + t_below(4)) : 0;
	case 8:	/* any mantissa at a small scale */
		return ldexp((double)(t_rand() >> 11), -53 - (int)t_below(30));
	case 9:
		return (double)(t_rand() >> 11);	/* integral, big */
	default:	/* what a request costs */
		return (double)t_below(500000) * 1e-8;
	}
}

static int64_t
rand_ms(void)
{
	switch (t_below(6)) {
	case 0:
		return -1;
	case 1:
		return (int64_t)(t_rand() >> 2);
	default:
		return (int64_t)t_below(60000);
	}
}

/* Tags that print as their bytes, and (after them) tags the flat path
 * must decline: a quote, a control byte, 300 bytes. */
static const char *const plain_tags[] = {
	NULL, "", "deepseek", "deepinfra/fp8", "novita", "requests", "tokens",
	"v", "\xc3\xa9t\xc3\xa9/fp8", "a b:c",
};
#define N_PLAIN (sizeof(plain_tags) / sizeof(plain_tags[0]))

static char long_tag[301];
static const char *const odd_tags[] = {"a\"b", "tab\there", "back\\slash",
				       long_tag};
#define N_ODD (sizeof(odd_tags) / sizeof(odd_tags[0]))

static void
rand_delta(struct stats_delta *d, bool odd)
{
	memset(d, 0, sizeof(*d));
	if (odd && t_below(4) == 0)
		d->tag = odd_tags[t_below(N_ODD)];
	else
		d->tag = plain_tags[t_below(N_PLAIN)];
	d->requests = t_below(8) ? 1 : rand_count();
	d->ok = t_below(8) ? (int64_t)t_below(2) : rand_count();
	d->e429 = t_below(4) ? 0 : rand_count();
	d->e5xx = t_below(4) ? 0 : rand_count();
	d->etimeout = t_below(4) ? 0 : rand_count();
	d->eslow = t_below(4) ? 0 : rand_count();
	d->emid = t_below(4) ? 0 : rand_count();
	d->eabort = t_below(4) ? 0 : rand_count();
	d->eother = t_below(4) ? 0 : rand_count();
	d->retries_429 = t_below(4) ? 0 : rand_count();
	d->failovers = t_below(4) ? 0 : rand_count();
	d->trips = t_below(4) ? 0 : rand_count();
	d->off_pin = t_below(4) ? 0 : rand_count();
	d->prompt_tokens = rand_count();
	d->cached_tokens = rand_count();
	d->completion_tokens = rand_count();
	d->cost_usd = rand_cost();
	d->ttfb_ms = rand_ms();
	d->total_ms = rand_ms();
}

/* A realistic delta: small counts, a cent-ish cost, 3 providers. */
static void
real_delta(struct stats_delta *d)
{
	static const char *const tags[] = {"deepseek", "deepinfra/fp8",
					   "novita", NULL};
	unsigned r = t_below(100);

	memset(d, 0, sizeof(*d));
	d->tag = tags[t_below(4)];
	d->requests = 1;
	d->ok = r < 90;
	d->e429 = r >= 90 && r < 94;
	d->e5xx = r >= 94 && r < 97;
	d->eabort = r >= 97;
	d->retries_429 = d->e429;
	d->failovers = r >= 95;
	d->prompt_tokens = 200 + (int64_t)t_below(60000);
	d->cached_tokens = d->prompt_tokens * (int64_t)t_below(100) / 100;
	d->completion_tokens = 1 + (int64_t)t_below(3000);
	d->cost_usd = (double)d->prompt_tokens * 2.7e-7 +
		      (double)d->completion_tokens * 1.1e-6;
	d->ttfb_ms = d->ok ? 150 + (int64_t)t_below(3000) : -1;
	d->total_ms = d->ok ? d->ttfb_ms + (int64_t)t_below(40000) : -1;
}

/*
 * (a) and (c): runs of random deltas from NULL, each step applied to the
 * tree's text of the step before.  With plain tags every text is one
 * orgw wrote, so the flat path must answer every step whose text holds
 * no null (below); with odd tags mixed in, only the bytes must agree.
 */
static void
test_runs(bool odd)
{
	struct stats_delta d;
	struct tally c = {0};
	char *text, *next;
	bool ok, took, has_null;
	long nulls = 0, wrong = 0;
	int run, k;

	for (run = 0; run < RUNS; run++) {
		text = NULL;
		for (k = 0; k < STEPS; k++) {
			rand_delta(&d, odd);
			ok = agree(text, &d, &took, &next);
			count(&c, ok, took);
			/* The one thing the tree writes that the flat path
			 * declines: null, for a number cJSON printed with
			 * 15 digits that reads back as inf (%1.15g of
			 * DBL_MAX passes its round-trip test). */
			has_null = text != NULL && strstr(text, "null");
			nulls += has_null;
			if (!odd && took == has_null && shown++ < SHOW_MAX)
				printf("# flat %s (tag %s): %s\n",
				       took ? "took" : "declined",
				       d.tag ? d.tag : "(null)",
				       text ? text : "(null)");
			wrong += took == has_null;
			record_free(text);
			if ((text = next) == NULL)
				break;
		}
		record_free(text);
	}
	printf("# %s tags: %ld steps, %ld on the flat path, %ld texts with "
	       "null\n",
	       odd ? "odd" : "plain", c.steps, c.flat, nulls);
	if (!odd) {
		T_ASSERT("random deltas, plain tags: flat and tree agree on "
			 "every step",
			 c.bad == 0 && c.steps == (long)RUNS * STEPS);
		T_ASSERT("random deltas, plain tags: the flat path takes "
			 "every step but those on a text with null",
			 wrong == 0 && c.flat > c.steps / 2);
	} else {
		T_ASSERT("random deltas, odd tags: flat and tree agree on "
			 "every step",
			 c.bad == 0 && c.steps == (long)RUNS * STEPS);
		T_ASSERT("random deltas, odd tags: some steps fall back",
			 c.flat > 0 && c.flat < c.steps);
	}
}

/* Builds a realistic record: n deltas over 3 providers.  Caller frees. */
static char *
real_record(int n)
{
	struct stats_delta d;
	char *text = NULL, *next;
	int k;

	for (k = 0; k < n; k++) {
		real_delta(&d);
		next = record_stats_apply_tree(text, &d);
		record_free(text);
		if ((text = next) == NULL)
			return NULL;
	}
	return text;
}

/* ---- mutated records ---- */

/* Number texts: what JSON allows, what cJSON (strtod) also takes, and
 * what it stops inside of. */
static void
rand_numtext(char *buf, size_t cap)
{
	static const char *const fixed[] = {
		"0", "-0", "00", "-00", "1.0", "1.50", "0.5", "-0.5",
		"0.0001", "0.00001", "0.00012", "0.000123456789012345",
		"1e999", "-1e999", "1e-400", "1.5e300", "1E2", "1e+2", "1e2",
		"1.", "1e", "1.2.3", "-", "--1", "-.5", "1+1", "1e5e5",
		"123456789012345", "1234567890123456",
		"12345678901234567890123", "9007199254740993",
		"-9007199254740993", "99999999999999.9", "999999999999999.9",
		"0.1", "1e15", "100000000000000", "1000000000000000",
		"2147483647", "2147483648", "-2147483649", "4.9e-324",
		"2.5e-308", "1.7976931348623157e308",
		"1.7976931348623159e308", "1.79769313486232e+308",
	};
	char *p = buf, *end = buf + cap - 1;
	unsigned i, n;

	if (t_below(3) == 0) {
		/* every fixed text fits the callers' 96 bytes */
		(void)snprintf(buf, cap, "%s",
			       fixed[t_below(sizeof(fixed) / sizeof(fixed[0]))]);
		return;
	}
	if (t_below(3) == 0) {	/* what jsonout prints for some double */
		double v = t_below(2) ? rand_cost() : (double)rand_count();
		size_t len = jsonout_number(buf, t_below(2) ? v : -v);

		buf[len] = '\0';
		return;
	}
	/* Digits, a point, digits, an exponent: each part maybe. */
	if (t_below(3) == 0)
		*p++ = '-';
	n = t_below(4) == 0 ? t_below(22) : 1 + t_below(8);
	for (i = 0; i < n && p < end; i++)
		*p++ = (char)(i == 0 && t_below(3) ? '1' + t_below(9)
						   : '0' + t_below(10));
	if (t_below(2) && p < end) {
		*p++ = '.';
		n = t_below(4) == 0 ? t_below(22) : t_below(8);
		for (i = 0; i < n && p < end; i++)
			*p++ = (char)('0' + (t_below(4) ? t_below(10) : 0));
	}
	if (t_below(6) == 0 && p + 6 < end) {
		*p++ = t_below(2) ? 'e' : 'E';
		if (t_below(2))
			*p++ = t_below(2) ? '-' : '+';
		n = t_below(5);
		for (i = 0; i < n; i++)
			*p++ = (char)('0' + t_below(10));
	}
	if (t_below(40) == 0)	/* a run too long for the stack copy */
		while (p < end && p - buf < 70)
			*p++ = (char)('0' + t_below(10));
	*p = '\0';
}

/* Replaces bytes [at, at + n) of text (len bytes, room TEXT_MAX) with s. */
static size_t
splice(char *text, size_t len, size_t at, size_t n, const char *s)
{
	size_t k = strlen(s);

	if (len - n + k >= TEXT_MAX)
		return len;
	memmove(text + at + k, text + at + n, len - at - n + 1);
	memcpy(text + at, s, k);
	return len - n + k;
}

/* Where the i-th value starting with '-' or a digit after ':' is, and how
 * long its run of number bytes; false when there are fewer. */
static bool
nth_number(const char *text, unsigned i, size_t *at, size_t *n)
{
	const char *p;

	for (p = strchr(text, ':'); p != NULL; p = strchr(p + 1, ':')) {
		if (p[1] != '-' && (p[1] < '0' || p[1] > '9'))
			continue;
		if (i-- > 0)
			continue;
		*at = (size_t)(p + 1 - text);
		*n = strspn(p + 1, "0123456789+-eE.");
		return true;
	}
	return false;
}

static unsigned
numbers_in(const char *text)
{
	size_t at, n;
	unsigned i = 0;

	while (nth_number(text, i, &at, &n))
		i++;
	return i;
}

/* Every member of the tree under o, depth first, into v (up to max). */
static size_t
members(cJSON *o, cJSON **v, size_t n, size_t max)
{
	cJSON *c;

	for (c = o->child; c != NULL && n < max; c = c->next) {
		v[n++] = c;
		if (cJSON_IsObject(c))
			n = members(c, v, n, max);
	}
	return n;
}

static cJSON *
parent_of(cJSON *root, cJSON *it)
{
	cJSON *c, *p;

	for (c = root->child; c != NULL; c = c->next) {
		if (c == it)
			return root;
		if (cJSON_IsObject(c) && (p = parent_of(c, it)) != NULL)
			return p;
	}
	return NULL;
}

/* A value with deep nesting: depth objects around a number. */
static cJSON *
deep(unsigned depth)
{
	cJSON *o = cJSON_CreateNumber(1), *w;

	while (depth-- > 0) {
		w = cJSON_CreateObject();
		cJSON_AddItemToObject(w, depth % 2 ? "prompt" : "x", o);
		o = w;
	}
	return o;
}

/* Puts n in the place of it under par, with its key (cJSON's
 * ReplaceItemViaPointer leaves the key to the caller). */
static void
replace(cJSON *par, cJSON *it, cJSON *n)
{
	size_t len;

	if (n == NULL)
		return;
	if (it->string != NULL) {
		len = strlen(it->string) + 1;
		if ((n->string = cJSON_malloc(len)) != NULL)
			memcpy(n->string, it->string, len);
	}
	if (!cJSON_ReplaceItemViaPointer(par, it, n))
		cJSON_Delete(n);
}

/*
 * Links n into par as its at-th member (at <= size).  By hand: Debian's
 * cJSON 1.7.15-1+deb12u4 refuses cJSON_InsertItemInArray() for every
 * 0 < at < size (seen here; its CVE-2023-50471 patch seems to test the
 * new item's prev, which is NULL for any new item).
 */
static void
insert_at(cJSON *par, unsigned at, cJSON *n)
{
	cJSON *before = par->child;

	if (at == 0 || before == NULL) {
		if (!cJSON_InsertItemInArray(par, 0, n))
			cJSON_Delete(n);
		return;
	}
	while (--at > 0 && before->next != NULL)
		before = before->next;
	n->prev = before;
	n->next = before->next;
	if (before->next != NULL)
		before->next->prev = n;
	else
		par->child->prev = n;	/* the first's prev is the last */
	before->next = n;
}

/* One edit of the tree: what a damaged or foreign record may hold. */
static void
mutate_tree(cJSON *root)
{
	cJSON *v[512], *it, *par, *n;
	size_t nv = members(root, v, 0, 512);

	if (nv == 0) {
		cJSON_AddNumberToObject(root, "requests", 5);
		return;
	}
	it = v[t_below((unsigned)nv)];
	par = parent_of(root, it);
	switch (t_below(12)) {
	case 0:	/* delete */
		cJSON_Delete(cJSON_DetachItemViaPointer(par, it));
		break;
	case 1:
		replace(par, it, cJSON_CreateString("7"));
		break;
	case 2:
		n = cJSON_CreateArray();
		cJSON_AddItemToArray(n, cJSON_CreateNumber(1));
		replace(par, it, n);
		break;
	case 3:
		replace(par, it, t_below(2) ? cJSON_CreateNull()
					    : cJSON_CreateBool(t_below(2)));
		break;
	case 4:	/* an unknown key, number or object, at the end */
		if (t_below(2))
			cJSON_AddNumberToObject(par, "zz", 3);
		else
			cJSON_AddItemToObject(par, "zz", deep(t_below(3)));
		break;
	case 5:	/* move to the end of its object */
		cJSON_DetachItemViaPointer(par, it);
		if (!cJSON_AddItemToArray(par, it))
			cJSON_Delete(it);
		break;
	case 6:	/* move to the front */
		cJSON_DetachItemViaPointer(par, it);
		if (!cJSON_InsertItemInArray(par, 0, it))
			cJSON_Delete(it);
		break;
	case 7:	/* the key twice, the copy anywhere */
		if ((n = cJSON_Duplicate(it, 1)) == NULL)
			break;
		if (t_below(2) && cJSON_IsNumber(n))
			cJSON_SetNumberValue(n, 12345);
		insert_at(par, t_below((unsigned)cJSON_GetArraySize(par) + 1),
			  n);
		break;
	case 8:	/* too deep, or just deep enough */
		replace(par, it, deep(1 + t_below(5)));
		break;
	case 9:	/* an object where a number was, or the other way */
		replace(par, it, cJSON_IsObject(it) ? cJSON_CreateNumber(9)
						    : cJSON_CreateObject());
		break;
	default:	/* a number cJSON can print */
		if (cJSON_IsNumber(it)) {
			static const double odd[] = {-0.0, 1.5e300, 0.1,
						     9007199254740993.0,
						     1e-7, -2.5, 1e15, 1e22};

			cJSON_SetNumberValue(it, odd[t_below(8)]);
		}
		break;
	}
}

/* Edits on the bytes: numbers in every spelling, whitespace, escapes and
 * control bytes in keys, a BOM, truncation, garbage after the end. */
static size_t
mutate_text(char *text, size_t len)
{
	char num[96];
	size_t at, n;
	unsigned nn;
	const char *q;

	switch (t_below(10)) {
	case 0:
	case 1:
	case 2:
	case 3:	/* a number respelled */
		if ((nn = numbers_in(text)) == 0)
			return len;
		if (!nth_number(text, t_below(nn), &at, &n))
			return len;
		rand_numtext(num, sizeof(num));
		return splice(text, len, at, n, num);
	case 4:	/* whitespace somewhere */
		return splice(text, len, t_below((unsigned)len + 1), 0,
			      t_below(2) ? " " : "\n\t");
	case 5:	/* a key with an escape that decodes to the same key, or
		 * to another one */
		if ((q = strstr(text, "\"r")) == NULL)
			return len;
		return splice(text, len, (size_t)(q - text) + 1, 1,
			      t_below(2) ? "\\u0072" : "\\n");
	case 6:	/* a raw control byte in a key */
		if ((q = strstr(text, "\"o")) == NULL)
			return len;
		return splice(text, len, (size_t)(q - text) + 1, 0, "\x01");
	case 7:	/* truncated */
		text[t_below((unsigned)len + 1)] = '\0';
		return strlen(text);
	case 8:	/* bytes after the end */
		return splice(text, len, len, 0,
			      t_below(2) ? "x" : t_below(2) ? " " : "}");
	default:
		return splice(text, len, 0, 0, "\xEF\xBB\xBF");
	}
}

/*
 * (b): records from realistic and random runs, edited once to a few
 * times as a tree (and printed compact, or formatted with whitespace)
 * and then as bytes; both paths must give the same bytes for a random
 * delta.  Both outcomes must occur: the flat path taking an edited
 * record (respelled numbers, moved keys, unknown keys) and declining
 * one (strings, escapes, whitespace, duplicates, depth).
 */
static void
test_mutants(void)
{
	static char text[TEXT_MAX];
	struct stats_delta d;
	struct tally c = {0};
	char *base[4], *s;
	cJSON *o;
	size_t len;
	bool ok, took;
	int i, k, edits;

	base[0] = real_record(300);
	base[1] = real_record(3);
	base[2] = real_record(1);
	rand_delta(&d, false);
	base[3] = record_stats_apply_tree(base[0], &d);
	if (base[0] == NULL || base[1] == NULL || base[2] == NULL ||
	    base[3] == NULL) {
		T_ASSERT("mutated records: bases built", false);
		goto out;
	}
	for (i = 0; i < MUTANTS; i++) {
		o = cJSON_Parse(base[t_below(4)]);
		edits = (int)t_below(3);
		for (k = 0; k < edits && o != NULL; k++)
			mutate_tree(o);
		s = o ? (t_below(8) ? cJSON_PrintUnformatted(o)
				    : cJSON_Print(o))
		      : NULL;
		cJSON_Delete(o);
		if (s == NULL)
			continue;
		len = (size_t)snprintf(text, sizeof(text), "%s", s);
		cJSON_free(s);
		if (len >= sizeof(text))
			continue;
		edits = (int)t_below(3);
		for (k = 0; k < edits; k++)
			len = mutate_text(text, len);
		if (t_below(2))
			real_delta(&d);
		else
			rand_delta(&d, t_below(4) == 0);
		ok = agree(text, &d, &took, NULL);
		count(&c, ok, took);
	}
	printf("# %ld mutated records, %ld on the flat path\n", c.steps,
	       c.flat);
	T_ASSERT("mutated records: flat and tree agree on every one",
		 c.bad == 0 && c.steps > MUTANTS / 2);
	T_ASSERT("mutated records: many on the flat path, many not",
		 c.flat > c.steps / 10 && c.steps - c.flat > c.steps / 10);
out:
	for (i = 0; i < 4; i++)
		record_free(base[i]);
}

/*
 * (b) for numbers alone: one number of a realistic record respelled, at
 * every position in turn (counters the delta bumps and ones it leaves
 * alone), many times over.  Most spellings are taken by the flat path,
 * copied or reread; the tree must agree on every one.
 */
static void
test_numbers(void)
{
	static char text[TEXT_MAX];
	struct stats_delta d;
	struct tally c = {0};
	char *base = real_record(200), num[96];
	size_t len, at, n;
	unsigned i, nn = base ? numbers_in(base) : 0;
	bool ok, took;
	int k;

	for (k = 0; k < 40; k++) {
		for (i = 0; i < nn; i++) {
			len = (size_t)snprintf(text, sizeof(text), "%s", base);
			if (len >= sizeof(text) || !nth_number(text, i, &at, &n))
				continue;
			rand_numtext(num, sizeof(num));
			splice(text, len, at, n, num);
			real_delta(&d);
			if (k % 4 == 0)
				d.tag = "deepseek";
			ok = agree(text, &d, &took, NULL);
			count(&c, ok, took);
		}
	}
	record_free(base);
	printf("# %ld respelled numbers, %ld on the flat path\n", c.steps,
	       c.flat);
	T_ASSERT("respelled numbers: flat and tree agree on every one",
		 c.bad == 0 && c.steps == 40L * nn && nn > 40);
	T_ASSERT("respelled numbers: most on the flat path",
		 c.flat > c.steps / 2 && c.flat < c.steps);
}

/* Whether the flat path takes text for d, and agrees with the tree. */
static bool
flat_takes(const char *text, const struct stats_delta *d)
{
	bool took;

	return agree(text, d, &took, NULL) && took;
}

/* Whether the flat path declines text for d, and the tree answers. */
static bool
flat_declines(const char *text, const struct stats_delta *d)
{
	bool took;

	return agree(text, d, &took, NULL) && !took;
}

/* A record with n providers "p0".."p<n-1>" (tree-built).  Caller frees. */
static char *
providers(int n)
{
	struct stats_delta d;
	char tag[16], *text = NULL, *next;
	int k;

	for (k = 0; k < n; k++) {
		real_delta(&d);
		(void)snprintf(tag, sizeof(tag), "p%d", k);	/* fits */
		d.tag = tag;
		next = record_stats_apply_tree(text, &d);
		record_free(text);
		if ((text = next) == NULL)
			break;
	}
	return text;
}

/* (c): which texts the flat path takes, and which it hands to the tree. */
static void
test_which(void)
{
	struct stats_delta d;
	char *r = real_record(1000), *p20 = providers(20),
	     *p40 = providers(40), num[80];

	real_delta(&d);
	d.tag = "deepseek";
	T_ASSERT("flat takes NULL", flat_takes(NULL, &d));
	T_ASSERT("flat takes {}", flat_takes("{}", &d));
	T_ASSERT("flat takes a record of 1000 requests",
		 r != NULL && flat_takes(r, &d));
	d.tag = "new/provider";
	T_ASSERT("flat takes it with a new provider",
		 r != NULL && flat_takes(r, &d));
	d.tag = NULL;
	T_ASSERT("flat takes it unpinned", r != NULL && flat_takes(r, &d));
	T_ASSERT("flat takes 20 providers", p20 && flat_takes(p20, &d));
	T_ASSERT("flat declines 40 providers (too many entries)",
		 p40 && flat_declines(p40, &d));
	T_ASSERT("flat takes numbers it must reread: -0, 1e999, 1.5e300, "
		 "1E2, 1.50, 007, 2^53 + 1",
		 flat_takes("{\"requests\":-0,\"ok\":1e999,\"cost_usd\":1.5e300,"
			    "\"x\":1E2,\"y\":1.50,\"z\":007,"
			    "\"tokens\":{\"prompt\":9007199254740993}}",
			    &d));
	T_ASSERT("flat takes keys in any order, unknown keys, and depth 4",
		 flat_takes("{\"zz\":{\"a\":{\"b\":{\"c\":1}}},\"ok\":2,"
			    "\"v\":7,\"by_provider\":{}}",
			    &d));
	T_ASSERT("flat declines depth 5",
		 flat_declines("{\"zz\":{\"a\":{\"b\":{\"c\":{}}}}}", &d));
	T_ASSERT("flat declines a string value",
		 flat_declines("{\"requests\":\"7\"}", &d));
	T_ASSERT("flat declines an array", flat_declines("{\"a\":[]}", &d));
	T_ASSERT("flat declines null, true, false",
		 flat_declines("{\"a\":null}", &d) &&
			 flat_declines("{\"a\":true}", &d) &&
			 flat_declines("{\"a\":false}", &d));
	T_ASSERT("flat declines an escape in a key",
		 flat_declines("{\"\\u0072equests\":5}", &d));
	T_ASSERT("flat declines a control byte in a key",
		 flat_declines("{\"a\x01\":5}", &d));
	T_ASSERT("flat declines a key given twice",
		 flat_declines("{\"requests\":5,\"ok\":1,\"requests\":6}", &d));
	T_ASSERT("flat declines whitespace",
		 flat_declines("{\"requests\": 5}", &d) &&
			 flat_declines(" {}", &d) &&
			 flat_declines("{}\n", &d));
	T_ASSERT("flat declines bytes after the end",
		 flat_declines("{}x", &d));
	T_ASSERT("flat declines a number strtod stops inside: 1e, 1.2.3, -",
		 flat_declines("{\"a\":1e}", &d) &&
			 flat_declines("{\"a\":1.2.3}", &d) &&
			 flat_declines("{\"a\":-}", &d));
	T_ASSERT("flat declines a non-object, and the empty text",
		 flat_declines("[1]", &d) && flat_declines("7", &d) &&
			 flat_declines("", &d));
	/* A 63-byte number run is copied for strtod, 64 bytes is not. */
	(void)snprintf(num, sizeof(num), "{\"a\":1.%061d}", 0);	/* 69 */
	T_ASSERT("flat takes a 63-byte number run", flat_takes(num, &d));
	(void)snprintf(num, sizeof(num), "{\"a\":1.%062d}", 0);
	T_ASSERT("flat declines a 64-byte number run",
		 flat_declines(num, &d));
	d.tag = "a\"b";
	T_ASSERT("flat declines a tag that needs an escape",
		 flat_declines(r, &d));
	d.tag = long_tag;
	T_ASSERT("flat declines a 300-byte tag", flat_declines(r, &d));
	record_free(r);
	record_free(p20);
	record_free(p40);
}

int
main(void)
{
	memset(long_tag, 'x', sizeof(long_tag) - 1);
	t_seed(0x7374617473);	/* the same inputs every run */
	test_runs(false);
	test_runs(true);
	test_mutants();
	test_numbers();
	test_which();
	return T_REPORT();
}
