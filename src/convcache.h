/*
 * convcache.h - where a conversation's cache broke: the per-conversation
 * cache record, the classification of a turn, its update, its JSON codec
 * and its words for /status; pure.
 *
 * A record is fixed in size whatever the conversation's length.  Of the
 * last prompt's units (fingerprint.h) it keeps:
 *   - the first CONVCACHE_HEAD_UNITS units exactly (hash, size, kind);
 *   - the last CONVCACHE_TAIL_UNITS units exactly, with the chained hash
 *     of every unit before them;
 *   - the chained hash of the first 64, 128, 256, ... units (one per
 *     power of two past the head, CONVCACHE_CHECKPOINTS of them);
 *   - the chained hash of all of them, their count and total size.
 * The chained hash of units 0..k-1 is FNV-1a over their hashes in order,
 * so it says whether a whole prefix is unchanged without its units.
 *
 * What that can still tell, for a conversation of any length: whether
 * the previous prompt is a prefix of this one (exactly, up to a hash
 * collision); and, when it is not, where it first differs: the unit's
 * index and kind when that lies in the head or the tail, else the range
 * between two checkpoints (a change in units 300..400 of 2,000 is told
 * as "at or after unit 256", without its kind).  Clients rewrite the
 * start (system prompt, tools) or the end (the last turns) of a prompt
 * far more often than its middle, which is why the two ends are exact.
 *
 * Times are unix seconds, given by the caller; nothing here reads a
 * clock.  The record holds hashes and sizes, never prompt text.
 */
#ifndef ORGW_CONVCACHE_H
#define ORGW_CONVCACHE_H

#include <cJSON.h>

#include "fingerprint.h"
#include "orgw.h"

#define CONVCACHE_VERSION 1
#define CONVCACHE_HEAD_UNITS 32
#define CONVCACHE_TAIL_UNITS 16
#define CONVCACHE_CHECKPOINTS 16	/* units 64 .. 64 << 15 */
#define CONVCACHE_BREAKS 8		/* the last breaks kept */
#define CONVCACHE_TTL_SECONDS_DEFAULT 300

enum convcache_cause {
	CONVCACHE_NONE = 0,
	CONVCACHE_MOVED,	  /* another provider than the turn before */
	CONVCACHE_PREFIX_CHANGED, /* a unit of the previous prompt differs */
	CONVCACHE_EXPIRED,	  /* longer than the cache lifetime since */
	CONVCACHE_PROVIDER_MISS,  /* same provider, prefix, in time: no read */
};

/* "moved", "prefix_changed", "expired", "provider_miss"; "" for NONE. */
const char *convcache_cause_name(enum convcache_cause c);

struct convcache_unit {
	uint64_t hash;
	int64_t bytes;
	char kind[FP_KIND_MAX];
};

/* The last prompt's units, bounded (see above).  n == 0: none known. */
struct convcache_prefix {
	int64_t n;		/* units */
	int64_t bytes;		/* their total size */
	uint64_t whole;		/* chained hash of all n */
	struct convcache_unit head[CONVCACHE_HEAD_UNITS]; /* min(n, HEAD) */
	uint64_t cp[CONVCACHE_CHECKPOINTS]; /* j: the first 64 << j units,
					     * while that is < n */
	uint64_t tail_cum;	/* chained hash of the units before tail[0] */
	struct convcache_unit tail[CONVCACHE_TAIL_UNITS]; /* the units from
				 * convcache_tail_at(n) to n - 1 */
};

struct convcache_break {
	int64_t turn;		/* 1 = the conversation's first turn */
	enum convcache_cause cause;
	int64_t at;		/* prefix_changed: the first unit that
				 * differs (exact when unit is set, else
				 * the first that may); else -1 */
	char unit[FP_KIND_MAX];	/* that unit's kind, or "" */
	int64_t expected_tokens; /* the previous turn's prompt tokens */
	int64_t cached_tokens;	/* what this turn read from the cache */
	int64_t idle_s;		/* seconds since the previous turn */
	char provider[ORGW_TAG_MAX]; /* served this turn, or "" */
	char from[ORGW_TAG_MAX];     /* served the previous turn, or "" */
};

struct convcache {
	int64_t turns;
	int64_t first_seen, last_seen;
	int64_t prompt_tokens, cached_tokens, cache_write_tokens; /* sums */
	int64_t last_prompt_tokens;	/* the last turn's */
	double cost, saved;		/* USD, sums */
	char provider[ORGW_TAG_MAX];	/* served the last turn, or "" */
	int64_t breaks_total;
	size_t nbreaks;			/* <= CONVCACHE_BREAKS */
	struct convcache_break breaks[CONVCACHE_BREAKS]; /* oldest first */
	struct convcache_prefix prefix;
};

/* One turn as the request saw it; every pointer borrowed. */
struct convcache_turn {
	const struct fp_list *fp;	/* this prompt's units */
	const char *provider;		/* the provider that served, or NULL */
	int64_t now;			/* unix seconds */
	int64_t prompt_tokens, cached_tokens, cache_write_tokens;
	double cost, saved;		/* USD, this turn's */
};

struct convcache_verdict {
	bool is_break;
	enum convcache_cause cause;	/* NONE unless is_break */
	bool prefix_same;		/* the previous prompt's units lead
					 * this one (true when none known) */
	int64_t common;			/* leading units known identical */
	int64_t at;			/* the first unit that differs, -1 */
	char unit[FP_KIND_MAX];		/* its kind when exactly known */
};

/* The index of a prefix's first tail unit, for a prompt of n units. */
int64_t convcache_tail_at(int64_t n);

/* An empty record (turn 0). */
void convcache_init(struct convcache *c);

/*
 * Classifies turn t against prev, the record as the previous turn left
 * it (docs/design.md "Where a conversation's cache broke"): a break when the turn
 * read less than half of what the previous prompt could have given,
 * cached < 0.5 * min(previous prompt, prompt), never on the first turn;
 * its cause the first of moved, prefix_changed, expired (more than ttl_s
 * since the previous turn), provider_miss.  The prefix comparison is
 * filled in whether or not it is a break.  Borrows everything.
 */
void convcache_classify(const struct convcache *prev,
			const struct convcache_turn *t, int64_t ttl_s,
			struct convcache_verdict *v);

/*
 * Adds turn t to c: counts and sums, first/last seen, the provider, the
 * prompt's bounded summary, and v's break (when it is one) to the ring
 * of the last CONVCACHE_BREAKS.  v is convcache_classify(c, t, ...)'s
 * verdict for the same c.  Fixed cost plus one pass over t's units.
 */
void convcache_update(struct convcache *c, const struct convcache_turn *t,
		      const struct convcache_verdict *v);

/*
 * Adds c's members to obj (a cJSON object the caller owns), "v" first.
 * Hashes are 16 hex digits (a JSON number cannot hold 64 bits); a unit of
 * the prefix is one string "<hash> <bytes> <kind>".  False when out of
 * memory (obj may then hold some members).
 */
bool convcache_encode(const struct convcache *c, cJSON *obj);

/*
 * Reads obj, as convcache_encode wrote it, into c.  Missing members read
 * as zero; a string holding a control character as ""; a break with an
 * unknown cause is dropped; a prefix that does not hold together (counts
 * that disagree, a hash that is not 16 hex digits) reads as none known.
 * ORGW_EINVAL when obj is not an object or has another "v" (c is then
 * an empty record, as a conversation seen for the first time).
 */
enum orgw_err convcache_decode(const cJSON *obj, struct convcache *c);

/*
 * Says b in plain words for /status into buf (n bytes, NUL-terminated):
 *   "turn 3: the system prompt changed at block 0",
 *   "turn 5: deepinfra did not read its cache",
 *   "turn 6: moved from deepinfra to novita",
 *   "turn 4: resumed after 7 min, past the 5 min cache lifetime".
 * ttl_s is CACHE_TTL_SECONDS.  False when buf was too small (the words
 * are then cut).  The words hold b's kinds and provider tags as stored.
 */
bool convcache_words(const struct convcache_break *b, int64_t ttl_s,
		     char *buf, size_t n);

#endif
