/* The instance against a hostile server (fake transport, fake clock): a
 * burst of list_changed costs two fetches, a list is bounded across its
 * pages and fails alone, an answer no JSON parser takes fails its request
 * at once, and the warnings about what a server sends are capped. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "instance_fixture.h"
#include "util/buf.h"

static struct instance *make_ready_tools(void)
{
	struct instance *inst = make(0);
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	handshake_tools(conns[0]);
	cr_assert_eq(instance_state(inst), INSTANCE_STARTING);
	answer_tools(conns[0], "t", 1, NULL);
	cr_assert_eq(err, 0);
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	return inst;
}

#define TOOLS_CHANGED                                                          \
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/"               \
	"list_changed\"}"

Test(instance_hostile, a_burst_of_list_changed_costs_two_fetches)
{
	struct instance *inst = make_ready_tools();
	cr_assert_eq(sent_count(conns[0], "tools/list"), 1);
	/* Today each one started its own fetch (20,000 in a burst grew the
	 * runtime by 265 MB). */
	for (int i = 0; i < 1000; i++)
		serve(conns[0], TOOLS_CHANGED);
	cr_assert_eq(sent_count(conns[0], "tools/list"), 2,
		     "one fetch in flight, the rest folded into one more");
	answer_tools(conns[0], "u", 2, NULL);
	cr_assert_eq(sent_count(conns[0], "tools/list"), 3);
	cr_assert_eq(json_array_size(instance_list(inst, INSTANCE_TOOLS)), 2);
	answer_tools(conns[0], "v", 3, NULL);
	/* Nothing came meanwhile: no fourth. */
	cr_assert_eq(sent_count(conns[0], "tools/list"), 3);
	cr_assert_eq(json_array_size(instance_list(inst, INSTANCE_TOOLS)), 3);
	/* The server's notices are the instance's own, not its clients'. */
	cr_assert_eq(nserver_notes, 0);
	finish(inst);
}

Test(instance_hostile, list_changed_while_the_first_lists_come_fetches_again)
{
	struct instance *inst = make(0);
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	handshake_tools(conns[0]);
	for (int i = 0; i < 50; i++)
		serve(conns[0], TOOLS_CHANGED);
	cr_assert_eq(sent_count(conns[0], "tools/list"), 1);
	answer_tools(conns[0], "old", 1, NULL);
	cr_assert_eq(err, 0);
	/* Ready with the first answer, and fetching the fresher one. */
	cr_assert_eq(sent_count(conns[0], "tools/list"), 2);
	answer_tools(conns[0], "new", 4, NULL);
	cr_assert_eq(json_array_size(instance_list(inst, INSTANCE_TOOLS)), 4);
	finish(inst);
}

/* A tools/list page of about `size` bytes: one tool with a long
 * description. */
static void answer_big_page(struct fake_conn *c, int n, size_t size)
{
	int64_t id;
	cr_assert(sent_method(c, "tools/list", &id));
	char *desc = malloc(size + 1);
	memset(desc, 'x', size);
	desc[size] = '\0';
	struct buf b;
	buf_init(&b);
	buf_printf(&b,
		   "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{"
		   "\"nextCursor\":\"p%d\",\"tools\":[{\"name\":\"big%d\","
		   "\"description\":\"",
		   (long long)id, n, n);
	buf_puts(&b, desc);
	buf_puts(&b, "\",\"inputSchema\":{}}]}}");
	serve(c, b.data);
	buf_free(&b);
	free(desc);
}

Test(instance_hostile, a_list_past_its_total_bytes_fails_alone)
{
	struct instance *inst = make_ready_tools();
	serve(conns[0], TOOLS_CHANGED);
	/* Pages of 1 MiB each, with no end: past 16 MiB in all, the list
	 * fails and no further page is asked for. */
	int pages = 0;
	while (sent_count(conns[0], "tools/list") == pages + 2) {
		cr_assert_lt(pages, 30, "still fetching after %d pages", pages);
		answer_big_page(conns[0], pages, 1024 * 1024 - 256);
		pages++;
	}
	cr_assert_eq(pages, 16 + 1, "pages fetched: %d", pages);
	const char *why = instance_list_error(inst, INSTANCE_TOOLS);
	cr_assert_not_null(why);
	cr_assert_not_null(strstr(why, "more than 16 MiB"), "%s", why);
	cr_assert(instance_lists_failed(inst));
	/* That list offers nothing; the server still runs. */
	cr_assert_eq(json_array_size(instance_list(inst, INSTANCE_TOOLS)), 0);
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	json_t *d = instance_describe(inst, false);
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(d, "listErrors"), "tools")),
			 why);
	json_decref(d);
	/* A later good list clears it. */
	serve(conns[0], TOOLS_CHANGED);
	answer_tools(conns[0], "ok", 2, NULL);
	cr_assert_null(instance_list_error(inst, INSTANCE_TOOLS));
	cr_assert_eq(json_array_size(instance_list(inst, INSTANCE_TOOLS)), 2);
	finish(inst);
}

Test(instance_hostile, a_list_past_its_items_fails_and_a_start_still_ends)
{
	struct instance *inst = make(0);
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	handshake_tools(conns[0]);
	answer_tools(conns[0], "a", 6000, "more");
	answer_tools(conns[0], "b", 6000, NULL);
	cr_assert_eq(err, 0, "the start ends: the list failed, not the server");
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	const char *why = instance_list_error(inst, INSTANCE_TOOLS);
	cr_assert_not_null(why);
	cr_assert_not_null(strstr(why, "more than 10000 items"), "%s", why);
	finish(inst);
}

Test(instance_hostile, an_unreadable_answer_fails_its_request_at_once)
{
	struct instance *inst = make_ready(0);
	struct got g = {0};
	int64_t id = call_tool(inst, "x", &g);
	char line[256];
	/* A number no double holds: JSON by its grammar, refused by the
	 * parser. */
	snprintf(line, sizeof line,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"content\":[],"
		 "\"n\":1e999999}}",
		 (long long)id);
	serve(conns[0], line);
	cr_assert_eq(g.calls, 1, "answered at once, not after a timeout");
	cr_assert(g.sent);
	cr_assert_not_null(strstr(got_message(&g), "not JSON that can be read"),
			   "%s", got_message(&g));
	cr_assert_not_null(strstr(got_message(&g), "the request ran"));
	/* Bytes that are not UTF-8, the id written last. */
	struct got g2 = {0};
	int64_t id2 = call_tool(inst, "y", &g2);
	snprintf(line, sizeof line,
		 "{\"jsonrpc\":\"2.0\",\"result\":{\"text\":\"\xff\xfe\"},"
		 "\"id\":%lld}",
		 (long long)id2);
	serve(conns[0], line);
	cr_assert_eq(g2.calls, 1);
	/* Broken syntax that still names its id first. */
	struct got g3 = {0};
	int64_t id3 = call_tool(inst, "z", &g3);
	snprintf(line, sizeof line,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"a\":[1,}}",
		 (long long)id3);
	serve(conns[0], line);
	cr_assert_eq(g3.calls, 1);
	cr_assert_eq(instance_inflight(inst), 0);
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	finish(inst);
}

Test(instance_hostile, a_line_that_names_nothing_fails_nothing)
{
	struct instance *inst = make_ready(0);
	struct got g = {0};
	call_tool(inst, "x", &g);
	serve(conns[0], "{\"log\": \"a stray line on stdout\", \"n\": 1e999}");
	serve(conns[0], "{\"jsonrpc\":\"2.0\",\"id\":987654,\"result\":1e999}");
	cr_assert_eq(g.calls, 0);
	cr_assert_eq(instance_inflight(inst), 1);
	finish(inst);
}

Test(instance_hostile, an_answer_that_is_not_json_rpc_fails_its_request)
{
	struct instance *inst = make_ready(0);
	struct got g = {0};
	int64_t id = call_tool(inst, "x", &g);
	char line[128];
	snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld}",
		 (long long)id);
	serve(conns[0], line);
	cr_assert_eq(g.calls, 1);
	cr_assert_not_null(strstr(got_message(&g), "not a valid JSON-RPC"),
			   "%s", got_message(&g));
	finish(inst);
}

Test(instance_hostile, an_unreadable_list_fails_that_list_not_the_start)
{
	struct instance *inst = make(0);
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	handshake_tools(conns[0]);
	int64_t id;
	cr_assert(sent_method(conns[0], "tools/list", &id));
	char line[256];
	snprintf(line, sizeof line,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"tools\":[{"
		 "\"name\":\"t\",\"x\":1e999999}]}}",
		 (long long)id);
	serve(conns[0], line);
	/* Ready now, not at the startup timeout. */
	cr_assert_eq(err, 0);
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	const char *why = instance_list_error(inst, INSTANCE_TOOLS);
	cr_assert_not_null(why);
	cr_assert_not_null(strstr(why, "not JSON that can be read"), "%s", why);
	finish(inst);
}

/* ---- the log: warnings capped, lifecycle lines kept ---- */

static char logdir[] = "/tmp/mcpv-hostile-XXXXXX";
static char logpath[300];
static int saved_err = -1;

static void log_to_file(void)
{
	cr_assert_not_null(mkdtemp(logdir));
	snprintf(logpath, sizeof logpath, "%s/log", logdir);
	int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	fflush(stderr);
	saved_err = dup(2);
	dup2(fd, 2);
	close(fd);
}

/* The lines of the log holding what, counted; the log restored. */
static int log_count(const char *what)
{
	fflush(stderr);
	FILE *f = fopen(logpath, "r");
	cr_assert_not_null(f);
	char line[4096];
	int n = 0;
	while (fgets(line, sizeof line, f))
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

static void log_restore(void)
{
	fflush(stderr);
	dup2(saved_err, 2);
	close(saved_err);
	unlink(logpath);
	rmdir(logdir);
}

Test(instance_hostile, warnings_about_a_server_are_capped_and_counted)
{
	log_to_file();
	struct instance *inst = make_ready(0);
	for (int i = 0; i < 1000; i++)
		serve(conns[0], "{\"jsonrpc\":\"2.0\",\"result\":{}}");
	cr_assert_eq(log_count("skipped an invalid message"),
		     INSTANCE_WARN_BURST);
	/* Its stderr is capped alike. */
	for (int i = 0; i < 500; i++)
		conns[0]->cbs.on_log(conns[0]->ctx, "noise", 5);
	cr_assert_eq(log_count("server fx: noise"), INSTANCE_STDERR_BURST);
	/* A lifecycle line is never held back, and what was held back is
	 * told before it. */
	finish(inst);
	cr_assert_eq(log_count("990 more like this suppressed"), 1);
	cr_assert_eq(log_count("400 more like this suppressed"), 1);
	cr_assert_eq(log_count("running -> stopping"), 1);
	log_restore();
}

Test(instance_hostile, a_log_line_cannot_be_forged)
{
	log_to_file();
	struct instance *inst = make_ready(0);
	const char *line = "ok\n12:00:00.000 mcpvisor info: instance fx: "
			   "forged\x1b]0;title\x07";
	conns[0]->cbs.on_log(conns[0]->ctx, line, strlen(line));
	cr_assert_eq(log_count("instance fx: forged"), 1);
	cr_assert_eq(log_count("ok\\n12:00:00.000 mcpvisor info"), 1);
	cr_assert_eq(log_count("\\x1b]0;title\\x07"), 1);
	cr_assert_eq(log_count("\x1b"), 0);
	finish(inst);
	log_restore();
}
