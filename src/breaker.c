/* breaker.c - the circuit breaker's arithmetic; see breaker.h. */
#include <stdio.h>
#include <string.h>

#include "breaker.h"

bool
breaker_fail(struct rec_failure *f, const char *reason, int64_t now,
	     int fail_limit, int64_t cooldown_seconds,
	     struct rec_cooldown *trip)
{
	f->count++;
	f->last = now;
	snprintf(f->reason, sizeof(f->reason), "%s", reason);
	if (f->count < fail_limit)
		return false;
	memset(trip, 0, sizeof(*trip));
	trip->until = now + cooldown_seconds;
	snprintf(trip->reason, sizeof(trip->reason), "%s", reason);
	f->count = 0;
	return true;
}

void
breaker_ok(struct rec_failure *f)
{
	f->count = 0;
}

bool
breaker_cooling(const struct rec_cooldown *c, int64_t now)
{
	return c != NULL && c->until > now;
}
