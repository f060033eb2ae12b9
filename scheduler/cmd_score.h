/*
 * cmd_score.h - the scoring run: orgw-score without a command (or
 * rescore MODEL) fetches every seen and target model's endpoints (or
 * the --model ones), scores them and rewrites each model's ranked
 * candidates; a table per model on stdout, or one JSON document.
 */
#ifndef ORGW_CMD_SCORE_H
#define ORGW_CMD_SCORE_H

#include "cli.h"
#include "conf.h"

/* Adds the model id v to o's --model list; 0, or CLI_EXIT_USAGE after a
 * message (not a model id, out of memory). */
int scorecmd_add_model(struct cli_opts *o, const char *v);

/*
 * The run o asks for (o->models, o->dry_run, o->parallel, o->timeout_ms,
 * o->json; the --model list is taken from o) with the configuration at
 * o->config, loaded into c.  0 every model scored, CLI_EXIT_FAILED some
 * failed (or another run holds the scoring lock, or stdout failed),
 * CLI_EXIT_USAGE a configuration error.
 */
int scorecmd_main(struct orgw_conf *c, struct cli_opts *o);

#endif
