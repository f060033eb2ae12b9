/*
 * cmd_score.c - the scoring run (cmd_score.h; docs/design.md section 1),
 * run by cron every 3 hours (deploy/crontab) or by hand.
 *
 * For every model in MODELS_SEEN plus TARGET_MODEL (or only the --model
 * ones) it fetches GET {UPSTREAM_URL}/models/{author}/{slug}/endpoints
 * with the upstream key, scores the endpoints at the current UTC time
 * and rewrites PROVIDER_CANDIDATE:<model>.  It never writes the live
 * lock BEST_PROVIDER.  The work is scorerun_models(): parallel fetches
 * on one libcurl multi handle, no state lock during any fetch, one short
 * exclusive transaction per model.  A non-dry run ends with store_tidy()
 * (recover if needed, gdbm_reorganize; docs/style.md 7).
 *
 * --dry-run writes nothing: MODELS_SEEN is read in a reader transaction
 * (GDBM_READER, never a writer open, which may touch the file), no
 * candidates are written and there is no tidy.
 *
 * Output: a ranking table per model (stdout), or one JSON document with
 * --json.  Warnings go to stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "clock.h"
#include "cmd_score.h"
#include "curlsetup.h"
#include "log.h"
#include "scorerun.h"
#include "store.h"
#include "upstream.h"

#define TIDY_LOCK_TIMEOUT_MS 10000	/* tidy waits longer than a worker */
#define PER_MTOK 1e6			/* USD/token -> USD per 1M tokens */

/* What the run did, for both output forms. */
struct outcome {
	struct scorerun_model *v;
	size_t n, failed;
	int64_t started_at;	/* unix seconds */
	int64_t wall_ms;	/* list + fetch + score + write */
	bool tidied;		/* store_tidy ran */
	enum orgw_err tidy_err;
};

/* A table cell: "%.1f" of v, or "-" when absent (null upstream). */
static void
cell_f1(char *dst, size_t n, bool have, double v)
{
	if (have)
		snprintf(dst, n, "%.1f", v);
	else
		snprintf(dst, n, "-");
}

/* One model's table; see the legend printed by print_text(). */
static void
print_model(const struct scorerun_model *r, bool dry_run)
{
	const struct score_result *res = &r->res;
	char when[32], p[5][24], tput[24], up[24], bonus[16], score[24];
	/* Names from upstream, shown with control characters escaped. */
	char tg[sizeof(res->v[0].tag) * 4], pn[sizeof(res->v[0].provider_name) * 4];
	const char *note;
	int wt = 3, wp = 8;
	size_t i;

	if (r->err != ORGW_OK) {
		printf("== %s: FAILED after %lld ms: %s (%s)\n", r->model,
		       (long long)r->ms, r->error,
		       dry_run ? "dry run" : "old candidates kept");
		return;
	}
	clock_fmt_utc(r->scored_at, when, sizeof(when));
	printf("== %s: scored at %s UTC (%lld), price clock %04d UTC, "
	       "fetch %lld ms, %zu ranked, %zu excluded\n",
	       r->model, when, (long long)r->scored_at, r->utc_hhmm,
	       (long long)r->ms, res->n_ranked, res->n - res->n_ranked);
	if (!dry_run && !r->saved)
		printf("   NOT WRITTEN: state store: %s\n",
		       orgw_strerror(r->save_err));
	if (res->n == 0) {
		printf("   (no endpoints)\n");
		return;
	}
	for (i = 0; i < res->n; i++) {
		wt = cli_max_int(wt, (int)strlen(log_safe(tg, sizeof(tg),
							       res->v[i].tag)));
		wp = cli_max_int(wp, (int)strlen(log_safe(
					 pn, sizeof(pn), res->v[i].provider_name)));
	}
	if (res->n_ranked > 0)
		printf("%4s  %-*s  %-*s %9s %9s %9s %9s %9s %8s %6s %5s %5s "
		       "%10s %5s %-8s %10s  %s\n",
		       "rank", wt, "tag", wp, "provider", "prompt", "cache_rd",
		       "complet", "eff_in", "cost", "tput_p50", "uptime",
		       "cache", "bonus", "score", "hit", "hit_src", "hit_tok",
		       "note");
	for (i = 0; i < res->n_ranked; i++) {
		const struct score_endpoint *e = &res->v[i];
		cli_cell_g(p[0], sizeof(p[0]), e->prompt * PER_MTOK);
		cli_cell_g(p[1], sizeof(p[1]), e->cache_read * PER_MTOK);
		cli_cell_g(p[2], sizeof(p[2]), e->completion * PER_MTOK);
		cli_cell_g(p[3], sizeof(p[3]), e->effective_input * PER_MTOK);
		cli_cell_g(p[4], sizeof(p[4]), e->cost * PER_MTOK);
		cli_cell_g(score, sizeof(score), e->score);
		cell_f1(tput, sizeof(tput), e->has_throughput, e->throughput);
		cell_f1(up, sizeof(up), e->has_uptime, e->uptime);
		snprintf(bonus, sizeof(bonus), "%g", e->bonus);
		note = !e->has_throughput ? "  no throughput: ranked last" :
		       e->free		  ? "  free: ranked by throughput" :
					    "";
		printf("%4zu  %-*s  %-*s %9s %9s %9s %9s %9s %8s %6s %5s %5s "
		       "%10s %5.3g %-8s %10lld%s\n",
		       i + 1, wt, log_safe(tg, sizeof(tg), e->tag), wp,
		       log_safe(pn, sizeof(pn), e->provider_name), p[0], p[1],
		       p[2], p[3], p[4], tput, up,
		       e->implicit_cache ? "yes" : "no", bonus, score,
		       e->hit_rate, e->hit_measured ? "measured" : "assumed",
		       (long long)e->hit_tokens, note);
	}
	for (i = res->n_ranked; i < res->n; i++) {
		const struct score_endpoint *e = &res->v[i];
		printf("%4s  %-*s  %-*s excluded: %s: %s\n", "-", wt,
		       e->tag[0] ? log_safe(tg, sizeof(tg), e->tag) : "?", wp,
		       log_safe(pn, sizeof(pn), e->provider_name),
		       e->excluded, e->why);
	}
}

static void
print_text(const struct orgw_conf *c, const struct cli_opts *o,
	   const struct outcome *x)
{
	char when[32];
	size_t i;

	printf("# prices in USD per 1M tokens at the price clock; "
	       "eff_in = hit*cache_rd + (1-hit)*prompt, hit = HIT_RATE %g\n"
	       "# (assumed; 1-hit = %g) until a provider has served "
	       "HIT_RATE_EVIDENCE_TOKENS %lld prompt\n"
	       "# tokens of the model (hit_tok), then its measured "
	       "rate;\n"
	       "# cost = 0.4*eff_in + 0.6*complet; score = tput_p50 / "
	       "cost(USD/token) * bonus (CACHE_BONUS %g\n"
	       "# with implicit caching); excluded: status != 0, uptime "
	       "< MIN_UPTIME %g, bad price,\n"
	       "# cooling down (breaker tripped: never ranked until the "
	       "cooldown ends)\n",
	       c->hit_rate, 1 - c->hit_rate,
	       (long long)c->hit_rate_evidence_tokens, c->cache_bonus,
	       c->min_uptime);
	if (x->n == 0)
		printf("# no models to score: MODELS_SEEN is empty and "
		       "TARGET_MODEL is not set\n");
	for (i = 0; i < x->n; i++)
		print_model(&x->v[i], o->dry_run);
	if (x->tidied && x->tidy_err != ORGW_OK)
		printf("# state tidy failed: %s\n", orgw_strerror(x->tidy_err));
	clock_fmt_utc(x->started_at, when, sizeof(when));
	printf("orgw-score %sZ: %zu models, %zu scored, %zu failed, "
	       "wall %lld ms (parallel %d, timeout %lld ms)%s\n",
	       when, x->n, x->n - x->failed, x->failed, (long long)x->wall_ms,
	       o->parallel, (long long)o->timeout_ms,
	       o->dry_run ? ", dry run: nothing written" : "");
}

/* Adds the number v, or null when !have; false on allocation failure. */
static bool
add_num(cJSON *o, const char *name, bool have, double v)
{
	if (!have)
		return cJSON_AddNullToObject(o, name) != NULL;
	return cJSON_AddNumberToObject(o, name, v) != NULL;
}

/* One endpoint with every term (prices in USD/token, as in the state). */
static bool
json_endpoint(cJSON *arr, const struct score_endpoint *e, size_t rank)
{
	cJSON *j = cJSON_CreateObject();

	if (j == NULL || !cJSON_AddItemToArray(arr, j)) {
		cJSON_Delete(j);
		return false;
	}
	return (e->excluded != NULL ||
		cJSON_AddNumberToObject(j, "rank", (double)rank) != NULL) &&
	       cJSON_AddStringToObject(j, "tag", e->tag) != NULL &&
	       cJSON_AddStringToObject(j, "provider_name", e->provider_name) !=
		       NULL &&
	       (e->excluded == NULL ||
		(cJSON_AddStringToObject(j, "excluded", e->excluded) != NULL &&
		 cJSON_AddStringToObject(j, "why", e->why) != NULL &&
		 cJSON_AddNumberToObject(j, "status", e->status) != NULL)) &&
	       cJSON_AddNumberToObject(j, "prompt", e->prompt) != NULL &&
	       cJSON_AddNumberToObject(j, "cache_read", e->cache_read) !=
		       NULL &&
	       cJSON_AddNumberToObject(j, "completion", e->completion) !=
		       NULL &&
	       cJSON_AddNumberToObject(j, "hit_rate", e->hit_rate) != NULL &&
	       cJSON_AddStringToObject(j, "hit_source",
				       e->hit_measured ? "measured" :
							 "assumed") != NULL &&
	       cJSON_AddNumberToObject(j, "hit_tokens",
				       (double)e->hit_tokens) != NULL &&
	       cJSON_AddNumberToObject(j, "effective_input",
				       e->effective_input) != NULL &&
	       cJSON_AddNumberToObject(j, "cost", e->cost) != NULL &&
	       add_num(j, "throughput", e->has_throughput, e->throughput) &&
	       add_num(j, "uptime", e->has_uptime, e->uptime) &&
	       cJSON_AddBoolToObject(j, "implicit_cache", e->implicit_cache) !=
		       NULL &&
	       cJSON_AddNumberToObject(j, "bonus", e->bonus) != NULL &&
	       cJSON_AddNumberToObject(j, "score", e->score) != NULL &&
	       cJSON_AddBoolToObject(j, "free", e->free) != NULL &&
	       cJSON_AddNumberToObject(j, "max_completion_tokens",
				       (double)e->max_completion_tokens) !=
		       NULL;
}

static bool
json_model(cJSON *models, const struct scorerun_model *r, bool dry_run)
{
	const struct score_result *res = &r->res;
	cJSON *m, *cands = NULL, *excl = NULL;
	bool ok;
	size_t i;

	if ((m = cJSON_AddObjectToObject(models, r->model)) == NULL)
		return false;
	ok = cJSON_AddBoolToObject(m, "ok", r->err == ORGW_OK) != NULL &&
	     cJSON_AddNumberToObject(m, "fetch_ms", (double)r->ms) != NULL &&
	     (dry_run ||
	      cJSON_AddBoolToObject(m, "saved", r->saved) != NULL);
	if (ok && r->err != ORGW_OK)
		return cJSON_AddStringToObject(m, "error", r->error) != NULL;
	ok = ok &&
	     cJSON_AddNumberToObject(m, "scored_at", (double)r->scored_at) !=
		     NULL &&
	     cJSON_AddNumberToObject(m, "utc_hhmm", r->utc_hhmm) != NULL &&
	     cJSON_AddStringToObject(m, "winner",
				     res->n_ranked ? res->v[0].tag : "") !=
		     NULL &&
	     (cands = cJSON_AddArrayToObject(m, "candidates")) != NULL &&
	     (excl = cJSON_AddArrayToObject(m, "excluded")) != NULL;
	for (i = 0; ok && i < res->n; i++)
		ok = json_endpoint(i < res->n_ranked ? cands : excl,
				   &res->v[i], i + 1);
	if (ok && !dry_run && !r->saved)
		ok = cJSON_AddStringToObject(m, "error",
					     orgw_strerror(r->save_err)) !=
		     NULL;
	return ok;
}

/* Prints the --json document; false when it could not be built. */
static bool
print_json(const struct orgw_conf *c, const struct cli_opts *o,
	   const struct outcome *x)
{
	cJSON *d, *params, *models = NULL;
	char *s = NULL;
	bool ok;
	size_t i;

	d = cJSON_CreateObject();
	ok = d != NULL &&
	     cJSON_AddNumberToObject(d, "started_at", (double)x->started_at) !=
		     NULL &&
	     cJSON_AddBoolToObject(d, "dry_run", o->dry_run) != NULL &&
	     cJSON_AddNumberToObject(d, "parallel", o->parallel) != NULL &&
	     cJSON_AddNumberToObject(d, "timeout_ms", (double)o->timeout_ms) !=
		     NULL &&
	     cJSON_AddStringToObject(d, "price_unit", "USD per token") !=
		     NULL &&
	     (params = cJSON_AddObjectToObject(d, "params")) != NULL &&
	     cJSON_AddNumberToObject(params, "hit_rate", c->hit_rate) !=
		     NULL &&
	     cJSON_AddNumberToObject(params, "cache_bonus", c->cache_bonus) !=
		     NULL &&
	     cJSON_AddNumberToObject(params, "min_uptime", c->min_uptime) !=
		     NULL &&
	     cJSON_AddNumberToObject(params, "hit_rate_evidence_tokens",
				     (double)c->hit_rate_evidence_tokens) !=
		     NULL &&
	     cJSON_AddNumberToObject(d, "wall_ms", (double)x->wall_ms) !=
		     NULL &&
	     cJSON_AddNumberToObject(d, "models_total", (double)x->n) !=
		     NULL &&
	     cJSON_AddNumberToObject(d, "models_scored",
				     (double)(x->n - x->failed)) != NULL &&
	     cJSON_AddNumberToObject(d, "models_failed", (double)x->failed) !=
		     NULL &&
	     (!x->tidied ||
	      cJSON_AddStringToObject(d, "tidy",
				      x->tidy_err == ORGW_OK ?
					      "ok" :
					      orgw_strerror(x->tidy_err)) !=
		      NULL) &&
	     (models = cJSON_AddObjectToObject(d, "models")) != NULL;
	for (i = 0; ok && i < x->n; i++)
		ok = json_model(models, &x->v[i], o->dry_run);
	if (ok && (s = cJSON_Print(d)) != NULL)
		ok = puts(s) != EOF;
	else
		ok = false;
	cJSON_free(s);
	cJSON_Delete(d);
	return ok;
}

int
scorecmd_add_model(struct cli_opts *o, const char *v)
{
	enum orgw_err e = scorerun_add(&o->models, &o->n_models, v);

	if (e == ORGW_EINVAL) {
		fprintf(stderr, "orgw-score: --model: not a valid model id: %s\n",
			v);
		return CLI_EXIT_USAGE;
	}
	if (e != ORGW_OK) {
		fputs("orgw-score: out of memory\n", stderr);
		return CLI_EXIT_USAGE;
	}
	return 0;
}

/* Takes the scoring lock: one run that writes at a time, whether from
 * cron or /__cron.  0, or CLI_EXIT_FAILED after a message when another
 * run holds it; a lock that cannot be had otherwise is only a warning. */
static int
run_lock(const struct orgw_conf *c, int64_t now, struct store_run **run)
{
	int64_t retry;
	size_t dropped;
	enum orgw_err err = store_run_begin(c, 0, now, run, &retry);

	if (err == ORGW_EBUSY) {
		fprintf(stderr, "orgw-score: another scoring run is in "
			"progress (%s%s is locked); nothing done\n",
			cli_state_where(c),
			c->state_backend == CONF_BACKEND_REDIS ?
			" orgw:RUN" : ".score");
		return CLI_EXIT_FAILED;
	}
	if (err != ORGW_OK)
		log_warn("scorer: no scoring lock: %s; running anyway",
			 orgw_strerror(err));
	(void)scorerun_prune(c, &dropped);
	return 0;
}

/* Lists (or takes o's --model list), fetches, scores and writes the
 * models into x, then tidies the state unless it is a dry run. */
static void
run_models(const struct orgw_conf *c, struct cli_opts *o, struct outcome *x)
{
	int64_t t0 = clock_mono_ms();

	if (o->n_models > 0) {
		x->v = o->models;
		x->n = o->n_models;
		o->models = NULL;
		o->n_models = 0;
	} else {
		x->v = scorerun_list(c, &x->n);
	}
	x->failed = scorerun_models(c, x->v, x->n, o->parallel, o->timeout_ms,
				    o->dry_run);
	x->wall_ms = clock_mono_ms() - t0;
	if (!o->dry_run) {
		x->tidied = true;
		x->tidy_err = store_tidy(c, TIDY_LOCK_TIMEOUT_MS);
		if (x->tidy_err != ORGW_OK)
			log_warn("scorer: state tidy of %s: %s",
				 c->state_path, orgw_strerror(x->tidy_err));
	}
}

int
scorecmd_main(struct orgw_conf *c, struct cli_opts *o)
{
	struct outcome x;
	struct store_run *run = NULL;
	int rc;

	if ((rc = cli_load_conf(c, o->config, true)) != 0)
		return rc;
	curlsetup_ca_file(c->upstream_ca_file);
	if (upstream_global_init() != ORGW_OK) {
		fputs("orgw-score: libcurl initialisation failed\n", stderr);
		return CLI_EXIT_FAILED;
	}
	memset(&x, 0, sizeof(x));
	x.started_at = clock_now_s();
	if (!o->dry_run && (rc = run_lock(c, x.started_at, &run)) != 0)
		goto out;
	run_models(c, o, &x);
	rc = x.failed > 0 ? CLI_EXIT_FAILED : 0;
	if (o->json) {
		if (!print_json(c, o, &x))
			rc = CLI_EXIT_FAILED;
	} else
		print_text(c, o, &x);
	rc = cli_flush(rc);
out:
	upstream_global_cleanup();
	store_run_end(run);
	scorerun_free(x.v, x.n);
	free(x.v);
	return rc;
}
