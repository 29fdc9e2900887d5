/*
 * A space's .mcp.json is read off the loop (spaces.c): an initialize with
 * a space whose read is slow leaves the loop running, sessions of one
 * space opened together share one read, an unchanged file is not read
 * again, an edit is, and a FIFO is refused without blocking.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "config/config.h"
#include "session/hub.h"
#include "session/session.h"
#include "session/spaces.h"
#include "trust/trust.h"

#define BOUND_MS 8000

static uv_loop_t loop;
static struct hub *hub;
static char space[64];

static atomic_int reads;
static atomic_int gate_closed; /* the hook waits while this is set */
static atomic_int in_read;

static void count_hook(const char *file)
{
	(void)file;
	atomic_fetch_add(&reads, 1);
	atomic_store(&in_read, 1);
	/* The slow filesystem: the read waits until the test opens it. */
	struct timespec ms = {0, 1000000};
	for (int i = 0; i < BOUND_MS && atomic_load(&gate_closed); i++)
		nanosleep(&ms, NULL);
}

static void write_space(const char *text)
{
	char *file;
	cr_assert_neq(asprintf(&file, "%s/.mcp.json", space), -1);
	FILE *f = fopen(file, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	free(file);
}

static void setup(void)
{
	strcpy(space, "/tmp/mcpv-spaces-XXXXXX");
	cr_assert_not_null(mkdtemp(space));
	write_space("{\"mcpServers\":{\"sp\":{\"command\":\"/bin/true\"}}}");
	atomic_store(&reads, 0);
	atomic_store(&gate_closed, 0);
	atomic_store(&in_read, 0);
	trust_space_read_hook = count_hook;
	uv_loop_init(&loop);
	const char *text = "{\"mcpServers\":{}}";
	hub = hub_new(&loop, config_parse(text, strlen(text), "/tmp/t.json"),
		      "/tmp", NULL, NULL);
}

static void teardown(void)
{
	trust_space_read_hook = NULL;
	hub_free(hub);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0);
	char *cmd;
	cr_assert_neq(asprintf(&cmd, "rm -rf '%s'", space), -1);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
}

struct opened {
	int done;
	struct session *s;
};

static void opened_cb(void *arg, json_t *result, struct session *s)
{
	struct opened *o = arg;
	cr_assert_not_null(result);
	json_decref(result);
	o->done++;
	o->s = s;
}

static json_t *params(void)
{
	return json_pack("{s:s,s:{},s:{s:s,s:s}}", "protocolVersion",
			 "2025-06-18", "capabilities", "clientInfo", "name",
			 "t", "version", "1");
}

static struct hub_init *open_async(struct opened *o)
{
	json_t *p = params();
	struct hub_init *hi = hub_initialize_async(hub, p, space, opened_cb, o);
	json_decref(p);
	return hi;
}

/* Runs the loop until *flag is set, bounded in real time. */
static void run_until(int *flag)
{
	uint64_t end = uv_hrtime() / 1000000 + BOUND_MS;
	while (!*flag && uv_hrtime() / 1000000 < end)
		uv_run(&loop, UV_RUN_ONCE);
	cr_assert(*flag, "not done in %d ms", BOUND_MS);
}

static void tick_cb(uv_timer_t *t)
{
	int *ticks = t->data;
	(*ticks)++;
}

static size_t nservers(struct session *s)
{
	size_t n;
	session_servers(s, &n);
	return n;
}

static bool has_server(struct session *s, const char *name)
{
	size_t n;
	const struct server_config *const *srv = session_servers(s, &n);
	for (size_t i = 0; i < n; i++)
		if (strcmp(srv[i]->name, name) == 0)
			return true;
	return false;
}

TestSuite(spaces, .init = setup, .fini = teardown);

Test(spaces, a_slow_read_does_not_stall_the_loop)
{
	atomic_store(&gate_closed, 1);
	struct opened o = {0};
	cr_assert_not_null(open_async(&o), "answered before the file was read");
	/* The loop goes on (timers fire, the hub serves) while the read
	 * waits on the slow filesystem. */
	int ticks = 0;
	uv_timer_t t;
	uv_timer_init(&loop, &t);
	t.data = &ticks;
	uv_timer_start(&t, tick_cb, 1, 1);
	uint64_t end = uv_hrtime() / 1000000 + BOUND_MS;
	while ((ticks < 20 || !atomic_load(&in_read)) &&
	       uv_hrtime() / 1000000 < end)
		uv_run(&loop, UV_RUN_ONCE);
	cr_assert_geq(ticks, 20);
	cr_assert(atomic_load(&in_read));
	cr_assert_eq(o.done, 0, "initialize answered before its read ended");
	cr_assert_eq(hub_session_count(hub), 0);
	atomic_store(&gate_closed, 0);
	run_until(&o.done);
	uv_close((uv_handle_t *)&t, NULL);
	cr_assert_eq(hub_session_count(hub), 1);
	/* Untrusted, but there: the space's server is resolved. */
	cr_assert_eq(nservers(o.s), 1);
}

Test(spaces, two_sessions_of_one_space_cause_one_read)
{
	/* A file changed within a timestamp tick of its read is read again
	 * (racy); this one is older than that when first read. */
	struct timespec old = {0, 120 * 1000000};
	nanosleep(&old, NULL);
	atomic_store(&gate_closed, 1);
	struct opened a = {0}, b = {0};
	cr_assert_not_null(open_async(&a));
	cr_assert_not_null(open_async(&b));
	atomic_store(&gate_closed, 0);
	run_until(&a.done);
	run_until(&b.done);
	cr_assert_eq(atomic_load(&reads), 1);
	cr_assert_eq(nservers(a.s), 1);
	cr_assert_eq(nservers(b.s), 1);
	/* A third, later: one stat finds the file unchanged, no read. */
	struct opened c = {0};
	open_async(&c);
	run_until(&c.done);
	cr_assert_eq(atomic_load(&reads), 1);
	cr_assert_eq(nservers(c.s), 1);
	/* An edit (same size, new mtime/ctime) is read. */
	write_space("{\"mcpServers\":{\"sq\":{\"command\":\"/bin/true\"}}}");
	struct opened d = {0};
	open_async(&d);
	run_until(&d.done);
	cr_assert_eq(atomic_load(&reads), 2);
	cr_assert(has_server(d.s, "sq"));
}

Test(spaces, a_cancelled_wait_never_answers)
{
	atomic_store(&gate_closed, 1);
	struct opened o = {0}, p = {0};
	struct hub_init *hi = open_async(&o);
	cr_assert_not_null(hi);
	open_async(&p);
	hub_initialize_cancel(hi);
	atomic_store(&gate_closed, 0);
	run_until(&p.done);
	cr_assert_eq(o.done, 0);
	cr_assert_eq(hub_session_count(hub), 1);
}

Test(spaces, a_fifo_is_refused_without_blocking)
{
	char *file;
	cr_assert_neq(asprintf(&file, "%s/.mcp.json", space), -1);
	cr_assert_eq(unlink(file), 0);
	cr_assert_eq(mkfifo(file, 0600), 0);
	struct trust_space *ts = trust_space_read(NULL, file, NULL);
	cr_assert_eq(ts->err, -EINVAL);
	cr_assert_not_null(strstr(ts->msg, "not a regular file"), "%s",
			   ts->msg);
	struct config *cfg = trust_space_config(ts, NULL);
	cr_assert_not_null(cfg);
	cr_assert_not_null(cfg->fatal);
	config_free(cfg);
	trust_space_unref(ts);
	/* Through the hub: the session opens without the space's file. */
	struct opened o = {0};
	open_async(&o);
	run_until(&o.done);
	cr_assert_eq(nservers(o.s), 0);
	free(file);
}

Test(spaces, a_missing_file_is_no_space_config)
{
	char *file;
	cr_assert_neq(asprintf(&file, "%s/.mcp.json", space), -1);
	cr_assert_eq(unlink(file), 0);
	free(file);
	struct opened o = {0};
	open_async(&o);
	run_until(&o.done);
	cr_assert_eq(nservers(o.s), 0);
	cr_assert_eq(atomic_load(&reads), 0);
}

Test(spaces, a_reload_reads_each_space_once_off_the_loop)
{
	struct opened a = {0}, b = {0};
	open_async(&a);
	open_async(&b);
	run_until(&a.done);
	run_until(&b.done);
	int before = atomic_load(&reads);
	write_space("{\"mcpServers\":{\"sq\":{\"command\":\"/bin/true\"}}}");
	atomic_store(&gate_closed, 1);
	const char *text = "{\"mcpServers\":{}}";
	hub_reload(hub, config_parse(text, strlen(text), "/tmp/t.json"));
	/* The reload returned with the read still waiting: nothing changed
	 * yet, and the loop is free. */
	cr_assert(has_server(a.s, "sp"));
	atomic_store(&gate_closed, 0);
	uint64_t end = uv_hrtime() / 1000000 + BOUND_MS;
	while (!(has_server(a.s, "sq") && has_server(b.s, "sq")) &&
	       uv_hrtime() / 1000000 < end)
		uv_run(&loop, UV_RUN_ONCE);
	cr_assert(has_server(a.s, "sq") && has_server(b.s, "sq"));
	cr_assert_eq(atomic_load(&reads), before + 1, "one read for the space");
}

/* With spaces_watch: an edit that changes the file reaches on_change once;
 * a write of the same bytes is read again but changes nothing. */
static int changes;

static void changed_cb(void *arg, const char *dir, struct trust_space *ts)
{
	(void)arg;
	cr_assert_str_eq(dir, space);
	cr_assert_not_null(ts);
	changes++;
}

/* Runs the loop until reads reaches n (bounded), then one quiet period
 * more so a late callback would be seen. */
static void run_until_reads(int n)
{
	uint64_t end = uv_hrtime() / 1000000 + BOUND_MS;
	while (atomic_load(&reads) < n && uv_hrtime() / 1000000 < end)
		uv_run(&loop, UV_RUN_ONCE);
	cr_assert_geq(atomic_load(&reads), n, "no read in %d ms", BOUND_MS);
	int ticks = 0;
	uv_timer_t t;
	uv_timer_init(&loop, &t);
	t.data = &ticks;
	uv_timer_start(&t, tick_cb, 300, 0);
	while (ticks == 0)
		uv_run(&loop, UV_RUN_ONCE);
	/* t is on this stack: closed before it goes. */
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(&loop, UV_RUN_NOWAIT);
}

Test(spaces, a_watched_space_reports_changes_not_rewrites)
{
	changes = 0;
	spaces_watch(hub_spaces(hub), changed_cb, NULL);
	struct opened o = {0};
	open_async(&o);
	run_until(&o.done);
	int r0 = atomic_load(&reads);
	/* The same bytes: a new identity, so read again, and equal. */
	write_space("{\"mcpServers\":{\"sp\":{\"command\":\"/bin/true\"}}}");
	run_until_reads(r0 + 1);
	cr_assert_eq(changes, 0, "a rewrite of the same content changed it");
	/* Another content: one change. */
	write_space("{\"mcpServers\":{\"sq\":{\"command\":\"/bin/true\"}}}");
	run_until_reads(atomic_load(&reads) + 1);
	cr_assert_eq(changes, 1);
}

/* An edit first read by a session opened since (before the watch's burst
 * is due) still reaches the sessions opened before it. */
Test(spaces, an_edit_read_first_by_a_new_session_still_reaches_the_older)
{
	changes = 0;
	spaces_watch(hub_spaces(hub), changed_cb, NULL);
	struct opened a = {0};
	open_async(&a);
	run_until(&a.done);
	int r0 = atomic_load(&reads);
	write_space("{\"mcpServers\":{\"sq\":{\"command\":\"/bin/true\"}}}");
	struct opened b = {0};
	open_async(&b);
	run_until(&b.done);
	cr_assert(has_server(b.s, "sq"), "the new session reads the edit");
	/* Then the watch's own read: the change goes to the sessions. */
	run_until_reads(r0 + 2);
	cr_assert_eq(changes, 1);
}
