/*
 * store_redis_scan.c - a transaction's each (rd_each): the keys under a
 * prefix by SCAN MATCH, sorted and each once, then their values by MGET
 * in batches (WATCHed first in a write transaction), with the
 * transaction's own buffered writes laid over them.  The run lock's keys
 * and the transactions' markers are not state: never listed.
 */
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "log.h"
#include "redisconf.h"
#include "store_impl.h"
#include "store_redis_impl.h"
#define SCAN_COUNT "1000"
#define MGET_BATCH 256

static int
by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct keys {
	char **v;
	size_t n, cap;
};

static void
keys_free(struct keys *ks)
{
	size_t i;

	for (i = 0; i < ks->n; i++)
		free(ks->v[i]);
	free(ks->v);
	ks->v = NULL;
	ks->n = ks->cap = 0;
}

/* Adds a scanned key (with its prefix) when it is state with prefix. */
static enum orgw_err
keys_add(struct keys *ks, const char *k, size_t len, const char *prefix,
	 size_t plen)
{
	char **nv;

	if (len < KEY_PREFIX_LEN || memcmp(k, KEY_PREFIX, KEY_PREFIX_LEN) != 0)
		return ORGW_OK;
	k += KEY_PREFIX_LEN;
	len -= KEY_PREFIX_LEN;
	/* The run lock's keys are not state (GDBM keeps them in
	 * STATE_PATH.score), nor are the transactions' markers: never
	 * listed, dumped or loaded. */
	if ((len == 3 && memcmp(k, "RUN", 3) == 0) ||
	    (len == 8 && memcmp(k, "RUN_LAST", 8) == 0) ||
	    (len > 4 && memcmp(k, REDISCONF_TXN_PREFIX, 4) == 0))
		return ORGW_OK;
	if (len < plen || memcmp(k, prefix, plen) != 0 ||
	    memchr(k, '\0', len) != NULL)
		return ORGW_OK;
	if (ks->n == ks->cap) {
		size_t cap = ks->cap ? ks->cap * 2 : 64;
		if ((nv = realloc(ks->v, cap * sizeof(*nv))) == NULL)
			return ORGW_ENOMEM;
		ks->v = nv;
		ks->cap = cap;
	}
	if ((ks->v[ks->n] = malloc(len + 1)) == NULL)
		return ORGW_ENOMEM;
	memcpy(ks->v[ks->n], k, len);
	ks->v[ks->n][len] = '\0';
	ks->n++;
	return ORGW_OK;
}

/* SCAN MATCH orgw:<prefix>* into ks, sorted, each key once (SCAN may
 * return a key twice). */
static enum orgw_err
scan_keys(struct store_redis *s, const char *prefix, struct keys *ks)
{
	size_t plen = strlen(prefix), i, j, mlen = 0;
	char cursor[32] = "0", *match;
	const char *argv[6];
	size_t lens[6];
	redisReply *r;
	enum orgw_err err = ORGW_OK;

	/* The pattern, with glob characters of the prefix escaped. */
	if ((match = malloc(KEY_PREFIX_LEN + 2 * plen + 2)) == NULL)
		return ORGW_ENOMEM;
	memcpy(match, KEY_PREFIX, KEY_PREFIX_LEN);
	mlen = KEY_PREFIX_LEN;
	for (i = 0; i < plen; i++) {
		if (strchr("*?[]\\", prefix[i]) != NULL)
			match[mlen++] = '\\';
		match[mlen++] = prefix[i];
	}
	match[mlen++] = '*';
	match[mlen] = '\0';
	do {
		argv[0] = "SCAN";
		argv[1] = cursor;
		argv[2] = "MATCH";
		argv[3] = match;
		argv[4] = "COUNT";
		argv[5] = SCAN_COUNT;
		for (i = 0; i < 6; i++)
			lens[i] = strlen(argv[i]);
		if ((r = command(s->rc, 6, argv, lens)) == NULL) {
			err = ORGW_EIO;
			break;
		}
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    r->element[0]->type != REDIS_REPLY_STRING ||
		    r->element[0]->len >= sizeof(cursor) ||
		    r->element[1]->type != REDIS_REPLY_ARRAY) {
			log_err("state: redis SCAN: unexpected reply");
			freeReplyObject(r);
			err = ORGW_EIO;
			break;
		}
		memcpy(cursor, r->element[0]->str, r->element[0]->len);
		cursor[r->element[0]->len] = '\0';
		for (i = 0; i < r->element[1]->elements && err == ORGW_OK;
		     i++) {
			redisReply *e = r->element[1]->element[i];
			if (e->type == REDIS_REPLY_STRING)
				err = keys_add(ks, e->str, e->len, prefix,
					       plen);
		}
		freeReplyObject(r);
	} while (err == ORGW_OK && strcmp(cursor, "0") != 0);
	free(match);
	if (err != ORGW_OK)
		return err;
	/* No match leaves ks->v NULL, which qsort may not be given. */
	if (ks->n > 1)
		qsort(ks->v, ks->n, sizeof(ks->v[0]), by_str);
	for (i = j = 0; i < ks->n; i++) {
		if (j > 0 && strcmp(ks->v[i], ks->v[j - 1]) == 0) {
			free(ks->v[i]);
			continue;
		}
		ks->v[j++] = ks->v[i];
	}
	ks->n = j;
	return ORGW_OK;
}

/* Values of keys[0..n) (WATCHed first in a write transaction), passed
 * to fn with the transaction's own writes laid over them.  *stop when fn
 * asked to stop. */
static enum orgw_err
each_batch(struct store_redis *s, char **keys, size_t n,
	   int (*fn)(void *arg, const char *key, const char *val), void *arg,
	   bool *stop)
{
	const char **argv[2] = {NULL, NULL};
	size_t *lens[2] = {NULL, NULL}, i;
	int argcs[2];
	redisReply *rep[2] = {NULL, NULL}, *vals;
	enum orgw_err err;
	struct rbuf *b;
	char *v;
	int w = s->write ? 1 : 0, c;
	bool mark = marker_due(s, &err);

	if (err != ORGW_OK)
		return err;
	err = ORGW_ENOMEM;
	for (c = 0; c < 2; c++) {
		/* One slot more for WATCH's marker. */
		argv[c] = calloc(n + 2, sizeof(*argv[c]));
		lens[c] = calloc(n + 2, sizeof(*lens[c]));
		if (argv[c] == NULL || lens[c] == NULL)
			goto out;
		argcs[c] = (int)n + 1;
	}
	argv[0][0] = "WATCH";
	lens[0][0] = 5;
	argv[1][0] = "MGET";
	lens[1][0] = 4;
	for (i = 0; i < n; i++) {
		size_t kl;
		char *fk = full_key(keys[i], &kl);
		if (fk == NULL)
			goto out_keys;
		argv[0][i + 1] = argv[1][i + 1] = fk;
		lens[0][i + 1] = lens[1][i + 1] = kl;
	}
	if (mark) {
		argv[0][n + 1] = s->marker;
		lens[0][n + 1] = strlen(s->marker);
		argcs[0] = (int)n + 2;
	}
	err = pipeline(s->rc, (size_t)(1 + w), argcs + 1 - w,
		       (const char *const *const *)(argv + 1 - w),
		       (const size_t *const *)(lens + 1 - w), rep);
	if (err != ORGW_OK)
		goto out_keys;
	if (w) {
		s->watched = true;
		if (reply_ok(rep[0]))
			s->marker_watched = s->marker_watched || mark;
	}
	vals = rep[w];
	if (vals->type != REDIS_REPLY_ARRAY || vals->elements != n) {
		log_err("state: redis MGET: unexpected reply");
		err = ORGW_EIO;
		goto out_keys;
	}
	for (i = 0; i < n && !*stop; i++) {
		v = NULL;
		if ((b = buf_find(s, keys[i])) != NULL)
			v = b->val;
		else if (vals->element[i]->type == REDIS_REPLY_STRING)
			v = vals->element[i]->str;
		if (v != NULL && fn(arg, keys[i], v) != 0)
			*stop = true;
	}
	err = ORGW_OK;
out_keys:
	for (i = 0; i < n; i++)
		free((char *)(uintptr_t)argv[1][i + 1]);
out:
	for (c = 0; c < 2; c++) {
		free(argv[c]);
		free(lens[c]);
		freeReplyObject(rep[c]);
	}
	return err;
}

enum orgw_err
rd_each(struct store *base, const char *prefix,
	int (*fn)(void *arg, const char *key, const char *val), void *arg)
{
	struct store_redis *s = (struct store_redis *)base;
	struct keys ks = {NULL, 0, 0};
	size_t i, plen = strlen(prefix), m;
	bool stop = false;
	enum orgw_err err;

	if ((err = scan_keys(s, prefix, &ks)) != ORGW_OK)
		goto out;
	for (i = 0; i < ks.n && !stop; i += m) {
		m = ks.n - i < MGET_BATCH ? ks.n - i : MGET_BATCH;
		if ((err = each_batch(s, ks.v + i, m, fn, arg, &stop)))
			goto out;
	}
	/* Keys this transaction put that Redis does not hold yet. */
	for (i = 0; i < s->n && !stop; i++) {
		char *k = s->buf[i].key;
		if (s->buf[i].val == NULL || strncmp(k, prefix, plen) != 0 ||
		    bsearch(&k, ks.v, ks.n, sizeof(ks.v[0]), by_str) != NULL)
			continue;
		if (fn(arg, k, s->buf[i].val) != 0)
			stop = true;
	}
out:
	keys_free(&ks);
	return err;
}
