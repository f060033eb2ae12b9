/*
 * store_redis_commit.c - a write transaction's commit: MULTI, the
 * buffered writes and EXEC in one round trip (exec_writes), and the
 * fence that settles a lost EXEC reply.
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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "log.h"
#include "record.h"
#include "redisconf.h"
#include "store_redis.h"
#include "store_redis_impl.h"
#include "storehealth.h"
#define MARKER_TTL_MS "60000"
#define MARKER_TXN_VAL "1"	/* set by the transaction's MULTI */
#define MARKER_FENCE_VAL "fence"	/* set by fence() */
#define FENCE_PAUSE_MS 100

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
enum orgw_err
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
