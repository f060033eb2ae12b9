/* test_mask.c - the upstream key masked in what orgw relays. */
#include <string.h>

#include "mask.h"
#include "t.h"

/* s with key masked, compared with want. */
static int
masked(const char *key, const char *s, const char *want)
{
	char b[256];

	strcpy(b, s);
	mask_key(key, b, strlen(b));
	return strcmp(b, want) == 0;
}

static void
test_mask(void)
{
	const char *k = "sk-or-v1-abc";
	char b[32] = "sk-or-v1-abc";

	T_ASSERT("mask: the key alone", masked(k, k, "************"));
	T_ASSERT("mask: at the start, the middle and the end",
		 masked(k, "sk-or-v1-abc says sk-or-v1-abc, sk-or-v1-abc",
			"************ says ************, ************"));
	T_ASSERT("mask: twice in a row",
		 masked(k, "sk-or-v1-abcsk-or-v1-abc", "************"
						      "************"));
	T_ASSERT("mask: after a false start that overlaps it",
		 masked(k, "ssk-or-v1-abc sk-sk-or-v1-abc",
			"s************ sk-************"));
	T_ASSERT("mask: a prefix of it and other s are left alone",
		 masked(k, "sss sk-or-v1-ab sk-or", "sss sk-or-v1-ab sk-or"));
	T_ASSERT("mask: NULL or empty key, NULL text: nothing",
		 masked(NULL, "sk-or-v1-abc", "sk-or-v1-abc") &&
			 masked("", "sk-or-v1-abc", "sk-or-v1-abc"));
	mask_key(k, NULL, 5);
	/* Only the n bytes given are looked at. */
	mask_key(k, b, 11);
	T_ASSERT("mask: a key cut by n is not masked",
		 strcmp(b, "sk-or-v1-abc") == 0);
	mask_key_str(k, b);
	T_ASSERT("mask_key_str: the whole string",
		 strcmp(b, "************") == 0);
	mask_key_str(k, NULL);
}

int
main(void)
{
	test_mask();
	return T_REPORT();
}
