/*
 * store_impl.h - the back-end boundary under store.h: what a state
 * back-end (store_gdbm.c, store_redis.c) provides for one transaction.
 * Only store.c and the back-ends include this file.
 *
 * Every back-end's transaction struct begins with a struct store, whose
 * ops the dispatcher in store.c calls.  commit and abort both end the
 * transaction and free it.
 */
#ifndef ORGW_STORE_IMPL_H
#define ORGW_STORE_IMPL_H

#include <stdbool.h>

#include "store.h"

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
};

struct store {
	const struct store_ops *ops;
	bool holds_turn;	/* store.c's write turn (set by store.c) */
	bool wrote;		/* a put or delete went in (set by store.c) */
};

/*
 * A back-end notes, where it logs it, that the store refused a write of
 * a write transaction: cause is an errno value (ENOSPC, EDQUOT, EIO, ...)
 * or a STORE_CAUSE_* (store.h).  /healthz reports it for a while
 * (store_check).  Thread-safe.
 */
void store_write_refused(int cause);

#endif
