/*
 * The per-server call window: one-second buckets with log-scale latency
 * histograms, recycled as the seconds come round (window.h).
 */
#include "metrics/window.h"

#include <string.h>

#define WINDOW_NONE UINT64_MAX

void window_init(struct window *w)
{
	memset(w, 0, sizeof *w);
	for (unsigned i = 0; i < WINDOW_SECONDS; i++)
		w->buckets[i].second = WINDOW_NONE;
}

void window_begin(struct window *w)
{
	w->inflight++;
}

unsigned window_bin(uint64_t us)
{
	if (us < 2)
		return 0;
	unsigned k = 63u - (unsigned)__builtin_clzll(us); /* 2^k <= us */
	unsigned half = (unsigned)(us >> (k - 1)) & 1u;	  /* past 1.5 * 2^k */
	unsigned bin = 2 * k - 1 + half;
	return bin < WINDOW_BINS ? bin : WINDOW_BINS - 1;
}

uint64_t window_bin_low(unsigned bin)
{
	if (bin == 0)
		return 0;
	unsigned k = (bin + 1) / 2;
	return (bin & 1u) ? (uint64_t)1 << k : (uint64_t)3 << (k - 1);
}

uint64_t window_bin_high(unsigned bin)
{
	return window_bin_low(bin + 1);
}

void window_end(struct window *w, uint64_t started_us, uint64_t now_us,
		bool error)
{
	uint64_t lat = now_us > started_us ? now_us - started_us : 0;
	uint64_t sec = now_us / 1000000;
	struct window_bucket *b = &w->buckets[sec % WINDOW_SECONDS];
	if (b->second != sec) {
		memset(b, 0, sizeof *b);
		b->second = sec;
	}
	b->calls++;
	b->bins[window_bin(lat)]++;
	if (error) {
		b->errors++;
		w->errors_total++;
	}
	w->calls_total++;
	w->latency_us_total += lat;
	if (w->inflight > 0)
		w->inflight--;
}

uint64_t window_quantile(const uint32_t *bins, uint64_t n, double q)
{
	if (n == 0)
		return 0;
	double want = q * (double)n;
	uint64_t rank = (uint64_t)want;
	if ((double)rank < want)
		rank++; /* ceil, without libm */
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	uint64_t below = 0;
	for (unsigned i = 0; i < WINDOW_BINS; i++) {
		if (below + bins[i] < rank) {
			below += bins[i];
			continue;
		}
		/* The rank'th value lies in this bin: placed at the middle of
		 * its share of the bin, so one value reads as the bin's
		 * middle rather than its edge. */
		uint64_t lo = window_bin_low(i), hi = window_bin_high(i);
		double at = ((double)(rank - below) - 0.5) / (double)bins[i];
		return lo + (uint64_t)((double)(hi - lo) * at + 0.5);
	}
	return window_bin_low(WINDOW_BINS - 1);
}

void window_read(const struct window *w, uint64_t now_us,
		 struct window_view *out)
{
	memset(out, 0, sizeof *out);
	out->calls_total = w->calls_total;
	out->errors_total = w->errors_total;
	out->latency_us_total = w->latency_us_total;
	out->inflight = w->inflight;
	uint64_t now = now_us / 1000000;
	uint32_t merged[WINDOW_BINS] = {0};
	uint64_t rate_calls = 0;
	for (unsigned i = 0; i < WINDOW_SECONDS; i++) {
		const struct window_bucket *b = &w->buckets[i];
		/* Only the last minute's seconds (the current one too);
		 * a bucket not yet come round holds an older minute. */
		if (b->second == WINDOW_NONE || b->second > now ||
		    now - b->second >= WINDOW_SECONDS)
			continue;
		out->calls_minute += b->calls;
		out->errors_minute += b->errors;
		for (unsigned j = 0; j < WINDOW_BINS; j++)
			merged[j] += b->bins[j];
		if (b->second < now && now - b->second <= WINDOW_RATE_SECONDS)
			rate_calls += b->calls;
	}
	out->rate = (double)rate_calls / WINDOW_RATE_SECONDS;
	out->p50_us = window_quantile(merged, out->calls_minute, 0.5);
	out->p99_us = window_quantile(merged, out->calls_minute, 0.99);
}
