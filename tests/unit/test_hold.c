/*
 * test_hold.c - a team key's budget holds (hold.h): the record's codec,
 * lapse, add and drop.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hold.h"
#include "t.h"

#define ID_A "0123456789abcdef0123456789abcdef"
#define ID_B "fedcba9876543210fedcba9876543210"

static void
test_codec(void)
{
	struct holds *h = calloc(1, sizeof(*h)), *g = calloc(1, sizeof(*g));
	char *s;
	size_t i;

	T_ASSERT("decode: absent text is no holds",
		 holds_decode(NULL, h) == ORGW_OK && h->n == 0);
	T_ASSERT("add: two holds", holds_add(h, ID_A, 5000, 0.25) &&
					   holds_add(h, ID_B, 9000, 0.5));
	s = holds_encode(h);
	T_ASSERT("codec: the same holds read back",
		 s != NULL && holds_decode(s, g) == ORGW_OK && g->n == 2 &&
			 strcmp(g->v[0].id, ID_A) == 0 &&
			 g->v[0].until_ms == 5000 && g->v[0].usd == 0.25 &&
			 strcmp(g->v[1].id, ID_B) == 0 && g->v[1].usd == 0.5);
	free(s);
	T_ASSERT("decode: damaged text is EINVAL, no holds",
		 holds_decode("{\"v\":1,\"holds\":[{\"id\":\"xyz\","
			      "\"until_ms\":1,\"usd\":1}]}",
			      g) == ORGW_EINVAL &&
			 g->n == 0);
	T_ASSERT("decode: a negative figure is refused",
		 holds_decode("{\"v\":1,\"holds\":[{\"id\":\"ab\","
			      "\"until_ms\":1,\"usd\":-1}]}",
			      g) == ORGW_EINVAL);
	T_ASSERT("decode: another version is refused",
		 holds_decode("{\"v\":2,\"holds\":[]}", g) == ORGW_EINVAL);
	T_ASSERT("add: an id that is not hex is refused",
		 !holds_add(h, "not-hex", 1, 1) && !holds_add(h, "", 1, 1) &&
			 !holds_add(h, NULL, 1, 1) && h->n == 2);
	for (i = h->n; i < HOLD_MAX; i++)
		holds_add(h, ID_A, 1000, 0);
	T_ASSERT("add: the table is bounded",
		 h->n == HOLD_MAX && !holds_add(h, ID_B, 1, 1));
	s = holds_encode(h);
	T_ASSERT("codec: a full table round-trips",
		 s != NULL && holds_decode(s, g) == ORGW_OK &&
			 g->n == HOLD_MAX);
	free(s);
	free(h);
	free(g);
}

static void
test_total(void)
{
	struct holds *h = calloc(1, sizeof(*h));

	holds_add(h, ID_A, 5000, 0.25);
	holds_add(h, ID_B, 9000, 0.5);
	T_ASSERT("total: both held before either lapses",
		 holds_total(h, 4999) == 0.75 && h->n == 2);
	T_ASSERT("total: the first lapses at its deadline",
		 holds_total(h, 5000) == 0.5 && h->n == 1 &&
			 strcmp(h->v[0].id, ID_B) == 0);
	T_ASSERT("drop: the request's end drops its hold",
		 holds_drop(h, ID_B) && h->n == 0 && holds_total(h, 0) == 0);
	T_ASSERT("drop: a hold that lapsed is not there",
		 !holds_drop(h, ID_A) && !holds_drop(h, NULL));
	holds_add(h, ID_A, 5000, NAN);
	holds_add(h, ID_B, 5000, INFINITY);
	T_ASSERT("add: NaN holds 0, infinity the largest figure",
		 h->v[0].usd == 0 && h->v[1].usd == 1e15);
	free(h);
}

int
main(void)
{
	test_codec();
	test_total();
	return T_REPORT();
}
