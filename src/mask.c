/*
 * mask.c - keeps the upstream key out of what orgw relays (docs/design.md 3).  An
 * upstream that quotes the key back ("Incorrect API key provided:
 * sk-...") must not hand it to the client, on any path: chat (bodies,
 * stream events, messages orgw decodes and re-sends) and GET /v1/models
 * (answers and its cache).  Pure: no I/O, no allocation.
 *
 * What a client reads is JSON: it decodes escapes, and it joins the
 * deltas of a stream.  So the key is looked for as the client would
 * read it: each of its characters as itself or as a JSON escape
 * ("\u0073", "\/"), and, in a stream event (mask_key_split), inside
 * each JSON string value as a piece of MASK_PIECE_MIN or more of its
 * characters at the string's start or end (where a key cut across two
 * stream events or deltas shows).  Pieces are looked for only there: a
 * whole answer is not joined with another, and OpenRouter's own
 * abbreviation of a key ("sk-or-v1-abc...xyz", GET /key) must stay.  The
 * escaped forms are overwritten byte for byte with '*', which is valid
 * inside a JSON string, so the document stays valid and its length the
 * same.
 */
#include <stdbool.h>
#include <string.h>

#include "jsonscan.h"
#include "mask.h"

/* Characters of a piece worth masking: shorter runs of a random key are
 * common in text (a hex key shares runs of two or three characters with
 * any hex number), and a piece this long of a 64-digit key still leaves
 * the rest unguessable. */
#define MASK_PIECE_MIN 8
/* Longest key the piece search follows (an OpenRouter key is 73). */
#define MASK_KEY_MAX 256

/* A character as JSON decodes it: its byte (0 for one no key holds: a
 * non-ASCII \u escape or a broken escape) and how many raw bytes it
 * takes. */
struct mchar {
	unsigned char c;
	size_t w;
};

/* The character at p[i] (i < n), read as inside a JSON string. */
static struct mchar
decode(const char *p, size_t i, size_t n)
{
	/* RFC 8259 section 7: the two-character escapes. */
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	struct mchar m = {(unsigned char)p[i], 1};
	const char *e;
	unsigned code;

	if (p[i] != '\\' || i + 1 >= n)
		return m;
	m.w = 2;
	m.c = 0;
	if (p[i + 1] != 'u') {
		if (p[i + 1] != '\0' && (e = strchr(from, p[i + 1])) != NULL)
			m.c = (unsigned char)to[e - from];
		return m;
	}
	if (n - i < 6 || !jsonscan_hex4(p + i + 2, &code))
		return m;
	m.w = 6;
	m.c = code < 0x80 ? (unsigned char)code : 0;
	return m;
}

/* Raw bytes of the key read from p[i] on (each character raw or
 * escaped), or 0 when the key does not start there. */
static size_t
match_at(const char *key, size_t kl, const char *p, size_t i, size_t n)
{
	size_t k, j = i;
	struct mchar m;

	for (k = 0; k < kl; k++) {
		if (j >= n)
			return 0;
		m = decode(p, j, n);
		if (m.c == 0 || m.c != (unsigned char)key[k])
			return 0;
		j += m.w;
	}
	return j - i;
}

/* The key in every spelling, anywhere in p[0..n). */
static void
mask_whole(const char *key, size_t kl, char *p, size_t n)
{
	unsigned char k0 = (unsigned char)key[0];
	size_t i = 0, w;

	while (i < n) {
		/* Only a byte that is the key's first or starts an escape
		 * can start it. */
		if ((unsigned char)p[i] != k0 && p[i] != '\\') {
			i++;
			continue;
		}
		if ((w = match_at(key, kl, p, i, n)) != 0) {
			memset(p + i, '*', w);
			i += w;
		} else {
			i++;
		}
	}
}

/* Longest run of s[0..t) read forward (dir 1) from its start, or
 * backward (dir -1) from its end, that occurs in the key. */
static size_t
longest_run(const char *key, size_t kl, const struct mchar *s, size_t t,
	    int dir)
{
	size_t k, j, best = 0;
	unsigned char c;

	for (k = 0; k < kl; k++) {
		for (j = 0; j < t; j++) {
			c = dir > 0 ? s[j].c : s[t - 1 - j].c;
			if (dir > 0 ? k + j >= kl : j > k)
				break;
			if (c == 0 ||
			    c != (unsigned char)key[dir > 0 ? k + j : k - j])
				break;
		}
		if (j > best)
			best = j;
	}
	return best;
}

/* The last kl characters of the string p[s..e) into t (their raw
 * offsets into off); returns how many.  A string with escapes is read
 * from its start: where an escape begins cannot be told from its end. */
static size_t
tail_of(size_t kl, const char *p, size_t s, size_t e, struct mchar *t,
	size_t *off)
{
	struct mchar ring[MASK_KEY_MAX];
	size_t roff[MASK_KEY_MAX], nt = 0, first = 0, i, j;

	if (memchr(p + s, '\\', e - s) == NULL) {
		nt = e - s < kl ? e - s : kl;
		for (i = 0; i < nt; i++) {
			t[i].c = (unsigned char)p[e - nt + i];
			t[i].w = 1;
			off[i] = e - nt + i;
		}
		return nt;
	}
	for (i = s; i < e; i += ring[j].w) {
		j = (first + nt) % kl;
		if (nt == kl)
			first = (first + 1) % kl;
		else
			nt++;
		ring[j] = decode(p, i, e);
		roff[j] = i;
	}
	for (i = 0; i < nt; i++) {
		t[i] = ring[(first + i) % kl];
		off[i] = roff[(first + i) % kl];
	}
	return nt;
}

/* False when the n bytes at q (a string without escapes) cannot be the
 * start or end of a piece: one is no byte of the key.  Most strings fail
 * it at once, so the piece search costs little beyond this. */
static bool
maybe_piece(const bool *in_key, const char *q, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!in_key[(unsigned char)q[i]])
			return false;
	return true;
}

/* Pieces of the key at the start and at the end of the JSON string
 * whose characters are p[s..e) (quotes excluded); in_key[c]: c is one
 * of the key's bytes. */
static void
mask_ends(const char *key, size_t kl, const bool *in_key, char *p, size_t s,
	  size_t e)
{
	struct mchar c[MASK_KEY_MAX];
	size_t off[MASK_KEY_MAX], n = 0, i, run, raw;
	bool esc;

	if (e - s < MASK_PIECE_MIN)
		return;	/* too short to hold a piece */
	esc = memchr(p + s, '\\', e - s) != NULL;
	if (esc || maybe_piece(in_key, p + s, MASK_PIECE_MIN)) {
		for (i = s; i < e && n < kl; i += c[n++].w)
			c[n] = decode(p, i, e);
		run = longest_run(key, kl, c, n, 1);
		if (run >= MASK_PIECE_MIN) {
			for (raw = 0, i = 0; i < run; i++)
				raw += c[i].w;
			memset(p + s, '*', raw);
		}
	}
	if (!esc && !maybe_piece(in_key, p + e - MASK_PIECE_MIN, MASK_PIECE_MIN))
		return;
	n = tail_of(kl, p, s, e, c, off);
	run = longest_run(key, kl, c, n, -1);
	if (run >= MASK_PIECE_MIN)
		memset(p + off[n - run], '*', e - off[n - run]);
}

void
mask_key(const char *key, char *p, size_t n)
{
	size_t kl = key != NULL ? strlen(key) : 0;

	if (kl == 0 || p == NULL)
		return;
	mask_whole(key, kl, p, n);
}

void
mask_key_split(const char *key, char *p, size_t n)
{
	size_t kl = key != NULL ? strlen(key) : 0, i, s, e, b;
	const char *q;
	bool in_key[256];

	if (kl == 0 || p == NULL)
		return;
	mask_whole(key, kl, p, n);
	if (kl > MASK_KEY_MAX || kl <= MASK_PIECE_MIN)
		return;
	memset(in_key, 0, sizeof(in_key));
	for (i = 0; i < kl; i++)
		in_key[(unsigned char)key[i]] = true;
	/* Every JSON string: a '"' outside one opens it, and it runs to
	 * the first '"' a backslash does not take (one after an even run
	 * of backslashes).  memchr: most bytes are neither. */
	for (i = 0; i < n && (q = memchr(p + i, '"', n - i)) != NULL;
	     i = e + 1) {
		s = (size_t)(q - p) + 1;
		for (e = s; e < n && (q = memchr(p + e, '"', n - e)) != NULL;
		     e++) {
			e = (size_t)(q - p);
			for (b = e; b > s && p[b - 1] == '\\'; b--)
				;
			if ((e - b) % 2 == 0)
				break;
		}
		if (q == NULL || e >= n)
			break;
		/* A member's name ("upstream_inference_cost") is no text
		 * a client joins: only values are looked at. */
		for (b = e + 1; b < n && (p[b] == ' ' || p[b] == '\t' ||
					  p[b] == '\n' || p[b] == '\r');
		     b++)
			;
		if (b < n && p[b] == ':')
			continue;
		mask_ends(key, kl, in_key, p, s, e);
	}
}

void
mask_key_str(const char *key, char *s)
{
	if (s != NULL)
		mask_key(key, s, strlen(s));
}
