/* The backoff sequence and cap, on a fake clock. */
#include <criterion/criterion.h>

#include "instance/backoff.h"
#include "util/clock.h"

static uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now;
}

Test(backoff, sequence_doubles_to_the_cap)
{
	const uint64_t want[] = {0,	1000,  2000,  4000, 8000,
				 16000, 30000, 30000, 30000};
	for (unsigned i = 0; i < sizeof want / sizeof want[0]; i++)
		cr_assert_eq(backoff_delay_ms(i), want[i], "after %u", i);
	cr_assert_eq(backoff_delay_ms(1000), 30000);
}

Test(backoff, attempts_allowed_only_after_the_window)
{
	clock_set_source(fake_clock);
	struct backoff b = {0};
	fake_now = 5000;
	cr_assert(backoff_allows(&b, clock_now_ms()));
	/* Spawns of a server that dies on every start, each as soon as it
	 * may run: at 0, 1, 3, 7, 15 s after the first failure. */
	uint64_t spawns[8];
	unsigned n = 0;
	for (uint64_t t = 5000; t <= 5000 + 40000 && n < 8; t += 10) {
		fake_now = t;
		if (!backoff_allows(&b, clock_now_ms()))
			continue;
		spawns[n++] = t - 5000;
		backoff_fail(&b, clock_now_ms());
	}
	const uint64_t want[] = {0, 1000, 3000, 7000, 15000, 31000};
	for (unsigned i = 0; i < 6; i++)
		cr_assert_eq(spawns[i], want[i], "spawn %u at %llu", i,
			     (unsigned long long)spawns[i]);
	cr_assert_eq(n, 6, "the cap keeps later spawns 30 s apart");
	clock_set_source(NULL);
}

Test(backoff, remaining_and_reset)
{
	struct backoff b = {0};
	backoff_fail(&b, 100);
	cr_assert_eq(backoff_remaining_ms(&b, 100), 1000);
	cr_assert_eq(backoff_remaining_ms(&b, 600), 500);
	cr_assert_eq(backoff_remaining_ms(&b, 1100), 0);
	backoff_fail(&b, 1100);
	cr_assert_eq(backoff_remaining_ms(&b, 1100), 2000);
	backoff_reset(&b);
	cr_assert(backoff_allows(&b, 1100));
	cr_assert_eq(b.failures, 0);
}
