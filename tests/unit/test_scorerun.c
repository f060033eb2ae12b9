/*
 * test_scorerun.c - the parts of scoring that need no network: the
 * endpoints URL and how an answer is judged (scorerun_url,
 * scorerun_answer, shared by the inline scorer and a run), the model
 * list (scorerun_add: validation, dedup), fetchmany_run's
 * option checks, and its bookkeeping (every item gets exactly one done()
 * call, whatever fails) driven by URLs curl refuses before any I/O,
 * and the state's upkeep on the in-memory state (state_upkeep.c): the
 * pruning (a model dropped past MAX_MODELS, or never seen, takes all its
 * keys with it and its ledger cells go to STATE_OTHER_MODEL), the
 * conversation sweep and the models a run lists.  The parallel fetches
 * themselves are tested against the double in
 * tests/integration/t0320-score-parallel.sh.
 */
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "conf.h"
#include "fetchmany.h"
#include "ledger.h"
#include "record.h"
#include "scorerun.h"
#include "state.h"
#include "store.h"
#include "store_mem.h"
#include "upstream.h"

#define NITEMS 7

struct seen {
	int calls[NITEMS];
	int ok, failed;
	bool body_seen;
};

static void
on_done(void *arg, size_t i, struct fetchmany_item *it)
{
	struct seen *s = arg;

	if (i < NITEMS)
		s->calls[i]++;
	if (it->err == ORGW_OK)
		s->ok++;
	else
		s->failed++;
	if (it->body != NULL)
		s->body_seen = true;
}

static void
test_add(void)
{
	struct scorerun_model *v = NULL;
	size_t n = 0;

	T_ASSERT("add a model", scorerun_add(&v, &n, "a/b") == ORGW_OK &&
				    n == 1 && strcmp(v[0].model, "a/b") == 0);
	T_ASSERT("add a second", scorerun_add(&v, &n, "c/d:free") == ORGW_OK &&
				     n == 2);
	T_ASSERT("a duplicate is dropped",
		 scorerun_add(&v, &n, "a/b") == ORGW_OK && n == 2);
	T_ASSERT("a blank is refused",
		 scorerun_add(&v, &n, "a b") == ORGW_EINVAL && n == 2);
	T_ASSERT("'..' is refused",
		 scorerun_add(&v, &n, "a/../b") == ORGW_EINVAL && n == 2);
	T_ASSERT("'%2F' is refused",
		 scorerun_add(&v, &n, "a%2Fb") == ORGW_EINVAL && n == 2);
	T_ASSERT("'?' is refused",
		 scorerun_add(&v, &n, "a/b?x=1") == ORGW_EINVAL && n == 2);
	T_ASSERT("an empty id is refused",
		 scorerun_add(&v, &n, "") == ORGW_EINVAL && n == 2);
	T_ASSERT("new entries are zeroed",
		 v[1].err == ORGW_OK && v[1].res.v == NULL && !v[1].saved);
	scorerun_free(v, n);
	free(v);
	scorerun_free(NULL, 0);
	T_ASSERT("scorerun_free(NULL, 0) is a no-op", true);
}

static void
test_options(void)
{
	struct fetchmany_item it[1];
	struct fetchmany_opts o;
	struct seen s;

	memset(&s, 0, sizeof(s));
	memset(it, 0, sizeof(it));
	it[0].url = "";
	memset(&o, 0, sizeof(o));
	o.parallel = 8;
	o.timeout_ms = 1000;
	o.max_bytes = 1024;
	o.done = on_done;
	o.arg = &s;
	T_ASSERT("n == 0 is fine and calls nothing",
		 fetchmany_run(NULL, 0, &o) == ORGW_OK && s.failed == 0);
	o.parallel = 0;
	T_ASSERT("parallel 0 is refused",
		 fetchmany_run(it, 1, &o) == ORGW_EINVAL);
	o.parallel = FETCHMANY_PARALLEL_MAX + 1;
	T_ASSERT("parallel above the max is refused",
		 fetchmany_run(it, 1, &o) == ORGW_EINVAL);
	o.parallel = 1;
	o.timeout_ms = 0;
	T_ASSERT("timeout 0 is refused",
		 fetchmany_run(it, 1, &o) == ORGW_EINVAL);
	o.timeout_ms = 1000;
	o.max_bytes = 0;
	T_ASSERT("max_bytes 0 is refused",
		 fetchmany_run(it, 1, &o) == ORGW_EINVAL);
	o.max_bytes = 1024;
	o.done = NULL;
	T_ASSERT("no done callback is refused",
		 fetchmany_run(it, 1, &o) == ORGW_EINVAL);
	T_ASSERT("a refused call made no done() call", s.failed == 0);
}

static void
test_bookkeeping(void)
{
	/* Each refused by curl before any I/O: no URL, a protocol outside
	 * http/https (file:// must never read a local file), bad syntax. */
	static const char *const urls[NITEMS] = {
		"", "file:///etc/passwd", "ftp://127.0.0.1/x",
		"gopher://127.0.0.1/", "dict://127.0.0.1/", "", "scp://x/y",
	};
	struct fetchmany_item it[NITEMS];
	struct fetchmany_opts o;
	struct seen s;
	size_t i;
	bool once = true, errs = true;

	memset(&s, 0, sizeof(s));
	memset(it, 0, sizeof(it));
	for (i = 0; i < NITEMS; i++)
		it[i].url = urls[i];
	memset(&o, 0, sizeof(o));
	o.key = "test-key";
	o.parallel = 2;
	o.timeout_ms = 2000;
	o.max_bytes = 1024;
	o.done = on_done;
	o.arg = &s;
	T_ASSERT("a run of refused URLs returns ORGW_OK",
		 fetchmany_run(it, NITEMS, &o) == ORGW_OK);
	for (i = 0; i < NITEMS; i++) {
		once = once && s.calls[i] == 1;
		errs = errs && it[i].err == ORGW_EUPSTREAM &&
		       it[i].error[0] != '\0' && it[i].status == 0 &&
		       it[i].body == NULL;
	}
	T_ASSERT("every item got exactly one done() call (parallel 2)", once);
	T_ASSERT("each failed with a reason and no status", errs);
	T_ASSERT("all 7 failed, none succeeded", s.failed == NITEMS && !s.ok);
	T_ASSERT("no body was ever handed out (file:// refused)",
		 !s.body_seen);
}

static void
test_url(void)
{
	struct orgw_conf c;
	char url[64];

	memset(&c, 0, sizeof(c));
	c.upstream_url = (char *)(uintptr_t)"http://h/api/v1";
	T_ASSERT("url: the model's '/' stays a path separator",
		 scorerun_url(&c, "a/b:free", url, sizeof(url)) &&
			 strcmp(url, "http://h/api/v1/models/a/b:free/"
				     "endpoints") == 0);
	T_ASSERT("url: exactly fitting is ok",
		 scorerun_url(&c, "a/b", url,
			      sizeof("http://h/api/v1/models/a/b/endpoints")));
	T_ASSERT("url: one byte short is refused",
		 !scorerun_url(&c, "a/b", url,
			       sizeof("http://h/api/v1/models/a/b/endpoints") -
				       1));
}

static void
test_answer(void)
{
	static const char BODY[] =
		"{\"data\":{\"id\":\"a/b\",\"endpoints\":[{\"tag\":\"t1\","
		"\"provider_name\":\"T1\",\"status\":0,"
		"\"uptime_last_30m\":100,\"pricing\":{\"prompt\":\"0.000001\","
		"\"completion\":\"0.000002\"}}]}}";
	static const struct score_params p = {0.8, 1.0, 95.0, 0, NULL, 0, NULL};
	struct score_result res;
	char err[64];

	err[0] = '\0';
	T_ASSERT("answer: HTTP 404 is a model OpenRouter does not know",
		 scorerun_answer(&p, 404, BODY, strlen(BODY), 1200, &res, err,
				 sizeof(err)) == ORGW_ENOENT &&
			 strcmp(err, "endpoints HTTP 404") == 0 &&
			 res.v == NULL);
	score_result_free(&res);
	T_ASSERT("answer: HTTP 500 is an upstream error",
		 scorerun_answer(&p, 500, BODY, strlen(BODY), 1200, &res, err,
				 sizeof(err)) == ORGW_EUPSTREAM &&
			 strcmp(err, "endpoints HTTP 500") == 0 &&
			 res.v == NULL);
	score_result_free(&res);
	T_ASSERT("answer: 200 with garbage is unreadable",
		 scorerun_answer(&p, 200, "{\"data\":", 8, 1200, &res, err,
				 sizeof(err)) == ORGW_EINVAL &&
			 strcmp(err, "endpoints response unreadable") == 0);
	score_result_free(&res);
	T_ASSERT("answer: 200 with endpoints is scored",
		 scorerun_answer(&p, 200, BODY, strlen(BODY), 1200, &res, err,
				 sizeof(err)) == ORGW_OK &&
			 res.n == 1 && strcmp(res.v[0].tag, "t1") == 0);
	score_result_free(&res);
}

static void
test_models_empty(void)
{
	T_ASSERT("scorerun_models of nothing fails nothing",
		 scorerun_models(NULL, NULL, 0, 8, 1000, true) == 0);
}

static void
mem_put(const struct orgw_conf *c, const char *key, const char *val)
{
	struct store *s;

	if (store_open(&s, c, true, 100) != ORGW_OK)
		return;
	(void)store_put(s, key, val);
	(void)store_close(s);
}

/* The value of key (malloc'd; NULL when absent). */
static char *
mem_get(const struct orgw_conf *c, const char *key)
{
	struct store *s;
	char *v = NULL;

	if (store_open(&s, c, false, 100) != ORGW_OK)
		return NULL;
	(void)store_get(s, key, &v);
	(void)store_close(s);
	return v;
}

/* Counter ix of a ledger cell (0 when absent). */
static double
mem_cell(const struct orgw_conf *c, const char *key, enum ledger_ix ix)
{
	struct ledger_cell cell;
	char *v = mem_get(c, key);

	(void)ledger_cell_decode(v, &cell);
	free(v);
	return cell.v[ix];
}

/* Every per-model key of model, and one request in a ledger cell of
 * day (cost 0.5 USD). */
static void
mem_model(const struct orgw_conf *c, const char *model, int64_t seen,
	  int64_t used, const char *day)
{
	static const char *const per[][2] = {
		{"PROVIDER_CANDIDATE:", ""},  {"LOCK_LOG:", ""},
		{"PROVIDER_FAILURE:", ":p"}, {"PROVIDER_COOLDOWN:", ":p"},
		{"HIT:", ""}};
	struct rec_lock l;
	struct ledger_cell cell;
	char k[256], *t;
	size_t i;

	if (seen > 0) {
		snprintf(k, sizeof(k), "MODEL_SEEN:%s", model);
		t = record_model_seen_encode(seen);
		if (t != NULL)
			mem_put(c, k, t);
		record_free(t);
	}
	memset(&l, 0, sizeof(l));
	snprintf(l.tag, sizeof(l.tag), "p");
	l.locked_at = l.last_used = used;
	snprintf(k, sizeof(k), "BEST_PROVIDER:%s", model);
	t = record_lock_encode(&l);
	if (t != NULL)
		mem_put(c, k, t);
	record_free(t);
	for (i = 0; i < sizeof(per) / sizeof(per[0]); i++) {
		snprintf(k, sizeof(k), "%s%s%s", per[i][0], model, per[i][1]);
		mem_put(c, k, "{\"v\":1}");
	}
	memset(&cell, 0, sizeof(cell));
	cell.v[LX_REQUESTS] = 1;
	cell.v[LX_COST] = 0.5;
	snprintf(k, sizeof(k), "LEDGER:%s:%s:chat:p", model, day);
	t = ledger_cell_encode(&cell);
	if (t != NULL)
		mem_put(c, k, t);
	record_free(t);
}

static size_t
keys_of(const char *model)
{
	static const char *const prefixes[][2] = {
		{"MODEL_SEEN:", ""},	     {"BEST_PROVIDER:", ""},
		{"PROVIDER_CANDIDATE:", ""}, {"LOCK_LOG:", ""},
		{"PROVIDER_FAILURE:", ":"},  {"PROVIDER_COOLDOWN:", ":"},
		{"HIT:", ""},		     {"LEDGER:", ":"}};
	char k[256];
	size_t i, n = 0;

	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		snprintf(k, sizeof(k), "%s%s%s", prefixes[i][0], model,
			 prefixes[i][1]);
		n += store_mem_count(k);
	}
	return n;
}

/* A conversation record of model m, hash h, last turn at t. */
static void
mem_conv(struct orgw_conf *c, const char *h, int64_t t)
{
	struct rec_conv rc;
	char k[128], *v;

	memset(&rc, 0, sizeof(rc));
	snprintf(rc.model, sizeof(rc.model), "m/x");
	snprintf(rc.tag, sizeof(rc.tag), "p");
	rc.first_seen = rc.last_turn = t;
	rc.turns = 1;
	snprintf(k, sizeof(k), "CONV:m/x:%s", h);
	if ((v = record_conv_encode(&rc, NULL)) != NULL)
		mem_put(c, k, v);
	record_free(v);
}

/* The conversation sweep: none older than a day, at most
 * MAX_CONVERSATIONS (the least recently used go first), pressure records
 * that ended. */
static void
test_conv_sweep(void)
{
	struct orgw_conf c;
	struct rec_pressure p;
	int64_t now = 1796083200;
	size_t dropped = 9;
	char *v;

	if (conf_init(&c) != ORGW_OK)
		return;
	c.state_backend = CONF_BACKEND_MEMORY;
	c.max_conversations = 2;
	store_mem_reset();
	mem_conv(&c, "old", now - 86401);
	mem_conv(&c, "c1", now - 300);
	mem_conv(&c, "c2", now - 200);
	mem_conv(&c, "c3", now - 100);
	p.until = now - 1;
	p.n429 = 1;
	if ((v = record_pressure_encode(&p)) != NULL)
		mem_put(&c, "PRESSURE:m/x:ended", v);
	record_free(v);
	p.until = now + 10;
	if ((v = record_pressure_encode(&p)) != NULL)
		mem_put(&c, "PRESSURE:m/x:live", v);
	record_free(v);
	T_ASSERT("conv sweep: the day-old one and the least recently used "
		 "past MAX_CONVERSATIONS 2 dropped",
		 scorerun_conv_sweep(&c, now, &dropped) == ORGW_OK &&
			 dropped == 2 && store_mem_count("CONV:") == 2 &&
			 store_mem_count("CONV:m/x:c3") == 1 &&
			 store_mem_count("CONV:m/x:c2") == 1);
	T_ASSERT("conv sweep: the ended pressure went, the live one stays",
		 store_mem_count("PRESSURE:m/x:ended") == 0 &&
			 store_mem_count("PRESSURE:m/x:live") == 1);
	T_ASSERT("conv sweep: nothing more the second time",
		 scorerun_conv_sweep(&c, now, &dropped) == ORGW_OK &&
			 dropped == 0);
	c.max_conversations = 10;
	mem_conv(&c, "old", now - 86401);
	T_ASSERT("conv sweep: under MAX_CONVERSATIONS, a day-old one still "
		 "goes",
		 scorerun_conv_sweep(&c, now, &dropped) == ORGW_OK &&
			 dropped == 1 && store_mem_count("CONV:m/x:old") == 0 &&
			 store_mem_count("CONV:") == 2);
	store_mem_reset();
	conf_free(&c);
}

static void
test_prune(void)
{
	static char target[] = "t/target";
	struct orgw_conf c;
	size_t dropped = 9;
	int64_t now = 1796083200; /* 2026-12-01 UTC */
	char day[11];

	if (conf_init(&c) != ORGW_OK)
		return;
	c.state_backend = CONF_BACKEND_MEMORY;
	c.max_models = 2;
	record_day(now, day);
	store_mem_reset();
	/* Three seen models, the oldest in use first to go; one invented
	 * id that was never seen (keys an older release left). */
	mem_model(&c, "a/old", now - 300, now - 300, day);
	mem_model(&c, "a/mid", now - 200, now - 100, day);
	mem_model(&c, "a/new", now - 100, now - 10, day);
	mem_model(&c, "x/invented", 0, now - 5, day);
	T_ASSERT("prune: set up, 8 keys a model (7 unseen)",
		 keys_of("a/old") == 8 && keys_of("x/invented") == 7);
	T_ASSERT("prune: one seen model over MAX_MODELS 2 dropped",
		 scorerun_prune(&c, &dropped) == ORGW_OK && dropped == 1);
	T_ASSERT("prune: the longest unused left no key",
		 keys_of("a/old") == 0);
	T_ASSERT("prune: the id never seen left no key",
		 keys_of("x/invented") == 0);
	T_ASSERT("prune: the kept models keep every key",
		 keys_of("a/mid") == 8 && keys_of("a/new") == 8);
	{
		char k[128];

		snprintf(k, sizeof(k), "LEDGER:" STATE_OTHER_MODEL ":%s:chat:p",
			 day);
		T_ASSERT("prune: their requests and cost went to the (other) "
			 "cell of the same day, API and provider",
			 mem_cell(&c, k, LX_REQUESTS) == 2 &&
				 mem_cell(&c, k, LX_COST) == 1.0);
	}
	T_ASSERT("prune: nothing more the second time",
		 scorerun_prune(&c, &dropped) == ORGW_OK && dropped == 0 &&
			 keys_of("a/mid") == 8);
	/* A TARGET_MODEL model is kept whether seen or not. */
	c.target_models[0] = target;
	c.n_target_models = 1;
	mem_model(&c, "t/target", 0, now, day);
	T_ASSERT("prune: a TARGET_MODEL keeps its keys unseen",
		 scorerun_prune(&c, &dropped) == ORGW_OK &&
			 keys_of("t/target") == 7);
	c.target_models[0] = NULL;
	c.n_target_models = 0;
	store_mem_reset();
	conf_free(&c);
}

/* The models a run scores (scorerun_list): TARGET_MODEL first, then the
 * seen ones in the order they were first seen, the old MODELS_SEEN
 * list's with them, each once, a bad id left out. */
static void
test_list(void)
{
	static char target[] = "t/target";
	struct orgw_conf c;
	struct scorerun_model *v;
	int64_t now = 1796083200;
	char day[11];
	size_t n = 9;

	if (conf_init(&c) != ORGW_OK)
		return;
	c.state_backend = CONF_BACKEND_MEMORY;
	record_day(now, day);
	store_mem_reset();
	v = scorerun_list(&c, &n);
	T_ASSERT("list: an empty state lists none", v == NULL && n == 0);
	free(v);
	c.target_models[0] = target;
	c.n_target_models = 1;
	mem_model(&c, "a/second", now - 200, now, day);
	mem_model(&c, "a/third", now - 100, now, day);
	mem_model(&c, "t/target", now - 50, now, day);
	mem_put(&c, "MODELS_SEEN",
		"{\"models\":{\"a/first\":1796082900,\"a/third\":1,"
		"\"bad id\":1}}");
	v = scorerun_list(&c, &n);
	T_ASSERT("list: the target, then by first seen, each once",
		 v != NULL && n == 4 && strcmp(v[0].model, "t/target") == 0 &&
			 strcmp(v[1].model, "a/first") == 0 &&
			 strcmp(v[2].model, "a/second") == 0 &&
			 strcmp(v[3].model, "a/third") == 0);
	T_ASSERT("list: ...the old list left as it is (the prune migrates it)",
		 store_mem_count("MODELS_SEEN") == 1);
	scorerun_free(v, n);
	free(v);
	c.target_models[0] = NULL;
	c.n_target_models = 0;
	store_mem_reset();
	conf_free(&c);
}

int
main(void)
{
	if (upstream_global_init() != ORGW_OK) {
		puts("not ok - curl_global_init");
		return 1;
	}
	test_url();
	test_answer();
	test_add();
	test_options();
	test_bookkeeping();
	test_models_empty();
	test_prune();
	test_conv_sweep();
	test_list();
	upstream_global_cleanup();
	return T_REPORT();
}
