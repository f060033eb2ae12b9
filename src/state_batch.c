/*
 * state_batch.c - the request's end (state.h: state_finish,
 * state_finish_conv), by group commit: the ledger's cells, hit rates
 * and failure counts, a team key's lease, spend and hold, and a
 * conversation's record, of every request queued, in one transaction.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failover.h"
#include "hold.h"
#include "log.h"
#include "state.h"
#include "state_impl.h"
#include "store.h"

/* Adds n to LOST_UPDATES (a decimal count). */
static enum orgw_err
lost_add(struct store *s, int64_t n)
{
	char *v = NULL, num[32];
	long long have = 0;
	enum orgw_err err;

	if ((err = store_get(s, STATE_LOST_KEY, &v)) != ORGW_OK)
		return err;
	if (v != NULL)
		have = strtoll(v, NULL, 10);
	free(v);
	if (have < 0)
		have = 0;
	snprintf(num, sizeof(num), "%lld", have + (long long)n);
	return store_put(s, STATE_LOST_KEY, num);
}

/*
 * The request's end, by group commit.  A thread that finishes a request
 * queues its counts and waits; one thread of the process at a time (the
 * leader) takes everything queued and writes it in one transaction, in
 * which each cell, hit rate and failure count that several requests
 * share is read and written once.  So under load the exclusive lock is
 * taken once per batch instead of once per request, and every thread
 * still returns only once its counts are committed: N requests answered,
 * N counted, and a worker killed loses only what it had in flight.
 */
struct finish_job {
	const char *model;
	const char *as;		/* the model it is counted under */
	struct stats_delta d;	/* a copy; its strings are the caller's, who
				 * waits until done */
	const char *ok_tag;
	struct state_conv_turn *ct;	/* the caller's, or NULL */
	size_t cell;		/* its ledger cell, the batch's keys[cell], */
	bool have_cell;		/* when batch_cell made one */
	enum orgw_err err;
	bool done;
	struct finish_job *next;
};

/* One cell, model's hit rates or failure count the batch writes. */
struct finish_key {
	char key[KEY_MAX + 64];
	struct ledger_cell cell;
	struct score_hit *hits;	/* HIT:<model>: malloc'd */
	size_t n_hits, cap_hits;
};

struct finish_batch {
	struct finish_job *jobs;
	size_t n_jobs;
	int64_t lost;		/* counts lost earlier, for LOST_UPDATES */
	struct finish_key *keys;	/* cells, hits and failures */
	size_t n_keys, cap_keys;
	const char *cands_model;	/* the model cands belongs to */
	struct rec_cands cands;		/* owned */
	bool have_cands;
	const char *known_model;	/* the last one found seen */
};

/* Drops the candidates the batch read. */
static void
batch_cands_clear(struct finish_batch *b)
{
	record_cands_clear(&b->cands);
	b->have_cands = false;
	b->cands_model = NULL;
}

/* The batch's entry for key, made (zeroed) when new; NULL when out of
 * memory.  *fresh says whether it was made. */
static struct finish_key *
batch_key(struct finish_batch *b, const char *key, bool *fresh)
{
	size_t i;

	*fresh = false;
	for (i = 0; i < b->n_keys; i++)
		if (strcmp(b->keys[i].key, key) == 0)
			return &b->keys[i];
	if (b->n_keys == b->cap_keys) {
		size_t cap = b->cap_keys ? b->cap_keys * 2 : 16;
		struct finish_key *v = realloc(b->keys, cap * sizeof(*v));

		if (v == NULL)
			return NULL;
		b->keys = v;
		b->cap_keys = cap;
	}
	memset(&b->keys[b->n_keys], 0, sizeof(b->keys[0]));
	snprintf(b->keys[b->n_keys].key, sizeof(b->keys[0].key), "%s", key);
	*fresh = true;
	return &b->keys[b->n_keys++];
}

/* Adds job j's cell to the batch: its money attributed and priced from
 * the candidates as stored now. */
static enum orgw_err
batch_cell(struct store *s, struct finish_batch *b, struct finish_job *j)
{
	struct ledger_cell cell;
	struct finish_key *e;
	char k[KEY_MAX + 64], day[11];
	enum orgw_err err;
	bool fresh;

	j->have_cell = false;
	/* Jobs of one model (most of a batch) read its candidates once. */
	if (b->cands_model == NULL || strcmp(b->cands_model, j->as) != 0) {
		batch_cands_clear(b);
		if ((err = read_cands(s, j->as, &b->cands, &b->have_cands)) !=
		    ORGW_OK)
			return err;
		b->cands_model = j->as;
	}
	ledger_price(&j->d, b->have_cands ? &b->cands : NULL);
	ledger_from_delta(&cell, &j->d);
	record_day(j->d.now, day);
	/* A key that cannot be made (a model id too long for it) counts
	 * nothing, as for a key GDBM would refuse. */
	if (ledger_key(k, sizeof(k), j->as, day, ledger_api(&j->d),
		       ledger_provider(&j->d))) {
		if ((e = batch_key(b, k, &fresh)) == NULL)
			return ORGW_ENOMEM;
		ledger_cell_add(&e->cell, &cell);
		j->cell = (size_t)(e - b->keys);
		j->have_cell = true;
	}
	j->d.money_tag = NULL;	/* it pointed into b->cands */
	return ORGW_OK;
}

/* Adds job j's answer to its provider's measured hit rate: only what the
 * pinned provider itself served, with usage, measures its cache. */
static enum orgw_err
batch_hit(struct store *s, struct finish_batch *b, const struct finish_job *j)
{
	const struct stats_delta *d = &j->d;
	struct finish_key *e;
	struct score_hit *h;
	char k[KEY_MAX];
	enum orgw_err err;
	bool fresh;

	if (d->ok == 0 || d->off_pin != 0 || d->prompt_tokens <= 0 ||
	    d->tag == NULL || d->tag[0] == '\0')
		return ORGW_OK;
	key2(k, SK_HIT, j->model);
	if ((e = batch_key(b, k, &fresh)) == NULL)
		return ORGW_ENOMEM;
	if (fresh) {
		if ((err = state_hits(s, j->model, &e->hits, &e->n_hits)) !=
		    ORGW_OK)
			return err;
		e->cap_hits = e->n_hits;
	}
	if ((h = hit_of(&e->hits, &e->n_hits, &e->cap_hits, d->tag)) == NULL)
		return ORGW_ENOMEM;
	score_hit_add(h, d->prompt_tokens, d->cached_tokens,
		      d->hit_half_life_tokens);
	return ORGW_OK;
}

/* Empties the batch's keys (a run that starts over, or the end). */
static void
batch_keys_clear(struct finish_batch *b)
{
	size_t i;

	for (i = 0; i < b->n_keys; i++)
		free(b->keys[i].hits);
	b->n_keys = 0;
}

/* Resets the consecutive failure count of the provider that answered
 * (written only when there is a count to reset). */
static enum orgw_err
batch_ok(struct store *s, struct finish_batch *b, const struct finish_job *j)
{
	struct rec_failure f;
	struct finish_key *e;
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;
	bool fresh;

	if (j->ok_tag == NULL)
		return ORGW_OK;
	key3(k, SK_PROVIDER_FAILURE, j->as, j->ok_tag);
	if ((e = batch_key(b, k, &fresh)) == NULL)
		return ORGW_ENOMEM;
	if (!fresh)
		return ORGW_OK;
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if (v != NULL && record_failure_decode(v, &f) == ORGW_OK &&
	    f.count > 0) {
		failover_breaker_ok(&f);
		err = store_put_text(s, k, record_failure_encode(&f));
	}
	free(v);
	return err;
}

/*
 * The model job j is counted under (j->as): its own once OpenRouter is
 * known to serve it (MODEL_SEEN:<model>: its endpoints were fetched, or
 * an earlier answer on it succeeded), or when this answer succeeded,
 * which marks it seen now (a client's own provider object on a model no
 * request scored yet).  Anything else is counted under STATE_OTHER_MODEL
 * (docs/design.md 4 step 2): invented ids, sent with their own provider object or
 * not, leave no ledger cell, hit rate or failure count of their own, so
 * a client cannot grow the state with them.
 */
static enum orgw_err
batch_model(struct store *s, struct finish_batch *b, struct finish_job *j)
{
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;

	j->as = j->model;
	if (strcmp(j->model, STATE_OTHER_MODEL) == 0 ||
	    (b->known_model != NULL && strcmp(b->known_model, j->model) == 0))
		return ORGW_OK;
	key2(k, SK_MODEL_SEEN, j->model);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if (v == NULL && j->d.ok == 0) {
		j->as = STATE_OTHER_MODEL;
		return ORGW_OK;
	}
	if (v == NULL)
		err = store_put_text(s, k, record_model_seen_encode(j->d.now));
	free(v);
	b->known_model = j->model;
	return err;
}

/*
 * Gives back job j's concurrency lease (teamkey.h), if it holds one (a
 * lease already expired is gone), and, when its key has a budget, adds
 * what it spent to the key's rate record: the next admission sees it
 * even before the keys store does.  Runs after batch_cell, which priced
 * an answer that did not say its cost.
 */
static enum orgw_err
batch_lease(struct store *s, const struct finish_job *j)
{
	struct teamkey_rate *r;
	char k[KEY_MAX], *v = NULL;
	enum orgw_err err;
	bool changed = false;

	if (j->d.key_name == NULL || (j->d.lease == NULL && !j->d.key_budget))
		return ORGW_OK;
	key2(k, SK_TEAMKEY_RATE, j->d.key_name);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		free(v);
		return ORGW_ENOMEM;
	}
	if (v != NULL && teamkey_rate_decode(v, r) != ORGW_OK)
		memset(r, 0, sizeof(*r));
	if (j->d.lease != NULL && teamkey_rate_release(r, j->d.lease))
		changed = true;
	if (j->d.key_budget) {
		teamkey_rate_spend(r, j->d.now, ledger_key_spend(&j->d));
		changed = true;
	}
	if (changed)
		err = store_put_text(s, k, teamkey_rate_encode(r));
	free(r);
	free(v);
	return err;
}

/* Drops job j's budget hold, if it has one: in the transaction that
 * adds its spend (batch_lease), so an admission never sees both or
 * neither. */
static enum orgw_err
batch_hold(struct store *s, const struct finish_job *j)
{
	struct holds *h;
	char k[KEY_MAX];
	enum orgw_err err;

	if (j->d.key_name == NULL || j->d.hold == NULL)
		return ORGW_OK;
	if ((err = hold_read(s, j->d.key_name, k, &h)) != ORGW_OK)
		return err;
	if (holds_drop(h, j->d.hold))
		err = store_put_text(s, k, holds_encode(h));
	free(h);
	return err;
}

/*
 * Job j's conversation turn (j->ct): on a success, its record read,
 * the turn classified against it and added (convcache.h), and the
 * record written back: one fixed-size read and write.  Runs after
 * batch_cell, which priced the turn and made its ledger cell: a break
 * adds one to its cause's row there (ledger_break_ix), so the count is
 * written with the request's other counts, in this transaction, and
 * outlives the record (which keeps only its last breaks, and which the
 * scorer's sweep drops).  Ids counted under STATE_OTHER_MODEL keep no
 * conversations: invented ids must not grow the state.
 */
static enum orgw_err
batch_conv(struct store *s, struct finish_batch *b,
	   const struct finish_job *j)
{
	struct state_conv_turn *ct = j->ct;
	const struct stats_delta *d = &j->d;
	static const struct fp_list none;
	struct convcache_verdict vd;
	struct convcache_turn t;
	struct conv_val *cv = NULL;
	cJSON *enc = NULL;
	char k[KEY_MAX], *v = NULL, *text;
	enum ledger_ix ix;
	enum orgw_err err;

	if (ct == NULL)
		return ORGW_OK;
	ct->written = false;
	ct->is_break = false;
	ct->cause = CONVCACHE_NONE;
	ct->at = -1;
	if (d->ok == 0 || strcmp(j->as, STATE_OTHER_MODEL) == 0)
		return ORGW_OK;
	key3(k, SK_CONV, j->model, ct->hash);
	if ((err = store_get(s, k, &v)) != ORGW_OK)
		return err;
	err = ORGW_ENOMEM;
	if ((cv = malloc(sizeof(*cv))) == NULL)
		goto out;
	if (!conv_decode(k, v, cv)) {
		memset(&cv->rc, 0, sizeof(cv->rc));
		convcache_init(&cv->cc);
	}
	/* A body holding only new input has no prefix to compare. */
	if (ct->only_new)
		memset(&cv->cc.prefix, 0, sizeof(cv->cc.prefix));
	memset(&t, 0, sizeof(t));
	t.fp = ct->fp != NULL ? ct->fp : &none;
	t.provider = d->tag;
	t.now = d->now;
	t.prompt_tokens = d->prompt_tokens;
	t.cached_tokens = d->cached_tokens;
	t.cache_write_tokens = d->cache_write_tokens;
	t.cost = d->cost_usd;
	t.saved = d->uncached_usd > d->cost_usd ?
			  d->uncached_usd - d->cost_usd :
			  0;
	convcache_classify(&cv->cc, &t, ct->ttl_s, &vd);
	convcache_update(&cv->cc, &t, &vd);
	snprintf(cv->rc.model, sizeof(cv->rc.model), "%s", j->model);
	snprintf(cv->rc.tag, sizeof(cv->rc.tag), "%s", d->tag ? d->tag : "");
	snprintf(cv->rc.show, sizeof(cv->rc.show), "%s",
		 ct->show ? ct->show : "");
	snprintf(cv->rc.api, sizeof(cv->rc.api), "%s", ct->api ? ct->api : "");
	if (cv->rc.turns == 0) {
		cv->rc.first_seen = d->now;
		cv->rc.spread = ct->spread;
	}
	cv->rc.last_turn = d->now;
	cv->rc.turns++;
	if (ct->foreign_items >= 0)
		cv->rc.foreign_items = ct->foreign_items;
	if ((enc = cJSON_CreateObject()) == NULL ||
	    !convcache_encode(&cv->cc, enc)) {
		cJSON_Delete(enc);
		goto out;
	}
	/* enc is the record's now. */
	if ((text = record_conv_encode_take(&cv->rc, enc)) == NULL)
		goto out;
	memo_put(&conv_memo, k, text, cv);
	if ((err = store_put_text(s, k, text)) != ORGW_OK)
		goto out;
	ct->written = true;
	if (vd.is_break && j->have_cell &&
	    (ix = ledger_break_ix(vd.cause)) != LX_N)
		b->keys[j->cell].cell.v[ix] += 1;
	ct->is_break = vd.is_break;
	ct->cause = (int)vd.cause;
	ct->at = vd.is_break && vd.cause == CONVCACHE_PREFIX_CHANGED ?
			 vd.at :
			 -1;
out:
	free(cv);
	free(v);
	return err;
}

static enum orgw_err
do_finish_batch(struct store *s, void *arg)
{
	struct finish_batch *b = arg;
	struct finish_job *j;
	enum orgw_err err = ORGW_OK;
	size_t i;

	/* A failed batch is added to the lost counts (finish_lead): the
	 * store must not call a commit that went in failed. */
	store_exact_outcome(s);
	/* A transaction that runs again (a Redis conflict) starts over. */
	batch_keys_clear(b);
	batch_cands_clear(b);
	b->known_model = NULL;
	if (b->lost > 0 && (err = lost_add(s, b->lost)) != ORGW_OK)
		return err;
	for (j = b->jobs; err == ORGW_OK && j != NULL; j = j->next)
		if ((err = batch_model(s, b, j)) == ORGW_OK &&
		    (err = batch_cell(s, b, j)) == ORGW_OK &&
		    (err = batch_hit(s, b, j)) == ORGW_OK &&
		    (err = batch_ok(s, b, j)) == ORGW_OK &&
		    (err = batch_lease(s, j)) == ORGW_OK &&
		    (err = batch_hold(s, j)) == ORGW_OK)
			err = batch_conv(s, b, j);
	for (i = 0; err == ORGW_OK && i < b->n_keys; i++) {
		struct finish_key *e = &b->keys[i];

		if (statekeys_is(e->key, SK_HIT) != NULL) {
			struct hits_val hv = {e->hits, e->n_hits};
			char *text = record_hits_encode(e->hits, e->n_hits);

			if (text != NULL)
				memo_put(&hit_memo, e->key, text, &hv);
			err = store_put_text(s, e->key, text);
		} else if (statekeys_is(e->key, SK_LEDGER) != NULL)
			err = state_cell_put(s, e->key, &e->cell);
	}
	return err;
}

static pthread_mutex_t finish_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t finish_cv = PTHREAD_COND_INITIALIZER;
static struct finish_job *finish_head;
static struct finish_job **finish_tail = &finish_head;
static bool finish_leading;

/* The leader's turn: writes every job queued (finish_mu held on entry
 * and on return, released while the transaction runs). */
static void
finish_lead(const struct orgw_conf *c)
{
	struct finish_batch b;
	struct finish_job *j, *next;
	enum orgw_err err;

	memset(&b, 0, sizeof(b));
	b.jobs = finish_head;
	finish_head = NULL;
	finish_tail = &finish_head;
	for (j = b.jobs; j != NULL; j = j->next)
		b.n_jobs++;
	finish_leading = true;
	pthread_mutex_unlock(&finish_mu);

	/* Counts this process lost while the state was away go into
	 * LOST_UPDATES with these, in the same transaction. */
	b.lost = store_lost_take();
	err = state_txn(c, true, do_finish_batch, &b);
	batch_keys_clear(&b);
	free(b.keys);
	batch_cands_clear(&b);
	if (err != ORGW_OK) {
		store_lost_add(b.lost + (int64_t)b.n_jobs);
		log_warn("state unavailable (%s): %zu request%s not counted "
			 "(%lld lost in this worker, for LOST_UPDATES)",
			 orgw_strerror(err), b.n_jobs, b.n_jobs == 1 ? "" : "s",
			 (long long)(b.lost + (int64_t)b.n_jobs));
	} else if (b.lost > 0) {
		log_info("state: %lld request counts lost while the state "
			 "was unavailable added to LOST_UPDATES",
			 (long long)b.lost);
	}

	pthread_mutex_lock(&finish_mu);
	for (j = b.jobs; j != NULL; j = next) {
		next = j->next;
		j->err = err;
		j->done = true;
	}
	finish_leading = false;
	pthread_cond_broadcast(&finish_cv);
}

enum orgw_err
state_finish(const struct orgw_conf *c, const char *model,
	     struct stats_delta *d, const char *ok_tag)
{
	return state_finish_conv(c, model, d, ok_tag, NULL);
}

enum orgw_err
state_finish_conv(const struct orgw_conf *c, const char *model,
		  struct stats_delta *d, const char *ok_tag,
		  struct state_conv_turn *ct)
{
	struct finish_job job;

	memset(&job, 0, sizeof(job));
	job.ct = ct;
	job.model = model;
	job.d = *d;
	job.d.hit_half_life_tokens = (double)c->hit_rate_half_life_tokens;
	job.d.price_ceiling_usd = c->price_ceiling_usd_per_mtok / 1e6;
	job.ok_tag = ok_tag;
	pthread_mutex_lock(&finish_mu);
	*finish_tail = &job;
	finish_tail = &job.next;
	while (!job.done) {
		if (!finish_leading)
			finish_lead(c);
		else
			pthread_cond_wait(&finish_cv, &finish_mu);
	}
	pthread_mutex_unlock(&finish_mu);
	if (job.err == ORGW_OK && job.d.cost_estimated) {
		d->cost_usd = job.d.cost_usd;
		d->cost_estimated = true;
		d->cost_basis = job.d.cost_basis;
	}
	/* What it would have cost uncached, for its team key's savings. */
	d->uncached_usd = job.err == ORGW_OK ? job.d.uncached_usd : 0;
	return job.err;
}
