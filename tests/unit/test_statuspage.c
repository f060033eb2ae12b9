/*
 * test_statuspage.c - unit tests for the /status page (statuspage.c,
 * statuspage_*.c) and its login (statuslogin.c): every section renders
 * from a /stats tree, strings from the state are escaped (hostile model
 * and provider names), the cookie token is derived from the key and never
 * holds it, expires, and rejects tampering; the form parser decodes what
 * browsers send; LOCK_LOG keeps the last RECORD_LOCK_LOG_MAX changes; the
 * ledger days keep prompt and cached tokens; the Keys table shows every
 * token and refusal row a key counts.
 */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "t.h"
#include "ledger.h"
#include "record.h"
#include "statuslogin.h"
#include "statuspage.h"

#define NOW 1764590400 /* 2025-12-01 12:00:00 UTC */
#define HOSTILE "<script>alert(1)</script>\"'&x"

static const char stats_doc[] =
	"{\"generated_at\":1764590400,\"models\":{"
	"\"" "<img src=x onerror=alert(1)>" "\":{"
	"\"lock\":{\"tag\":\"fast\",\"provider_name\":\"Fast<b>Co</b>\","
	"\"locked_at\":1764589800,\"last_used\":1764590300},"
	"\"candidates\":[{\"tag\":\"fast\",\"provider_name\":\"Fast<b>Co</b>\","
	"\"score\":123.456,\"throughput\":87,\"has_throughput\":true,"
	"\"prompt\":0.000003,\"completion\":0.000004,\"cache_read\":3e-7,"
	"\"effective_input\":0.0000012,\"uptime\":99.5,\"hit_rate\":0.8123,"
	"\"hit_source\":\"measured\",\"hit_tokens\":45678},"
	"{\"tag\":\"" "x\\\"><script>y</script>" "\",\"provider_name\":\"S\","
	"\"score\":50,\"hit_rate\":0.5,\"hit_source\":\"assumed\","
	"\"hit_tokens\":0}],"
	"\"scored_at\":1764586800,\"requests\":7,\"ok\":6,"
	"\"cache_hit_rate\":0.75,\"spend_usd\":0.0123456,\"saved_usd\":0.0065432,"
	"\"failures\":{\"fast\":1,\"slow\":2},"
	"\"cooldowns\":{\"slow\":{\"until\":1764594000,\"reason\":\"5xx<i>\"}},"
	"\"days\":{\"2025-11-30\":{\"fast\":{\"spend_usd\":0.002,\"saved_usd\":"
	"0.001,\"uncached_usd\":0.003,\"requests\":3,\"prompt_tokens\":1000,"
	"\"cached_tokens\":400}},\"2025-12-01\":{\"fast\":{\"spend_usd\":0.004,"
	"\"saved_usd\":0.002,\"uncached_usd\":0.006,\"requests\":4,"
	"\"prompt_tokens\":2000,\"cached_tokens\":1500}},"
	"\"1999-01-01\":{\"fast\":{\"requests\":99}}},"
	"\"lock_changes\":[{\"at\":1764589000,\"from\":\"\",\"to\":\"slow\","
	"\"reason\":\"no lock\"},{\"at\":1764589800,\"from\":\"slow\","
	"\"to\":\"fast\",\"reason\":\"breaker: 5xx&<\"}]}}}";

static int
has(const char *h, const char *s)
{
	return strstr(h, s) != NULL;
}

static void
test_page(void)
{
	cJSON *j = cJSON_Parse(stats_doc);
	struct statuspage_opts o = {NOW, 600};
	size_t len = 0;
	char *h;

	T_ASSERT("fixture parses", j != NULL);
	h = statuspage_html(j, &o, &len);
	T_ASSERT("page built", h != NULL && len == strlen(h));
	if (h == NULL) {
		cJSON_Delete(j);
		return;
	}
	T_ASSERT("a doctype and a refresh, no script element",
		 has(h, "<!DOCTYPE html>") &&
			 has(h, "http-equiv=\"refresh\" content=\"30\"") &&
			 !has(h, "<script"));
	T_ASSERT("the hostile model name is escaped",
		 !has(h, "<img") &&
			 has(h, "&lt;img src=x onerror=alert(1)&gt;"));
	T_ASSERT("the hostile provider name is escaped",
		 !has(h, "<b>Co") && has(h, "Fast&lt;b&gt;Co&lt;/b&gt; (fast)"));
	T_ASSERT("a hostile tag cannot leave its attribute or cell",
		 has(h, "x&quot;&gt;&lt;script&gt;y&lt;/script&gt;"));
	T_ASSERT("cooldown reason and lock change reason escaped",
		 has(h, "5xx&lt;i&gt;") && has(h, "breaker: 5xx&amp;&lt;"));
	T_ASSERT("lock since and expiry (last_used + LOCK_IDLE_SECONDS)",
		 has(h, "2025-12-01 11:50:00 UTC (10 min)") &&
			 has(h, "2025-12-01 12:08:20 UTC (in 8 min)"));
	T_ASSERT("every score term of a candidate",
		 has(h, ">123.5<") && has(h, ">87<") && has(h, ">3<") &&
			 has(h, ">4<") && has(h, ">0.3<") && has(h, ">1.2<") &&
			 has(h, ">81.2%<") && has(h, ">measured<") &&
			 has(h, ">45678<") && has(h, ">99.5<"));
	T_ASSERT("an assumed rate is labelled so",
		 has(h, ">assumed<") && has(h, ">50.0%<"));
	T_ASSERT("cells carry their column for narrow screens",
		 has(h, "data-label=\"hit source\""));
	T_ASSERT("breaker: cooling provider with until and reason",
		 has(h, "2025-12-01 13:00:00 (in 60 min)") &&
			 has(h, "data-label=\"consecutive failures\" "
				"class=\"n\">2<"));
	T_ASSERT("hit rate per day from prompt and cached tokens",
		 has(h, ">40.0%<") && has(h, ">75.0%<") &&
			 has(h, "<polyline"));
	T_ASSERT("spend and savings per day: table and bars",
		 has(h, ">0.004000<") && has(h, ">0.006000<") &&
			 has(h, "<rect fill=\"#2ca02c\""));
	T_ASSERT("days older than 30 are not drawn", !has(h, "1999-01-01"));
	T_ASSERT("lock changes newest first, (none) for no lock",
		 strstr(h, "breaker: 5xx") < strstr(h, ">no lock<") &&
			 has(h, ">(none)<"));
	T_ASSERT("totals in the summary", has(h, ">0.012346<") &&
						  has(h, ">0.006543<") &&
						  has(h, "$0.012346"));
	free(h);
	cJSON_Delete(j);

	j = cJSON_Parse("{\"models\":{},\"state_error\":\"busy<\"}");
	h = statuspage_html(j, &o, &len);
	T_ASSERT("no models: a page saying so, the state error escaped",
		 h != NULL && has(h, "no model seen yet") &&
			 has(h, "busy&lt;"));
	free(h);
	cJSON_Delete(j);
	h = statuspage_html(NULL, &o, &len);
	T_ASSERT("no tree at all still renders", h != NULL);
	free(h);
}

static void
test_login(void)
{
	size_t len = 0;
	char *h = statuspage_login_html(HOSTILE, &len);

	T_ASSERT("login form: password field posted, no action URL",
		 h != NULL && has(h, "<form method=\"post\">") &&
			 has(h, "name=\"key\"") &&
			 has(h, "type=\"password\"") && !has(h, "action="));
	T_ASSERT("login message escaped",
		 h != NULL && !has(h, "<script>") &&
			 has(h, "&lt;script&gt;alert(1)&lt;/script&gt;"
				"&quot;&#39;&amp;x"));
	free(h);
}

static void
test_token(void)
{
	char tok[STATUSLOGIN_TOKEN_MAX], ck[256], other[STATUSLOGIN_TOKEN_MAX];
	const char *key = "client-test-key";

	T_ASSERT("token made",
		 statuslogin_token(key, NOW + 100, tok, sizeof(tok)) == ORGW_OK);
	T_ASSERT("token: expiry, dot, 64 hex digits",
		 strncmp(tok, "1764590500.", 11) == 0 && strlen(tok) == 75);
	T_ASSERT("the token does not hold the key", !has(tok, key));
	snprintf(ck, sizeof(ck), "a=b; orgw_status=%s; c=d", tok);
	T_ASSERT("cookie accepted before expiry",
		 statuslogin_cookie_ok(ck, key, NOW));
	T_ASSERT("cookie refused at and after expiry",
		 !statuslogin_cookie_ok(ck, key, NOW + 100) &&
			 !statuslogin_cookie_ok(ck, key, NOW + 1000));
	T_ASSERT("cookie refused under another key",
		 !statuslogin_cookie_ok(ck, "client-test-kez", NOW));
	snprintf(ck, sizeof(ck), "orgw_status=1764599999.%s",
		 strchr(tok, '.') + 1);
	T_ASSERT("a later expiry with the old MAC is refused",
		 !statuslogin_cookie_ok(ck, key, NOW));
	/* A properly MAC'd token for an expiry far ahead (a key that
	 * leaked once, a token made with it) must not log in for ever. */
	T_ASSERT("token far ahead made",
		 statuslogin_token(key, 99999999999LL, other, sizeof(other)) ==
			 ORGW_OK);
	snprintf(ck, sizeof(ck), "orgw_status=%s", other);
	T_ASSERT("a valid MAC for an expiry far past the lifetime is refused",
		 !statuslogin_cookie_ok(ck, key, NOW));
	T_ASSERT("token at the lifetime and skew made",
		 statuslogin_token(key,
				   NOW + STATUSLOGIN_TTL_SECONDS +
					  STATUSLOGIN_SKEW_SECONDS,
				   other, sizeof(other)) == ORGW_OK);
	snprintf(ck, sizeof(ck), "orgw_status=%s", other);
	T_ASSERT("... one at the lifetime (plus the clock skew) is accepted",
		 statuslogin_cookie_ok(ck, key, NOW));
	T_ASSERT("... and refused one second earlier",
		 !statuslogin_cookie_ok(ck, key, NOW - 1));
	snprintf(ck, sizeof(ck), "orgw_status=%s", tok);
	ck[strlen(ck) - 1] ^= 1;
	T_ASSERT("a flipped MAC digit is refused",
		 !statuslogin_cookie_ok(ck, key, NOW));
	snprintf(ck, sizeof(ck), "orgw_status=%s", key);
	T_ASSERT("the key itself as cookie is refused",
		 !statuslogin_cookie_ok(ck, key, NOW));
	T_ASSERT("no cookie, empty key, garbage refused",
		 !statuslogin_cookie_ok(NULL, key, NOW) &&
			 !statuslogin_cookie_ok("orgw_status=", key, NOW) &&
			 !statuslogin_cookie_ok("orgw_status=.abc", key, NOW) &&
			 !statuslogin_cookie_ok("orgw_status=-5.ab", key, NOW) &&
			 !statuslogin_cookie_ok(ck, "", NOW));
	statuslogin_token("another-key", NOW + 100, other, sizeof(other));
	T_ASSERT("tokens depend on the key", strcmp(tok, other) != 0);
	T_ASSERT("small buffer refused",
		 statuslogin_token(key, NOW, tok, 10) == ORGW_EINVAL);
	T_ASSERT("key_eq: equal, prefix, longer, empty",
		 statuslogin_key_eq(key, key) &&
			 !statuslogin_key_eq("client-test-ke", key) &&
			 !statuslogin_key_eq("client-test-key2", key) &&
			 !statuslogin_key_eq("", "") &&
			 !statuslogin_key_eq(NULL, key));
}

static void
test_form(void)
{
	const char *b = "x=1&key=a+b%2Fc%25%3D&logout=";
	char v[32];

	T_ASSERT("form: decoded value",
		 statuslogin_form_get(b, strlen(b), "key", v, sizeof(v)) &&
			 strcmp(v, "a b/c%=") == 0);
	T_ASSERT("form: empty value present",
		 statuslogin_form_get(b, strlen(b), "logout", v, sizeof(v)) &&
			 v[0] == '\0');
	T_ASSERT("form: absent field, prefix of a name",
		 !statuslogin_form_get(b, strlen(b), "ke", v, sizeof(v)) &&
			 !statuslogin_form_get(b, strlen(b), "y", v, sizeof(v)));
	T_ASSERT("form: bad and cut %-escapes, NUL refused",
		 !statuslogin_form_get("key=%zz", 7, "key", v, sizeof(v)) &&
			 !statuslogin_form_get("key=ab%4", 8, "key", v,
					       sizeof(v)) &&
			 !statuslogin_form_get("key=%00", 7, "key", v,
					       sizeof(v)));
	T_ASSERT("form: a value too long is refused",
		 !statuslogin_form_get("key=0123456789", 14, "key", v, 5));
	T_ASSERT("form: only len bytes are read",
		 statuslogin_form_get("key=abcdef", 7, "key", v, sizeof(v)) &&
			 strcmp(v, "abc") == 0);
}

static void
test_lock_log(void)
{
	char *t = NULL, *n;
	cJSON *j, *arr;
	int i;

	for (i = 0; i < RECORD_LOCK_LOG_MAX + 5; i++) {
		n = record_lock_log_add(t, 1000 + i, i ? "a" : "", "b",
					"idle");
		record_free(t);
		t = n;
	}
	j = cJSON_Parse(t);
	arr = cJSON_GetObjectItemCaseSensitive(j, "changes");
	T_ASSERT("lock log keeps the last RECORD_LOCK_LOG_MAX, oldest first",
		 cJSON_GetArraySize(arr) == RECORD_LOCK_LOG_MAX &&
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
				 cJSON_GetArrayItem(arr, 0), "at")) == 1005 &&
			 strcmp(cJSON_GetStringValue(
					cJSON_GetObjectItemCaseSensitive(
						cJSON_GetArrayItem(
							arr,
							RECORD_LOCK_LOG_MAX - 1),
						"reason")),
				"idle") == 0);
	T_ASSERT("lock log carries v", t != NULL && has(t, "\"v\":1"));
	cJSON_Delete(j);
	record_free(t);
	t = record_lock_log_add("{\"changes\":7}", 5, "x", "", "operator");
	T_ASSERT("a damaged log starts again",
		 t != NULL && has(t, "\"from\":\"x\",\"to\":\"\""));
	record_free(t);
}

static void
test_days_tokens(void)
{
	struct stats_delta d;
	cJSON *j, *day;
	char dn[11];

	memset(&d, 0, sizeof(d));
	d.requests = d.ok = 1;
	d.prompt_tokens = 1000;
	d.cached_tokens = 600;
	d.cost_usd = 0.001;
	d.usage = true;
	d.now = NOW;
	d.money_tag = "fast";
	d.uncached_usd = 0.002;
	d.ttfb_ms = d.total_ms = -1;
	{
		struct ledger_key_parts p;
		struct ledger_cell a, b;

		memset(&p, 0, sizeof(p));
		record_day(NOW, p.day);
		snprintf(p.model, sizeof(p.model), "m");
		snprintf(p.api, sizeof(p.api), "chat");
		snprintf(p.tag, sizeof(p.tag), "fast");
		ledger_from_delta(&a, &d);
		d.prompt_tokens = 500;
		d.cached_tokens = 100;
		ledger_from_delta(&b, &d);
		j = cJSON_CreateObject();
		if (!ledger_render_cell(j, NULL, &p, &a, NOW) ||
		    !ledger_render_cell(j, NULL, &p, &b, NOW) ||
		    !ledger_render_finish(j, NOW)) {
			cJSON_Delete(j);
			j = NULL;
		}
	}
	record_day(NOW, dn);
	day = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(j, "days"), dn),
		"fast");
	T_ASSERT("days keep prompt and cached tokens per provider",
		 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
			 day, "prompt_tokens")) == 1500 &&
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
				 day, "cached_tokens")) == 700);
	cJSON_Delete(j);
}

/* The Keys table: its tokens and refusals are every row of the ledger
 * with a team name of that kind, reasoning included. */
static void
test_keys_table(void)
{
	const char *doc =
		"{\"generated_at\":1764590400,\"models\":{},\"keys\":{"
		"\"alice\":{\"state\":\"active\",\"models\":[\"*\"],"
		"\"budget_usd_day\":null,\"budget_usd_month\":null,"
		"\"last_used\":1764590000,\"today\":{\"spend_usd\":0.25},"
		"\"month\":{\"requests\":3,\"prompt_tokens\":30,"
		"\"cached_tokens\":10,\"completion_tokens\":9,"
		"\"reasoning_tokens\":6,\"spend_usd\":0.5,"
		"\"saved_usd\":0.125,\"refused_rpm\":1,"
		"\"refused_concurrent\":2,\"refused_budget\":4,"
		"\"refused_model\":0}}}}";
	cJSON *j = cJSON_Parse(doc);
	struct statuspage_opts o = {NOW, 600};
	size_t len = 0;
	char *h = j ? statuspage_html(j, &o, &len) : NULL;

	T_ASSERT("keys: rendered", h != NULL);
	h = h ? h : calloc(1, 1);
	T_ASSERT("keys: the tokens, reasoning included",
		 has(h, "<th>prompt / cached / completion / reasoning "
			"tokens</th>") &&
			 has(h, ">30 / 10 / 9 / 6</td>"));
	T_ASSERT("keys: the refusals by reason",
		 has(h, "<th>refused rpm / concurrent / budget / model</th>") &&
			 has(h, ">1 / 2 / 4 / 0</td>"));
	free(h);
	cJSON_Delete(j);
}

int
main(void)
{
	test_page();
	test_keys_table();
	test_login();
	test_token();
	test_form();
	test_lock_log();
	test_days_tokens();
	return T_REPORT();
}
