/*
 * test_memo.c - decoded records kept with their text (memo.h).
 */
#include <stdlib.h>
#include <string.h>

#include "memo.h"
#include "t.h"

struct val {
	int n;
	int *v;		/* malloc'd, n ints */
};

static int copies, clears;
static bool fail_copy;

static bool
val_copy(void *dst, const void *src)
{
	struct val *d = dst;
	const struct val *s = src;

	if (fail_copy)
		return false;
	copies++;
	d->n = s->n;
	if ((d->v = malloc((size_t)s->n * sizeof(int))) == NULL)
		return false;
	memcpy(d->v, s->v, (size_t)s->n * sizeof(int));
	return true;
}

static void
val_clear(void *p)
{
	clears++;
	free(((struct val *)p)->v);
}

static struct memo deep = MEMO_INIT(sizeof(struct val), val_copy, val_clear);
static struct memo flat = MEMO_INIT(sizeof(int), NULL, NULL);

static void
test_flat(void)
{
	int x = 7, out = 0;
	char k[16];
	int i;

	T_ASSERT("nothing kept: no value", !memo_get(&flat, "k", "{}", &out));
	memo_put(&flat, "k", "{\"a\":7}", &x);
	T_ASSERT("the same key and text: the kept value",
		 memo_get(&flat, "k", "{\"a\":7}", &out) && out == 7);
	out = 0;
	T_ASSERT("another text under the key: none (decode it)",
		 !memo_get(&flat, "k", "{\"a\":8}", &out) && out == 0);
	T_ASSERT("the text under another key: none",
		 !memo_get(&flat, "j", "{\"a\":7}", &out));
	T_ASSERT("text NULL (an absent key) never matches",
		 !memo_get(&flat, "k", NULL, &out));
	x = 8;
	memo_put(&flat, "k", "{\"a\":8}", &x);
	T_ASSERT("a new text replaces the key's old one",
		 memo_get(&flat, "k", "{\"a\":8}", &out) && out == 8 &&
			 !memo_get(&flat, "k", "{\"a\":7}", &out));
	for (i = 0; i < MEMO_SLOTS; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		x = i;
		memo_put(&flat, k, "t", &x);
	}
	T_ASSERT("a full memo drops its oldest key first",
		 !memo_get(&flat, "k", "{\"a\":8}", &out) &&
			 memo_get(&flat, "k0", "t", &out) && out == 0 &&
			 memo_get(&flat, "k15", "t", &out) && out == 15);
	memo_free(&flat);
	T_ASSERT("emptied: nothing kept",
		 !memo_get(&flat, "k0", "t", &out));
}

static void
test_deep(void)
{
	int a[3] = {1, 2, 3};
	struct val v = {3, a}, out;
	bool ok;

	memo_put(&deep, "k", "t", &v);
	a[0] = 99;
	memset(&out, 0, sizeof(out));
	ok = memo_get(&deep, "k", "t", &out);
	T_ASSERT("put keeps a copy of its own, get gives one",
		 ok && out.n == 3 && out.v != a && out.v[0] == 1 &&
			 out.v[2] == 3);
	if (ok) {
		out.v[1] = 42;
		free(out.v);
	}
	memset(&out, 0, sizeof(out));
	ok = memo_get(&deep, "k", "t", &out);
	T_ASSERT("changing a copy got changes nothing kept",
		 ok && out.v[1] == 2);
	if (ok)
		free(out.v);
	fail_copy = true;
	T_ASSERT("no memory to copy: no value (decode it)",
		 !memo_get(&deep, "k", "t", &out));
	memo_put(&deep, "k", "u", &v);
	fail_copy = false;
	ok = memo_get(&deep, "k", "t", &out);
	T_ASSERT("no memory to keep it: the key's old text stays",
		 ok && !memo_get(&deep, "k", "u", &out));
	if (ok)
		free(out.v);
	clears = 0;
	memo_free(&deep);
	T_ASSERT("emptying clears what each value owns", clears == 1);
}

int
main(void)
{
	test_flat();
	test_deep();
	return T_REPORT();
}
