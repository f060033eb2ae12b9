/*
 * store.h - the shared state store, whatever holds it (docs/design.md section 7,
 * docs/style.md 7): the back-end boundary.  STATE_BACKEND=gdbm (default: one
 * GDBM file, store_gdbm.c) or STATE_BACKEND=redis (one Redis for several
 * gateway hosts, store_redis.c).  Everything above this file (state.c and
 * its modules state_*.c, stats.c, scorerun.c, orgw-score) sees the same
 * transactions:
 *
 *   store_open(write or read) -> store_get/put/del/each -> store_close
 *   (commit) or store_abort.
 *
 * Keys and values are the same text on both back-ends (Redis prefixes
 * keys with "orgw:").  A write transaction reads what it will decide on
 * and writes the outcome; on GDBM the exclusive lock makes that atomic,
 * on Redis the keys it read are WATCHed, its writes buffered and sent
 * with MULTI/EXEC at store_close(), which returns ORGW_ECONFLICT (nothing
 * written) when another host changed a key read meanwhile: the caller
 * runs the whole transaction again (state_txn() does).  A transaction
 * must therefore hold no effect outside the store until it committed.
 * No network I/O other than the store's own may happen inside one.
 */
#ifndef ORGW_STORE_H
#define ORGW_STORE_H

#include "conf.h"
#include "orgw.h"
#include "storehealth.h"

struct store;
struct store_run;

#define STORE_LOCK_TIMEOUT_MS 3000

/*
 * Begins a transaction on c's state store.  write selects a read-modify-
 * write transaction (GDBM: exclusive lock, created with STATE_MODE;
 * Redis: WATCH on every key read).  Readers of a missing store see an
 * empty one.  ORGW_EBUSY when the GDBM lock is not had within timeout_ms;
 * ORGW_EIO when the store cannot be opened (a damaged file: see
 * store_repair(); Redis unreachable).  On ORGW_OK *out is the caller's
 * until store_close() or store_abort().
 */
enum orgw_err store_open(struct store **out, const struct orgw_conf *c,
			 bool write, int64_t timeout_ms);

/*
 * Fetches key: *val is malloc'd NUL-terminated text (caller frees), or
 * NULL when the key is absent.  A write transaction sees its own writes.
 * ORGW_EIO on a read error.
 */
enum orgw_err store_get(struct store *s, const char *key, char **val);

/* Stores val under key (writers only). */
enum orgw_err store_put(struct store *s, const char *key, const char *val);

/* Stores text under key and frees it (free(): orgw's encoders and
 * cJSON's printers allocate with malloc); a NULL text, an encoder that
 * ran out of memory, is ORGW_ENOMEM and stores nothing. */
enum orgw_err store_put_text(struct store *s, const char *key, char *text);

/* Deletes key (writers only); absent is ORGW_OK. */
enum orgw_err store_del(struct store *s, const char *key);

/*
 * Calls fn for each key beginning with prefix ("" for all), once each,
 * with its value (borrowed for the call).  fn returns 0 to go on.
 */
enum orgw_err store_each(struct store *s, const char *prefix,
			 int (*fn)(void *arg, const char *key,
				   const char *val),
			 void *arg);

/*
 * Commits and ends the transaction, freeing s.  ORGW_ECONFLICT (Redis):
 * a key read was changed by another writer, nothing was written; run the
 * transaction again.  ORGW_EIO when the commit failed (a writer's changes
 * may be lost).  NULL is a no-op.
 */
enum orgw_err store_close(struct store *s);

/*
 * Asks that store_close() of write transaction s report a commit that
 * went in as ORGW_OK even when its answer was lost on the way, for a
 * caller that acts on a failure (state_batch.c adds a failed batch's counts to
 * LOST_UPDATES: a commit that went in and was reported failed would be
 * counted twice).  Call it before the first get, put or each.  GDBM
 * knows every outcome (the commit is local); on Redis a commit whose
 * EXEC reply was lost is settled on a new connection, for up to
 * STORE_REDIS_FENCE_MS (store_redis.h), and only when that cannot be
 * learnt does store_close() return ORGW_EIO for a commit that may have
 * gone in (logged as such).
 */
void store_exact_outcome(struct store *s);

/*
 * The time for a window shared by every host (a team key's rpm): the
 * store's clock in unix ms into *ms, read inside transaction s, so hosts
 * whose own clocks differ count in one window.  Redis: its TIME (the
 * same server for every host).  GDBM and the in-memory store: host_ms,
 * the caller's clock (one host's file has no other).  ORGW_EIO (*ms
 * host_ms) when the store did not answer.
 */
enum orgw_err store_now_ms(struct store *s, int64_t host_ms, int64_t *ms);

/*
 * Ends the transaction without committing what is still buffered
 * (Redis: nothing of it is written; GDBM writes through, so what was
 * put is kept), freeing s.  NULL is a no-op.
 */
void store_abort(struct store *s);

/*
 * One scoring run at a time (orgw-score from cron and POST /__cron), and
 * at most one every min_interval_s seconds (0: no interval).  GDBM: a
 * flock on STATE_PATH.score; Redis: SET orgw:RUN NX PX with a token,
 * and orgw:RUN_LAST for the interval.  ORGW_OK with *run (pass to
 * store_run_end()); ORGW_EBUSY with *retry_after_s when another run
 * holds it or the last began too recently; ORGW_EIO (logged).
 */
enum orgw_err store_run_begin(const struct orgw_conf *c,
			      int64_t min_interval_s, int64_t now_s,
			      struct store_run **run, int64_t *retry_after_s);

/* Ends a run begun by store_run_begin() and frees run; NULL is a no-op. */
void store_run_end(struct store_run *run);

/*
 * For /healthz, which anyone may ask often: GDBM, that a writer could
 * open the file (no GDBM open, a shared lock within a second at most);
 * Redis, a PING within the command timeout (or the last connection
 * error while reconnecting is backed off).  Then, whatever the back-end,
 * that this host's store took its recent writes: a store that opens but
 * refuses writes (a full disk, a Redis at maxmemory) gives ORGW_EIO for
 * STORE_REFUSED_RECENT_MS after a refusal, unless a write transaction
 * committed since (workertab.h keeps the record for all of the host's
 * workers).  Writes nothing.  ORGW_OK, or ORGW_EIO / ORGW_EBUSY with a
 * reason in why (n bytes), e.g. "redis unreachable: Connection refused".
 */
enum orgw_err store_check(const struct orgw_conf *c, char *why, size_t n);

/*
 * Repairs a damaged store (GDBM: gdbm_recover, or move aside and
 * recreate; logged).  Redis has nothing to repair: ORGW_EIO, so a caller
 * does not retry a transaction that failed for want of a connection.
 */
enum orgw_err store_repair(const struct orgw_conf *c, int64_t timeout_ms);

/* Maintenance for the scorer (GDBM: recover, reorganize); Redis: ORGW_OK. */
enum orgw_err store_tidy(const struct orgw_conf *c, int64_t timeout_ms);

#endif
