/*
 * cmd_state.c - status, unlock, cool, uncool and rescore (cmd_state.h).
 *
 * They run on the workers' state through state_ops.c's transactions (the
 * same lock file, the same record.c values), so a worker mid-request
 * and an operator never see half a change, and need no upstream key.
 * status reads the very document GET /stats serves (stats_json), cut to
 * one model when asked, so the two never disagree.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "clock.h"
#include "cmd_state.h"
#include "log.h"
#include "record.h"
#include "reqval.h"
#include "state.h"
#include "stats.h"

#define CMD_ARGS_MAX 4
#define COOL_REASON_DEFAULT "operator"

enum { OPT_JSON = 256, OPT_CONFIG };

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

/* A usage error of a subcommand: message, its synopsis, CLI_EXIT_USAGE. */
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
	return CLI_EXIT_USAGE;
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

/* Checks the positional arguments of k; 0 or CLI_EXIT_USAGE after a
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
		if (conf_parse_ll(k->arg[2], 1, STATECMD_COOL_SECONDS_MAX,
				  &v) != CONF_NUM_OK)
			return cmd_usage(d,
					 "SECONDS: want 1..%d, got \"%s\"",
					 STATECMD_COOL_SECONDS_MAX, k->arg[2]);
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
 * --config, -h) may come anywhere, "--" ends them.  0, STATECMD_HELP
 * (-h, nothing printed) or CLI_EXIT_USAGE after a message. */
static int
parse_command(struct cli_opts *o, struct cmd *k)
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
			return STATECMD_HELP;
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
			wt = cli_max_int(wt, (int)strlen(log_safe(tg, sizeof(tg),
							       t)));
	}
	cJSON_ArrayForEach(e, cd)
		wt = cli_max_int(wt, (int)strlen(log_safe(tg, sizeof(tg),
						       e->string)));
	cJSON_ArrayForEach(e, fail)
		wt = cli_max_int(wt, (int)strlen(log_safe(tg, sizeof(tg),
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
		cli_cell_g(score, sizeof(score),
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

/* status [MODEL]: the GET /stats document (one model of it when asked),
 * as JSON or tables.  0, or CLI_EXIT_FAILED when the state could not be
 * read. */
static int
cmd_status(const struct orgw_conf *c, const char *model, bool json)
{
	int64_t now = clock_now_s();
	char *doc = stats_json(c, now), *s = NULL;
	cJSON *d = NULL, *models, *m, *keep = NULL;
	const cJSON *serr;
	int rc = CLI_EXIT_FAILED;

	if (doc == NULL || (d = cJSON_Parse(doc)) == NULL) {
		fputs("orgw-score: status: out of memory\n", stderr);
		goto out;
	}
	if ((serr = cJSON_GetObjectItemCaseSensitive(d, "state_error"))) {
		fprintf(stderr, "orgw-score: status: state %s unusable: %s\n",
			cli_state_where(c),
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

/* Runs status, unlock, cool or uncool: 0 done, CLI_EXIT_FAILED when
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
		cli_state_where(c), orgw_strerror(err));
	return CLI_EXIT_FAILED;
}

int
statecmd_main(struct orgw_conf *c, struct cli_opts *o, const char **rescore)
{
	struct cmd k;
	int rc;

	*rescore = NULL;
	if ((rc = parse_command(o, &k)) != 0)
		return rc;
	if (strcmp(k.def->name, "rescore") == 0) {
		*rescore = k.arg[0];
		return 0;
	}
	if ((rc = cli_load_conf(c, o->config, false)) != 0)
		return rc;
	return cli_flush(cmd_run(c, &k, o->json));
}
