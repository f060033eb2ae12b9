/*
 * stats.c - the GET /stats document (docs/design.md section 7): every model the
 * state knows, with its lock, candidates, failure counts, live
 * cooldowns, counters (the ledger's cells and hit rates, with the old
 * release's STATS records added in) and recent lock changes (LOCK_LOG),
 * copied out in one shared-lock transaction (state_txn) and built with
 * cJSON after it.  GET /status renders the same tree (statuspage.c).
 * GET /metrics reads the same way: the counters in the shapes prom.h
 * names "stats" and "metrics" and the live cooldowns, into a tree that
 * prom_render() formats.
 *
 * The transaction only copies the keys and values (one walk, a few
 * allocations a key): decoding every record and building the documents
 * of a large state took long enough under the shared lock that writers
 * waiting for it gave up (STORE_LOCK_TIMEOUT_MS) while a few /metrics
 * loops ran.  The copy is freed once the document is built.
 *
 * Ownership: the document is built under a cJSON root owned by
 * stats_json() and printed once; the copy belongs to the caller of
 * snap_read().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "convlist.h"
#include "failover.h"
#include "ledger.h"
#include "prom.h"
#include "record.h"
#include "state.h"
#include "stats.h"
#include "store.h"
#include "teamauth.h"

struct stats_args {
	cJSON *models;
	int64_t now;
	int64_t lost;		/* LOST_UPDATES */
	struct convlist *conv;	/* the CONV: and PRESSURE: records */
	bool ok;
};

static cJSON *
model_obj(struct stats_args *a, const char *model)
{
	cJSON *m = cJSON_GetObjectItemCaseSensitive(a->models, model);

	if (m == NULL && (m = cJSON_AddObjectToObject(a->models, model)) ==
				 NULL)
		a->ok = false;
	return m;
}

static void
stats_seen_cb(void *arg, const char *model, int64_t first_seen)
{
	struct stats_args *a = arg;
	cJSON *m = model_obj(a, model);

	if (m && !cJSON_AddNumberToObject(m, "first_seen", (double)first_seen))
		a->ok = false;
}

static void
add_lock(cJSON *m, const char *val, bool *ok)
{
	struct rec_lock l;
	cJSON *o;

	if (record_lock_decode(val, &l) != ORGW_OK)
		return;
	if ((o = cJSON_AddObjectToObject(m, "lock")) == NULL ||
	    !cJSON_AddStringToObject(o, "tag", l.tag) ||
	    !cJSON_AddStringToObject(o, "provider_name", l.provider_name) ||
	    !cJSON_AddNumberToObject(o, "locked_at", (double)l.locked_at) ||
	    !cJSON_AddNumberToObject(o, "last_used", (double)l.last_used))
		*ok = false;
}

static void
add_cands(cJSON *m, const char *val, bool *ok)
{
	cJSON *o = cJSON_Parse(val), *arr;

	if (o == NULL)
		return;
	arr = cJSON_DetachItemFromObjectCaseSensitive(o, "candidates");
	if (arr != NULL && !cJSON_AddItemToObject(m, "candidates", arr)) {
		cJSON_Delete(arr);
		*ok = false;
	}
	if (!cJSON_AddNumberToObject(
		    m, "scored_at",
		    cJSON_GetNumberValue(
			    cJSON_GetObjectItemCaseSensitive(o, "scored_at"))))
		*ok = false;
	{
		cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
		if (cJSON_IsString(e) && e->valuestring[0] != '\0' &&
		    !cJSON_AddStringToObject(m, "scoring_error",
					     e->valuestring))
			*ok = false;
	}
	cJSON_Delete(o);
}

/* The model's hidden accumulator m[name] ("stats" or "metrics"). */
static cJSON *
acc(struct stats_args *a, cJSON *m, const char *name)
{
	cJSON *o = cJSON_GetObjectItemCaseSensitive(m, name);

	if (o == NULL && (o = cJSON_AddObjectToObject(m, name)) == NULL)
		a->ok = false;
	return o;
}

/*
 * The counters' keys, the same for /stats and /metrics: a ledger cell,
 * a measured hit rate, or an old release's STATS or METRICS record
 * (added in; ledger.h).  Returns true when key was one of them.
 */
static bool
count_key(struct stats_args *a, const char *key, const char *val,
	  bool metrics)
{
	struct ledger_key_parts p;
	struct ledger_cell c;
	const char *model;
	cJSON *m;

	if (ledger_key_split(key, &p)) {
		if (ledger_cell_decode(val, &c) == ORGW_OK &&
		    (m = model_obj(a, p.model)) != NULL &&
		    !ledger_render_cell(acc(a, m, "stats"),
					metrics ? acc(a, m, "metrics") : NULL,
					&p, &c, a->now))
			a->ok = false;
		return true;
	}
	if ((model = statekeys_is(key, SK_HIT)) != NULL) {
		struct score_hit *h = NULL;
		size_t n = 0, i;

		if (record_hits_decode(val, &h, &n) != ORGW_OK)
			a->ok = false;
		else if (n > 0 && (m = model_obj(a, model)) != NULL)
			for (i = 0; i < n; i++)
				if (!ledger_render_hit(acc(a, m, "stats"),
						       h[i].tag, &h[i]))
					a->ok = false;
		free(h);
		return true;
	}
	if ((model = statekeys_is(key, SK_STATS_OLD)) != NULL) {
		if ((m = model_obj(a, model)) != NULL &&
		    !ledger_merge_legacy(acc(a, m, "stats"), val))
			a->ok = false;
		return true;
	}
	if ((model = statekeys_is(key, SK_METRICS_OLD)) != NULL) {
		if (metrics && (m = model_obj(a, model)) != NULL &&
		    !ledger_merge_legacy(acc(a, m, "metrics"), val))
			a->ok = false;
		return true;
	}
	return false;
}

/* Completes each model's "stats" (ledger_render_finish); with flatten,
 * moves its members into the model's object, as /stats shows them. */
static void
finish_models(struct stats_args *a, bool flatten)
{
	cJSON *m, *st, *it, *next;

	cJSON_ArrayForEach(m, a->models)
	{
		st = cJSON_GetObjectItemCaseSensitive(m, "stats");
		if (st == NULL)
			continue;
		if (!ledger_render_finish(st, a->now))
			a->ok = false;
		if (!flatten)
			continue;
		cJSON_DetachItemViaPointer(m, st);
		for (it = st->child; it != NULL; it = next) {
			next = it->next;
			cJSON_DetachItemViaPointer(st, it);
			if (!cJSON_AddItemToObject(m, it->string, it)) {
				cJSON_Delete(it);
				a->ok = false;
			}
		}
		cJSON_Delete(st);
	}
}

static void
add_tagged(cJSON *m, const char *field, const char *tag, const char *val,
	   int64_t now, bool *ok)
{
	cJSON *o = cJSON_GetObjectItemCaseSensitive(m, field), *e;

	if (o == NULL && (o = cJSON_AddObjectToObject(m, field)) == NULL) {
		*ok = false;
		return;
	}
	if (strcmp(field, "failures") == 0) {
		struct rec_failure f;
		if (record_failure_decode(val, &f) == ORGW_OK &&
		    !cJSON_AddNumberToObject(o, tag, (double)f.count))
			*ok = false;
		return;
	}
	struct rec_cooldown cd;
	if (record_cooldown_decode(val, &cd) != ORGW_OK ||
	    !failover_breaker_cooling(&cd, now))
		return;
	if ((e = cJSON_AddObjectToObject(o, tag)) == NULL ||
	    !cJSON_AddNumberToObject(e, "until", (double)cd.until) ||
	    !cJSON_AddStringToObject(e, "reason", cd.reason))
		*ok = false;
}

/* LOCK_LOG:<model>'s changes as the model's "lock_changes". */
static void
add_lock_log(cJSON *m, const char *val, bool *ok)
{
	cJSON *o = cJSON_Parse(val), *arr;

	arr = cJSON_DetachItemFromObjectCaseSensitive(o, "changes");
	if (cJSON_IsArray(arr) &&
	    !cJSON_AddItemToObject(m, "lock_changes", arr)) {
		cJSON_Delete(arr);
		*ok = false;
	} else if (!cJSON_IsArray(arr)) {
		cJSON_Delete(arr);
	}
	cJSON_Delete(o);
}

/* Shows one key of the state in /stats, by its family (statekeys.h). */
static int
stats_key_cb(void *arg, const char *key, const char *val)
{
	struct stats_args *a = arg;
	struct statekey_parts p;
	int64_t fs = 0;
	cJSON *m;

	if (!statekeys_parse(key, &p) ||
	    !(statekeys_family(p.family)->flags & STATEKEY_SHOWN))
		return 0;
	switch (p.family) {
	case SK_CONV:
	case SK_PRESSURE:
		(void)convlist_add(a->conv, &p, val);
		break;
	case SK_LOST_UPDATES:
		a->lost = strtoll(val, NULL, 10);
		break;
	case SK_MODEL_SEEN:
		if (record_model_seen_decode(val, &fs) == ORGW_OK)
			stats_seen_cb(a, p.first, fs);
		break;
	case SK_BEST_PROVIDER:
		if ((m = model_obj(a, p.first)) != NULL)
			add_lock(m, val, &a->ok);
		break;
	case SK_PROVIDER_CANDIDATE:
		if ((m = model_obj(a, p.first)) != NULL)
			add_cands(m, val, &a->ok);
		break;
	case SK_LOCK_LOG:
		if ((m = model_obj(a, p.first)) != NULL)
			add_lock_log(m, val, &a->ok);
		break;
	case SK_PROVIDER_FAILURE:
	case SK_PROVIDER_COOLDOWN:
		if ((m = model_obj(a, p.first)) != NULL)
			add_tagged(m,
				   p.family == SK_PROVIDER_FAILURE ? "failures"
								   : "cooldowns",
				   p.last, val, a->now, &a->ok);
		break;
	default:
		(void)count_key(a, key, val, false);
		break;
	}
	return a->ok ? 0 : 1;
}

/* Every key and value of the state, copied out of one transaction. */
struct snap {
	char **kv;		/* key, value, key, value, ... (malloc'd) */
	size_t n, cap;		/* strings in kv */
	bool oom;
};

static void
snap_clear(struct snap *sn)
{
	size_t i;

	for (i = 0; i < sn->n; i++)
		free(sn->kv[i]);
	free(sn->kv);
	memset(sn, 0, sizeof(*sn));
}

static int
snap_cb(void *arg, const char *key, const char *val)
{
	struct snap *sn = arg;
	char *k, *v;

	if (sn->n + 2 > sn->cap) {
		size_t cap = sn->cap ? sn->cap * 2 : 256;
		char **kv = realloc(sn->kv, cap * sizeof(*kv));

		if (kv == NULL) {
			sn->oom = true;
			return 1;
		}
		sn->kv = kv;
		sn->cap = cap;
	}
	k = strdup(key);
	v = strdup(val);
	if (k == NULL || v == NULL) {
		free(k);
		free(v);
		sn->oom = true;
		return 1;
	}
	sn->kv[sn->n++] = k;
	sn->kv[sn->n++] = v;
	return 0;
}

static enum orgw_err
do_snap(struct store *s, void *arg)
{
	struct snap *sn = arg;
	enum orgw_err err;

	/* A transaction run again starts its copy again. */
	snap_clear(sn);
	err = store_each(s, "", snap_cb, sn);
	if (err == ORGW_OK && sn->oom)
		err = ORGW_ENOMEM;
	return err;
}

/* Copies the whole state into *sn (snap_clear() it after, whatever the
 * result); the transaction's error. */
static enum orgw_err
snap_read(const struct orgw_conf *c, struct snap *sn)
{
	memset(sn, 0, sizeof(*sn));
	return state_txn(c, false, do_snap, sn);
}

/* Runs cb over the copy, as store_each() would over the store. */
static void
snap_each(const struct snap *sn, int (*cb)(void *, const char *, const char *),
	  void *arg)
{
	size_t i;

	for (i = 0; i + 1 < sn->n; i += 2)
		if (cb(arg, sn->kv[i], sn->kv[i + 1]) != 0)
			return;
}

/* The /stats walk over the copy: the old MODELS_SEEN list first. */
static void
stats_walk(const struct snap *sn, struct stats_args *a)
{
	size_t i;

	for (i = 0; i + 1 < sn->n; i += 2)
		if (statekeys_is(sn->kv[i], SK_MODELS_SEEN_OLD) != NULL)
			record_seen_each(sn->kv[i + 1], stats_seen_cb, a);
	snap_each(sn, stats_key_cb, a);
}

/*
 * The team keys (teamauth_keys_tree) under root's "keys", with
 * KEYS_SECRET set; a keys store that cannot be read says so in
 * "keys_error".  False when out of memory.
 */
static bool
add_keys(const struct orgw_conf *c, cJSON *root, int64_t now)
{
	cJSON *keys;
	enum orgw_err err;

	if (c->keys_secret == NULL)
		return true;
	if ((keys = cJSON_AddObjectToObject(root, "keys")) == NULL)
		return false;
	err = teamauth_keys_tree(c, now, keys);
	return err == ORGW_OK ||
	       cJSON_AddStringToObject(root, "keys_error",
				       orgw_strerror(err)) != NULL;
}

/* The conversations' list for a document at now, with c's settings;
 * NULL when out of memory. */
static struct convlist *
conv_list(const struct orgw_conf *c, int64_t now)
{
	struct convlist_opts o;

	o.now = now;
	o.idle_s = c->conversation_idle_seconds;
	o.ttl_s = c->cache_ttl_seconds;
	/* No more rows than the records the scorer keeps. */
	o.max_rows = (size_t)c->max_conversations < CONVLIST_ROWS ?
			     (size_t)c->max_conversations :
			     CONVLIST_ROWS;
	return convlist_new(&o);
}

cJSON *
stats_tree(const struct orgw_conf *c, int64_t now)
{
	cJSON *root = cJSON_CreateObject();
	struct stats_args a;
	enum orgw_err err;

	memset(&a, 0, sizeof(a));
	a.now = now;
	a.conv = conv_list(c, now);
	a.ok = root != NULL && a.conv != NULL &&
	       cJSON_AddNumberToObject(root, "generated_at", (double)now) &&
	       (a.models = cJSON_AddObjectToObject(root, "models")) != NULL;
	if (a.ok) {
		struct snap sn;

		err = snap_read(c, &sn);
		if (err == ORGW_OK) {
			stats_walk(&sn, &a);
			finish_models(&a, true);
		}
		/* Operator only, as the rest of /stats: team keys are
		 * refused before this is built. */
		if (a.ok && !convlist_render(a.conv, root, a.models))
			a.ok = false;
		snap_clear(&sn);
		if (err != ORGW_OK &&
		    !cJSON_AddStringToObject(root, "state_error",
					     orgw_strerror(err)))
			a.ok = false;
		if (a.ok)
			a.ok = add_keys(c, root, now);
		/* Requests not counted while the state was away (as
		 * orgw_state_lost_updates_total in /metrics). */
		if (a.ok && !cJSON_AddNumberToObject(root, "lost_updates",
						     (double)a.lost))
			a.ok = false;
	}
	convlist_free(a.conv);
	if (!a.ok) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

char *
stats_json(const struct orgw_conf *c, int64_t now)
{
	cJSON *root = stats_tree(c, now);
	char *out = NULL;

	if (root != NULL)
		out = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return out;
}

static int
metrics_key_cb(void *arg, const char *key, const char *val)
{
	struct stats_args *a = arg;
	struct statekey_parts p;
	struct rec_cooldown cd;
	cJSON *m, *n;

	if (!statekeys_parse(key, &p) ||
	    !(statekeys_family(p.family)->flags & STATEKEY_SHOWN))
		return 0;
	if (convlist_add(a->conv, &p, val)) {
		/* listed */
	} else if (p.family == SK_LOST_UPDATES) {
		a->lost = strtoll(val, NULL, 10);
	} else if (p.family == SK_MODEL_SEEN) {
		(void)model_obj(a, p.first);
	} else if (count_key(a, key, val, true)) {
		/* counted */
	} else if (p.family == SK_PROVIDER_COOLDOWN &&
		   record_cooldown_decode(val, &cd) == ORGW_OK &&
		   failover_breaker_cooling(&cd, a->now) &&
		   (m = model_obj(a, p.first)) != NULL) {
		n = cJSON_GetObjectItemCaseSensitive(m, "cooling");
		if (n != NULL)
			cJSON_SetNumberValue(n, n->valuedouble + 1);
		else if (!cJSON_AddNumberToObject(m, "cooling", 1))
			a->ok = false;
	}
	return a->ok ? 0 : 1;
}

enum orgw_err
stats_metrics(const struct orgw_conf *c, int64_t now, int64_t in_flight,
	      struct buf *out)
{
	struct stats_args a;
	enum orgw_err err;

	memset(&a, 0, sizeof(a));
	a.now = now;
	a.models = cJSON_CreateObject();
	a.conv = conv_list(c, now);
	a.ok = a.models != NULL && a.conv != NULL;
	if (!a.ok) {
		cJSON_Delete(a.models);
		convlist_free(a.conv);
		return ORGW_ENOMEM;
	}
	{
		struct snap sn;

		err = snap_read(c, &sn);
		if (err == ORGW_OK) {
			snap_each(&sn, metrics_key_cb, &a);
			finish_models(&a, false);
			if (a.ok && !convlist_render(a.conv, NULL, a.models))
				a.ok = false;
		}
		snap_clear(&sn);
	}
	convlist_free(a.conv);
	if (err == ORGW_OK && !a.ok)
		err = ORGW_ENOMEM;
	if (err == ORGW_OK)
		err = prom_render(out, a.models, in_flight, a.lost);
	cJSON_Delete(a.models);
	if (err == ORGW_OK && c->keys_secret != NULL) {
		cJSON *keys = cJSON_CreateObject();

		err = keys == NULL ? ORGW_ENOMEM :
				     teamauth_keys_tree(c, now, keys);
		if (err == ORGW_OK)
			err = prom_render_keys(out, keys);
		cJSON_Delete(keys);
	}
	return err;
}
