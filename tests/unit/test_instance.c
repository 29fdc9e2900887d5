/* The instance against a fake transport and the fake clock: requests in
 * flight across a server's death (one re-send, under the same id), cancel,
 * toolTimeout, answers that name no request, connection generations and
 * what a failed start leaves behind. */
#include "instance_fixture.h"

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
	/* ...and the transport stops waiting for its answer. */
	cr_assert_eq(conns[1]->forgot, id);
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

/* Status says when the last failure was and that a start went well
 * since: the "last failed: exited with code 137" kept, untimed,
 * after the server recovered. */
Test(instance, a_good_start_after_a_failure_marks_it_recovered)
{
	struct instance *inst = make(0);
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	fake_exit(conns[0], 137);
	cr_assert_eq(err, -EIO);
	json_t *f = instance_failure_of("fx");
	cr_assert_not_null(f);
	cr_assert_null(json_object_get(f, "recoveredAt"));
	json_int_t at = json_integer_value(json_object_get(f, "at"));
	json_decref(f);
	fake_now += 60000;
	instance_ensure(inst, ready_cb, &err);
	fake_handshake(conns[1]);
	cr_assert_eq(err, 0);
	f = instance_failure_of("fx");
	json_int_t rec = json_integer_value(json_object_get(f, "recoveredAt"));
	cr_assert_geq(rec, at, "recovered at %lld, failed at %lld",
		      (long long)rec, (long long)at);
	json_decref(f);
	/* A new failure is not recovered from until the next good start. */
	fake_exit(conns[1], 1);
	f = instance_failure_of("fx");
	cr_assert_null(json_object_get(f, "recoveredAt"));
	json_decref(f);
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
