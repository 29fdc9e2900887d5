/*
 * A hub over the demo fixture server for the session room's unit tests:
 * a fake clock, sessions opened with chosen capabilities, requests sent
 * through capturing exchanges, and a loop run until a condition holds
 * (bounded in real time). Included by test_hub.c and test_calls.c; and,
 * with a hub of no servers on the real clock (fx_setup_bare), by
 * test_session.c and test_streams.c.
 */
#ifndef MCPV_TEST_HUB_FIXTURE_H
#define MCPV_TEST_HUB_FIXTURE_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "config/config.h"
#include "jsonrpc/jsonrpc.h"
#include "session/exchange.h"
#include "session/hub.h"
#include "session/session.h"
#include "util/clock.h"

#define FX_BOUND_MS 8000

struct fx_capture {
	json_t *msgs;
	int finished;
};

static uint64_t fx_now;
static uv_loop_t fx_loop;
static struct hub *fx_hub;

static uint64_t fx_clock(void)
{
	return fx_now;
}

static void fx_deliver(void *ctx, json_t *msg, const char *id, const char *data,
		       size_t len)
{
	struct fx_capture *c = ctx;
	if (msg)
		json_array_append(c->msgs, msg);
	else
		json_array_append_new(c->msgs, json_loadb(data, len, 0, NULL));
}

static void fx_finish(void *ctx)
{
	((struct fx_capture *)ctx)->finished++;
}

static const struct exchange_ops fx_ops = {.deliver = fx_deliver,
					   .finish = fx_finish};

/* fx_hub over the configuration text; on the fake clock if fake. */
static inline void fx_hub_open(const char *text, bool fake)
{
	struct config *cfg =
		config_parse(text, strlen(text), "/tmp/hub-test.json");
	cr_assert_null(cfg->fatal);
	if (fake) {
		fx_now = 1000000;
		clock_set_source(fx_clock);
	}
	uv_loop_init(&fx_loop);
	fx_hub = hub_new(&fx_loop, cfg, "/tmp", NULL, NULL);
}

/* The demo server to run: DEMO_SERVER_BIN, else the sanitizer build's
 * (the tests run from the repository's top). Owned by the fixture. */
static inline const char *fx_demo_bin(void)
{
	static char path[4200];
	const char *bin = getenv("DEMO_SERVER_BIN");
	if (bin)
		return bin;
	char cwd[4096];
	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	snprintf(path, sizeof path, "%s/build/san/demo-server", cwd);
	return path;
}

/* A hub serving the demo server twice: "demo" per session, "shared" for
 * every session (app scope). */
static inline void fx_setup(void)
{
	const char *bin = fx_demo_bin();
	char *text;
	if (asprintf(&text,
		     "{\"mcpServers\":{\"demo\":{\"command\":\"%s\"},"
		     "\"shared\":{\"command\":\"%s\",\"scope\":\"app\"}}}",
		     bin, bin) < 0)
		abort();
	fx_hub_open(text, true);
	free(text);
}

/* The initialize result (owned) of a new session (in *out) whose client
 * declares caps (JSON text, or NULL) and asks for protocol version. */
static inline json_t *fx_initialize(const char *caps, const char *version,
				    struct session **out)
{
	json_t *c = caps ? json_loads(caps, 0, NULL) : json_object();
	json_t *params = json_pack("{s:s,s:o,s:{s:s,s:s}}", "protocolVersion",
				   version, "capabilities", c, "clientInfo",
				   "name", "t", "version", "1");
	*out = NULL;
	json_t *r = hub_initialize(fx_hub, params, NULL, out);
	json_decref(params);
	return r;
}

/* A hub with no servers, on the real clock, and one session (fx_sess) on
 * 2025-06-18: dispatch and streams that start nothing. */
static struct session *fx_sess;

static inline void fx_setup_bare(void)
{
	fx_hub_open("{\"mcpServers\":{}}", false);
	json_t *result = fx_initialize(NULL, "2025-06-18", &fx_sess);
	cr_assert_str_eq(
		json_string_value(json_object_get(result, "protocolVersion")),
		"2025-06-18");
	json_decref(result);
}

static inline void fx_teardown(void)
{
	hub_free(fx_hub);
	uv_run(&fx_loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&fx_loop), 0, "every handle closed");
	clock_set_source(NULL);
}

/* A new session whose client declares caps (JSON text, or NULL). */
static inline struct session *fx_open(const char *caps)
{
	struct session *s;
	json_t *r = fx_initialize(caps, "2025-11-25", &s);
	if (r == NULL)
		return NULL;
	json_decref(r);
	cr_assert_not_null(s);
	return s;
}

static void fx_tick_cb(uv_timer_t *t)
{
	(void)t;
}

/* Runs the loop until cond(arg) or FX_BOUND_MS of real time. */
static inline bool fx_run_until(bool (*cond)(void *), void *arg)
{
	uv_update_time(&fx_loop);
	uint64_t until = uv_now(&fx_loop) + FX_BOUND_MS;
	uv_timer_t guard;
	uv_timer_init(&fx_loop, &guard);
	uv_timer_start(&guard, fx_tick_cb, 10, 10);
	while (!cond(arg) && uv_now(&fx_loop) < until)
		uv_run(&fx_loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&guard, NULL);
	uv_run(&fx_loop, UV_RUN_NOWAIT);
	return cond(arg);
}

/* One request in flight through a capturing exchange. */
struct fx_req {
	struct fx_capture cap;
	struct exchange *ex;
};

static inline struct fx_req *fx_send(struct session *s, const char *text)
{
	struct fx_req *r = calloc(1, sizeof *r);
	r->cap.msgs = json_array();
	r->ex = exchange_new(&fx_ops, &r->cap, 1);
	json_error_t jerr;
	json_t *msg = json_loads(text, 0, &jerr);
	cr_assert_not_null(msg, "%s: %s", text, jerr.text);
	session_handle(s, msg, r->ex);
	json_decref(msg);
	return r;
}

static inline bool fx_answered(void *arg)
{
	return ((struct fx_req *)arg)->cap.finished > 0;
}

/* The response (the message with an id and no method), borrowed. */
static inline json_t *fx_response(struct fx_req *r)
{
	size_t i;
	json_t *m;
	json_array_foreach(r->cap.msgs, i, m)
	{
		if (json_object_get(m, "method") == NULL &&
		    json_object_get(m, "id"))
			return m;
	}
	return NULL;
}

/* The first request from a server in r's stream, borrowed, or NULL. */
static inline json_t *fx_server_request(struct fx_req *r)
{
	size_t i;
	json_t *m;
	json_array_foreach(r->cap.msgs, i, m)
	{
		if (json_object_get(m, "method") && json_object_get(m, "id"))
			return m;
	}
	return NULL;
}

static inline void fx_req_free(struct fx_req *r)
{
	if (r == NULL)
		return;
	exchange_unref(r->ex);
	json_decref(r->cap.msgs);
	free(r);
}

/* The text of a tool result's first content item, borrowed. */
static inline const char *fx_text(json_t *resp)
{
	json_t *content =
		json_object_get(json_object_get(resp, "result"), "content");
	return json_string_value(
		json_object_get(json_array_get(content, 0), "text"));
}

#endif
