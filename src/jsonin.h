/*
 * jsonin.h - cJSON_ParseWithLength() with a fast path for small integers,
 * and a variant that builds only the root object's members a caller reads,
 * the big ones it only needs the type of without their contents.
 * Pure.  The header stays cJSON-free: struct cJSON is the tag behind
 * cJSON.h's typedef, so callers get a cJSON * they use unchanged.
 */
#ifndef ORGW_JSONIN_H
#define ORGW_JSONIN_H

#include <stdbool.h>
#include <stddef.h>

struct cJSON;

/*
 * Like cJSON_ParseWithLength(text, len) (cJSON 1.7.15 as Debian 12 ships
 * it): the same tree or the same refusal, faster numbers.  text is
 * borrowed for the call and need not be NUL-terminated; bytes after the
 * first complete value are ignored, as cJSON ignores them.  To get
 * cJSON_Parse(s) exactly, pass strlen(s) + 1.  Returns a tree whose
 * nodes, keys and strings come from cJSON_malloc(), owned by the caller,
 * who frees it with cJSON_Delete(); or NULL when cJSON would refuse the
 * text or memory ran out (nothing is left allocated then).
 * Same as jsonin_parse_ex(text, len, NULL, false).
 */
struct cJSON *jsonin_parse(const char *text, size_t len);

/*
 * jsonin_parse() with two options.
 *
 * keep: NULL builds the whole tree.  Otherwise a NULL-terminated list of
 * keys, borrowed for the call: when the root value is an object, only
 * its members whose key equals one of them are built (the key compared
 * as the C string the tree would hold, byte for byte, so the JSON key
 * "pro\u0076ider" is kept by "provider"), in document order, duplicates
 * included, each exactly as jsonin_parse() builds it.  Every other member
 * is checked by the same code with the same grammar and limits, and
 * skipped without building anything.  So the result is NULL exactly when
 * jsonin_parse(text, len) refuses the text, and otherwise its tree with
 * the other root members left out.  A root that is not an object is
 * built whole.  Out of memory also gives NULL; skipping a member only
 * allocates when its key has an escape and is 128 bytes or longer.
 *
 * require_end: true accepts what cJSON_ParseWithLengthOpts(text, len,
 * &end, 1) accepts: the bytes after the value must all be <= 0x20 and
 * the last of them a NUL counted in len (so pass strlen(s) + 1 for a C
 * string; "1" with len 1, "1 " and "1\0x" are refused, "1\0" and
 * "1 \0\0" taken).  false ignores the bytes after the value, as
 * jsonin_parse() does.
 *
 * Returns a tree the caller frees with cJSON_Delete(), as jsonin_parse().
 * Same as jsonin_parse_top(text, len, keep, NULL, require_end).
 */
struct cJSON *jsonin_parse_ex(const char *text, size_t len,
                              const char *const *keep, bool require_end);

/*
 * jsonin_parse_ex() that can also build root members shallow.
 *
 * shallow: NULL, or a NULL-terminated list of keys, borrowed for the
 * call and compared as keep's are.  When the root value is an object,
 * each of its members whose key is listed is built whether or not keep
 * lists it, but shallow: a member whose value is an array or object gets
 * its node (type and key) with no children, the contents checked by the
 * same code with the same grammar and limits as a skipped member's and
 * left out; a string, number, true, false or null is built as usual.
 * keep still decides the other members (NULL: all of them, whole).
 *
 * So the result is NULL exactly when jsonin_parse(text, len) refuses the
 * text (or, with require_end, when jsonin_parse_ex would), and otherwise
 * jsonin_parse_ex(text, len, keep, require_end)'s tree with the members
 * in shallow added back where keep left them out, each with its children
 * deleted.  Out of memory also gives NULL; a shallow member allocates
 * its node and key only.  The caller frees the tree with cJSON_Delete().
 */
struct cJSON *jsonin_parse_top(const char *text, size_t len,
                               const char *const *keep,
                               const char *const *shallow, bool require_end);

/*
 * For text that is one value jsonin accepted, with nothing around it
 * but whitespace: true when its bytes are also strict JSON (RFC 8259),
 * as a JavaScript JSON.parse() takes them:
 * no byte below 0x20 inside a string, none but tab, newline and return
 * between tokens, and numbers in the RFC's form ("01", "1.", "-.5" and
 * "+1", which strtod and so cJSON take, are not).  A caller that
 * forwards the text's own bytes instead of printing its tree needs this.
 * len counts the bytes to look at; a NUL among them is not strict.
 */
bool jsonin_strict(const char *text, size_t len);

#endif
