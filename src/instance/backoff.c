/* Exponential backoff of failed starts, 1 s doubling to 30 s. */
#include "instance/backoff.h"

uint64_t backoff_delay_ms(unsigned failures)
{
	if (failures == 0)
		return 0;
	uint64_t d = BACKOFF_FIRST_MS;
	for (unsigned i = 1; i < failures && d < BACKOFF_MAX_MS; i++)
		d *= 2;
	return d < BACKOFF_MAX_MS ? d : BACKOFF_MAX_MS;
}

void backoff_fail(struct backoff *b, uint64_t now_ms)
{
	if (b->failures < 64)
		b->failures++;
	b->last_fail_ms = now_ms;
}

void backoff_reset(struct backoff *b)
{
	b->failures = 0;
	b->last_fail_ms = 0;
}

uint64_t backoff_remaining_ms(const struct backoff *b, uint64_t now_ms)
{
	uint64_t until = b->last_fail_ms + backoff_delay_ms(b->failures);
	return now_ms >= until ? 0 : until - now_ms;
}

bool backoff_allows(const struct backoff *b, uint64_t now_ms)
{
	return backoff_remaining_ms(b, now_ms) == 0;
}
