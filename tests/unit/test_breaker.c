/*
 * test_breaker.c - unit tests for breaker.c (SPEC section 5): counting to
 * FAIL_LIMIT, tripping exactly at the limit with until = now + cooldown,
 * the count starting again after a trip or a success, and the cooling
 * boundary (until == now is no longer cooling).
 */
#include <string.h>

#include "t.h"
#include "breaker.h"

static void
test_counting(void)
{
	struct rec_failure f;
	struct rec_cooldown trip, sentinel;

	memset(&f, 0, sizeof(f));
	memset(&sentinel, 0x33, sizeof(sentinel));
	trip = sentinel;
	T_ASSERT("1st failure of 3: no trip",
	         !breaker_fail(&f, "503", 100, 3, 600, &trip));
	T_ASSERT("1st failure: count 1, last and reason set",
	         f.count == 1 && f.last == 100 && strcmp(f.reason, "503") == 0);
	T_ASSERT("no trip leaves *trip untouched",
	         memcmp(&trip, &sentinel, sizeof(trip)) == 0);
	T_ASSERT("2nd failure of 3: no trip",
	         !breaker_fail(&f, "timeout", 110, 3, 600, &trip));
	T_ASSERT("2nd failure: count 2, reason is the latest",
	         f.count == 2 && f.last == 110 &&
	             strcmp(f.reason, "timeout") == 0);
	T_ASSERT("3rd failure of 3: trips",
	         breaker_fail(&f, "502", 120, 3, 600, &trip));
	T_ASSERT("trip: until = now + cooldown", trip.until == 720);
	T_ASSERT("trip: reason is the tripping failure's",
	         strcmp(trip.reason, "502") == 0);
	T_ASSERT("trip: count back to 0, last still set",
	         f.count == 0 && f.last == 120);
	T_ASSERT("after a trip: next failure counts from 1, no trip",
	         !breaker_fail(&f, "503", 130, 3, 600, &trip) && f.count == 1);
	T_ASSERT("...2, no trip",
	         !breaker_fail(&f, "503", 131, 3, 600, &trip) && f.count == 2);
	T_ASSERT("...3 trips again with the new time",
	         breaker_fail(&f, "503", 132, 3, 600, &trip) &&
	             trip.until == 732 && f.count == 0);

	breaker_fail(&f, "503", 140, 3, 600, &trip);
	breaker_fail(&f, "503", 141, 3, 600, &trip);
	breaker_ok(&f);
	T_ASSERT("success resets the count", f.count == 0);
	T_ASSERT("after a success: two failures do not trip",
	         !breaker_fail(&f, "x", 150, 3, 600, &trip) &&
	             !breaker_fail(&f, "x", 151, 3, 600, &trip) &&
	             f.count == 2);

	memset(&f, 0, sizeof(f));
	T_ASSERT("fail_limit 1: the first failure trips",
	         breaker_fail(&f, "524", 1000, 1, 30, &trip) &&
	             trip.until == 1030 && f.count == 0);

	/* A count already past the limit (limit lowered in the config). */
	memset(&f, 0, sizeof(f));
	f.count = 7;
	T_ASSERT("count above the limit trips on the next failure",
	         breaker_fail(&f, "503", 5, 3, 10, &trip) && trip.until == 15 &&
	             f.count == 0);
}

static void
test_reason(void)
{
	struct rec_failure f;
	struct rec_cooldown trip;
	char longr[200];

	memset(longr, 'r', sizeof(longr) - 1);
	longr[sizeof(longr) - 1] = '\0';
	memset(&f, 0, sizeof(f));
	T_ASSERT("long reason: trips",
	         breaker_fail(&f, longr, 1, 1, 1, &trip));
	T_ASSERT("long reason: failure reason cut, NUL-terminated",
	         strlen(f.reason) == REC_REASON_MAX - 1);
	T_ASSERT("long reason: cooldown reason cut, NUL-terminated",
	         strlen(trip.reason) == REC_REASON_MAX - 1);
}

static void
test_cooling(void)
{
	struct rec_cooldown c;

	memset(&c, 0, sizeof(c));
	c.until = 1000;
	T_ASSERT("cooling one second before until", breaker_cooling(&c, 999));
	T_ASSERT("not cooling at until", !breaker_cooling(&c, 1000));
	T_ASSERT("not cooling after until", !breaker_cooling(&c, 1001));
	T_ASSERT("NULL cooldown is not cooling", !breaker_cooling(NULL, 0));
	memset(&c, 0, sizeof(c));
	T_ASSERT("zeroed cooldown is not cooling at time 0",
	         !breaker_cooling(&c, 0));
	c.until = -5;
	T_ASSERT("negative until is not cooling at 0", !breaker_cooling(&c, 0));
	T_ASSERT("negative until is cooling before it",
	         breaker_cooling(&c, -6));
}

int
main(void)
{
	test_counting();
	test_reason();
	test_cooling();
	return T_REPORT();
}
