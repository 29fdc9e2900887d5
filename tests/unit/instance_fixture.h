/*
 * The instance under test and its fake transport: an upstream_ops whose
 * facts (messages, faults, lost requests, drains, owned processes) the
 * tests script, the fake clock, and helpers to make requests and read
 * what the instance sent. Shared by test_instance.c and
 * test_instance_faults.c.
 */
#ifndef MCPV_TESTS_INSTANCE_FIXTURE_H
#define MCPV_TESTS_INSTANCE_FIXTURE_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "instance/instance_int.h"
#include "jsonrpc/jsonrpc.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/flow.h"

/* ---- the fake transport: an upstream_ops whose facts tests script ---- */

#define FAKE_MAX_LINES 64

struct upstream {
	struct upstream_cbs cbs;
	void *ctx;
	char *lines[FAKE_MAX_LINES]; /* what the instance sent, in order */
	int64_t ids[FAKE_MAX_LINES]; /* the id send was given for each */
	int nlines;
	int send_rc; /* what the next sends return */
	bool stopped, closed;
	bool paused; /* reading its output is paused */
	int pauses;  /* times it was paused */
	const char *stderr_text;
	struct httpc *http; /* what the spec carried */
	/* The spec's Authorization provider (NULL: none). */
	const char *(*authorization)(void *arg);
	void *auth_arg;
	int64_t forgot; /* the last id forget was given */
	bool probe_era; /* what the spec said */
};
#define fake_conn upstream

static struct fake_conn *conns[16];
static int nconns;
static int open_rc;
static const char *next_stderr;
static uint64_t fake_now = 1000000;
/* What on_owned told the instance's owner. */
static int owned_live, owned_gone;

static inline uint64_t fake_clock(void)
{
	return fake_now;
}

static inline int fake_open(uv_loop_t *loop, const struct upstream_spec *spec,
			    const struct upstream_cbs *cbs, void *ctx,
			    struct upstream **out)
{
	if (open_rc)
		return open_rc;
	cr_assert_lt(nconns, 16);
	struct fake_conn *c = calloc(1, sizeof *c);
	c->cbs = *cbs;
	c->ctx = ctx;
	c->stderr_text = next_stderr ? next_stderr : "";
	c->http = spec->http;
	c->authorization = spec->authorization;
	c->auth_arg = spec->auth_arg;
	c->probe_era = spec->probe_era;
	conns[nconns++] = c;
	*out = c;
	/* As a process transport does: it appeared, from inside open. */
	struct upstream_owned o = {.kind = UPSTREAM_OWNED_PROCESS,
				   .token = spec->token,
				   .pid = 4242,
				   .pgid = 4242,
				   .start_time = 1};
	cbs->on_owned(ctx, &o, true);
	return 0;
}

static inline int fake_send(struct upstream *c, const char *msg, size_t len,
			    int64_t id)
{
	if (c->stopped)
		return -EPIPE;
	if (c->send_rc)
		return c->send_rc;
	cr_assert_lt(c->nlines, FAKE_MAX_LINES);
	c->ids[c->nlines] = id;
	c->lines[c->nlines++] = strndup(msg, len);
	return 0;
}

static inline void fake_stop(struct upstream *c)
{
	c->stopped = true;
}

static inline void fake_forget(struct upstream *c, int64_t id)
{
	c->forgot = id;
}

static inline json_t *fake_describe(const struct upstream *c, bool verbose)
{
	return json_pack("{s:s,s:s,s:i}", "transport", "fake", "state",
			 "not-the-instance-s", "port", 8123);
}

static inline char *fake_log_tail(const struct upstream *c, int n)
{
	return strdup(c->stderr_text);
}

static inline void fake_pause(struct upstream *c, bool on)
{
	c->pauses += on && !c->paused;
	c->paused = on;
}

static struct upstream_ops fake_ops = {
	.kind = "fake",
	.caps = UPSTREAM_OWNS,
	.pause = fake_pause,
	.open = fake_open,
	.send = fake_send,
	.stop = fake_stop,
	.forget = fake_forget,
	.describe = fake_describe,
	.log_tail = fake_log_tail,
};

/* The server side: feed a line to the instance. */
static inline void serve_related(struct fake_conn *c, const char *line,
				 int64_t related)
{
	c->cbs.on_message(c->ctx, line, strlen(line), related);
}

static inline void serve(struct fake_conn *c, const char *line)
{
	serve_related(c, line, 0);
}

/* The n-th line the conn got, parsed. */
static inline json_t *sent(struct fake_conn *c, int n)
{
	cr_assert_lt(n, c->nlines, "line %d of %d", n, c->nlines);
	json_t *m = json_loads(c->lines[n], 0, NULL);
	cr_assert_not_null(m);
	return m;
}

/* Finds the last line that has method; its id in *id. */
static inline bool sent_method(struct fake_conn *c, const char *method,
			       int64_t *id)
{
	for (int i = c->nlines - 1; i >= 0; i--) {
		json_t *m = sent(c, i);
		const char *mm =
			json_string_value(json_object_get(m, "method"));
		bool hit = mm && strcmp(mm, method) == 0;
		if (hit && id)
			*id = json_integer_value(json_object_get(m, "id"));
		json_decref(m);
		if (hit)
			return true;
	}
	return false;
}

/* Times method was sent on c. */
static inline int sent_count(struct fake_conn *c, const char *method)
{
	int n = 0;
	for (int i = 0; i < c->nlines; i++) {
		json_t *m = sent(c, i);
		const char *mm =
			json_string_value(json_object_get(m, "method"));
		n += mm && strcmp(mm, method) == 0;
		json_decref(m);
	}
	return n;
}

/* The transport closes, as it does after a fault or a stop: what it
 * owned is gone, then on_closed. */
static inline void fake_close(struct fake_conn *c)
{
	if (c->closed)
		return;
	c->closed = true;
	struct upstream_owned o = {.kind = UPSTREAM_OWNED_PROCESS,
				   .token = "t",
				   .pid = 4242,
				   .pgid = 4242};
	c->cbs.on_owned(c->ctx, &o, false);
	c->cbs.on_closed(c->ctx);
}

/* A fault, then the close that follows it. */
static inline void fake_fault(struct fake_conn *c,
			      enum upstream_fault_kind kind, int http_status,
			      const char *metadata)
{
	struct upstream_fault f = {.kind = kind,
				   .exit_status = -1,
				   .http_status = http_status,
				   .resource_metadata = metadata};
	c->cbs.on_fault(c->ctx, &f);
	fake_close(c);
}

/* A 401 or 403 with the challenge and the token the request carried,
 * and what it knew of requests. */
static inline void fake_fault_auth(struct fake_conn *c, int http_status,
				   const char *www, const char *sent,
				   const struct outbox_fact_of *facts, size_t n)
{
	struct upstream_fault f = {.kind = UPSTREAM_AUTH,
				   .exit_status = -1,
				   .http_status = http_status,
				   .www_authenticate = www,
				   .auth_sent = sent,
				   .facts = facts,
				   .nfacts = n};
	c->cbs.on_fault(c->ctx, &f);
	fake_close(c);
}

/* A fault that carries what the transport knew of requests (a POST the
 * server refused unprocessed, messages never sent). */
static inline void
fake_fault_facts(struct fake_conn *c, enum upstream_fault_kind kind,
		 int http_status, const struct outbox_fact_of *facts, size_t n)
{
	struct upstream_fault f = {.kind = kind,
				   .exit_status = -1,
				   .http_status = http_status,
				   .facts = facts,
				   .nfacts = n};
	c->cbs.on_fault(c->ctx, &f);
	fake_close(c);
}

/* The server dies; its conn is closed as the stdio transport would. */
static inline void fake_exit(struct fake_conn *c, int code)
{
	struct upstream_fault f = {.kind = UPSTREAM_EXITED,
				   .exit_status = code};
	c->cbs.on_fault(c->ctx, &f);
	fake_close(c);
}

/* Answers initialize declaring capabilities (a JSON object's text). */
static inline void fake_handshake_caps(struct fake_conn *c, const char *caps)
{
	int64_t id;
	cr_assert(sent_method(c, "initialize", &id));
	char line[256];
	snprintf(line, sizeof line,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{"
		 "\"protocolVersion\":\"2025-11-25\",\"capabilities\":%s,"
		 "\"serverInfo\":{\"name\":\"f\",\"version\":\"1\"}}}",
		 (long long)id, caps);
	serve(c, line);
}

/* Answers initialize with no lists: the instance is ready. */
static inline void fake_handshake(struct fake_conn *c)
{
	fake_handshake_caps(c, "{}");
}

/* Answers initialize declaring the tools capability. */
static inline void handshake_tools(struct fake_conn *c)
{
	fake_handshake_caps(c, "{\"tools\":{\"listChanged\":true}}");
}

/* Answers the last tools/list sent with n tools named prefix0, prefix1,
 * ... (tool i's inputSchema is {"n":i}), and a next cursor when cursor is
 * set. */
static inline void answer_tools(struct fake_conn *c, const char *prefix, int n,
				const char *cursor)
{
	int64_t id;
	cr_assert(sent_method(c, "tools/list", &id));
	struct buf b;
	buf_init(&b);
	buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{",
		   (long long)id);
	if (cursor)
		buf_printf(&b, "\"nextCursor\":\"%s\",", cursor);
	buf_puts(&b, "\"tools\":[");
	for (int i = 0; i < n; i++)
		buf_printf(&b,
			   "%s{\"name\":\"%s%d\",\"inputSchema\":{\"n\":%d}}",
			   i ? "," : "", prefix, i, i);
	buf_puts(&b, "]}}");
	serve(c, b.data);
	buf_free(&b);
}

/* ---- the instance under test ---- */

static uv_loop_t loop;
static struct server_config srv;
static struct config_kv env[1];

static inline void owned_cb(void *ctx, struct instance *inst,
			    const struct upstream_owned *o, bool live)
{
	if (live)
		owned_live++;
	else
		owned_gone++;
}

/* The server's requests and notifications the instance passed on, and
 * the cause each came with. */
static int nserver_requests, nserver_notes;
static void *last_cause = (void *)1;

static inline void request_seen_cb(void *ctx, struct instance *inst,
				   json_t *msg, void *cause)
{
	nserver_requests++;
	last_cause = cause;
}

static inline void note_seen_cb(void *ctx, struct instance *inst, json_t *msg,
				void *cause)
{
	nserver_notes++;
	last_cause = cause;
}

static struct instance_cbs no_cbs = {.on_owned = owned_cb,
				     .on_request = request_seen_cb,
				     .on_notification = note_seen_cb};

/* The next make_kind's sign-in (NULL: none) and headers. */
static const struct instance_signin *next_signin;
static struct config_kv *next_headers;
static size_t next_nheaders;

/* The pool's lazy HTTP client getter: counts its calls. */
static int http_gets;
static inline struct httpc *fake_http_get(void *arg)
{
	http_gets++;
	return (struct httpc *)arg;
}

static inline void ready_cb(void *arg, struct instance *inst, int err)
{
	*(int *)arg = err;
}

/* An instance of a server of kind (its transport the fake unless
 * real_ops), with the pool's HTTP getter handing out http. */
static inline struct instance *make_kind(int64_t tool_timeout_ms,
					 enum server_kind kind, bool real_ops,
					 struct httpc *http)
{
	clock_set_source(fake_clock);
	uv_loop_init(&loop);
	memset(conns, 0, sizeof conns);
	nconns = 0;
	open_rc = 0;
	next_stderr = NULL;
	owned_live = owned_gone = 0;
	nserver_requests = nserver_notes = 0;
	last_cause = (void *)1;
	http_gets = 0;
	fake_ops.caps = UPSTREAM_OWNS;
	srv = (struct server_config){0};
	srv.name = "fx";
	srv.kind = kind;
	if (kind == SERVER_STDIO)
		srv.command = "fake";
	else
		srv.url = "https://example.invalid/mcp";
	srv.tool_timeout_ms = tool_timeout_ms;
	srv.headers = next_headers;
	srv.nheaders = next_nheaders;
	env[0].key = "API_KEY";
	env[0].value = "s3cr3t-XYZ";
	srv.env = env;
	srv.nenv = 1;
	struct instance_spec spec = {.server = &srv,
				     .key = "k",
				     .http = fake_http_get,
				     .http_arg = http,
				     .signin = next_signin};
	struct instance *inst = instance_new(&loop, &spec, &no_cbs, NULL);
	if (!real_ops)
		instance_set_ops(inst, &fake_ops);
	return inst;
}

static inline struct instance *make(int64_t tool_timeout_ms)
{
	return make_kind(tool_timeout_ms, SERVER_STDIO, false, NULL);
}

static inline struct instance *make_ready(int64_t tool_timeout_ms)
{
	struct instance *inst = make(tool_timeout_ms);
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	cr_assert_eq(nconns, 1);
	fake_handshake(conns[0]);
	cr_assert_eq(err, 0);
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	return inst;
}

static inline void finish(struct instance *inst)
{
	instance_free(inst);
	for (int i = 0; i < nconns; i++)
		fake_close(conns[i]);
	cr_assert_eq(owned_live, nconns);
	cr_assert_eq(owned_gone, nconns);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0);
	for (int i = 0; i < nconns; i++) {
		for (int k = 0; k < conns[i]->nlines; k++)
			free(conns[i]->lines[k]);
		free(conns[i]);
	}
	clock_set_source(NULL);
}

/* A reply callback that counts and keeps the last answer. */
struct got {
	int calls;
	bool sent;
	json_int_t code;
	char message[1024];
};

static inline void got_cb(void *arg, json_t *resp, bool was_sent)
{
	struct got *g = arg;
	json_t *error = json_object_get(resp, "error");
	const char *m = json_string_value(json_object_get(error, "message"));
	g->calls++;
	g->sent = was_sent;
	g->code = json_integer_value(json_object_get(error, "code"));
	snprintf(g->message, sizeof g->message, "%s", m ? m : "");
}

static inline const char *got_message(const struct got *g)
{
	return g->message;
}

static inline json_int_t got_code(const struct got *g)
{
	return g->code;
}

/* A request whose params are {key: val}, answered to g: its id or
 * -errno. */
static inline int64_t request_kv(struct instance *inst, const char *method,
				 const char *key, const char *val,
				 struct got *g)
{
	return instance_request(inst, method, json_pack("{s:s}", key, val),
				got_cb, g);
}

/* tools/call of the tool name. */
static inline int64_t call_tool(struct instance *inst, const char *name,
				struct got *g)
{
	return request_kv(inst, "tools/call", "name", name, g);
}

/* What a server says when it cannot parse a line: no id to go by. */
#define NULL_ID_PARSE_ERROR                                                    \
	"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{"                         \
	"\"code\":-32700,\"message\":\"Parse error\"}}"

#endif
