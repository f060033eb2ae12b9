/*
 * cmd_dump.c - orgw-score --dump and --load (cmd_dump.h).
 *
 * The dump is one reader transaction; the load one write transaction
 * (it reads nothing, so it never conflicts), so a half-read input
 * writes nothing.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "cmd_dump.h"
#include "dump.h"
#include "state.h"
#include "store.h"

struct dump_ctx {
	bool io_err, oom;
	size_t n;
};

static int
dump_one(void *arg, const char *key, const char *val)
{
	struct dump_ctx *d = arg;
	char *line = dump_line(key, val);

	if (line == NULL) {
		d->oom = true;
		return 1;
	}
	if (fputs(line, stdout) == EOF || putchar('\n') == EOF)
		d->io_err = true;
	dump_free(line);
	d->n++;
	return d->io_err ? 1 : 0;
}

static enum orgw_err
do_dump(struct store *s, void *arg)
{
	return store_each(s, "", dump_one, arg);
}

static int
dump_run(const struct orgw_conf *c)
{
	struct dump_ctx d = {false, false, 0};
	enum orgw_err err = state_txn(c, false, do_dump, &d);

	if (fflush(stdout) == EOF || ferror(stdout))
		d.io_err = true;
	if (err != ORGW_OK || d.oom || d.io_err) {
		fprintf(stderr, "orgw-score: --dump: %s\n",
			d.io_err ? "stdout write error" :
			d.oom ? "out of memory" : orgw_strerror(err));
		return CLI_EXIT_FAILED;
	}
	fprintf(stderr, "orgw-score: dumped %zu keys\n", d.n);
	return 0;
}

struct load_ctx {
	char **keys, **vals;
	size_t n;
};

static enum orgw_err
do_load(struct store *s, void *arg)
{
	struct load_ctx *l = arg;
	enum orgw_err err = ORGW_OK;
	size_t i;

	for (i = 0; i < l->n && err == ORGW_OK; i++)
		err = store_put(s, l->keys[i], l->vals[i]);
	return err;
}

static int
load_run(const struct orgw_conf *c)
{
	struct load_ctx l = {NULL, NULL, 0};
	char *line = NULL, **nk, **nv;
	size_t cap = 0, lcap = 0, lineno = 0, i;
	ssize_t len;
	enum orgw_err err = ORGW_OK;
	int rc = CLI_EXIT_FAILED;

	while ((len = getline(&line, &lcap, stdin)) != -1) {
		lineno++;
		if (len == 0 || line[0] == '\n')
			continue;
		if (l.n == cap) {
			cap = cap ? cap * 2 : 256;
			nk = realloc(l.keys, cap * sizeof(*nk));
			if (nk != NULL)
				l.keys = nk;
			nv = realloc(l.vals, cap * sizeof(*nv));
			if (nv != NULL)
				l.vals = nv;
			if (nk == NULL || nv == NULL) {
				err = ORGW_ENOMEM;
				break;
			}
		}
		err = dump_parse(line, (size_t)len, &l.keys[l.n], &l.vals[l.n]);
		if (err != ORGW_OK) {
			fprintf(stderr, "orgw-score: --load: line %zu: %s; "
				"nothing loaded\n", lineno,
				err == ORGW_EINVAL ? "not a dump line" :
						     orgw_strerror(err));
			goto out;
		}
		l.n++;
	}
	if (err == ORGW_OK && ferror(stdin)) {
		fputs("orgw-score: --load: stdin read error; nothing loaded\n",
		      stderr);
		goto out;
	}
	if (err == ORGW_OK)
		err = state_txn(c, true, do_load, &l);
	if (err != ORGW_OK) {
		fprintf(stderr, "orgw-score: --load: %s\n",
			orgw_strerror(err));
		goto out;
	}
	fprintf(stderr, "orgw-score: loaded %zu keys\n", l.n);
	rc = 0;
out:
	for (i = 0; i < l.n; i++) {
		free(l.keys[i]);
		free(l.vals[i]);
	}
	free(l.keys);
	free(l.vals);
	free(line);
	return rc;
}

int
dumpcmd_main(struct orgw_conf *c, const struct cli_opts *o)
{
	int rc;

	if ((o->dump && o->load) || o->run_opts || o->cmd_argc > 0) {
		fputs("orgw-score: --dump and --load go alone\n", stderr);
		return CLI_EXIT_USAGE;
	}
	if ((rc = cli_load_conf(c, o->config, false)) != 0)
		return rc;
	return o->dump ? dump_run(c) : load_run(c);
}
