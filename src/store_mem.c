/*
 * store_mem.c - a state back-end in this process's memory, for the unit
 * tests of the state (tests/unit/test_state.c): the same transactions as
 * GDBM (one writer or readers at a time, a writer's own writes visible to
 * it, all or nothing at commit) without files, sockets or other
 * processes.  Not a setting: STATE_BACKEND names gdbm or redis, and a
 * state that dies with its process is of no use to a gateway whose
 * workers come and go.
 *
 * The keys are one array, kept unsorted; a write transaction keeps an
 * undo list (key, value before) that abort replays.
 */
#include <sys/types.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store_impl.h"
#include "store_mem.h"

struct mem_kv {
	char *key, *val;
};

static struct {
	struct mem_kv *v;
	size_t n, cap;
	bool refuse;		/* store_mem_refuse(): opens fail */
	int64_t writes;		/* transactions committed with a write */
} mem;

static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;

struct mem_txn {
	struct store base;	/* first: store_impl.h */
	bool write;
	struct mem_kv *undo;	/* key, value before (NULL: absent) */
	size_t n_undo, cap_undo;
};

static ssize_t
find(const char *key)
{
	size_t i;

	for (i = 0; i < mem.n; i++)
		if (strcmp(mem.v[i].key, key) == 0)
			return (ssize_t)i;
	return -1;
}

/* Remembers key's value before a write; false when out of memory. */
static bool
undo_push(struct mem_txn *t, const char *key)
{
	ssize_t i = find(key);
	struct mem_kv *e;

	if (t->n_undo == t->cap_undo) {
		size_t cap = t->cap_undo ? t->cap_undo * 2 : 8;
		struct mem_kv *v = realloc(t->undo, cap * sizeof(*v));

		if (v == NULL)
			return false;
		t->undo = v;
		t->cap_undo = cap;
	}
	e = &t->undo[t->n_undo];
	if ((e->key = strdup(key)) == NULL)
		return false;
	e->val = NULL;
	if (i >= 0 && (e->val = strdup(mem.v[i].val)) == NULL) {
		free(e->key);
		return false;
	}
	t->n_undo++;
	return true;
}

/* Sets key to val (NULL deletes); false when out of memory. */
static bool
set(const char *key, const char *val)
{
	ssize_t i = find(key);
	char *k, *v;

	if (val == NULL) {
		if (i >= 0) {
			free(mem.v[i].key);
			free(mem.v[i].val);
			mem.v[i] = mem.v[--mem.n];
		}
		return true;
	}
	if ((v = strdup(val)) == NULL)
		return false;
	if (i >= 0) {
		free(mem.v[i].val);
		mem.v[i].val = v;
		return true;
	}
	if (mem.n == mem.cap) {
		size_t cap = mem.cap ? mem.cap * 2 : 64;
		struct mem_kv *nv = realloc(mem.v, cap * sizeof(*nv));

		if (nv == NULL) {
			free(v);
			return false;
		}
		mem.v = nv;
		mem.cap = cap;
	}
	if ((k = strdup(key)) == NULL) {
		free(v);
		return false;
	}
	mem.v[mem.n].key = k;
	mem.v[mem.n].val = v;
	mem.n++;
	return true;
}

static enum orgw_err
m_get(struct store *base, const char *key, char **val)
{
	ssize_t i = find(key);

	(void)base;
	*val = NULL;
	if (i < 0)
		return ORGW_OK;
	return (*val = strdup(mem.v[i].val)) != NULL ? ORGW_OK : ORGW_ENOMEM;
}

static enum orgw_err
m_write(struct store *base, const char *key, const char *val)
{
	struct mem_txn *t = (struct mem_txn *)base;

	if (!t->write)
		return ORGW_EINVAL;
	if (!undo_push(t, key) || !set(key, val))
		return ORGW_ENOMEM;
	return ORGW_OK;
}

static enum orgw_err
m_put(struct store *base, const char *key, const char *val)
{
	return m_write(base, key, val);
}

static enum orgw_err
m_del(struct store *base, const char *key)
{
	return m_write(base, key, NULL);
}

static enum orgw_err
m_each(struct store *base, const char *prefix,
       int (*fn)(void *arg, const char *key, const char *val), void *arg)
{
	size_t i, n = strlen(prefix);

	(void)base;
	for (i = 0; i < mem.n; i++)
		if (strncmp(mem.v[i].key, prefix, n) == 0 &&
		    fn(arg, mem.v[i].key, mem.v[i].val) != 0)
			break;
	return ORGW_OK;
}

static void
txn_free(struct mem_txn *t)
{
	size_t i;

	for (i = 0; i < t->n_undo; i++) {
		free(t->undo[i].key);
		free(t->undo[i].val);
	}
	free(t->undo);
	free(t);
	pthread_mutex_unlock(&mem_mu);
}

static enum orgw_err
m_commit(struct store *base)
{
	struct mem_txn *t = (struct mem_txn *)base;

	if (t->n_undo > 0)
		mem.writes++;
	txn_free(t);
	return ORGW_OK;
}

static void
m_abort(struct store *base)
{
	struct mem_txn *t = (struct mem_txn *)base;
	size_t i;

	/* Newest first, so a key written twice gets its first value. */
	for (i = t->n_undo; i > 0; i--)
		(void)set(t->undo[i - 1].key, t->undo[i - 1].val);
	txn_free(t);
}

static const struct store_ops mem_ops = {
	m_get, m_put, m_del, m_each, m_commit, m_abort,
	NULL,	/* the caller's clock: tests inject the time */
};

enum orgw_err
store_mem_open(struct store **out, bool write)
{
	struct mem_txn *t;

	*out = NULL;
	pthread_mutex_lock(&mem_mu);
	if (mem.refuse) {
		pthread_mutex_unlock(&mem_mu);
		return ORGW_EBUSY;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL) {
		pthread_mutex_unlock(&mem_mu);
		return ORGW_ENOMEM;
	}
	t->base.ops = &mem_ops;
	t->write = write;
	*out = &t->base;
	return ORGW_OK;
}

void
store_mem_reset(void)
{
	size_t i;

	pthread_mutex_lock(&mem_mu);
	for (i = 0; i < mem.n; i++) {
		free(mem.v[i].key);
		free(mem.v[i].val);
	}
	free(mem.v);
	mem.v = NULL;
	mem.n = mem.cap = 0;
	mem.refuse = false;
	pthread_mutex_unlock(&mem_mu);
}

void
store_mem_refuse(bool refuse)
{
	pthread_mutex_lock(&mem_mu);
	mem.refuse = refuse;
	pthread_mutex_unlock(&mem_mu);
}

size_t
store_mem_count(const char *prefix)
{
	size_t i, n = 0, len = strlen(prefix);

	pthread_mutex_lock(&mem_mu);
	for (i = 0; i < mem.n; i++)
		if (strncmp(mem.v[i].key, prefix, len) == 0)
			n++;
	pthread_mutex_unlock(&mem_mu);
	return n;
}

int64_t
store_mem_writes(void)
{
	int64_t n;

	pthread_mutex_lock(&mem_mu);
	n = mem.writes;
	pthread_mutex_unlock(&mem_mu);
	return n;
}

/* The back-end table (store_impl.h): nothing to lock for a scoring
 * run, check, repair or tidy in one process's memory. */
static enum orgw_err
mem_open(struct store **out, const struct orgw_conf *c, bool write,
	 int64_t timeout_ms)
{
	(void)c;
	(void)timeout_ms;
	return store_mem_open(out, write);
}

static enum orgw_err
mem_run_begin(const struct orgw_conf *c, int64_t min_interval_s,
	      int64_t now_s, void **run, int64_t *retry_after_s)
{
	(void)c;
	(void)min_interval_s;
	(void)now_s;
	*run = NULL;
	*retry_after_s = 0;
	return ORGW_OK;
}

static void
mem_run_end(void *run)
{
	(void)run;
}

static enum orgw_err
mem_check(const struct orgw_conf *c, char *why, size_t n)
{
	(void)c;
	if (n > 0)
		why[0] = '\0';
	return ORGW_OK;
}

static enum orgw_err
mem_repair(const struct orgw_conf *c, int64_t timeout_ms)
{
	(void)c;
	(void)timeout_ms;
	return ORGW_EIO;
}

static enum orgw_err
mem_tidy(const struct orgw_conf *c, int64_t timeout_ms)
{
	(void)c;
	(void)timeout_ms;
	return ORGW_OK;
}

const struct store_backend store_mem_backend = {
	"",	   mem_open,   mem_run_begin, mem_run_end,
	mem_check, mem_repair, mem_tidy,
};
