/*
 * redisconf.c - REDIS_URL parsing and the conflict retry policy of the
 * Redis state back-end (redisconf.h).  Pure: no I/O, no clock, no
 * environment (a core module: make check-layers).
 */
#include <stdio.h>
#include <string.h>

#include "redisconf.h"

#define RETRY_BASE_US 100
#define RETRY_CAP_US 8000

static void
url_err(char *err, size_t errlen, const char *msg)
{
	if (err != NULL && errlen > 0)
		(void)snprintf(err, errlen, "%s", msg);
}

/* Digits only, value in [lo, hi]: true with *out set. */
static bool
digits(const char *s, size_t n, long lo, long hi, int *out)
{
	long v = 0;
	size_t i;

	if (n == 0 || n > 10)
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	if (v < lo || v > hi)
		return false;
	*out = (int)v;
	return true;
}

/* Printable ASCII other than space. */
static bool
graph(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

static enum orgw_err
parse_unix(const char *p, struct redisconf_url *u, char *err, size_t errlen)
{
	const char *q = strchr(p, '?');
	size_t n = q ? (size_t)(q - p) : strlen(p);

	u->is_unix = true;
	/* "unix:///run/redis.sock" is common too: one leading '/' kept. */
	while (n > 1 && p[0] == '/' && p[1] == '/') {
		p++;
		n--;
	}
	if (n == 0 || p[0] != '/' || !graph(p, n)) {
		url_err(err, errlen, "unix: wants an absolute socket path");
		return ORGW_EINVAL;
	}
	if (n >= sizeof(u->path)) {
		url_err(err, errlen, "unix: socket path too long");
		return ORGW_EINVAL;
	}
	memcpy(u->path, p, n);
	u->path[n] = '\0';
	if (q != NULL &&
	    (strncmp(q, "?db=", 4) != 0 ||
	     !digits(q + 4, strlen(q + 4), 0, REDISCONF_DB_MAX, &u->db))) {
		url_err(err, errlen, "unix: only ?db=N (0..65535) may follow "
				     "the path");
		return ORGW_EINVAL;
	}
	return ORGW_OK;
}

static enum orgw_err
parse_tcp(const char *p, struct redisconf_url *u, char *err, size_t errlen)
{
	const char *slash = strchr(p, '/'), *hend, *colon = NULL;
	size_t n = slash ? (size_t)(slash - p) : strlen(p), hn;
	const char *h = p;

	u->port = REDISCONF_DEFAULT_PORT;
	if (memchr(p, '@', n) != NULL) {
		url_err(err, errlen, "a password in the URL is refused; set "
				     "REDIS_PASSWORD or REDIS_PASSWORD_FILE");
		return ORGW_EINVAL;
	}
	if (n > 0 && p[0] == '[') {
		hend = memchr(p, ']', n);
		if (hend == NULL) {
			url_err(err, errlen, "unclosed [ in the host");
			return ORGW_EINVAL;
		}
		h = p + 1;
		hn = (size_t)(hend - h);
		if (hend + 1 < p + n) {
			if (hend[1] != ':') {
				url_err(err, errlen, "junk after ]");
				return ORGW_EINVAL;
			}
			colon = hend + 1;
		}
	} else {
		colon = memchr(p, ':', n);
		hn = colon ? (size_t)(colon - p) : n;
	}
	if (hn == 0 || !graph(h, hn) || memchr(h, '?', hn) != NULL) {
		url_err(err, errlen, "no host, or a host with a blank or "
				     "control character");
		return ORGW_EINVAL;
	}
	if (hn >= sizeof(u->host)) {
		url_err(err, errlen, "host too long");
		return ORGW_EINVAL;
	}
	memcpy(u->host, h, hn);
	u->host[hn] = '\0';
	if (colon != NULL &&
	    !digits(colon + 1, (size_t)(p + n - colon - 1), 1, 65535,
		    &u->port)) {
		url_err(err, errlen, "port must be 1..65535");
		return ORGW_EINVAL;
	}
	if (slash != NULL && slash[1] != '\0' &&
	    !digits(slash + 1, strlen(slash + 1), 0, REDISCONF_DB_MAX,
		    &u->db)) {
		url_err(err, errlen, "the path must be a database number "
				     "0..65535");
		return ORGW_EINVAL;
	}
	return ORGW_OK;
}

enum orgw_err
redisconf_parse_url(const char *url, struct redisconf_url *u, char *err,
		    size_t errlen)
{
	memset(u, 0, sizeof(*u));
	if (url == NULL) {
		url_err(err, errlen, "no URL");
		return ORGW_EINVAL;
	}
	if (strncmp(url, "redis://", 8) == 0)
		return parse_tcp(url + 8, u, err, errlen);
	if (strncmp(url, "unix:", 5) == 0)
		return parse_unix(url + 5, u, err, errlen);
	url_err(err, errlen, "want redis://host:port/db or unix:/path?db=N "
			     "(no TLS: rediss:// is not supported)");
	return ORGW_EINVAL;
}

int64_t
redisconf_retry_delay_us(int attempt, uint32_t rnd)
{
	int64_t d = RETRY_BASE_US;
	int i;

	for (i = 0; i < attempt && d < RETRY_CAP_US; i++)
		d *= 2;
	if (d > RETRY_CAP_US)
		d = RETRY_CAP_US;
	return d / 2 + (int64_t)(rnd % (uint32_t)(d / 2 + 1));
}

char *
redisconf_txn_key(const unsigned char id[REDISCONF_TXN_ID_BYTES], char *out,
		  size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = sizeof(REDISCONF_TXN_PREFIX) - 1;

	if (n < REDISCONF_TXN_KEY_LEN + 1)
		return NULL;
	memcpy(out, REDISCONF_TXN_PREFIX, o);
	for (i = 0; i < REDISCONF_TXN_ID_BYTES; i++) {
		out[o++] = hex[id[i] >> 4];
		out[o++] = hex[id[i] & 0xf];
	}
	out[o] = '\0';
	return out;
}

enum redisconf_fence
redisconf_fence_verdict(enum redisconf_reply r, int64_t now_ms,
			int64_t deadline_ms)
{
	switch (r) {
	case REDISCONF_REPLY_OK:
	case REDISCONF_REPLY_FENCED:
		/* A fence's SET went in first: the EXEC, watching the
		 * marker, was refused or will be. */
		return REDISCONF_FENCE_NOT_APPLIED;
	case REDISCONF_REPLY_NIL:
		return REDISCONF_FENCE_APPLIED;
	case REDISCONF_REPLY_NONE:
		return now_ms < deadline_ms ? REDISCONF_FENCE_RETRY :
					      REDISCONF_FENCE_UNKNOWN;
	case REDISCONF_REPLY_ERROR:
	case REDISCONF_REPLY_OTHER:
		break;
	}
	return REDISCONF_FENCE_UNKNOWN;
}
