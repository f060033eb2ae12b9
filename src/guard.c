/* guard.c - refused keys per client address; see guard.h. */
#include <string.h>

#include "guard.h"

/* The index of addr's slot, or GUARD_SLOTS. */
static size_t
find(const struct guard *g, const char *addr)
{
	size_t i;

	for (i = 0; i < GUARD_SLOTS; i++)
		if (g->slot[i].addr[0] != '\0' &&
		    strcmp(g->slot[i].addr, addr) == 0)
			break;
	return i;
}

void
guard_fail(struct guard *g, const char *addr, int64_t now)
{
	struct guard_slot *s = NULL, *old;
	size_t i;

	if (addr == NULL || addr[0] == '\0' ||
	    strlen(addr) >= GUARD_ADDR_MAX)
		return;
	if ((i = find(g, addr)) < GUARD_SLOTS)
		s = &g->slot[i];
	if (s == NULL) {
		/* A free slot, else the one whose window started first: an
		 * address that has waited longest has least to lose. */
		old = &g->slot[0];
		for (i = 0; i < GUARD_SLOTS; i++) {
			if (g->slot[i].addr[0] == '\0') {
				old = &g->slot[i];
				break;
			}
			if (g->slot[i].since < old->since)
				old = &g->slot[i];
		}
		s = old;
		memcpy(s->addr, addr, strlen(addr) + 1);
		s->since = now;
		s->fails = 0;
	}
	if (now - s->since >= GUARD_WINDOW_SECONDS || now < s->since) {
		s->since = now;
		s->fails = 0;
	}
	if (s->fails < GUARD_FAILS_PER_MINUTE)
		s->fails++;
}

int64_t
guard_wait(const struct guard *g, const char *addr, int64_t now)
{
	const struct guard_slot *s;
	size_t i;
	int64_t left;

	if (addr == NULL || addr[0] == '\0' ||
	    (i = find(g, addr)) == GUARD_SLOTS)
		return 0;
	s = &g->slot[i];
	if (s->fails < GUARD_FAILS_PER_MINUTE)
		return 0;
	left = s->since + GUARD_WINDOW_SECONDS - now;
	if (left <= 0 || left > GUARD_WINDOW_SECONDS)
		return 0;
	return left;
}
