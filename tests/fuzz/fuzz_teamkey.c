/*
 * fuzz_teamkey.c - libFuzzer target for the decoders of teamkey_codec.c:
 * the records TEAMKEY:<name>, TEAMKEY_USE:<name>:<when> and
 * TEAMKEY_RATE:<name> as read back from the keys store.
 *
 * The input, with a NUL after it, is given to teamkey_decode,
 * teamkey_use_decode and teamkey_rate_decode.  Invariants (a violation
 * aborts):
 *   - a refused text leaves its struct zeroed;
 *   - a decoded key has a good name, a 64-digit hex hash, at most
 *     TEAMKEY_GLOBS_MAX good globs, finite numbers >= 0; a decoded rate
 *     at most TEAMKEY_LEASES_MAX leases with good ids;
 *   - what decodes encodes, and decode(encode(x)) equals x exactly (a
 *     use window's cell is written with 17 significant digits); a use
 *     window holds only the rows a key counts, and a sum of two still
 *     encodes;
 *   - admitting a request into a decoded rate keeps the table within
 *     its bound and still encodes; releasing what was admitted works.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "teamkey.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
need(bool ok)
{
	if (!ok)
		abort();
}

static bool
zero(const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != 0)
			return false;
	return true;
}

/* a == b within the precision cJSON keeps when printing. */
static bool
near(double a, double b)
{
	return a == b || fabs(a - b) <= 1e-14 * fmax(fabs(a), fabs(b));
}

static bool
key_eq(const struct teamkey *a, const struct teamkey *b)
{
	size_t i;

	if (strcmp(a->name, b->name) != 0 || strcmp(a->hash, b->hash) != 0 ||
	    a->n_globs != b->n_globs ||
	    !near(a->budget_day_usd, b->budget_day_usd) ||
	    !near(a->budget_month_usd, b->budget_month_usd) || a->rpm != b->rpm ||
	    a->concurrent != b->concurrent || a->expires != b->expires ||
	    a->created != b->created || a->rotated != b->rotated ||
	    a->admin != b->admin || a->disabled != b->disabled)
		return false;
	for (i = 0; i < a->n_globs; i++)
		if (strcmp(a->globs[i], b->globs[i]) != 0)
			return false;
	return true;
}

static void
fuzz_key(const char *text)
{
	struct teamkey k, back;
	size_t i;
	char *s;

	if (teamkey_decode(text, &k) != ORGW_OK) {
		need(zero(&k, sizeof(k)));
		return;
	}
	need(teamkey_name_ok(k.name) && strlen(k.hash) == TEAMKEY_HASH_HEX &&
	     k.n_globs <= TEAMKEY_GLOBS_MAX);
	for (i = 0; i < k.n_globs; i++)
		need(teamkey_glob_ok(k.globs[i]));
	need(isfinite(k.budget_day_usd) && k.budget_day_usd >= 0 &&
	     isfinite(k.budget_month_usd) && k.budget_month_usd >= 0 &&
	     k.rpm >= 0 && k.concurrent >= 0 && k.expires >= 0 &&
	     k.created >= 0 && k.rotated >= 0);
	need((s = teamkey_encode(&k)) != NULL);
	need(teamkey_decode(s, &back) == ORGW_OK && key_eq(&k, &back));
	free(s);
	/* The checks take any decoded key. */
	(void)teamkey_check_key(&k, k.expires, "openrouter/auto", NULL, 0);
	(void)teamkey_check_budget(&k, NULL, NULL);
}

static void
fuzz_use(const char *text)
{
	struct ledger_cell u, back, sum;
	char *s;
	int i;

	if (teamkey_use_decode(text, &u) != ORGW_OK) {
		need(zero(&u, sizeof(u)));
		return;
	}
	for (i = 0; i < LX_N; i++)
		need(ledger_key_row(i) || u.v[i] == 0);
	need((s = teamkey_use_encode(&u)) != NULL);
	need(teamkey_use_decode(s, &back) == ORGW_OK);
	for (i = 0; i < LX_N; i++)
		need(back.v[i] == u.v[i]);
	free(s);
	sum = u;
	teamkey_use_add(&sum, &u);
	need(sum.v[LX_REQUESTS] >= u.v[LX_REQUESTS] &&
	     sum.v[LX_LAST_USED] == u.v[LX_LAST_USED]);
	/* Every row is held within 10^15: a sum always encodes. */
	need((s = teamkey_use_encode(&sum)) != NULL);
	free(s);
}

static void
fuzz_rate(const char *text, size_t size)
{
	struct teamkey_rate *r = malloc(sizeof(*r)), *back = malloc(sizeof(*back));
	struct teamkey k;
	int64_t ra = -1, now;
	size_t i;
	char *s;

	if (r == NULL || back == NULL)
		goto out;
	if (teamkey_rate_decode(text, r) != ORGW_OK) {
		need(zero(r, sizeof(*r)));
		goto out;
	}
	need(r->n_leases <= TEAMKEY_LEASES_MAX && r->slot >= 0);
	for (i = 0; i < TEAMKEY_RPM_SLOTS; i++)
		need(r->slots[i] >= 0);
	for (i = 0; i < r->n_leases; i++)
		need(r->leases[i].id[0] != '\0' &&
		     strlen(r->leases[i].id) <= 32 && r->leases[i].until_ms >= 0);
	need((s = teamkey_rate_encode(r)) != NULL);
	need(teamkey_rate_decode(s, back) == ORGW_OK &&
	     back->slot == r->slot &&
	     memcmp(back->slots, r->slots, sizeof(r->slots)) == 0 &&
	     back->n_leases == r->n_leases);
	for (i = 0; i < r->n_leases; i++)
		need(strcmp(back->leases[i].id, r->leases[i].id) == 0 &&
		     back->leases[i].until_ms == r->leases[i].until_ms &&
		     back->leases[i].host == r->leases[i].host &&
		     back->leases[i].pid == r->leases[i].pid &&
		     back->leases[i].start == r->leases[i].start);
	free(s);

	/* One request in the record's own slot, limits from the size. */
	memset(&k, 0, sizeof(k));
	k.rpm = (int64_t)(size % 7);
	k.concurrent = (int64_t)(size % 5);
	/* A slot past what int64_t ms can hold is no clock's: then any. */
	now = r->slot < INT64_MAX / TEAMKEY_RPM_SLOT_MS - 1 ?
		      r->slot * TEAMKEY_RPM_SLOT_MS +
			      (int64_t)(size % TEAMKEY_RPM_SLOT_MS) :
		      (int64_t)size;
	if (teamkey_rate_admit(&k, r, now, "f00d", 30000, &ra) == TK_OK) {
		need(ra == 0 && teamkey_rate_count(r, now) >= 1);
		if (k.concurrent > 0)
			need(teamkey_rate_release(r, "f00d"));
	} else {
		need(ra >= 1 && ra <= 65);
	}
	need(r->n_leases <= TEAMKEY_LEASES_MAX);
	for (i = 0; i < r->n_leases; i++)
		need(r->leases[i].until_ms > now);
	need((s = teamkey_rate_encode(r)) != NULL);
	free(s);
out:
	free(r);
	free(back);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if ((text = malloc(size + 1)) == NULL)
		return 0;
	if (size)
		memcpy(text, data, size);
	text[size] = '\0';
	fuzz_key(text);
	fuzz_use(text);
	fuzz_rate(text, size);
	free(text);
	return 0;
}
