/*
 * store.c - the state back-end boundary (store.h): picks the back-end
 * named by STATE_BACKEND for each call and hands the transaction to it
 * through its struct store_ops (store_impl.h).  Holds no state of its
 * own but the process-wide count of lost request counts, an atomic, and
 * the write turn of the process's threads (below); the outcome of write
 * transactions goes to the host's record in slots.c, for /healthz.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"
#include "slots.h"
#include "store_gdbm.h"
#include "store_impl.h"
#include "store_mem.h"
#include "store_redis.h"

struct store_run {
	enum conf_backend backend;
	int fd;			/* GDBM: the flock'ed STATE_PATH.score */
	struct store_redis_run *redis;
};

static _Atomic int64_t store_lost;

/*
 * Redis write transactions of one process take turns.  A worker runs
 * WORKER_THREADS threads and nearly every request writes its model's
 * keys: dozens of threads WATCHing one ledger cell would mostly lose their
 * EXEC to each other and run again.  The turn is a courtesy, never the
 * atomicity (WATCH/MULTI/EXEC keeps that across processes and hosts): a
 * thread that cannot have it within REDIS_TURN_WAIT_MS goes ahead
 * without it, so a frozen Redis holding one thread's command does not
 * make the others queue behind it.  GDBM needs none: its flock serialises
 * threads as it does processes, and a turn measured no faster there
 * (bench/notes.md, round 6) while a queue of 80 threads on one mutex let
 * a writer wait past STORE_LOCK_TIMEOUT_MS in the fault soak.
 */
#define REDIS_TURN_WAIT_MS 250
static pthread_mutex_t write_turn = PTHREAD_MUTEX_INITIALIZER;

static bool
turn_take(int64_t wait_ms)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return false;
	ts.tv_sec += (time_t)(wait_ms / 1000);
	ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return pthread_mutex_timedlock(&write_turn, &ts) == 0;
}

enum orgw_err
store_open(struct store **out, const struct orgw_conf *c, bool write,
	   int64_t timeout_ms)
{
	bool redis = c->state_backend == CONF_BACKEND_REDIS, turn = false;
	enum orgw_err err;

	*out = NULL;
	if (c->state_backend == CONF_BACKEND_MEMORY)
		return store_mem_open(out, write);
	if (write && redis)
		turn = turn_take(REDIS_TURN_WAIT_MS);
	err = redis ? store_redis_open(out, c, write) :
		      store_gdbm_open(out, c->state_path, write, timeout_ms);
	if (err != ORGW_OK) {
		if (turn)
			pthread_mutex_unlock(&write_turn);
		return err;
	}
	(*out)->holds_turn = turn;
	return ORGW_OK;
}

enum orgw_err
store_get(struct store *s, const char *key, char **val)
{
	return s->ops->get(s, key, val);
}

enum orgw_err
store_put(struct store *s, const char *key, const char *val)
{
	enum orgw_err err = s->ops->put(s, key, val);

	s->wrote = s->wrote || err == ORGW_OK;
	return err;
}

enum orgw_err
store_del(struct store *s, const char *key)
{
	enum orgw_err err = s->ops->del(s, key);

	s->wrote = s->wrote || err == ORGW_OK;
	return err;
}

enum orgw_err
store_each(struct store *s, const char *prefix,
	   int (*fn)(void *arg, const char *key, const char *val), void *arg)
{
	return s->ops->each(s, prefix, fn, arg);
}

enum orgw_err
store_close(struct store *s)
{
	enum orgw_err err;
	bool turn, wrote;

	if (s == NULL)
		return ORGW_OK;
	turn = s->holds_turn;
	wrote = s->wrote;
	err = s->ops->commit(s);	/* frees s */
	if (turn)
		pthread_mutex_unlock(&write_turn);
	/* Only a transaction that wrote tells that writes go in: on a full
	 * disk, opening and reading still work. */
	if (err == ORGW_OK && wrote)
		slots_write_note(false, 0);
	return err;
}

void
store_abort(struct store *s)
{
	bool turn;

	if (s == NULL)
		return;
	turn = s->holds_turn;
	s->ops->abort(s);		/* frees s */
	if (turn)
		pthread_mutex_unlock(&write_turn);
}

enum orgw_err
store_run_begin(const struct orgw_conf *c, int64_t min_interval_s,
		int64_t now_s, struct store_run **run, int64_t *retry_after_s)
{
	struct store_run *r;
	enum orgw_err err;

	*run = NULL;
	*retry_after_s = 0;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return ORGW_ENOMEM;
	r->backend = c->state_backend;
	r->fd = -1;
	if (r->backend == CONF_BACKEND_MEMORY)
		err = ORGW_OK;
	else if (r->backend == CONF_BACKEND_REDIS)
		err = store_redis_run_begin(c, min_interval_s, now_s,
					    &r->redis, retry_after_s);
	else
		err = store_gdbm_run_begin(c->state_path, min_interval_s,
					   now_s, &r->fd, retry_after_s);
	if (err != ORGW_OK) {
		free(r);
		return err;
	}
	*run = r;
	return ORGW_OK;
}

void
store_run_end(struct store_run *run)
{
	if (run == NULL)
		return;
	if (run->backend == CONF_BACKEND_REDIS)
		store_redis_run_end(run->redis);
	else if (run->backend == CONF_BACKEND_GDBM)
		store_gdbm_run_end(run->fd);
	free(run);
}

void
store_write_refused(int cause)
{
	slots_write_note(true, cause);
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

enum orgw_err
store_check(const struct orgw_conf *c, char *why, size_t n)
{
	if (c->state_backend == CONF_BACKEND_MEMORY)
		return ORGW_OK;
	bool redis = c->state_backend == CONF_BACKEND_REDIS;
	enum orgw_err err;
	int64_t ago_ms;
	int cause;

	err = redis ? store_redis_check(c, why, n) :
		      store_gdbm_check(c->state_path, why, n);
	if (err != ORGW_OK ||
	    !slots_write_refused(STORE_REFUSED_RECENT_MS, &cause, &ago_ms))
		return err;
	snprintf(why, n, "%swrites refused (%lld.%lld s ago): %s",
		 redis ? "redis: " : "", (long long)(ago_ms / 1000),
		 (long long)(ago_ms % 1000 / 100), store_cause_str(cause));
	return ORGW_EIO;
}

enum orgw_err
store_repair(const struct orgw_conf *c, int64_t timeout_ms)
{
	if (c->state_backend != CONF_BACKEND_GDBM)
		return ORGW_EIO;
	return store_gdbm_repair(c->state_path, timeout_ms);
}

enum orgw_err
store_tidy(const struct orgw_conf *c, int64_t timeout_ms)
{
	if (c->state_backend != CONF_BACKEND_GDBM)
		return ORGW_OK;
	return store_gdbm_tidy(c->state_path, timeout_ms);
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
