/*
 * The MCP client session's bounds, against the scripted server: sends are
 * refused with -ENOBUFS past MCPC_MAX_WAITING and on_drain follows once
 * the server takes them; a paused session delivers nothing until it
 * resumes; answers that come at once on many streams, more than
 * MCPC_MAX_PARTIAL together, are all delivered whole (one at a time).
 */
#define TM_MAX_REQS 1024
#define TM_MAX_CONNS 1024
#include "mcpc_fixture.h"

static bool release; /* held calls end (their connection closes) */

static void bs_plain(struct tmc *t, struct tm_conn *c, const struct tm_req *r)
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
}

/* Calls are held without a head (a server that answers when done). */
static void bs_hold(struct tmc *t, struct tm_conn *c, int n,
		    const struct tm_req *r)
{
	if (!tm_body_has(r, "tools/call"))
		bs_plain(t, c, r);
	else if (release)
		tm_close(c);
}

static void bs_initialize(struct tmc *t)
{
	tm_send(t, TM_INIT, 1);
	tm_run_until(t, tm_msgs1, "the initialize answer");
	tm_send(t, TM_INITIALIZED, 0);
}

static bool bs_drained(struct tmc *t)
{
	return t->drains > 0;
}

Test(mcpc_bounds, sends_past_the_bound_are_refused_then_drained)
{
	struct tmc t;
	release = false;
	tm_start(&t, MCPC_STREAMABLE, bs_hold);
	bs_initialize(&t);
	char msg[128];
	int ok = 0, refused = 0;
	for (int i = 0; i < MCPC_MAX_WAITING + 10; i++) {
		snprintf(msg, sizeof msg,
			 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":"
			 "\"tools/call\",\"params\":{\"name\":\"echo\"}}",
			 i + 10);
		int rc = mcpc_send(t.m, msg, strlen(msg), i + 10);
		if (rc == 0)
			ok++;
		else if (rc == -ENOBUFS)
			refused++;
	}
	cr_assert_leq(ok, MCPC_MAX_WAITING);
	cr_assert_geq(ok, MCPC_MAX_WAITING - 2, "ok %d", ok);
	cr_assert_eq(refused, MCPC_MAX_WAITING + 10 - ok);
	cr_assert_eq(t.drains, 0);
	/* The server takes them (it hangs up on each): the room comes back. */
	release = true;
	for (int i = 0; i < t.nconns; i++)
		tm_close(t.conns[i]);
	tm_run_until(&t, bs_drained, "on_drain");
	cr_assert_eq(t.drains, 1);
	tm_stop(&t);
}

/* A call whose answer the server writes at once. */
static void bs_answer(struct tmc *t, struct tm_conn *c, int n,
		      const struct tm_req *r)
{
	if (!tm_body_has(r, "tools/call")) {
		bs_plain(t, c, r);
		return;
	}
	tm_sse(c, NULL);
	tm_write(c, "data: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\n");
}

static bool bs_server_wrote(struct tmc *t)
{
	return t->nreqs >= 4 && tm_nth(t, "POST", 2) != NULL;
}

Test(mcpc_bounds, a_paused_session_delivers_nothing_until_resumed)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, bs_answer);
	bs_initialize(&t);
	int before = t.nmsgs;
	mcpc_pause(t.m, true);
	tm_send(&t, TM_CALL(5), 5);
	tm_run_until(&t, bs_server_wrote, "the call at the server");
	for (int i = 0; i < 200; i++)
		uv_run(&t.loop, UV_RUN_NOWAIT);
	cr_assert_eq(t.nmsgs, before, "delivered while paused");
	mcpc_pause(t.m, false);
	tm_run_until(&t, tm_msgs2, "the message after resuming");
	cr_assert_eq(t.nmsgs, before + 1);
	tm_stop(&t);
}

/* Three answers of 3 MiB each written at once, on three streams. */
#define BS_BIG (3 * 1024 * 1024)
static char *bs_big_event(int id)
{
	struct buf b;
	buf_init(&b);
	buf_printf(&b,
		   "data: {\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"t\":\"",
		   id);
	buf_reserve(&b, BS_BIG + 64);
	memset(b.data + b.len, 'a', BS_BIG);
	b.len += BS_BIG;
	buf_puts(&b, "\"}}\n\n");
	return b.data;
}

static void bs_big(struct tmc *t, struct tm_conn *c, int n,
		   const struct tm_req *r)
{
	if (!tm_body_has(r, "tools/call")) {
		bs_plain(t, c, r);
		return;
	}
	int id = strstr(r->body, "\"id\":21")	? 21
		 : strstr(r->body, "\"id\":22") ? 22
						: 23;
	tm_sse(c, NULL);
	char *ev = bs_big_event(id);
	tm_write(c, ev);
	free(ev);
}

static bool bs_three(struct tmc *t)
{
	return t->nmsgs >= 4;
}

Test(mcpc_bounds, answers_past_the_partial_bound_all_come_whole)
{
	struct tmc t;
	tm_start(&t, MCPC_STREAMABLE, bs_big);
	bs_initialize(&t);
	tm_send(&t, TM_CALL(21), 21);
	tm_send(&t, TM_CALL(22), 22);
	tm_send(&t, TM_CALL(23), 23);
	tm_run_until(&t, bs_three, "three answers");
	cr_assert_eq(t.nmsgs, 4);
	cr_assert_eq(t.nlost, 0);
	cr_assert_eq(t.faults, 0);
	tm_stop(&t);
}
