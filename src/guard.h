/*
 * guard.h - refused keys per client address, in one worker process's
 * memory: after GUARD_FAILS_PER_MINUTE refusals within a minute from one
 * address, that address is answered 429 at once until its minute ends.
 *
 * Why in memory: a count in the state would make every wrong guess a
 * write transaction, and a sleep would hold a worker thread for each
 * guess; both would let the guessing slow everyone else.  Each process
 * counts for itself, so a host of W workers lets W times as many through
 * before all of them refuse; the log line of every refusal (with the
 * address) lets fail2ban act host-wide.
 *
 * Pure: no I/O, no clock (the time is an argument), no locking: the
 * caller serialises access to one struct guard.
 */
#ifndef ORGW_GUARD_H
#define ORGW_GUARD_H

#include <stdbool.h>
#include <stdint.h>

#define GUARD_FAILS_PER_MINUTE 10
#define GUARD_WINDOW_SECONDS 60
/* Addresses tracked at once; when full, the one whose window started
 * first makes room. */
#define GUARD_SLOTS 256
/* An IPv6 address in text, with room to spare. */
#define GUARD_ADDR_MAX 64

struct guard_slot {
	char addr[GUARD_ADDR_MAX];	/* "" when free */
	int64_t since;			/* start of its window, unix s */
	unsigned fails;			/* refusals in that window */
};

struct guard {
	struct guard_slot slot[GUARD_SLOTS];
};

/* Records a refused key from addr at now.  addr NULL or "" (no
 * REMOTE_ADDR) is not counted. */
void guard_fail(struct guard *g, const char *addr, int64_t now);

/* 0 when addr may try a key at now, else the seconds until it may
 * (Retry-After, 1..GUARD_WINDOW_SECONDS). */
int64_t guard_wait(const struct guard *g, const char *addr, int64_t now);

#endif
