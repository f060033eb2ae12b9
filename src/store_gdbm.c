/*
 * store_gdbm.c - the GDBM back-end: transactions under a separate lock
 * file (store_gdbm.h).
 *
 * Locking protocol (the shape of Exim's dbfn.c): flock(path.lock) with
 * LOCK_NB and a short backoff until the deadline, then gdbm_open with
 * GDBM_NOLOCK (the flock already serialises us), use, unlock.  A writer's
 * handles stay open for the process's next transactions while no other
 * writer has come in between (the lock file's generation: "Handles kept
 * between transactions" below); any other handle is closed before the
 * unlock.  GDBM_NOMMAP: a file truncated behind our back (an operator, a
 * full disk) must give a read error, not SIGBUS in a mapped page.
 *
 * Ownership: struct store_gdbm owns the lock fd and, unless it took them
 * from its keep slot (s->kept), the GDBM handle; both are released or
 * handed to the slot by gd_commit()/gd_abort() and nowhere else.  This is
 * the only file that includes gdbm.h.
 *
 * Files are opened without following symlinks (O_NOFOLLOW, and GDBM gets
 * the descriptor through gdbm_fd_open), and refused, like sshd's
 * StrictModes, when the state file, its lock file or their directory is
 * a symlink or writable by others: anyone who can write there could
 * otherwise make orgw create or overwrite any file its user can write.
 * Files orgw creates get STATE_MODE (fsafe_set_mode()).
 *
 * No fsync: gdbm_close() syncs a database opened for writing and has no
 * flag against it; db_close() below sidesteps that (why: see there).
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
 *
 * Built with -DORGW_TRACE_LOCK (bench/run.sh does, in its own object
 * directory), store_close() logs one line per transaction: how long it
 * waited for the flock and how long it held it.  Release builds carry no
 * trace code at all.
 */
#define _GNU_SOURCE	/* memfd_create, dup3 (Linux; see db_close) */

#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>	/* major, minor: /proc/locks */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <gdbm.h>

#include "clock.h"
#include "fsafe.h"
#include "log.h"
#include "slots.h"
#include "store_gdbm.h"
#include "store_impl.h"
#include "storenote.h"

/* errno of a refusal that was logged with its reason (fsafe.h). */
#define REFUSED FSAFE_REFUSED

/* Retry-After for a scoring run refused because another one runs. */
#define STORE_RUN_BUSY_RETRY_S 10

/* A reader waits this long at most for writers that wait for the lock,
 * counting those that began to wait within READER_YIELD_WITHIN_MS: a
 * write transaction takes well under a millisecond. */
#define READER_YIELD_MAX_MS 100
#define READER_YIELD_WITHIN_MS 500

/* A wait for the flock this long polls at least once a millisecond;
 * after it, the holder is in a long transaction and the polls back off
 * to 16 ms. */
#define LOCK_WAIT_SHORT_MS 50

/* How long store_check() waits for its shared lock: a second, which no
 * transaction holds it for, so that only a stuck holder reads as busy
 * (a busy host's readers yield to its writers, and 200 ms of that was
 * read as a busy store once in ten minutes of the attack soak). */
#define STORE_CHECK_WAIT_MS 1000

/* The mark in the lock file's first byte (an empty file is clean). */
#define MARK_CLEAN 'c'		/* the two files are equal */
#define MARK_PRIMARY 'p'	/* the primary is being written */
#define MARK_TWIN 't'		/* the twin is being written */
#define MARK_FAILED 'f'		/* a write to the primary failed part-way */
#define MARK_GEN 'g'		/* equal, and a generation follows (keeps) */

/* MARK_GEN and the generation after it, a uint64_t in host order. */
#define STAMP_LEN (1 + sizeof(uint64_t))

/* The primary may hold part of a transaction: the twin is the better
 * copy.  A mark this build does not know counts as such too. */
static bool
mark_dirty(char m)
{
	return m != MARK_CLEAN && m != MARK_GEN && m != MARK_TWIN;
}

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

/* The empty memfd db_close() swaps in, made once per process (threads
 * share it: each dup3()s its own copy, so its offset never matters). */
static pthread_once_t nosync_once = PTHREAD_ONCE_INIT;
static int nosync_shared = -1;

static void
nosync_make(void)
{
	nosync_shared = memfd_create("orgw-nosync", MFD_CLOEXEC);
}

/*
 * Who holds the lock on fd's file, for the log line of a lock not had in
 * time: "pid N (comm)" from /proc/locks into who (n bytes), or "" when
 * it cannot be told (not Linux, or released meanwhile).
 */
static void
lock_holder(int fd, char *who, size_t n)
{
	char line[256], comm[64] = "?", path[64];
	unsigned maj, mnr;
	unsigned long ino;
	long pid = 0, p;
	struct stat st;
	FILE *f;

	who[0] = '\0';
	if (fstat(fd, &st) == -1 || (f = fopen("/proc/locks", "re")) == NULL)
		return;
	/* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a waiter's
	 * line has "->" after the number and does not match. */
	while (pid == 0 && fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%*d: FLOCK %*s %*s %ld %x:%x:%lu", &p, &maj,
			   &mnr, &ino) == 4 && maj == major(st.st_dev) &&
		    mnr == minor(st.st_dev) && ino == (unsigned long)st.st_ino)
			pid = p;
	}
	fclose(f);
	if (pid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	if ((f = fopen(path, "re")) != NULL) {
		if (fgets(comm, sizeof(comm), f) != NULL)
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	snprintf(who, n, "pid %ld (%s)", pid, comm);
}

/* Takes the flock with backoff; returns the fd or -1 (errno set). */
static int
take_lock(const char *path, bool write, int64_t timeout_ms)
{
	char lp[4200];
	int fd, op = write ? LOCK_EX : LOCK_SH;
	/* Backoff from 50 us: a transaction holds the lock for tens to
	 * hundreds of microseconds, so a first wait of a whole millisecond
	 * (the old start) left the lock idle most of the time a worker
	 * slept on it. */
	int64_t deadline = clock_mono_ms() + timeout_ms, wait_us = 50;
	int64_t yield_until = clock_mono_ms() + READER_YIELD_MAX_MS;
	int64_t long_after = clock_mono_ms() + LOCK_WAIT_SHORT_MS, cap_us;
	bool waited = false;

	if (fsafe_side_path(lp, sizeof(lp), path, ".lock") == -1) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (fsafe_dir_ok(path) == -1)
		return -1;
	fd = fsafe_open(lp, true, true);
	if (fd == -1 && !write && errno != REFUSED)
		fd = fsafe_open(lp, false, false);
	if (fd == -1)
		return -1;
	/* A reader lets a waiting writer in first (slots.h), for a while. */
	while (!write && slots_writer_pending(READER_YIELD_WITHIN_MS) &&
	       clock_mono_ms() < yield_until)
		clock_sleep_us(200);
	for (;;) {
		if (flock(fd, op | LOCK_NB) == 0) {
			if (write && waited)
				slots_writer_waiting(false);
			return fd;
		}
		if (write && !waited) {
			slots_writer_waiting(true);
			waited = true;
		}
		if (errno != EWOULDBLOCK && errno != EINTR)
			break;
		if (clock_mono_ms() >= deadline) {
			char who[128];

			lock_holder(fd, who, sizeof(who));
			log_warn("state lock %s: not had in %lld ms%s%s", lp,
				 (long long)timeout_ms,
				 who[0] ? "; held by " : "", who);
			errno = EWOULDBLOCK;
			break;
		}
		clock_sleep_us(wait_us);
		/* A queue of short transactions (group commits, routes)
		 * is served within a millisecond of each release; only a
		 * long hold (a scoring run, a repair) backs off further. */
		cap_us = clock_mono_ms() < long_after ? 1000 : 16000;
		wait_us = wait_us * 2 < cap_us ? wait_us * 2 : cap_us;
	}
	{
		int e = errno;
		if (write && waited)
			slots_writer_waiting(false);
		close(fd);
		errno = e;
	}
	return -1;
}

/* gdbm_open on a descriptor from fsafe_open(): NULL with gdbm_errno
 * GDBM_FILE_OPEN_ERROR and errno set when the file cannot be opened or
 * is refused (REFUSED). */
static GDBM_FILE
open_db(const char *path, bool write)
{
	int flags = (write ? GDBM_WRCREAT : GDBM_READER) | GDBM_NOLOCK |
		    GDBM_NOMMAP | GDBM_CLOERROR, fd;

	if ((fd = fsafe_open(path, write, write)) == -1) {
		int e = errno;
		gdbm_errno = GDBM_FILE_OPEN_ERROR;
		errno = e;
		return NULL;
	}
	return gdbm_fd_open(fd, path, 0, flags, NULL);
}

/*
 * The twin (see the top of this file).  Every function here runs under the
 * exclusive lock, except mark_read() and twin_for_reader().
 */
static int db_close(GDBM_FILE dbf, bool write);
static datum key_datum(const char *key);

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
static int
head_write(int lockfd, const char *path, const void *b, size_t n)
{
	if (pwrite(lockfd, b, n, 0) == (ssize_t)n)
		return 0;
	log_err("state %s.lock: cannot write the mark: %s", path,
		log_strerror(errno));
	return -1;
}

/* Sets the mark: 0, or -1 after a log line. */
static int
mark_set(int lockfd, const char *path, char m)
{
	return head_write(lockfd, path, &m, 1);
}

/* Copies the file from over the file to, atomically (to.tmp, then
 * rename): 0, or the errno of the failure after a log line. */
static int
copy_file(const char *from, const char *to)
{
	char tmp[4200];
	char *buf = NULL;
	int in = -1, out = -1, rc = -1, r, e;
	ssize_t got, put, done;

	if (fsafe_side_path(tmp, sizeof(tmp), to, ".tmp") == -1)
		return ENAMETOOLONG;
	if ((buf = malloc(65536)) == NULL ||
	    (in = fsafe_open(from, false, false)) == -1 ||
	    (out = fsafe_open(tmp, true, true)) == -1 ||
	    ftruncate(out, 0) == -1)
		goto out;
	while ((got = read(in, buf, 65536)) != 0) {
		if (got == -1 && errno == EINTR)
			continue;
		if (got == -1)
			goto out;
		for (done = 0; done < got; done += put) {
			put = write(out, buf + done, (size_t)(got - done));
			if (put == 0)
				errno = ENOSPC;
			if (put == -1 && errno == EINTR)
				put = 0;
			else if (put <= 0)
				goto out;
		}
	}
	r = close(out);
	out = -1;
	if (r == -1 || rename(tmp, to) == -1)
		goto out;
	rc = 0;
out:
	e = rc == 0 ? 0 : errno != 0 ? errno : EIO;
	if (e != 0 && e != REFUSED)	/* a refusal was logged */
		log_err("state: cannot copy %s to %s: %s", from, to,
			log_strerror(e));
	if (out != -1)
		close(out);
	if (e != 0)
		(void)unlink(tmp);
	if (in != -1)
		close(in);
	free(buf);
	return e;
}

/* st_mtim of a is later than b's. */
static bool
newer(const struct stat *a, const struct stat *b)
{
	return a->st_mtim.tv_sec != b->st_mtim.tv_sec ?
		       a->st_mtim.tv_sec > b->st_mtim.tv_sec :
		       a->st_mtim.tv_nsec > b->st_mtim.tv_nsec;
}

static bool walk_ok(GDBM_FILE dbf);
static enum orgw_err move_aside(const char *path, const char *then);

/* What db_state() found of a file. */
enum db_state {
	DB_WHOLE,	/* opens as GDBM and every key and value reads back */
	DB_DAMAGED,	/* opens, but not as GDBM, or a read fails */
	DB_UNREADABLE,	/* cannot be opened: missing, no permission, refused */
};

/*
 * The check before one copy of the state replaces the other, so that a
 * damaged file never overwrites a whole one.  Reads the whole file, so
 * it runs only where a copy of the whole file follows anyway (or in a
 * repair).  errno is kept from the failed open for DB_UNREADABLE.
 */
static enum db_state
db_state(const char *file)
{
	GDBM_FILE dbf = open_db(file, false);
	bool ok;

	if (dbf == NULL)
		return gdbm_errno == GDBM_FILE_OPEN_ERROR ? DB_UNREADABLE :
							    DB_DAMAGED;
	ok = walk_ok(dbf);
	return db_close(dbf, false) == 0 && ok ? DB_WHOLE : DB_DAMAGED;
}

/*
 * The primary path is damaged and the twin is whole: moves the primary
 * aside (path.corrupt, for inspection) and copies the twin over it.  0,
 * or an errno value after a log line.
 */
static int
twin_restore_damaged(const char *path, const char *twin)
{
	if (move_aside(path, "restoring the last whole state from the twin") !=
	    ORGW_OK)
		return errno != 0 ? errno : EIO;
	return copy_file(twin, path);
}

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
static enum settle
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
static const char *
twin_for_reader(const char *path, int lockfd, char *twin, size_t n)
{
	struct stat ts;

	if (!mark_dirty(mark_read(lockfd)) ||
	    fsafe_side_path(twin, n, path, ".twin") == -1 || lstat(twin, &ts) == -1)
		return path;
	return twin;
}

/* Before the transaction's first write to the primary. */
static void
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
static void
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

static void
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
 * Handles kept between transactions.  Opening GDBM is most of what a
 * short transaction costs (the header and directory read, the bucket
 * cache allocated and cleared: about 10k instructions an open, three
 * opens a request before), so a process keeps its handles of the primary
 * and the twin after a write transaction and uses them in its next
 * transactions, readers' too, for as long as nothing else has written
 * the files.  Every write transaction of this release ends by writing,
 * under the exclusive lock, MARK_GEN and a generation one higher than
 * the one it found (a random start when there is none).  A transaction
 * uses the kept handles only when it finds MARK_GEN with the generation
 * its process's last commit left, and the primary (for a writer the twin
 * too) with the inode, size and times that commit left them; anything
 * else means another writer came in between:
 *   - a writer of this release in another process or thread: a new
 *     generation;
 *   - a writer of the release before: it ends with MARK_CLEAN (and reads
 *     MARK_GEN as a mark it does not know, so it restores the primary
 *     from the twin first, which is equal at rest: a mix of releases is
 *     slower, never wrong);
 *   - a writer that died (MARK_PRIMARY), a repair or a copy (MARK_CLEAN,
 *     a new inode), a release before the twin or a gdbmtool write (the
 *     file's size and times).
 * Then the kept handles are closed (db_close: nothing of a stale handle
 * reaches the file) and the transaction opens the files afresh, as every
 * transaction did before.  So every process still sees the others'
 * writes, and what the handles save is GDBM's own work: the open, and
 * the buckets its cache already holds.  One slot per file (the state and
 * the team keys), used by one thread at a time; a thread that finds its
 * slot taken opens a handle of its own.  A child process (fork) never
 * uses its parent's handles.
 */
#define KEEP_SLOTS 2

struct keep {
	pthread_mutex_t mu;	/* held by the transaction using the slot */
	pid_t pid;		/* the process that opened the handles */
	GDBM_FILE prim, twin;	/* writers' handles; NULL: none kept */
	uint64_t gen;		/* the generation the last commit left */
	struct stat pst, tst;	/* the files as that commit left them */
	char path[4200];	/* the primary; "": the slot is free */
};

static struct keep keeps[KEEP_SLOTS] = {
	{.mu = PTHREAD_MUTEX_INITIALIZER},
	{.mu = PTHREAD_MUTEX_INITIALIZER},
};

/* The same file, not written since a was taken: b. */
static bool
same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
	       a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* The generation in the lock file: true with *gen when MARK_GEN leads. */
static bool
stamp_read(int lockfd, uint64_t *gen)
{
	unsigned char b[STAMP_LEN];

	if (pread(lockfd, b, sizeof(b), 0) != (ssize_t)sizeof(b) ||
	    b[0] != MARK_GEN)
		return false;
	memcpy(gen, b + 1, sizeof(*gen));
	return true;
}

/* Ends a write transaction whose stores the twin has too: MARK_GEN and a
 * new generation into the lock file (*gen).  0, or -1 after a log line. */
static int
stamp_write(int lockfd, const char *path, uint64_t *gen)
{
	unsigned char b[STAMP_LEN];
	uint64_t g;

	if (pread(lockfd, b, sizeof(b), 0) == (ssize_t)sizeof(b)) {
		memcpy(&g, b + 1, sizeof(g));
		g++;
	} else if (getrandom(&g, sizeof(g), GRND_NONBLOCK) !=
		   (ssize_t)sizeof(g)) {
		g = (uint64_t)clock_mono_us() << 20 ^ (uint64_t)getpid();
	}
	b[0] = MARK_GEN;
	memcpy(b + 1, &g, sizeof(g));
	if (head_write(lockfd, path, b, sizeof(b)) == -1)
		return -1;
	*gen = g;
	return 0;
}

/* Closes a slot's handles: stale or not, nothing reaches the files. */
static void
keep_drop(struct keep *k)
{
	if (k->prim != NULL)
		(void)db_close(k->prim, true);
	if (k->twin != NULL)
		(void)db_close(k->twin, true);
	k->prim = k->twin = NULL;
}

/* Moves slot k's handles to s, which closes them once the lock is
 * released (stale_close()): closing them writes nothing to the files
 * (db_close), so it need not hold up the other transactions. */
static void
keep_aside(struct store_gdbm *s, struct keep *k)
{
	s->stale[0] = k->prim;
	s->stale[1] = k->twin;
	k->prim = k->twin = NULL;
}

/*
 * Under the flock, after twin_settle() for a writer (pst, tst: the files
 * as it found them; NULL for a reader): takes the slot of s->path
 * (s->slot; none when every slot is taken) and, when its handles are
 * still good, gives s the primary's (s->kept).  Handles that are stale,
 * or of another file whose slot this one takes, are set aside
 * (keep_aside()).
 */
static void
keep_take(struct store_gdbm *s, const struct stat *pst,
	  const struct stat *tst)
{
	struct stat ps;
	struct keep *k = NULL;
	uint64_t gen;
	int i;

	if (strlen(s->path) >= sizeof(keeps[0].path))
		return;
	/* The file's slot or a free one; else the first not in use,
	 * its handles closed (a third file: tests, an operator's tool). */
	for (i = 0; i < 2 * KEEP_SLOTS; i++) {
		struct keep *c = &keeps[i % KEEP_SLOTS];

		if (pthread_mutex_trylock(&c->mu) != 0)
			continue;
		if (c->pid != getpid()) {
			/* A forked child: the handles are the parent's. */
			c->prim = c->twin = NULL;
			c->path[0] = '\0';
			c->pid = getpid();
		}
		if (c->path[0] == '\0' || strcmp(c->path, s->path) == 0 ||
		    i >= KEEP_SLOTS) {
			k = c;
			break;
		}
		pthread_mutex_unlock(&c->mu);
	}
	if (k == NULL)
		return;
	if (k->path[0] != '\0' && strcmp(k->path, s->path) != 0) {
		keep_aside(s, k);
		k->path[0] = '\0';
	}
	s->slot = k;
	if (k->prim == NULL)
		return;
	if (pst == NULL && lstat(s->path, &ps) == 0)
		pst = &ps;
	if (pst != NULL && stamp_read(s->lockfd, &gen) && gen == k->gen &&
	    same_file(pst, &k->pst) &&
	    (tst == NULL || k->twin == NULL || same_file(tst, &k->tst))) {
		s->dbf = k->prim;
		s->kept = true;
		return;
	}
	keep_aside(s, k);
}

/* After the unlock: closes the handles keep_take() set aside. */
static void
stale_close(struct store_gdbm *s)
{
	int i;

	for (i = 0; i < 2; i++)
		if (s->stale[i] != NULL)
			(void)db_close(s->stale[i], true);
}

/* After the commit of a writer holding its slot, the files whole: keeps
 * the handles with a new generation, or closes them (false). */
static bool
keep_put(struct store_gdbm *s)
{
	struct keep *k = s->slot;

	if (stamp_write(s->lockfd, s->path, &k->gen) == -1 ||
	    fstat(gdbm_fdesc(k->prim), &k->pst) == -1 ||
	    (k->twin != NULL && fstat(gdbm_fdesc(k->twin), &k->tst) == -1)) {
		keep_drop(k);
		return false;
	}
	/* keep_take() checked that it fits. */
	memcpy(k->path, s->path, strlen(s->path) + 1);
	return true;
}

/* The transaction ends: lets its slot go. */
static void
keep_leave(struct store_gdbm *s)
{
	if (s->slot == NULL)
		return;
	if (s->slot->prim == NULL)
		s->slot->path[0] = '\0';
	pthread_mutex_unlock(&s->slot->mu);
	s->slot = NULL;
}

/*
 * At commit, the primary written: replays the writes into the twin (the
 * slot's handle when the transaction holds one).  True when the twin has
 * every write of the transaction (or there were none): the caller marks
 * the files equal.  After a failed write or close the mark stays on
 * "primary", so the next writer (or store_gdbm_repair()) restores the
 * state from before this one.
 */
static bool
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

static enum orgw_err gd_get(struct store *base, const char *key, char **val);
static enum orgw_err gd_put(struct store *base, const char *key,
			    const char *val);
static enum orgw_err gd_del(struct store *base, const char *key);
static enum orgw_err gd_each(struct store *base, const char *prefix,
			     int (*fn)(void *arg, const char *key,
				       const char *val),
			     void *arg);
static enum orgw_err gd_commit(struct store *base);
static void gd_abort(struct store *base);

static const struct store_ops gd_ops = {
	gd_get, gd_put, gd_del, gd_each, gd_commit, gd_abort,
	NULL,	/* one host's file: its clock is the only one */
};

enum orgw_err
store_gdbm_open(struct store **out, const char *path, bool write,
	   int64_t timeout_ms)
{
	struct store_gdbm *s;
	size_t n = strlen(path) + 1;
	char twin[4200];
	struct stat pst, tst;
	const char *file = path;
	enum settle settled;
	int e;

	*out = NULL;
	if ((s = malloc(sizeof(*s) + n)) == NULL)
		return ORGW_ENOMEM;
	memset(s, 0, sizeof(*s));
	s->base.ops = &gd_ops;
	memcpy(s->path, path, n);
	s->write = write;
#ifdef ORGW_TRACE_LOCK
	s->t_ask_us = clock_mono_us();
#endif
	if ((s->lockfd = take_lock(path, write, timeout_ms)) == -1) {
		e = errno;
		free(s);
		if (e == EWOULDBLOCK)
			return ORGW_EBUSY;
		if (e != REFUSED) /* a refusal was logged with its reason */
			log_err("state lock %s.lock: %s", path, log_strerror(e));
		return ORGW_EIO;
	}
#ifdef ORGW_TRACE_LOCK
	s->t_got_us = clock_mono_us();
#endif
	s->ops_tail = &s->ops;
	if (write && (settled = twin_settle(path, s->lockfd, &e, &pst,
					    &tst)) != SETTLE_OK) {
		/* Writing the primary now would make the twin's copy of
		 * the state and the primary's differ for good. */
		if (settled == SETTLE_FAILED) {
			log_err("state %s: the state and its twin could not be "
				"made equal (%s); writes refused until they can",
				path, log_strerror(e));
			store_write_refused(e);
		}
		close(s->lockfd);
		free(s);
		return ORGW_EIO;
	}
	keep_take(s, write ? &pst : NULL, write ? &tst : NULL);
	if (s->kept) {
		*out = &s->base;
		return ORGW_OK;
	}
	if (!write)
		file = twin_for_reader(path, s->lockfd, twin, sizeof(twin));
	s->dbf = open_db(file, write);
	if (s->dbf == NULL) {
		e = errno;
		/* A reader of a file not created yet sees an empty store. */
		if (!write && (gdbm_errno == GDBM_EMPTY_DATABASE ||
			       (gdbm_errno == GDBM_FILE_OPEN_ERROR &&
				e == ENOENT))) {
			*out = &s->base;
			return ORGW_OK;
		}
		if (e != REFUSED || gdbm_errno != GDBM_FILE_OPEN_ERROR)
			log_err("state %s: %s%s%s", file,
				gdbm_strerror(gdbm_errno),
				gdbm_syserr[gdbm_errno] ? ": " : "",
				gdbm_syserr[gdbm_errno] ? log_strerror(e) : "");
		/* A writer the system refuses (no space to create the
		 * file, a read-only disk); a damaged file is repaired. */
		if (write && gdbm_errno == GDBM_FILE_OPEN_ERROR &&
		    e != REFUSED && e != ENOENT)
			store_write_refused(e);
		keep_leave(s);
		close(s->lockfd);
		stale_close(s);
		free(s);
		return ORGW_EIO;
	}
	*out = &s->base;
	return ORGW_OK;
}

/*
 * Closes a handle like gdbm_close(), without its fsync(2) of a writer's
 * file ("make sure the database is all on disk", gdbmclose.c), for which
 * GDBM has no flag.  Under the exclusive lock that fsync serialised every
 * worker on the disk: 0.3 to 2 ms each on the ext4 of the bench machine,
 * two write transactions per request, a ceiling near 500 requests/s
 * whatever the cores (bench/RESULTS.md).  The state is soft (docs/design.md 7): it
 * needs visibility, not durability.  gdbm_store() and gdbm_delete() write
 * through (bucket, directory and header reach the file with write(2)
 * before they return; gdbm_close() itself only syncs and closes), so the
 * next process to take the lock reads the new data from the page cache,
 * and the kernel writes it back on its own.  After a power loss the file
 * may lack the last seconds of updates, or be damaged, which store_open
 * and store_repair already handle.
 *
 * How: the descriptor gdbm_close() will sync and close is swapped for a
 * copy of an empty memfd (fsync there is a no-op), and the real one is
 * closed here, its close(2) checked.  When that cannot be set up
 * (memfd_create missing: not Linux, or an old kernel) the plain
 * gdbm_close() runs, fsync included.  Readers never sync: plain close.
 * Returns 0 or -1 like gdbm_close().
 */
static int
db_close(GDBM_FILE dbf, bool write)
{
	int fd, real = -1, rc, nosync_fd = -1;

	if (write) {
		(void)pthread_once(&nosync_once, nosync_make);
		nosync_fd = nosync_shared;
	}
	if (write && nosync_fd >= 0 && (fd = gdbm_fdesc(dbf)) >= 0 &&
	    (real = fcntl(fd, F_DUPFD_CLOEXEC, 0)) != -1 &&
	    dup3(nosync_fd, fd, O_CLOEXEC) == -1) {
		close(real);
		real = -1;
	}
	rc = gdbm_close(dbf);
	if (real != -1 && close(real) == -1) {
		gdbm_errno = GDBM_FILE_CLOSE_ERROR;
		rc = -1;
	}
	return rc;
}

static datum
key_datum(const char *key)
{
	datum k;

	k.dptr = (char *)(uintptr_t)key;
	k.dsize = (int)strlen(key);
	return k;
}

static enum orgw_err
gd_get(struct store *base, const char *key, char **val)
{
	struct store_gdbm *s = (struct store_gdbm *)base;
	datum d;
	char *v;

	*val = NULL;
	if (s->dbf == NULL)
		return ORGW_OK;
	d = gdbm_fetch(s->dbf, key_datum(key));
	if (d.dptr == NULL) {
		if (gdbm_errno == GDBM_ITEM_NOT_FOUND)
			return ORGW_OK;
		log_err("state %s: fetch %s: %s", s->path, key,
			gdbm_strerror(gdbm_errno));
		return ORGW_EIO;
	}
	/* GDBM's own copy, one byte longer for the NUL. */
	if (d.dsize < 0 || (v = realloc(d.dptr, (size_t)d.dsize + 1)) == NULL) {
		free(d.dptr);
		return ORGW_ENOMEM;
	}
	v[d.dsize] = '\0';
	*val = v;
	return ORGW_OK;
}

/*
 * A store, delete or close of the primary failed (what: "store KEY",
 * "delete KEY", "close"): logs it with the system error GDBM saw (on a
 * full disk: ENOSPC, not a bare "Write error"), notes the refusal for
 * /healthz and marks the transaction failed, so that the next writer
 * restores the state from before it and says why.  Call right after the
 * failed GDBM call, while errno is its.
 */
static void
gd_failed(struct store_gdbm *s, const char *what, const char *key)
{
	int ge = gdbm_errno, e = gdbm_syserr[ge] ? errno : EIO;

	log_err("state %s: %s%s%s: %s%s%s", s->path, what, key ? " " : "",
		key ? key : "", gdbm_strerror(ge), gdbm_syserr[ge] ? ": " : "",
		gdbm_syserr[ge] ? log_strerror(e) : "");
	store_write_refused(e);
	s->failed = true;
	if (s->marked)
		(void)mark_set(s->lockfd, s->path, MARK_FAILED);
}

static enum orgw_err
gd_put(struct store *base, const char *key, const char *val)
{
	struct store_gdbm *s = (struct store_gdbm *)base;
	datum v;

	if (s->dbf == NULL || !s->write)
		return ORGW_EINVAL;
	v.dptr = (char *)(uintptr_t)val;
	v.dsize = (int)strlen(val);
	twin_mark(s);
	if (gdbm_store(s->dbf, key_datum(key), v, GDBM_REPLACE) != 0) {
		gd_failed(s, "store", key);
		return ORGW_EIO;
	}
	twin_keep(s, key, val);
	return ORGW_OK;
}

static enum orgw_err
gd_del(struct store *base, const char *key)
{
	struct store_gdbm *s = (struct store_gdbm *)base;
	if (s->dbf == NULL || !s->write)
		return ORGW_EINVAL;
	twin_mark(s);
	if (gdbm_delete(s->dbf, key_datum(key)) != 0 &&
	    gdbm_errno != GDBM_ITEM_NOT_FOUND) {
		gd_failed(s, "delete", key);
		return ORGW_EIO;
	}
	twin_keep(s, key, NULL);
	return ORGW_OK;
}

static enum orgw_err
gd_each(struct store *base, const char *prefix,
	   int (*fn)(void *arg, const char *key, const char *val), void *arg)
{
	struct store_gdbm *s = (struct store_gdbm *)base;
	size_t plen = strlen(prefix);
	datum k, next;
	enum orgw_err err = ORGW_OK;
	char *kz, *val;

	if (s->dbf == NULL)
		return ORGW_OK;
	k = gdbm_firstkey(s->dbf);
	while (k.dptr != NULL) {
		if (k.dsize >= 0 && (size_t)k.dsize >= plen &&
		    memcmp(k.dptr, prefix, plen) == 0) {
			if ((kz = malloc((size_t)k.dsize + 1)) == NULL) {
				free(k.dptr);
				return ORGW_ENOMEM;
			}
			memcpy(kz, k.dptr, (size_t)k.dsize);
			kz[k.dsize] = '\0';
			err = gd_get(base, kz, &val);
			if (err == ORGW_OK && val != NULL &&
			    fn(arg, kz, val) != 0) {
				free(val);
				free(kz);
				free(k.dptr);
				return ORGW_OK;
			}
			free(val);
			free(kz);
			if (err != ORGW_OK) {
				free(k.dptr);
				return err;
			}
		}
		next = gdbm_nextkey(s->dbf, k);
		free(k.dptr);
		k = next;
	}
	if (gdbm_errno != GDBM_ITEM_NOT_FOUND && gdbm_errno != GDBM_NO_ERROR)
		return ORGW_EIO;
	return ORGW_OK;
}

enum orgw_err
store_gdbm_run_begin(const char *path, int64_t min_interval_s, int64_t now_s,
		int *fd_out, int64_t *retry_after_s)
{
	char rp[4200], buf[32];
	long long last = 0;
	ssize_t r;
	int fd, n;

	*fd_out = -1;
	*retry_after_s = 0;
	if (fsafe_side_path(rp, sizeof(rp), path, ".score") == -1 ||
	    fsafe_dir_ok(path) == -1)
		return ORGW_EIO;
	if ((fd = fsafe_open(rp, true, true)) == -1) {
		if (errno != REFUSED)
			log_err("scoring lock %s: %s", rp, log_strerror(errno));
		return ORGW_EIO;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		int e = errno;
		close(fd);
		if (e != EWOULDBLOCK)
			return ORGW_EIO;
		*retry_after_s = STORE_RUN_BUSY_RETRY_S;
		return ORGW_EBUSY;
	}
	/* The file holds the start time of the last run, in seconds. */
	if ((r = pread(fd, buf, sizeof(buf) - 1, 0)) > 0) {
		buf[r] = '\0';
		last = strtoll(buf, NULL, 10);
	}
	if (min_interval_s > 0 && last > 0 && now_s >= last &&
	    now_s - last < min_interval_s) {
		*retry_after_s = min_interval_s - (now_s - last);
		flock(fd, LOCK_UN);
		close(fd);
		return ORGW_EBUSY;
	}
	/* Only a throttled run (POST /__cron) starts the interval. */
	n = snprintf(buf, sizeof(buf), "%lld\n", (long long)now_s);
	if (min_interval_s > 0 &&
	    (pwrite(fd, buf, (size_t)n, 0) != n || ftruncate(fd, n) == -1))
		log_warn("scoring lock %s: %s", rp, log_strerror(errno));
	*fd_out = fd;
	return ORGW_OK;
}

void
store_gdbm_run_end(int fd)
{
	if (fd < 0)
		return;
	flock(fd, LOCK_UN);
	close(fd);
}

/* One file of the store for store_check(): 0, or -1 with why. */
static int
check_one(const char *file, const char *dir, char *why, size_t n)
{
	struct stat st;
	const char *r;

	if (lstat(file, &st) == 0) {
		if ((r = fsafe_refused(&st)) != NULL || !S_ISREG(st.st_mode)) {
			snprintf(why, n, "%s %s", file,
				 r ? r : "is not a regular file");
			return -1;
		}
		if (access(file, R_OK | W_OK) == 0)
			return 0;
	} else if (errno == ENOENT) {
		if (access(dir, W_OK) == 0)
			return 0;	/* created by the first write */
		/* Shared hosting's usual mistake: say it plainly. */
		snprintf(why, n, "directory %s is not writable by this "
			 "program (uid %u): %s", dir, (unsigned)getuid(),
			 log_strerror(errno));
		return -1;
	}
	snprintf(why, n, "%s: %s", file, log_strerror(errno));
	return -1;
}

enum orgw_err
store_gdbm_check(const char *path, char *why, size_t n)
{
	char dir[4200], lp[4200];
	struct stat st;
	const char *r;
	int fd;

	if (fsafe_dir_of(path, dir, sizeof(dir)) == -1 ||
	    fsafe_side_path(lp, sizeof(lp), path, ".lock") == -1) {
		snprintf(why, n, "path too long");
		return ORGW_EIO;
	}
	if (lstat(dir, &st) == -1) {
		snprintf(why, n, "%s: %s", dir, log_strerror(errno));
		return ORGW_EIO;
	}
	if ((r = fsafe_refused(&st)) != NULL) {
		snprintf(why, n, "directory %s %s", dir, r);
		return ORGW_EIO;
	}
	if (check_one(lp, dir, why, n) == -1 ||
	    check_one(path, dir, why, n) == -1)
		return ORGW_EIO;
	/* A shared lock, given up after a short wait: a writer holds the
	 * lock for microseconds, so only a stuck holder makes this busy. */
	if ((fd = take_lock(path, false, STORE_CHECK_WAIT_MS)) == -1) {
		if (errno == EWOULDBLOCK) {
			snprintf(why, n, "busy (the lock is held)");
			return ORGW_EBUSY;
		}
		snprintf(why, n, "%s: %s", lp, log_strerror(errno));
		return ORGW_EIO;
	}
	flock(fd, LOCK_UN);
	close(fd);
	return ORGW_OK;
}

static enum orgw_err
gd_commit(struct store *base)
{
	struct store_gdbm *s = (struct store_gdbm *)base;
	enum orgw_err err = ORGW_OK;

	if (s == NULL)
		return ORGW_OK;
	if (s->slot != NULL && s->write && s->dbf != NULL && !s->failed) {
		/* The primary stays open, the slot's now; a writer that
		 * wrote nothing with the handles it found leaves them as
		 * they were. */
		s->slot->prim = s->dbf;
		s->dbf = NULL;
		if (!twin_replay(s) ||
		    ((s->marked || !s->kept) && !keep_put(s)))
			keep_drop(s->slot);
	} else {
		if (s->kept) {
			/* A failed write: the handles go with it. */
			if (s->write)
				keep_drop(s->slot);
			s->dbf = NULL;
		}
		if (s->dbf != NULL && db_close(s->dbf, s->write) != 0) {
			s->dbf = NULL;
			if (s->write)
				gd_failed(s, "close", NULL);
			else
				log_err("state %s: close: %s", s->path,
					gdbm_strerror(gdbm_errno));
			err = ORGW_EIO;
		}
		if (twin_replay(s) && s->marked)
			(void)mark_set(s->lockfd, s->path, MARK_CLEAN);
	}
	keep_leave(s);
	ops_free(s);
	if (flock(s->lockfd, LOCK_UN) == -1)
		err = ORGW_EIO;
#ifdef ORGW_TRACE_LOCK
	log_msg("lock", "write=%d wait_us=%lld hold_us=%lld file=%s",
		s->write ? 1 : 0,
		(long long)(s->t_got_us - s->t_ask_us),
		(long long)(clock_mono_us() - s->t_got_us), s->path);
#endif
	if (close(s->lockfd) == -1)
		err = ORGW_EIO;
	stale_close(s);
	free(s);
	return err;
}

/* Writes went through already: aborting only releases the lock. */
static void
gd_abort(struct store *base)
{
	(void)gd_commit(base);
}

/* Moves a damaged file aside (keeping the latest for inspection); then
 * names what happens next, for the log line. */
static enum orgw_err
move_aside(const char *path, const char *then)
{
	char aside[4200];

	if (fsafe_side_path(aside, sizeof(aside), path, ".corrupt") == -1)
		return ORGW_EIO;
	if (rename(path, aside) == -1 && errno != ENOENT) {
		log_err("state %s: cannot move aside: %s", path,
			log_strerror(errno));
		if (unlink(path) == -1 && errno != ENOENT)
			return ORGW_EIO;
	}
	log_warn("state %s: damaged file moved to %s; %s", path, aside, then);
	return ORGW_OK;
}

/* Reads every key and value; false at the first error (a damaged file
 * may open cleanly and fail only when a bad bucket is touched). */
static bool
walk_ok(GDBM_FILE dbf)
{
	datum k, v, next;

	k = gdbm_firstkey(dbf);
	while (k.dptr != NULL) {
		v = gdbm_fetch(dbf, k);
		if (v.dptr == NULL) {
			free(k.dptr);
			return false;
		}
		free(v.dptr);
		next = gdbm_nextkey(dbf, k);
		free(k.dptr);
		k = next;
	}
	return gdbm_errno == GDBM_ITEM_NOT_FOUND ||
	       gdbm_errno == GDBM_NO_ERROR;
}

/* Under the exclusive lock: make path an openable, consistent file.
 * A whole twin is the last whole state: it is taken before anything that
 * would lose keys (gdbm_recover, or starting empty). */
static enum orgw_err
repair_locked(const char *path, bool reorganize)
{
	char twin[4200];
	GDBM_FILE dbf;
	gdbm_recovery rcvr;
	enum orgw_err err = ORGW_OK;

	if (fsafe_side_path(twin, sizeof(twin), path, ".twin") == 0 &&
	    db_state(path) == DB_DAMAGED && db_state(twin) == DB_WHOLE)
		return twin_restore_damaged(path, twin) == 0 ? ORGW_OK :
							       ORGW_EIO;
	dbf = open_db(path, true);
	if (dbf == NULL) {
		if (gdbm_errno == GDBM_FILE_OPEN_ERROR &&
		    (errno == EACCES || errno == EROFS || errno == ENOENT ||
		     errno == EPERM || errno == REFUSED)) {
			if (errno != REFUSED)	/* a refusal was logged */
				log_err("state %s: %s", path, log_strerror(errno));
			return ORGW_EIO;
		}
		if ((err = move_aside(path, "starting empty")) != ORGW_OK)
			return err;
		if ((dbf = open_db(path, true)) == NULL) {
			log_err("state %s: cannot create: %s", path,
				gdbm_strerror(gdbm_errno));
			return ORGW_EIO;
		}
		return gdbm_close(dbf) == 0 ? ORGW_OK : ORGW_EIO;
	}
	if (gdbm_needs_recovery(dbf) || !walk_ok(dbf)) {
		memset(&rcvr, 0, sizeof(rcvr));
		if (gdbm_recover(dbf, &rcvr, GDBM_RCVR_FORCE) == 0) {
			log_warn("state %s: recovered (%zu keys, %zu lost)",
				 path, rcvr.recovered_keys, rcvr.failed_keys);
		} else {
			log_err("state %s: recovery failed: %s", path,
				gdbm_strerror(gdbm_errno));
			gdbm_close(dbf);
			if ((err = move_aside(path, "starting empty")) != ORGW_OK)
				return err;
			if ((dbf = open_db(path, true)) == NULL)
				return ORGW_EIO;
		}
	} else if (reorganize && gdbm_reorganize(dbf) != 0) {
		log_warn("state %s: reorganize: %s", path,
			 gdbm_strerror(gdbm_errno));
	}
	return gdbm_close(dbf) == 0 ? ORGW_OK : ORGW_EIO;
}

static enum orgw_err
with_exclusive(const char *path, int64_t timeout_ms, bool reorganize)
{
	char twin[4200];
	struct stat ps, ts;
	enum settle settled;
	enum orgw_err err;
	int fd, cause;

	if ((fd = take_lock(path, true, timeout_ms)) == -1)
		return errno == EWOULDBLOCK ? ORGW_EBUSY : ORGW_EIO;
	/* A dead writer's state first.  When a copy it needed could not
	 * be made, the mark still names the better file: leave both. */
	settled = twin_settle(path, fd, &cause, &ps, &ts);
	if (settled == SETTLE_FAILED || settled == SETTLE_UNREADABLE) {
		flock(fd, LOCK_UN);
		close(fd);
		return ORGW_EIO;
	}
	err = repair_locked(path, reorganize);
	/* The twin follows what the repair made (a failed one leaves the
	 * mark as it was: the twin may be the better copy). */
	if (err == ORGW_OK) {
		bool copied =
			fsafe_side_path(twin, sizeof(twin), path, ".twin") == 0 &&
			copy_file(path, twin) == 0;

		(void)mark_set(fd, path, copied ? MARK_CLEAN : MARK_TWIN);
	}
	flock(fd, LOCK_UN);
	close(fd);
	return err;
}

enum orgw_err
store_gdbm_repair(const char *path, int64_t timeout_ms)
{
	return with_exclusive(path, timeout_ms, false);
}

enum orgw_err
store_gdbm_tidy(const char *path, int64_t timeout_ms)
{
	return with_exclusive(path, timeout_ms, true);
}

/* The back-end table (store_impl.h): STATE_PATH from the configuration,
 * the scoring-run lock's fd kept for run_end. */
static enum orgw_err
gd_b_open(struct store **out, const struct orgw_conf *c, bool write,
	  int64_t timeout_ms)
{
	return store_gdbm_open(out, c->state_path, write, timeout_ms);
}

static enum orgw_err
gd_b_run_begin(const struct orgw_conf *c, int64_t min_interval_s,
	       int64_t now_s, void **run, int64_t *retry_after_s)
{
	int *fd = malloc(sizeof(*fd));
	enum orgw_err err;

	*run = NULL;
	if (fd == NULL)
		return ORGW_ENOMEM;
	*fd = -1;
	err = store_gdbm_run_begin(c->state_path, min_interval_s, now_s, fd,
				   retry_after_s);
	if (err != ORGW_OK) {
		free(fd);
		return err;
	}
	*run = fd;
	return ORGW_OK;
}

static void
gd_b_run_end(void *run)
{
	if (run == NULL)
		return;
	store_gdbm_run_end(*(int *)run);
	free(run);
}

static enum orgw_err
gd_b_check(const struct orgw_conf *c, char *why, size_t n)
{
	return store_gdbm_check(c->state_path, why, n);
}

static enum orgw_err
gd_b_repair(const struct orgw_conf *c, int64_t timeout_ms)
{
	return store_gdbm_repair(c->state_path, timeout_ms);
}

static enum orgw_err
gd_b_tidy(const struct orgw_conf *c, int64_t timeout_ms)
{
	return store_gdbm_tidy(c->state_path, timeout_ms);
}

const struct store_backend store_gdbm_backend = {
	"",	       gd_b_open,   gd_b_run_begin, gd_b_run_end,
	gd_b_check,    gd_b_repair, gd_b_tidy,
};
