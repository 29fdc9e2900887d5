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

/* ---- the resend rule, as a table ---- */

enum shape {
	S_QUEUED,	/* never written */
	S_WRITTEN,	/* written once */
	S_RESENT,	/* written, lost, written again */
	S_REFUSED_ONCE, /* written, refused, written again */
	S_REFUSED_MAX,	/* refused OUTBOX_MAX_ATTEMPTS - 1 times, written */
	S_INTERNAL,	/* the owner's own, written */
	S_NOT_KEPT,	/* written, nothing kept to write it again */
	S_NSHAPES,
};

static const char *const shape_names[] = {
	"queued",      "written",  "resent",   "refused-once",
	"refused-max", "internal", "not-kept",
};

static struct outbox_req *make(struct outbox *ob, const char *method,
			       enum shape sh)
{
	struct outbox_req *r =
		outbox_add(ob, method, sh == S_NOT_KEPT ? NULL : json_object(),
			   sh == S_INTERNAL, seen_cb, NULL, NULL);
	switch (sh) {
	case S_QUEUED:
		break;
	case S_RESENT:
		outbox_written(ob, r, 1);
		outbox_requeue(ob, r);
		outbox_written(ob, r, 2);
		break;
	case S_REFUSED_ONCE:
		outbox_written(ob, r, 1);
		outbox_judge(ob, r, OUTBOX_REFUSED);
		outbox_written(ob, r, 2);
		break;
	case S_REFUSED_MAX:
		for (int i = 1; i < OUTBOX_MAX_ATTEMPTS; i++) {
			outbox_written(ob, r, (uint64_t)i);
			outbox_judge(ob, r, OUTBOX_REFUSED);
		}
		outbox_written(ob, r, OUTBOX_MAX_ATTEMPTS);
		break;
	default:
		outbox_written(ob, r, 1);
	}
	return r;
}

#define R_ OUTBOX_RESEND
#define U_ OUTBOX_FAIL_UNRUN
#define M_ OUTBOX_FAIL_MAYBE

/* [shape][fact]: UNWRITTEN, REFUSED, CUT, ENDING */
static const enum outbox_verdict call_table[S_NSHAPES][4] = {
	[S_QUEUED] = {R_, R_, U_, U_},
	[S_WRITTEN] = {R_, R_, M_, M_},
	/* Written twice (an owner's mistake the guard forbids): the first
	 * write may have reached, whatever became of the second. */
	[S_RESENT] = {M_, M_, M_, M_},
	[S_REFUSED_ONCE] = {R_, R_, M_, M_},
	[S_REFUSED_MAX] = {U_, U_, M_, M_},
	[S_INTERNAL] = {U_, U_, M_, M_},
	[S_NOT_KEPT] = {U_, U_, M_, M_},
};
static const enum outbox_verdict list_table[S_NSHAPES][4] = {
	[S_QUEUED] = {R_, R_, U_, U_},
	[S_WRITTEN] = {R_, R_, R_, U_},
	/* Lost twice after it was sent: a server that dies on it twice
	 * is likely killed by it. */
	[S_RESENT] = {R_, R_, U_, U_},
	[S_REFUSED_ONCE] = {R_, R_, R_, U_},
	[S_REFUSED_MAX] = {U_, U_, R_, U_},
	[S_INTERNAL] = {U_, U_, U_, U_},
	[S_NOT_KEPT] = {U_, U_, U_, U_},
};

Test(outbox, the_rule_for_every_state_and_fact)
{
	static const enum outbox_fact facts[] = {
		OUTBOX_UNWRITTEN, OUTBOX_REFUSED, OUTBOX_CUT, OUTBOX_ENDING};
	static const char *const fact_names[] = {"unwritten", "refused", "cut",
						 "ending"};
	for (int m = 0; m < 2; m++) {
		const char *method = m == 0 ? "tools/call" : "tools/list";
		for (int sh = 0; sh < S_NSHAPES; sh++) {
			for (int f = 0; f < 4; f++) {
				struct outbox *ob = outbox_new();
				struct outbox_req *r = make(ob, method, sh);
				enum outbox_verdict want =
					m == 0 ? call_table[sh][f]
					       : list_table[sh][f];
				enum outbox_verdict got =
					outbox_judge(ob, r, facts[f]);
				cr_expect_eq(got, want,
					     "%s %s %s: got %d, want %d",
					     method, shape_names[sh],
					     fact_names[f], got, want);
				/* What may be written after the verdict. */
				cr_expect_eq(outbox_may_write(r),
					     got == OUTBOX_RESEND ||
						     sh == S_QUEUED,
					     "%s %s %s: may_write", method,
					     shape_names[sh], fact_names[f]);
				outbox_settle(ob, r, OUTBOX_CANCELLED, NULL);
				outbox_free(ob);
			}
		}
	}
}

/* The guard every writer asks: a call that may have reached a server is
 * never writable again, whatever its owner does. */
Test(outbox, a_call_that_may_have_run_cannot_be_written_again)
{
	struct outbox *ob = outbox_new();
	struct outbox_req *c = outbox_add(ob, "tools/call", json_object(),
					  false, NULL, NULL, NULL);
	cr_assert(outbox_may_write(c));
	outbox_written(ob, c, 1);
	/* Proven unprocessed: it may go again. */
	cr_assert_eq(outbox_judge(ob, c, OUTBOX_REFUSED), OUTBOX_RESEND);
	cr_assert(outbox_may_write(c));
	cr_assert_eq(outbox_req_reached(c), 0);
	outbox_written(ob, c, 2);
	cr_assert_eq(outbox_judge(ob, c, OUTBOX_CUT), OUTBOX_FAIL_MAYBE);
	outbox_requeue(ob, c); /* an owner's mistake */
	cr_assert_not(outbox_may_write(c));
	outbox_settle(ob, c, OUTBOX_CANCELLED, NULL);
	outbox_free(ob);
}

Test(outbox, kept_message_and_hint)
{
	struct outbox *ob = outbox_new();
	struct outbox_req *r =
		outbox_add(ob, "tools/call", NULL, false, NULL, NULL, NULL);
	cr_assert_not(outbox_req_kept(r));
	outbox_req_set_hint(r, json_pack("{s:s}", "name", "t"));
	cr_assert_not(outbox_req_kept(r), "a hint is not a message");
	outbox_req_set_msg(r, "{\"id\":1}", 8);
	cr_assert(outbox_req_kept(r));
	size_t n;
	cr_assert_str_eq(outbox_req_msg(r, &n), "{\"id\":1}");
	cr_assert_eq(n, 8);
	outbox_settle(ob, r, OUTBOX_CANCELLED, NULL);
	outbox_free(ob);
}
