/*
 * redisconf.h - the pure parts of the Redis state back-end: REDIS_URL
 * parsing (docs/design.md section 8), the retry policy of a write transaction
 * that lost a WATCH race, and the key and verdict of the marker that
 * settles a lost EXEC reply.  No I/O, no clock: the Redis back-end
 * (store_redis*.c) and state.c call in here, the unit tests table-test
 * it.
 */
#ifndef ORGW_REDISCONF_H
#define ORGW_REDISCONF_H

#include "orgw.h"
#include "statekeys.h"

#define REDISCONF_DEFAULT_PORT 6379
#define REDISCONF_HOST_MAX 256
#define REDISCONF_PATH_MAX 108		/* sun_path */
#define REDISCONF_DB_MAX 65535


struct redisconf_url {
	bool is_unix;
	char host[REDISCONF_HOST_MAX];	/* TCP: name or address, no [] */
	int port;			/* TCP: 1..65535 */
	char path[REDISCONF_PATH_MAX];	/* unix: the socket */
	int db;				/* SELECT db, 0..REDISCONF_DB_MAX */
};

/*
 * Parses REDIS_URL: "redis://host[:port][/db]" (host a name, an IPv4
 * address or an [IPv6] address; port 6379 and db 0 by default) or
 * "unix:/path[?db=N]".  A password in the URL ("user:pass@") is refused:
 * it belongs in REDIS_PASSWORD or REDIS_PASSWORD_FILE, which are kept
 * out of logs.  ORGW_OK with *u filled, or ORGW_EINVAL with a reason in
 * err (errlen bytes; may be NULL) that never quotes the URL.
 */
enum orgw_err redisconf_parse_url(const char *url, struct redisconf_url *u,
				  char *err, size_t errlen);

/*
 * The pause before running a conflicted transaction again, in
 * microseconds: attempt 0 is the first rerun.  Exponential from 100 us,
 * capped at 8 ms, with "equal jitter" (half fixed, half drawn from rnd)
 * so the hosts that collided do not collide again in step.
 */
int64_t redisconf_retry_delay_us(int attempt, uint32_t rnd);

/*
 * The marker of a write transaction whose outcome its caller must know
 * (store_redis.c): "TXN:" and the 32 lower-case hex digits of id, into
 * out (n bytes, at least REDISCONF_TXN_KEY_LEN + 1).  The key without
 * the "orgw:" prefix, or NULL when out is too small.
 */
#define REDISCONF_TXN_ID_BYTES 16
#define REDISCONF_TXN_PREFIX STATEKEY_P_TXN
#define REDISCONF_TXN_KEY_LEN (4 + 2 * REDISCONF_TXN_ID_BYTES)
char *redisconf_txn_key(const unsigned char id[REDISCONF_TXN_ID_BYTES],
			char *out, size_t n);

/*
 * The answer to the fence (SET <marker> NX, then GET <marker>, sent on a
 * new connection after an EXEC whose reply was lost), and what it tells.
 * A nil SET is told apart by the value the GET finds: the transaction's
 * own, or a fence's, set by an earlier SET of this fence that Redis ran
 * although its reply was lost too (a freeze longer than the first try).
 */
enum redisconf_reply {
	REDISCONF_REPLY_NONE,	/* no answer: unreachable, timed out */
	REDISCONF_REPLY_OK,	/* +OK: the SET went in */
	REDISCONF_REPLY_NIL,	/* nil: the transaction's value was there */
	REDISCONF_REPLY_FENCED,	/* nil: an earlier fence's value was there */
	REDISCONF_REPLY_ERROR,	/* an error reply (OOM, NOPERM...) */
	REDISCONF_REPLY_OTHER	/* anything else (a marker gone, evicted) */
};

enum redisconf_fence {
	REDISCONF_FENCE_APPLIED,     /* the transaction went in */
	REDISCONF_FENCE_NOT_APPLIED, /* it did not, and never will */
	REDISCONF_FENCE_RETRY,	     /* ask again on a new connection */
	REDISCONF_FENCE_UNKNOWN	     /* cannot be learnt: give up */
};

/*
 * What the fence's reply r, at now_ms, says of the transaction.  No
 * answer is asked again until deadline_ms; an error reply is final (the
 * same SET would be refused again: a Redis at maxmemory, an ACL).
 */
enum redisconf_fence redisconf_fence_verdict(enum redisconf_reply r,
					     int64_t now_ms,
					     int64_t deadline_ms);

#endif
