/*
 * store_gdbm.h - the GDBM back-end of the state store (STATE_BACKEND=gdbm,
 * the default; docs/design.md section 7, docs/style.md 7): one GDBM file plus a lock
 * file.  store.c calls it through store_gdbm_backend (store_impl.h); the
 * unit tests call these with a path.
 *
 * A transaction is store_gdbm_open() ... store_close(): the lock file is
 * flock'ed (shared for readers, exclusive for writers) and the database
 * opened with GDBM_NOLOCK inside the lock.  A process keeps its writer's
 * handles for its next transactions, and uses them only while the lock
 * file's generation and the files show that no other writer has written
 * since (store_gdbm_keep.c); otherwise it opens the files afresh, so every
 * process sees the others' writes.  No network I/O may happen inside a
 * transaction.
 * Writes go through to the file at once: store_abort() only releases
 * (it cannot take back what was written), and a commit never conflicts.
 *
 * A damaged file never stops the gateway: operations report ORGW_EIO,
 * and store_gdbm_repair() recovers the file (gdbm_recover) or moves it
 * aside and starts a new one, logging what it did.
 */
#ifndef ORGW_STORE_GDBM_H
#define ORGW_STORE_GDBM_H

#include "store_impl.h"

/*
 * Begins a transaction on the GDBM file at path (lock file path.lock).
 * write selects an exclusive lock and a writer (creating the file with
 * STATE_MODE); readers of a missing file see an empty store.  Waits for the
 * lock up to timeout_ms (ORGW_EBUSY after).  ORGW_EIO when the file
 * cannot be opened (damaged: call store_gdbm_repair()).  On ORGW_OK *out
 * is the caller's until store_close() or store_abort().
 */
enum orgw_err store_gdbm_open(struct store **out, const char *path,
			      bool write, int64_t timeout_ms);

/*
 * One scoring run at a time (orgw-score from cron and POST /__cron), and
 * at most one every min_interval_s seconds (0: no interval): an exclusive
 * flock on path.score (opened like the state files), which holds the
 * start time of the last run begun with an interval.  ORGW_OK with
 * *fd_out to pass to store_gdbm_run_end() when the run is over;
 * ORGW_EBUSY with *retry_after_s when another run holds it or the last
 * began too recently; ORGW_EIO (logged).
 */
enum orgw_err store_gdbm_run_begin(const char *path, int64_t min_interval_s,
				   int64_t now_s, int *fd_out,
				   int64_t *retry_after_s);

/* Ends a run begun by store_gdbm_run_begin(); fd -1 is a no-op. */
void store_gdbm_run_end(int fd);

/*
 * Checks, without opening GDBM, that a writer could open the store at
 * path: its directory and files are not refused (a symlink, writable by
 * others), the files (or, for a missing one, the directory) are writable,
 * and a shared lock can be had within a second (never the exclusive one).
 * ORGW_OK, or ORGW_EIO / ORGW_EBUSY with a reason (naming paths) in why
 * (n bytes).
 */
enum orgw_err store_gdbm_check(const char *path, char *why, size_t n);

/*
 * Repairs the file at path under an exclusive lock: if it is damaged and
 * the twin (path.twin) reads back whole, rename it to path.corrupt and
 * copy the twin over it; else if it opens and needs recovery,
 * gdbm_recover() it; if it cannot be opened as GDBM, rename it to
 * path.corrupt and create an empty one.  ORGW_EIO without touching
 * either file when a dead writer's transaction could not be undone from
 * the twin (the twin is the better copy until it can).  Logs what it did.
 */
enum orgw_err store_gdbm_repair(const char *path, int64_t timeout_ms);

/*
 * Maintenance for the scorer (docs/style.md 7): recover if needed, then
 * gdbm_reorganize to reclaim space.  Holds the exclusive lock.
 */
enum orgw_err store_gdbm_tidy(const char *path, int64_t timeout_ms);

#endif
