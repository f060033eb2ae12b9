/*
 * memo.h - decoded records kept with the text they were decoded from
 * (pure).
 *
 * A request reads some records on every call (its model's lock and
 * candidates, the ledger cell and hit rates it adds to) that change far
 * less often than they are read: mostly this very process wrote them
 * last.  Decoding their JSON is most of what the state costs a request.
 * A memo keeps the last few decoded values, each with its key and the
 * exact text it came from.  A reader that finds the text it just read
 * from the store under the same key takes a copy of the value instead of
 * decoding again; any other text (another process, the scorer or an
 * operator wrote the key) is decoded as before.  Equal text decodes to
 * an equal value, so a memo never answers what the store does not hold,
 * and a write that is never committed only leaves a text nobody reads.
 *
 * Safe to call from several threads: each call holds the memo's mutex.
 */
#ifndef ORGW_MEMO_H
#define ORGW_MEMO_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* Keys a memo holds at once; when all are taken, a new key takes their
 * slots in turn. */
#define MEMO_SLOTS 16

struct memo_slot {
	char *key, *text;	/* malloc'd; key NULL: free slot */
	void *val;		/* malloc'd, size bytes */
};

struct memo {
	pthread_mutex_t mu;
	size_t size;		/* bytes of one value */
	/* Deep copy of src into dst (dst uninitialised): false when out of
	 * memory, dst then owning nothing.  NULL: the bytes alone. */
	bool (*copy)(void *dst, const void *src);
	/* Frees what a value owns (not the value).  NULL: nothing. */
	void (*clear)(void *val);
	struct memo_slot slot[MEMO_SLOTS];
	size_t next;		/* the slot to take when none is free */
};

#define MEMO_INIT(size, copy, clear)                                       \
	{PTHREAD_MUTEX_INITIALIZER, (size), (copy), (clear), {{0}}, 0}

/*
 * A copy of the value kept for key with exactly this text into out
 * (size bytes; the caller owns what it points to, as from a decode).
 * Returns false when there is none, or no memory to copy it: decode
 * text then.  text NULL never matches.
 */
bool memo_get(struct memo *m, const char *key, const char *text, void *out);

/*
 * Keeps a copy of *val (the caller keeps its own) as what text under key
 * decodes to, in place of what key held.  Out of memory keeps nothing.
 */
void memo_put(struct memo *m, const char *key, const char *text,
	      const void *val);

/* Empties m (it stays usable). */
void memo_free(struct memo *m);

#endif
