/*
 * keyadmin_impl.h - what the key commands' files (keyadmin.c,
 * keyadmin_*.c) share and no other file includes (make check-layers):
 * a parsed command and the commands keyadmin_run() calls in the other
 * files.  Each function's contract is at its definition.
 */
#ifndef ORGW_KEYADMIN_IMPL_H
#define ORGW_KEYADMIN_IMPL_H

#include <stdbool.h>

#include "orgw.h"
#include "teamkey.h"

struct orgw_conf;

struct keyadmin_cmd {
	const struct verb_def *def;
	char name[TEAMKEY_NAME_MAX + 1];
	bool json, replace;
	unsigned has;		/* HAS_* */
	struct teamkey opt;	/* the limit options' values */
};

/* keyadmin.c */
int txn_failed(const struct orgw_conf *c, const char *what, enum orgw_err err);

/* keyadmin_list.c */
int run_list(const struct orgw_conf *c, const struct keyadmin_cmd *cmd);
int run_verify(const struct orgw_conf *c);

/* keyadmin_export.c */
int run_export(const struct orgw_conf *c);

/* keyadmin_import.c */
int run_import(const struct orgw_conf *c, const struct keyadmin_cmd *cmd);

#endif
