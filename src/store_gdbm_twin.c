/*
 * store_gdbm_twin.c - the state kept twice, STATE_PATH and
 * STATE_PATH.twin, and the mark in the lock file that says which one is
 * being written.  Every function here runs under the exclusive lock,
 * except mark_dirty(), mark_read() and twin_for_reader().
 *
 * A writer killed in mid-transaction (SIGKILL, the OOM killer) must not
 * damage the state, and GDBM alone cannot promise that: gdbm_store()
 * writes the value, then the bucket, then the header, so a kill between
 * the last two leaves a header whose free list or end of file still
 * offers the new value's space, and the next store overwrites it (a key
 * vanishes, or holds another key's bytes: found by the fault soak).  So
 * the state is kept twice, STATE_PATH and STATE_PATH.twin, equal at rest,
 * with a one-byte mark in the lock file saying which one is being
 * written:
 *   - a write transaction marks "primary" before its first store, writes
 *     the primary, and at commit marks "twin", replays the same stores and
 *     deletes into the twin, and marks "clean" (MARK_GEN and a new
 *     generation when it keeps its handles, else MARK_CLEAN);
 *   - the next writer finding "primary" copies the twin over the primary
 *     (the dead writer's transaction is lost whole); finding "twin", the
 *     primary over the twin; a reader finding "primary" reads the twin.
 * The cost is the twin's handle and the replayed stores per write
 * transaction (bench/notes.md, round 7); no copy unless a writer died.  A twin
 * that is missing, older than the primary (an upgrade; an operator's
 * gdbmtool) or of another size (cut short by hand: equal files stay equal
 * byte for byte) is remade from the primary by the next writer.  A copy
 * only ever replaces a file with one that reads back whole, so a damaged
 * primary is restored from a whole twin (and kept aside as .corrupt)
 * instead of spreading to it.  When a copy the next writer needs cannot
 * be made (no space, an immutable directory), it refuses to write, and
 * so does every writer after it until one can: writing the unrestored
 * primary would make the two copies differ for good.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gdbm.h>

#include "fsafe.h"
#include "log.h"
#include "store_gdbm_impl.h"

/* The primary may hold part of a transaction: the twin is the better
 * copy.  A mark this build does not know counts as such too. */
static bool
mark_dirty(char m)
{
	return m != MARK_CLEAN && m != MARK_GEN && m != MARK_TWIN;
}

/* The mark in the lock file; an empty or unreadable one is clean. */
static char
mark_read(int lockfd)
{
	char m;

	if (pread(lockfd, &m, 1, 0) != 1)
		return MARK_CLEAN;
	return m;
}

/* Writes the n bytes at b over the head of the lock file (the mark, and
 * for MARK_GEN the generation): 0, or -1 after a log line. */
int
head_write(int lockfd, const char *path, const void *b, size_t n)
{
	if (pwrite(lockfd, b, n, 0) == (ssize_t)n)
		return 0;
	log_err("state %s.lock: cannot write the mark: %s", path,
		log_strerror(errno));
	return -1;
}

/* Sets the mark: 0, or -1 after a log line. */
int
mark_set(int lockfd, const char *path, char m)
{
	return head_write(lockfd, path, &m, 1);
}

/* st_mtim of a is later than b's. */
static bool
newer(const struct stat *a, const struct stat *b)
{
	return a->st_mtim.tv_sec != b->st_mtim.tv_sec ?
		       a->st_mtim.tv_sec > b->st_mtim.tv_sec :
		       a->st_mtim.tv_nsec > b->st_mtim.tv_nsec;
}

/*
 * The primary path is damaged and the twin is whole: moves the primary
 * aside (path.corrupt, for inspection) and copies the twin over it.  0,
 * or an errno value after a log line.
 */
int
twin_restore_damaged(const char *path, const char *twin)
{
	if (move_aside(path, "restoring the last whole state from the twin") !=
	    ORGW_OK)
		return errno != 0 ? errno : EIO;
	return copy_file(twin, path);
}

/* The twin is missing, stale or does not match: remade from the primary
 * when that is whole, else the primary restored from a whole twin.  On
 * SETTLE_FAILED, *cause is the errno value of the failed copy. */
static enum settle
twin_remake(const char *path, const char *twin, bool have_t, int *cause)
{
	switch (db_state(path)) {
	case DB_WHOLE:
		*cause = copy_file(path, twin);
		return *cause == 0 ? SETTLE_OK : SETTLE_FAILED;
	case DB_UNREADABLE:
		if (errno != REFUSED)	/* a refusal was logged */
			log_err("state %s: %s", path, log_strerror(errno));
		return SETTLE_UNREADABLE;
	case DB_DAMAGED:
		break;
	}
	if (!have_t || db_state(twin) != DB_WHOLE)
		return SETTLE_DAMAGED;
	*cause = twin_restore_damaged(path, twin);
	return *cause == 0 ? SETTLE_OK : SETTLE_FAILED;
}

/*
 * A writer, before it opens the primary: makes the two files equal again
 * after a writer died, or when the twin is missing, stale or of another
 * size than the primary (two equal files stay byte for byte equal, since
 * the twin replays the primary's stores in order; a twin cut short by
 * hand would otherwise be restored from one day).  A copy only ever
 * replaces a file with a whole one.  On SETTLE_FAILED, *cause is the
 * errno value of what failed.  *pst and *tst: the primary and the twin as
 * it found them (zeroed when missing), for keep_take(); unset when the
 * twin's path cannot be made (SETTLE_FAILED).
 */
enum settle
twin_settle(const char *path, int lockfd, int *cause, struct stat *pst,
	    struct stat *tst)
{
	char twin[4200];
	struct stat ps, ts;
	bool have_p, have_t;
	char m = mark_read(lockfd);
	/* Only a death is a death: a transaction whose write failed (a
	 * full disk) left MARK_FAILED, and its log line named the cause. */
	const char *what = m == MARK_FAILED ?
				   "the last write transaction failed part-way" :
				   "a writer died in mid-transaction";
	enum settle rc = SETTLE_OK;

	*cause = EIO;
	if (fsafe_side_path(twin, sizeof(twin), path, ".twin") == -1)
		return SETTLE_FAILED;
	have_p = lstat(path, &ps) == 0;
	have_t = lstat(twin, &ts) == 0;
	if (!have_p)
		memset(&ps, 0, sizeof(ps));
	if (!have_t)
		memset(&ts, 0, sizeof(ts));
	*pst = ps;
	*tst = ts;
	if (mark_dirty(m) && have_t && db_state(twin) == DB_WHOLE) {
		log_warn("state %s: %s; restoring the last whole state from %s",
			 path, what, twin);
		if ((*cause = copy_file(twin, path)) != 0)
			rc = SETTLE_FAILED;
	} else if (mark_dirty(m) && have_t) {
		log_warn("state %s: %s, and %s is not whole: keeping the "
			 "primary", path, what, twin);
		rc = have_p ? twin_remake(path, twin, false, cause) : SETTLE_OK;
	} else if (!have_p) {
		if (have_t)
			(void)unlink(twin);	/* the state was removed */
	} else if (m == MARK_TWIN || !have_t || newer(&ps, &ts) ||
		   ps.st_size != ts.st_size) {
		rc = twin_remake(path, twin, have_t, cause);
	} else if (m == MARK_CLEAN || m == MARK_GEN) {
		return SETTLE_OK;
	}
	if (rc == SETTLE_OK && mark_set(lockfd, path, MARK_CLEAN) == -1) {
		*cause = errno;
		rc = SETTLE_FAILED;
	}
	return rc;
}

/* Under a shared lock: the file a reader must open, path or its twin
 * (into twin, n bytes) when a writer died writing the primary. */
const char *
twin_for_reader(const char *path, int lockfd, char *twin, size_t n)
{
	struct stat ts;

	if (!mark_dirty(mark_read(lockfd)) ||
	    fsafe_side_path(twin, n, path, ".twin") == -1 || lstat(twin, &ts) == -1)
		return path;
	return twin;
}

/* Before the transaction's first write to the primary. */
void
twin_mark(struct store_gdbm *s)
{
	if (s->marked)
		return;
	s->marked = true;
	if (mark_set(s->lockfd, s->path, MARK_PRIMARY) == -1)
		s->ops_lost = true;
}

/* Keeps a write for the replay; on no memory the twin is remade from
 * the primary by the next writer instead. */
void
twin_keep(struct store_gdbm *s, const char *key, const char *val)
{
	size_t kn = strlen(key) + 1;
	struct op *o;

	if (s->ops_lost)
		return;
	if ((o = malloc(sizeof(*o) + kn)) == NULL ||
	    (val != NULL && (o->val = strdup(val)) == NULL)) {
		free(o);
		s->ops_lost = true;
		return;
	}
	if (val == NULL)
		o->val = NULL;
	memcpy(o->key, key, kn);
	o->next = NULL;
	*s->ops_tail = o;
	s->ops_tail = &o->next;
}

void
ops_free(struct store_gdbm *s)
{
	struct op *o, *next;

	for (o = s->ops; o != NULL; o = next) {
		next = o->next;
		free(o->val);
		free(o);
	}
	s->ops = NULL;
	s->ops_tail = &s->ops;
}

/*
 * At commit, the primary written: replays the writes into the twin (the
 * slot's handle when the transaction holds one).  True when the twin has
 * every write of the transaction (or there were none): the caller marks
 * the files equal.  After a failed write or close the mark stays on
 * "primary", so the next writer (or store_gdbm_repair()) restores the
 * state from before this one.
 */
bool
twin_replay(struct store_gdbm *s)
{
	char twin[4200];
	GDBM_FILE t;
	struct op *o;
	datum v;
	int rc = 0;

	if (!s->marked)
		return true;
	if (s->failed)
		return false;
	if (s->ops_lost ||
	    fsafe_side_path(twin, sizeof(twin), s->path, ".twin") == -1) {
		/* The twin cannot follow: remade by the next writer. */
		(void)mark_set(s->lockfd, s->path, MARK_TWIN);
		return false;
	}
	if (mark_set(s->lockfd, s->path, MARK_TWIN) == -1)
		return false;
	t = s->slot != NULL ? s->slot->twin : NULL;
	if (t == NULL && (t = open_db(twin, true)) == NULL) {
		log_err("state %s: %s", twin, gdbm_strerror(gdbm_errno));
		return false;	/* MARK_TWIN: remade by the next writer */
	}
	if (s->slot != NULL)
		s->slot->twin = t;
	for (o = s->ops; o != NULL && rc == 0; o = o->next) {
		if (o->val == NULL) {
			rc = gdbm_delete(t, key_datum(o->key));
			if (rc != 0 && gdbm_errno == GDBM_ITEM_NOT_FOUND)
				rc = 0;
			continue;
		}
		v.dptr = o->val;
		v.dsize = (int)strlen(o->val);
		rc = gdbm_store(t, key_datum(o->key), v, GDBM_REPLACE);
	}
	if (rc != 0)
		log_err("state %s: replay: %s", twin,
			gdbm_strerror(gdbm_errno));
	if (s->slot == NULL && db_close(t, true) != 0)
		rc = -1;
	return rc == 0;	/* else MARK_TWIN: remade by the next writer */
}
