/*
 * store_gdbm_impl.h - what the GDBM back-end's files (store_gdbm.c,
 * store_gdbm_*.c) share and no other file includes (make check-layers):
 * the transaction (struct store_gdbm), the twin's marks, the keep slots,
 * and the functions one of those files calls in another.  Each
 * function's contract is at its definition.
 */
#ifndef ORGW_STORE_GDBM_IMPL_H
#define ORGW_STORE_GDBM_IMPL_H

#include <sys/stat.h>
#include <sys/types.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gdbm.h>

#include "fsafe.h"
#include "orgw.h"
#include "store_impl.h"

/* errno of a refusal that was logged with its reason (fsafe.h). */
#define REFUSED FSAFE_REFUSED

/* The mark in the lock file's first byte (an empty file is clean). */
#define MARK_CLEAN 'c'		/* the two files are equal */
#define MARK_PRIMARY 'p'	/* the primary is being written */
#define MARK_TWIN 't'		/* the twin is being written */
#define MARK_FAILED 'f'		/* a write to the primary failed part-way */
#define MARK_GEN 'g'		/* equal, and a generation follows (keeps) */

/* A store or delete of the transaction, replayed into the twin. */
struct op {
	struct op *next;
	char *val;		/* NULL: a delete */
	char key[];
};

struct keep;

struct store_gdbm {
	struct store base;	/* first: the back-end boundary */
	int lockfd;
	GDBM_FILE dbf;		/* NULL: a reader of a missing/empty file */
	struct keep *slot;	/* the keep slot this transaction holds, or NULL */
	bool kept;		/* dbf is the slot's, not this transaction's */
	GDBM_FILE stale[2];	/* the slot's stale handles, closed unlocked */
	bool write;
	bool marked;		/* MARK_PRIMARY is set */
	bool ops_lost;		/* an op could not be kept: no replay */
	bool failed;		/* a write or the close failed */
	struct op *ops, **ops_tail;	/* the writes, in order; owned */
#ifdef ORGW_TRACE_LOCK
	int64_t t_ask_us, t_got_us;	/* flock asked for, and taken */
#endif
	char path[];		/* sized to fit: no 4 KiB calloc per txn */
};

/* What db_state() found of a file. */
enum db_state {
	DB_WHOLE,	/* opens as GDBM and every key and value reads back */
	DB_DAMAGED,	/* opens, but not as GDBM, or a read fails */
	DB_UNREADABLE,	/* cannot be opened: missing, no permission, refused */
};

/*
 * How twin_settle() left the two files.  SETTLE_FAILED: a copy that had
 * to be made could not be (no space, a read-only or immutable
 * directory); the mark still names the better copy, and nothing may
 * write until a later writer succeeds, or the two diverge for good.
 * SETTLE_DAMAGED: the primary is damaged and the twin cannot replace it;
 * store_gdbm_repair() recovers the primary and remakes the twin from it.
 * SETTLE_UNREADABLE: the primary cannot be opened (no permission, a
 * refusal; logged), so nothing was compared or copied.
 */
enum settle { SETTLE_OK, SETTLE_FAILED, SETTLE_DAMAGED, SETTLE_UNREADABLE };

struct keep {
	pthread_mutex_t mu;	/* held by the transaction using the slot */
	pid_t pid;		/* the process that opened the handles */
	GDBM_FILE prim, twin;	/* writers' handles; NULL: none kept */
	uint64_t gen;		/* the generation the last commit left */
	struct stat pst, tst;	/* the files as that commit left them */
	char path[4200];	/* the primary; "": the slot is free */
};

/* store_gdbm_file.c */
int take_lock(const char *path, bool write, int64_t timeout_ms);
GDBM_FILE open_db(const char *path, bool write);
int copy_file(const char *from, const char *to);
enum db_state db_state(const char *file);
int db_close(GDBM_FILE dbf, bool write);
datum key_datum(const char *key);
enum orgw_err move_aside(const char *path, const char *then);
bool walk_ok(GDBM_FILE dbf);

/* store_gdbm_twin.c */
int head_write(int lockfd, const char *path, const void *b, size_t n);
int mark_set(int lockfd, const char *path, char m);
int twin_restore_damaged(const char *path, const char *twin);
enum settle twin_settle(const char *path, int lockfd, int *cause,
			struct stat *pst, struct stat *tst);
const char *twin_for_reader(const char *path, int lockfd, char *twin, size_t n);
void twin_mark(struct store_gdbm *s);
void twin_keep(struct store_gdbm *s, const char *key, const char *val);
void ops_free(struct store_gdbm *s);
bool twin_replay(struct store_gdbm *s);

/* store_gdbm_keep.c */
void keep_drop(struct keep *k);
void keep_take(struct store_gdbm *s, const struct stat *pst,
	       const struct stat *tst);
void stale_close(struct store_gdbm *s);
bool keep_put(struct store_gdbm *s);
void keep_leave(struct store_gdbm *s);

#endif
