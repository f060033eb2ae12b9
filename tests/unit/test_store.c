/*
 * test_store.c - store transactions (store.h) and the routing built on
 * them (state.c), on real GDBM files in a temporary directory.
 *
 * What must hold: what one transaction writes the next one reads, and a
 * route always follows the lock another process wrote last.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <gdbm.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "t.h"
#include "conf.h"
#include "record.h"
#include "state.h"
#include "fsafe.h"
#include "store.h"
#include "store_gdbm.h"

#define M "deepseek/deepseek-v3.2"

static char dir[] = "/tmp/orgw-test-store.XXXXXX";
static char path[256];

/* One write transaction: put (how 0) or delete (how 1) key. */
static enum orgw_err
txn(const char *key, const char *val, int how)
{
	struct store *s;
	enum orgw_err err;

	if ((err = store_gdbm_open(&s, path, true, 1000)) != ORGW_OK)
		return err;
	err = how == 0 ? store_put(s, key, val) : store_del(s, key);
	if (store_close(s) != ORGW_OK)
		err = ORGW_EIO;
	return err;
}

/* Reads key in a reader transaction: malloc'd value or NULL. */
static char *
get(const char *key)
{
	struct store *s;
	char *v = NULL;

	if (store_gdbm_open(&s, path, false, 1000) != ORGW_OK)
		return NULL;
	if (store_get(s, key, &v) != ORGW_OK) {
		free(v);
		v = NULL;
	}
	if (store_close(s) != ORGW_OK) {
		free(v);
		v = NULL;
	}
	return v;
}

static bool
has(const char *key, const char *want)
{
	char *v = get(key);
	bool ok = want == NULL ? v == NULL : v != NULL && strcmp(v, want) == 0;

	free(v);
	return ok;
}

static void
test_store(void)
{
	char lp[300];

	T_ASSERT("a reader of a missing file sees an empty store",
		 has("A", NULL));
	T_ASSERT("put ok", txn("A", "1", 0) == ORGW_OK);
	T_ASSERT("the next transaction reads it", has("A", "1"));
	T_ASSERT("put again ok", txn("A", "2", 0) == ORGW_OK);
	T_ASSERT("a put replaces", has("A", "2"));
	T_ASSERT("delete ok", txn("A", NULL, 1) == ORGW_OK);
	T_ASSERT("a delete removes", has("A", NULL));
	T_ASSERT("deleting an absent key is ok", txn("A", NULL, 1) == ORGW_OK);
	T_ASSERT("repair of a sound file ok",
		 store_gdbm_repair(path, 1000) == ORGW_OK);

	/* A lock file removed behind our back: the next transaction
	 * creates a new one and works. */
	snprintf(lp, sizeof(lp), "%s.lock", path);
	T_ASSERT("unlink the lock file", unlink(lp) == 0);
	T_ASSERT("put after the lock file went", txn("X", "1", 0) == ORGW_OK);
	T_ASSERT("...and it reads back", has("X", "1"));
}

/* Writes BEST_PROVIDER:M for tag, used now, as another worker would. */
static void
write_lock(const char *tag, int how)
{
	struct rec_lock l;
	char *v;

	memset(&l, 0, sizeof(l));
	snprintf(l.tag, sizeof(l.tag), "%s", tag);
	snprintf(l.provider_name, sizeof(l.provider_name), "%s", tag);
	l.locked_at = l.last_used = (int64_t)time(NULL);
	v = record_lock_encode(&l);
	T_ASSERT("lock encoded", v != NULL);
	if (v != NULL)
		T_ASSERT("lock written", txn("BEST_PROVIDER:" M, v, how) ==
						 ORGW_OK);
	record_free(v);
}

static void
test_route(void)
{
	struct orgw_conf c;
	struct state_route r;
	int64_t now;
	int i;

	T_ASSERT("conf_init", conf_init(&c) == ORGW_OK);
	free(c.state_path);
	c.state_path = strdup(path);
	/* now held fixed: a route taken twice in the same second. */
	write_lock("alpha", 0);
	now = (int64_t)time(NULL);
	T_ASSERT("route 1 ok", state_route(&c, M, false, now, &r, NULL) == ORGW_OK);
	T_ASSERT("route 1: the lock", r.kind == ROUTE_LOCKED &&
					      strcmp(r.tag, "alpha") == 0);
	for (i = 0; i < 3; i++)
		T_ASSERT("repeat: the same lock",
			 state_route(&c, M, false, now, &r, NULL) == ORGW_OK &&
				 r.kind == ROUTE_LOCKED &&
				 strcmp(r.tag, "alpha") == 0);

	/* Another process re-locks (a breaker trip does this): the next
	 * request, in the same second, must follow at once. */
	write_lock("beta", 0);
	T_ASSERT("after another worker re-locks: the new lock at once",
		 state_route(&c, M, false, now, &r, NULL) == ORGW_OK &&
			 r.kind == ROUTE_LOCKED && strcmp(r.tag, "beta") == 0);

	/* And again, with no other change. */
	write_lock("gamma", 0);
	T_ASSERT("a third lock, same second: followed too",
		 state_route(&c, M, false, now, &r, NULL) == ORGW_OK &&
			 strcmp(r.tag, "gamma") == 0);
	T_ASSERT("...and the next second",
		 state_route(&c, M, false, now + 1, &r, NULL) == ORGW_OK &&
			 strcmp(r.tag, "gamma") == 0);

	/* A client-chosen provider routes by the client. */
	T_ASSERT("client provider",
		 state_route(&c, M, true, now + 1, &r, NULL) == ORGW_OK &&
			 r.kind == ROUTE_CLIENT);
	T_ASSERT("client provider again",
		 state_route(&c, M, true, now + 1, &r, NULL) == ORGW_OK &&
			 r.kind == ROUTE_CLIENT);
	T_ASSERT("and the pinned route is still the lock",
		 state_route(&c, M, false, now + 1, &r, NULL) == ORGW_OK &&
			 r.kind == ROUTE_LOCKED && strcmp(r.tag, "gamma") == 0);
	conf_free(&c);
}

/* Mode of file, or -1. */
static int
mode_of(const char *file)
{
	struct stat st;

	return lstat(file, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

/*
 * Symlinks at STATE_PATH and STATE_PATH.lock are not
 * followed, a state file or directory writable by others is refused, and
 * files orgw creates get STATE_MODE whatever the umask.
 */
static void
test_strict(void)
{
	char sub[100], lp[300], victim[100], other[100];
	mode_t old = umask(077);
	int fd;

	snprintf(sub, sizeof(sub), "%s/strict", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	T_ASSERT("mkdir", mkdir(sub, 0700) == 0);
	snprintf(path, sizeof(path), "%.100s/state.gdbm", sub);
	snprintf(lp, sizeof(lp), "%s.lock", path);

	/* STATE_MODE 0660 under umask 077. */
	fsafe_set_mode(0660);
	T_ASSERT("a write creates both files", txn("A", "1", 0) == ORGW_OK);
	T_ASSERT("state file created with STATE_MODE 0660 (umask 077)",
		 mode_of(path) == 0660);
	T_ASSERT("lock file created with STATE_MODE 0660",
		 mode_of(lp) == 0660);
	fsafe_set_mode(0600);

	/* A symlink as the lock file, to a file orgw may write. */
	fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	T_ASSERT("victim made", fd != -1 && write(fd, "precious", 8) == 8 &&
					close(fd) == 0);
	T_ASSERT("lock file replaced by a symlink",
		 unlink(lp) == 0 && symlink(victim, lp) == 0);
	T_ASSERT("a symlinked lock file: write refused",
		 txn("A", "2", 0) == ORGW_EIO);
	T_ASSERT("a symlinked lock file: read refused", !has("A", "1"));
	fd = open(victim, O_RDONLY);
	{
		char b[16] = {0};
		T_ASSERT("the symlink's target is untouched",
			 fd != -1 && read(fd, b, sizeof(b)) == 8 &&
				 memcmp(b, "precious", 8) == 0);
	}
	if (fd != -1)
		close(fd);
	T_ASSERT("lock file back", unlink(lp) == 0);
	T_ASSERT("works again", has("A", "1"));

	/* A symlink as the state file (dangling: O_CREAT would make it). */
	snprintf(other, sizeof(other), "%s/created-by-orgw", dir);
	T_ASSERT("state file replaced by a dangling symlink",
		 unlink(path) == 0 && symlink(other, path) == 0);
	T_ASSERT("a symlinked state file: write refused",
		 txn("A", "3", 0) == ORGW_EIO);
	T_ASSERT("...and repair does not create the target either",
		 store_gdbm_repair(path, 1000) != ORGW_OK &&
			 access(other, F_OK) == -1);
	T_ASSERT("...nor move the link aside", mode_of(path) != -1);
	T_ASSERT("state file back", unlink(path) == 0);

	/* World-writable state file and directory. */
	T_ASSERT("a fresh file", txn("A", "4", 0) == ORGW_OK);
	T_ASSERT("chmod 0666", chmod(path, 0666) == 0);
	T_ASSERT("a state file writable by others: refused",
		 txn("A", "5", 0) == ORGW_EIO && !has("A", "4"));
	T_ASSERT("chmod back", chmod(path, 0600) == 0);
	T_ASSERT("chmod lock 0666", chmod(lp, 0666) == 0);
	T_ASSERT("a lock file writable by others: refused",
		 txn("A", "5", 0) == ORGW_EIO);
	T_ASSERT("chmod lock back", chmod(lp, 0600) == 0);
	T_ASSERT("chmod dir 0777", chmod(sub, 0777) == 0);
	T_ASSERT("a state directory writable by others: refused",
		 txn("A", "5", 0) == ORGW_EIO && !has("A", "4"));
	T_ASSERT("chmod dir back", chmod(sub, 0700) == 0);
	T_ASSERT("works again after", has("A", "4"));
	umask(old);
}

/* A second thread of this process asks for the write lock the first
 * holds: flock locks belong to the open file description, and every
 * transaction opens its own, so threads exclude each other as processes
 * do. */
static void *
second_writer(void *arg)
{
	enum orgw_err *got = arg;
	struct store *s = NULL;

	*got = store_gdbm_open(&s, path, true, 100);
	if (*got == ORGW_OK)
		(void)store_close(s);
	return NULL;
}

static void
test_threads(void)
{
	struct store *s = NULL;
	enum orgw_err got = ORGW_OK, first;
	pthread_t t;

	first = store_gdbm_open(&s, path, true, 1000);
	T_ASSERT("threads: first writer has the lock", first == ORGW_OK);
	if (first != ORGW_OK)
		return;
	if (pthread_create(&t, NULL, second_writer, &got) != 0) {
		T_ASSERT("threads: pthread_create", false);
		(void)store_close(s);
		return;
	}
	(void)pthread_join(t, NULL);
	T_ASSERT("threads: a second thread cannot take the write lock too",
		 got == ORGW_EBUSY);
	(void)store_close(s);
	got = ORGW_EIO;
	if (pthread_create(&t, NULL, second_writer, &got) == 0)
		(void)pthread_join(t, NULL);
	T_ASSERT("threads: it can once the first closed", got == ORGW_OK);
}

/* The lock file's mark (src/store_gdbm_twin.c): its first byte, or 0. */
static char
mark_of(void)
{
	char lp[300], m = 0;
	int fd;

	snprintf(lp, sizeof(lp), "%s.lock", path);
	if ((fd = open(lp, O_RDONLY)) == -1)
		return 0;
	if (read(fd, &m, 1) != 1)
		m = 0;
	close(fd);
	return m;
}

/* The mark of two equal files: plain, or with a generation after it. */
static bool
mark_clean(void)
{
	char m = mark_of();

	return m == 'c' || m == 'g';
}

/* A writer that stores key=val and dies before its commit, as a worker
 * killed with SIGKILL in mid-transaction: the primary has the write,
 * the flock dies with the process. */
static bool
die_writing(const char *key, const char *val)
{
	struct store *s;
	pid_t pid;
	int st;

	if ((pid = fork()) == -1)
		return false;
	if (pid == 0) {
		if (store_gdbm_open(&s, path, true, 1000) == ORGW_OK &&
		    store_put(s, key, val) == ORGW_OK)
			_exit(0);	/* no store_close: no twin replay */
		_exit(1);
	}
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

/* The twin: a transaction a writer died in is undone whole. */
static void
test_twin(void)
{
	char twin[300];
	struct stat st;

	snprintf(twin, sizeof(twin), "%s.twin", path);
	T_ASSERT("twin: a first write", txn("K", "old", 0) == ORGW_OK &&
					  txn("L", "1", 0) == ORGW_OK);
	T_ASSERT("twin: made beside the state", stat(twin, &st) == 0);
	T_ASSERT("twin: the mark is clean at rest", mark_clean());
	T_ASSERT("twin: a writer dies after storing K=new",
		 die_writing("K", "new"));
	T_ASSERT("twin: it left the mark on the primary", mark_of() == 'p');
	T_ASSERT("twin: a reader reads the twin: K is still old",
		 has("K", "old"));
	T_ASSERT("twin: the next writer", txn("M", "1", 0) == ORGW_OK);
	T_ASSERT("twin: ...restored the primary: K old", has("K", "old"));
	T_ASSERT("twin: ...and wrote its own key", has("M", "1"));
	T_ASSERT("twin: clean again", mark_clean());
	T_ASSERT("twin: a delete dies half-way", die_writing("L", "2"));
	T_ASSERT("twin: a delete after it", txn("L", NULL, 1) == ORGW_OK);
	T_ASSERT("twin: L gone", has("L", NULL));
	/* The twin must follow the delete: undo the primary from it. */
	T_ASSERT("twin: a third death", die_writing("K", "newer"));
	T_ASSERT("twin: after it L is still gone (the twin had the delete)",
		 has("L", NULL) && has("K", "old"));
	T_ASSERT("twin: a write settles it", txn("O", "1", 0) == ORGW_OK &&
						 has("K", "old"));
	T_ASSERT("twin: remove the twin", unlink(twin) == 0);
	T_ASSERT("twin: a write without a twin", txn("N", "1", 0) == ORGW_OK);
	T_ASSERT("twin: remade", stat(twin, &st) == 0);
	T_ASSERT("twin: a death after the twin was remade",
		 die_writing("N", "2"));
	T_ASSERT("twin: everything from before it is there",
		 has("N", "1") && has("K", "old") && has("M", "1"));
	T_ASSERT("twin: settled by a repair too",
		 store_gdbm_repair(path, 1000) == ORGW_OK && mark_clean() &&
			 has("N", "1"));
}

/* file is open in this process (a descriptor under /proc/self/fd). */
static bool
open_here(const char *file)
{
	char link[64], to[512];
	ssize_t n;
	int fd;

	for (fd = 0; fd < 1024; fd++) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		if ((n = readlink(link, to, sizeof(to) - 1)) <= 0)
			continue;
		to[n] = '\0';
		if (strcmp(to, file) == 0)
			return true;
	}
	return false;
}

/* Another process writes key=val as a writer of this release does. */
static bool
other_writes(const char *key, const char *val)
{
	pid_t pid;
	int st;

	if ((pid = fork()) == -1)
		return false;
	if (pid == 0)
		_exit(txn(key, val, 0) == ORGW_OK ? 0 : 1);
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

/* key=val straight into file with GDBM, no lock file touched. */
static bool
raw_store(const char *file, const char *key, const char *val)
{
	GDBM_FILE dbf = gdbm_open(file, 0, GDBM_WRITER | GDBM_NOLOCK, 0600,
				  NULL);
	datum k, v;
	bool ok;

	if (dbf == NULL)
		return false;
	k.dptr = (char *)(uintptr_t)key;
	k.dsize = (int)strlen(key);
	v.dptr = (char *)(uintptr_t)val;
	v.dsize = (int)strlen(val);
	ok = gdbm_store(dbf, k, v, GDBM_REPLACE) == 0;
	return gdbm_close(dbf) == 0 && ok;
}

/* The first byte of the lock file set to m, the rest kept. */
static bool
mark_put(char m)
{
	char lp[300];
	int fd;
	bool ok;

	snprintf(lp, sizeof(lp), "%s.lock", path);
	if ((fd = open(lp, O_WRONLY)) == -1)
		return false;
	ok = pwrite(fd, &m, 1, 0) == 1;
	return close(fd) == 0 && ok;
}

/* Byte for byte equal files. */
static bool
same_bytes(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	bool same = fa != NULL && fb != NULL;
	int ca, cb;

	while (same) {
		ca = getc(fa);
		cb = getc(fb);
		same = ca == cb;
		if (ca == EOF)
			break;
	}
	if (fa != NULL)
		fclose(fa);
	if (fb != NULL)
		fclose(fb);
	return same;
}

/*
 * Handles kept between transactions (src/store_gdbm_keep.c): a process keeps
 * the files open after a write, and still reads what any other writer
 * wrote since, whatever kind of writer it was.
 */
static void
test_kept(void)
{
	char twin[300], val[200], k[16];
	bool ok = true;
	int i;

	snprintf(twin, sizeof(twin), "%s.twin", path);
	T_ASSERT("kept: a first write", txn("K", "1", 0) == ORGW_OK);
	T_ASSERT("kept: the state stays open after it", open_here(path));
	T_ASSERT("kept: the twin too", open_here(twin));
	T_ASSERT("kept: the mark carries a generation", mark_of() == 'g');
	T_ASSERT("kept: a reader reads the write", has("K", "1"));
	T_ASSERT("kept: another process writes", other_writes("K", "2"));
	T_ASSERT("kept: ...a reader here reads it", has("K", "2"));
	T_ASSERT("kept: ...and a writer here builds on it",
		 txn("L", "1", 0) == ORGW_OK && has("K", "2") && has("L", "1"));
	T_ASSERT("kept: the state still open", open_here(path));

	/* A writer of the release before: both files written, the plain
	 * clean mark left, the generation bytes as they were. */
	T_ASSERT("kept: an earlier release writes both files",
		 raw_store(path, "K", "old-release") &&
			 raw_store(twin, "K", "old-release") && mark_put('c'));
	T_ASSERT("kept: ...a reader here reads it", has("K", "old-release"));
	T_ASSERT("kept: ...a writer here builds on it",
		 txn("M", "1", 0) == ORGW_OK && has("K", "old-release") &&
			 has("M", "1"));

	/* gdbmtool on the primary alone, the lock file untouched: told by
	 * the file's times and size (a later clock tick than the commit:
	 * the file system's time stamps are that coarse). */
	usleep(30000);
	T_ASSERT("kept: a tool writes the primary alone",
		 raw_store(path, "K", "tool"));
	T_ASSERT("kept: ...a reader here reads it", has("K", "tool"));
	T_ASSERT("kept: ...the next writer copies it to the twin",
		 txn("N", "1", 0) == ORGW_OK && same_bytes(path, twin));

	/* A writer that dies here leaves the primary half written. */
	T_ASSERT("kept: a writer dies", die_writing("K", "half"));
	T_ASSERT("kept: ...a reader here reads the twin", has("K", "tool"));
	T_ASSERT("kept: ...the next writer here undoes it",
		 txn("O", "1", 0) == ORGW_OK && has("K", "tool") &&
			 has("O", "1"));

	/* Many writes through kept handles keep the files equal. */
	for (i = 0; i < 300 && ok; i++) {
		snprintf(k, sizeof(k), "k%d", i % 37);
		snprintf(val, sizeof(val), "%0*d", 1 + (i * 7) % 150, i);
		ok = txn(k, i % 5 == 4 ? NULL : val, i % 5 == 4) == ORGW_OK;
	}
	T_ASSERT("kept: 300 writes and deletes", ok);
	T_ASSERT("kept: ...the twin is the primary byte for byte",
		 same_bytes(path, twin));
	/* k17's last write: i = 276, width 1 + 276 * 7 % 150 = 133. */
	snprintf(val, sizeof(val), "%0*d", 133, 276);
	T_ASSERT("kept: ...and the last of them reads back", has("k17", val));
	T_ASSERT("kept: ...a deleted one stays deleted", has("k3", NULL));
}

/* 64 random bytes over the start of file, the size kept. */
static bool
scribble_header(const char *file)
{
	unsigned char junk[64];
	size_t i;
	int fd;
	bool ok;

	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)t_rand();
	if ((fd = open(file, O_WRONLY)) == -1)
		return false;
	ok = pwrite(fd, junk, sizeof(junk), 0) == (ssize_t)sizeof(junk);
	return close(fd) == 0 && ok;
}

/* K0 .. K19, each "v", are all there (readers read the twin while the
 * mark is on the primary, so this checks the twin after a death). */
static bool
all_keys(void)
{
	char k[16];
	int i;

	for (i = 0; i < 20; i++) {
		snprintf(k, sizeof(k), "K%d", i);
		if (!has(k, "v"))
			return false;
	}
	return true;
}

/* The twin and the primary never part for good: a restore that cannot
 * be made holds the writers back, a twin that does not match is remade,
 * and a damaged primary is replaced by a whole twin, not by nothing. */
static void
test_twin_apart(void)
{
	char twin[300], tmp[300], aside[300], k[16];
	struct timespec times[2];
	struct stat st;
	bool ok = true;
	int i;

	t_seed(26);
	snprintf(twin, sizeof(twin), "%s.twin", path);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	snprintf(aside, sizeof(aside), "%s.corrupt", path);
	for (i = 0; i < 20; i++) {
		snprintf(k, sizeof(k), "K%d", i);
		ok = ok && txn(k, "v", 0) == ORGW_OK;
	}
	T_ASSERT("apart: twenty keys written", ok && all_keys());

	/* The restore after a death cannot be written: a directory where
	 * the copy makes its temporary file (as a full disk, a quota or an
	 * immutable directory would refuse it). */
	T_ASSERT("apart: a writer dies", die_writing("K0", "half"));
	T_ASSERT("apart: the copy's temporary file cannot be made",
		 mkdir(tmp, 0700) == 0);
	T_ASSERT("apart: a write that cannot restore first is refused",
		 txn("W", "1", 0) == ORGW_EIO);
	T_ASSERT("apart: ...the mark still names the twin", mark_of() == 'p');
	T_ASSERT("apart: ...which readers read", has("K0", "v") && has("W", NULL));
	T_ASSERT("apart: a repair refuses too (the twin is the better copy)",
		 store_gdbm_repair(path, 1000) == ORGW_EIO && mark_of() == 'p');
	T_ASSERT("apart: the copy can be made again", rmdir(tmp) == 0);
	T_ASSERT("apart: the next write restores, then writes",
		 txn("W", "1", 0) == ORGW_OK && mark_clean() &&
			 has("K0", "v") && has("W", "1"));

	/* A twin cut to nothing (": > STATE_PATH.twin"). */
	T_ASSERT("apart: the twin truncated", truncate(twin, 0) == 0);
	T_ASSERT("apart: a write after it", txn("X", "1", 0) == ORGW_OK);
	T_ASSERT("apart: a writer dies after it", die_writing("X", "2"));
	T_ASSERT("apart: the twin was remade whole (a reader reads it now)",
		 mark_of() == 'p' && all_keys() && has("X", "1"));
	T_ASSERT("apart: a write settles it",
		 txn("Y", "1", 0) == ORGW_OK && all_keys() && has("X", "1"));

	/* 64 random bytes over the primary's header. */
	T_ASSERT("apart: the primary's header overwritten",
		 scribble_header(path));
	T_ASSERT("apart: the next write restores the twin first",
		 txn("Z", "1", 0) == ORGW_OK);
	T_ASSERT("apart: ...every key kept", all_keys() && has("Y", "1") &&
						  has("Z", "1"));
	T_ASSERT("apart: ...the damaged file kept aside",
		 stat(aside, &st) == 0);

	/* The same, with the primary's time set back so that nothing
	 * tells the writer before GDBM refuses the file: the repair the
	 * refusal calls for takes the twin too. */
	T_ASSERT("apart: the header overwritten again", scribble_header(path));
	T_ASSERT("apart: its time set to the twin's",
		 stat(twin, &st) == 0 &&
			 (times[0] = st.st_atim, times[1] = st.st_mtim,
			  utimensat(AT_FDCWD, path, times, 0) == 0));
	T_ASSERT("apart: the write fails on the damaged file",
		 txn("Q", "1", 0) == ORGW_EIO);
	T_ASSERT("apart: the repair restores the twin",
		 store_gdbm_repair(path, 1000) == ORGW_OK && all_keys() &&
			 has("Z", "1"));
}

/* A store that refuses writes is not healthy (store_check, /healthz),
 * and is again once a write went in. */
static void
test_refused_health(void)
{
	struct orgw_conf c;
	char tmp[300], why[512];

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	T_ASSERT("refused: conf_init", conf_init(&c) == ORGW_OK);
	free(c.state_path);
	c.state_path = strdup(path);
	T_ASSERT("refused: a write", txn("R", "1", 0) == ORGW_OK);
	T_ASSERT("refused: healthy after it",
		 store_check(&c, why, sizeof(why)) == ORGW_OK);
	T_ASSERT("refused: a writer dies, the restore cannot be made",
		 die_writing("R", "2") && mkdir(tmp, 0700) == 0);
	T_ASSERT("refused: the next write is refused",
		 txn("S", "1", 0) == ORGW_EIO);
	why[0] = '\0';
	T_ASSERT("refused: the check says so",
		 store_check(&c, why, sizeof(why)) == ORGW_EIO);
	T_ASSERT("refused: ...naming the cause",
		 strstr(why, "writes refused") != NULL &&
			 strstr(why, "Is a directory") != NULL);
	T_ASSERT("refused: reading still works", has("R", "1"));
	T_ASSERT("refused: ...and does not make it healthy",
		 store_check(&c, why, sizeof(why)) == ORGW_EIO);
	T_ASSERT("refused: the restore can be made again", rmdir(tmp) == 0);
	T_ASSERT("refused: a write goes in", txn("S", "1", 0) == ORGW_OK);
	T_ASSERT("refused: healthy again",
		 store_check(&c, why, sizeof(why)) == ORGW_OK);
	conf_free(&c);
}

/* An unpinned answer whose "provider" names a candidate is counted in
 * the ledger under that candidate's tag (the tag lives in the candidates
 * read inside the transaction: this ran on freed memory once, which
 * ASan reports). */
static void
test_finish_unpinned(void)
{
	struct orgw_conf c;
	struct rec_cands cands;
	struct rec_cand v[2];
	struct stats_delta d;
	char *text, *m;

	memset(&cands, 0, sizeof(cands));
	memset(v, 0, sizeof(v));
	snprintf(v[0].tag, sizeof(v[0].tag), "alpha");
	snprintf(v[0].provider_name, sizeof(v[0].provider_name), "Alpha");
	snprintf(v[1].tag, sizeof(v[1].tag), "beta");
	snprintf(v[1].provider_name, sizeof(v[1].provider_name), "Beta");
	cands.n = 2;
	cands.v = v;
	cands.scored_at = cands.attempted_at = (int64_t)time(NULL);
	text = record_cands_encode(&cands);
	T_ASSERT("finish: candidates written",
		 text != NULL &&
			 txn("PROVIDER_CANDIDATE:" M, text, 0) == ORGW_OK);
	record_free(text);
	T_ASSERT("finish: conf_init", conf_init(&c) == ORGW_OK);
	free(c.state_path);
	c.state_path = strdup(path);
	memset(&d, 0, sizeof(d));
	d.requests = d.ok = 1;
	d.usage = true;
	d.served = "Beta";
	d.prompt_tokens = 100;
	d.completion_tokens = 10;
	d.cost_usd = 0.001;
	d.now = (int64_t)time(NULL);
	d.ttfb_ms = d.total_ms = 5;
	T_ASSERT("finish: counted", state_finish(&c, M, &d, NULL) == ORGW_OK);
	{
		char day[11], k[256];

		record_day(d.now, day);
		snprintf(k, sizeof(k), "LEDGER:" M ":%s:-:beta", day);
		m = get(k);
		T_ASSERT("finish: the ledger counts it under beta",
			 m != NULL && strstr(m, "\"r\":1") != NULL);
		free(m);
		snprintf(k, sizeof(k), "LEDGER:" M ":%s:-:alpha", day);
		m = get(k);
		T_ASSERT("finish: ...and under no other provider",
			 m == NULL);
		free(m);
		snprintf(k, sizeof(k), "LEDGER:" M ":%s:-:unknown", day);
		m = get(k);
		T_ASSERT("finish: ...not even unknown", m == NULL);
		T_ASSERT("finish: no old STATS or METRICS record is written",
			 get("STATS:" M) == NULL && get("METRICS:" M) == NULL);
	}
	free(m);
	conf_free(&c);
}

int
main(void)
{
	char cmd[300];

	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/state.gdbm", dir);
	test_store();
	snprintf(path, sizeof(path), "%s/state2.gdbm", dir);
	test_route();
	test_strict();
	test_threads();
	snprintf(path, sizeof(path), "%s/state3.gdbm", dir);
	test_twin();
	snprintf(path, sizeof(path), "%s/state4.gdbm", dir);
	test_finish_unpinned();
	snprintf(path, sizeof(path), "%s/state5.gdbm", dir);
	test_twin_apart();
	snprintf(path, sizeof(path), "%s/state6.gdbm", dir);
	test_refused_health();
	snprintf(path, sizeof(path), "%s/state7.gdbm", dir);
	test_kept();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return T_REPORT();
}
