/*
 * store.h - the shared state store: one GDBM file plus a lock file
 * (SPEC section 7, STYLE.md 7).
 *
 * A transaction is store_open() ... store_close(): the lock file is
 * flock'ed (shared for readers, exclusive for writers), the database is
 * opened with GDBM_NOLOCK inside the lock and closed before the lock is
 * released, so every process sees the others' writes.  No handle
 * outlives its transaction; no network I/O may happen inside one.
 *
 * A damaged file never stops the gateway: operations report ORGW_EIO,
 * and store_repair() recovers the file (gdbm_recover) or moves it aside
 * and starts a new one, logging what it did.
 */
#ifndef ORGW_STORE_H
#define ORGW_STORE_H

#include "orgw.h"

struct store;

#define STORE_LOCK_TIMEOUT_MS 3000

/*
 * The mode of the state and lock files orgw creates (STATE_MODE, SPEC 8:
 * 0600, or 0640/0660 for a scorer of the same group); bits for others are
 * dropped.  Process-wide: call once at start, before any thread.
 */
void store_set_mode(unsigned mode);

/*
 * Opens (creating with STATE_MODE) a side file of the state, such as the
 * worker table STATE_PATH.workers, read-write, with the checks the state
 * files get: not a symlink, a regular file not writable by others, in a
 * directory that is not a symlink nor writable by others.  Returns the
 * fd (O_CLOEXEC; the caller closes it) or -1 (errno set; a refusal has
 * been logged).
 */
int store_open_side(const char *file);

/*
 * Begins a transaction on the GDBM file at path (lock file path.lock).
 * write selects an exclusive lock and a writer (creating the file with
 * STATE_MODE); readers of a missing file see an empty store.  Waits for the
 * lock up to timeout_ms (ORGW_EBUSY after).  ORGW_EIO when the file
 * cannot be opened (damaged: call store_repair()).  On ORGW_OK *out is
 * the caller's until store_close().
 */
enum orgw_err store_open(struct store **out, const char *path, bool write,
			 int64_t timeout_ms);

/*
 * One scoring run at a time (orgw-score from cron and POST /__cron), and
 * at most one every min_interval_s seconds (0: no interval): an exclusive
 * flock on path.score (opened like the state files), which holds the
 * start time of the last run begun with an interval.  ORGW_OK with *fd_out to pass to store_run_end()
 * when the run is over; ORGW_EBUSY with *retry_after_s when another run
 * holds it or the last began too recently; ORGW_EIO (logged).
 */
enum orgw_err store_run_begin(const char *path, int64_t min_interval_s,
			      int64_t now_s, int *fd_out,
			      int64_t *retry_after_s);

/* Ends a run begun by store_run_begin(); fd -1 is a no-op. */
void store_run_end(int fd);

/*
 * Checks, without opening GDBM, that a writer could open the store at
 * path: its directory and files are not refused (a symlink, writable by
 * others), the files (or, for a missing one, the directory) are writable,
 * and a shared lock can be had within 200 ms (never the exclusive one).
 * For /healthz, which anyone may ask often.  ORGW_OK, or ORGW_EIO /
 * ORGW_EBUSY with a reason (naming paths) in why (n bytes).
 */
enum orgw_err store_check(const char *path, char *why, size_t n);

/*
 * Fetches key: *val is malloc'd NUL-terminated text (caller frees), or
 * NULL when the key is absent.  ORGW_EIO on a read error.
 */
enum orgw_err store_get(struct store *s, const char *key, char **val);

/* Stores val under key (writers only). */
enum orgw_err store_put(struct store *s, const char *key, const char *val);

/* Deletes key (writers only); absent is ORGW_OK. */
enum orgw_err store_del(struct store *s, const char *key);

/*
 * Calls fn for each key beginning with prefix ("" for all), with its
 * value (borrowed for the call).  fn returns 0 to go on.
 */
enum orgw_err store_each(struct store *s, const char *prefix,
			 int (*fn)(void *arg, const char *key,
				   const char *val),
			 void *arg);

/*
 * Ends the transaction: closes the database (syncing a writer's
 * changes), releases the lock, frees s.  ORGW_EIO when the close failed
 * (a writer's changes may be lost).  NULL is a no-op.
 */
enum orgw_err store_close(struct store *s);

/*
 * Repairs the file at path under an exclusive lock: if it opens and
 * needs recovery, gdbm_recover() it; if it cannot be opened as GDBM,
 * rename it to path.corrupt and create an empty one.  Logs what it did.
 */
enum orgw_err store_repair(const char *path, int64_t timeout_ms);

/*
 * Maintenance for the scorer (STYLE.md 7): recover if needed, then
 * gdbm_reorganize to reclaim space.  Holds the exclusive lock.
 */
enum orgw_err store_tidy(const char *path, int64_t timeout_ms);

#endif
