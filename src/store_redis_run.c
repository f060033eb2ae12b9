/*
 * store_redis_run.c - what the Redis back-end does outside a
 * transaction: the scoring-run lock (orgw:RUN, orgw:RUN_LAST) and
 * /healthz's PING (store_redis.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "log.h"
#include "store_redis.h"
#include "store_redis_impl.h"
#define RUN_KEY KEY_PREFIX "RUN"
#define RUN_LAST_KEY KEY_PREFIX "RUN_LAST"
#define RUN_TTL_MS (15 * 60 * 1000)
#define RUN_BUSY_RETRY_S 10

struct store_redis_run {
	const struct orgw_conf *c;
	char token[64];
};

enum orgw_err
store_redis_run_begin(const struct orgw_conf *c, int64_t min_interval_s,
		      int64_t now_s, struct store_redis_run **run,
		      int64_t *retry_after_s)
{
	struct store_redis_run *r;
	struct rconn *rc;
	redisReply *rep;
	char ttl[24], nows[24];
	long long last = 0;
	bool got;

	*run = NULL;
	*retry_after_s = 0;
	if (conn_get(c, &rc) == NULL) {
		log_err("scoring lock: %s", rc ? rc->why : "out of memory");
		return ORGW_EIO;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return ORGW_ENOMEM;
	r->c = c;
	snprintf(r->token, sizeof(r->token), "%ld-%lld-%p", (long)getpid(),
		 (long long)clock_mono_us(), (void *)r);
	snprintf(ttl, sizeof(ttl), "%d", RUN_TTL_MS);
	{
		const char *argv[] = {"SET", RUN_KEY, r->token, "NX", "PX",
				      ttl};
		if ((rep = cmd_strs(rc, 6, argv)) == NULL)
			goto io;
	}
	got = reply_ok(rep);
	freeReplyObject(rep);
	if (!got) {
		free(r);
		*retry_after_s = RUN_BUSY_RETRY_S;
		return ORGW_EBUSY;
	}
	{
		const char *argv[] = {"GET", RUN_LAST_KEY};
		if ((rep = cmd_strs(rc, 2, argv)) == NULL)
			goto io;
	}
	if (rep->type == REDIS_REPLY_STRING)
		last = strtoll(rep->str, NULL, 10);
	freeReplyObject(rep);
	if (min_interval_s > 0 && last > 0 && now_s >= last &&
	    now_s - last < min_interval_s) {
		*retry_after_s = min_interval_s - (now_s - last);
		store_redis_run_end(r);
		return ORGW_EBUSY;
	}
	/* Only a throttled run (POST /__cron) starts the interval. */
	if (min_interval_s > 0) {
		const char *argv[] = {"SET", RUN_LAST_KEY, nows};
		snprintf(nows, sizeof(nows), "%lld", (long long)now_s);
		freeReplyObject(cmd_strs(rc, 3, argv));
	}
	*run = r;
	return ORGW_OK;
io:
	log_err("scoring lock: %s", rc->why);
	free(r);
	return ORGW_EIO;
}

void
store_redis_run_end(struct store_redis_run *run)
{
	struct rconn *rc;
	redisReply *rep;
	bool ours;

	if (run == NULL)
		return;
	/* Delete the lock only while it is still ours (it may have
	 * expired and been taken by another run): WATCH, GET, MULTI/DEL. */
	if (conn_get(run->c, &rc) != NULL) {
		const char *w[] = {"WATCH", RUN_KEY}, *g[] = {"GET", RUN_KEY};
		const char *m[] = {"MULTI"}, *d[] = {"DEL", RUN_KEY};
		const char *e[] = {"EXEC"}, *u[] = {"UNWATCH"};

		freeReplyObject(cmd_strs(rc, 2, w));
		if ((rep = cmd_strs(rc, 2, g)) != NULL) {
			ours = rep->type == REDIS_REPLY_STRING &&
			       strcmp(rep->str, run->token) == 0;
			freeReplyObject(rep);
			if (ours) {
				freeReplyObject(cmd_strs(rc, 1, m));
				freeReplyObject(cmd_strs(rc, 2, d));
				freeReplyObject(cmd_strs(rc, 1, e));
			} else {
				freeReplyObject(cmd_strs(rc, 1, u));
			}
		}
	}
	free(run);
}

enum orgw_err
store_redis_check(const struct orgw_conf *c, char *why, size_t n)
{
	const char *argv[] = {"PING"};
	struct rconn *rc;
	redisReply *r;
	bool ok;

	if (conn_get(c, &rc) == NULL) {
		snprintf(why, n, "%s", rc ? rc->why : "out of memory");
		return ORGW_EIO;
	}
	if ((r = cmd_strs(rc, 1, argv)) == NULL) {
		snprintf(why, n, "%s", rc->why);
		return ORGW_EIO;
	}
	ok = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
	if (!ok)
		snprintf(why, n, "redis PING: %s",
			 r->type == REDIS_REPLY_ERROR ? r->str :
							"unexpected reply");
	freeReplyObject(r);
	return ok ? ORGW_OK : ORGW_EIO;
}
