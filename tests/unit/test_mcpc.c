/*
 * Unit tests for the MCP client session over HTTP, against a scripted
 * HTTP server inside the test on the same libuv loop (mcpc_fixture.h):
 * each test's script answers each request as it comes and records what
 * it received; the loop runs until the condition a test waits for.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "mcpc/mcpc_int.h"
#include "mcpc_fixture.h"

/* A plain Streamable HTTP server: initialize gives a session, the GET
 * stream is refused with 405, calls are answered with JSON. */
static void tm_script_plain(struct tmc *t, struct tm_conn *c, int n,
			    const struct tm_req *r)
{
	if (strcmp(r->method, "GET") == 0)
		tm_reply(c, 405, NULL, NULL, NULL);
	else if (strcmp(r->method, "DELETE") == 0)
		tm_reply(c, 200, NULL, NULL, NULL);
	else if (tm_body_has(r, "\"initialize\""))
		tm_reply(c, 200, "Mcp-Session-Id: sess-1\r\n",
			 "application/json", TM_INIT_RESULT);
	else if (tm_body_has(r, "notifications/"))
		tm_reply(c, 202, NULL, NULL, NULL);
	else
		tm_reply(c, 200, NULL, "application/json", TM_ANSWER(2));
}

static bool tm_get_seen(struct tmc *t)
{
	return tm_nth(t, "GET", 0) != NULL && t->nreqs >= 3;
}

static void tm_initialize(struct tmc *t)
{
	tm_send(t, TM_INIT, 1);
	tm_run_until(t, tm_msgs1, "the initialize answer");
	tm_send(t, TM_INITIALIZED, 0);
	tm_run_until(t, tm_get_seen, "the GET stream");
}

Test(mcpc, session_id_and_version_go_on_later_requests)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_plain);
	tm_initialize(&t);
	cr_assert_str_eq(t.log.data, "1: " TM_INIT_RESULT "\n");
	cr_assert(mcpc_has_session(t.m));
	const struct tm_req *init = tm_nth(&t, "POST", 0);
	cr_assert_str_eq(init->body, TM_INIT);
	cr_assert_str_eq(init->url, "/mcp");
	cr_assert(tm_has_header(init, "content-type: application/json\n"));
	cr_assert(tm_has_header(
		init, "accept: application/json, text/event-stream\n"));
	cr_assert(tm_has_header(init, "authorization: Bearer s3cr3t\n"));
	cr_assert(tm_has_header(init, "x-team: blue\n"));
	cr_assert(!tm_has_header(init, "mcp-session-id"));
	cr_assert(!tm_has_header(init, "mcp-protocol-version"));
	/* The GET stream went after notifications/initialized. */
	const struct tm_req *note = tm_nth(&t, "POST", 1);
	cr_assert(tm_body_has(note, "notifications/initialized"));
	cr_assert(tm_has_header(note, "mcp-session-id: sess-1\n"));
	const struct tm_req *get = tm_nth(&t, "GET", 0);
	cr_assert(tm_has_header(get, "accept: text/event-stream\n"));
	cr_assert(tm_has_header(get, "mcp-session-id: sess-1\n"));

	tm_send(&t, TM_CALL(2), 2);
	tm_run_until(&t, tm_msgs2, "the call's answer");
	const struct tm_req *call = tm_nth(&t, "POST", 2);
	cr_assert(tm_has_header(call, "mcp-session-id: sess-1\n"));
	cr_assert(tm_has_header(call, "mcp-protocol-version: 2025-06-18\n"));
	cr_assert_str_eq(t.log.data,
			 "1: " TM_INIT_RESULT "\n2: " TM_ANSWER(2) "\n");
	json_t *d = mcpc_describe(t.m, true);
	cr_assert_str_eq(json_string_value(json_object_get(d, "protocol")),
			 "streamable-http");
	cr_assert_str_eq(
		json_string_value(json_object_get(d, "protocolVersion")),
		"2025-06-18");
	cr_assert_eq(strlen(json_string_value(json_object_get(d, "sessionId"))),
		     8);
	json_decref(d);
	cr_assert_eq(t.faults, 0);
	cr_assert_eq(t.nlost, 0);
	tm_stop(&t);
}

static bool tm_delete_seen(struct tmc *t)
{
	return tm_nth(t, "DELETE", 0) != NULL && t->closed;
}

Test(mcpc, close_sends_delete_with_the_session_id)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_plain);
	tm_initialize(&t);
	mcpc_close(t.m, tm_done_cb, &t);
	tm_run_until(&t, tm_delete_seen, "DELETE and done");
	const struct tm_req *del = tm_nth(&t, "DELETE", 0);
	cr_assert(tm_has_header(del, "mcp-session-id: sess-1\n"));
	cr_assert(tm_has_header(del, "authorization: Bearer s3cr3t\n"));
	cr_assert_eq(t.faults, 0);
	tm_stop(&t);
}

/* Calls are answered on an event stream: a progress notification, a
 * server request, comments, then the answer. */
static void tm_script_sse(struct tmc *t, struct tm_conn *c, int n,
			  const struct tm_req *r)
{
	if (strcmp(r->method, "POST") != 0) {
		tm_reply(c, 405, NULL, NULL, NULL);
		return;
	}
	tm_sse(c, NULL);
	tm_write(c, ": hb\n\nid: a1\ndata:\n\n");
	tm_write(c, "event: message\nid: a2\ndata: {\"jsonrpc\":\"2.0\","
		    "\"method\":\"notifications/progress\"}\n\n");
	tm_write(c, ": hb\r\n\r\nid: a3\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":"
		    "100,\"method\":\"sampling/createMessage\"}\r\n\r\n");
	tm_write(c, "id: a4\ndata: " TM_ANSWER(5) "\n\n");
	tm_end(c);
}

Test(mcpc, sse_answer_carries_server_messages_related_to_the_call)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_sse);
	tm_send(&t, TM_CALL(5), 5);
	tm_run_until(&t, tm_msgs3, "three messages");
	cr_assert_str_eq(t.log.data,
			 "5: {\"jsonrpc\":\"2.0\",\"method\":"
			 "\"notifications/progress\"}\n"
			 "5: {\"jsonrpc\":\"2.0\",\"id\":100,\"method\":"
			 "\"sampling/createMessage\"}\n"
			 "5: " TM_ANSWER(5) "\n");
	cr_assert_eq(t.heartbeats, 2);
	cr_assert_eq(t.nlost, 0);
	cr_assert_eq(t.faults, 0);
	tm_stop(&t);
}

/* The call's stream drops after one event with an id (retry 10 ms); the
 * resumption gets the answer twice (a redelivery): once is delivered. */
static void tm_script_resume(struct tmc *t, struct tm_conn *c, int n,
			     const struct tm_req *r)
{
	if (strcmp(r->method, "POST") == 0) {
		tm_sse(c, NULL);
		tm_write(c, "retry: 10\nid: e1\ndata: {\"jsonrpc\":\"2.0\","
			    "\"method\":\"notifications/progress\"}\n\n");
		tm_end(c);
		return;
	}
	if (t->scratch) { /* refuse the resumption */
		tm_reply(c, 405, NULL, NULL, NULL);
		return;
	}
	tm_sse(c, NULL);
	tm_write(c, "id: e2\ndata: " TM_ANSWER(7) "\n\n");
	tm_write(c, "id: e2\ndata: " TM_ANSWER(7) "\n\n");
	tm_end(c);
}

static bool tm_resumed(struct tmc *t)
{
	return t->nmsgs >= 2 && t->nreqs >= 2 && t->reqs[1].conn->closed;
}

Test(mcpc, dropped_stream_resumes_with_last_event_id)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_resume);
	tm_send(&t, TM_CALL(7), 7);
	tm_run_until(&t, tm_resumed, "the resumed answer");
	uv_run(&t.loop, UV_RUN_NOWAIT);
	cr_assert_eq(t.nmsgs, 2);
	cr_assert_str_eq(t.log.data,
			 "7: {\"jsonrpc\":\"2.0\",\"method\":"
			 "\"notifications/progress\"}\n7: " TM_ANSWER(7) "\n");
	const struct tm_req *get = tm_nth(&t, "GET", 0);
	cr_assert_not_null(get);
	cr_assert(tm_has_header(get, "last-event-id: e1\n"), "%s",
		  get->headers);
	cr_assert(tm_has_header(get, "accept: text/event-stream\n"));
	cr_assert_eq(t.nlost, 0);
	cr_assert_eq(t.faults, 0);
	tm_stop(&t);
}

Test(mcpc, refused_resumption_loses_the_call_as_sent)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_resume);
	t.scratch = 1;
	tm_send(&t, TM_CALL(8), 8);
	tm_run_until(&t, tm_lost, "on_lost");
	cr_assert_eq(t.lost_id, 8);
	cr_assert(t.lost_sent);
	cr_assert_eq(t.nmsgs, 1);
	cr_assert_not_null(tm_nth(&t, "GET", 0));
	cr_assert_eq(t.faults, 0);
	tm_stop(&t);
}

/* A stream that ends without an id cannot be resumed. */
static void tm_script_noid(struct tmc *t, struct tm_conn *c, int n,
			   const struct tm_req *r)
{
	tm_sse(c, NULL);
	tm_write(c, "data: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n");
	tm_end(c);
}

Test(mcpc, stream_without_event_id_is_lost_at_once)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_noid);
	tm_send(&t, TM_CALL(9), 9);
	tm_run_until(&t, tm_lost, "on_lost");
	cr_assert_eq(t.lost_id, 9);
	cr_assert(t.lost_sent);
	cr_assert_eq(t.nreqs, 1);
	tm_stop(&t);
}

Test(mcpc, refused_first_request_is_a_closed_fault)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_plain);
	/* Nothing listens on the port any more. */
	uv_close((uv_handle_t *)&t.listener, NULL);
	uv_run(&t.loop, UV_RUN_NOWAIT);
	uv_tcp_init(&t.loop, &t.listener);
	tm_send(&t, TM_INIT, 1);
	tm_run_until(&t, tm_faulted, "the fault");
	cr_assert_eq(t.fault, MCPC_FAULT_CLOSED);
	cr_assert_eq(t.fault_status, 0);
	cr_assert_null(strstr(t.fault_text, "s3cr3t"));
	/* It names where and why ("the server cannot be reached" named
	 * neither), and no more of the url than the address. */
	char *want = xasprintf("the server at 127.0.0.1:%d refused the "
			       "connection",
			       t.port);
	cr_assert_str_eq(t.fault_text, want);
	free(want);
	cr_assert_eq(mcpc_send(t.m, TM_CALL(2), strlen(TM_CALL(2)), 2), -EPIPE);
	tm_stop(&t);
}

Test(mcpc, refused_later_request_is_lost_not_sent)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_plain);
	tm_initialize(&t);
	uv_close((uv_handle_t *)&t.listener, NULL);
	uv_run(&t.loop, UV_RUN_NOWAIT);
	uv_tcp_init(&t.loop, &t.listener);
	tm_send(&t, TM_CALL(3), 3);
	tm_run_until(&t, tm_lost, "on_lost");
	cr_assert_eq(t.lost_id, 3);
	cr_assert_eq(t.lost_fact, OUTBOX_UNWRITTEN);
	cr_assert_eq(t.faults, 0);
	tm_stop(&t);
}

static void tm_script_expire(struct tmc *t, struct tm_conn *c, int n,
			     const struct tm_req *r)
{
	if (tm_body_has(r, "tools/call"))
		tm_reply(c, 404, NULL, NULL, NULL);
	else
		tm_script_plain(t, c, n, r);
}

Test(mcpc, not_found_on_our_session_is_expired)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_expire);
	tm_initialize(&t);
	tm_send(&t, TM_CALL(2), 2);
	tm_run_until(&t, tm_faulted, "the fault");
	cr_assert_eq(t.fault, MCPC_FAULT_EXPIRED);
	cr_assert_eq(t.fault_status, 404);
	cr_assert_eq(t.nlost, 0);
	/* The POST that met the 404 is named: the server never ran it. */
	cr_assert_eq(t.nfault_facts, 1);
	cr_assert_eq(t.fault_facts[0].id, 2);
	cr_assert_eq(t.fault_facts[0].fact, OUTBOX_REFUSED);
	tm_stop(&t);
}

/* A 404 on a POST that carries no request (an answer to the server, a
 * notification) names none: nothing is guessed. */
static void tm_script_expire_notes(struct tmc *t, struct tm_conn *c, int n,
				   const struct tm_req *r)
{
	if (tm_body_has(r, "notifications/cancelled"))
		tm_reply(c, 404, NULL, NULL, NULL);
	else if (tm_body_has(r, "tools/call"))
		; /* running: no answer yet */
	else
		tm_script_plain(t, c, n, r);
}

Test(mcpc, a_404_on_a_notification_names_no_request)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_expire_notes);
	tm_initialize(&t);
	tm_send(&t, TM_CALL(2), 2);
	static const char cancel[] =
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
		"cancelled\",\"params\":{\"requestId\":9}}";
	tm_send(&t, cancel, 0);
	tm_run_until(&t, tm_faulted, "the fault");
	cr_assert_eq(t.fault, MCPC_FAULT_EXPIRED);
	cr_assert_eq(t.nfault_facts, 0, "the running call is not named");
	tm_stop(&t);
}

static void tm_script_503(struct tmc *t, struct tm_conn *c, int n,
			  const struct tm_req *r)
{
	if (tm_body_has(r, "tools/call"))
		tm_reply(c, 503, NULL, NULL, NULL);
	else
		tm_script_plain(t, c, n, r);
}

/* A 503 proves nothing from a server in general (a proxy says it when
 * its backend died mid-request); from a peer that says so (the mcpvisor
 * runtime, for the relay) it proves the request unprocessed. */
Test(mcpc, a_503_is_refused_only_from_a_peer_that_says_so)
{
	for (int says = 0; says < 2; says++) {
		struct tmc t;
		tm_refuses_503 = says;
		tm_start(&t, MCPC_STREAMABLE, tm_script_503);
		tm_refuses_503 = false;
		tm_initialize(&t);
		tm_send(&t, TM_CALL(2), 2);
		tm_run_until(&t, tm_lost, "on_lost");
		cr_assert_eq(t.lost_id, 2);
		cr_assert_eq(t.lost_fact, says ? OUTBOX_REFUSED : OUTBOX_CUT);
		tm_stop(&t);
	}
}

static void tm_script_auth(struct tmc *t, struct tm_conn *c, int n,
			   const struct tm_req *r)
{
	tm_reply(c, 401,
		 "WWW-Authenticate: Bearer error=\"invalid_token\", "
		 "resource_metadata=\"https://mcp.example.com/.well-known/"
		 "oauth-protected-resource\"\r\n",
		 "application/json", "{}");
}

Test(mcpc, unauthorized_is_auth_with_resource_metadata)
{
	struct tmc t;
	tm_start(&t, MCPC_AUTO, tm_script_auth);
	tm_send(&t, TM_INIT, 1);
	tm_run_until(&t, tm_faulted, "the fault");
	cr_assert_eq(t.fault, MCPC_FAULT_AUTH);
	cr_assert_eq(t.fault_status, 401);
	cr_assert_str_eq(t.fault_rm, "https://mcp.example.com/.well-known/"
				     "oauth-protected-resource");
	cr_assert_null(strstr(t.fault_text, "s3cr3t"));
	tm_stop(&t);
}

/* The provider's line as the test sets it between requests. */
static char tm_bearer[64];

static const char *tm_bearer_cb(void *arg)
{
	(void)arg;
	return tm_bearer[0] ? tm_bearer : NULL;
}

/* The provider is asked at each request: a token changed between two
 * requests (a refresh) goes on the next one, in the same session. */
Test(mcpc, the_auth_provider_is_read_at_every_request)
{
	struct tmc t;
	snprintf(tm_bearer, sizeof tm_bearer, "Bearer one");
	tm_authorization = tm_bearer_cb;
	tm_start(&t, MCPC_STREAMABLE, tm_script_plain);
	tm_authorization = NULL;
	tm_initialize(&t);
	snprintf(tm_bearer, sizeof tm_bearer, "Bearer two");
	tm_send(&t, TM_CALL(2), 2);
	tm_run_until(&t, tm_msgs2, "the call's answer");
	const struct tm_req *init = tm_nth(&t, "POST", 0);
	const struct tm_req *call = tm_nth(&t, "POST", 2);
	cr_assert(tm_has_header(init, "authorization: Bearer one\n"));
	cr_assert(!tm_has_header(init, "authorization: Bearer two\n"));
	cr_assert(tm_has_header(call, "authorization: Bearer two\n"));
	cr_assert(tm_has_header(call, "mcp-session-id: sess-1\n"));
	tm_bearer[0] = '\0';
	tm_stop(&t);
}

/* Initialize goes; a later call meets 401 (its token expired). */
static void tm_script_call_401(struct tmc *t, struct tm_conn *c, int n,
			       const struct tm_req *r)
{
	if (strcmp(r->method, "POST") == 0 && tm_body_has(r, "tools/call"))
		tm_reply(c, 401,
			 "WWW-Authenticate: Bearer error=\"invalid_token\"\r\n",
			 "application/json", "{}");
	else
		tm_script_plain(t, c, n, r);
}

/* A server that refuses a request's credentials did not process it: the
 * fault names that request as refused, so it can go again once the
 * credentials are new. */
Test(mcpc, a_401_names_its_request_refused)
{
	struct tmc t;
	snprintf(tm_bearer, sizeof tm_bearer, "Bearer old");
	tm_authorization = tm_bearer_cb;
	tm_start(&t, MCPC_STREAMABLE, tm_script_call_401);
	tm_authorization = NULL;
	tm_initialize(&t);
	tm_send(&t, TM_CALL(7), 7);
	tm_run_until(&t, tm_faulted, "the fault");
	cr_assert_eq(t.fault, MCPC_FAULT_AUTH);
	cr_assert_eq(t.fault_status, 401);
	cr_assert_eq(t.nfault_facts, 1);
	cr_assert_eq(t.fault_facts[0].id, 7);
	cr_assert_eq(t.fault_facts[0].fact, OUTBOX_REFUSED);
	cr_assert_str_eq(t.fault_text,
			 "the server no longer takes our access token");
	cr_assert_null(strstr(t.fault_text, "old"));
	/* What auth needs to judge the challenge: the header, and the
	 * token the refused request carried (not a later one). */
	cr_assert_str_eq(t.fault_www, "Bearer error=\"invalid_token\"");
	cr_assert_str_eq(t.fault_sent, "Bearer old");
	tm_bearer[0] = '\0';
	tm_stop(&t);
}

static void tm_script_ctype(struct tmc *t, struct tm_conn *c, int n,
			    const struct tm_req *r)
{
	if (t->scratch)
		tm_reply(c, 200, NULL, "application/json", "{\"jsonrpc\":");
	else
		tm_reply(c, 200, NULL, "text/html", "<html></html>");
}

Test(mcpc, wrong_content_type_or_bad_json_is_protocol)
{
	for (int bad_json = 0; bad_json < 2; bad_json++) {
		struct tmc t;
		tm_start(&t, MCPC_STREAMABLE, tm_script_ctype);
		t.scratch = bad_json;
		tm_send(&t, TM_INIT, 1);
		tm_run_until(&t, tm_faulted, "the fault");
		cr_assert_eq(t.fault, MCPC_FAULT_PROTOCOL);
		cr_assert_eq(t.nmsgs, 0);
		tm_stop(&t);
	}
}

/* The standing GET stream: a heartbeat and a notification, then it ends;
 * it is reopened with Last-Event-ID after the server's retry. */
static void tm_script_get(struct tmc *t, struct tm_conn *c, int n,
			  const struct tm_req *r)
{
	if (strcmp(r->method, "GET") != 0) {
		tm_script_plain(t, c, n, r);
		return;
	}
	tm_sse(c, NULL);
	if (tm_nth(t, "GET", 1) == NULL) {
		tm_write(c, "retry: 5\n: hb\n\nid: g1\ndata: {\"jsonrpc\":"
			    "\"2.0\",\"method\":\"notifications/tools/"
			    "list_changed\"}\n\n");
		tm_end(c);
	} else {
		t->stream = c; /* stays open */
		tm_write(c, "id: g2\ndata: {\"jsonrpc\":\"2.0\",\"id\":9,"
			    "\"method\":\"roots/list\"}\n\n");
	}
}

static bool tm_get_reopened(struct tmc *t)
{
	return t->nmsgs >= 3;
}

Test(mcpc, get_stream_heartbeats_and_reopens_with_last_event_id)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_get);
	tm_send(&t, TM_INIT, 1);
	tm_run_until(&t, tm_msgs1, "the initialize answer");
	tm_send(&t, TM_INITIALIZED, 0);
	tm_run_until(&t, tm_get_reopened, "the reopened GET stream");
	cr_assert_str_eq(t.log.data,
			 "1: " TM_INIT_RESULT "\n"
			 "0: {\"jsonrpc\":\"2.0\",\"method\":"
			 "\"notifications/tools/list_changed\"}\n"
			 "0: {\"jsonrpc\":\"2.0\",\"id\":9,\"method\":"
			 "\"roots/list\"}\n");
	cr_assert_eq(t.heartbeats, 1);
	const struct tm_req *again = tm_nth(&t, "GET", 1);
	cr_assert(!tm_has_header(tm_nth(&t, "GET", 0), "last-event-id"));
	cr_assert(tm_has_header(again, "last-event-id: g1\n"));
	cr_assert(tm_has_header(again, "mcp-protocol-version: 2025-06-18\n"));
	cr_assert_eq(t.faults, 0);
	tm_stop(&t);
}

/* A call whose stream stays open, then is forgotten. */
static void tm_script_hang(struct tmc *t, struct tm_conn *c, int n,
			   const struct tm_req *r)
{
	tm_sse(c, NULL);
	t->stream = c;
	tm_write(c, "id: h1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n");
}

static bool tm_stream_closed(struct tmc *t)
{
	return t->stream && t->stream->closed;
}

Test(mcpc, forget_drops_the_stream_without_on_lost)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_hang);
	tm_send(&t, TM_CALL(4), 4);
	tm_run_until(&t, tm_msgs1, "the first event");
	mcpc_forget(t.m, 4);
	tm_run_until(&t, tm_stream_closed, "the server to see the drop");
	cr_assert_eq(t.nlost, 0);
	cr_assert_eq(t.nreqs, 1);
	tm_stop(&t);
}

/* Error statuses: 500 with a page, 400 with our JSON-RPC error, 400 with
 * someone else's. */
static void tm_script_errors(struct tmc *t, struct tm_conn *c, int n,
			     const struct tm_req *r)
{
	if (tm_body_has(r, "\"id\":2,"))
		tm_reply(c, 500, NULL, "text/html", "<h1>oops</h1>");
	else if (tm_body_has(r, "\"id\":3,"))
		tm_reply(c, 400, NULL, "application/json",
			 "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":"
			 "-32602,\"message\":\"bad\"}}");
	else
		tm_reply(c, 400, NULL, "application/json",
			 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":"
			 "-32700,\"message\":\"parse\"}}");
}

static bool tm_three_settled(struct tmc *t)
{
	return t->nlost + t->nmsgs >= 3;
}

Test(mcpc, error_statuses_lose_the_request_or_deliver_our_error)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_errors);
	tm_send(&t, TM_CALL(2), 2);
	tm_send(&t, TM_CALL(3), 3);
	tm_send(&t, TM_CALL(4), 4);
	tm_run_until(&t, tm_three_settled, "three outcomes");
	cr_assert_eq(t.faults, 0);
	cr_assert_eq(t.nmsgs, 1);
	cr_assert_str_eq(t.log.data,
			 "3: {\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":"
			 "-32602,\"message\":\"bad\"}}\n");
	cr_assert_eq(t.nlost, 2);
	cr_assert(t.lost_sent);
	tm_stop(&t);
}

/* No session id given: close sends no DELETE. */
static void tm_script_nosession(struct tmc *t, struct tm_conn *c, int n,
				const struct tm_req *r)
{
	if (strcmp(r->method, "POST") == 0)
		tm_reply(c, 200, NULL, "application/json", TM_INIT_RESULT);
	else
		tm_reply(c, 405, NULL, NULL, NULL);
}

Test(mcpc, no_delete_without_a_session_id)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_nosession);
	tm_send(&t, TM_INIT, 1);
	tm_run_until(&t, tm_msgs1, "the initialize answer");
	cr_assert(!mcpc_has_session(t.m));
	mcpc_close(t.m, tm_done_cb, &t);
	tm_run_until(&t, tm_is_closed, "close");
	cr_assert_null(tm_nth(&t, "DELETE", 0));
	tm_stop(&t);
}

/* A session id that could inject a header is refused. */
static void tm_script_badsession(struct tmc *t, struct tm_conn *c, int n,
				 const struct tm_req *r)
{
	tm_reply(c, 200, "Mcp-Session-Id: a\x01z\r\n", "application/json",
		 TM_INIT_RESULT);
}

Test(mcpc, malformed_session_id_is_protocol)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_badsession);
	tm_send(&t, TM_INIT, 1);
	tm_run_until(&t, tm_faulted, "the fault");
	cr_assert_eq(t.fault, MCPC_FAULT_PROTOCOL);
	cr_assert_eq(t.nmsgs, 0);
	tm_stop(&t);
}

/* An event past the message size limit loses its request. */
static void tm_script_huge(struct tmc *t, struct tm_conn *c, int n,
			   const struct tm_req *r)
{
	tm_sse(c, NULL);
	size_t len = MCPC_MAX_MESSAGE + 16;
	char *big = xmalloc(len + 1);
	memcpy(big, "data: ", 6);
	memset(big + 6, 'x', len - 6);
	big[len] = '\0';
	tm_write(c, big);
	free(big);
	tm_end(c);
}

Test(mcpc, event_past_the_size_limit_loses_the_request)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_huge);
	tm_send(&t, TM_CALL(6), 6);
	tm_run_until(&t, tm_lost, "on_lost");
	cr_assert_eq(t.lost_id, 6);
	cr_assert(t.lost_sent);
	cr_assert_eq(t.faults, 0);
	cr_assert_eq(t.nmsgs, 0);
	tm_stop(&t);
}

/* The server goes away after a stream with retry 5 ms ended: a bounded
 * number of attempts, then the outcome. */
static void tm_script_vanish(struct tmc *t, struct tm_conn *c, int n,
			     const struct tm_req *r)
{
	if (strcmp(r->method, "GET") == 0 || tm_body_has(r, "tools/call")) {
		tm_sse(c, NULL);
		tm_write(c, "retry: 5\nid: v1\ndata:\n\n");
		tm_end(c);
		uv_close((uv_handle_t *)&t->listener, NULL);
		t->scratch = 1; /* the listener is closed */
		return;
	}
	tm_script_plain(t, c, n, r);
}

static void tm_reopen_listener(struct tmc *t)
{
	/* tm_stop closes the listener; give it a fresh closed-able one. */
	uv_run(&t->loop, UV_RUN_NOWAIT);
	uv_tcp_init(&t->loop, &t->listener);
}

Test(mcpc, resumption_of_a_vanished_server_is_bounded_then_lost)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_vanish);
	tm_send(&t, TM_CALL(5), 5);
	tm_run_until(&t, tm_lost, "on_lost");
	cr_assert_eq(t.lost_id, 5);
	cr_assert(t.lost_sent);
	cr_assert_eq(t.faults, 0);
	tm_reopen_listener(&t);
	tm_stop(&t);
}

Test(mcpc, get_stream_of_a_vanished_server_is_a_closed_fault)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_vanish);
	tm_send(&t, TM_INIT, 1);
	tm_run_until(&t, tm_msgs1, "the initialize answer");
	tm_send(&t, TM_INITIALIZED, 0);
	tm_run_until(&t, tm_faulted, "the fault");
	cr_assert_eq(t.fault, MCPC_FAULT_CLOSED);
	cr_assert_eq(t.nreqs, 3); /* one GET reached it; the rest refused */
	tm_reopen_listener(&t);
	tm_stop(&t);
}

/* A server with sessions and no GET route answers GET with 404: neither
 * the standing stream nor a resumption takes it for an expired session. */
static void tm_script_get404(struct tmc *t, struct tm_conn *c, int n,
			     const struct tm_req *r)
{
	if (strcmp(r->method, "GET") == 0) {
		tm_reply(c, 404, NULL, "text/html", "Cannot GET /mcp");
	} else if (tm_body_has(r, "tools/call")) {
		tm_sse(c, NULL);
		tm_write(c, "retry: 5\nid: p1\ndata:\n\n");
		tm_end(c);
	} else {
		tm_script_plain(t, c, n, r);
	}
}

Test(mcpc, get_404_is_no_stream_not_an_expired_session)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_get404);
	tm_initialize(&t);
	tm_send(&t, TM_CALL(2), 2);
	tm_run_until(&t, tm_lost, "on_lost");
	cr_assert_eq(t.lost_id, 2);
	cr_assert(t.lost_sent);
	cr_assert_eq(t.faults, 0);
	cr_assert(tm_has_header(tm_nth(&t, "GET", 1), "last-event-id: p1\n"));
	tm_stop(&t);
}

/* The conformance suite's sse-retry shape: a priming event with a retry,
 * the stream closed; the resumption comes no earlier than that, and the
 * answer comes on it (a stream the server keeps open after it). The retry
 * is longer than the 1 s default, so a lower bound, which no busy machine
 * breaks, tells the server's value from the default. */
static void tm_script_retry(struct tmc *t, struct tm_conn *c, int n,
			    const struct tm_req *r)
{
	if (strcmp(r->method, "POST") == 0) {
		tm_sse(c, NULL);
		tm_write(c, "id: event-1\nretry: 1500\ndata: \n\n");
		tm_end(c);
		t->scratch = (int)uv_now(&t->loop);
		return;
	}
	t->scratch = (int)uv_now(&t->loop) - t->scratch;
	tm_sse(c, NULL);
	t->stream = c;
	tm_write(c, "id: event-2\nretry: 150\ndata: \n\nevent: message\nid: "
		    "event-3\ndata: " TM_ANSWER(7) "\n\n");
}

Test(mcpc, resumption_waits_the_servers_retry)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_retry);
	tm_send(&t, TM_CALL(7), 7);
	tm_run_until(&t, tm_msgs1, "the answer");
	cr_assert_str_eq(t.log.data, "7: " TM_ANSWER(7) "\n");
	cr_assert_geq(t.scratch, 1495, "resumed after %d ms", t.scratch);
	cr_assert(tm_has_header(tm_nth(&t, "GET", 0),
				"last-event-id: event-1\n"));
	/* The stream left open after the answer is let go. */
	tm_run_until(&t, tm_stream_closed, "the answered stream let go");
	cr_assert_eq(t.nlost, 0);
	tm_stop(&t);
}

/* Forgetting the call, or closing the session, from inside on_message
 * while its stream's parser is running: nothing more is delivered, and
 * nothing is used after it is freed. */
Test(mcpc, forget_or_close_from_inside_on_message)
{
	for (int what = 1; what <= 2; what++) {
		struct tmc t;
		tm_start(&t, MCPC_STREAMABLE, tm_script_sse);
		t.on_msg = what;
		tm_send(&t, TM_CALL(5), 5);
		tm_run_until(&t, tm_msgs1, "the first message");
		if (what == 2)
			tm_run_until(&t, tm_is_closed, "close");
		uv_run(&t.loop, UV_RUN_NOWAIT);
		cr_assert_eq(t.nmsgs, 1);
		cr_assert_eq(t.nlost, 0);
		cr_assert_eq(t.faults, 0);
		tm_stop(&t);
	}
}

Test(mcpc, close_from_inside_on_lost_and_on_fault)
{
	void (*scripts[])(struct tmc *, struct tm_conn *, int,
			  const struct tm_req *) = {tm_script_noid,
						    tm_script_auth};
	for (int i = 0; i < 2; i++) {
		struct tmc t;
		tm_start(&t, MCPC_STREAMABLE, scripts[i]);
		t.on_msg = 3;
		tm_send(&t, TM_CALL(9), 9);
		tm_run_until(&t, tm_is_closed, "close");
		cr_assert_eq(t.nlost + t.faults, 1);
		tm_stop(&t);
	}
}

/* A request sent right after notifications/initialized waits until the GET
 * stream is answered: a server may at once send on that stream a request
 * unrelated to any POST (the conformance suite's elicitation-defaults
 * scenario does), which it drops while the stream does not exist yet. */
static int tm_index(struct tmc *t, const char *method, const char *body)
{
	for (int i = 0; i < t->nreqs; i++)
		if (strcmp(t->reqs[i].method, method) == 0 &&
		    (!body || tm_body_has(&t->reqs[i], body)))
			return i;
	return -1;
}

Test(mcpc, requests_after_initialized_wait_for_the_get_stream)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_plain);
	tm_send(&t, TM_INIT, 1);
	tm_run_until(&t, tm_msgs1, "the initialize answer");
	tm_send(&t, TM_INITIALIZED, 0);
	tm_send(&t, TM_CALL(2), 2);
	tm_run_until(&t, tm_msgs2, "the call's answer");
	int get = tm_index(&t, "GET", NULL);
	int call = tm_index(&t, "POST", "tools/call");
	cr_assert(get >= 0 && call > get, "GET at %d, the call at %d", get,
		  call);
	cr_assert_eq(t.faults, 0);
	tm_stop(&t);
}

/* A server that holds the GET stream's headers (until a first event, say):
 * what waits for them goes after MCPC_GATE_MS anyway. */
static void tm_script_silent_get(struct tmc *t, struct tm_conn *c, int n,
				 const struct tm_req *r)
{
	if (strcmp(r->method, "GET") != 0)
		tm_script_plain(t, c, n, r);
}

Test(mcpc, a_get_stream_without_headers_holds_requests_a_bounded_time)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_silent_get);
	tm_send(&t, TM_INIT, 1);
	tm_run_until(&t, tm_msgs1, "the initialize answer");
	uint64_t t0 = uv_now(&t.loop);
	tm_send(&t, TM_INITIALIZED, 0);
	tm_send(&t, TM_CALL(2), 2);
	tm_run_until(&t, tm_msgs2, "the call's answer");
	uint64_t waited = uv_now(&t.loop) - t0;
	cr_assert(waited >= MCPC_GATE_MS - 50 && waited < MCPC_GATE_MS + 1500,
		  "answered after %llu ms", (unsigned long long)waited);
	cr_assert_eq(t.faults, 0);
	tm_stop(&t);
}

/* Each cause as the HTTP client reports it, with the server's address
 * and nothing else of its url (user info, path and query may hold a
 * secret). */
Test(mcpc, an_unreachable_server_is_named_with_the_cause)
{
	struct mcpc m = {.url = "https://u:s3cr3t@api.example.com:8443/mcp"
				"?key=s3cr3t"};
	static const struct {
		int err;
		const char *text;
	} v[] = {
		{-ECONNREFUSED,
		 "the server at api.example.com:8443 refused the "
		 "connection"},
		{-EHOSTUNREACH, "the host name of api.example.com:8443 did not "
				"resolve"},
		{-ETIMEDOUT,
		 "the server at api.example.com:8443 did not answer "
		 "in time"},
		{-ECONNRESET, "the server at api.example.com:8443 closed the "
			      "connection without an answer"},
		{-EPROTO, "the connection to api.example.com:8443 failed (TLS "
			  "or protocol)"},
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		char *t = mc_unreachable_text(&m, v[i].err);
		cr_assert_str_eq(t, v[i].text);
		free(t);
	}
}
