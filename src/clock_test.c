/*
 * clock_test.c - the test clock: ORGW_TEST_NOW (unix seconds) moves the
 * wall clock of a test build to a fixed offset, for tests of time-of-day
 * prices and of per-day history.  Linked into the unit tests and the
 * test builds of the binaries only (the Makefile's TEST_ONLY), never into
 * cgi-bin/orgw.fcgi or scheduler/orgw-score: a production clock that an
 * environment variable can move is a way to bend price windows and
 * budgets (make lint checks the shipped binaries lack it).
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"

int64_t
clock_test_offset_s(void)
{
	const char *s = getenv("ORGW_TEST_NOW");
	char *end;
	long long v;

	if (s == NULL || *s == '\0')
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end != '\0' || v <= 0)
		return 0;
	return (int64_t)v - (int64_t)time(NULL);
}
