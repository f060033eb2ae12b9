/*
 * convlist.h - the conversations as /stats, /metrics, /status and
 * `orgw-score conversations` show them; pure.
 *
 * The state holds one CONV:<model>:<hash> record per conversation (its
 * routing and its cache record, record.h and convcache.h) and one
 * PRESSURE:<model>:<tag> record per provider that answered a provider
 * 429 for a model.  A walk over the state hands every key to
 * convlist_add(); convlist_render() then writes:
 *   - the CONVLIST_ROWS most recently used conversations, newest first,
 *     as the /stats "conversations" array (each break with its plain
 *     words, so the page and the terminal say it the same way);
 *   - per model, a "conversations" object: active conversations (last
 *     turn within CONVERSATION_IDLE_SECONDS) in all and per provider,
 *     those started elsewhere because of pressure ("spread"), and per
 *     provider its provider 429s and whether it is under pressure now
 *     (until when).  The breaks by cause are not counted here but in
 *     the ledger (ledger.h), which the sweep of the records leaves
 *     alone: /stats puts them in the same object.
 * Whatever the number of records walked, the list keeps at most
 * max_rows rows and the per-model objects one member per provider: the
 * documents' size does not grow with the conversations.
 *
 * Ownership: a struct convlist is convlist_new()'s and freed with
 * convlist_free(); keys and values are borrowed for the call; rendered
 * members belong to the tree they were added to.
 */
#ifndef ORGW_CONVLIST_H
#define ORGW_CONVLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "statekeys.h"

#define CONVLIST_ROWS 100	/* the /stats list: the most recent ones */
#define CONVLIST_WORDS_MAX 160	/* a break in words, NUL included */

struct convlist_opts {
	int64_t now;		/* unix seconds */
	int64_t idle_s;		/* CONVERSATION_IDLE_SECONDS */
	int64_t ttl_s;		/* CACHE_TTL_SECONDS, for the words */
	size_t max_rows;	/* rows kept, at most CONVLIST_ROWS */
};

struct convlist;

/* A new, empty list; NULL when out of memory.  Caller frees with
 * convlist_free(). */
struct convlist *convlist_new(const struct convlist_opts *o);

/* Frees l; NULL is a no-op. */
void convlist_free(struct convlist *l);

/*
 * Takes one key of the state, parsed (statekeys_parse()), and its value.
 * Returns true when the key is a CONV: or PRESSURE: key (taken, or
 * skipped when its value is damaged or its last part empty), false for
 * any other key (left to the caller).  Out of memory is remembered and
 * reported by convlist_render().
 */
bool convlist_add(struct convlist *l, const struct statekey_parts *k,
		  const char *val);

/*
 * Adds the list to root as "conversations" (root may be NULL: /metrics
 * has no list) and each model's "conversations" object to models[model]
 * (an object by model id, the /stats "models"; a model not there yet is
 * added; NULL: none).  A model that has a "conversations" object already
 * (the ledger's breaks by cause) gets the members it lacks added to it,
 * with zeroes when no record of it was walked.  Both trees belong to the
 * caller.  False when out of memory, now or earlier in convlist_add().
 */
bool convlist_render(const struct convlist *l, cJSON *root, cJSON *models);

/*
 * The last break of a /stats row (borrowed) in words, as the row's
 * break holds them, or NULL when the row has no break.  Borrowed from
 * the row.
 */
const char *convlist_row_last_words(const cJSON *row);

/* A /stats row's cached share of its prompt tokens, 0..1 (0 when it has
 * none). */
double convlist_row_cached_share(const cJSON *row);

#endif
