/* clock.c - wall and monotonic clocks; see clock.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"

/* A weak reference: NULL unless a test build linked clock_test.o in (a
 * static library member is never pulled in for a weak reference). */
#pragma weak clock_test_offset_s

static int64_t clock_offset_s;	/* the test clock's offset, or 0 */

void
clock_init(void)
{
	if (clock_test_offset_s != NULL)
		clock_offset_s = clock_test_offset_s();
}

int64_t
clock_now_s(void)
{
	return (int64_t)time(NULL) + clock_offset_s;
}

int64_t
clock_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((int64_t)ts.tv_sec + clock_offset_s) * 1000 +
	       ts.tv_nsec / 1000000;
}

int64_t
clock_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
clock_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int
clock_utc_hhmm(void)
{
	time_t t = (time_t)clock_now_s();
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL)
		return 0;
	return tm.tm_hour * 100 + tm.tm_min;
}

void
clock_fmt_utc(int64_t t, char *dst, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (gmtime_r(&tt, &tm) == NULL ||
	    strftime(dst, n, "%Y-%m-%d %H:%M:%S", &tm) == 0)
		(void)snprintf(dst, n, "%lld", (long long)t);
}

void
clock_sleep_ms(int64_t ms)
{
	if (ms <= 0)
		return;
	clock_sleep_us(ms * 1000);
}

void
clock_sleep_us(int64_t us)
{
	struct timespec ts, rem;

	if (us <= 0)
		return;
	ts.tv_sec = (time_t)(us / 1000000);
	ts.tv_nsec = (long)(us % 1000000) * 1000L;
	while (nanosleep(&ts, &rem) == -1 && errno == EINTR)
		ts = rem;
}
