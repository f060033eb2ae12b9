/*
 * conf.h - orgw configuration (docs/design.md section 8).
 *
 * conf.c and its conf_*.c are pure: they validate NAME=VALUE pairs into a
 * struct orgw_conf and parse config-file text (conf_parse.c).  confload.c
 * is the edge that reads the environment, the ORGW_CONFIG file and
 * NAME_FILE secrets.
 */
#ifndef ORGW_CONF_H
#define ORGW_CONF_H

#include "orgw.h"

#define CONF_MAX_DELAYS 16
#define CONF_MAX_TARGETS 64
#define CONF_MAX_ALIASES 64

/* STATE_BACKEND. */
enum conf_backend {
	CONF_BACKEND_GDBM = 0,	/* STATE_PATH, one host (the default) */
	CONF_BACKEND_REDIS,	/* REDIS_URL, several hosts */
	CONF_BACKEND_MEMORY,	/* this process only (store_mem.c): the unit
				 * tests set it; no setting names it */
};

struct orgw_conf {
	char *openrouter_api_key;	/* NULL when not set */
	char *custom_access_key;	/* NULL when not set */
	char *metrics_key;		/* GET /metrics; NULL: client key */
	char *upstream_url;		/* no trailing slash */
	char *state_path;
	/* KEYS_PATH: the team keys' GDBM file (keystore.h); conf_load()
	 * sets it to keys.gdbm in STATE_PATH's directory when unset, so it
	 * is NULL only in a struct conf_load() did not finish. */
	char *keys_path;
	char *keys_secret;		/* KEYS_SECRET (HMAC); NULL: not set */
	char *upstream_ca_file;		/* NULL: libcurl's default CAs */
	char *target_models[CONF_MAX_TARGETS];	/* TARGET_MODEL, split */
	size_t n_target_models;
	/* MODEL_ALIASES: model_alias_from[i] is routed and sent as
	 * model_alias_to[i]; both pass reqval_model_ok. */
	char *model_alias_from[CONF_MAX_ALIASES];
	char *model_alias_to[CONF_MAX_ALIASES];
	size_t n_model_aliases;
	double hit_rate;		/* 0..1 */
	int64_t hit_rate_half_life_tokens; /* decay of measured hit rates */
	int64_t hit_rate_evidence_tokens; /* measured replaces HIT_RATE */
	double lock_margin;		/* idle lock moves only past this */
	double cache_bonus;		/* > 0 */
	double min_uptime;		/* percent 0..100 */
	/* USD a million tokens: what an answer costs when neither its
	 * usage nor any stored price says (ledger_price). */
	double price_ceiling_usd_per_mtok;
	int64_t slow_threshold_ms;
	int64_t upstream_timeout_ms;
	int64_t request_timeout_ms;	/* a whole request, not retried */
	int64_t client_send_timeout_ms;	/* a write that makes no progress */
	int fail_limit;
	int64_t cooldown_seconds;
	int64_t lock_idle_seconds;
	/* Conversations: 1 routes a turn by its conversation (affinity,
	 * spread under pressure), 0 by the model's lock alone; a
	 * conversation keeps its provider this long after its last turn; a
	 * provider 429 keeps new conversations of the model off that
	 * provider this long; orgw adds automatic cache_control
	 * (0/1); the cache lifetime a break is told "expired" past; the
	 * conversation records kept. */
	int conversations;
	int64_t conversation_idle_seconds;
	int64_t pressure_seconds;
	int auto_cache;
	int64_t cache_ttl_seconds;
	int max_conversations;
	int retry_429_delays[CONF_MAX_DELAYS];	/* seconds */
	size_t n_retry_429_delays;
	int max_attempts;
	size_t max_body_bytes;
	size_t max_json_nodes;		/* values in a body or an answer */
	size_t max_answer_bytes;	/* a non-streamed answer */
	size_t host_parse_memory_bytes;	/* bodies, answers and trees held
					 * by the host's requests at once */
	int max_models;			/* MODEL_SEEN entries kept */
	int64_t cron_min_interval_seconds; /* POST /__cron at most this often */
	unsigned state_mode;		/* STATE_MODE: 0600, 0640 or 0660 */
	enum conf_backend state_backend;	/* STATE_BACKEND */
	char *redis_url;		/* REDIS_URL, parses (redisconf.h) */
	char *redis_password;		/* NULL when not set (secret) */
	int worker_threads;		/* requests one FastCGI process serves at once */
	int64_t worker_max_requests;	/* a process recycles after this many */
	int64_t worker_max_age_seconds;	/* ... or after about this long */
};

/* Fills c with the defaults of orgw.conf(5); returns ORGW_ENOMEM on
 * failure.  Pair with conf_free(). */
enum orgw_err conf_init(struct orgw_conf *c);

/* Frees every string c owns; c itself is the caller's.  NULL is a no-op. */
void conf_free(struct orgw_conf *c);

/*
 * Sets one setting from its textual value.  Unknown names are ORGW_OK
 * and ignored (the environment holds many unrelated names); use
 * conf_known() to tell.  A bad value returns ORGW_EINVAL and writes a
 * message naming the setting into err (size errlen).
 */
enum orgw_err conf_set(struct orgw_conf *c, const char *name,
		       const char *value, char *err, size_t errlen);

/*
 * Settles the settings that depend on others, after every value is in:
 * a KEYS_PATH not set becomes keys.gdbm in STATE_PATH's directory, and a
 * KEYS_PATH that is STATE_PATH or one of the files beside it
 * (STATE_PATH.lock, .twin, ...), or the other way round, is refused:
 * the two stores would share a lock or a twin.  conf_load() calls it
 * last.  ORGW_OK, ORGW_ENOMEM, or ORGW_EINVAL with a message in err.
 */
enum orgw_err conf_settle(struct orgw_conf *c, char *err, size_t errlen);

/* The model id MODEL_ALIASES maps id to (borrowed from c), or NULL when
 * it names none. */
const char *conf_alias(const struct orgw_conf *c, const char *id);

/* True when name is one of the settings of orgw.conf(5). */
bool conf_known(const char *name);

/* True when name is a setting whose value is a file path (STATE_PATH,
 * UPSTREAM_CA_FILE): confload.c resolves a relative one given in the
 * config file against the file's directory. */
bool conf_is_path(const char *name);

/* The i-th setting name of orgw.conf(5) (from 0), or NULL past the
 * last: the list the environment is read by.  Static strings. */
const char *conf_name(size_t i);

/* printf into err (size errlen; NULL/0 is a no-op), truncating: the
 * message writer of conf.c, its conf_*.c and confload.c. */
void conf_errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

enum conf_num {
	CONF_NUM_OK,
	CONF_NUM_EMPTY,
	CONF_NUM_SYNTAX,
	CONF_NUM_RANGE,
};

/*
 * Strict decimal integer in [lo, hi]: optional sign, digits, nothing
 * else (strtoll alone would skip leading blanks and stop at trailing
 * garbage).  *out is set only on CONF_NUM_OK.  The one integer parser of
 * the configuration and of orgw-score's command line.
 */
enum conf_num conf_parse_ll(const char *s, long long lo, long long hi,
			    long long *out);

/*
 * Strict decimal number.  Only digits, sign, '.' and exponent are let
 * through to strtod(), so "nan", "inf" and hex floats are syntax errors;
 * overflow, underflow and non-finite results are range errors.  *out is
 * set only on CONF_NUM_OK.  The one number parser of the configuration
 * and of orgw-score's command line.
 */
enum conf_num conf_parse_double(const char *s, double *out);

/*
 * Parses config-file text (KEY=VALUE lines, '#' comments, blank lines,
 * optional surrounding whitespace and optional "double quotes" around a
 * value) and calls fn for each pair.  fn returns 0 to go on, non-zero to
 * stop (that value is returned).  A malformed line returns ORGW_EINVAL
 * with "line N: ..." in err.
 */
enum orgw_err conf_parse_text(const char *text, size_t len,
			      int (*fn)(void *arg, const char *name,
					const char *value),
			      void *arg, char *err, size_t errlen);

/*
 * Load the configuration: defaults, then the ORGW_CONFIG file (if set),
 * then the environment (which wins), then NAME_FILE secrets for
 * OPENROUTER_API_KEY, CUSTOM_ACCESS_KEY, METRICS_KEY, REDIS_PASSWORD and
 * KEYS_SECRET (first line of the file; a direct value wins over the
 * file), then conf_settle().  Lives in confload.c (edge).
 * Returns ORGW_OK or ORGW_EINVAL with a message in err.
 */
enum orgw_err conf_load(struct orgw_conf *c, const char *config_path,
			char *err, size_t errlen);

#endif
