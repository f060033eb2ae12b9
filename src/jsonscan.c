/*
 * jsonscan.c - top-level member ranges of an object cJSON accepted, and
 * the size of the tree cJSON would build of a text (jsonscan_size).
 *
 * Pure, no allocation, no recursion.  It follows cJSON 1.7.15's own
 * rules (cJSON.c) where they decide where a token ends: every byte
 * <= 0x20 is whitespace (buffer_skip_whitespace), a string runs to the
 * first '"' not taken by a backslash, which takes exactly one byte
 * (parse_string's first loop), and the UTF-8 BOM is skipped at the start
 * (skip_utf8_bom).  A member's value inside an object cJSON accepted is
 * a string, an array or object (brackets counted, strings skipped), or
 * a number or literal, which ends at whitespace, ',' or '}' (cJSON
 * refuses anything else after a value in an object).  Every read is
 * bounded by len, whatever the text.
 */
#include <stdint.h>

#include "jsonscan.h"

static bool
is_ws(unsigned char c)
{
	return c <= 0x20;
}

static void
skip_ws(struct jsonscan *s)
{
	while (s->pos < s->len && is_ws((unsigned char)s->text[s->pos]))
		s->pos++;
}

/* At a '"': moves past the closing quote.  false when there is none. */
static bool
skip_string(struct jsonscan *s)
{
	size_t p = s->pos + 1;

	while (p < s->len && s->text[p] != '"')
		p += s->text[p] == '\\' ? 2 : 1;
	if (p >= s->len)
		return false;
	s->pos = p + 1;
	return true;
}

/* At a value's first byte: moves past its last.  false when the value
 * does not end within the text. */
static bool
skip_value(struct jsonscan *s)
{
	size_t depth = 0;
	char c;

	c = s->text[s->pos];
	if (c == '"')
		return skip_string(s);
	if (c != '{' && c != '[') {
		while (s->pos < s->len) {
			c = s->text[s->pos];
			if (is_ws((unsigned char)c) || c == ',' || c == '}' ||
			    c == ']')
				break;
			s->pos++;
		}
		return true;
	}
	while (s->pos < s->len) {
		c = s->text[s->pos];
		if (c == '"') {
			if (!skip_string(s))
				return false;
			continue;
		}
		if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && --depth == 0) {
			s->pos++;
			return true;
		}
		s->pos++;
	}
	return false;
}

bool
jsonscan_begin(struct jsonscan *s, const char *text, size_t len)
{
	s->text = text;
	s->len = len;
	s->pos = 0;
	s->first = true;
	s->done = false;
	if (len >= 3 && (unsigned char)text[0] == 0xEF &&
	    (unsigned char)text[1] == 0xBB && (unsigned char)text[2] == 0xBF)
		s->pos = 3;
	skip_ws(s);
	if (s->pos >= len || text[s->pos] != '{') {
		s->done = true;
		return false;
	}
	s->pos++;
	return true;
}

bool
jsonscan_next(struct jsonscan *s, struct jsonscan_member *m)
{
	if (s->done)
		return false;
	s->done = true;	/* until a member is found whole */
	skip_ws(s);
	if (s->pos >= s->len)
		return false;
	if (!s->first) {
		if (s->text[s->pos] != ',')
			return false;	/* '}': the end */
		s->pos++;
		skip_ws(s);
	}
	if (s->pos >= s->len || s->text[s->pos] != '"')
		return false;	/* '}' after '{': no members */
	s->first = false;
	m->key_off = s->pos;
	if (!skip_string(s))
		return false;
	m->key_len = s->pos - m->key_off;
	skip_ws(s);
	if (s->pos >= s->len || s->text[s->pos] != ':')
		return false;
	s->pos++;
	skip_ws(s);
	if (s->pos >= s->len)
		return false;
	m->val_off = s->pos;
	if (!skip_value(s) || s->pos == m->val_off)
		return false;
	m->val_len = s->pos - m->val_off;
	s->done = false;
	return true;
}

bool
jsonscan_begin_array(struct jsonscan *s, const char *text, size_t len)
{
	s->text = text;
	s->len = len;
	s->pos = 0;
	s->first = true;
	s->done = false;
	skip_ws(s);
	if (s->pos >= len || text[s->pos] != '[') {
		s->done = true;
		return false;
	}
	s->pos++;
	return true;
}

bool
jsonscan_next_elem(struct jsonscan *s, size_t *off, size_t *len)
{
	if (s->done)
		return false;
	s->done = true;	/* until an element is found whole */
	skip_ws(s);
	if (s->pos >= s->len)
		return false;
	if (!s->first) {
		if (s->text[s->pos] != ',')
			return false;	/* ']': the end */
		s->pos++;
		skip_ws(s);
	}
	if (s->pos >= s->len || s->text[s->pos] == ']')
		return false;	/* ']' after '[': no elements */
	s->first = false;
	*off = s->pos;
	if (!skip_value(s) || s->pos == *off)
		return false;
	*len = s->pos - *off;
	s->done = false;
	return true;
}

bool
jsonscan_hex4(const char *p, unsigned *code)
{
	unsigned h = 0, i;

	for (i = 0; i < 4; i++) {
		char c = p[i];

		h <<= 4;
		if (c >= '0' && c <= '9')
			h += (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			h += (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			h += (unsigned)(c - 'A' + 10);
		else
			return false;
	}
	*code = h;
	return true;
}

/* cJSON.c parse_hex4(): 0 also for a byte that is not a hex digit. */
static unsigned
hex4(const char *p)
{
	unsigned h;

	return jsonscan_hex4(p, &h) ? h : 0;
}

bool
jsonscan_has_nul(const char *tok, size_t len)
{
	size_t i = 1, e;
	unsigned code;

	if (len < 2)
		return false;
	e = len - 1;	/* the closing quote */
	/* cJSON.c parse_string's second loop: what each escape takes. */
	while (i < e) {
		if (tok[i] == '\0')
			return true;
		if (tok[i] != '\\') {
			i++;
			continue;
		}
		if (e - i < 2)
			return false;
		if (tok[i + 1] != 'u') {
			i += 2;
			continue;
		}
		if (e - i < 6)
			return false;
		code = hex4(tok + i + 2);
		if (code == 0)
			return true;
		/* A high surrogate takes the \uXXXX after it too. */
		i += code >= 0xD800 && code <= 0xDBFF ? 12 : 6;
	}
	return false;
}

/* A node: sizeof(cJSON) (64 on LP64) and its malloc chunk header. */
#define JSONSCAN_NODE_BYTES 80
/* A string: the smallest malloc chunk, which its copy's bytes may
 * fill (those are counted as the text's length).  Also the overhead of
 * the one short-lived copy of a number's token that a patched cJSON
 * (Debian's 1.7.15) makes while it parses the number. */
#define JSONSCAN_STRING_BYTES 32

void
jsonscan_size(const char *text, size_t len, struct jsonscan_size *z)
{
	size_t i = 0, depth = 0;
	char c;

	z->nodes = 1;
	z->strings = 0;
	z->depth = 0;
	while (i < len) {
		c = text[i++];
		if (c == '"') {
			z->strings++;
			while (i < len && text[i] != '"')
				i += text[i] == '\\' ? 2 : 1;
			i++;
		} else if (c == '{' || c == '[') {
			z->nodes++;
			if (++depth > z->depth)
				z->depth = depth;
		} else if (c == '}' || c == ']') {
			if (depth > 0)
				depth--;
		} else if (c == ',') {
			z->nodes++;
		}
	}
}

size_t
jsonscan_tree_bytes(size_t len, const struct jsonscan_size *z)
{
	size_t n = z->nodes, s = z->strings;

	/* Saturates rather than wraps (each count is at most len + 1, so
	 * only a text near SIZE_MAX / 80 bytes would get there). */
	if (n > (SIZE_MAX - len) / JSONSCAN_NODE_BYTES)
		return SIZE_MAX;
	len += n * JSONSCAN_NODE_BYTES;
	if (s >= (SIZE_MAX - len) / JSONSCAN_STRING_BYTES)
		return SIZE_MAX;
	return len + (s + 1) * JSONSCAN_STRING_BYTES;
}
