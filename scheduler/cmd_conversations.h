/*
 * cmd_conversations.h - `orgw-score conversations [--model M] [--json]`:
 * the recent conversations and each model's providers under pressure,
 * read from the very document GET /stats serves (stats_tree), so the
 * terminal and the page never disagree.
 */
#ifndef ORGW_CMD_CONVERSATIONS_H
#define ORGW_CMD_CONVERSATIONS_H

#include <stdbool.h>

#include "conf.h"

struct convcmd {
	const char *model;	/* --model, or NULL for all (borrowed) */
	const char *config;	/* --config, or NULL (borrowed) */
	bool json;
};

/*
 * Reads the command's arguments (argv[0] is "conversations"; borrowed,
 * they must outlive k) into k.  0, -1 after --help, or 2 (usage) after
 * a message on stderr.
 */
int convcmd_parse(int argc, char **argv, struct convcmd *k);

/*
 * Prints the conversations of c's state (one model's with k->model) as
 * a table, or as JSON {"conversations":[...],"models":{...}} with
 * k->json.  0, or 1 when the state could not be read.
 */
int convcmd_run(const struct orgw_conf *c, const struct convcmd *k);

#endif
