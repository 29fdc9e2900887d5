/*
 * The hub over a url server whose transport is a scripted fake (what an
 * HTTP transport reports): a server request carried on one call's answer
 * stream reaches exactly that call's session through the instance's cause;
 * status shows the transport's own description (transport, url, port)
 * with every secret masked, and for a server that refused our credentials
 * its resource metadata url and what to set.
 */
#include "hub_fixture.h"
#include "instance/instance_int.h"
#include "session/hub_int.h"
#include "session/session_int.h"

#define HH_LINES 64

struct upstream {
	struct upstream_cbs cbs;
	void *ctx;
	char *lines[HH_LINES];
	int nlines;
	int answered; /* lines up to here were looked at by hh_pump */
	bool closed;
	bool timer; /* t is in use: a stop closes on the next turn */
	uv_timer_t t;
};

static struct upstream *hh_conn;

static int hh_open(uv_loop_t *loop, const struct upstream_spec *spec,
		   const struct upstream_cbs *cbs, void *ctx,
		   struct upstream **out)
{
	struct upstream *c = calloc(1, sizeof *c);
	c->cbs = *cbs;
	c->ctx = ctx;
	hh_conn = c;
	*out = c;
	return 0;
}

static int hh_send(struct upstream *c, const char *msg, size_t len, int64_t id)
{
	if (c->closed)
		return -EPIPE;
	cr_assert_lt(c->nlines, HH_LINES);
	c->lines[c->nlines++] = strndup(msg, len);
	return 0;
}

static void hh_free(struct upstream *c)
{
	for (int i = 0; i < c->nlines; i++)
		free(c->lines[i]);
	free(c);
}

static void hh_timer_closed(uv_handle_t *h)
{
	hh_free(h->data);
}

/* The transport closes (after a fault or a stop); the instance forgets
 * it, and so does the test. */
static void hh_close(struct upstream *c)
{
	if (c->closed)
		return;
	c->closed = true;
	if (hh_conn == c)
		hh_conn = NULL;
	c->cbs.on_closed(c->ctx);
	if (c->timer)
		uv_close((uv_handle_t *)&c->t, hh_timer_closed);
	else
		hh_free(c);
}

static void hh_stop_cb(uv_timer_t *t)
{
	hh_close(t->data);
}

/* No callback from inside stop: the close comes on the next turn. */
static void hh_stop(struct upstream *c)
{
	if (c->timer || c->closed)
		return;
	c->timer = true;
	uv_timer_init(&fx_loop, &c->t);
	c->t.data = c;
	uv_timer_start(&c->t, hh_stop_cb, 0, 0);
}

static bool hh_conn_open(void *arg)
{
	(void)arg;
	return hh_conn != NULL;
}

/* As a transport describes itself: the url with a secret in it on
 * purpose (the hub masks again what status shows). */
static json_t *hh_describe(const struct upstream *c, bool verbose)
{
	return json_pack("{s:s,s:s,s:i}", "transport", "http-local", "url",
			 "http://127.0.0.1:38111/mcp?key=KEYSECRET2", "port",
			 38111);
}

static const struct upstream_ops hh_ops = {
	.kind = "http",
	.caps = UPSTREAM_RELATES | UPSTREAM_HTTP,
	.open = hh_open,
	.send = hh_send,
	.stop = hh_stop,
	.describe = hh_describe,
};

static void hh_serve(struct upstream *c, const char *line, int64_t related)
{
	c->cbs.on_message(c->ctx, line, strlen(line), related);
}

/* The server's side: answers initialize and every list; calls wait. */
static void hh_pump(void)
{
	struct upstream *c = hh_conn;
	while (c && c->answered < c->nlines) {
		json_t *m = json_loads(c->lines[c->answered++], 0, NULL);
		const char *method =
			json_string_value(json_object_get(m, "method"));
		json_int_t id = json_integer_value(json_object_get(m, "id"));
		char line[512];
		line[0] = '\0';
		if (strcmp(method, "initialize") == 0)
			snprintf(line, sizeof line,
				 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":"
				 "{\"protocolVersion\":\"2025-06-18\","
				 "\"capabilities\":{\"tools\":{}},"
				 "\"serverInfo\":{\"name\":\"f\","
				 "\"version\":\"1\"}}}",
				 (long long)id);
		else if (strcmp(method, "tools/list") == 0)
			snprintf(line, sizeof line,
				 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":"
				 "{\"tools\":[{\"name\":\"wait\","
				 "\"inputSchema\":{\"type\":\"object\"}}]}}",
				 (long long)id);
		json_decref(m);
		if (line[0])
			hh_serve(c, line, 0);
	}
}

/* The id the server got for the n-th tools/call it was sent. */
static int64_t hh_call_id(int n)
{
	for (int i = 0; hh_conn && i < hh_conn->nlines; i++) {
		json_t *m = json_loads(hh_conn->lines[i], 0, NULL);
		const char *method =
			json_string_value(json_object_get(m, "method"));
		json_int_t id = json_integer_value(json_object_get(m, "id"));
		bool hit = method && strcmp(method, "tools/call") == 0;
		json_decref(m);
		if (hit && n-- == 0)
			return id;
	}
	return 0;
}

static void hh_setup(void)
{
	fx_hub_open(
		"{\"mcpServers\":{\"remote\":{\"url\":"
		"\"https://user:pw-SECRET1@127.0.0.1:1/mcp?key=KEYSECRET2\","
		"\"headers\":{\"Authorization\":\"Bearer hdr-SECRET3\"},"
		"\"scope\":\"app\"}}}",
		true);
	hh_conn = NULL;
}

static void hh_teardown(void)
{
	fx_teardown();
}

TestSuite(hub_http, .init = hh_setup, .fini = hh_teardown, .timeout = 30);

/* The session's instance of "remote", on the fake transport. */
static struct instance *hh_instance(struct session *s)
{
	const struct server_config *srv = session_server(s, "remote");
	cr_assert_not_null(srv);
	struct pool_scope_ctx sc;
	session_scope_ctx(s, &sc);
	struct instance *inst = pool_instance_for(hub_pool(fx_hub), srv, &sc,
						  session_key(s, srv));
	instance_set_ops(inst, &hh_ops);
	return inst;
}

static bool hh_calls_sent(void *arg)
{
	hh_pump();
	return hh_call_id(*(int *)arg - 1) > 0;
}

static struct fx_req *hh_call(struct session *s, int id)
{
	char text[200];
	snprintf(text, sizeof text,
		 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
		 "\"params\":{\"name\":\"remote__wait\",\"arguments\":{}}}",
		 id);
	return fx_send(s, text);
}

static size_t hh_count(json_t *msgs, const char *method)
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

/* Two sessions with a call each on the shared url server: a sampling
 * request on B's call's stream goes to B (the stdio guess would have
 * picked A's older call), a log line on A's to A. */
Test(hub_http, server_messages_follow_the_stream_that_carried_them)
{
	struct session *a = fx_open("{\"sampling\":{}}");
	struct session *b = fx_open("{\"sampling\":{}}");
	hh_instance(a);
	struct fx_req *ra = hh_call(a, 1);
	int want = 1;
	cr_assert(fx_run_until(hh_calls_sent, &want), "A's call sent");
	struct fx_req *rb = hh_call(b, 2);
	want = 2;
	cr_assert(fx_run_until(hh_calls_sent, &want), "B's call sent");

	char line[300];
	snprintf(line, sizeof line,
		 "{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":"
		 "\"sampling/createMessage\",\"params\":{\"messages\":[],"
		 "\"maxTokens\":5}}");
	hh_serve(hh_conn, line, hh_call_id(1));
	cr_assert_eq(hh_count(rb->cap.msgs, "sampling/createMessage"), 1,
		     "B asked: %s", json_dumps(rb->cap.msgs, 0));
	cr_assert_eq(hh_count(ra->cap.msgs, "sampling/createMessage"), 0);

	hh_serve(hh_conn,
		 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\","
		 "\"params\":{\"level\":\"info\",\"data\":\"for A\"}}",
		 hh_call_id(0));
	cr_assert_eq(hh_count(ra->cap.msgs, "notifications/message"), 1);
	cr_assert_eq(hh_count(rb->cap.msgs, "notifications/message"), 0);

	/* Status: the transport's description, masked. */
	json_t *st = hub_status(fx_hub, HUB_STATUS_PUBLIC);
	json_t *sv = json_array_get(json_object_get(st, "servers"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(sv, "transport")),
			 "http");
	json_t *in = json_array_get(json_object_get(sv, "instances"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(in, "transport")),
			 "http-local");
	cr_assert_eq(json_integer_value(json_object_get(in, "port")), 38111);
	cr_assert_str_eq(json_string_value(json_object_get(in, "url")),
			 "http://127.0.0.1:38111/mcp?key=***");
	char *text = json_dumps(st, 0);
	cr_assert_null(strstr(text, "SECRET"), "%s", text);
	free(text);
	json_decref(st);

	hub_session_end(fx_hub, a);
	hub_session_end(fx_hub, b);
	fx_req_free(ra);
	fx_req_free(rb);
}

/* 401 with a resource metadata url: needs_auth, and status says where
 * the metadata is (masked) and what to set. */
Test(hub_http, needs_auth_shows_the_metadata_and_what_to_set)
{
	struct session *a = fx_open(NULL);
	struct instance *inst = hh_instance(a);
	struct fx_req *r = fx_send(
		a, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	cr_assert(fx_run_until(hh_conn_open, NULL));
	struct upstream_fault f = {
		.kind = UPSTREAM_AUTH,
		.exit_status = -1,
		.http_status = 401,
		.text = "the server answered 401",
		.resource_metadata = "https://127.0.0.1:1/.well-known/"
				     "oauth-protected-resource?key=KEYSECRET2"};
	hh_conn->cbs.on_fault(hh_conn->ctx, &f);
	hh_close(hh_conn);
	cr_assert(fx_run_until(fx_answered, r));
	cr_assert_eq(instance_state(inst), INSTANCE_NEEDS_AUTH);

	json_t *st = hub_status(fx_hub, HUB_STATUS_PUBLIC);
	json_t *sv = json_array_get(json_object_get(st, "servers"), 0);
	json_t *in = json_array_get(json_object_get(sv, "instances"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(in, "state")),
			 "needs_auth");
	json_t *auth = json_object_get(in, "auth");
	cr_assert_eq(json_integer_value(json_object_get(auth, "status")), 401);
	cr_assert_str_eq(
		json_string_value(json_object_get(auth, "resourceMetadata")),
		"https://127.0.0.1:1/.well-known/"
		"oauth-protected-resource?key=***");
	cr_assert_not_null(
		strstr(json_string_value(json_object_get(auth, "hint")),
		       "\"headers\""));
	/* No connection: the transport from its kind, the url from the
	 * config, masked. */
	cr_assert_str_eq(json_string_value(json_object_get(in, "transport")),
			 "http");
	cr_assert_str_eq(json_string_value(json_object_get(in, "url")),
			 "https://***@127.0.0.1:1/mcp?key=***");
	char *text = json_dumps(st, 0);
	cr_assert_null(strstr(text, "SECRET"), "%s", text);
	free(text);
	json_decref(st);
	hub_session_end(fx_hub, a);
	fx_req_free(r);
}

/* A stdio server that refused its credentials (the demo fixture's
 * --auth-fail): its transport says stdio, and what to set is its env. */
static void hh_stdio_setup(void)
{
	const char *bin = getenv("DEMO_SERVER_BIN");
	char cwd[4096], text[4400];
	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	snprintf(text, sizeof text,
		 "{\"mcpServers\":{\"locked\":{\"command\":\"%s%s\","
		 "\"args\":[\"--auth-fail\"],\"scope\":\"app\"}}}",
		 bin ? "" : cwd, bin ? bin : "/build/san/demo-server");
	fx_hub_open(text, true);
}

TestSuite(hub_stdio_auth, .init = hh_stdio_setup, .fini = hh_teardown,
	  .timeout = 30);

Test(hub_stdio_auth, a_stdio_server_is_told_to_set_its_env)
{
	struct session *a = fx_open(NULL);
	struct fx_req *r = fx_send(
		a, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	cr_assert(fx_run_until(fx_answered, r));
	json_t *st = hub_status(fx_hub, HUB_STATUS_PUBLIC);
	json_t *sv = json_array_get(json_object_get(st, "servers"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(sv, "transport")),
			 "stdio");
	json_t *in = json_array_get(json_object_get(sv, "instances"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(in, "state")),
			 "needs_auth");
	cr_assert_str_eq(json_string_value(json_object_get(in, "transport")),
			 "stdio");
	const char *hint = json_string_value(
		json_object_get(json_object_get(in, "auth"), "hint"));
	cr_assert_not_null(hint);
	cr_assert_not_null(strstr(hint, "\"env\""), "%s", hint);
	json_decref(st);
	hub_session_end(fx_hub, a);
	fx_req_free(r);
}
