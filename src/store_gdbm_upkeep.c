/*
 * store_gdbm_upkeep.c - what the GDBM back-end does outside a
 * transaction: the scoring-run lock (path.score), /healthz's check that
 * a writer could open the store, and the repair and tidy of the file
 * under the exclusive lock (store_gdbm.h).
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gdbm.h>

#include "fsafe.h"
#include "log.h"
#include "store_gdbm.h"
#include "store_gdbm_impl.h"

/* Retry-After for a scoring run refused because another one runs. */
#define STORE_RUN_BUSY_RETRY_S 10

/* How long store_check() waits for its shared lock: a second, which no
 * transaction holds it for, so that only a stuck holder reads as busy
 * (a busy host's readers yield to its writers, and 200 ms of that was
 * read as a busy store once in ten minutes of the attack soak). */
#define STORE_CHECK_WAIT_MS 1000

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
