/*
 * A small blocking MCP client for the terminal: libcurl over the runtime's
 * Unix socket, JSON or SSE answers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "cli/cli.h"
#include "jsonrpc/jsonrpc.h"
#include "runtime/runtime.h"
#include "util/buf.h"
#include "util/xmalloc.h"

#define CLIENT_MAX_BODY (64 * 1024 * 1024)

struct client {
	CURL *curl;
	char *socket;
	char *session;
	long next_id;
	struct buf body;
	struct buf headers;
};

static size_t client_body_cb(char *p, size_t size, size_t n, void *arg)
{
	struct client *c = arg;
	if (c->body.len + size * n > CLIENT_MAX_BODY)
		return 0;
	buf_append(&c->body, p, size * n);
	return size * n;
}

static size_t client_header_cb(char *p, size_t size, size_t n, void *arg)
{
	struct client *c = arg;
	buf_append(&c->headers, p, size * n);
	return size * n;
}

int client_open(const char *home, struct client **out)
{
	struct runtime_info info;
	int rc = runtime_info_read(home, &info);
	if (rc < 0) {
		fprintf(stderr,
			"mcpvisor: no runtime is running%s; start one with "
			"`mcpvisor serve`\n",
			rc == -ESRCH ? " (its runtime file is stale)" : "");
		runtime_info_free(&info);
		return CLI_NO_RUNTIME;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct client *c = xcalloc(1, sizeof *c);
	c->socket = info.socket ? xstrdup(info.socket) : NULL;
	runtime_info_free(&info);
	c->curl = curl_easy_init();
	c->next_id = 1;
	buf_init(&c->body);
	buf_init(&c->headers);
	*out = c;
	return CLI_OK;
}

/* One HTTP exchange; *status gets the HTTP status. */
static int client_http(struct client *c, const char *method, const char *path,
		       const char *body, long *status)
{
	buf_reset(&c->body);
	buf_reset(&c->headers);
	CURL *h = c->curl;
	curl_easy_reset(h);
	char *url = xasprintf("http://localhost%s", path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->socket);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, client_body_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, client_header_cb);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	struct curl_slist *hdrs = NULL;
	hdrs = curl_slist_append(hdrs, "Accept: application/json, "
				       "text/event-stream");
	hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	hdrs = curl_slist_append(hdrs, "Expect:");
	char *sess = NULL;
	if (c->session) {
		sess = xasprintf("Mcp-Session-Id: %s", c->session);
		hdrs = curl_slist_append(hdrs, sess);
		hdrs = curl_slist_append(hdrs,
					 "MCP-Protocol-Version: " MCP_LATEST_VERSION);
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	if (body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	CURLcode cc = curl_easy_perform(h);
	curl_slist_free_all(hdrs);
	free(sess);
	free(url);
	if (cc != CURLE_OK) {
		fprintf(stderr, "mcpvisor: cannot reach the runtime at %s: %s\n",
			c->socket, curl_easy_strerror(cc));
		return CLI_FAILED;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
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

int client_post(struct client *c, const char *path, long *status,
		json_t **body)
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
			if (m && json_integer_value(json_object_get(m, "id")) ==
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
		resp = json_loadb(c->body.data ? c->body.data : "",
				  c->body.len, 0, NULL);
	free(ctype);
	if (resp == NULL) {
		fprintf(stderr, "mcpvisor: %s: the runtime answered HTTP %ld "
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
		json_t *init = json_pack(
			"{s:s,s:{},s:{s:s,s:s}}", "protocolVersion",
			MCP_LATEST_VERSION, "capabilities", "clientInfo",
			"name", "mcpvisor-cli", "version", "0.1.0");
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
		json_t *note = jr_notification("notifications/initialized",
					       NULL);
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
	curl_easy_cleanup(c->curl);
	buf_free(&c->body);
	buf_free(&c->headers);
	free(c->socket);
	free(c->session);
	free(c);
	curl_global_cleanup();
}
