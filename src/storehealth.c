/*
 * storehealth.c - what the state's transactions report beyond their own
 * result (storehealth.h): the process's count of request counts lost, an
 * atomic, and refused or committed writes, noted in the host's worker
 * table (workertab.c) so that whichever worker answers /healthz knows.
 */
#include <stdatomic.h>

#include "log.h"
#include "workertab.h"
#include "storehealth.h"

static _Atomic int64_t store_lost;

void
store_write_refused(int cause)
{
	workertab_write_note(true, cause);
}

void
store_write_ok(void)
{
	workertab_write_note(false, 0);
}

const char *
store_cause_str(int cause)
{
	switch (cause) {
	case STORE_CAUSE_OOM:
		return "OOM: redis is at maxmemory and evicts nothing";
	case STORE_CAUSE_EXECABORT:
		return "EXECABORT: redis discarded the transaction";
	case STORE_CAUSE_WRONGTYPE:
		return "WRONGTYPE: a key of another type";
	case STORE_CAUSE_REDIS:
		return "an error reply from redis";
	default:
		return log_strerror(cause);
	}
}

void
store_lost_add(int64_t n)
{
	atomic_fetch_add(&store_lost, n);
}

int64_t
store_lost_take(void)
{
	return atomic_exchange(&store_lost, 0);
}

int64_t
store_lost_peek(void)
{
	return atomic_load(&store_lost);
}
