/*
 * latency.c - the latency histograms' buckets (latency.h).
 */
#include "latency.h"

const int64_t lat_bucket_ms[LAT_N_BUCKETS] = {
	250, 500, 1000, 2000, 5000, 10000, 20000, 30000, 60000, 120000,
	300000, 600000,
};

size_t
lat_bucket_slot(int64_t ms)
{
	size_t i;

	for (i = 0; i < LAT_N_BUCKETS; i++)
		if (ms <= lat_bucket_ms[i])
			return i;
	return LAT_N_BUCKETS;
}
