/*
 * A burst of events folded into one: it is due once no event came for the
 * quiet period, or the longest wait after its first event, whichever comes
 * first (a file written without pause is still seen). Pure arithmetic on
 * the clock's milliseconds, unit-tested with a fake clock.
 */
#ifndef MCPV_DEBOUNCE_H
#define MCPV_DEBOUNCE_H

#include <stdbool.h>
#include <stdint.h>

struct debounce {
	uint64_t quiet_ms; /* due this long after the last event */
	uint64_t max_ms;   /* and at the latest this long after the first */
	uint64_t first_ms, last_ms;
	unsigned events; /* in the pending burst; 0: none pending */
};

void debounce_init(struct debounce *d, uint64_t quiet_ms, uint64_t max_ms);
void debounce_event(struct debounce *d, uint64_t now_ms);
bool debounce_pending(const struct debounce *d);
/* Milliseconds until the burst is due (0: now); UINT64_MAX when none is
 * pending. */
uint64_t debounce_wait_ms(const struct debounce *d, uint64_t now_ms);
/* When the burst is due: its event count and span (first to last event)
 * go to the out-parameters, the burst is over, and true is returned. */
bool debounce_take(struct debounce *d, uint64_t now_ms, unsigned *events,
		   uint64_t *span_ms);

#endif
