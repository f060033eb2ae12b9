/*
 * keyadmin_import.c - `orgw-score key import [--replace]` (see
 * keyadmin.c): the lines of `key export` read from stdin, every one
 * checked before anything is written, then added (or, with --replace,
 * written over what is stored) in one transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "keyadmin.h"
#include "keyadmin_impl.h"
#include "keystore.h"
#include "store.h"
#include "teamkey.h"

#define LINE_MAX_BYTES ((size_t)1024 * 1024)	/* one import line */

/* One import line, checked. */
struct item {
	char *key, *val;	/* malloc'd; val re-encoded */
	bool rec;		/* a record (k), else a use window */
	struct teamkey k;
	size_t line;
};

struct import_ctx {
	struct item *v;
	size_t n, cap;
	bool replace;
	size_t wrote, kept, same;	/* set afresh by each run */
	size_t bad_line;		/* a record whose hash is another's */
	char owner[TEAMKEY_NAME_MAX + 1];
};

/* "YYYY-MM-DD" or "YYYY-MM". */
static bool
when_ok(const char *w)
{
	size_t i, n = strlen(w);

	if (n != 10 && n != 7)
		return false;
	for (i = 0; i < n; i++)
		if ((i == 4 || i == 7) ? w[i] != '-' :
					 (w[i] < '0' || w[i] > '9'))
			return false;
	return true;
}

/*
 * Checks one parsed line into it (taking key and val): a record
 * (TEAMKEY:<name>, teamkey_decode, its own name) or a
 * use window (TEAMKEY_USE:<name>:<when>, teamkey_use_decode); what is
 * stored is re-encoded.  NULL, or why it is refused.
 */
static const char *
item_check(struct item *it)
{
	struct ledger_cell u;
	char name[TEAMKEY_NAME_MAX + 2], *colon, *text;
	const char *rest;
	size_t n;

	if ((rest = statekeys_is(it->key, SK_TEAMKEY)) != NULL) {
		it->rec = true;
		if (!teamkey_name_ok(rest))
			return "not a key's name";
		if (teamkey_decode(it->val, &it->k) != ORGW_OK)
			return "not a key record";
		if (strcmp(it->k.name, rest) != 0)
			return "a record of another name";
		text = teamkey_encode(&it->k);
	} else if ((rest = statekeys_is(it->key, SK_TEAMKEY_USE)) != NULL) {
		if ((colon = strrchr(rest, ':')) == NULL ||
		    (n = (size_t)(colon - rest)) >= sizeof(name))
			return "not a use window's key";
		memcpy(name, rest, n);
		name[n] = '\0';
		if (!teamkey_name_ok(name) || !when_ok(colon + 1))
			return "not a use window's key";
		if (teamkey_use_decode(it->val, &u) != ORGW_OK)
			return "not a use window";
		text = teamkey_use_encode(&u);
	} else {
		return "not a key record (TEAMKEY:) or use window "
		       "(TEAMKEY_USE:)";
	}
	if (text == NULL)
		return "out of memory";
	free(it->val);
	it->val = text;
	return NULL;
}

static int
item_by_key(const void *a, const void *b)
{
	return strcmp(((const struct item *)a)->key,
		      ((const struct item *)b)->key);
}

static int
item_by_hash(const void *a, const void *b)
{
	const struct item *x = *(const struct item *const *)a;
	const struct item *y = *(const struct item *const *)b;

	return strcmp(x->k.hash, y->k.hash);
}

/* Two lines of one key, or two records of one hash: the later line's
 * number, else 0. */
static size_t
import_dups(struct import_ctx *x)
{
	const struct item **recs;
	size_t i, m = 0, bad = 0;

	if (x->n < 2)
		return 0;
	qsort(x->v, x->n, sizeof(x->v[0]), item_by_key);
	for (i = 1; i < x->n && bad == 0; i++)
		if (strcmp(x->v[i - 1].key, x->v[i].key) == 0)
			bad = x->v[i].line > x->v[i - 1].line ? x->v[i].line :
								x->v[i - 1].line;
	if (bad != 0 || (recs = malloc((x->n + 1) * sizeof(*recs))) == NULL)
		return bad;
	for (i = 0; i < x->n; i++)
		if (x->v[i].rec)
			recs[m++] = &x->v[i];
	qsort(recs, m, sizeof(recs[0]), item_by_hash);
	for (i = 1; i < m && bad == 0; i++)
		if (strcmp(recs[i - 1]->k.hash, recs[i]->k.hash) == 0)
			bad = recs[i]->line;
	free(recs);
	return bad;
}

static enum orgw_err
do_import(struct store *s, void *arg)
{
	struct import_ctx *x = arg;
	char name[TEAMKEY_NAME_MAX + 1], *old;
	enum orgw_err err;
	size_t i;

	x->wrote = x->kept = x->same = 0;
	x->bad_line = 0;
	/* Checked before any write: GDBM cannot take one back. */
	for (i = 0; i < x->n; i++) {
		if (!x->v[i].rec)
			continue;
		err = keystore_name_of(s, x->v[i].k.hash, name);
		if (err == ORGW_OK && strcmp(name, x->v[i].k.name) != 0) {
			x->bad_line = x->v[i].line;
			(void)snprintf(x->owner, sizeof(x->owner), "%s", name);
			return ORGW_EINVAL;
		}
		if (err != ORGW_OK && err != ORGW_ENOENT && err != ORGW_EIO)
			return err;
	}
	for (i = 0; i < x->n; i++) {
		const struct item *it = &x->v[i];

		old = NULL;
		if ((err = store_get(s, it->key, &old)) != ORGW_OK)
			return err;
		if (old != NULL && strcmp(old, it->val) == 0) {
			x->same++;
		} else if (old != NULL && !x->replace) {
			x->kept++;
		} else {
			err = it->rec ? keystore_put(s, &it->k) :
					store_put(s, it->key, it->val);
			x->wrote++;
		}
		free(old);
		if (err != ORGW_OK)
			return err;
	}
	return ORGW_OK;
}

static void
import_free(struct import_ctx *x)
{
	size_t i;

	for (i = 0; i < x->n; i++) {
		free(x->v[i].key);
		free(x->v[i].val);
	}
	free(x->v);
}

/* Reads and checks stdin into x; 0 or the exit status after a
 * message. */
static int
import_read(struct import_ctx *x)
{
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	const char *why;
	struct item *v;
	ssize_t len;
	enum orgw_err err;
	int rc = KEYADMIN_EXIT_OK;

	while ((len = getline(&line, &cap, stdin)) != -1) {
		lineno++;
		if ((size_t)len > LINE_MAX_BYTES) {
			why = "longer than 1 MiB";
			goto bad;
		}
		if (len == 0 || line[0] == '\n')
			continue;
		if (x->n == x->cap) {
			size_t ncap = x->cap ? x->cap * 2 : 64;

			if ((v = realloc(x->v, ncap * sizeof(*v))) == NULL) {
				why = "out of memory";
				goto bad;
			}
			x->v = v;
			x->cap = ncap;
		}
		memset(&x->v[x->n], 0, sizeof(x->v[0]));
		x->v[x->n].line = lineno;
		err = dump_parse(line, (size_t)len, &x->v[x->n].key,
				 &x->v[x->n].val);
		if (err != ORGW_OK) {
			why = err == ORGW_EINVAL ? "not an export line" :
						   "out of memory";
			goto bad;
		}
		x->n++;
		if ((why = item_check(&x->v[x->n - 1])) != NULL)
			goto bad;
	}
	if (ferror(stdin)) {
		fputs("orgw-score: key import: stdin read error; nothing "
		      "imported\n", stderr);
		rc = KEYADMIN_EXIT_FAILED;
	}
	free(line);
	return rc;
bad:
	fprintf(stderr, "orgw-score: key import: line %zu: %s; nothing "
		"imported\n", lineno, why);
	free(line);
	return KEYADMIN_EXIT_FAILED;
}

int
run_import(const struct orgw_conf *c, const struct keyadmin_cmd *cmd)
{
	struct import_ctx x;
	enum orgw_err err;
	size_t dup;
	int rc;

	memset(&x, 0, sizeof(x));
	x.replace = cmd->replace;
	if ((rc = import_read(&x)) != KEYADMIN_EXIT_OK)
		goto out;
	if ((dup = import_dups(&x)) != 0) {
		fprintf(stderr, "orgw-score: key import: line %zu: the same "
			"key or hash as an earlier line; nothing imported\n",
			dup);
		rc = KEYADMIN_EXIT_FAILED;
		goto out;
	}
	err = keystore_txn(c, true, do_import, &x);
	if (err == ORGW_EINVAL && x.bad_line != 0) {
		fprintf(stderr, "orgw-score: key import: line %zu: its hash "
			"is the key %s's in the store; nothing imported\n",
			x.bad_line, x.owner);
		rc = KEYADMIN_EXIT_FAILED;
		goto out;
	}
	if (err != ORGW_OK) {
		rc = txn_failed(c, "import", err);
		goto out;
	}
	fprintf(stderr, "orgw-score: key import: %zu lines: %zu written, "
		"%zu already so, %zu kept as stored%s\n", x.n, x.wrote,
		x.same, x.kept, x.kept > 0 ? " (--replace overwrites)" : "");
out:
	import_free(&x);
	return rc;
}
