/*
 * store.c - the state back-end boundary (store.h): each call goes to the
 * back-end STATE_BACKEND names, through its table (store_impl.h).  Holds
 * no state of its own; what is generic to every back-end is here: a
 * committed write transaction clears a refused write for /healthz, and
 * /healthz reports a recent refusal whatever the back-end.
 */
#include <stdio.h>
#include <stdlib.h>

#include "store.h"
#include "store_impl.h"
#include "workertab.h"

/* The in-memory back-end of the unit tests is linked into test builds
 * only (the Makefile's TEST_ONLY): a weak reference, NULL in the shipped
 * binaries, where no setting can choose it anyway (conf.h). */
#pragma weak store_mem_backend

static const struct store_backend *const backends[] = {
	[CONF_BACKEND_GDBM] = &store_gdbm_backend,
	[CONF_BACKEND_REDIS] = &store_redis_backend,
	[CONF_BACKEND_MEMORY] = &store_mem_backend,
};

struct store_run {
	const struct store_backend *b;
	void *run;
};

static const struct store_backend *
backend(const struct orgw_conf *c)
{
	return backends[c->state_backend];
}

enum orgw_err
store_open(struct store **out, const struct orgw_conf *c, bool write,
	   int64_t timeout_ms)
{
	enum orgw_err err;

	*out = NULL;
	err = backend(c)->open(out, c, write, timeout_ms);
	if (err == ORGW_OK) {
		(*out)->wrote = false;
		(*out)->exact = false;
	}
	return err;
}

enum orgw_err
store_get(struct store *s, const char *key, char **val)
{
	return s->ops->get(s, key, val);
}

enum orgw_err
store_now_ms(struct store *s, int64_t host_ms, int64_t *ms)
{
	enum orgw_err err;

	*ms = host_ms;
	if (s->ops->now_ms == NULL)
		return ORGW_OK;
	if ((err = s->ops->now_ms(s, ms)) != ORGW_OK)
		*ms = host_ms;
	return err;
}

enum orgw_err
store_put(struct store *s, const char *key, const char *val)
{
	enum orgw_err err = s->ops->put(s, key, val);

	s->wrote = s->wrote || err == ORGW_OK;
	return err;
}

enum orgw_err
store_put_text(struct store *s, const char *key, char *text)
{
	enum orgw_err err;

	if (text == NULL)
		return ORGW_ENOMEM;
	err = store_put(s, key, text);
	free(text);
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
	bool wrote;

	if (s == NULL)
		return ORGW_OK;
	wrote = s->wrote;
	err = s->ops->commit(s);	/* frees s */
	/* Only a transaction that wrote tells that writes go in: on a full
	 * disk, opening and reading still work. */
	if (err == ORGW_OK && wrote)
		store_write_ok();
	return err;
}

void
store_exact_outcome(struct store *s)
{
	s->exact = true;
}

void
store_abort(struct store *s)
{
	if (s != NULL)
		s->ops->abort(s);	/* frees s */
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
	r->b = backend(c);
	err = r->b->run_begin(c, min_interval_s, now_s, &r->run,
			      retry_after_s);
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
	run->b->run_end(run->run);
	free(run);
}

enum orgw_err
store_check(const struct orgw_conf *c, char *why, size_t n)
{
	const struct store_backend *b = backend(c);
	enum orgw_err err = b->check(c, why, n);
	int64_t ago_ms;
	int cause;

	if (err != ORGW_OK ||
	    !workertab_write_refused(STORE_REFUSED_RECENT_MS, &cause, &ago_ms))
		return err;
	snprintf(why, n, "%swrites refused (%lld.%lld s ago): %s",
		 b->why_prefix, (long long)(ago_ms / 1000),
		 (long long)(ago_ms % 1000 / 100), store_cause_str(cause));
	return ORGW_EIO;
}

enum orgw_err
store_repair(const struct orgw_conf *c, int64_t timeout_ms)
{
	return backend(c)->repair(c, timeout_ms);
}

enum orgw_err
store_tidy(const struct orgw_conf *c, int64_t timeout_ms)
{
	return backend(c)->tidy(c, timeout_ms);
}
