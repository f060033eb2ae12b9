/*
 * relay_conv.c - a conversation's part in the relay (conv.h, convbody.h):
 * its key and its prompt's fingerprints, read once from the parsed body
 * (conv_prepare); what it changes in each attempt's body (conv_edits:
 * session_id, the automatic cache_control, the provider-bound reasoning
 * items left out); and the retries of its own, a provider 429 that
 * moves the turn (conv_429) and an upstream 400 for reasoning another
 * provider wrote (conv_invalid_encrypted).
 */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "api.h"
#include "clock.h"
#include "conv.h"
#include "convbody.h"
#include "failover.h"
#include "fingerprint.h"
#include "relay.h"
#include "relay_impl.h"
#include "reqval.h"
#include "state.h"

/* Makes cv->input for limit (convbody_drop_reasoning), unless it was
 * made for it already.  -1 when out of memory. */
static int
conv_input(struct relay *rl, size_t limit)
{
	struct relay_conv *cv = &rl->cv;
	const char *p;
	size_t n;

	if (cv->input_made && cv->input_limit == limit)
		return 0;
	free(cv->input);
	cv->input = NULL;
	cv->dropped = 0;
	cv->input_made = true;
	cv->input_limit = limit;
	if (reqval_input(&rl->req, &p, &n)) {
		cv->input = convbody_drop_reasoning(p, n, limit, &cv->dropped);
		if (cv->input == NULL && cv->dropped != 0) {
			cv->input_made = false;
			cv->dropped = 0;
			return -1;
		}
	}
	return 0;
}

/*
 * What a conversation changes in the attempt's body (convbody.h): its
 * session_id, the automatic cache_control when the pinned endpoint
 * caches only explicitly, and the input without provider-bound reasoning
 * items: all of them when the turn goes elsewhere than its last provider
 * (or an upstream 400 said they are unreadable), else those among the
 * first foreign_items of the record, which an earlier provider wrote
 * (the client's input only grows from turn to turn).  -1 when out of
 * memory.
 */
int
conv_edits(struct relay *rl, struct reqval_edits *ed)
{
	struct relay_conv *cv = &rl->cv;
	const char *pin = pinned_tag(rl);
	size_t limit;

	memset(ed, 0, sizeof(*ed));
	cv->dropped_sent = 0;
	if (!cv->on || rl->route.kind == ROUTE_CLIENT)
		return 0;
	ed->session_id = conv_forward_session(&cv->key);
	ed->cache_control = convbody_auto_cache(
		rl->api->id, rl->c->auto_cache != 0,
		cv->route.explicit_cache && pin != NULL &&
			strcmp(pin, cv->explicit_tag) == 0,
		cv->has_breakpoint);
	if (rl->api->id != API_RESPONSES)
		return 0;
	/* Moved: another provider than the one that served the last turn
	 * (a conversation unknown here has none to be bound to). */
	if (cv->route.have &&
	    (pin == NULL || strcmp(pin, cv->route.prev_tag) != 0))
		cv->all = true;
	cv->all_sent = cv->all;
	if (cv->all)
		limit = CONVBODY_ALL;
	else
		limit = cv->route.foreign_items > 0 ?
				(size_t)cv->route.foreign_items :
				0;
	/* Most turns have nothing to leave out: no second parse. */
	if (cv->first_bound >= limit)
		return 0;
	if (conv_input(rl, limit) != 0)
		return -1;
	ed->input = cv->input;
	cv->dropped_sent = cv->input != NULL ? cv->dropped : 0;
	return 0;
}

/* The error object of the attempt's error body (caller deletes), or
 * NULL. */
static cJSON *
attempt_error(const struct attempt *a)
{
	const char *p = a->body.p ? a->body.p : "";

	if (a->is_sse || a->body.len == 0)
		return NULL;
	p += padding_len(p, a->body.len);
	return cJSON_ParseWithLength(p, strlen(p));
}

/*
 * A 429 on a conversation's turn: a provider 429 (one naming it) puts the
 * provider under pressure for the model; a turn without a warm provider
 * then goes at once to the next candidate neither cooling nor under
 * pressure.  True when it moved (the attempt loop retries without a
 * wait).  With CONVERSATIONS=0 a 429 is any request's: retried on the
 * same provider after RETRY_429_DELAYS, no pressure written.
 */
bool
conv_429(struct relay *rl)
{
	struct state_route next = rl->route;
	bool moved = false, p429;
	cJSON *err;

	if (!rl->cv.on || !rl->c->conversations || rl->used_tag[0] == '\0' ||
	    rl->route.kind == ROUTE_CLIENT)
		return false;
	err = attempt_error(&rl->a);
	p429 = failover_provider_429(true, convbody_429_named(err), false);
	cJSON_Delete(err);
	if (!p429)
		return false;
	(void)state_pressure(rl->c, rl->req.model, rl->used_tag, clock_now_s(),
			     rl->cv.route.warm ? NULL : &next, &moved);
	if (!failover_429_moves(p429, rl->cv.route.warm, moved, rl->attempts,
				rl->c->max_attempts))
		return false;
	rl->route = next;
	return true;
}

/*
 * An upstream 400 saying a reasoning item's encrypted_content cannot be
 * read (another provider made it): retried once at once without those
 * items; not a provider failure.  True when it is to be retried.
 */
bool
conv_invalid_encrypted(struct relay *rl)
{
	struct relay_conv *cv = &rl->cv;
	cJSON *err;
	bool mentions;

	/* Only a conversation's body is edited (conv_edits). */
	if (rl->api->id != API_RESPONSES || rl->a.status != 400 ||
	    cv->retried || !cv->on || rl->route.kind == ROUTE_CLIENT ||
	    cv->first_bound == CONVBODY_ALL)
		return false;
	err = attempt_error(&rl->a);
	mentions = convbody_invalid_encrypted(err);
	cJSON_Delete(err);
	if (!mentions)
		return false;
	/* Out of memory: the 400 goes to the client. */
	if (conv_input(rl, CONVBODY_ALL) != 0)
		return false;
	/* Items to leave out that the attempt still sent. */
	if (!convbody_retry_without_reasoning(
		    rl->a.status, mentions,
		    cv->input != NULL && cv->dropped > cv->dropped_sent,
		    cv->retried))
		return false;
	cv->retried = true;
	cv->all = true;
	return true;
}

/*
 * The request's conversation, from the body reqval parsed (which is
 * then freed: a large body is parsed once): its key, scoped by the team
 * key's name ("" for the operator's key) and the model; the prompt's
 * fingerprints; whether it carries a cache breakpoint.  A client's own
 * provider object routes itself: no conversation.  Out of memory leaves
 * the request without one.
 */
void
conv_prepare(struct relay *rl)
{
	struct relay_conv *cv = &rl->cv;
	const cJSON *tree = rl->req.tree, *prev;

	if (tree == NULL || rl->req.has_provider)
		goto out;
	if (conv_key_of(tree, &rl->in->conv,
			rl->in->team ? rl->in->team->key.name : "",
			rl->req.model, &cv->key) != ORGW_OK ||
	    fp_compute(tree, rl->api->id, &cv->fp) != ORGW_OK)
		goto out;
	conv_show(&cv->key, cv->show, sizeof(cv->show));
	cv->has_breakpoint = convbody_has_breakpoint(tree);
	prev = cJSON_GetObjectItemCaseSensitive(tree, "previous_response_id");
	cv->only_new = rl->api->id == API_RESPONSES && cJSON_IsString(prev);
	cv->first_bound = CONVBODY_ALL;
	if (rl->api->id == API_RESPONSES)
		cv->n_items = convbody_input_items(
			cJSON_GetObjectItemCaseSensitive(tree, rl->api->input),
			&cv->first_bound);
	cv->route.hash = cv->key.hash;
	cv->route.want_explicit =
		rl->c->auto_cache != 0 && rl->api->id != API_RESPONSES &&
		!cv->has_breakpoint;
	cv->on = true;
out:
	cJSON_Delete(rl->req.tree);
	rl->req.tree = NULL;
}
