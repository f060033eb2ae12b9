/*
 * store_gdbm_keep.c - a process's GDBM handles kept from one transaction
 * to the next, and used only while no other writer has written the
 * files since (the lock file's generation; why and how: below).
 */
#include <sys/stat.h>

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <gdbm.h>

#include "clock.h"
#include "store_gdbm_impl.h"

/* MARK_GEN and the generation after it, a uint64_t in host order. */
#define STAMP_LEN (1 + sizeof(uint64_t))

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
void
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
void
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
void
stale_close(struct store_gdbm *s)
{
	int i;

	for (i = 0; i < 2; i++)
		if (s->stale[i] != NULL)
			(void)db_close(s->stale[i], true);
}

/* After the commit of a writer holding its slot, the files whole: keeps
 * the handles with a new generation, or closes them (false). */
bool
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
void
keep_leave(struct store_gdbm *s)
{
	if (s->slot == NULL)
		return;
	if (s->slot->prim == NULL)
		s->slot->path[0] = '\0';
	pthread_mutex_unlock(&s->slot->mu);
	s->slot = NULL;
}
