/*
 * cli.h - what orgw-score's command modules share: the command line as
 * orgw-score.c parsed it, the exit statuses, loading the configuration,
 * printing the state's JSON documents on a terminal, and where the
 * program and its configuration are (a shared-hosting upload has
 * orgw.conf beside the program; --cron-line).
 */
#ifndef ORGW_CLI_H
#define ORGW_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "conf.h"

/* Exit statuses besides 0 (done, every model scored). */
#define CLI_EXIT_FAILED 1	/* some model failed; the state unusable */
#define CLI_EXIT_USAGE 2	/* usage or configuration error */

struct scorerun_model;

/* orgw-score's own options and where its command starts. */
struct cli_opts {
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

/*
 * Loads the configuration at path (NULL: ORGW_CONFIG) into c and sets
 * the mode of the state files it makes (fsafe_set_mode); 0 or
 * CLI_EXIT_USAGE after a message.  need_key: the command fetches
 * endpoints, so OPENROUTER_API_KEY must be set.
 */
int cli_load_conf(struct orgw_conf *c, const char *path, bool need_key);

/* Where c's state is, for messages: STATE_PATH or REDIS_URL. */
const char *cli_state_where(const struct orgw_conf *c);

/* A command's last step: rc, or CLI_EXIT_FAILED after a message when
 * stdout could not be written (a closed pipe, a full disk). */
int cli_flush(int rc);

int cli_max_int(int a, int b);

/* A table cell: "%.4g" of v (prices, scores) into dst (n bytes). */
void cli_cell_g(char *dst, size_t n, double v);

/* A number member of o (0 when absent), as an integer. */
int64_t cli_num(const cJSON *o, const char *name);

/* A number member of o (0 when absent). */
double cli_dbl(const cJSON *o, const char *name);

/* A string member of o ("" when absent), escaped for the terminal into
 * dst (n bytes); returns dst. */
const char *cli_str(char *dst, size_t n, const cJSON *o, const char *name);

/* orgw.conf beside this program (/proc/self/exe), in buf (n bytes),
 * when there is one; else NULL.  The configuration of a shared-hosting
 * upload. */
const char *cli_config_beside(char *buf, size_t n);

/*
 * --cron-line: prints the crontab line that scores every 3 hours, with
 * absolute paths (this program's, config's, a log beside the program),
 * for a host's cron panel.  0, or CLI_EXIT_USAGE after a message.
 */
int cli_cron_line(const char *config);

#endif
