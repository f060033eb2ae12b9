/*
 * test_convlist.c - the conversations' list: the rows (the newest,
 * bounded), their JSON shape and words, the per-model counts and the
 * pressure, and what /status and /metrics make of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "buf.h"
#include "convcache.h"
#include "convlist.h"
#include "prom.h"
#include "record.h"
#include "statuspage.h"
#include "t.h"

#define NOW 2000000000LL

/* A CONV: value: its routing record and a cache record with nb breaks
 * of cause c (prefix_changed at 0 in a system block). */
static char *
conv_val(const char *show, const char *tag, int64_t last, bool spread,
	 enum convcache_cause c, size_t nb)
{
	struct rec_conv r;
	struct convcache cc;
	cJSON *o = cJSON_CreateObject();
	char *t;
	size_t i;

	memset(&r, 0, sizeof(r));
	snprintf(r.model, sizeof(r.model), "m");
	snprintf(r.tag, sizeof(r.tag), "%s", tag);
	snprintf(r.show, sizeof(r.show), "%s", show);
	snprintf(r.api, sizeof(r.api), "messages");
	r.first_seen = last - 100;
	r.last_turn = last;
	r.turns = 6;
	r.spread = spread;
	convcache_init(&cc);
	cc.turns = 6;
	cc.first_seen = last - 100;
	cc.last_seen = last;
	cc.prompt_tokens = 1000;
	cc.cached_tokens = 750;
	cc.cache_write_tokens = 200;
	cc.cost = 0.5;
	cc.saved = 0.25;
	snprintf(cc.provider, sizeof(cc.provider), "%s", tag);
	for (i = 0; i < nb && i < CONVCACHE_BREAKS; i++) {
		struct convcache_break *b = &cc.breaks[i];

		memset(b, 0, sizeof(*b));
		b->turn = (int64_t)i + 3;
		b->cause = c;
		b->at = c == CONVCACHE_PREFIX_CHANGED ? 0 : -1;
		if (c == CONVCACHE_PREFIX_CHANGED)
			snprintf(b->unit, sizeof(b->unit), "system");
		b->expected_tokens = 900;
		b->cached_tokens = 10;
		snprintf(b->provider, sizeof(b->provider), "%s", tag);
		snprintf(b->from, sizeof(b->from), "prov-x");
	}
	cc.nbreaks = nb;
	cc.breaks_total = (int64_t)nb;
	if (o == NULL || !convcache_encode(&cc, o))
		return NULL;
	t = record_conv_encode(&r, o);
	cJSON_Delete(o);
	return t;
}

/* key parsed as /stats parses the state's keys, then given to l. */
static bool
take(struct convlist *l, const char *key, const char *val)
{
	struct statekey_parts p;

	return statekeys_parse(key, &p) && convlist_add(l, &p, val);
}

static void
add(struct convlist *l, const char *key, char *val)
{
	T_ASSERT("a CONV: or PRESSURE: key is taken",
		 val != NULL && take(l, key, val));
	record_free(val);
}

static struct convlist *
new_list(size_t rows)
{
	struct convlist_opts o = {NOW, 600, 300, rows};

	return convlist_new(&o);
}

static void
test_rows(void)
{
	struct convlist *l = new_list(CONVLIST_ROWS);
	cJSON *root = cJSON_CreateObject(), *models, *rows, *r, *b;
	char key[96], show[16];
	int i, j, n;
	bool ordered = true;

	models = cJSON_AddObjectToObject(root, "models");
	/* 150 conversations, walked in no order of time. */
	for (i = 0; i < 150; i++) {
		j = (i * 7) % 150;
		snprintf(key, sizeof(key), "CONV:m:%064d", j);
		snprintf(show, sizeof(show), "s%011d", j);
		add(l, key, conv_val(show, "prov-a", NOW - 1000 + j, false,
				     CONVCACHE_PREFIX_CHANGED, 1));
	}
	T_ASSERT("other keys are left to the caller",
		 !take(l, "BEST_PROVIDER:m", "{}") &&
			 !take(l, "CONVERSATION", "{}"));
	T_ASSERT("a damaged value is taken and skipped",
		 take(l, "CONV:m:abc", "not json") &&
			 take(l, "PRESSURE:m:", "{}"));
	T_ASSERT("render", convlist_render(l, root, models));
	rows = cJSON_GetObjectItemCaseSensitive(root, "conversations");
	n = cJSON_GetArraySize(rows);
	T_ASSERT("the 100 most recent of 150", n == CONVLIST_ROWS);
	for (i = 0; i < n; i++)
		if (cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
			    cJSON_GetArrayItem(rows, i), "last_seen")) !=
		    (double)(NOW - 1000 + 149 - i))
			ordered = false;
	T_ASSERT("newest first, the oldest 50 dropped", ordered);
	r = cJSON_GetArrayItem(rows, 0);
	{
		static const char *const keys[] = {
			"id", "model", "api", "provider", "turns",
			"first_seen", "last_seen", "prompt_tokens",
			"cached_tokens", "cache_write_tokens", "cost",
			"saved", "breaks"};
		static const char *const bkeys[] = {
			"turn", "cause", "at", "unit", "expected_tokens",
			"cached_tokens"};
		bool all = true;
		size_t k;

		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			all = all && cJSON_HasObjectItem(r, keys[k]);
		b = cJSON_GetArrayItem(
			cJSON_GetObjectItemCaseSensitive(r, "breaks"), 0);
		for (k = 0; k < sizeof(bkeys) / sizeof(bkeys[0]); k++)
			all = all && cJSON_HasObjectItem(b, bkeys[k]);
		T_ASSERT("a row and its break have every member", all);
	}
	T_ASSERT("the row's values",
		 strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
				r, "id")),
			"s00000000149") == 0 &&
			 strcmp(cJSON_GetStringValue(
					cJSON_GetObjectItemCaseSensitive(
						r, "api")),
				"messages") == 0 &&
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
				 r, "turns")) == 6 &&
			 T_NEAR(convlist_row_cached_share(r), 0.75));
	T_ASSERT("the break: cause, where, words",
		 strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
				b, "cause")),
			"prefix_changed") == 0 &&
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
				 b, "at")) == 0 &&
			 strcmp(convlist_row_last_words(r),
				"turn 3: the system prompt changed at block "
				"0") == 0);
	cJSON_Delete(root);
	convlist_free(l);
}

static void
test_models(void)
{
	struct convlist *l = new_list(CONVLIST_ROWS);
	cJSON *models = cJSON_CreateObject(), *cv, *pa, *pb, *pc;
	struct rec_pressure pr;

	add(l, "CONV:vendor/model:v1:h1",
	    conv_val("a", "prov-a", NOW - 10, false, CONVCACHE_MOVED, 2));
	add(l, "CONV:vendor/model:v1:h2",
	    conv_val("b", "prov-a", NOW - 599, true,
		     CONVCACHE_PROVIDER_MISS, 1));
	add(l, "CONV:vendor/model:v1:h3",
	    conv_val("c", "prov-b", NOW - 601, true, CONVCACHE_EXPIRED, 1));
	pr.until = NOW + 25;
	pr.n429 = 7;
	add(l, "PRESSURE:vendor/model:v1:prov-b",
	    record_pressure_encode(&pr));
	pr.until = NOW - 1;
	pr.n429 = 3;
	add(l, "PRESSURE:vendor/model:v1:prov-c",
	    record_pressure_encode(&pr));
	T_ASSERT("render without a list", convlist_render(l, NULL, models));
	cv = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(models, "vendor/model:v1"),
		"conversations");
	pa = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cv, "providers"), "prov-a");
	pb = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cv, "providers"), "prov-b");
	pc = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cv, "providers"), "prov-c");
	T_ASSERT("a model id holding ':' is split at the last one",
		 cv != NULL);
	T_ASSERT("active: last turn within CONVERSATION_IDLE_SECONDS",
		 cJSON_GetNumberValue(
			 cJSON_GetObjectItemCaseSensitive(cv, "active")) == 2 &&
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
				 pa, "active")) == 2 &&
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
				 pb, "active")) == 0);
	T_ASSERT("spread counted from the records' flag",
		 cJSON_GetNumberValue(
			 cJSON_GetObjectItemCaseSensitive(cv, "spread")) == 2);
	/* The ledger counts them (a record holds only its last ones and
	 * the sweep drops it): the records add no breaks by cause. */
	T_ASSERT("no breaks by cause from the records",
		 !cJSON_HasObjectItem(cv, "breaks"));
	T_ASSERT("under pressure until, with its 429s",
		 cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
			 pb, "under_pressure")) &&
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
				 pb, "pressure_until")) == (double)(NOW + 25) &&
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
				 pb, "provider_429s")) == 7);
	T_ASSERT("a pressure that ended: its 429s, no until",
		 cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(
			 pc, "under_pressure")) &&
			 cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(
				 pc, "pressure_until")) &&
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
				 pc, "provider_429s")) == 3);
	{
		struct buf out = {0};
		T_ASSERT("prom renders",
			 prom_render(&out, models, -1, -1) == ORGW_OK &&
				 buf_adds(&out, "") == ORGW_OK);
		T_ASSERT("metrics: active per provider",
			 strstr(out.p, "orgw_conversations_active{model="
				       "\"vendor/model:v1\",provider="
				       "\"prov-a\"} 2\n") != NULL);
		T_ASSERT("metrics: breaks per cause from the ledger only "
			 "(none counted: 0 for every cause, not the records' 2 "
			 "moved)",
			 strstr(out.p, "orgw_cache_breaks_total{model="
				       "\"vendor/model:v1\",cause=\"moved\"} "
				       "0\n") != NULL &&
				 strstr(out.p, "cause=\"prefix_changed\"} 0\n") &&
				 strstr(out.p, "cause=\"provider_miss\"} 0\n") &&
				 strstr(out.p, "cause=\"expired\"} 0\n"));
		T_ASSERT("metrics: pressure",
			 strstr(out.p, "orgw_provider_under_pressure{model="
				       "\"vendor/model:v1\",provider="
				       "\"prov-b\"} 1\n") != NULL &&
				 strstr(out.p, "provider=\"prov-c\"} 0\n"));
		buf_free(&out);
	}
	cJSON_Delete(models);
	convlist_free(l);
}

/* /stats: a model's "conversations" object made by the ledger (its
 * breaks by cause) is joined by the records' members, not doubled; a
 * model with breaks counted and no record gets the members at 0. */
static void
test_merge(void)
{
	struct convlist *l = new_list(CONVLIST_ROWS);
	cJSON *models = cJSON_Parse(
		"{\"x\":{\"requests\":3,\"conversations\":{\"breaks\":{"
		"\"moved\":5,\"prefix_changed\":1,\"expired\":0,"
		"\"provider_miss\":0}}},\"y\":{\"conversations\":{"
		"\"breaks\":{\"moved\":2}}}}");
	cJSON *x, *y, *it;
	int n = 0;

	add(l, "CONV:x:h1",
	    conv_val("a", "prov-a", NOW - 10, true, CONVCACHE_MOVED, 1));
	T_ASSERT("merge: render", models != NULL &&
					 convlist_render(l, NULL, models));
	x = cJSON_GetObjectItemCaseSensitive(models, "x");
	cJSON_ArrayForEach(it, x) n += strcmp(it->string, "conversations") == 0;
	x = cJSON_GetObjectItemCaseSensitive(x, "conversations");
	y = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(models, "y"), "conversations");
	T_ASSERT("merge: one conversations object, the ledger's breaks kept",
		 n == 1 &&
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
				 cJSON_GetObjectItemCaseSensitive(x, "breaks"),
				 "moved")) == 5);
	T_ASSERT("merge: ... with the records' members",
		 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
			 x, "active")) == 1 &&
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
				 x, "spread")) == 1 &&
			 cJSON_GetObjectItemCaseSensitive(
				 cJSON_GetObjectItemCaseSensitive(x, "providers"),
				 "prov-a") != NULL);
	T_ASSERT("merge: no record: the members at 0, the breaks kept",
		 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
			 y, "active")) == 0 &&
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
				 y, "spread")) == 0 &&
			 cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
				 y, "providers")) == 0 &&
			 cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(
				 y, "providers")) &&
			 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
				 cJSON_GetObjectItemCaseSensitive(y, "breaks"),
				 "moved")) == 2);
	cJSON_Delete(models);
	convlist_free(l);
}

/* The list's size is that of its rows, whatever the records walked. */
static size_t
rendered_size(int records)
{
	struct convlist *l = new_list(CONVLIST_ROWS);
	cJSON *root = cJSON_CreateObject(), *models;
	char key[96], show[16], *s;
	size_t n = 0;
	int i;

	models = cJSON_AddObjectToObject(root, "models");
	for (i = 0; i < records; i++) {
		snprintf(key, sizeof(key), "CONV:m:%064d", i);
		snprintf(show, sizeof(show), "s%011d", i);
		if (!take(l, key,
				  s = conv_val(show, "prov-a", NOW - 5000 + i,
					       false, CONVCACHE_EXPIRED, 8)))
			n = (size_t)-1;
		record_free(s);
	}
	if (convlist_render(l, root, models) &&
	    (s = cJSON_PrintUnformatted(
		     cJSON_GetObjectItemCaseSensitive(root, "conversations")))) {
		n = n == (size_t)-1 ? 0 : strlen(s);
		cJSON_free(s);
	}
	cJSON_Delete(root);
	convlist_free(l);
	return n;
}

static void
test_bounds(void)
{
	size_t a = rendered_size(1000), b = rendered_size(10000);
	struct convlist *l = new_list(3);
	cJSON *root = cJSON_CreateObject();
	int i;
	char key[32];

	T_ASSERT("the list of 10,000 records is the size of 1,000's",
		 a > 0 && a == b);
	for (i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "CONV:m:%d", i);
		add(l, key, conv_val("x", "p", NOW - i, false,
				     CONVCACHE_MOVED, 1));
	}
	T_ASSERT("at most max_rows rows",
		 convlist_render(l, root, NULL) == true &&
			 cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
				 root, "conversations")) == 3);
	cJSON_Delete(root);
	convlist_free(l);
}

static void
test_page(void)
{
	struct convlist *l = new_list(CONVLIST_ROWS);
	cJSON *root = cJSON_CreateObject(), *models;
	struct statuspage_opts o = {NOW, 1800};
	struct rec_pressure pr = {NOW + 25, 4};
	char *html;
	size_t len = 0;

	cJSON_AddNumberToObject(root, "generated_at", NOW);
	models = cJSON_AddObjectToObject(root, "models");
	add(l, "CONV:m:h1",
	    conv_val("<b>x", "prov-a", NOW - 5, false,
		     CONVCACHE_PREFIX_CHANGED, 1));
	add(l, "PRESSURE:m:prov-b", record_pressure_encode(&pr));
	T_ASSERT("render", convlist_render(l, root, models));
	html = statuspage_html(root, &o, &len);
	T_ASSERT("page: a Conversations section",
		 html != NULL && strstr(html, "<h2>Conversations</h2>"));
	T_ASSERT("page: the last break in words",
		 html != NULL &&
			 strstr(html, "turn 3: the system prompt changed at "
				      "block 0"));
	T_ASSERT("page: the shown id escaped",
		 html != NULL && strstr(html, "&lt;b&gt;x") &&
			 !strstr(html, "<b>x"));
	T_ASSERT("page: cached share and pressure",
		 html != NULL && strstr(html, "75.0%") &&
			 strstr(html, "no new conversations until"));
	free(html);
	cJSON_Delete(root);
	convlist_free(l);
}

int
main(void)
{
	test_rows();
	test_models();
	test_merge();
	test_bounds();
	test_page();
	return T_REPORT();
}
