/* test_load.c - load.c: overload refusal, recycling, /proc/PID/stat. */
#include <string.h>

#include "load.h"
#include "t.h"

static void
test_saturated(void)
{
	struct orgw_load l = {0};

	l.capacity = 6;
	l.busy = 5;
	T_ASSERT("5 of 6 busy (this one included): served",
		 !load_saturated(&l));
	l.busy = 6;
	T_ASSERT("6 of 6 busy: the last idle thread refuses",
		 load_saturated(&l));
	l.busy = 9;	/* a draining process's requests count too */
	T_ASSERT("more busy than capacity: refused", load_saturated(&l));
	l.capacity = 8;	/* a quarter, 2, for side requests */
	l.busy = 8;
	l.side = 2;
	T_ASSERT("8 of 8 busy, 2 of them side requests in their share: refused",
		 load_saturated(&l));
	l.side = 6;
	T_ASSERT("8 of 8 busy, 4 side requests over their share: served",
		 !load_saturated(&l));
	l.busy = 12;
	T_ASSERT("12 busy, 4 over the share: still all threads: refused",
		 load_saturated(&l));
	l.side = 0;
	l.capacity = 0;
	T_ASSERT("capacity unknown: never refused", !load_saturated(&l));
	l.capacity = 1;
	l.busy = 1;
	T_ASSERT("one thread in all: refused (WORKER_THREADS=1, 1 process)",
		 load_saturated(&l));
	l.busy = 4;
	T_ASSERT("in flight leaves the asking request out",
		 load_in_flight(&l) == 3);
	l.busy = 0;
	T_ASSERT("in flight never below 0", load_in_flight(&l) == 0);
}

static void
test_side(void)
{
	struct orgw_load l = {0};

	T_ASSERT("side: a quarter of the threads", load_side_max(320) == 80 &&
		 load_side_max(8) == 2);
	T_ASSERT("side: at least one", load_side_max(3) == 1 &&
		 load_side_max(0) == 1);
	l.capacity = 8;
	l.busy = 3;
	T_ASSERT("side: 2 of 8 (this one included) served",
		 !load_side_refused(&l, 2));
	T_ASSERT("side: a 3rd of 8 refused", load_side_refused(&l, 3));
	l.busy = 8;
	T_ASSERT("side: the last thread for the only side request (a host "
		 "full of streams can still be watched)",
		 !load_side_refused(&l, 1));
	T_ASSERT("side: not when another side request holds one (kept for "
		 "/healthz)", load_side_refused(&l, 2));
	l.capacity = 0;
	T_ASSERT("side: capacity unknown never refuses",
		 !load_side_refused(&l, 99));
}

static void
test_age(void)
{
	int64_t lo = 3600, hi = 0, v;
	uint64_t seed;
	int distinct = 0, prev = -1;

	for (seed = 1000; seed < 1200; seed++) {
		v = load_age_limit_s(3600, seed);
		if (v < lo)
			lo = v;
		if (v > hi)
			hi = v;
		if (v != prev)
			distinct++;
		prev = (int)v;
	}
	T_ASSERT("age limit within [3/4 max, max]", lo >= 2700 && hi <= 3600);
	T_ASSERT("age limit jitter spreads nearby pids", hi - lo > 600 &&
							  distinct > 150);
	T_ASSERT("age limit same seed, same limit",
		 load_age_limit_s(3600, 42) == load_age_limit_s(3600, 42));
	T_ASSERT("age limit never under the 10 s guard",
		 load_age_limit_s(10, 7) == 10 && load_age_limit_s(1, 7) == 10);
}

static void
test_recycle(void)
{
	T_ASSERT("recycle: not before 10 s even past max requests",
		 !load_recycle_due(500, 100, 9, 3600));
	T_ASSERT("recycle: max requests reached after 10 s",
		 load_recycle_due(100, 100, 10, 3600));
	T_ASSERT("recycle: one short of max requests: no",
		 !load_recycle_due(99, 100, 500, 3600));
	T_ASSERT("recycle: age reached", load_recycle_due(1, 100, 3600, 3600));
	T_ASSERT("recycle: age one short: no",
		 !load_recycle_due(1, 100, 3599, 3600));
}

static void
test_stat(void)
{
	static const char real[] =
		"12345 (orgw.fcgi) S 1 12345 12345 0 -1 4194560 2195 0 0 0 "
		"1 0 0 0 20 0 3 0 987654 26456064 1024 18446744073709551615 "
		"1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n";
	static const char odd[] =
		"7 (a) b (c) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0\n";
	static const char cut[] = "7 (x) S 1 7 7 0 -1 0 0 0";
	unsigned long long st = 0;

	T_ASSERT("stat: start time is field 22",
		 load_parse_starttime(real, strlen(real), &st) && st == 987654);
	T_ASSERT("stat: a name with spaces and ')' counts from the last ')'",
		 load_parse_starttime(odd, strlen(odd), &st) && st == 42);
	T_ASSERT("stat: cut short: refused",
		 !load_parse_starttime(cut, strlen(cut), &st));
	T_ASSERT("stat: no ')': refused", !load_parse_starttime("1 2 3", 5, &st));
	T_ASSERT("stat: not NUL-terminated: stops at len",
		 load_parse_starttime(real, strlen(real) - 1, &st) &&
			 st == 987654);
}

int
main(void)
{
	test_saturated();
	test_side();
	test_age();
	test_recycle();
	test_stat();
	return T_REPORT();
}
