/*
 * orgw-score.c - main() of the scorer (SPEC section 1, issue 3), run by
 * cron every 3 hours (deploy/crontab) or by hand.
 *
 * For every model in MODELS_SEEN plus TARGET_MODEL (or only the --model
 * ones) it fetches GET {UPSTREAM_URL}/models/{author}/{slug}/endpoints
 * with the upstream key, scores the endpoints at the current UTC time
 * and rewrites PROVIDER_CANDIDATE:<model>.  It never writes the live
 * lock BEST_PROVIDER.  The work is scorerun_models(): parallel fetches
 * on one libcurl multi handle, no state lock during any fetch, one short
 * exclusive transaction per model.  A non-dry run ends with store_tidy()
 * (recover if needed, gdbm_reorganize; STYLE.md 7).
 *
 * --dry-run writes nothing: MODELS_SEEN is read in a reader transaction
 * (GDBM_READER, never a writer open, which may touch the file), no
 * candidates are written and there is no tidy.
 *
 * Output: a ranking table per model (stdout), or one JSON document with
 * --json.  Warnings go to stderr.  Exit: 0 every model scored, 1 some
 * failed, 2 usage or configuration error.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "clock.h"
#include "conf.h"
#include "fetchmany.h"
#include "harden.h"
#include "log.h"
#include "record.h"
#include "scorerun.h"
#include "store.h"
#include "upstream.h"

#define EXIT_SOME_FAILED 1
#define EXIT_USAGE 2

#define SCORE_TIMEOUT_MS_MAX 600000	/* --timeout-ms upper bound */
#define TIDY_LOCK_TIMEOUT_MS 10000	/* tidy waits longer than a worker */
#define PER_MTOK 1e6			/* USD/token -> USD per 1M tokens */

struct opts {
	const char *config;	/* --config, or NULL for ORGW_CONFIG */
	struct scorerun_model *models;	/* --model list (malloc'd) */
	size_t n_models;
	bool dry_run;
	bool json;
	int parallel;
	int64_t timeout_ms;
};

/* What the run did, for both output forms. */
struct outcome {
	struct scorerun_model *v;
	size_t n, failed;
	int64_t started_at;	/* unix seconds */
	int64_t wall_ms;	/* list + fetch + score + write */
	bool tidied;		/* store_tidy ran */
	enum orgw_err tidy_err;
};

static void
usage(FILE *f)
{
	fputs("usage: orgw-score [--model ID]... [--dry-run] [--json] "
	      "[--config FILE]\n"
	      "                  [--parallel N] [--timeout-ms MS]\n"
	      "\n"
	      "Fetches every seen and target model's endpoints from "
	      "OpenRouter,\n"
	      "scores them (SPEC section 6) and rewrites "
	      "PROVIDER_CANDIDATE:<model>.\n"
	      "Never changes a live lock (BEST_PROVIDER).\n"
	      "\n"
	      "  --model ID       only this model (repeatable)\n"
	      "  --dry-run        print the ranking, write nothing\n"
	      "  --json           one JSON document instead of tables "
	      "(prices in USD/token)\n"
	      "  --config FILE    configuration file (default: $ORGW_CONFIG)\n"
	      "  --parallel N     fetches at once, 1..64 (default 8)\n"
	      "  --timeout-ms MS  per fetch (default 15000)\n"
	      "  -h, --help       this text\n"
	      "\n"
	      "Exit status: 0 all scored, 1 some failed, 2 usage or "
	      "configuration error.\n",
	      f);
}

/* A decimal integer in [min, max] (conf_parse_ll, as in the config
 * file); false when it is not one. */
static bool
parse_num(const char *s, long min, long max, long *out)
{
	long long v;

	if (conf_parse_ll(s, min, max, &v) != CONF_NUM_OK)
		return false;
	*out = (long)v;
	return true;
}

/* Adds a --model; 0 or EXIT_USAGE after a message. */
static int
add_model(struct opts *o, const char *v)
{
	enum orgw_err e = scorerun_add(&o->models, &o->n_models, v);

	if (e == ORGW_EINVAL) {
		fprintf(stderr, "orgw-score: --model: not a valid model id: %s\n",
			v);
		return EXIT_USAGE;
	}
	if (e != ORGW_OK) {
		fputs("orgw-score: out of memory\n", stderr);
		return EXIT_USAGE;
	}
	return 0;
}

/* A numeric option's value in [1, max]; 0 or EXIT_USAGE after a
 * message. */
static int
num_opt(const char *name, const char *v, long max, long *out)
{
	if (parse_num(v, 1, max, out))
		return 0;
	fprintf(stderr, "orgw-score: %s: want 1..%ld, got \"%s\"\n", name, max,
		v);
	return EXIT_USAGE;
}

enum { OPT_MODEL = 256, OPT_DRY_RUN, OPT_JSON, OPT_CONFIG, OPT_PARALLEL,
       OPT_TIMEOUT_MS };

/* Fills o from argv; returns 0, or EXIT_USAGE after a message (-1 for
 * --help, already printed).  Options only: the first other argument is
 * an error ('+': getopt_long stops there instead of moving it). */
static int
parse_args(int argc, char *argv[], struct opts *o)
{
	static const struct option longopts[] = {
		{"model", required_argument, NULL, OPT_MODEL},
		{"dry-run", no_argument, NULL, OPT_DRY_RUN},
		{"json", no_argument, NULL, OPT_JSON},
		{"config", required_argument, NULL, OPT_CONFIG},
		{"parallel", required_argument, NULL, OPT_PARALLEL},
		{"timeout-ms", required_argument, NULL, OPT_TIMEOUT_MS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	long l;
	int ch, rc = 0;

	opterr = 0;	/* our messages, below */
	while (rc == 0 &&
	       (ch = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			usage(stdout);
			return -1;
		case OPT_DRY_RUN:
			o->dry_run = true;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_MODEL:
			rc = add_model(o, optarg);
			break;
		case OPT_CONFIG:
			o->config = optarg;
			break;
		case OPT_PARALLEL:
			if ((rc = num_opt("--parallel", optarg,
					  FETCHMANY_PARALLEL_MAX, &l)) == 0)
				o->parallel = (int)l;
			break;
		case OPT_TIMEOUT_MS:
			if ((rc = num_opt("--timeout-ms", optarg,
					  SCORE_TIMEOUT_MS_MAX, &l)) == 0)
				o->timeout_ms = l;
			break;
		case ':':
			fprintf(stderr, "orgw-score: %s needs a value\n",
				argv[optind - 1]);
			usage(stderr);
			return EXIT_USAGE;
		default:
			/* optopt: an unknown short option (it may share its
			 * argv element with others); else argv names it. */
			if (optopt > 0 && optopt < OPT_MODEL)
				fprintf(stderr,
					"orgw-score: unknown argument: -%c\n",
					optopt);
			else
				fprintf(stderr,
					"orgw-score: unknown argument: %s\n",
					argv[optind - 1]);
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (rc == 0 && optind < argc) {
		fprintf(stderr, "orgw-score: unknown argument: %s\n",
			argv[optind]);
		usage(stderr);
		return EXIT_USAGE;
	}
	return rc;
}

/* "YYYY-MM-DD HH:MM:SS" in UTC. */
static void
fmt_utc(int64_t t, char *dst, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (gmtime_r(&tt, &tm) == NULL ||
	    strftime(dst, n, "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(dst, n, "%lld", (long long)t);
}

/* A table cell: "%.4g" of v (prices, score). */
static void
cell_g(char *dst, size_t n, double v)
{
	snprintf(dst, n, "%.4g", v);
}

/* A table cell: "%.1f" of v, or "-" when absent (null upstream). */
static void
cell_f1(char *dst, size_t n, bool have, double v)
{
	if (have)
		snprintf(dst, n, "%.1f", v);
	else
		snprintf(dst, n, "-");
}

static int
max_int(int a, int b)
{
	return a > b ? a : b;
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
	fmt_utc(r->scored_at, when, sizeof(when));
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
		wt = max_int(wt, (int)strlen(log_safe(tg, sizeof(tg),
							       res->v[i].tag)));
		wp = max_int(wp, (int)strlen(log_safe(
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
		cell_g(p[0], sizeof(p[0]), e->prompt * PER_MTOK);
		cell_g(p[1], sizeof(p[1]), e->cache_read * PER_MTOK);
		cell_g(p[2], sizeof(p[2]), e->completion * PER_MTOK);
		cell_g(p[3], sizeof(p[3]), e->effective_input * PER_MTOK);
		cell_g(p[4], sizeof(p[4]), e->cost * PER_MTOK);
		cell_g(score, sizeof(score), e->score);
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
print_text(const struct orgw_conf *c, const struct opts *o,
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
	fmt_utc(x->started_at, when, sizeof(when));
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
	cJSON *m, *cands, *excl;
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
print_json(const struct orgw_conf *c, const struct opts *o,
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

/* Loads the configuration; 0 or EXIT_USAGE after a message. */
static int
load_conf(struct orgw_conf *c, const char *path)
{
	char err[512];

	if (conf_load(c, path, err, sizeof(err)) != ORGW_OK) {
		fprintf(stderr, "orgw-score: configuration: %s\n", err);
		return EXIT_USAGE;
	}
	/* Without the key OpenRouter hides throughput (OPENROUTER.md 1),
	 * and every score would be 0. */
	if (c->openrouter_api_key == NULL || c->openrouter_api_key[0] == '\0') {
		fputs("orgw-score: configuration: OPENROUTER_API_KEY is not "
		      "set (the endpoints fetch needs it)\n",
		      stderr);
		return EXIT_USAGE;
	}
	return 0;
}

int
main(int argc, char *argv[])
{
	struct orgw_conf conf;
	struct opts o;
	struct outcome x;
	struct sigaction sa;
	int64_t t0;
	enum orgw_err err;
	size_t dropped;
	int rc, run_fd = -1;

	if (harden_no_dumps() != 0)
		perror("orgw-score: turning core dumps off");
	memset(&o, 0, sizeof(o));
	memset(&x, 0, sizeof(x));
	o.parallel = SCORERUN_PARALLEL;
	o.timeout_ms = SCORERUN_TIMEOUT_MS;
	/* A closed stdout (| head) shows as a write error, not a kill. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) == -1) {
		perror("orgw-score: sigaction");
		return EXIT_SOME_FAILED;
	}
	clock_init();
	if (conf_init(&conf) != ORGW_OK) {
		fputs("orgw-score: out of memory\n", stderr);
		return EXIT_SOME_FAILED;
	}
	if ((rc = parse_args(argc, argv, &o)) != 0) {
		rc = rc < 0 ? 0 : rc;
		goto out;
	}
	if ((rc = load_conf(&conf, o.config)) != 0)
		goto out;
	store_set_mode(conf.state_mode);
	if (upstream_global_init() != ORGW_OK) {
		fputs("orgw-score: libcurl initialisation failed\n", stderr);
		rc = EXIT_SOME_FAILED;
		goto out;
	}

	x.started_at = clock_now_s();
	/* One run that writes at a time, whether from cron or /__cron. */
	if (!o.dry_run) {
		int64_t retry;

		err = store_run_begin(conf.state_path, 0, x.started_at,
				      &run_fd, &retry);
		if (err == ORGW_EBUSY) {
			fprintf(stderr, "orgw-score: another scoring run is in "
				"progress (%s.score is locked); nothing done\n",
				conf.state_path);
			upstream_global_cleanup();
			rc = EXIT_SOME_FAILED;
			goto out;
		}
		if (err != ORGW_OK)
			log_warn("scorer: no scoring lock: %s; running anyway",
				 orgw_strerror(err));
		(void)scorerun_prune(&conf, &dropped);
	}
	t0 = clock_mono_ms();
	if (o.n_models > 0) {
		x.v = o.models;
		x.n = o.n_models;
		o.models = NULL;
		o.n_models = 0;
	} else {
		x.v = scorerun_list(&conf, &x.n);
	}
	x.failed = scorerun_models(&conf, x.v, x.n, o.parallel, o.timeout_ms,
				   o.dry_run);
	x.wall_ms = clock_mono_ms() - t0;
	if (!o.dry_run) {
		x.tidied = true;
		x.tidy_err = store_tidy(conf.state_path, TIDY_LOCK_TIMEOUT_MS);
		if (x.tidy_err != ORGW_OK)
			log_warn("scorer: state tidy of %s: %s",
				 conf.state_path, orgw_strerror(x.tidy_err));
	}

	rc = x.failed > 0 ? EXIT_SOME_FAILED : 0;
	if (o.json) {
		if (!print_json(&conf, &o, &x))
			rc = EXIT_SOME_FAILED;
	} else
		print_text(&conf, &o, &x);
	if (fflush(stdout) == EOF || ferror(stdout)) {
		perror("orgw-score: stdout");
		rc = EXIT_SOME_FAILED;
	}
	upstream_global_cleanup();
out:
	store_run_end(run_fd);
	scorerun_free(x.v, x.n);
	free(x.v);
	scorerun_free(o.models, o.n_models);
	free(o.models);
	conf_free(&conf);
	return rc;
}
