/* guard.c - refused keys per client address and per key; see guard.h. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "guard.h"

/* The slot id of addr (key 0) or of key into id; false when there is
 * nothing to count (no address, or one too long). */
static bool
slot_id(char id[GUARD_ID_MAX], const char *addr, uint64_t key)
{
	int n;

	if (addr == NULL)
		n = snprintf(id, GUARD_ID_MAX, "k %016" PRIx64, key);
	else if (addr[0] == '\0' || strlen(addr) >= GUARD_ADDR_MAX)
		return false;
	else
		n = snprintf(id, GUARD_ID_MAX, "a %s", addr);
	return n > 0 && n < GUARD_ID_MAX;
}

/* The index of id's slot, or GUARD_SLOTS. */
static size_t
find(const struct guard *g, const char *id)
{
	size_t i;

	for (i = 0; i < GUARD_SLOTS; i++)
		if (g->slot[i].id[0] != '\0' && strcmp(g->slot[i].id, id) == 0)
			break;
	return i;
}

/* id's slot, made (in a free slot, else the one whose window started
 * first: what has waited longest has least to lose) when it has none,
 * its window restarted when it ended at now. */
static struct guard_slot *
slot_at(struct guard *g, const char *id, int64_t now)
{
	struct guard_slot *s, *old = &g->slot[0];
	size_t i;

	if ((i = find(g, id)) < GUARD_SLOTS) {
		s = &g->slot[i];
	} else {
		for (i = 0; i < GUARD_SLOTS; i++) {
			if (g->slot[i].id[0] == '\0') {
				old = &g->slot[i];
				break;
			}
			if (g->slot[i].since < old->since)
				old = &g->slot[i];
		}
		s = old;
		memcpy(s->id, id, strlen(id) + 1);
		s->since = now;
		s->fails = 0;
	}
	if (now - s->since >= GUARD_WINDOW_SECONDS || now < s->since) {
		s->since = now;
		s->fails = 0;
	}
	return s;
}

void
guard_fail(struct guard *g, const char *addr, uint64_t key, int64_t now)
{
	char id[GUARD_ID_MAX];
	struct guard_slot *s;
	unsigned i;

	if (key != 0 && slot_id(id, NULL, key)) {
		s = slot_at(g, id, now);
		if (s->fails < GUARD_FAILS_PER_MINUTE)
			s->fails++;
	}
	if (!slot_id(id, addr, 0))
		return;
	s = slot_at(g, id, now);
	/* A key this address had refused already this minute is the
	 * same wrong key again: held by its own count, not a new guess. */
	for (i = 0; key != 0 && i < s->fails; i++)
		if (s->seen[i] == key)
			return;
	if (s->fails < GUARD_FAILS_PER_MINUTE)
		s->seen[s->fails++] = key;
}

/* The wait of the slot id at now (0: none). */
static int64_t
wait_of(const struct guard *g, const char *id, int64_t now)
{
	const struct guard_slot *s;
	size_t i;
	int64_t left;

	if ((i = find(g, id)) == GUARD_SLOTS)
		return 0;
	s = &g->slot[i];
	if (s->fails < GUARD_FAILS_PER_MINUTE)
		return 0;
	left = s->since + GUARD_WINDOW_SECONDS - now;
	if (left <= 0 || left > GUARD_WINDOW_SECONDS)
		return 0;
	return left;
}

int64_t
guard_wait(const struct guard *g, const char *addr, uint64_t key,
	   int64_t now)
{
	char id[GUARD_ID_MAX];
	int64_t a = 0, k = 0;

	if (slot_id(id, addr, 0))
		a = wait_of(g, id, now);
	if (key != 0 && slot_id(id, NULL, key))
		k = wait_of(g, id, now);
	return a > k ? a : k;
}
