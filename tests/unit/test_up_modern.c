/*
 * Unit tests for the remote HTTP upstream in front of a server of MCP
 * 2026-07-28 (transport/up_modern.c, up_mrtr.c), against the scripted
 * HTTP server of mcpc_fixture.h: the initialize becomes a server/discover
 * probe, a refusal sends the initialize exactly as it came (the 2025
 * path), -32022 naming our version probes once more, a DiscoverResult is
 * the initialize's answer, requests go with the revision's _meta and no
 * session, list changes come on one listen stream, and a 2025 client's
 * call answered input_required is carried on round by round.
 */
#include "mcpc_fixture.h"

#include <errno.h>

#include "transport/upstream.h"

struct tum {
	struct tmc t; /* the server side (t.m stays NULL) */
	struct upstream *u;
	struct buf got; /* what the instance got: "related: msg\n" */
	int nmsgs;
	int nlost;
	int nfault;
	int nclosed;
};

static void tum_message(void *ctx, const char *m, size_t n, int64_t rel)
{
	struct tum *h = ctx;
	buf_printf(&h->got, "%lld: %.*s\n", (long long)rel, (int)n, m);
	h->nmsgs++;
}

static void tum_lost(void *ctx, int64_t id, enum outbox_fact f)
{
	((struct tum *)ctx)->nlost++;
}

static void tum_fault(void *ctx, const struct upstream_fault *f)
{
	((struct tum *)ctx)->nfault++;
}

static void tum_owned(void *ctx, const struct upstream_owned *o, bool live)
{
}

static void tum_closed(void *ctx)
{
	struct tum *h = ctx;
	h->nclosed++;
	h->u = NULL;
}

static const struct upstream_cbs tum_cbs = {
	.on_message = tum_message,
	.on_lost = tum_lost,
	.on_fault = tum_fault,
	.on_owned = tum_owned,
	.on_closed = tum_closed,
};

static void tum_start(struct tum *h,
		      void (*script)(struct tmc *, struct tm_conn *, int,
				     const struct tm_req *))
{
	memset(h, 0, sizeof *h);
	buf_init(&h->got);
	buf_puts(&h->got, "");
	tm_listen(&h->t, script);
	struct server_config s = {
		.name = "remote",
		.kind = SERVER_HTTP_REMOTE,
		.url = h->t.url,
		.http_type = HTTP_TYPE_AUTO,
	};
	struct upstream_spec spec = {
		.server = &s, .http = h->t.http, .probe_era = true};
	cr_assert_eq(upstream_http.open(&h->t.loop, &spec, &tum_cbs, h, &h->u),
		     0);
}

static void tum_send(struct tum *h, const char *msg, int64_t id)
{
	cr_assert_eq(upstream_http.send(h->u, msg, strlen(msg), id), 0);
}

static bool tum_is_closed(struct tmc *t)
{
	return ((struct tum *)t)->nclosed > 0;
}

static void tum_stop(struct tum *h)
{
	if (h->u)
		upstream_http.stop(h->u);
	tm_run_until(&h->t, tum_is_closed, "on_closed");
	tm_stop(&h->t);
	buf_free(&h->got);
}

static bool tum_msgs1(struct tmc *t)
{
	return ((struct tum *)t)->nmsgs >= 1;
}

static bool tum_msgs2(struct tmc *t)
{
	return ((struct tum *)t)->nmsgs >= 2;
}

/* The JSON-RPC id of a request body (an integer), or -1. */
static long long tum_id(const struct tm_req *r)
{
	json_t *j = json_loads(r->body, 0, NULL);
	json_t *id = json_object_get(j, "id");
	long long v = json_is_integer(id) ? json_integer_value(id) : -1;
	json_decref(j);
	return v;
}

static void tum_reply_json(struct tm_conn *c, int status, long long id,
			   const char *inner)
{
	char body[2048];
	snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%lld,%s}", id,
		 inner);
	tm_reply(c, status, NULL, "application/json", body);
}

#define TUM_DISCOVER                                                           \
	"\"result\":{\"resultType\":\"complete\",\"supportedVersions\":["      \
	"\"2026-07-28\"],\"capabilities\":{\"tools\":{\"listChanged\":true},"  \
	"\"logging\":{},\"resources\":{\"subscribe\":true,\"listChanged\":"    \
	"true}},\"instructions\":\"hi\",\"ttlMs\":0,\"cacheScope\":"           \
	"\"public\","                                                          \
	"\"_meta\":{\"io.modelcontextprotocol/serverInfo\":{\"name\":\"m\","   \
	"\"version\":\"1\"}}}"
#define TUM_INIT                                                               \
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{" \
	"\"protocolVersion\":\"2025-11-25\",\"capabilities\":{"                \
	"\"elicitation\":"                                                     \
	"{}},\"clientInfo\":{\"name\":\"mcpvisor\",\"version\":\"9\"}}}"

/* A 2025 server: anything but initialize without a session is 400. */
static void tum_script_2025(struct tmc *t, struct tm_conn *c, int n,
			    const struct tm_req *r)
{
	if (strcmp(r->method, "POST") != 0)
		tm_reply(c, 405, NULL, NULL, NULL);
	else if (tm_body_has(r, "\"initialize\""))
		tm_reply(c, 200, "Mcp-Session-Id: s-1\r\n", "application/json",
			 TM_INIT_RESULT);
	else
		tm_reply(c, 400, NULL, "text/plain", "no session");
}

Test(up_modern, a_refused_probe_sends_the_initialize_as_it_came)
{
	struct tum h;
	tum_start(&h, tum_script_2025);
	tum_send(&h, TUM_INIT, 1);
	tm_run_until(&h.t, tum_msgs1, "the initialize answer");
	cr_assert_str_eq(h.got.data, "1: " TM_INIT_RESULT "\n");
	const struct tm_req *probe = tm_nth(&h.t, "POST", 0);
	cr_assert(tm_has_header(probe, "mcp-method: server/discover\n"));
	cr_assert(tm_body_has(probe, "\"io.modelcontextprotocol/"
				     "clientCapabilities\":{\"elicitation\""),
		  "%s", probe->body);
	cr_assert(tm_body_has(probe, "\"io.modelcontextprotocol/clientInfo\":"
				     "{\"name\":\"mcpvisor\""));
	/* The 2025 path from there: the initialize byte for byte, none of
	 * the revision's headers. */
	const struct tm_req *init = tm_nth(&h.t, "POST", 1);
	cr_assert_str_eq(init->body, TUM_INIT);
	cr_assert(!tm_has_header(init, "mcp-method"), "%s", init->headers);
	cr_assert(!tm_has_header(init, "mcp-protocol-version"));
	cr_assert_eq(h.nlost, 0);
	cr_assert_eq(h.nfault, 0);
	tum_stop(&h);
}

/* A server of the revision: discover, a listen stream kept open, calls
 * answered with their id; "ask" answers input_required until its retry
 * carries the answer and the state. */
static void tum_script_modern(struct tmc *t, struct tm_conn *c, int n,
			      const struct tm_req *r)
{
	long long id = tum_id(r);
	if (strcmp(r->method, "POST") != 0)
		tm_reply(c, 405, NULL, NULL, NULL);
	else if (tm_body_has(r, "\"initialize\""))
		tum_reply_json(
			c, 400, id,
			"\"error\":{\"code\":-32022,\"message\":\"no\"}");
	else if (tm_body_has(r, "server/discover") && t->scratch == 1) {
		t->scratch = 0; /* the first probe meets -32022 */
		tum_reply_json(c, 400, id,
			       "\"error\":{\"code\":-32022,\"message\":\"no\","
			       "\"data\":{\"supported\":[\"2026-07-28\"]}}");
	} else if (tm_body_has(r, "server/discover"))
		tum_reply_json(c, 200, id, TUM_DISCOVER);
	else if (tm_body_has(r, "subscriptions/listen") &&
		 tm_body_has(r, "\"resourceSubscriptions\":[\"file:///a\"]")) {
		char ack[768];
		snprintf(
			ack, sizeof ack,
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
			"subscriptions/acknowledged\",\"params\":{\"_meta\":{"
			"\"io.modelcontextprotocol/subscriptionId\":%lld}}}\n\n"
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
			"resources/updated\",\"params\":{\"uri\":\"file:///a\","
			"\"_meta\":{\"io.modelcontextprotocol/"
			"subscriptionId\":%lld}}}\n\n",
			id, id);
		tm_sse(c, NULL);
		tm_write(c, ack);
		t->stream = c;
	} else if (tm_body_has(r, "subscriptions/listen")) {
		char ack[512];
		snprintf(
			ack, sizeof ack,
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
			"subscriptions/acknowledged\",\"params\":{\"_meta\":{"
			"\"io.modelcontextprotocol/subscriptionId\":%lld}}}\n\n"
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
			"tools/list_changed\",\"params\":{\"_meta\":{"
			"\"io.modelcontextprotocol/"
			"subscriptionId\":%lld}}}\n\n",
			id, id);
		tm_sse(c, NULL);
		tm_write(c, ack);
		t->stream = c;
	} else if (tm_body_has(r, "\"ask\"") &&
		   !tm_body_has(r, "\"requestState\":\"st\\\"1\""))
		tum_reply_json(
			c, 200, id,
			"\"result\":{\"resultType\":\"input_required\","
			"\"inputRequests\":{\"who\":{\"method\":\"elicitation/"
			"create\",\"params\":{\"message\":\"name?\"}}},"
			"\"requestState\":\"st\\\"1\"}");
	else
		tum_reply_json(c, 200, id,
			       "\"result\":{\"resultType\":\"complete\","
			       "\"content\":[]}");
}

static bool tum_listening(struct tmc *t)
{
	return t->stream != NULL && ((struct tum *)t)->nmsgs >= 2;
}

Test(up_modern,
     a_discover_result_is_the_initialize_answer_and_calls_go_stateless)
{
	struct tum h;
	tum_start(&h, tum_script_modern);
	h.t.scratch = 1; /* -32022 naming 2026-07-28 first: probe again */
	tum_send(&h, TUM_INIT, 1);
	tm_run_until(&h.t, tum_msgs1, "the initialize answer");
	json_t *a = json_loads(h.got.data + 3, 0, NULL);
	json_t *res = json_object_get(a, "result");
	cr_assert_str_eq(
		json_string_value(json_object_get(res, "protocolVersion")),
		"2026-07-28");
	/* logging and resources.subscribe stay: logging/setLevel and
	 * resources/subscribe are answered in the revision's terms. */
	json_t *caps = json_object_get(res, "capabilities");
	cr_assert(json_is_object(json_object_get(caps, "logging")));
	cr_assert(json_is_true(json_object_get(
		json_object_get(caps, "resources"), "subscribe")));
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(res, "serverInfo"), "name")),
			 "m");
	cr_assert_str_eq(
		json_string_value(json_object_get(res, "instructions")), "hi");
	json_decref(a);
	cr_assert_eq(h.t.nreqs, 2, "two probes, no initialize");

	/* initialized opens the listen stream; its list_changed comes as a
	 * 2025 one, untagged, related to no call. */
	tum_send(&h, TM_INITIALIZED, 0);
	tm_run_until(&h.t, tum_listening, "the listen stream's notification");
	const struct tm_req *listen = tm_nth(&h.t, "POST", 2);
	cr_assert(tm_body_has(listen, "\"notifications\":{\"toolsListChanged\":"
				      "true,\"resourcesListChanged\":true}"),
		  "%s", listen->body);
	cr_assert(strstr(h.got.data,
			 "\n0: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
			 "tools/list_changed\",\"params\":{}}\n"),
		  "%s", h.got.data);

	tum_send(&h, TM_CALL(2), 2);
	tm_run_until(&h.t, tum_msgs2, "the call");
	while (h.nmsgs < 3)
		uv_run(&h.t.loop, UV_RUN_ONCE);
	const struct tm_req *call = tm_nth(&h.t, "POST", 3);
	cr_assert(tm_has_header(call, "mcp-method: tools/call\n"));
	cr_assert(tm_has_header(call, "mcp-name: echo\n"));
	cr_assert(!tm_has_header(call, "mcp-session-id"));
	cr_assert(tm_body_has(call, "\"io.modelcontextprotocol/"
				    "protocolVersion\":\"2026-07-28\""));
	/* A cancellation is the stream's end: nothing is POSTed for it. */
	tum_send(&h,
		 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
		 "\"params\":{\"requestId\":2}}",
		 0);
	uv_run(&h.t.loop, UV_RUN_NOWAIT);
	cr_assert_eq(h.t.nreqs, 4);
	cr_assert_eq(h.nfault, 0);
	tum_stop(&h);
}

#define TUM_ASK                                                                \
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{" \
	"\"name\":\"ask\",\"arguments\":{}}}"

static bool tum_retried(struct tmc *t)
{
	return ((struct tum *)t)->nmsgs >= 3;
}

Test(up_modern, input_required_for_a_2025_call_is_asked_and_retried)
{
	struct tum h;
	tum_start(&h, tum_script_modern);
	tum_send(&h, TUM_INIT, 1);
	tm_run_until(&h.t, tum_msgs1, "the initialize answer");
	tum_send(&h, TUM_ASK, 2);
	tm_run_until(&h.t, tum_msgs2, "the round's request");
	/* The round's request, on the call's stream, for the session to ask
	 * its client. */
	cr_assert(
		strstr(h.got.data,
		       "\n2: {\"jsonrpc\":\"2.0\",\"id\":\"mcpvisor-input-2-1-"
		       "0\",\"method\":\"elicitation/create\",\"params\":{"
		       "\"message\":\"name?\"}}\n"),
		"%s", h.got.data);
	tum_send(
		&h,
		"{\"jsonrpc\":\"2.0\",\"id\":\"mcpvisor-input-2-1-0\","
		"\"result\":{\"action\":\"accept\",\"content\":{\"n\":\"A\"}}}",
		0);
	tm_run_until(&h.t, tum_retried, "the final answer");
	const struct tm_req *retry = tm_nth(&h.t, "POST", 2);
	long long rid = tum_id(retry);
	cr_assert(rid > 2 && rid < (1LL << 53), "a new id: %lld", rid);
	json_t *b = json_loads(retry->body, 0, NULL);
	json_t *p = json_object_get(b, "params");
	cr_assert_str_eq(json_string_value(json_object_get(p, "requestState")),
			 "st\"1");
	cr_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(
				json_object_get(
					json_object_get(p, "inputResponses"),
					"who"),
				"content"),
			"n")),
		"A");
	cr_assert_str_eq(json_string_value(json_object_get(p, "name")), "ask");
	json_decref(b);
	/* The answer goes to the instance under the call's own id. */
	cr_assert(strstr(h.got.data,
			 "\n2: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{"
			 "\"resultType\":\"complete\",\"content\":[]}}\n"),
		  "%s", h.got.data);
	cr_assert_eq(h.nlost, 0);
	cr_assert_eq(h.nfault, 0);
	tum_stop(&h);
}

/* A 2025 server that answers calls (with the session initialize gave). */
static void tum_script_2025_calls(struct tmc *t, struct tm_conn *c, int n,
				  const struct tm_req *r)
{
	if (strcmp(r->method, "POST") != 0)
		tm_reply(c, 405, NULL, NULL, NULL);
	else if (tm_body_has(r, "\"initialize\""))
		tm_reply(c, 200, "Mcp-Session-Id: s-1\r\n", "application/json",
			 TM_INIT_RESULT);
	else if (tm_has_header(r, "mcp-session-id: s-1\n"))
		tm_reply(c, 200, NULL, "application/json", TM_ANSWER(2));
	else
		tm_reply(c, 400, NULL, "text/plain", "no session");
}

Test(up_modern, what_is_sent_during_the_probe_goes_after_the_verdict)
{
	struct tum h;
	tum_start(&h, tum_script_2025_calls);
	tum_send(&h, TUM_INIT, 1);
	tum_send(&h, TM_CALL(2), 2); /* before the probe is answered */
	tm_run_until(&h.t, tum_msgs2, "both answers");
	cr_assert_str_eq(h.got.data,
			 "1: " TM_INIT_RESULT "\n2: " TM_ANSWER(2) "\n");
	cr_assert(tm_body_has(tm_nth(&h.t, "POST", 0), "server/discover"));
	cr_assert_str_eq(tm_nth(&h.t, "POST", 1)->body, TUM_INIT);
	cr_assert_str_eq(tm_nth(&h.t, "POST", 2)->body, TM_CALL(2));
	cr_assert_eq(h.nlost, 0);
	tum_stop(&h);
}

static bool tum_msgs4(struct tmc *t)
{
	return ((struct tum *)t)->nmsgs >= 4;
}

static bool tum_msgs6(struct tmc *t)
{
	return ((struct tum *)t)->nmsgs >= 6;
}

static bool tum_msgs7(struct tmc *t)
{
	return ((struct tum *)t)->nmsgs >= 7;
}

Test(up_modern, subscribe_and_set_level_of_a_2025_client_are_the_revisions)
{
	struct tum h;
	tum_start(&h, tum_script_modern);
	tum_send(&h, TUM_INIT, 1);
	tm_run_until(&h.t, tum_msgs1, "the initialize answer");
	tum_send(&h, TM_INITIALIZED, 0);
	tm_run_until(&h.t, tum_listening, "the listen stream");
	int listens = h.t.nreqs;
	/* resources/subscribe is answered here, and the listen stream is
	 * asked for again with the uri; its update reaches the instance as
	 * a 2025 server's would. */
	tum_send(&h,
		 "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/"
		 "subscribe\",\"params\":{\"uri\":\"file:///a\"}}",
		 3);
	tm_run_until(&h.t, tum_msgs4, "the answer and the update");
	cr_assert(strstr(h.got.data,
			 "\n3: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n"),
		  "%s", h.got.data);
	cr_assert(strstr(h.got.data,
			 "\n0: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
			 "resources/updated\",\"params\":{\"uri\":\"file:///"
			 "a\"}}\n"),
		  "%s", h.got.data);
	cr_assert_eq(h.t.nreqs, listens + 1, "one new listen, nothing else");
	const struct tm_req *l2 = tm_nth(&h.t, "POST", listens);
	cr_assert(tm_body_has(l2, "\"toolsListChanged\":true"), "%s", l2->body);
	cr_assert(!tm_body_has(l2, "resources/subscribe"));
	/* logging/setLevel: answered here, and kept nowhere: the instance
	 * is every client's, and the level each client's own (its session
	 * puts it in the _meta of its requests). */
	tum_send(&h,
		 "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"logging/"
		 "setLevel\",\"params\":{\"level\":\"info\"}}",
		 4);
	uv_run(&h.t.loop, UV_RUN_NOWAIT);
	cr_assert(strstr(h.got.data,
			 "\n4: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n"),
		  "%s", h.got.data);
	cr_assert_eq(h.t.nreqs, listens + 1, "setLevel is not sent upstream");
	tum_send(&h, TM_CALL(5), 5);
	tm_run_until(&h.t, tum_msgs6, "the call");
	const struct tm_req *call = tm_nth(&h.t, "POST", listens + 1);
	cr_assert(!tm_body_has(call, "logLevel"), "%s", call->body);
	/* A request that carries its level keeps it. */
	tum_send(&h,
		 "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\","
		 "\"params\":{\"name\":\"echo\",\"_meta\":{\"io."
		 "modelcontextprotocol/logLevel\":\"debug\"}}}",
		 6);
	tm_run_until(&h.t, tum_msgs7, "the second call");
	call = tm_nth(&h.t, "POST", listens + 2);
	cr_assert(tm_body_has(call, "\"io.modelcontextprotocol/logLevel\":"
				    "\"debug\""),
		  "%s", call->body);
	cr_assert_eq(h.nfault, 0);
	tum_stop(&h);
}
