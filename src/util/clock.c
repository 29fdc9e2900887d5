/* Monotonic milliseconds, replaceable for tests. */
#include "util/clock.h"

#include <time.h>

static uint64_t clock_real_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t (*clock_source)(void) = clock_real_ms;

uint64_t clock_now_ms(void)
{
	return clock_source();
}

void clock_set_source(uint64_t (*source)(void))
{
	clock_source = source ? source : clock_real_ms;
}
