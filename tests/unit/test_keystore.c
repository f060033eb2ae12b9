/*
 * test_keystore.c - keystore.c over the in-memory back-end (store_mem.c):
 * put and find by the keyed hash, a rotate that drops the old hash's
 * index, a stale or damaged index that never lets a key in, revoke
 * (record and index gone, use windows kept), the day and month windows,
 * each, and a transaction whose function fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "conf.h"
#include "keystore.h"
#include "store.h"
#include "store_mem.h"
#include "teamkey.h"

#define NOW 1796083200 /* 2026-12-01 00:00:00 UTC */
#define SECRET "0123456789abcdef-test"

static struct orgw_conf conf;

/* The arguments of one keystore call inside a transaction. */
struct call {
	const struct teamkey *put;
	const char *find, *get, *del, *use_name;
	const struct ledger_cell *add;
	int64_t now;
	struct teamkey k;
	struct ledger_cell day, month;
};

static enum orgw_err
do_call(struct store *s, void *arg)
{
	struct call *c = arg;

	if (c->put != NULL)
		return keystore_put(s, c->put);
	if (c->find != NULL)
		return keystore_find(s, SECRET, c->find, &c->k);
	if (c->get != NULL)
		return keystore_get(s, c->get, &c->k);
	if (c->del != NULL)
		return keystore_del(s, c->del);
	if (c->add != NULL)
		return keystore_use_add(s, c->use_name, c->now, c->add);
	return keystore_use(s, c->use_name, c->now, &c->day, &c->month);
}

static enum orgw_err
run(struct call *c, bool write)
{
	return keystore_txn(&conf, write, do_call, c);
}

/* A key named name for plain (made from fill). */
static void
make(struct teamkey *k, const char *name, unsigned char fill,
     char plain[TEAMKEY_PLAIN_MAX])
{
	unsigned char rnd[32];

	memset(rnd, fill, sizeof(rnd));
	memset(k, 0, sizeof(*k));
	teamkey_plain_make(rnd, plain);
	(void)snprintf(k->name, sizeof(k->name), "%s", name);
	(void)teamkey_hash(SECRET, plain, k->hash);
	k->created = NOW;
}

static void
raw_put(const char *key, const char *val)
{
	struct store *s;

	if (store_open(&s, &conf, true, 100) != ORGW_OK)
		return;
	(void)store_put(s, key, val);
	(void)store_close(s);
}

/* The stored text of key (malloc'd, the caller frees), or NULL. */
static char *
raw_get(const char *key)
{
	struct store *s;
	char *v = NULL;

	if (store_open(&s, &conf, false, 100) != ORGW_OK)
		return NULL;
	(void)store_get(s, key, &v);
	(void)store_close(s);
	return v;
}

static bool
raw_has(const char *key)
{
	char *v = raw_get(key);

	free(v);
	return v != NULL;
}

static int
count_one(void *arg, const struct teamkey *k)
{
	(void)k;
	++*(int *)arg;
	return 0;
}

static enum orgw_err
do_count(struct store *s, void *arg)
{
	*(int *)arg = 0;
	return keystore_each(s, count_one, arg);
}

static void
test_put_find(void)
{
	char plain[TEAMKEY_PLAIN_MAX], plain2[TEAMKEY_PLAIN_MAX];
	char other[TEAMKEY_PLAIN_MAX], hk[TEAMKEY_HASH_HEX + 32];
	struct teamkey a, a2, b;
	struct call c;

	store_mem_reset();
	make(&a, "alice", 1, plain);
	memset(&c, 0, sizeof(c));
	c.put = &a;
	T_ASSERT("put: alice", run(&c, true) == ORGW_OK);
	memset(&c, 0, sizeof(c));
	c.find = plain;
	T_ASSERT("find: by the key",
		 run(&c, false) == ORGW_OK && strcmp(c.k.name, "alice") == 0 &&
			 c.k.created == NOW);
	make(&b, "bob", 2, other);
	memset(&c, 0, sizeof(c));
	c.find = other;
	T_ASSERT("find: an unknown key", run(&c, false) == ORGW_ENOENT);
	c.find = "orgw-short";
	T_ASSERT("find: not of the shape", run(&c, false) == ORGW_ENOENT);
	c.find = "";
	T_ASSERT("find: empty", run(&c, false) == ORGW_ENOENT);

	/* A rotate: same name, new hash; the old index goes. */
	make(&a2, "alice", 3, plain2);
	a2.rotated = NOW + 1;
	memset(&c, 0, sizeof(c));
	c.put = &a2;
	T_ASSERT("put: rotate alice", run(&c, true) == ORGW_OK);
	memset(&c, 0, sizeof(c));
	c.find = plain;
	T_ASSERT("rotate: the old key refused", run(&c, false) == ORGW_ENOENT);
	(void)snprintf(hk, sizeof(hk), "%s%s", KEYSTORE_HASH_PREFIX, a.hash);
	T_ASSERT("rotate: the old index dropped", !raw_has(hk));
	c.find = plain2;
	T_ASSERT("rotate: the new key found",
		 run(&c, false) == ORGW_OK && c.k.rotated == NOW + 1);

	/* An index left behind pointing at alice: her record's hash is
	 * another, so the old key is still refused. */
	raw_put(hk, "{\"v\":1,\"name\":\"alice\"}");
	c.find = plain;
	T_ASSERT("find: a stale index never lets a key in",
		 run(&c, false) == ORGW_ENOENT);
	raw_put(hk, "garbage");
	T_ASSERT("find: a damaged index is ORGW_EIO",
		 run(&c, false) == ORGW_EIO);

	/* A hash indexed for another name is refused. */
	memcpy(b.hash, a2.hash, sizeof(b.hash));
	memset(&c, 0, sizeof(c));
	c.put = &b;
	T_ASSERT("put: another name's hash refused",
		 run(&c, true) == ORGW_EINVAL);
	memset(&c, 0, sizeof(c));
	c.get = "bob";
	T_ASSERT("put: nothing written then", run(&c, false) == ORGW_ENOENT);

	memset(&b.hash, 'x', TEAMKEY_HASH_HEX);
	memset(&c, 0, sizeof(c));
	c.put = &b;
	T_ASSERT("put: a hash not hex refused", run(&c, true) == ORGW_EINVAL);
	make(&b, "a b", 4, other);
	T_ASSERT("put: a bad name refused", run(&c, true) == ORGW_EINVAL);

	memset(&c, 0, sizeof(c));
	c.get = "bad name";
	T_ASSERT("get: a bad name is no key", run(&c, false) == ORGW_ENOENT);
	raw_put(KEYSTORE_REC_PREFIX "carol", "{\"v\":1}");
	c.get = "carol";
	T_ASSERT("get: a damaged record is ORGW_EIO",
		 run(&c, false) == ORGW_EIO);
}

static void
test_use_revoke(void)
{
	char plain[TEAMKEY_PLAIN_MAX], hk[TEAMKEY_HASH_HEX + 32];
	struct teamkey a;
	struct ledger_cell u;
	struct call c;
	char *v;
	int n = -1;

	store_mem_reset();
	make(&a, "alice", 5, plain);
	memset(&c, 0, sizeof(c));
	c.put = &a;
	(void)run(&c, true);

	memset(&c, 0, sizeof(c));
	c.use_name = "alice";
	c.now = NOW;
	T_ASSERT("use: absent is zeros",
		 run(&c, false) == ORGW_OK && c.day.v[LX_REQUESTS] == 0 &&
			 c.month.v[LX_REQUESTS] == 0);
	memset(&u, 0, sizeof(u));
	u.v[LX_REQUESTS] = 1;
	u.v[LX_KEY_SPEND] = 0.25;
	u.v[LX_REASONING] = 7;
	u.v[LX_LAST_USED] = NOW + 5;
	c.add = &u;
	T_ASSERT("use_add: once", run(&c, true) == ORGW_OK);
	c.now = NOW + 86400;	/* the next day, same month */
	T_ASSERT("use_add: the next day", run(&c, true) == ORGW_OK);
	c.add = NULL;
	T_ASSERT("use: the next day's window holds one, the month two",
		 run(&c, false) == ORGW_OK && c.day.v[LX_REQUESTS] == 1 &&
			 c.month.v[LX_REQUESTS] == 2 &&
			 T_NEAR(c.month.v[LX_KEY_SPEND], 0.5) &&
			 c.month.v[LX_REASONING] == 14);
	c.now = NOW;
	T_ASSERT("use: the first day's window holds one",
		 run(&c, false) == ORGW_OK && c.day.v[LX_REQUESTS] == 1);
	v = raw_get("TEAMKEY_USE:alice:2026-12");
	T_ASSERT("use: a window is stored as a ledger cell",
		 v != NULL && strcmp(v, "{\"v\":1,\"r\":2,\"rt\":14,"
				     "\"ksp\":0.5,\"lu\":1796083205}") == 0);
	free(v);
	/* A window written before use was a ledger cell reads on, and the
	 * next request writes it back as a cell. */
	raw_put("TEAMKEY_USE:alice:2026-12",
		"{\"v\":1,\"requests\":3,\"prompt\":100,\"cached\":40,"
		"\"completion\":20,\"spend_usd\":1.5,\"saved_usd\":0.25,"
		"\"refused_rpm\":1,\"refused_concurrent\":2,"
		"\"refused_budget\":3,\"refused_model\":4,"
		"\"last_used\":1796083000}");
	c.add = NULL;
	T_ASSERT("use: a window of the older shape reads",
		 run(&c, false) == ORGW_OK && c.month.v[LX_REQUESTS] == 3 &&
			 c.month.v[LX_PROMPT] == 100 &&
			 c.month.v[LX_CACHED] == 40 &&
			 c.month.v[LX_COMPLETION] == 20 &&
			 c.month.v[LX_KEY_SPEND] == 1.5 &&
			 c.month.v[LX_KEY_SAVED] == 0.25 &&
			 c.month.v[LX_REFUSED_RPM] == 1 &&
			 c.month.v[LX_REFUSED_CONCURRENT] == 2 &&
			 c.month.v[LX_REFUSED_BUDGET] == 3 &&
			 c.month.v[LX_REFUSED_MODEL] == 4 &&
			 c.month.v[LX_LAST_USED] == 1796083000);
	c.add = &u;
	T_ASSERT("use_add: onto the older shape", run(&c, true) == ORGW_OK);
	v = raw_get("TEAMKEY_USE:alice:2026-12");
	T_ASSERT("use_add: the older shape written back as a cell",
		 v != NULL &&
			 strcmp(v, "{\"v\":1,\"r\":4,\"pt\":100,\"ct\":40,"
				   "\"out\":20,\"rt\":7,\"ksp\":1.75,"
				   "\"ksv\":0.25,\"xrpm\":1,\"xconc\":2,"
				   "\"xbud\":3,\"xmod\":4,"
				   "\"lu\":1796083205}") == 0);
	free(v);
	c.add = NULL;
	T_ASSERT("use: the keys", raw_has("TEAMKEY_USE:alice:2026-12-01") &&
					  raw_has("TEAMKEY_USE:alice:2026-12-02") &&
					  raw_has("TEAMKEY_USE:alice:2026-12"));
	c.use_name = "a b";
	T_ASSERT("use: a bad name refused", run(&c, false) == ORGW_EINVAL);
	raw_put("TEAMKEY_USE:alice:2026-12", "[1]");
	c.use_name = "alice";
	T_ASSERT("use: a damaged window is ORGW_EIO",
		 run(&c, false) == ORGW_EIO);

	T_ASSERT("each: one key",
		 keystore_txn(&conf, false, do_count, &n) == ORGW_OK && n == 1);
	memset(&c, 0, sizeof(c));
	c.del = "alice";
	T_ASSERT("revoke: alice", run(&c, true) == ORGW_OK);
	T_ASSERT("revoke: again, no such key", run(&c, true) == ORGW_ENOENT);
	memset(&c, 0, sizeof(c));
	c.find = plain;
	T_ASSERT("revoke: the key refused", run(&c, false) == ORGW_ENOENT);
	(void)snprintf(hk, sizeof(hk), "%s%s", KEYSTORE_HASH_PREFIX, a.hash);
	T_ASSERT("revoke: record and index gone, use windows kept",
		 !raw_has(hk) && !raw_has("TEAMKEY:alice") &&
			 raw_has("TEAMKEY_USE:alice:2026-12-01"));
	T_ASSERT("each: none left",
		 keystore_txn(&conf, false, do_count, &n) == ORGW_OK && n == 0);
	raw_put("TEAMKEY:zed", "not json");
	T_ASSERT("each: a damaged record skipped",
		 keystore_txn(&conf, false, do_count, &n) == ORGW_OK && n == 0);
}

static enum orgw_err
do_fail(struct store *s, void *arg)
{
	(void)arg;
	(void)store_put(s, "TEAMKEY_USE:x:2026-12", "{}");
	return ORGW_EINVAL;
}

static void
test_txn(void)
{
	int n;

	store_mem_reset();
	T_ASSERT("txn: fn's error returned",
		 keystore_txn(&conf, true, do_fail, NULL) == ORGW_EINVAL);
	store_mem_refuse(true);
	T_ASSERT("txn: a store that will not open is its error",
		 keystore_txn(&conf, false, do_count, &n) != ORGW_OK);
	store_mem_refuse(false);
}

int
main(void)
{
	if (conf_init(&conf) != ORGW_OK)
		return 1;
	conf.state_backend = CONF_BACKEND_MEMORY;
	test_put_find();
	test_use_revoke();
	test_txn();
	conf_free(&conf);
	return T_REPORT();
}
