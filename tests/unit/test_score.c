/*
 * test_score.c - unit tests for score.c (docs/design.md section 6).
 *
 * Pure: every document is a literal here, the clock is passed in.  The
 * expected values for the example of docs/upstream.md section 10 are
 * worked out by hand next to each check.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "t.h"
#include "score.h"

/* The example of docs/upstream.md section 10, trimmed of fields score.c
 * ignores. */
static const char EXAMPLE[] =
    "{\"data\":{\"id\":\"deepseek/deepseek-v3.2\","
    "\"name\":\"DeepSeek: DeepSeek V3.2\",\"created\":1764547200,"
    "\"architecture\":{\"tokenizer\":\"DeepSeek\",\"instruct_type\":null},"
    "\"endpoints\":["
    "{\"name\":\"DeepSeek | deepseek/deepseek-v3.2-20251201\","
    "\"context_length\":163840,"
    "\"pricing\":{\"prompt\":\"0.00000028\",\"completion\":\"0.00000042\","
    "\"request\":\"0\",\"image\":\"0\",\"web_search\":\"0\","
    "\"internal_reasoning\":\"0\",\"input_cache_read\":\"0.000000028\","
    "\"discount\":0,\"overrides\":["
    "{\"utc_start\":30,\"utc_end\":1630,\"prompt\":\"0.00000028\","
    "\"completion\":\"0.00000042\",\"input_cache_read\":\"0.000000028\"},"
    "{\"utc_start\":1630,\"utc_end\":30,\"prompt\":\"0.00000014\","
    "\"completion\":\"0.00000021\",\"input_cache_read\":\"0.000000014\"}]},"
    "\"provider_name\":\"DeepSeek\",\"tag\":\"deepseek\","
    "\"quantization\":\"fp8\",\"max_completion_tokens\":65536,"
    "\"max_prompt_tokens\":null,\"status\":0,\"uptime_last_5m\":100,"
    "\"uptime_last_30m\":99.2,\"uptime_last_1d\":98.7,"
    "\"supports_implicit_caching\":true,"
    "\"latency_last_30m\":{\"p50\":1450.0,\"p75\":2100.0},"
    "\"throughput_last_30m\":{\"p50\":31.5,\"p75\":26.0,\"p90\":19.2}},"
    "{\"name\":\"DeepInfra | deepseek/deepseek-v3.2-20251201\","
    "\"context_length\":163840,"
    "\"pricing\":{\"prompt\":\"0.00000026\",\"completion\":\"0.00000039\","
    "\"request\":\"0\",\"input_cache_read\":\"0.00000013\",\"discount\":0},"
    "\"provider_name\":\"DeepInfra\",\"tag\":\"deepinfra/fp8\","
    "\"quantization\":\"fp8\",\"max_completion_tokens\":16384,"
    "\"max_prompt_tokens\":null,\"status\":0,\"uptime_last_5m\":97.4,"
    "\"uptime_last_30m\":98.9,\"uptime_last_1d\":99.5,"
    "\"supports_implicit_caching\":false,"
    "\"latency_last_30m\":{\"p50\":620.0},"
    "\"throughput_last_30m\":{\"p50\":48.0,\"p75\":41.3}}]}}";

static const struct score_params PARAMS = {0.8, 1.0, 95.0, 0, NULL, 0, NULL};

static enum orgw_err
run(const char *json, int t, const struct score_params *p,
    struct score_result *r)
{
	return score_endpoints(json, strlen(json), t, p, r);
}

/* The entry with tag, or NULL. */
static const struct score_endpoint *
find(const struct score_result *r, const char *tag)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (strcmp(r->v[i].tag, tag) == 0)
			return &r->v[i];
	return NULL;
}

/* Every double in r is finite and >= 0. */
static int
all_finite(const struct score_result *r)
{
	const struct score_endpoint *e;
	size_t i;

	for (i = 0; i < r->n; i++) {
		e = &r->v[i];
		if (!isfinite(e->score) || e->score < 0 || !isfinite(e->cost) ||
		    e->cost < 0 || !isfinite(e->prompt) ||
		    !isfinite(e->completion) || !isfinite(e->cache_read) ||
		    !isfinite(e->effective_input) || !isfinite(e->throughput) ||
		    !isfinite(e->uptime) || !isfinite(e->bonus))
			return 0;
	}
	return 1;
}

static void
test_window(void)
{
	T_ASSERT("window: start is inside", score_window_match(30, 1630, 30));
	T_ASSERT("window: end-1 minute is inside",
	         score_window_match(30, 1630, 1629));
	T_ASSERT("window: end is outside", !score_window_match(30, 1630, 1630));
	T_ASSERT("window: before start is outside",
	         !score_window_match(30, 1630, 29));
	T_ASSERT("window: middle is inside",
	         score_window_match(30, 1630, 1200));
	T_ASSERT("wrap: start is inside", score_window_match(1630, 30, 1630));
	T_ASSERT("wrap: 23:59 is inside", score_window_match(1630, 30, 2359));
	T_ASSERT("wrap: 00:00 is inside", score_window_match(1630, 30, 0));
	T_ASSERT("wrap: end-1 minute is inside",
	         score_window_match(1630, 30, 29));
	T_ASSERT("wrap: end is outside", !score_window_match(1630, 30, 30));
	T_ASSERT("wrap: noon is outside", !score_window_match(1630, 30, 1200));
	T_ASSERT("wrap: start-1 minute is outside",
	         !score_window_match(1630, 30, 1629));
	T_ASSERT("equal bounds: empty at the bound",
	         !score_window_match(900, 900, 900));
	T_ASSERT("equal bounds: empty elsewhere",
	         !score_window_match(900, 900, 0));
	T_ASSERT("whole day 0..2400 holds 23:59",
	         score_window_match(0, 2400, 2359));
}

/* score_price_now() on a pricing object given as JSON text. */
static bool
price(const char *pricing, const char *key, int t, double *out)
{
	cJSON *j;
	bool ok;

	j = cJSON_Parse(pricing);
	ok = score_price_now(j, key, t, out);
	cJSON_Delete(j);
	return ok;
}

static void
test_price(void)
{
	static const char LAYERS[] =
	    "{\"prompt\":\"1\",\"completion\":\"2\",\"overrides\":["
	    "{\"utc_start\":0,\"utc_end\":2400,\"prompt\":\"3\","
	    "\"completion\":\"4\"},"
	    "{\"utc_start\":1000,\"utc_end\":1400,\"prompt\":\"5\"},"
	    "{\"min_prompt_tokens\":200000,\"prompt\":\"99\"},"
	    "{\"utc_start\":1300,\"prompt\":\"77\"},"
	    "\"not an entry\"]}";
	double v;

	v = -1;
	T_ASSERT("base price read",
	         price("{\"prompt\":\"0.00000028\"}", "prompt", 1200, &v) &&
	             T_NEAR(v, 0.00000028));
	T_ASSERT("price as a JSON number accepted",
	         price("{\"prompt\":0.5}", "prompt", 1200, &v) &&
	             T_NEAR(v, 0.5));
	T_ASSERT("later matching override wins for its key",
	         price(LAYERS, "prompt", 1200, &v) && T_NEAR(v, 5));
	T_ASSERT("key absent from the later entry keeps the earlier one",
	         price(LAYERS, "completion", 1200, &v) && T_NEAR(v, 4));
	T_ASSERT("non-matching later entry leaves the earlier one",
	         price(LAYERS, "prompt", 1500, &v) && T_NEAR(v, 3));
	T_ASSERT("min_prompt_tokens entry and one-bound entry ignored",
	         price(LAYERS, "prompt", 1330, &v) && T_NEAR(v, 5));
	T_ASSERT("entry with no condition applies always",
	         price("{\"prompt\":\"1\",\"overrides\":[{\"prompt\":\"2\"}]}",
	               "prompt", 700, &v) &&
	             T_NEAR(v, 2));
	T_ASSERT("string window bounds make the entry not apply",
	         price("{\"prompt\":\"1\",\"overrides\":[{\"utc_start\":\"0\","
	               "\"utc_end\":\"2400\",\"prompt\":\"2\"}]}",
	               "prompt", 700, &v) &&
	             T_NEAR(v, 1));
	T_ASSERT("null condition fields count as absent",
	         price("{\"prompt\":\"1\",\"overrides\":[{\"utc_start\":null,"
	               "\"min_prompt_tokens\":null,\"prompt\":\"2\"}]}",
	               "prompt", 700, &v) &&
	             T_NEAR(v, 2));
	T_ASSERT("discount 0.25 takes a quarter off",
	         price("{\"prompt\":\"0.000002\",\"discount\":0.25}", "prompt",
	               0, &v) &&
	             T_NEAR(v, 0.0000015));
	T_ASSERT("discount applies after overrides",
	         price("{\"prompt\":\"1\",\"discount\":0.5,\"overrides\":["
	               "{\"utc_start\":0,\"utc_end\":100,\"prompt\":\"4\"}]}",
	               "prompt", 30, &v) &&
	             T_NEAR(v, 2));
	T_ASSERT(
	    "discount out of range is no discount",
	    price("{\"prompt\":\"1\",\"discount\":1.5}", "prompt", 0, &v) &&
	        T_NEAR(v, 1));
	T_ASSERT(
	    "discount as a string is no discount",
	    price("{\"prompt\":\"1\",\"discount\":\"0.5\"}", "prompt", 0, &v) &&
	        T_NEAR(v, 1));
	T_ASSERT("discount 1 makes it free",
	         price("{\"prompt\":\"1\",\"discount\":1}", "prompt", 0, &v) &&
	             v == 0);
	T_ASSERT("missing key is false",
	         !price("{\"prompt\":\"1\"}", "completion", 0, &v));
	T_ASSERT("garbage string is false",
	         !price("{\"prompt\":\"abc\"}", "prompt", 0, &v));
	T_ASSERT("trailing junk is false",
	         !price("{\"prompt\":\"0.1x\"}", "prompt", 0, &v));
	T_ASSERT("negative is false",
	         !price("{\"prompt\":\"-0.1\"}", "prompt", 0, &v));
	T_ASSERT("nan is false",
	         !price("{\"prompt\":\"nan\"}", "prompt", 0, &v));
	T_ASSERT("inf is false",
	         !price("{\"prompt\":\"inf\"}", "prompt", 0, &v));
	T_ASSERT("overflowing 1e999 is false",
	         !price("{\"prompt\":\"1e999\"}", "prompt", 0, &v));
	T_ASSERT("empty string is false",
	         !price("{\"prompt\":\"\"}", "prompt", 0, &v));
	T_ASSERT("hex float is false",
	         !price("{\"prompt\":\"0x1p-3\"}", "prompt", 0, &v));
	T_ASSERT("leading blank is false",
	         !price("{\"prompt\":\" 1\"}", "prompt", 0, &v));
	T_ASSERT("boolean is false",
	         !price("{\"prompt\":true}", "prompt", 0, &v));
	T_ASSERT("garbage override that applies poisons the price",
	         !price("{\"prompt\":\"1\",\"overrides\":[{\"prompt\":\"x\"}]}",
	                "prompt", 0, &v));
	T_ASSERT("valid override cures a missing base",
	         price("{\"overrides\":[{\"utc_start\":0,\"utc_end\":1200,"
	               "\"prompt\":\"3\"}]}",
	               "prompt", 100, &v) &&
	             T_NEAR(v, 3));
	T_ASSERT("pricing not an object is false",
	         !price("[\"prompt\"]", "prompt", 0, &v));
	T_ASSERT("NULL pricing is false",
	         !score_price_now(NULL, "prompt", 0, &v));
}

static void
test_example(void)
{
	struct score_params p = PARAMS;
	struct score_result r;
	const struct score_endpoint *ds, *di;

	/*
	 * 12:00 UTC, HIT_RATE 0.8, CACHE_BONUS 1: peak window [0030,1630).
	 * DeepSeek:  ei = 0.8*2.8e-8 + 0.2*2.8e-7 = 7.84e-8
	 *            cost = 0.4*7.84e-8 + 0.6*4.2e-7 = 2.8336e-7
	 *            score = 31.5 / 2.8336e-7 = 111166007.905...
	 * DeepInfra: ei = 0.8*1.3e-7 + 0.2*2.6e-7 = 1.56e-7
	 *            cost = 0.4*1.56e-7 + 0.6*3.9e-7 = 2.964e-7
	 *            score = 48 / 2.964e-7 = 161943319.838...
	 */
	T_ASSERT("example parses", run(EXAMPLE, 1200, &p, &r) == ORGW_OK);
	T_ASSERT("model is data.id",
	         strcmp(r.model, "deepseek/deepseek-v3.2") == 0);
	T_ASSERT("two endpoints, both ranked", r.n == 2 && r.n_ranked == 2);
	ds = find(&r, "deepseek");
	di = find(&r, "deepinfra/fp8");
	T_ASSERT("both tags found", ds != NULL && di != NULL);
	if (ds == NULL || di == NULL)
		return;
	T_ASSERT("12:00 deepseek peak prompt", T_NEAR(ds->prompt, 2.8e-7));
	T_ASSERT("12:00 deepseek peak completion",
	         T_NEAR(ds->completion, 4.2e-7));
	T_ASSERT("12:00 deepseek cache_read", T_NEAR(ds->cache_read, 2.8e-8));
	T_ASSERT("12:00 deepseek effective_input",
	         T_NEAR(ds->effective_input, 7.84e-8));
	T_ASSERT("12:00 deepseek cost", T_NEAR(ds->cost, 2.8336e-7));
	T_ASSERT("12:00 deepseek score", T_NEAR(ds->score, 111166007.90513833));
	T_ASSERT("deepseek implicit, bonus 1 with CACHE_BONUS 1",
	         ds->implicit_cache && ds->bonus == 1.0);
	T_ASSERT("12:00 deepinfra effective_input",
	         T_NEAR(di->effective_input, 1.56e-7));
	T_ASSERT("12:00 deepinfra cost", T_NEAR(di->cost, 2.964e-7));
	T_ASSERT("12:00 deepinfra score",
	         T_NEAR(di->score, 161943319.83805668));
	T_ASSERT("deepinfra flag false overrides cheaper cache read",
	         !di->implicit_cache && di->bonus == 1.0);
	T_ASSERT("12:00 CACHE_BONUS 1: deepinfra wins",
	         strcmp(r.v[0].tag, "deepinfra/fp8") == 0);
	T_ASSERT("names, limits, uptime and throughput copied",
	         strcmp(ds->provider_name, "DeepSeek") == 0 &&
	             ds->max_completion_tokens == 65536 &&
	             di->max_completion_tokens == 16384 && ds->has_uptime &&
	             T_NEAR(ds->uptime, 99.2) && ds->has_throughput &&
	             T_NEAR(ds->throughput, 31.5) && ds->status == 0 &&
	             !ds->free && ds->excluded == NULL);
	score_result_free(&r);

	/* CACHE_BONUS 2: DeepSeek 2 * 111166007.9 = 222332015.8 wins. */
	p.cache_bonus = 2;
	T_ASSERT("12:00 CACHE_BONUS 2 parses",
	         run(EXAMPLE, 1200, &p, &r) == ORGW_OK && r.n_ranked == 2);
	T_ASSERT("12:00 CACHE_BONUS 2: deepseek wins",
	         strcmp(r.v[0].tag, "deepseek") == 0 && r.v[0].bonus == 2.0 &&
	             T_NEAR(r.v[0].score, 222332015.81027666));
	T_ASSERT("12:00 CACHE_BONUS 2: deepinfra unchanged",
	         strcmp(r.v[1].tag, "deepinfra/fp8") == 0 &&
	             T_NEAR(r.v[1].score, 161943319.83805668));
	score_result_free(&r);

	/*
	 * 20:00 UTC, CACHE_BONUS 1: off-peak [1630,0030) halves DeepSeek.
	 * ei = 0.8*1.4e-8 + 0.2*1.4e-7 = 3.92e-8
	 * cost = 0.4*3.92e-8 + 0.6*2.1e-7 = 1.4168e-7
	 * score = 31.5 / 1.4168e-7 = 222332015.81... > 161943319.8
	 */
	p.cache_bonus = 1;
	T_ASSERT("20:00 parses", run(EXAMPLE, 2000, &p, &r) == ORGW_OK);
	ds = find(&r, "deepseek");
	if (ds == NULL)
		return;
	T_ASSERT("20:00 deepseek off-peak prompt and completion",
	         T_NEAR(ds->prompt, 1.4e-7) && T_NEAR(ds->completion, 2.1e-7));
	T_ASSERT("20:00 deepseek effective_input",
	         T_NEAR(ds->effective_input, 3.92e-8));
	T_ASSERT("20:00 deepseek cost", T_NEAR(ds->cost, 1.4168e-7));
	T_ASSERT("20:00 deepseek score", T_NEAR(ds->score, 222332015.81027666));
	T_ASSERT("20:00 CACHE_BONUS 1: deepseek wins",
	         strcmp(r.v[0].tag, "deepseek") == 0);
	score_result_free(&r);

	/* Window edges: 16:29 is still peak, 00:29 still off-peak. */
	T_ASSERT("16:29 is peak", run(EXAMPLE, 1629, &p, &r) == ORGW_OK &&
	                              (ds = find(&r, "deepseek")) != NULL &&
	                              T_NEAR(ds->prompt, 2.8e-7));
	score_result_free(&r);
	T_ASSERT("00:29 is off-peak", run(EXAMPLE, 29, &p, &r) == ORGW_OK &&
	                                  (ds = find(&r, "deepseek")) != NULL &&
	                                  T_NEAR(ds->prompt, 1.4e-7));
	score_result_free(&r);

	/* Not NUL-terminated (ASan checks nothing reads past len), and
	 * junk after the document inside len. */
	{
		size_t n = sizeof(EXAMPLE) - 1;
		char *b = malloc(n);
		char junk[sizeof(EXAMPLE) + 3];

		if (b != NULL) {
			memcpy(b, EXAMPLE, sizeof(EXAMPLE) - 1);
			T_ASSERT("unterminated buffer parses",
			         score_endpoints(b, n, 1200, &p, &r) ==
			                 ORGW_OK &&
			             r.n == 2);
			score_result_free(&r);
			free(b);
		}
		(void)snprintf(junk, sizeof(junk), "%sxyz", EXAMPLE);
		T_ASSERT("len stopping before junk parses",
		         score_endpoints(junk, n, 1200, &p, &r) == ORGW_OK);
		score_result_free(&r);
		T_ASSERT("junk inside len is refused",
		         score_endpoints(junk, n + 3, 1200, &p, &r) ==
		             ORGW_EINVAL);
	}
}

/* A priced endpoint with throughput 10, tag tg, more members extra. */
#define EP(tg, extra)                                                          \
	"{\"tag\":\"" tg "\",\"provider_name\":\"P\",\"pricing\":"             \
	"{\"prompt\":\"0.000001\",\"completion\":\"0.000002\"},"               \
	"\"throughput_last_30m\":{\"p50\":10}" extra "}"
#define DOC(eps) "{\"data\":{\"id\":\"a/b\",\"endpoints\":[" eps "]}}"

/* Uptime (always percent: 0.8 is 0.8 %, 1 is 1 %), and status. */
/* clang-format off */
static const char EXCL_DOC[] = DOC(
	EP("up80", ",\"uptime_last_30m\":80") ","
	EP("frac80", ",\"uptime_last_30m\":0.8") ","
	EP("one", ",\"uptime_last_30m\":1") ","
	EP("up95", ",\"uptime_last_30m\":95") ","
	EP("up101", ",\"uptime_last_30m\":101") ","
	EP("upnull", ",\"uptime_last_30m\":null") ","
	EP("st1", ",\"status\":-1") ","
	EP("st0", ",\"status\":0") ","
	EP("stx", ",\"status\":\"x\""));
/* clang-format on */

static void
test_exclusions(void)
{
	struct score_result r;
	const struct score_endpoint *e;

	T_ASSERT("exclusion doc parses",
	         run(EXCL_DOC, 1200, &PARAMS, &r) == ORGW_OK);
	T_ASSERT("9 endpoints, 5 ranked", r.n == 9 && r.n_ranked == 5);
	e = find(&r, "up80");
	T_ASSERT("uptime 80 percent excluded",
	         e != NULL && e->excluded != NULL &&
	             strcmp(e->excluded, "uptime") == 0 &&
	             strcmp(e->why, "uptime 80.0 < 95") == 0);
	e = find(&r, "frac80");
	T_ASSERT("uptime 0.8 is 0.8 percent, excluded",
	         e != NULL && e->excluded != NULL &&
	             strcmp(e->excluded, "uptime") == 0 &&
	             T_NEAR(e->uptime, 0.8));
	e = find(&r, "one");
	T_ASSERT("uptime 1 is 1 percent, excluded (not read as 100)",
	         e != NULL && e->excluded != NULL &&
	             strcmp(e->excluded, "uptime") == 0 &&
	             T_NEAR(e->uptime, 1));
	e = find(&r, "up95");
	T_ASSERT("uptime 95 equals MIN_UPTIME 95: kept",
	         e != NULL && e->excluded == NULL && T_NEAR(e->uptime, 95));
	e = find(&r, "up101");
	T_ASSERT("uptime 101 is nonsense: counted as missing, kept",
	         e != NULL && e->excluded == NULL && !e->has_uptime);
	e = find(&r, "upnull");
	T_ASSERT("null uptime is not excluded",
	         e != NULL && e->excluded == NULL && !e->has_uptime);
	e = find(&r, "st1");
	T_ASSERT("status -1 excluded", e != NULL && e->excluded != NULL &&
	                                   strcmp(e->excluded, "status") == 0 &&
	                                   e->status == -1);
	e = find(&r, "st0");
	T_ASSERT("status 0 kept", e != NULL && e->excluded == NULL);
	e = find(&r, "stx");
	T_ASSERT("status of wrong type is missing, kept",
	         e != NULL && e->excluded == NULL);
	T_ASSERT("excluded follow in input order",
	         strcmp(r.v[5].tag, "up80") == 0 &&
	             strcmp(r.v[6].tag, "frac80") == 0 &&
	             strcmp(r.v[7].tag, "one") == 0 &&
	             strcmp(r.v[8].tag, "st1") == 0);
	score_result_free(&r);

	T_ASSERT("price doc parses",
	         run(DOC("{\"tag\":\"noprompt\",\"pricing\":{\"completion\":"
	                 "\"1\"}},"
	                 "{\"tag\":\"garbage\",\"pricing\":{\"prompt\":\"1\","
	                 "\"completion\":\"lots\"}},"
	                 "{\"tag\":\"neg\",\"pricing\":{\"prompt\":\"-1\","
	                 "\"completion\":\"1\"}},"
	                 "{\"tag\":\"nopricing\"},"
	                 "{\"tag\":\"pricingarray\",\"pricing\":[1,2]},"
	                 "{\"tag\":\"ok\",\"pricing\":{\"prompt\":\"1\","
	                 "\"completion\":\"1\",\"input_cache_read\":\"zz\"}}"),
	             1200, &PARAMS, &r) == ORGW_OK);
	T_ASSERT("only the priced one ranked",
	         r.n == 6 && r.n_ranked == 1 && strcmp(r.v[0].tag, "ok") == 0);
	T_ASSERT("every other one excluded for price",
	         r.n == 6 && strcmp(r.v[1].excluded, "price") == 0 &&
	             strcmp(r.v[2].excluded, "price") == 0 &&
	             strcmp(r.v[3].excluded, "price") == 0 &&
	             strcmp(r.v[4].excluded, "price") == 0 &&
	             strcmp(r.v[5].excluded, "price") == 0);
	T_ASSERT("garbage cache price falls back to prompt",
	         r.n >= 1 && T_NEAR(r.v[0].cache_read, 1) &&
	             !r.v[0].implicit_cache);
	T_ASSERT("no throughput: has_throughput false, score 0",
	         r.n >= 1 && !r.v[0].has_throughput && r.v[0].score == 0);
	score_result_free(&r);
}

static void
test_ranking(void)
{
	struct score_params p = PARAMS;
	struct score_result r;

	/* Same price and throughput: the tag decides, ascending. */
	T_ASSERT("ties parse",
	         run(DOC(EP("b", "") "," EP("a", "")), 0, &p, &r) == ORGW_OK);
	T_ASSERT("tie broken by tag asc", r.n == 2 &&
	                                      strcmp(r.v[0].tag, "a") == 0 &&
	                                      strcmp(r.v[1].tag, "b") == 0);
	score_result_free(&r);

	/* A null throughput ranks below a slow but measured one. */
	T_ASSERT("null throughput doc parses",
	         run(DOC("{\"tag\":\"fastnull\",\"pricing\":{\"prompt\":"
	                 "\"0.0000000001\",\"completion\":\"0.0000000001\"},"
	                 "\"throughput_last_30m\":null},"
	                 "{\"tag\":\"slow\",\"pricing\":{\"prompt\":\"1\","
	                 "\"completion\":\"1\"},"
	                 "\"throughput_last_30m\":{\"p50\":0.001}}"),
	             0, &p, &r) == ORGW_OK);
	T_ASSERT("null throughput ranks last",
	         r.n_ranked == 2 && strcmp(r.v[0].tag, "slow") == 0 &&
	             strcmp(r.v[1].tag, "fastnull") == 0 &&
	             !r.v[1].has_throughput && r.v[1].score == 0);
	score_result_free(&r);

	/* Free: no division by zero, score = throughput * bonus, and it
	 * ranks above a faster paid endpoint. */
	p.cache_bonus = 3;
	T_ASSERT(
	    "free doc parses",
	    run(DOC(EP(
	            "paid",
	            "") ","
	                "{\"tag\":\"free\",\"pricing\":{\"prompt\":\"0\","
	                "\"completion\":\"0\"},\"supports_implicit_caching\":"
	                "true,\"throughput_last_30m\":{\"p50\":2}}"),
	        0, &p, &r) == ORGW_OK);
	T_ASSERT("free ranks first with score = throughput * bonus",
	         r.n_ranked == 2 && strcmp(r.v[0].tag, "free") == 0 &&
	             r.v[0].free && r.v[0].cost == 0 &&
	             T_NEAR(r.v[0].score, 6) && isfinite(r.v[1].score));
	score_result_free(&r);

	/* Flag absent: a cheaper cache read means implicit caching. */
	T_ASSERT("implicit doc parses",
	         run(DOC("{\"tag\":\"c\",\"pricing\":{\"prompt\":\"1\","
	                 "\"completion\":\"1\",\"input_cache_read\":\"0.1\"},"
	                 "\"max_completion_tokens\":null}"),
	             0, &p, &r) == ORGW_OK);
	T_ASSERT("cheaper cache read without the flag is implicit",
	         r.n == 1 && r.v[0].implicit_cache && r.v[0].bonus == 3 &&
	             r.v[0].max_completion_tokens == 0);
	score_result_free(&r);
}

static void
test_garbage(void)
{
	static const char *const BAD[] = {
	    "not json",
	    "[1,2]",
	    "{\"data\":[]}",
	    "{\"data\":{}}",
	    "{\"data\":{\"endpoints\":{}}}",
	    "{\"data\":{\"endpoints\":\"x\"}}",
	    "{\"data\":{\"endpoints\":null}}",
	    "{\"data\":{\"endpoints\":[]}} trailing",
	    "",
	    "null",
	};
	struct score_result r;
	size_t i;
	static const char PRE[] = "{\"data\":{\"endpoints\":[{"
	                          "\"tag\":\"t\",\"provider_name\":\"";
	int bad = 0;
	char *big, *name;

	for (i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
		if (run(BAD[i], 0, &PARAMS, &r) != ORGW_EINVAL || r.v != NULL ||
		    r.n != 0)
			bad++;
		score_result_free(&r);
	}
	T_ASSERT("garbage documents are ORGW_EINVAL with a zeroed result",
	         bad == 0);
	T_ASSERT("NULL json is ORGW_EINVAL",
	         score_endpoints(NULL, 3, 0, &PARAMS, &r) == ORGW_EINVAL);
	T_ASSERT("NULL params is ORGW_EINVAL",
	         score_endpoints("{}", 2, 0, NULL, &r) == ORGW_EINVAL);

	T_ASSERT("empty endpoints is OK and empty",
	         run("{\"data\":{\"endpoints\":[]}}", 0, &PARAMS, &r) ==
	                 ORGW_OK &&
	             r.n == 0 && r.n_ranked == 0 && r.model[0] == '\0');
	score_result_free(&r);

	T_ASSERT("endpoints of wrong types parse",
	         run(DOC("1,\"x\",null,[],{},{\"tag\":5},{\"tag\":\"\"},"
	                 "{\"tag\":\"has space\",\"pricing\":{\"prompt\":\"1\","
	                 "\"completion\":\"1\"}},"
	                 "{\"tag\":\"t\",\"pricing\":\"cheap\","
	                 "\"throughput_last_30m\":[1],\"status\":{},"
	                 "\"uptime_last_30m\":\"99\","
	                 "\"supports_implicit_caching\":\"yes\"}"),
	             0, &PARAMS, &r) == ORGW_OK);
	T_ASSERT("all nine excluded without crashing",
	         r.n == 9 && r.n_ranked == 0);
	T_ASSERT("non-objects excluded as malformed",
	         r.n == 9 && strcmp(r.v[0].excluded, "malformed") == 0 &&
	             strcmp(r.v[3].excluded, "malformed") == 0);
	T_ASSERT("missing, numeric and empty tags: no tag",
	         r.n == 9 && strcmp(r.v[4].excluded, "no tag") == 0 &&
	             strcmp(r.v[5].excluded, "no tag") == 0 &&
	             strcmp(r.v[6].excluded, "no tag") == 0);
	T_ASSERT("tag with a blank: bad tag",
	         r.n == 9 && strcmp(r.v[7].excluded, "bad tag") == 0);
	T_ASSERT("wrong-typed fields are missing",
	         r.n == 9 && strcmp(r.v[8].excluded, "price") == 0 &&
	             !r.v[8].has_throughput && !r.v[8].has_uptime &&
	             r.v[8].status == 0);
	T_ASSERT("no NaN among garbage", all_finite(&r));
	score_result_free(&r);

	/* Names longer than ORGW_TAG_MAX are truncated, never inside a
	 * UTF-8 character: 100 two-byte characters keep 63 (126 bytes). */
	big = calloc(1, 1024);
	name = calloc(1, 512);
	if (big != NULL && name != NULL) {
		memset(name, 'N', 300);
		(void)snprintf(big, 1024, "%s%s\"}]}}", PRE, name);
		T_ASSERT("long provider_name parses",
		         run(big, 0, &PARAMS, &r) == ORGW_OK && r.n == 1);
		T_ASSERT("long provider_name truncated to ORGW_TAG_MAX-1",
		         r.n == 1 &&
		             strlen(r.v[0].provider_name) == ORGW_TAG_MAX - 1);
		score_result_free(&r);
		memset(name, 0, 512);
		for (i = 0; i < 100; i++) {
			name[2 * i] = '\xc3'; /* U+00E9 */
			name[2 * i + 1] = '\xa9';
		}
		(void)snprintf(big, 1024, "%s%s\"}]}}", PRE, name);
		T_ASSERT("UTF-8 provider_name cut on a character boundary",
		         run(big, 0, &PARAMS, &r) == ORGW_OK && r.n == 1 &&
		             strlen(r.v[0].provider_name) == 126);
		score_result_free(&r);
	}
	free(name);
	free(big);
	score_result_free(&r);
	score_result_free(NULL);
	T_ASSERT("score_result_free twice and on NULL is safe", r.v == NULL);
}

static void
test_extremes(void)
{
	struct score_params p = {NAN, INFINITY, NAN, 0, NULL, 0, NULL};
	struct score_result r;

	T_ASSERT("extreme doc parses",
	         run(DOC("{\"tag\":\"denormal\",\"pricing\":{\"prompt\":"
	                 "\"1e-320\",\"completion\":\"1e-320\"},"
	                 "\"throughput_last_30m\":{\"p50\":1e308},"
	                 "\"supports_implicit_caching\":true},"
	                 "{\"tag\":\"huge\",\"pricing\":{\"prompt\":\"1e308\","
	                 "\"completion\":\"1.7e308\"},"
	                 "\"throughput_last_30m\":{\"p50\":1e-300}},"
	                 "{\"tag\":\"inf\",\"pricing\":{\"prompt\":\"1\","
	                 "\"completion\":\"1\"},"
	                 "\"throughput_last_30m\":{\"p50\":1e999},"
	                 "\"uptime_last_30m\":-5,\"max_completion_tokens\":"
	                 "1e30},"
	                 "{\"tag\":\"free\",\"pricing\":{\"prompt\":0,"
	                 "\"completion\":0},\"throughput_last_30m\":"
	                 "{\"p50\":1e308}}"),
	             0, &p, &r) == ORGW_OK);
	T_ASSERT("no NaN or inf anywhere", all_finite(&r));
	T_ASSERT("overflowing score clamped to DBL_MAX",
	         find(&r, "denormal") != NULL &&
	             find(&r, "denormal")->score == DBL_MAX);
	T_ASSERT("inf throughput read as missing",
	         find(&r, "inf") != NULL && !find(&r, "inf")->has_throughput);
	T_ASSERT("negative uptime read as missing",
	         find(&r, "inf") != NULL && !find(&r, "inf")->has_uptime);
	T_ASSERT("huge max_completion_tokens saturates",
	         find(&r, "inf") != NULL &&
	             find(&r, "inf")->max_completion_tokens == INT64_MAX);
	T_ASSERT("free with throughput ranks first",
	         r.n_ranked >= 1 && strcmp(r.v[0].tag, "free") == 0);
	score_result_free(&r);
}

/*
 * Re-pricing (docs/design.md section 6): the terms kept with an
 * endpoint re-price it at any time of day to exactly what scoring at
 * that time gives.  The example's DeepSeek endpoint is half price from
 * 16:30 to 00:30 UTC; with CACHE_BONUS 1 and HIT_RATE 0.9 DeepInfra
 * (1.648e8) beats it at 12:00 (1.153e8) and loses at 20:00 (2.305e8).
 */
static void
test_terms(void)
{
	static const struct score_params p = {0.9, 1.0, 95.0, 0, NULL, 0, NULL};
	struct score_result noon, eve;
	struct score_endpoint e;
	const struct score_endpoint *d;
	char *doc;
	size_t i, len;
	bool same = true;
	double v;

	T_ASSERT("example scores at 12:00 and 20:00",
	         run(EXAMPLE, 1200, &p, &noon) == ORGW_OK &&
	             run(EXAMPLE, 2000, &p, &eve) == ORGW_OK &&
	             noon.n_ranked == 2 && eve.n_ranked == 2);
	if (noon.n_ranked != 2 || eve.n_ranked != 2)
		return;
	T_ASSERT("12:00: deepinfra/fp8 first (deepseek at peak price)",
	         strcmp(noon.v[0].tag, "deepinfra/fp8") == 0 &&
	             T_NEAR(noon.v[0].score, 48 / 2.912e-7) &&
	             T_NEAR(noon.v[1].score, 31.5 / 2.7328e-7));
	T_ASSERT("20:00: deepseek first (off-peak half price)",
	         strcmp(eve.v[0].tag, "deepseek") == 0 &&
	             T_NEAR(eve.v[0].score, 31.5 / 1.3664e-7));
	d = find(&noon, "deepseek");
	T_ASSERT("deepseek's terms keep its base prices and both windows",
	         d != NULL && d->terms.n_win == 2 &&
	             d->terms.base_kind[SCORE_PROMPT] == SCORE_PRICE_OK &&
	             T_NEAR(d->terms.base[SCORE_PROMPT], 2.8e-7) &&
	             d->terms.win[1].utc_start == 1630 &&
	             d->terms.win[1].utc_end == 30 &&
	             T_NEAR(d->terms.win[1].price[SCORE_COMPLETION], 2.1e-7) &&
	             d->terms.implicit_flag == 1 &&
	             d->terms.has_throughput &&
	             T_NEAR(d->terms.throughput, 31.5));
	/* The 12:00 terms, evaluated at 20:00, are the 20:00 scoring. */
	for (i = 0; i < noon.n_ranked; i++) {
		const struct score_endpoint *want = find(&eve, noon.v[i].tag);

		memset(&e, 0, sizeof(e));
		score_terms_eval(&noon.v[i].terms, 2000, &p, &e);
		same = same && want != NULL && e.excluded == NULL &&
		       e.score == want->score && e.cost == want->cost &&
		       e.prompt == want->prompt &&
		       e.completion == want->completion &&
		       e.cache_read == want->cache_read &&
		       e.bonus == want->bonus && e.free == want->free &&
		       e.implicit_cache == want->implicit_cache;
	}
	T_ASSERT("12:00 terms re-priced at 20:00 equal the 20:00 scoring",
	         same);
	T_ASSERT("score_rank_cmp: deepseek before deepinfra at 20:00",
	         score_rank_cmp(&eve.v[0], &eve.v[1]) < 0 &&
	             score_rank_cmp(&eve.v[1], &eve.v[0]) > 0 &&
	             score_rank_cmp(&eve.v[0], &eve.v[0]) == 0);

	/* score_result_exclude: a cooling provider leaves the ranking. */
	score_result_exclude(&eve, 0, "cooling", "cooling down for 5 s more");
	T_ASSERT("exclude moves the endpoint after the ranked ones",
	         eve.n_ranked == 1 && eve.n == 2 &&
	             strcmp(eve.v[0].tag, "deepinfra/fp8") == 0 &&
	             strcmp(eve.v[1].tag, "deepseek") == 0 &&
	             strcmp(eve.v[1].excluded, "cooling") == 0 &&
	             strcmp(eve.v[1].why, "cooling down for 5 s more") == 0);
	score_result_exclude(&eve, 1, "cooling", "x");
	T_ASSERT("exclude of an excluded endpoint is a no-op",
	         eve.n_ranked == 1 && strcmp(eve.v[1].why, "x") != 0);
	score_result_free(&noon);
	score_result_free(&eve);

	T_ASSERT("score_hhmm: 2025-12-01 20:05 UTC is 2005",
	         score_hhmm(1764547200 + 20 * 3600 + 5 * 60 + 59) == 2005);
	T_ASSERT("score_hhmm: midnight is 0, a minute before is 2359",
	         score_hhmm(1764547200) == 0 && score_hhmm(1764547200 - 60) ==
	                                            2359 &&
	             score_hhmm(-60) == 2359);

	/* More windows than can be kept: excluded, never mis-priced. */
	len = 200 + 60 * (SCORE_WINDOWS_MAX + 1);
	doc = malloc(len);
	if (doc != NULL) {
		size_t o = (size_t)snprintf(doc, len,
		                            "{\"data\":{\"endpoints\":[{"
		                            "\"tag\":\"many\",\"pricing\":{"
		                            "\"prompt\":\"1\",\"completion\":"
		                            "\"1\",\"overrides\":[");
		for (i = 0; i <= SCORE_WINDOWS_MAX; i++)
			o += (size_t)snprintf(doc + o, len - o,
			                      "%s{\"utc_start\":%zu,"
			                      "\"utc_end\":%zu,\"prompt\":\"2\"}",
			                      i ? "," : "", i % 24 * 100,
			                      i % 24 * 100 + 30);
		snprintf(doc + o, len - o, "]}}]}}");
		T_ASSERT("more than SCORE_WINDOWS_MAX windows: excluded, price",
		         run(doc, 1200, &p, &noon) == ORGW_OK && noon.n == 1 &&
		             noon.n_ranked == 0 &&
		             strcmp(noon.v[0].excluded, "price") == 0);
		score_result_free(&noon);
		free(doc);
	}
	T_ASSERT("score_price_now: a key the formula does not read is false",
	         !price("{\"request\":\"1\"}", "request", 0, &v));
}

/*
 * Measured hit rates: the decay arithmetic of score_hit_add
 * and the evidence threshold of score_hit_pick.
 */
static void
test_hits(void)
{
	struct score_hit h, hs[1];
	struct score_params p = {0.9, 1.0, 95.0, 1000, NULL, 0, NULL};
	bool m = true;
	int64_t tok = -1;
	int i;

	memset(&h, 0, sizeof(h));
	score_hit_add(&h, 1000, 250, 1000);
	T_ASSERT("first answer: rate is its cached share",
		 T_NEAR(h.rate, 0.25) && T_NEAR(h.weight, 1000) &&
			 h.tokens == 1000);
	/* Old weight 1000 * 0.5^(1000/1000) = 500, joined by 1000 at 1.0:
	 * (0.25*500 + 1000) / 1500 = 0.75. */
	score_hit_add(&h, 1000, 1000, 1000);
	T_ASSERT("one half-life later: old evidence weighs half",
		 T_NEAR(h.rate, 0.75) && T_NEAR(h.weight, 1500) &&
			 h.tokens == 2000);
	memset(&h, 0, sizeof(h));
	score_hit_add(&h, 1000, 0, 1e6);
	score_hit_add(&h, 1000, 1000, 1e6);
	T_ASSERT("a long half-life: nearly the plain token average",
		 fabs(h.rate - 0.5) < 0.001);
	memset(&h, 0, sizeof(h));
	for (i = 0; i < 100; i++)
		score_hit_add(&h, 1000, 200, 1000);
	for (i = 0; i < 10; i++)
		score_hit_add(&h, 1000, 900, 1000);
	T_ASSERT("10 half-lives at 0.9 after 0.2: within 0.1 % of 0.9",
		 fabs(h.rate - 0.9) < 0.001 && h.tokens == 110000);
	T_ASSERT("the weight stays bounded (about 2 half-lives)",
		 h.weight < 2 * 1000 + 1);
	score_hit_add(&h, 0, 0, 1000);
	T_ASSERT("no prompt tokens: nothing changes", h.tokens == 110000);
	memset(&h, 0, sizeof(h));
	score_hit_add(&h, 100, 500, 1000);
	T_ASSERT("cached over prompt is clamped", T_NEAR(h.rate, 1));
	score_hit_add(&h, 100, -5, 0);
	T_ASSERT("half-life 0 keeps no old evidence; negative cached 0",
		 T_NEAR(h.rate, 0) && T_NEAR(h.weight, 100) &&
			 h.tokens == 200);
	h.rate = NAN;
	h.weight = INFINITY;
	score_hit_add(&h, 100, 50, 1000);
	T_ASSERT("damaged evidence starts again",
		 T_NEAR(h.rate, 0.5) && T_NEAR(h.weight, 100) &&
			 h.tokens == 300);

	T_ASSERT("no hits: the prior, 0 tokens",
		 T_NEAR(score_hit_pick(&p, "x", &m, &tok), 0.9) && !m &&
			 tok == 0);
	memset(hs, 0, sizeof(hs));
	snprintf(hs[0].tag, sizeof(hs[0].tag), "x");
	p.hits = hs;
	p.n_hits = 1;
	for (i = 0; i < 9; i++)
		score_hit_add(&hs[0], 100, 20, 50);
	T_ASSERT("900 tokens < 1000: still the prior",
		 T_NEAR(score_hit_pick(&p, "x", &m, &tok), 0.9) && !m &&
			 tok == 900);
	score_hit_add(&hs[0], 100, 20, 50);
	T_ASSERT("1000 tokens: the measured rate",
		 T_NEAR(score_hit_pick(&p, "x", &m, &tok), 0.2) && m &&
			 tok == 1000);
	/* The decayed weight is tiny (half-life 50 tokens) but the
	 * undecayed total only grows: once measured, always measured. */
	for (i = 0; i < 50; i++) {
		score_hit_add(&hs[0], 100, i % 2 ? 100 : 0, 50);
		(void)score_hit_pick(&p, "x", &m, NULL);
		if (!m)
			break;
	}
	T_ASSERT("no flapping: measured on every one of 50 more answers",
		 i == 50 && hs[0].weight < 200);
	T_ASSERT("another tag: the prior",
		 T_NEAR(score_hit_pick(&p, "y", &m, NULL), 0.9) && !m);
	p.hit_evidence_tokens = 0;
	T_ASSERT("evidence 0 still needs a token seen",
		 T_NEAR(score_hit_pick(&p, "y", &m, NULL), 0.9) && !m);
}

/* An endpoint whose tag or provider_name holds the upstream key is never
 * ranked, and neither name keeps any of the key (docs/design.md
 * section 3). */
static void
test_secret(void)
{
	static const char key[] = "sk-or-v1-0123456789abcdef";
	char json[2048], name[200];
	struct score_params p = PARAMS;
	struct score_result r;
	const struct score_endpoint *e;
	size_t i, leaks = 0, secret = 0;
	int n;

	/* A name longer than what is kept, the key past the cut: a check
	 * after the copy would keep its first bytes. */
	memset(name, 'x', 120);
	snprintf(name + 120, sizeof(name) - 120, "%s", key);
#define SECRET_EP(tag, nm, tput)                                                  \
	"{\"tag\":\"" tag "\",\"provider_name\":\"" nm "\","                \
	"\"pricing\":{\"prompt\":\"0.000001\",\"completion\":\"0.000001\"}," \
	"\"status\":0,\"uptime_last_30m\":99,"                               \
	"\"throughput_last_30m\":{\"p50\":" tput "}}"
	n = snprintf(json, sizeof(json),
	             "{\"data\":{\"id\":\"m/x\",\"endpoints\":["
	             SECRET_EP("%s", "Evil", "900") "," SECRET_EP("evil2", "%s", "800") ","
	             SECRET_EP("pre-%s-post", "Evil3", "700") ","
	             SECRET_EP("good", "Good", "10") "]}}",
	             key, name, key);
#undef SECRET_EP
	T_ASSERT("secret: document fits", n > 0 && (size_t)n < sizeof(json));
	p.secret = key;
	T_ASSERT("secret: parses", run(json, 1200, &p, &r) == ORGW_OK);
	T_ASSERT("secret: only the clean endpoint is ranked",
	         r.n == 4 && r.n_ranked == 1 && strcmp(r.v[0].tag, "good") == 0);
	for (i = 0; i < r.n; i++) {
		e = &r.v[i];
		if (strstr(e->tag, "sk-or") != NULL ||
		    strstr(e->provider_name, "sk-or") != NULL ||
		    strstr(e->why, "sk-or") != NULL)
			leaks++;
		if (e->excluded != NULL && strcmp(e->excluded, "secret") == 0 &&
		    strcmp(e->tag, SCORE_WITHHELD) == 0 &&
		    strcmp(e->provider_name, SCORE_WITHHELD) == 0)
			secret++;
	}
	T_ASSERT("secret: no tag, name or reason keeps any of the key",
	         leaks == 0);
	T_ASSERT("secret: the three excluded as secret, names withheld",
	         secret == 3);
	score_result_free(&r);

	p.secret = NULL;
	T_ASSERT("secret: without a key to look for, the names are kept",
	         run(json, 1200, &p, &r) == ORGW_OK && (e = find(&r, key)) &&
	             e->excluded == NULL);
	score_result_free(&r);
}

int
main(void)
{
	test_window();
	test_price();
	test_example();
	test_exclusions();
	test_ranking();
	test_garbage();
	test_extremes();
	test_terms();
	test_hits();
	test_secret();
	return T_REPORT();
}
