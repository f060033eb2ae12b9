/* load.c - pure worker-load rules; see load.h. */
#include "load.h"

bool
load_saturated(const struct orgw_load *l)
{
	unsigned over = 0, max;

	if (l->capacity == 0)
		return false;
	max = load_side_max(l->capacity);
	if (l->side > max)
		over = l->side - max;
	return (over < l->busy ? l->busy - over : 0) >= l->capacity;
}

unsigned
load_side_max(unsigned capacity)
{
	return capacity / 4 > 0 ? capacity / 4 : 1;
}

bool
load_side_refused(const struct orgw_load *l, unsigned side)
{
	if (l->capacity == 0)
		return false;
	return side > load_side_max(l->capacity) ||
	       (side > 1 && l->busy >= l->capacity);
}

unsigned
load_in_flight(const struct orgw_load *l)
{
	return l->busy > 0 ? l->busy - 1 : 0;
}

int64_t
load_age_limit_s(int64_t max_age_s, uint64_t seed)
{
	int64_t span, lim;

	/* splitmix64's finaliser: nearby pids land far apart. */
	seed += 0x9e3779b97f4a7c15ULL;
	seed = (seed ^ (seed >> 30)) * 0xbf58476d1ce4e5b9ULL;
	seed = (seed ^ (seed >> 27)) * 0x94d049bb133111ebULL;
	seed ^= seed >> 31;
	span = max_age_s / 4;
	lim = max_age_s - (span > 0 ? (int64_t)(seed % (uint64_t)(span + 1)) : 0);
	return lim < LOAD_MIN_AGE_SECONDS ? LOAD_MIN_AGE_SECONDS : lim;
}

bool
load_recycle_due(int64_t requests, int64_t max_requests, int64_t age_s,
		 int64_t age_limit_s)
{
	if (age_s < LOAD_MIN_AGE_SECONDS)
		return false;
	return (max_requests > 0 && requests >= max_requests) ||
	       (age_limit_s > 0 && age_s >= age_limit_s);
}

bool
load_parse_starttime(const char *stat, size_t len, unsigned long long *out)
{
	size_t i, rp = len;
	unsigned long long v = 0;
	int field = 2;	/* the field the last ')' ends */
	bool digits = false;

	for (i = 0; i < len; i++)
		if (stat[i] == ')')
			rp = i;
	if (rp == len)
		return false;
	for (i = rp + 1; i < len && field < 22; i++)
		if (stat[i] == ' ')
			field++;
	if (field != 22)
		return false;
	for (; i < len && stat[i] >= '0' && stat[i] <= '9'; i++) {
		if (v > (~0ULL - 9) / 10)
			return false;
		v = v * 10 + (unsigned long long)(stat[i] - '0');
		digits = true;
	}
	if (!digits || (i < len && stat[i] != ' ' && stat[i] != '\n'))
		return false;
	*out = v;
	return true;
}
