/*
 * statekeys.c - the table of the stores' key families and the one maker
 * and parser of their keys (statekeys.h).  Pure.
 */
#include <string.h>

#include "statekeys.h"

#define M STATEKEY_PER_MODEL
#define P STATEKEY_PER_PROVIDER
#define C STATEKEY_PER_CONVERSATION
#define X STATEKEY_EXPIRING
#define D STATEKEY_DURABLE
#define W STATEKEY_SWEPT
#define S STATEKEY_SHOWN
/* A family with parts is spelled with its ':', one without parts is the
 * key itself. */
#define ROW(prefix, parts, flags, what)                                   \
	{prefix, sizeof(prefix) - 1, parts, flags, what}

/* Indexed by enum statekey; the static assertion keeps the two in step. */
static const struct statekey_family families[] = {
	[SK_MODEL_SEEN] = ROW(STATEKEY_P_MODEL_SEEN, 1, M | S,
			      "a model seen, with its first-seen time"),
	[SK_MODELS_SEEN_OLD] = ROW(STATEKEY_P_MODELS_SEEN_OLD, 0, 0,
				   "the old release's list of models seen, "
				   "moved to MODEL_SEEN keys by the scorer"),
	[SK_BEST_PROVIDER] = ROW(STATEKEY_P_BEST_PROVIDER, 1, M | W | S,
				 "the model's live lock"),
	[SK_PROVIDER_CANDIDATE] = ROW(STATEKEY_P_PROVIDER_CANDIDATE, 1, M | W | S,
				      "ranked candidates of the last scoring"),
	[SK_LOCK_LOG] = ROW(STATEKEY_P_LOCK_LOG, 1, M | W | S,
			    "the model's last lock changes"),
	[SK_PROVIDER_FAILURE] = ROW(STATEKEY_P_PROVIDER_FAILURE, 2, M | P | W | S,
				    "consecutive failures of a provider"),
	[SK_PROVIDER_COOLDOWN] = ROW(STATEKEY_P_PROVIDER_COOLDOWN, 2,
				     M | P | X | W | S,
				     "a provider cooling until a time"),
	[SK_HIT] = ROW(STATEKEY_P_HIT, 1, M | W | S,
		       "measured cache-hit rates per provider"),
	[SK_CONV] = ROW(STATEKEY_P_CONV, 2, M | C | W | S,
			"a conversation's provider, fingerprints and cache "
			"record (bounded by the scorer's sweep)"),
	[SK_PRESSURE] = ROW(STATEKEY_P_PRESSURE, 2, M | P | W | S,
			    "a provider's 429 under load, until it ends"),
	[SK_LEDGER] = ROW(STATEKEY_P_LEDGER, 4, M | S,
			  "counter cells by model, day, API and provider "
			  "(folded by the scorer, not swept)"),
	[SK_STATS_OLD] = ROW(STATEKEY_P_STATS_OLD, 1, M | S,
			     "the old release's counters, added in, kept"),
	[SK_METRICS_OLD] = ROW(STATEKEY_P_METRICS_OLD, 1, M | S,
			       "the old release's metrics, added in, kept"),
	[SK_LOST_UPDATES] = ROW(STATEKEY_P_LOST_UPDATES, 0, S,
				"requests not counted while the state was "
				"away"),
	[SK_TEAMKEY_RATE] = ROW(STATEKEY_P_TEAMKEY_RATE, 1, 0,
				"a team key's minute count and leases"),
	[SK_TEAMKEY_HOLD] = ROW(STATEKEY_P_TEAMKEY_HOLD, 1, 0,
				"what a team key's requests in flight hold of "
				"its budget"),
	[SK_TEAMKEY] = ROW(STATEKEY_P_TEAMKEY, 1, D, "a team key's record"),
	[SK_TEAMKEY_HASH] = ROW(STATEKEY_P_TEAMKEY_HASH, 1, D,
				"keyed hash of a team key, to its name"),
	[SK_TEAMKEY_USE] = ROW(STATEKEY_P_TEAMKEY_USE, 2, D,
			       "a team key's use in a day or a month"),
	[SK_TXN] = ROW(STATEKEY_P_TXN, 1, X,
		       "marker of a Redis write transaction's outcome"),
};

_Static_assert(sizeof(families) / sizeof(families[0]) == SK_COUNT,
	       "one row of families[] per enum statekey");

const struct statekey_family *
statekeys_family(enum statekey f)
{
	if ((int)f < 0 || f >= SK_COUNT)
		return NULL;
	return &families[f];
}

const char *
statekeys_prefix(enum statekey f)
{
	const struct statekey_family *fam = statekeys_family(f);

	return fam != NULL ? fam->prefix : NULL;
}

const char *
statekeys_is(const char *key, enum statekey f)
{
	const struct statekey_family *fam = statekeys_family(f);

	if (fam == NULL || key == NULL ||
	    strncmp(key, fam->prefix, fam->prefix_len) != 0)
		return NULL;
	if (fam->parts == 0 && key[fam->prefix_len] != '\0')
		return NULL;
	return key + fam->prefix_len;
}

bool
statekeys_make(char *k, size_t n, enum statekey f, const char *first,
	       const char *last)
{
	const struct statekey_family *fam = statekeys_family(f);
	size_t fl, ll, need;

	if (n > 0)
		k[0] = '\0';
	if (fam == NULL || n == 0)
		return false;
	if (fam->parts == 0) {
		if (first != NULL || last != NULL)
			return false;
		fl = ll = 0;
	} else {
		if (first == NULL || first[0] == '\0' ||
		    (fam->parts == 2) != (last != NULL) ||
		    (last != NULL &&
		     (last[0] == '\0' || strchr(last, ':') != NULL)))
			return false;
		fl = strlen(first);
		ll = last != NULL ? strlen(last) + 1 : 0;
	}
	need = fam->prefix_len + fl + ll;
	if (need >= n)
		return false;
	memcpy(k, fam->prefix, fam->prefix_len);
	if (fl > 0)
		memcpy(k + fam->prefix_len, first, fl);
	if (ll > 0) {
		k[fam->prefix_len + fl] = ':';
		memcpy(k + fam->prefix_len + fl + 1, last, ll - 1);
	}
	k[need] = '\0';
	return true;
}

bool
statekeys_parse(const char *key, struct statekey_parts *p)
{
	const char *rest = NULL, *end;
	size_t len;
	int f;

	for (f = 0; f < SK_COUNT; f++)
		if ((rest = statekeys_is(key, (enum statekey)f)) != NULL)
			break;
	if (rest == NULL)
		return false;
	p->family = (enum statekey)f;
	p->first[0] = '\0';
	p->last = "";
	if (families[f].parts == 0)
		return true;
	if (families[f].parts == 4) {
		/* The ledger's own parser (ledger_key_split) parts it. */
		p->last = rest;
		return rest[0] != '\0';
	}
	end = rest + strlen(rest);
	if (families[f].parts == 2) {
		if ((end = strrchr(rest, ':')) == NULL)
			return false;
		p->last = end + 1;
	}
	len = (size_t)(end - rest);
	if (len == 0 || len >= sizeof(p->first))
		return false;
	memcpy(p->first, rest, len);
	p->first[len] = '\0';
	return true;
}
