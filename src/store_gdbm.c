/*
 * store_gdbm.c - the GDBM back-end: transactions under a separate lock
 * file (store_gdbm.h).
 *
 * Locking protocol (the shape of Exim's dbfn.c): flock(path.lock) with
 * LOCK_NB and a short backoff until the deadline, then gdbm_open with
 * GDBM_NOLOCK (the flock already serialises us), use, unlock.  A writer's
 * handles stay open for the process's next transactions while no other
 * writer has come in between (the lock file's generation: "Handles kept
 * between transactions", store_gdbm_keep.c); any other handle is closed
 * before the unlock.  GDBM_NOMMAP: a file truncated behind our back (an
 * operator, a full disk) must give a read error, not SIGBUS in a mapped
 * page.
 *
 * Ownership: struct store_gdbm owns the lock fd and, unless it took them
 * from its keep slot (s->kept), the GDBM handle; both are released or
 * handed to the slot by gd_commit()/gd_abort() and nowhere else.  Only
 * the back-end's files (this one, store_gdbm_*.c and their private
 * header store_gdbm_impl.h) include gdbm.h.
 *
 * Files are opened without following symlinks (O_NOFOLLOW, and GDBM gets
 * the descriptor through gdbm_fd_open), and refused, like sshd's
 * StrictModes, when the state file, its lock file or their directory is
 * a symlink or writable by others: anyone who can write there could
 * otherwise make orgw create or overwrite any file its user can write.
 * Files orgw creates get STATE_MODE (fsafe_set_mode()).
 *
 * No fsync: gdbm_close() syncs a database opened for writing and has no
 * flag against it; db_close() (store_gdbm_file.c) sidesteps that (why:
 * see there).
 *
 * A writer killed in mid-transaction must not damage the state, which
 * GDBM alone cannot promise: the state is kept twice, STATE_PATH and
 * STATE_PATH.twin, with a mark in the lock file saying which one is
 * being written (store_gdbm_twin.c says how).
 *
 * This file holds the transaction: store_gdbm_open(), the store_ops
 * (get, put, delete, each, commit, abort) and the back-end table
 * (store_impl.h).  Beside it, sharing store_gdbm_impl.h:
 *   store_gdbm_file.c    the lock file's flock; a database opened,
 *                        closed, read whole, copied, moved aside
 *   store_gdbm_twin.c    the twin and the mark
 *   store_gdbm_keep.c    the handles kept between transactions
 *   store_gdbm_upkeep.c  the scoring-run lock, /healthz's check, repair
 *                        and tidy
 *
 * Built with -DORGW_TRACE_LOCK (bench/run.sh does, in its own object
 * directory), store_close() logs one line per transaction: how long it
 * waited for the flock and how long it held it.  Release builds carry no
 * trace code at all.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gdbm.h>

#include "clock.h"
#include "log.h"
#include "store_gdbm.h"
#include "store_gdbm_impl.h"
#include "store_impl.h"
#include "storehealth.h"

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
