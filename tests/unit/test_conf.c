/*
 * test_conf.c - unit tests for conf.c and its conf_*.c (defaults,
 * validation, config-text parsing) and confload.c (file, environment and
 * NAME_FILE precedence).
 *
 * The conf_load() tests clear every setting from the environment first
 * and use temporary files under /tmp (mkstemp), removed before exit.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "t.h"

#define ERRLEN 512
#define MIB ((size_t)1024 * 1024)

static const char *const all_names[] = {
	"OPENROUTER_API_KEY", "CUSTOM_ACCESS_KEY", "UPSTREAM_URL",
	"STATE_PATH", "TARGET_MODEL", "HIT_RATE", "CACHE_BONUS",
	"MIN_UPTIME", "SLOW_THRESHOLD_MS", "UPSTREAM_TIMEOUT_MS",
	"REQUEST_TIMEOUT_MS", "CLIENT_SEND_TIMEOUT_MS", "FAIL_LIMIT", "COOLDOWN_SECONDS", "LOCK_IDLE_SECONDS",
	"RETRY_429_DELAYS", "MAX_ATTEMPTS", "MAX_BODY_BYTES", "STATE_MODE",
	"MAX_JSON_NODES", "MAX_ANSWER_BYTES", "HOST_PARSE_MEMORY_BYTES",
	"MAX_MODELS", "CRON_MIN_INTERVAL_SECONDS",
	"HIT_RATE_HALF_LIFE_TOKENS", "HIT_RATE_EVIDENCE_TOKENS", "LOCK_MARGIN",
	"METRICS_KEY",
	"UPSTREAM_CA_FILE",
	"WORKER_THREADS", "WORKER_MAX_REQUESTS", "WORKER_MAX_AGE_SECONDS",
	"STATE_BACKEND", "REDIS_URL", "REDIS_PASSWORD", "MODEL_ALIASES",
	"KEYS_PATH", "KEYS_SECRET",
	"CONVERSATION_IDLE_SECONDS", "PRESSURE_SECONDS", "AUTO_CACHE",
	"CACHE_TTL_SECONDS", "MAX_CONVERSATIONS",
};

#define NNAMES (sizeof(all_names) / sizeof(all_names[0]))

static char err[ERRLEN];

static bool
set_ok(struct orgw_conf *c, const char *name, const char *value)
{
	return conf_set(c, name, value, err, sizeof(err)) == ORGW_OK;
}

/* Refused with ORGW_EINVAL and a message containing each of want1, want2. */
static bool
set_bad(struct orgw_conf *c, const char *name, const char *value,
	const char *want1, const char *want2)
{
	if (conf_set(c, name, value, err, sizeof(err)) != ORGW_EINVAL)
		return false;
	if (want1 != NULL && strstr(err, want1) == NULL)
		return false;
	if (want2 != NULL && strstr(err, want2) == NULL)
		return false;
	return true;
}

static void
test_defaults(void)
{
	struct orgw_conf c;
	size_t i;

	T_ASSERT("conf_init ok", conf_init(&c) == ORGW_OK);
	T_ASSERT("default OPENROUTER_API_KEY NULL",
		 c.openrouter_api_key == NULL);
	T_ASSERT("default CUSTOM_ACCESS_KEY NULL", c.custom_access_key == NULL);
	T_ASSERT("default METRICS_KEY NULL", c.metrics_key == NULL);
	T_ASSERT("default KEYS_SECRET NULL", c.keys_secret == NULL);
	T_ASSERT("KEYS_PATH NULL until conf_settle", c.keys_path == NULL);
	T_ASSERT("default UPSTREAM_URL",
		 strcmp(c.upstream_url, "https://openrouter.ai/api/v1") == 0);
	T_ASSERT("default STATE_PATH",
		 strcmp(c.state_path, "/var/lib/orgw/state.gdbm") == 0);
	T_ASSERT("default UPSTREAM_CA_FILE NULL (libcurl's CAs)",
		 c.upstream_ca_file == NULL);
	T_ASSERT("default no target models", c.n_target_models == 0);
	T_ASSERT("default target_models NULL", c.target_models[0] == NULL);
	T_ASSERT("default HIT_RATE 0.9", T_NEAR(c.hit_rate, 0.9));
	T_ASSERT("default CACHE_BONUS 2", T_NEAR(c.cache_bonus, 2));
	T_ASSERT("default MIN_UPTIME 95", T_NEAR(c.min_uptime, 95));
	T_ASSERT("default SLOW_THRESHOLD_MS", c.slow_threshold_ms == 20000);
	T_ASSERT("default UPSTREAM_TIMEOUT_MS", c.upstream_timeout_ms == 60000);
	T_ASSERT("default REQUEST_TIMEOUT_MS", c.request_timeout_ms == 600000);
	T_ASSERT("default CLIENT_SEND_TIMEOUT_MS",
		 c.client_send_timeout_ms == 60000);
	T_ASSERT("default WORKER_THREADS", c.worker_threads == 80);
	T_ASSERT("default WORKER_MAX_REQUESTS",
		 c.worker_max_requests == 10000);
	T_ASSERT("default WORKER_MAX_AGE_SECONDS",
		 c.worker_max_age_seconds == 3600);
	T_ASSERT("default FAIL_LIMIT", c.fail_limit == 3);
	T_ASSERT("default COOLDOWN_SECONDS", c.cooldown_seconds == 600);
	T_ASSERT("default CONVERSATION_IDLE_SECONDS",
		 c.conversation_idle_seconds == 600);
	T_ASSERT("default CACHE_TTL_SECONDS", c.cache_ttl_seconds == 300);
	T_ASSERT("default LOCK_IDLE_SECONDS", c.lock_idle_seconds == 1800);
	T_ASSERT("default CONVERSATION_IDLE_SECONDS",
		 c.conversation_idle_seconds == 600);
	T_ASSERT("default PRESSURE_SECONDS", c.pressure_seconds == 30);
	T_ASSERT("default AUTO_CACHE", c.auto_cache == 1);
	T_ASSERT("default CACHE_TTL_SECONDS", c.cache_ttl_seconds == 300);
	T_ASSERT("default MAX_CONVERSATIONS", c.max_conversations == 1000);
	T_ASSERT("default HIT_RATE_HALF_LIFE_TOKENS",
		 c.hit_rate_half_life_tokens == 1000000);
	T_ASSERT("default HIT_RATE_EVIDENCE_TOKENS",
		 c.hit_rate_evidence_tokens == 200000);
	T_ASSERT("default LOCK_MARGIN 0.10", T_NEAR(c.lock_margin, 0.10));
	T_ASSERT("default RETRY_429_DELAYS 2,4,8",
		 c.n_retry_429_delays == 3 && c.retry_429_delays[0] == 2 &&
			 c.retry_429_delays[1] == 4 &&
			 c.retry_429_delays[2] == 8);
	T_ASSERT("default MAX_ATTEMPTS", c.max_attempts == 4);
	T_ASSERT("default MAX_BODY_BYTES", c.max_body_bytes == 8388608);
	T_ASSERT("default MAX_JSON_NODES", c.max_json_nodes == 500000);
	T_ASSERT("default MAX_ANSWER_BYTES", c.max_answer_bytes == 16777216);
	T_ASSERT("default HOST_PARSE_MEMORY_BYTES",
		 c.host_parse_memory_bytes == 536870912);
	T_ASSERT("default STATE_MODE 0600", c.state_mode == 0600);
	T_ASSERT("default MAX_MODELS 256", c.max_models == 256);
	T_ASSERT("default CRON_MIN_INTERVAL_SECONDS 60",
		 c.cron_min_interval_seconds == 60);
	for (i = 0; i < NNAMES; i++)
		if (!conf_known(all_names[i]))
			break;
	T_ASSERT("conf_known: every setting of orgw.conf(5)", i == NNAMES);
	T_ASSERT("conf_known: not _FILE forms",
		 !conf_known("OPENROUTER_API_KEY_FILE"));
	T_ASSERT("conf_known: case matters", !conf_known("hit_rate"));
	T_ASSERT("conf_known: not empty, not NULL",
		 !conf_known("") && !conf_known(NULL));
	T_ASSERT("unknown name is ok and ignored",
		 set_ok(&c, "PATH", "/bin") && set_ok(&c, "HIT_RATEX", "x"));
	T_ASSERT("NULL value refused", set_bad(&c, "HIT_RATE", NULL,
					       "HIT_RATE", NULL));
	conf_free(&c);
	T_ASSERT("conf_free resets", c.upstream_url == NULL &&
					     c.state_path == NULL);
	conf_free(&c);		/* twice is harmless */
	conf_free(NULL);
}

static void
test_doubles(void)
{
	struct orgw_conf c;

	(void)conf_init(&c);
	T_ASSERT("HIT_RATE 0 ok", set_ok(&c, "HIT_RATE", "0") &&
					  c.hit_rate == 0);
	T_ASSERT("HIT_RATE 1 ok", set_ok(&c, "HIT_RATE", "1") &&
					  c.hit_rate == 1);
	T_ASSERT("HIT_RATE .25 ok", set_ok(&c, "HIT_RATE", ".25") &&
					    T_NEAR(c.hit_rate, 0.25));
	T_ASSERT("HIT_RATE 5e-1 ok", set_ok(&c, "HIT_RATE", "5e-1") &&
					     T_NEAR(c.hit_rate, 0.5));
	T_ASSERT("HIT_RATE 1.5 refused, names HIT_RATE and 1.5",
		 set_bad(&c, "HIT_RATE", "1.5", "HIT_RATE", "\"1.5\""));
	T_ASSERT("HIT_RATE 1.5 message says out of range",
		 strstr(err, "out of range") != NULL);
	T_ASSERT("refused HIT_RATE keeps old value", T_NEAR(c.hit_rate, 0.5));
	T_ASSERT("HIT_RATE -0.1 refused",
		 set_bad(&c, "HIT_RATE", "-0.1", "HIT_RATE", NULL));
	T_ASSERT("HIT_RATE 1.0000001 refused",
		 set_bad(&c, "HIT_RATE", "1.0000001", "HIT_RATE", NULL));
	T_ASSERT("HIT_RATE nan refused",
		 set_bad(&c, "HIT_RATE", "nan", "HIT_RATE", "not a number"));
	T_ASSERT("HIT_RATE NAN refused",
		 set_bad(&c, "HIT_RATE", "NAN", "HIT_RATE", NULL));
	T_ASSERT("HIT_RATE inf refused",
		 set_bad(&c, "HIT_RATE", "inf", "HIT_RATE", NULL));
	T_ASSERT("HIT_RATE infinity refused",
		 set_bad(&c, "HIT_RATE", "-infinity", "HIT_RATE", NULL));
	T_ASSERT("HIT_RATE 1e999 refused as out of range",
		 set_bad(&c, "HIT_RATE", "1e999", "HIT_RATE", "out of range"));
	T_ASSERT("HIT_RATE 1e-999 (underflow) refused",
		 set_bad(&c, "HIT_RATE", "1e-999", "HIT_RATE", NULL));
	T_ASSERT("HIT_RATE 12abc refused",
		 set_bad(&c, "HIT_RATE", "12abc", "HIT_RATE", "12abc"));
	T_ASSERT("HIT_RATE 0.5x refused",
		 set_bad(&c, "HIT_RATE", "0.5x", "HIT_RATE", NULL));
	T_ASSERT("HIT_RATE empty refused",
		 set_bad(&c, "HIT_RATE", "", "HIT_RATE", "empty"));
	T_ASSERT("HIT_RATE leading blank refused",
		 set_bad(&c, "HIT_RATE", " 0.5", "HIT_RATE", NULL));
	T_ASSERT("HIT_RATE trailing blank refused",
		 set_bad(&c, "HIT_RATE", "0.5 ", "HIT_RATE", NULL));
	T_ASSERT("HIT_RATE hex float refused",
		 set_bad(&c, "HIT_RATE", "0x1p-1", "HIT_RATE", NULL));
	T_ASSERT("HIT_RATE comma decimal refused",
		 set_bad(&c, "HIT_RATE", "0,5", "HIT_RATE", NULL));
	T_ASSERT("HIT_RATE lone dot refused",
		 set_bad(&c, "HIT_RATE", ".", "HIT_RATE", NULL));
	T_ASSERT("HIT_RATE -0 becomes +0",
		 set_ok(&c, "HIT_RATE", "-0") && c.hit_rate == 0 &&
			 !signbit(c.hit_rate));
	T_ASSERT("CACHE_BONUS 0 refused",
		 set_bad(&c, "CACHE_BONUS", "0", "CACHE_BONUS", "more than 0"));
	T_ASSERT("CACHE_BONUS 0.0001 ok",
		 set_ok(&c, "CACHE_BONUS", "0.0001") &&
			 T_NEAR(c.cache_bonus, 0.0001));
	T_ASSERT("CACHE_BONUS 1.2 ok", set_ok(&c, "CACHE_BONUS", "1.2") &&
					       T_NEAR(c.cache_bonus, 1.2));
	T_ASSERT("CACHE_BONUS 100 ok", set_ok(&c, "CACHE_BONUS", "100") &&
					       c.cache_bonus == 100);
	T_ASSERT("CACHE_BONUS 100.5 refused",
		 set_bad(&c, "CACHE_BONUS", "100.5", "CACHE_BONUS", NULL));
	T_ASSERT("CACHE_BONUS -1 refused",
		 set_bad(&c, "CACHE_BONUS", "-1", "CACHE_BONUS", NULL));
	T_ASSERT("MIN_UPTIME 0 ok", set_ok(&c, "MIN_UPTIME", "0") &&
					    c.min_uptime == 0);
	T_ASSERT("MIN_UPTIME 100 ok", set_ok(&c, "MIN_UPTIME", "100") &&
					      c.min_uptime == 100);
	T_ASSERT("MIN_UPTIME 99.5 ok", set_ok(&c, "MIN_UPTIME", "99.5") &&
					       T_NEAR(c.min_uptime, 99.5));
	T_ASSERT("MIN_UPTIME -0.01 refused",
		 set_bad(&c, "MIN_UPTIME", "-0.01", "MIN_UPTIME", "0..100"));
	T_ASSERT("MIN_UPTIME 100.01 refused",
		 set_bad(&c, "MIN_UPTIME", "100.01", "MIN_UPTIME", NULL));
	T_ASSERT("LOCK_MARGIN 0 ok (no margin)",
		 set_ok(&c, "LOCK_MARGIN", "0") && c.lock_margin == 0);
	T_ASSERT("LOCK_MARGIN 0.25 ok", set_ok(&c, "LOCK_MARGIN", "0.25") &&
						T_NEAR(c.lock_margin, 0.25));
	T_ASSERT("LOCK_MARGIN -0.1 refused",
		 set_bad(&c, "LOCK_MARGIN", "-0.1", "LOCK_MARGIN", NULL));
	T_ASSERT("LOCK_MARGIN 10.5 refused",
		 set_bad(&c, "LOCK_MARGIN", "10.5", "LOCK_MARGIN", NULL));
	T_ASSERT("LOCK_MARGIN x refused",
		 set_bad(&c, "LOCK_MARGIN", "x", "LOCK_MARGIN", NULL));
	conf_free(&c);
}

struct int_edge {
	const char *name;
	const char *lo_bad, *lo_ok, *hi_ok, *hi_bad;
	long long lo, hi;
};

static long long
int_field(const struct orgw_conf *c, const char *name)
{
	if (strcmp(name, "SLOW_THRESHOLD_MS") == 0)
		return c->slow_threshold_ms;
	if (strcmp(name, "UPSTREAM_TIMEOUT_MS") == 0)
		return c->upstream_timeout_ms;
	if (strcmp(name, "REQUEST_TIMEOUT_MS") == 0)
		return c->request_timeout_ms;
	if (strcmp(name, "CLIENT_SEND_TIMEOUT_MS") == 0)
		return c->client_send_timeout_ms;
	if (strcmp(name, "FAIL_LIMIT") == 0)
		return c->fail_limit;
	if (strcmp(name, "COOLDOWN_SECONDS") == 0)
		return c->cooldown_seconds;
	if (strcmp(name, "LOCK_IDLE_SECONDS") == 0)
		return c->lock_idle_seconds;
	if (strcmp(name, "CONVERSATION_IDLE_SECONDS") == 0)
		return c->conversation_idle_seconds;
	if (strcmp(name, "PRESSURE_SECONDS") == 0)
		return c->pressure_seconds;
	if (strcmp(name, "AUTO_CACHE") == 0)
		return c->auto_cache;
	if (strcmp(name, "CACHE_TTL_SECONDS") == 0)
		return c->cache_ttl_seconds;
	if (strcmp(name, "MAX_CONVERSATIONS") == 0)
		return c->max_conversations;
	if (strcmp(name, "HIT_RATE_HALF_LIFE_TOKENS") == 0)
		return c->hit_rate_half_life_tokens;
	if (strcmp(name, "HIT_RATE_EVIDENCE_TOKENS") == 0)
		return c->hit_rate_evidence_tokens;
	if (strcmp(name, "MAX_ATTEMPTS") == 0)
		return c->max_attempts;
	if (strcmp(name, "MAX_BODY_BYTES") == 0)
		return (long long)c->max_body_bytes;
	if (strcmp(name, "MAX_JSON_NODES") == 0)
		return (long long)c->max_json_nodes;
	if (strcmp(name, "MAX_ANSWER_BYTES") == 0)
		return (long long)c->max_answer_bytes;
	if (strcmp(name, "HOST_PARSE_MEMORY_BYTES") == 0)
		return (long long)c->host_parse_memory_bytes;
	if (strcmp(name, "MAX_MODELS") == 0)
		return c->max_models;
	if (strcmp(name, "CRON_MIN_INTERVAL_SECONDS") == 0)
		return c->cron_min_interval_seconds;
	if (strcmp(name, "WORKER_THREADS") == 0)
		return c->worker_threads;
	if (strcmp(name, "WORKER_MAX_REQUESTS") == 0)
		return c->worker_max_requests;
	if (strcmp(name, "WORKER_MAX_AGE_SECONDS") == 0)
		return c->worker_max_age_seconds;
	return -12345;
}

static void
test_integers(void)
{
	static const struct int_edge edges[] = {
		{ "SLOW_THRESHOLD_MS", "0", "1", "3600000", "3600001", 1,
		  3600000 },
		{ "UPSTREAM_TIMEOUT_MS", "99", "100", "3600000", "3600001",
		  100, 3600000 },
		{ "REQUEST_TIMEOUT_MS", "999", "1000", "86400000", "86400001",
		  1000, 86400000 },
		{ "CLIENT_SEND_TIMEOUT_MS", "99", "100", "3600000", "3600001",
		  100, 3600000 },
		{ "FAIL_LIMIT", "0", "1", "1000", "1001", 1, 1000 },
		{ "COOLDOWN_SECONDS", "0", "1", "604800", "604801", 1,
		  604800 },
		{ "LOCK_IDLE_SECONDS", "0", "1", "604800", "604801", 1,
		  604800 },
		{ "CONVERSATION_IDLE_SECONDS", "0", "1", "604800", "604801",
		  1, 604800 },
		{ "PRESSURE_SECONDS", "0", "1", "86400", "86401", 1, 86400 },
		{ "AUTO_CACHE", "-1", "0", "1", "2", 0, 1 },
		{ "CACHE_TTL_SECONDS", "0", "1", "86400", "86401", 1, 86400 },
		{ "MAX_CONVERSATIONS", "0", "1", "1000000", "1000001", 1,
		  1000000 },
		{ "HIT_RATE_HALF_LIFE_TOKENS", "0", "1", "1000000000000",
		  "1000000000001", 1, 1000000000000LL },
		{ "HIT_RATE_EVIDENCE_TOKENS", "0", "1", "1000000000000",
		  "1000000000001", 1, 1000000000000LL },
		{ "MAX_ATTEMPTS", "0", "1", "20", "21", 1, 20 },
		{ "MAX_BODY_BYTES", "1023", "1024", "1073741824",
		  "1073741825", 1024, 1073741824 },
		{ "MAX_JSON_NODES", "999", "1000", "100000000", "100000001",
		  1000, 100000000 },
		{ "MAX_ANSWER_BYTES", "65535", "65536", "1073741824",
		  "1073741825", 65536, 1073741824 },
		{ "HOST_PARSE_MEMORY_BYTES", "1048575", "1048576",
		  "1099511627776", "1099511627777", 1048576,
		  1099511627776LL },
		{ "MAX_MODELS", "0", "1", "100000", "100001", 1, 100000 },
		{ "CRON_MIN_INTERVAL_SECONDS", "-1", "0", "86400", "86401", 0,
		  86400 },
		{ "WORKER_THREADS", "0", "1", "1024", "1025", 1, 1024 },
		{ "WORKER_MAX_REQUESTS", "0", "1", "1000000000", "1000000001",
		  1, 1000000000 },
		{ "WORKER_MAX_AGE_SECONDS", "9", "10", "2592000", "2592001", 10,
		  2592000 },
	};
	static const char *const garbage[] = {
		"12abc", "", " 5", "5 ", "0x10", "1.0", "1e3", "-",
		"99999999999999999999", "-99999999999999999999", "5\n",
	};
	char what[160];
	struct orgw_conf c;
	size_t i, j;
	bool ok;

	(void)conf_init(&c);
	for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		const struct int_edge *e = &edges[i];

		(void)snprintf(what, sizeof(what), "%s %s refused", e->name,
			       e->lo_bad);
		T_ASSERT(what, set_bad(&c, e->name, e->lo_bad, e->name,
				       "out of range"));
		(void)snprintf(what, sizeof(what), "%s %s ok", e->name,
			       e->lo_ok);
		T_ASSERT(what, set_ok(&c, e->name, e->lo_ok) &&
				       int_field(&c, e->name) == e->lo);
		(void)snprintf(what, sizeof(what), "%s %s ok", e->name,
			       e->hi_ok);
		T_ASSERT(what, set_ok(&c, e->name, e->hi_ok) &&
				       int_field(&c, e->name) == e->hi);
		(void)snprintf(what, sizeof(what), "%s %s refused", e->name,
			       e->hi_bad);
		T_ASSERT(what, set_bad(&c, e->name, e->hi_bad, e->name,
				       e->hi_bad));
		(void)snprintf(what, sizeof(what),
			       "%s refused value keeps old", e->name);
		T_ASSERT(what, int_field(&c, e->name) == e->hi);
		ok = true;
		for (j = 0; j < sizeof(garbage) / sizeof(garbage[0]); j++)
			if (!set_bad(&c, e->name, garbage[j], e->name, NULL))
				ok = false;
		(void)snprintf(what, sizeof(what),
			       "%s refuses garbage (12abc, empty, blanks, "
			       "hex, fractions, overflow)", e->name);
		T_ASSERT(what, ok && int_field(&c, e->name) == e->hi);
	}
	T_ASSERT("FAIL_LIMIT 12abc message quotes the value",
		 set_bad(&c, "FAIL_LIMIT", "12abc", "FAIL_LIMIT: \"12abc\"",
			 "not an integer"));
	T_ASSERT("FAIL_LIMIT empty message",
		 set_bad(&c, "FAIL_LIMIT", "", "FAIL_LIMIT is empty", NULL));
	T_ASSERT("FAIL_LIMIT overflow is a range error",
		 set_bad(&c, "FAIL_LIMIT", "99999999999999999999",
			 "out of range", NULL));
	T_ASSERT("FAIL_LIMIT +7 ok", set_ok(&c, "FAIL_LIMIT", "+7") &&
					     c.fail_limit == 7);
	T_ASSERT("FAIL_LIMIT 007 ok (decimal)",
		 set_ok(&c, "FAIL_LIMIT", "007") && c.fail_limit == 7);
	T_ASSERT("FAIL_LIMIT -1 refused",
		 set_bad(&c, "FAIL_LIMIT", "-1", "FAIL_LIMIT", NULL));
	T_ASSERT("control bytes are not echoed raw",
		 set_bad(&c, "FAIL_LIMIT", "1\033[2J", "1?[2J", NULL) &&
			 strchr(err, '\033') == NULL);
	conf_free(&c);
}

/* STATE_MODE (orgw.conf(5)): octal, 0600 by default, 0640 and 0660 allowed;
 * nothing for others, nothing executable. */
static void
test_state_mode(void)
{
	static const char *const bad[] = {
		"0666", "0644", "0700", "0606", "0602", "0400", "600x", "0x180",
		"", " 0600", "0600 ", "-0600", "+600", "384", "00000600", "8",
	};
	char what[96];
	struct orgw_conf c;
	size_t i;

	(void)conf_init(&c);
	T_ASSERT("STATE_MODE 0660 ok", set_ok(&c, "STATE_MODE", "0660") &&
					      c.state_mode == 0660);
	T_ASSERT("STATE_MODE 640 ok (octal, no leading 0)",
		 set_ok(&c, "STATE_MODE", "640") && c.state_mode == 0640);
	T_ASSERT("STATE_MODE 0600 ok", set_ok(&c, "STATE_MODE", "0600") &&
					      c.state_mode == 0600);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		(void)snprintf(what, sizeof(what),
			       "STATE_MODE \"%s\" refused, old value kept",
			       bad[i]);
		T_ASSERT(what, set_bad(&c, "STATE_MODE", bad[i], "STATE_MODE",
				       "0660") &&
				       c.state_mode == 0600);
	}
	conf_free(&c);
}

static void
test_delays(void)
{
	struct orgw_conf c;
	char many[128];
	size_t i;

	(void)conf_init(&c);
	T_ASSERT("RETRY_429_DELAYS single",
		 set_ok(&c, "RETRY_429_DELAYS", "5") &&
			 c.n_retry_429_delays == 1 &&
			 c.retry_429_delays[0] == 5);
	T_ASSERT("RETRY_429_DELAYS blanks around items",
		 set_ok(&c, "RETRY_429_DELAYS", " 1 , 2,\t3 ") &&
			 c.n_retry_429_delays == 3 &&
			 c.retry_429_delays[0] == 1 &&
			 c.retry_429_delays[1] == 2 &&
			 c.retry_429_delays[2] == 3);
	T_ASSERT("RETRY_429_DELAYS 0 and 300 ok",
		 set_ok(&c, "RETRY_429_DELAYS", "0,300") &&
			 c.n_retry_429_delays == 2 &&
			 c.retry_429_delays[0] == 0 &&
			 c.retry_429_delays[1] == 300);
	T_ASSERT("RETRY_429_DELAYS empty means no retries",
		 set_ok(&c, "RETRY_429_DELAYS", "") &&
			 c.n_retry_429_delays == 0);
	T_ASSERT("RETRY_429_DELAYS all blank means no retries",
		 set_ok(&c, "RETRY_429_DELAYS", "1") &&
			 set_ok(&c, "RETRY_429_DELAYS", "  ") &&
			 c.n_retry_429_delays == 0);
	(void)set_ok(&c, "RETRY_429_DELAYS", "2,4,8");
	T_ASSERT("RETRY_429_DELAYS 301 refused",
		 set_bad(&c, "RETRY_429_DELAYS", "1,301", "RETRY_429_DELAYS",
			 "item 2"));
	T_ASSERT("RETRY_429_DELAYS -1 refused",
		 set_bad(&c, "RETRY_429_DELAYS", "-1", "RETRY_429_DELAYS",
			 "out of range"));
	T_ASSERT("RETRY_429_DELAYS empty item refused",
		 set_bad(&c, "RETRY_429_DELAYS", "2,,4", "item 2", "empty"));
	T_ASSERT("RETRY_429_DELAYS trailing comma refused",
		 set_bad(&c, "RETRY_429_DELAYS", "2,", "item 2", NULL));
	T_ASSERT("RETRY_429_DELAYS leading comma refused",
		 set_bad(&c, "RETRY_429_DELAYS", ",2", "item 1", NULL));
	T_ASSERT("RETRY_429_DELAYS lone comma refused",
		 set_bad(&c, "RETRY_429_DELAYS", ",", "RETRY_429_DELAYS",
			 NULL));
	T_ASSERT("RETRY_429_DELAYS garbage refused",
		 set_bad(&c, "RETRY_429_DELAYS", "2,4s", "\"4s\"",
			 "not an integer"));
	T_ASSERT("RETRY_429_DELAYS space inside item refused",
		 set_bad(&c, "RETRY_429_DELAYS", "1 2", "RETRY_429_DELAYS",
			 NULL));
	many[0] = '\0';
	for (i = 0; i < CONF_MAX_DELAYS; i++) {
		size_t n = strlen(many);

		(void)snprintf(many + n, sizeof(many) - n, "%s%zu",
			       i ? "," : "", i);
	}
	T_ASSERT("RETRY_429_DELAYS 16 items ok",
		 set_ok(&c, "RETRY_429_DELAYS", many) &&
			 c.n_retry_429_delays == CONF_MAX_DELAYS &&
			 c.retry_429_delays[15] == 15);
	i = strlen(many);
	(void)snprintf(many + i, sizeof(many) - i, ",16");
	T_ASSERT("RETRY_429_DELAYS 17 items refused",
		 set_bad(&c, "RETRY_429_DELAYS", many, "more than 16", NULL));
	T_ASSERT("refused RETRY_429_DELAYS keeps old list",
		 c.n_retry_429_delays == CONF_MAX_DELAYS);
	conf_free(&c);
}

static void
test_models(void)
{
	struct orgw_conf c;
	char id[ORGW_MODEL_MAX + 2];
	char many[CONF_MAX_TARGETS * 8 + 16];
	size_t i;

	(void)conf_init(&c);
	T_ASSERT("TARGET_MODEL single",
		 set_ok(&c, "TARGET_MODEL", "qwen/qwen3-coder") &&
			 c.n_target_models == 1 &&
			 strcmp(c.target_models[0], "qwen/qwen3-coder") == 0);
	T_ASSERT("TARGET_MODEL split, trimmed, empties skipped",
		 set_ok(&c, "TARGET_MODEL",
			" a/b , c/d:free,,\te/f ,") &&
			 c.n_target_models == 3 &&
			 strcmp(c.target_models[0], "a/b") == 0 &&
			 strcmp(c.target_models[1], "c/d:free") == 0 &&
			 strcmp(c.target_models[2], "e/f") == 0 &&
			 c.target_models[3] == NULL);
	T_ASSERT("TARGET_MODEL duplicates kept once",
		 set_ok(&c, "TARGET_MODEL", "x/y,z/w,x/y") &&
			 c.n_target_models == 2 &&
			 strcmp(c.target_models[1], "z/w") == 0 &&
			 c.target_models[2] == NULL);
	T_ASSERT("TARGET_MODEL empty clears",
		 set_ok(&c, "TARGET_MODEL", "") && c.n_target_models == 0 &&
			 c.target_models[0] == NULL);
	T_ASSERT("TARGET_MODEL only commas clears",
		 set_ok(&c, "TARGET_MODEL", " , ,") &&
			 c.n_target_models == 0);
	(void)set_ok(&c, "TARGET_MODEL", "keep/me");
	T_ASSERT("TARGET_MODEL space inside id refused",
		 set_bad(&c, "TARGET_MODEL", "a/b, c d", "TARGET_MODEL",
			 "\"c d\""));
	T_ASSERT("TARGET_MODEL control char refused",
		 set_bad(&c, "TARGET_MODEL", "a/\001b", "TARGET_MODEL",
			 NULL));
	T_ASSERT("TARGET_MODEL non-ASCII refused",
		 set_bad(&c, "TARGET_MODEL", "a/\xc3\xa9", "TARGET_MODEL",
			 NULL));
	T_ASSERT("refused TARGET_MODEL keeps old list",
		 c.n_target_models == 1 &&
			 strcmp(c.target_models[0], "keep/me") == 0);
	memset(id, 'm', ORGW_MODEL_MAX - 1);
	id[ORGW_MODEL_MAX - 1] = '\0';
	T_ASSERT("TARGET_MODEL 255-byte id ok",
		 set_ok(&c, "TARGET_MODEL", id) &&
			 strlen(c.target_models[0]) == ORGW_MODEL_MAX - 1);
	id[ORGW_MODEL_MAX - 1] = 'm';
	id[ORGW_MODEL_MAX] = '\0';
	T_ASSERT("TARGET_MODEL 256-byte id refused",
		 set_bad(&c, "TARGET_MODEL", id, "longer than 255", NULL));
	T_ASSERT("long value is quoted cut short",
		 strstr(err, "...") != NULL && strlen(err) < 200);
	many[0] = '\0';
	for (i = 0; i < CONF_MAX_TARGETS; i++) {
		size_t n = strlen(many);

		(void)snprintf(many + n, sizeof(many) - n, "%sm%zu",
			       i ? "," : "", i);
	}
	T_ASSERT("TARGET_MODEL 64 models ok",
		 set_ok(&c, "TARGET_MODEL", many) &&
			 c.n_target_models == CONF_MAX_TARGETS &&
			 strcmp(c.target_models[63], "m63") == 0);
	i = strlen(many);
	(void)snprintf(many + i, sizeof(many) - i, ",m64");
	T_ASSERT("TARGET_MODEL 65 models refused",
		 set_bad(&c, "TARGET_MODEL", many, "more than 64", NULL));
	conf_free(&c);
}

static void
test_strings(void)
{
	struct orgw_conf c;

	(void)conf_init(&c);
	T_ASSERT("UPSTREAM_URL trailing slashes removed",
		 set_ok(&c, "UPSTREAM_URL", "http://127.0.0.1:8089/api/v1//") &&
			 strcmp(c.upstream_url,
				"http://127.0.0.1:8089/api/v1") == 0);
	T_ASSERT("UPSTREAM_URL scheme case-insensitive",
		 set_ok(&c, "UPSTREAM_URL", "HTTPS://example.com/") &&
			 strcmp(c.upstream_url, "HTTPS://example.com") == 0);
	T_ASSERT("UPSTREAM_URL ftp refused",
		 set_bad(&c, "UPSTREAM_URL", "ftp://x", "UPSTREAM_URL",
			 "http://"));
	T_ASSERT("UPSTREAM_URL no scheme refused",
		 set_bad(&c, "UPSTREAM_URL", "openrouter.ai/api/v1",
			 "UPSTREAM_URL", NULL));
	T_ASSERT("UPSTREAM_URL empty refused",
		 set_bad(&c, "UPSTREAM_URL", "", "UPSTREAM_URL", NULL));
	T_ASSERT("UPSTREAM_URL no host refused",
		 set_bad(&c, "UPSTREAM_URL", "https://", "no host", NULL));
	T_ASSERT("UPSTREAM_URL only slashes refused",
		 set_bad(&c, "UPSTREAM_URL", "https:///x", "no host", NULL));
	T_ASSERT("UPSTREAM_URL space refused",
		 set_bad(&c, "UPSTREAM_URL", "https://a b/", "UPSTREAM_URL",
			 NULL));
	T_ASSERT("UPSTREAM_URL query refused",
		 set_bad(&c, "UPSTREAM_URL", "https://a/?x=1", "query", NULL));
	T_ASSERT("refused UPSTREAM_URL keeps old",
		 strcmp(c.upstream_url, "HTTPS://example.com") == 0);
	T_ASSERT("STATE_PATH empty refused",
		 set_bad(&c, "STATE_PATH", "", "STATE_PATH", "empty"));
	T_ASSERT("STATE_PATH set",
		 set_ok(&c, "STATE_PATH", "/tmp/orgw.gdbm") &&
			 set_ok(&c, "STATE_PATH", "/tmp/other.gdbm") &&
			 strcmp(c.state_path, "/tmp/other.gdbm") == 0);
	T_ASSERT("UPSTREAM_CA_FILE empty refused",
		 set_bad(&c, "UPSTREAM_CA_FILE", "", "UPSTREAM_CA_FILE",
			 "empty"));
	T_ASSERT("UPSTREAM_CA_FILE set",
		 set_ok(&c, "UPSTREAM_CA_FILE", "/x/ca.crt") &&
			 strcmp(c.upstream_ca_file, "/x/ca.crt") == 0);
	T_ASSERT("conf_is_path: the path settings only",
		 conf_is_path("STATE_PATH") && conf_is_path("UPSTREAM_CA_FILE") &&
			 !conf_is_path("UPSTREAM_URL") &&
			 !conf_is_path("OPENROUTER_API_KEY_FILE") &&
			 !conf_is_path(NULL));
	conf_free(&c);
	T_ASSERT("conf_free resets UPSTREAM_CA_FILE",
		 c.upstream_ca_file == NULL);
}

static void
test_keys(void)
{
	static const char *const names[] = { "OPENROUTER_API_KEY",
					     "CUSTOM_ACCESS_KEY",
					     "METRICS_KEY" };
	struct orgw_conf c;
	size_t i;

	(void)conf_init(&c);
	for (i = 0; i < 3; i++) {
		const char *n = names[i];
		char what[128];

		(void)snprintf(what, sizeof(what), "%s empty refused", n);
		T_ASSERT(what, set_bad(&c, n, "", n,
				       "is empty; an empty key is not a key"));
		(void)snprintf(what, sizeof(what), "%s blank refused", n);
		T_ASSERT(what, set_bad(&c, n, " \t ", n, "is empty"));
		(void)snprintf(what, sizeof(what),
			       "%s with space refused, not echoed", n);
		T_ASSERT(what, set_bad(&c, n, "sk-or-v1-SECRETA BC", n,
				       "space") &&
				       strstr(err, "SECRET") == NULL);
		(void)snprintf(what, sizeof(what),
			       "%s with newline refused, not echoed", n);
		T_ASSERT(what, set_bad(&c, n, "sk-or-v1-SECRET\n", n,
				       "control") &&
				       strstr(err, "SECRET") == NULL);
		(void)snprintf(what, sizeof(what),
			       "%s non-ASCII refused, not echoed", n);
		T_ASSERT(what, set_bad(&c, n, "SECRET\xc3\xa9", n, NULL) &&
				       strstr(err, "SECRET") == NULL);
		(void)snprintf(what, sizeof(what), "%s trailing blank refused",
			       n);
		T_ASSERT(what, set_bad(&c, n, "SECRET ", n, NULL) &&
				       strstr(err, "SECRET") == NULL);
	}
	T_ASSERT("refused keys stay unset",
		 c.openrouter_api_key == NULL && c.custom_access_key == NULL &&
			 c.metrics_key == NULL);
	/* Redis allows any bytes in requirepass; AUTH goes as an argument
	 * vector, so a space inside is the password's own. */
	T_ASSERT("REDIS_PASSWORD with inner spaces kept whole",
		 set_ok(&c, "REDIS_PASSWORD", "correct horse battery") &&
			 strcmp(c.redis_password, "correct horse battery") == 0);
	T_ASSERT("REDIS_PASSWORD UTF-8 kept",
		 set_ok(&c, "REDIS_PASSWORD", "p\xc3\xa9w") &&
			 strcmp(c.redis_password, "p\xc3\xa9w") == 0);
	T_ASSERT("REDIS_PASSWORD with a space at an end refused, not echoed",
		 set_bad(&c, "REDIS_PASSWORD", "SECRET ", "REDIS_PASSWORD",
			 "ends with a space") &&
			 strstr(err, "SECRET") == NULL &&
			 set_bad(&c, "REDIS_PASSWORD", " SECRET", NULL, NULL));
	T_ASSERT("REDIS_PASSWORD with a newline refused, not echoed",
		 set_bad(&c, "REDIS_PASSWORD", "SEC\nRET", "REDIS_PASSWORD",
			 "control") && strstr(err, "SEC") == NULL);
	T_ASSERT("REDIS_PASSWORD refused keeps the old one",
		 strcmp(c.redis_password, "p\xc3\xa9w") == 0);
	T_ASSERT("OPENROUTER_API_KEY set twice (old one freed)",
		 set_ok(&c, "OPENROUTER_API_KEY", "sk-or-v1-abc#def") &&
			 set_ok(&c, "OPENROUTER_API_KEY", "sk-or-v1-xyz") &&
			 strcmp(c.openrouter_api_key, "sk-or-v1-xyz") == 0);
	T_ASSERT("CUSTOM_ACCESS_KEY set",
		 set_ok(&c, "CUSTOM_ACCESS_KEY", "client=key==") &&
			 strcmp(c.custom_access_key, "client=key==") == 0);
	T_ASSERT("refused key keeps old one",
		 set_bad(&c, "CUSTOM_ACCESS_KEY", "", NULL, NULL) &&
			 strcmp(c.custom_access_key, "client=key==") == 0);
	conf_free(&c);
}

/* Collects parsed pairs as "NAME=VALUE;" into a buffer. */
struct collect {
	char buf[1024];
	int stop_at;		/* pair number (1-based) to stop at; 0 never */
	int n;
	char *err;
	size_t errlen;
};

static int
collect_fn(void *arg, const char *name, const char *value)
{
	struct collect *k = arg;
	size_t n = strlen(k->buf);

	k->n++;
	(void)snprintf(k->buf + n, sizeof(k->buf) - n, "%s=%s;", name, value);
	if (k->stop_at != 0 && k->n == k->stop_at) {
		if (k->err != NULL)
			(void)snprintf(k->err, k->errlen, "%s: stop", name);
		return 7;
	}
	return 0;
}

static enum orgw_err
parse(struct collect *k, const char *text, size_t len)
{
	memset(k->buf, 0, sizeof(k->buf));
	k->n = 0;
	return conf_parse_text(text, len, collect_fn, k, err, sizeof(err));
}

static enum orgw_err
parse_str(struct collect *k, const char *text)
{
	return parse(k, text, strlen(text));
}

static void
test_parse(void)
{
	static const char nul_text[] = "A=1\nB=x\0y\n";
	struct collect k;
	enum orgw_err rc;

	memset(&k, 0, sizeof(k));
	T_ASSERT("parse: empty text", parse(&k, "", 0) == ORGW_OK &&
					      k.n == 0);
	T_ASSERT("parse: NULL text with len 0",
		 parse(&k, NULL, 0) == ORGW_OK && k.n == 0);
	T_ASSERT("parse: one line without newline",
		 parse_str(&k, "A=1") == ORGW_OK &&
			 strcmp(k.buf, "A=1;") == 0);
	rc = parse_str(&k, "# comment\n"
			   "\n"
			   "   \t\n"
			   "  # indented comment\n"
			   "A=1\n"
			   " B = two words \r\n"
			   "C=\"quoted # not comment \"\r\n"
			   "export D=4\n"
			   "export\tE = \"\"\n"
			   "F=\n"
			   "G=a#b\n"
			   "H=x=y\n"
			   "I='single'\n"
			   "J=\"a\"b\"\n"
			   "K=1\r\r\n"
			   "_L9=ok\n");
	T_ASSERT("parse: mixed file ok", rc == ORGW_OK);
	T_ASSERT("parse: trimmed, quotes, export, CRLF, '#' in values",
		 strcmp(k.buf, "A=1;B=two words;C=quoted # not comment ;"
			       "D=4;E=;F=;G=a#b;H=x=y;I='single';J=a\"b;K=1;"
			       "_L9=ok;") == 0);
	T_ASSERT("parse: CRLF only file",
		 parse_str(&k, "A=1\r\nB=2\r\n") == ORGW_OK &&
			 strcmp(k.buf, "A=1;B=2;") == 0);
	T_ASSERT("parse: UTF-8 BOM skipped",
		 parse_str(&k, "\xef\xbb\xbf" "A=1\n") == ORGW_OK &&
			 strcmp(k.buf, "A=1;") == 0);
	T_ASSERT("parse: BOM elsewhere is not skipped",
		 parse_str(&k, "A=1\n\xef\xbb\xbf" "B=2\n") == ORGW_EINVAL &&
			 strncmp(err, "line 2: ", 8) == 0);
	T_ASSERT("parse: no '=' is line 2",
		 parse_str(&k, "A=1\nnoequals\n") == ORGW_EINVAL &&
			 strncmp(err, "line 2: ", 8) == 0 &&
			 strstr(err, "'='") != NULL);
	T_ASSERT("parse: pairs before the error were delivered", k.n == 1);
	T_ASSERT("parse: lowercase name refused",
		 parse_str(&k, "\n\nhit_rate=1\n") == ORGW_EINVAL &&
			 strncmp(err, "line 3: ", 8) == 0 &&
			 strstr(err, "invalid name") != NULL);
	T_ASSERT("parse: name starting with digit refused",
		 parse_str(&k, "1A=1") == ORGW_EINVAL &&
			 strncmp(err, "line 1: ", 8) == 0);
	T_ASSERT("parse: name with dash refused",
		 parse_str(&k, "A-B=1") == ORGW_EINVAL);
	T_ASSERT("parse: no name refused",
		 parse_str(&k, "  = 1") == ORGW_EINVAL &&
			 strstr(err, "line 1: no name") != NULL);
	T_ASSERT("parse: exportA is a (bad) name, not export",
		 parse_str(&k, "exportA=1") == ORGW_EINVAL);
	T_ASSERT("parse: 'export' alone is not a name",
		 parse_str(&k, "export=1") == ORGW_EINVAL);
	T_ASSERT("parse: unterminated quote refused",
		 parse_str(&k, "A=1\nB=\"abc\n") == ORGW_EINVAL &&
			 strstr(err, "line 2: B: unterminated") != NULL);
	T_ASSERT("parse: lone quote refused",
		 parse_str(&k, "B=\"") == ORGW_EINVAL);
	T_ASSERT("parse: NUL byte refused with its line",
		 parse(&k, nul_text, sizeof(nul_text) - 1) == ORGW_EINVAL &&
			 strcmp(err, "line 2: contains a NUL byte") == 0);
	T_ASSERT("parse: bad line never quotes a key",
		 parse_str(&k, "sk-or-v1-SECRET\n") == ORGW_EINVAL &&
			 strstr(err, "SECRET") == NULL);
	T_ASSERT("parse: bad name never quoted",
		 parse_str(&k, "sk-or-v1-SECRET=x\n") == ORGW_EINVAL &&
			 strstr(err, "SECRET") == NULL);
	k.stop_at = 2;
	k.err = err;
	k.errlen = sizeof(err);
	T_ASSERT("parse: callback stop value returned",
		 parse_str(&k, "A=1\n#\nB=2\nC=3\n") == 7 && k.n == 2);
	T_ASSERT("parse: callback message gets its line",
		 strcmp(err, "line 3: B: stop") == 0);
	k.err = NULL;
	T_ASSERT("parse: callback without message leaves err empty",
		 parse_str(&k, "A=1\nB=2\n") == 7 && err[0] == '\0');
	k.stop_at = 0;
	T_ASSERT("parse: NULL callback refused",
		 conf_parse_text("A=1", 3, NULL, NULL, err, sizeof(err)) ==
			 ORGW_EINVAL);
	T_ASSERT("parse: NULL err is fine",
		 conf_parse_text("x", 1, collect_fn, &k, NULL, 0) ==
			 ORGW_EINVAL);
}

/* conf_parse_text() + conf_set(), as the fuzzer and confload.c do. */
static int
apply_fn(void *arg, const char *name, const char *value)
{
	return (int)conf_set(arg, name, value, err, sizeof(err));
}

static void
test_parse_apply(void)
{
	static const char text[] = "# orgw.conf\n"
				   "export HIT_RATE=0.75\r\n"
				   "TARGET_MODEL=\"a/b, c/d\"\n"
				   "UNRELATED=whatever\n"
				   "CACHE_BONUS=1.5\n";
	struct orgw_conf c;

	(void)conf_init(&c);
	T_ASSERT("apply: file text ok",
		 conf_parse_text(text, sizeof(text) - 1, apply_fn, &c, err,
				 sizeof(err)) == ORGW_OK);
	T_ASSERT("apply: values set", T_NEAR(c.hit_rate, 0.75) &&
					      T_NEAR(c.cache_bonus, 1.5) &&
					      c.n_target_models == 2);
	T_ASSERT("apply: bad value names line and setting",
		 conf_parse_text("\nHIT_RATE=1.5\n", 14, apply_fn, &c, err,
				 sizeof(err)) == ORGW_EINVAL &&
			 strncmp(err, "line 2: HIT_RATE: ", 18) == 0);
	T_ASSERT("apply: secret in file never echoed",
		 conf_parse_text("OPENROUTER_API_KEY=\"sk-or SECRET\"\n", 34,
				 apply_fn, &c, err, sizeof(err)) ==
				 ORGW_EINVAL &&
			 strstr(err, "line 1: OPENROUTER_API_KEY") != NULL &&
			 strstr(err, "SECRET") == NULL);
	conf_free(&c);
}

/* ---- conf_load(): environment, files, NAME_FILE ---- */

static char tmp_paths[48][64];
static size_t n_tmp;

/* The test is single-threaded, so the mt-unsafe calls are fine here. */
_Noreturn static void
die(const char *what)
{
	perror(what);
	exit(2);	/* NOLINT(concurrency-mt-unsafe) */
}

static void
env_set(const char *name, const char *value)
{
	if (setenv(name, value, 1) == -1) /* NOLINT(concurrency-mt-unsafe) */
		die(name);
}

static void
env_unset(const char *name)
{
	if (unsetenv(name) == -1) /* NOLINT(concurrency-mt-unsafe) */
		die(name);
}

static void
env_clear(void)
{
	size_t i;

	for (i = 0; i < NNAMES; i++)
		env_unset(all_names[i]);
	env_unset("OPENROUTER_API_KEY_FILE");
	env_unset("CUSTOM_ACCESS_KEY_FILE");
	env_unset("METRICS_KEY_FILE");
	env_unset("KEYS_SECRET_FILE");
	env_unset("ORGW_CONFIG");
}

/* Writes text into a new temp file with the given mode; returns its path. */
static const char *
tmp_file(const char *text, size_t len, mode_t mode)
{
	char *path;
	int fd;

	if (n_tmp == sizeof(tmp_paths) / sizeof(tmp_paths[0])) {
		errno = ENOSPC;
		die("tmp_paths");
	}
	path = tmp_paths[n_tmp++];
	(void)snprintf(path, sizeof(tmp_paths[0]), "/tmp/test_conf.XXXXXX");
	if ((fd = mkstemp(path)) == -1)
		die("mkstemp");
	if (write(fd, text, len) != (ssize_t)len || fchmod(fd, mode) == -1 ||
	    close(fd) == -1)
		die(path);
	return path;
}

static const char *
tmp_text(const char *text, mode_t mode)
{
	return tmp_file(text, strlen(text), mode);
}

/* stderr capture, for the warnings of conf_load(). */
static int saved_stderr = -1;
static char cap_path[64];

static void
cap_begin(void)
{
	int fd;

	(void)snprintf(cap_path, sizeof(cap_path), "/tmp/test_conf.XXXXXX");
	if ((fd = mkstemp(cap_path)) == -1 || (saved_stderr = dup(2)) == -1 ||
	    dup2(fd, 2) == -1 || close(fd) == -1)
		die("capture");
}

static void
cap_end(char *out, size_t size)
{
	ssize_t n;
	int fd;

	(void)fflush(stderr);
	if (dup2(saved_stderr, 2) == -1 || close(saved_stderr) == -1 ||
	    (fd = open(cap_path, O_RDONLY)) == -1)
		die("capture");
	n = read(fd, out, size - 1);
	out[n > 0 ? n : 0] = '\0';
	(void)close(fd);
	(void)unlink(cap_path);
}

static enum orgw_err
load(struct orgw_conf *c, const char *path)
{
	(void)conf_init(c);
	return conf_load(c, path, err, sizeof(err));
}

static void
test_load(void)
{
	struct orgw_conf c;
	const char *cfg, *keyf, *keyf2, *empty;
	char out[1024], *big;
	size_t i;

	env_clear();
	T_ASSERT("load: nothing set gives defaults",
		 load(&c, NULL) == ORGW_OK && c.fail_limit == 3 &&
			 c.openrouter_api_key == NULL);
	conf_free(&c);
	env_set("ORGW_CONFIG", "");
	T_ASSERT("load: empty ORGW_CONFIG means no file",
		 load(&c, NULL) == ORGW_OK);
	conf_free(&c);

	cfg = tmp_text("# test\nHIT_RATE=0.5\nFAIL_LIMIT=7\n"
		       "TARGET_MODEL=a/b\n",
		       0600);
	env_set("ORGW_CONFIG", cfg);
	env_set("FAIL_LIMIT", "9");
	T_ASSERT("load: file via ORGW_CONFIG", load(&c, NULL) == ORGW_OK &&
						       T_NEAR(c.hit_rate, 0.5));
	T_ASSERT("load: environment beats file", c.fail_limit == 9);
	T_ASSERT("load: file value kept", c.n_target_models == 1);
	conf_free(&c);
	env_set("TARGET_MODEL", "");
	T_ASSERT("load: empty env value is a value (clears models)",
		 load(&c, NULL) == ORGW_OK && c.n_target_models == 0);
	conf_free(&c);
	env_unset("TARGET_MODEL");
	env_unset("FAIL_LIMIT");

	T_ASSERT("load: explicit path beats ORGW_CONFIG",
		 load(&c, "/nonexistent/orgw.conf") == ORGW_EINVAL &&
			 strstr(err, "/nonexistent/orgw.conf") != NULL &&
			 strstr(err, "No such file") != NULL);
	conf_free(&c);
	env_clear();
	env_set("ORGW_CONFIG", "/nonexistent/x.conf");
	T_ASSERT("load: missing ORGW_CONFIG file is an error",
		 load(&c, NULL) == ORGW_EINVAL &&
			 strstr(err, "/nonexistent/x.conf") != NULL);
	conf_free(&c);
	env_clear();
	T_ASSERT("load: directory is an error",
		 load(&c, "/tmp") == ORGW_EINVAL &&
			 strstr(err, "/tmp") != NULL);
	conf_free(&c);

	/* Relative paths in the file are the file's directory's;
	 * in the environment they stay as given. */
	cfg = tmp_text("STATE_PATH=state/s.gdbm\nUPSTREAM_CA_FILE=ca.crt\n"
		       "UPSTREAM_URL=http://h\n", 0600);
	T_ASSERT("load: relative STATE_PATH is beside the config file",
		 load(&c, cfg) == ORGW_OK &&
			 strcmp(c.state_path, "/tmp/state/s.gdbm") == 0);
	T_ASSERT("load: relative UPSTREAM_CA_FILE is beside the config file",
		 strcmp(c.upstream_ca_file, "/tmp/ca.crt") == 0);
	conf_free(&c);
	cfg = tmp_text("STATE_PATH=/abs/s.gdbm\n", 0600);
	env_set("UPSTREAM_CA_FILE", "rel/ca.crt");
	T_ASSERT("load: absolute file path and relative env path kept",
		 load(&c, cfg) == ORGW_OK &&
			 strcmp(c.state_path, "/abs/s.gdbm") == 0 &&
			 strcmp(c.upstream_ca_file, "rel/ca.crt") == 0);
	conf_free(&c);
	env_clear();

	cfg = tmp_text("FAIL_LIMIT=2\n\nHIT_RATE=1.5\n", 0600);
	T_ASSERT("load: bad file value names path, line, setting",
		 load(&c, cfg) == ORGW_EINVAL && strncmp(err, cfg,
							 strlen(cfg)) == 0 &&
			 strstr(err, ": line 3: HIT_RATE: \"1.5\"") != NULL);
	conf_free(&c);
	cfg = tmp_text("HIT_RATE 0.5\n", 0600);
	T_ASSERT("load: malformed file line",
		 load(&c, cfg) == ORGW_EINVAL &&
			 strstr(err, ": line 1: expected") != NULL);
	conf_free(&c);
	env_set("MAX_ATTEMPTS", "0");
	T_ASSERT("load: bad env value names environment and setting",
		 load(&c, NULL) == ORGW_EINVAL &&
			 strstr(err, "environment: MAX_ATTEMPTS") != NULL);
	conf_free(&c);
	env_clear();

	/* NAME_FILE secrets */
	keyf = tmp_text("sk-from-file\r\nsecond line\n", 0600);
	env_set("OPENROUTER_API_KEY_FILE", keyf);
	T_ASSERT("load: OPENROUTER_API_KEY_FILE first line, CRLF stripped",
		 load(&c, NULL) == ORGW_OK && c.openrouter_api_key != NULL &&
			 strcmp(c.openrouter_api_key, "sk-from-file") == 0);
	conf_free(&c);
	env_set("OPENROUTER_API_KEY", "sk-direct");
	T_ASSERT("load: direct env key beats _FILE",
		 load(&c, NULL) == ORGW_OK &&
			 strcmp(c.openrouter_api_key, "sk-direct") == 0);
	conf_free(&c);
	env_clear();
	cfg = tmp_text("OPENROUTER_API_KEY=sk-in-file\n", 0600);
	env_set("OPENROUTER_API_KEY_FILE", "/nonexistent/key");
	T_ASSERT("load: direct key in file beats _FILE in env (not read)",
		 load(&c, cfg) == ORGW_OK &&
			 strcmp(c.openrouter_api_key, "sk-in-file") == 0);
	conf_free(&c);
	env_clear();
	keyf2 = tmp_text("client-key-2", 0600);
	cfg = tmp_file("CUSTOM_ACCESS_KEY_FILE=/nonexistent/k\n", 38, 0600);
	env_set("CUSTOM_ACCESS_KEY_FILE", keyf2);
	T_ASSERT("load: _FILE in env beats _FILE in file; no newline ok",
		 load(&c, cfg) == ORGW_OK && c.custom_access_key != NULL &&
			 strcmp(c.custom_access_key, "client-key-2") == 0);
	conf_free(&c);
	env_clear();
	T_ASSERT("load: _FILE from the config file, missing, is an error",
		 load(&c, cfg) == ORGW_EINVAL &&
			 strstr(err, "CUSTOM_ACCESS_KEY_FILE") != NULL &&
			 strstr(err, "/nonexistent/k") == NULL);
	conf_free(&c);
	env_clear();
	keyf2 = tmp_text("metrics-key-from-file\n", 0600);
	env_set("METRICS_KEY_FILE", keyf2);
	T_ASSERT("load: METRICS_KEY_FILE first line",
		 load(&c, NULL) == ORGW_OK && c.metrics_key != NULL &&
			 strcmp(c.metrics_key, "metrics-key-from-file") == 0);
	conf_free(&c);
	env_set("METRICS_KEY", "metrics-direct");
	T_ASSERT("load: direct METRICS_KEY beats METRICS_KEY_FILE",
		 load(&c, NULL) == ORGW_OK &&
			 strcmp(c.metrics_key, "metrics-direct") == 0);
	conf_free(&c);
	env_clear();
	/* A key given by mistake as the value of a *_FILE setting is never
	 * echoed: the message names the setting only. */
	env_set("OPENROUTER_API_KEY_FILE", "sk-or-v1-SECRET-as-path");
	T_ASSERT("load: a key given as *_FILE: refused, not echoed",
		 load(&c, NULL) == ORGW_EINVAL &&
			 strstr(err, "OPENROUTER_API_KEY_FILE") != NULL &&
			 strstr(err, "SECRET") == NULL);
	conf_free(&c);
	env_clear();
	empty = tmp_text("\nsk-second-line\n", 0600);
	env_set("CUSTOM_ACCESS_KEY_FILE", empty);
	T_ASSERT("load: empty first line refused",
		 load(&c, NULL) == ORGW_EINVAL &&
			 strstr(err, "CUSTOM_ACCESS_KEY is empty") != NULL &&
			 strstr(err, "second") == NULL);
	conf_free(&c);
	env_clear();
	keyf = tmp_text("sk-SECRET with space\n", 0600);
	env_set("OPENROUTER_API_KEY_FILE", keyf);
	T_ASSERT("load: bad key from file refused, not echoed",
		 load(&c, NULL) == ORGW_EINVAL &&
			 strstr(err, "OPENROUTER_API_KEY_FILE") != NULL &&
			 strstr(err, keyf) == NULL &&
			 strstr(err, "SECRET") == NULL);
	conf_free(&c);
	env_clear();
	env_set("OPENROUTER_API_KEY", "");
	T_ASSERT("load: empty key in env refused",
		 load(&c, NULL) == ORGW_EINVAL &&
			 strstr(err, "an empty key is not a key") != NULL);
	conf_free(&c);
	env_clear();

	/* Permission warning */
	cfg = tmp_text("OPENROUTER_API_KEY=sk-SECRET-perm\n", 0644);
	cap_begin();
	T_ASSERT("load: world-readable file with key loads",
		 load(&c, cfg) == ORGW_OK);
	cap_end(out, sizeof(out));
	T_ASSERT("load: ... and warns naming the file",
		 strstr(out, "warning") != NULL && strstr(out, cfg) != NULL &&
			 strstr(out, "chmod 600") != NULL);
	T_ASSERT("load: warning never shows the key",
		 strstr(out, "SECRET") == NULL);
	conf_free(&c);
	cfg = tmp_text("OPENROUTER_API_KEY=sk-SECRET-perm\n", 0600);
	cap_begin();
	T_ASSERT("load: mode 600 file loads", load(&c, cfg) == ORGW_OK);
	cap_end(out, sizeof(out));
	T_ASSERT("load: mode 600 file: no warning", out[0] == '\0');
	conf_free(&c);
	cfg = tmp_text("HIT_RATE=0.5\nHITRATE=0.4\n", 0644);
	cap_begin();
	T_ASSERT("load: unknown name in file loads",
		 load(&c, cfg) == ORGW_OK);
	cap_end(out, sizeof(out));
	T_ASSERT("load: unknown name warned, no key warning",
		 strstr(out, "unknown setting HITRATE") != NULL &&
			 strstr(out, "chmod") == NULL);
	conf_free(&c);

	/* Size cap */
	if ((big = malloc(MIB + 2)) == NULL)
		die("malloc");
	memset(big, '#', MIB + 1);
	big[MIB + 1] = '\0';
	cfg = tmp_file(big, MIB + 1, 0600);
	T_ASSERT("load: file over 1 MiB refused",
		 load(&c, cfg) == ORGW_EINVAL &&
			 strstr(err, "larger than") != NULL);
	conf_free(&c);
	big[MIB - 1] = '\n';
	cfg = tmp_file(big, MIB, 0600);
	T_ASSERT("load: file of exactly 1 MiB ok", load(&c, cfg) == ORGW_OK);
	conf_free(&c);
	free(big);

	/* Every setting through the environment (catches a name missing
	 * from confload.c's list). */
	{
		static const char *const vals[] = {
			"sk-env", "ck-env", "http://127.0.0.1:9/v1", "/tmp/s",
			"m/one", "0.25", "3", "50", "1000", "2000", "30000",
			"7000", "5", "60", "120", "1,1", "2", "4096", "0660",
			"2000", "131072", "67108864", "7", "30", "5000", "700", "0.3", "mk-env", "/tmp/ca.crt",
			"9", "77", "600", "redis", "redis://127.0.0.1:6380/2",
			"rp-env", "x=y/z", "/tmp/k.gdbm", "ks-env-0123456789",
			"900", "45", "0", "120", "50",
		};

		for (i = 0; i < NNAMES; i++)
			env_set(all_names[i], vals[i]);
		T_ASSERT("load: every setting from env",
			 load(&c, NULL) == ORGW_OK);
		T_ASSERT("load: env values all applied",
			 strcmp(c.openrouter_api_key, "sk-env") == 0 &&
				 strcmp(c.custom_access_key, "ck-env") == 0 &&
				 strcmp(c.upstream_url,
					"http://127.0.0.1:9/v1") == 0 &&
				 strcmp(c.state_path, "/tmp/s") == 0 &&
				 strcmp(c.upstream_ca_file, "/tmp/ca.crt") == 0 &&
				 c.n_target_models == 1 &&
				 T_NEAR(c.hit_rate, 0.25) &&
				 T_NEAR(c.cache_bonus, 3) &&
				 T_NEAR(c.min_uptime, 50) &&
				 c.slow_threshold_ms == 1000 &&
				 c.upstream_timeout_ms == 2000 &&
				 c.request_timeout_ms == 30000 &&
				 c.client_send_timeout_ms == 7000 &&
				 c.conversation_idle_seconds == 900 &&
				 c.pressure_seconds == 45 &&
				 c.auto_cache == 0 &&
				 c.cache_ttl_seconds == 120 &&
				 c.max_conversations == 50 &&
				 c.fail_limit == 5 &&
				 c.cooldown_seconds == 60 &&
				 c.lock_idle_seconds == 120 &&
				 c.n_retry_429_delays == 2 &&
				 c.max_attempts == 2 &&
				 c.max_body_bytes == 4096 &&
				 c.max_json_nodes == 2000 &&
				 c.max_answer_bytes == 131072 &&
				 c.host_parse_memory_bytes == 67108864 &&
				 c.state_mode == 0660 && c.max_models == 7 &&
				 c.cron_min_interval_seconds == 30 &&
				 c.hit_rate_half_life_tokens == 5000 &&
				 c.hit_rate_evidence_tokens == 700 &&
				 T_NEAR(c.lock_margin, 0.3) &&
				 strcmp(c.metrics_key, "mk-env") == 0 &&
				 c.worker_threads == 9 &&
				 c.worker_max_requests == 77 &&
				 c.worker_max_age_seconds == 600 &&
				 c.state_backend == CONF_BACKEND_REDIS &&
				 strcmp(c.redis_url,
					"redis://127.0.0.1:6380/2") == 0 &&
				 strcmp(c.redis_password, "rp-env") == 0 &&
				 c.n_model_aliases == 1 &&
				 strcmp(conf_alias(&c, "x"), "y/z") == 0 &&
				 strcmp(c.keys_path, "/tmp/k.gdbm") == 0 &&
				 strcmp(c.keys_secret, "ks-env-0123456789") == 0);
		conf_free(&c);
	}
	env_clear();
	for (i = 0; i < n_tmp; i++)
		(void)unlink(tmp_paths[i]);
}

/* The team keys' settings: KEYS_SECRET a secret like the other keys
 * (with a _FILE form and a shortest length), KEYS_PATH derived from
 * STATE_PATH and never sharing its files. */
static void
test_team_keys(void)
{
	static const char *const clash[][2] = {
		{"/v/state.gdbm", "/v/state.gdbm"},
		{"/v/state.gdbm", "/v/state.gdbm.twin"},
		{"/v/state.gdbm", "/v/state.gdbm.lock"},
		{"/v/keys.gdbm.twin", "/v/keys.gdbm"},
	};
	struct orgw_conf c;
	const char *f, *cfg;
	char what[128];
	size_t i, first_tmp = n_tmp;

	(void)conf_init(&c);
	T_ASSERT("KEYS_SECRET short refused, not echoed",
		 set_bad(&c, "KEYS_SECRET", "SECRETshort", "KEYS_SECRET",
			 "shorter than 16") &&
			 strstr(err, "SECRETshort") == NULL);
	T_ASSERT("KEYS_SECRET with space refused, not echoed",
		 set_bad(&c, "KEYS_SECRET", "SECRET-0123456789 x", "space",
			 NULL) &&
			 strstr(err, "SECRET-") == NULL);
	T_ASSERT("KEYS_SECRET empty refused",
		 set_bad(&c, "KEYS_SECRET", "", "is empty", NULL));
	T_ASSERT("KEYS_SECRET of 16 taken",
		 set_ok(&c, "KEYS_SECRET", "0123456789abcdef") &&
			 strcmp(c.keys_secret, "0123456789abcdef") == 0);
	T_ASSERT("KEYS_PATH empty refused",
		 set_bad(&c, "KEYS_PATH", "", "KEYS_PATH", "empty"));
	T_ASSERT("KEYS_PATH is a path setting", conf_is_path("KEYS_PATH"));
	T_ASSERT("settle: KEYS_PATH beside STATE_PATH",
		 conf_settle(&c, err, sizeof(err)) == ORGW_OK &&
			 strcmp(c.keys_path, "/var/lib/orgw/keys.gdbm") == 0);
	T_ASSERT("settle: a set KEYS_PATH kept",
		 set_ok(&c, "KEYS_PATH", "/k/team.gdbm") &&
			 conf_settle(&c, err, sizeof(err)) == ORGW_OK &&
			 strcmp(c.keys_path, "/k/team.gdbm") == 0);
	conf_free(&c);
	T_ASSERT("conf_free resets the keys' settings",
		 c.keys_path == NULL && c.keys_secret == NULL);
	(void)conf_init(&c);
	T_ASSERT("settle: STATE_PATH without a directory",
		 set_ok(&c, "STATE_PATH", "state.gdbm") &&
			 conf_settle(&c, err, sizeof(err)) == ORGW_OK &&
			 strcmp(c.keys_path, "keys.gdbm") == 0);
	conf_free(&c);
	(void)conf_init(&c);
	T_ASSERT("settle: STATE_PATH keys.gdbm itself refused",
		 set_ok(&c, "STATE_PATH", "/v/keys.gdbm") &&
			 conf_settle(&c, err, sizeof(err)) == ORGW_EINVAL &&
			 strstr(err, "share files") != NULL);
	conf_free(&c);
	for (i = 0; i < sizeof(clash) / sizeof(clash[0]); i++) {
		(void)conf_init(&c);
		(void)snprintf(what, sizeof(what),
			       "settle: STATE_PATH %s, KEYS_PATH %s refused",
			       clash[i][0], clash[i][1]);
		T_ASSERT(what, set_ok(&c, "STATE_PATH", clash[i][0]) &&
				       set_ok(&c, "KEYS_PATH", clash[i][1]) &&
				       conf_settle(&c, err, sizeof(err)) ==
					       ORGW_EINVAL);
		conf_free(&c);
	}
	(void)conf_init(&c);
	T_ASSERT("settle: state.gdbm and state.gdbm2 do not clash",
		 set_ok(&c, "STATE_PATH", "/v/state.gdbm") &&
			 set_ok(&c, "KEYS_PATH", "/v/state.gdbm2") &&
			 conf_settle(&c, err, sizeof(err)) == ORGW_OK);
	conf_free(&c);

	env_clear();
	f = tmp_text("keys-secret-from-file-0123\nsecond line\n", 0600);
	env_set("KEYS_SECRET_FILE", f);
	T_ASSERT("load: KEYS_SECRET_FILE first line",
		 load(&c, NULL) == ORGW_OK && c.keys_secret != NULL &&
			 strcmp(c.keys_secret, "keys-secret-from-file-0123") ==
				 0);
	T_ASSERT("load: KEYS_PATH derived from STATE_PATH",
		 c.keys_path != NULL &&
			 strcmp(c.keys_path, "/var/lib/orgw/keys.gdbm") == 0);
	conf_free(&c);
	env_set("KEYS_SECRET", "keys-secret-direct-0123");
	T_ASSERT("load: direct KEYS_SECRET beats KEYS_SECRET_FILE",
		 load(&c, NULL) == ORGW_OK &&
			 strcmp(c.keys_secret, "keys-secret-direct-0123") == 0);
	conf_free(&c);
	env_clear();
	f = tmp_text("short\n", 0600);
	env_set("KEYS_SECRET_FILE", f);
	T_ASSERT("load: KEYS_SECRET_FILE too short refused, not echoed",
		 load(&c, NULL) == ORGW_EINVAL &&
			 strstr(err, "KEYS_SECRET_FILE") != NULL &&
			 strstr(err, "short\n") == NULL);
	conf_free(&c);
	env_clear();
	cfg = tmp_text("STATE_PATH=st/state.gdbm\n", 0600);
	T_ASSERT("load: relative STATE_PATH in the file: keys beside it",
		 load(&c, cfg) == ORGW_OK &&
			 strcmp(c.keys_path, "/tmp/st/keys.gdbm") == 0);
	conf_free(&c);
	cfg = tmp_text("KEYS_PATH=k/keys.gdbm\n", 0600);
	T_ASSERT("load: relative KEYS_PATH in the file from its directory",
		 load(&c, cfg) == ORGW_OK &&
			 strcmp(c.keys_path, "/tmp/k/keys.gdbm") == 0);
	conf_free(&c);
	env_set("STATE_PATH", "/v/s.gdbm");
	env_set("KEYS_PATH", "/v/s.gdbm.lock");
	T_ASSERT("load: KEYS_PATH on the state's lock refused",
		 load(&c, NULL) == ORGW_EINVAL &&
			 strstr(err, "KEYS_PATH") != NULL);
	conf_free(&c);
	env_clear();
	for (i = first_tmp; i < n_tmp; i++)
		(void)unlink(tmp_paths[i]);
}

/* MODEL_ALIASES: from=to pairs of model ids, refused whole when one is
 * wrong. */
static void
test_aliases(void)
{
	struct orgw_conf c;

	(void)conf_init(&c);
	T_ASSERT("MODEL_ALIASES empty by default",
		 c.n_model_aliases == 0 && conf_alias(&c, "a/b") == NULL);
	T_ASSERT("MODEL_ALIASES two pairs, trimmed, empties skipped",
		 set_ok(&c, "MODEL_ALIASES",
			" claude-sonnet-4-5-20250929 = anthropic/claude-sonnet-4.5"
			",,claude-haiku-4-5=anthropic/claude-haiku-4.5 ") &&
			 c.n_model_aliases == 2 &&
			 strcmp(conf_alias(&c, "claude-sonnet-4-5-20250929"),
				"anthropic/claude-sonnet-4.5") == 0 &&
			 strcmp(conf_alias(&c, "claude-haiku-4-5"),
				"anthropic/claude-haiku-4.5") == 0 &&
			 conf_alias(&c, "anthropic/claude-sonnet-4.5") == NULL);
	T_ASSERT("MODEL_ALIASES without '=' refused",
		 set_bad(&c, "MODEL_ALIASES", "a/b", "MODEL_ALIASES",
			 "not from=to"));
	T_ASSERT("MODEL_ALIASES with a bad id refused",
		 set_bad(&c, "MODEL_ALIASES", "a/b=c d", "MODEL_ALIASES",
			 "not a model id"));
	T_ASSERT("MODEL_ALIASES empty side refused",
		 set_bad(&c, "MODEL_ALIASES", "a/b=", "MODEL_ALIASES",
			 "not a model id"));
	T_ASSERT("MODEL_ALIASES to itself refused",
		 set_bad(&c, "MODEL_ALIASES", "a/b=a/b", "maps to itself",
			 NULL));
	T_ASSERT("MODEL_ALIASES a from twice refused",
		 set_bad(&c, "MODEL_ALIASES", "a=b/c,a=d/e", "given twice",
			 NULL));
	T_ASSERT("refused MODEL_ALIASES keeps the old list",
		 c.n_model_aliases == 2 &&
			 conf_alias(&c, "claude-haiku-4-5") != NULL);
	T_ASSERT("MODEL_ALIASES \"\" clears",
		 set_ok(&c, "MODEL_ALIASES", "") && c.n_model_aliases == 0 &&
			 conf_alias(&c, "claude-haiku-4-5") == NULL);
	conf_free(&c);
}

int
main(void)
{
	test_defaults();
	test_doubles();
	test_integers();
	test_state_mode();
	test_delays();
	test_models();
	test_aliases();
	test_strings();
	test_keys();
	test_parse();
	test_parse_apply();
	test_load();
	test_team_keys();
	return T_REPORT();
}
