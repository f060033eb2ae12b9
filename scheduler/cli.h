/*
 * cli.h - what orgw-score's commands share to print the state's JSON
 * documents on a terminal.
 */
#ifndef ORGW_CLI_H
#define ORGW_CLI_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

/* A number member of o (0 when absent), as an integer. */
int64_t cli_num(const cJSON *o, const char *name);

/* A number member of o (0 when absent). */
double cli_dbl(const cJSON *o, const char *name);

/* A string member of o ("" when absent), escaped for the terminal into
 * dst (n bytes); returns dst. */
const char *cli_str(char *dst, size_t n, const cJSON *o, const char *name);

#endif
