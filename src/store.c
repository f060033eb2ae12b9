/*
 * store.c - the state back-end boundary (store.h): picks the back-end
 * named by STATE_BACKEND for each call and hands the transaction to it
 * through its struct store_ops (store_impl.h).  Holds no state of its
 * own but the process-wide count of lost request counts, an atomic.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "store_gdbm.h"
#include "store_impl.h"
#include "store_redis.h"

struct store_run {
	enum conf_backend backend;
	int fd;			/* GDBM: the flock'ed STATE_PATH.score */
	struct store_redis_run *redis;
};

static _Atomic int64_t store_lost;

enum orgw_err
store_open(struct store **out, const struct orgw_conf *c, bool write,
	   int64_t timeout_ms)
{
	if (c->state_backend == CONF_BACKEND_REDIS)
		return store_redis_open(out, c, write);
	return store_gdbm_open(out, c->state_path, write, timeout_ms);
}

enum orgw_err
store_get(struct store *s, const char *key, char **val)
{
	return s->ops->get(s, key, val);
}

enum orgw_err
store_put(struct store *s, const char *key, const char *val)
{
	return s->ops->put(s, key, val);
}

enum orgw_err
store_del(struct store *s, const char *key)
{
	return s->ops->del(s, key);
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
	return s == NULL ? ORGW_OK : s->ops->commit(s);
}

void
store_abort(struct store *s)
{
	if (s != NULL)
		s->ops->abort(s);
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
	if (r->backend == CONF_BACKEND_REDIS)
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
	else
		store_gdbm_run_end(run->fd);
	free(run);
}

enum orgw_err
store_check(const struct orgw_conf *c, char *why, size_t n)
{
	if (c->state_backend == CONF_BACKEND_REDIS)
		return store_redis_check(c, why, n);
	return store_gdbm_check(c->state_path, why, n);
}

enum orgw_err
store_repair(const struct orgw_conf *c, int64_t timeout_ms)
{
	if (c->state_backend == CONF_BACKEND_REDIS)
		return ORGW_EIO;
	return store_gdbm_repair(c->state_path, timeout_ms);
}

enum orgw_err
store_tidy(const struct orgw_conf *c, int64_t timeout_ms)
{
	if (c->state_backend == CONF_BACKEND_REDIS)
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
