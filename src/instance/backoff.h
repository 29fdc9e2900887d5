/*
 * Backoff after failed starts: 1 s after the first failure, doubling to a
 * 30 s cap on consecutive failures; a success resets it. Pure arithmetic
 * on the clock's milliseconds, unit-tested with a fake clock.
 */
#ifndef MCPV_BACKOFF_H
#define MCPV_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>

#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS 30000

struct backoff {
	unsigned failures; /* consecutive failed starts */
	uint64_t last_fail_ms;
};

/* The wait after n consecutive failures (0 for none). */
uint64_t backoff_delay_ms(unsigned failures);
void backoff_fail(struct backoff *b, uint64_t now_ms);
void backoff_reset(struct backoff *b);
/* Whether a new attempt may run now. */
bool backoff_allows(const struct backoff *b, uint64_t now_ms);
/* Milliseconds until the next attempt may run (0: now). */
uint64_t backoff_remaining_ms(const struct backoff *b, uint64_t now_ms);

#endif
