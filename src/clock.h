/*
 * clock.h - the only place orgw reads the clock (docs/style.md 1), so the
 * pure core can take time as an argument.
 *
 * In a test build (clock_test.c linked in), ORGW_TEST_NOW (unix seconds,
 * read once per process by clock_init) moves wall-clock time to a fixed
 * offset for tests of time-of-day prices; it never affects the monotonic
 * clock.  The shipped binaries do not have it.
 */
#ifndef ORGW_CLOCK_H
#define ORGW_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/* In a test build, reads ORGW_TEST_NOW once (else does nothing); call
 * from main() before anything else. */
void clock_init(void);

/*
 * The test clock's offset from the real one, seconds (clock_test.c: 0
 * unless ORGW_TEST_NOW is set).  Defined in test builds only; clock.c
 * refers to it weakly, so in the shipped binaries it is absent.
 */
int64_t clock_test_offset_s(void);

/* Unix time in seconds (shifted by ORGW_TEST_NOW when set). */
int64_t clock_now_s(void);

/* The same in milliseconds. */
int64_t clock_now_ms(void);

/* Monotonic milliseconds, for durations and deadlines. */
int64_t clock_mono_ms(void);

/* Monotonic microseconds, for measuring short spans (lock hold times). */
int64_t clock_mono_us(void);

/* UTC wall clock as HHMM (hour*100 + minute), for price windows. */
int clock_utc_hhmm(void);

/* Sleeps ms milliseconds (restarting after signals). */
void clock_sleep_ms(int64_t ms);

/* t (unix seconds) as "YYYY-MM-DD HH:MM:SS" in UTC into dst (n bytes;
 * the number itself when gmtime fails): the one UTC formatter of the
 * operator's output. */
void clock_fmt_utc(int64_t t, char *dst, size_t n);

/* Sleeps us microseconds (restarting after signals). */
void clock_sleep_us(int64_t us);

#endif
