/*
 * workertab.c - the host's worker table (STATE_PATH.workers).
 *
 * Why: a request must know whether every worker thread of the host is
 * busy (then a stream is refused with 503, load.h), and /stats shows the
 * requests in flight now and their peak.  The worker processes share no
 * memory of their own, so they share this file, mapped MAP_SHARED: a
 * header and SLOTS_MAX slots, one per live worker process.
 *
 * Invariants and locking:
 * - A slot belongs to the process whose pid and start time (field 22 of
 *   /proc/PID/stat) it holds.  A reader counts a slot only while that
 *   process lives (kill(pid, 0), then the start time against pid reuse),
 *   so a worker killed with SIGKILL leaves no phantom requests in flight:
 *   its slot stops counting the moment it dies.
 * - Claiming a slot (workertab_open) takes flock(LOCK_EX) on the file; the
 *   claimer reclaims dead processes' slots and, finding no live one,
 *   resets the peak ("since the gateway started").  Every other access
 *   is a lock-free atomic on the mapping: busy, side and threads are written
 *   only by the slot's owner (its threads), the peak is an atomic max.
 * - The pid is written last when claiming and cleared first when
 *   leaving, so a reader never counts a half-written slot.
 * - The table has a random id (host), drawn by the first claimer: a
 *   team key's concurrency lease records it with its worker's pid and
 *   start time, and a worker of the same table judges whether that
 *   worker is gone (workertab_owner_gone) the way it judges a slot.
 *
 * Ownership: the mapping and the slot index are process-wide, set by
 * workertab_open() before any thread starts and read-only after; they live
 * until workertab_close().  When the file cannot be used the table is an
 * anonymous private mapping: the same code, counting this process only.
 *
 * The memory budget (workertab_mem_take) is one more count per slot: the
 * bytes its process's requests hold for bodies, answers and their
 * parse.  A killed process's bytes stop counting with its slot.
 */
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "load.h"
#include "log.h"
#include "workertab.h"
#include "fsafe.h"

#define SLOTS_MAX 256
#define SLOTS_MAGIC 0x6f72677775736c31ULL	/* "orgwusl1" */
/* workertab_mem_give() trims the heap after giving back this much or more. */
#define SLOTS_TRIM_BYTES (4u * 1024 * 1024)

struct slot {
	_Atomic int32_t pid;		/* 0: free */
	_Atomic uint32_t threads;	/* taking requests; 0 when draining */
	_Atomic uint32_t busy;		/* threads serving a request */
	_Atomic uint32_t side;		/* of those, side requests (load.h);
					 * was padding, so the layout and the
					 * magic are unchanged */
	_Atomic uint64_t start;		/* start time, clock ticks */
};

/* The host's last refused state write (see workertab_write_note),
 * CLOCK_MONOTONIC ms, 0: none since a write was committed.  Lock-free: a
 * reader that sees the time of one refusal and the cause of the next only
 * names the cause of a refusal a moment later. */
struct writes {
	_Atomic int64_t refused_ms;
	_Atomic int32_t cause;		/* of the last refusal (store.h) */
	uint32_t pad;
};

struct table {
	_Atomic uint64_t magic;
	_Atomic uint32_t peak;		/* most busy at once */
	uint32_t pad0;
	/* In what was padding: a file of an older build reads as "no
	 * refusal", and the slots stay where they were. */
	struct writes writes;
	/* When a writer of the state began to wait for its lock
	 * (workertab_writer_waiting), CLOCK_MONOTONIC ms, 0: none.  Also in
	 * what was padding. */
	_Atomic int64_t writer_wants_ms;
	/* This table's id, drawn when the file is made (also in what was
	 * padding): a team key's concurrency lease names it with its
	 * worker's pid and start time, so a host judges only its own
	 * workers' leases (workertab_owner_gone). */
	_Atomic int64_t host;
	uint32_t pad[4];
	struct slot slot[SLOTS_MAX];
	/* Bytes each slot's process holds for request bodies, answers and
	 * their parse (workertab_mem_take).  After the slots, so an older
	 * build's file is only extended: its slots stay where they were. */
	_Atomic uint64_t held[SLOTS_MAX];
};
_Static_assert(offsetof(struct table, slot) == 64,
	       "the slots stay at offset 64 of STATE_PATH.workers");

static struct table *tab;		/* the mapping */
static struct writes own_writes;	/* without a table (CGI, scorer) */
static _Atomic uint64_t own_held;	/* ... and its held bytes */
static struct slot *mine;		/* this process's slot */
static bool shared;			/* tab is the host's file */

/* The start time of pid from /proc, or 0 when it cannot be read. */
static unsigned long long
start_of(pid_t pid)
{
	char path[64], text[1024];
	unsigned long long st = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	n = read(fd, text, sizeof(text));
	close(fd);
	if (n <= 0 || !load_parse_starttime(text, (size_t)n, &st))
		return 0;
	return st;
}

/*
 * The pid of each slot whose start time this process last found right,
 * and when (clock_mono_ms).  kill(pid, 0) runs for every request (a
 * process killed a moment ago stops counting at once), but the start
 * time, an open and a read of /proc/PID/stat, at most once a second per
 * slot: for every slot and every request it cost more than the rest of
 * orgw's work on a request (bench/notes.md).  A pid reused within that
 * second by another process would count for it until then.  The two
 * arrays are read and written without a lock: a torn pair only makes a
 * thread read /proc once more.
 */
#define START_CHECK_MS 1000
static _Atomic int32_t checked_pid[SLOTS_MAX];
static _Atomic int64_t checked_at[SLOTS_MAX];

/* True when slot i's process still lives (the same process: a pid
 * reused by another one has another start time). */
static bool
slot_alive(size_t i, int32_t pid)
{
	struct slot *s = &tab->slot[i];
	unsigned long long st;
	int64_t now;

	if (pid <= 0)
		return false;
	if (s == mine)
		return true;
	if (kill(pid, 0) == -1 && errno == ESRCH)
		return false;
	now = clock_mono_ms();
	if (atomic_load(&checked_pid[i]) == pid &&
	    now - atomic_load(&checked_at[i]) < START_CHECK_MS)
		return true;
	st = start_of(pid);
	/* Unreadable /proc (hidepid): trust kill(). */
	if (st != 0 && st != atomic_load(&s->start))
		return false;
	atomic_store(&checked_pid[i], pid);
	atomic_store(&checked_at[i], now);
	return true;
}

/* A table id: 48 random bits (a record holds numbers up to 10^15),
 * never 0.  Without randomness, the time and pid: distinct enough
 * between the few tables that share one state. */
static int64_t
host_draw(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint64_t)clock_mono_ms() * 7919u ^ (uint64_t)getpid();
	v &= (1ULL << 48) - 1;
	return v == 0 ? 1 : (int64_t)v;
}

/* Claims a slot under the file lock (tab mapped). */
static void
claim(unsigned threads, unsigned long long start)
{
	struct slot *s, *free_slot = NULL;
	bool any_live = false;
	size_t i;

	if (atomic_load(&tab->magic) != SLOTS_MAGIC) {
		memset(tab, 0, sizeof(*tab));
		atomic_store(&tab->magic, SLOTS_MAGIC);
	}
	if (atomic_load(&tab->host) == 0)
		atomic_store(&tab->host, host_draw());
	for (i = 0; i < SLOTS_MAX; i++) {
		int32_t pid;

		s = &tab->slot[i];
		pid = atomic_load(&s->pid);
		if (pid != 0 && slot_alive(i, pid)) {
			any_live = true;
			continue;
		}
		if (pid != 0) {	/* a dead process's: reclaim it */
			atomic_store(&s->pid, 0);
			atomic_store(&s->busy, 0);
			atomic_store(&s->side, 0);
			atomic_store(&s->threads, 0);
			atomic_store(&tab->held[i], 0);
		}
		if (free_slot == NULL)
			free_slot = s;
	}
	if (!any_live)
		atomic_store(&tab->peak, 0);	/* the gateway (re)starts */
	if (free_slot == NULL)
		return;
	atomic_store(&free_slot->start, start);
	atomic_store(&free_slot->busy, 0);
	atomic_store(&free_slot->side, 0);
	atomic_store(&free_slot->threads, threads);
	atomic_store(&tab->held[free_slot - tab->slot], 0);
	atomic_store(&free_slot->pid, (int32_t)getpid());
	mine = free_slot;
}

/* Maps the host's file and claims a slot: true, or false (logged). */
static bool
open_shared(const char *state_path, unsigned threads)
{
	char file[4200];
	struct stat st;
	void *m;
	int fd, r;
	bool ok = false;

	r = snprintf(file, sizeof(file), "%s.workers", state_path);
	if (r < 0 || (size_t)r >= sizeof(file))
		return false;
	if ((fd = fsafe_open_side(file)) == -1) {
		log_warn("worker table %s: %s; counting this process only",
			 file, log_strerror(errno));
		return false;
	}
	if (flock(fd, LOCK_EX) == -1 || fstat(fd, &st) == -1 ||
	    (st.st_size < (off_t)sizeof(*tab) &&
	     ftruncate(fd, (off_t)sizeof(*tab)) == -1)) {
		log_warn("worker table %s: %s; counting this process only",
			 file, log_strerror(errno));
		goto out;
	}
	m = mmap(NULL, sizeof(*tab), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 0);
	if (m == MAP_FAILED) {
		log_warn("worker table %s: mmap: %s; counting this process "
			 "only", file, log_strerror(errno));
		goto out;
	}
	tab = m;
	claim(threads, start_of(getpid()));
	if (mine == NULL) {
		log_warn("worker table %s: all %d slots taken; counting this "
			 "process only", file, SLOTS_MAX);
		munmap(tab, sizeof(*tab));
		tab = NULL;
		goto out;
	}
	ok = true;
out:
	(void)flock(fd, LOCK_UN);
	close(fd);	/* the mapping stays */
	return ok;
}

enum orgw_err
workertab_open(const char *state_path, unsigned threads)
{
	void *m;

	if (state_path != NULL && open_shared(state_path, threads)) {
		shared = true;
		return ORGW_OK;
	}
	m = mmap(NULL, sizeof(*tab), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return ORGW_ENOMEM;
	tab = m;
	claim(threads, 0);
	return ORGW_OK;
}

void
workertab_enter(struct orgw_load *load)
{
	if (mine != NULL)
		atomic_fetch_add(&mine->busy, 1);
	workertab_peek(load);
}

void
workertab_peek(struct orgw_load *load)
{
	uint32_t busy = 0, cap = 0, side = 0, peak;
	size_t i;

	memset(load, 0, sizeof(*load));
	if (mine == NULL)
		return;
	for (i = 0; i < SLOTS_MAX; i++) {
		struct slot *s = &tab->slot[i];
		int32_t pid = atomic_load(&s->pid);

		if (pid == 0 || !slot_alive(i, pid))
			continue;
		busy += atomic_load(&s->busy);
		cap += atomic_load(&s->threads);
		side += atomic_load(&s->side);
	}
	peak = atomic_load(&tab->peak);
	while (busy > peak &&
	       !atomic_compare_exchange_weak(&tab->peak, &peak, busy))
		;
	load->busy = busy;
	load->capacity = cap;
	load->side = side;
	load->peak = busy > peak ? busy : peak;
	load->shared = shared;
}

unsigned
workertab_side_enter(void)
{
	uint32_t n = 0;
	size_t i;

	if (mine == NULL)
		return 0;
	atomic_fetch_add(&mine->side, 1);
	for (i = 0; i < SLOTS_MAX; i++) {
		struct slot *s = &tab->slot[i];
		int32_t pid = atomic_load(&s->pid);

		if (pid != 0 && slot_alive(i, pid))
			n += atomic_load(&s->side);
	}
	return n;
}

void
workertab_side_leave(void)
{
	if (mine != NULL)
		atomic_fetch_sub(&mine->side, 1);
}

void
workertab_leave(void)
{
	if (mine != NULL)
		atomic_fetch_sub(&mine->busy, 1);
}

void
workertab_drain(void)
{
	if (mine != NULL)
		atomic_store(&mine->threads, 0);
}

void
workertab_close(void)
{
	if (mine != NULL) {
		atomic_store(&mine->pid, 0);
		atomic_store(&mine->threads, 0);
		atomic_store(&mine->busy, 0);
		atomic_store(&mine->side, 0);
	}
	mine = NULL;
	if (tab != NULL)
		munmap(tab, sizeof(*tab));
	tab = NULL;
}

/* This process's held bytes: its slot's, or its own without one. */
static _Atomic uint64_t *
held_of(void)
{
	return mine != NULL ? &tab->held[mine - tab->slot] : &own_held;
}

bool
workertab_mem_take(size_t bytes, size_t budget)
{
	_Atomic uint64_t *own = held_of();
	uint64_t total = 0;
	size_t i;

	if (bytes == 0)
		return true;
	if (bytes > budget)
		return false;
	/* Added first and summed after, so two threads taking at once can
	 * both be refused but never both let in over the budget. */
	atomic_fetch_add(own, bytes);
	if (mine == NULL) {
		total = atomic_load(own);
	} else {
		for (i = 0; i < SLOTS_MAX; i++) {
			int32_t pid = atomic_load(&tab->slot[i].pid);

			if (pid != 0 && slot_alive(i, pid))
				total += atomic_load(&tab->held[i]);
		}
	}
	if (total > budget) {
		atomic_fetch_sub(own, bytes);
		return false;
	}
	return true;
}

void
workertab_mem_give(size_t bytes)
{
	if (bytes == 0)
		return;
	atomic_fetch_sub(held_of(), bytes);
	workertab_mem_trim(bytes);
}

void
workertab_mem_trim(size_t bytes)
{
	/* glibc keeps what a thread's arena freed (a tree of small nodes,
	 * a body that grew by realloc) for that arena's next use: after a
	 * large request a worker would keep hundreds of megabytes for good.
	 * malloc_trim() gives the free pages of every arena back; it costs
	 * a walk of the heap, so only after a large one. */
	if (bytes >= SLOTS_TRIM_BYTES)
		(void)malloc_trim(0);
}

/* The host's record, or this process's when it has no table. */
static struct writes *
writes_of(void)
{
	return tab != NULL ? &tab->writes : &own_writes;
}

void
workertab_write_note(bool refused, int cause)
{
	struct writes *w = writes_of();
	int64_t at;

	if (refused) {
		atomic_store(&w->cause, cause);
		/* Never 0, which means none. */
		at = clock_mono_ms();
		atomic_store(&w->refused_ms, at > 0 ? at : 1);
		return;
	}
	/* A commit clears the refusal.  Every request commits, so the
	 * shared line is only read unless there is one to clear, and the
	 * exchange keeps a refusal noted meanwhile by another worker. */
	at = atomic_load(&w->refused_ms);
	if (at != 0)
		(void)atomic_compare_exchange_strong(&w->refused_ms, &at, 0);
}

bool
workertab_write_refused(int64_t within_ms, int *cause, int64_t *ago_ms)
{
	struct writes *w = writes_of();
	int64_t now = clock_mono_ms(), at = atomic_load(&w->refused_ms);

	if (at == 0 || now - at > within_ms)
		return false;
	*cause = atomic_load(&w->cause);
	*ago_ms = now - at;
	return true;
}

void
workertab_writer_waiting(bool waiting)
{
	int64_t at;

	if (tab == NULL)
		return;
	if (!waiting) {
		atomic_store(&tab->writer_wants_ms, 0);
		return;
	}
	at = atomic_load(&tab->writer_wants_ms);
	if (at == 0) {
		int64_t now = clock_mono_ms();

		(void)atomic_compare_exchange_strong(&tab->writer_wants_ms, &at,
						     now > 0 ? now : 1);
	}
}

bool
workertab_writer_pending(int64_t within_ms)
{
	int64_t at;

	if (tab == NULL)
		return false;
	at = atomic_load(&tab->writer_wants_ms);
	return at != 0 && clock_mono_ms() - at < within_ms;
}

bool
workertab_self(int64_t *host, int64_t *pid, int64_t *start)
{
	if (!shared || mine == NULL)
		return false;
	*host = atomic_load(&tab->host);
	*pid = atomic_load(&mine->pid);
	*start = (int64_t)atomic_load(&mine->start);
	return *host != 0 && *pid > 0;
}

bool
workertab_owner_gone(int64_t host, int64_t pid, int64_t start)
{
	unsigned long long st;

	/* Another host's worker (or no table here): its host judges it,
	 * or its lease's time ends it. */
	if (!shared || host == 0 || host != atomic_load(&tab->host) ||
	    pid <= 0 || pid > INT32_MAX)
		return false;
	if (kill((pid_t)pid, 0) == -1 && errno == ESRCH)
		return true;
	/* The pid lives: gone only when it is another process now.  An
	 * unreadable /proc (hidepid) trusts kill(), as slot_alive does. */
	st = start_of((pid_t)pid);
	return st != 0 && start != 0 && st != (unsigned long long)start;
}
