/*
 * Unit tests for the MCP client session over the legacy HTTP+SSE
 * transport (2024-11-05) and auto mode's fallback to it, against the
 * scripted server of mcpc_fixture.h.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "mcpc/mcpc_int.h"
#include "mcpc_fixture.h"

/* A legacy HTTP+SSE server; POST /mcp answers 405 (for auto mode). */
static void tm_script_legacy(struct tmc *t, struct tm_conn *c, int n,
			     const struct tm_req *r)
{
	if (strcmp(r->method, "GET") == 0) {
		tm_sse(c, NULL);
		t->stream = c;
		tm_write(c, ": hb\n\n");
		tm_write(c, t->scratch == 1 ? "event: endpoint\ndata: "
					      "http://evil.example/messages\n\n"
					    : "event: endpoint\ndata: "
					      "/messages?sessionId=s1\n\n");
		return;
	}
	if (strcmp(r->url, "/mcp") == 0) {
		tm_reply(c, 405, NULL, NULL, NULL);
		return;
	}
	tm_reply(c, 202, NULL, NULL, NULL);
	if (tm_body_has(r, "\"initialize\""))
		tm_write(t->stream,
			 "event: message\ndata: " TM_INIT_RESULT "\n\n");
	else if (tm_body_has(r, "tools/call"))
		tm_write(t->stream,
			 "event: message\ndata: " TM_ANSWER(2) "\n\n");
}

static void tm_legacy_flow(struct tmc *t)
{
	tm_send(t, TM_INIT, 1);
	tm_run_until(t, tm_msgs1, "the initialize answer");
	tm_send(t, TM_INITIALIZED, 0);
	tm_send(t, TM_CALL(2), 2);
	tm_run_until(t, tm_msgs2, "the call's answer");
	cr_assert_str_eq(t->log.data,
			 "0: " TM_INIT_RESULT "\n0: " TM_ANSWER(2) "\n");
	const struct tm_req *get = tm_nth(t, "GET", 0);
	cr_assert_str_eq(get->url, "/mcp");
	cr_assert(tm_has_header(get, "accept: text/event-stream\n"));
	cr_assert(tm_has_header(get, "authorization: Bearer s3cr3t\n"));
	int posts = 0;
	for (int i = 0; i < t->nreqs; i++) {
		const struct tm_req *r = &t->reqs[i];
		if (strcmp(r->url, "/messages?sessionId=s1") != 0)
			continue;
		cr_assert_str_eq(r->method, "POST");
		cr_assert(tm_has_header(r, "content-type: application/json\n"));
		cr_assert(tm_has_header(r, "authorization: Bearer s3cr3t\n"));
		cr_assert(!tm_has_header(r, "mcp-session-id"));
		cr_assert_str_eq(r->body, posts == 0   ? TM_INIT
					  : posts == 1 ? TM_INITIALIZED
						       : TM_CALL(2));
		posts++;
	}
	cr_assert_eq(posts, 3);
	cr_assert(t->heartbeats >= 1);
	cr_assert_eq(t->faults, 0);
	cr_assert_eq(t->nlost, 0);
	json_t *d = mcpc_describe(t->m, false);
	cr_assert_str_eq(json_string_value(json_object_get(d, "protocol")),
			 "sse");
	json_decref(d);
}

Test(mcpc_legacy, legacy_endpoint_flow)
{
	struct tmc t;
	tm_start(&t, MCPC_SSE, tm_script_legacy);
	tm_legacy_flow(&t);
	cr_assert_null(tm_nth(&t, "POST", 3));
	cr_assert_str_eq(tm_nth(&t, "POST", 0)->url, "/messages?sessionId=s1");
	tm_stop(&t);
}

Test(mcpc_legacy, auto_falls_back_to_legacy_on_405)
{
	struct tmc t;
	tm_start(&t, MCPC_AUTO, tm_script_legacy);
	tm_legacy_flow(&t);
	/* The first POST went to the URL and was answered 405; the
	 * initialize was sent again to the endpoint. */
	const struct tm_req *first = &t.reqs[0];
	cr_assert_str_eq(first->method, "POST");
	cr_assert_str_eq(first->url, "/mcp");
	cr_assert_str_eq(first->body, TM_INIT);
	tm_stop(&t);
}

Test(mcpc_legacy, legacy_endpoint_on_another_origin_is_refused)
{
	struct tmc t;
	tm_start(&t, MCPC_SSE, tm_script_legacy);
	t.scratch = 1;
	tm_send(&t, TM_INIT, 1);
	tm_run_until(&t, tm_faulted, "the fault");
	cr_assert_eq(t.fault, MCPC_FAULT_PROTOCOL);
	cr_assert_eq(t.nreqs, 1);
	cr_assert_null(strstr(t.fault_text, "evil"));
	tm_stop(&t);
}

static void tm_script_legacy_drop(struct tmc *t, struct tm_conn *c, int n,
				  const struct tm_req *r)
{
	tm_script_legacy(t, c, n, r);
	if (strcmp(r->method, "POST") == 0)
		tm_end(t->stream);
}

Test(mcpc_legacy, legacy_stream_dropping_is_closed)
{
	struct tmc t;
	tm_start(&t, MCPC_SSE, tm_script_legacy_drop);
	tm_send(&t, TM_INIT, 1);
	tm_run_until(&t, tm_faulted, "the fault");
	cr_assert_eq(t.fault, MCPC_FAULT_CLOSED);
	tm_stop(&t);
}

Test(mcpc_legacy, endpoint_urls_resolve_on_the_same_origin_only)
{
	const char *base = "http://Host.example:8080/a/b/sse?x=1";
	struct {
		const char *ref, *want;
	} cases[] = {
		{"/messages?s=1", "http://Host.example:8080/messages?s=1"},
		{"messages?s=1", "http://Host.example:8080/a/b/messages?s=1"},
		{"?s=2", "http://Host.example:8080/a/b/sse?s=2"},
		{"http://host.EXAMPLE:8080/m", "http://host.EXAMPLE:8080/m"},
		{"//Host.example:8080/m", "http://Host.example:8080/m"},
		{"http://host.example/m", NULL},
		{"https://host.example:8080/m", NULL},
		{"http://other.example:8080/m", NULL},
		{"http://user@host.example:8080/m", NULL},
		{"//evil.example/m", NULL},
		{"/m\r\nX: y", NULL},
		{"", NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *got = mc_url_resolve(base, cases[i].ref);
		if (cases[i].want)
			cr_assert_str_eq(got ? got : "(null)", cases[i].want,
					 "%s", cases[i].ref);
		else
			cr_assert_null(got, "%s -> %s", cases[i].ref, got);
		free(got);
	}
	char *d = mc_url_resolve("https://h.example/mcp",
				 "https://h.example:443/x");
	cr_assert_str_eq(d, "https://h.example:443/x");
	free(d);
}

/* The first POST answered 400 or 404 also means legacy in auto mode. */
static void tm_script_legacy_status(struct tmc *t, struct tm_conn *c, int n,
				    const struct tm_req *r)
{
	if (strcmp(r->method, "POST") == 0 && strcmp(r->url, "/mcp") == 0)
		tm_reply(c, t->scratch, NULL, "text/plain", "no");
	else
		tm_script_legacy(t, c, n, r);
}

Test(mcpc_legacy, auto_falls_back_on_400_and_404_too)
{
	int statuses[] = {400, 404};
	for (int i = 0; i < 2; i++) {
		struct tmc t;
		tm_start(&t, MCPC_AUTO, tm_script_legacy_status);
		t.scratch = statuses[i];
		tm_send(&t, TM_INIT, 1);
		tm_run_until(&t, tm_msgs1, "the initialize answer");
		cr_assert_str_eq(t.log.data, "0: " TM_INIT_RESULT "\n");
		cr_assert_eq(t.faults, 0);
		tm_stop(&t);
	}
}

Test(mcpc_legacy, streamable_mode_never_falls_back)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, tm_script_legacy);
	tm_send(&t, TM_INIT, 1);
	tm_run_until(&t, tm_lost, "the initialize lost");
	cr_assert_eq(t.lost_id, 1);
	cr_assert_null(tm_nth(&t, "GET", 0));
	tm_stop(&t);
}
