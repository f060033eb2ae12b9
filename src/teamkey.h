/*
 * teamkey.h - the keys of a team (pure): many client keys on one
 * gateway, each with its own models, limits, budget and spend.
 *
 * A key is "orgw-" and 43 characters of base64url (32 random bytes),
 * shown once when made.  Only its keyed hash is kept: HMAC-SHA-256 with
 * KEYS_SECRET, as 64 lower-case hex digits, so a copy of the state does
 * not let anyone test guesses offline.  Changing the secret invalidates
 * every key.
 *
 * In the keys store (keystore.h; never dropped by repair):
 *   TEAMKEY:<name>             the key's record (teamkey_encode)
 *   TEAMKEY_HASH:<hex>         the name of the key with that hash
 *   TEAMKEY_USE:<name>:<when>  what the key used in one UTC day
 *                              ("YYYY-MM-DD") or month ("YYYY-MM"): a
 *                              ledger cell of the rows a key counts
 *                              (ledger.h, teamkey_use_encode)
 * In the routing state (soft: losing it only forgets a minute's count):
 *   TEAMKEY_RATE:<name>        requests in the current minute and the
 *                              concurrency leases (teamkey_rate_*)
 *
 * Nothing here reads the clock, the environment or a file: the caller
 * passes now (unix seconds or ms, as named) and the secret.
 */
#ifndef ORGW_TEAMKEY_H
#define ORGW_TEAMKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ledger.h"
#include "orgw.h"

#define TEAMKEY_PREFIX "orgw-"
#define TEAMKEY_NAME_MAX 64	/* longest name */
#define TEAMKEY_GLOBS_MAX 16	/* most model globs a key has */
#define TEAMKEY_GLOB_MAX 128	/* longest glob */
#define TEAMKEY_HASH_HEX 64	/* hex digits of a keyed hash */
#define TEAMKEY_PLAIN_MAX 64	/* "orgw-" + 43, with room */
#define TEAMKEY_LEASES_MAX 256	/* most leases a rate record holds */

struct teamkey {
	char name[TEAMKEY_NAME_MAX + 1];
	char hash[TEAMKEY_HASH_HEX + 1];
	char globs[TEAMKEY_GLOBS_MAX][TEAMKEY_GLOB_MAX + 1];
	size_t n_globs;		/* 0: every model */
	double budget_day_usd;	/* 0: none */
	double budget_month_usd;	/* 0: none */
	int64_t rpm;		/* requests a minute, 0: none */
	int64_t concurrent;	/* requests at once, 0: none */
	int64_t expires;	/* unix s, 0: never */
	int64_t created;	/* unix s */
	int64_t rotated;	/* unix s of the last rotate, 0: never */
	bool admin;		/* may read /stats, /metrics, /status */
	bool disabled;
};

/* True when name may name a key: 1..TEAMKEY_NAME_MAX of [A-Za-z0-9._-],
 * beginning with a letter or digit (it goes into a /metrics label, a log
 * line and the HTML of /status unescaped-safe). */
bool teamkey_name_ok(const char *name);

/* True when glob may be one of a key's model globs: 1..TEAMKEY_GLOB_MAX
 * printable ASCII characters (0x21..0x7e: no space), no ','. */
bool teamkey_glob_ok(const char *glob);

/*
 * Parses a comma-separated glob list ("openai/gpt-4o*,x-ai/grok-4")
 * into k's globs; "" or "*" alone is every model (n_globs 0).
 * ORGW_EINVAL (k's globs unchanged) for NULL, an empty element ("a,,b",
 * "a,"), a bad glob or more than TEAMKEY_GLOBS_MAX.
 */
enum orgw_err teamkey_set_globs(struct teamkey *k, const char *list);

/* True when model (an id as a client sends it, e.g. "openai/gpt-4o" or
 * "openrouter/auto") matches one of k's globs (fnmatch, '/' matched by
 * '*' too, letters in either case), or k has none.  A NULL model matches
 * only a key without globs. */
bool teamkey_model_ok(const struct teamkey *k, const char *model);

/*
 * The keyed hash of plain under secret into hex (TEAMKEY_HASH_HEX + 1
 * bytes, NUL-terminated).  False (hex "") when the HMAC failed, or the
 * secret is NULL or empty (a hash anyone could compute).
 */
bool teamkey_hash(const char *secret, const char *plain,
		  char hex[TEAMKEY_HASH_HEX + 1]);

/* True when the two hex hashes are equal, in constant time.  False when
 * either is NULL or not TEAMKEY_HASH_HEX characters long. */
bool teamkey_hash_eq(const char *a, const char *b);

/* True when plain has the shape of a team key ("orgw-" and 43
 * base64url characters): anything else is not looked up. */
bool teamkey_plain_shape(const char *plain);

/* A new key from 32 random bytes (the caller draws them) into plain
 * (TEAMKEY_PLAIN_MAX bytes). */
void teamkey_plain_make(const unsigned char rnd[32],
			char plain[TEAMKEY_PLAIN_MAX]);

/* True when k may be stored: the rules teamkey_decode() checks (a name,
 * a hash of TEAMKEY_HASH_HEX lower-case hex digits, globs, numbers in
 * range). */
bool teamkey_ok(const struct teamkey *k);

/*
 * The record's text (malloc'd by cJSON, which orgw leaves on malloc:
 * caller frees with free() or record_free()), NULL when out of memory
 * or when k would not decode (a bad name, hash or glob, a number
 * negative, not finite or over 10^15); and back: ORGW_EINVAL for text
 * that is not one (k zeroed).  Every member encode writes is required:
 * a record that lost "models" must not read as a key for every model.
 */
char *teamkey_encode(const struct teamkey *k);
enum orgw_err teamkey_decode(const char *text, struct teamkey *k);

/*
 * The same for what a key used in one window (a UTC day or month): a
 * ledger cell (ledger.h) of the rows a key counts (ledger_key_row), its
 * text ledger_cell_encode()'s.  Absent (NULL) text decodes to zeros
 * (ORGW_OK), absent members to 0; the members of a record written
 * before use was a ledger cell ({"v":1,"requests":...,"spend_usd":...,
 * "last_used":...}) read into their rows, so such a record is written
 * back as a cell.  Members of no row a key counts are left out.  encode
 * gives NULL, and decode refuses, a figure that is negative, NaN,
 * infinite or over 10^15, or a count (anything but a dollar amount,
 * whose team name ends in "_usd") that is not whole; encode also a
 * non-zero row or histogram slot a key does not count: the caller keeps
 * the stored record rather than lose it.
 */
char *teamkey_use_encode(const struct ledger_cell *u);
enum orgw_err teamkey_use_decode(const char *text, struct ledger_cell *u);

/* dst += src (ledger_cell_add: the last use is the later), every row
 * held in 0..10^15, so it never overflows and always encodes. */
void teamkey_use_add(struct ledger_cell *dst, const struct ledger_cell *src);

/* The UTC day "YYYY-MM-DD" (11 bytes) and month "YYYY-MM" (8 bytes) of
 * now_s (record_day's, the one date formatter). */
void teamkey_day(int64_t now_s, char day[11]);
void teamkey_month(int64_t now_s, char month[8]);

/* Why a key is refused before anything goes upstream. */
enum teamkey_verdict {
	TK_OK,
	TK_UNKNOWN,		/* disabled, expired (401, as unknown) */
	TK_MODEL,		/* 403 model_not_allowed */
	TK_BUDGET,		/* 402 budget_exceeded */
	TK_RPM,			/* 429, Retry-After */
	TK_CONCURRENT,		/* 429, Retry-After */
	TK_UNAVAILABLE		/* 503: the state cannot record what the
				 * key's limits or budget need */
};

/* A static name of v for logs and labels ("ok", "unknown", "model",
 * "budget", "rpm", "concurrent", "unavailable"); never NULL. */
const char *teamkey_verdict_name(enum teamkey_verdict v);

/* The row of a key's use that counts a refusal v (LX_REFUSED_*), or
 * LX_N for a verdict that is not counted (TK_OK, TK_UNKNOWN, and
 * TK_UNAVAILABLE: the store refuses writes already). */
enum ledger_ix teamkey_refused_ix(enum teamkey_verdict v);

/*
 * The checks that need no counts: k disabled or expired at now_s is
 * TK_UNKNOWN (expired: expires != 0 and now_s >= expires); a model (or
 * any of models[0..n_models)) outside its globs is TK_MODEL; TK_OK
 * otherwise.  A NULL model is not checked (the caller checks the model
 * it will default to).
 */
enum teamkey_verdict teamkey_check_key(const struct teamkey *k,
				       int64_t now_s, const char *model,
				       const char *const *models,
				       size_t n_models);

/* What k is at now_s, as the operator sees it: "disabled", "expired"
 * (expires passed) or "active"; only an active key is let in. */
const char *teamkey_state(const struct teamkey *k, int64_t now_s);

/* TK_BUDGET when today's (day) or this month's (month) spend
 * (LX_KEY_SPEND) has reached k's budget for that window (a budget of 0
 * is none; a NaN or infinite spend has reached any); TK_OK otherwise.
 * day or month NULL is no use yet. */
enum teamkey_verdict teamkey_check_budget(const struct teamkey *k,
					  const struct ledger_cell *day,
					  const struct ledger_cell *month);

#define TEAMKEY_LEASE_ID_MAX 32	/* hex digits of a lease id */

/* The soft per-minute count and leases of one key. */
struct teamkey_lease {
	char id[TEAMKEY_LEASE_ID_MAX + 1];	/* the request's lease id */
	int64_t until_ms;	/* it expires then, held or not */
	/* The worker process that holds it: its host's worker table
	 * (workertab.h), pid and start time; host 0 when not known (an older
	 * record, a worker without a table). */
	int64_t host, pid, start;
};

/*
 * The rpm window slides: it counts what was admitted in the slot of now
 * and the TEAMKEY_RPM_SLOTS - 1 slots before it, at least the last 60 s
 * (at most 65), so no 60 s ever hold more than rpm requests, whatever
 * minute boundary they straddle, and the record stays the same size
 * whatever the rpm.
 */
#define TEAMKEY_RPM_SLOT_MS 5000
#define TEAMKEY_RPM_SLOTS 13	/* 60 s of slots and the slot of now */

struct teamkey_rate {
	int64_t slot;		/* now_ms / TEAMKEY_RPM_SLOT_MS of slots[0] */
	int64_t slots[TEAMKEY_RPM_SLOTS];	/* admitted in slot - i */
	struct teamkey_lease leases[TEAMKEY_LEASES_MAX];
	size_t n_leases;
	/* What the requests that gave their lease back spent, in the
	 * UTC day (unix day: now_s / 86400) and month (year * 12 + month
	 * - 1) they ended in: counted in the same transaction as the
	 * release, so an admission sees every request that is no longer
	 * in flight, even before the keys store has its spend. */
	int64_t day, month;
	double spent_day, spent_month;
};

/* The codec of the rate record, as teamkey_encode/teamkey_decode: encode
 * gives NULL also for a lease id that is not 1..32 hex digits, more than
 * TEAMKEY_LEASES_MAX leases or a number out of 0..10^15; decode refuses
 * the same (r zeroed). */
char *teamkey_rate_encode(const struct teamkey_rate *r);
enum orgw_err teamkey_rate_decode(const char *text, struct teamkey_rate *r);

/* The requests r's window holds at now_ms (its slot and the
 * TEAMKEY_RPM_SLOTS - 1 before). */
int64_t teamkey_rate_count(const struct teamkey_rate *r, int64_t now_ms);

/*
 * Admits one request of k at now_ms into r: drops the leases with
 * until_ms <= now_ms and the slots that left the window, then TK_RPM
 * (*retry_after_s: the seconds until enough of them leave it, in 1..65)
 * when k->rpm requests are in the window (teamkey_rate_count),
 * TK_CONCURRENT (*retry_after_s: the seconds until the first lease
 * ends, in 1..60) when k->concurrent leases are held, the table holds
 * TEAMKEY_LEASES_MAX, or lease_id is not 1..32 hex digits (never admitted
 * without its lease); else counts it, adds the lease id (until now_ms +
 * lease_ms, lease_ms at least 1) when k->concurrent > 0, sets
 * *retry_after_s to 0 and returns TK_OK.  retry_after_s may be NULL.
 * r is counted in only on TK_OK (expired leases and slots are dropped
 * always).  An id
 * already held is held twice; each release drops one.
 */
enum teamkey_verdict teamkey_rate_admit(const struct teamkey *k,
					struct teamkey_rate *r, int64_t now_ms,
					const char *lease_id, int64_t lease_ms,
					int64_t *retry_after_s);

/* A request's lease id from 16 random bytes (the caller draws them):
 * 32 lower-case hex digits. */
void teamkey_lease_make(const unsigned char rnd[16],
			char id[TEAMKEY_LEASE_ID_MAX + 1]);

/* Drops lease id from r; false when it was not there (expired). */
bool teamkey_rate_release(struct teamkey_rate *r, const char *lease_id);

/* Sets the owner (host, pid, start: each in 0..10^15, else nothing is
 * set) of the last lease of r with id lease_id; false when r holds no
 * such lease. */
bool teamkey_rate_own(struct teamkey_rate *r, const char *lease_id,
		      int64_t host, int64_t pid, int64_t start);

/* Drops every lease of r for which gone(arg, lease) is true (the caller
 * asks whether its worker still lives); returns how many it dropped. */
size_t teamkey_rate_drop(struct teamkey_rate *r,
			 bool (*gone)(void *arg, const struct teamkey_lease *l),
			 void *arg);

/* Adds usd (non-finite or negative: nothing) to r's spend of the UTC
 * day and month of now_s, starting a window again when it changed. */
void teamkey_rate_spend(struct teamkey_rate *r, int64_t now_s, double usd);

/*
 * The use a budget is checked against at admission: day and month (the
 * keys store's, read when the request came) raised to r's spend of the
 * same windows of now_s where that is more.
 */
void teamkey_rate_use(const struct teamkey_rate *r, int64_t now_s,
		      struct ledger_cell *day, struct ledger_cell *month);

#endif
