/*
 * store_redis.c - the Redis back-end of the state store (store_redis.h),
 * on hiredis 0.14 (Debian 12).  No TLS.
 *
 * Transactions.  A reader GETs, SCANs and MGETs.  A writer WATCHes every
 * key it reads (pipelined with the read: one round trip), keeps its puts
 * and deletes in a buffer (read back by its own gets), and at commit
 * sends MULTI, the writes and EXEC in one round trip: a nil EXEC means
 * another host changed a key read meanwhile, nothing was written, and
 * the caller (state_txn) runs the transaction again.  So every
 * read-modify-write of the state (state*.c) is atomic across hosts
 * with the policy still in C, and the same C for both back-ends.  No
 * server-side script.  A transaction whose lost EXEC reply its caller
 * must settle WATCHes a marker key of its own (store_redis_commit.c says
 * why and how).
 *
 * This file holds the transaction: store_redis_open(), the store_ops
 * (get, put, delete, commit, abort, the server's time), the write turn
 * and the back-end table (store_impl.h).  Beside it, sharing
 * store_redis_impl.h:
 *   store_redis_conn.c    this thread's connection, and commands sent on it
 *   store_redis_scan.c    each: the keys of a prefix (SCAN), their values
 *   store_redis_commit.c  MULTI/EXEC, the cooldown keys' expiry, the fence
 *   store_redis_run.c     the scoring-run lock and /healthz's PING
 *
 * Ownership: struct store_redis owns its write buffer and is freed by
 * rd_commit()/rd_abort(); it borrows the thread's connection.
 */
#include <sys/random.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "log.h"
#include "redisconf.h"
#include "store_impl.h"
#include "store_redis.h"
#include "store_redis_impl.h"
#include "storehealth.h"

/*
 * The marker of a transaction whose outcome its caller must know
 * (store_exact_outcome), made on first use: true while it is still to be
 * WATCHed, which the transaction's first WATCH does (so no round trip is
 * added).  *err is ORGW_EIO when no random id could be had.
 */
bool
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

struct rbuf *
buf_find(struct store_redis *s, const char *key)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->buf[i].key, key) == 0)
			return &s->buf[i];
	return NULL;
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
