/*
 * cmd_state.h - the operator commands on the workers' state: status
 * [MODEL], unlock MODEL, cool MODEL TAG SECONDS [REASON], uncool MODEL
 * TAG; and rescore MODEL, which is the scoring run of --model MODEL.
 */
#ifndef ORGW_CMD_STATE_H
#define ORGW_CMD_STATE_H

#include "cli.h"
#include "conf.h"

#define STATECMD_COOL_SECONDS_MAX 604800	/* cool: a week at most */
#define STATECMD_HELP (-1)

/*
 * Runs the command o->cmd_argv names.  Its options (--json, --config,
 * -h) may come anywhere among its arguments, "--" ends them; they go
 * into o.  The arguments are checked before the configuration at
 * o->config is loaded into c, so a bad command line is a usage error
 * whatever the configuration.
 *
 * Returns the exit status: 0 done, CLI_EXIT_FAILED the state unusable,
 * CLI_EXIT_USAGE usage or configuration (after a message); or
 * STATECMD_HELP for --help, nothing printed: orgw-score's own help
 * covers these commands.  rescore MODEL is checked only: 0 with
 * *rescore = MODEL (borrowed from o->cmd_argv), and the caller runs it.
 */
int statecmd_main(struct orgw_conf *c, struct cli_opts *o,
		  const char **rescore);

#endif
