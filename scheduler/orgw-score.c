/*
 * orgw-score.c - main() of orgw-score, the scorer and the operator's
 * tool (docs/design.md section 1): its options, its --help, and which
 * command module runs.
 *
 * Without a command it is the scoring run (cmd_score.c), run by cron
 * every 3 hours (deploy/crontab) or by hand.  The commands: status,
 * unlock, cool, uncool, rescore (cmd_state.c), conversations
 * (cmd_conversations.c), key (cmd_keys.c); --dump and --load
 * (cmd_dump.c).  Exit: 0 done (every model scored), 1 some failed (the
 * state unusable), 2 usage or configuration error.
 *
 * Shared hosting: without --config and ORGW_CONFIG, an
 * orgw.conf beside the program (/proc/self/exe) is read, and
 * --cron-line prints the crontab line to paste into a host's cron panel,
 * with absolute paths (cli.c).
 */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "cmd_conversations.h"
#include "cmd_dump.h"
#include "cmd_keys.h"
#include "cmd_score.h"
#include "cmd_state.h"
#include "fetchmany.h"
#include "harden.h"
#include "keyadmin.h"
#include "scorerun.h"
#include "version.h"

#define SCORE_TIMEOUT_MS_MAX 600000	/* --timeout-ms upper bound */

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
	      STATECMD_COOL_SECONDS_MAX);
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

/* A numeric option's value in [1, max]; 0 or CLI_EXIT_USAGE after a
 * message. */
static int
num_opt(const char *name, const char *v, long max, long *out)
{
	if (parse_num(v, 1, max, out))
		return 0;
	fprintf(stderr, "orgw-score: %s: want 1..%ld, got \"%s\"\n", name, max,
		v);
	return CLI_EXIT_USAGE;
}

enum { OPT_MODEL = 256, OPT_DRY_RUN, OPT_JSON, OPT_CONFIG, OPT_PARALLEL,
       OPT_TIMEOUT_MS, OPT_CRON_LINE, OPT_DUMP, OPT_LOAD, OPT_VERSION };

/* Fills o from argv; returns 0, or CLI_EXIT_USAGE after a message (-1 for
 * --help, already printed).  The first other argument starts a
 * subcommand ('+': getopt_long stops there instead of moving it), whose
 * own arguments its module reads. */
static int
parse_args(int argc, char *argv[], struct cli_opts *o)
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
			rc = scorecmd_add_model(o, optarg);
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
			return CLI_EXIT_USAGE;
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
			return CLI_EXIT_USAGE;
		}
	}
	if (rc == 0 && optind < argc) {
		o->cmd_argc = argc - optind;
		o->cmd_argv = argv + optind;
	}
	return rc;
}

/* Runs the command o names (none: the scoring run); the exit status. */
static int
dispatch(struct orgw_conf *c, struct cli_opts *o)
{
	const char *cmd = o->cmd_argc > 0 ? o->cmd_argv[0] : "";
	const char *rescore;
	int rc;

	if (o->dump || o->load)
		return dumpcmd_main(c, o);
	if (strcmp(cmd, "key") == 0)
		return keycmd_main(c, o);
	if (strcmp(cmd, "conversations") == 0)
		return convcmd_main(c, o);
	if (o->cmd_argc > 0) {
		rc = statecmd_main(c, o, &rescore);
		if (rc == STATECMD_HELP) {
			usage(stdout);
			return 0;
		}
		if (rc != 0 || rescore == NULL)
			return rc;
		/* Exactly the run --model MODEL does. */
		if ((rc = scorecmd_add_model(o, rescore)) != 0)
			return rc;
	}
	return scorecmd_main(c, o);
}

int
main(int argc, char *argv[])
{
	struct orgw_conf conf;
	struct cli_opts o;
	struct sigaction sa;
	char beside[PATH_MAX];
	const char *env_config;
	int rc;

	if (harden_no_dumps() != 0)
		perror("orgw-score: turning core dumps off");
	memset(&o, 0, sizeof(o));
	o.parallel = SCORERUN_PARALLEL;
	o.timeout_ms = SCORERUN_TIMEOUT_MS;
	/* A closed stdout (| head) shows as a write error, not a kill. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) == -1) {
		perror("orgw-score: sigaction");
		return CLI_EXIT_FAILED;
	}
	clock_init();
	if (conf_init(&conf) != ORGW_OK) {
		fputs("orgw-score: out of memory\n", stderr);
		return CLI_EXIT_FAILED;
	}
	if ((rc = parse_args(argc, argv, &o)) != 0) {
		rc = rc < 0 ? 0 : rc;
		goto out;
	}
	env_config = getenv("ORGW_CONFIG");
	if (o.config == NULL && (env_config == NULL || *env_config == '\0'))
		o.config = cli_config_beside(beside, sizeof(beside));
	if (o.cron_line)
		rc = cli_cron_line(o.config != NULL ? o.config : env_config);
	else
		rc = dispatch(&conf, &o);
out:
	scorerun_free(o.models, o.n_models);
	free(o.models);
	conf_free(&conf);
	return rc;
}
