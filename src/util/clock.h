/*
 * The one source of time for deadlines (idle, backoff, stop ladder,
 * liveness). Tests replace it with a fake clock they advance by hand.
 */
#ifndef MCPV_CLOCK_H
#define MCPV_CLOCK_H

#include <stdint.h>

/* Monotonic milliseconds. */
uint64_t clock_now_ms(void);
/* Replaces the clock; NULL restores the real one. */
void clock_set_source(uint64_t (*source)(void));

#endif
