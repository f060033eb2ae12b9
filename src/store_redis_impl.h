/*
 * store_redis_impl.h - what the Redis back-end's files (store_redis.c,
 * store_redis_*.c) share and no other file includes (make
 * check-layers): the key prefix, a thread's connection (struct rconn),
 * the transaction (struct store_redis) and the functions one of those
 * files calls in another.  Each function's contract is at its
 * definition.
 */
#ifndef ORGW_STORE_REDIS_IMPL_H
#define ORGW_STORE_REDIS_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "conf.h"
#include "orgw.h"
#include "redisconf.h"
#include "store_impl.h"

#define KEY_PREFIX "orgw:"
#define KEY_PREFIX_LEN 5
#define MARKER_MAX (KEY_PREFIX_LEN + REDISCONF_TXN_KEY_LEN + 1)

struct rconn {
	redisContext *ctx;	/* NULL: not connected */
	char *url;		/* REDIS_URL it was made for */
	int64_t next_try_ms;	/* monotonic: no connect before */
	int64_t backoff_ms;	/* next wait after a failed connect */
	int64_t down_since_ms;	/* monotonic, 0 while up */
	char why[256];		/* the last error, "" while up */
};

struct rbuf {
	char *key;		/* without the prefix */
	char *val;		/* NULL: delete */
};

struct store_redis {
	struct store base;	/* first: the back-end boundary */
	const struct orgw_conf *c;	/* borrowed: the fence reconnects */
	struct rconn *rc;
	bool write, watched;
	bool holds_turn;	/* the process's write turn (below) */
	bool marker_watched;	/* WATCH <marker> answered OK */
	char marker[MARKER_MAX];	/* "orgw:TXN:<hex>", "" until made */
	struct rbuf *buf;
	size_t n, cap;
};

/* store_redis_conn.c */
bool reply_ok(const redisReply *r);
bool reply_is(const redisReply *r, const char *str);
redisContext *conn_get(const struct orgw_conf *c, struct rconn **rcp);
char *full_key(const char *key, size_t *len);
enum orgw_err pipeline(struct rconn *rc, size_t ncmd, const int *argcs,
		       const char *const *const *argvs,
		       const size_t *const *lens, redisReply **replies);
redisReply *command(struct rconn *rc, int argc, const char **argv,
		    const size_t *lens);
redisReply *cmd_strs(struct rconn *rc, int argc, const char **argv);
int reply_cause(const redisReply *r);

/* store_redis.c */
bool marker_due(struct store_redis *s, enum orgw_err *err);
struct rbuf *buf_find(struct store_redis *s, const char *key);

/* store_redis_scan.c */
enum orgw_err rd_each(struct store *base, const char *prefix,
		      int (*fn)(void *arg, const char *key, const char *val),
		      void *arg);

/* store_redis_commit.c */
enum orgw_err exec_writes(struct store_redis *s);

#endif
