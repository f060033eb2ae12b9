/* test_guard.c - guard.c: refused keys per client address. */
#include <stdio.h>
#include <string.h>

#include "guard.h"
#include "t.h"

static struct guard g;

static void
test_window(void)
{
	int i;

	memset(&g, 0, sizeof(g));
	for (i = 0; i < GUARD_FAILS_PER_MINUTE - 1; i++)
		guard_fail(&g, "192.0.2.1", 1000 + i);
	T_ASSERT("below the limit: may try",
		 guard_wait(&g, "192.0.2.1", 1010) == 0);
	guard_fail(&g, "192.0.2.1", 1010);
	T_ASSERT("at the limit: wait until its minute ends (50 s)",
		 guard_wait(&g, "192.0.2.1", 1010) == 50);
	T_ASSERT("... 1 s before it ends: 1",
		 guard_wait(&g, "192.0.2.1", 1059) == 1);
	T_ASSERT("... and free again once it ended",
		 guard_wait(&g, "192.0.2.1", 1060) == 0);
	T_ASSERT("another address is not held",
		 guard_wait(&g, "192.0.2.2", 1010) == 0);
	guard_fail(&g, "192.0.2.1", 1060);
	T_ASSERT("a new minute counts from one again",
		 guard_wait(&g, "192.0.2.1", 1061) == 0);
	T_ASSERT("a clock that went back frees it",
		 guard_wait(&g, "192.0.2.1", 900) == 0);
	guard_fail(&g, NULL, 1000);
	guard_fail(&g, "", 1000);
	T_ASSERT("no address: never held", guard_wait(&g, "", 1000) == 0 &&
		 guard_wait(&g, NULL, 1000) == 0);
}

static void
test_full(void)
{
	char a[32];
	int i, k;

	memset(&g, 0, sizeof(g));
	for (k = 0; k < GUARD_FAILS_PER_MINUTE; k++)
		guard_fail(&g, "198.51.100.7", 2000);
	for (i = 0; i < GUARD_SLOTS - 1; i++) {
		snprintf(a, sizeof(a), "10.0.%d.%d", i / 256, i % 256);
		guard_fail(&g, a, 2001);
	}
	T_ASSERT("a full table keeps the held address",
		 guard_wait(&g, "198.51.100.7", 2001) == 59);
	guard_fail(&g, "203.0.113.9", 2002);
	T_ASSERT("one more makes room with the oldest window",
		 guard_wait(&g, "198.51.100.7", 2002) == 0);
	for (k = 0; k < GUARD_FAILS_PER_MINUTE; k++)
		guard_fail(&g, "203.0.113.9", 2002);
	T_ASSERT("the newcomer is counted",
		 guard_wait(&g, "203.0.113.9", 2002) == 60);
	{
		char big[GUARD_ADDR_MAX + 8];

		memset(big, '1', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		for (k = 0; k < GUARD_FAILS_PER_MINUTE; k++)
			guard_fail(&g, big, 2002);
		T_ASSERT("an address too long to keep is not counted",
			 guard_wait(&g, big, 2002) == 0);
	}
}

int
main(void)
{
	test_window();
	test_full();
	return T_REPORT();
}
