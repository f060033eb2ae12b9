/*
 * test_scorerun.c - the parts of scoring that need no network: the
 * endpoints URL and how an answer is judged (scorerun_url,
 * scorerun_answer, shared by the inline scorer and a run), the model
 * list (scorerun_add: validation, dedup), fetchmany_run's
 * option checks, and its bookkeeping (every item gets exactly one done()
 * call, whatever fails) driven by URLs curl refuses before any I/O.
 * The parallel fetches themselves are tested against the double in
 * tests/integration/t0320-score-parallel.sh.
 */
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "conf.h"
#include "fetchmany.h"
#include "scorerun.h"
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
	upstream_global_cleanup();
	return T_REPORT();
}
