/*
 * state_ops.c - operator commands (orgw-score unlock, cool, uncool and
 * key release; state.h).  They live apart from the request path's
 * transactions on purpose: the same keys, the same record.c codecs and
 * the same state_txn() lock, but their own transactions, so a change
 * to the request path's relock rules does not silently change what an
 * operator's command does (and the other way round).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "reqval.h"
#include "state.h"
#include "state_impl.h"
#include "store.h"

struct op_args {
	const struct orgw_conf *c;
	const char *model, *tag, *reason;
	int64_t seconds, now;
	char *old_tag;
	size_t old_tag_n;
	bool *moved, *had_cooldown, *had_failures;
	struct state_route *r;
};

static enum orgw_err
do_op_unlock(struct store *s, void *arg)
{
	struct op_args *a = arg;
	struct rec_lock lock;
	bool have_lock;
	enum orgw_err err;

	snprintf(a->old_tag, a->old_tag_n, "%s", "");
	if ((err = read_lock(s, a->model, &lock, &have_lock)) != ORGW_OK)
		return err;
	/* An undecodable lock is deleted too: routing treats it as none. */
	if (have_lock)
		snprintf(a->old_tag, a->old_tag_n, "%s", lock.tag);
	return lock_write(s, a->model, &lock, have_lock, NULL, a->now,
			  "operator unlock");
}

enum orgw_err
state_op_unlock(const struct orgw_conf *c, const char *model, int64_t now,
		char *old_tag, size_t n)
{
	struct op_args a = {.c = c, .model = model, .now = now,
			    .old_tag = old_tag, .old_tag_n = n};
	char m[ORGW_MODEL_MAX * 4];
	enum orgw_err err;

	snprintf(old_tag, n, "%s", "");
	if (!reqval_model_ok(model))
		return ORGW_EINVAL;
	log_safe(m, sizeof(m), model);
	err = state_txn(c, true, do_op_unlock, &a);
	if (err != ORGW_OK)
		log_warn("operator: unlock model=%s failed: %s", m,
			 orgw_strerror(err));
	else if (old_tag[0] != '\0')
		log_info("operator: unlock model=%s was=%s: the next request "
			 "relocks",
			 m, old_tag);
	return err;
}

static enum orgw_err
do_op_cool(struct store *s, void *arg)
{
	struct op_args *a = arg;
	struct rec_cooldown cd;
	struct rec_lock lock;
	struct rec_cands cands;
	bool have_lock, have_cands;
	char k[KEY_MAX];
	enum orgw_err err;

	*a->moved = false;
	/* Cleared at out: whatever happens before it is read. */
	memset(&cands, 0, sizeof(cands));
	memset(&cd, 0, sizeof(cd));
	cd.until = a->now + a->seconds;
	snprintf(cd.reason, sizeof(cd.reason), "%s", a->reason);
	key3(k, SK_PROVIDER_COOLDOWN, a->model, a->tag);
	if ((err = store_put_text(s, k, record_cooldown_encode(&cd))) != ORGW_OK)
		return err;
	err = read_lock_cands(s, a->model, &lock, &have_lock, &cands,
			      &have_cands);
	if (err != ORGW_OK)
		goto out;
	if (!have_lock) {
		route_set(a->r, ROUTE_UNPINNED, NULL, NULL, 0);
		goto out;
	}
	if (strcmp(lock.tag, a->tag) != 0) {
		route_set(a->r, ROUTE_LOCKED, lock.tag, lock.provider_name,
			  lock.max_completion_tokens);
		goto out;
	}
	/* The live lock is the provider cooled: move it now, as a breaker
	 * trip does (docs/design.md 5), at today's prices (docs/design.md 6). */
	*a->moved = true;
	err = move_lock(s, a->c, a->model, a->tag, "operator cool", a->now,
			&cands, have_cands, a->r);
out:
	record_cands_clear(&cands);
	return err;
}

enum orgw_err
state_op_cool(const struct orgw_conf *c, const char *model, const char *tag,
	      int64_t seconds, const char *reason, int64_t now, bool *moved,
	      struct state_route *r)
{
	struct op_args a = {.c = c, .model = model, .tag = tag,
			    .reason = reason, .seconds = seconds, .now = now,
			    .moved = moved, .r = r};
	char m[ORGW_MODEL_MAX * 4], why[REC_REASON_MAX * 4];
	enum orgw_err err;

	*moved = false;
	route_set(r, ROUTE_UNPINNED, NULL, NULL, 0);
	if (!reqval_model_ok(model) || !state_tag_ok(tag) || seconds <= 0 ||
	    reason == NULL)
		return ORGW_EINVAL;
	log_safe(m, sizeof(m), model);
	log_safe(why, sizeof(why), reason);
	err = state_txn(c, true, do_op_cool, &a);
	if (err != ORGW_OK) {
		log_warn("operator: cool model=%s provider=%s failed: %s", m,
			 tag, orgw_strerror(err));
		*moved = false;
		route_set(r, ROUTE_UNPINNED, NULL, NULL, 0);
		return err;
	}
	log_info("operator: cool model=%s provider=%s seconds=%lld "
		 "reason=\"%s\" lock=%s%s",
		 m, tag, (long long)seconds, why,
		 r->tag[0] ? r->tag : "none", *moved ? " (moved)" : "");
	return err;
}

/* Deletes key, setting *had when it was there. */
static enum orgw_err
del_had(struct store *s, const char *key, bool *had)
{
	char *v = NULL;
	enum orgw_err err;

	*had = false;
	if ((err = store_get(s, key, &v)) != ORGW_OK)
		return err;
	*had = v != NULL;
	free(v);
	return *had ? store_del(s, key) : ORGW_OK;
}

static enum orgw_err
do_op_uncool(struct store *s, void *arg)
{
	struct op_args *a = arg;
	char k[KEY_MAX];
	enum orgw_err err;

	key3(k, SK_PROVIDER_COOLDOWN, a->model, a->tag);
	if ((err = del_had(s, k, a->had_cooldown)) != ORGW_OK)
		return err;
	key3(k, SK_PROVIDER_FAILURE, a->model, a->tag);
	return del_had(s, k, a->had_failures);
}

enum orgw_err
state_op_uncool(const struct orgw_conf *c, const char *model, const char *tag,
		bool *had_cooldown, bool *had_failures)
{
	struct op_args a = {.c = c, .model = model, .tag = tag,
			    .had_cooldown = had_cooldown,
			    .had_failures = had_failures};
	char m[ORGW_MODEL_MAX * 4];
	enum orgw_err err;

	*had_cooldown = *had_failures = false;
	if (!reqval_model_ok(model) || !state_tag_ok(tag))
		return ORGW_EINVAL;
	log_safe(m, sizeof(m), model);
	err = state_txn(c, true, do_op_uncool, &a);
	if (err != ORGW_OK)
		log_warn("operator: uncool model=%s provider=%s failed: %s", m,
			 tag, orgw_strerror(err));
	else if (*had_cooldown || *had_failures)
		log_info("operator: uncool model=%s provider=%s cooldown=%s "
			 "failures=%s",
			 m, tag, *had_cooldown ? "cleared" : "none",
			 *had_failures ? "cleared" : "none");
	return err;
}

struct release_args {
	const char *name;
	size_t n;
};

static enum orgw_err
do_rate_release(struct store *s, void *arg)
{
	struct release_args *a = arg;
	struct teamkey_rate *r;
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	a->n = 0;
	snprintf(k, sizeof(k), "%s%s", STATE_RATE_PREFIX, a->name);
	if ((err = store_get(s, k, &v)) != ORGW_OK || v == NULL)
		return err;
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		free(v);
		return ORGW_ENOMEM;
	}
	/* A damaged record holds nothing to keep: it goes. */
	if (teamkey_rate_decode(v, r) != ORGW_OK) {
		err = store_del(s, k);
	} else if (r->n_leases > 0) {
		a->n = r->n_leases;
		r->n_leases = 0;
		err = store_put_text(s, k, teamkey_rate_encode(r));
	}
	free(r);
	free(v);
	return err;
}

enum orgw_err
state_rate_release(const struct orgw_conf *c, const char *name, size_t *n)
{
	struct release_args a = {name, 0};
	enum orgw_err err;

	err = state_txn(c, true, do_rate_release, &a);
	*n = err == ORGW_OK ? a.n : 0;
	return err;
}
