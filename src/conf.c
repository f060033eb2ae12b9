/*
 * conf.c - orgw settings: validation of NAME=VALUE pairs into a struct
 * orgw_conf and parsing of config-file text (docs/design.md section 8), shaped like
 * cgit configfile.c.
 *
 * Pure: no environment, no file I/O, no clock.  confload.c is the edge
 * that reads the environment and the files and calls in here.
 *
 * Invariants, for a struct orgw_conf filled by conf_init():
 *  - conf_set() either stores a fully valid value or leaves the struct
 *    exactly as it was; invalid values are refused, never defaulted
 *    (docs/design.md 8).  Every range is in conf_items[] below.
 *  - upstream_url starts with http:// or https://, has a host, contains
 *    only printable ASCII without spaces, and has no trailing '/'.
 *  - state_path is never NULL nor empty.
 *  - the two keys are NULL or non-empty printable ASCII without spaces
 *    (they go into HTTP headers as they are).
 *  - target_models[0..n_target_models) are distinct model ids of
 *    1..ORGW_MODEL_MAX-1 printable, space-free ASCII bytes; the rest of
 *    the array is NULL.
 *
 * Ownership: the struct owns every string it points at.  conf_set() frees
 * the value it replaces; conf_free() frees them all (keys are wiped
 * first).  The struct itself belongs to the caller.
 *
 * Messages name the setting and quote the refused value, made printable
 * and cut short, except for the secrets (OPENROUTER_API_KEY,
 * CUSTOM_ACCESS_KEY, METRICS_KEY, REDIS_PASSWORD, KEYS_SECRET), whose
 * values are never quoted: messages end up in logs.
 *
 * Numbers go through strtoll()/strtod() with end-pointer, errno and range
 * checks.  The gateway never calls setlocale(), so strtod() runs in the
 * "C" locale and the decimal separator is always '.'.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf.h"
#include "redisconf.h"
#include "reqval.h"

/* How much of a refused value a message quotes. */
#define CONF_SHOW_MAX 48

/* The shortest KEYS_SECRET: a short one is a typo or a placeholder, and
 * `openssl rand -hex 32` makes a good one. */
#define CONF_KEYS_SECRET_MIN 16

/* The keys' file when KEYS_PATH is not set, in STATE_PATH's directory. */
#define CONF_KEYS_FILE "keys.gdbm"

enum conf_kind {
	CONF_KEY,	/* secret: never quoted back */
	CONF_PASSWORD,	/* secret, as CONF_KEY, that may hold inner spaces */
	CONF_URL,
	CONF_PATH,
	CONF_MODELS,	/* TARGET_MODEL list */
	CONF_ALIASES,	/* MODEL_ALIASES list */
	CONF_DOUBLE,
	CONF_INT,	/* stored as int */
	CONF_I64,	/* stored as int64_t */
	CONF_SIZE,	/* stored as size_t */
	CONF_DELAYS,	/* RETRY_429_DELAYS list */
	CONF_MODE,	/* STATE_MODE: octal file mode */
	CONF_BACKEND,	/* STATE_BACKEND: gdbm or redis */
	CONF_REDIS_URL,	/* REDIS_URL (redisconf.c) */
};

struct conf_item {
	const char *name;
	size_t off;		/* offsetof the field in struct orgw_conf */
	const char *def;	/* orgw.conf(5) default as text; NULL = unset */
	double dlo, dhi;	/* CONF_DOUBLE range */
	long long ilo, ihi;	/* integer range; per item for CONF_DELAYS */
	enum conf_kind kind;
	bool dlo_open;		/* dlo itself refused (CACHE_BONUS > 0) */
};

#define CONF_OFF(f) offsetof(struct orgw_conf, f)

/*
 * The settings of orgw.conf(5), their defaults and their ranges.
 * conf_init() applies the defaults through conf_set(), so a default that
 * broke its own range would fail loudly at start.
 */
static const struct conf_item conf_items[] = {
	{ .name = "OPENROUTER_API_KEY", .kind = CONF_KEY,
	  .off = CONF_OFF(openrouter_api_key) },
	{ .name = "CUSTOM_ACCESS_KEY", .kind = CONF_KEY,
	  .off = CONF_OFF(custom_access_key) },
	{ .name = "METRICS_KEY", .kind = CONF_KEY,
	  .off = CONF_OFF(metrics_key) },
	{ .name = "UPSTREAM_URL", .kind = CONF_URL,
	  .off = CONF_OFF(upstream_url),
	  .def = "https://openrouter.ai/api/v1" },
	{ .name = "STATE_PATH", .kind = CONF_PATH,
	  .off = CONF_OFF(state_path), .def = "/var/lib/orgw/state.gdbm" },
	{ .name = "UPSTREAM_CA_FILE", .kind = CONF_PATH,
	  .off = CONF_OFF(upstream_ca_file) },
	/* No default here: conf_settle() derives it from STATE_PATH. */
	{ .name = "KEYS_PATH", .kind = CONF_PATH, .off = CONF_OFF(keys_path) },
	/* ilo: the shortest secret taken, in bytes. */
	{ .name = "KEYS_SECRET", .kind = CONF_KEY, .off = CONF_OFF(keys_secret),
	  .ilo = CONF_KEYS_SECRET_MIN },
	{ .name = "TARGET_MODEL", .kind = CONF_MODELS, .def = "" },
	{ .name = "MODEL_ALIASES", .kind = CONF_ALIASES, .def = "" },
	{ .name = "HIT_RATE", .kind = CONF_DOUBLE, .off = CONF_OFF(hit_rate),
	  .def = "0.9", .dlo = 0, .dhi = 1 },
	{ .name = "HIT_RATE_HALF_LIFE_TOKENS", .kind = CONF_I64,
	  .off = CONF_OFF(hit_rate_half_life_tokens), .def = "1000000",
	  .ilo = 1, .ihi = 1000000000000LL },
	{ .name = "HIT_RATE_EVIDENCE_TOKENS", .kind = CONF_I64,
	  .off = CONF_OFF(hit_rate_evidence_tokens), .def = "200000",
	  .ilo = 1, .ihi = 1000000000000LL },
	{ .name = "LOCK_MARGIN", .kind = CONF_DOUBLE,
	  .off = CONF_OFF(lock_margin), .def = "0.10", .dlo = 0, .dhi = 10 },
	{ .name = "CACHE_BONUS", .kind = CONF_DOUBLE,
	  .off = CONF_OFF(cache_bonus), .def = "2", .dlo = 0, .dhi = 100,
	  .dlo_open = true },
	{ .name = "MIN_UPTIME", .kind = CONF_DOUBLE,
	  .off = CONF_OFF(min_uptime), .def = "95", .dlo = 0, .dhi = 100 },
	{ .name = "PRICE_CEILING_USD_PER_MTOK", .kind = CONF_DOUBLE,
	  .off = CONF_OFF(price_ceiling_usd_per_mtok), .def = "100",
	  .dlo = 0, .dhi = 1000000, .dlo_open = true },
	{ .name = "SLOW_THRESHOLD_MS", .kind = CONF_I64,
	  .off = CONF_OFF(slow_threshold_ms), .def = "20000", .ilo = 1,
	  .ihi = 3600000 },
	{ .name = "UPSTREAM_TIMEOUT_MS", .kind = CONF_I64,
	  .off = CONF_OFF(upstream_timeout_ms), .def = "60000", .ilo = 100,
	  .ihi = 3600000 },
	{ .name = "REQUEST_TIMEOUT_MS", .kind = CONF_I64,
	  .off = CONF_OFF(request_timeout_ms), .def = "600000", .ilo = 1000,
	  .ihi = 86400000 },
	{ .name = "CLIENT_SEND_TIMEOUT_MS", .kind = CONF_I64,
	  .off = CONF_OFF(client_send_timeout_ms), .def = "60000",
	  .ilo = 100, .ihi = 3600000 },
	{ .name = "FAIL_LIMIT", .kind = CONF_INT, .off = CONF_OFF(fail_limit),
	  .def = "3", .ilo = 1, .ihi = 1000 },
	{ .name = "COOLDOWN_SECONDS", .kind = CONF_I64,
	  .off = CONF_OFF(cooldown_seconds), .def = "600", .ilo = 1,
	  .ihi = 604800 },
	{ .name = "LOCK_IDLE_SECONDS", .kind = CONF_I64,
	  .off = CONF_OFF(lock_idle_seconds), .def = "1800", .ilo = 1,
	  .ihi = 604800 },
	{ .name = "CONVERSATIONS", .kind = CONF_INT,
	  .off = CONF_OFF(conversations), .def = "1", .ilo = 0, .ihi = 1 },
	{ .name = "CONVERSATION_IDLE_SECONDS", .kind = CONF_I64,
	  .off = CONF_OFF(conversation_idle_seconds), .def = "600", .ilo = 1,
	  .ihi = 604800 },
	{ .name = "PRESSURE_SECONDS", .kind = CONF_I64,
	  .off = CONF_OFF(pressure_seconds), .def = "30", .ilo = 1,
	  .ihi = 86400 },
	{ .name = "AUTO_CACHE", .kind = CONF_INT, .off = CONF_OFF(auto_cache),
	  .def = "1", .ilo = 0, .ihi = 1 },
	{ .name = "CACHE_TTL_SECONDS", .kind = CONF_I64,
	  .off = CONF_OFF(cache_ttl_seconds), .def = "300", .ilo = 1,
	  .ihi = 86400 },
	{ .name = "MAX_CONVERSATIONS", .kind = CONF_INT,
	  .off = CONF_OFF(max_conversations), .def = "1000", .ilo = 1,
	  .ihi = 1000000 },
	{ .name = "RETRY_429_DELAYS", .kind = CONF_DELAYS, .def = "2,4,8",
	  .ilo = 0, .ihi = 300 },
	{ .name = "MAX_ATTEMPTS", .kind = CONF_INT,
	  .off = CONF_OFF(max_attempts), .def = "4", .ilo = 1, .ihi = 20 },
	{ .name = "MAX_MODELS", .kind = CONF_INT,
	  .off = CONF_OFF(max_models), .def = "256", .ilo = 1, .ihi = 100000 },
	{ .name = "CRON_MIN_INTERVAL_SECONDS", .kind = CONF_I64,
	  .off = CONF_OFF(cron_min_interval_seconds), .def = "60", .ilo = 0,
	  .ihi = 86400 },
	{ .name = "STATE_MODE", .kind = CONF_MODE,
	  .off = CONF_OFF(state_mode), .def = "0600" },
	{ .name = "STATE_BACKEND", .kind = CONF_BACKEND, .def = "gdbm" },
	{ .name = "REDIS_URL", .kind = CONF_REDIS_URL,
	  .off = CONF_OFF(redis_url), .def = "redis://127.0.0.1:6379/0" },
	{ .name = "REDIS_PASSWORD", .kind = CONF_PASSWORD,
	  .off = CONF_OFF(redis_password) },
	{ .name = "WORKER_THREADS", .kind = CONF_INT,
	  .off = CONF_OFF(worker_threads), .def = "80", .ilo = 1,
	  .ihi = 1024 },
	{ .name = "WORKER_MAX_REQUESTS", .kind = CONF_I64,
	  .off = CONF_OFF(worker_max_requests), .def = "10000", .ilo = 1,
	  .ihi = 1000000000 },
	{ .name = "WORKER_MAX_AGE_SECONDS", .kind = CONF_I64,
	  .off = CONF_OFF(worker_max_age_seconds), .def = "3600", .ilo = 10,
	  .ihi = 2592000 },
	{ .name = "MAX_BODY_BYTES", .kind = CONF_SIZE,
	  .off = CONF_OFF(max_body_bytes), .def = "8388608", .ilo = 1024,
	  .ihi = 1073741824 },
	/* Values (nodes) in one request body or one non-streamed answer,
	 * counted before cJSON builds its tree (jsonscan_size): a tree
	 * takes about 80 bytes a value, so MAX_BODY_BYTES of "0," would be
	 * 330 MB; at this default a tree stays under 40 MB, and a long
	 * agent conversation or a large tool schema has a few tens of
	 * thousands.  Over it: 413 (a body), 502 (an answer). */
	{ .name = "MAX_JSON_NODES", .kind = CONF_SIZE,
	  .off = CONF_OFF(max_json_nodes), .def = "500000", .ilo = 1000,
	  .ihi = 100000000 },
	/* Bytes of a non-streamed answer from upstream (streams are bound
	 * per event): a generation's JSON answer is kilobytes to a few
	 * megabytes; more is refused as 502 before it is parsed. */
	{ .name = "MAX_ANSWER_BYTES", .kind = CONF_SIZE,
	  .off = CONF_OFF(max_answer_bytes), .def = "16777216",
	  .ilo = 65536, .ihi = 1073741824 },
	/* Memory the host's requests may hold at once for request bodies,
	 * non-streamed answers and their cJSON trees, counted over every
	 * worker in the worker table (STATE_PATH.workers): a request that
	 * would go over it gets 503 with Retry-After, so a burst of large
	 * bodies cannot take the host's memory. */
	{ .name = "HOST_PARSE_MEMORY_BYTES", .kind = CONF_SIZE,
	  .off = CONF_OFF(host_parse_memory_bytes), .def = "536870912",
	  .ilo = 1048576, .ihi = 1099511627776LL },
};

#define CONF_NITEMS (sizeof(conf_items) / sizeof(conf_items[0]))

void
conf_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	/* A message cut short by a small err buffer is still a message. */
	(void)vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Whitespace in the "C" locale, without ctype's locale and sign traps. */
static bool
conf_is_space(unsigned char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' ||
	       ch == '\v' || ch == '\f';
}

/* Printable ASCII other than space: what keys, URLs and model ids use. */
static bool
conf_is_graph(unsigned char ch)
{
	return ch > 0x20 && ch < 0x7f;
}

/*
 * Writes a printable, shortened copy of v into buf (size bytes, at least
 * CONF_SHOW_MAX + 4) for quoting in a message: a refused value may hold
 * newlines or escape sequences that must not reach a log as they are.
 */
static const char *
conf_show(char *buf, size_t size, const char *v)
{
	size_t i;

	if (size == 0)
		return "";
	for (i = 0; i < CONF_SHOW_MAX && i + 4 < size && v[i] != '\0'; i++) {
		if (v[i] >= 0x20 && v[i] < 0x7f)
			buf[i] = v[i];
		else
			buf[i] = '?';
	}
	if (i + 4 <= size && v[i] != '\0') {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

const char *
conf_name(size_t i)
{
	return i < CONF_NITEMS ? conf_items[i].name : NULL;
}

static const struct conf_item *
conf_find(const char *name)
{
	size_t i;

	for (i = 0; i < CONF_NITEMS; i++)
		if (strcmp(conf_items[i].name, name) == 0)
			return &conf_items[i];
	return NULL;
}

/* Zeroes and frees a string that may hold a secret. */
static void
conf_wipe_free(char *s)
{
	if (s == NULL)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

/* Returns s with leading blanks skipped and trailing blanks cut (in place). */
static char *
conf_trim(char *s)
{
	size_t n;

	while (conf_is_space((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && conf_is_space((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

enum conf_num
conf_parse_ll(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	long long v;

	if (*s == '\0')
		return CONF_NUM_EMPTY;
	if (!(*s == '+' || *s == '-' || (*s >= '0' && *s <= '9')))
		return CONF_NUM_SYNTAX;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end != '\0')
		return CONF_NUM_SYNTAX;
	if (errno == ERANGE || v < lo || v > hi)
		return CONF_NUM_RANGE;
	*out = v;
	return CONF_NUM_OK;
}

enum conf_num
conf_parse_double(const char *s, double *out)
{
	const char *p;
	char *end;
	double v;

	if (*s == '\0')
		return CONF_NUM_EMPTY;
	for (p = s; *p != '\0'; p++)
		if (!((*p >= '0' && *p <= '9') || *p == '.' || *p == '+' ||
		      *p == '-' || *p == 'e' || *p == 'E'))
			return CONF_NUM_SYNTAX;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0')
		return CONF_NUM_SYNTAX;
	if (errno == ERANGE || !isfinite(v))
		return CONF_NUM_RANGE;
	*out = v;
	return CONF_NUM_OK;
}

static enum orgw_err
conf_set_key(const struct conf_item *it, char **slot, const char *v,
	     char *err, size_t errlen)
{
	const unsigned char *p;
	bool blank = true;
	/* Redis takes any bytes as a password (requirepass "a b" is one),
	 * and AUTH is sent as an argument vector, so only what cannot be a
	 * deliberate part of it is refused: blanks at either end (stray
	 * whitespace) and control characters (a stray newline). */
	bool password = it->kind == CONF_PASSWORD;
	size_t len = strlen(v);
	char *dup;

	for (p = (const unsigned char *)v; *p != '\0'; p++)
		if (!conf_is_space(*p))
			blank = false;
	if (blank) {
		conf_errf(err, errlen, "%s is empty; an empty key is not a key",
			 it->name);
		return ORGW_EINVAL;
	}
	if (it->ilo > 0 && len < (size_t)it->ilo) {
		conf_errf(err, errlen, "%s is shorter than %lld characters "
			 "(make one with: openssl rand -hex 32)", it->name,
			 it->ilo);
		return ORGW_EINVAL;
	}
	if (password && (v[0] == ' ' || v[len - 1] == ' ')) {
		conf_errf(err, errlen, "%s begins or ends with a space "
			 "(stray whitespace?)", it->name);
		return ORGW_EINVAL;
	}
	for (p = (const unsigned char *)v; *p != '\0'; p++) {
		if (*p == ' ' && !password) {
			conf_errf(err, errlen,
				 "%s contains a space; a key has none "
				 "(stray whitespace?)", it->name);
			return ORGW_EINVAL;
		}
		if (*p < 0x20 || *p == 0x7f) {
			conf_errf(err, errlen,
				 "%s contains a control character "
				 "(a stray newline or tab?)", it->name);
			return ORGW_EINVAL;
		}
		if (*p > 0x7f && !password) {
			conf_errf(err, errlen,
				 "%s contains a non-ASCII byte", it->name);
			return ORGW_EINVAL;
		}
	}
	if ((dup = strdup(v)) == NULL)
		return ORGW_ENOMEM;
	conf_wipe_free(*slot);
	*slot = dup;
	return ORGW_OK;
}

static enum orgw_err
conf_set_url(const struct conf_item *it, char **slot, const char *v,
	     char *err, size_t errlen)
{
	char show[CONF_SHOW_MAX + 4];
	size_t n, scheme, i;
	char *dup;

	/* RFC 3986 3.1: the scheme is case-insensitive. */
	if (strncasecmp(v, "https://", 8) == 0)
		scheme = 8;
	else if (strncasecmp(v, "http://", 7) == 0)
		scheme = 7;
	else {
		conf_errf(err, errlen,
			 "%s: \"%s\" must start with http:// or https://",
			 it->name, conf_show(show, sizeof(show), v));
		return ORGW_EINVAL;
	}
	n = strlen(v);
	for (i = 0; i < n; i++) {
		if (!conf_is_graph((unsigned char)v[i])) {
			conf_errf(err, errlen,
				 "%s: \"%s\" contains a space, a control "
				 "character or a non-ASCII byte", it->name,
				 conf_show(show, sizeof(show), v));
			return ORGW_EINVAL;
		}
		/* Request paths are appended to the base URL. */
		if (v[i] == '?' || v[i] == '#') {
			conf_errf(err, errlen,
				 "%s: \"%s\" must not have a query or "
				 "fragment", it->name,
				 conf_show(show, sizeof(show), v));
			return ORGW_EINVAL;
		}
	}
	while (n > scheme && v[n - 1] == '/')
		n--;
	if (n == scheme || v[scheme] == '/') {
		conf_errf(err, errlen, "%s: \"%s\" has no host", it->name,
			 conf_show(show, sizeof(show), v));
		return ORGW_EINVAL;
	}
	if ((dup = strndup(v, n)) == NULL)
		return ORGW_ENOMEM;
	free(*slot);
	*slot = dup;
	return ORGW_OK;
}

static enum orgw_err
conf_set_path(const struct conf_item *it, char **slot, const char *v,
	      char *err, size_t errlen)
{
	char *dup;

	if (*v == '\0') {
		conf_errf(err, errlen, "%s is empty; want a file path",
			 it->name);
		return ORGW_EINVAL;
	}
	if ((dup = strdup(v)) == NULL)
		return ORGW_ENOMEM;
	free(*slot);
	*slot = dup;
	return ORGW_OK;
}

/*
 * TARGET_MODEL: comma-separated model ids.  Items are trimmed, empty
 * items are skipped (so "" clears the list) and repeated ids are kept
 * once, in their first position.
 */
static enum orgw_err
conf_set_models(struct orgw_conf *c, const struct conf_item *it,
		const char *v, char *err, size_t errlen)
{
	char show[CONF_SHOW_MAX + 4];
	char *models[CONF_MAX_TARGETS];
	char *dup, *item, *next;
	size_t n = 0, i, len;
	enum orgw_err rc = ORGW_EINVAL;

	if ((dup = strdup(v)) == NULL)
		return ORGW_ENOMEM;
	for (item = dup; item != NULL; item = next) {
		if ((next = strchr(item, ',')) != NULL)
			*next++ = '\0';
		item = conf_trim(item);
		if (*item == '\0')
			continue;
		len = strlen(item);
		if (len >= ORGW_MODEL_MAX) {
			conf_errf(err, errlen,
				 "%s: model id \"%s\" is longer than %d "
				 "bytes", it->name,
				 conf_show(show, sizeof(show), item),
				 ORGW_MODEL_MAX - 1);
			goto out;
		}
		for (i = 0; i < len; i++) {
			if (!conf_is_graph((unsigned char)item[i])) {
				conf_errf(err, errlen,
					 "%s: model id \"%s\" has a space, a "
					 "control character or a non-ASCII "
					 "byte at offset %zu", it->name,
					 conf_show(show, sizeof(show), item),
					 i);
				goto out;
			}
		}
		for (i = 0; i < n; i++)
			if (strcmp(models[i], item) == 0)
				break;
		if (i < n)
			continue;
		if (n == CONF_MAX_TARGETS) {
			conf_errf(err, errlen, "%s: more than %d models",
				 it->name, CONF_MAX_TARGETS);
			goto out;
		}
		if ((models[n] = strdup(item)) == NULL) {
			rc = ORGW_ENOMEM;
			goto out;
		}
		n++;
	}
	for (i = 0; i < CONF_MAX_TARGETS; i++) {
		free(c->target_models[i]);
		c->target_models[i] = i < n ? models[i] : NULL;
	}
	c->n_target_models = n;
	n = 0;		/* now owned by c */
	rc = ORGW_OK;
out:
	for (i = 0; i < n; i++)
		free(models[i]);
	free(dup);
	return rc;
}

/* Frees the n aliases of from[] and to[]. */
static void
conf_aliases_free(char **from, char **to, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(from[i]);
		free(to[i]);
		from[i] = to[i] = NULL;
	}
}

/*
 * MODEL_ALIASES: comma-separated "from=to" pairs, each side a model id
 * orgw accepts (reqval_model_ok), blanks around items and sides allowed,
 * empty items skipped ("" clears the list).  A from given twice, or one
 * mapped to itself, is refused: the operator meant something else.
 */
static enum orgw_err
conf_set_aliases(struct orgw_conf *c, const struct conf_item *it,
		 const char *v, char *err, size_t errlen)
{
	char show[CONF_SHOW_MAX + 4];
	char *from[CONF_MAX_ALIASES], *to[CONF_MAX_ALIASES];
	char *dup, *item, *next, *eq, *a, *b;
	size_t n = 0, i;
	enum orgw_err rc = ORGW_EINVAL;

	if ((dup = strdup(v)) == NULL)
		return ORGW_ENOMEM;
	for (item = dup; item != NULL; item = next) {
		if ((next = strchr(item, ',')) != NULL)
			*next++ = '\0';
		item = conf_trim(item);
		if (*item == '\0')
			continue;
		if ((eq = strchr(item, '=')) == NULL) {
			conf_errf(err, errlen,
				 "%s: \"%s\" is not from=to", it->name,
				 conf_show(show, sizeof(show), item));
			goto out;
		}
		*eq = '\0';
		a = conf_trim(item);
		b = conf_trim(eq + 1);
		if (!reqval_model_ok(a) || !reqval_model_ok(b)) {
			conf_errf(err, errlen,
				 "%s: \"%s\" is not a model id",
				 it->name,
				 conf_show(show, sizeof(show),
					   reqval_model_ok(a) ? b : a));
			goto out;
		}
		if (strcmp(a, b) == 0) {
			conf_errf(err, errlen, "%s: \"%s\" maps to itself",
				 it->name, conf_show(show, sizeof(show), a));
			goto out;
		}
		for (i = 0; i < n; i++)
			if (strcmp(from[i], a) == 0)
				break;
		if (i < n) {
			conf_errf(err, errlen, "%s: \"%s\" is given twice",
				 it->name, conf_show(show, sizeof(show), a));
			goto out;
		}
		if (n == CONF_MAX_ALIASES) {
			conf_errf(err, errlen, "%s: more than %d aliases",
				 it->name, CONF_MAX_ALIASES);
			goto out;
		}
		from[n] = strdup(a);
		to[n] = strdup(b);
		n++;
		if (from[n - 1] == NULL || to[n - 1] == NULL) {
			rc = ORGW_ENOMEM;
			goto out;
		}
	}
	conf_aliases_free(c->model_alias_from, c->model_alias_to,
			  c->n_model_aliases);
	for (i = 0; i < n; i++) {
		c->model_alias_from[i] = from[i];
		c->model_alias_to[i] = to[i];
	}
	c->n_model_aliases = n;
	n = 0;		/* now owned by c */
	rc = ORGW_OK;
out:
	conf_aliases_free(from, to, n);
	free(dup);
	return rc;
}

const char *
conf_alias(const struct orgw_conf *c, const char *id)
{
	size_t i;

	for (i = 0; i < c->n_model_aliases; i++)
		if (strcmp(c->model_alias_from[i], id) == 0)
			return c->model_alias_to[i];
	return NULL;
}

/*
 * RETRY_429_DELAYS: comma-separated seconds, 0..300 each, at most
 * CONF_MAX_DELAYS of them, blanks around items allowed.  An empty (or
 * all-blank) value means no retry on 429; an empty item inside a list
 * ("2,,4", "2,") is refused as a likely typo.
 */
static enum orgw_err
conf_set_delays(struct orgw_conf *c, const struct conf_item *it,
		const char *v, char *err, size_t errlen)
{
	char show[CONF_SHOW_MAX + 4];
	int delays[CONF_MAX_DELAYS];
	char *dup, *item, *next, *all;
	size_t n = 0, i;
	long long d;
	enum orgw_err rc = ORGW_EINVAL;

	if ((dup = strdup(v)) == NULL)
		return ORGW_ENOMEM;
	all = conf_trim(dup);
	for (item = all; *all != '\0' && item != NULL; item = next) {
		if ((next = strchr(item, ',')) != NULL)
			*next++ = '\0';
		item = conf_trim(item);
		if (n == CONF_MAX_DELAYS) {
			conf_errf(err, errlen, "%s: more than %d delays",
				 it->name, CONF_MAX_DELAYS);
			goto out;
		}
		switch (conf_parse_ll(item, it->ilo, it->ihi, &d)) {
		case CONF_NUM_OK:
			break;
		case CONF_NUM_EMPTY:
			conf_errf(err, errlen,
				 "%s: item %zu is empty; want seconds "
				 "%lld..%lld separated by commas, or an "
				 "empty value for no retries", it->name,
				 n + 1, it->ilo, it->ihi);
			goto out;
		case CONF_NUM_SYNTAX:
			conf_errf(err, errlen,
				 "%s: item %zu \"%s\" is not an integer",
				 it->name, n + 1,
				 conf_show(show, sizeof(show), item));
			goto out;
		case CONF_NUM_RANGE:
			conf_errf(err, errlen,
				 "%s: item %zu \"%s\" is out of range "
				 "(%lld..%lld seconds)", it->name, n + 1,
				 conf_show(show, sizeof(show), item),
				 it->ilo, it->ihi);
			goto out;
		}
		delays[n++] = (int)d;
	}
	for (i = 0; i < CONF_MAX_DELAYS; i++)
		c->retry_429_delays[i] = i < n ? delays[i] : 0;
	c->n_retry_429_delays = n;
	rc = ORGW_OK;
out:
	free(dup);
	return rc;
}

static enum orgw_err
conf_set_double(struct orgw_conf *c, const struct conf_item *it,
		const char *v, char *err, size_t errlen)
{
	char show[CONF_SHOW_MAX + 4];
	char range[64];
	double d = 0;
	enum conf_num st;

	if (it->dlo_open)
		(void)snprintf(range, sizeof(range),
			       "more than %g and at most %g", it->dlo, it->dhi);
	else
		(void)snprintf(range, sizeof(range), "%g..%g", it->dlo,
			       it->dhi);
	st = conf_parse_double(v, &d);
	if (st == CONF_NUM_OK &&
	    (d < it->dlo || (it->dlo_open && d <= it->dlo) || d > it->dhi))
		st = CONF_NUM_RANGE;
	switch (st) {
	case CONF_NUM_OK:
		break;
	case CONF_NUM_EMPTY:
		conf_errf(err, errlen, "%s is empty; want a number %s",
			 it->name, range);
		return ORGW_EINVAL;
	case CONF_NUM_SYNTAX:
		conf_errf(err, errlen, "%s: \"%s\" is not a number (want %s)",
			 it->name, conf_show(show, sizeof(show), v), range);
		return ORGW_EINVAL;
	case CONF_NUM_RANGE:
		conf_errf(err, errlen, "%s: \"%s\" is out of range (%s)",
			 it->name, conf_show(show, sizeof(show), v), range);
		return ORGW_EINVAL;
	}
	/* + 0.0 turns "-0" into +0, so nothing downstream sees a -0. */
	*(double *)(void *)((char *)c + it->off) = d + 0.0;
	return ORGW_OK;
}

static enum orgw_err
conf_set_integer(struct orgw_conf *c, const struct conf_item *it,
		 const char *v, char *err, size_t errlen)
{
	char show[CONF_SHOW_MAX + 4];
	void *field = (char *)c + it->off;
	long long d = 0;

	switch (conf_parse_ll(v, it->ilo, it->ihi, &d)) {
	case CONF_NUM_OK:
		break;
	case CONF_NUM_EMPTY:
		conf_errf(err, errlen, "%s is empty; want an integer %lld..%lld",
			 it->name, it->ilo, it->ihi);
		return ORGW_EINVAL;
	case CONF_NUM_SYNTAX:
		conf_errf(err, errlen,
			 "%s: \"%s\" is not an integer (want %lld..%lld)",
			 it->name, conf_show(show, sizeof(show), v), it->ilo,
			 it->ihi);
		return ORGW_EINVAL;
	case CONF_NUM_RANGE:
		conf_errf(err, errlen, "%s: \"%s\" is out of range (%lld..%lld)",
			 it->name, conf_show(show, sizeof(show), v), it->ilo,
			 it->ihi);
		return ORGW_EINVAL;
	}
	/* The ranges in conf_items[] fit every field type. */
	if (it->kind == CONF_INT)
		*(int *)field = (int)d;
	else if (it->kind == CONF_I64)
		*(int64_t *)field = (int64_t)d;
	else
		*(size_t *)field = (size_t)d;
	return ORGW_OK;
}

/*
 * Fills c with the defaults of orgw.conf(5) (conf_items[] above).
 * Returns ORGW_OK, or ORGW_ENOMEM with c holding nothing to free (it is
 * still safe to pass to conf_free()).
 */
enum orgw_err
conf_init(struct orgw_conf *c)
{
	enum orgw_err rc;
	size_t i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < CONF_NITEMS; i++) {
		if (conf_items[i].def == NULL)
			continue;
		rc = conf_set(c, conf_items[i].name, conf_items[i].def, NULL,
			      0);
		if (rc != ORGW_OK) {
			conf_free(c);
			return rc;
		}
	}
	return ORGW_OK;
}

/*
 * Frees every string c owns and resets those fields (pointers to NULL,
 * counts to 0), so a second conf_free() is harmless; the keys are zeroed
 * before they are freed.  The struct itself is the caller's.  NULL is a
 * no-op.
 */
void
conf_free(struct orgw_conf *c)
{
	size_t i;

	if (c == NULL)
		return;
	conf_wipe_free(c->openrouter_api_key);
	c->openrouter_api_key = NULL;
	conf_wipe_free(c->custom_access_key);
	c->custom_access_key = NULL;
	conf_wipe_free(c->metrics_key);
	c->metrics_key = NULL;
	free(c->upstream_url);
	c->upstream_url = NULL;
	free(c->state_path);
	c->state_path = NULL;
	free(c->keys_path);
	c->keys_path = NULL;
	conf_wipe_free(c->keys_secret);
	c->keys_secret = NULL;
	free(c->upstream_ca_file);
	c->upstream_ca_file = NULL;
	free(c->redis_url);
	c->redis_url = NULL;
	conf_wipe_free(c->redis_password);
	c->redis_password = NULL;
	for (i = 0; i < CONF_MAX_TARGETS; i++) {
		free(c->target_models[i]);
		c->target_models[i] = NULL;
	}
	c->n_target_models = 0;
	conf_aliases_free(c->model_alias_from, c->model_alias_to,
			  c->n_model_aliases);
	c->n_model_aliases = 0;
}

/* True when b is a or a file beside a (a, a dot, anything): the state's
 * side files are all named so (fsafe_side_path(), slots.c). */
static bool
conf_beside(const char *a, const char *b)
{
	size_t n = strlen(a);

	return strncmp(a, b, n) == 0 && (b[n] == '\0' || b[n] == '.');
}

enum orgw_err
conf_settle(struct orgw_conf *c, char *err, size_t errlen)
{
	const char *slash;
	size_t dlen;
	char *p;

	if (c->keys_path == NULL) {
		slash = strrchr(c->state_path, '/');
		dlen = slash != NULL ? (size_t)(slash - c->state_path) + 1 : 0;
		if ((p = malloc(dlen + sizeof(CONF_KEYS_FILE))) == NULL)
			return ORGW_ENOMEM;
		memcpy(p, c->state_path, dlen);
		memcpy(p + dlen, CONF_KEYS_FILE, sizeof(CONF_KEYS_FILE));
		c->keys_path = p;
	}
	if (conf_beside(c->state_path, c->keys_path) ||
	    conf_beside(c->keys_path, c->state_path)) {
		conf_errf(err, errlen, "KEYS_PATH %s and STATE_PATH %s would "
			 "share files (a lock, a twin); give the keys a file "
			 "of their own", c->keys_path, c->state_path);
		return ORGW_EINVAL;
	}
	return ORGW_OK;
}

/* True when name is one of the settings of orgw.conf(5) (not the
 * NAME_FILE forms, which only confload.c knows).  NULL is false. */
bool
conf_known(const char *name)
{
	return name != NULL && conf_find(name) != NULL;
}

bool
conf_is_path(const char *name)
{
	const struct conf_item *it = name != NULL ? conf_find(name) : NULL;

	return it != NULL && it->kind == CONF_PATH;
}

/*
 * STATE_MODE: octal digits (a leading 0 optional) naming one of 0600,
 * 0640, 0660 (orgw.conf(5)): the owner reads and writes, the group may
 * when the scorer runs as another user of it, others never.
 */
static enum orgw_err
conf_set_mode(struct orgw_conf *c, const struct conf_item *it,
	      const char *v, char *err, size_t errlen)
{
	char show[CONF_SHOW_MAX + 4];
	unsigned m = 0;
	const char *p;

	for (p = v; *p >= '0' && *p <= '7' && p - v < 5; p++)
		m = m * 8 + (unsigned)(*p - '0');
	if (*v == '\0' || *p != '\0' ||
	    (m != 0600 && m != 0640 && m != 0660)) {
		conf_errf(err, errlen,
			 "%s: \"%s\" is not allowed (want 0600, 0640 or 0660)",
			 it->name, conf_show(show, sizeof(show), v));
		return ORGW_EINVAL;
	}
	c->state_mode = m;
	return ORGW_OK;
}

/* STATE_BACKEND: "gdbm" or "redis". */
static enum orgw_err
conf_set_backend(struct orgw_conf *c, const struct conf_item *it,
		 const char *v, char *err, size_t errlen)
{
	char show[CONF_SHOW_MAX + 4];

	if (strcmp(v, "gdbm") == 0) {
		c->state_backend = CONF_BACKEND_GDBM;
	} else if (strcmp(v, "redis") == 0) {
		c->state_backend = CONF_BACKEND_REDIS;
	} else {
		conf_errf(err, errlen, "%s: \"%s\" is not a back-end (want "
			  "gdbm or redis)", it->name,
			  conf_show(show, sizeof(show), v));
		return ORGW_EINVAL;
	}
	return ORGW_OK;
}

/* REDIS_URL: what redisconf_parse_url() accepts.  The URL is not quoted
 * back: a mistaken "redis://:secret@host" would put a password in a log. */
static enum orgw_err
conf_set_redis_url(struct orgw_conf *c, const struct conf_item *it,
		   const char *v, char *err, size_t errlen)
{
	struct redisconf_url u;
	char why[160];
	char *dup;

	if (redisconf_parse_url(v, &u, why, sizeof(why)) != ORGW_OK) {
		conf_errf(err, errlen, "%s: %s", it->name, why);
		return ORGW_EINVAL;
	}
	if ((dup = strdup(v)) == NULL)
		return ORGW_ENOMEM;
	free(c->redis_url);
	c->redis_url = dup;
	return ORGW_OK;
}

/*
 * Sets one setting of c from its textual value.  Returns ORGW_OK (also
 * for names that are not settings, which are ignored), ORGW_EINVAL with a
 * message naming the setting in err (errlen bytes; err may be NULL) when
 * the value is refused, or ORGW_ENOMEM.  On any error c is unchanged.
 * value is copied, never kept.  Ranges and list forms: see conf_items[],
 * conf_set_models() and conf_set_delays().
 */
enum orgw_err
conf_set(struct orgw_conf *c, const char *name, const char *value,
	 char *err, size_t errlen)
{
	const struct conf_item *it;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (c == NULL || name == NULL) {
		conf_errf(err, errlen, "conf_set: no struct or no name");
		return ORGW_EINVAL;
	}
	if ((it = conf_find(name)) == NULL)
		return ORGW_OK;
	if (value == NULL) {
		conf_errf(err, errlen, "%s: no value", it->name);
		return ORGW_EINVAL;
	}
	switch (it->kind) {
	case CONF_KEY:
	case CONF_PASSWORD:
		return conf_set_key(it, (char **)(void *)((char *)c + it->off),
				    value, err, errlen);
	case CONF_URL:
		return conf_set_url(it, (char **)(void *)((char *)c + it->off),
				    value, err, errlen);
	case CONF_PATH:
		return conf_set_path(it, (char **)(void *)((char *)c + it->off),
				     value, err, errlen);
	case CONF_MODELS:
		return conf_set_models(c, it, value, err, errlen);
	case CONF_ALIASES:
		return conf_set_aliases(c, it, value, err, errlen);
	case CONF_DELAYS:
		return conf_set_delays(c, it, value, err, errlen);
	case CONF_DOUBLE:
		return conf_set_double(c, it, value, err, errlen);
	case CONF_INT:
	case CONF_I64:
	case CONF_SIZE:
		return conf_set_integer(c, it, value, err, errlen);
	case CONF_MODE:
		return conf_set_mode(c, it, value, err, errlen);
	case CONF_BACKEND:
		return conf_set_backend(c, it, value, err, errlen);
	case CONF_REDIS_URL:
		return conf_set_redis_url(c, it, value, err, errlen);
	}
	return ORGW_EINVAL;
}

/* True for a setting name: [A-Z_][A-Z0-9_]*. */
static bool
conf_valid_name(const char *s)
{
	if (!((*s >= 'A' && *s <= 'Z') || *s == '_'))
		return false;
	for (s++; *s != '\0'; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_'))
			return false;
	return true;
}

/* Puts "line N: " in front of the message already in err. */
static void
conf_err_line(char *err, size_t errlen, size_t lineno)
{
	char *old;

	if (err == NULL || errlen == 0)
		return;
	if ((old = strdup(err)) == NULL)
		return;		/* keep the message without its line */
	conf_errf(err, errlen, "line %zu: %s", lineno, old);
	explicit_bzero(old, strlen(old));
	free(old);
}

/*
 * One line of config text, NUL-terminated and without its '\n', in a
 * buffer we may modify.  Returns 0 to go on or what to stop with.
 */
static int
conf_parse_line(char *line, size_t lineno,
		int (*fn)(void *arg, const char *name, const char *value),
		void *arg, char *err, size_t errlen)
{
	char *s, *eq, *name, *value;
	size_t n;
	int r;

	/* Trimming takes the '\r' of a CRLF line along with the blanks. */
	s = conf_trim(line);
	if (*s == '\0' || *s == '#')
		return 0;
	/*
	 * Only full-line comments: "KEY=abc #x" keeps "abc #x", because a
	 * key may contain '#'.  A leading "export " is allowed so the file
	 * can also be sourced by a shell.
	 */
	if (strncmp(s, "export", 6) == 0 && (s[6] == ' ' || s[6] == '\t'))
		s = conf_trim(s + 6);
	if ((eq = strchr(s, '=')) == NULL) {
		conf_errf(err, errlen,
			 "line %zu: expected NAME=VALUE but found no '='",
			 lineno);
		return ORGW_EINVAL;
	}
	*eq = '\0';
	name = conf_trim(s);
	value = conf_trim(eq + 1);
	/* The name is not quoted back: a mangled line may hold a key. */
	if (*name == '\0') {
		conf_errf(err, errlen, "line %zu: no name before '='", lineno);
		return ORGW_EINVAL;
	}
	if (!conf_valid_name(name)) {
		conf_errf(err, errlen,
			 "line %zu: invalid name (want capital letters, "
			 "digits and '_', not starting with a digit)",
			 lineno);
		return ORGW_EINVAL;
	}
	if (value[0] == '"') {
		n = strlen(value);
		if (n < 2 || value[n - 1] != '"') {
			conf_errf(err, errlen,
				 "line %zu: %s: unterminated '\"'", lineno,
				 name);
			return ORGW_EINVAL;
		}
		value[n - 1] = '\0';
		value++;
	}
	if ((r = fn(arg, name, value)) != 0) {
		if (err != NULL && errlen > 0 && err[0] != '\0')
			conf_err_line(err, errlen, lineno);
		return r;
	}
	return 0;
}

/*
 * Parses config-file text: lines end in LF or CRLF; blank lines and lines
 * whose first non-blank byte is '#' are skipped; other lines are
 * [export ]NAME=VALUE with blanks around NAME and VALUE ignored and one
 * pair of double quotes around VALUE removed (no escapes inside).  NAME
 * must match [A-Z_][A-Z0-9_]*.  A leading UTF-8 byte order mark is
 * skipped.  fn gets NUL-terminated name and value,
 * borrowed for the call only.
 *
 * Returns ORGW_OK; ORGW_EINVAL with "line N: ..." in err for a malformed
 * line or a NUL byte; ORGW_ENOMEM; or the first non-zero return of fn
 * (cast to enum orgw_err).  In that last case, if fn left a message in
 * err (it starts empty), "line N: " is put in front of it.
 */
enum orgw_err
conf_parse_text(const char *text, size_t len,
		int (*fn)(void *arg, const char *name, const char *value),
		void *arg, char *err, size_t errlen)
{
	const char *start, *nl;
	char *line = NULL;
	size_t pos = 0, lineno = 0, n;
	int r = ORGW_OK;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (fn == NULL || (text == NULL && len > 0) || len == SIZE_MAX) {
		conf_errf(err, errlen, "conf_parse_text: bad arguments");
		return ORGW_EINVAL;
	}
	/* A UTF-8 byte order mark, as some editors write, is not a name. */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		pos = 3;
	/* One buffer for every line: the longest line is at most len. */
	if ((line = malloc(len + 1)) == NULL)
		return ORGW_ENOMEM;
	while (pos < len) {
		start = text + pos;
		nl = memchr(start, '\n', len - pos);
		n = nl != NULL ? (size_t)(nl - start) : len - pos;
		pos += n + (nl != NULL);
		lineno++;
		if (memchr(start, '\0', n) != NULL) {
			conf_errf(err, errlen, "line %zu: contains a NUL byte",
				 lineno);
			r = ORGW_EINVAL;
			goto out;
		}
		memcpy(line, start, n);
		line[n] = '\0';
		if ((r = conf_parse_line(line, lineno, fn, arg, err, errlen)) !=
		    0)
			goto out;
	}
out:
	/* The text may hold keys. */
	explicit_bzero(line, len + 1);
	free(line);
	return (enum orgw_err)r;
}
