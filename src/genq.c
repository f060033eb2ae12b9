/*
 * genq.c - what an answer cut short cost, looked up after its request
 * has given its worker thread back (genq.h).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "clock.h"
#include "genq.h"
#include "ledger.h"
#include "log.h"
#include "state.h"
#include "teamauth.h"
#include "upstream.h"

/*
 * The schedule of one look-up: asked again while it answers 404 (not
 * ready: OpenRouter's figures lag the stream's end by seconds), 429, a
 * 5xx or nothing, after pauses doubling from GENQ_FIRST_PAUSE_MS to
 * GENQ_MAX_PAUSE_MS, for GENQ_WAIT_MS after it was queued; any other
 * answer ends it.
 */
#define GENQ_FIRST_PAUSE_MS 250
#define GENQ_MAX_PAUSE_MS 8000
#define GENQ_WAIT_MS 120000
#define GENQ_GET_TIMEOUT_MS 10000
#define GENQ_MAX_BYTES (256u * 1024)

struct slot {
	struct genq_job job;
	int64_t next_ms, give_up_ms, pause_ms;	/* monotonic */
	bool used, busy;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct slot slots[GENQ_MAX];
static size_t n_waiting;
static const struct orgw_conf *conf;
static bool started;

/*
 * One ask: true with *usd when upstream gave the figure; else false with
 * *again true when asking later may help (404, 429, 5xx, no answer).
 */
static bool
ask(const struct orgw_conf *c, const char *id, double *usd, bool *again)
{
	char url[4096], *body = NULL;
	size_t len = 0;
	long status = 0;
	cJSON *o, *cost;
	bool ok = false;

	*again = false;
	snprintf(url, sizeof(url), "%s/generation?id=%s", c->upstream_url, id);
	if (upstream_get(url, c->openrouter_api_key, GENQ_GET_TIMEOUT_MS,
			 GENQ_MAX_BYTES, &body, &len, &status) != ORGW_OK ||
	    status != 200) {
		free(body);
		*again = status == 0 || status == 404 || status == 429 ||
			 status >= 500;
		if (!*again)
			log_warn("generation %s: no billed figure (status %ld)",
				 id, status);
		return false;
	}
	o = cJSON_ParseWithLength(body, len);
	cost = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(o, "data"), "total_cost");
	if (cJSON_IsNumber(cost) && isfinite(cost->valuedouble) &&
	    cost->valuedouble >= 0) {
		*usd = cost->valuedouble;
		ok = true;
	}
	cJSON_Delete(o);
	free(body);
	return ok;
}

/* The waiting slot due first, or NULL (mu held). */
static struct slot *
first_due(void)
{
	struct slot *s = NULL;
	size_t i;

	for (i = 0; i < GENQ_MAX; i++)
		if (slots[i].used && !slots[i].busy &&
		    (s == NULL || slots[i].next_ms < s->next_ms))
			s = &slots[i];
	return s;
}

/* Waits on cv for at most ms (mu held). */
static void
wait_for(int64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&cv, &mu, &ts);
}

static void *
drain(void *arg)
{
	struct slot *s;
	struct genq_job job;
	int64_t now;
	double usd = 0;
	bool found, again;

	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		if ((s = first_due()) == NULL) {
			pthread_cond_wait(&cv, &mu);
			continue;
		}
		now = clock_mono_ms();
		if (s->next_ms > now) {
			wait_for(s->next_ms - now);
			continue;
		}
		s->busy = true;
		job = s->job;
		pthread_mutex_unlock(&mu);
		found = ask(conf, job.id, &usd, &again);
		now = clock_mono_ms();
		pthread_mutex_lock(&mu);
		s->busy = false;
		if (!found && again && now + s->pause_ms < s->give_up_ms) {
			s->next_ms = now + s->pause_ms;
			s->pause_ms = s->pause_ms * 2 > GENQ_MAX_PAUSE_MS ?
					      GENQ_MAX_PAUSE_MS :
					      s->pause_ms * 2;
			continue;
		}
		s->used = false;
		n_waiting--;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
		if (!found && again)
			log_warn("generation %s: no billed figure within %d s",
				 job.id, GENQ_WAIT_MS / 1000);
		genq_settle(conf, &job, found, usd);
		pthread_mutex_lock(&mu);
	}
	return NULL;
}

bool
genq_push(const struct orgw_conf *c, const struct genq_job *j)
{
	pthread_t t;
	pthread_attr_t at;
	size_t i;
	bool ok = false;

	pthread_mutex_lock(&mu);
	if (!started) {
		conf = c;
		if (pthread_attr_init(&at) == 0) {
			pthread_attr_setdetachstate(&at,
						    PTHREAD_CREATE_DETACHED);
			started = pthread_create(&t, &at, drain, NULL) == 0;
			pthread_attr_destroy(&at);
		}
	}
	for (i = 0; started && i < GENQ_MAX && !ok; i++)
		if (!slots[i].used) {
			slots[i].job = *j;
			slots[i].next_ms = clock_mono_ms() + GENQ_FIRST_PAUSE_MS;
			slots[i].give_up_ms = clock_mono_ms() + GENQ_WAIT_MS;
			slots[i].pause_ms = GENQ_FIRST_PAUSE_MS * 2;
			slots[i].used = true;
			slots[i].busy = false;
			n_waiting++;
			ok = true;
		}
	if (ok)
		pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	if (!ok)
		log_warn("generation %s: %s; charged at once as estimated",
			 j->id,
			 started ? "the look-up queue is full" :
				   "no look-up thread");
	return ok;
}

void
genq_settle(const struct orgw_conf *c, const struct genq_job *j, bool found,
	    double usd)
{
	struct stats_delta d;
	const char *basis = LEDGER_BASIS_CEILING;

	if (!found &&
	    state_estimate(c, j->model, j->prompt_max, j->out_max, &usd,
			   &basis) != ORGW_OK)
		usd = ledger_hold_estimate(NULL, 0, j->prompt_max, j->out_max,
					   c->price_ceiling_usd_per_mtok /
						   1e6,
					   &basis);
	/* No request: it was counted when it ended; only its cost now. */
	memset(&d, 0, sizeof(d));
	d.api = j->api;
	d.tag = j->tag[0] != '\0' ? j->tag : NULL;
	d.cost_usd = usd;
	d.cost_known = found;
	d.cost_estimated = !found;
	d.cost_basis = found ? NULL : basis;
	d.now = clock_now_s();
	d.ttfb_ms = d.total_ms = -1;
	d.key_name = j->key[0] != '\0' ? j->key : NULL;
	d.key_budget = j->key_budget;
	d.hold = j->hold[0] != '\0' ? j->hold : NULL;
	d.key_billed_usd = usd;
	(void)state_finish(c, j->model, &d, NULL);
	if (d.key_name != NULL)
		teamauth_spend(c, d.key_name, d.now, 1, usd);
	log_info("generation %s: cost=%.8f%s%s%s%s", j->id, usd,
		 found ? "" : " cost_estimated=1 cost_basis=",
		 found ? "" : basis, d.key_name ? " key=" : "",
		 d.key_name ? d.key_name : "");
}

void
genq_finish(int64_t wait_ms)
{
	struct genq_job job;
	int64_t end = clock_mono_ms() + wait_ms;
	size_t i;

	pthread_mutex_lock(&mu);
	while (n_waiting > 0 && clock_mono_ms() < end)
		wait_for(100);
	/* What is still waiting is charged as not found. */
	for (i = 0; i < GENQ_MAX; i++)
		if (slots[i].used && !slots[i].busy) {
			job = slots[i].job;
			slots[i].used = false;
			n_waiting--;
			pthread_mutex_unlock(&mu);
			log_warn("generation %s: the worker ends before its "
				 "figure came",
				 job.id);
			genq_settle(conf, &job, false, 0);
			pthread_mutex_lock(&mu);
		}
	/* One being asked ends within its GET's timeout. */
	end = clock_mono_ms() + GENQ_GET_TIMEOUT_MS + 1000;
	while (n_waiting > 0 && clock_mono_ms() < end)
		wait_for(100);
	pthread_mutex_unlock(&mu);
}
