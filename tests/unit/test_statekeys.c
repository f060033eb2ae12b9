/*
 * test_statekeys.c - the table of key families and its maker and parser
 * (statekeys.h): every family's key made from its parts parses back to
 * the same family and parts, and the keys the stores held before the
 * table are spelled as they were.
 */
#include <stdio.h>
#include <string.h>

#include "statekeys.h"
#include "t.h"

/* Parts to make each family's key from, by how many it takes. */
static void
parts_for(const struct statekey_family *fam, const char **first,
	  const char **last)
{
	*first = NULL;
	*last = NULL;
	if (fam->parts >= 1)
		*first = fam->parts == 4 ? "m/x:free:2026-12-05:chat:deepinfra"
					 : "vendor/model:free";
	if (fam->parts == 2)
		*last = "deepinfra/fp8";
}

static void
test_round_trip(void)
{
	char k[512], what[160];
	int f, g;

	for (f = 0; f < SK_COUNT; f++) {
		const struct statekey_family *fam =
			statekeys_family((enum statekey)f);
		struct statekey_parts p;
		const char *first, *last;

		snprintf(what, sizeof(what), "family %d has a row", f);
		T_ASSERT(what, fam != NULL && fam->prefix != NULL &&
				       fam->prefix_len == strlen(fam->prefix) &&
				       fam->what != NULL);
		if (fam == NULL)
			continue;
		T_ASSERT(fam->prefix,
			 (fam->parts == 0) ==
				 (fam->prefix[fam->prefix_len - 1] != ':'));
		parts_for(fam, &first, &last);
		snprintf(what, sizeof(what), "%s: made", fam->prefix);
		T_ASSERT(what,
			 statekeys_make(k, sizeof(k), (enum statekey)f, first,
					last));
		snprintf(what, sizeof(what), "%s: parses to its family",
			 fam->prefix);
		T_ASSERT(what, statekeys_parse(k, &p) && (int)p.family == f);
		snprintf(what, sizeof(what), "%s: parts come back", fam->prefix);
		if (fam->parts == 4)
			T_ASSERT(what, p.first[0] == '\0' &&
					       strcmp(p.last, first) == 0);
		else
			T_ASSERT(what,
				 strcmp(p.first, first ? first : "") == 0 &&
					 strcmp(p.last, last ? last : "") == 0);
		snprintf(what, sizeof(what), "%s: is its own family only",
			 fam->prefix);
		for (g = 0; g < SK_COUNT; g++)
			if ((statekeys_is(k, (enum statekey)g) != NULL) !=
			    (g == f))
				break;
		T_ASSERT(what, g == SK_COUNT);
		snprintf(what, sizeof(what), "%s: prefix is the row's",
			 fam->prefix);
		T_ASSERT(what, statekeys_prefix((enum statekey)f) ==
				       fam->prefix);
	}
}

/* The keys the stores hold are spelled as before the table: a state
 * written by the last release reads back the same. */
static void
test_spelling(void)
{
	static const struct {
		enum statekey f;
		const char *first, *last, *key;
	} v[] = {
		{SK_MODEL_SEEN, "a/b", NULL, "MODEL_SEEN:a/b"},
		{SK_MODELS_SEEN_OLD, NULL, NULL, "MODELS_SEEN"},
		{SK_BEST_PROVIDER, "a/b", NULL, "BEST_PROVIDER:a/b"},
		{SK_PROVIDER_CANDIDATE, "a/b", NULL, "PROVIDER_CANDIDATE:a/b"},
		{SK_LOCK_LOG, "a/b", NULL, "LOCK_LOG:a/b"},
		{SK_PROVIDER_FAILURE, "a/b:free", "x/fp8",
		 "PROVIDER_FAILURE:a/b:free:x/fp8"},
		{SK_PROVIDER_COOLDOWN, "a/b", "x", "PROVIDER_COOLDOWN:a/b:x"},
		{SK_HIT, "a/b", NULL, "HIT:a/b"},
		{SK_CONV, "a/b:free", "9f0c", "CONV:a/b:free:9f0c"},
		{SK_PRESSURE, "a/b", "x/fp8", "PRESSURE:a/b:x/fp8"},
		{SK_LEDGER, "a/b:d:chat:x", NULL, "LEDGER:a/b:d:chat:x"},
		{SK_STATS_OLD, "a/b", NULL, "STATS:a/b"},
		{SK_METRICS_OLD, "a/b", NULL, "METRICS:a/b"},
		{SK_LOST_UPDATES, NULL, NULL, "LOST_UPDATES"},
		{SK_TEAMKEY_RATE, "team", NULL, "TEAMKEY_RATE:team"},
		{SK_TEAMKEY_HOLD, "team", NULL, "TEAMKEY_HOLD:team"},
		{SK_TEAMKEY, "team", NULL, "TEAMKEY:team"},
		{SK_TEAMKEY_HASH, "ab01", NULL, "TEAMKEY_HASH:ab01"},
		{SK_TEAMKEY_USE, "team", "2026-12", "TEAMKEY_USE:team:2026-12"},
		{SK_TXN, "00ff", NULL, "TXN:00ff"},
	};
	char k[256];
	size_t i;

	T_ASSERT("spelling: every family checked",
		 sizeof(v) / sizeof(v[0]) == SK_COUNT);
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		T_ASSERT(v[i].key,
			 statekeys_make(k, sizeof(k), v[i].f, v[i].first,
					v[i].last) &&
				 strcmp(k, v[i].key) == 0);
}

/* What the flags say the scorer sweeps, /stats shows and Redis expires. */
static void
test_flags(void)
{
	int f, swept = 0, durable_swept = 0;

	for (f = 0; f < SK_COUNT; f++) {
		unsigned fl = statekeys_family((enum statekey)f)->flags;

		swept += (fl & STATEKEY_SWEPT) != 0;
		durable_swept += (fl & STATEKEY_SWEPT) && (fl & STATEKEY_DURABLE);
		if (fl & STATEKEY_SWEPT)
			T_ASSERT("flags: a swept family is per model",
				 (fl & STATEKEY_PER_MODEL) != 0);
	}
	T_ASSERT("flags: eight families are swept with their model",
		 swept == 8);
	T_ASSERT("flags: the keys store is never swept", durable_swept == 0);
	T_ASSERT("flags: cooldowns expire",
		 statekeys_family(SK_PROVIDER_COOLDOWN)->flags &
			 STATEKEY_EXPIRING);
	T_ASSERT("flags: the team keys are durable",
		 (statekeys_family(SK_TEAMKEY)->flags & STATEKEY_DURABLE) &&
			 (statekeys_family(SK_TEAMKEY_HASH)->flags &
			  STATEKEY_DURABLE) &&
			 (statekeys_family(SK_TEAMKEY_USE)->flags &
			  STATEKEY_DURABLE));
	T_ASSERT("flags: MODEL_SEEN is pruned, not swept",
		 !(statekeys_family(SK_MODEL_SEEN)->flags & STATEKEY_SWEPT));
	T_ASSERT("flags: the ledger is folded, not swept",
		 !(statekeys_family(SK_LEDGER)->flags & STATEKEY_SWEPT));
}

static void
test_refused(void)
{
	struct statekey_parts p;
	char k[32], big[ORGW_MODEL_MAX + 32];

	T_ASSERT("make: a missing part is refused",
		 !statekeys_make(k, sizeof(k), SK_BEST_PROVIDER, NULL, NULL) &&
			 k[0] == '\0');
	T_ASSERT("make: an empty part is refused",
		 !statekeys_make(k, sizeof(k), SK_BEST_PROVIDER, "", NULL));
	T_ASSERT("make: a tag is needed",
		 !statekeys_make(k, sizeof(k), SK_PROVIDER_FAILURE, "m",
				 NULL));
	T_ASSERT("make: an extra part is refused",
		 !statekeys_make(k, sizeof(k), SK_HIT, "m", "t") &&
			 !statekeys_make(k, sizeof(k), SK_LOST_UPDATES, "m",
					 NULL));
	T_ASSERT("make: a tag with ':' is refused",
		 !statekeys_make(k, sizeof(k), SK_PROVIDER_FAILURE, "m",
				 "a:b"));
	T_ASSERT("make: too long is refused, k empty",
		 !statekeys_make(k, sizeof(k), SK_PROVIDER_CANDIDATE,
				 "a-model-id-that-is-long", NULL) &&
			 k[0] == '\0');
	T_ASSERT("make: exactly fitting is made",
		 statekeys_make(k, 8, SK_HIT, "abc", NULL) &&
			 strcmp(k, "HIT:abc") == 0);
	T_ASSERT("make: one byte short is refused",
		 !statekeys_make(k, 8, SK_HIT, "abcd", NULL));
	T_ASSERT("make: out of range is refused",
		 !statekeys_make(k, sizeof(k), SK_COUNT, "m", NULL) &&
			 statekeys_family(SK_COUNT) == NULL &&
			 statekeys_prefix(SK_COUNT) == NULL);
	T_ASSERT("parse: no family", !statekeys_parse("NOPE:x", &p) &&
					     !statekeys_parse("", &p) &&
					     !statekeys_parse("HIT", &p));
	T_ASSERT("parse: empty model", !statekeys_parse("HIT:", &p));
	T_ASSERT("parse: a tagged key without its tag",
		 !statekeys_parse("PROVIDER_FAILURE:model", &p));
	T_ASSERT("parse: an empty tag parses (a damaged key is swept)",
		 statekeys_parse("PROVIDER_FAILURE:model:", &p) &&
			 strcmp(p.first, "model") == 0 && p.last[0] == '\0');
	T_ASSERT("parse: a key longer than its name is not the name",
		 !statekeys_parse("LOST_UPDATESX", &p) &&
			 statekeys_is("LOST_UPDATESX", SK_LOST_UPDATES) ==
				 NULL);
	T_ASSERT("parse: TEAMKEY_HASH is not TEAMKEY",
		 statekeys_parse("TEAMKEY_HASH:ab", &p) &&
			 p.family == SK_TEAMKEY_HASH);
	memset(big, 'm', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "HIT:", 4);
	T_ASSERT("parse: a model too long is refused",
		 !statekeys_parse(big, &p));
}

int
main(void)
{
	test_round_trip();
	test_spelling();
	test_flags();
	test_refused();
	return T_REPORT();
}
