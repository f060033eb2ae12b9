/*
 * cmd_keys.h - orgw-score key ...: the team key commands (keyadmin.h)
 * from orgw-score's command line.
 */
#ifndef ORGW_CMD_KEYS_H
#define ORGW_CMD_KEYS_H

#include "cli.h"
#include "conf.h"

/*
 * Runs the key command in o->cmd_argv (cmd_argv[0] is "key"; o->json
 * is --json given before it).  Its arguments are read before the
 * configuration at o->config is loaded into c, so a usage error needs
 * none.  The exit status (0 after key --help).
 */
int keycmd_main(struct orgw_conf *c, const struct cli_opts *o);

#endif
