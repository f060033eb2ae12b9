/*
 * latency.h - the buckets of the latency histograms the ledger counts
 * and /metrics shows (latency.c).  Pure.
 */
#ifndef ORGW_LATENCY_H
#define ORGW_LATENCY_H

#include <stddef.h>
#include <stdint.h>

/* Upper bounds, milliseconds ("le" in seconds in /metrics): LLM calls
 * take from a quarter second to ten minutes.  The counts have one more
 * slot, for +Inf. */
#define LAT_N_BUCKETS 12
#define LAT_N_SLOTS (LAT_N_BUCKETS + 1)
extern const int64_t lat_bucket_ms[LAT_N_BUCKETS];

/* The slot of a duration of ms milliseconds: the first bucket whose
 * bound is >= ms, or LAT_N_BUCKETS (+Inf). */
size_t lat_bucket_slot(int64_t ms);

#endif
