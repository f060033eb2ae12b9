/*
 * cmd_conversations.c - `orgw-score conversations` (cmd_conversations.h).
 *
 * The rows and the per-model objects are /stats's own (convlist.h), cut
 * to one model when asked; every string from the state (shown ids,
 * model ids and provider tags come from clients and OpenRouter) goes
 * through log_safe() before it reaches the terminal.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "clock.h"
#include "cmd_conversations.h"
#include "convlist.h"
#include "log.h"
#include "reqval.h"
#include "stats.h"

struct convcmd {
	const char *model;	/* --model, or NULL for all (borrowed) */
	const char *config;	/* --config, or NULL (borrowed) */
	bool json;
};

enum { OPT_MODEL = 256, OPT_JSON, OPT_CONFIG };

static int
convcmd_usage(const char *what, const char *arg)
{
	fprintf(stderr,
		"orgw-score: conversations: %s%s\nusage: orgw-score "
		"[--config FILE] conversations [--model M] [--json]\n",
		what, arg ? arg : "");
	return CLI_EXIT_USAGE;
}

/* Reads the command's arguments (argv[0] is "conversations"; borrowed,
 * they must outlive k) into k.  0, -1 after --help, or CLI_EXIT_USAGE
 * after a message on stderr. */
static int
convcmd_parse(int argc, char **argv, struct convcmd *k)
{
	static const struct option longopts[] = {
		{"model", required_argument, NULL, OPT_MODEL},
		{"json", no_argument, NULL, OPT_JSON},
		{"config", required_argument, NULL, OPT_CONFIG},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int ch;

	memset(k, 0, sizeof(*k));
	optind = 0;	/* glibc: start over on the new vector */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			printf("usage: orgw-score [--config FILE] conversations "
			       "[--model M] [--json]\n"
			       "The most recent conversations (provider, "
			       "turns, cached share, saved, the last\n"
			       "cache break in words) and the providers "
			       "under pressure, per model.\n");
			return -1;
		case OPT_MODEL:
			if (!reqval_model_ok(optarg))
				return convcmd_usage("not a valid model id: ",
						     optarg);
			k->model = optarg;
			break;
		case OPT_JSON:
			k->json = true;
			break;
		case OPT_CONFIG:
			k->config = optarg;
			break;
		case ':':
			return convcmd_usage("needs a value: ",
					     argv[optind - 1]);
		default:
			return convcmd_usage("unknown argument: ",
					     argv[optind - 1]);
		}
	}
	if (optind < argc)
		return convcmd_usage("unknown argument: ", argv[optind]);
	return 0;
}

/* Cuts d to k->model: its rows and its models member only. */
static bool
cut_to_model(cJSON *d, const char *model)
{
	cJSON *rows = cJSON_GetObjectItemCaseSensitive(d, "conversations");
	cJSON *models = cJSON_GetObjectItemCaseSensitive(d, "models");
	cJSON *r, *next, *m, *mnext;
	const char *rm;

	for (r = rows ? rows->child : NULL; r != NULL; r = next) {
		next = r->next;
		rm = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(r, "model"));
		if (rm == NULL || strcmp(rm, model) != 0)
			cJSON_Delete(cJSON_DetachItemViaPointer(rows, r));
	}
	for (m = models ? models->child : NULL; m != NULL; m = mnext) {
		mnext = m->next;
		if (strcmp(m->string, model) != 0)
			cJSON_Delete(cJSON_DetachItemViaPointer(models, m));
	}
	return rows != NULL && models != NULL;
}

/* The JSON form: the rows and each model's "conversations" object. */
static int
print_json(cJSON *d)
{
	cJSON *out = cJSON_CreateObject(), *models, *m, *cv;
	char *s = NULL;
	int rc = CLI_EXIT_FAILED;

	if (out == NULL ||
	    !cJSON_AddItemToObject(out, "conversations",
				   cJSON_DetachItemFromObjectCaseSensitive(
					   d, "conversations")) ||
	    (models = cJSON_AddObjectToObject(out, "models")) == NULL)
		goto out;
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(d, "models"))
	{
		cv = cJSON_GetObjectItemCaseSensitive(m, "conversations");
		if (cv != NULL &&
		    !cJSON_AddItemReferenceToObject(models, m->string, cv))
			goto out;
	}
	if ((s = cJSON_Print(out)) != NULL && puts(s) != EOF)
		rc = 0;
out:
	cJSON_free(s);
	cJSON_Delete(out);
	return rc;
}

static void
print_table(const cJSON *d, int64_t now)
{
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(d, "conversations");
	const cJSON *r, *m, *p;
	char id[64], model[1024], prov[512], words[CONVLIST_WORDS_MAX * 4];
	const char *w;

	if (cJSON_GetArraySize(rows) == 0)
		printf("# no conversation\n");
	else
		printf("%-12s  %-28s  %-16s  %5s  %6s  %10s  %s\n", "ID",
		       "MODEL", "PROVIDER", "TURNS", "CACHED", "SAVED $",
		       "LAST BREAK");
	cJSON_ArrayForEach(r, rows)
	{
		w = convlist_row_last_words(r);
		printf("%-12s  %-28s  %-16s  %5.0f  %5.1f%%  %10.6f  %s\n",
		       cli_str(id, sizeof(id), r, "id"),
		       cli_str(model, sizeof(model), r, "model"),
		       cli_str(prov, sizeof(prov), r, "provider"),
		       cli_dbl(r, "turns"), 100 * convlist_row_cached_share(r),
		       cli_dbl(r, "saved"),
		       w ? log_safe(words, sizeof(words), w) : "-");
	}
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(d, "models"))
	{
		const cJSON *cv =
			cJSON_GetObjectItemCaseSensitive(m, "conversations");

		if (cv == NULL)
			continue;
		printf("\n# %s: %.0f active, %.0f started elsewhere under "
		       "pressure\n",
		       log_safe(model, sizeof(model), m->string),
		       cli_dbl(cv, "active"), cli_dbl(cv, "spread"));
		cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(
					      cv, "providers"))
		{
			bool on = cJSON_IsTrue(
				cJSON_GetObjectItemCaseSensitive(
					p, "under_pressure"));

			printf("  %-16s  %4.0f active  %4.0f provider 429s  ",
			       log_safe(prov, sizeof(prov), p->string),
			       cli_dbl(p, "active"), cli_dbl(p, "provider_429s"));
			if (on)
				printf("under pressure for %.0f s more\n",
				       cli_dbl(p, "pressure_until") -
					       (double)now);
			else
				printf("no pressure\n");
		}
	}
}

/* Prints the conversations of c's state: 0, or CLI_EXIT_FAILED when the
 * state could not be read. */
static int
convcmd_run(const struct orgw_conf *c, const struct convcmd *k)
{
	int64_t now = clock_now_s();
	cJSON *d = stats_tree(c, now);
	const char *serr;
	int rc = CLI_EXIT_FAILED;

	if (d == NULL) {
		fputs("orgw-score: conversations: out of memory\n", stderr);
		goto out;
	}
	serr = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(d, "state_error"));
	if (serr != NULL) {
		fprintf(stderr,
			"orgw-score: conversations: state unusable: %s\n",
			serr);
		goto out;
	}
	if (k->model != NULL && !cut_to_model(d, k->model)) {
		fputs("orgw-score: conversations: out of memory\n", stderr);
		goto out;
	}
	if (k->json) {
		rc = print_json(d);
	} else {
		print_table(d, now);
		rc = 0;
	}
out:
	cJSON_Delete(d);
	return rc;
}

int
convcmd_main(struct orgw_conf *c, const struct cli_opts *o)
{
	struct convcmd cc;
	int rc;

	if (o->run_opts || o->json) {
		fputs("orgw-score: conversations takes its options "
		      "after its name\n", stderr);
		return CLI_EXIT_USAGE;
	}
	if ((rc = convcmd_parse(o->cmd_argc, o->cmd_argv, &cc)) != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = cli_load_conf(c, cc.config ? cc.config : o->config,
				false)) != 0)
		return rc;
	return cli_flush(convcmd_run(c, &cc));
}
