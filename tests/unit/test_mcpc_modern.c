/*
 * Unit tests for mcpc_send_modern, a message of MCP 2026-07-28 on the
 * session's URL, against the scripted HTTP server of mcpc_fixture.h: the
 * headers it carries (and the session's it must not), a 4xx whose body is
 * the JSON-RPC error, an event-stream answer with the notifications
 * related to the request, cancellation by dropping the stream, and what
 * is lost when a server of an older revision refuses it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "mcpc/mcpc_int.h"
#include "mcpc_fixture.h"

#define MM_META                                                                \
	"\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"              \
	"\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}"
#define MM_CALL(id, name)                                                      \
	"{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"tools/call\","       \
	"\"params\":{\"name\":\"" name "\",\"arguments\":{}," MM_META "}}"
#define MM_DISCOVER(id)                                                        \
	"{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"server/discover\","  \
	"\"params\":{" MM_META "}}"
#define MM_READ(id)                                                            \
	"{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"resources/read\","   \
	"\"params\":{\"uri\":\"file:///a%20b.txt\"," MM_META "}}"
#define MM_RESULT(id)                                                          \
	"{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"result\":{\"resultType\":"      \
	"\"complete\"}}"
#define MM_ERR(id)                                                             \
	"{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"error\":{\"code\":-32022,"      \
	"\"message\":\"Unsupported protocol version\",\"data\":{"              \
	"\"supported\":[\"2026-07-28\"],\"requested\":\"2026-07-28\"}}}"

static void mm_send(struct tmc *t, const char *msg, int64_t id)
{
	cr_assert_eq(mcpc_send_modern(t->m, msg, strlen(msg), id), 0);
}

/* A dual-era server: initialize gives a session, the GET stream is
 * refused, everything else is answered with JSON for its id. */
static void mm_script_plain(struct tmc *t, struct tm_conn *c, int n,
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
	else if (tm_body_has(r, "\"id\":3"))
		tm_reply(c, 200, NULL, "application/json", MM_RESULT(3));
	else if (tm_body_has(r, "\"id\":4"))
		tm_reply(c, 200, NULL, "application/json", MM_RESULT(4));
	else
		tm_reply(c, 200, NULL, "application/json", MM_RESULT(5));
}

static bool mm_get_seen(struct tmc *t)
{
	return tm_nth(t, "GET", 0) != NULL && t->nreqs >= 3;
}

Test(mcpc_modern, headers_from_the_message_and_never_the_sessions)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, mm_script_plain);
	/* A session exists: its id and version must not go on a modern
	 * message. */
	tm_send(&t, TM_INIT, 1);
	tm_run_until(&t, tm_msgs1, "the initialize answer");
	tm_send(&t, TM_INITIALIZED, 0);
	tm_run_until(&t, mm_get_seen, "the GET stream");
	cr_assert(mcpc_has_session(t.m));

	/* A name with a byte no header may carry goes as the sentinel. */
	mm_send(&t, MM_CALL(3, "caf\\u00e9 tool"), 3);
	tm_run_until(&t, tm_msgs2, "the call's answer");
	const struct tm_req *call = tm_nth(&t, "POST", 2);
	cr_assert(tm_body_has(call, "tools/call"));
	cr_assert_str_eq(call->body, MM_CALL(3, "caf\\u00e9 tool"));
	cr_assert(!tm_has_header(call, "mcp-session-id"), "%s", call->headers);
	cr_assert(tm_has_header(call, "mcp-protocol-version: 2026-07-28\n"),
		  "%s", call->headers);
	cr_assert(!tm_has_header(call, "2025-06-18"), "%s", call->headers);
	cr_assert(tm_has_header(call, "mcp-method: tools/call\n"));
	/* "café tool" in UTF-8, base64. */
	cr_assert(
		tm_has_header(call, "mcp-name: =?base64?Y2Fmw6kgdG9vbA==?=\n"),
		"%s", call->headers);
	cr_assert(tm_has_header(call, "content-type: application/json\n"));
	cr_assert(tm_has_header(
		call, "accept: application/json, text/event-stream\n"));
	cr_assert(tm_has_header(call, "authorization: Bearer s3cr3t\n"));
	cr_assert(tm_has_header(call, "x-team: blue\n"));

	/* resources/read names its uri, plain ASCII as it is; discover
	 * names nothing. */
	mm_send(&t, MM_READ(4), 4);
	tm_run_until(&t, tm_msgs3, "the read's answer");
	const struct tm_req *read = tm_nth(&t, "POST", 3);
	cr_assert(tm_has_header(read, "mcp-name: file:///a%20b.txt\n"), "%s",
		  read->headers);
	cr_assert(tm_has_header(read, "mcp-method: resources/read\n"));
	mm_send(&t, MM_DISCOVER(5), 5);
	tm_run_until(&t, tm_msgs3, "the discover answer");
	while (t.nmsgs < 4)
		uv_run(&t.loop, UV_RUN_ONCE);
	const struct tm_req *disc = tm_nth(&t, "POST", 4);
	cr_assert(tm_has_header(disc, "mcp-method: server/discover\n"));
	cr_assert(!tm_has_header(disc, "mcp-name"));
	cr_assert(!tm_has_header(disc, "mcp-session-id"));
	cr_assert_str_eq(t.log.data, "1: " TM_INIT_RESULT
				     "\n3: " MM_RESULT(3) "\n4: " MM_RESULT(
					     4) "\n5: " MM_RESULT(5) "\n");
	cr_assert_eq(t.faults, 0);
	cr_assert_eq(t.nlost, 0);
	tm_stop(&t);
}

/* A modern-only server: every POST is refused with 400 and the revision's
 * error for its id. */
static void mm_script_400(struct tmc *t, struct tm_conn *c, int n,
			  const struct tm_req *r)
{
	if (strcmp(r->method, "POST") != 0)
		tm_reply(c, 405, NULL, NULL, NULL);
	else
		tm_reply(c, 400, NULL, "application/json", MM_ERR(7));
}

Test(mcpc_modern, a_400_with_the_revisions_error_is_the_answer)
{
	struct tmc t;
	/* Auto mode: a 400 to a 2025 POST would mean the legacy transport;
	 * to a modern one it is an answer and decides nothing. */
	tm_start(&t, MCPC_AUTO, mm_script_400);
	mm_send(&t, MM_DISCOVER(7), 7);
	tm_run_until(&t, tm_msgs1, "the error");
	uv_run(&t.loop, UV_RUN_NOWAIT);
	cr_assert_str_eq(t.log.data, "7: " MM_ERR(7) "\n");
	cr_assert_eq(t.faults, 0);
	cr_assert_eq(t.nlost, 0);
	cr_assert_eq(t.nreqs, 1); /* no GET for an endpoint event */
	json_t *d = mcpc_describe(t.m, false);
	cr_assert_str_eq(json_string_value(json_object_get(d, "protocol")),
			 "streamable-http");
	cr_assert_str_eq(
		json_string_value(json_object_get(d, "protocolVersion")),
		"2026-07-28");
	json_decref(d);
	tm_stop(&t);
}

/* A 2025 server refusing the probe: 400 with a body that is not ours. */
static void mm_script_legacy(struct tmc *t, struct tm_conn *c, int n,
			     const struct tm_req *r)
{
	if (n == 0)
		tm_reply(c, 400, NULL, "application/json",
			 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":"
			 "-32000,\"message\":\"Bad Request: No valid session "
			 "ID provided\"}}");
	else if (tm_body_has(r, "\"initialize\""))
		tm_reply(c, 200, "Mcp-Session-Id: sess-9\r\n",
			 "application/json", TM_INIT_RESULT);
	else
		tm_reply(c, 405, NULL, NULL, NULL);
}

Test(mcpc_modern, a_4xx_without_an_answer_is_refused_and_initialize_follows)
{
	struct tmc t;
	tm_start(&t, MCPC_AUTO, mm_script_legacy);
	mm_send(&t, MM_DISCOVER(7), 7);
	tm_run_until(&t, tm_lost, "the refusal");
	cr_assert_eq(t.lost_id, 7);
	cr_assert_eq(t.lost_fact, OUTBOX_REFUSED);
	cr_assert_eq(t.nmsgs, 0);
	cr_assert_eq(t.faults, 0);
	/* The session is as new: initialize is its first 2025 request. */
	tm_send(&t, TM_INIT, 1);
	tm_run_until(&t, tm_msgs1, "the initialize answer");
	cr_assert(mcpc_has_session(t.m));
	cr_assert_eq(t.faults, 0);
	tm_stop(&t);
}

/* The call is answered on an event stream: progress, a log message, a
 * comment, the answer. */
static void mm_script_sse(struct tmc *t, struct tm_conn *c, int n,
			  const struct tm_req *r)
{
	if (strcmp(r->method, "POST") != 0) {
		tm_reply(c, 405, NULL, NULL, NULL);
		return;
	}
	tm_sse(c, NULL);
	tm_write(c, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":"
		    "\"notifications/progress\",\"params\":{\"progress\":1}}"
		    "\n\n");
	tm_write(c, ":\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":"
		    "\"notifications/message\",\"params\":{}}\n\n");
	tm_write(c, "data: " MM_RESULT(9) "\n\n");
	tm_end(c);
}

Test(mcpc_modern, sse_answer_carries_notifications_related_to_the_id)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, mm_script_sse);
	mm_send(&t, MM_CALL(9, "echo"), 9);
	tm_run_until(&t, tm_msgs3, "three messages");
	cr_assert_str_eq(t.log.data,
			 "9: {\"jsonrpc\":\"2.0\",\"method\":"
			 "\"notifications/progress\",\"params\":{\"progress\":"
			 "1}}\n"
			 "9: {\"jsonrpc\":\"2.0\",\"method\":"
			 "\"notifications/message\",\"params\":{}}\n"
			 "9: " MM_RESULT(9) "\n");
	cr_assert_eq(t.heartbeats, 1);
	cr_assert_eq(t.nlost, 0);
	cr_assert_eq(t.faults, 0);
	tm_stop(&t);
}

/* The call's stream stays open after one notification (scratch counts
 * POSTs); or, with t->scratch set to -1 first, it is cut (an event id
 * that would let a 2025 stream resume). */
static void mm_script_hold(struct tmc *t, struct tm_conn *c, int n,
			   const struct tm_req *r)
{
	if (strcmp(r->method, "POST") != 0) {
		tm_reply(c, 405, NULL, NULL, NULL);
		return;
	}
	tm_sse(c, NULL);
	tm_write(c, "id: e1\nretry: 10\ndata: {\"jsonrpc\":\"2.0\",\"method\":"
		    "\"notifications/progress\"}\n\n");
	if (t->scratch < 0)
		tm_end(c);
	else
		t->stream = c;
}

static bool mm_stream_closed(struct tmc *t)
{
	return t->stream && t->stream->closed;
}

Test(mcpc_modern, forget_drops_the_stream)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, mm_script_hold);
	mm_send(&t, MM_CALL(11, "slow"), 11);
	tm_run_until(&t, tm_msgs1, "the first notification");
	cr_assert_not_null(t.stream);
	cr_assert(!t.stream->closed);
	mcpc_forget(t.m, 11);
	/* The server sees the connection close: that is the cancellation
	 * of the revision. */
	tm_run_until(&t, mm_stream_closed, "the stream's close");
	cr_assert_eq(t.nmsgs, 1);
	cr_assert_eq(t.nlost, 0);
	cr_assert_eq(t.faults, 0);
	cr_assert_eq(t.nreqs, 1);
	tm_stop(&t);
}

Test(mcpc_modern, a_cut_stream_is_lost_not_resumed)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, mm_script_hold);
	t.scratch = -1;
	mm_send(&t, MM_CALL(12, "slow"), 12);
	tm_run_until(&t, tm_lost, "the loss");
	cr_assert_eq(t.lost_id, 12);
	cr_assert_eq(t.lost_fact, OUTBOX_CUT);
	cr_assert_eq(t.nmsgs, 1);
	cr_assert_eq(t.nreqs, 1); /* no GET with Last-Event-ID */
	cr_assert_eq(t.faults, 0);
	tm_stop(&t);
}

Test(mcpc_modern, refuses_what_it_cannot_send)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, mm_script_plain);
	/* No claim: not a message of the revision. */
	cr_assert_eq(mcpc_send_modern(t.m, TM_CALL(2), strlen(TM_CALL(2)), 2),
		     -EINVAL);
	static const char bad[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
				  "\"tools/list\",\"params\":{\"_meta\":{"
				  "\"io.modelcontextprotocol/protocolVersion\":"
				  "\"a\\r\\nX-Evil: 1\"}}}";
	cr_assert_eq(mcpc_send_modern(t.m, bad, strlen(bad), 2), -EINVAL);
	cr_assert_eq(t.nreqs, 0);
	tm_stop(&t);

	tm_start(&t, MCPC_SSE, mm_script_plain);
	cr_assert_eq(mcpc_send_modern(t.m, MM_DISCOVER(2),
				      strlen(MM_DISCOVER(2)), 2),
		     -EPROTONOSUPPORT);
	tm_stop(&t);
}

Test(mcpc_modern, extra_header_lines_go_with_the_message)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, mm_script_plain);
	/* The Mcp-Param-* lines of a tools/call; "Name;" is an empty
	 * value. */
	const char *extra[] = {"Mcp-Param-Region: us-west1",
			       "Mcp-Param-EmptyVal;", NULL};
	const char *msg = MM_CALL(5, "echo");
	cr_assert_eq(mcpc_send_modern_with(t.m, msg, strlen(msg), 5, extra), 0);
	tm_run_until(&t, tm_msgs1, "the call's answer");
	const struct tm_req *call = tm_nth(&t, "POST", 0);
	cr_assert(tm_has_header(call, "mcp-param-region: us-west1\n"), "%s",
		  call->headers);
	cr_assert(tm_has_header(call, "mcp-param-emptyval: \n"), "%s",
		  call->headers);
	cr_assert(tm_has_header(call, "mcp-name: echo\n"));
	/* More lines than fit beside the others: refused, nothing sent. */
	const char *many[HTTPC_MAX_HEADERS + 1];
	for (int i = 0; i < HTTPC_MAX_HEADERS; i++)
		many[i] = "Mcp-Param-X: 1";
	many[HTTPC_MAX_HEADERS] = NULL;
	cr_assert_eq(mcpc_send_modern_with(t.m, msg, strlen(msg), 6, many),
		     -E2BIG);
	cr_assert_eq(t.nreqs, 1);
	tm_stop(&t);
}
