/*
 * keystore.c - the team keys' store (keystore.h) over store.h.
 *
 * keystore_txn() runs a transaction of state.c's (state_txn_norepair:
 * the retry of Redis conflicts, no repair) on a shallow copy of the
 * configuration whose state_path is KEYS_PATH, so the GDBM back-end
 * takes KEYS_PATH.lock and keeps KEYS_PATH.twin as it does for the
 * state, and nothing of the routing state's upkeep (store_repair,
 * store_tidy, the scorer's sweep, the .workers table) is ever pointed
 * at the keys: those take the caller's configuration, never this copy,
 * which lives only for the call.
 *
 * The index entry is checked against the record it names (the record's
 * own hash, compared in constant time), so an index left behind by an
 * interrupted edit never lets a key in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "keystore.h"
#include "log.h"
#include "state.h"
#include "store.h"

#define KEY_MAX 128	/* a use window's key: prefix, name, day, with room */
#define INDEX_VERSION 1

/* Family f's key of name (and when) into k (KEY_MAX bytes). */
static void
key_of(char *k, enum statekey f, const char *name, const char *when)
{
	(void)statekeys_make(k, KEY_MAX, f, name, when);
}

/* The index value for name: malloc'd (caller frees), NULL when out of
 * memory. */
static char *
index_encode(const char *name)
{
	cJSON *o = cJSON_CreateObject();
	char *out = NULL, *text;

	if (o != NULL && cJSON_AddNumberToObject(o, "v", INDEX_VERSION) &&
	    cJSON_AddStringToObject(o, "name", name) &&
	    (text = cJSON_PrintUnformatted(o)) != NULL) {
		out = strdup(text);
		cJSON_free(text);
	}
	cJSON_Delete(o);
	return out;
}

/* The name an index value holds into name; false when it is damaged. */
static bool
index_decode(const char *text, char name[TEAMKEY_NAME_MAX + 1])
{
	cJSON *o = cJSON_Parse(text);
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "name");
	bool ok = cJSON_IsString(n) && teamkey_name_ok(n->valuestring);

	if (ok)
		(void)snprintf(name, TEAMKEY_NAME_MAX + 1, "%s", n->valuestring);
	cJSON_Delete(o);
	return ok;
}

static enum orgw_err index_get(struct store *s, const char *hash,
			       char name[TEAMKEY_NAME_MAX + 1]);

enum orgw_err
keystore_name_of(struct store *s, const char *hash,
		 char name[TEAMKEY_NAME_MAX + 1])
{
	return index_get(s, hash, name);
}

/* keystore_name_of(). */
static enum orgw_err
index_get(struct store *s, const char *hash, char name[TEAMKEY_NAME_MAX + 1])
{
	char k[KEY_MAX], safe[KEY_MAX * 4], *v = NULL;
	enum orgw_err err;

	key_of(k, SK_TEAMKEY_HASH, hash, NULL);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if (v == NULL)
		return ORGW_ENOENT;
	err = index_decode(v, name) ? ORGW_OK : ORGW_EIO;
	if (err != ORGW_OK)
		log_err("keys: %s is damaged; restore the keys from `orgw-score "
			"key export`", log_safe(safe, sizeof(safe), k));
	free(v);
	return err;
}

/* Deletes the index entry of hash when it names name. */
static enum orgw_err
index_drop(struct store *s, const char *hash, const char *name)
{
	char k[KEY_MAX], had[TEAMKEY_NAME_MAX + 1];
	enum orgw_err err = index_get(s, hash, had);

	if (err == ORGW_ENOENT || (err == ORGW_OK && strcmp(had, name) != 0))
		return ORGW_OK;
	/* A damaged entry under this key's hash goes too. */
	if (err != ORGW_OK && err != ORGW_EIO)
		return err;
	key_of(k, SK_TEAMKEY_HASH, hash, NULL);
	return store_del(s, k);
}

/* The transaction's function, and which error it returned last, so a
 * failure of the store is told from one of fn's. */
struct txn_ctx {
	enum orgw_err (*fn)(struct store *s, void *arg);
	void *arg;
	enum orgw_err fn_err;
};

static enum orgw_err
txn_fn(struct store *s, void *arg)
{
	struct txn_ctx *t = arg;

	t->fn_err = t->fn(s, t->arg);
	return t->fn_err;
}

enum orgw_err
keystore_txn(const struct orgw_conf *c, bool write,
	     enum orgw_err (*fn)(struct store *s, void *arg), void *arg)
{
	/* A shallow copy: it borrows every string of c, and is never
	 * conf_free()d. */
	struct orgw_conf kc = *c;
	struct txn_ctx t = {fn, arg, ORGW_OK};
	enum orgw_err err;

	if (c->state_backend == CONF_BACKEND_GDBM) {
		if (c->keys_path == NULL) {
			log_err("keys: KEYS_PATH is not set (conf_settle)");
			return ORGW_EINVAL;
		}
		kc.state_path = c->keys_path;
	}
	err = state_txn_norepair(&kc, write, txn_fn, &t);
	if (err == ORGW_EIO && t.fn_err != ORGW_EIO) {
		if (c->state_backend == CONF_BACKEND_GDBM)
			log_err("keys %s: cannot be used (above), and orgw "
				"never repairs or recreates it: move it and "
				"its .twin aside and restore them with "
				"`orgw-score key import` from a `orgw-score key "
				"export` taken earlier, or gdbm_recover it by "
				"hand", c->keys_path);
		else
			log_err("keys: the Redis store cannot be used (above)");
	}
	return err;
}

enum orgw_err
keystore_get(struct store *s, const char *name, struct teamkey *k)
{
	char key[KEY_MAX], *v = NULL;
	enum orgw_err err;

	memset(k, 0, sizeof(*k));
	if (!teamkey_name_ok(name))
		return ORGW_ENOENT;
	key_of(key, SK_TEAMKEY, name, NULL);
	if ((err = store_get(s, key, &v)) != ORGW_OK)
		return err;
	if (v == NULL)
		return ORGW_ENOENT;
	if (teamkey_decode(v, k) != ORGW_OK ||
	    strcmp(k->name, name) != 0) {
		log_err("keys: %s is damaged; restore it from `orgw-score key "
			"export`", key);
		memset(k, 0, sizeof(*k));
		err = ORGW_EIO;
	}
	free(v);
	return err;
}

enum orgw_err
keystore_find(struct store *s, const char *secret, const char *plain,
	      struct teamkey *k)
{
	char hex[TEAMKEY_HASH_HEX + 1], name[TEAMKEY_NAME_MAX + 1];
	enum orgw_err err;

	memset(k, 0, sizeof(*k));
	if (secret == NULL || *secret == '\0' || plain == NULL ||
	    !teamkey_plain_shape(plain))
		return ORGW_ENOENT;
	if (!teamkey_hash(secret, plain, hex)) {
		log_err("keys: the keyed hash failed");
		return ORGW_EIO;
	}
	if ((err = index_get(s, hex, name)) != ORGW_OK)
		return err;
	if ((err = keystore_get(s, name, k)) != ORGW_OK)
		return err;
	if (!teamkey_hash_eq(k->hash, hex)) {
		/* An entry a rotate left behind: not this key any more. */
		memset(k, 0, sizeof(*k));
		return ORGW_ENOENT;
	}
	return ORGW_OK;
}

enum orgw_err
keystore_put(struct store *s, const struct teamkey *k)
{
	struct teamkey old;
	char key[KEY_MAX], had[TEAMKEY_NAME_MAX + 1];
	enum orgw_err err;

	if (!teamkey_ok(k))
		return ORGW_EINVAL;
	err = index_get(s, k->hash, had);
	if (err == ORGW_OK && strcmp(had, k->name) != 0) {
		log_err("keys: the hash of %s is indexed for %s already",
			k->name, had);
		return ORGW_EINVAL;
	}
	if (err != ORGW_OK && err != ORGW_ENOENT && err != ORGW_EIO)
		return err;
	/* A damaged old record is overwritten: that is how it is fixed. */
	err = keystore_get(s, k->name, &old);
	if (err == ORGW_OK && strcmp(old.hash, k->hash) != 0 &&
	    (err = index_drop(s, old.hash, k->name)) != ORGW_OK)
		return err;
	if (err != ORGW_OK && err != ORGW_ENOENT && err != ORGW_EIO)
		return err;
	key_of(key, SK_TEAMKEY, k->name, NULL);
	if ((err = store_put_text(s, key, teamkey_encode(k))) != ORGW_OK)
		return err;
	key_of(key, SK_TEAMKEY_HASH, k->hash, NULL);
	return store_put_text(s, key, index_encode(k->name));
}

enum orgw_err
keystore_del(struct store *s, const char *name)
{
	struct teamkey k;
	char key[KEY_MAX];
	enum orgw_err err = keystore_get(s, name, &k);

	if (err == ORGW_ENOENT)
		return err;
	/* A damaged record can be revoked: its index stays unreachable
	 * (keystore_find checks the record's hash). */
	if (err == ORGW_OK && (err = index_drop(s, k.hash, name)) != ORGW_OK)
		return err;
	if (err != ORGW_OK && err != ORGW_EIO)
		return err;
	key_of(key, SK_TEAMKEY, name, NULL);
	return store_del(s, key);
}

/* One use window of name into *u: absent is zeros. */
static enum orgw_err
use_get(struct store *s, const char *key, struct ledger_cell *u)
{
	char *v = NULL;
	enum orgw_err err;

	memset(u, 0, sizeof(*u));
	if ((err = store_get(s, key, &v)) != ORGW_OK)
		return err;
	if (teamkey_use_decode(v, u) != ORGW_OK) {
		log_err("keys: %s is damaged; restore it from `orgw-score key "
			"export`", key);
		memset(u, 0, sizeof(*u));
		err = ORGW_EIO;
	}
	free(v);
	return err;
}

/* The keys of name's two windows of now_s into kd and km (KEY_MAX). */
static bool
use_keys(const char *name, int64_t now_s, char *kd, char *km)
{
	char day[11], month[8];

	if (!teamkey_name_ok(name))
		return false;
	teamkey_day(now_s, day);
	teamkey_month(now_s, month);
	key_of(kd, SK_TEAMKEY_USE, name, day);
	key_of(km, SK_TEAMKEY_USE, name, month);
	return true;
}

enum orgw_err
keystore_use(struct store *s, const char *name, int64_t now_s,
	     struct ledger_cell *day, struct ledger_cell *month)
{
	char kd[KEY_MAX], km[KEY_MAX];
	enum orgw_err err;

	memset(day, 0, sizeof(*day));
	memset(month, 0, sizeof(*month));
	if (!use_keys(name, now_s, kd, km))
		return ORGW_EINVAL;
	if ((err = use_get(s, kd, day)) != ORGW_OK)
		return err;
	return use_get(s, km, month);
}

enum orgw_err
keystore_use_add(struct store *s, const char *name, int64_t now_s,
		 const struct ledger_cell *u)
{
	char kd[KEY_MAX], km[KEY_MAX];
	const char *keys[2] = {kd, km};
	struct ledger_cell w;
	enum orgw_err err;
	size_t i;

	if (!use_keys(name, now_s, kd, km))
		return ORGW_EINVAL;
	for (i = 0; i < 2; i++) {
		if ((err = use_get(s, keys[i], &w)) != ORGW_OK)
			return err;
		teamkey_use_add(&w, u);
		if ((err = store_put_text(s, keys[i], teamkey_use_encode(&w))) !=
		    ORGW_OK)
			return err;
	}
	return ORGW_OK;
}

struct each_ctx {
	int (*fn)(void *arg, const struct teamkey *k);
	void *arg;
};

static int
each_one(void *arg, const char *key, const char *val)
{
	struct each_ctx *e = arg;
	struct teamkey k;
	char safe[KEY_MAX * 4];

	if (teamkey_decode(val, &k) != ORGW_OK ||
	    strcmp(k.name, statekeys_is(key, SK_TEAMKEY)) != 0) {
		log_err("keys: %s is damaged (skipped); restore it from "
			"`orgw-score key export`",
			log_safe(safe, sizeof(safe), key));
		return 0;
	}
	return e->fn(e->arg, &k);
}

enum orgw_err
keystore_each(struct store *s, int (*fn)(void *arg, const struct teamkey *k),
	      void *arg)
{
	struct each_ctx e = {fn, arg};

	return store_each(s, KEYSTORE_REC_PREFIX, each_one, &e);
}
