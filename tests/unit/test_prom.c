/*
 * test_prom.c - the Prometheus text format of GET /metrics (prom.c):
 * escaping (a table and a seeded random round trip), numbers, buckets,
 * and a whole document from a fixed state tree.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "t.h"
#include "buf.h"
#include "prom.h"

static char *
esc(const char *v, bool label)
{
	static struct buf b;

	buf_reset(&b);
	if ((label ? prom_escape_label(&b, v) : prom_escape_help(&b, v)) !=
		    ORGW_OK ||
	    buf_add(&b, "", 0) != ORGW_OK)
		return NULL;
	return b.p;
}

/* Reads an escaped label value back as Prometheus's parser does (\\,
 * \" and \n; any other byte as is).  False on a bare " or a lone \. */
static bool
unescape(const char *s, size_t len, char *dst)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++) {
		if (s[i] == '"' || s[i] == '\n')
			return false;
		if (s[i] != '\\') {
			dst[n++] = s[i];
			continue;
		}
		if (++i == len)
			return false;
		if (s[i] == 'n')
			dst[n++] = '\n';
		else if (s[i] == '\\' || s[i] == '"')
			dst[n++] = s[i];
		else
			return false;
	}
	dst[n] = '\0';
	return true;
}

static void
test_escape(void)
{
	static const struct {
		const char *in, *label, *help;
	} rows[] = {
		{"", "", ""},
		{"plain/model-1.5:free", "plain/model-1.5:free",
		 "plain/model-1.5:free"},
		{"a\"b", "a\\\"b", "a\"b"},
		{"a\\b", "a\\\\b", "a\\\\b"},
		{"a\nb", "a\\nb", "a\\nb"},
		{"\\\"\n", "\\\\\\\"\\n", "\\\\\"\\n"},
		{"\\n", "\\\\n", "\\\\n"},
		{"tab\there\r", "tab\there\r", "tab\there\r"},
		{"\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9"},
		{"{}=,", "{}=,", "{}=,"},
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char what[96];
		const char *got = esc(rows[i].in, true);

		snprintf(what, sizeof(what), "escape label row %zu", i);
		T_ASSERT(what, got != NULL && strcmp(got, rows[i].label) == 0);
		got = esc(rows[i].in, false);
		snprintf(what, sizeof(what), "escape help row %zu", i);
		T_ASSERT(what, got != NULL && strcmp(got, rows[i].help) == 0);
	}
	T_ASSERT("escape NULL is empty", strcmp(esc(NULL, true), "") == 0);
}

/* Random strings over the bytes that matter, and all others: escaping
 * then parsing gives the string back, and no bare " or line feed is
 * left to end the value early. */
static void
test_escape_random(void)
{
	static const char special[] = "\\\"n\n";
	unsigned long x = 20261201;
	char in[64], back[64];
	int round, bad = 0;
	size_t len, i;

	for (round = 0; round < 20000; round++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		len = (size_t)(x >> 58);
		for (i = 0; i < len; i++) {
			x = x * 6364136223846793005UL + 1442695040888963407UL;
			in[i] = (x >> 40) % 3 ?
					special[(x >> 33) % 4] :
					(char)(1 + (x >> 45) % 255);
		}
		in[len] = '\0';
		const char *e = esc(in, true);
		if (e == NULL || !unescape(e, strlen(e), back) ||
		    strcmp(back, in) != 0)
			bad++;
	}
	T_ASSERT("escape label: 20000 random strings round-trip", bad == 0);
}

static void
test_number(void)
{
	static const struct {
		double v;
		const char *want;
	} rows[] = {
		{0, "0"},
		{1, "1"},
		{-3, "-3"},
		{0.25, "0.25"},
		{0.1, "0.1"},
		{1234567890123.0, "1234567890123"},
		{9007199254740993.0, "9007199254740992"},
		{0.000123, "0.000123"},
		{1e300, "1e+300"},
		{-0.0042, "-0.0042"},
	};
	char b[64];
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char what[96];

		prom_number(b, sizeof(b), rows[i].v);
		snprintf(what, sizeof(what), "number %s (got %s)",
			 rows[i].want, b);
		T_ASSERT(what, strcmp(b, rows[i].want) == 0);
	}
	prom_number(b, sizeof(b), INFINITY);
	T_ASSERT("number +Inf", strcmp(b, "+Inf") == 0);
	prom_number(b, sizeof(b), -INFINITY);
	T_ASSERT("number -Inf", strcmp(b, "-Inf") == 0);
	prom_number(b, sizeof(b), NAN);
	T_ASSERT("number NaN", strcmp(b, "NaN") == 0);
	prom_number(b, sizeof(b), 0.1 + 0.2);
	T_ASSERT("number round-trips (0.1+0.2)",
		 strtod(b, NULL) == 0.1 + 0.2);
}

static void
test_buckets(void)
{
	size_t i;
	bool up = true;

	for (i = 1; i < LAT_N_BUCKETS; i++)
		up = up && lat_bucket_ms[i] > lat_bucket_ms[i - 1];
	T_ASSERT("buckets rise", up);
	T_ASSERT("buckets 0.25 s to 600 s",
		 lat_bucket_ms[0] == 250 &&
			 lat_bucket_ms[LAT_N_BUCKETS - 1] == 600000);
	T_ASSERT("slot: 0 ms in the first", lat_bucket_slot(0) == 0);
	T_ASSERT("slot: the bound itself is in (le)",
		 lat_bucket_slot(250) == 0 && lat_bucket_slot(251) == 1);
	T_ASSERT("slot: 60 s", lat_bucket_slot(60000) == 8);
	T_ASSERT("slot: over 600 s is +Inf",
		 lat_bucket_slot(600001) == LAT_N_BUCKETS);
}

static const char *fixture =
	"{\"m/a\\\"q\":{"
	"\"stats\":{\"by_provider\":{\"p1\":{\"spend_usd\":0.5,"
	"\"saved_usd\":-0.25},\"p0\":{\"requests\":1}},"
	"\"by_api\":{\"messages\":{\"requests\":4,\"ok\":3,\"tokens\":{"
	"\"prompt\":100,\"cached\":90,\"cache_write\":6,\"completion\":5},"
	"\"cost_usd\":0.5},\"chat\":{\"requests\":1}}},"
	"\"metrics\":{\"providers\":{\"p1\":{\"requests\":{\"ok\":3,"
	"\"429\":1},\"tokens\":{\"input\":100,\"cache_read\":90,"
	"\"output\":5},\"breaker_trips\":2}},"
	"\"ttfb\":{\"buckets\":[1,0,2,0,0,0,0,0,0,0,0,0,1],"
	"\"sum_ms\":1500,\"count\":4},\"lock_changes\":1,"
	"\"breaks\":{\"moved\":2}},"
	"\"cooling\":1},"
	"\"idle\":{}}";

static void
test_render(void)
{
	cJSON *m = cJSON_Parse(fixture);
	struct buf b = {0};
	const char *want[] = {
		"# HELP orgw_requests_total ",
		"# TYPE orgw_requests_total counter\n",
		"\norgw_requests_total{model=\"m/a\\\"q\",provider=\"p1\","
		"outcome=\"ok\"} 3\n",
		"outcome=\"429\"} 1\n",
		"orgw_tokens_total{model=\"m/a\\\"q\",provider=\"p1\","
		"type=\"cache_read\"} 90\n",
		"# TYPE orgw_spend_usd_total counter\n",
		"orgw_spend_usd_total{model=\"m/a\\\"q\",provider=\"p1\"} "
		"0.5\n",
		"# TYPE orgw_cache_savings_usd gauge\n",
		"orgw_cache_savings_usd{model=\"m/a\\\"q\",provider=\"p1\"} "
		"-0.25\n",
		"# TYPE orgw_time_to_first_token_seconds histogram\n",
		"orgw_time_to_first_token_seconds_bucket{model=\"m/a\\\"q\","
		"le=\"0.25\"} 1\n",
		"le=\"0.5\"} 1\n",
		"le=\"1\"} 3\n",
		"le=\"600\"} 3\n",
		"le=\"+Inf\"} 4\n",
		"orgw_time_to_first_token_seconds_sum{model=\"m/a\\\"q\"} "
		"1.5\n",
		"orgw_time_to_first_token_seconds_count{model=\"m/a\\\"q\"} "
		"4\n",
		"# TYPE orgw_request_duration_seconds histogram\n",
		"orgw_breaker_trips_total{model=\"m/a\\\"q\",provider=\"p1\"} "
		"2\n",
		"# TYPE orgw_api_requests_total counter\n",
		"orgw_api_requests_total{model=\"m/a\\\"q\",api=\"messages\"} "
		"4\n",
		"orgw_api_requests_total{model=\"m/a\\\"q\",api=\"chat\"} 1\n",
		"orgw_api_tokens_total{model=\"m/a\\\"q\",api=\"messages\","
		"type=\"cache_write\"} 6\n",
		"orgw_api_tokens_total{model=\"m/a\\\"q\",api=\"messages\","
		"type=\"output\"} 5\n",
		"orgw_api_spend_usd_total{model=\"m/a\\\"q\",api=\"messages\"} "
		"0.5\n",
		"orgw_cooldowns_active{model=\"m/a\\\"q\"} 1\n",
		"orgw_cooldowns_active{model=\"idle\"} 0\n",
		"orgw_lock_changes_total{model=\"m/a\\\"q\"} 1\n",
		"orgw_lock_changes_total{model=\"idle\"} 0\n",
		"# TYPE orgw_cache_breaks_total counter\n",
		"orgw_cache_breaks_total{model=\"m/a\\\"q\",cause=\"moved\"} "
		"2\n",
		"orgw_cache_breaks_total{model=\"m/a\\\"q\","
		"cause=\"prefix_changed\"} 0\n",
		"orgw_cache_breaks_total{model=\"idle\",cause=\"expired\"} 0\n",
		"# TYPE orgw_requests_in_flight gauge\n"
		"orgw_requests_in_flight 7\n",
		"# TYPE orgw_state_lost_updates_total counter\n"
		"orgw_state_lost_updates_total 3\n",
	};
	size_t i;
	int helps = 0;
	const char *p;

	T_ASSERT("render: ok",
		 m != NULL && prom_render(&b, m, 7, 3) == ORGW_OK && b.p != NULL);
	for (i = 0; b.p != NULL && i < sizeof(want) / sizeof(want[0]); i++) {
		char what[160];

		char *nl;

		snprintf(what, sizeof(what), "render has %.100s", want[i]);
		while ((nl = strchr(what, '\n')) != NULL)
			*nl = ' ';
		T_ASSERT(what, strstr(b.p, want[i]) != NULL);
	}
	for (p = b.p; p != NULL && (p = strstr(p, "# HELP ")) != NULL; p++)
		helps++;
	T_ASSERT("render: nineteen families with HELP", helps == 19);
	T_ASSERT("render: an API without tokens has no token sample",
		 b.p && strstr(b.p, "api=\"chat\",type=") == NULL);
	T_ASSERT("render: a provider without money has no spend",
		 b.p && strstr(b.p, "provider=\"p0\"") == NULL);
	T_ASSERT("render: no duration sample without a record",
		 b.p && strstr(b.p, "orgw_request_duration_seconds_") == NULL);
	T_ASSERT("render: ends with a line feed",
		 b.p && b.len > 0 && b.p[b.len - 1] == '\n');
	buf_reset(&b);
	T_ASSERT("render: in_flight -1 leaves the gauge out",
		 prom_render(&b, m, -1, 0) == ORGW_OK &&
			 strstr(b.p, "in_flight") == NULL &&
			 strstr(b.p, "orgw_state_lost_updates_total 0\n"));
	buf_reset(&b);
	T_ASSERT("render: lost_updates -1 leaves the counter out",
		 prom_render(&b, m, 1, -1) == ORGW_OK &&
			 strstr(b.p, "lost_updates") == NULL);
	buf_reset(&b);
	T_ASSERT("render: no models, only HELP and TYPE",
		 prom_render(&b, NULL, -1, -1) == ORGW_OK &&
			 strstr(b.p, "{") == NULL);
	buf_free(&b);
	b.max = 64;
	T_ASSERT("render: a full buffer is an error",
		 prom_render(&b, m, 1, 0) != ORGW_OK);
	buf_free(&b);
	cJSON_Delete(m);
}

/* The team keys' series, from the /stats "keys" object. */
static void
test_render_keys(void)
{
	const char *text =
		"{\"alice\":{\"remaining_usd_day\":0.25,"
		"\"remaining_usd_month\":null,\"month\":{\"requests\":3,"
		"\"prompt_tokens\":30,\"cached_tokens\":10,"
		"\"completion_tokens\":9,\"reasoning_tokens\":6,"
		"\"spend_usd\":0.5,"
		"\"saved_usd\":0.125,\"refused_rpm\":1,"
		"\"refused_concurrent\":2,\"refused_budget\":4,"
		"\"refused_model\":0}}}";
	cJSON *keys = cJSON_Parse(text), *none = cJSON_CreateObject();
	struct buf out = {0};
	const char *p;

	T_ASSERT("keys: rendered",
		 keys != NULL && prom_render_keys(&out, keys) == ORGW_OK &&
			 out.p != NULL);
	p = out.p ? out.p : "";
	T_ASSERT("keys: requests by key",
		 strstr(p, "orgw_key_requests_total{key=\"alice\"} 3\n") !=
			 NULL);
	T_ASSERT("keys: tokens by type",
		 strstr(p, "orgw_key_tokens_total{key=\"alice\",type=\"input\"} "
			   "30\n") != NULL &&
			 strstr(p, "orgw_key_tokens_total{key=\"alice\",type="
				   "\"cache_read\"} 10\n") != NULL &&
			 strstr(p, "orgw_key_tokens_total{key=\"alice\",type="
				   "\"output\"} 9\n") != NULL &&
			 strstr(p, "orgw_key_tokens_total{key=\"alice\",type="
				   "\"reasoning\"} 6\n") != NULL);
	T_ASSERT("keys: spend and savings",
		 strstr(p, "orgw_key_spend_usd_total{key=\"alice\"} 0.5\n") !=
				 NULL &&
			 strstr(p, "orgw_key_savings_usd_total{key=\"alice\"} "
				   "0.125\n") != NULL);
	T_ASSERT("keys: refusals by reason",
		 strstr(p, "orgw_key_refused_total{key=\"alice\",reason="
			   "\"budget\"} 4\n") != NULL &&
			 strstr(p, "orgw_key_refused_total{key=\"alice\",reason="
				   "\"concurrent\"} 2\n") != NULL);
	T_ASSERT("keys: a budget's remainder, none without a budget",
		 strstr(p, "orgw_key_budget_remaining_usd{key=\"alice\","
			   "window=\"day\"} 0.25\n") != NULL &&
			 strstr(p, "window=\"month\"") == NULL);
	T_ASSERT("keys: not crossed with model or provider",
		 strstr(p, "model=") == NULL && strstr(p, "provider=") == NULL);
	buf_free(&out);
	T_ASSERT("keys: no keys, no series",
		 prom_render_keys(&out, none) == ORGW_OK && out.len == 0);
	buf_free(&out);
	cJSON_Delete(keys);
	cJSON_Delete(none);
}

int
main(void)
{
	test_escape();
	test_escape_random();
	test_number();
	test_buckets();
	test_render();
	test_render_keys();
	return T_REPORT();
}
