/*
 * store_impl.h - the back-end boundary under store.h: what a state
 * back-end (store_gdbm.c, store_redis.c, store_mem.c) provides, as one
 * table each, for store.c to call.  Only store.c, the back-ends and
 * their tests include this file; a back-end never calls into store.c
 * (it notes what /healthz needs in storehealth.h), so the include graph
 * has no circle (make check-layers).
 *
 * Every back-end's transaction struct begins with a struct store, whose
 * ops store.c calls.  commit and abort both end the transaction and free
 * it.
 */
#ifndef ORGW_STORE_IMPL_H
#define ORGW_STORE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "orgw.h"

struct store;

struct store_ops {
	enum orgw_err (*get)(struct store *s, const char *key, char **val);
	enum orgw_err (*put)(struct store *s, const char *key,
			     const char *val);
	enum orgw_err (*del)(struct store *s, const char *key);
	enum orgw_err (*each)(struct store *s, const char *prefix,
			      int (*fn)(void *arg, const char *key,
					const char *val),
			      void *arg);
	enum orgw_err (*commit)(struct store *s);
	void (*abort)(struct store *s);
	/* The store's own time in unix ms (store_now_ms); NULL: it has
	 * none but the caller's. */
	enum orgw_err (*now_ms)(struct store *s, int64_t *ms);
};

struct store {
	const struct store_ops *ops;
	bool wrote;		/* a put or delete went in (set by store.c) */
	bool exact;		/* the commit's outcome must be known
				 * (store_exact_outcome(), set by store.c) */
};

/*
 * One back-end, as store.h describes each call: open begins a
 * transaction; run_begin/run_end take and release the scoring-run lock
 * (*run is the back-end's, NULL allowed); check is /healthz's probe;
 * repair and tidy as store_repair and store_tidy.  why_prefix begins
 * /healthz's reason for a store that refused writes.
 */
struct store_backend {
	const char *why_prefix;
	enum orgw_err (*open)(struct store **out, const struct orgw_conf *c,
			      bool write, int64_t timeout_ms);
	enum orgw_err (*run_begin)(const struct orgw_conf *c,
				   int64_t min_interval_s, int64_t now_s,
				   void **run, int64_t *retry_after_s);
	void (*run_end)(void *run);
	enum orgw_err (*check)(const struct orgw_conf *c, char *why,
			       size_t n);
	enum orgw_err (*repair)(const struct orgw_conf *c,
				int64_t timeout_ms);
	enum orgw_err (*tidy)(const struct orgw_conf *c, int64_t timeout_ms);
};

extern const struct store_backend store_gdbm_backend;
extern const struct store_backend store_redis_backend;
extern const struct store_backend store_mem_backend;

#endif
