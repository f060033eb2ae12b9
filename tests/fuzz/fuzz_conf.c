/*
 * fuzz_conf.c - libFuzzer target for conf.c (STYLE 11).
 *
 * The input is config-file text: conf_parse_text() splits it and every
 * pair goes to conf_set() on a fresh struct orgw_conf.  The first byte
 * also picks how errors are handled (stop on the first refused value or
 * go on; err buffer of 0, 1, 16 or 256 bytes), and the whole input, up to
 * its first NUL, is then given as the raw value of one setting, which
 * reaches conf_set() with bytes the line parser never passes (newlines,
 * surrounding blanks).  After each step the invariants promised in conf.c
 * are checked; a violation aborts.  Everything is freed before return.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fuzz_names[] = {
	"OPENROUTER_API_KEY", "CUSTOM_ACCESS_KEY", "UPSTREAM_URL",
	"STATE_PATH", "TARGET_MODEL", "HIT_RATE", "CACHE_BONUS",
	"MIN_UPTIME", "SLOW_THRESHOLD_MS", "UPSTREAM_TIMEOUT_MS",
	"FAIL_LIMIT", "COOLDOWN_SECONDS", "LOCK_IDLE_SECONDS",
	"RETRY_429_DELAYS", "MAX_ATTEMPTS", "MAX_BODY_BYTES",
};

#define FUZZ_NNAMES (sizeof(fuzz_names) / sizeof(fuzz_names[0]))

struct fuzz_ctx {
	struct orgw_conf *c;
	char *err;
	size_t errlen;
	bool stop;		/* stop the parse at the first refused value */
};

static bool
fuzz_graph(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

static void
fuzz_check_key(const char *k)
{
	if (k != NULL && (*k == '\0' || !fuzz_graph(k)))
		abort();
}

/* The invariants of conf.c's header comment. */
static void
fuzz_check(const struct orgw_conf *c)
{
	size_t i, j, n;

	fuzz_check_key(c->openrouter_api_key);
	fuzz_check_key(c->custom_access_key);
	if (c->upstream_url == NULL || c->state_path == NULL ||
	    c->state_path[0] == '\0' || !fuzz_graph(c->upstream_url))
		abort();
	n = strlen(c->upstream_url);
	if (strncasecmp(c->upstream_url, "https://", 8) == 0)
		j = 8;
	else if (strncasecmp(c->upstream_url, "http://", 7) == 0)
		j = 7;
	else
		abort();
	if (n <= j || c->upstream_url[j] == '/' ||
	    c->upstream_url[n - 1] == '/')
		abort();
	if (c->n_target_models > CONF_MAX_TARGETS)
		abort();
	for (i = 0; i < CONF_MAX_TARGETS; i++) {
		const char *m = c->target_models[i];

		if ((i < c->n_target_models) != (m != NULL))
			abort();
		if (m == NULL)
			continue;
		if (*m == '\0' || strlen(m) >= ORGW_MODEL_MAX || !fuzz_graph(m))
			abort();
		for (j = 0; j < i; j++)
			if (strcmp(c->target_models[j], m) == 0)
				abort();
	}
	if (!(c->hit_rate >= 0 && c->hit_rate <= 1) ||
	    !(c->cache_bonus > 0 && c->cache_bonus <= 100) ||
	    !(c->min_uptime >= 0 && c->min_uptime <= 100))
		abort();
	if (c->slow_threshold_ms < 1 || c->slow_threshold_ms > 3600000 ||
	    c->upstream_timeout_ms < 100 ||
	    c->upstream_timeout_ms > 3600000 || c->fail_limit < 1 ||
	    c->fail_limit > 1000 || c->cooldown_seconds < 1 ||
	    c->cooldown_seconds > 604800 || c->lock_idle_seconds < 1 ||
	    c->lock_idle_seconds > 604800 || c->max_attempts < 1 ||
	    c->max_attempts > 20 || c->max_body_bytes < 1024 ||
	    c->max_body_bytes > 1073741824)
		abort();
	if (c->n_retry_429_delays > CONF_MAX_DELAYS)
		abort();
	for (i = 0; i < c->n_retry_429_delays; i++)
		if (c->retry_429_delays[i] < 0 ||
		    c->retry_429_delays[i] > 300)
			abort();
}

static void
fuzz_check_err(const char *err, size_t errlen)
{
	if (err != NULL && errlen > 0 && memchr(err, '\0', errlen) == NULL)
		abort();
}

static int
fuzz_apply(void *arg, const char *name, const char *value)
{
	struct fuzz_ctx *x = arg;
	enum orgw_err rc;

	rc = conf_set(x->c, name, value, x->err, x->errlen);
	fuzz_check_err(x->err, x->errlen);
	fuzz_check(x->c);
	if (rc != ORGW_OK && rc != ORGW_EINVAL && rc != ORGW_ENOMEM)
		abort();
	return x->stop ? (int)rc : 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t errlens[] = { 0, 1, 16, 256 };
	char errbuf[256];
	struct orgw_conf c;
	struct fuzz_ctx x;
	char *value;
	size_t n;
	uint8_t mode = size > 0 ? data[0] : 0;

	if (conf_init(&c) != ORGW_OK)
		return 0;
	fuzz_check(&c);
	x.c = &c;
	x.errlen = errlens[mode & 3];
	x.err = x.errlen > 0 ? errbuf : NULL;
	x.stop = (mode & 4) != 0;
	(void)conf_parse_text((const char *)data, size, fuzz_apply, &x, x.err,
			      x.errlen);
	fuzz_check_err(x.err, x.errlen);
	fuzz_check(&c);

	/* The raw input as one value: up to its first NUL. */
	n = size;
	if (size > 0 && memchr(data, '\0', size) != NULL)
		n = (size_t)((const uint8_t *)memchr(data, '\0', size) - data);
	if ((value = malloc(n + 1)) != NULL) {
		if (n > 0)
			memcpy(value, data, n);
		value[n] = '\0';
		(void)fuzz_apply(&x, fuzz_names[(mode >> 3) % FUZZ_NNAMES],
				 value);
		free(value);
	}
	conf_free(&c);
	return 0;
}
