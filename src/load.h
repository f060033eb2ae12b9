/*
 * load.h - pure rules about a host's worker threads: when a request is
 * refused as overload, when a worker recycles itself, and the parsing of
 * /proc/PID/stat that tells a live worker from a reused pid.  No I/O:
 * workertab.c (the shared worker table) and cgi-bin/orgw.c feed it numbers.
 */
#ifndef ORGW_LOAD_H
#define ORGW_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A worker never exits sooner than this after its start: multiwatch
 * counts a child that dies within 10 s as a crash and gives its slot up
 * after three (deploy/README-workers.md). */
#define LOAD_MIN_AGE_SECONDS 10

/* How long a generation that finds every thread of the host busy waits
 * for one to come free before it is refused: the threads that have
 * answered and only commit their counts (state_finish) come free within
 * milliseconds, and under a burst of short requests they are most of the
 * busy ones. */
#define LOAD_WAIT_MS 250

/* Seconds a refused request is told to wait (Retry-After). */
#define LOAD_RETRY_AFTER_SECONDS 1

/* A write to the client of a side request (load_side_refused) that makes
 * no progress this long ends it, when CLIENT_SEND_TIMEOUT_MS is longer:
 * its answer is ready in full, so a reader takes it at once, and a client
 * that does not read holds the thread for this long at most. */
#define LOAD_SIDE_SEND_TIMEOUT_MS 5000

/* The host's load as one request sees it when it starts. */
struct orgw_load {
	unsigned busy;		/* threads of the host serving, this one too */
	unsigned capacity;	/* threads of the host taking requests */
	unsigned peak;		/* most busy at once since the gateway started */
	unsigned side;		/* side requests of the host (load_side_max) */
	bool shared;		/* counted over the host (false: this process) */
};

/* True when a long request (a chat completion) must be refused: every
 * thread of the host, the asking one included, is busy, so serving it
 * would leave none for the next request.  Side requests over their share
 * (load_side_max) do not count: each holds its thread only to answer 503,
 * and a burst of them (clients that never read, coming back together)
 * must not turn generations away.  capacity 0 (unknown) never refuses. */
bool load_saturated(const struct orgw_load *l);

/* The threads of a host with capacity threads that side requests (every
 * path but the generation APIs and /healthz: /metrics, /stats, /status,
 * /v1/models, /__cron) may hold at once: a quarter, at least one. */
unsigned load_side_max(unsigned capacity);

/*
 * True when a side request must be refused (503, Retry-After): with it,
 * side requests would hold more than load_side_max() threads, or it takes
 * the host's last thread while another side request holds one.  side is
 * the host's side requests, this one included.  Their answers can be
 * megabytes that a client may never read, so without a bound a few such
 * clients hold every thread; the last one stays free for /healthz, yet a
 * single /stats or /metrics may still use it, so that a host whose other
 * threads all stream can still be watched.  capacity 0 never refuses.
 */
bool load_side_refused(const struct orgw_load *l, unsigned side);

/* Requests in flight other than the asking one. */
unsigned load_in_flight(const struct orgw_load *l);

/*
 * WORKER_MAX_AGE_SECONDS for one process: max_age_s less up to a quarter
 * of it, chosen by seed (the pid, say), so workers started together do
 * not all recycle together.  Never below LOAD_MIN_AGE_SECONDS.
 */
int64_t load_age_limit_s(int64_t max_age_s, uint64_t seed);

/* True when a worker should stop accepting and exit once its requests
 * end: after max_requests requests or age_limit_s seconds, but never
 * before LOAD_MIN_AGE_SECONDS. */
bool load_recycle_due(int64_t requests, int64_t max_requests, int64_t age_s,
		      int64_t age_limit_s);

/*
 * The start time (field 22, clock ticks since boot) from the text of
 * /proc/PID/stat (len bytes, need not be NUL-terminated).  The command
 * name (field 2) is in parentheses and may hold spaces and ')', so the
 * fields are counted from the last ')'.  true and *out, or false.
 */
bool load_parse_starttime(const char *stat, size_t len,
			  unsigned long long *out);

#endif
