/*
 * orgw-score.c - main() of the scorer (docs/design.md section 1), run by
 * cron every 3 hours (deploy/crontab) or by hand.
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
 * --json.  Warnings go to stderr.  Exit: 0 every model scored, 1 some
 * failed, 2 usage or configuration error.
 *
 * Operator commands (see "Operator commands" below):
 * status, unlock, cool, uncool run state.c transactions on the workers'
 * state and need no upstream key; rescore MODEL is the run --model MODEL
 * does.  Exit: 0 done, 1 state unusable, 2 usage or configuration.
 *
 * Shared hosting: without --config and ORGW_CONFIG, an
 * orgw.conf beside the program (/proc/self/exe) is read, and
 * --cron-line prints the crontab line to paste into a host's cron panel,
 * with absolute paths.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "cli.h"
#include "clock.h"
#include "cmd_conversations.h"
#include "conf.h"
#include "curlsetup.h"
#include "dump.h"
#include "fetchmany.h"
#include "harden.h"
#include "keyadmin.h"
#include "log.h"
#include "record.h"
#include "reqval.h"
#include "scorerun.h"
#include "state.h"
#include "stats.h"
#include "fsafe.h"
#include "store.h"
#include "upstream.h"
#include "version.h"

#define EXIT_SOME_FAILED 1
#define EXIT_USAGE 2

#define SCORE_TIMEOUT_MS_MAX 600000	/* --timeout-ms upper bound */
#define TIDY_LOCK_TIMEOUT_MS 10000	/* tidy waits longer than a worker */
#define PER_MTOK 1e6			/* USD/token -> USD per 1M tokens */
#define COOL_SECONDS_MAX 604800	/* cool: a week at most */

struct opts {
	const char *config;	/* --config, or NULL for ORGW_CONFIG */
	struct scorerun_model *models;	/* --model list (malloc'd) */
	size_t n_models;
	bool dry_run;
	bool json;
	bool cron_line;		/* --cron-line: print it and exit */
	bool dump, load;	/* --dump, --load */
	bool run_opts;		/* --model, --dry-run, --parallel or
				 * --timeout-ms given */
	int parallel;
	int64_t timeout_ms;
	int cmd_argc;		/* a subcommand: cmd_argv[0] is its name */
	char **cmd_argv;
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
	fprintf(f, "usage: orgw-score [--model ID]... [--dry-run] [--json] "
	      "[--config FILE]\n"
	      "                  [--parallel N] [--timeout-ms MS]\n"
	      "       orgw-score [--config FILE] COMMAND [--json] ARGS\n"
	      "       orgw-score [--config FILE] --dump | --load\n"
	      "\n"
	      "Fetches every seen and target model's endpoints from "
	      "OpenRouter,\n"
	      "scores them (docs/design.md section 6) and rewrites each model's "
	      "ranked candidates.\n"
	      "Never changes a live lock.\n"
	      "\n"
	      "  --model ID       only this model (repeatable)\n"
	      "  --dry-run        print the ranking, write nothing\n"
	      "  --json           one JSON document instead of tables "
	      "(prices in USD/token)\n"
	      "  --config FILE    configuration file (default: $ORGW_CONFIG, "
	      "else orgw.conf\n"
	      "                   beside this program, if there is one)\n"
	      "  --dump           write the whole state as JSON lines "
	      "{\"key\",\"value\"} to stdout\n"
	      "  --load           read such lines from stdin into the state "
	      "(each key replaced)\n"
	      "  --parallel N     fetches at once, 1..64 (default 8)\n"
	      "  --timeout-ms MS  per fetch (default 15000)\n"
	      "  --cron-line      print the crontab line that runs this "
	      "program every 3 hours\n"
	      "  --version        print the version and exit\n"
	      "  -h, --help       this text\n"
	      "\n"
	      "Operator commands (the workers' state, under their lock):\n"
	      "  status [MODEL]        locks, candidates, cooldowns, "
	      "failure counts (--json)\n"
	      "  unlock MODEL          drop the live lock: the next request "
	      "relocks\n"
	      "  cool MODEL TAG SECONDS [REASON]\n"
	      "                        cool a provider down (1..%d s); "
	      "a locked one\n"
	      "                        hands the lock to the next candidate "
	      "at once\n"
	      "  uncool MODEL TAG      clear its cooldown and failure count\n"
	      "  rescore MODEL         score that model now (= --model MODEL)\n"
	      "  conversations [--model M] [--json]\n"
	      "                        the recent conversations, their last "
	      "cache break,\n"
	      "                        and the providers under pressure\n"
	      "\n",
	      COOL_SECONDS_MAX);
	keyadmin_usage(f);
	fprintf(f, "\n"
	      "Exit status: 0 all scored (done), 1 some failed (state "
	      "unusable), 2 usage\nor configuration error.\n");
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
       OPT_TIMEOUT_MS, OPT_CRON_LINE, OPT_DUMP, OPT_LOAD, OPT_VERSION };

/* Fills o from argv; returns 0, or EXIT_USAGE after a message (-1 for
 * --help, already printed).  The first other argument starts a
 * subcommand ('+': getopt_long stops there instead of moving it), whose
 * own arguments parse_command() reads. */
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
		{"cron-line", no_argument, NULL, OPT_CRON_LINE},
		{"dump", no_argument, NULL, OPT_DUMP},
		{"load", no_argument, NULL, OPT_LOAD},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, OPT_VERSION},
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
		case OPT_VERSION:
			printf("orgw-score %s\n", orgw_version);
			return -1;
		case OPT_DRY_RUN:
			o->dry_run = true;
			o->run_opts = true;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_MODEL:
			rc = add_model(o, optarg);
			o->run_opts = true;
			break;
		case OPT_CONFIG:
			o->config = optarg;
			break;
		case OPT_CRON_LINE:
			o->cron_line = true;
			break;
		case OPT_DUMP:
			o->dump = true;
			break;
		case OPT_LOAD:
			o->load = true;
			break;
		case OPT_PARALLEL:
			o->run_opts = true;
			if ((rc = num_opt("--parallel", optarg,
					  FETCHMANY_PARALLEL_MAX, &l)) == 0)
				o->parallel = (int)l;
			break;
		case OPT_TIMEOUT_MS:
			o->run_opts = true;
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
		o->cmd_argc = argc - optind;
		o->cmd_argv = argv + optind;
	}
	return rc;
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

/*
 * Operator commands.  They run on the workers' state
 * through state.c's transactions (the same lock file, the same
 * record.c values), so a worker mid-request and an operator never see
 * half a change.  status reads the very document GET /stats serves
 * (stats_json), cut to one model when asked, so the two never disagree.
 */

#define CMD_ARGS_MAX 4
#define COOL_REASON_DEFAULT "operator"

struct cmd_def {
	const char *name;
	int min, max;		/* positional arguments */
	bool json;		/* takes --json */
	const char *args;	/* for messages */
};

static const struct cmd_def cmd_defs[] = {
	{"status", 0, 1, true, "[MODEL]"},
	{"unlock", 1, 1, false, "MODEL"},
	{"cool", 3, 4, false, "MODEL TAG SECONDS [REASON]"},
	{"uncool", 2, 2, false, "MODEL TAG"},
	{"rescore", 1, 1, true, "MODEL"},
};

struct cmd {
	const struct cmd_def *def;
	const char *arg[CMD_ARGS_MAX];
	int n;
	int64_t seconds;	/* cool */
};

static int cmd_usage(const struct cmd_def *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A usage error of a subcommand: message, its synopsis, EXIT_USAGE. */
static int
cmd_usage(const struct cmd_def *d, const char *fmt, ...)
{
	va_list ap;

	fputs("orgw-score: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (d != NULL)
		fprintf(stderr, "\nusage: orgw-score [--config FILE] %s%s %s\n",
			d->name, d->json ? " [--json]" : "", d->args);
	else
		fputs("\n(see orgw-score --help)\n", stderr);
	return EXIT_USAGE;
}

/* REASON: printable ASCII (it is shown in /stats and logs), short
 * enough for the cooldown record. */
static bool
reason_ok(const char *s)
{
	const unsigned char *p;

	if (s[0] == '\0' || strlen(s) >= REC_REASON_MAX)
		return false;
	for (p = (const unsigned char *)s; *p != '\0'; p++)
		if (*p < 0x20 || *p >= 0x7f)
			return false;
	return true;
}

/* Checks the positional arguments of k; 0 or EXIT_USAGE after a
 * message.  Before the configuration is read, so a bad command line is
 * a usage error whatever the configuration. */
static int
cmd_check(struct cmd *k)
{
	const struct cmd_def *d = k->def;
	long long v;

	if (k->n < d->min || k->n > d->max)
		return cmd_usage(d, "%s: wrong number of arguments", d->name);
	if (k->n > 0 && !reqval_model_ok(k->arg[0]))
		return cmd_usage(d, "not a valid model id: %s", k->arg[0]);
	if (k->n > 1 && !state_tag_ok(k->arg[1]))
		return cmd_usage(d,
				 "not a valid provider tag (printable ASCII, "
				 "no blank or ':'): %s",
				 k->arg[1]);
	if (k->n > 2) {
		if (conf_parse_ll(k->arg[2], 1, COOL_SECONDS_MAX, &v) !=
		    CONF_NUM_OK)
			return cmd_usage(d,
					 "SECONDS: want 1..%d, got \"%s\"",
					 COOL_SECONDS_MAX, k->arg[2]);
		k->seconds = v;
	}
	if (k->n > 3 && !reason_ok(k->arg[3]))
		return cmd_usage(d,
				 "REASON: want 1..63 printable ASCII "
				 "characters, got \"%s\"",
				 k->arg[3]);
	return 0;
}

/* Reads the subcommand in o->cmd_argv into k: options (--json,
 * --config, -h) may come anywhere, "--" ends them.  0, -1 (--help
 * printed) or EXIT_USAGE after a message. */
static int
parse_command(struct opts *o, struct cmd *k)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, OPT_JSON},
		{"config", required_argument, NULL, OPT_CONFIG},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *name = o->cmd_argv[0];
	size_t i;
	int ch;

	memset(k, 0, sizeof(*k));
	for (i = 0; i < sizeof(cmd_defs) / sizeof(cmd_defs[0]); i++)
		if (strcmp(name, cmd_defs[i].name) == 0)
			k->def = &cmd_defs[i];
	if (k->def == NULL)
		return cmd_usage(NULL,
				 "unknown argument: %s (commands: status, "
				 "unlock, cool, uncool, rescore, "
				 "conversations, key)",
				 name);
	optind = 0;	/* glibc: start over on the new vector */
	opterr = 0;
	while ((ch = getopt_long(o->cmd_argc, o->cmd_argv, ":h", longopts,
				 NULL)) != -1) {
		switch (ch) {
		case 'h':
			usage(stdout);
			return -1;
		case OPT_JSON:
			if (!k->def->json)
				return cmd_usage(k->def, "%s takes no --json",
						 name);
			o->json = true;
			break;
		case OPT_CONFIG:
			o->config = optarg;
			break;
		case ':':
			return cmd_usage(k->def, "%s needs a value",
					 o->cmd_argv[optind - 1]);
		default:
			return cmd_usage(k->def, "unknown argument: %s",
					 o->cmd_argv[optind - 1]);
		}
	}
	for (; optind < o->cmd_argc; optind++) {
		if (k->n == CMD_ARGS_MAX)
			return cmd_usage(k->def, "%s: too many arguments",
					 name);
		k->arg[k->n++] = o->cmd_argv[optind];
	}
	/* rescore is a run: it takes them all but --model. */
	if (strcmp(name, "rescore") == 0 && o->n_models > 0)
		return cmd_usage(k->def, "rescore takes no --model");
	if (strcmp(name, "rescore") != 0 && o->run_opts)
		return cmd_usage(k->def,
				 "%s takes no --model, --dry-run, --parallel "
				 "or --timeout-ms",
				 name);
	return cmd_check(k);
}

/* One provider's row: rank ("-" when not a candidate), tag, name, score,
 * lock mark, cooldown, failures. */
static void
status_row(const char *rank, const char *tag, const char *name,
	   const char *score, bool locked, const cJSON *cd, const cJSON *fail,
	   int64_t now, int wt)
{
	char tg[ORGW_TAG_MAX * 4], why[REC_REASON_MAX * 4], cool[160];
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(cd, tag);
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(fail, tag);

	if (c != NULL)
		snprintf(cool, sizeof(cool), "%lld s left (%s)",
			 (long long)(cli_num(c, "until") - now),
			 cli_str(why, sizeof(why), c, "reason"));
	else
		snprintf(cool, sizeof(cool), "-");
	printf("%4s %c %-*s  %-16s %12s  %8lld  %s\n", rank,
	       locked ? '*' : ' ', wt, log_safe(tg, sizeof(tg), tag), name,
	       score, f ? (long long)cJSON_GetNumberValue(f) : 0LL, cool);
}

/* One model of the /stats document as a table. */
static void
status_model(const char *model, const cJSON *m, int64_t now)
{
	const cJSON *lock = cJSON_GetObjectItemCaseSensitive(m, "lock");
	const cJSON *cands = cJSON_GetObjectItemCaseSensitive(m, "candidates");
	const cJSON *cd = cJSON_GetObjectItemCaseSensitive(m, "cooldowns");
	const cJSON *fail = cJSON_GetObjectItemCaseSensitive(m, "failures");
	const cJSON *e;
	char md[ORGW_MODEL_MAX * 4], tg[ORGW_TAG_MAX * 4], pn[ORGW_TAG_MAX * 4];
	char when[32], rank[16], score[24];
	const char *ltag = "";
	int wt = 3, i = 0;

	printf("== %s\n", log_safe(md, sizeof(md), model));
	if (cJSON_IsObject(lock)) {
		ltag = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(lock, "tag"));
		ltag = ltag ? ltag : "";
		clock_fmt_utc(cli_num(lock, "locked_at"), when, sizeof(when));
		printf("   lock: %s (%s) since %s UTC, last used %lld s ago\n",
		       cli_str(tg, sizeof(tg), lock, "tag"),
		       cli_str(pn, sizeof(pn), lock, "provider_name"), when,
		       (long long)(now - cli_num(lock, "last_used")));
	} else
		printf("   lock: none (the next request locks the best "
		       "candidate)\n");
	if (cli_num(m, "scored_at") > 0) {
		clock_fmt_utc(cli_num(m, "scored_at"), when, sizeof(when));
		printf("   scored: %s UTC\n", when);
	} else
		printf("   scored: never\n");
	if (cJSON_GetObjectItemCaseSensitive(m, "scoring_error") != NULL)
		printf("   last scoring failed: %s\n",
		       cli_str(pn, sizeof(pn), m, "scoring_error"));
	cJSON_ArrayForEach(e, cands)
	{
		const char *t = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(e, "tag"));
		if (t != NULL)
			wt = max_int(wt, (int)strlen(log_safe(tg, sizeof(tg),
							       t)));
	}
	cJSON_ArrayForEach(e, cd)
		wt = max_int(wt, (int)strlen(log_safe(tg, sizeof(tg),
						       e->string)));
	cJSON_ArrayForEach(e, fail)
		wt = max_int(wt, (int)strlen(log_safe(tg, sizeof(tg),
						       e->string)));
	printf("%4s %c %-*s  %-16s %12s  %8s  %s\n", "rank", ' ', wt, "tag",
	       "provider", "score", "failures", "cooldown");
	cJSON_ArrayForEach(e, cands)
	{
		const char *t = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(e, "tag"));
		if (t == NULL)
			continue;
		snprintf(rank, sizeof(rank), "%d", ++i);
		cell_g(score, sizeof(score),
		       cJSON_GetNumberValue(
			       cJSON_GetObjectItemCaseSensitive(e, "score")));
		status_row(rank, t, cli_str(pn, sizeof(pn), e, "provider_name"),
			   score, strcmp(t, ltag) == 0, cd, fail, now, wt);
	}
	/* Providers with a cooldown or a count that are no candidate. */
	cJSON_ArrayForEach(e, cd)
	{
		const cJSON *x;
		bool cand = false;
		cJSON_ArrayForEach(x, cands)
		{
			const char *t = cJSON_GetStringValue(
				cJSON_GetObjectItemCaseSensitive(x, "tag"));
			cand = cand || (t != NULL && strcmp(t, e->string) == 0);
		}
		if (!cand)
			status_row("-", e->string, "", "-",
				   strcmp(e->string, ltag) == 0, cd, fail, now,
				   wt);
	}
	cJSON_ArrayForEach(e, fail)
	{
		const cJSON *x;
		bool shown = cJSON_GetObjectItemCaseSensitive(cd, e->string) !=
			     NULL;
		cJSON_ArrayForEach(x, cands)
		{
			const char *t = cJSON_GetStringValue(
				cJSON_GetObjectItemCaseSensitive(x, "tag"));
			shown = shown ||
				(t != NULL && strcmp(t, e->string) == 0);
		}
		if (!shown)
			status_row("-", e->string, "", "-",
				   strcmp(e->string, ltag) == 0, cd, fail, now,
				   wt);
	}
}

/* Where the state is, for messages: STATE_PATH or REDIS_URL. */
static const char *
state_where(const struct orgw_conf *c)
{
	return c->state_backend == CONF_BACKEND_REDIS ? c->redis_url :
							c->state_path;
}

/* status [MODEL]: the GET /stats document (one model of it when asked),
 * as JSON or tables.  0, or EXIT_SOME_FAILED when the state could not be
 * read. */
static int
cmd_status(const struct orgw_conf *c, const char *model, bool json)
{
	int64_t now = clock_now_s();
	char *doc = stats_json(c, now), *s = NULL;
	cJSON *d = NULL, *models, *m, *keep = NULL;
	const cJSON *serr;
	int rc = EXIT_SOME_FAILED;

	if (doc == NULL || (d = cJSON_Parse(doc)) == NULL) {
		fputs("orgw-score: status: out of memory\n", stderr);
		goto out;
	}
	if ((serr = cJSON_GetObjectItemCaseSensitive(d, "state_error"))) {
		fprintf(stderr, "orgw-score: status: state %s unusable: %s\n",
			state_where(c),
			cJSON_GetStringValue(serr) ? serr->valuestring : "?");
		goto out;
	}
	models = cJSON_GetObjectItemCaseSensitive(d, "models");
	if (model != NULL) {
		/* Only that model (an empty object when the state holds
		 * nothing for it). */
		keep = cJSON_DetachItemFromObjectCaseSensitive(models, model);
		cJSON_DeleteItemFromObjectCaseSensitive(d, "models");
		if ((models = cJSON_AddObjectToObject(d, "models")) == NULL ||
		    (keep != NULL &&
		     !cJSON_AddItemToObject(models, model, keep))) {
			cJSON_Delete(keep);
			fputs("orgw-score: status: out of memory\n", stderr);
			goto out;
		}
	}
	if (json) {
		if ((s = cJSON_Print(d)) == NULL || puts(s) == EOF)
			goto out;
	} else {
		if (cJSON_GetArraySize(models) == 0)
			printf("# no state for %s\n",
			       model ? model : "any model");
		cJSON_ArrayForEach(m, models)
			status_model(m->string, m, now);
	}
	rc = 0;
out:
	cJSON_free(s);
	cJSON_Delete(d);
	record_free(doc);
	return rc;
}

/* Runs status, unlock, cool or uncool: 0 done, EXIT_SOME_FAILED when
 * the state was unusable (the error is logged). */
static int
cmd_run(const struct orgw_conf *c, const struct cmd *k, bool json)
{
	const char *name = k->def->name, *model = k->arg[0];
	char old[ORGW_TAG_MAX], md[ORGW_MODEL_MAX * 4];
	struct state_route r;
	enum orgw_err err;
	bool moved, had_cd, had_fail;

	if (strcmp(name, "status") == 0)
		return cmd_status(c, k->n ? model : NULL, json);
	log_safe(md, sizeof(md), model);
	if (strcmp(name, "unlock") == 0) {
		if ((err = state_op_unlock(c, model, clock_now_s(), old,
					    sizeof(old))))
			goto fail;
		if (old[0] != '\0')
			printf("%s: unlocked (was %s); the next request "
			       "relocks\n",
			       md, old);
		else
			printf("%s: had no lock\n", md);
		return 0;
	}
	if (strcmp(name, "cool") == 0) {
		err = state_op_cool(c, model, k->arg[1], k->seconds,
				    k->n > 3 ? k->arg[3] : COOL_REASON_DEFAULT,
				    clock_now_s(), &moved, &r);
		if (err != ORGW_OK)
			goto fail;
		printf("%s: %s cooling for %lld s; lock %s%s\n", md,
		       k->arg[1], (long long)k->seconds,
		       r.tag[0] ? r.tag : "none (requests go unpinned)",
		       moved ? " (moved)" : "");
		return 0;
	}
	/* uncool */
	if ((err = state_op_uncool(c, model, k->arg[1], &had_cd, &had_fail)))
		goto fail;
	printf("%s: %s: cooldown %s, failure count %s\n", md, k->arg[1],
	       had_cd ? "cleared" : "none", had_fail ? "cleared" : "none");
	return 0;
fail:
	fprintf(stderr, "orgw-score: %s: state %s unusable: %s\n", name,
		state_where(c), orgw_strerror(err));
	return EXIT_SOME_FAILED;
}

/* Loads the configuration; 0 or EXIT_USAGE after a message.  need_key:
 * the run fetches endpoints, so OPENROUTER_API_KEY must be set. */
static int
load_conf(struct orgw_conf *c, const char *path, bool need_key)
{
	char err[512];

	if (conf_load(c, path, err, sizeof(err)) != ORGW_OK) {
		fprintf(stderr, "orgw-score: configuration: %s\n", err);
		return EXIT_USAGE;
	}
	/* Without the key OpenRouter hides throughput (docs/upstream.md 1),
	 * and every score would be 0. */
	if (need_key && (c->openrouter_api_key == NULL || c->openrouter_api_key[0] == '\0')) {
		fputs("orgw-score: configuration: OPENROUTER_API_KEY is not "
		      "set (the endpoints fetch needs it)\n",
		      stderr);
		return EXIT_USAGE;
	}
	return 0;
}

/* This program's absolute path (/proc/self/exe) in path (n bytes) and
 * its directory, without the last '/', in dir (n bytes); false when the
 * kernel does not tell. */
static bool
exe_where(char *path, char *dir, size_t n)
{
	ssize_t r = readlink("/proc/self/exe", path, n - 1);
	char *slash;

	if (r <= 0 || (size_t)r >= n - 1)
		return false;
	path[r] = '\0';
	memcpy(dir, path, (size_t)r + 1);
	if ((slash = strrchr(dir, '/')) == NULL)
		return false;
	*slash = '\0';
	return true;
}

/* orgw.conf beside this program, in buf (n bytes), when there is one;
 * else NULL.  The config of a shared-hosting upload. */
static const char *
config_beside(char *buf, size_t n)
{
	char path[PATH_MAX], dir[PATH_MAX];
	int len;

	if (!exe_where(path, dir, sizeof(dir)))
		return NULL;
	len = snprintf(buf, n, "%s/orgw.conf", dir);
	if (len < 0 || (size_t)len >= n || access(buf, F_OK) != 0)
		return NULL;
	return buf;
}

/* s as one shell word: as is when it has only safe bytes, else in
 * single quotes (the caller has refused a quote in s). */
static void
put_word(const char *s)
{
	if (s[strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		       "0123456789/._+-")] == '\0')
		fputs(s, stdout);
	else
		printf("'%s'", s);
}

/*
 * --cron-line: the crontab line that scores every 3 hours, with absolute
 * paths (this program's, config's, a log beside the program), for a
 * host's cron panel.  0, or EXIT_USAGE after a message.
 */
static int
print_cron_line(const char *config)
{
	char path[PATH_MAX], dir[PATH_MAX], conf_abs[PATH_MAX];

	if (!exe_where(path, dir, sizeof(dir))) {
		fputs("orgw-score: cannot tell where this program is "
		      "(/proc/self/exe)\n", stderr);
		return EXIT_USAGE;
	}
	if (config == NULL || *config == '\0') {
		fputs("orgw-score: no configuration: give --config FILE, set "
		      "ORGW_CONFIG or put orgw.conf beside this program\n",
		      stderr);
		return EXIT_USAGE;
	}
	if (realpath(config, conf_abs) == NULL) {
		fputs("orgw-score: ", stderr);
		perror(config);
		return EXIT_USAGE;
	}
	/* cron turns % into a newline; a quote would end put_word's. */
	if (strpbrk(path, "'%\n") != NULL ||
	    strpbrk(conf_abs, "'%\n") != NULL) {
		fputs("orgw-score: a path holds ', % or a newline, which a "
		      "crontab line cannot carry as is\n", stderr);
		return EXIT_USAGE;
	}
	fputs("0 */3 * * * ", stdout);
	put_word(path);
	fputs(" --config ", stdout);
	put_word(conf_abs);
	fputs(" >>", stdout);
	put_word(dir);	/* '/a b'/orgw-score.log is one word too */
	fputs("/orgw-score.log 2>&1\n", stdout);
	return 0;
}

/*
 * --dump and --load: the whole state as JSON lines (dump.h),
 * the same for both back-ends, so that
 *   STATE_BACKEND=gdbm orgw-score --dump | STATE_BACKEND=redis orgw-score --load
 * moves a state.  The dump is one reader transaction; the load one
 * write transaction (it reads nothing, so it never conflicts), so a
 * half-read input writes nothing.
 */
struct dump_ctx {
	bool io_err, oom;
	size_t n;
};

static int
dump_one(void *arg, const char *key, const char *val)
{
	struct dump_ctx *d = arg;
	char *line = dump_line(key, val);

	if (line == NULL) {
		d->oom = true;
		return 1;
	}
	if (fputs(line, stdout) == EOF || putchar('\n') == EOF)
		d->io_err = true;
	dump_free(line);
	d->n++;
	return d->io_err ? 1 : 0;
}

static enum orgw_err
do_dump(struct store *s, void *arg)
{
	return store_each(s, "", dump_one, arg);
}

static int
dump_run(const struct orgw_conf *c)
{
	struct dump_ctx d = {false, false, 0};
	enum orgw_err err = state_txn(c, false, do_dump, &d);

	if (fflush(stdout) == EOF || ferror(stdout))
		d.io_err = true;
	if (err != ORGW_OK || d.oom || d.io_err) {
		fprintf(stderr, "orgw-score: --dump: %s\n",
			d.io_err ? "stdout write error" :
			d.oom ? "out of memory" : orgw_strerror(err));
		return EXIT_SOME_FAILED;
	}
	fprintf(stderr, "orgw-score: dumped %zu keys\n", d.n);
	return 0;
}

struct load_ctx {
	char **keys, **vals;
	size_t n;
};

static enum orgw_err
do_load(struct store *s, void *arg)
{
	struct load_ctx *l = arg;
	enum orgw_err err = ORGW_OK;
	size_t i;

	for (i = 0; i < l->n && err == ORGW_OK; i++)
		err = store_put(s, l->keys[i], l->vals[i]);
	return err;
}

static int
load_run(const struct orgw_conf *c)
{
	struct load_ctx l = {NULL, NULL, 0};
	char *line = NULL, **nk, **nv;
	size_t cap = 0, lcap = 0, lineno = 0, i;
	ssize_t len;
	enum orgw_err err = ORGW_OK;
	int rc = EXIT_SOME_FAILED;

	while ((len = getline(&line, &lcap, stdin)) != -1) {
		lineno++;
		if (len == 0 || line[0] == '\n')
			continue;
		if (l.n == cap) {
			cap = cap ? cap * 2 : 256;
			nk = realloc(l.keys, cap * sizeof(*nk));
			if (nk != NULL)
				l.keys = nk;
			nv = realloc(l.vals, cap * sizeof(*nv));
			if (nv != NULL)
				l.vals = nv;
			if (nk == NULL || nv == NULL) {
				err = ORGW_ENOMEM;
				break;
			}
		}
		err = dump_parse(line, (size_t)len, &l.keys[l.n], &l.vals[l.n]);
		if (err != ORGW_OK) {
			fprintf(stderr, "orgw-score: --load: line %zu: %s; "
				"nothing loaded\n", lineno,
				err == ORGW_EINVAL ? "not a dump line" :
						     orgw_strerror(err));
			goto out;
		}
		l.n++;
	}
	if (err == ORGW_OK && ferror(stdin)) {
		fputs("orgw-score: --load: stdin read error; nothing loaded\n",
		      stderr);
		goto out;
	}
	if (err == ORGW_OK)
		err = state_txn(c, true, do_load, &l);
	if (err != ORGW_OK) {
		fprintf(stderr, "orgw-score: --load: %s\n",
			orgw_strerror(err));
		goto out;
	}
	fprintf(stderr, "orgw-score: loaded %zu keys\n", l.n);
	rc = 0;
out:
	for (i = 0; i < l.n; i++) {
		free(l.keys[i]);
		free(l.vals[i]);
	}
	free(l.keys);
	free(l.vals);
	free(line);
	return rc;
}

/* `orgw-score key ...` (keyadmin.h): its arguments before the
 * configuration, so a usage error needs none; the exit status. */
static int
key_command(struct orgw_conf *c, const struct opts *o)
{
	struct keyadmin_cmd *cmd;
	int rc;

	if (o->run_opts) {
		fputs("orgw-score: key takes none of the scoring run's "
		      "options\n", stderr);
		return EXIT_USAGE;
	}
	if ((rc = keyadmin_parse(o->cmd_argc, o->cmd_argv, o->json, &cmd)) !=
	    0)
		return rc < 0 ? 0 : rc;
	if ((rc = load_conf(c, o->config, false)) == 0) {
		fsafe_set_mode(c->state_mode);
		rc = keyadmin_run(c, cmd);
		if (fflush(stdout) == EOF || ferror(stdout)) {
			perror("orgw-score: stdout");
			rc = EXIT_SOME_FAILED;
		}
	}
	keyadmin_free(cmd);
	return rc;
}

int
main(int argc, char *argv[])
{
	struct orgw_conf conf;
	struct opts o;
	struct outcome x;
	struct cmd k;
	struct sigaction sa;
	char beside[PATH_MAX];
	const char *env_config;
	int64_t t0;
	enum orgw_err err;
	size_t dropped;
	struct store_run *run = NULL;
	int rc;

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
	env_config = getenv("ORGW_CONFIG");
	if (o.config == NULL && (env_config == NULL || *env_config == '\0'))
		o.config = config_beside(beside, sizeof(beside));
	if (o.cron_line) {
		rc = print_cron_line(o.config != NULL ? o.config : env_config);
		goto out;
	}
	if (o.dump || o.load) {
		if ((o.dump && o.load) || o.run_opts || o.cmd_argc > 0) {
			fputs("orgw-score: --dump and --load go alone\n",
			      stderr);
			rc = EXIT_USAGE;
			goto out;
		}
		if ((rc = load_conf(&conf, o.config, false)) != 0)
			goto out;
		fsafe_set_mode(conf.state_mode);
		rc = o.dump ? dump_run(&conf) : load_run(&conf);
		goto out;
	}
	if (o.cmd_argc > 0 && strcmp(o.cmd_argv[0], "key") == 0) {
		rc = key_command(&conf, &o);
		goto out;
	}
	if (o.cmd_argc > 0 && strcmp(o.cmd_argv[0], "conversations") == 0) {
		struct convcmd cc;

		if (o.run_opts || o.json) {
			fputs("orgw-score: conversations takes its options "
			      "after its name\n", stderr);
			rc = EXIT_USAGE;
			goto out;
		}
		if ((rc = convcmd_parse(o.cmd_argc, o.cmd_argv, &cc)) != 0) {
			rc = rc < 0 ? 0 : rc;
			goto out;
		}
		if ((rc = load_conf(&conf, cc.config ? cc.config : o.config,
				    false)) != 0)
			goto out;
		fsafe_set_mode(conf.state_mode);
		rc = convcmd_run(&conf, &cc);
		if (fflush(stdout) == EOF || ferror(stdout)) {
			perror("orgw-score: stdout");
			rc = EXIT_SOME_FAILED;
		}
		goto out;
	}
	if (o.cmd_argc > 0) {
		if ((rc = parse_command(&o, &k)) != 0) {
			rc = rc < 0 ? 0 : rc;
			goto out;
		}
		if (strcmp(k.def->name, "rescore") == 0) {
			/* Exactly the run --model MODEL does. */
			if ((rc = add_model(&o, k.arg[0])) != 0)
				goto out;
		} else {
			if ((rc = load_conf(&conf, o.config, false)) != 0)
				goto out;
			fsafe_set_mode(conf.state_mode);
			rc = cmd_run(&conf, &k, o.json);
			if (fflush(stdout) == EOF || ferror(stdout)) {
				perror("orgw-score: stdout");
				rc = EXIT_SOME_FAILED;
			}
			goto out;
		}
	}
	if ((rc = load_conf(&conf, o.config, true)) != 0)
		goto out;
	fsafe_set_mode(conf.state_mode);
	curlsetup_ca_file(conf.upstream_ca_file);
	if (upstream_global_init() != ORGW_OK) {
		fputs("orgw-score: libcurl initialisation failed\n", stderr);
		rc = EXIT_SOME_FAILED;
		goto out;
	}

	x.started_at = clock_now_s();
	/* One run that writes at a time, whether from cron or /__cron. */
	if (!o.dry_run) {
		int64_t retry;

		err = store_run_begin(&conf, 0, x.started_at, &run, &retry);
		if (err == ORGW_EBUSY) {
			fprintf(stderr, "orgw-score: another scoring run is in "
				"progress (%s%s is locked); nothing done\n",
				state_where(&conf),
				conf.state_backend == CONF_BACKEND_REDIS ?
				" orgw:RUN" : ".score");
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
		x.tidy_err = store_tidy(&conf, TIDY_LOCK_TIMEOUT_MS);
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
	store_run_end(run);
	scorerun_free(x.v, x.n);
	free(x.v);
	scorerun_free(o.models, o.n_models);
	free(o.models);
	conf_free(&conf);
	return rc;
}
