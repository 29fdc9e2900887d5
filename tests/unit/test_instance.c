/* The instance against a fake transport and the fake clock: requests in
 * flight across a server's death (one re-send, under the same id), cancel,
 * toolTimeout, answers that name no request, connection generations and
 * what a failed start leaves behind. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "instance/instance_int.h"
#include "jsonrpc/jsonrpc.h"
#include "util/clock.h"
#include "util/flow.h"

/* ---- the fake transport ---- */

#define FAKE_MAX_LINES 64

struct fake_conn {
	struct sup_cbs cbs;
	void *ctx;
	char *lines[FAKE_MAX_LINES]; /* what the instance sent, in order */
	int nlines;
	int send_rc; /* what the next sends return */
	bool stopped, closed;
	bool paused; /* reading its output is paused */
	int pauses;  /* times it was paused */
	const char *stderr_text;
};

static struct fake_conn *conns[16];
static int nconns;
static int open_rc;
static const char *next_stderr;
static uint64_t fake_now = 1000000;

static uint64_t fake_clock(void)
{
	return fake_now;
}

static int fake_open(uv_loop_t *loop, const struct sup_spec *opts,
		     const struct sup_cbs *cbs, void *ctx, void **out)
{
	if (open_rc)
		return open_rc;
	struct fake_conn *c = calloc(1, sizeof *c);
	c->cbs = *cbs;
	c->ctx = ctx;
	c->stderr_text = next_stderr ? next_stderr : "";
	conns[nconns++] = c;
	*out = c;
	return 0;
}

static int fake_send(void *conn, const char *msg, size_t len)
{
	struct fake_conn *c = conn;
	if (c->stopped)
		return -EPIPE;
	if (c->send_rc)
		return c->send_rc;
	cr_assert_lt(c->nlines, FAKE_MAX_LINES);
	c->lines[c->nlines++] = strndup(msg, len);
	return 0;
}

static void fake_stop(void *conn)
{
	((struct fake_conn *)conn)->stopped = true;
}

static pid_t fake_pid(const void *conn)
{
	return 4242;
}

static uint64_t fake_start_time(const void *conn)
{
	return 1;
}

static char *fake_stderr_tail(const void *conn, int n)
{
	return strdup(((const struct fake_conn *)conn)->stderr_text);
}

static void fake_pause(void *conn, bool on)
{
	struct fake_conn *c = conn;
	c->pauses += on && !c->paused;
	c->paused = on;
}

static const struct instance_transport fake_tp = {
	.pause = fake_pause,
	.open = fake_open,
	.send = fake_send,
	.stop = fake_stop,
	.pid = fake_pid,
	.start_time = fake_start_time,
	.stderr_tail = fake_stderr_tail,
};

/* The server side: feed a line to the instance. */
static void serve(struct fake_conn *c, const char *line)
{
	c->cbs.on_message(c->ctx, line, strlen(line));
}

/* The n-th line the conn got, parsed. */
static json_t *sent(struct fake_conn *c, int n)
{
	cr_assert_lt(n, c->nlines, "line %d of %d", n, c->nlines);
	json_t *m = json_loads(c->lines[n], 0, NULL);
	cr_assert_not_null(m);
	return m;
}

/* Finds the last line that has method; its id in *id. */
static bool sent_method(struct fake_conn *c, const char *method, int64_t *id)
{
	for (int i = c->nlines - 1; i >= 0; i--) {
		json_t *m = sent(c, i);
		const char *mm =
			json_string_value(json_object_get(m, "method"));
		bool hit = mm && strcmp(mm, method) == 0;
		if (hit && id)
			*id = json_integer_value(json_object_get(m, "id"));
		json_decref(m);
		if (hit)
			return true;
	}
	return false;
}

/* The server dies; its conn is closed as the stdio transport would. */
static void fake_exit(struct fake_conn *c, int code)
{
	c->cbs.on_exit(c->ctx, code, 0);
	if (!c->closed) {
		c->closed = true;
		c->cbs.on_closed(c->ctx);
	}
}

/* Answers initialize with no lists: the instance is ready. */
static void fake_handshake(struct fake_conn *c)
{
	int64_t id;
	cr_assert(sent_method(c, "initialize", &id));
	char line[256];
	snprintf(line, sizeof line,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{"
		 "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
		 "\"serverInfo\":{\"name\":\"f\",\"version\":\"1\"}}}",
		 (long long)id);
	serve(c, line);
}

/* ---- the instance under test ---- */

static uv_loop_t loop;
static struct server_config srv;
static struct config_kv env[1];

static struct instance_cbs no_cbs;

static void ready_cb(void *arg, struct instance *inst, int err)
{
	*(int *)arg = err;
}

static struct instance *make(int64_t tool_timeout_ms)
{
	clock_set_source(fake_clock);
	uv_loop_init(&loop);
	memset(conns, 0, sizeof conns);
	nconns = 0;
	open_rc = 0;
	next_stderr = NULL;
	srv = (struct server_config){0};
	srv.name = "fx";
	srv.kind = SERVER_STDIO;
	srv.command = "fake";
	srv.tool_timeout_ms = tool_timeout_ms;
	env[0].key = "API_KEY";
	env[0].value = "s3cr3t-XYZ";
	srv.env = env;
	srv.nenv = 1;
	struct instance_spec spec = {.server = &srv, .key = "k"};
	struct instance *inst = instance_new(&loop, &spec, &no_cbs, NULL);
	instance_set_transport(inst, &fake_tp);
	return inst;
}

static struct instance *make_ready(int64_t tool_timeout_ms)
{
	struct instance *inst = make(tool_timeout_ms);
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	cr_assert_eq(nconns, 1);
	fake_handshake(conns[0]);
	cr_assert_eq(err, 0);
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	return inst;
}

static void finish(struct instance *inst)
{
	instance_free(inst);
	for (int i = 0; i < nconns; i++)
		if (!conns[i]->closed) {
			conns[i]->closed = true;
			conns[i]->cbs.on_closed(conns[i]->ctx);
		}
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0);
	for (int i = 0; i < nconns; i++) {
		for (int k = 0; k < conns[i]->nlines; k++)
			free(conns[i]->lines[k]);
		free(conns[i]);
	}
	clock_set_source(NULL);
}

/* A reply callback that counts and keeps the last answer. */
struct got {
	int calls;
	bool sent;
	json_int_t code;
	char message[1024];
};

static void got_cb(void *arg, json_t *resp, bool was_sent)
{
	struct got *g = arg;
	json_t *error = json_object_get(resp, "error");
	const char *m = json_string_value(json_object_get(error, "message"));
	g->calls++;
	g->sent = was_sent;
	g->code = json_integer_value(json_object_get(error, "code"));
	snprintf(g->message, sizeof g->message, "%s", m ? m : "");
}

static const char *got_message(const struct got *g)
{
	return g->message;
}

static json_int_t got_code(const struct got *g)
{
	return g->code;
}

/* A request whose params are {key: val}, answered to g: its id or
 * -errno. */
static int64_t request_kv(struct instance *inst, const char *method,
			  const char *key, const char *val, struct got *g)
{
	return instance_request(inst, method, json_pack("{s:s}", key, val),
				got_cb, g);
}

/* tools/call of the tool name. */
static int64_t call_tool(struct instance *inst, const char *name, struct got *g)
{
	return request_kv(inst, "tools/call", "name", name, g);
}

/* What a server says when it cannot parse a line: no id to go by. */
#define NULL_ID_PARSE_ERROR                                                    \
	"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{"                         \
	"\"code\":-32700,\"message\":\"Parse error\"}}"

/* ---- R2, R3: re-sent requests ---- */

Test(instance, resend_keeps_the_id_so_cancel_settles_it_once)
{
	struct instance *inst = make_ready(0);
	struct got g = {0};
	int64_t id = request_kv(inst, "resources/read", "uri", "fx://a", &g);
	cr_assert_gt(id, 0);
	fake_exit(conns[0], 1);
	/* Lost with a connection that dropped on its own: back at once,
	 * the request waits for the new process. */
	cr_assert_eq(nconns, 2);
	cr_assert_eq(g.calls, 0);
	fake_handshake(conns[1]);
	int64_t again;
	cr_assert(sent_method(conns[1], "resources/read", &again));
	cr_assert_eq(again, id, "re-sent under %lld, was %lld",
		     (long long)again, (long long)id);
	/* The client cancels: the handle it holds finds the request. */
	cr_assert(instance_cancel(inst, id, "user"));
	int64_t cid;
	cr_assert(sent_method(conns[1], "notifications/cancelled", &cid));
	/* The late answer reaches nobody, and a second cancel finds
	 * nothing: one outcome. */
	char line[128];
	snprintf(line, sizeof line,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}",
		 (long long)id);
	serve(conns[1], line);
	cr_assert_eq(g.calls, 0);
	cr_assert_not(instance_cancel(inst, id, "again"));
	cr_assert_eq(instance_inflight(inst), 0);
	finish(inst);
}

Test(instance, cancel_while_queued_is_never_sent)
{
	struct instance *inst = make_ready(0);
	struct got g = {0};
	int64_t id = request_kv(inst, "resources/read", "uri", "fx://a", &g);
	fake_exit(conns[0], 1);
	cr_assert(instance_cancel(inst, id, "user"));
	fake_handshake(conns[1]);
	cr_assert_not(sent_method(conns[1], "resources/read", NULL));
	cr_assert_not(sent_method(conns[1], "notifications/cancelled", NULL));
	cr_assert_eq(g.calls, 0);
	finish(inst);
}

Test(instance, request_that_kills_its_server_is_resent_once_then_backs_off)
{
	struct instance *inst = make_ready(0);
	struct got g = {0}, innocent = {0};
	request_kv(inst, "resources/read", "uri", "fx://a", &g);
	fake_exit(conns[0], 1);
	fake_handshake(conns[1]);
	cr_assert(sent_method(conns[1], "resources/read", NULL));
	/* Sent once, in flight when the re-sent one kills the server. */
	request_kv(inst, "prompts/get", "name", "p", &innocent);
	fake_exit(conns[1], 1);
	cr_assert_eq(innocent.calls, 1);
	cr_assert_not_null(strstr(got_message(&innocent), "went away"));
	/* Not a third process: the request failed, once, and the death
	 * counts as a failed start. */
	cr_assert_eq(nconns, 2);
	cr_assert_eq(g.calls, 1);
	cr_assert(g.sent);
	cr_assert_not_null(strstr(got_message(&g), "second time"), "%s",
			   got_message(&g));
	cr_assert_eq(instance_state(inst), INSTANCE_FAILED);
	cr_assert_gt(instance_backoff_remaining_ms(inst), 0);
	int err = 0;
	instance_ensure(inst, ready_cb, &err);
	cr_assert_eq(err, -EAGAIN);
	cr_assert_eq(nconns, 2);
	finish(inst);
}

Test(instance, a_call_that_may_have_run_is_never_resent)
{
	struct instance *inst = make_ready(0);
	struct got g = {0};
	call_tool(inst, "x", &g);
	fake_exit(conns[0], 1);
	cr_assert_eq(g.calls, 1);
	cr_assert_not_null(strstr(got_message(&g), "may or may not"));
	cr_assert_eq(nconns, 1);
	finish(inst);
}

/* ---- toolTimeout ---- */

Test(instance, tool_timeout_fails_the_call_and_cancels_it_on_the_server)
{
	struct instance *inst = make_ready(5000);
	struct got g = {0}, other = {0};
	int64_t id = call_tool(inst, "sleep", &g);
	/* Other requests have no deadline. */
	request_kv(inst, "resources/read", "uri", "fx://a", &other);
	fake_now += 4999;
	instance_expire(inst);
	cr_assert_eq(g.calls, 0);
	fake_now += 1;
	instance_expire(inst);
	cr_assert_eq(g.calls, 1);
	cr_assert_eq(got_code(&g), JR_REQUEST_TIMEOUT);
	const char *m = got_message(&g);
	cr_assert_not_null(strstr(m, "\"fx\""), "%s", m);
	cr_assert_not_null(strstr(m, "\"sleep\""), "%s", m);
	cr_assert_not_null(strstr(m, "5.000 s"), "%s", m);
	json_t *c = NULL;
	int64_t cid;
	cr_assert(sent_method(conns[0], "notifications/cancelled", &cid));
	c = sent(conns[0], conns[0]->nlines - 1);
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(c, "params"), "requestId")),
		     id);
	json_decref(c);
	fake_now += 60000;
	instance_expire(inst);
	cr_assert_eq(other.calls, 0);
	cr_assert_eq(instance_inflight(inst), 1);
	finish(inst);
}

static void text_cb(void *arg, const char *msg, size_t off, size_t len)
{
	((struct got *)arg)->calls += 100;
}

Test(instance, tool_timeout_names_the_tool_of_a_call_sent_as_text)
{
	struct instance *inst = make_ready(250);
	struct got g = {0};
	const char *params = "{\"name\":\"hang\",\"arguments\":{}}";
	int64_t id = instance_request_raw(inst, "tools/call", params,
					  strlen(params), got_cb, text_cb, &g);
	cr_assert_gt(id, 0);
	fake_now += 250;
	instance_expire(inst);
	cr_assert_eq(g.calls, 1);
	cr_assert_not_null(strstr(got_message(&g), "\"hang\""), "%s",
			   got_message(&g));
	cr_assert_not_null(strstr(got_message(&g), "0.250 s"));
	finish(inst);
}

/* ---- answers that name no request ---- */

Test(instance, error_with_null_id_fails_the_only_request_in_flight)
{
	struct instance *inst = make_ready(0);
	struct got g = {0};
	call_tool(inst, "x", &g);
	serve(conns[0], NULL_ID_PARSE_ERROR);
	cr_assert_eq(g.calls, 1);
	cr_assert_eq(got_code(&g), JR_PARSE_ERROR);
	cr_assert_not_null(strstr(got_message(&g), "Parse error"));
	cr_assert_not_null(strstr(got_message(&g), "only request"));
	finish(inst);
}

Test(instance, error_with_null_id_and_several_in_flight_fails_each_honestly)
{
	struct instance *inst = make_ready(0);
	struct got a = {0}, b = {0};
	call_tool(inst, "x", &a);
	call_tool(inst, "y", &b);
	serve(conns[0], NULL_ID_PARSE_ERROR);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(b.calls, 1);
	cr_assert_not_null(strstr(got_message(&b), "did not say which"));
	finish(inst);
}

Test(instance, an_answer_under_a_string_id_still_answers_its_call)
{
	struct instance *inst = make_ready(0);
	struct got a = {0}, b = {0};
	int64_t ia = call_tool(inst, "x", &a);
	char line[128];
	snprintf(line, sizeof line,
		 "{\"jsonrpc\":\"2.0\",\"id\":\"%lld\",\"result\":{}}",
		 (long long)ia);
	serve(conns[0], line);
	cr_assert_eq(a.calls, 1);
	cr_assert_eq(a.code, 0);
	/* An id it was never sent: the one call in flight is failed. */
	call_tool(inst, "y", &b);
	serve(conns[0], "{\"jsonrpc\":\"2.0\",\"id\":\"zz\",\"error\":{"
			"\"code\":-32603,\"message\":\"boom\"}}");
	cr_assert_eq(b.calls, 1);
	cr_assert_not_null(strstr(got_message(&b), "\"zz\""), "%s",
			   got_message(&b));
	finish(inst);
}

static void overlong(struct fake_conn *c, const char *head, const char *tail)
{
	c->cbs.on_overlong(c->ctx, head, strlen(head), tail, strlen(tail));
}

Test(instance, answer_over_the_line_limit_fails_its_request_by_id)
{
	struct instance *inst = make_ready(0);
	struct got a = {0}, b = {0};
	int64_t ia = request_kv(inst, "resources/read", "uri", "a", &a);
	int64_t ib = request_kv(inst, "resources/read", "uri", "b", &b);
	char tail[64], head[64];
	/* Serialisers that put the envelope last (the TypeScript SDK). */
	snprintf(tail, sizeof tail,
		 "xxxxxx\"}]},\"jsonrpc\":\"2.0\",\"id\":%lld}", (long long)ib);
	overlong(conns[0], "{\"result\":{\"contents\":[{\"text\":\"xx", tail);
	cr_assert_eq(a.calls, 0);
	cr_assert_eq(b.calls, 1);
	cr_assert_not_null(strstr(got_message(&b), "16 MiB"));
	/* ...and first (Python's json.dumps of a dict built in order). */
	snprintf(head, sizeof head,
		 "{\"jsonrpc\": \"2.0\", \"id\": %lld, \"result\": {\"c",
		 (long long)ia);
	overlong(conns[0], head, "\"}]}}");
	cr_assert_eq(a.calls, 1);
	/* An id inside a string at the end is not the envelope's. */
	struct got c = {0}, d = {0};
	request_kv(inst, "resources/read", "uri", "c", &c);
	request_kv(inst, "resources/read", "uri", "d", &d);
	overlong(conns[0], "{\"result\":{", "\"text\":\"x\\\"id\\\":3}\"}}");
	/* Unknown, two candidates: each fails, saying so. */
	cr_assert_eq(c.calls, 1);
	cr_assert_eq(d.calls, 1);
	cr_assert_not_null(strstr(got_message(&d), "did not say which"));
	/* A notification over the limit fails nothing. */
	struct got e = {0};
	request_kv(inst, "resources/read", "uri", "e", &e);
	overlong(conns[0], "{\"method\":\"notifications/message\",\"params\"",
		 "}}");
	cr_assert_eq(e.calls, 0);
	finish(inst);
}

/* ---- R10, R17 ---- */

Test(instance, answers_to_server_requests_go_only_to_the_connection_that_asked)
{
	struct instance *inst = make_ready(0);
	uint64_t g1 = instance_conn_gen(inst);
	cr_assert_gt(g1, 0);
	struct got g = {0};
	request_kv(inst, "resources/read", "uri", "fx://a", &g);
	fake_exit(conns[0], 1);
	fake_handshake(conns[1]);
	uint64_t g2 = instance_conn_gen(inst);
	cr_assert_neq(g1, g2);
	int before = conns[1]->nlines;
	json_t *id = json_integer(1);
	cr_assert_eq(instance_respond_on(inst, g1, id, json_object(), NULL),
		     -ESTALE);
	cr_assert_eq(conns[1]->nlines, before);
	cr_assert_eq(instance_respond_on(inst, g2, id, json_object(), NULL), 0);
	cr_assert_eq(conns[1]->nlines, before + 1);
	json_decref(id);
	finish(inst);
}

Test(instance, a_full_input_is_reported_as_such)
{
	struct instance *inst = make_ready(0);
	struct got g = {0};
	conns[0]->send_rc = -ENOBUFS;
	cr_assert_eq(call_tool(inst, "x", &g), -ENOBUFS);
	cr_assert_eq(instance_notify(inst, "notifications/x", NULL), -ENOBUFS);
	json_t *id = json_integer(3);
	cr_assert_eq(instance_respond(inst, id, json_object(), NULL), -ENOBUFS);
	json_decref(id);
	cr_assert_eq(g.calls, 0);
	cr_assert_eq(instance_inflight(inst), 0);
	conns[0]->send_rc = 0;
	finish(inst);
}

/* ---- what a failure leaves ---- */

Test(instance, failed_start_carries_stderr_and_is_kept_after_recovery)
{
	struct instance *inst = make(0);
	next_stderr = "boom: missing API_KEY (had s3cr3t-XYZ)\nline two";
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	fake_exit(conns[0], 7);
	cr_assert_eq(err, -EIO);
	const char *why = instance_last_error(inst);
	cr_assert_not_null(strstr(why, "exited with code 7 during startup"),
			   "%s", why);
	const char *line = instance_failure_line(inst);
	cr_assert_not_null(line);
	cr_assert_not_null(strstr(line, "boom: missing API_KEY (had ***)"),
			   "%s", line);
	cr_assert_null(strstr(line, "line two"));
	json_t *lf = instance_last_failure(inst);
	cr_assert_not_null(lf);
	cr_assert_not_null(strstr(
		json_string_value(json_object_get(lf, "stderr")), "***"));
	cr_assert_gt(json_integer_value(json_object_get(lf, "at")), 0);
	json_decref(lf);
	/* Kept by server name for status, after the instance is gone. */
	json_t *byname = instance_failure_of("fx");
	cr_assert_not_null(byname);
	cr_assert_not_null(
		strstr(json_string_value(json_object_get(byname, "reason")),
		       "code 7"));
	json_decref(byname);
	cr_assert_null(instance_failure_of("nosuch"));
	/* It runs again: no stale reason, the last failure still kept. */
	next_stderr = NULL;
	fake_now += 60000;
	instance_ensure(inst, ready_cb, &err);
	fake_handshake(conns[1]);
	cr_assert_eq(err, 0);
	cr_assert_null(instance_last_error(inst));
	cr_assert_null(instance_failure_line(inst));
	json_t *d = instance_describe(inst, false);
	cr_assert_null(json_object_get(d, "error"));
	cr_assert_not_null(json_object_get(d, "lastFailure"));
	json_decref(d);
	finish(inst);
}

Test(instance, stderr_lines_are_masked)
{
	struct instance *inst = make(0);
	char *m = instance_mask(inst, "token=s3cr3t-XYZ!", 17);
	cr_assert_str_eq(m, "token=***!");
	free(m);
	finish(inst);
}

/* ---- backpressure: a server's output queued on slow clients ---- */

/* A client connection as the endpoint counts it: what the answer's
 * delivery writes is counted against the flow current at that moment. */
static struct flow *delivered_to;

static void deliver_big_cb(void *arg, json_t *resp, bool was_sent)
{
	delivered_to = flow_current;
	if (flow_current)
		flow_add(flow_current, *(size_t *)arg);
}

Test(instance, reads_pause_above_the_high_mark_and_resume_below_the_low)
{
	struct instance *inst = make_ready(0);
	struct fake_conn *c = conns[0];
	struct flow *f = instance_flow(inst);
	size_t each = 1024 * 1024 + 1;
	for (int i = 0; i < 4; i++) {
		int64_t id = instance_request(inst, "tools/call",
					      json_pack("{s:s}", "name", "x"),
					      deliver_big_cb, &each);
		char line[128];
		snprintf(line, sizeof line,
			 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}",
			 (long long)id);
		serve(c, line);
		/* The answer was counted against this server's flow. */
		cr_assert_eq(delivered_to, f);
		cr_assert_null(flow_current,
			       "set only while a line is handled");
		cr_assert_eq(c->paused, i == 3, "answer %d: paused %d", i,
			     c->paused);
	}
	cr_assert_eq(f->queued, 4 * each);
	/* The clients read: under the high mark is not enough ... */
	flow_sub(f, 2 * each);
	cr_assert(c->paused);
	/* ... under the low mark resumes reading. */
	flow_sub(f, FLOW_LOW); /* 2 bytes over the low mark left */
	cr_assert(c->paused);
	flow_sub(f, 2);
	cr_assert_not(c->paused);
	cr_assert_eq(c->pauses, 1);

	/* Paused across a restart: the new connection starts paused. */
	flow_add(f, FLOW_HIGH + 1);
	cr_assert(c->paused);
	struct got g = {0};
	request_kv(inst, "resources/read", "uri", "fx://a", &g);
	fake_exit(c, 1); /* restarted at once for the re-send */
	cr_assert_eq(nconns, 2);
	cr_assert(conns[1]->paused);
	flow_sub(f, f->queued);
	cr_assert_not(conns[1]->paused);
	flow_add(f, FLOW_HIGH + 1);
	/* A connection that outlives the instance keeps the flow. */
	flow_ref(f);
	finish(inst);
	flow_sub(f, f->queued); /* no instance left to tell */
	cr_assert_eq(f->refs, 1);
	flow_unref(f);
}
