/*
 * teamkey_rate.c - a team key's TEAMKEY_RATE:<name> record at work (see
 * teamkey.h): the minute's request count and its windows, admitting a
 * request under the key's rpm and concurrency, the leases a request
 * holds and gives back, and the day's and month's spend kept beside
 * them.  The record's codec is teamkey_codec.c's.  Pure and free of
 * process-wide state, like teamkey.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "teamkey.h"
#include "teamkey_impl.h"

/* a / b rounded down, for b > 0 (C's '/' rounds toward zero). */
static int64_t
div_floor(int64_t a, int64_t b)
{
	return a / b - (a % b < 0);
}

/* ms as whole seconds, rounded up, in [lo, hi]. */
static int64_t
ceil_s(int64_t ms, int64_t lo, int64_t hi)
{
	int64_t s = ms <= 0 ? 0 : ms / 1000 + (ms % 1000 != 0);

	return s < lo ? lo : s > hi ? hi : s;
}

/* Moves r's window to the slot of now_ms: the slots that left it are
 * zeroed.  A now before r->slot (a clock stepped back) counts in the
 * newest slot: nothing leaves the window early. */
static void
window_move(struct teamkey_rate *r, int64_t now_ms)
{
	int64_t slot = div_floor(now_ms, TEAMKEY_RPM_SLOT_MS), d;

	if (slot <= r->slot)
		return;
	d = slot - r->slot;
	if (d >= TEAMKEY_RPM_SLOTS) {
		memset(r->slots, 0, sizeof(r->slots));
	} else {
		memmove(&r->slots[d], &r->slots[0],
			(size_t)(TEAMKEY_RPM_SLOTS - d) * sizeof(r->slots[0]));
		memset(r->slots, 0, (size_t)d * sizeof(r->slots[0]));
	}
	r->slot = slot;
}

int64_t
teamkey_rate_count(const struct teamkey_rate *r, int64_t now_ms)
{
	struct teamkey_rate w;
	int64_t n = 0;
	size_t i;

	memcpy(w.slots, r->slots, sizeof(w.slots));
	w.slot = r->slot;
	window_move(&w, now_ms);
	for (i = 0; i < TEAMKEY_RPM_SLOTS; i++)
		n = count_add(n, w.slots[i]);
	return n;
}

/* The ms until r's window (moved to now_ms) holds fewer than rpm: the
 * oldest slots leave it one by one, slot s when now reaches the start
 * of slot s + TEAMKEY_RPM_SLOTS. */
static int64_t
window_wait_ms(const struct teamkey_rate *r, int64_t now_ms, int64_t rpm)
{
	int64_t n = teamkey_rate_count(r, now_ms);
	size_t i;

	for (i = TEAMKEY_RPM_SLOTS; i-- > 0 && n >= rpm;) {
		n -= r->slots[i];
		if (n < rpm)
			return (r->slot - (int64_t)i + TEAMKEY_RPM_SLOTS) *
				       TEAMKEY_RPM_SLOT_MS -
			       now_ms;
	}
	return TEAMKEY_RPM_SLOTS * TEAMKEY_RPM_SLOT_MS;
}

enum teamkey_verdict
teamkey_rate_admit(const struct teamkey *k, struct teamkey_rate *r,
		   int64_t now_ms, const char *lease_id, int64_t lease_ms,
		   int64_t *retry_after_s)
{
	int64_t first, retry = 0;
	enum teamkey_verdict v = TK_OK;
	size_t i, n = 0;

	/* Leases end when they end, held or not: a request that died
	 * without releasing frees its place after lease_ms. */
	if (r->n_leases > TEAMKEY_LEASES_MAX)
		r->n_leases = TEAMKEY_LEASES_MAX;
	for (i = 0; i < r->n_leases; i++)
		if (r->leases[i].until_ms > now_ms)
			r->leases[n++] = r->leases[i];
	r->n_leases = n;

	window_move(r, now_ms);
	if (k->rpm > 0 && teamkey_rate_count(r, now_ms) >= k->rpm) {
		retry = ceil_s(window_wait_ms(r, now_ms, k->rpm), 1,
			       TEAMKEY_RPM_SLOTS * TEAMKEY_RPM_SLOT_MS / 1000);
		v = TK_RPM;
	} else if (k->concurrent > 0 &&
		   ((int64_t)n >= k->concurrent || n >= TEAMKEY_LEASES_MAX ||
		    !lease_id_ok(lease_id))) {
		/* A bad id is refused too: a request admitted without its
		 * lease would not count against the limit. */
		first = INT64_MAX;
		for (i = 0; i < n; i++)
			if (r->leases[i].until_ms < first)
				first = r->leases[i].until_ms;
		retry = n ? ceil_s(first - now_ms, 1, 60) : 1;
		v = TK_CONCURRENT;
	} else {
		r->slots[0] = count_add(r->slots[0], 1);
		if (k->concurrent > 0) {
			struct teamkey_lease *l = &r->leases[r->n_leases++];

			snprintf(l->id, sizeof(l->id), "%s", lease_id);
			/* At least 1 ms, so the lease is held at all, and
			 * no later than a record can say. */
			lease_ms = lease_ms < 1 ? 1 :
				   lease_ms > TK_NUM_MAX ? TK_NUM_MAX : lease_ms;
			l->until_ms = now_ms > TK_NUM_MAX - lease_ms ?
					      TK_NUM_MAX :
					      now_ms + lease_ms;
		}
	}
	if (retry_after_s != NULL)
		*retry_after_s = retry;
	return v;
}

void
teamkey_lease_make(const unsigned char rnd[16],
		   char id[TEAMKEY_LEASE_ID_MAX + 1])
{
	orgw_hex(rnd, 16, id);
}

bool
teamkey_rate_release(struct teamkey_rate *r, const char *lease_id)
{
	size_t i;

	if (lease_id == NULL)
		return false;
	for (i = 0; i < r->n_leases && i < TEAMKEY_LEASES_MAX; i++)
		if (strcmp(r->leases[i].id, lease_id) == 0) {
			memmove(&r->leases[i], &r->leases[i + 1],
				(r->n_leases - i - 1) * sizeof(r->leases[0]));
			r->n_leases--;
			return true;
		}
	return false;
}

bool
teamkey_rate_own(struct teamkey_rate *r, const char *lease_id, int64_t host,
		 int64_t pid, int64_t start)
{
	size_t i;

	if (lease_id == NULL || !int_ok(host) || !int_ok(pid) ||
	    !int_ok(start))
		return false;
	for (i = r->n_leases < TEAMKEY_LEASES_MAX ? r->n_leases :
						      TEAMKEY_LEASES_MAX;
	     i-- > 0;)
		if (strcmp(r->leases[i].id, lease_id) == 0) {
			r->leases[i].host = host;
			r->leases[i].pid = pid;
			r->leases[i].start = start;
			return true;
		}
	return false;
}

size_t
teamkey_rate_drop(struct teamkey_rate *r,
		  bool (*gone)(void *arg, const struct teamkey_lease *l),
		  void *arg)
{
	size_t i, n = 0, held = r->n_leases < TEAMKEY_LEASES_MAX ?
					r->n_leases :
					TEAMKEY_LEASES_MAX;

	for (i = 0; i < held; i++)
		if (!gone(arg, &r->leases[i]))
			r->leases[n++] = r->leases[i];
	r->n_leases = n;
	return held - n;
}

/* The windows of now_s: unix day, and year * 12 + month - 1. */
static void
windows_of(int64_t now_s, int64_t *day, int64_t *month)
{
	char m[8];

	teamkey_month(now_s, m);
	*day = div_floor(now_s, 86400);
	*month = strtoll(m, NULL, 10) * 12 + strtoll(m + 5, NULL, 10) - 1;
}

void
teamkey_rate_spend(struct teamkey_rate *r, int64_t now_s, double usd)
{
	int64_t day, month;

	windows_of(now_s, &day, &month);
	if (r->day != day) {
		r->day = day;
		r->spent_day = 0;
	}
	if (r->month != month) {
		r->month = month;
		r->spent_month = 0;
	}
	if (!isfinite(usd) || usd <= 0)
		return;
	/* Held below what a record can say, as every spend is. */
	r->spent_day = dbl_ok(r->spent_day + usd) ? r->spent_day + usd :
						     (double)TK_NUM_MAX;
	r->spent_month = dbl_ok(r->spent_month + usd) ? r->spent_month + usd :
							 (double)TK_NUM_MAX;
}

void
teamkey_rate_use(const struct teamkey_rate *r, int64_t now_s,
		 struct ledger_cell *day, struct ledger_cell *month)
{
	int64_t d, m;

	windows_of(now_s, &d, &m);
	if (r->day == d && r->spent_day > day->v[LX_KEY_SPEND])
		day->v[LX_KEY_SPEND] = r->spent_day;
	if (r->month == m && r->spent_month > month->v[LX_KEY_SPEND])
		month->v[LX_KEY_SPEND] = r->spent_month;
}
