/*
 * store_redis.c - the Redis back-end of the state store (store_redis.h),
 * on hiredis 0.14 (Debian 12): redisConnectWithTimeout /
 * redisConnectUnixWithTimeout, redisSetTimeout for every command, AUTH
 * and SELECT after each connect.  No TLS.
 *
 * Transactions.  A reader GETs, SCANs and MGETs.  A writer WATCHes every
 * key it reads (pipelined with the read: one round trip), keeps its puts
 * and deletes in a buffer (read back by its own gets), and at commit
 * sends MULTI, the writes and EXEC in one round trip: a nil EXEC means
 * another host changed a key read meanwhile, nothing was written, and
 * the caller (state_txn) runs the transaction again.  So every
 * read-modify-write of the state (state*.c) is atomic across hosts
 * with the policy still in C, and the same C for both back-ends.  No
 * server-side script.
 *
 * A lost EXEC reply.  A command timeout that fires after EXEC was sent
 * leaves the outcome open: a frozen Redis runs the transaction once it
 * resumes, though the connection is closed by then.  For most
 * transactions that is harmless (the route is decided again by the next
 * request), but a caller that counts a failed commit as lost must know:
 * it asks for it (store_exact_outcome), and such a transaction WATCHes a
 * marker key of its own, orgw:TXN:<128 random bits in hex>, and sets it
 * inside its MULTI; after a lost reply fence() settles it on a new
 * connection (why that is exact: there).  The markers expire after a
 * minute and are never listed, dumped or loaded.
 *
 * Cooldowns (PROVIDER_COOLDOWN:<model>:<tag>) are separate keys in docs/design.md
 * 7, so on Redis they expire (SET ... PXAT at their "until"); the
 * "until" in the value stays authoritative (failover_breaker_cooling),
 * the expiry only removes the key once it is over.
 *
 * Connections.  One per thread in a _Thread_local pointer (workers may
 * run threads), made on first use and reused; it is never
 * shared, so no lock.  A connect error, a command timeout or any I/O
 * error frees the context (a timed-out reply may still arrive: the
 * stream is out of step) and records why, for /healthz; the next
 * transaction reconnects, no sooner than the backoff allows.  The struct
 * of a thread that exits is not freed (threads live as long as their
 * worker process).
 *
 * Ownership: struct store_redis owns its write buffer and is freed by
 * rd_commit()/rd_abort(); it borrows the thread's connection.
 */
#include <sys/random.h>
#include <sys/time.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "log.h"
#include "record.h"
#include "redisconf.h"
#include "store_impl.h"
#include "storenote.h"
#include "store_redis.h"

#define KEY_PREFIX "orgw:"
#define KEY_PREFIX_LEN 5
#define RUN_KEY KEY_PREFIX "RUN"
#define RUN_LAST_KEY KEY_PREFIX "RUN_LAST"
#define RUN_TTL_MS (15 * 60 * 1000)
#define RUN_BUSY_RETRY_S 10
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define SCAN_COUNT "1000"
#define MGET_BATCH 256
#define MARKER_TTL_MS "60000"
#define MARKER_TXN_VAL "1"	/* set by the transaction's MULTI */
#define MARKER_FENCE_VAL "fence"	/* set by fence() */
#define FENCE_PAUSE_MS 100
#define MARKER_MAX (KEY_PREFIX_LEN + REDISCONF_TXN_KEY_LEN + 1)

struct rconn {
	redisContext *ctx;	/* NULL: not connected */
	char *url;		/* REDIS_URL it was made for */
	int64_t next_try_ms;	/* monotonic: no connect before */
	int64_t backoff_ms;	/* next wait after a failed connect */
	int64_t down_since_ms;	/* monotonic, 0 while up */
	char why[256];		/* the last error, "" while up */
};

static _Thread_local struct rconn *tl_conn;

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

static bool
reply_ok(const redisReply *r)
{
	return r != NULL && r->type == REDIS_REPLY_STATUS &&
	       strcmp(r->str, "OK") == 0;
}

/* A bulk string reply holding exactly str. */
static bool
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
static redisContext *
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
static char *
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
static enum orgw_err
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
static redisReply *
command(struct rconn *rc, int argc, const char **argv, const size_t *lens)
{
	const char *const *av = argv;
	redisReply *r;

	if (pipeline(rc, 1, &argc, &av, &lens, &r) != ORGW_OK)
		return NULL;
	return r;
}

/* A short command with string arguments; the reply or NULL. */
static redisReply *
cmd_strs(struct rconn *rc, int argc, const char **argv)
{
	size_t lens[8];
	int i;

	for (i = 0; i < argc && i < 8; i++)
		lens[i] = strlen(argv[i]);
	return command(rc, argc, argv, lens);
}

/*
 * The marker of a transaction whose outcome its caller must know
 * (store_exact_outcome), made on first use: true while it is still to be
 * WATCHed, which the transaction's first WATCH does (so no round trip is
 * added).  *err is ORGW_EIO when no random id could be had.
 */
static bool
marker_due(struct store_redis *s, enum orgw_err *err)
{
	unsigned char id[REDISCONF_TXN_ID_BYTES];

	*err = ORGW_OK;
	if (!s->write || !s->base.exact || s->marker_watched)
		return false;
	if (s->marker[0] != '\0')
		return true;
	if (getrandom(id, sizeof(id), 0) != (ssize_t)sizeof(id)) {
		log_err("state: getrandom: %s", log_strerror(errno));
		*err = ORGW_EIO;
		return false;
	}
	memcpy(s->marker, KEY_PREFIX, KEY_PREFIX_LEN);
	if (redisconf_txn_key(id, s->marker + KEY_PREFIX_LEN,
			      sizeof(s->marker) - KEY_PREFIX_LEN) == NULL) {
		s->marker[0] = '\0';
		*err = ORGW_EIO;
		return false;
	}
	return true;
}

static struct rbuf *
buf_find(struct store_redis *s, const char *key)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->buf[i].key, key) == 0)
			return &s->buf[i];
	return NULL;
}

/* The STORE_CAUSE_* of an error reply, by its first word. */
static int
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

static enum orgw_err
rd_get(struct store *base, const char *key, char **val)
{
	struct store_redis *s = (struct store_redis *)base;
	struct rbuf *b;
	redisReply *rep[2], *r;
	const char *argv[2];
	const char *const *argvs[2] = {argv, argv};
	const char *wargv[3];
	size_t lens[2], klen, wlens[3];
	const size_t *lensv[2] = {wlens, lens};
	int argcs[2] = {2, 2};
	enum orgw_err err = ORGW_EIO;
	bool mark;
	char *k;

	*val = NULL;
	if ((b = buf_find(s, key)) != NULL) {
		if (b->val != NULL && (*val = strdup(b->val)) == NULL)
			return ORGW_ENOMEM;
		return ORGW_OK;
	}
	mark = marker_due(s, &err);
	if (err != ORGW_OK)
		return err;
	err = ORGW_EIO;
	if ((k = full_key(key, &klen)) == NULL)
		return ORGW_ENOMEM;
	argv[0] = "GET";
	argv[1] = k;
	lens[0] = 3;
	lens[1] = klen;
	wargv[0] = "WATCH";
	wargv[1] = k;
	wlens[0] = 5;
	wlens[1] = klen;
	if (mark) {
		wargv[2] = s->marker;
		wlens[2] = strlen(s->marker);
		argcs[0] = 3;
	}
	argvs[0] = wargv;
	if (s->write) {
		/* WATCH before GET, in one round trip. */
		if (pipeline(s->rc, 2, argcs, argvs, lensv, rep) != ORGW_OK)
			goto out;
		s->watched = true;
		r = rep[1];
		if (reply_ok(rep[0]))
			s->marker_watched = s->marker_watched || mark;
		else
			log_err("state: redis WATCH %s: %s", key,
				rep[0]->type == REDIS_REPLY_ERROR ?
				rep[0]->str : "unexpected reply");
		freeReplyObject(rep[0]);
	} else if ((r = command(s->rc, 2, argv, lens)) == NULL) {
		goto out;
	}
	if (r->type == REDIS_REPLY_STRING) {
		if ((*val = malloc(r->len + 1)) == NULL) {
			err = ORGW_ENOMEM;
		} else {
			memcpy(*val, r->str, r->len);
			(*val)[r->len] = '\0';
			err = ORGW_OK;
		}
	} else if (r->type == REDIS_REPLY_NIL) {
		err = ORGW_OK;
	} else if (r->type == REDIS_REPLY_ERROR &&
		   reply_cause(r) == STORE_CAUSE_WRONGTYPE) {
		/* Someone else's hash or list under our key: as an error
		 * it would leave the model unpinned and uncounted for
		 * good.  Read as absent, so the transaction's SET (which
		 * replaces a key of any type) writes it anew. */
		log_warn("state: redis key %s is not a string (WRONGTYPE): "
			 "read as absent, replaced by the next write", k);
		err = ORGW_OK;
	} else {
		log_err("state: redis GET %s: %s", key,
			r->type == REDIS_REPLY_ERROR ? r->str :
						       "unexpected reply");
	}
	freeReplyObject(r);
out:
	free(k);
	return err;
}

/* Buffers a write (val NULL: delete) for the commit. */
static enum orgw_err
buffer(struct store_redis *s, const char *key, const char *val)
{
	struct rbuf *b, *nb;
	char *v = NULL;

	if (!s->write)
		return ORGW_EINVAL;
	if (val != NULL && (v = strdup(val)) == NULL)
		return ORGW_ENOMEM;
	if ((b = buf_find(s, key)) != NULL) {
		free(b->val);
		b->val = v;
		return ORGW_OK;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		if ((nb = realloc(s->buf, cap * sizeof(*nb))) == NULL) {
			free(v);
			return ORGW_ENOMEM;
		}
		s->buf = nb;
		s->cap = cap;
	}
	if ((s->buf[s->n].key = strdup(key)) == NULL) {
		free(v);
		return ORGW_ENOMEM;
	}
	s->buf[s->n].val = v;
	s->n++;
	return ORGW_OK;
}

static enum orgw_err
rd_put(struct store *base, const char *key, const char *val)
{
	return buffer((struct store_redis *)base, key, val);
}

static enum orgw_err
rd_del(struct store *base, const char *key)
{
	return buffer((struct store_redis *)base, key, NULL);
}

static int
by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct keys {
	char **v;
	size_t n, cap;
};

static void
keys_free(struct keys *ks)
{
	size_t i;

	for (i = 0; i < ks->n; i++)
		free(ks->v[i]);
	free(ks->v);
	ks->v = NULL;
	ks->n = ks->cap = 0;
}

/* Adds a scanned key (with its prefix) when it is state with prefix. */
static enum orgw_err
keys_add(struct keys *ks, const char *k, size_t len, const char *prefix,
	 size_t plen)
{
	char **nv;

	if (len < KEY_PREFIX_LEN || memcmp(k, KEY_PREFIX, KEY_PREFIX_LEN) != 0)
		return ORGW_OK;
	k += KEY_PREFIX_LEN;
	len -= KEY_PREFIX_LEN;
	/* The run lock's keys are not state (GDBM keeps them in
	 * STATE_PATH.score), nor are the transactions' markers: never
	 * listed, dumped or loaded. */
	if ((len == 3 && memcmp(k, "RUN", 3) == 0) ||
	    (len == 8 && memcmp(k, "RUN_LAST", 8) == 0) ||
	    (len > 4 && memcmp(k, REDISCONF_TXN_PREFIX, 4) == 0))
		return ORGW_OK;
	if (len < plen || memcmp(k, prefix, plen) != 0 ||
	    memchr(k, '\0', len) != NULL)
		return ORGW_OK;
	if (ks->n == ks->cap) {
		size_t cap = ks->cap ? ks->cap * 2 : 64;
		if ((nv = realloc(ks->v, cap * sizeof(*nv))) == NULL)
			return ORGW_ENOMEM;
		ks->v = nv;
		ks->cap = cap;
	}
	if ((ks->v[ks->n] = malloc(len + 1)) == NULL)
		return ORGW_ENOMEM;
	memcpy(ks->v[ks->n], k, len);
	ks->v[ks->n][len] = '\0';
	ks->n++;
	return ORGW_OK;
}

/* SCAN MATCH orgw:<prefix>* into ks, sorted, each key once (SCAN may
 * return a key twice). */
static enum orgw_err
scan_keys(struct store_redis *s, const char *prefix, struct keys *ks)
{
	size_t plen = strlen(prefix), i, j, mlen = 0;
	char cursor[32] = "0", *match;
	const char *argv[6];
	size_t lens[6];
	redisReply *r;
	enum orgw_err err = ORGW_OK;

	/* The pattern, with glob characters of the prefix escaped. */
	if ((match = malloc(KEY_PREFIX_LEN + 2 * plen + 2)) == NULL)
		return ORGW_ENOMEM;
	memcpy(match, KEY_PREFIX, KEY_PREFIX_LEN);
	mlen = KEY_PREFIX_LEN;
	for (i = 0; i < plen; i++) {
		if (strchr("*?[]\\", prefix[i]) != NULL)
			match[mlen++] = '\\';
		match[mlen++] = prefix[i];
	}
	match[mlen++] = '*';
	match[mlen] = '\0';
	do {
		argv[0] = "SCAN";
		argv[1] = cursor;
		argv[2] = "MATCH";
		argv[3] = match;
		argv[4] = "COUNT";
		argv[5] = SCAN_COUNT;
		for (i = 0; i < 6; i++)
			lens[i] = strlen(argv[i]);
		if ((r = command(s->rc, 6, argv, lens)) == NULL) {
			err = ORGW_EIO;
			break;
		}
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    r->element[0]->type != REDIS_REPLY_STRING ||
		    r->element[0]->len >= sizeof(cursor) ||
		    r->element[1]->type != REDIS_REPLY_ARRAY) {
			log_err("state: redis SCAN: unexpected reply");
			freeReplyObject(r);
			err = ORGW_EIO;
			break;
		}
		memcpy(cursor, r->element[0]->str, r->element[0]->len);
		cursor[r->element[0]->len] = '\0';
		for (i = 0; i < r->element[1]->elements && err == ORGW_OK;
		     i++) {
			redisReply *e = r->element[1]->element[i];
			if (e->type == REDIS_REPLY_STRING)
				err = keys_add(ks, e->str, e->len, prefix,
					       plen);
		}
		freeReplyObject(r);
	} while (err == ORGW_OK && strcmp(cursor, "0") != 0);
	free(match);
	if (err != ORGW_OK)
		return err;
	/* No match leaves ks->v NULL, which qsort may not be given. */
	if (ks->n > 1)
		qsort(ks->v, ks->n, sizeof(ks->v[0]), by_str);
	for (i = j = 0; i < ks->n; i++) {
		if (j > 0 && strcmp(ks->v[i], ks->v[j - 1]) == 0) {
			free(ks->v[i]);
			continue;
		}
		ks->v[j++] = ks->v[i];
	}
	ks->n = j;
	return ORGW_OK;
}

/* Values of keys[0..n) (WATCHed first in a write transaction), passed
 * to fn with the transaction's own writes laid over them.  *stop when fn
 * asked to stop. */
static enum orgw_err
each_batch(struct store_redis *s, char **keys, size_t n,
	   int (*fn)(void *arg, const char *key, const char *val), void *arg,
	   bool *stop)
{
	const char **argv[2] = {NULL, NULL};
	size_t *lens[2] = {NULL, NULL}, i;
	int argcs[2];
	redisReply *rep[2] = {NULL, NULL}, *vals;
	enum orgw_err err;
	struct rbuf *b;
	char *v;
	int w = s->write ? 1 : 0, c;
	bool mark = marker_due(s, &err);

	if (err != ORGW_OK)
		return err;
	err = ORGW_ENOMEM;
	for (c = 0; c < 2; c++) {
		/* One slot more for WATCH's marker. */
		argv[c] = calloc(n + 2, sizeof(*argv[c]));
		lens[c] = calloc(n + 2, sizeof(*lens[c]));
		if (argv[c] == NULL || lens[c] == NULL)
			goto out;
		argcs[c] = (int)n + 1;
	}
	argv[0][0] = "WATCH";
	lens[0][0] = 5;
	argv[1][0] = "MGET";
	lens[1][0] = 4;
	for (i = 0; i < n; i++) {
		size_t kl;
		char *fk = full_key(keys[i], &kl);
		if (fk == NULL)
			goto out_keys;
		argv[0][i + 1] = argv[1][i + 1] = fk;
		lens[0][i + 1] = lens[1][i + 1] = kl;
	}
	if (mark) {
		argv[0][n + 1] = s->marker;
		lens[0][n + 1] = strlen(s->marker);
		argcs[0] = (int)n + 2;
	}
	err = pipeline(s->rc, (size_t)(1 + w), argcs + 1 - w,
		       (const char *const *const *)(argv + 1 - w),
		       (const size_t *const *)(lens + 1 - w), rep);
	if (err != ORGW_OK)
		goto out_keys;
	if (w) {
		s->watched = true;
		if (reply_ok(rep[0]))
			s->marker_watched = s->marker_watched || mark;
	}
	vals = rep[w];
	if (vals->type != REDIS_REPLY_ARRAY || vals->elements != n) {
		log_err("state: redis MGET: unexpected reply");
		err = ORGW_EIO;
		goto out_keys;
	}
	for (i = 0; i < n && !*stop; i++) {
		v = NULL;
		if ((b = buf_find(s, keys[i])) != NULL)
			v = b->val;
		else if (vals->element[i]->type == REDIS_REPLY_STRING)
			v = vals->element[i]->str;
		if (v != NULL && fn(arg, keys[i], v) != 0)
			*stop = true;
	}
	err = ORGW_OK;
out_keys:
	for (i = 0; i < n; i++)
		free((char *)(uintptr_t)argv[1][i + 1]);
out:
	for (c = 0; c < 2; c++) {
		free(argv[c]);
		free(lens[c]);
		freeReplyObject(rep[c]);
	}
	return err;
}

static enum orgw_err
rd_each(struct store *base, const char *prefix,
	int (*fn)(void *arg, const char *key, const char *val), void *arg)
{
	struct store_redis *s = (struct store_redis *)base;
	struct keys ks = {NULL, 0, 0};
	size_t i, plen = strlen(prefix), m;
	bool stop = false;
	enum orgw_err err;

	if ((err = scan_keys(s, prefix, &ks)) != ORGW_OK)
		goto out;
	for (i = 0; i < ks.n && !stop; i += m) {
		m = ks.n - i < MGET_BATCH ? ks.n - i : MGET_BATCH;
		if ((err = each_batch(s, ks.v + i, m, fn, arg, &stop)))
			goto out;
	}
	/* Keys this transaction put that Redis does not hold yet. */
	for (i = 0; i < s->n && !stop; i++) {
		char *k = s->buf[i].key;
		if (s->buf[i].val == NULL || strncmp(k, prefix, plen) != 0 ||
		    bsearch(&k, ks.v, ks.n, sizeof(ks.v[0]), by_str) != NULL)
			continue;
		if (fn(arg, k, s->buf[i].val) != 0)
			stop = true;
	}
out:
	keys_free(&ks);
	return err;
}

/*
 * Write transactions of one process take turns.  A worker runs
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

static void
txn_free(struct store_redis *s)
{
	size_t i;


	for (i = 0; i < s->n; i++) {
		free(s->buf[i].key);
		free(s->buf[i].val);
	}
	free(s->buf);
	if (s->holds_turn)
		pthread_mutex_unlock(&write_turn);
	free(s);
}

static void
unwatch(struct store_redis *s)
{
	const char *argv[1] = {"UNWATCH"};
	size_t lens[1] = {7};

	if (s->watched && s->rc->ctx != NULL)
		freeReplyObject(command(s->rc, 1, argv, lens));
	s->watched = false;
}

/* The expiry of a cooldown key, unix ms, or 0 for none. */
static int64_t
cooldown_pxat(const struct rbuf *b)
{
	struct rec_cooldown cd;
	int64_t now = clock_now_s();

	if (b->val == NULL ||
	    statekeys_is(b->key, SK_PROVIDER_COOLDOWN) == NULL ||
	    record_cooldown_decode(b->val, &cd) != ORGW_OK)
		return 0;
	return (cd.until > now ? cd.until : now + 1) * 1000;
}

/*
 * Settles a transaction whose EXEC reply was lost (a timeout, a dropped
 * connection: a frozen Redis may still run it once it resumes) on a new
 * connection: SET <marker> fence NX.
 *
 * Why that is exact: the transaction's MULTI sets its marker, and its
 * first WATCH, answered before MULTI/EXEC was sent, watched the marker
 * too.  Redis runs one command at a time, so either the EXEC ran before
 * the fence (the marker is there: the SET NX answers nil, the writes
 * went in) or the fence ran first: it creates the marker, which marks
 * the old connection's WATCH dirty, so its EXEC, should Redis still
 * read it (bytes in a socket buffer or in flight on the network outlive
 * the close), answers nil and writes nothing; the SET answers OK, and
 * the transaction did not and never will go in.  Closing the old socket
 * first settles nothing by itself (Redis reads what was received before
 * it sees the close, and reads it after it resumes); the WATCH does.  A
 * marker evicted before the fence (an eviction policy other than
 * noeviction) would read as not applied: the fence runs within seconds.
 *
 * No answer (Redis still frozen or down) is asked again, every
 * FENCE_PAUSE_MS, until STORE_REDIS_FENCE_MS have passed; then, or on an
 * error reply, the outcome is unknown.  A SET that timed out was still
 * received, and a Redis frozen past it runs it once it resumes: the
 * marker is then the fence's own, and the next try's nil would say the
 * transaction went in when the WATCH refused it.  So each try GETs the
 * marker too, in the same round trip, and a nil SET counts as applied
 * only when the marker holds the transaction's value (once set, the
 * marker never changes: the fences set it NX, and an EXEC after a
 * fence's SET is refused).  Returns ORGW_OK when the transaction went
 * in, else ORGW_EIO (logged).
 */
static enum orgw_err
fence(struct store_redis *s)
{
	const char *sv[] = {"SET", s->marker, MARKER_FENCE_VAL, "NX", "PX",
			    MARKER_TTL_MS};
	const char *gv[] = {"GET", s->marker};
	const char *const *argvs[2] = {sv, gv};
	size_t sl[6], gl[2];
	const size_t *lens[2] = {sl, gl};
	int argcs[2] = {6, 2};
	int64_t t0 = clock_mono_ms(), deadline = t0 + STORE_REDIS_FENCE_MS;
	enum redisconf_fence v = REDISCONF_FENCE_RETRY;
	enum redisconf_reply kind;
	const char *why;
	struct rconn *rc;
	redisReply *rep[2] = {NULL, NULL};
	size_t i;

	for (i = 0; i < 6; i++)
		sl[i] = strlen(sv[i]);
	for (i = 0; i < 2; i++)
		gl[i] = strlen(gv[i]);
	for (;;) {
		kind = REDISCONF_REPLY_NONE;
		why = "no answer within the fence's time";
		/* The fence keeps its own pace (FENCE_PAUSE_MS), within its
		 * deadline, not the backoff of the connection just lost. */
		s->rc->next_try_ms = 0;
		if (conn_get(s->c, &rc) != NULL &&
		    pipeline(rc, 2, argcs, argvs, lens, rep) == ORGW_OK) {
			why = "unexpected reply to SET NX";
			if (rep[0]->type == REDIS_REPLY_ERROR) {
				kind = REDISCONF_REPLY_ERROR;
				why = rep[0]->str;
			} else if (reply_ok(rep[0])) {
				kind = REDISCONF_REPLY_OK;
			} else if (rep[0]->type != REDIS_REPLY_NIL) {
				kind = REDISCONF_REPLY_OTHER;
			} else if (reply_is(rep[1], MARKER_TXN_VAL)) {
				kind = REDISCONF_REPLY_NIL;
			} else if (reply_is(rep[1], MARKER_FENCE_VAL)) {
				kind = REDISCONF_REPLY_FENCED;
			} else {
				kind = REDISCONF_REPLY_OTHER;
				why = rep[1]->type == REDIS_REPLY_ERROR ?
					      rep[1]->str :
					      "the marker gone after SET NX";
			}
		}
		v = redisconf_fence_verdict(kind, clock_mono_ms(), deadline);
		if (v == REDISCONF_FENCE_UNKNOWN)
			log_err("state: redis transaction's outcome unknown "
				"(%s): it may have gone in, and its request "
				"counts may be counted twice",
				why);
		for (i = 0; i < 2; i++) {
			freeReplyObject(rep[i]);
			rep[i] = NULL;
		}
		if (v != REDISCONF_FENCE_RETRY)
			break;
		clock_sleep_us(FENCE_PAUSE_MS * 1000);
	}
	if (v == REDISCONF_FENCE_APPLIED) {
		log_info("state: redis EXEC's reply was lost, and the "
			 "transaction went in (its marker was there %lld ms "
			 "later)",
			 (long long)(clock_mono_ms() - t0));
		return ORGW_OK;
	}
	if (v == REDISCONF_FENCE_NOT_APPLIED)
		log_info("state: redis EXEC's reply was lost, and the "
			 "transaction did not go in (nor can it any more%s)",
			 kind == REDISCONF_REPLY_FENCED ?
				 "; an earlier try of the fence, its reply "
				 "lost too, set the marker" : "");
	return ORGW_EIO;
}

/*
 * MULTI, the buffered writes, EXEC: one round trip.  A transaction whose
 * outcome must be known also sets its marker inside MULTI (for
 * MARKER_TTL_MS: only the fence reads it, within seconds, and a minute
 * leaves room for a stepped clock) after WATCHing it, by a round trip
 * of its own when no read did it; a lost EXEC reply is then settled by
 * fence().
 */
static enum orgw_err
exec_writes(struct store_redis *s)
{
	/* MULTI, the writes, the marker's SET, EXEC. */
	size_t cap = s->n + 3, ncmd = cap, nw = s->n, i;
	int *argcs = calloc(cap, sizeof(*argcs));
	const char *(*argv)[5] = calloc(cap, sizeof(*argv));
	size_t (*lens)[5] = calloc(cap, sizeof(*lens));
	const char *const **av = calloc(cap, sizeof(*av));
	const size_t **lv = calloc(cap, sizeof(*lv));
	redisReply **rep = calloc(cap, sizeof(*rep)), *ex;
	char (*px)[24] = calloc(cap, sizeof(*px));
	enum orgw_err err = ORGW_ENOMEM;
	bool mark = s->base.exact && s->marker_watched;

	if (argcs == NULL || argv == NULL || lens == NULL || av == NULL ||
	    lv == NULL || rep == NULL || px == NULL)
		goto out;
	if (marker_due(s, &err)) {
		/* A transaction that wrote without reading: WATCH its
		 * marker now, answered before MULTI goes out. */
		const char *wa[] = {"WATCH", s->marker};
		redisReply *w = cmd_strs(s->rc, 2, wa);

		if (w == NULL || !reply_ok(w)) {
			if (w != NULL)
				log_err("state: redis WATCH: %s",
					w->type == REDIS_REPLY_ERROR ?
					w->str : "unexpected reply");
			freeReplyObject(w);
			err = ORGW_EIO;	/* nothing of MULTI was sent */
			goto out;
		}
		freeReplyObject(w);
		s->marker_watched = mark = true;
	} else if (err != ORGW_OK) {
		goto out;
	}
	if (mark)
		nw = s->n + 1;
	ncmd = nw + 2;
	for (i = 0; i < ncmd; i++) {
		av[i] = argv[i];
		lv[i] = lens[i];
	}
	argv[0][0] = "MULTI";
	argcs[0] = 1;
	argv[ncmd - 1][0] = "EXEC";
	argcs[ncmd - 1] = 1;
	if (mark) {
		argv[nw][0] = "SET";
		argv[nw][1] = s->marker;
		argv[nw][2] = MARKER_TXN_VAL;
		argv[nw][3] = "PX";
		argv[nw][4] = MARKER_TTL_MS;
		argcs[nw] = 5;
	}
	for (i = 0; i < s->n; i++) {
		struct rbuf *b = &s->buf[i];
		size_t kl;
		int64_t at = cooldown_pxat(b);

		if ((argv[i + 1][1] = full_key(b->key, &kl)) == NULL)
			goto out_keys;
		if (b->val == NULL) {
			argv[i + 1][0] = "DEL";
			argcs[i + 1] = 2;
			continue;
		}
		argv[i + 1][0] = "SET";
		argv[i + 1][2] = b->val;
		argcs[i + 1] = 3;
		if (at > 0) {
			snprintf(px[i], sizeof(px[i]), "%lld", (long long)at);
			argv[i + 1][3] = "PXAT";
			argv[i + 1][4] = px[i];
			argcs[i + 1] = 5;
		}
	}
	for (i = 0; i < ncmd; i++) {
		int j;
		for (j = 0; j < argcs[i]; j++)
			lens[i][j] = strlen(argv[i][j]);
	}
	err = pipeline(s->rc, ncmd, argcs, av, lv, rep);
	s->watched = false;	/* EXEC unwatches, and so does a drop */
	if (err != ORGW_OK) {
		/* The connection is gone (pipeline dropped it), maybe with
		 * EXEC already sent: only the marker can tell. */
		if (mark)
			err = fence(s);
		goto out_keys;
	}
	ex = rep[ncmd - 1];
	if (ex->type == REDIS_REPLY_NIL) {
		err = ORGW_ECONFLICT;
	} else if (ex->type == REDIS_REPLY_ERROR) {
		/* EXECABORT says only that a command was refused when it
		 * was queued; that command's own reply says why (OOM at
		 * maxmemory), and is what the log and /healthz name. */
		const redisReply *q = NULL;

		for (i = 1; q == NULL && i + 1 < ncmd; i++)
			if (rep[i]->type == REDIS_REPLY_ERROR)
				q = rep[i];
		log_err("state: redis refused the transaction: %s%s%s",
			q != NULL ? q->str : "", q != NULL ? " (" : "",
			q != NULL ? "EXECABORT)" : ex->str);
		store_write_refused(reply_cause(q != NULL ? q : ex));
		err = ORGW_EIO;
	} else if (ex->type != REDIS_REPLY_ARRAY || ex->elements != nw) {
		log_err("state: redis EXEC: unexpected reply");
		err = ORGW_EIO;
	} else {
		err = ORGW_OK;
		for (i = 0; i < ex->elements; i++)
			if (ex->element[i]->type == REDIS_REPLY_ERROR) {
				log_err("state: redis %s %s: %s",
					argv[i + 1][0],
					i < s->n ? s->buf[i].key :
						   "(marker)",
					ex->element[i]->str);
				store_write_refused(
					reply_cause(ex->element[i]));
				err = ORGW_EIO;
			}
	}
out_keys:
	for (i = 0; i < s->n; i++)
		free((char *)(uintptr_t)argv[i + 1][1]);
out:
	if (rep != NULL)
		for (i = 0; i < ncmd; i++)
			freeReplyObject(rep[i]);
	free(rep);
	free(px);
	free(lv);
	free(av);
	free(lens);
	free(argv);
	free(argcs);
	return err;
}

static enum orgw_err
rd_commit(struct store *base)
{
	struct store_redis *s = (struct store_redis *)base;
	enum orgw_err err = ORGW_OK;

	if (s->write && s->n > 0)
		err = exec_writes(s);
	else
		unwatch(s);
	txn_free(s);
	return err;
}

static void
rd_abort(struct store *base)
{
	struct store_redis *s = (struct store_redis *)base;

	unwatch(s);
	txn_free(s);
}

/*
 * Redis's TIME: seconds and microseconds as two strings.  One server's
 * clock for every host, so a window counted across hosts is one window
 * whatever their own clocks say.  Not WATCHed (it changes nothing), but
 * read between the transaction's WATCH and its EXEC: a conflict runs it
 * again with the time read again.
 */
static enum orgw_err
rd_now_ms(struct store *base, int64_t *ms)
{
	struct store_redis *s = (struct store_redis *)base;
	const char *argv[1] = {"TIME"};
	redisReply *r;
	long long sec, usec;
	char *end1, *end2;
	enum orgw_err err = ORGW_EIO;

	if ((r = cmd_strs(s->rc, 1, argv)) == NULL)
		return ORGW_EIO;
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    r->element[0]->type == REDIS_REPLY_STRING &&
	    r->element[1]->type == REDIS_REPLY_STRING) {
		errno = 0;
		sec = strtoll(r->element[0]->str, &end1, 10);
		usec = strtoll(r->element[1]->str, &end2, 10);
		if (errno == 0 && *end1 == '\0' && *end2 == '\0' &&
		    sec > 0 && sec < 100000000000LL && usec >= 0 &&
		    usec < 1000000) {
			*ms = (int64_t)sec * 1000 + usec / 1000;
			err = ORGW_OK;
		}
	}
	if (err != ORGW_OK)
		log_err("state: redis TIME: %s",
			r->type == REDIS_REPLY_ERROR ? r->str :
						       "unexpected reply");
	freeReplyObject(r);
	return err;
}

static const struct store_ops rd_ops = {
	rd_get, rd_put, rd_del, rd_each, rd_commit, rd_abort, rd_now_ms,
};

enum orgw_err
store_redis_open(struct store **out, const struct orgw_conf *c, bool write)
{
	struct store_redis *s;
	struct rconn *rc;
	bool turn = false;

	*out = NULL;
	if (write)
		turn = turn_take(REDIS_TURN_WAIT_MS);
	if (conn_get(c, &rc) == NULL) {
		if (turn)
			pthread_mutex_unlock(&write_turn);
		return rc == NULL ? ORGW_ENOMEM : ORGW_EIO;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		if (turn)
			pthread_mutex_unlock(&write_turn);
		return ORGW_ENOMEM;
	}
	s->base.ops = &rd_ops;
	s->c = c;
	s->rc = rc;
	s->write = write;
	s->holds_turn = turn;
	*out = &s->base;
	return ORGW_OK;
}

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

/* The back-end table (store_impl.h).  Redis has nothing to repair
 * (ORGW_EIO, so a caller does not retry a transaction that failed for
 * want of a connection) and nothing to tidy. */
static enum orgw_err
redis_open(struct store **out, const struct orgw_conf *c, bool write,
	   int64_t timeout_ms)
{
	(void)timeout_ms;
	return store_redis_open(out, c, write);
}

static enum orgw_err
redis_run_begin(const struct orgw_conf *c, int64_t min_interval_s,
		int64_t now_s, void **run, int64_t *retry_after_s)
{
	struct store_redis_run *r = NULL;
	enum orgw_err err = store_redis_run_begin(c, min_interval_s, now_s,
						  &r, retry_after_s);

	*run = r;
	return err;
}

static void
redis_run_end(void *run)
{
	store_redis_run_end(run);
}

static enum orgw_err
redis_repair(const struct orgw_conf *c, int64_t timeout_ms)
{
	(void)c;
	(void)timeout_ms;
	return ORGW_EIO;
}

static enum orgw_err
redis_tidy(const struct orgw_conf *c, int64_t timeout_ms)
{
	(void)c;
	(void)timeout_ms;
	return ORGW_OK;
}

const struct store_backend store_redis_backend = {
	"redis: ",	   redis_open,	 redis_run_begin, redis_run_end,
	store_redis_check, redis_repair, redis_tidy,
};
