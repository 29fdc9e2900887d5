/*
 * Tests of the demo/fixture MCP server: each test starts the sanitized
 * build/san/demo-server (or $DEMO_SERVER_BIN) on pipes in its own process
 * group, talks JSON-RPC lines to it, and kills what it started by pid.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TDS_MAX_KIDS 4
#define TDS_MAX_ARGS 16
#define TDS_MAX_OUT (1024 * 1024)
#define TDS_WAIT_MS 5000

struct tds_kid {
	pid_t pid;
	int in, out, err;
	char *buf;
	size_t len;
	bool reaped;
};

static struct tds_kid tds_kids[TDS_MAX_KIDS];
static int tds_nkids;
static pid_t tds_grandchild;
static char tds_count_path[64];

static int64_t tds_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *tds_bin(void)
{
	const char *bin = getenv("DEMO_SERVER_BIN");

	if (!bin)
		bin = "build/san/demo-server";
	cr_assert(access(bin, X_OK) == 0,
		  "%s is missing: run `make build/san/demo-server` first", bin);
	return bin;
}

/* Arguments after the binary, NULL-terminated. */
static struct tds_kid *tds_spawn(const char *arg, ...)
{
	const char *argv[TDS_MAX_ARGS + 2];
	int pin[2], pout[2], perr[2], n = 0;
	struct tds_kid *k;
	va_list ap;

	cr_assert(tds_nkids < TDS_MAX_KIDS);
	argv[n++] = tds_bin();
	va_start(ap, arg);
	for (const char *a = arg; a && n <= TDS_MAX_ARGS;
	     a = va_arg(ap, char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	cr_assert(pipe2(pin, O_CLOEXEC) == 0 && pipe2(pout, O_CLOEXEC) == 0 &&
		  pipe2(perr, O_CLOEXEC) == 0);
	k = &tds_kids[tds_nkids++];
	*k = (struct tds_kid){.in = pin[1], .out = pout[0], .err = perr[0]};
	k->pid = fork();
	cr_assert(k->pid >= 0);
	if (k->pid == 0) {
		setpgid(0, 0);
		dup2(pin[0], STDIN_FILENO);
		dup2(pout[1], STDOUT_FILENO);
		dup2(perr[1], STDERR_FILENO);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	setpgid(k->pid, k->pid);
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	return k;
}

static void tds_send(struct tds_kid *k, const char *fmt, ...)
{
	char *line;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&line, fmt, ap);
	va_end(ap);
	cr_assert(n >= 0);
	line[n] = '\n';
	cr_assert(write(k->in, line, (size_t)n + 1) == n + 1);
	free(line);
}

static void tds_close_stdin(struct tds_kid *k)
{
	close(k->in);
	k->in = -1;
}

/* The next line of stdout as JSON; NULL on EOF or after timeout_ms. */
static json_t *tds_recv(struct tds_kid *k, int timeout_ms)
{
	int64_t deadline = tds_now_ms() + timeout_ms;

	for (;;) {
		char *nl = k->buf ? memchr(k->buf, '\n', k->len) : NULL;
		struct pollfd pfd = {.fd = k->out, .events = POLLIN};
		int64_t left;
		ssize_t n;

		if (nl) {
			size_t len = (size_t)(nl - k->buf);
			json_t *msg = json_loadb(k->buf, len, 0, NULL);

			memmove(k->buf, nl + 1, k->len - len - 1);
			k->len -= len + 1;
			cr_assert(msg, "stdout line is not JSON");
			return msg;
		}
		left = deadline - tds_now_ms();
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return NULL;
		if (!k->buf)
			k->buf = malloc(TDS_MAX_OUT);
		cr_assert(k->len < TDS_MAX_OUT);
		n = read(k->out, k->buf + k->len, TDS_MAX_OUT - k->len);
		if (n <= 0)
			return NULL;
		k->len += (size_t)n;
	}
}

/* The answer to request id, skipping notifications and server requests. */
static json_t *tds_answer(struct tds_kid *k, json_int_t id)
{
	json_t *msg;

	while ((msg = tds_recv(k, TDS_WAIT_MS))) {
		json_t *mid = json_object_get(msg, "id");

		if (!json_object_get(msg, "method") && json_is_integer(mid) &&
		    json_integer_value(mid) == id)
			return msg;
		json_decref(msg);
	}
	cr_assert_fail("no answer to request %lld", (long long)id);
	return NULL;
}

static const char *tds_text(json_t *answer)
{
	json_t *content =
		json_object_get(json_object_get(answer, "result"), "content");

	return json_string_value(
		json_object_get(json_array_get(content, 0), "text"));
}

static json_int_t tds_error_code(json_t *answer)
{
	return json_integer_value(
		json_object_get(json_object_get(answer, "error"), "code"));
}

/* Reads stdout to EOF (the server holds it until it exits), then reaps. */
static int tds_wait_exit(struct tds_kid *k)
{
	int64_t deadline = tds_now_ms() + TDS_WAIT_MS;
	int status;

	for (;;) {
		json_t *msg = tds_recv(k, (int)(deadline - tds_now_ms()));

		if (!msg)
			break;
		json_decref(msg);
	}
	cr_assert(tds_now_ms() < deadline, "stdout stayed open");
	cr_assert(waitpid(k->pid, &status, 0) == k->pid);
	k->reaped = true;
	return status;
}

static char *tds_stderr(struct tds_kid *k)
{
	static char text[8192];
	size_t len = 0;
	ssize_t n;

	while (len < sizeof(text) - 1 &&
	       (n = read(k->err, text + len, sizeof(text) - 1 - len)) > 0)
		len += (size_t)n;
	text[len] = '\0';
	return text;
}

static void tds_initialize(struct tds_kid *k, json_int_t id,
			   const char *version)
{
	tds_send(k,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"initialize\","
		 "\"params\":{\"protocolVersion\":\"%s\",\"capabilities\":{},"
		 "\"clientInfo\":{\"name\":\"test\",\"version\":\"0\"}}}",
		 (long long)id, version);
}

static void tds_call(struct tds_kid *k, json_int_t id, const char *tool,
		     const char *args)
{
	tds_send(k,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"tools/call\","
		 "\"params\":{\"name\":\"%s\",\"arguments\":%s}}",
		 (long long)id, tool, args);
}

static int tds_count_lines(const char *path, const char *line)
{
	char buf[256];
	FILE *f = fopen(path, "r");
	int n = 0;

	cr_assert(f, "cannot open %s", path);
	while (fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\n")] = '\0';
		if (strcmp(buf, line) == 0 ||
		    (line[strlen(line) - 1] == ' ' &&
		     strncmp(buf, line, strlen(line)) == 0))
			n++;
	}
	fclose(f);
	return n;
}

static void tds_make_count_file(void)
{
	int fd;

	snprintf(tds_count_path, sizeof(tds_count_path),
		 "/tmp/demo-count-XXXXXX");
	fd = mkstemp(tds_count_path);
	cr_assert(fd >= 0);
	close(fd);
}

static void tds_fini(void)
{
	for (int i = 0; i < tds_nkids; i++) {
		struct tds_kid *k = &tds_kids[i];

		if (!k->reaped) {
			kill(-k->pid, SIGKILL);
			kill(k->pid, SIGKILL);
			waitpid(k->pid, NULL, 0);
		}
		if (k->in >= 0)
			close(k->in);
		close(k->out);
		close(k->err);
		free(k->buf);
	}
	tds_nkids = 0;
	if (tds_grandchild > 0)
		kill(tds_grandchild, SIGKILL);
	if (tds_count_path[0])
		unlink(tds_count_path);
}

TestSuite(demo_server, .fini = tds_fini, .timeout = 10);

Test(demo_server, initialize_negotiates_version)
{
	struct tds_kid *k = tds_spawn("--name", "t1", NULL);
	json_t *a, *r;

	tds_initialize(k, 1, "2025-11-25");
	a = tds_answer(k, 1);
	r = json_object_get(a, "result");
	cr_assert_str_eq(
		json_string_value(json_object_get(r, "protocolVersion")),
		"2025-11-25");
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(r, "serverInfo"), "name")),
			 "t1");
	cr_assert(json_is_true(json_object_get(
		json_object_get(json_object_get(r, "capabilities"), "tools"),
		"listChanged")));
	cr_assert(json_is_true(json_object_get(
		json_object_get(json_object_get(r, "capabilities"),
				"resources"),
		"subscribe")));
	json_decref(a);

	tds_initialize(k, 2, "2024-11-05");
	a = tds_answer(k, 2);
	cr_assert_str_eq(
		json_string_value(json_object_get(json_object_get(a, "result"),
						  "protocolVersion")),
		"2024-11-05");
	json_decref(a);

	tds_initialize(k, 3, "2031-01-01");
	a = tds_answer(k, 3);
	cr_assert_str_eq(
		json_string_value(json_object_get(json_object_get(a, "result"),
						  "protocolVersion")),
		"2025-11-25");
	json_decref(a);
}

Test(demo_server, auth_fail_answers_401_and_keeps_running)
{
	struct tds_kid *k = tds_spawn("--auth-fail", NULL);
	json_t *a, *err;

	tds_initialize(k, 1, "2025-11-25");
	a = tds_answer(k, 1);
	err = json_object_get(a, "error");
	cr_assert_eq(tds_error_code(a), -32001);
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(err, "data"), "status")),
		     401);
	json_decref(a);
	tds_send(k, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
	a = tds_answer(k, 2);
	cr_assert(json_is_object(json_object_get(a, "result")));
	json_decref(a);
}

Test(demo_server, tools_list_echo_add)
{
	static const char *const want[] = {
		"echo",		  "add", "pid",	   "sleep",  "count",
		"fail",		  "env", "sample", "elicit", "roots",
		"notify_changed", "log", "tool_1", "tool_2",
	};
	struct tds_kid *k = tds_spawn("--tools", "2", NULL);
	json_t *a, *tools, *t;
	size_t i;

	tds_send(k, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	a = tds_answer(k, 1);
	tools = json_object_get(json_object_get(a, "result"), "tools");
	cr_assert_eq(json_array_size(tools), sizeof(want) / sizeof(want[0]));
	cr_assert_null(
		json_object_get(json_object_get(a, "result"), "nextCursor"));
	json_array_foreach(tools, i, t)
	{
		cr_assert_str_eq(json_string_value(json_object_get(t, "name")),
				 want[i]);
		cr_assert_str_eq(
			json_string_value(json_object_get(
				json_object_get(t, "inputSchema"), "type")),
			"object");
	}
	json_decref(a);

	tds_call(k, 2, "echo", "{\"text\":\"h\\u00e9llo\"}");
	a = tds_answer(k, 2);
	cr_assert_str_eq(tds_text(a), "h\xc3\xa9llo");
	json_decref(a);

	tds_call(k, 3, "add", "{\"a\":2,\"b\":40}");
	a = tds_answer(k, 3);
	cr_assert_str_eq(tds_text(a), "42");
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(json_object_get(a, "result"),
					     "structuredContent"),
			     "sum")),
		     42);
	json_decref(a);

	tds_call(k, 4, "tool_2", "{\"text\":\"x\"}");
	a = tds_answer(k, 4);
	cr_assert_str_eq(tds_text(a), "{\"text\":\"x\"}");
	json_decref(a);
}

Test(demo_server, protocol_errors)
{
	struct tds_kid *k = tds_spawn(NULL);
	json_t *a;

	tds_send(k, "this is not json");
	a = tds_recv(k, TDS_WAIT_MS);
	cr_assert_not_null(a);
	cr_assert_eq(tds_error_code(a), -32700);
	cr_assert(json_is_null(json_object_get(a, "id")));
	json_decref(a);

	tds_send(k, "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}");
	a = tds_answer(k, 1);
	cr_assert_eq(tds_error_code(a), -32600);
	json_decref(a);

	tds_send(k, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"no/such\"}");
	a = tds_answer(k, 2);
	cr_assert_eq(tds_error_code(a), -32601);
	json_decref(a);

	/* A notification, known or not, gets no answer: the next line out is
	 * the ping's. */
	tds_send(k, "{\"jsonrpc\":\"2.0\",\"method\":\"no/such\"}");
	tds_send(k, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
	a = tds_recv(k, TDS_WAIT_MS);
	cr_assert_eq(json_integer_value(json_object_get(a, "id")), 3);
	json_decref(a);

	tds_call(k, 4, "no_such_tool", "{}");
	a = tds_answer(k, 4);
	cr_assert_eq(tds_error_code(a), -32602);
	json_decref(a);

	tds_call(k, 5, "echo", "{}");
	a = tds_answer(k, 5);
	cr_assert(json_is_true(
		json_object_get(json_object_get(a, "result"), "isError")));
	json_decref(a);

	tds_send(k, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"resources/"
		    "read\",\"params\":{\"uri\":\"demo://nope\"}}");
	a = tds_answer(k, 6);
	cr_assert_eq(tds_error_code(a), -32002);
	json_decref(a);
}

Test(demo_server, sleeps_overlap)
{
	struct tds_kid *k = tds_spawn(NULL);
	json_int_t ids[3];

	/* Answered in the order of their deadlines, not of their calls:
	 * the short sleep ends while the long one runs, and the ping waits
	 * for neither, however busy the machine. */
	tds_call(k, 1, "sleep", "{\"ms\":600}");
	tds_call(k, 2, "sleep", "{\"ms\":300}");
	tds_send(k, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
	for (int i = 0; i < 3; i++) {
		json_t *a = tds_recv(k, TDS_WAIT_MS);
		cr_assert_not_null(a);
		ids[i] = json_integer_value(json_object_get(a, "id"));
		if (ids[i] != 3)
			cr_assert_str_eq(tds_text(a), ids[i] == 1
							      ? "slept 600 ms"
							      : "slept 300 ms");
		json_decref(a);
	}
	cr_assert_eq(ids[2], 1,
		     "answered %d, %d, %d: the long sleep held the "
		     "others",
		     (int)ids[0], (int)ids[1], (int)ids[2]);
}

Test(demo_server, progress_then_cancel)
{
	struct tds_kid *k;
	json_int_t last = -1;
	int progress = 0;
	json_t *msg;

	tds_make_count_file();
	k = tds_spawn("--count-file", tds_count_path, NULL);
	tds_send(k, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
		    "\"params\":{\"name\":\"sleep\",\"arguments\":{\"ms\":350},"
		    "\"_meta\":{\"progressToken\":\"tok\"}}}");
	while ((msg = tds_recv(k, TDS_WAIT_MS)) &&
	       json_object_get(msg, "method")) {
		json_t *p = json_object_get(msg, "params");

		cr_assert_str_eq(
			json_string_value(json_object_get(msg, "method")),
			"notifications/progress");
		cr_assert_str_eq(
			json_string_value(json_object_get(p, "progressToken")),
			"tok");
		cr_assert_gt(json_integer_value(json_object_get(p, "progress")),
			     last);
		last = json_integer_value(json_object_get(p, "progress"));
		progress++;
		json_decref(msg);
	}
	cr_assert_not_null(msg);
	cr_assert_str_eq(tds_text(msg), "slept 350 ms");
	cr_assert_geq(progress, 2);
	json_decref(msg);

	tds_call(k, 2, "sleep", "{\"ms\":60000}");
	tds_send(k, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
		    "cancelled\",\"params\":{\"requestId\":2}}");
	tds_send(k, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
	msg = tds_recv(k, TDS_WAIT_MS);
	cr_assert_eq(json_integer_value(json_object_get(msg, "id")), 3);
	json_decref(msg);
	cr_assert_eq(tds_count_lines(tds_count_path, "cancelled sleep"), 1);
	/* Nothing more comes out for the cancelled call before exit. */
	tds_close_stdin(k);
	msg = tds_recv(k, TDS_WAIT_MS);
	cr_assert_null(msg, "cancelled call was answered");
	cr_assert(tds_wait_exit(k) == 0);
}

Test(demo_server, pagination)
{
	struct tds_kid *k = tds_spawn("--page-size", "5", "--tools", "3", NULL);
	json_t *names = json_object(), *a, *result, *t;
	char cursor[128] = "";
	int pages = 0;
	size_t i;

	for (json_int_t id = 1;; id++) {
		if (cursor[0])
			tds_send(k,
				 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":"
				 "\"tools/"
				 "list\",\"params\":{\"cursor\":\"%s\"}}",
				 (long long)id, cursor);
		else
			tds_send(k,
				 "{\"jsonrpc\":\"2.0\",\"id\":%lld,"
				 "\"method\":\"tools/list\"}",
				 (long long)id);
		a = tds_answer(k, id);
		result = json_object_get(a, "result");
		cr_assert_leq(json_array_size(json_object_get(result, "tools")),
			      5);
		json_array_foreach(json_object_get(result, "tools"), i, t)
			json_object_set(
				names,
				json_string_value(json_object_get(t, "name")),
				json_true());
		pages++;
		t = json_object_get(result, "nextCursor");
		if (!t) {
			json_decref(a);
			break;
		}
		cr_assert(json_is_string(t));
		snprintf(cursor, sizeof(cursor), "%s", json_string_value(t));
		json_decref(a);
		cr_assert_lt(pages, 10);
	}
	cr_assert_eq(pages, 3);
	cr_assert_eq(json_object_size(names), 15);
	json_decref(names);

	tds_send(k, "{\"jsonrpc\":\"2.0\",\"id\":50,\"method\":\"tools/list\","
		    "\"params\":{\"cursor\":\"not-a-cursor\"}}");
	a = tds_answer(k, 50);
	cr_assert_eq(tds_error_code(a), -32602);
	json_decref(a);
}

Test(demo_server, exit_at_start)
{
	struct tds_kid *k = tds_spawn("--exit-at-start", "7", NULL);
	int status = tds_wait_exit(k);

	cr_assert(WIFEXITED(status));
	cr_assert_eq(WEXITSTATUS(status), 7);
	cr_assert_not_null(
		strstr(tds_stderr(k), "demo: exiting at start with code 7\n"));
}

Test(demo_server, unknown_flag_exits_2)
{
	struct tds_kid *k = tds_spawn("--no-such-flag", NULL);
	int status = tds_wait_exit(k);

	cr_assert(WIFEXITED(status));
	cr_assert_eq(WEXITSTATUS(status), 2);
}

Test(demo_server, count_file_across_restarts)
{
	struct tds_kid *k;
	json_t *a, *info;

	tds_make_count_file();
	for (int start = 1; start <= 2; start++) {
		k = tds_spawn("--count-file", tds_count_path, NULL);
		tds_call(k, 1, "echo", "{\"text\":\"a\"}");
		json_decref(tds_answer(k, 1));
		tds_call(k, 2, "pid", "{}");
		a = tds_answer(k, 2);
		info = json_loads(tds_text(a), 0, NULL);
		cr_assert_not_null(info);
		cr_assert_eq(
			json_integer_value(json_object_get(info, "starts")),
			start);
		cr_assert_eq(json_integer_value(json_object_get(info, "pid")),
			     k->pid);
		json_decref(info);
		json_decref(a);
		tds_call(k, 3, "count", "{}");
		a = tds_answer(k, 3);
		cr_assert_str_eq(tds_text(a),
				 "{\"echo\":1,\"pid\":1,\"count\":1}");
		json_decref(a);
		tds_close_stdin(k);
		cr_assert_eq(tds_wait_exit(k), 0);
	}
	cr_assert_eq(tds_count_lines(tds_count_path, "start "), 2);
	cr_assert_eq(tds_count_lines(tds_count_path, "call echo"), 2);
	cr_assert_eq(tds_count_lines(tds_count_path, "call pid"), 2);
}

Test(demo_server, exit_after_calls_and_die_in_call)
{
	struct tds_kid *k = tds_spawn("--exit-after-calls", "2", NULL);
	json_t *a;
	int status;

	tds_call(k, 1, "echo", "{\"text\":\"a\"}");
	json_decref(tds_answer(k, 1));
	tds_call(k, 2, "echo", "{\"text\":\"b\"}");
	a = tds_answer(k, 2);
	cr_assert_str_eq(tds_text(a), "b");
	json_decref(a);
	status = tds_wait_exit(k);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 4);

	tds_make_count_file();
	k = tds_spawn("--die-in-call", "echo", "--count-file", tds_count_path,
		      NULL);
	tds_call(k, 1, "echo", "{\"text\":\"a\"}");
	a = tds_recv(k, TDS_WAIT_MS);
	cr_assert_null(a, "the call was answered");
	status = tds_wait_exit(k);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 5);
	cr_assert_eq(tds_count_lines(tds_count_path, "call echo"), 1);
}

Test(demo_server, slow_start_delays_answers)
{
	struct tds_kid *k = tds_spawn("--slow-start", "300", NULL);
	int64_t t0 = tds_now_ms();

	tds_send(k, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
	json_decref(tds_answer(k, 1));
	cr_assert_geq(tds_now_ms() - t0, 300);
}

Test(demo_server, sigterm_leaves_grandchild_without_our_pipes)
{
	struct tds_kid *k = tds_spawn("--grandchild", NULL);
	json_t *a, *info;
	int status;

	tds_call(k, 1, "pid", "{}");
	a = tds_answer(k, 1);
	info = json_loads(tds_text(a), 0, NULL);
	cr_assert_not_null(info);
	tds_grandchild =
		(pid_t)json_integer_value(json_object_get(info, "grandchild"));
	cr_assert_gt(tds_grandchild, 0);
	cr_assert_eq(json_integer_value(json_object_get(info, "pgid")), k->pid);
	cr_assert_eq(getpgid(tds_grandchild), k->pid);
	json_decref(info);
	json_decref(a);

	cr_assert_eq(kill(k->pid, SIGTERM), 0);
	/* tds_wait_exit needs stdout to reach EOF: the grandchild must not
	 * hold the pipe. */
	status = tds_wait_exit(k);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert_eq(kill(tds_grandchild, 0), 0, "grandchild died early");
}
