/*
 * Session dispatch over a hub with no servers: every malformed or unknown
 * request gets the right JSON-RPC error, and nothing is started.
 */
#include "hub_fixture.h"

/* Sends text as one request and returns its single answer. */
static json_t *ask(const char *text)
{
	json_error_t jerr;
	json_t *msg = json_loads(text, 0, &jerr);
	cr_assert_not_null(msg, "%s", jerr.text);
	struct fx_capture cap = {json_array(), 0};
	struct exchange *ex = exchange_new(&fx_ops, &cap, 1);
	session_handle(fx_sess, msg, ex);
	cr_assert_eq(cap.finished, 1, "answered at once: %s", text);
	cr_assert_eq(json_array_size(cap.msgs), 1);
	json_t *answer = json_incref(json_array_get(cap.msgs, 0));
	json_decref(cap.msgs);
	exchange_unref(ex);
	json_decref(msg);
	return answer;
}

static void expect_error(const char *text, int code, const char *needle)
{
	json_t *a = ask(text);
	json_t *err = json_object_get(a, "error");
	cr_assert_not_null(err, "expected an error for %s", text);
	cr_assert_eq(json_integer_value(json_object_get(err, "code")), code,
		     "code for %s", text);
	const char *m = json_string_value(json_object_get(err, "message"));
	if (needle)
		cr_assert(m && strstr(m, needle), "message \"%s\" lacks \"%s\"",
			  m, needle);
	json_decref(a);
}

TestSuite(session, .init = fx_setup_bare, .fini = fx_teardown);

Test(session, ping_is_answered_by_the_runtime)
{
	json_t *a =
		ask("{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}");
	cr_assert(json_is_object(json_object_get(a, "result")));
	cr_assert_str_eq(json_string_value(json_object_get(a, "id")), "p");
	json_decref(a);
}

Test(session, unknown_method)
{
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"nope/x\"}",
		     JR_METHOD_NOT_FOUND, "nope/x");
	/* Params that name nothing any server owns: still not found, not an
	 * unknown-tool error. */
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tasks/x\","
		     "\"params\":{\"name\":\"ghost__t\"}}",
		     JR_METHOD_NOT_FOUND, "tasks/x");
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tasks/y\","
		     "\"params\":{\"uri\":\"x://nothing\"}}",
		     JR_METHOD_NOT_FOUND, "tasks/y");
}

Test(session, wrong_params_types)
{
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
		     "\"params\":{}}",
		     JR_INVALID_PARAMS, "name");
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
		     "\"params\":{\"name\":5}}",
		     JR_INVALID_PARAMS, "name");
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
		     "\"params\":{\"name\":\"x\",\"_meta\":3}}",
		     JR_INVALID_PARAMS, "_meta");
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
		     "\"params\":[1]}",
		     JR_INVALID_PARAMS, "object");
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/"
		     "read\",\"params\":{\"uri\":{}}}",
		     JR_INVALID_PARAMS, "uri");
	expect_error(
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\"}",
		JR_INVALID_PARAMS, "name");
}

Test(session, bad_cursor)
{
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
		     "\"params\":{\"cursor\":\"forged\"}}",
		     JR_INVALID_PARAMS, "cursor");
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
		     "\"params\":{\"cursor\":7}}",
		     JR_INVALID_PARAMS, "cursor");
}

Test(session, unknown_tool_prompt_resource)
{
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
		     "\"params\":{\"name\":\"ghost__x\"}}",
		     JR_INVALID_PARAMS, "Unknown tool \"ghost__x\"");
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\","
		     "\"params\":{\"name\":\"p\"}}",
		     JR_INVALID_PARAMS, "Unknown prompt");
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/"
		     "read\",\"params\":{\"uri\":\"x://y\"}}",
		     JR_RESOURCE_NOT_FOUND, "x://y");
}

Test(session, completion_needs_a_ref)
{
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"completion/"
		     "complete\",\"params\":{}}",
		     JR_INVALID_PARAMS, "ref");
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"completion/"
		     "complete\",\"params\":{\"ref\":{\"type\":\"ref/x\"}}}",
		     JR_INVALID_PARAMS, "ref");
}

Test(session, set_level_checks_the_level)
{
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"logging/"
		     "setLevel\",\"params\":{\"level\":\"loud\"}}",
		     JR_INVALID_PARAMS, "level");
	json_t *a = ask("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"logging/"
			"setLevel\",\"params\":{\"level\":\"debug\"}}");
	cr_assert_not_null(json_object_get(a, "result"));
	json_decref(a);
}

Test(session, second_initialize_is_refused)
{
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
		     "\"params\":{}}",
		     JR_INVALID_REQUEST, "already initialized");
}

Test(session, empty_lists_with_no_servers)
{
	const char *methods[] = {"tools/list", "prompts/list", "resources/list",
				 "resources/templates/list"};
	const char *keys[] = {"tools", "prompts", "resources",
			      "resourceTemplates"};
	for (int i = 0; i < 4; i++) {
		char text[128];
		snprintf(text, sizeof text,
			 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\"}", i,
			 methods[i]);
		json_t *a = ask(text);
		json_t *list =
			json_object_get(json_object_get(a, "result"), keys[i]);
		cr_assert(json_is_array(list), "%s", methods[i]);
		cr_assert_eq(json_array_size(list), 0);
		cr_assert_null(json_object_get(json_object_get(a, "result"),
					       "nextCursor"));
		json_decref(a);
	}
}

Test(session, invalid_message_gets_invalid_request)
{
	json_t *msg = json_pack("{s:i,s:s}", "id", 1, "method", "ping");
	struct fx_capture cap = {json_array(), 0};
	struct exchange *ex = exchange_new(&fx_ops, &cap, 1);
	session_handle(fx_sess, msg, ex);
	cr_assert_eq(json_array_size(cap.msgs), 1);
	json_t *err = json_object_get(json_array_get(cap.msgs, 0), "error");
	cr_assert_eq(json_integer_value(json_object_get(err, "code")),
		     JR_INVALID_REQUEST);
	json_decref(cap.msgs);
	exchange_unref(ex);
	json_decref(msg);
}

Test(session, notifications_and_stray_responses_need_no_answer)
{
	const char *texts[] = {
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
		"initialized\"}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
		"\"params\":{\"requestId\":99}}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/unknown\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":\"mcpv-9\",\"result\":{}}",
		"{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":1,"
		"\"message\":\"x\"}}",
	};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		json_t *m = json_loads(texts[i], 0, NULL);
		session_handle(fx_sess, m, NULL);
		json_decref(m);
	}
	cr_assert_eq(hub_session_count(fx_hub), 1);
}

Test(session, replay_ring_resumes_after_an_event)
{
	struct fx_capture cap = {json_array(), 0};
	struct exchange *ex = exchange_new(&fx_ops, &cap, 2);
	session_stream_open(fx_sess, ex);
	char prime[EXCHANGE_EVENT_ID_MAX];
	session_stream_prime(fx_sess, ex, prime);
	json_t *note = jr_notification("notifications/progress", NULL);
	exchange_send(ex, note);
	exchange_detach(ex);
	json_t *one = json_integer(1);
	json_t *r1 = jr_result(one, NULL);
	json_decref(one);
	exchange_send(ex, r1); /* recorded while nobody listens */
	struct exchange *cont = NULL;
	json_t *events = NULL;
	cr_assert_eq(session_stream_resume(fx_sess, prime, &cont, &events), 0);
	cr_assert_eq(json_array_size(events), 2);
	cr_assert_not_null(cont, "one response is still expected");
	cr_assert_eq(cont, ex);
	exchange_unref(cont);
	json_decref(events);
	cr_assert_lt(session_stream_resume(fx_sess, "999999", &cont, &events),
		     0);
	cr_assert_lt(session_stream_resume(fx_sess, "x", &cont, &events), 0);
	json_decref(note);
	json_decref(r1);
	json_decref(cap.msgs);
	exchange_unref(ex);
}

/* An HTTP side that opens the session's stream only when its answer
 * streams, as the endpoint does: at a message that is not the answer
 * alone (or at any, when answer_streams). */
struct lazy_side {
	struct fx_capture cap;
	struct exchange *ex;
	bool answer_streams;
	bool opened;
	char prime[EXCHANGE_EVENT_ID_MAX];
};

static void lazy_opening(void *ctx, size_t len, bool last)
{
	struct lazy_side *l = ctx;
	if (l->opened || (last && !l->answer_streams))
		return;
	l->opened = true;
	session_stream_open(fx_sess, l->ex);
	session_stream_prime(fx_sess, l->ex, l->prime);
}

static void lazy_deliver(void *ctx, json_t *msg, const char *id,
			 const char *data, size_t len)
{
	fx_deliver(&((struct lazy_side *)ctx)->cap, msg, id, data, len);
}

static void lazy_finish(void *ctx)
{
	fx_finish(&((struct lazy_side *)ctx)->cap);
}

static const struct exchange_ops lazy_ops = {
	.deliver = lazy_deliver,
	.finish = lazy_finish,
	.opening = lazy_opening,
};

static struct exchange *lazy_new(struct lazy_side *l, json_int_t id)
{
	memset(l, 0, sizeof *l);
	l->cap.msgs = json_array();
	l->ex = exchange_new(&lazy_ops, l, 1);
	json_t *jid = json_integer(id);
	exchange_expect(l->ex, jid, "tools/call");
	json_decref(jid);
	return l->ex;
}

static void lazy_answer(struct exchange *ex, json_int_t id)
{
	json_t *jid = json_integer(id);
	json_t *r = jr_result(jid, json_object());
	json_decref(jid);
	exchange_send(ex, r);
	json_decref(r);
}

static void lazy_free(struct lazy_side *l)
{
	json_decref(l->cap.msgs);
	exchange_unref(l->ex);
}

Test(session, a_stream_opened_at_its_first_message_replays_it)
{
	struct lazy_side l;
	struct exchange *ex = lazy_new(&l, 3);
	json_t *note = jr_notification(
		"notifications/progress",
		json_pack("{s:s,s:i}", "progressToken", "p", "progress", 1));
	exchange_send(ex, note);
	json_decref(note);
	cr_assert(l.opened, "progress first: the answer streams");
	exchange_detach(ex); /* the client lost the stream */
	lazy_answer(ex, 3);  /* recorded while nobody listens */
	struct exchange *cont = NULL;
	json_t *events = NULL;
	cr_assert_eq(session_stream_resume(fx_sess, l.prime, &cont, &events),
		     0);
	cr_assert_null(cont, "the stream ended with its answer");
	cr_assert_eq(json_array_size(events), 2, "the progress, the answer");
	json_t *first = json_loads(json_string_value(json_object_get(
					   json_array_get(events, 0), "data")),
				   0, NULL);
	cr_assert_str_eq(json_string_value(json_object_get(first, "method")),
			 "notifications/progress");
	json_decref(first);
	json_t *last = json_loads(json_string_value(json_object_get(
					  json_array_get(events, 1), "data")),
				  0, NULL);
	cr_assert_eq(json_integer_value(json_object_get(last, "id")), 3);
	json_decref(last);
	json_decref(events);
	lazy_free(&l);
}

/* "S-N" into its numbers. */
static void split_event_id(const char *id, unsigned long long *stream,
			   unsigned long long *n)
{
	cr_assert_eq(sscanf(id, "%llu-%llu", stream, n), 2, "%s", id);
}

Test(session, an_answer_that_goes_alone_keeps_no_stream)
{
	/* A stream before and after: the answer between them took neither
	 * a stream number nor an event of the ring. */
	struct lazy_side a, b, c;
	lazy_new(&a, 1);
	a.answer_streams = true;
	lazy_answer(a.ex, 1);
	cr_assert(a.opened);
	lazy_new(&b, 2);
	lazy_answer(b.ex, 2);
	cr_assert_not(b.opened, "the answer alone goes as JSON");
	cr_assert_eq(b.cap.finished, 1);
	cr_assert_eq(json_array_size(b.cap.msgs), 1, "and is delivered");
	lazy_new(&c, 3);
	c.answer_streams = true;
	lazy_answer(c.ex, 3);
	unsigned long long sa, na, sc, nc;
	split_event_id(a.prime, &sa, &na);
	split_event_id(c.prime, &sc, &nc);
	cr_assert_eq(sc, sa + 1, "no stream number in between");
	cr_assert_eq(nc, na + 2, "a's priming event and answer, no more");
	lazy_free(&a);
	lazy_free(&b);
	lazy_free(&c);
}
