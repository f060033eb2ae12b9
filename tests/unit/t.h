/*
 * t.h - the unit-test harness (the idea of redis testhelp.h).
 * Each check prints "ok - what" or "not ok - what (file:line)"; tests/run.sh
 * counts those lines.  T_REPORT() returns the exit status for main().
 */
#ifndef ORGW_T_H
#define ORGW_T_H

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

#define T_REPORT() (printf("# %d passed, %d failed\n", t_passed, t_failed), \
		    t_failed ? 1 : 0)

#endif
