/*
 * jsonscan.h - the byte ranges of a JSON object's top-level members
 * (pure).
 *
 * Not a parser: the text must be one cJSON has already accepted
 * (cJSON_ParseWithLengthOpts) as an object.  The scanner only finds
 * where each member's key and value start and end, so a caller can send
 * the client's own bytes with a few members replaced, dropped or added
 * (cJSON cuts strings at \u0000 and rounds integers above 2^53, so a
 * reprint would change what the client sent).  Members come in document
 * order, the order of the cJSON tree's children: the i-th member is the
 * i-th child, and that child's key is the member's identity as cJSON
 * decodes it.  On other text the scanner stays within len bytes and
 * stops; what it reports then means nothing.
 */
#ifndef ORGW_JSONSCAN_H
#define ORGW_JSONSCAN_H

#include <stdbool.h>
#include <stddef.h>

/* One member: offsets into the text. */
struct jsonscan_member {
	size_t key_off, key_len;	/* the key, its quotes included */
	size_t val_off, val_len;	/* the value, first to last byte */
};

/* Walk state; fields are the scanner's own. */
struct jsonscan {
	const char *text;
	size_t len;
	size_t pos;
	bool first;
	bool done;
};

/*
 * Starts a walk of the object in text (len bytes, borrowed until the
 * walk ends).  Skips a UTF-8 BOM and bytes <= 0x20 as cJSON does.
 * Returns false when no '{' comes first.
 */
bool jsonscan_begin(struct jsonscan *s, const char *text, size_t len);

/*
 * The next member into *m.  Returns false after the last one (or at
 * anything the scanner cannot follow, which text cJSON accepted does
 * not hold).
 */
bool jsonscan_next(struct jsonscan *s, struct jsonscan_member *m);

/*
 * Starts a walk of the array in text (len bytes, borrowed until the walk
 * ends), the same way: text cJSON accepted as an array.  Returns false
 * when no '[' comes first.
 */
bool jsonscan_begin_array(struct jsonscan *s, const char *text, size_t len);

/*
 * The next element's value into *off and *len (first to last byte), in
 * the order of the cJSON array's children.  Returns false after the last
 * one (or at anything the scanner cannot follow).
 */
bool jsonscan_next_elem(struct jsonscan *s, size_t *off, size_t *len);

/*
 * For a JSON string token (quotes included, len bytes): true when cJSON
 * decodes it to a C string that ends early, at a NUL: a raw 0x00 byte,
 * or a \u escape that cJSON reads as 0 ("\u0000", or one with a byte
 * that is not a hex digit).  A JavaScript JSON.parse keeps the rest of
 * such a string, so cJSON's value is not what an upstream reads.  Also
 * for an array or object token cJSON accepted (brackets included): true
 * when any string in it is such a string, since a backslash only occurs
 * inside strings there.
 */
bool jsonscan_has_nul(const char *tok, size_t len);

/*
 * What building a cJSON tree of a text would take, counted in one pass
 * before cJSON allocates anything: an 8 MiB text of small values ("0,"
 * each) is four million nodes, about 330 MB of tree, so the count is
 * what lets a caller refuse such a text instead of parsing it.
 */
struct jsonscan_size {
	size_t nodes;	/* values: at least as many as cJSON makes */
	size_t strings;	/* string tokens, keys included */
	size_t depth;	/* deepest nesting of arrays and objects */
};

/*
 * Counts text (len bytes, any bytes) into *z: every '{', '[' and ','
 * outside strings, plus one, bounds the nodes cJSON makes (each value
 * but the first of a container follows a comma), and a string runs to
 * the first '"' a backslash did not take, as in cJSON.  Text cJSON would
 * refuse is counted all the same; what counts then is only that the
 * count is bounded by len.
 */
void jsonscan_size(const char *text, size_t len, struct jsonscan_size *z);

/* Bytes of memory a cJSON tree of a text of len bytes measured as z
 * takes at most while it is built: each node a cJSON struct and its
 * malloc header, each string a copy of at most its own bytes in a
 * malloc'd chunk, and one short-lived chunk more.  SIZE_MAX when that
 * does not fit in a size_t. */
size_t jsonscan_tree_bytes(size_t len, const struct jsonscan_size *z);

/* The value of the 4 hex digits at p (a \u escape's, after the "\u"):
 * true with it in *code, false when one of them is not a hex digit.
 * Reads exactly 4 bytes. */
bool jsonscan_hex4(const char *p, unsigned *code);

#endif
