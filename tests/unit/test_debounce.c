/* Bursts of file events folded into one, on a fake clock. */
#include <criterion/criterion.h>

#include "util/clock.h"
#include "util/debounce.h"

static uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now;
}

Test(debounce, nothing_pending_waits_forever)
{
	struct debounce d;
	debounce_init(&d, 200, 2000);
	unsigned n;
	uint64_t span;
	cr_assert_not(debounce_pending(&d));
	cr_assert_eq(debounce_wait_ms(&d, 0), UINT64_MAX);
	cr_assert_not(debounce_take(&d, 1000000, &n, &span));
}

Test(debounce, a_burst_is_due_once_quiet)
{
	clock_set_source(fake_clock);
	struct debounce d;
	debounce_init(&d, 200, 2000);
	/* 20 writes, 10 ms apart: one burst, due 200 ms after the last. */
	fake_now = 5000;
	for (int i = 0; i < 20; i++) {
		debounce_event(&d, clock_now_ms());
		fake_now += 10;
	}
	uint64_t last = 5000 + 19 * 10;
	unsigned n;
	uint64_t span;
	cr_assert_eq(debounce_wait_ms(&d, clock_now_ms()),
		     last + 200 - clock_now_ms());
	fake_now = last + 199;
	cr_assert_not(debounce_take(&d, clock_now_ms(), &n, &span));
	fake_now = last + 200;
	cr_assert(debounce_take(&d, clock_now_ms(), &n, &span));
	cr_assert_eq(n, 20);
	cr_assert_eq(span, 190);
	/* Taken: the next event starts a new burst. */
	cr_assert_not(debounce_pending(&d));
	cr_assert_not(debounce_take(&d, clock_now_ms() + 10000, &n, &span));
	debounce_event(&d, clock_now_ms());
	fake_now += 200;
	cr_assert(debounce_take(&d, clock_now_ms(), &n, &span));
	cr_assert_eq(n, 1);
	cr_assert_eq(span, 0);
	clock_set_source(NULL);
}

Test(debounce, writes_without_pause_are_seen_by_the_longest_wait)
{
	struct debounce d;
	debounce_init(&d, 200, 2000);
	unsigned n;
	uint64_t span;
	uint64_t t = 100;
	uint64_t due = 0;
	/* An event every 100 ms for 5 s: never quiet, yet due 2 s after
	 * the first event. */
	for (; t < 5100; t += 100) {
		if (debounce_take(&d, t, &n, &span)) {
			due = t;
			break;
		}
		debounce_event(&d, t);
	}
	cr_assert_eq(due, 2100);
	cr_assert_eq(n, 20);
	cr_assert_eq(span, 1900);
}

Test(debounce, a_longest_wait_below_the_quiet_period_is_the_quiet_period)
{
	struct debounce d;
	debounce_init(&d, 300, 100);
	debounce_event(&d, 0);
	cr_assert_eq(debounce_wait_ms(&d, 0), 300);
}
