/*
 * The hub's figures: calls and their latency counted where calls end (on
 * the fake clock, so a latency is exact), errors when the server could not
 * finish a call, restarts of an instance, each server's state, scope,
 * instances and sessions, and memory of its processes read off the loop.
 * Real loop, the demo fixture server.
 */
#include "hub_fixture.h"
#include "session/hub_int.h"

static void setup(void)
{
	const char *bin = getenv("DEMO_SERVER_BIN");
	char cwd[4096], path[4200];
	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	snprintf(path, sizeof path, "%s/build/san/demo-server", cwd);
	const char *demo = bin ? bin : path;
	char *text;
	if (asprintf(&text,
		     "{\"mcpServers\":{\"demo\":{\"command\":\"%s\"},"
		     "\"shared\":{\"command\":\"%s\",\"scope\":\"app\"},"
		     "\"crashy\":{\"command\":\"%s\",\"scope\":\"app\","
		     "\"args\":[\"--die-in-call\",\"echo\"]}}}",
		     demo, demo, demo) < 0)
		abort();
	fx_hub_open(text, true);
	free(text);
}

TestSuite(hub_metrics, .init = setup, .fini = fx_teardown, .timeout = 30);

static struct fx_req *call(struct session *s, const char *tool)
{
	char *t;
	if (asprintf(&t,
		     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
		     "\"params\":{\"name\":\"%s\",\"arguments\":{\"text\":"
		     "\"hi\"}}}",
		     tool) < 0)
		abort();
	struct fx_req *r = fx_send(s, t);
	free(t);
	return r;
}

static void call_and_wait(struct session *s, const char *tool)
{
	struct fx_req *r = call(s, tool);
	cr_assert(fx_run_until(fx_answered, r), "%s answered", tool);
	fx_req_free(r);
}

/* The server named name in the figures, borrowed. */
static json_t *server_of(json_t *fig, const char *name)
{
	size_t i;
	json_t *sv;
	json_array_foreach(json_object_get(fig, "servers"), i, sv)
	{
		if (strcmp(json_string_value(json_object_get(sv, "name")),
			   name) == 0)
			return sv;
	}
	cr_assert_fail("no server %s", name);
	return NULL;
}

static long long int_of(json_t *sv, const char *key)
{
	return (long long)json_integer_value(json_object_get(sv, key));
}

Test(hub_metrics, calls_latency_state_and_sessions)
{
	struct session *a = fx_open(NULL);
	struct session *b = fx_open(NULL);
	json_t *fig = hub_metrics(fx_hub, NULL, 0);
	json_t *sv = server_of(fig, "shared");
	cr_assert_str_eq(json_string_value(json_object_get(sv, "state")),
			 "not running");
	cr_assert_str_eq(json_string_value(json_object_get(sv, "scope")),
			 "app");
	cr_assert_eq(int_of(sv, "calls"), 0);
	cr_assert_null(json_object_get(sv, "p50Ms"));
	json_decref(fig);

	call_and_wait(a, "shared__echo"); /* starts it: latency 0 */
	/* The second call takes 5 ms of the fake clock. */
	struct fx_req *r = call(b, "shared__echo");
	fx_now += 5;
	cr_assert(fx_run_until(fx_answered, r));
	cr_assert_null(json_object_get(fx_response(r), "error"));
	fx_req_free(r);
	call_and_wait(a, "demo__echo");

	fig = hub_metrics(fx_hub, NULL, 0);
	sv = server_of(fig, "shared");
	cr_assert_eq(int_of(sv, "calls"), 2);
	cr_assert_eq(int_of(sv, "errors"), 0);
	cr_assert_eq(int_of(sv, "inflight"), 0);
	cr_assert_eq(int_of(sv, "instances"), 1);
	cr_assert_eq(int_of(sv, "sessions"), 2, "both sessions use it");
	cr_assert_str_eq(json_string_value(json_object_get(sv, "state")),
			 "idle");
	/* 0 and 5000 us: bins [0, 2) and [4096, 6144), at their middles. */
	cr_assert_float_eq(json_real_value(json_object_get(sv, "p50Ms")), 0.001,
			   1e-9);
	cr_assert_float_eq(json_real_value(json_object_get(sv, "p99Ms")), 5.12,
			   1e-9);
	cr_assert_float_eq(
		json_real_value(json_object_get(sv, "latencySeconds")), 0.005,
		1e-12);
	json_t *demo = server_of(fig, "demo");
	cr_assert_str_eq(json_string_value(json_object_get(demo, "scope")),
			 "session");
	cr_assert_eq(int_of(demo, "calls"), 1);
	cr_assert_eq(int_of(demo, "sessions"), 1);
	cr_assert_eq(int_of(json_object_get(fig, "runtime"), "sessions"), 2);
	json_decref(fig);
	/* A second later the last ten whole seconds hold three calls. */
	fx_now += 1000;
	fig = hub_metrics(fx_hub, NULL, 0);
	cr_assert_float_eq(json_real_value(json_object_get(
				   server_of(fig, "shared"), "callsPerSecond")),
			   0.2, 1e-9);
	json_decref(fig);
}

static bool running(void *arg)
{
	json_t *fig = hub_metrics(fx_hub, NULL, 0);
	const char *st = json_string_value(
		json_object_get(server_of(fig, arg), "state"));
	bool up = strcmp(st, "idle") == 0 || strcmp(st, "running") == 0;
	json_decref(fig);
	return up;
}

/* A call lost with its server is an error; the next call starts the
 * server again, a restart; so does an explicit restart. */
Test(hub_metrics, errors_and_restarts)
{
	struct session *s = fx_open(NULL);
	struct fx_req *r = call(s, "crashy__echo");
	cr_assert(fx_run_until(fx_answered, r));
	cr_assert_not_null(json_object_get(fx_response(r), "error"),
			   "the server died in the call");
	fx_req_free(r);
	json_t *fig = hub_metrics(fx_hub, NULL, 0);
	json_t *sv = server_of(fig, "crashy");
	cr_assert_eq(int_of(sv, "calls"), 1);
	cr_assert_eq(int_of(sv, "errors"), 1);
	cr_assert_eq(int_of(sv, "restarts"), 0);
	json_decref(fig);

	call_and_wait(s, "shared__echo");
	char *msg = NULL;
	cr_assert_eq(hub_restart_server(fx_hub, "shared", true, &msg), 0);
	free(msg);
	cr_assert(fx_run_until(running, "shared"));
	fig = hub_metrics(fx_hub, NULL, 0);
	sv = server_of(fig, "shared");
	cr_assert_eq(int_of(sv, "restarts"), 1);
	cr_assert_eq(int_of(sv, "errors"), 0);
	json_decref(fig);
	/* A server stopped on purpose says so. */
	cr_assert_eq(hub_stop_server(fx_hub, "shared", true, &msg), 0);
	free(msg);
	fig = hub_metrics(fx_hub, NULL, 0);
	cr_assert_str_eq(json_string_value(json_object_get(
				 server_of(fig, "shared"), "state")),
			 "stopped");
	json_decref(fig);
}

struct got {
	json_t *fig;
};

static void got_cb(void *arg, json_t *fig)
{
	((struct got *)arg)->fig = json_incref(fig);
}

static bool got_it(void *arg)
{
	return ((struct got *)arg)->fig != NULL;
}

static bool no_reads(void *arg)
{
	return fx_hub->metrics_reqs == NULL;
}

/* Memory is read from /proc by a thread-pool job: the processes a
 * server's instance owns, and the runtime's own. A cancelled read calls
 * nobody back. */
Test(hub_metrics, memory_of_owned_processes)
{
	struct session *s = fx_open(NULL);
	call_and_wait(s, "shared__echo");
	struct got g = {0}, dropped = {0};
	struct hub_metrics_req *r = hub_metrics_async(fx_hub, got_cb, &g);
	cr_assert_not_null(r);
	struct hub_metrics_req *c = hub_metrics_async(fx_hub, got_cb, &dropped);
	hub_metrics_cancel(c);
	cr_assert(fx_run_until(got_it, &g));
	json_t *sv = server_of(g.fig, "shared");
	cr_assert_gt(int_of(sv, "rssBytes"), 100 * 1024,
		     "the demo server's memory");
	cr_assert_eq(int_of(server_of(g.fig, "crashy"), "rssBytes"), 0,
		     "never started");
	cr_assert_gt(int_of(json_object_get(g.fig, "runtime"), "rssBytes"),
		     1024 * 1024);
	json_decref(g.fig);
	/* The cancelled one ends without a call. */
	cr_assert(fx_run_until(no_reads, NULL));
	cr_assert_null(dropped.fig);
}

/* A read under way when the hub goes ends quietly. */
Test(hub_metrics, hub_freed_with_a_read_under_way)
{
	struct got g = {0};
	cr_assert_not_null(hub_metrics_async(fx_hub, got_cb, &g));
	hub_free(fx_hub);
	fx_hub = NULL;
	uv_run(&fx_loop, UV_RUN_DEFAULT);
	cr_assert_null(g.fig);
}
