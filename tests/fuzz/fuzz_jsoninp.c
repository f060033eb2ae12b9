/*
 * fuzz_jsoninp.c - libFuzzer target for jsonin.c: jsonin_parse() must
 * accept what cJSON_ParseWithLength() accepts and build the same tree
 * (types, keys, strings, valueint, valuedouble bit for bit, child order
 * and prev links), and refuse what it refuses.  A difference aborts.
 *
 * jsonin_parse_ex() too.  The first input byte picks a keep list
 * (byte % KEEP_LISTS); on the whole input and on the input after that
 * byte, with that list and with none, require_end false and true:
 *
 *   ex(keep, false) == keep_only(cJSON_ParseWithLength)
 *   ex(keep, true)  == keep_only(cJSON_ParseWithLengthOpts(.., NULL, 1))
 *
 * (keep_only, jsontree.h: the root object's members not in the list
 * deleted; NULL keeps all).  Both require_end values are checked every
 * time rather than picked by a bit, so no input tests one and not the
 * other.  Checking the whole input keeps the old seeds, which start
 * with '{', useful; checking the rest lets a seed choose its list.
 *
 * jsonin_parse_top() the same way: the first byte also picks a shallow
 * list ((byte / KEEP_LISTS) % SHALLOW_LISTS), and with both lists
 *
 *   top(keep, shallow, e) == top_only(cJSON's tree, keep, shallow)
 *
 * for e false and true (top_only, jsontree.h: the members in shallow
 * without their children, the others not in keep deleted).
 *
 * jsonin_strict() on every input: it stays in bounds (the ASan replay)
 * and never calls text with a control byte other than tab, newline and
 * return strict.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "jsonin.h"
#include "../unit/jsontree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const keep_meta[] = {"provider", "usage", "error", NULL};
static const char *const keep_none[] = {NULL};
static const char *const keep_short[] = {"a", "", "b", NULL};
static const char *const keep_req[] = {"model", "messages", "stream", "models",
                                       NULL};
static const char *const keep_twice[] = {"provider", "provider", NULL};
static const char *const keep_odd[] = {"\xf0\x9f\x98\x80", "a\nb", "\xc3\xa9",
                                       NULL};
static const char *const keep_chat[] = {"id",      "object", "created", "model",
                                        "choices", "usage",  NULL};

static const char *const *const keep_lists[] = {
    keep_meta,  keep_none, keep_short, keep_req,
    keep_twice, keep_odd,  keep_chat,  NULL,
};

#define KEEP_LISTS (sizeof(keep_lists) / sizeof(keep_lists[0]))

static const char *const shallow_msgs[] = {"messages", NULL};
static const char *const shallow_a[] = {"a", NULL};
static const char *const shallow_two[] = {"provider", "choices", "b", NULL};

static const char *const *const shallow_lists[] = {
    shallow_msgs, shallow_a, NULL, shallow_two, keep_short, keep_odd,
};

#define SHALLOW_LISTS (sizeof(shallow_lists) / sizeof(shallow_lists[0]))

/* want (consumed) equals got (consumed), or abort. */
static void
same(cJSON *want, cJSON *got)
{
	if (!same_tree(want, got))
		abort();
	cJSON_Delete(want);
	cJSON_Delete(got);
}

static void
check_ex(const char *s, size_t n, const char *const *keep)
{
	same(keep_only(cJSON_ParseWithLength(s, n), keep),
	     jsonin_parse_ex(s, n, keep, false));
	same(keep_only(cJSON_ParseWithLengthOpts(s, n, NULL, 1), keep),
	     jsonin_parse_ex(s, n, keep, true));
}

static void
check_top(const char *s, size_t n, const char *const *keep,
          const char *const *shallow)
{
	same(top_only(cJSON_ParseWithLength(s, n), keep, shallow),
	     jsonin_parse_top(s, n, keep, shallow, false));
	same(top_only(cJSON_ParseWithLengthOpts(s, n, NULL, 1), keep, shallow),
	     jsonin_parse_top(s, n, keep, shallow, true));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	const char *const *keep, *const *shallow;

	same(cJSON_ParseWithLength(s, size), jsonin_parse(s, size));
	if (jsonin_strict(s, size))
		for (size_t i = 0; i < size; i++)
			if (data[i] < 0x20 && data[i] != '\t' &&
			    data[i] != '\n' && data[i] != '\r')
				abort();
	if (size == 0) {
		check_ex(s, 0, keep_meta);
		check_top(s, 0, NULL, shallow_msgs);
		return 0;
	}
	keep = keep_lists[data[0] % KEEP_LISTS];
	shallow = shallow_lists[(data[0] / KEEP_LISTS) % SHALLOW_LISTS];
	check_ex(s, size, keep);
	check_ex(s + 1, size - 1, keep);
	if (keep != NULL)
		check_ex(s + 1, size - 1, NULL);
	check_top(s, size, keep, shallow);
	check_top(s + 1, size - 1, keep, shallow);
	check_top(s + 1, size - 1, NULL, shallow_msgs);
	return 0;
}
