/*
 * keyadmin_export.c - `orgw-score key export` (see keyadmin.c): every
 * record of the keys store, key records and use windows, as sorted lines
 * on stdout that `key import` reads back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "keyadmin.h"
#include "keyadmin_impl.h"
#include "keystore.h"
#include "store.h"

/* The export's lines, collected in the transaction, printed after. */
struct lines {
	char **v;
	size_t n, cap;
	bool oom;
};

static int
export_one(void *arg, const char *key, const char *val)
{
	struct lines *l = arg;
	char *line, *dup, **v;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;

		if ((v = realloc(l->v, cap * sizeof(*v))) == NULL) {
			l->oom = true;
			return 1;
		}
		l->v = v;
		l->cap = cap;
	}
	if ((line = dump_line(key, val)) == NULL ||
	    (dup = strdup(line)) == NULL) {
		dump_free(line);
		l->oom = true;
		return 1;
	}
	dump_free(line);
	l->v[l->n++] = dup;
	return 0;
}

static void
lines_clear(struct lines *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	l->n = 0;
}

static enum orgw_err
do_export(struct store *s, void *arg)
{
	struct lines *l = arg;
	enum orgw_err err;

	lines_clear(l);
	l->oom = false;
	/* Not TEAMKEY_HASH: import rebuilds the index from the records. */
	if ((err = store_each(s, KEYSTORE_REC_PREFIX, export_one, l)) ==
		    ORGW_OK &&
	    !l->oom)
		err = store_each(s, KEYSTORE_USE_PREFIX, export_one, l);
	return err == ORGW_OK && l->oom ? ORGW_ENOMEM : err;
}

static int
by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
run_export(const struct orgw_conf *c)
{
	struct lines l = {NULL, 0, 0, false};
	enum orgw_err err = keystore_txn(c, false, do_export, &l);
	size_t i;
	int rc = KEYADMIN_EXIT_OK;

	if (err != ORGW_OK) {
		rc = txn_failed(c, "export", err);
		goto out;
	}
	if (l.n > 1)
		qsort(l.v, l.n, sizeof(l.v[0]), by_str);
	for (i = 0; i < l.n; i++)
		if (fputs(l.v[i], stdout) == EOF || putchar('\n') == EOF)
			break;
	if (fflush(stdout) == EOF || ferror(stdout)) {
		perror("orgw-score: key export: stdout");
		rc = KEYADMIN_EXIT_FAILED;
		goto out;
	}
	fprintf(stderr, "orgw-score: key export: %zu lines\n", l.n);
out:
	lines_clear(&l);
	free(l.v);
	return rc;
}
