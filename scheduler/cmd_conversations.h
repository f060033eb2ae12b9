/*
 * cmd_conversations.h - `orgw-score conversations [--model M] [--json]`:
 * the recent conversations and each model's providers under pressure,
 * read from the very document GET /stats serves (stats_tree), so the
 * terminal and the page never disagree.
 */
#ifndef ORGW_CMD_CONVERSATIONS_H
#define ORGW_CMD_CONVERSATIONS_H

#include "cli.h"
#include "conf.h"

/*
 * Runs o->cmd_argv (cmd_argv[0] is "conversations"; its options come
 * after its name) on the state of the configuration at its --config,
 * else o->config, loaded into c: the conversations (one model's with
 * --model) as a table, or as JSON {"conversations":[...],"models":{...}}
 * with --json.  The exit status: 0 (also after --help), CLI_EXIT_FAILED
 * when the state could not be read, CLI_EXIT_USAGE after a message.
 */
int convcmd_main(struct orgw_conf *c, const struct cli_opts *o);

#endif
