/*
 * test_redisconf.c - unit tests for redisconf.c: REDIS_URL
 * forms and refusals, and the conflict retry policy (growth, cap,
 * jitter bounds), the transaction marker's key and what the fence's
 * reply tells; plus conf.c's STATE_BACKEND / REDIS_URL settings.
 */
#include <stdint.h>
#include <string.h>

#include "t.h"
#include "conf.h"
#include "redisconf.h"

static void
test_url_ok(void)
{
	struct redisconf_url u;
	char err[160];

	T_ASSERT("redis://127.0.0.1:6379/0",
		 redisconf_parse_url("redis://127.0.0.1:6379/0", &u, err,
				     sizeof(err)) == ORGW_OK &&
			 !u.is_unix && strcmp(u.host, "127.0.0.1") == 0 &&
			 u.port == 6379 && u.db == 0);
	T_ASSERT("redis://host: port 6379 and db 0 by default",
		 redisconf_parse_url("redis://cache.internal", &u, err,
				     sizeof(err)) == ORGW_OK &&
			 strcmp(u.host, "cache.internal") == 0 &&
			 u.port == 6379 && u.db == 0);
	T_ASSERT("redis://host:7000/3",
		 redisconf_parse_url("redis://h:7000/3", &u, err,
				     sizeof(err)) == ORGW_OK &&
			 strcmp(u.host, "h") == 0 && u.port == 7000 &&
			 u.db == 3);
	T_ASSERT("redis://host/5: db without a port",
		 redisconf_parse_url("redis://h/5", &u, err, sizeof(err)) ==
				 ORGW_OK &&
			 u.port == 6379 && u.db == 5);
	T_ASSERT("redis://host:1/ : an empty path is db 0",
		 redisconf_parse_url("redis://h:1/", &u, err, sizeof(err)) ==
				 ORGW_OK &&
			 u.port == 1 && u.db == 0);
	T_ASSERT("redis://[::1]:6380/2: IPv6 in brackets",
		 redisconf_parse_url("redis://[::1]:6380/2", &u, err,
				     sizeof(err)) == ORGW_OK &&
			 strcmp(u.host, "::1") == 0 && u.port == 6380 &&
			 u.db == 2);
	T_ASSERT("unix:/run/redis.sock",
		 redisconf_parse_url("unix:/run/redis.sock", &u, err,
				     sizeof(err)) == ORGW_OK &&
			 u.is_unix && strcmp(u.path, "/run/redis.sock") == 0 &&
			 u.db == 0);
	T_ASSERT("unix:/run/redis.sock?db=4",
		 redisconf_parse_url("unix:/run/redis.sock?db=4", &u, err,
				     sizeof(err)) == ORGW_OK &&
			 u.is_unix && strcmp(u.path, "/run/redis.sock") == 0 &&
			 u.db == 4);
	T_ASSERT("unix:///run/r.sock: the URL form of the same path",
		 redisconf_parse_url("unix:///run/r.sock", &u, err,
				     sizeof(err)) == ORGW_OK &&
			 strcmp(u.path, "/run/r.sock") == 0);
}

static void
test_url_refused(void)
{
	static const char *bad[] = {
		"",
		"127.0.0.1:6379",
		"rediss://h:6379/0",
		"http://h/0",
		"redis://",
		"redis://:6379/0",
		"redis://h:0/0",
		"redis://h:65536/0",
		"redis://h:-1/0",
		"redis://h:63 79/0",
		"redis://h:6379/x",
		"redis://h:6379/65536",
		"redis://h:6379/0/1",
		"redis://h:6379/0?x=1",
		"redis://h o/0",
		"redis://[::1/0",
		"redis://[::1]x/0",
		"unix:",
		"unix:relative.sock",
		"unix:/r.sock?db=x",
		"unix:/r.sock?foo=1",
		"unix:/r .sock",
	};
	struct redisconf_url u;
	char err[160], what[200];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(what, sizeof(what), "refused: \"%s\"", bad[i]);
		err[0] = '\0';
		T_ASSERT(what, redisconf_parse_url(bad[i], &u, err,
						   sizeof(err)) ==
					       ORGW_EINVAL &&
				       err[0] != '\0');
	}
	T_ASSERT("a NULL URL is refused",
		 redisconf_parse_url(NULL, &u, NULL, 0) == ORGW_EINVAL);
	T_ASSERT("a password in the URL is refused, and not quoted back",
		 redisconf_parse_url("redis://:s3cret@h:6379/0", &u, err,
				     sizeof(err)) == ORGW_EINVAL &&
			 strstr(err, "REDIS_PASSWORD") != NULL &&
			 strstr(err, "s3cret") == NULL);
	{
		char longp[300];
		memset(longp, 'a', sizeof(longp) - 1);
		longp[0] = 'u';
		memcpy(longp, "unix:/", 6);
		longp[sizeof(longp) - 1] = '\0';
		T_ASSERT("a socket path longer than sun_path is refused",
			 redisconf_parse_url(longp, &u, err, sizeof(err)) ==
				 ORGW_EINVAL);
	}
}

static void
test_retry(void)
{
	int64_t prev_hi = 0, hi, d;
	int a;
	uint32_t r;
	bool ok = true, grows = true;

	/* Bounds: attempt a waits in [D/2, D] with D = min(100 << a, 8000). */
	for (a = 0; a < 80; a++) {
		int64_t full = a < 7 ? (int64_t)100 << a : 8000;
		if (full > 8000)
			full = 8000;
		hi = 0;
		for (r = 0; r < 50000; r += 7) {
			d = redisconf_retry_delay_us(a, r * 2654435761u);
			if (d < full / 2 || d > full)
				ok = false;
			if (d > hi)
				hi = d;
		}
		if (hi < prev_hi)
			grows = false;
		prev_hi = hi;
	}
	T_ASSERT("each pause lies in [D/2, D], D = 100 us doubling to 8 ms",
		 ok);
	T_ASSERT("the longest pause never shrinks with the attempt", grows);
	T_ASSERT("attempt 0 waits 50..100 us",
		 redisconf_retry_delay_us(0, 0) == 50 &&
			 redisconf_retry_delay_us(0, 50) == 100);
	T_ASSERT("the cap holds for huge attempts",
		 redisconf_retry_delay_us(1000000, UINT32_MAX) <= 8000);
	T_ASSERT("jitter: different draws give different pauses",
		 redisconf_retry_delay_us(5, 1) !=
			 redisconf_retry_delay_us(5, 2));
	/* state_txn reruns until STORE_LOCK_TIMEOUT_MS: with pauses of at
	 * most 8 ms that is hundreds of reruns, not a handful. */
	{
		int64_t total = 0;
		for (a = 0; a < 300; a++)
			total += redisconf_retry_delay_us(a, UINT32_MAX);
		T_ASSERT("300 reruns wait at most 2.4 s",
			 total <= 300 * 8000);
	}
}

static void
test_conf(void)
{
	struct orgw_conf c;
	char err[256];

	T_ASSERT("conf_init", conf_init(&c) == ORGW_OK);
	T_ASSERT("STATE_BACKEND defaults to gdbm",
		 c.state_backend == CONF_BACKEND_GDBM);
	T_ASSERT("REDIS_URL has its orgw.conf(5) default",
		 strcmp(c.redis_url, "redis://127.0.0.1:6379/0") == 0);
	T_ASSERT("REDIS_PASSWORD is unset", c.redis_password == NULL);
	T_ASSERT("STATE_BACKEND=redis",
		 conf_set(&c, "STATE_BACKEND", "redis", err, sizeof(err)) ==
				 ORGW_OK &&
			 c.state_backend == CONF_BACKEND_REDIS);
	T_ASSERT("STATE_BACKEND=Redis is refused (no guessing)",
		 conf_set(&c, "STATE_BACKEND", "Redis", err, sizeof(err)) ==
				 ORGW_EINVAL &&
			 c.state_backend == CONF_BACKEND_REDIS);
	T_ASSERT("a bad REDIS_URL is refused and the old one kept",
		 conf_set(&c, "REDIS_URL", "redis://:pw@h/0", err,
			  sizeof(err)) == ORGW_EINVAL &&
			 strstr(err, "pw@") == NULL &&
			 strcmp(c.redis_url, "redis://127.0.0.1:6379/0") == 0);
	T_ASSERT("REDIS_URL=unix:/run/redis.sock?db=1",
		 conf_set(&c, "REDIS_URL", "unix:/run/redis.sock?db=1", err,
			  sizeof(err)) == ORGW_OK &&
			 strcmp(c.redis_url, "unix:/run/redis.sock?db=1") == 0);
	T_ASSERT("REDIS_PASSWORD is a secret setting",
		 conf_set(&c, "REDIS_PASSWORD", "pw", err, sizeof(err)) ==
				 ORGW_OK &&
			 strcmp(c.redis_password, "pw") == 0);
	conf_free(&c);
}

static void
test_txn_key(void)
{
	unsigned char id[REDISCONF_TXN_ID_BYTES] = {
		0x00, 0x01, 0x0f, 0x10, 0x7f, 0x80, 0xa5, 0x5a,
		0xde, 0xad, 0xbe, 0xef, 0xc0, 0xff, 0xee, 0xff};
	char k[REDISCONF_TXN_KEY_LEN + 1], small[REDISCONF_TXN_KEY_LEN];

	T_ASSERT("marker: TXN: and 32 lower-case hex digits, high nibble first",
		 redisconf_txn_key(id, k, sizeof(k)) == k &&
			 strcmp(k, "TXN:00010f107f80a55adeadbeefc0ffeeff") ==
				 0);
	T_ASSERT("marker: its length is REDISCONF_TXN_KEY_LEN",
		 strlen(k) == REDISCONF_TXN_KEY_LEN && REDISCONF_TXN_KEY_LEN == 36);
	memset(id, 0, sizeof(id));
	T_ASSERT("marker: zero bytes are zero digits, not cut short",
		 redisconf_txn_key(id, k, sizeof(k)) != NULL &&
			 strcmp(k, "TXN:00000000000000000000000000000000") ==
				 0);
	T_ASSERT("marker: a buffer one byte short is refused",
		 redisconf_txn_key(id, small, sizeof(small)) == NULL);
}

static void
test_fence(void)
{
	static const struct {
		enum redisconf_reply r;
		int64_t now, deadline;
		enum redisconf_fence want;
		const char *what;
	} t[] = {
		{REDISCONF_REPLY_OK, 0, 2000, REDISCONF_FENCE_NOT_APPLIED,
		 "fence: SET NX went in: the transaction did not"},
		{REDISCONF_REPLY_OK, 5000, 2000, REDISCONF_FENCE_NOT_APPLIED,
		 "fence: an answer after the deadline still counts"},
		{REDISCONF_REPLY_NIL, 0, 2000, REDISCONF_FENCE_APPLIED,
		 "fence: the marker was there: the transaction went in"},
		{REDISCONF_REPLY_FENCED, 0, 2000, REDISCONF_FENCE_NOT_APPLIED,
		 "fence: an earlier fence's marker was there: the "
		 "transaction did not go in"},
		{REDISCONF_REPLY_NONE, 1999, 2000, REDISCONF_FENCE_RETRY,
		 "fence: no answer before the deadline: ask again"},
		{REDISCONF_REPLY_NONE, 2000, 2000, REDISCONF_FENCE_UNKNOWN,
		 "fence: no answer at the deadline: unknown"},
		{REDISCONF_REPLY_ERROR, 0, 2000, REDISCONF_FENCE_UNKNOWN,
		 "fence: an error reply (OOM) is final: unknown"},
		{REDISCONF_REPLY_OTHER, 0, 2000, REDISCONF_FENCE_UNKNOWN,
		 "fence: an unexpected reply is unknown, never applied"},
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		T_ASSERT(t[i].what, redisconf_fence_verdict(t[i].r, t[i].now,
							    t[i].deadline) ==
					    t[i].want);
}

int
main(void)
{
	test_url_ok();
	test_url_refused();
	test_retry();
	test_txn_key();
	test_fence();
	test_conf();
	return T_REPORT();
}
