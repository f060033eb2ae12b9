/* test_guard.c - guard.c: refused keys per client address and per key. */
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
		guard_fail(&g, "192.0.2.1", 0, 1000 + i);
	T_ASSERT("below the limit: may try",
		 guard_wait(&g, "192.0.2.1", 0, 1010) == 0);
	guard_fail(&g, "192.0.2.1", 0, 1010);
	T_ASSERT("at the limit: wait until its minute ends (50 s)",
		 guard_wait(&g, "192.0.2.1", 0, 1010) == 50);
	T_ASSERT("... 1 s before it ends: 1",
		 guard_wait(&g, "192.0.2.1", 0, 1059) == 1);
	T_ASSERT("... and free again once it ended",
		 guard_wait(&g, "192.0.2.1", 0, 1060) == 0);
	T_ASSERT("another address is not held",
		 guard_wait(&g, "192.0.2.2", 0, 1010) == 0);
	guard_fail(&g, "192.0.2.1", 0, 1060);
	T_ASSERT("a new minute counts from one again",
		 guard_wait(&g, "192.0.2.1", 0, 1061) == 0);
	T_ASSERT("a clock that went back frees it",
		 guard_wait(&g, "192.0.2.1", 0, 900) == 0);
	guard_fail(&g, NULL, 0, 1000);
	guard_fail(&g, "", 0, 1000);
	T_ASSERT("no address: never held", guard_wait(&g, "", 0, 1000) == 0 &&
		 guard_wait(&g, NULL, 0, 1000) == 0);
}

static void
test_full(void)
{
	char a[32];
	int i, k;

	memset(&g, 0, sizeof(g));
	for (k = 0; k < GUARD_FAILS_PER_MINUTE; k++)
		guard_fail(&g, "198.51.100.7", 0, 2000);
	for (i = 0; i < GUARD_SLOTS - 1; i++) {
		snprintf(a, sizeof(a), "10.0.%d.%d", i / 256, i % 256);
		guard_fail(&g, a, 0, 2001);
	}
	T_ASSERT("a full table keeps the held address",
		 guard_wait(&g, "198.51.100.7", 0, 2001) == 59);
	guard_fail(&g, "203.0.113.9", 0, 2002);
	T_ASSERT("one more makes room with the oldest window",
		 guard_wait(&g, "198.51.100.7", 0, 2002) == 0);
	for (k = 0; k < GUARD_FAILS_PER_MINUTE; k++)
		guard_fail(&g, "203.0.113.9", 0, 2002);
	T_ASSERT("the newcomer is counted",
		 guard_wait(&g, "203.0.113.9", 0, 2002) == 60);
	{
		char big[GUARD_ADDR_MAX + 8];

		memset(big, '1', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		for (k = 0; k < GUARD_FAILS_PER_MINUTE; k++)
			guard_fail(&g, big, 0, 2002);
		T_ASSERT("an address too long to keep is not counted",
			 guard_wait(&g, big, 0, 2002) == 0);
	}
}

/* Different keys hold an address; one key retried holds only itself;
 * keys 0 (unknown) count for the address each time. */
static void
test_keys(void)
{
	uint64_t k;
	int i;

	memset(&g, 0, sizeof(g));
	/* An agent retrying one revoked key, 30 times in its minute. */
	for (i = 0; i < 3 * GUARD_FAILS_PER_MINUTE; i++)
		guard_fail(&g, "192.0.2.5", 0xabc, 3000);
	T_ASSERT("one wrong key retried: that key is held",
		 guard_wait(&g, "192.0.2.5", 0xabc, 3000) == 60);
	T_ASSERT("... from any address",
		 guard_wait(&g, "198.51.100.1", 0xabc, 3010) == 50);
	T_ASSERT("... but not its address: other keys from it may try",
		 guard_wait(&g, "192.0.2.5", 0xdef, 3000) == 0 &&
			 guard_wait(&g, "192.0.2.5", 0, 3000) == 0);
	T_ASSERT("... and the key is free once its minute ended",
		 guard_wait(&g, "192.0.2.5", 0xabc, 3060) == 0);
	/* A guesser: a different key each time. */
	for (k = 1; k < GUARD_FAILS_PER_MINUTE; k++)
		guard_fail(&g, "192.0.2.9", k, 4000);
	T_ASSERT("9 different keys: the address may still try",
		 guard_wait(&g, "192.0.2.9", 0x999, 4000) == 0);
	guard_fail(&g, "192.0.2.9", 1, 4000);
	T_ASSERT("... a key it tried again is not a new guess",
		 guard_wait(&g, "192.0.2.9", 0x999, 4000) == 0);
	guard_fail(&g, "192.0.2.9", GUARD_FAILS_PER_MINUTE, 4001);
	T_ASSERT("the 10th different key: the address is held, any key",
		 guard_wait(&g, "192.0.2.9", 0x999, 4001) == 59 &&
			 guard_wait(&g, "192.0.2.9", 0, 4001) == 59);
	T_ASSERT("... none of its keys is held elsewhere",
		 guard_wait(&g, "203.0.113.1", 1, 4001) == 0);
	memset(&g, 0, sizeof(g));
	for (i = 0; i < GUARD_FAILS_PER_MINUTE; i++)
		guard_fail(&g, NULL, 0x77, 5000);
	T_ASSERT("no address: the key is still counted",
		 guard_wait(&g, NULL, 0x77, 5000) == 60 &&
			 guard_wait(&g, "192.0.2.1", 0x77, 5000) == 60);
}

int
main(void)
{
	test_window();
	test_full();
	test_keys();
	return T_REPORT();
}
