/*
 * state_impl.h - what the state modules (state.c, state_route.c,
 * state_admit.c, state_fail.c, state_batch.c, state_ops.c) share, for
 * them only: the keys, the records every transaction reads and writes,
 * the lock's moves.  Each function works in a transaction s already
 * open (state_txn); state.h is the modules' interface.
 *
 * state.h is not included here: state.c includes this file, and the
 * include graph (tests/check-layers.sh) counts state.c and state.h as
 * one module.  Nor is store.h: only the state's .c files include it.
 */
#ifndef ORGW_STATE_IMPL_H
#define ORGW_STATE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "convcache.h"
#include "ledger.h"
#include "memo.h"
#include "orgw.h"
#include "record.h"
#include "route.h"
#include "score.h"
#include "statekeys.h"

struct holds;
struct state_admit;
struct state_conv;
struct state_route;
struct store;

#define KEY_MAX (ORGW_MODEL_MAX + ORGW_TAG_MAX + 32)

/* state.c */

/* The key of family f for model (and tag) into k, KEY_MAX bytes. */
void key2(char *k, enum statekey f, const char *model);
void key3(char *k, enum statekey f, const char *model, const char *tag);

/* A malloc'd copy of the n items of size bytes at src (a memo's copy of
 * a decoded list); NULL when n is 0 or out of memory. */
void *items_dup(const void *src, size_t n, size_t size);

/* Counts one event of row ix (LX_TRIPS of tag, LX_LOCK_CHANGES with tag
 * NULL) in the ledger. */
enum orgw_err event_count(struct store *s, const char *model, int64_t now,
			  enum ledger_ix ix, const char *tag);

/* Writes model's new lock (NULL: drops it), counting and logging the
 * move off old (had_old) with why. */
enum orgw_err lock_write(struct store *s, const char *model,
			 const struct rec_lock *old, bool had_old,
			 const struct rec_lock *lock, int64_t now,
			 const char *why);

/* The store and model a route_cooling_fn (cooling) or
 * convroute_pressure_fn (pressured) reads, at now. */
struct cool_ctx {
	struct store *s;
	const char *model;
	int64_t now;
};

/* Reads PROVIDER_COOLDOWN of tag for model; *have false when none. */
enum orgw_err read_cooldown(struct store *s, const char *model,
			    const char *tag, struct rec_cooldown *cd,
			    bool *have);
/* route_cooling_fn over the store (arg: a struct cool_ctx). */
bool cooling(void *arg, const char *tag);

/* Read BEST_PROVIDER, PROVIDER_CANDIDATE, or both, for model; the
 * outputs are set whatever happens. */
enum orgw_err read_lock(struct store *s, const char *model,
			struct rec_lock *l, bool *have_lock);
enum orgw_err read_cands(struct store *s, const char *model,
			 struct rec_cands *cands, bool *have_cands);
enum orgw_err read_lock_cands(struct store *s, const char *model,
			      struct rec_lock *l, bool *have_lock,
			      struct rec_cands *cands, bool *have_cands);

/* Sets route r (a NULL tag or name: ""), not a conversation's. */
void route_set(struct state_route *r, enum route_kind kind, const char *tag,
	       const char *name, int64_t max_out);

/*
 * A conversation's record decoded, routing part and cache record, kept
 * in a memo (memo.h): a conversation's next turn usually finds the text
 * this process wrote at its last one, and decoding it is most of what a
 * conversation costs a request.  Plain bytes: the memo copies them.
 */
struct conv_val {
	struct rec_conv rc;
	struct convcache cc;
};
extern struct memo conv_memo;
/* Decodes text (key k) into *cv; false when it is no conversation
 * record. */
bool conv_decode(const char *k, const char *text, struct conv_val *cv);

/* Reads PRESSURE of tag for model; *p zero when there is none. */
enum orgw_err read_pressure(struct store *s, const char *model,
			    const char *tag, struct rec_pressure *p);
/* convroute_pressure_fn over the store (arg: a struct cool_ctx). */
bool pressured(void *arg, const char *tag);

/* Re-ranks cands at now with model's measured hit rates. */
enum orgw_err rerank(struct store *s, const struct orgw_conf *c,
		     const char *model, struct rec_cands *cands, int64_t now);
/* Moves model's lock off off_tag at once (a trip, an operator's cool);
 * r (may be NULL) gets the route to continue on. */
enum orgw_err move_lock(struct store *s, const struct orgw_conf *c,
			const char *model, const char *off_tag,
			const char *why, int64_t now, struct rec_cands *cands,
			bool have_cands, struct state_route *r);

/* state_route.c: decides model's route with what the store holds and
 * writes the lock it implies (cv: a conversation's turn, or NULL). */
enum orgw_err decide_and_lock(struct store *s, const struct orgw_conf *c,
			      const char *model, bool client_provider,
			      int64_t now, struct state_route *r,
			      struct state_conv *cv);

/* state_admit.c */

/* The holds of team key name into *hp (malloc'd), its key into k. */
enum orgw_err hold_read(struct store *s, const char *name, char *k,
			struct holds **hp);
/* A team key's request admitted or refused (ad->verdict). */
enum orgw_err admit(struct store *s, struct state_admit *ad,
		    const char *model);

/* state_fail.c */

/* The tag's entry in a growing list of hit rates (made, zeroed, when
 * new); NULL when out of memory. */
struct score_hit *hit_of(struct score_hit **v, size_t *n, size_t *cap,
			 const char *tag);
/* A HIT:<model> record decoded, for hit_memo. */
struct hits_val {
	struct score_hit *v;	/* malloc'd */
	size_t n;
};
extern struct memo hit_memo;

#endif
