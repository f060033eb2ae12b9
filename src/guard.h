/*
 * guard.h - refused keys, in one worker process's memory, counted two
 * ways: per client address and per presented key (a hash of it).
 *
 *  - An address is held (answered 429 at once until its minute ends)
 *    after GUARD_FAILS_PER_MINUTE *different* refused keys within a
 *    minute: a guesser tries many keys, while an agent that retries one
 *    revoked key must not lock out the other keys of its host.
 *  - A key is held, from any address, after GUARD_FAILS_PER_MINUTE
 *    refusals of it within a minute: the agent retrying it is answered
 *    at once, and nobody else.
 *
 * Only a key that is no key counts (a valid key that lacks a right is a
 * 403, never a refusal), and the caller lets the operator's key through
 * a held address (gateway_auth.c).
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

/* What a slot counts: "a ADDR" for an address, "k HEX" for a key. */
#define GUARD_ID_MAX (GUARD_ADDR_MAX + 2)

struct guard_slot {
	char id[GUARD_ID_MAX];		/* "" when free */
	int64_t since;			/* start of its window, unix s */
	unsigned fails;			/* refusals in that window (an
					 * address: of different keys) */
	uint64_t seen[GUARD_FAILS_PER_MINUTE];	/* an address: the keys
						 * counted, fails of them */
};

struct guard {
	struct guard_slot slot[GUARD_SLOTS];
};

/*
 * Records a refused key from addr at now.  key is the presented key's
 * hash (guard counts it apart from every other); 0 when none is known,
 * which counts for the address every time.  addr NULL or "" (no
 * REMOTE_ADDR) counts only for the key.
 */
void guard_fail(struct guard *g, const char *addr, uint64_t key,
		int64_t now);

/* 0 when addr may try key (its hash, 0: none) at now, else the seconds
 * until it may (Retry-After, 1..GUARD_WINDOW_SECONDS): the longer wait
 * of the address and of the key. */
int64_t guard_wait(const struct guard *g, const char *addr, uint64_t key,
		   int64_t now);

#endif
