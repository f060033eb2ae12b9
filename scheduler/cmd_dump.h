/*
 * cmd_dump.h - orgw-score --dump and --load: the whole state as JSON
 * lines {"key","value"} (dump.h), the same for both back-ends, so that
 *   STATE_BACKEND=gdbm orgw-score --dump | STATE_BACKEND=redis orgw-score --load
 * moves a state.
 */
#ifndef ORGW_CMD_DUMP_H
#define ORGW_CMD_DUMP_H

#include "cli.h"
#include "conf.h"

/*
 * --dump (to stdout) or --load (from stdin, each key replaced), as o
 * asks, on the state of the configuration at o->config (loaded into c).
 * Either goes alone.  The exit status: 0 done, CLI_EXIT_FAILED (a
 * write or read error, the state unusable, a damaged line: nothing
 * loaded), CLI_EXIT_USAGE usage or configuration; the count of keys or
 * the error on stderr.
 */
int dumpcmd_main(struct orgw_conf *c, const struct cli_opts *o);

#endif
