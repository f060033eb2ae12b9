/*
 * keyadmin.h - `orgw-score key ...`, the operator's commands on the team
 * keys (keystore.h): add, list, set, disable, enable, revoke, rotate,
 * verify, export, import.  cmd_keys.c hands orgw-score's arguments from
 * "key" on to keyadmin_parse(), loads the configuration and calls
 * keyadmin_run().  The tool's alone: not in liborgw.a.
 *
 * A key is printed once, on stdout, by add and rotate (nothing else goes
 * to stdout then), and is never logged, stored or shown again: only its
 * keyed hash is kept.  Everything else the commands say goes to stderr,
 * except list's table or JSON and export's lines.
 */
#ifndef ORGW_KEYADMIN_H
#define ORGW_KEYADMIN_H

#include <stdbool.h>
#include <stdio.h>

#include "conf.h"

/* Exit statuses, as orgw-score's other commands: done; the operation
 * failed (no such key, the store unusable); usage or configuration. */
#define KEYADMIN_EXIT_OK 0
#define KEYADMIN_EXIT_FAILED 1
#define KEYADMIN_EXIT_USAGE 2

struct keyadmin_cmd;

/*
 * Parses argv[0..argc) ("key", the sub-command, its arguments) into a
 * new *cmd (free with keyadmin_free()).  json: orgw-score's own --json
 * was given before "key".  Returns KEYADMIN_EXIT_OK, -1 after printing
 * the help (key --help), or KEYADMIN_EXIT_USAGE after a message on
 * stderr (*cmd NULL then).
 */
int keyadmin_parse(int argc, char *argv[], bool json,
		   struct keyadmin_cmd **cmd);

/* Runs cmd on c's keys store (c loaded by conf_load()): the exit
 * status.  Refuses to run without KEYS_SECRET. */
int keyadmin_run(const struct orgw_conf *c, const struct keyadmin_cmd *cmd);

/* Frees cmd; NULL is a no-op. */
void keyadmin_free(struct keyadmin_cmd *cmd);

/* The lines of `orgw-score --help` about `key` into f. */
void keyadmin_usage(FILE *f);

#endif
