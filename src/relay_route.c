/*
 * relay_route.c - a generation request's route (docs/design.md section
 * 4): the state's lock or a client's own provider, or an inline scoring
 * of a model that has no lock yet.
 *
 * An id OpenRouter does not know (its endpoints answer 404) leaves no
 * state of its own (docs/design.md 4 step 2): it goes unpinned, and is counted in
 * the one STATE_OTHER_MODEL bucket; each process remembers such ids for
 * UNKNOWN_TTL_MS, so their requests do not each fetch endpoints first.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "convbody.h"
#include "log.h"
#include "relay.h"
#include "relay_impl.h"
#include "score.h"
#include "scorerun.h"
#include "state.h"
#define UNKNOWN_TTL_MS 60000		/* an unknown id is not fetched again
					 * for this long */
#define UNKNOWN_SLOTS 64		/* unknown ids a process remembers */

/*
 * The ids this process learned OpenRouter does not know (their endpoints
 * answered 404), for UNKNOWN_TTL_MS each: shared by the threads under
 * unknown_mu, the oldest slot reused.  Nothing about them goes into the
 * state (docs/design.md 4 step 2: invented ids must not grow it).
 */
static pthread_mutex_t unknown_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char model[ORGW_MODEL_MAX];
	int64_t at;
} unknown_ids[UNKNOWN_SLOTS];

static bool
unknown_recent(const char *model, int64_t now)
{
	bool hit = false;
	size_t i;

	pthread_mutex_lock(&unknown_mu);
	for (i = 0; i < UNKNOWN_SLOTS && !hit; i++)
		hit = unknown_ids[i].at != 0 &&
		      now - unknown_ids[i].at < UNKNOWN_TTL_MS &&
		      strcmp(unknown_ids[i].model, model) == 0;
	pthread_mutex_unlock(&unknown_mu);
	return hit;
}

static void
unknown_note(const char *model, int64_t now)
{
	size_t i, old = 0;

	pthread_mutex_lock(&unknown_mu);
	for (i = 0; i < UNKNOWN_SLOTS; i++) {
		if (strcmp(unknown_ids[i].model, model) == 0) {
			old = i;
			break;
		}
		if (unknown_ids[i].at < unknown_ids[old].at)
			old = i;
	}
	snprintf(unknown_ids[old].model, sizeof(unknown_ids[old].model),
		 "%s", model);
	unknown_ids[old].at = now != 0 ? now : 1;
	pthread_mutex_unlock(&unknown_mu);
}

/* A model scored inline had no candidates when the route transaction
 * asked whether its pin caches only explicitly: ask the fresh scores,
 * so a model's first request gets the automatic cache_control too. */
static void
scored_explicit(struct relay *rl, const struct score_result *res)
{
	size_t i;

	if (!rl->cv.on || !rl->cv.route.want_explicit ||
	    rl->route.tag[0] == '\0')
		return;
	for (i = 0; i < res->n_ranked; i++)
		if (strcmp(res->v[i].tag, rl->route.tag) == 0) {
			rl->cv.route.explicit_cache =
				convbody_explicit_endpoint(&res->v[i]);
			snprintf(rl->cv.explicit_tag,
				 sizeof(rl->cv.explicit_tag), "%s",
				 rl->route.tag);
			return;
		}
}

/* Route the request (docs/design.md section 4), scoring inline when needed. */
void
route_request(struct relay *rl)
{
	struct score_result res;
	char err[128], m[ORGW_MODEL_MAX * 4];
	int64_t now = clock_now_s();
	enum orgw_err e;

	bool unknown = !rl->req.has_provider &&
		       unknown_recent(rl->req.model, clock_mono_ms());

	/* A team key's request is admitted (its limits, its budget hold)
	 * even for a model known to have no endpoints. */
	if (unknown && rl->in->team == NULL) {
		rl->unknown = true;
		rl->route.kind = ROUTE_UNPINNED;
		return;
	}
	state_route_conv(rl->c, rl->req.model, rl->req.has_provider, now,
			 &rl->route, rl->in->team ? &rl->in->team->admit : NULL,
			 rl->cv.on ? &rl->cv.route : NULL);
	if (rl->cv.on && rl->cv.route.explicit_cache)
		snprintf(rl->cv.explicit_tag, sizeof(rl->cv.explicit_tag),
			 "%s", rl->route.tag);
	if (rl->in->team != NULL && rl->in->team->admit.verdict != TK_OK)
		return;
	if (unknown) {
		rl->unknown = true;
		rl->route.kind = ROUTE_UNPINNED;
		return;
	}
	if (rl->route.kind != ROUTE_SCORED)
		return;
	e = scorerun_fetch(rl->c, rl->req.model, SCORERUN_INLINE_TIMEOUT_MS,
			   &res, err, sizeof(err));
	if (e == ORGW_OK) {
		state_route_scored(rl->c, rl->req.model, &res, NULL, now,
				   &rl->route);
		scored_explicit(rl, &res);
		score_result_free(&res);
		return;
	}
	log_safe(m, sizeof(m), rl->req.model);
	if (e == ORGW_ENOENT) {
		/* No such model: forwarded unpinned, OpenRouter's answer
		 * reaches the client, nothing of it is kept (docs/design.md 4
		 * step 2). */
		log_info("model %s has no endpoints (%s): unpinned, counted "
			 "as " STATE_OTHER_MODEL,
			 m, err);
		unknown_note(rl->req.model, clock_mono_ms());
		rl->unknown = true;
		rl->route.kind = ROUTE_UNPINNED;
		return;
	}
	log_warn("inline scoring of %s failed: %s; unpinned", m, err);
	state_route_scored(rl->c, rl->req.model, NULL, err, now, &rl->route);
}
