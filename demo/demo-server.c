/*
 * Demo and test-fixture MCP server: newline-delimited JSON-RPC 2.0 on stdio,
 * one poll() loop with timers so slow tools never block others, and flags
 * that make it crash, hang, start slowly or misbehave for end-to-end tests.
 * Self-contained (jansson and libc only) because the Makefile builds it alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "fixture-http.h"

#define DEMO_VERSION "1.0.0"
#define DEMO_LATEST_PROTOCOL "2025-11-25"

#define DEMO_MAX_LINE (4 * 1024 * 1024) /* one JSON-RPC message */
#define DEMO_READ_CHUNK (64 * 1024)
#define DEMO_MAX_SLEEP_MS 600000
#define DEMO_PROGRESS_MS 100
#define DEMO_MAX_FLAG_MS (24LL * 3600 * 1000)
#define DEMO_MAX_NAME 128
#define DEMO_MAX_EXTRA_TOOLS 1000
#define DEMO_MAX_PAGE_SIZE 10000
#define DEMO_MAX_ECHO_REPEAT 100000
#define DEMO_MAX_PENDING 1024 /* sleeps and client requests in flight */
#define DEMO_MAX_COUNT_FILE (16 * 1024 * 1024)
#define DEMO_MAX_STDERR_LINES 100000
#define DEMO_MAX_ITEM_ID 256
#define DEMO_MAX_CURSOR 64
#define DEMO_MAX_LOG_LINE 1024

#define RPC_PARSE_ERROR -32700
#define RPC_INVALID_REQUEST -32600
#define RPC_METHOD_NOT_FOUND -32601
#define RPC_INVALID_PARAMS -32602
#define RPC_INTERNAL_ERROR -32603
#define MCP_UNAUTHORIZED -32001
#define MCP_RESOURCE_NOT_FOUND -32002

struct demo_opts {
	const char *name;
	const char *count_file;
	bool exit_at_start;
	int exit_at_start_code;
	int64_t exit_after_init_ms; /* -1: never */
	int64_t exit_after_calls;   /* 0: never */
	const char *die_in_call;
	int64_t slow_start_ms;
	bool ignore_sigterm;
	bool grandchild;
	bool setsid_child;
	bool auth_fail;
	bool garbage;
	bool tools_by_caps; /* sample/elicit only for a client that can */
	int64_t stderr_lines;
	int64_t page_size; /* 0: no pagination */
	int64_t extra_tools;
	int64_t echo_repeat; /* echo answers its text this many times */
};

/* A `sleep` call waiting for its deadline. */
struct demo_sleep {
	struct demo_sleep *next;
	json_t *id;
	json_t *token;		/* progressToken or NULL */
	struct fxh_session *hs; /* over HTTP: the caller's session */
	int64_t ms;
	int64_t started;
	int64_t due;
	int64_t next_progress;
};

enum demo_out_kind { DEMO_OUT_SAMPLE, DEMO_OUT_ELICIT, DEMO_OUT_ROOTS };

/* A request this server sent to the client on behalf of a tools/call. */
struct demo_out {
	struct demo_out *next;
	char key[32];
	json_t *call_id;
	struct fxh_session *hs;
	enum demo_out_kind kind;
};

struct demo_tool {
	const char *name;
	const char *description;
	const char *input_schema;
	const char *output_schema; /* NULL: none */
	void (*run)(json_t *id, json_t *args, json_t *params);
};

static struct {
	struct demo_opts o;
	int count_fd;
	pid_t grandchild;
	pid_t setsid_child;
	json_t *tools;	    /* cached tools/list array */
	json_t *counts;	    /* tool name -> runs in this process */
	json_t *subscribed; /* uri -> true */
	struct demo_sleep *sleeps;
	struct demo_out *outs;
	size_t npending;
	uint64_t next_out;
	int64_t calls_answered;
	int64_t ready_at;
	int64_t exit_at; /* -1: not armed */
	bool initialized;
	bool stdin_open;
	bool stdout_broken;
	int log_level;
	int sig_pipe[2];
	char *inbuf;
	size_t inlen;
	size_t incap;
	bool skipping;
	/* Over HTTP: sessions share this state; what is sent goes to the
	 * session at hand, on the stream of the request cause. */
	struct fxh_opts http;
	struct fxh_session *hs;
	json_t *cause;
} demo;

static volatile sig_atomic_t demo_term;

static const char *const demo_protocols[] = {
	"2025-11-25",
	"2025-06-18",
	"2025-03-26",
	"2024-11-05",
};

static const char *const demo_levels[] = {
	"debug", "info",     "notice", "warning",
	"error", "critical", "alert",  "emergency",
};
#define DEMO_LEVEL_INFO 1

static const char *const demo_names[] = {
	"Ada", "Alan", "Alice", "Bob", "Carol", "Dave", "Eve", "Grace",
};

static const char *const demo_item_ids[] = {"1", "2", "42"};

#define DEMO_NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void demo_log(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static void demo_count_line(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static int64_t demo_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int demo_write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			/* A reader that stopped reading must not make SIGTERM
			 * hang: leave without cleanup, we are stuck anyway. */
			if (errno == EINTR) {
				if (demo_term)
					_exit(0);
				continue;
			}
			/* A parent may hand us a non-blocking pipe. */
			if (errno == EAGAIN) {
				struct pollfd pfd = {.fd = fd,
						     .events = POLLOUT};

				(void)poll(&pfd, 1, -1);
				continue;
			}
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One write per line so that lines of concurrent writers never mix. */
static void demo_log(const char *fmt, ...)
{
	char line[DEMO_MAX_LOG_LINE];
	size_t len;
	va_list ap;

	memcpy(line, "demo: ", 6);
	va_start(ap, fmt);
	vsnprintf(line + 6, sizeof(line) - 7, fmt, ap);
	va_end(ap);
	len = strlen(line);
	line[len++] = '\n';
	(void)demo_write_all(STDERR_FILENO, line, len);
}

static void demo_crash(int code, const char *why)
{
	demo_log("exiting with code %d: %s (test fixture)", code, why);
	/* _exit: a crash runs no cleanup, and leak reports would change the
	 * exit code of the sanitized build. */
	_exit(code);
}

/* Whole lines, fsynced, so tests can count across crashes and restarts. */
static void demo_count_line(const char *fmt, ...)
{
	char line[DEMO_MAX_NAME + 64];
	size_t len;
	va_list ap;

	if (demo.count_fd < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	len = strlen(line);
	line[len++] = '\n';
	if (demo_write_all(demo.count_fd, line, len) < 0 ||
	    fsync(demo.count_fd) < 0)
		demo_log("count file %s: %s", demo.o.count_file,
			 strerror(errno));
}

static int64_t demo_count_starts(void)
{
	static const char tag[] = "start ";
	char chunk[4096];
	size_t col = 0, total = 0;
	bool match = true;
	int64_t starts = 0;
	ssize_t n;
	int fd;

	if (!demo.o.count_file)
		return 1; /* no record kept: only this start is known */
	fd = open(demo.o.count_file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	/* Streamed: the file grows with every call of a long test run. */
	while (total < DEMO_MAX_COUNT_FILE &&
	       ((n = read(fd, chunk, sizeof(chunk))) > 0 ||
		(n < 0 && errno == EINTR))) {
		for (ssize_t i = 0; i < n; i++) {
			if (chunk[i] == '\n') {
				col = 0;
				match = true;
				continue;
			}
			if (match && col < sizeof(tag) - 1 &&
			    chunk[i] != tag[col])
				match = false;
			if (match && ++col == sizeof(tag) - 1)
				starts++;
		}
		total += n > 0 ? (size_t)n : 0;
	}
	close(fd);
	return starts;
}

/* Takes ownership of msg. */
static void demo_send(json_t *msg)
{
	const size_t flags = JSON_COMPACT;
	size_t len;
	char *line;

	if (!msg) {
		demo_log("%s: cannot build a message", __func__);
		return;
	}
	if (demo.http.on) {
		if (demo.hs)
			fxh_send(demo.hs, demo.cause, msg);
		else
			json_decref(msg);
		return;
	}
	len = json_dumpb(msg, NULL, 0, flags);
	line = len ? malloc(len + 1) : NULL;
	if (!line) {
		demo_log("%s: cannot encode a message", __func__);
		json_decref(msg);
		return;
	}
	json_dumpb(msg, line, len, flags);
	json_decref(msg);
	line[len] = '\n';
	if (demo_write_all(STDOUT_FILENO, line, len + 1) < 0 &&
	    !demo.stdout_broken) {
		demo.stdout_broken = true;
		demo_log("stdout: %s (dropping output)", strerror(errno));
	}
	free(line);
}

static void demo_garbage(void)
{
	static const char junk[] = "demo garbage: this line is not JSON\n\n";

	if (demo.o.garbage && !demo.http.on)
		(void)demo_write_all(STDOUT_FILENO, junk, sizeof(junk) - 1);
}

/* Takes ownership of result. */
static void demo_reply(json_t *id, json_t *result)
{
	demo_garbage();
	demo_send(json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id,
			    "result", result));
}

/* Takes ownership of data (may be NULL). id NULL answers with id null. */
static void demo_reply_error(json_t *id, int code, const char *message,
			     json_t *data)
{
	json_t *err = json_pack("{s:i, s:s}", "code", code, "message", message);

	if (data)
		json_object_set_new(err, "data", data);
	demo_garbage();
	demo_send(json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id",
			    id ? id : json_null(), "error", err));
}

/* Takes ownership of params. */
static void demo_notify(const char *method, json_t *params)
{
	json_t *msg =
		json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);

	if (params)
		json_object_set_new(msg, "params", params);
	demo_send(msg);
}

static json_t *demo_string(const char *s)
{
	json_t *j = json_string(s);

	return j ? j : json_string("(not valid UTF-8)");
}

static json_t *demo_text_result(const char *text, bool is_error)
{
	json_t *content = json_pack("{s:s, s:o}", "type", "text", "text",
				    demo_string(text));
	json_t *r = json_pack("{s:[o]}", "content", content);

	if (is_error)
		json_object_set_new(r, "isError", json_true());
	return r;
}

/* Takes ownership of j; the text is its compact JSON. */
static json_t *demo_json_result(json_t *j)
{
	char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	json_t *r = demo_text_result(text ? text : "null", false);

	free(text);
	json_decref(j);
	return r;
}

static void demo_after_call(void)
{
	demo.calls_answered++;
	if (demo.o.exit_after_calls > 0 &&
	    demo.calls_answered == demo.o.exit_after_calls)
		demo_crash(4, "--exit-after-calls reached");
}

/* Every answer to a tools/call goes through these two, for
 * --exit-after-calls. Takes ownership of result. */
static void demo_call_reply(json_t *id, json_t *result)
{
	demo_reply(id, result);
	demo_after_call();
}

static void demo_call_error(json_t *id, int code, const char *message)
{
	demo_reply_error(id, code, message, NULL);
	demo_after_call();
}

static json_t *demo_progress_token(json_t *params)
{
	json_t *tok = json_object_get(json_object_get(params, "_meta"),
				      "progressToken");

	return json_is_string(tok) || json_is_integer(tok) ? tok : NULL;
}

/* ---- tools ---- */

static void demo_tool_echo(json_t *id, json_t *args, json_t *params)
{
	const char *text = json_string_value(json_object_get(args, "text"));
	size_t len = text ? strlen(text) : 0;
	char *many = NULL;

	/* An answer far larger than a request can be (a test of what a
	 * client that stops reading costs the runtime). */
	if (text && demo.o.echo_repeat > 1) {
		many = malloc(len * (size_t)demo.o.echo_repeat + 1);
		if (!many)
			abort();
		for (int64_t i = 0; i < demo.o.echo_repeat; i++)
			memcpy(many + (size_t)i * len, text, len);
		many[len * (size_t)demo.o.echo_repeat] = '\0';
		text = many;
	}
	demo_call_reply(id, demo_text_result(text, false));
	free(many);
}

static void demo_tool_add(json_t *id, json_t *args, json_t *params)
{
	json_t *a = json_object_get(args, "a");
	json_t *b = json_object_get(args, "b");
	json_int_t isum;
	json_t *sum, *r;
	char *text;

	if (json_is_integer(a) && json_is_integer(b) &&
	    !__builtin_add_overflow(json_integer_value(a),
				    json_integer_value(b), &isum))
		sum = json_integer(isum);
	else
		sum = json_real(json_number_value(a) + json_number_value(b));
	text = json_dumps(sum, JSON_ENCODE_ANY);
	r = demo_text_result(text ? text : "NaN", false);
	free(text);
	json_object_set_new(r, "structuredContent",
			    json_pack("{s:o}", "sum", sum));
	demo_call_reply(id, r);
}

static void demo_tool_pid(json_t *id, json_t *args, json_t *params)
{
	char cwd[PATH_MAX];

	if (!getcwd(cwd, sizeof(cwd)))
		snprintf(cwd, sizeof(cwd), "(unknown: %s)", strerror(errno));
	json_t *r = json_pack(
		"{s:I, s:I, s:I, s:I, s:s, s:o, s:I}", "pid",
		(json_int_t)getpid(), "ppid", (json_int_t)getppid(), "pgid",
		(json_int_t)getpgrp(), "grandchild",
		(json_int_t)demo.grandchild, "name", demo.o.name, "cwd",
		demo_string(cwd), "starts", (json_int_t)demo_count_starts());
	if (demo.setsid_child > 0)
		json_object_set_new(r, "setsidChild",
				    json_integer(demo.setsid_child));
	demo_call_reply(id, demo_json_result(r));
}

static void demo_tool_sleep(json_t *id, json_t *args, json_t *params)
{
	int64_t now = demo_now_ms();
	json_t *tok = demo_progress_token(params);
	struct demo_sleep *s;

	if (demo.npending >= DEMO_MAX_PENDING) {
		demo_call_reply(
			id, demo_text_result("too many calls in flight", true));
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		abort();
	s->id = json_incref(id);
	s->token = tok ? json_incref(tok) : NULL;
	s->hs = demo.hs;
	s->ms = json_integer_value(json_object_get(args, "ms"));
	s->started = now;
	s->due = now + s->ms;
	s->next_progress = now + DEMO_PROGRESS_MS;
	s->next = demo.sleeps;
	demo.sleeps = s;
	demo.npending++;
}

static void demo_tool_count(json_t *id, json_t *args, json_t *params)
{
	demo_call_reply(id, demo_json_result(json_incref(demo.counts)));
}

static void demo_tool_fail(json_t *id, json_t *args, json_t *params)
{
	demo_call_reply(id, demo_text_result("fail: this tool always fails "
					     "(it is a test fixture)",
					     true));
}

static void demo_tool_env(json_t *id, json_t *args, json_t *params)
{
	const char *v =
		getenv(json_string_value(json_object_get(args, "name")));

	demo_call_reply(id, demo_text_result(v ? v : "(unset)", false));
}

/* Takes ownership of params. */
static void demo_ask_client(json_t *id, enum demo_out_kind kind,
			    const char *method, json_t *params)
{
	struct demo_out *out;

	if (demo.npending >= DEMO_MAX_PENDING) {
		json_decref(params);
		demo_call_reply(
			id, demo_text_result("too many calls in flight", true));
		return;
	}
	out = calloc(1, sizeof(*out));
	if (!out)
		abort();
	snprintf(out->key, sizeof(out->key), "s%llu",
		 (unsigned long long)++demo.next_out);
	out->call_id = json_incref(id);
	out->hs = demo.hs;
	out->kind = kind;
	out->next = demo.outs;
	demo.outs = out;
	demo.npending++;
	demo_send(json_pack("{s:s, s:s, s:s, s:o}", "jsonrpc", "2.0", "id",
			    out->key, "method", method, "params", params));
}

static void demo_tool_sample(json_t *id, json_t *args, json_t *params)
{
	json_t *prompt = json_object_get(args, "prompt");

	demo_ask_client(id, DEMO_OUT_SAMPLE, "sampling/createMessage",
			json_pack("{s:[{s:s, s:{s:s, s:O}}], s:i}", "messages",
				  "role", "user", "content", "type", "text",
				  "text", prompt, "maxTokens", 256));
}

static void demo_tool_elicit(json_t *id, json_t *args, json_t *params)
{
	json_t *message = json_object_get(args, "message");

	demo_ask_client(id, DEMO_OUT_ELICIT, "elicitation/create",
			json_pack("{s:O, s:{s:s, s:{s:{s:s, s:s}}, s:[s]}}",
				  "message", message, "requestedSchema", "type",
				  "object", "properties", "answer", "type",
				  "string", "description", "Your answer",
				  "required", "answer"));
}

static void demo_tool_roots(json_t *id, json_t *args, json_t *params)
{
	demo_ask_client(id, DEMO_OUT_ROOTS, "roots/list", json_object());
}

static void demo_tool_notify_changed(json_t *id, json_t *args, json_t *params)
{
	demo_notify("notifications/tools/list_changed", NULL);
	demo_call_reply(id, demo_text_result("sent", false));
}

static void demo_tool_log(json_t *id, json_t *args, json_t *params)
{
	json_t *message = json_object_get(args, "message");

	if (demo.log_level > DEMO_LEVEL_INFO) {
		demo_call_reply(id, demo_text_result("not sent: log level is "
						     "above info",
						     false));
		return;
	}
	demo_notify("notifications/message",
		    json_pack("{s:s, s:s, s:O}", "level", "info", "logger",
			      demo.o.name, "data", message));
	demo_call_reply(id, demo_text_result("logged", false));
}

#define DEMO_NO_ARGS "{\"type\":\"object\",\"properties\":{}}"
#define DEMO_ONE_STRING(field, what)                                           \
	"{\"type\":\"object\",\"properties\":{\"" field "\":{\"type\":"        \
	"\"string\",\"description\":\"" what "\"}},\"required\":[\"" field     \
	"\"]}"

static const struct demo_tool demo_tools[] = {
	{"echo", "Echo the given text back.",
	 DEMO_ONE_STRING("text", "Text to echo"), NULL, demo_tool_echo},
	{"add", "Add two numbers.",
	 "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},"
	 "\"b\":{\"type\":\"number\"}},\"required\":[\"a\",\"b\"]}",
	 "{\"type\":\"object\",\"properties\":{\"sum\":{\"type\":\"number\"}},"
	 "\"required\":[\"sum\"]}",
	 demo_tool_add},
	{"pid",
	 "Report this server's pid, parent, process group, grandchild, name, "
	 "working directory and start count as JSON.",
	 DEMO_NO_ARGS, NULL, demo_tool_pid},
	{"sleep",
	 "Wait the given milliseconds without blocking other requests; sends "
	 "progress when asked.",
	 "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\","
	 "\"minimum\":0,\"maximum\":600000}},\"required\":[\"ms\"]}",
	 NULL, demo_tool_sleep},
	{"count", "How many times each tool ran in this process, as JSON.",
	 DEMO_NO_ARGS, NULL, demo_tool_count},
	{"fail", "Always fails with a tool error.", DEMO_NO_ARGS, NULL,
	 demo_tool_fail},
	{"env", "The value of an environment variable (test fixture).",
	 DEMO_ONE_STRING("name", "Variable name"), NULL, demo_tool_env},
	{"sample", "Ask the client's model (sampling/createMessage).",
	 DEMO_ONE_STRING("prompt", "What to ask"), NULL, demo_tool_sample},
	{"elicit", "Ask the user through the client (elicitation/create).",
	 DEMO_ONE_STRING("message", "Question for the user"), NULL,
	 demo_tool_elicit},
	{"roots", "List the client's roots (roots/list).", DEMO_NO_ARGS, NULL,
	 demo_tool_roots},
	{"notify_changed", "Send notifications/tools/list_changed.",
	 DEMO_NO_ARGS, NULL, demo_tool_notify_changed},
	{"log", "Send a log message notification at level info.",
	 DEMO_ONE_STRING("message", "What to log"), NULL, demo_tool_log},
};

static void demo_tool_extra(json_t *id, json_t *args, json_t *params)
{
	demo_call_reply(id, demo_json_result(json_incref(args)));
}

static json_t *demo_build_tools(void)
{
	json_t *tools = json_array();
	json_error_t jerr;

	for (size_t i = 0; i < DEMO_NELEM(demo_tools); i++) {
		const struct demo_tool *t = &demo_tools[i];
		json_t *in = json_loads(t->input_schema, 0, &jerr);
		json_t *tool;

		if (!in) {
			demo_log("bad schema of %s: %s", t->name, jerr.text);
			abort();
		}
		tool = json_pack("{s:s, s:s, s:o}", "name", t->name,
				 "description", t->description, "inputSchema",
				 in);
		if (t->output_schema)
			json_object_set_new(
				tool, "outputSchema",
				json_loads(t->output_schema, 0, NULL));
		json_array_append_new(tools, tool);
	}
	for (int64_t i = 1; i <= demo.o.extra_tools; i++) {
		char name[32];

		snprintf(name, sizeof(name), "tool_%lld", (long long)i);
		json_array_append_new(
			tools,
			json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s}}}}", "name",
				  name, "description",
				  "Echo the arguments back as JSON.",
				  "inputSchema", "type", "object", "properties",
				  "text", "type", "string"));
	}
	return tools;
}

static bool demo_type_ok(const char *type, json_t *v)
{
	if (strcmp(type, "string") == 0)
		return json_is_string(v);
	if (strcmp(type, "number") == 0)
		return json_is_number(v);
	if (strcmp(type, "integer") == 0)
		return json_is_integer(v);
	if (strcmp(type, "boolean") == 0)
		return json_is_boolean(v);
	if (strcmp(type, "object") == 0)
		return json_is_object(v);
	if (strcmp(type, "array") == 0)
		return json_is_array(v);
	return true;
}

/* The subset of JSON Schema our own schemas use. Returns 0 or writes why the
 * arguments do not fit into msg and returns -EINVAL. */
static int demo_check_args(json_t *schema, json_t *args, char *msg,
			   size_t msgsz)
{
	json_t *props = json_object_get(schema, "properties");
	json_t *req = json_object_get(schema, "required");
	const char *key;
	json_t *spec;
	size_t i;
	json_t *r;

	json_array_foreach(req, i, r)
	{
		if (!json_object_get(args, json_string_value(r))) {
			snprintf(msg, msgsz, "missing required argument \"%s\"",
				 json_string_value(r));
			return -EINVAL;
		}
	}
	json_object_foreach(props, key, spec)
	{
		json_t *v = json_object_get(args, key);
		const char *type =
			json_string_value(json_object_get(spec, "type"));
		json_t *min = json_object_get(spec, "minimum");
		json_t *max = json_object_get(spec, "maximum");

		if (!v)
			continue;
		if (type && !demo_type_ok(type, v)) {
			snprintf(msg, msgsz, "argument \"%s\" must be %s %s",
				 key, type[0] == 'i' ? "an" : "a", type);
			return -EINVAL;
		}
		if ((min && json_number_value(v) < json_number_value(min)) ||
		    (max && json_number_value(v) > json_number_value(max))) {
			snprintf(msg, msgsz,
				 "argument \"%s\" must be between %g and %g",
				 key, json_number_value(min),
				 json_number_value(max));
			return -EINVAL;
		}
	}
	return 0;
}

static void demo_record_call(const char *tool)
{
	json_t *n = json_object_get(demo.counts, tool);

	json_object_set_new(demo.counts, tool,
			    json_integer(json_integer_value(n) + 1));
	demo_count_line("call %s", tool);
}

static void demo_tools_call(json_t *id, json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments");
	json_t *tool = NULL, *t, *empty = NULL;
	char msg[256];
	size_t i;

	if (!name) {
		demo_call_error(id, RPC_INVALID_PARAMS,
				"tools/call needs a string \"name\"");
		return;
	}
	if (args && !json_is_object(args)) {
		demo_call_error(id, RPC_INVALID_PARAMS,
				"\"arguments\" must be an object");
		return;
	}
	json_array_foreach(demo.tools, i, t)
	{
		if (strcmp(json_string_value(json_object_get(t, "name")),
			   name) == 0) {
			tool = t;
			break;
		}
	}
	if (!tool) {
		snprintf(msg, sizeof(msg), "Unknown tool: %.128s", name);
		demo_call_error(id, RPC_INVALID_PARAMS, msg);
		return;
	}
	/* Before argument checks: a test that kills the server mid-call
	 * should not depend on the arguments it sent. */
	if (demo.o.die_in_call && strcmp(name, demo.o.die_in_call) == 0) {
		demo_count_line("call %s", name);
		demo_crash(5, "--die-in-call");
	}
	if (!args)
		args = empty = json_object();
	/* Per MCP 2025-11-25, bad arguments are a tool error the model can
	 * read, not a protocol error. */
	if (demo_check_args(json_object_get(tool, "inputSchema"), args, msg,
			    sizeof(msg)) < 0) {
		demo_call_reply(id, demo_text_result(msg, true));
		goto out;
	}
	demo_record_call(name);
	if (i < DEMO_NELEM(demo_tools))
		demo_tools[i].run(id, args, params);
	else
		demo_tool_extra(id, args, params);
out:
	json_decref(empty);
}

/* ---- lists, prompts, resources ---- */

/* Answers a list request with one page of all (borrowed) under key. */
static void demo_reply_page(json_t *id, json_t *params, const char *key,
			    json_t *all)
{
	json_t *cursor = json_object_get(params, "cursor");
	size_t total = json_array_size(all), off = 0, page;
	json_t *items, *result;

	if (cursor && !json_is_null(cursor)) {
		const char *c = json_string_value(cursor);
		size_t klen = strlen(key);
		char *end;
		unsigned long long v;

		if (!c || demo.o.page_size <= 0 || strncmp(c, key, klen) != 0 ||
		    c[klen] != '@' || c[klen + 1] < '1' || c[klen + 1] > '9')
			goto bad;
		errno = 0;
		v = strtoull(c + klen + 1, &end, 10);
		if (errno || *end || v >= total ||
		    v % (unsigned long long)demo.o.page_size)
			goto bad;
		off = (size_t)v;
	}
	page = demo.o.page_size > 0 ? (size_t)demo.o.page_size : total;
	items = json_array();
	for (size_t i = off; i < total && i < off + page; i++)
		json_array_append(items, json_array_get(all, i));
	result = json_pack("{s:o}", key, items);
	if (off + page < total) {
		char next[DEMO_MAX_CURSOR];

		snprintf(next, sizeof(next), "%s@%zu", key, off + page);
		json_object_set_new(result, "nextCursor", json_string(next));
	}
	demo_reply(id, result);
	return;
bad:
	demo_reply_error(id, RPC_INVALID_PARAMS, "Invalid cursor",
			 json_incref(cursor));
}

static void demo_m_tools_list(json_t *id, json_t *params)
{
	demo_reply_page(id, params, "tools", demo.tools);
}

static void demo_m_prompts_list(json_t *id, json_t *params)
{
	json_t *all =
		json_pack("[{s:s, s:s, s:s, s:[{s:s, s:s, s:b}]}]", "name",
			  "greeting", "title", "Greeting", "description",
			  "Greets someone by name.", "arguments", "name",
			  "name", "description", "Who to greet", "required", 1);

	demo_reply_page(id, params, "prompts", all);
	json_decref(all);
}

static void demo_m_prompts_get(json_t *id, json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments");
	const char *who = json_string_value(json_object_get(args, "name"));
	char *text;

	if (!name || strcmp(name, "greeting") != 0) {
		demo_reply_error(id, RPC_INVALID_PARAMS, "Unknown prompt",
				 json_incref(json_object_get(params, "name")));
		return;
	}
	if (!who) {
		demo_reply_error(id, RPC_INVALID_PARAMS,
				 "Missing required argument \"name\"", NULL);
		return;
	}
	if (asprintf(&text, "Hello, %s!", who) < 0)
		abort();
	demo_reply(id,
		   json_pack("{s:s, s:[{s:s, s:{s:s, s:s}}]}", "description",
			     "A greeting", "messages", "role", "user",
			     "content", "type", "text", "text", text));
	free(text);
}

static void demo_m_resources_list(json_t *id, json_t *params)
{
	json_t *all =
		json_pack("[{s:s, s:s, s:s, s:s}]", "uri", "demo://readme",
			  "name", "readme", "description", "About this server.",
			  "mimeType", "text/plain");

	demo_reply_page(id, params, "resources", all);
	json_decref(all);
}

static void demo_m_templates_list(json_t *id, json_t *params)
{
	json_t *all =
		json_pack("[{s:s, s:s, s:s, s:s}]", "uriTemplate",
			  "demo://item/{id}", "name", "item", "description",
			  "An item by id.", "mimeType", "text/plain");

	demo_reply_page(id, params, "resourceTemplates", all);
	json_decref(all);
}

/* The text of a known resource, or NULL. Caller frees. */
static char *demo_resource_text(const char *uri)
{
	static const char item[] = "demo://item/";
	const char *rid;
	char *text;

	if (strcmp(uri, "demo://readme") == 0) {
		if (asprintf(&text,
			     "This is the \"%s\" demo server of mcpvisor. "
			     "Try the echo, add and sleep tools.\n",
			     demo.o.name) < 0)
			abort();
		return text;
	}
	if (strncmp(uri, item, sizeof(item) - 1) != 0)
		return NULL;
	rid = uri + sizeof(item) - 1;
	if (!*rid || strlen(rid) > DEMO_MAX_ITEM_ID || strchr(rid, '/'))
		return NULL;
	if (asprintf(&text, "item %s", rid) < 0)
		abort();
	return text;
}

static void demo_not_found(json_t *id, json_t *uri)
{
	demo_reply_error(id, MCP_RESOURCE_NOT_FOUND, "Resource not found",
			 json_pack("{s:O}", "uri", uri));
}

static void demo_m_resources_read(json_t *id, json_t *params)
{
	json_t *uri = json_object_get(params, "uri");
	char *text;

	if (!json_is_string(uri)) {
		demo_reply_error(id, RPC_INVALID_PARAMS,
				 "resources/read needs a string \"uri\"", NULL);
		return;
	}
	text = demo_resource_text(json_string_value(uri));
	if (!text) {
		demo_not_found(id, uri);
		return;
	}
	demo_reply(id, json_pack("{s:[{s:O, s:s, s:o}]}", "contents", "uri",
				 uri, "mimeType", "text/plain", "text",
				 demo_string(text)));
	free(text);
}

static void demo_subscription(json_t *id, json_t *params, bool on)
{
	json_t *uri = json_object_get(params, "uri");
	char *text;

	if (!json_is_string(uri)) {
		demo_reply_error(id, RPC_INVALID_PARAMS,
				 "needs a string \"uri\"", NULL);
		return;
	}
	text = demo_resource_text(json_string_value(uri));
	if (!text) {
		demo_not_found(id, uri);
		return;
	}
	free(text);
	if (on)
		json_object_set_new(demo.subscribed, json_string_value(uri),
				    json_true());
	else
		json_object_del(demo.subscribed, json_string_value(uri));
	demo_reply(id, json_object());
}

static void demo_m_subscribe(json_t *id, json_t *params)
{
	demo_subscription(id, params, true);
}

static void demo_m_unsubscribe(json_t *id, json_t *params)
{
	demo_subscription(id, params, false);
}

static void demo_m_set_level(json_t *id, json_t *params)
{
	const char *level = json_string_value(json_object_get(params, "level"));

	for (size_t i = 0; level && i < DEMO_NELEM(demo_levels); i++) {
		if (strcmp(level, demo_levels[i]) == 0) {
			demo.log_level = (int)i;
			demo_reply(id, json_object());
			return;
		}
	}
	demo_reply_error(id, RPC_INVALID_PARAMS, "Invalid log level", NULL);
}

static void demo_m_complete(json_t *id, json_t *params)
{
	json_t *ref = json_object_get(params, "ref");
	json_t *arg = json_object_get(params, "argument");
	const char *type = json_string_value(json_object_get(ref, "type"));
	const char *argname = json_string_value(json_object_get(arg, "name"));
	const char *value = json_string_value(json_object_get(arg, "value"));
	const char *const *list = NULL;
	size_t n = 0;
	json_t *values;

	if (!type || !argname || !value) {
		demo_reply_error(id, RPC_INVALID_PARAMS,
				 "completion/complete needs ref.type, "
				 "argument.name and argument.value",
				 NULL);
		return;
	}
	if (strcmp(type, "ref/prompt") == 0) {
		const char *p = json_string_value(json_object_get(ref, "name"));

		if (!p || strcmp(p, "greeting") != 0) {
			demo_reply_error(id, RPC_INVALID_PARAMS,
					 "Unknown prompt", NULL);
			return;
		}
		if (strcmp(argname, "name") == 0) {
			list = demo_names;
			n = DEMO_NELEM(demo_names);
		}
	} else if (strcmp(type, "ref/resource") == 0) {
		const char *u = json_string_value(json_object_get(ref, "uri"));

		if (u && strcmp(u, "demo://item/{id}") == 0 &&
		    strcmp(argname, "id") == 0) {
			list = demo_item_ids;
			n = DEMO_NELEM(demo_item_ids);
		}
	} else {
		demo_reply_error(id, RPC_INVALID_PARAMS, "Unknown ref type",
				 NULL);
		return;
	}
	values = json_array();
	for (size_t i = 0; i < n; i++)
		if (strncasecmp(list[i], value, strlen(value)) == 0)
			json_array_append_new(values, json_string(list[i]));
	demo_reply(id, json_pack("{s:{s:O, s:I, s:b}}", "completion", "values",
				 values, "total",
				 (json_int_t)json_array_size(values), "hasMore",
				 0));
	json_decref(values);
}

static void demo_m_initialize(json_t *id, json_t *params)
{
	const char *want =
		json_string_value(json_object_get(params, "protocolVersion"));
	const char *version = DEMO_LATEST_PROTOCOL;

	if (demo.o.auth_fail) {
		demo_reply_error(id, MCP_UNAUTHORIZED,
				 "Unauthorized: token rejected",
				 json_pack("{s:i}", "status", 401));
		return;
	}
	if (!want) {
		demo_reply_error(id, RPC_INVALID_PARAMS,
				 "initialize needs a string protocolVersion",
				 NULL);
		return;
	}
	for (size_t i = 0; i < DEMO_NELEM(demo_protocols); i++)
		if (strcmp(want, demo_protocols[i]) == 0)
			version = demo_protocols[i];
	if (demo.o.tools_by_caps) {
		/* As some servers do: tools that need the client's sampling
		 * or elicitation exist only for a client that has it. */
		json_t *caps = json_object_get(params, "capabilities");
		json_t *kept = json_array();
		size_t i;
		json_t *t;

		json_array_foreach(demo.tools, i, t)
		{
			const char *n =
				json_string_value(json_object_get(t, "name"));
			if ((strcmp(n, "sample") == 0 &&
			     !json_object_get(caps, "sampling")) ||
			    (strcmp(n, "elicit") == 0 &&
			     !json_object_get(caps, "elicitation")))
				continue;
			json_array_append(kept, t);
		}
		json_decref(demo.tools);
		demo.tools = kept;
	}
	demo_reply(
		id,
		json_pack(
			"{s:s, s:{s:{s:b}, s:{s:b}, s:{s:b, s:b}, s:{}, s:{}},"
			" s:{s:s, s:s}, s:s}",
			"protocolVersion", version, "capabilities", "tools",
			"listChanged", 1, "prompts", "listChanged", 1,
			"resources", "subscribe", 1, "listChanged", 1,
			"logging", "completions", "serverInfo", "name",
			demo.o.name, "version", DEMO_VERSION, "instructions",
			"A demo MCP server of mcpvisor, also its test fixture: "
			"echo and add for a quick try, sleep for long calls, "
			"the greeting prompt and demo:// resources."));
}

static void demo_m_ping(json_t *id, json_t *params)
{
	demo_reply(id, json_object());
}

/* A method no MCP revision has, for the runtime's pass-through: answers
 * with the params it got and this server's name. */
static void demo_m_x_echo(json_t *id, json_t *params)
{
	demo_reply(id, json_pack("{s:O,s:s}", "params",
				 params ? params : json_null(), "server",
				 demo.o.name));
}

static const struct {
	const char *method;
	void (*fn)(json_t *id, json_t *params);
} demo_methods[] = {
	{"initialize", demo_m_initialize},
	{"ping", demo_m_ping},
	{"x-demo/echo", demo_m_x_echo},
	{"tools/list", demo_m_tools_list},
	{"tools/call", demo_tools_call},
	{"prompts/list", demo_m_prompts_list},
	{"prompts/get", demo_m_prompts_get},
	{"resources/list", demo_m_resources_list},
	{"resources/templates/list", demo_m_templates_list},
	{"resources/read", demo_m_resources_read},
	{"resources/subscribe", demo_m_subscribe},
	{"resources/unsubscribe", demo_m_unsubscribe},
	{"logging/setLevel", demo_m_set_level},
	{"completion/complete", demo_m_complete},
};

/* ---- messages from the client ---- */

static void demo_sleep_free(struct demo_sleep *s)
{
	if (!s)
		return;
	json_decref(s->id);
	json_decref(s->token);
	free(s);
}

static void demo_out_free(struct demo_out *out)
{
	if (!out)
		return;
	json_decref(out->call_id);
	free(out);
}

static void demo_cancel(json_t *params)
{
	json_t *rid = json_object_get(params, "requestId");

	for (struct demo_sleep **pp = &demo.sleeps; rid && *pp;
	     pp = &(*pp)->next) {
		struct demo_sleep *s = *pp;

		if (s->hs == demo.hs && json_equal(s->id, rid)) {
			*pp = s->next;
			demo.npending--;
			demo_sleep_free(s);
			demo_count_line("cancelled sleep");
			return;
		}
	}
	for (struct demo_out **pp = &demo.outs; rid && *pp; pp = &(*pp)->next) {
		struct demo_out *out = *pp;

		if (out->hs == demo.hs && json_equal(out->call_id, rid)) {
			*pp = out->next;
			demo.npending--;
			demo_out_free(out);
			demo_count_line("cancelled client request");
			return;
		}
	}
}

static void demo_notification(const char *method, json_t *params)
{
	if (strcmp(method, "notifications/initialized") == 0) {
		if (demo.initialized)
			return;
		demo.initialized = true;
		if (demo.o.exit_after_init_ms >= 0) {
			demo.exit_at =
				demo_now_ms() + demo.o.exit_after_init_ms;
			demo_log("will exit with code 3 in %lld ms "
				 "(--exit-after-init)",
				 (long long)demo.o.exit_after_init_ms);
		}
	} else if (strcmp(method, "notifications/cancelled") == 0) {
		demo_cancel(params);
	}
}

static char *demo_client_text(json_t *result)
{
	json_t *content = json_object_get(result, "content");
	json_t *part;
	size_t i;
	char *text = NULL, *tmp;

	if (json_is_object(content)) {
		const char *t =
			json_string_value(json_object_get(content, "text"));

		return strdup(t ? t : "");
	}
	json_array_foreach(content, i, part)
	{
		const char *t =
			json_string_value(json_object_get(part, "text"));

		if (!t)
			continue;
		if (asprintf(&tmp, "%s%s", text ? text : "", t) < 0)
			abort();
		free(text);
		text = tmp;
	}
	return text ? text : strdup("");
}

static void demo_response(json_t *msg)
{
	const char *key = json_string_value(json_object_get(msg, "id"));
	json_t *result = json_object_get(msg, "result");
	json_t *error = json_object_get(msg, "error");
	struct demo_out **pp, *out = NULL;
	char *text;

	for (pp = &demo.outs; key && *pp; pp = &(*pp)->next) {
		if ((*pp)->hs == demo.hs && strcmp((*pp)->key, key) == 0) {
			out = *pp;
			*pp = out->next;
			demo.npending--;
			break;
		}
	}
	if (!out) {
		demo_log("response to an unknown request ignored");
		return;
	}
	demo.cause = out->call_id;
	if (error) {
		const char *emsg =
			json_string_value(json_object_get(error, "message"));

		if (asprintf(&text, "client error %lld: %s",
			     (long long)json_integer_value(
				     json_object_get(error, "code")),
			     emsg ? emsg : "(no message)") < 0)
			abort();
		demo_call_reply(out->call_id, demo_text_result(text, true));
		free(text);
	} else if (out->kind == DEMO_OUT_SAMPLE) {
		text = demo_client_text(result);
		demo_call_reply(out->call_id, demo_text_result(text, false));
		free(text);
	} else if (out->kind == DEMO_OUT_ELICIT) {
		json_t *action = json_object_get(result, "action");
		json_t *content = json_object_get(result, "content");
		json_t *r = json_pack("{s:O}", "action",
				      action ? action : json_null());

		if (content)
			json_object_set(r, "content", content);
		demo_call_reply(out->call_id, demo_json_result(r));
	} else {
		json_t *roots = json_object_get(result, "roots");

		demo_call_reply(out->call_id,
				demo_json_result(roots ? json_incref(roots)
						       : json_array()));
	}
	demo_out_free(out);
	demo.cause = NULL;
}

static void demo_dispatch(json_t *msg)
{
	json_t *version = json_object_get(msg, "jsonrpc");
	json_t *method = json_object_get(msg, "method");
	json_t *id = json_object_get(msg, "id");
	json_t *params = json_object_get(msg, "params"), *empty = NULL;
	bool id_ok = json_is_string(id) || json_is_integer(id);
	char why[160];

	if (!json_is_object(msg)) {
		demo_reply_error(NULL, RPC_INVALID_REQUEST,
				 "Invalid Request: not an object", NULL);
		return;
	}
	if (!json_is_string(version) ||
	    strcmp(json_string_value(version), "2.0") != 0) {
		demo_reply_error(id_ok ? id : NULL, RPC_INVALID_REQUEST,
				 "Invalid Request: jsonrpc must be \"2.0\"",
				 NULL);
		return;
	}
	if (!method) {
		if (id_ok && (json_object_get(msg, "result") ||
			      json_object_get(msg, "error"))) {
			demo_response(msg);
			return;
		}
		demo_reply_error(id_ok ? id : NULL, RPC_INVALID_REQUEST,
				 "Invalid Request: no method", NULL);
		return;
	}
	if (!json_is_string(method) || (id && !id_ok)) {
		demo_reply_error(id_ok ? id : NULL, RPC_INVALID_REQUEST,
				 "Invalid Request: method must be a string "
				 "and id a string or an integer",
				 NULL);
		return;
	}
	if (params && !json_is_object(params)) {
		if (id)
			demo_reply_error(id, RPC_INVALID_PARAMS,
					 "params must be an object", NULL);
		return;
	}
	if (!params)
		params = empty = json_object();
	if (!id) {
		demo_notification(json_string_value(method), params);
		goto out;
	}
	for (size_t i = 0; i < DEMO_NELEM(demo_methods); i++) {
		if (strcmp(json_string_value(method), demo_methods[i].method) ==
		    0) {
			demo_methods[i].fn(id, params);
			goto out;
		}
	}
	snprintf(why, sizeof(why), "Method not found: %.100s",
		 json_string_value(method));
	demo_reply_error(id, RPC_METHOD_NOT_FOUND, why, NULL);
out:
	json_decref(empty);
}

static void demo_handle_line(char *line, size_t len)
{
	json_error_t jerr;
	json_t *msg;
	size_t i;

	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' ||
			   line[len - 1] == '\t'))
		len--;
	for (i = 0; i < len && (line[i] == ' ' || line[i] == '\t'); i++)
		;
	if (i == len)
		return;
	msg = json_loadb(line, len, JSON_DECODE_ANY, &jerr);
	if (!msg) {
		demo_reply_error(NULL, RPC_PARSE_ERROR, "Parse error",
				 json_pack("{s:s, s:i}", "error", jerr.text,
					   "position", jerr.position));
		return;
	}
	demo_dispatch(msg);
	json_decref(msg);
}

/* Splits input into lines; a line over DEMO_MAX_LINE is logged and skipped
 * up to its newline without buffering it. */
static void demo_feed(const char *p, size_t n)
{
	while (n > 0) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl ? (size_t)(nl - p) : n;

		if (demo.skipping) {
			demo.skipping = !nl;
		} else if (demo.inlen + take > DEMO_MAX_LINE) {
			demo_log("skipping an input line over %d bytes",
				 DEMO_MAX_LINE);
			demo.inlen = 0;
			demo.skipping = !nl;
		} else {
			if (demo.inlen + take > demo.incap) {
				size_t cap = demo.incap ? demo.incap : 4096;

				while (cap < demo.inlen + take)
					cap *= 2;
				demo.inbuf = realloc(demo.inbuf, cap);
				if (!demo.inbuf)
					abort();
				demo.incap = cap;
			}
			memcpy(demo.inbuf + demo.inlen, p, take);
			demo.inlen += take;
			if (nl) {
				size_t len = demo.inlen;

				demo.inlen = 0;
				demo_handle_line(demo.inbuf, len);
			}
		}
		p += take + (nl ? 1 : 0);
		n -= take + (nl ? 1 : 0);
	}
}

/* ---- lifetime ---- */

static void demo_cleanup(void)
{
	while (demo.sleeps) {
		struct demo_sleep *s = demo.sleeps;

		demo.sleeps = s->next;
		demo_sleep_free(s);
	}
	while (demo.outs) {
		struct demo_out *out = demo.outs;

		demo.outs = out->next;
		demo_out_free(out);
	}
	json_decref(demo.tools);
	json_decref(demo.counts);
	json_decref(demo.subscribed);
	free(demo.inbuf);
	if (demo.count_fd >= 0)
		close(demo.count_fd);
	close(demo.sig_pipe[0]);
	close(demo.sig_pipe[1]);
}

static void demo_shutdown(const char *why)
{
	demo_log("%s: exiting", why);
	demo_cleanup();
	exit(0);
}

static void demo_read_stdin(void)
{
	static char chunk[DEMO_READ_CHUNK];
	ssize_t n = read(STDIN_FILENO, chunk, sizeof(chunk));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n > 0) {
		demo_feed(chunk, (size_t)n);
		return;
	}
	if (n < 0)
		demo_log("stdin: %s", strerror(errno));
	if (demo.inlen > 0 && !demo.skipping) {
		size_t len = demo.inlen;

		demo.inlen = 0;
		demo_handle_line(demo.inbuf, len);
	}
	if (!demo.o.ignore_sigterm)
		demo_shutdown("stdin closed");
	demo_log("stdin closed; staying up until killed (--ignore-sigterm)");
	demo.stdin_open = false;
}

static void demo_progress(struct demo_sleep *s, int64_t now)
{
	char msg[96];
	int64_t done = now - s->started;

	snprintf(msg, sizeof(msg), "slept %lld of %lld ms", (long long)done,
		 (long long)s->ms);
	demo_notify("notifications/progress",
		    json_pack("{s:O, s:I, s:I, s:s}", "progressToken", s->token,
			      "progress", (json_int_t)done, "total",
			      (json_int_t)s->ms, "message", msg));
}

static void demo_run_timers(int64_t now)
{
	struct demo_sleep **pp = &demo.sleeps;

	if (demo.exit_at >= 0 && now >= demo.exit_at)
		demo_crash(3, "--exit-after-init");
	while (*pp) {
		struct demo_sleep *s = *pp;

		demo.hs = s->hs;
		demo.cause = s->id;
		if (now >= s->due) {
			char text[64];

			*pp = s->next;
			demo.npending--;
			snprintf(text, sizeof(text), "slept %lld ms",
				 (long long)s->ms);
			demo_call_reply(s->id, demo_text_result(text, false));
			demo_sleep_free(s);
			demo.hs = NULL;
			demo.cause = NULL;
			continue;
		}
		if (s->token && now >= s->next_progress) {
			demo_progress(s, now);
			s->next_progress += DEMO_PROGRESS_MS;
			if (s->next_progress <= now)
				s->next_progress = now + DEMO_PROGRESS_MS;
		}
		pp = &s->next;
		demo.hs = NULL;
		demo.cause = NULL;
	}
}

static int demo_poll_timeout(int64_t now)
{
	int64_t next = INT64_MAX;

	if (demo.stdin_open && now < demo.ready_at)
		next = demo.ready_at;
	if (demo.exit_at >= 0 && demo.exit_at < next)
		next = demo.exit_at;
	for (struct demo_sleep *s = demo.sleeps; s; s = s->next) {
		if (s->due < next)
			next = s->due;
		if (s->token && s->next_progress < next)
			next = s->next_progress;
	}
	if (next == INT64_MAX)
		return -1;
	if (next <= now)
		return 0;
	return next - now > INT_MAX ? INT_MAX : (int)(next - now);
}

static void demo_sigterm_cb(int sig)
{
	int saved = errno;
	ssize_t r;

	demo_term = 1;
	r = write(demo.sig_pipe[1], "t", 1);
	(void)r;
	errno = saved;
}

static void demo_loop(void)
{
	for (;;) {
		struct pollfd pfd[2];
		int64_t now;
		nfds_t n = 0;

		if (demo_term)
			demo_shutdown("SIGTERM");
		now = demo_now_ms();
		demo_run_timers(now);
		pfd[n++] = (struct pollfd){.fd = demo.sig_pipe[0],
					   .events = POLLIN};
		/* --slow-start: stdin stays unread until ready_at. */
		if (demo.stdin_open && now >= demo.ready_at)
			pfd[n++] = (struct pollfd){.fd = STDIN_FILENO,
						   .events = POLLIN};
		if (poll(pfd, n, demo_poll_timeout(now)) < 0) {
			if (errno == EINTR)
				continue;
			demo_log("poll: %s", strerror(errno));
			demo_cleanup();
			exit(1);
		}
		if (pfd[0].revents) {
			char drain[16];
			ssize_t r =
				read(demo.sig_pipe[0], drain, sizeof(drain));

			(void)r;
		}
		if (n > 1 && pfd[1].revents)
			demo_read_stdin();
	}
}

static void demo_spawn_grandchild(void)
{
	pid_t pid = fork();

	if (pid < 0) {
		demo_log("fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		/* Hold nothing of the parent's pipes, so they can close while
		 * this process lives on in the group. */
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		for (;;)
			pause();
	}
	demo.grandchild = pid;
	demo_log("grandchild %d", (int)pid);
}

/* A daemon-style child: its own session (so outside our process group),
 * running `sleep`, as servers that start background helpers do. */
static void demo_spawn_setsid_child(void)
{
	pid_t pid = fork();

	if (pid < 0) {
		demo_log("fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		setsid();
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		execlp("sleep", "sleep", "300", (char *)NULL);
		for (;;)
			pause();
	}
	demo.setsid_child = pid;
	demo_log("setsid child %d", (int)pid);
}

/* ---- over HTTP (fixture-http): one state, but a log level per session -- */

struct demo_http_session {
	struct fxh_session *hs;
	int log_level;
};

static void *demo_http_open(struct fxh_session *hs)
{
	struct demo_http_session *u = calloc(1, sizeof(*u));

	if (!u)
		abort();
	u->hs = hs;
	u->log_level = DEMO_LEVEL_INFO;
	return u;
}

static void demo_http_message(void *user, json_t *msg)
{
	struct demo_http_session *u = user;
	json_t *id = json_object_get(msg, "id");

	demo.hs = u->hs;
	demo.cause = json_object_get(msg, "method") ? id : NULL;
	demo.log_level = u->log_level;
	demo_dispatch(msg);
	u->log_level = demo.log_level;
	demo.hs = NULL;
	demo.cause = NULL;
}

/* What a session left running dies with it. */
static void demo_http_close(void *user)
{
	struct demo_http_session *u = user;

	for (struct demo_sleep **pp = &demo.sleeps, *s; (s = *pp);) {
		if (s->hs != u->hs) {
			pp = &s->next;
			continue;
		}
		*pp = s->next;
		demo.npending--;
		demo_sleep_free(s);
	}
	for (struct demo_out **pp = &demo.outs, *out; (out = *pp);) {
		if (out->hs != u->hs) {
			pp = &out->next;
			continue;
		}
		*pp = out->next;
		demo.npending--;
		demo_out_free(out);
	}
	free(u);
}

static int demo_http_tick(void)
{
	if (demo_term)
		return FXH_STOP;
	demo_run_timers(demo_now_ms());
	return demo_poll_timeout(demo_now_ms());
}

static int demo_http_serve(void)
{
	static const struct fxh_ops ops = {
		.open = demo_http_open,
		.message = demo_http_message,
		.close = demo_http_close,
		.tick = demo_http_tick,
	};
	int rc;

	demo.stdin_open = false;
	demo.http.wake_fd = demo.sig_pipe[0];
	demo.http.listen_delay_ms = demo.o.slow_start_ms;
	rc = fxh_serve(&demo.http, &ops);
	demo_log("%s: exiting", demo_term ? "SIGTERM" : "server stopped");
	demo_cleanup();
	return rc;
}

static void demo_usage(FILE *out)
{
	fputs("usage: demo-server [--name NAME] [--count-file PATH]\n"
	      "    [--exit-at-start CODE] [--exit-after-init MS]\n"
	      "    [--exit-after-calls N] [--die-in-call TOOL]\n"
	      "    [--slow-start MS] [--ignore-sigterm] [--grandchild]\n"
	      "    [--spawn-setsid-child]\n"
	      "    [--auth-fail] [--garbage] [--stderr-lines N]\n"
	      "    [--page-size N] [--tools N] [--echo-repeat N]\n"
	      "    [--tools-by-caps] [--http PORT [HTTP flags]]\n"
	      "A demo MCP server on stdio (or HTTP), and mcpvisor's test "
	      "fixture.\nOver HTTP, sessions share the server's state but "
	      "for the log level;\n--garbage is stdio only.\n",
	      out);
	fputs(fxh_usage, out);
}

static void demo_bad_usage(const char *fmt, const char *arg)
{
	fputs("demo-server: ", stderr);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	demo_usage(stderr);
	exit(2);
}

static int64_t demo_parse_num(const char *flag, const char *v, int64_t min,
			      int64_t max)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno || end == v || *end || n < min || n > max)
		demo_bad_usage("bad number for %s", flag);
	return n;
}

static bool demo_takes_value(const char *flag)
{
	static const char *const flags[] = {
		"--name",
		"--count-file",
		"--exit-at-start",
		"--exit-after-init",
		"--exit-after-calls",
		"--die-in-call",
		"--slow-start",
		"--stderr-lines",
		"--page-size",
		"--tools",
		"--echo-repeat",
	};

	for (size_t i = 0; i < DEMO_NELEM(flags); i++)
		if (strcmp(flag, flags[i]) == 0)
			return true;
	return false;
}

static void demo_parse_args(int argc, char **argv, struct demo_opts *o)
{
	*o = (struct demo_opts){.name = "demo", .exit_after_init_ms = -1};
	for (int i = 1; i < argc; i++) {
		const char *f = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = true;
		int http = fxh_parse_flag(&demo.http, argc, argv, &i);

		if (http < 0) {
			demo_usage(stderr);
			exit(2);
		}
		if (http > 0)
			continue;
		if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
			demo_usage(stdout);
			exit(0);
		} else if (strcmp(f, "--ignore-sigterm") == 0) {
			o->ignore_sigterm = true;
			takes = false;
		} else if (strcmp(f, "--grandchild") == 0) {
			o->grandchild = true;
			takes = false;
		} else if (strcmp(f, "--spawn-setsid-child") == 0) {
			o->setsid_child = true;
			takes = false;
		} else if (strcmp(f, "--auth-fail") == 0) {
			o->auth_fail = true;
			takes = false;
		} else if (strcmp(f, "--garbage") == 0) {
			o->garbage = true;
			takes = false;
		} else if (strcmp(f, "--tools-by-caps") == 0) {
			o->tools_by_caps = true;
			takes = false;
		}
		if (!takes)
			continue;
		if (!demo_takes_value(f))
			demo_bad_usage("unknown argument %s", f);
		if (!v)
			demo_bad_usage("%s needs a value", f);
		if (strcmp(f, "--name") == 0) {
			json_t *probe = json_string(v);
			bool utf8 = probe != NULL;

			json_decref(probe);
			if (!utf8 || !*v || strlen(v) > DEMO_MAX_NAME)
				demo_bad_usage("bad --name %s", v);
			o->name = v;
		} else if (strcmp(f, "--count-file") == 0) {
			o->count_file = v;
		} else if (strcmp(f, "--exit-at-start") == 0) {
			o->exit_at_start = true;
			o->exit_at_start_code =
				(int)demo_parse_num(f, v, 0, 255);
		} else if (strcmp(f, "--exit-after-init") == 0) {
			o->exit_after_init_ms =
				demo_parse_num(f, v, 0, DEMO_MAX_FLAG_MS);
		} else if (strcmp(f, "--exit-after-calls") == 0) {
			o->exit_after_calls =
				demo_parse_num(f, v, 1, INT64_MAX);
		} else if (strcmp(f, "--die-in-call") == 0) {
			if (!*v || strlen(v) > DEMO_MAX_NAME)
				demo_bad_usage("bad --die-in-call %s", v);
			o->die_in_call = v;
		} else if (strcmp(f, "--slow-start") == 0) {
			o->slow_start_ms =
				demo_parse_num(f, v, 0, DEMO_MAX_FLAG_MS);
		} else if (strcmp(f, "--stderr-lines") == 0) {
			o->stderr_lines =
				demo_parse_num(f, v, 0, DEMO_MAX_STDERR_LINES);
		} else if (strcmp(f, "--page-size") == 0) {
			o->page_size =
				demo_parse_num(f, v, 1, DEMO_MAX_PAGE_SIZE);
		} else if (strcmp(f, "--tools") == 0) {
			o->extra_tools =
				demo_parse_num(f, v, 0, DEMO_MAX_EXTRA_TOOLS);
		} else if (strcmp(f, "--echo-repeat") == 0) {
			o->echo_repeat =
				demo_parse_num(f, v, 1, DEMO_MAX_ECHO_REPEAT);
		}
		i++;
	}
	if (fxh_check_opts(&demo.http) < 0)
		exit(2);
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = demo_sigterm_cb};

	demo.count_fd = -1;
	demo.exit_at = -1;
	demo.stdin_open = true;
	demo.log_level = DEMO_LEVEL_INFO;
	fxh_opts_init(&demo.http, "demo");
	demo_parse_args(argc, argv, &demo.o);

	signal(SIGPIPE, SIG_IGN);
	if (pipe2(demo.sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		demo_log("pipe: %s", strerror(errno));
		return 1;
	}
	/* No SA_RESTART: a blocked write must see SIGTERM. */
	sigemptyset(&sa.sa_mask);
	if (demo.o.ignore_sigterm)
		signal(SIGTERM, SIG_IGN);
	else
		sigaction(SIGTERM, &sa, NULL);

	if (demo.o.count_file) {
		demo.count_fd =
			open(demo.o.count_file,
			     O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (demo.count_fd < 0)
			demo_log("count file %s: %s", demo.o.count_file,
				 strerror(errno));
		demo_count_line("start %d", (int)getpid());
	}
	for (int64_t i = 1; i <= demo.o.stderr_lines; i++)
		demo_log("stderr line %lld of %lld", (long long)i,
			 (long long)demo.o.stderr_lines);
	if (demo.o.exit_at_start) {
		demo_log("exiting at start with code %d",
			 demo.o.exit_at_start_code);
		demo_log("(this is a test fixture)");
		_exit(demo.o.exit_at_start_code);
	}
	if (demo.o.grandchild)
		demo_spawn_grandchild();
	if (demo.o.setsid_child)
		demo_spawn_setsid_child();

	demo.tools = demo_build_tools();
	demo.counts = json_object();
	demo.subscribed = json_object();
	if (demo.http.on)
		return demo_http_serve();
	demo.ready_at = demo_now_ms() + demo.o.slow_start_ms;
	if (demo.o.slow_start_ms > 0)
		demo_log("slow start: reading nothing for %lld ms",
			 (long long)demo.o.slow_start_ms);
	demo_log("\"%s\" ready on stdio (pid %d)", demo.o.name, (int)getpid());
	demo_loop();
	return 0;
}
