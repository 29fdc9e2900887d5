/* The instance's policy for each fact a transport reports, against the
 * scripted fake upstream: AUTH (needs_auth, never retried), EXPIRED
 * (re-open at once, bounded), LOST_PORT (bounded), a lost request sent or
 * not, the drain of a full queue, the cause of a server's request, late
 * callbacks of a connection let go of, the HTTP client getter and what
 * describe merges. */
#include "instance_fixture.h"

#define METADATA "https://auth.example/.well-known/oauth-protected-resource"

/* An answer {} to the request id, as the server sends it. */
static void answer(struct fake_conn *c, int64_t id)
{
	char line[128];
	snprintf(line, sizeof line,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}",
		 (long long)id);
	serve(c, line);
}

/* ---- AUTH ---- */

Test(faults, auth_needs_credentials_and_is_never_retried_on_its_own)
{
	struct instance *inst = make_ready(0);
	struct got g = {0};
	request_kv(inst, "resources/read", "uri", "fx://a", &g);
	fake_fault(conns[0], UPSTREAM_AUTH, 401, METADATA);
	cr_assert_eq(instance_state(inst), INSTANCE_NEEDS_AUTH);
	/* What waited is answered, not re-sent to a server that refuses. */
	cr_assert_eq(g.calls, 1);
	cr_assert_eq(nconns, 1);
	const char *why = instance_last_error(inst);
	cr_assert_not_null(strstr(why, "needs credentials"), "%s", why);
	cr_assert_not_null(strstr(why, "401"), "%s", why);
	cr_assert_not_null(strstr(why, "\"headers\""), "%s", why);
	json_t *d = instance_describe(inst, false);
	json_t *auth = json_object_get(d, "auth");
	cr_assert_eq(json_integer_value(json_object_get(auth, "status")), 401);
	cr_assert_str_eq(
		json_string_value(json_object_get(auth, "resourceMetadata")),
		METADATA);
	cr_assert_str_eq(json_string_value(json_object_get(d, "state")),
			 "needs_auth");
	json_decref(d);
	/* No backoff ends it: long after, still refused, nothing opened. */
	fake_now += 3600 * 1000;
	int err = 0;
	instance_ensure(inst, ready_cb, &err);
	cr_assert_eq(err, -EACCES);
	cr_assert_eq(nconns, 1);
	/* `mcpvisor restart`: a stop, then a start, tries again. */
	instance_stop(inst, "restart", false);
	instance_ensure(inst, ready_cb, &err);
	cr_assert_eq(nconns, 2);
	fake_handshake(conns[1]);
	cr_assert_eq(err, 0);
	d = instance_describe(inst, false);
	cr_assert_null(json_object_get(d, "auth"));
	json_decref(d);
	finish(inst);
}

Test(faults, auth_during_startup_fails_the_waiters_with_eacces)
{
	struct instance *inst = make(0);
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	fake_fault(conns[0], UPSTREAM_AUTH, 403, NULL);
	cr_assert_eq(err, -EACCES);
	cr_assert_eq(instance_state(inst), INSTANCE_NEEDS_AUTH);
	json_t *d = instance_describe(inst, false);
	json_t *auth = json_object_get(d, "auth");
	cr_assert_eq(json_integer_value(json_object_get(auth, "status")), 403);
	cr_assert_null(json_object_get(auth, "resourceMetadata"));
	json_decref(d);
	finish(inst);
}

/* ---- EXPIRED ---- */

/* The POST of a call met the 404 of an expired session: the server never
 * ran it, so it goes once on the new session and its client gets the
 * answer (it used to hear "may or may not"). Another call, on its own
 * stream, may have run: it is told so. */
Test(faults, a_call_refused_by_an_expired_session_goes_once_on_the_new_one)
{
	struct instance *inst = make_ready(0);
	fake_ops.caps |= UPSTREAM_RELATES | UPSTREAM_LATE_FACTS;
	struct got refused = {0}, running = {0};
	const char *p1 = "{\"name\":\"a\",\"arguments\":{}}";
	const char *p2 = "{\"name\":\"b\",\"arguments\":{}}";
	int64_t id1 = instance_request_raw(inst, "tools/call", p1, strlen(p1),
					   got_cb, NULL, &refused);
	int64_t id2 = instance_request_raw(inst, "tools/call", p2, strlen(p2),
					   got_cb, NULL, &running);
	cr_assert_gt(id1, 0);
	cr_assert_gt(id2, id1);
	struct outbox_fact_of f = {id1, OUTBOX_REFUSED};
	fake_fault_facts(conns[0], UPSTREAM_EXPIRED, 404, &f, 1);
	cr_assert_eq(running.calls, 1);
	cr_assert_not_null(strstr(got_message(&running), "may or may not"));
	cr_assert_eq(refused.calls, 0,
		     "the refused call waits for the session");
	cr_assert_eq(nconns, 2);
	fake_handshake(conns[1]);
	int64_t again;
	cr_assert(sent_method(conns[1], "tools/call", &again));
	cr_assert_eq(again, id1);
	cr_assert_eq(sent_count(conns[1], "tools/call"), 1);
	cr_assert(strstr(conns[1]->lines[conns[1]->nlines - 1], "\"a\""),
		  "the same call, byte for byte");
	answer(conns[1], id1);
	cr_assert_eq(refused.calls, 1);
	cr_assert_eq(refused.code, 0);
	fake_ops.caps &= ~(UPSTREAM_RELATES | UPSTREAM_LATE_FACTS);
	finish(inst);
}

/* A fact can only spare what it names: a 404 that names no request (a
 * notification's POST) re-sends no call. */
Test(faults, an_expired_session_without_facts_resends_no_call)
{
	struct instance *inst = make_ready(0);
	fake_ops.caps |= UPSTREAM_RELATES | UPSTREAM_LATE_FACTS;
	struct got g = {0};
	const char *p = "{\"name\":\"a\",\"arguments\":{}}";
	instance_request_raw(inst, "tools/call", p, strlen(p), got_cb, NULL,
			     &g);
	fake_fault_facts(conns[0], UPSTREAM_EXPIRED, 404, NULL, 0);
	fake_handshake(conns[1]);
	cr_assert_eq(sent_count(conns[1], "tools/call"), 0);
	cr_assert_eq(g.calls, 1);
	cr_assert_not_null(strstr(got_message(&g), "may or may not"));
	fake_ops.caps &= ~(UPSTREAM_RELATES | UPSTREAM_LATE_FACTS);
	finish(inst);
}

Test(faults, expired_reopens_at_once_resends_reads_and_answers_calls)
{
	struct instance *inst = make_ready(0);
	struct got read = {0}, call = {0};
	int64_t rid =
		request_kv(inst, "resources/read", "uri", "fx://a", &read);
	call_tool(inst, "x", &call);
	fake_fault(conns[0], UPSTREAM_EXPIRED, 404, NULL);
	/* Opened again at once: not a failure, no backoff. */
	cr_assert_eq(nconns, 2);
	cr_assert_eq(instance_state(inst), INSTANCE_STARTING);
	cr_assert_eq(instance_backoff_remaining_ms(inst), 0);
	cr_assert_null(instance_last_error(inst));
	/* The call may have run: its client is told, it is not sent. */
	cr_assert_eq(call.calls, 1);
	cr_assert(call.sent);
	cr_assert_not_null(strstr(got_message(&call), "may or may not"), "%s",
			   got_message(&call));
	cr_assert_eq(read.calls, 0);
	fake_handshake(conns[1]);
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	int64_t again;
	cr_assert(sent_method(conns[1], "resources/read", &again));
	cr_assert_eq(again, rid);
	cr_assert_eq(sent_count(conns[1], "tools/call"), 0);
	answer(conns[1], rid);
	cr_assert_eq(read.calls, 1);
	cr_assert_eq(read.code, 0);
	finish(inst);
}

Test(faults, three_expiries_in_a_row_are_a_failure)
{
	struct instance *inst = make_ready(0);
	fake_fault(conns[0], UPSTREAM_EXPIRED, 404, NULL);
	fake_handshake(conns[1]);
	fake_now += 1000;
	fake_fault(conns[1], UPSTREAM_EXPIRED, 404, NULL);
	fake_handshake(conns[2]);
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	fake_now += 1000;
	struct got g = {0};
	request_kv(inst, "resources/read", "uri", "fx://a", &g);
	fake_fault(conns[2], UPSTREAM_EXPIRED, 404, NULL);
	/* The third: a broken server, not one more session. */
	cr_assert_eq(nconns, 3);
	cr_assert_eq(instance_state(inst), INSTANCE_FAILED);
	const char *why = instance_last_error(inst);
	cr_assert_not_null(strstr(why, "3 times in a row"), "%s", why);
	cr_assert_gt(instance_backoff_remaining_ms(inst), 0);
	/* Nothing waits for a re-send that would skip the backoff. */
	cr_assert_eq(g.calls, 1);
	finish(inst);
}

Test(faults, an_answered_request_or_time_between_expiries_resets_the_count)
{
	struct instance *inst = make_ready(0);
	fake_fault(conns[0], UPSTREAM_EXPIRED, 404, NULL);
	fake_handshake(conns[1]);
	fake_fault(conns[1], UPSTREAM_EXPIRED, 404, NULL);
	fake_handshake(conns[2]);
	/* A client's request answered: the sessions work. */
	struct got g = {0};
	answer(conns[2], request_kv(inst, "resources/read", "uri", "a", &g));
	cr_assert_eq(g.calls, 1);
	fake_fault(conns[2], UPSTREAM_EXPIRED, 404, NULL);
	fake_handshake(conns[3]);
	fake_fault(conns[3], UPSTREAM_EXPIRED, 404, NULL);
	fake_handshake(conns[4]);
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	/* Far apart in time: not in a row either. */
	fake_now += INSTANCE_EXPIRY_WINDOW_MS + 1;
	fake_fault(conns[4], UPSTREAM_EXPIRED, 404, NULL);
	fake_handshake(conns[5]);
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	cr_assert_eq(nconns, 6);
	finish(inst);
}

/* ---- LOST_PORT ---- */

Test(faults, a_lost_port_starts_again_at_once_three_times_then_fails)
{
	struct instance *inst = make(0);
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	for (int i = 0; i < INSTANCE_MAX_LOST_PORTS; i++) {
		fake_fault(conns[i], UPSTREAM_LOST_PORT, 0, NULL);
		cr_assert_eq(nconns, i + 2, "re-start %d", i);
		cr_assert_eq(err, 1, "the waiter waits for the new port");
		cr_assert_eq(instance_backoff_remaining_ms(inst), 0);
	}
	fake_fault(conns[nconns - 1], UPSTREAM_LOST_PORT, 0, NULL);
	cr_assert_eq(nconns, INSTANCE_MAX_LOST_PORTS + 1);
	cr_assert_eq(err, -EIO);
	cr_assert_eq(instance_state(inst), INSTANCE_FAILED);
	cr_assert_not_null(strstr(instance_last_error(inst), "keep a port"),
			   "%s", instance_last_error(inst));
	cr_assert_gt(instance_backoff_remaining_ms(inst), 0);
	finish(inst);
}

Test(faults, lost_ports_are_counted_in_a_row_only)
{
	struct instance *inst = make(0);
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	fake_fault(conns[0], UPSTREAM_LOST_PORT, 0, NULL);
	fake_fault(conns[1], UPSTREAM_LOST_PORT, 0, NULL);
	fake_handshake(conns[2]);
	cr_assert_eq(err, 0);
	for (int i = 0; i < INSTANCE_MAX_LOST_PORTS; i++)
		fake_fault(conns[2 + i], UPSTREAM_LOST_PORT, 0, NULL);
	cr_assert_eq(instance_state(inst), INSTANCE_STARTING);
	finish(inst);
}

/* ---- on_lost ---- */

static void lose(struct fake_conn *c, int64_t id, bool was_sent)
{
	c->cbs.on_lost(c->ctx, id, was_sent ? OUTBOX_CUT : OUTBOX_UNWRITTEN);
}

Test(faults, a_call_lost_before_it_was_sent_is_sent_again)
{
	struct instance *inst = make_ready(0);
	fake_ops.caps |= UPSTREAM_RELATES | UPSTREAM_LATE_FACTS;
	struct got g = {0};
	const char *params = "{\"name\":\"x\",\"arguments\":{\"a\":1}}";
	int64_t id = instance_request_raw(inst, "tools/call", params,
					  strlen(params), got_cb, NULL, &g);
	cr_assert_gt(id, 0);
	lose(conns[0], id, false);
	cr_assert_eq(g.calls, 0);
	cr_assert_eq(sent_count(conns[0], "tools/call"), 2);
	json_t *m = sent(conns[0], conns[0]->nlines - 1);
	cr_assert_eq(json_integer_value(json_object_get(m, "id")), id);
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(json_object_get(m, "params"),
					     "arguments"),
			     "a")),
		     1);
	json_decref(m);
	cr_assert_eq(conns[0]->ids[conns[0]->nlines - 1], id);
	answer(conns[0], id);
	cr_assert_eq(g.calls, 1);
	cr_assert_eq(g.code, 0);
	finish(inst);
}

Test(faults, a_call_lost_after_it_was_sent_may_have_run)
{
	struct instance *inst = make_ready(0);
	fake_ops.caps |= UPSTREAM_RELATES | UPSTREAM_LATE_FACTS;
	struct got g = {0};
	int64_t id = call_tool(inst, "x", &g);
	lose(conns[0], id, true);
	cr_assert_eq(g.calls, 1);
	cr_assert(g.sent);
	cr_assert_not_null(strstr(got_message(&g), "may or may not"), "%s",
			   got_message(&g));
	cr_assert_eq(sent_count(conns[0], "tools/call"), 1);
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	finish(inst);
}

Test(faults, a_list_lost_after_it_was_sent_is_sent_again_once)
{
	struct instance *inst = make_ready(0);
	struct got g = {0};
	int64_t id =
		instance_request(inst, "tools/list", json_object(), got_cb, &g);
	lose(conns[0], id, true);
	cr_assert_eq(g.calls, 0);
	cr_assert_eq(sent_count(conns[0], "tools/list"), 2);
	lose(conns[0], id, true);
	cr_assert_eq(g.calls, 1);
	cr_assert_not_null(strstr(got_message(&g), "second time"), "%s",
			   got_message(&g));
	cr_assert_eq(sent_count(conns[0], "tools/list"), 2);
	finish(inst);
}

Test(faults, a_list_lost_before_it_was_sent_is_sent_again)
{
	struct instance *inst = make_ready(0);
	struct got g = {0};
	int64_t id =
		instance_request(inst, "tools/list", json_object(), got_cb, &g);
	lose(conns[0], id, false);
	lose(conns[0], id, false);
	cr_assert_eq(sent_count(conns[0], "tools/list"), 3);
	cr_assert_eq(g.calls, 0);
	/* Bounded: a transport that never gets it out is not a loop. */
	lose(conns[0], id, false);
	cr_assert_eq(g.calls, 1);
	cr_assert_not(g.sent);
	cr_assert_eq(sent_count(conns[0], "tools/list"), 3);
	finish(inst);
}

Test(faults, a_lost_initialize_fails_the_start_as_a_failed_answer)
{
	struct instance *inst = make(0);
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	int64_t id;
	cr_assert(sent_method(conns[0], "initialize", &id));
	lose(conns[0], id, true);
	cr_assert_eq(err, -EIO);
	cr_assert_eq(instance_state(inst), INSTANCE_FAILED);
	cr_assert_not_null(strstr(instance_last_error(inst), "initialize"),
			   "%s", instance_last_error(inst));
	finish(inst);
}

/* ---- on_drain ---- */

Test(faults, resends_wait_for_the_drain_of_a_full_queue)
{
	struct instance *inst = make_ready(0);
	struct got g = {0};
	int64_t id = request_kv(inst, "resources/read", "uri", "fx://a", &g);
	fake_exit(conns[0], 1);
	cr_assert_eq(nconns, 2);
	int64_t init;
	cr_assert(sent_method(conns[1], "initialize", &init));
	/* Full by the time the re-send goes: it waits, not failed. */
	conns[1]->send_rc = -ENOBUFS;
	fake_handshake(conns[1]);
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	cr_assert_eq(g.calls, 0);
	cr_assert_not(sent_method(conns[1], "resources/read", NULL));
	/* A new request that finds it full is refused at once. */
	struct got h = {0};
	cr_assert_eq(call_tool(inst, "y", &h), -ENOBUFS);
	conns[1]->send_rc = 0;
	conns[1]->cbs.on_drain(conns[1]->ctx);
	int64_t again;
	cr_assert(sent_method(conns[1], "resources/read", &again));
	cr_assert_eq(again, id);
	answer(conns[1], id);
	cr_assert_eq(g.calls, 1);
	finish(inst);
}

/* ---- related -> cause ---- */

Test(faults, the_request_that_carried_a_server_request_is_its_cause)
{
	struct instance *inst = make_ready(0);
	fake_ops.caps |= UPSTREAM_RELATES | UPSTREAM_LATE_FACTS;
	struct got g = {0};
	int64_t id = call_tool(inst, "ask", &g);
	const char *ask = "{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":"
			  "\"sampling/createMessage\",\"params\":{}}";
	serve_related(conns[0], ask, id);
	cr_assert_eq(nserver_requests, 1);
	cr_assert_eq(last_cause, &g);
	const char *note = "{\"jsonrpc\":\"2.0\",\"method\":"
			   "\"notifications/progress\",\"params\":{}}";
	serve_related(conns[0], note, id);
	cr_assert_eq(nserver_notes, 1);
	cr_assert_eq(last_cause, &g);
	/* Unknown (stdio, the GET stream) or an answered request: none. */
	serve_related(conns[0], ask, 0);
	cr_assert_null(last_cause);
	answer(conns[0], id);
	last_cause = &g;
	serve_related(conns[0], ask, id);
	cr_assert_null(last_cause);
	cr_assert_eq(nserver_requests, 3);
	finish(inst);
}

/* ---- late callbacks ---- */

Test(faults, late_callbacks_of_a_connection_let_go_of_are_ignored)
{
	struct instance *inst = make_ready(0);
	struct got g = {0};
	int64_t id = request_kv(inst, "resources/read", "uri", "fx://a", &g);
	struct fake_conn *old = conns[0];
	struct upstream_fault f = {.kind = UPSTREAM_EXITED, .exit_status = 1};
	old->cbs.on_fault(old->ctx, &f);
	cr_assert(old->stopped);
	cr_assert_eq(nconns, 2);
	/* Before the old one closes it still talks: nobody listens. */
	answer(old, id);
	lose(old, id, true);
	old->cbs.on_drain(old->ctx);
	struct upstream_fault auth = {.kind = UPSTREAM_AUTH,
				      .http_status = 401};
	old->cbs.on_fault(old->ctx, &auth);
	const char *ask = "{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":"
			  "\"roots/list\"}";
	serve(old, ask);
	cr_assert_eq(nserver_requests, 0);
	cr_assert_eq(g.calls, 0);
	cr_assert_eq(instance_state(inst), INSTANCE_STARTING);
	cr_assert_eq(nconns, 2);
	fake_close(old);
	/* Its going still reached the owner (the journal). */
	cr_assert_eq(owned_gone, 1);
	fake_handshake(conns[1]);
	cr_assert(sent_method(conns[1], "resources/read", NULL));
	answer(conns[1], id);
	cr_assert_eq(g.calls, 1);
	finish(inst);
}

/* ---- the HTTP client, describe, url servers ---- */

/* By the transport's UPSTREAM_HTTP cap, not the server's kind: a stdio
 * container is no stdio server, and needs no libcurl either. */
Test(faults, the_http_client_is_made_only_when_a_url_server_starts)
{
	struct httpc *h = (struct httpc *)&loop; /* any non-NULL pointer */
	struct instance *inst = make_kind(0, SERVER_HTTP_REMOTE, false, h);
	fake_ops.caps |= UPSTREAM_HTTP;
	cr_assert_eq(http_gets, 0, "not on instance_new");
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	cr_assert_eq(http_gets, 1);
	cr_assert_eq(conns[0]->http, h);
	finish(inst);

	inst = make_kind(0, SERVER_STDIO, false, h);
	instance_ensure(inst, ready_cb, &err);
	cr_assert_eq(http_gets, 0);
	cr_assert_null(conns[0]->http);
	finish(inst);

	inst = make_kind(0, SERVER_HTTP_REMOTE, false, h);
	instance_ensure(inst, ready_cb, &err);
	cr_assert_eq(http_gets, 0, "a transport without UPSTREAM_HTTP");
	cr_assert_null(conns[0]->http);
	finish(inst);
}

Test(faults, a_url_server_without_an_http_client_fails_clearly)
{
	/* The real transport, and no HTTP client (libcurl not loadable). */
	struct instance *inst = make_kind(0, SERVER_HTTP_REMOTE, true, NULL);
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	cr_assert_eq(err, -EIO);
	cr_assert_eq(nconns, 0);
	cr_assert_not_null(strstr(instance_last_error(inst), "shared library"),
			   "%s", instance_last_error(inst));
	finish(inst);
}

Test(faults, describe_merges_the_transport_s_under_the_instance_s)
{
	struct instance *inst = make_ready(0);
	next_stderr = NULL;
	json_t *d = instance_describe(inst, false);
	cr_assert_str_eq(json_string_value(json_object_get(d, "transport")),
			 "fake");
	cr_assert_eq(json_integer_value(json_object_get(d, "port")), 8123);
	cr_assert_str_eq(json_string_value(json_object_get(d, "state")),
			 "running");
	cr_assert_null(json_object_get(d, "pid"));
	json_decref(d);
	d = instance_describe(inst, true);
	cr_assert_eq(json_integer_value(json_object_get(d, "pid")), 4242);
	json_decref(d);
	cr_assert_eq(instance_pid(inst), 4242);
	instance_stop(inst, "test", false);
	cr_assert_eq(instance_pid(inst), 0);
	fake_close(conns[0]);
	d = instance_describe(inst, false);
	cr_assert_str_eq(json_string_value(json_object_get(d, "transport")),
			 "fake");
	cr_assert_null(json_object_get(d, "port"));
	json_decref(d);
	finish(inst);
}

Test(faults, a_fault_s_text_is_masked_before_it_is_shown)
{
	struct instance *inst = make_ready(0);
	struct upstream_fault f = {.kind = UPSTREAM_CLOSED,
				   .text = "reset by peer (key s3cr3t-XYZ)"};
	conns[0]->cbs.on_fault(conns[0]->ctx, &f);
	cr_assert_str_eq(instance_last_error(inst), "reset by peer (key ***)");
	fake_close(conns[0]);
	finish(inst);
}
