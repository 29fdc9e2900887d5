/*
 * A small blocking MCP client for the terminal: HTTP/1.1 over the runtime's
 * Unix socket (one connection per request), JSON or SSE answers. It needs
 * no HTTP library, so the runtime binary carries none it does not use.
 * Every wait is bounded: a runtime that says nothing for the timeout is
 * asked on a second connection whether it still answers at all (a long
 * tool call is fine; a frozen runtime is reported, never waited on).
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "config/config.h"
#include "jsonrpc/jsonrpc.h"
#include "runtime/runtime.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/xmalloc.h"

#define CLIENT_MAX_BODY (64 * 1024 * 1024)
#define CLIENT_TIMEOUT_MS 10000
#define CLIENT_POLL_NS (50 * 1000 * 1000)

struct client {
	long pid;
	int asked_port; /* the default port, when it was taken */
	int timeout_ms;
	bool frozen; /* gave up on it: ask it for nothing more */
	char *socket;
	char *session;
	long next_id;
	struct buf body;
	struct buf headers;
};

static char *client_header(struct client *c, const char *name)
{
	size_t nlen = strlen(name);
	char *p = c->headers.data;
	while (p && *p) {
		char *eol = strstr(p, "\r\n");
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		if (len > nlen && strncasecmp(p, name, nlen) == 0 &&
		    p[nlen] == ':') {
			const char *v = p + nlen + 1;
			while (*v == ' ')
				v++;
			return xstrndup(v, len - (size_t)(v - p));
		}
		p = eol ? eol + 2 : NULL;
	}
	return NULL;
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
		if (rc == -ESRCH)
			fprintf(stderr,
				"mcpvisor: no runtime is running (the "
				"runtime file of pid %ld is stale); start "
				"one with `mcpvisor serve`\n",
				info.pid);
		else
			fprintf(stderr,
				"mcpvisor: no runtime is running; start one "
				"with `mcpvisor serve`\n");
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

static int client_connect(struct client *c)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	if (strlen(c->socket) >= sizeof addr.sun_path)
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, c->socket);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A Unix connect waits only while the listen queue is full; bound
	 * that wait too. */
	struct timeval tv = {c->timeout_ms / 1000,
			     (c->timeout_ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
		int e = errno == EINPROGRESS ? ETIMEDOUT : errno;
		close(fd);
		return -(e == EAGAIN ? ETIMEDOUT : e);
	}
	return fd;
}

/* Waits up to ms for events on fd: 1 ready, 0 timed out, -1 error. */
static int client_wait(int fd, short events, int ms)
{
	struct pollfd p = {.fd = fd, .events = events};
	for (;;) {
		int n = poll(&p, 1, ms);
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? -1 : n;
	}
}

static int client_write_all(int fd, const char *p, size_t n, int ms)
{
	while (n) {
		int ready = client_wait(fd, POLLOUT, ms);
		if (ready <= 0)
			return ready == 0 ? -ETIMEDOUT : -errno;
		ssize_t w = send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EPIPE;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Decodes a chunked body in place into out. -1 when malformed. */
static int client_dechunk(const char *p, size_t n, struct buf *out)
{
	size_t i = 0;
	for (;;) {
		char *end;
		unsigned long long sz = strtoull(p + i, &end, 16);
		size_t hdr = (size_t)(end - (p + i));
		if (hdr == 0)
			return -1;
		const char *crlf = memchr(end, '\n', n - (size_t)(end - p));
		if (crlf == NULL)
			return -1;
		i = (size_t)(crlf - p) + 1;
		if (sz == 0)
			return 0;
		if (sz > n - i || out->len + sz > CLIENT_MAX_BODY)
			return -1;
		buf_append(out, p + i, (size_t)sz);
		i += (size_t)sz;
		if (i + 2 > n)
			return -1;
		i += 2; /* CRLF after the data */
	}
}

static int client_exchange(struct client *c, const char *req, size_t len,
			   struct buf *raw, bool probe);

/* Whether the runtime still answers at all: GET /status on a second
 * connection within the timeout. */
static bool client_alive(struct client *c)
{
	static const char req[] = "GET /status HTTP/1.1\r\nHost: localhost\r\n"
				  "Connection: close\r\n\r\n";
	struct buf raw;
	buf_init(&raw);
	int rc = client_exchange(c, req, sizeof req - 1, &raw, false);
	bool ok =
		rc == 0 && raw.len > 12 && strncmp(raw.data, "HTTP/1.", 7) == 0;
	buf_free(&raw);
	return ok;
}

/* Sends req on a fresh connection and reads the answer to its end into
 * raw. Silence for the timeout ends it with -ETIMEDOUT, unless probe and
 * the runtime still answers a second connection (a long call: wait on). */
static int client_exchange(struct client *c, const char *req, size_t len,
			   struct buf *raw, bool probe)
{
	int fd = client_connect(c);
	if (fd < 0)
		return fd;
	int rc = client_write_all(fd, req, len, c->timeout_ms);
	while (rc == 0) {
		int ready = client_wait(fd, POLLIN, c->timeout_ms);
		if (ready < 0) {
			rc = -errno;
			break;
		}
		if (ready == 0) {
			if (probe && client_alive(c))
				continue;
			rc = -ETIMEDOUT;
			break;
		}
		buf_reserve(raw, 65536);
		ssize_t r = read(fd, raw->data + raw->len, 65536);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0) {
			rc = -errno;
			break;
		}
		if (r == 0)
			break;
		raw->len += (size_t)r;
		raw->data[raw->len] = '\0';
		if (raw->len > CLIENT_MAX_BODY)
			rc = -EFBIG;
	}
	close(fd);
	return rc;
}

/* One HTTP exchange on a fresh connection (Connection: close, read to the
 * end); *status gets the HTTP status, c->headers and c->body the rest. */
static int client_http_ex(struct client *c, const char *method,
			  const char *path, const char *body, long *status,
			  bool probe)
{
	buf_reset(&c->body);
	buf_reset(&c->headers);
	struct buf req;
	buf_init(&req);
	buf_printf(&req,
		   "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
		   "Accept: application/json, text/event-stream\r\n"
		   "Content-Type: application/json\r\nContent-Length: %zu\r\n",
		   method, path, body ? strlen(body) : 0);
	if (c->session)
		buf_printf(&req,
			   "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: "
			   "%s\r\n",
			   c->session, MCP_LATEST_VERSION);
	buf_puts(&req, "\r\n");
	if (body)
		buf_puts(&req, body);
	struct buf raw;
	buf_init(&raw);
	int rc = c->frozen ? -ETIMEDOUT
			   : client_exchange(c, req.data, req.len, &raw, probe);
	buf_free(&req);
	if (rc == -ETIMEDOUT) {
		c->frozen = true;
		fprintf(stderr,
			"mcpvisor: the runtime at pid %ld did not answer "
			"within %g s; it may be frozen (a stopped process "
			"continues with `kill -CONT %ld`)\n",
			c->pid, c->timeout_ms / 1000.0, c->pid);
		buf_free(&raw);
		return CLI_FAILED;
	}
	if (rc < 0 && raw.len == 0) {
		fprintf(stderr,
			"mcpvisor: cannot reach the runtime (pid %ld) at %s: "
			"%s\n",
			c->pid, c->socket, strerror(-rc));
		buf_free(&raw);
		return CLI_FAILED;
	}
	const char *eoh = raw.data ? strstr(raw.data, "\r\n\r\n") : NULL;
	if (rc < 0 || eoh == NULL ||
	    sscanf(raw.data, "HTTP/1.%*d %ld", status) != 1) {
		fprintf(stderr,
			"mcpvisor: the runtime at %s gave no HTTP "
			"answer\n",
			c->socket);
		buf_free(&raw);
		return CLI_FAILED;
	}
	const char *line2 = strstr(raw.data, "\r\n") + 2;
	buf_append(&c->headers, line2, (size_t)(eoh + 2 - line2));
	const char *payload = eoh + 4;
	size_t plen = raw.len - (size_t)(payload - raw.data);
	char *te = client_header(c, "transfer-encoding");
	if (te && strcasecmp(te, "chunked") == 0) {
		if (client_dechunk(payload, plen, &c->body) < 0) {
			fprintf(stderr,
				"mcpvisor: the runtime's answer was cut "
				"short\n");
			free(te);
			buf_free(&raw);
			return CLI_FAILED;
		}
	} else {
		buf_append(&c->body, payload, plen);
	}
	free(te);
	buf_free(&raw);
	return CLI_OK;
}

int client_get_json(struct client *c, const char *path, json_t **out)
{
	long status = 0;
	if (client_http_ex(c, "GET", path, NULL, &status, false) != CLI_OK)
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
	if (client_http_ex(c, "POST", path, "", status, false) != CLI_OK)
		return CLI_FAILED;
	if (body)
		*body = json_loadb(c->body.data ? c->body.data : "",
				   c->body.len, 0, NULL);
	return CLI_OK;
}

/* The response with id from an SSE body (data lines of message events). */
static json_t *client_sse_find(const char *body, long id)
{
	json_t *found = NULL;
	struct buf data;
	buf_init(&data);
	const char *p = body;
	while (p && *p && found == NULL) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		if (len && p[len - 1] == '\r')
			len--;
		if (len == 0) {
			json_t *m = json_loadb(data.data ? data.data : "",
					       data.len, 0, NULL);
			if (m &&
			    json_integer_value(json_object_get(m, "id")) ==
				    id &&
			    json_object_get(m, "method") == NULL)
				found = m;
			else
				json_decref(m);
			buf_reset(&data);
		} else if (len >= 5 && strncmp(p, "data:", 5) == 0) {
			const char *v = p + 5;
			if (*v == ' ')
				v++;
			if (data.len)
				buf_puts(&data, "\n");
			buf_append(&data, v, len - (size_t)(v - p));
		}
		p = eol ? eol + 1 : NULL;
	}
	buf_free(&data);
	return found;
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
	int rc = client_http_ex(c, "POST", "/mcp", text, &status, true);
	free(text);
	if (rc != CLI_OK)
		return rc;
	char *ctype = client_header(c, "content-type");
	json_t *resp = NULL;
	if (ctype && strncasecmp(ctype, "text/event-stream", 17) == 0)
		resp = client_sse_find(c->body.data ? c->body.data : "", id);
	else
		resp = json_loadb(c->body.data ? c->body.data : "", c->body.len,
				  0, NULL);
	free(ctype);
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
		rc = client_http_ex(c, "POST", "/mcp", text, &status, true);
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
		client_http_ex(c, "DELETE", "/mcp", NULL, &status, false);
	}
	buf_free(&c->body);
	buf_free(&c->headers);
	free(c->socket);
	free(c->session);
	free(c);
}
