/*
 * workertab.h - the host's worker table: how many threads each worker process
 * of this host has and how many are serving, in a small file beside the
 * state (STATE_PATH.workers) that every worker maps.  See workertab.c.
 */
#ifndef ORGW_WORKERTAB_H
#define ORGW_WORKERTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "orgw.h"
#include "load.h"

/*
 * Claims this process's slot in <state_path>.workers (created with
 * STATE_MODE, checked like the state files) for threads threads,
 * reclaiming the slots of dead processes.  When the file cannot be used
 * the counts stay in this process (load->shared false) after a warning:
 * saturation is then judged per process.  Call once, before the threads
 * start.  ORGW_OK, or ORGW_ENOMEM.
 */
enum orgw_err workertab_open(const char *state_path, unsigned threads);

/*
 * A thread takes a request: counts it busy and fills *load with the
 * host's load, this request included.  Pair with workertab_leave().
 * Thread-safe.
 */
void workertab_enter(struct orgw_load *load);

/* Fills *load with the host's load now, as workertab_enter() does, counting
 * nothing.  Thread-safe. */
void workertab_peek(struct orgw_load *load);

/*
 * The thread's request is a side request (load.h, load_side_refused):
 * counts it and returns the host's side requests, this one included (0
 * when no table was opened: CGI).  Pair with workertab_side_leave(), before
 * workertab_leave().  Thread-safe.
 */
unsigned workertab_side_enter(void);
void workertab_side_leave(void);

/*
 * Memory the host's requests hold for request bodies, non-streamed
 * answers and their parse (HOST_PARSE_MEMORY_BYTES): workertab_mem_take()
 * counts bytes more for this process and returns true when the host's
 * total, over every live worker of the table, stays within budget; else
 * it counts nothing and returns false (the caller answers 503).  Without
 * a table (CGI) the total is this process's.  workertab_mem_give() uncounts
 * what a take counted, and returns the process's free memory to the
 * system after a large one.  Thread-safe.
 */
bool workertab_mem_take(size_t bytes, size_t budget);
void workertab_mem_give(size_t bytes);

/* A request just freed bytes (a large answer and its tree): returns the
 * process's free memory to the system when that is large (4 MiB or
 * more), as workertab_mem_give() does.  Thread-safe. */
void workertab_mem_trim(size_t bytes);

/* The thread's request ended. Thread-safe. */
void workertab_leave(void);

/* This process takes no more requests: its threads no longer count as
 * capacity (those still serving stay busy until they leave). */
void workertab_drain(void);

/* Frees this process's slot; after the threads ended. */
void workertab_close(void);

/*
 * The host's record of its state writes, for /healthz (store.h,
 * store_write_refused): workertab_write_note() notes a write transaction the
 * store refused (refused true, with its cause) or one it committed.
 * workertab_write_refused() is true, with the cause and how long ago, when
 * the last refusal is at most within_ms old and no write was committed
 * after it.  Kept in the worker table, so whichever worker answers sees
 * every worker's writes; a process without one (CGI mode, the scorer)
 * keeps its own.  Thread-safe, lock-free, no system call but the clock.
 */
void workertab_write_note(bool refused, int cause);

/*
 * A writer of the GDBM state that found its lock taken says so
 * (waiting true) until it has it (false), and a reader about to take a
 * shared lock first lets such a writer in: workertab_writer_pending() is true
 * while a writer has waited for less than within_ms.  flock(2) lets new
 * readers in while a writer waits, so without this, readers whose shared
 * locks overlap (several /metrics of a large state) could keep every
 * writer out, and requests whose counts wait for a writer pile up until
 * no thread is free.  A writer that died waiting is forgotten after
 * within_ms.  Without a table (CGI, the scorer) nothing is noted.
 */
void workertab_writer_waiting(bool waiting);
bool workertab_writer_pending(int64_t within_ms);
bool workertab_write_refused(int64_t within_ms, int *cause, int64_t *ago_ms);

/*
 * The owner a team key's concurrency lease records (teamkey.h): this
 * host's table id, this process's pid and start time.  False (nothing
 * to record) without a shared table (CGI, the scorer).
 */
bool workertab_self(int64_t *host, int64_t *pid, int64_t *start);

/*
 * True when the lease owner (host, pid, start) is a worker of this
 * host's table that is gone: no process with that pid, or one that
 * started at another time (the pid reused).  False for another host's
 * table, an unknown owner (host 0) or a live worker.  A system call or
 * two (kill, /proc/PID/stat); thread-safe.
 */
bool workertab_owner_gone(int64_t host, int64_t pid, int64_t start);

#endif
