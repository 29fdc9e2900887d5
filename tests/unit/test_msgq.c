/* The held-message queue: order, ids, counts, forget, unpop, clear. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/msgq.h"

Test(msgq, keeps_order_and_counts)
{
	struct msgq q;
	msgq_init(&q);
	msgq_push(&q, "one", 3, 1);
	msgq_push(&q, "two!", 4, 0);
	msgq_push(&q, "three", 5, 3);
	cr_assert_eq(q.count, 3);
	cr_assert_eq(q.bytes, 12);
	struct msgq_item *a = msgq_pop(&q);
	cr_assert_eq(a->id, 1);
	cr_assert_eq(memcmp(a->msg, "one", 3), 0);
	cr_assert_eq(q.bytes, 9);
	msgq_unpop(&q, a);
	cr_assert_eq(q.count, 3);
	cr_assert_eq(msgq_pop(&q), a);
	free(a);
	struct msgq_item *b = msgq_pop(&q);
	cr_assert_eq(b->len, 4);
	free(b);
	struct msgq_item *c = msgq_pop(&q);
	cr_assert_eq(c->id, 3);
	free(c);
	cr_assert_null(msgq_pop(&q));
	cr_assert_eq(q.count, 0);
	cr_assert_eq(q.bytes, 0);
	msgq_push(&q, "again", 5, 9); /* the tail was reset */
	cr_assert_eq(q.count, 1);
	msgq_clear(&q);
}

Test(msgq, forget_drops_one_id_anywhere)
{
	struct msgq q;
	msgq_init(&q);
	msgq_push(&q, "a", 1, 7);
	msgq_push(&q, "b", 1, 8);
	msgq_push(&q, "c", 1, 7);
	cr_assert_eq(msgq_forget(&q, 7), 2);
	cr_assert_eq(q.count, 1);
	cr_assert_eq(q.bytes, 1);
	msgq_push(&q, "d", 1, 9); /* the tail is right after a forget */
	struct msgq_item *x = msgq_pop(&q);
	cr_assert_eq(x->id, 8);
	free(x);
	x = msgq_pop(&q);
	cr_assert_eq(x->id, 9);
	free(x);
	cr_assert_eq(msgq_forget(&q, 1), 0);
	msgq_push_front(&q, "e", 1, 10);
	msgq_push_front(&q, "f", 1, 11);
	x = msgq_pop(&q);
	cr_assert_eq(x->id, 11);
	free(x);
	msgq_clear(&q);
	cr_assert_null(q.head);
}
