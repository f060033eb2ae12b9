/*
 * statekeys.h - the schema of the stores: one table of every key family
 * the routing state (STATE_PATH, or Redis under "orgw:") and the keys
 * store (KEYS_PATH, or the same Redis) hold, and the only place that
 * makes or parses their keys.  Pure: no I/O, no time.
 *
 * A key is its family's name, then each of its parts after a ':'
 * ("PROVIDER_FAILURE:<model>:<tag>"); a family without parts is one key
 * ("LOST_UPDATES").  A model id may hold ':' (":free" variants), a tag,
 * a team key's name, a day or a hash never does, so the last part of a
 * two-part key starts after the last ':'.
 *
 * What walks the stores asks the table, not a list of its own: the scorer's
 * sweep deletes the families marked STATEKEY_SWEPT of models it no longer
 * keeps, and /stats and /metrics show the families marked STATEKEY_SHOWN,
 * each by its parsed family.  STATEKEY_EXPIRING marks what Redis drops by
 * itself (a cooldown at its record's end, which store_redis_commit.c finds
 * through statekeys_is; a transaction's marker), and STATEKEY_DURABLE the
 * keys store, which nothing sweeps, repairs or recreates.  A new family is
 * one STATEKEY_P_ prefix and one enum member here and one row in statekeys.c
 * (a static assertion keeps the table and the enum the same length).
 */
#ifndef ORGW_STATEKEYS_H
#define ORGW_STATEKEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "orgw.h"

/*
 * The prefixes, each spelled here once: the table's rows take them, and
 * so do the few names a caller needs as a literal (KEYSTORE_REC_PREFIX,
 * STATE_LOST_KEY...).  A family with parts ends in ':'; one without parts
 * is the whole key.
 */
#define STATEKEY_P_MODEL_SEEN "MODEL_SEEN:"
#define STATEKEY_P_MODELS_SEEN_OLD "MODELS_SEEN"
#define STATEKEY_P_BEST_PROVIDER "BEST_PROVIDER:"
#define STATEKEY_P_PROVIDER_CANDIDATE "PROVIDER_CANDIDATE:"
#define STATEKEY_P_LOCK_LOG "LOCK_LOG:"
#define STATEKEY_P_PROVIDER_FAILURE "PROVIDER_FAILURE:"
#define STATEKEY_P_PROVIDER_COOLDOWN "PROVIDER_COOLDOWN:"
#define STATEKEY_P_HIT "HIT:"
#define STATEKEY_P_CONV "CONV:"
#define STATEKEY_P_PRESSURE "PRESSURE:"
#define STATEKEY_P_LEDGER "LEDGER:"
#define STATEKEY_P_STATS_OLD "STATS:"
#define STATEKEY_P_METRICS_OLD "METRICS:"
#define STATEKEY_P_LOST_UPDATES "LOST_UPDATES"
#define STATEKEY_P_TEAMKEY_RATE "TEAMKEY_RATE:"
#define STATEKEY_P_TEAMKEY_HOLD "TEAMKEY_HOLD:"
#define STATEKEY_P_TEAMKEY "TEAMKEY:"
#define STATEKEY_P_TEAMKEY_HASH "TEAMKEY_HASH:"
#define STATEKEY_P_TEAMKEY_USE "TEAMKEY_USE:"
#define STATEKEY_P_TXN "TXN:"

/* One member per row of the table, in the table's order. */
enum statekey {
	SK_MODEL_SEEN,		/* MODEL_SEEN:<model> */
	SK_MODELS_SEEN_OLD,	/* MODELS_SEEN: the old release's list */
	SK_BEST_PROVIDER,	/* BEST_PROVIDER:<model> */
	SK_PROVIDER_CANDIDATE,	/* PROVIDER_CANDIDATE:<model> */
	SK_LOCK_LOG,		/* LOCK_LOG:<model> */
	SK_PROVIDER_FAILURE,	/* PROVIDER_FAILURE:<model>:<tag> */
	SK_PROVIDER_COOLDOWN,	/* PROVIDER_COOLDOWN:<model>:<tag> */
	SK_HIT,			/* HIT:<model> */
	SK_CONV,		/* CONV:<model>:<conversation hash> */
	SK_PRESSURE,		/* PRESSURE:<model>:<tag> */
	SK_LEDGER,		/* LEDGER:<model>:<day>:<api>:<tag> */
	SK_STATS_OLD,		/* STATS:<model>, the old release's */
	SK_METRICS_OLD,		/* METRICS:<model>, the old release's */
	SK_LOST_UPDATES,	/* LOST_UPDATES */
	SK_TEAMKEY_RATE,	/* TEAMKEY_RATE:<name> */
	SK_TEAMKEY_HOLD,	/* TEAMKEY_HOLD:<name> */
	SK_TEAMKEY,		/* TEAMKEY:<name>, keys store */
	SK_TEAMKEY_HASH,	/* TEAMKEY_HASH:<hex>, keys store */
	SK_TEAMKEY_USE,		/* TEAMKEY_USE:<name>:<day or month> */
	SK_TXN,			/* TXN:<hex id>, Redis only */
	SK_COUNT
};

/* What a family is (flags of struct statekey_family). */
#define STATEKEY_PER_MODEL 0x01u	/* its first part is a model id */
#define STATEKEY_PER_PROVIDER 0x02u	/* its last part is a provider tag */
#define STATEKEY_PER_CONVERSATION 0x04u /* its key names a conversation */
#define STATEKEY_EXPIRING 0x08u	/* Redis drops it by itself */
#define STATEKEY_DURABLE 0x10u	/* keys store: never swept or recreated */
#define STATEKEY_SWEPT 0x20u	/* the scorer deletes it with its model */
#define STATEKEY_SHOWN 0x40u	/* /stats (and /metrics) show it */

struct statekey_family {
	const char *prefix;	/* "BEST_PROVIDER:"; without parts the key */
	size_t prefix_len;	/* strlen(prefix) */
	int parts;		/* 0 (one key), 1 or 2; the ledger's 4 */
	unsigned flags;		/* STATEKEY_* */
	const char *what;	/* one line for humans */
};

/* The parts of a parsed key. */
struct statekey_parts {
	enum statekey family;
	char first[ORGW_MODEL_MAX];	/* the first part; "" when none */
	const char *last;	/* the rest after first's ':' (borrowed from
				 * the key parsed); "" when none */
};

/* Row f of the table (borrowed, static), or NULL when f is out of range. */
const struct statekey_family *statekeys_family(enum statekey f);

/*
 * The prefix of f's keys: "NAME:" (static, the table's), or for a
 * family without parts the whole key "NAME".  NULL when f is out of
 * range.
 */
const char *statekeys_prefix(enum statekey f);

/*
 * Makes f's key from its parts into k (n bytes): first, and last for a
 * two-part family (NULL otherwise; a family without parts takes neither).
 * A four-part family (the ledger) takes first whole, already joined
 * (ledger_key() makes it).  Returns false, k then "", when a part the
 * family needs is missing or empty, a part the family lacks is given,
 * a last part holds ':', or the key does not fit.
 */
bool statekeys_make(char *k, size_t n, enum statekey f, const char *first,
		    const char *last);

/*
 * Parses key into p: its family, first part (copied) and last part
 * (borrowed from key).  For a one-part family the whole rest is first;
 * for a two-part family first ends at the last ':'; for the ledger first
 * is "" and last the whole rest (ledger_key_split() parts it).  False for a key of
 * no family, or whose first part is empty or too long; p is then
 * undefined.  An empty last part parses (""), so a damaged key is still
 * swept and shown by its model.
 */
bool statekeys_parse(const char *key, struct statekey_parts *p);

/*
 * The rest of key after f's prefix (borrowed from key), or NULL when key
 * is not of family f.  For a family without parts, "" when key is it.
 */
const char *statekeys_is(const char *key, enum statekey f);

#endif
