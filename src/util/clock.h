/*
 * The one source of time for deadlines (idle, backoff, stop ladder,
 * liveness) and for measuring calls. Tests replace it with a fake clock
 * they advance by hand.
 */
#ifndef MCPV_CLOCK_H
#define MCPV_CLOCK_H

#include <stdint.h>

/* Monotonic milliseconds. */
uint64_t clock_now_ms(void);
/* Monotonic microseconds, on the same time line: a call's latency is tens
 * of microseconds, below what milliseconds can tell. */
uint64_t clock_now_us(void);
/* Replaces the clock; NULL restores the real one. A milliseconds source
 * also drives clock_now_us (its value times 1000). */
void clock_set_source(uint64_t (*source)(void));
/* Replaces the clock with a microseconds source (clock_now_ms is its
 * value over 1000); NULL restores the real one. */
void clock_set_source_us(uint64_t (*source_us)(void));

#endif
