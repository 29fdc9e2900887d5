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

static const char *const second_call =
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
	"{\"name\":\"shared__sleep\",\"arguments\":{\"ms\":5000}}}";

/* a's call on the shared instance is sent, and its server asks once
 * without naming the call: from now on its calls take turns. */
static struct instance *asked(struct rich *a)
{
	rich_call(a, 1);
	struct instance *inst = a->c->inst;
	json_t *q = sampling("srv-1");
	hub_instance_cbs.on_request(fx_hub, inst, q, NULL);
	json_decref(q);
	cr_assert(hub_instance_asks(fx_hub, inst));
	return inst;
}

/* One client's own calls run side by side: its second call on a server
 * that asks is sent at once (a question reaches that client either way,
 * and it answers by id). */
Test(hub_cause, one_clients_calls_run_side_by_side)
{
	struct rich a;
	rich_open(&a);
	asked(&a);
	struct fx_req *second = fx_send(a.s, second_call);
	struct sent_probe p = {a.s, json_integer(2), NULL};
	cr_assert(fx_run_until(call_sent, &p), "the second call is sent");
	json_decref(p.id);
	rich_close(&a);
	fx_req_free(second);
}

/* A session that keeps its calls apart (a 2026-07-28 principal's, where a
 * question becomes that one call's input_required): its own second call
 * waits for the first to end, so a question can only be the call's on
 * the server. */
Test(hub_cause, a_session_that_keeps_its_calls_apart_takes_turns_with_itself)
{
	struct rich a;
	rich_open(&a);
	session_keep_calls_apart(a.s);
	asked(&a);
	struct fx_req *second = fx_send(a.s, second_call);
	struct turn_probe tp = {a.s, json_integer(2)};
	cr_assert(fx_run_until(call_waits_turn, &tp),
		  "the second call waits for its turn");
	json_t *cancel =
		json_pack("{s:s,s:s,s:{s:i}}", "jsonrpc", "2.0", "method",
			  "notifications/cancelled", "params", "requestId", 1);
	session_handle(a.s, cancel, NULL);
	json_decref(cancel);
	struct sent_probe p = {a.s, tp.id, NULL};
	cr_assert(fx_run_until(call_sent, &p), "sent once the first ended");
	json_decref(tp.id);
	rich_close(&a);
	fx_req_free(second);
}

static void note_go(void *arg)
{
	(*(int *)arg)++;
}

/* A call waiting for its client (a 2026-07-28 client answered
 * input_required, and may never come back) gives its server's turn up:
 * another client's call is sent. When its client does come back with the
 * answers while that call is on the server, the answers wait for the
 * turn, which is theirs once that call ends; a call that holds the turn
 * meanwhile makes a new one wait. */
Test(hub_cause,
     a_call_waiting_for_its_client_gives_its_turn_up_and_takes_it_back)
{
	struct rich a, b;
	rich_open(&a);
	rich_open(&b);
	asked(&a);
	struct exchange *aex = a.call->ex;
	session_call_waits_client(a.s, aex, true);

	b.call = fx_send(b.s, second_call);
	struct sent_probe pb = {b.s, json_integer(2), NULL};
	cr_assert(fx_run_until(call_sent, &pb),
		  "B is sent while A waits for its client");
	json_decref(pb.id);

	int went = 0;
	cr_assert(session_turn_wait(a.s, aex, note_go, &went),
		  "A's answers wait: B is on the server");
	cr_assert(exchange_waits_client(aex), "A holds no turn yet");
	cr_assert_eq(went, 0);

	hub_session_end(fx_hub, b.s);
	cr_assert_eq(went, 1, "A goes on once B ended");
	cr_assert_not(exchange_waits_client(aex), "A holds the turn again");
	cr_assert_null(fx_hub->resumes);

	fx_req_free(b.call);
	exchange_unref(b.ex);
	json_decref(b.stream.msgs);
	rich_close(&a);
}

/* With the turn free the answers go at once; a call whose answers wait
 * and that ends (its session goes) leaves nothing waiting. */
Test(hub_cause,
     answers_go_at_once_on_a_free_turn_and_a_waiting_call_that_ends_leaves_nothing)
{
	struct rich a, b;
	rich_open(&a);
	rich_open(&b);
	asked(&a);
	struct exchange *aex = a.call->ex;
	int went = 0;
	session_call_waits_client(a.s, aex, true);
	cr_assert_not(session_turn_wait(a.s, aex, note_go, &went),
		      "nobody else is on the server");
	cr_assert_not(exchange_waits_client(aex));

	session_call_waits_client(a.s, aex, true);
	b.call = fx_send(b.s, second_call);
	struct sent_probe pb = {b.s, json_integer(2), NULL};
	cr_assert(fx_run_until(call_sent, &pb));
	json_decref(pb.id);
	cr_assert(session_turn_wait(a.s, aex, note_go, &went));
	hub_session_end(fx_hub, a.s);
	cr_assert_null(fx_hub->resumes, "A's wait went with its call");
	cr_assert_eq(went, 0);
	fx_req_free(a.call);
	exchange_unref(a.ex);
	json_decref(a.stream.msgs);
	rich_close(&b);
}
