/*
 * genq.h - what an answer cut short cost, looked up after its request
 * has given its worker thread back.
 *
 * An answer whose usage never reached orgw (its client left, upstream
 * broke off after sending some) was billed all the same: OpenRouter's
 * GET /generation?id= says what, but only seconds after the stream's
 * end, and may answer 429 meanwhile.  The request ends at once (its
 * lease given back, its counts written, its budget hold kept) and queues
 * the look-up here; one background thread per worker process asks on a
 * bounded schedule and settles it: the figure (or, when none came, the
 * most the request could cost) is added to the ledger's cost and its
 * hold dropped in one transaction, and the request is counted in its
 * key's use with that spend.
 */
#ifndef ORGW_GENQ_H
#define ORGW_GENQ_H

#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "orgw.h"
#include "teamkey.h"

#define GENQ_MAX 256		/* look-ups waiting in one worker process */

/* One look-up: what to ask, and where its cost goes. */
struct genq_job {
	char id[128];			/* the generation id */
	char model[ORGW_MODEL_MAX];	/* the ledger's model of the request */
	char tag[ORGW_TAG_MAX];		/* the provider it went to, "" */
	const char *api;		/* its API's name (static) */
	char key[TEAMKEY_NAME_MAX + 1];	/* its team key, "" the operator's */
	bool key_budget;		/* the key has a budget */
	char hold[TEAMKEY_LEASE_ID_MAX + 1];	/* its budget hold, "" */
	int64_t prompt_max, out_max;	/* what bounds its cost (state.h) */
};

/* How long a worker's end waits for the look-ups it queued. */
#define GENQ_EXIT_WAIT_MS 10000

/*
 * Queues a copy of j for the background thread (started on first use).
 * False when GENQ_MAX look-ups wait already or the thread could not
 * start: the caller settles j at once (genq_settle, found false), so a
 * full queue costs a conservative estimate, never a lost spend.
 */
bool genq_push(const struct orgw_conf *c, const struct genq_job *j);

/*
 * Adds j's cost: usd when found, else the most it could cost
 * (state_estimate), marked estimated; to its ledger cell (no request:
 * it was counted when it ended), dropping its hold, and to its key's
 * use with the request.  Logs what it added.
 */
void genq_settle(const struct orgw_conf *c, const struct genq_job *j,
		 bool found, double usd);

/*
 * At the worker process's end: waits up to wait_ms for the look-ups
 * queued to settle, then settles the rest as not found (charged the
 * most they could cost), so a worker's exit never loses a spend.
 */
void genq_finish(int64_t wait_ms);

#endif
