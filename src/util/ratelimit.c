/*
 * Repeated log lines capped per window (ratelimit.h).
 */
#include "util/ratelimit.h"

void ratelimit_init(struct ratelimit *r, unsigned burst, uint64_t window_ms)
{
	*r = (struct ratelimit){.burst = burst, .window_ms = window_ms};
}

bool ratelimit_take(struct ratelimit *r, uint64_t now_ms, unsigned *held_before)
{
	*held_before = 0;
	bool fresh = r->used == 0 && r->held == 0;
	if (fresh || now_ms - r->start_ms >= r->window_ms) {
		*held_before = r->held;
		r->start_ms = now_ms;
		r->used = 0;
		r->held = 0;
	}
	if (r->used < r->burst) {
		r->used++;
		return true;
	}
	r->held++;
	return false;
}

uint64_t ratelimit_window_left_ms(const struct ratelimit *r, uint64_t now_ms)
{
	uint64_t end = r->start_ms + r->window_ms;
	return now_ms < end ? end - now_ms : 0;
}

unsigned ratelimit_flush(struct ratelimit *r)
{
	unsigned n = r->held;
	r->held = 0;
	return n;
}
