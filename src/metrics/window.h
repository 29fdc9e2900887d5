/*
 * One server's calls over the last minute: 60 one-second buckets, each with
 * a count, an error count and a small log-scale histogram of latencies,
 * plus totals since the runtime started. Fixed size, O(1) per call; a read
 * merges the buckets of the last minute. The caller gives the time (from
 * util/clock.h), so tests drive it exactly.
 */
#ifndef MCPV_METRICS_WINDOW_H
#define MCPV_METRICS_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#define WINDOW_SECONDS 60
/* The rate is taken over this many whole seconds before the current one:
 * a steady load reads the same at every refresh, a burst shows within a
 * second. */
#define WINDOW_RATE_SECONDS 10
/* Two bins per octave of microseconds (bounds 2^k and 1.5 * 2^k), from
 * under 2 us to 71 minutes in the last bin: a quantile is known within a
 * bin, about a fifth of its value, which is what a glance needs. */
#define WINDOW_BINS 64

struct window_bucket {
	uint64_t second; /* which second it counts; UINT64_MAX: none */
	uint32_t calls, errors;
	uint32_t bins[WINDOW_BINS];
};

/* Embedded in its owner; window_init before use. */
struct window {
	struct window_bucket buckets[WINDOW_SECONDS];
	uint64_t calls_total, errors_total;
	uint64_t latency_us_total;
	uint32_t inflight;
};

/* What a read sees at one moment. */
struct window_view {
	uint64_t calls_total, errors_total, latency_us_total;
	uint32_t inflight;
	uint64_t calls_minute, errors_minute; /* in the last 60 s */
	double rate; /* calls per second over WINDOW_RATE_SECONDS */
	/* Quantiles of the last minute's latencies; 0 without calls. */
	uint64_t p50_us, p99_us;
};

void window_init(struct window *w);
/* A call started. */
void window_begin(struct window *w);
/* A call that started at started_us ended at now_us, with an error or
 * not. O(1): a stale bucket is cleared when its second comes round. */
void window_end(struct window *w, uint64_t started_us, uint64_t now_us,
		bool error);
void window_read(const struct window *w, uint64_t now_us,
		 struct window_view *out);

/* The bin of a latency, and the bounds of a bin ([low, high)). */
unsigned window_bin(uint64_t us);
uint64_t window_bin_low(unsigned bin);
uint64_t window_bin_high(unsigned bin);
/* Quantile q (0 < q <= 1) of n values counted in bins, in microseconds:
 * the bin of the value of rank ceil(q * n), interpolated within it as if
 * its values were spread evenly. 0 when n is 0. */
uint64_t window_quantile(const uint32_t *bins, uint64_t n, double q);

#endif
