/*
 * fuzz_score.c - libFuzzer target for score_endpoints() (docs/design.md
 * section 6).
 *
 * The input is an endpoints response body, scored at a few clock values
 * that sit on and between the window edges of the example of
 * docs/upstream.md section 10 (00:30 and 16:30 UTC).  Besides the
 * sanitizers, the target checks the result's invariants: counts in range,
 * every ranked entry without a reason and every other with one, every
 * double finite and >= 0, and the ranking order of score.c.  A broken
 * invariant aborts, which libFuzzer reports.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "score.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_entry(const struct score_endpoint *e, bool ranked)
{
	if (ranked != (e->excluded == NULL))
		abort();
	if (!isfinite(e->score) || e->score < 0 || !isfinite(e->cost) ||
	    e->cost < 0 || !isfinite(e->prompt) || e->prompt < 0 ||
	    !isfinite(e->completion) || e->completion < 0 ||
	    !isfinite(e->cache_read) || e->cache_read < 0 ||
	    !isfinite(e->effective_input) || e->effective_input < 0 ||
	    !isfinite(e->throughput) || !isfinite(e->uptime) ||
	    !isfinite(e->bonus) || e->max_completion_tokens < 0)
		abort();
	if (ranked && e->tag[0] == '\0')
		abort();
}

/* a must not rank after b (has_throughput, free, score; see score.c). */
static void
check_order(const struct score_endpoint *a, const struct score_endpoint *b)
{
	if (a->has_throughput != b->has_throughput) {
		if (!a->has_throughput)
			abort();
		return;
	}
	if (a->free != b->free) {
		if (!a->free)
			abort();
		return;
	}
	if (a->score < b->score)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int clocks[] = {0, 29, 30, 1200, 1630, 2359};
	static const struct score_params params = {0.8, 2.0, 95.0, 0, NULL, 0, NULL};
	struct score_result r;
	size_t i, k;

	for (k = 0; k < sizeof(clocks) / sizeof(clocks[0]); k++) {
		if (score_endpoints((const char *)data, size, clocks[k],
		                    &params, &r) != ORGW_OK) {
			if (r.v != NULL || r.n != 0)
				abort();
			continue;
		}
		if (r.n_ranked > r.n || (r.n > 0 && r.v == NULL))
			abort();
		for (i = 0; i < r.n; i++)
			check_entry(&r.v[i], i < r.n_ranked);
		for (i = 1; i < r.n_ranked; i++)
			check_order(&r.v[i - 1], &r.v[i]);
		score_result_free(&r);
	}
	return 0;
}
