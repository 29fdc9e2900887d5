/* Monotonic time in milliseconds and microseconds, replaceable for tests. */
#include "util/clock.h"

#include <stddef.h>
#include <time.h>

/* At most one of them is set; neither: the real clock. */
static uint64_t (*clock_source)(void);
static uint64_t (*clock_source_us)(void);

static uint64_t clock_real_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

uint64_t clock_now_ms(void)
{
	if (clock_source)
		return clock_source();
	if (clock_source_us)
		return clock_source_us() / 1000;
	return clock_real_us() / 1000;
}

uint64_t clock_now_us(void)
{
	if (clock_source_us)
		return clock_source_us();
	if (clock_source)
		return clock_source() * 1000;
	return clock_real_us();
}

void clock_set_source(uint64_t (*source)(void))
{
	clock_source = source;
	clock_source_us = NULL;
}

void clock_set_source_us(uint64_t (*source_us)(void))
{
	clock_source_us = source_us;
	clock_source = NULL;
}
