/*
 * conf.c - orgw settings: the table of them (conf_items[]: names,
 * defaults, ranges) and the validation of NAME=VALUE pairs into a struct
 * orgw_conf (docs/design.md section 8), shaped like cgit configfile.c.
 * conf_set() picks a value's check by its kind: one value's in
 * conf_value.c, a list's in conf_list.c; config-file text is parsed in
 * conf_parse.c.  They share conf_impl.h.
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
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "conf_impl.h"

/* The shortest KEYS_SECRET: a short one is a typo or a placeholder, and
 * `openssl rand -hex 32` makes a good one. */
#define CONF_KEYS_SECRET_MIN 16

/* The keys' file when KEYS_PATH is not set, in STATE_PATH's directory. */
#define CONF_KEYS_FILE "keys.gdbm"

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
 * side files are all named so (fsafe_side_path(), workertab.c). */
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
