/*
 * The resources a session follows through a shared instance of the demo
 * server: a session that ends without unsubscribing gives its
 * subscriptions back (src/session/subs.c), so the instance stops counting
 * them once nobody follows them; one that unsubscribed has nothing left
 * to give back; another session's subscription stays.
 */
#include "hub_fixture.h"

static void ss_setup(void)
{
	char *text;
	if (asprintf(&text,
		     "{\"mcpServers\":{\"shared\":{\"command\":\"%s\","
		     "\"scope\":\"app\"}}}",
		     fx_demo_bin()) < 0)
		abort();
	fx_hub_open(text, true);
	free(text);
}

TestSuite(session_subs, .init = ss_setup, .fini = fx_teardown, .timeout = 30);

/* How many distinct resources the shared instance follows (0: none, or
 * no instance). */
static json_int_t ss_followed(void)
{
	json_t *st = hub_status(fx_hub, HUB_STATUS_VERBOSE);
	json_int_t n = 0;
	size_t i, j;
	json_t *sv, *in;
	json_array_foreach(json_object_get(st, "servers"), i, sv)
	{
		json_array_foreach(json_object_get(sv, "instances"), j, in)
		{
			n += json_integer_value(
				json_object_get(in, "subscriptions"));
		}
	}
	json_decref(st);
	return n;
}

/* s's request text, answered with a result. */
static void ss_ok(struct session *s, const char *text)
{
	struct fx_req *r = fx_send(s, text);
	cr_assert(fx_run_until(fx_answered, r), "no answer to %s", text);
	json_t *resp = fx_response(r);
	cr_assert_not_null(resp);
	cr_assert_not_null(json_object_get(resp, "result"), "%s",
			   json_dumps(resp, JSON_COMPACT));
	fx_req_free(r);
}

#define SS_SUB(id, uri)                                                        \
	"{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"resources/"          \
	"subscribe\",\"params\":{\"uri\":\"" uri "\"}}"
#define SS_UNSUB(id, uri)                                                      \
	"{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"resources/"          \
	"unsubscribe\",\"params\":{\"uri\":\"" uri "\"}}"

Test(session_subs, a_session_that_ends_stops_following_what_it_followed)
{
	struct session *a = fx_open(NULL), *b = fx_open(NULL);
	ss_ok(a, SS_SUB(1, "demo://readme"));
	ss_ok(a, SS_SUB(2, "demo://item/7"));
	ss_ok(b, SS_SUB(1, "demo://readme"));
	cr_assert_eq(ss_followed(), 2);

	/* a leaves without unsubscribing: item/7 was its alone, readme is
	 * b's too. */
	hub_session_end(fx_hub, a);
	cr_assert_eq(ss_followed(), 1);
	/* b unsubscribes, then leaves: nothing is left to give back, and
	 * nothing is followed. */
	ss_ok(b, SS_UNSUB(2, "demo://readme"));
	cr_assert_eq(ss_followed(), 0);
	hub_session_end(fx_hub, b);
	cr_assert_eq(ss_followed(), 0);
}

Test(session_subs, a_subscription_made_twice_is_given_back_twice)
{
	struct session *a = fx_open(NULL), *b = fx_open(NULL);
	ss_ok(a, SS_SUB(1, "demo://readme"));
	ss_ok(a, SS_SUB(2, "demo://readme"));
	ss_ok(b, SS_SUB(1, "demo://readme"));
	/* a undoes one of its two and leaves: b's stays. */
	ss_ok(a, SS_UNSUB(3, "demo://readme"));
	hub_session_end(fx_hub, a);
	cr_assert_eq(ss_followed(), 1);
	hub_session_end(fx_hub, b);
	cr_assert_eq(ss_followed(), 0);
}

Test(session_subs, a_refused_subscription_is_not_counted)
{
	struct session *a = fx_open(NULL);
	struct fx_req *r = fx_send(a, SS_SUB(1, "demo://nothing-here"));
	cr_assert(fx_run_until(fx_answered, r));
	cr_assert_not_null(json_object_get(fx_response(r), "error"));
	fx_req_free(r);
	cr_assert_eq(ss_followed(), 0);
	hub_session_end(fx_hub, a);
	cr_assert_eq(ss_followed(), 0);
}

/* A session that still follows when the runtime stops: its count goes
 * with it (the sanitizer's leak check holds this test). */
Test(session_subs, a_session_that_follows_at_shutdown_frees_its_count)
{
	struct session *a = fx_open(NULL);
	ss_ok(a, SS_SUB(1, "demo://readme"));
	cr_assert_eq(ss_followed(), 1);
}
