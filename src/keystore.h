/*
 * keystore.h - the team keys' store (teamkey.h): their records, the
 * index from keyed hash to name, and what each used by day and month.
 * An edge module over store.h; the records' text is teamkey_codec.c's.
 *
 * Where: STATE_BACKEND=gdbm, the GDBM file KEYS_PATH (default keys.gdbm
 * beside STATE_PATH) with its own lock (KEYS_PATH.lock) and crash-safety
 * twin (KEYS_PATH.twin), exactly as the state file has; conf_settle()
 * refuses a KEYS_PATH that would share a file with STATE_PATH.
 * STATE_BACKEND=redis, the same Redis as the state, under orgw:TEAMKEY*
 * (nothing that sweeps, resets or tidies the routing state touches
 * those: the scorer's sweep deletes per-model keys only).
 *
 * Never repaired, recovered or recreated: the routing state is soft,
 * keys and spend are not.  What the crash-safety twin does is kept, as
 * it loses nothing: a writer that died mid-transaction is undone from
 * the twin, and a damaged file whose twin reads back whole is restored
 * from it (the twin is equal at rest; the damaged file is kept as
 * KEYS_PATH.corrupt).  Anything else damaged is ORGW_EIO (logged, with
 * what to do: move KEYS_PATH and its twin aside and restore them from
 * `orgw-score key export`, or gdbm_recover(1) by hand), and both files
 * are left as they are.  A missing file is an empty store (the first
 * write creates it).
 *
 * Keys (values are JSON text):
 *   TEAMKEY:<name>             teamkey_encode()
 *   TEAMKEY_HASH:<hex>         {"v":1,"name":"<name>"}
 *   TEAMKEY_USE:<name>:<day>   teamkey_use_encode() (a ledger cell of
 *                              the key's rows), day "YYYY-MM-DD"
 *   TEAMKEY_USE:<name>:<month> the same, month "YYYY-MM"
 *
 * A revoked key (keystore_del) loses its record and index; its use
 * windows stay: they are the history of what was spent under that name,
 * `key export` carries them, and a key made later under the same name
 * counts on in the same windows (a revoke and add does not reset a
 * budget).
 *
 * Every function but keystore_txn() runs inside one (s is borrowed from
 * it for the call) and leaves nothing behind but its reads and writes to
 * s, so a transaction Redis runs again is safe.
 */
#ifndef ORGW_KEYSTORE_H
#define ORGW_KEYSTORE_H

#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "orgw.h"
#include "statekeys.h"
#include "teamkey.h"

struct store;

#define KEYSTORE_REC_PREFIX STATEKEY_P_TEAMKEY
#define KEYSTORE_HASH_PREFIX STATEKEY_P_TEAMKEY_HASH
#define KEYSTORE_USE_PREFIX STATEKEY_P_TEAMKEY_USE

/*
 * One transaction on the keys store, like state_txn() (state.h) but on
 * the keys' own store: opens it (exclusive when write), runs fn(s, arg),
 * commits or, when fn failed, aborts; a Redis conflict (ORGW_ECONFLICT)
 * runs fn again as state_txn() does.  Never repaired: ORGW_EIO is
 * returned (and logged once per call with what to do).  c must have
 * keys_path set (conf_load() does; conf_settle()), except on Redis and
 * in the unit tests' memory back-end.  Returns fn's error, else the
 * commit's (ORGW_EBUSY: the lock was not had in time).
 */
enum orgw_err keystore_txn(const struct orgw_conf *c, bool write,
			   enum orgw_err (*fn)(struct store *s, void *arg),
			   void *arg);

/*
 * The key whose keyed hash (teamkey_hash() of plain under secret) is
 * indexed: TEAMKEY_HASH:<hex> -> name -> TEAMKEY:<name> into *k, the
 * record's hash checked with teamkey_hash_eq().  ORGW_ENOENT when there
 * is none, when plain is not of a key's shape (teamkey_plain_shape) or
 * secret is NULL or empty; ORGW_EIO for a damaged record (logged).  A
 * disabled or expired key is found: teamkey_check_key() decides.
 */
enum orgw_err keystore_find(struct store *s, const char *secret,
			    const char *plain, struct teamkey *k);

/* The name indexed under hash into name: ORGW_ENOENT when none, ORGW_EIO
 * for a damaged entry (logged).  The record itself is not read. */
enum orgw_err keystore_name_of(struct store *s, const char *hash,
			       char name[TEAMKEY_NAME_MAX + 1]);

/* The record of name into *k.  ORGW_ENOENT when there is none (or name
 * is not a name), ORGW_EIO for a damaged record (logged). */
enum orgw_err keystore_get(struct store *s, const char *name,
			   struct teamkey *k);

/*
 * Writes k's record and its hash index (writers only).  When the record
 * it replaces had another hash (a rotate), that hash's index goes, so
 * the old key is refused from this commit on.  ORGW_EINVAL (nothing
 * written) for a record teamkey_ok() refuses (a name that is not one, a
 * hash that is not 64 lower-case hex digits, a bad glob or number), or a
 * hash indexed for another name.
 */
enum orgw_err keystore_put(struct store *s, const struct teamkey *k);

/* Revokes name: deletes its record and index, keeps its use windows
 * (see above).  ORGW_ENOENT when there is no such key. */
enum orgw_err keystore_del(struct store *s, const char *name);

/*
 * What name used in the UTC day and month of now_s
 * (TEAMKEY_USE:<name>:<YYYY-MM-DD> and :<YYYY-MM>); absent is zeros.
 * ORGW_EIO for a damaged window (logged); ORGW_EINVAL for a bad name.
 */
enum orgw_err keystore_use(struct store *s, const char *name, int64_t now_s,
			   struct ledger_cell *day,
			   struct ledger_cell *month);

/* Adds u to both windows of now_s (writers only; teamkey_use_add). */
enum orgw_err keystore_use_add(struct store *s, const char *name,
			       int64_t now_s, const struct ledger_cell *u);

/*
 * Calls fn for every key record (k borrowed for the call), in the
 * back-end's order; fn returns 0 to go on.  A damaged record is logged
 * and skipped.  The store's error, else ORGW_OK.
 */
enum orgw_err keystore_each(struct store *s,
			    int (*fn)(void *arg, const struct teamkey *k),
			    void *arg);

#endif
