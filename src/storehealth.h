/*
 * storehealth.h - what the state's transactions report beyond their own
 * result, kept in this process and on this host for whoever asks later
 * (storehealth.c): request counts lost while the state was away, and
 * writes a store refused (for /healthz).  The back-ends note here; they
 * never call up into store.c.
 */
#ifndef ORGW_STOREHEALTH_H
#define ORGW_STOREHEALTH_H

#include <stdint.h>

/*
 * Why a store refused a write, beside errno values (which are positive):
 * the causes a Redis names in its error replies.
 */
#define STORE_CAUSE_OOM (-1)		/* at maxmemory, noeviction */
#define STORE_CAUSE_EXECABORT (-2)	/* MULTI/EXEC discarded */
#define STORE_CAUSE_WRONGTYPE (-3)	/* a key of another type */
#define STORE_CAUSE_REDIS (-4)		/* another error reply */

/* A refused write counts on /healthz for this long, unless a write
 * transaction commits after it. */
#define STORE_REFUSED_RECENT_MS 5000

/* The text of a cause (errno or STORE_CAUSE_*): a static string, or one
 * of log_strerror()'s, valid until the thread's next call. */
const char *store_cause_str(int cause);

/*
 * A back-end notes, where it logs it, that the store refused a write of
 * a write transaction (cause: an errno value such as ENOSPC, or a
 * STORE_CAUSE_*); store_write_ok() that a write transaction committed.
 * /healthz reports a refusal for STORE_REFUSED_RECENT_MS unless a commit
 * came after it (store_check).  Thread-safe; the record is the host's
 * (workertab.h), for all of its workers.
 */
void store_write_refused(int cause);
void store_write_ok(void);

/*
 * Request counts lost because the state was unavailable: a
 * process-wide count, thread-safe.  store_lost_add() adds n;
 * store_lost_take() returns the count and resets it to 0 (the caller
 * adds it to LOST_UPDATES in the store, or gives it back with
 * store_lost_add() when that fails); store_lost_peek() reads it.
 */
void store_lost_add(int64_t n);
int64_t store_lost_take(void);
int64_t store_lost_peek(void);

#endif
