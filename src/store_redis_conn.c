/*
 * store_redis_conn.c - this thread's connection to Redis and the
 * commands sent on it: redisConnectWithTimeout /
 * redisConnectUnixWithTimeout, redisSetTimeout for every command, AUTH
 * and SELECT after each connect; commands pipelined, one round trip for
 * a batch.
 *
 * Connections.  One per thread in a _Thread_local pointer (workers may
 * run threads), made on first use and reused; it is never
 * shared, so no lock.  A connect error, a command timeout or any I/O
 * error frees the context (a timed-out reply may still arrive: the
 * stream is out of step) and records why, for /healthz; the next
 * transaction reconnects, no sooner than the backoff allows.  The struct
 * of a thread that exits is not freed (threads live as long as their
 * worker process).
 */
#include <sys/time.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "log.h"
#include "redisconf.h"
#include "store_redis.h"
#include "store_redis_impl.h"
#include "storehealth.h"
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000

static _Thread_local struct rconn *tl_conn;

/*
 * No new connection before rc->next_try_ms: not within this very request,
 * which already paid for the failure, and longer each time in a row (a
 * frozen Redis accepts connections, the kernel does, but answers
 * nothing, so only a command that succeeds resets the backoff:
 * pipeline()).
 */
static void
back_off(struct rconn *rc, int64_t now)
{
	if (rc->backoff_ms == 0)
		rc->backoff_ms = BACKOFF_MIN_MS;
	rc->next_try_ms = now + rc->backoff_ms;
	rc->backoff_ms *= 2;
	if (rc->backoff_ms > BACKOFF_MAX_MS)
		rc->backoff_ms = BACKOFF_MAX_MS;
}

/* Drops the connection after an error; why names it for /healthz. */
static void
conn_drop(struct rconn *rc, const char *what)
{
	int64_t now = clock_mono_ms();

	if (rc->ctx != NULL) {
		snprintf(rc->why, sizeof(rc->why), "redis %s: %s", what,
			 rc->ctx->errstr[0] ? rc->ctx->errstr : "error");
		redisFree(rc->ctx);
		rc->ctx = NULL;
		log_warn("state: %s; requests go unpinned until it is back",
			 rc->why);
	}
	if (rc->down_since_ms == 0)
		rc->down_since_ms = now;
	back_off(rc, now);
}

bool
reply_ok(const redisReply *r)
{
	return r != NULL && r->type == REDIS_REPLY_STATUS &&
	       strcmp(r->str, "OK") == 0;
}

/* A bulk string reply holding exactly str. */
bool
reply_is(const redisReply *r, const char *str)
{
	return r != NULL && r->type == REDIS_REPLY_STRING &&
	       strcmp(r->str, str) == 0;
}

/* AUTH and SELECT on a new context: true, or false with rc->why. */
static bool
conn_setup(struct rconn *rc, redisContext *ctx, const struct orgw_conf *c,
	   int db)
{
	redisReply *r;
	char dbs[16];
	const char *argv[2];
	size_t lens[2];
	bool ok;

	if (c->redis_password != NULL) {
		argv[0] = "AUTH";
		argv[1] = c->redis_password;
		lens[0] = 4;
		lens[1] = strlen(c->redis_password);
		r = redisCommandArgv(ctx, 2, argv, lens);
		ok = reply_ok(r);
		if (!ok)
			snprintf(rc->why, sizeof(rc->why),
				 "redis AUTH refused: %s",
				 r && r->type == REDIS_REPLY_ERROR ? r->str :
				 ctx->errstr);
		freeReplyObject(r);
		if (!ok)
			return false;
	}
	if (db != 0) {
		snprintf(dbs, sizeof(dbs), "%d", db);
		argv[0] = "SELECT";
		argv[1] = dbs;
		lens[0] = 6;
		lens[1] = strlen(dbs);
		r = redisCommandArgv(ctx, 2, argv, lens);
		ok = reply_ok(r);
		if (!ok)
			snprintf(rc->why, sizeof(rc->why),
				 "redis SELECT %d refused: %s", db,
				 r && r->type == REDIS_REPLY_ERROR ? r->str :
				 ctx->errstr);
		freeReplyObject(r);
		if (!ok)
			return false;
	}
	return true;
}

/*
 * This thread's connection to c's Redis, connecting when there is none
 * and the backoff allows: the connection, or NULL with rc->why (when rc
 * itself could be had: *rcp).
 */
redisContext *
conn_get(const struct orgw_conf *c, struct rconn **rcp)
{
	struct rconn *rc = tl_conn;
	struct redisconf_url u;
	struct timeval ctv = {0, STORE_REDIS_CONNECT_TIMEOUT_MS * 1000};
	struct timeval ttv = {0, STORE_REDIS_COMMAND_TIMEOUT_MS * 1000};
	redisContext *ctx;
	char err[160];
	int64_t now;

	*rcp = NULL;
	if (rc == NULL) {
		if ((rc = calloc(1, sizeof(*rc))) == NULL)
			return NULL;
		tl_conn = rc;
	}
	*rcp = rc;
	if (rc->url == NULL || strcmp(rc->url, c->redis_url) != 0) {
		if (rc->ctx != NULL)
			redisFree(rc->ctx);
		rc->ctx = NULL;
		free(rc->url);
		if ((rc->url = strdup(c->redis_url)) == NULL) {
			snprintf(rc->why, sizeof(rc->why), "out of memory");
			return NULL;
		}
		rc->next_try_ms = 0;
	}
	if (rc->ctx != NULL)
		return rc->ctx;
	now = clock_mono_ms();
	if (now < rc->next_try_ms)
		return NULL;	/* backed off: rc->why still says why */
	if (redisconf_parse_url(c->redis_url, &u, err, sizeof(err)) !=
	    ORGW_OK) {
		snprintf(rc->why, sizeof(rc->why), "REDIS_URL: %s", err);
		return NULL;
	}
	ctx = u.is_unix ? redisConnectUnixWithTimeout(u.path, ctv) :
			  redisConnectWithTimeout(u.host, u.port, ctv);
	if (ctx == NULL || ctx->err != 0) {
		snprintf(rc->why, sizeof(rc->why), "redis unreachable: %s",
			 ctx ? ctx->errstr : "out of memory");
		goto fail;
	}
	if (redisSetTimeout(ctx, ttv) != REDIS_OK) {
		snprintf(rc->why, sizeof(rc->why), "redis: %s", ctx->errstr);
		goto fail;
	}
	if (!conn_setup(rc, ctx, c, u.db))
		goto fail;
	if (rc->down_since_ms != 0)
		log_info("state: redis reachable again after %lld ms "
			 "(request counts lost meanwhile in this worker: "
			 "%lld, added to LOST_UPDATES by the next request)",
			 (long long)(now - rc->down_since_ms),
			 (long long)store_lost_peek());
	rc->ctx = ctx;
	rc->why[0] = '\0';
	rc->down_since_ms = 0;
	return ctx;
fail:
	if (ctx != NULL)
		redisFree(ctx);
	if (rc->down_since_ms == 0) {
		rc->down_since_ms = now;
		log_warn("state: %s; requests go unpinned until it is back",
			 rc->why);
	}
	back_off(rc, now);
	return NULL;
}

/* "orgw:" + key into a malloc'd string (caller frees), or NULL. */
char *
full_key(const char *key, size_t *len)
{
	size_t n = strlen(key);
	char *k = malloc(KEY_PREFIX_LEN + n + 1);

	if (k == NULL)
		return NULL;
	memcpy(k, KEY_PREFIX, KEY_PREFIX_LEN);
	memcpy(k + KEY_PREFIX_LEN, key, n + 1);
	*len = KEY_PREFIX_LEN + n;
	return k;
}

/*
 * Sends argc commands pipelined (cmds[i] of argcs[i] words) and reads
 * their replies into replies[] (caller frees each with freeReplyObject).
 * ORGW_OK, or ORGW_EIO after dropping the connection (replies[] NULL).
 */
enum orgw_err
pipeline(struct rconn *rc, size_t ncmd, const int *argcs,
	 const char *const *const *argvs, const size_t *const *lens,
	 redisReply **replies)
{
	size_t i, j;
	void *r;

	for (i = 0; i < ncmd; i++)
		replies[i] = NULL;
	if (rc->ctx == NULL)
		return ORGW_EIO;
	for (i = 0; i < ncmd; i++)
		if (redisAppendCommandArgv(rc->ctx, argcs[i],
					   (const char **)(uintptr_t)argvs[i],
					   lens[i]) != REDIS_OK)
			goto bad;
	for (i = 0; i < ncmd; i++) {
		if (redisGetReply(rc->ctx, &r) != REDIS_OK)
			goto bad;
		replies[i] = r;
	}
	rc->backoff_ms = 0;	/* Redis answers: a later failure starts over */
	return ORGW_OK;
bad:
	for (j = 0; j < ncmd; j++) {
		freeReplyObject(replies[j]);
		replies[j] = NULL;
	}
	conn_drop(rc, "command failed");
	return ORGW_EIO;
}

/* One command; the reply (caller frees) or NULL after conn_drop(). */
redisReply *
command(struct rconn *rc, int argc, const char **argv, const size_t *lens)
{
	const char *const *av = argv;
	redisReply *r;

	if (pipeline(rc, 1, &argc, &av, &lens, &r) != ORGW_OK)
		return NULL;
	return r;
}

/* A short command with string arguments; the reply or NULL. */
redisReply *
cmd_strs(struct rconn *rc, int argc, const char **argv)
{
	size_t lens[8];
	int i;

	for (i = 0; i < argc && i < 8; i++)
		lens[i] = strlen(argv[i]);
	return command(rc, argc, argv, lens);
}

/* The STORE_CAUSE_* of an error reply, by its first word. */
int
reply_cause(const redisReply *r)
{
	static const struct {
		const char *word;
		int cause;
	} causes[] = {
		{"OOM ", STORE_CAUSE_OOM},
		{"WRONGTYPE ", STORE_CAUSE_WRONGTYPE},
		{"EXECABORT ", STORE_CAUSE_EXECABORT},
	};
	size_t i;

	for (i = 0; i < sizeof(causes) / sizeof(causes[0]); i++)
		if (strncmp(r->str, causes[i].word, strlen(causes[i].word)) ==
		    0)
			return causes[i].cause;
	return STORE_CAUSE_REDIS;
}
