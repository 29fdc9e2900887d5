/*
 * Routing by cause: when a transport names the request whose answer
 * stream carried a server's message (HTTP), the hub sends it to exactly
 * that call's session, whatever the stdio heuristic would have picked; a
 * cause that is not a live call (the runtime's own request) is never
 * followed and never guessed from. The demo fixture serves the calls;
 * the messages with a cause are handed to the hub's instance callbacks
 * as a transport's instance would.
 */
#include "hub_fixture.h"
#include "session/hub_int.h"
#include "session/session_int.h"

TestSuite(hub_cause, .init = fx_setup, .fini = fx_teardown, .timeout = 30);

/* A client with sampling that listens on a standing stream. */
struct rich {
	struct session *s;
	struct fx_capture stream;
	struct exchange *ex;
	struct fx_req *call;
	struct call *c;
};

static void rich_open(struct rich *a)
{
	memset(a, 0, sizeof *a);
	a->s = fx_open("{\"sampling\":{},\"elicitation\":{}}");
	a->stream.msgs = json_array();
	a->ex = exchange_new(&fx_ops, &a->stream, 0);
	session_set_stream(a->s, a->ex);
}

/* Ends the session first: its calls are answered into their captures. */
static void rich_close(struct rich *a)
{
	hub_session_end(fx_hub, a->s);
	fx_req_free(a->call);
	exchange_unref(a->ex);
	json_decref(a->stream.msgs);
}

struct sent_probe {
	struct session *s;
	json_t *id;
	struct call *c;
};

/* The call exists (its route may wait for the lists first) and went to
 * its server. */
static bool call_sent(void *arg)
{
	struct sent_probe *p = arg;
	p->c = session_find_call(p->s, p->id);
	return p->c && p->c->server_id > 0;
}

/* A long call of a on the shared (app) instance, sent to the server. */
static void rich_call(struct rich *a, int id)
{
	char text[256];
	snprintf(text, sizeof text,
		 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
		 "\"params\":{\"name\":\"shared__sleep\",\"arguments\":"
		 "{\"ms\":5000}}}",
		 id);
	a->call = fx_send(a->s, text);
	struct sent_probe p = {a->s, json_integer(id), NULL};
	cr_assert(fx_run_until(call_sent, &p), "call %d sent", id);
	json_decref(p.id);
	a->c = p.c;
}

static size_t count_method(json_t *msgs, const char *method)
{
	size_t n = 0, i;
	json_t *m;
	json_array_foreach(msgs, i, m)
	{
		const char *mm =
			json_string_value(json_object_get(m, "method"));
		n += mm && strcmp(mm, method) == 0;
	}
	return n;
}

static json_t *sampling(const char *id)
{
	return json_pack("{s:s,s:s,s:s,s:{s:[],s:i}}", "jsonrpc", "2.0", "id",
			 id, "method", "sampling/createMessage", "params",
			 "messages", "maxTokens", 10);
}

/* Two sessions with a call each on one shared instance: the stdio
 * heuristic picks the older call (A's); a cause names B's, and B alone
 * is asked, on that call's stream. */
Test(hub_cause, a_server_request_goes_to_the_cause_session)
{
	struct rich a, b;
	rich_open(&a);
	rich_open(&b);
	rich_call(&a, 1);
	rich_call(&b, 2);
	struct instance *inst = b.c->inst;
	cr_assert_eq(a.c->inst, inst, "one shared instance");

	json_t *q = sampling("srv-1");
	hub_instance_cbs.on_request(fx_hub, inst, q, b.c);
	json_decref(q);
	cr_assert_eq(count_method(b.call->cap.msgs, "sampling/createMessage"),
		     1, "B's call stream was asked");
	cr_assert_eq(count_method(a.call->cap.msgs, "sampling/createMessage"),
		     0, "A was not asked");
	cr_assert_eq(json_array_size(a.stream.msgs), 0);
	cr_assert_eq(json_array_size(b.stream.msgs), 0);

	/* Without a cause (stdio) the heuristic picks A: the cause above
	 * was not a lucky guess. */
	q = sampling("srv-2");
	hub_instance_cbs.on_request(fx_hub, inst, q, NULL);
	json_decref(q);
	cr_assert_eq(count_method(a.call->cap.msgs, "sampling/createMessage"),
		     1, "the heuristic picks A");
	cr_assert_eq(count_method(b.call->cap.msgs, "sampling/createMessage"),
		     1);

	/* notifications/message with a cause: B's call stream alone. */
	json_t *n = json_pack("{s:s,s:s,s:{s:s,s:s}}", "jsonrpc", "2.0",
			      "method", "notifications/message", "params",
			      "level", "info", "data", "for B");
	hub_instance_cbs.on_notification(fx_hub, inst, n, b.c);
	cr_assert_eq(count_method(b.call->cap.msgs, "notifications/message"),
		     1);
	cr_assert_eq(count_method(a.call->cap.msgs, "notifications/message"),
		     0);
	cr_assert_eq(json_array_size(a.stream.msgs), 0);
	json_decref(n);
	rich_close(&a);
	rich_close(&b);
}

/* A cause that is no live call (another request's arg, or a call that
 * ended) is not followed and not guessed from: a shared instance's
 * request with no call behind it reaches nobody. */
Test(hub_cause, a_cause_that_is_no_call_asks_nobody)
{
	struct rich a, b;
	rich_open(&a);
	rich_open(&b);
	rich_call(&a, 1);
	rich_call(&b, 2);
	struct instance *inst = a.c->inst;
	int not_a_call = 0;

	json_t *q = sampling("srv-3");
	hub_instance_cbs.on_request(fx_hub, inst, q, &not_a_call);
	json_decref(q);
	cr_assert_eq(count_method(a.call->cap.msgs, "sampling/createMessage"),
		     0);
	cr_assert_eq(count_method(b.call->cap.msgs, "sampling/createMessage"),
		     0);
	cr_assert_eq(json_array_size(a.stream.msgs), 0);
	cr_assert_eq(json_array_size(b.stream.msgs), 0);

	/* A log line on such a request is every member session's, told on
	 * its standing stream rather than on a guessed call. */
	json_t *n = json_pack("{s:s,s:s,s:{s:s,s:s}}", "jsonrpc", "2.0",
			      "method", "notifications/message", "params",
			      "level", "info", "data", "for all");
	hub_instance_cbs.on_notification(fx_hub, inst, n, &not_a_call);
	json_decref(n);
	cr_assert_eq(count_method(a.call->cap.msgs, "notifications/message"),
		     0);
	cr_assert_eq(count_method(b.call->cap.msgs, "notifications/message"),
		     0);
	cr_assert_eq(count_method(a.stream.msgs, "notifications/message"), 1);
	cr_assert_eq(count_method(b.stream.msgs, "notifications/message"), 1);

	/* B's call ends; its address as a cause finds nothing. */
	struct call *gone = b.c;
	session_call_abort(b.c, "test");
	q = sampling("srv-4");
	hub_instance_cbs.on_request(fx_hub, inst, q, gone);
	json_decref(q);
	cr_assert_eq(count_method(a.call->cap.msgs, "sampling/createMessage"),
		     0);
	cr_assert_eq(count_method(a.stream.msgs, "sampling/createMessage"), 0);
	rich_close(&a);
	rich_close(&b);
}

struct turn_probe {
	struct session *s;
	json_t *id;
};

/* The call exists and waits for its turn, unsent. */
static bool call_waits_turn(void *arg)
{
	struct turn_probe *p = arg;
	struct call *c = session_find_call(p->s, p->id);
	return c && c->waiting_turn && c->server_id == 0;
}

/* Over stdio a server's request names no call. Once a server has asked
 * so, its calls take turns: B's call waits, unsent, while A's runs (a
 * second question can only be A's), and goes when A's ends. Without
 * turns B's call is sent at once and the next question is a guess. */
Test(hub_cause, calls_take_turns_on_a_server_that_asks_without_a_cause)
{
	struct rich a, b;
	rich_open(&a);
	rich_open(&b);
	rich_call(&a, 1);
	struct instance *inst = a.c->inst;
	cr_assert_not(hub_instance_asks(fx_hub, inst), "not before it asks");
	json_t *q = sampling("srv-1");
	hub_instance_cbs.on_request(fx_hub, inst, q, NULL);
	json_decref(q);
	cr_assert(hub_instance_asks(fx_hub, inst));
	cr_assert_eq(count_method(a.call->cap.msgs, "sampling/createMessage"),
		     1, "A was asked");

	b.call =
		fx_send(b.s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
			     "\"tools/call\",\"params\":{\"name\":"
			     "\"shared__sleep\",\"arguments\":{\"ms\":5000}}}");
	struct turn_probe tp = {b.s, json_integer(2)};
	cr_assert(fx_run_until(call_waits_turn, &tp), "B waits for its turn");

	/* A ends (its session goes): B's call goes to the server. */
	hub_session_end(fx_hub, a.s);
	struct sent_probe p = {b.s, tp.id, NULL};
	cr_assert(fx_run_until(call_sent, &p), "B is sent once A ended");
	cr_assert_not(p.c->waiting_turn);
	json_decref(tp.id);
	fx_req_free(a.call);
	exchange_unref(a.ex);
	json_decref(a.stream.msgs);
	rich_close(&b);
}

/* A call that waits for its turn and is cancelled (its client went)
 * leaves the line, and is never sent. */
Test(hub_cause, a_call_waiting_its_turn_can_be_cancelled)
{
	struct rich a, b;
	rich_open(&a);
	rich_open(&b);
	rich_call(&a, 1);
	struct instance *inst = a.c->inst;
	json_t *q = sampling("srv-1");
	hub_instance_cbs.on_request(fx_hub, inst, q, NULL);
	json_decref(q);
	b.call =
		fx_send(b.s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
			     "\"tools/call\",\"params\":{\"name\":"
			     "\"shared__sleep\",\"arguments\":{\"ms\":5000}}}");
	struct turn_probe tp = {b.s, json_integer(2)};
	cr_assert(fx_run_until(call_waits_turn, &tp));
	hub_session_end(fx_hub, b.s);
	cr_assert_null(fx_hub->turns, "nothing waits any more");
	json_decref(tp.id);
	fx_req_free(b.call);
	exchange_unref(b.ex);
	json_decref(b.stream.msgs);
	rich_close(&a);
}
