/*
 * jsonin.c - cJSON_ParseWithLength() with faster numbers.
 *
 * Pure.  Accepts exactly the texts cJSON 1.7.15 (Debian 12,
 * 1.7.15-1+deb12u4) accepts through cJSON_ParseWithLength(), and builds
 * the same tree: node types, valueint (1 for true, saturated for
 * numbers), valuedouble to the bit, key and string bytes, child order
 * and the prev links (the first child's prev is the last child).  It
 * mirrors cJSON.c cJSON_ParseWithLengthOpts, skip_utf8_bom,
 * buffer_skip_whitespace, parse_value, parse_number, parse_string,
 * utf16_literal_to_utf8, parse_array and parse_object, quirks included,
 * so a record or body reads the same whichever parser a caller uses:
 *
 *  - every byte <= 0x20 is whitespace, NUL and control bytes included;
 *  - raw control bytes inside strings are kept; \u0000 writes a NUL, so
 *    the C string ends there; an invalid hex digit in \uXXXX reads as
 *    \u0000 (cJSON's parse_hex4 returns 0); a lone low surrogate or a
 *    high surrogate without a low one is refused;
 *  - the BOM EF BB BF is skipped only when the text is 5 bytes or more;
 *  - numbers are whatever strtod() takes from the run of bytes in
 *    "0123456789+-eE." that starts the number ("1.2.3" is 1.2, "1e" is
 *    1, "01" is 1); the rest of the run is left for the caller, so
 *    trailing garbage after the top-level value is ignored but inside a
 *    container it is an error.  Debian's fix for CVE-2023-26819 copies
 *    the whole run (upstream 1.7.15 stopped at 63 bytes), and so do we;
 *  - at most CJSON_NESTING_LIMIT arrays and objects are open at once.
 *
 * What differs is the work done:
 *
 *  - cJSON copies every number into a buffer and calls localeconv() and
 *    strtod().  A number whose run is an optional '-' and 1 to 15
 *    digits is below 10^15 < 2^53, so its value is exact as integer
 *    arithmetic in a double; that is what strtod returns too ("-0"
 *    included: -(double)0 is -0.0).  Everything else goes to strtod on
 *    the same run cJSON copies.  cJSON swaps '.' for the locale's
 *    decimal point first; orgw never calls setlocale (conf.c, score.c),
 *    so that point is '.' and the run is passed unchanged.
 *  - strings without escapes are copied with memcpy.
 *
 * Memory: every node, key and string comes from cJSON_malloc(), so
 * cJSON_Delete() frees the tree (and cJSON_InitHooks hooks pair up).
 * Children are linked into their parent as soon as they are allocated,
 * so on any failure one cJSON_Delete() of the root frees everything.
 * Recursion is one level per open array or object, bounded by
 * CJSON_NESTING_LIMIT like cJSON's.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "jsonin.h"

/* Number runs up to this long are copied to the stack for strtod;
 * longer ones (cJSON takes them whole since CVE-2023-26819) to the heap. */
#define JSONIN_NUMBUF_BYTES 64

/* Integers of up to 15 digits are exact in a double (10^15 < 2^53). */
#define JSONIN_FAST_DIGITS 15

struct jin {
	const unsigned char *s;
	size_t len;
	size_t pos;
	size_t depth;	/* open arrays and objects, as cJSON counts them */
};

static bool parse_value(struct jin *in, cJSON *item);

static cJSON *
new_node(void)
{
	cJSON *n = cJSON_malloc(sizeof(*n));

	if (n != NULL)
		memset(n, 0, sizeof(*n));
	return n;
}

/* cJSON.c buffer_skip_whitespace(): a run that reaches the end steps
 * back onto its last byte, which is <= 0x20 and so matches nothing a
 * caller looks for next. */
static void
skip_ws(struct jin *in)
{
	if (in->pos >= in->len)
		return;
	while (in->pos < in->len && in->s[in->pos] <= 32)
		in->pos++;
	if (in->pos == in->len)
		in->pos--;
}

static bool
is_num_byte(unsigned char c)
{
	return (c >= '0' && c <= '9') || c == '+' || c == '-' || c == 'e' ||
	       c == 'E' || c == '.';
}

static void
set_number(cJSON *item, double d)
{
	/* cJSON.c parse_number: valueint saturates. */
	item->valuedouble = d;
	if (d >= INT_MAX)
		item->valueint = INT_MAX;
	else if (d <= (double)INT_MIN)
		item->valueint = INT_MIN;
	else
		item->valueint = (int)d;
	item->type = cJSON_Number;
}

/* cJSON.c parse_number(); s[pos] is '-' or a digit. */
static bool
parse_number(struct jin *in, cJSON *item)
{
	const unsigned char *p = in->s + in->pos, *e = in->s + in->len, *q;
	char stackbuf[JSONIN_NUMBUF_BYTES], *buf, *end;
	uint64_t u = 0;
	size_t n;
	double d;
	bool neg;

	q = p;
	neg = *q == '-';
	if (neg)
		q++;
	while (q < e && *q >= '0' && *q <= '9' &&
	       q - p < JSONIN_FAST_DIGITS + (neg ? 1 : 0)) {
		u = u * 10 + (uint64_t)(*q - '0');
		q++;
	}
	if (q > p + (neg ? 1 : 0) && (q == e || !is_num_byte(*q))) {
		d = (double)u;
		set_number(item, neg ? -d : d);
		in->pos += (size_t)(q - p);
		return true;
	}

	/* The run cJSON copies, then strtod on it as cJSON does. */
	for (q = p; q < e && is_num_byte(*q); q++)
		;
	n = (size_t)(q - p);
	if (n < sizeof(stackbuf))
		buf = stackbuf;
	else if ((buf = cJSON_malloc(n + 1)) == NULL)
		return false;
	memcpy(buf, p, n);
	buf[n] = '\0';
	d = strtod(buf, &end);
	n = (size_t)(end - buf);
	if (buf != stackbuf)
		cJSON_free(buf);
	if (n == 0)
		return false;
	set_number(item, d);
	in->pos += n;
	return true;
}

/* cJSON.c parse_hex4(): 0 when any of the 4 bytes is not a hex digit. */
static unsigned
hex4(const unsigned char *p)
{
	unsigned h = 0, i, c;

	for (i = 0; i < 4; i++) {
		c = p[i];
		if (c >= '0' && c <= '9')
			c -= '0';
		else if (c >= 'A' && c <= 'F')
			c = c - 'A' + 10;
		else if (c >= 'a' && c <= 'f')
			c = c - 'a' + 10;
		else
			return 0;
		h = (h << 4) | c;
	}
	return h;
}

/* cJSON.c utf16_literal_to_utf8(): p is at "\u", end at the closing
 * quote.  Returns the escape's length (6 or 12), 0 when refused. */
static size_t
utf16_to_utf8(const unsigned char *p, const unsigned char *end,
	      unsigned char **out)
{
	unsigned long cp;
	unsigned first, second;
	size_t seq;
	unsigned char *o = *out;

	if (end - p < 6)
		return 0;
	first = hex4(p + 2);
	if (first >= 0xDC00 && first <= 0xDFFF)
		return 0;
	if (first >= 0xD800 && first <= 0xDBFF) {
		if (end - (p + 6) < 6 || p[6] != '\\' || p[7] != 'u')
			return 0;
		second = hex4(p + 8);
		if (second < 0xDC00 || second > 0xDFFF)
			return 0;
		cp = 0x10000 + (((first & 0x3FFUL) << 10) | (second & 0x3FF));
		seq = 12;
	} else {
		cp = first;
		seq = 6;
	}
	if (cp < 0x80) {
		*o++ = (unsigned char)cp;
	} else if (cp < 0x800) {
		*o++ = (unsigned char)(0xC0 | (cp >> 6));
		*o++ = (unsigned char)(0x80 | (cp & 0x3F));
	} else if (cp < 0x10000) {
		*o++ = (unsigned char)(0xE0 | (cp >> 12));
		*o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		*o++ = (unsigned char)(0x80 | (cp & 0x3F));
	} else {
		/* cp <= 0x10FFFF: a surrogate pair cannot give more. */
		*o++ = (unsigned char)(0xF0 | (cp >> 18));
		*o++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
		*o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		*o++ = (unsigned char)(0x80 | (cp & 0x3F));
	}
	*out = o;
	return seq;
}

/*
 * cJSON.c parse_string(): the text at pos starts with '"'.  First find
 * the closing quote, stepping over the byte after each backslash (a
 * backslash as the last byte is refused); then decode.  The decoder
 * steps over escapes by their own length, which for a \u with a
 * backslash among its 4 "digits" is not the scanner's pairing; cJSON
 * lives with that, and so do we.  Returns the cJSON_malloc'd bytes, or
 * NULL when refused or out of memory.
 */
static char *
parse_string(struct jin *in)
{
	const unsigned char *start = in->s + in->pos + 1, *e = in->s + in->len;
	const unsigned char *q, *end;
	unsigned char *out, *o;
	size_t skipped = 0, seq;

	for (q = start; q < e && *q != '"'; q++) {
		if (*q == '\\') {
			if (q + 1 >= e)
				return NULL;
			skipped++;
			q++;
		}
	}
	if (q >= e)
		return NULL;
	end = q;
	/* cJSON's bound: (end - opening quote) - skipped, plus the NUL. */
	out = cJSON_malloc((size_t)(end - start) + 1 - skipped + 1);
	if (out == NULL)
		return NULL;
	if (skipped == 0) {
		memcpy(out, start, (size_t)(end - start));
		out[end - start] = '\0';
		in->pos = (size_t)(end - in->s) + 1;
		return (char *)out;
	}
	o = out;
	q = start;
	while (q < end) {
		const unsigned char *run = q;

		while (q < end && *q != '\\')
			q++;
		memcpy(o, run, (size_t)(q - run));
		o += q - run;
		if (q >= end)
			break;
		seq = 2;
		switch (q[1]) {
		case 'b':
			*o++ = '\b';
			break;
		case 'f':
			*o++ = '\f';
			break;
		case 'n':
			*o++ = '\n';
			break;
		case 'r':
			*o++ = '\r';
			break;
		case 't':
			*o++ = '\t';
			break;
		case '"':
		case '\\':
		case '/':
			*o++ = q[1];
			break;
		case 'u':
			if ((seq = utf16_to_utf8(q, end, &o)) == 0)
				goto fail;
			break;
		default:
			goto fail;
		}
		q += seq;
	}
	*o = '\0';
	in->pos = (size_t)(end - in->s) + 1;
	return (char *)out;
fail:
	cJSON_free(out);
	return NULL;
}

/*
 * cJSON.c parse_array() and parse_object(), one function: pos is at '['
 * or '{'.  Children are linked into item as they are made, so the
 * caller's cJSON_Delete() of the root frees them on failure.
 */
static bool
parse_container(struct jin *in, cJSON *item, bool obj)
{
	cJSON *last = NULL, *c;
	char close = obj ? '}' : ']';

	if (in->depth >= CJSON_NESTING_LIMIT)
		return false;
	in->depth++;
	item->type = obj ? cJSON_Object : cJSON_Array;
	in->pos++;
	skip_ws(in);
	if (in->pos < in->len && in->s[in->pos] == close)
		goto success;
	if (in->pos >= in->len)
		return false;
	for (;;) {
		if ((c = new_node()) == NULL)
			return false;
		if (last == NULL) {
			item->child = c;
		} else {
			last->next = c;
			c->prev = last;
		}
		last = c;
		skip_ws(in);
		if (obj) {
			/* cJSON reads s[pos] here unchecked; at the end
			 * it would refuse anyway. */
			if (in->pos >= in->len || in->s[in->pos] != '"' ||
			    (c->string = parse_string(in)) == NULL)
				return false;
			skip_ws(in);
			if (in->pos >= in->len || in->s[in->pos] != ':')
				return false;
			in->pos++;
			skip_ws(in);
		}
		if (!parse_value(in, c))
			return false;
		skip_ws(in);
		if (in->pos < in->len && in->s[in->pos] == ',') {
			in->pos++;
			continue;
		}
		break;
	}
	if (in->pos >= in->len || in->s[in->pos] != close)
		return false;
success:
	in->depth--;
	if (item->child != NULL)
		item->child->prev = last;
	in->pos++;
	return true;
}

/* cJSON.c parse_value().  cJSON tries the three literals before looking
 * at the first byte; they start with bytes no other branch takes, so
 * switching on that byte first accepts the same texts. */
static bool
parse_value(struct jin *in, cJSON *item)
{
	size_t left = in->len - in->pos;
	const unsigned char *p = in->s + in->pos;

	if (left == 0)
		return false;
	switch (*p) {
	case 'n':
		if (left < 4 || memcmp(p, "null", 4) != 0)
			return false;
		item->type = cJSON_NULL;
		in->pos += 4;
		return true;
	case 'f':
		if (left < 5 || memcmp(p, "false", 5) != 0)
			return false;
		item->type = cJSON_False;
		in->pos += 5;
		return true;
	case 't':
		if (left < 4 || memcmp(p, "true", 4) != 0)
			return false;
		item->type = cJSON_True;
		item->valueint = 1;
		in->pos += 4;
		return true;
	case '"':
		if ((item->valuestring = parse_string(in)) == NULL)
			return false;
		item->type = cJSON_String;
		return true;
	case '-':
	case '0':
	case '1':
	case '2':
	case '3':
	case '4':
	case '5':
	case '6':
	case '7':
	case '8':
	case '9':
		return parse_number(in, item);
	case '[':
		return parse_container(in, item, false);
	case '{':
		return parse_container(in, item, true);
	default:
		return false;
	}
}

cJSON *
jsonin_parse(const char *text, size_t len)
{
	struct jin in = {(const unsigned char *)text, len, 0, 0};
	cJSON *root;

	if (text == NULL || len == 0)
		return NULL;
	if ((root = new_node()) == NULL)
		return NULL;
	/* cJSON.c skip_utf8_bom(): only when index 4 exists. */
	if (len > 4 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
		in.pos = 3;
	skip_ws(&in);
	if (!parse_value(&in, root)) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}
