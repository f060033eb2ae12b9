/*
 * fetchmany.h - many HTTP GETs at once on one libcurl multi handle (an
 * I/O edge, no policy).  Used by a scoring run (scorerun.c) to fetch
 * every model's endpoints in parallel (docs/design.md section 1).
 *
 * Bounds: at most parallel transfers are in flight; each has its own
 * total timeout, counted from the moment it starts (not from the start
 * of the run, so a long queue never eats a late transfer's time); each
 * body is capped at max_bytes.  One transfer failing never stops the
 * others.
 *
 * Ownership: the caller owns the items and their url strings; a body is
 * malloc'd by fetchmany and borrowed by the done callback until it
 * returns, then freed.  Nothing outlives fetchmany_run().
 */
#ifndef ORGW_FETCHMANY_H
#define ORGW_FETCHMANY_H

#include "orgw.h"

#define FETCHMANY_PARALLEL_MAX 64
#define FETCHMANY_CONNECT_TIMEOUT_MS 5000

struct fetchmany_item {
	const char *url;	/* set by the caller; borrowed */
	/* The outcome, filled in before done() is called: */
	enum orgw_err err;	/* ORGW_OK: a whole response arrived (any
				 * status); ORGW_EUPSTREAM: transport
				 * failure or timeout; ORGW_ETOOBIG: body
				 * over the cap; ORGW_ENOMEM */
	long status;		/* HTTP status, 0 when none arrived */
	const char *body;	/* NUL-terminated; valid only inside done() */
	size_t len;
	char error[128];	/* why, when err != ORGW_OK */
	int64_t ms;		/* from this transfer's start to its end */
};

struct fetchmany_opts {
	const char *key;	/* sent as "Authorization: Bearer <key>";
				 * never logged */
	int parallel;		/* at once, 1..FETCHMANY_PARALLEL_MAX */
	int64_t timeout_ms;	/* per transfer, > 0 */
	size_t max_bytes;	/* per body, > 0 */
	/*
	 * Called once per item as it ends, in completion order, from the
	 * thread that called fetchmany_run(); i is the item's index.  No
	 * transfer makes progress while it runs, so it should be short
	 * (one state transaction is fine).
	 */
	void (*done)(void *arg, size_t i, struct fetchmany_item *it);
	void *arg;
};

/*
 * GETs the url of each of the n items of v.  Every item gets its
 * outcome and exactly one done() call, also when it could not be
 * started.  Returns ORGW_OK, or ORGW_EINVAL for bad options (nothing
 * done), or ORGW_ENOMEM when the multi handle could not be made (every
 * item then fails with that error).  curl_global_init must have run
 * (upstream_global_init).
 */
enum orgw_err fetchmany_run(struct fetchmany_item *v, size_t n,
			    const struct fetchmany_opts *o);

#endif
