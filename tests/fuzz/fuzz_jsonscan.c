/*
 * fuzz_jsonscan.c - libFuzzer target for jsonscan.c, the top-level
 * member scanner reqval.c forwards the client's bytes with.
 *
 * The input is scanned as it is (exactly size bytes, nothing after it,
 * so an over-read shows under ASan) whatever it holds, and the walk must
 * end.  When cJSON_ParseWithLength() accepts it as an object (that takes
 * every text reqval's cJSON_ParseWithLengthOpts(.., 1) takes, and more),
 * invariants (a violation aborts):
 *   - the scanner reports one member per child of the tree, in order;
 *   - each member's key and value ranges are in bounds, in order and do
 *     not overlap each other or the previous member's;
 *   - the key range is a string token cJSON decodes to the child's key,
 *     and the value range is one value that cJSON parses whole, to a
 *     tree equal to the child (the same print, and cJSON_Compare for a
 *     scalar; see same());
 *   - jsonscan_has_nul() is true for a key token holding a raw NUL.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "jsonscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * a and b are the same value to cJSON: they print the same, and a scalar
 * is cJSON_Compare() equal too.  Containers are compared by print only:
 * cJSON_Compare() on objects checks both ways at every level, so its
 * time doubles per level of nesting.  It calls inf unequal to itself.
 * An allocation failure counts as the same (nothing to check).
 */
static bool
same(const cJSON *a, const cJSON *b)
{
	char *pa = cJSON_PrintUnformatted(a), *pb = cJSON_PrintUnformatted(b);
	bool eq = pa == NULL || pb == NULL || strcmp(pa, pb) == 0;

	if (eq && pa != NULL && pb != NULL && !cJSON_IsArray(a) &&
	    !cJSON_IsObject(a) && strcmp(pa, "null") != 0)
		eq = cJSON_Compare(a, b, 1);
	cJSON_free(pa);
	cJSON_free(pb);
	return eq;
}

/* The n bytes at p parse as one value, whole; the caller frees it. */
static cJSON *
whole(const char *p, size_t n)
{
	const char *end = NULL;
	cJSON *v = cJSON_ParseWithLengthOpts(p, n, &end, 0);

	if (v != NULL && end != p + n)
		abort();
	return v;
}

static void
check(const char *text, size_t size, const cJSON *root)
{
	struct jsonscan_member m;
	struct jsonscan s;
	const cJSON *it;
	cJSON *k, *v;
	size_t prev = 0;

	if (!jsonscan_begin(&s, text, size))
		abort();
	for (it = root->child; it != NULL; it = it->next) {
		if (!jsonscan_next(&s, &m))
			abort();
		if (m.key_off < prev || m.key_len < 2 ||
		    m.key_off + m.key_len > m.val_off || m.val_len == 0 ||
		    m.val_off + m.val_len > size || m.val_off > size)
			abort();
		prev = m.val_off + m.val_len;
		if (text[m.key_off] != '"' ||
		    text[m.key_off + m.key_len - 1] != '"')
			abort();
		if (memchr(text + m.key_off, '\0', m.key_len) != NULL &&
		    !jsonscan_has_nul(text + m.key_off, m.key_len))
			abort();
		/* NULL only when out of memory: nothing to compare. */
		if ((k = whole(text + m.key_off, m.key_len)) != NULL &&
		    (!cJSON_IsString(k) || strcmp(k->valuestring, it->string)))
			abort();
		cJSON_Delete(k);
		if ((v = whole(text + m.val_off, m.val_len)) != NULL &&
		    !same(v, it))
			abort();
		cJSON_Delete(v);
	}
	if (jsonscan_next(&s, &m))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct jsonscan_member m;
	struct jsonscan s;
	cJSON *root;
	size_t n = 0;

	/* Any text: bounded, and it ends. */
	if (jsonscan_begin(&s, text, size))
		while (jsonscan_next(&s, &m))
			if (m.val_off + m.val_len > size || ++n > size)
				abort();
	root = cJSON_ParseWithLength(text, size);
	if (cJSON_IsObject(root))
		check(text, size, root);
	cJSON_Delete(root);
	return 0;
}
