/*
 * gateway_auth.c - keys refused: the guard of refused keys per client
 * address and per key in this process (guard.h), the log line a
 * fail2ban filter matches, and whether a key the operator's does not
 * match is a team key, an admin one or neither (for /stats, /metrics,
 * /status and /__cron, which a team key reads only with --admin).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <openssl/sha.h>

#include "api.h"
#include "clock.h"
#include "gateway_impl.h"
#include "guard.h"
#include "log.h"
#include "relay.h"
#include "teamauth.h"

/* Refused keys per client address and per key in this process
 * (guard.h). */
static struct guard key_guard;
static pthread_mutex_t key_guard_mu = PTHREAD_MUTEX_INITIALIZER;

/* The guard's hash of a presented key (the first 8 bytes of its
 * SHA-256: the guard keeps no key, and tells keys apart); 0 for none. */
uint64_t
guard_hash(const char *key)
{
	unsigned char d[SHA256_DIGEST_LENGTH];
	uint64_t h = 0;
	size_t i;

	if (key == NULL || key[0] == '\0' ||
	    SHA256((const unsigned char *)key, strlen(key), d) == NULL)
		return 0;
	for (i = 0; i < 8; i++)
		h = h << 8 | d[i];
	return h != 0 ? h : 1;
}

/*
 * A key was sent and refused (what: client_key, metrics_key,
 * status_login): one log line with the client's address, the line a
 * fail2ban filter matches (README, Security), and a count towards that
 * address's 429.  Never the key itself.
 */
void
key_refused(const struct orgw_env *env, const char *what, const char *path,
	    uint64_t key)
{
	char a[GUARD_ADDR_MAX * 4], p[PATH_MAX_BYTES * 4];

	log_msg("auth", "time=%lld refused=%s addr=%s path=%s",
		(long long)clock_now_s(), what,
		log_safe(a, sizeof(a),
			 env->remote_addr != NULL ? env->remote_addr : "-"),
		log_safe(p, sizeof(p), path));
	pthread_mutex_lock(&key_guard_mu);
	guard_fail(&key_guard, env->remote_addr, key, clock_now_s());
	pthread_mutex_unlock(&key_guard_mu);
}

/*
 * 429 with Retry-After, at once, to an address that had too many keys
 * refused this minute, or for a key refused too often, whatever key it
 * sends now (a right guess must not be told apart), but the operator's
 * (is_operator): a guesser on the operator's own host must not lock the
 * operator out.  1 when answered so, else 0 with *rc untouched.  No
 * sleep: a wait would hold a worker thread per guess.
 */
int
key_guard_answer(const struct orgw_io *io, const struct orgw_env *env,
		 const struct api *api, const char *path, uint64_t key,
		 bool is_operator, int *rc)
{
	char extra[64], a[GUARD_ADDR_MAX * 4], p[PATH_MAX_BYTES * 4];
	int64_t wait;

	if (is_operator)
		return 0;
	pthread_mutex_lock(&key_guard_mu);
	wait = guard_wait(&key_guard, env->remote_addr, key, clock_now_s());
	pthread_mutex_unlock(&key_guard_mu);
	if (wait == 0)
		return 0;
	log_msg("auth", "time=%lld held addr=%s path=%s retry_after=%lld",
		(long long)clock_now_s(),
		log_safe(a, sizeof(a), env->remote_addr),
		log_safe(p, sizeof(p), path), (long long)wait);
	snprintf(extra, sizeof(extra), "Retry-After: %lld\r\n",
		 (long long)wait);
	*rc = relay_error(io, api, 429, "rate_limit_error",
			  "too_many_refused_keys", NULL,
			  "too many wrong keys from this address; retry "
			  "after Retry-After seconds",
			  extra);
	return 1;
}

enum team_kind
team_key_kind(const struct orgw_conf *c, const char *key)
{
	struct teamauth t;

	if (key == NULL ||
	    teamauth_identify_key(c, key, clock_now_s(), &t) != TA_TEAM)
		return TEAM_NONE;
	return t.key.admin ? TEAM_ADMIN : TEAM_PLAIN;
}
