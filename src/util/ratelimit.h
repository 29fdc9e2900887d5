/*
 * A cap on repeated log lines: at most a burst of them per window, the
 * rest held back and counted, so that one noisy source cannot fill the
 * log and rotate away what else it holds. Pure arithmetic on the clock's
 * milliseconds, unit-tested with a fake clock; the owner says how many
 * were held back ("N more like this suppressed") when a window ends.
 */
#ifndef MCPV_RATELIMIT_H
#define MCPV_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

struct ratelimit {
	unsigned burst;	    /* lines written per window */
	uint64_t window_ms; /* its length */
	uint64_t start_ms;  /* when the current window began */
	unsigned used;	    /* lines written in it */
	unsigned held;	    /* lines held back in it, not yet told */
};

void ratelimit_init(struct ratelimit *r, unsigned burst, uint64_t window_ms);
/* One more line at now_ms: true when it may be written. When it opens a
 * new window, *held_before gets how many the last one held back and did
 * not tell (say so first); else 0. */
bool ratelimit_take(struct ratelimit *r, uint64_t now_ms,
		    unsigned *held_before);
/* Milliseconds until the current window ends (0: ended). */
uint64_t ratelimit_window_left_ms(const struct ratelimit *r, uint64_t now_ms);
/* How many lines were held back and not yet told; from now they are
 * told. The window's budget stays spent. */
unsigned ratelimit_flush(struct ratelimit *r);

#endif
