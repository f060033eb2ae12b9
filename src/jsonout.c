/*
 * jsonout.c - cJSON_PrintUnformatted() with faster numbers.
 *
 * Pure.  Prints exactly the bytes cJSON 1.7.15 prints unformatted
 * (cJSON.c print, print_value, print_number, print_string_ptr,
 * print_array, print_object), so a stored value or a forwarded body does
 * not change by a byte when a caller switches.  What differs is the work
 * done for them:
 *
 *  - cJSON prints every number with "%1.15g", reads it back with sscanf
 *    and, if compare_double() says the value did not survive, prints it
 *    again with "%1.17g".  An integral value with |v| < 1e15 (every
 *    counter, timestamp and token total orgw stores) always survives,
 *    and "%1.15g" gives its plain decimal digits, so we write those
 *    digits by hand.  Negative zero ("%1.15g" says "-0") and everything
 *    else take cJSON's own path: NaN and infinities print as null.
 *  - cJSON scans each string twice (count the escapes, then copy byte by
 *    byte); we copy runs of plain bytes with memcpy.
 *
 * jsonout_number() is the number printer on its own, for codecs that
 * print without a tree (record_flat.c's STATS codec), so one piece of code
 * decides how every number orgw stores looks.
 *
 * Memory: one buffer from cJSON_malloc(), grown by doubling with
 * allocate, copy, free (cJSON exports no realloc, and the caller frees
 * the text with cJSON_free(), so hooks installed with cJSON_InitHooks
 * would still pair up).  The text is not trimmed to size: at most half
 * of it is slack, and it is short-lived.  On failure the buffer is freed
 * and NULL returned.
 *
 * Like cJSON, printing recurses once per nesting level; cJSON limits
 * nesting only when parsing (CJSON_NESTING_LIMIT).
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "orgw.h"
#include "jsonout.h"

/*
 * cJSON's ensure() never grows its buffer past INT_MAX bytes and asks
 * for room for a NUL after each write, so its print fails exactly when
 * the text would be longer than INT_MAX - 2 bytes.  We refuse the same.
 */
#define JSONOUT_MAX_BYTES ((size_t)INT_MAX - 2)

/* A STATS record with three providers (about 800 bytes) fits. */
#define JSONOUT_FIRST_BYTES 1024

struct jout {
	char *p;	/* cJSON_malloc'd, cap bytes */
	size_t len;	/* bytes written; len < cap: room for the NUL */
	size_t cap;
};

/* Makes room for n more bytes plus the final NUL; false when that
 * passes JSONOUT_MAX_BYTES or allocation fails (o unchanged). */
static bool
jout_grow(struct jout *o, size_t n)
{
	size_t cap;
	char *p;

	if (n > JSONOUT_MAX_BYTES - o->len)
		return false;
	/* len + n + 1 <= INT_MAX - 1, so doubling cannot overflow. */
	cap = o->cap;
	while (cap < o->len + n + 1)
		cap *= 2;
	if (cap > JSONOUT_MAX_BYTES + 1)
		cap = JSONOUT_MAX_BYTES + 1;
	if ((p = cJSON_malloc(cap)) == NULL)
		return false;
	memcpy(p, o->p, o->len);
	cJSON_free(o->p);
	o->p = p;
	o->cap = cap;
	return true;
}

static bool
jout_put(struct jout *o, const void *s, size_t n)
{
	if (n >= o->cap - o->len && !jout_grow(o, n))
		return false;
	memcpy(o->p + o->len, s, n);
	o->len += n;
	return true;
}

/* cJSON.c compare_double(), verbatim in effect: the round-trip test for
 * "%1.15g" is "equal within DBL_EPSILON", not "equal". */
static bool
same_double(double a, double b)
{
	double max = fabs(a) > fabs(b) ? fabs(a) : fabs(b);

	return fabs(a - b) <= max * DBL_EPSILON;
}

/* i in decimal at buf (room for 20 bytes); returns the length.  The
 * digits are counted first so they go straight to buf. */
static size_t
int_digits(char *buf, int64_t i)
{
	uint64_t u = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i, t;
	size_t n = i < 0 ? 2 : 1, k;

	for (t = u; t >= 10; t /= 10)
		n++;
	k = n;
	do {
		buf[--k] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (i < 0)
		buf[0] = '-';
	return n;
}

/*
 * "%1.15g" for the non-integral numbers that are short decimals (money,
 * rates: 0.000123), without snprintf and the strtod of cJSON's round
 * trip: the bytes at buf and their length, or 0 to take the long way.
 *
 * If some m < 10^15 gives m / 10^k == |d| exactly (m and 10^k are exact
 * doubles and the division is correctly rounded, so that is what strtod
 * reads from the decimal m * 10^-k), that decimal is the one "%1.15g"
 * prints: a 15-digit decimal reading back as d lies within half an ulp
 * of it, and 15-digit decimals are more than four ulps apart, so it is
 * the nearest.  It reads back as d, so cJSON keeps it (no "%1.17g").
 * Only for 1e-4 <= |d| < 1e15, where "%g" prints no exponent.
 */
static size_t
short_decimal(char *buf, double d)
{
	static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6,
				     1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13,
				     1e14, 1e15, 1e16, 1e17, 1e18, 1e19};
	double a = fabs(d), m;
	uint64_t mi, scale, ip, fp;
	size_t n = 0, k, f;
	char digits[20];

	if (!(a >= 1e-4 && a < 1e15))
		return 0;
	for (k = 1; k < sizeof(p10) / sizeof(p10[0]); k++) {
		if ((m = a * p10[k]) >= 1e15)
			return 0;
		mi = (uint64_t)(m + 0.5);
		if ((double)mi / p10[k] == a)
			break;
	}
	if (k == sizeof(p10) / sizeof(p10[0]))
		return 0;
	scale = (uint64_t)p10[k];
	ip = mi / scale;
	fp = mi % scale;
	if (fp == 0)
		return 0;	/* an integer: not this path's (cannot be) */
	if (d < 0)
		buf[n++] = '-';
	n += int_digits(buf + n, (int64_t)ip);
	buf[n++] = '.';
	/* The smallest k leaves no trailing zero ("%g" strips them). */
	for (f = k; f > 0; f--, fp /= 10)
		digits[f - 1] = (char)('0' + fp % 10);
	memcpy(buf + n, digits, k);
	return n + k;
}

/* cJSON.c print_number(). */
size_t
jsonout_number(char *buf, double d)
{
	char *end;
	int64_t i;
	double back;
	int n, k;

	if (isnan(d) || isinf(d)) {
		memcpy(buf, "null", 4);
		return 4;
	}
	if (d > -1e15 && d < 1e15) {
		i = (int64_t)d;	/* defined: |d| < 1e15 < 2^63 */
		if ((double)i == d && !(i == 0 && signbit(d)))
			return int_digits(buf, i);
	}
	if ((n = (int)short_decimal(buf, d)) > 0)
		return (size_t)n;
	n = snprintf(buf, JSONOUT_NUMBER_BYTES, "%1.15g", d);
	if (n > 0 && n < JSONOUT_NUMBER_BYTES) {
		back = strtod(buf, &end);	/* what cJSON's "%lg" reads */
		if (end == buf || !same_double(back, d))
			n = snprintf(buf, JSONOUT_NUMBER_BYTES, "%1.17g", d);
	}
	if (n <= 0 || n >= JSONOUT_NUMBER_BYTES)
		return 0;
	/*
	 * cJSON swaps the locale's decimal point for '.'.  orgw never calls
	 * setlocale (conf.c, score.c), so this is the C locale's '.'; any
	 * byte that is not a digit, sign or exponent mark is the point,
	 * which also covers a one-byte point of any other locale.
	 */
	for (k = 0; k < n; k++)
		if ((buf[k] < '0' || buf[k] > '9') && buf[k] != '-' &&
		    buf[k] != '+' && buf[k] != 'e')
			buf[k] = '.';
	return (size_t)n;
}

static bool
put_number(struct jout *o, double d)
{
	char nb[JSONOUT_NUMBER_BYTES];
	size_t n;

	/* Straight into the text when it has room, else through nb. */
	if (o->cap - o->len > JSONOUT_NUMBER_BYTES) {
		if ((n = jsonout_number(o->p + o->len, d)) == 0)
			return false;
		o->len += n;
		return true;
	}
	n = jsonout_number(nb, d);
	return n != 0 && jout_put(o, nb, n);
}

/* The escape for byte c, which is < 0x20, '"' or '\\': cJSON.c
 * print_string_ptr uses the short forms, else \u00xx in lower case. */
static bool
put_escape(struct jout *o, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf]};

	switch (c) {
	case '"':
	case '\\':
		e[1] = (char)c;
		return jout_put(o, e, 2);
	case '\b':
		e[1] = 'b';
		return jout_put(o, e, 2);
	case '\f':
		e[1] = 'f';
		return jout_put(o, e, 2);
	case '\n':
		e[1] = 'n';
		return jout_put(o, e, 2);
	case '\r':
		e[1] = 'r';
		return jout_put(o, e, 2);
	case '\t':
		e[1] = 't';
		return jout_put(o, e, 2);
	default:
		return jout_put(o, e, 6);
	}
}

/* cJSON.c print_string_ptr(): NULL prints as "", bytes >= 0x80 and DEL
 * pass through unchanged (cJSON does not check UTF-8). */
static bool
put_string(struct jout *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)s, *run;

	if (s == NULL)
		return jout_put(o, "\"\"", 2);
	if (!jout_put(o, "\"", 1))
		return false;
	for (;;) {
		run = p;
		while (*p >= 0x20 && *p != '"' && *p != '\\')
			p++;
		if (p != run && !jout_put(o, run, (size_t)(p - run)))
			return false;
		if (*p == '\0')
			break;
		if (!put_escape(o, *p++))
			return false;
	}
	return jout_put(o, "\"", 1);
}

/* cJSON.c print_value(), print_array(), print_object().  The type is
 * masked with 0xFF like cJSON's, so cJSON_IsReference and
 * cJSON_StringIsConst print as the plain type; anything but exactly
 * one type bit is refused. */
static bool
put_value(struct jout *o, const cJSON *it)
{
	const cJSON *c;

	switch (it->type & 0xFF) {
	case cJSON_NULL:
		return jout_put(o, "null", 4);
	case cJSON_False:
		return jout_put(o, "false", 5);
	case cJSON_True:
		return jout_put(o, "true", 4);
	case cJSON_Number:
		return put_number(o, it->valuedouble);
	case cJSON_Raw:
		return it->valuestring != NULL &&
		       jout_put(o, it->valuestring, strlen(it->valuestring));
	case cJSON_String:
		return put_string(o, it->valuestring);
	case cJSON_Array:
		if (!jout_put(o, "[", 1))
			return false;
		for (c = it->child; c != NULL; c = c->next)
			if ((c != it->child && !jout_put(o, ",", 1)) ||
			    !put_value(o, c))
				return false;
		return jout_put(o, "]", 1);
	case cJSON_Object:
		if (!jout_put(o, "{", 1))
			return false;
		for (c = it->child; c != NULL; c = c->next)
			if ((c != it->child && !jout_put(o, ",", 1)) ||
			    !put_string(o, c->string) ||
			    !jout_put(o, ":", 1) || !put_value(o, c))
				return false;
		return jout_put(o, "}", 1);
	default:
		return false;
	}
}

char *
jsonout_print(const cJSON *item)
{
	struct jout o = {NULL, 0, JSONOUT_FIRST_BYTES};

	if (item == NULL)
		return NULL;
	if ((o.p = cJSON_malloc(o.cap)) == NULL)
		return NULL;
	if (!put_value(&o, item)) {
		cJSON_free(o.p);
		return NULL;
	}
	o.p[o.len] = '\0';
	return o.p;
}
