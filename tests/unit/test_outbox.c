/* The outbox: stable ids, one outcome per request, O(1) lookup. */
#include <criterion/criterion.h>

#include "jsonrpc/outbox.h"

struct seen {
	int calls;
	bool sent;
};

static void seen_cb(void *arg, json_t *resp, bool sent)
{
	struct seen *s = arg;
	s->calls++;
	s->sent = sent;
}

Test(outbox, ids_are_stable_across_a_requeue)
{
	struct outbox *ob = outbox_new();
	struct seen s = {0};
	struct outbox_req *r = outbox_add(ob, "resources/read", json_object(),
					  false, seen_cb, NULL, &s);
	int64_t id = outbox_req_id(r);
	cr_assert_eq(outbox_req_state(r), OUTBOX_QUEUED);
	outbox_written(ob, r, 1);
	cr_assert_eq(outbox_req_sends(r), 1);
	outbox_requeue(ob, r);
	outbox_written(ob, r, 2);
	cr_assert_eq(outbox_find(ob, id), r);
	cr_assert_eq(outbox_req_sends(r), 2);
	cr_assert(outbox_req_on(r, 2));
	outbox_settle(ob, r, OUTBOX_CANCELLED, NULL);
	cr_assert_eq(s.calls, 0);
	cr_assert_null(outbox_find(ob, id));
	outbox_free(ob);
}

Test(outbox, each_outcome_calls_back_once_with_sent)
{
	struct outbox *ob = outbox_new();
	struct seen a = {0}, b = {0}, c = {0};
	struct outbox_req *ra =
		outbox_add(ob, "x", NULL, false, seen_cb, NULL, &a);
	struct outbox_req *rb =
		outbox_add(ob, "x", NULL, true, seen_cb, NULL, &b);
	struct outbox_req *rc =
		outbox_add(ob, "x", NULL, false, seen_cb, NULL, &c);
	cr_assert_eq(outbox_count(ob), 3);
	cr_assert_eq(outbox_count_external(ob), 2);
	outbox_settle(ob, ra, OUTBOX_LOST_UNSENT, NULL);
	outbox_settle(ob, rb, OUTBOX_LOST_SENT, NULL);
	outbox_settle(ob, rc, OUTBOX_ANSWERED, NULL);
	cr_assert(a.calls == 1 && !a.sent);
	cr_assert(b.calls == 1 && b.sent);
	cr_assert(c.calls == 1 && c.sent);
	cr_assert_eq(outbox_count(ob), 0);
	cr_assert_eq(outbox_count_external(ob), 0);
	outbox_free(ob);
}

Test(outbox, long_methods_and_many_requests)
{
	struct outbox *ob = outbox_new();
	char longm[100];
	memset(longm, 'm', sizeof longm - 1);
	longm[sizeof longm - 1] = '\0';
	enum { N = 100000 };
	for (int i = 0; i < N; i++) {
		struct outbox_req *r = outbox_add(ob, i % 2 ? longm : "t", NULL,
						  false, NULL, NULL, NULL);
		outbox_written(ob, r, 7);
	}
	cr_assert_eq(outbox_count(ob), N);
	cr_assert_eq(outbox_count_written(ob, 7), N);
	cr_assert_str_eq(outbox_req_method(outbox_find(ob, 2)), longm);
	/* Oldest first, across the table's growth. */
	int64_t want = 1;
	for (struct outbox_req *r = outbox_first(ob); r; r = outbox_next(ob, r))
		cr_assert_eq(outbox_req_id(r), want++);
	for (int64_t id = 1; id <= N; id += 2)
		outbox_settle(ob, outbox_find(ob, id), OUTBOX_CANCELLED, NULL);
	cr_assert_eq(outbox_count(ob), N / 2);
	cr_assert_null(outbox_find(ob, 1));
	cr_assert_not_null(outbox_find(ob, N));
	/* Recycled entries start clean. */
	struct outbox_req *r =
		outbox_add(ob, "z", NULL, true, NULL, NULL, NULL);
	cr_assert_eq(outbox_req_id(r), N + 1);
	cr_assert_eq(outbox_req_sends(r), 0);
	cr_assert_eq(outbox_req_state(r), OUTBOX_QUEUED);
	outbox_free(ob);
}
