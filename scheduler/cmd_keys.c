/*
 * cmd_keys.c - orgw-score key ... (cmd_keys.h): the scoring run's
 * options refused, then keyadmin.c parses and runs the command.
 */
#include <stdio.h>

#include "cli.h"
#include "cmd_keys.h"
#include "keyadmin.h"

int
keycmd_main(struct orgw_conf *c, const struct cli_opts *o)
{
	struct keyadmin_cmd *cmd;
	int rc;

	if (o->run_opts) {
		fputs("orgw-score: key takes none of the scoring run's "
		      "options\n", stderr);
		return CLI_EXIT_USAGE;
	}
	if ((rc = keyadmin_parse(o->cmd_argc, o->cmd_argv, o->json, &cmd)) !=
	    0)
		return rc < 0 ? 0 : rc;
	if ((rc = cli_load_conf(c, o->config, false)) == 0)
		rc = cli_flush(keyadmin_run(c, cmd));
	keyadmin_free(cmd);
	return rc;
}
