/*
 * store_gdbm_file.c - the GDBM back-end's files, one at a time: the lock
 * file's flock with its backoff (take_lock), a database opened on a
 * descriptor fsafe.h checked (open_db) and closed without its fsync
 * (db_close), and what the twin and a repair do to a whole file: read it
 * back whole (db_state, walk_ok), copy it atomically (copy_file), move a
 * damaged one aside (move_aside).
 */
#define _GNU_SOURCE	/* memfd_create, dup3 (Linux; see db_close) */

#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gdbm.h>

#include "clock.h"
#include "fsafe.h"
#include "log.h"
#include "workertab.h"
#include "store_gdbm_impl.h"

/* A reader waits this long at most for writers that wait for the lock,
 * counting those that began to wait within READER_YIELD_WITHIN_MS: a
 * write transaction takes well under a millisecond. */
#define READER_YIELD_MAX_MS 100
#define READER_YIELD_WITHIN_MS 500

/* A wait for the flock this long polls at least once a millisecond;
 * after it, the holder is in a long transaction and the polls back off
 * to 16 ms. */
#define LOCK_WAIT_SHORT_MS 50

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
int
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
	/* A reader lets a waiting writer in first (workertab.h), for a while. */
	while (!write && workertab_writer_pending(READER_YIELD_WITHIN_MS) &&
	       clock_mono_ms() < yield_until)
		clock_sleep_us(200);
	for (;;) {
		if (flock(fd, op | LOCK_NB) == 0) {
			if (write && waited)
				workertab_writer_waiting(false);
			return fd;
		}
		if (write && !waited) {
			workertab_writer_waiting(true);
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
			workertab_writer_waiting(false);
		close(fd);
		errno = e;
	}
	return -1;
}

/* gdbm_open on a descriptor from fsafe_open(): NULL with gdbm_errno
 * GDBM_FILE_OPEN_ERROR and errno set when the file cannot be opened or
 * is refused (REFUSED). */
GDBM_FILE
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

/* Copies the file from over the file to, atomically (to.tmp, then
 * rename): 0, or the errno of the failure after a log line. */
int
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

/*
 * The check before one copy of the state replaces the other, so that a
 * damaged file never overwrites a whole one.  Reads the whole file, so
 * it runs only where a copy of the whole file follows anyway (or in a
 * repair).  errno is kept from the failed open for DB_UNREADABLE.
 */
enum db_state
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
int
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

datum
key_datum(const char *key)
{
	datum k;

	k.dptr = (char *)(uintptr_t)key;
	k.dsize = (int)strlen(key);
	return k;
}

/* Moves a damaged file aside (keeping the latest for inspection); then
 * names what happens next, for the log line. */
enum orgw_err
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
bool
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
