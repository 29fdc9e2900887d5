/* The cap on repeated log lines, on a fake clock: a burst per window,
 * the rest counted and told once. */
#include <criterion/criterion.h>

#include "util/ratelimit.h"

Test(ratelimit, a_burst_passes_then_lines_are_held_and_counted)
{
	struct ratelimit r;
	ratelimit_init(&r, 3, 1000);
	unsigned before = 99;
	uint64_t now = 50000;
	for (int i = 0; i < 3; i++) {
		cr_assert(ratelimit_take(&r, now, &before));
		cr_assert_eq(before, 0);
	}
	for (int i = 0; i < 100; i++)
		cr_assert_not(ratelimit_take(&r, now + 10, &before));
	cr_assert_eq(ratelimit_window_left_ms(&r, now + 10), 990);
	/* The owner tells once; the window's budget stays spent. */
	cr_assert_eq(ratelimit_flush(&r), 100);
	cr_assert_eq(ratelimit_flush(&r), 0);
	cr_assert_not(ratelimit_take(&r, now + 999, &before));
	cr_assert_eq(before, 0);
}

Test(ratelimit, a_new_window_says_what_the_last_held_back)
{
	struct ratelimit r;
	ratelimit_init(&r, 2, 1000);
	unsigned before;
	uint64_t now = 7000;
	cr_assert(ratelimit_take(&r, now, &before));
	cr_assert(ratelimit_take(&r, now, &before));
	cr_assert_not(ratelimit_take(&r, now + 1, &before));
	cr_assert_not(ratelimit_take(&r, now + 2, &before));
	cr_assert_eq(ratelimit_window_left_ms(&r, now + 1000), 0);
	/* Not told yet: the first line of the next window carries it. */
	cr_assert(ratelimit_take(&r, now + 1000, &before));
	cr_assert_eq(before, 2);
	cr_assert(ratelimit_take(&r, now + 1001, &before));
	cr_assert_eq(before, 0);
	cr_assert_not(ratelimit_take(&r, now + 1002, &before));
}
