/*
 * t.h - the unit-test harness (the idea of redis testhelp.h).
 * Each check prints "ok - what" or "not ok - what (file:line)"; tests/run.sh
 * counts those lines.  T_REPORT() returns the exit status for main().
 */
#ifndef ORGW_T_H
#define ORGW_T_H

#include <stdint.h>
#include <stdio.h>
#include <math.h>

static int t_failed, t_passed;

#define T_ASSERT(what, cond)                                               \
	do {                                                               \
		if (cond) {                                                \
			t_passed++;                                        \
			printf("ok - %s\n", what);                         \
		} else {                                                   \
			t_failed++;                                        \
			printf("not ok - %s (%s:%d)\n", what, __FILE__,    \
			       __LINE__);                                  \
		}                                                          \
	} while (0)

#define T_NEAR(a, b) (fabs((double)(a) - (double)(b)) <=                   \
		      1e-9 * (fabs((double)(a)) + fabs((double)(b))) + 1e-15)

/*
 * splitmix64, for tests that draw their inputs at random: t_seed() first,
 * so that every run tests the same inputs.  static inline: a test that
 * draws nothing gets no unused-function warning.
 */
static inline uint64_t *
t_rng(void)
{
	static uint64_t state;

	return &state;
}

static inline void
t_seed(uint64_t seed)
{
	*t_rng() = seed;
}

static inline uint64_t
t_rand(void)
{
	uint64_t z = (*t_rng() += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A draw in [0, n). */
static inline unsigned
t_below(unsigned n)
{
	return (unsigned)(t_rand() % n);
}

#define T_REPORT() (printf("# %d passed, %d failed\n", t_passed, t_failed), \
		    t_failed ? 1 : 0)

#endif
