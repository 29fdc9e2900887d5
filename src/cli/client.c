/*
 * A small blocking MCP client for the terminal: HTTP/1.1 over the runtime's
 * Unix socket (one connection per request), JSON or SSE answers. It needs
 * no HTTP library, so the runtime binary carries none it does not use.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/cli.h"
#include "jsonrpc/jsonrpc.h"
#include "runtime/runtime.h"
#include "util/buf.h"
#include "util/xmalloc.h"

#define CLIENT_MAX_BODY (64 * 1024 * 1024)

struct client {
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

int client_open(const char *home, struct client **out)
{
	struct runtime_info info;
	int rc = runtime_info_read(home, &info);
	if (rc < 0 || info.socket == NULL) {
		fprintf(stderr,
			"mcpvisor: no runtime is running%s; start one with "
			"`mcpvisor serve`\n",
			rc == -ESRCH ? " (its runtime file is stale)" : "");
		runtime_info_free(&info);
		return CLI_NO_RUNTIME;
	}
	struct client *c = xcalloc(1, sizeof *c);
	c->socket = xstrdup(info.socket);
	runtime_info_free(&info);
	c->next_id = 1;
	buf_init(&c->body);
	buf_init(&c->headers);
	*out = c;
	return CLI_OK;
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
	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

static int client_write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
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

/* One HTTP exchange on a fresh connection (Connection: close, read to the
 * end); *status gets the HTTP status, c->headers and c->body the rest. */
static int client_http(struct client *c, const char *method, const char *path,
		       const char *body, long *status)
{
	buf_reset(&c->body);
	buf_reset(&c->headers);
	int fd = client_connect(c);
	if (fd < 0) {
		fprintf(stderr,
			"mcpvisor: cannot reach the runtime at %s: %s\n",
			c->socket, strerror(-fd));
		return CLI_FAILED;
	}
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
	int rc = client_write_all(fd, req.data, req.len);
	buf_free(&req);
	struct buf raw;
	buf_init(&raw);
	while (rc == 0) {
		buf_reserve(&raw, 65536);
		ssize_t r = read(fd, raw.data + raw.len, 65536);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -1;
			break;
		}
		if (r == 0)
			break;
		raw.len += (size_t)r;
		raw.data[raw.len] = '\0';
		if (raw.len > CLIENT_MAX_BODY)
			rc = -1;
	}
	close(fd);
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
	if (client_http(c, "GET", path, NULL, &status) != CLI_OK)
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
	if (client_http(c, "POST", path, "", status) != CLI_OK)
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
	int rc = client_http(c, "POST", "/mcp", text, &status);
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
		rc = client_http(c, "POST", "/mcp", text, &status);
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
	if (c->session) {
		long status;
		client_http(c, "DELETE", "/mcp", NULL, &status);
	}
	buf_free(&c->body);
	buf_free(&c->headers);
	free(c->socket);
	free(c->session);
	free(c);
}
