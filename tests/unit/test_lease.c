/* Lease counting and idle deadlines, on a fake clock. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool/lease.h"

Test(lease, counts_once_per_session)
{
	struct lease_set *ls = lease_set_new(0);
	cr_assert(lease_take(ls, "a"), "first holder makes it held");
	cr_assert(!lease_take(ls, "a"), "same session again: still held");
	cr_assert(!lease_take(ls, "b"));
	cr_assert_eq(lease_holders(ls), 2);
	cr_assert_eq(lease_requests(ls), 3);
	cr_assert_eq(lease_members(ls), 2);
	cr_assert(!lease_drop(ls, "a", 10));
	cr_assert_eq(lease_holders(ls), 2, "a still has one request");
	cr_assert(!lease_drop(ls, "a", 20));
	cr_assert_eq(lease_holders(ls), 1);
	cr_assert(lease_drop(ls, "b", 30), "last holder gone: unheld");
	cr_assert_eq(lease_idle_since(ls), 30);
	lease_set_free(ls);
}

Test(lease, never_negative)
{
	struct lease_set *ls = lease_set_new(0);
	cr_assert(!lease_drop(ls, "ghost", 5));
	lease_join(ls, "a");
	cr_assert(!lease_drop(ls, "a", 5));
	cr_assert(!lease_drop(ls, "a", 6));
	cr_assert_eq(lease_holders(ls), 0);
	cr_assert_eq(lease_requests(ls), 0);
	cr_assert(lease_take(ls, "a"));
	cr_assert_eq(lease_holders(ls), 1);
	lease_set_free(ls);
}

Test(lease, leave_drops_membership_and_leases_in_one_step)
{
	struct lease_set *ls = lease_set_new(0);
	lease_take(ls, "a");
	lease_take(ls, "a");
	lease_take(ls, "b");
	cr_assert(!lease_leave(ls, "a", 50), "b still holds it");
	cr_assert_eq(lease_members(ls), 1);
	cr_assert_eq(lease_holders(ls), 1);
	cr_assert_eq(lease_requests(ls), 1);
	cr_assert(!lease_is_member(ls, "a"));
	/* A late drop of the departed session changes nothing. */
	cr_assert(!lease_drop(ls, "a", 60));
	cr_assert_eq(lease_holders(ls), 1);
	cr_assert(lease_leave(ls, "b", 70));
	cr_assert_eq(lease_members(ls), 0);
	cr_assert_eq(lease_idle_since(ls), 70);
	cr_assert(!lease_leave(ls, "b", 80), "leaving twice is harmless");
	lease_set_free(ls);
}

Test(lease, idle_deadline_from_creation)
{
	struct lease_set *ls = lease_set_new(1000);
	cr_assert(!lease_idle_due(ls, 1999, 1000));
	cr_assert(lease_idle_due(ls, 2000, 1000),
		  "an instance nobody ever held idles out too");
	lease_set_free(ls);
}

Test(lease, idle_deadline_never_during_a_request)
{
	struct lease_set *ls = lease_set_new(0);
	lease_take(ls, "a");
	cr_assert(!lease_idle_due(ls, 1000000, 1000),
		  "a held instance is never due");
	lease_drop(ls, "a", 5000);
	cr_assert(!lease_idle_due(ls, 5999, 1000));
	cr_assert(lease_idle_due(ls, 6000, 1000));
	lease_set_free(ls);
}

Test(lease, lease_taken_as_the_timer_fires)
{
	/* The idle timer fires at the deadline, but a request took a lease
	 * in the same loop iteration just before the check runs. */
	struct lease_set *ls = lease_set_new(0);
	uint64_t deadline = 1000;
	lease_take(ls, "a");
	cr_assert(!lease_idle_due(ls, deadline, 1000));
	/* The request ends later: the clock starts again from there. */
	lease_drop(ls, "a", 1500);
	cr_assert(!lease_idle_due(ls, 2000, 1000));
	cr_assert(lease_idle_due(ls, 2500, 1000));
	lease_set_free(ls);
}

Test(lease, touch_restarts_the_idle_clock)
{
	struct lease_set *ls = lease_set_new(0);
	lease_touch(ls, 900);
	cr_assert(!lease_idle_due(ls, 1000, 1000));
	cr_assert(lease_idle_due(ls, 1900, 1000));
	lease_set_free(ls);
}

Test(lease, many_sessions)
{
	struct lease_set *ls = lease_set_new(0);
	char id[16];
	for (int i = 0; i < 100; i++) {
		snprintf(id, sizeof id, "s%d", i);
		lease_take(ls, id);
	}
	cr_assert_eq(lease_holders(ls), 100);
	for (int i = 0; i < 100; i += 2) {
		snprintf(id, sizeof id, "s%d", i);
		lease_leave(ls, id, 1);
	}
	cr_assert_eq(lease_members(ls), 50);
	cr_assert_eq(lease_holders(ls), 50);
	json_t *d = lease_describe(ls);
	cr_assert_eq(json_array_size(d), 50);
	json_decref(d);
	lease_set_free(ls);
}

/* A thousand sessions on one app instance, leaving in any order: every
 * lookup still finds exactly the members that remain, and the walk gives
 * each once with its requests. */
Test(lease, members_by_id_stay_exact_as_sessions_leave)
{
	enum { N = 1000 };
	struct lease_set *ls = lease_set_new(0);
	char id[32];
	for (int i = 0; i < N; i++) {
		snprintf(id, sizeof id, "session-%04d", i);
		if (i % 2)
			lease_take(ls, id);
		else
			lease_join(ls, id);
	}
	static const struct {
		int from, step;
	} leaves[] = {{0, 3}, {1, 5}, {2, 7}};
	bool gone[N] = {false};
	for (size_t l = 0; l < sizeof leaves / sizeof leaves[0]; l++)
		for (int i = leaves[l].from; i < N; i += leaves[l].step) {
			snprintf(id, sizeof id, "session-%04d", i);
			lease_leave(ls, id, 1);
			gone[i] = true;
		}
	unsigned members = 0, holders = 0;
	for (int i = 0; i < N; i++) {
		snprintf(id, sizeof id, "session-%04d", i);
		cr_assert_eq(lease_is_member(ls, id), !gone[i], "%s", id);
		members += !gone[i];
		holders += !gone[i] && i % 2;
	}
	cr_assert_eq(lease_members(ls), members);
	cr_assert_eq(lease_holders(ls), holders);
	cr_assert_eq(lease_requests(ls), holders);
	size_t walked = 0;
	unsigned req, held = 0;
	for (const char *m; (m = lease_member_at(ls, walked, &req)); walked++) {
		int i = atoi(m + strlen("session-"));
		cr_assert(!gone[i], "%s walked after it left", m);
		held += req;
	}
	cr_assert_eq(walked, members);
	cr_assert_eq(held, holders);
	lease_set_free(ls);
}
