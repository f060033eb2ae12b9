/*
 * jsonin.c - cJSON_ParseWithLength() with faster numbers, and a variant
 * that builds only the root members a caller reads, some of them shallow.
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
 *  - a number is the longest prefix strtod() takes of the run of bytes
 *    in "0123456789+-eE." that starts it ("1.2.3" is 1.2, "1e" is 1,
 *    "01" is 1); the rest of the run is left for the caller, so
 *    trailing garbage after the top-level value is ignored but inside a
 *    container it is an error.  Debian's fix for CVE-2023-26819 hands
 *    strtod the whole run (upstream 1.7.15 stopped at 63 bytes), so no
 *    length limit applies;
 *  - at most CJSON_NESTING_LIMIT arrays and objects are open at once;
 *  - with require_null_terminated, the bytes after the value must be
 *    whitespace ending in a NUL (cJSON_ParseWithLengthOpts runs
 *    buffer_skip_whitespace, which stops on the last byte, and checks
 *    that byte).
 *
 * What differs is the work done:
 *
 *  - cJSON copies every number run into a buffer and calls localeconv()
 *    and strtod().  A number whose run is an optional '-' and 1 to 15
 *    digits is below 10^15 < 2^53, so its value is exact as integer
 *    arithmetic in a double; that is what strtod returns too ("-0"
 *    included: -(double)0 is -0.0).  For any other run, num_len() finds
 *    the prefix strtod takes (C11 7.22.1.3; the run holds no letters
 *    but e and E, so only the decimal form can match), and strtod reads
 *    the value from a copy of that prefix.  cJSON swaps '.' for the
 *    locale's decimal point first; orgw never calls setlocale (conf.c,
 *    score.c), so that point is '.' and the bytes are passed unchanged.
 *  - strings are scanned and decoded with memchr(); strings without
 *    escapes are copied with memcpy.
 *  - jsonin_parse_top() with a keep list builds only the root object's
 *    members whose key is listed.  The rest go through the very same
 *    functions with no node to fill (item == NULL, out == NULL): every
 *    check runs and only the allocating and storing is left out, so
 *    building and skipping cannot disagree on what is valid.  A member
 *    listed in shallow gets its node and key, and an array or object
 *    value is then skipped that same way (parse_shallow()), leaving the
 *    node typed but childless.
 *
 * Memory: every node, key and string comes from cJSON_malloc(), so
 * cJSON_Delete() frees the tree (and cJSON_InitHooks hooks pair up).
 * Children are linked into their parent as soon as they are allocated,
 * so on any failure one cJSON_Delete() of the root frees everything.
 * Skipping allocates nothing, but for a root key with an escape that is
 * JSONIN_KEYBUF_BYTES or longer, decoded to the heap for the comparison
 * (a shallow member: its node and key only).
 * Recursion is one level per open array or object, bounded by
 * CJSON_NESTING_LIMIT like cJSON's, whether building or skipping.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "jsonin.h"

/* Number prefixes up to this long are copied to the stack for strtod;
 * longer ones (cJSON takes them whole since CVE-2023-26819) to the heap. */
#define JSONIN_NUMBUF_BYTES 64

/* Integers of up to 15 digits are exact in a double (10^15 < 2^53). */
#define JSONIN_FAST_DIGITS 15

/* A root key with an escape is decoded here to be compared with the
 * keep and shallow lists; a longer one (rare: keys are short) goes to
 * the heap.  jsonin.h quotes this number. */
#define JSONIN_KEYBUF_BYTES 128

struct jin {
	const unsigned char *s;
	size_t len;
	size_t pos;
	size_t depth; /* open arrays and objects, as cJSON counts them */
	const char *const *keep; /* root members to build; NULL: all */
	const char *const *shallow; /* root members built without children */
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
 * caller looks for next (but a NUL, which require_end looks for). */
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
is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static bool
is_num_byte(unsigned char c)
{
	return is_digit(c) || c == '+' || c == '-' || c == 'e' || c == 'E' ||
	       c == '.';
}

static const unsigned char *
skip_digits(const unsigned char *q, const unsigned char *e)
{
	while (q < e && is_digit(*q))
		q++;
	return q;
}

/*
 * How many bytes of p..e strtod() takes when handed the run of number
 * bytes that starts at p (0: none, cJSON refuses).  C11 7.22.1.3 in the
 * "C" locale: an optional sign, a non-empty digit sequence with an
 * optional '.', then an optional exponent that counts only when it has
 * a digit ("1e+" takes "1").  Hex, "inf" and "nan" need letters a run
 * never holds.  Everything matched is a number byte, so the prefix never
 * leaves the run.
 */
static size_t
num_len(const unsigned char *p, const unsigned char *e)
{
	const unsigned char *q = p, *m, *x;
	bool digits;

	if (q < e && (*q == '+' || *q == '-'))
		q++;
	m = q;
	q = skip_digits(q, e);
	digits = q > m;
	if (q < e && *q == '.') {
		m = ++q;
		q = skip_digits(q, e);
		digits = digits || q > m;
	}
	if (!digits)
		return 0;
	if (q < e && (*q == 'e' || *q == 'E')) {
		x = q + 1;
		if (x < e && (*x == '+' || *x == '-'))
			x++;
		if (x < e && is_digit(*x))
			q = skip_digits(x, e);
	}
	return (size_t)(q - p);
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

/* strtod() on a copy of the n bytes at p, which num_len() found it
 * takes whole.  false when out of memory. */
static bool
read_double(const unsigned char *p, size_t n, double *d)
{
	char stackbuf[JSONIN_NUMBUF_BYTES], *buf;

	if (n < sizeof(stackbuf))
		buf = stackbuf;
	else if ((buf = cJSON_malloc(n + 1)) == NULL)
		return false;
	memcpy(buf, p, n);
	buf[n] = '\0';
	*d = strtod(buf, NULL);
	if (buf != stackbuf)
		cJSON_free(buf);
	return true;
}

/* cJSON.c parse_number(); s[pos] is '-' or a digit.  item NULL: check
 * and step over the number only. */
static bool
parse_number(struct jin *in, cJSON *item)
{
	const unsigned char *p = in->s + in->pos, *e = in->s + in->len, *q;
	uint64_t u = 0;
	size_t n;
	double d;
	bool neg;

	q = p;
	neg = *q == '-';
	if (neg)
		q++;
	while (q < e && is_digit(*q) &&
	       q - p < JSONIN_FAST_DIGITS + (neg ? 1 : 0)) {
		u = u * 10 + (uint64_t)(*q - '0');
		q++;
	}
	if (q > p + (neg ? 1 : 0) && (q == e || !is_num_byte(*q))) {
		/* The whole run, all of it taken by strtod. */
		if (item != NULL) {
			d = (double)u;
			set_number(item, neg ? -d : d);
		}
		in->pos += (size_t)(q - p);
		return true;
	}
	if ((n = num_len(p, e)) == 0)
		return false;
	if (item != NULL) {
		if (!read_double(p, n, &d))
			return false;
		set_number(item, d);
	}
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

/* cJSON.c utf16_literal_to_utf8(), reading half: p is at "\u", end at
 * the closing quote.  Puts the code point in *cp and returns the
 * escape's length (6 or 12), 0 when refused. */
static size_t
utf16_literal(const unsigned char *p, const unsigned char *end,
              unsigned long *cp)
{
	unsigned first, second;

	if (end - p < 6)
		return 0;
	first = hex4(p + 2);
	if (first >= 0xDC00 && first <= 0xDFFF)
		return 0;
	if (first < 0xD800 || first > 0xDBFF) {
		*cp = first;
		return 6;
	}
	if (end - (p + 6) < 6 || p[6] != '\\' || p[7] != 'u')
		return 0;
	second = hex4(p + 8);
	if (second < 0xDC00 || second > 0xDFFF)
		return 0;
	*cp = 0x10000 + (((first & 0x3FFUL) << 10) | (second & 0x3FF));
	return 12;
}

/* cJSON.c utf16_literal_to_utf8(), writing half: cp (<= 0x10FFFF, all
 * a surrogate pair can give) as 1 to 4 UTF-8 bytes at o. */
static unsigned char *
put_utf8(unsigned char *o, unsigned long cp)
{
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
		*o++ = (unsigned char)(0xF0 | (cp >> 18));
		*o++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
		*o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		*o++ = (unsigned char)(0x80 | (cp & 0x3F));
	}
	return o;
}

/* The escape at p (a backslash before end): its code point in *cp and
 * its length, 0 when cJSON refuses it.  p[1] may be the closing quote
 * itself (see decode()); it is in the text, and it is refused unless
 * the escape is \" anyway. */
static size_t
escape(const unsigned char *p, const unsigned char *end, unsigned long *cp)
{
	switch (p[1]) {
	case 'b':
		*cp = '\b';
		return 2;
	case 'f':
		*cp = '\f';
		return 2;
	case 'n':
		*cp = '\n';
		return 2;
	case 'r':
		*cp = '\r';
		return 2;
	case 't':
		*cp = '\t';
		return 2;
	case '"':
	case '\\':
	case '/':
		*cp = p[1];
		return 2;
	case 'u':
		return utf16_literal(p, end, cp);
	default:
		return 0;
	}
}

/*
 * cJSON.c parse_string(), first loop: the closing quote of the string
 * whose contents start at start, or NULL (a backslash as the last byte
 * included).  cJSON steps over the byte after each backslash; a byte
 * that is not a backslash always ends such a pairing, so a quote is
 * escaped exactly when an odd run of backslashes comes right before it.
 * Each backslash is counted for one quote at most: linear.
 */
static const unsigned char *
string_end(const unsigned char *start, const unsigned char *e)
{
	const unsigned char *q = start, *b;

	while ((q = memchr(q, '"', (size_t)(e - q))) != NULL) {
		for (b = q; b > start && b[-1] == '\\'; b--)
			;
		if ((q - b) % 2 == 0)
			return q;
		q++;
	}
	return NULL;
}

/*
 * cJSON.c parse_string(), second loop: decodes q..end (end the closing
 * quote) into out and ends it with a NUL; out NULL only checks.  false
 * when an escape is refused.  The decoder steps over escapes by their
 * own length, which for a \u with a backslash among its 4 "digits" is
 * not string_end()'s pairing, and may read the closing quote as the
 * second byte of an escape; cJSON lives with that, and so do we.
 */
static bool
decode(const unsigned char *q, const unsigned char *end, unsigned char *out)
{
	const unsigned char *bs;
	unsigned long cp;
	size_t seq;

	while (q < end && (bs = memchr(q, '\\', (size_t)(end - q))) != NULL) {
		if ((seq = escape(bs, end, &cp)) == 0)
			return false;
		if (out != NULL) {
			memcpy(out, q, (size_t)(bs - q));
			out = put_utf8(out + (bs - q), cp);
		}
		q = bs + seq;
	}
	if (out != NULL) {
		if (q < end) {
			memcpy(out, q, (size_t)(end - q));
			out += end - q;
		}
		*out = '\0';
	}
	return true;
}

/*
 * cJSON.c parse_string(): the text at pos starts with '"'.  With out, the
 * decoded bytes go to a cJSON_malloc'd *out (escapes only shrink, so the
 * raw length bounds them); out NULL only checks.  false when refused or
 * out of memory (*out is then NULL).
 */
static bool
parse_string(struct jin *in, char **out)
{
	const unsigned char *start = in->s + in->pos + 1, *e = in->s + in->len;
	const unsigned char *end;
	unsigned char *buf = NULL;

	if ((end = string_end(start, e)) == NULL)
		return false;
	if (out != NULL &&
	    (buf = cJSON_malloc((size_t)(end - start) + 1)) == NULL)
		return false;
	if (!decode(start, end, buf)) {
		if (buf != NULL)
			cJSON_free(buf);
		return false;
	}
	if (out != NULL)
		*out = (char *)buf;
	in->pos = (size_t)(end - in->s) + 1;
	return true;
}

/* The n bytes at name (a C string's length; name may hold no NUL) equal
 * one of the NULL-terminated list. */
static bool
listed(const char *const *list, const unsigned char *name, size_t n)
{
	/* (*k)[n] is read only when *k has n bytes before its NUL. */
	for (; *list != NULL; list++)
		if (strncmp(*list, (const char *)name, n) == 0 &&
		    (*list)[n] == '\0')
			return true;
	return false;
}

/*
 * How the root member whose key starts at s[pos] is to be built: its key,
 * as the C string the tree would hold (up to a raw NUL or a \u0000), is
 * looked up in in->shallow (*shallow: built without children) and, when
 * not there, in in->keep (a NULL list takes every key); *build when
 * either takes it.  pos does not move.  A key cJSON would refuse reads
 * as neither; parse_string() refuses it next.  false only when out of
 * memory.
 */
static bool
key_class(const struct jin *in, bool *build, bool *shallow)
{
	const unsigned char *start = in->s + in->pos + 1, *e = in->s + in->len;
	const unsigned char *end, *name = start, *nul;
	unsigned char stackbuf[JSONIN_KEYBUF_BYTES], *buf = NULL;
	size_t n;

	*build = *shallow = false;
	if ((end = string_end(start, e)) == NULL)
		return true;
	n = (size_t)(end - start);
	if (memchr(start, '\\', n) != NULL) {
		if (n < sizeof(stackbuf))
			buf = stackbuf;
		else if ((buf = cJSON_malloc(n + 1)) == NULL)
			return false;
		if (decode(start, end, buf)) {
			name = buf;
			n = strlen((const char *)buf);
		} else {
			name = NULL;
		}
	} else if ((nul = memchr(start, '\0', n)) != NULL) {
		n = (size_t)(nul - start);
	}
	if (name != NULL) {
		*shallow = in->shallow != NULL && listed(in->shallow, name, n);
		*build = *shallow || in->keep == NULL ||
			 listed(in->keep, name, n);
	}
	if (buf != NULL && buf != stackbuf)
		cJSON_free(buf);
	return true;
}

/*
 * A shallow root member's value at pos into item: an array or object is
 * checked and stepped over by the same code as a skipped member (item
 * NULL), then item gets its type and no children; any other value is
 * built as parse_value() builds it.
 */
static bool
parse_shallow(struct jin *in, cJSON *item)
{
	unsigned char c = in->pos < in->len ? in->s[in->pos] : 0;

	if (c != '[' && c != '{')
		return parse_value(in, item);
	if (!parse_value(in, NULL))
		return false;
	item->type = c == '{' ? cJSON_Object : cJSON_Array;
	return true;
}

/*
 * cJSON.c parse_array() and parse_object(), one function: pos is at '['
 * or '{'.  Children are linked into item as they are made, so the
 * caller's cJSON_Delete() of the root frees them on failure.  item NULL
 * checks and steps over the container only; so does a root object's
 * member that key_class() does not build, and the value of one it builds
 * shallow (parse_shallow()).
 */
static bool
parse_container(struct jin *in, cJSON *item, bool obj)
{
	cJSON *last = NULL, *c;
	unsigned char close = obj ? '}' : ']';
	bool filter = obj && item != NULL && in->depth == 0 &&
		      (in->keep != NULL || in->shallow != NULL);
	bool build, shallow = false;

	if (in->depth >= CJSON_NESTING_LIMIT)
		return false;
	in->depth++;
	if (item != NULL)
		item->type = obj ? cJSON_Object : cJSON_Array;
	in->pos++;
	skip_ws(in);
	if (in->pos < in->len && in->s[in->pos] == close)
		goto success;
	if (in->pos >= in->len)
		return false;
	for (;;) {
		skip_ws(in);
		build = item != NULL;
		/* cJSON reads s[pos] here unchecked; at the end it would
		 * refuse anyway. */
		if (obj && (in->pos >= in->len || in->s[in->pos] != '"'))
			return false;
		if (filter && !key_class(in, &build, &shallow))
			return false;
		c = NULL;
		if (build) {
			if ((c = new_node()) == NULL)
				return false;
			if (last == NULL) {
				item->child = c;
			} else {
				last->next = c;
				c->prev = last;
			}
			last = c;
		}
		if (obj) {
			if (!parse_string(in, c != NULL ? &c->string : NULL))
				return false;
			skip_ws(in);
			if (in->pos >= in->len || in->s[in->pos] != ':')
				return false;
			in->pos++;
			skip_ws(in);
		}
		if (!(shallow && c != NULL ? parse_shallow(in, c) :
					     parse_value(in, c)))
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
	if (item != NULL && item->child != NULL)
		item->child->prev = last;
	in->pos++;
	return true;
}

/* cJSON.c literal branches of parse_value(): the n bytes of word at pos. */
static bool
literal(struct jin *in, const char *word, size_t n)
{
	if (in->len - in->pos < n || memcmp(in->s + in->pos, word, n) != 0)
		return false;
	in->pos += n;
	return true;
}

/* cJSON.c parse_value().  cJSON tries the three literals before looking
 * at the first byte; they start with bytes no other branch takes, so
 * switching on that byte first accepts the same texts.  item NULL: check
 * and step over the value only. */
static bool
parse_value(struct jin *in, cJSON *item)
{
	if (in->pos >= in->len)
		return false;
	switch (in->s[in->pos]) {
	case 'n':
		if (!literal(in, "null", 4))
			return false;
		if (item != NULL)
			item->type = cJSON_NULL;
		return true;
	case 'f':
		if (!literal(in, "false", 5))
			return false;
		if (item != NULL)
			item->type = cJSON_False;
		return true;
	case 't':
		if (!literal(in, "true", 4))
			return false;
		if (item != NULL) {
			item->type = cJSON_True;
			item->valueint = 1;
		}
		return true;
	case '"':
		if (!parse_string(in, item != NULL ? &item->valuestring : NULL))
			return false;
		if (item != NULL)
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
jsonin_parse_top(const char *text, size_t len, const char *const *keep,
                 const char *const *shallow, bool require_end)
{
	struct jin in = {(const unsigned char *)text, len, 0, 0, keep, shallow};
	cJSON *root;

	if (text == NULL || len == 0)
		return NULL;
	if ((root = new_node()) == NULL)
		return NULL;
	/* cJSON.c skip_utf8_bom(): only when index 4 exists. */
	if (len > 4 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
		in.pos = 3;
	skip_ws(&in);
	if (!parse_value(&in, root))
		goto fail;
	/* cJSON.c cJSON_ParseWithLengthOpts, require_null_terminated: skip
	 * whitespace (which stops on the last byte), then that byte must
	 * be a NUL; a value that ends the text has none. */
	if (require_end) {
		skip_ws(&in);
		if (in.pos >= in.len || in.s[in.pos] != '\0')
			goto fail;
	}
	return root;
fail:
	cJSON_Delete(root);
	return NULL;
}

cJSON *
jsonin_parse_ex(const char *text, size_t len, const char *const *keep,
                bool require_end)
{
	return jsonin_parse_top(text, len, keep, NULL, require_end);
}

cJSON *
jsonin_parse(const char *text, size_t len)
{
	return jsonin_parse_ex(text, len, NULL, false);
}

/* The length of the RFC 8259 number at p (-?(0|[1-9][0-9]*)(.[0-9]+)?
 * ([eE][+-]?[0-9]+)?), or 0 when the bytes there are not one, including
 * when more number bytes follow what the grammar takes ("01"). */
static size_t
strict_number(const unsigned char *p, const unsigned char *e)
{
	const unsigned char *q = p, *m;

	if (q < e && *q == '-')
		q++;
	if (q < e && *q == '0')
		q++;
	else if (q < e && *q >= '1' && *q <= '9')
		q = skip_digits(q, e);
	else
		return 0;
	if (q < e && *q == '.') {
		m = ++q;
		if ((q = skip_digits(q, e)) == m)
			return 0;
	}
	if (q < e && (*q == 'e' || *q == 'E')) {
		q++;
		if (q < e && (*q == '+' || *q == '-'))
			q++;
		m = q;
		if ((q = skip_digits(q, e)) == m)
			return 0;
	}
	if (q < e && is_num_byte(*q))
		return 0;
	return (size_t)(q - p);
}

/* The bytes that end a plain run inside a string for jsonin_strict():
 * the quote, the backslash and the control bytes. */
static const bool str_stop[256] = {
	[0x00] = true, [0x01] = true, [0x02] = true, [0x03] = true,
	[0x04] = true, [0x05] = true, [0x06] = true, [0x07] = true,
	[0x08] = true, [0x09] = true, [0x0a] = true, [0x0b] = true,
	[0x0c] = true, [0x0d] = true, [0x0e] = true, [0x0f] = true,
	[0x10] = true, [0x11] = true, [0x12] = true, [0x13] = true,
	[0x14] = true, [0x15] = true, [0x16] = true, [0x17] = true,
	[0x18] = true, [0x19] = true, [0x1a] = true, [0x1b] = true,
	[0x1c] = true, [0x1d] = true, [0x1e] = true, [0x1f] = true,
	['"'] = true, ['\\'] = true,
};

bool
jsonin_strict(const char *text, size_t len)
{
	const unsigned char *p = (const unsigned char *)text, *e = p + len;
	size_t n;

	while (p < e) {
		if (*p == '"') {
			/* The parser checked the escapes; only raw control
			 * bytes are left to refuse, after a backslash too
			 * (which jsonin refuses anyway).  Plain bytes, most
			 * of a long prompt, go one table lookup each. */
			for (p++; p < e; p++) {
				while (p < e && !str_stop[*p])
					p++;
				if (p == e || *p == '"')
					break;
				if (*p == '\\' && p + 1 < e)
					p++;
				if (*p < 0x20)
					return false;
			}
			if (p < e)
				p++;
		} else if (*p == '-' || is_digit(*p)) {
			if ((n = strict_number(p, e)) == 0)
				return false;
			p += n;
		} else if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r') {
			return false;
		} else {
			p++;
		}
	}
	return true;
}
