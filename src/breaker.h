/*
 * breaker.h - per-provider circuit breaker (SPEC section 5), pure.
 *
 * Consecutive failures are counted in a rec_failure; at fail_limit the
 * breaker trips: a cooldown is produced and the count starts again.  A
 * success resets the count.  429s never reach the breaker.
 */
#ifndef ORGW_BREAKER_H
#define ORGW_BREAKER_H

#include "record.h"

/*
 * Records one failure (reason is copied, truncated) at now.  Returns
 * true when the breaker tripped; then *trip holds the cooldown (until
 * now + cooldown_seconds) and f->count is back to 0.
 */
bool breaker_fail(struct rec_failure *f, const char *reason, int64_t now,
		  int fail_limit, int64_t cooldown_seconds,
		  struct rec_cooldown *trip);

/* Records a success: the consecutive count starts again. */
void breaker_ok(struct rec_failure *f);

/* True when c says the provider is still cooling down at now. */
bool breaker_cooling(const struct rec_cooldown *c, int64_t now);

#endif
