/*
 * The terminal's MCP client: one exchange at a time with the runtime over
 * its Unix socket, through httpc_fetch (the loop's HTTP client on a
 * private loop). Every wait is bounded: a plain answer by
 * MCPVISOR_TIMEOUT as a whole, an MCP answer by silence, since the
 * runtime writes a heartbeat on every open answer stream: a long tool call
 * goes on, a frozen runtime is reported.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cli/cli.h"
#include "config/config.h"
#include "home/info.h"
#include "http/httpc.h"
#include "jsonrpc/jsonrpc.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/xmalloc.h"

#define CLIENT_MAX_BODY (64 * 1024 * 1024)
#define CLIENT_TIMEOUT_MS 10000
#define CLIENT_POLL_NS (50 * 1000 * 1000)
/* Connecting to a live runtime's socket takes microseconds; a full listen
 * queue (a frozen runtime) is not waited on longer than this. */
#define CLIENT_CONNECT_MS 2000
/* An open answer stream hears a heartbeat about once a second: this much
 * silence means frozen. A shorter MCPVISOR_TIMEOUT shortens it, down to
 * three heartbeats. */
#define CLIENT_SILENCE_MS 5000
#define CLIENT_SILENCE_MIN_MS 3000

struct client {
	long pid;
	int asked_port; /* the default port, when it was taken */
	int timeout_ms;
	bool frozen; /* gave up on it: ask it for nothing more */
	char *socket;
	char *session;
	long next_id;
	struct buf body;
	struct buf headers; /* of the last answer (httpc_head_get) */
};

/* Reading an SSE answer: the JSON-RPC response with id, as it comes. */
struct client_sse {
	long id;
	json_t *found;
};

static char *client_header(struct client *c, const char *name)
{
	const char *v = httpc_head_get(&c->headers, name);
	return v ? xstrdup(v) : NULL;
}

static uint64_t client_silence_ms(int timeout_ms)
{
	if (timeout_ms >= CLIENT_SILENCE_MS)
		return CLIENT_SILENCE_MS;
	return timeout_ms < CLIENT_SILENCE_MIN_MS ? CLIENT_SILENCE_MIN_MS
						  : (uint64_t)timeout_ms;
}

/* One SSE event's data: keeps the response to our request and stops
 * reading there (notifications and server requests are not for us). */
static bool client_sse_cb(void *arg, const char *data, size_t len)
{
	struct client_sse *sse = arg;
	json_t *m = json_loadb(data, len, 0, NULL);
	if (m && json_is_integer(json_object_get(m, "id")) &&
	    json_integer_value(json_object_get(m, "id")) == sse->id &&
	    json_object_get(m, "method") == NULL) {
		sse->found = m;
		return false;
	}
	json_decref(m);
	return true;
}

/* MCPVISOR_TIMEOUT (a duration: "10s", "1500ms") or 10 s. */
static int client_timeout_ms(void)
{
	const char *v = getenv("MCPVISOR_TIMEOUT");
	if (v == NULL || v[0] == '\0')
		return CLIENT_TIMEOUT_MS;
	json_t *j = json_string(v);
	int64_t ms = 0;
	int rc = config_parse_duration(j, &ms);
	json_decref(j);
	if (rc < 0 || ms <= 0 || ms > INT32_MAX) {
		fprintf(stderr,
			"mcpvisor: MCPVISOR_TIMEOUT=%s is not a duration; "
			"using %d s\n",
			v, CLIENT_TIMEOUT_MS / 1000);
		return CLIENT_TIMEOUT_MS;
	}
	return (int)ms;
}

int client_open(const char *home, struct client **out)
{
	int timeout_ms = client_timeout_ms();
	uint64_t deadline = clock_now_ms() + (uint64_t)timeout_ms;
	struct runtime_info info;
	int rc;
	/* A runtime that holds the home but has no endpoint yet is starting
	 * (reconciling a journal) or stopping: wait for either, bounded. */
	while ((rc = runtime_info_read(home, &info)) == -EAGAIN &&
	       clock_now_ms() < deadline) {
		runtime_info_free(&info);
		struct timespec ts = {0, CLIENT_POLL_NS};
		nanosleep(&ts, NULL);
	}
	if (rc == -EPERM) {
		fprintf(stderr, "mcpvisor: %s\n", info.error);
		runtime_info_free(&info);
		return CLI_FAILED;
	}
	if (rc == -EAGAIN) {
		fprintf(stderr,
			"mcpvisor: the runtime (pid %ld) holds this home but "
			"did not open its endpoint within %g s\n",
			info.pid, timeout_ms / 1000.0);
		runtime_info_free(&info);
		return CLI_FAILED;
	}
	if (rc < 0) {
		/* With the home it was given: plain `mcpvisor serve` would
		 * start a runtime on another home. */
		char *serve = cli_serve_command(home);
		if (rc == -ESRCH)
			fprintf(stderr,
				"mcpvisor: no runtime is running (the "
				"runtime file of pid %ld is stale); start "
				"one with `%s`\n",
				info.pid, serve);
		else
			fprintf(stderr,
				"mcpvisor: no runtime is running; start one "
				"with `%s`\n",
				serve);
		free(serve);
		runtime_info_free(&info);
		return CLI_NO_RUNTIME;
	}
	struct client *c = xcalloc(1, sizeof *c);
	c->pid = info.pid;
	c->asked_port = info.asked_port;
	c->timeout_ms = timeout_ms;
	c->socket = xstrdup(info.socket);
	runtime_info_free(&info);
	c->next_id = 1;
	buf_init(&c->body);
	buf_init(&c->headers);
	*out = c;
	return CLI_OK;
}

long client_pid(const struct client *c)
{
	return c->pid;
}

int client_asked_port(const struct client *c)
{
	return c->asked_port;
}

const char *client_socket(const struct client *c)
{
	return c->socket;
}

/* Runs one exchange with the runtime. by_silence: an MCP answer, which
 * the runtime gives at once or as a stream that stays open while a call
 * runs; it is bounded by silence (the runtime writes a heartbeat on
 * every open answer stream about once a second), never by its length.
 * Anything else is bounded as a whole by MCPVISOR_TIMEOUT. Errors are
 * printed; CLI_OK or CLI_FAILED. */
static int client_http_ex(struct client *c, const char *method,
			  const char *path, const char *body, long *status,
			  bool by_silence, struct client_sse *sse)
{
	buf_reset(&c->body);
	buf_reset(&c->headers);
	if (c->frozen)
		return CLI_FAILED;
	char *url = xasprintf("http://localhost%s", path);
	char *sid =
		c->session ? xasprintf("Mcp-Session-Id: %s", c->session) : NULL;
	const char *hs[] = {
		"Accept: application/json, text/event-stream",
		"Content-Type: application/json",
		sid ? sid : NULL,
		sid ? "MCP-Protocol-Version: " MCP_LATEST_VERSION : NULL,
		NULL,
	};
	uint64_t wait_ms = (uint64_t)c->timeout_ms;
	if (by_silence)
		wait_ms = client_silence_ms(c->timeout_ms);
	struct httpc_opts o = {
		.method = method,
		.url = url,
		.unix_socket = c->socket,
		.headers = hs,
		.body = body,
		.body_len = body ? strlen(body) : 0,
		.connect_timeout_ms = CLIENT_CONNECT_MS < wait_ms
					      ? CLIENT_CONNECT_MS
					      : wait_ms,
		.silence_timeout_ms = by_silence ? wait_ms : 0,
		.total_timeout_ms = by_silence ? 0 : wait_ms,
	};
	int st = 0;
	const char *why = "";
	int rc = httpc_fetch_head(&o, &st, &c->headers, &c->body,
				  CLIENT_MAX_BODY, sse ? client_sse_cb : NULL,
				  sse, &why);
	free(url);
	free(sid);
	*status = st;
	if (rc == -ETIMEDOUT) {
		c->frozen = true;
		fprintf(stderr,
			"mcpvisor: the runtime at pid %ld did not answer "
			"within %g s; it may be frozen (a stopped process "
			"continues with `kill -CONT %ld`)\n",
			c->pid, (double)wait_ms / 1000.0, c->pid);
		return CLI_FAILED;
	}
	if (rc == -ENOSYS) {
		fprintf(stderr, "mcpvisor: %s\n", why);
		return CLI_FAILED;
	}
	if (rc < 0 && st == 0) {
		fprintf(stderr,
			"mcpvisor: cannot reach the runtime (pid %ld) at %s: "
			"%s\n",
			c->pid, c->socket,
			rc == -ECONNRESET ? "it closed the connection"
					  : strerror(-rc));
		return CLI_FAILED;
	}
	if (rc == -EMSGSIZE) {
		fprintf(stderr,
			"mcpvisor: the runtime's answer is larger than %d "
			"MiB\n",
			CLIENT_MAX_BODY >> 20);
		return CLI_FAILED;
	}
	if (rc < 0) {
		fprintf(stderr,
			"mcpvisor: the runtime's answer was cut short "
			"(%s)\n",
			why);
		return CLI_FAILED;
	}
	return CLI_OK;
}

int client_get_json(struct client *c, const char *path, json_t **out)
{
	long status = 0;
	if (client_http_ex(c, "GET", path, NULL, &status, false, NULL) !=
	    CLI_OK)
		return CLI_FAILED;
	json_error_t jerr;
	*out = json_loadb(c->body.data ? c->body.data : "", c->body.len, 0,
			  &jerr);
	if (status != 200 || *out == NULL) {
		fprintf(stderr, "mcpvisor: %s answered HTTP %ld\n", path,
			status);
		json_decref(*out);
		*out = NULL;
		return CLI_FAILED;
	}
	return CLI_OK;
}

int client_post(struct client *c, const char *path, long *status, json_t **body)
{
	*status = 0;
	if (body)
		*body = NULL;
	if (client_http_ex(c, "POST", path, "", status, false, NULL) != CLI_OK)
		return CLI_FAILED;
	if (body)
		*body = json_loadb(c->body.data ? c->body.data : "",
				   c->body.len, 0, NULL);
	return CLI_OK;
}

static int client_rpc(struct client *c, const char *method, json_t *params,
		      json_t **response)
{
	long id = c->next_id++;
	json_t *req = jr_request(json_integer(id), method,
				 params ? json_incref(params) : NULL);
	char *text = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	long status = 0;
	struct client_sse sse = {.id = id};
	/* A list may wait the runtime's patience for a slow server (5 s)
	 * as one JSON body, with no heartbeat meanwhile: it is bounded as a
	 * whole. Every other answer comes at once or streams with
	 * heartbeats: silence bounds it. */
	size_t ml = strlen(method);
	bool list = ml > 5 && strcmp(method + ml - 5, "/list") == 0;
	int rc = client_http_ex(c, "POST", "/mcp", text, &status, !list, &sse);
	free(text);
	if (rc != CLI_OK) {
		json_decref(sse.found);
		return rc;
	}
	json_t *resp = sse.found;
	if (resp == NULL)
		resp = json_loadb(c->body.data ? c->body.data : "", c->body.len,
				  0, NULL);
	if (resp == NULL) {
		fprintf(stderr,
			"mcpvisor: %s: the runtime answered HTTP %ld "
			"without a JSON-RPC response\n",
			method, status);
		return CLI_FAILED;
	}
	if (strcmp(method, "initialize") == 0) {
		free(c->session);
		c->session = client_header(c, "mcp-session-id");
	}
	*response = resp;
	return CLI_OK;
}

int client_request(struct client *c, const char *method, json_t *params,
		   json_t **response)
{
	if (c->session == NULL) {
		json_t *init = json_pack("{s:s,s:{},s:{s:s,s:s}}",
					 "protocolVersion", MCP_LATEST_VERSION,
					 "capabilities", "clientInfo", "name",
					 "mcpvisor-cli", "version", "0.1.0");
		json_t *resp = NULL;
		int rc = client_rpc(c, "initialize", init, &resp);
		json_decref(init);
		if (rc != CLI_OK)
			return rc;
		json_decref(resp);
		if (c->session == NULL) {
			fprintf(stderr, "mcpvisor: the runtime did not start "
					"a session\n");
			return CLI_FAILED;
		}
		json_t *note =
			jr_notification("notifications/initialized", NULL);
		char *text = json_dumps(note, JSON_COMPACT);
		json_decref(note);
		long status;
		rc = client_http_ex(c, "POST", "/mcp", text, &status, true,
				    NULL);
		free(text);
		if (rc != CLI_OK)
			return rc;
	}
	return client_rpc(c, method, params, response);
}

void client_close(struct client *c)
{
	if (c == NULL)
		return;
	if (c->session && !c->frozen) {
		long status;
		client_http_ex(c, "DELETE", "/mcp", NULL, &status, false, NULL);
	}
	buf_free(&c->body);
	buf_free(&c->headers);
	free(c->socket);
	free(c->session);
	free(c);
}
