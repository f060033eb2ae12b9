/*
 * store_redis.h - the Redis back-end of the state store
 * (STATE_BACKEND=redis): the keys of docs/design.md section 7 under "orgw:" in the
 * database of REDIS_URL, shared by every gateway host.  store.c calls it
 * through store_redis_backend (store_impl.h).
 *
 * One connection per thread (a _Thread_local pointer), made on first use
 * and reused across requests; every command has a timeout.  A failed
 * connect or command drops the connection and the next transaction
 * reconnects, with a backoff (100 ms doubling to 2 s) during which
 * transactions fail at once: a dead Redis costs a request one connect
 * timeout at most, never one per key.
 */
#ifndef ORGW_STORE_REDIS_H
#define ORGW_STORE_REDIS_H

#include "store_impl.h"

struct store_redis_run;

#define STORE_REDIS_CONNECT_TIMEOUT_MS 200
#define STORE_REDIS_COMMAND_TIMEOUT_MS 500
/* How long a transaction whose EXEC reply was lost asks again whether
 * it went in (store_exact_outcome), plus one connect and one command
 * timeout at most: longer than a Redis paused for a fork or a brief
 * stall, short enough that the batch waiting on it is not held long. */
#define STORE_REDIS_FENCE_MS 2000

/*
 * Begins a transaction on this thread's connection (connecting when
 * needed).  write: every key read is WATCHed, writes are buffered until
 * store_close(), which sends them in MULTI/EXEC and answers
 * ORGW_ECONFLICT when a watched key changed (nothing written).
 * ORGW_EIO (Redis unreachable; the reason is kept for store_check()).
 */
enum orgw_err store_redis_open(struct store **out, const struct orgw_conf *c,
			       bool write);

/* The scoring run lock: SET orgw:RUN <token> NX PX 15 min, and
 * orgw:RUN_LAST (the start of the last throttled run).  See
 * store_run_begin(); *run is freed by store_redis_run_end(). */
enum orgw_err store_redis_run_begin(const struct orgw_conf *c,
				    int64_t min_interval_s, int64_t now_s,
				    struct store_redis_run **run,
				    int64_t *retry_after_s);

/* Deletes orgw:RUN if it still holds run's token; frees run.  NULL is a
 * no-op. */
void store_redis_run_end(struct store_redis_run *run);

/* PING on this thread's connection: ORGW_OK, or ORGW_EIO with why
 * ("redis unreachable: Connection refused"). */
enum orgw_err store_redis_check(const struct orgw_conf *c, char *why,
				size_t n);

#endif
