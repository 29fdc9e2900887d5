/*
 * MCP Streamable HTTP over HTTP/1.1: one request at a time per connection,
 * answers as JSON or as an SSE stream (chunked, so the connection can be
 * kept alive), a standing GET stream per session, DELETE to end one.
 */
#include "endpoint/endpoint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http/httpparse.h"
#include "http/httpresp.h"
#include "jsonrpc/jsonrpc.h"
#include "session/exchange.h"
#include "session/hub.h"
#include "session/session.h"
#include "config/config.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define EP_READ_CHUNK 65536
#define EP_MAX_BATCH 100
#define EP_SSE_RETRY_MS 1000

struct endpoint {
	uv_loop_t *loop;
	struct hub *hub;
	uv_tcp_t tcp;
	uv_pipe_t pipe;
	bool have_tcp, have_pipe;
	int port;
	char *socket_path;
	size_t max_body;
	uint64_t sse_close_ms;
	struct conn *conns;
	size_t nconns;
	unsigned open_handles;
	bool freeing;
	bool draining;
	int (*control)(void *arg, const char *action, const char *server,
		       bool force, char **msg);
	void *control_arg;
};

enum conn_state {
	CONN_READING,	/* waiting for (the rest of) a request */
	CONN_BUSY,	/* a request is being answered */
	CONN_CLOSING,
};

struct conn {
	struct conn *next, **pprev;
	struct endpoint *ep;
	union {
		uv_handle_t h;
		uv_stream_t s;
		uv_tcp_t tcp;
		uv_pipe_t pipe;
	} u;
	bool is_unix;
	enum conn_state state;
	struct httpparse *hp;
	struct buf in;
	bool keep_alive;
	bool sent_continue;

	/* The answer under way. */
	struct exchange *ex;
	char *session_id; /* session of ex, for cancel on disconnect */
	bool sse;	  /* answering as an SSE stream */
	bool sse_started;
	bool standing;	/* the session's GET stream */
	bool batch;
	json_t *collected; /* JSON mode: responses so far */
	bool close_after;
	uv_timer_t early_timer; /* closes a long SSE answer on purpose */
	int handles;		/* open libuv handles of this conn */
};

static void ep_conn_process(struct conn *c);
static void ep_conn_close(struct conn *c);

/* ---- writing ---- */

struct ep_write {
	uv_write_t req;
	struct conn *c;
	char *data;
};

static void ep_write_cb(uv_write_t *req, int status)
{
	struct ep_write *w = (struct ep_write *)req;
	free(w->data);
	free(w);
}

static void ep_write(struct conn *c, const char *data, size_t len)
{
	if (c->state == CONN_CLOSING || len == 0)
		return;
	uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
	int n = uv_try_write(&c->u.s, &b, 1);
	if (n == (int)len)
		return;
	if (n < 0 && n != UV_EAGAIN) {
		ep_conn_close(c);
		return;
	}
	size_t done = n > 0 ? (size_t)n : 0;
	struct ep_write *w = xcalloc(1, sizeof *w);
	w->c = c;
	w->data = xmalloc(len - done);
	memcpy(w->data, data + done, len - done);
	uv_buf_t rest = uv_buf_init(w->data, (unsigned)(len - done));
	if (uv_write(&w->req, &c->u.s, &rest, 1, ep_write_cb) < 0) {
		free(w->data);
		free(w);
		ep_conn_close(c);
	}
}

static void ep_write_buf(struct conn *c, struct buf *b)
{
	ep_write(c, b->data, b->len);
	buf_reset(b);
}

/* ---- connection lifecycle ---- */

static void ep_conn_close_cb(uv_handle_t *h)
{
	struct conn *c = h->data;
	struct endpoint *ep = c->ep;
	if (--c->handles > 0)
		return;
	httpparse_free(c->hp);
	buf_free(&c->in);
	free(c);
	ep->open_handles--;
	if (ep->freeing && ep->open_handles == 0) {
		free(ep->socket_path);
		free(ep);
	}
}

/* Lets go of the answer under way: its exchange is detached, and calls
 * still running for it are cancelled upstream. */
static void ep_conn_release_exchange(struct conn *c)
{
	if (c->ex == NULL)
		return;
	struct exchange *ex = c->ex;
	c->ex = NULL;
	bool unfinished = exchange_attached(ex);
	exchange_detach(ex);
	if (c->session_id) {
		struct session *s = hub_session_find(c->ep->hub, c->session_id);
		if (s && unfinished)
			session_exchange_gone(s, ex);
		if (s && c->standing)
			session_drop_stream(s, ex);
	}
	exchange_unref(ex);
	free(c->session_id);
	c->session_id = NULL;
	json_decref(c->collected);
	c->collected = NULL;
}

static void ep_conn_close(struct conn *c)
{
	if (c->state == CONN_CLOSING)
		return;
	ep_conn_release_exchange(c);
	c->state = CONN_CLOSING;
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	c->ep->nconns--;
	uv_close(&c->u.h, ep_conn_close_cb);
	uv_close((uv_handle_t *)&c->early_timer, ep_conn_close_cb);
}

/* The current request is answered: read the next one. */
static void ep_conn_request_done(struct conn *c)
{
	uv_timer_stop(&c->early_timer);
	ep_conn_release_exchange(c);
	c->sse = c->sse_started = c->standing = c->batch = false;
	c->sent_continue = false;
	if (!c->keep_alive || c->close_after) {
		ep_conn_close(c);
		return;
	}
	httpparse_next(c->hp);
	c->state = CONN_READING;
	ep_conn_process(c);
}

/* ---- simple answers ---- */

static void ep_respond(struct conn *c, int status, const char *ctype,
		       const char *body, size_t len, const char *extra)
{
	struct buf b;
	buf_init(&b);
	httpresp_simple(&b, status, ctype, body, len,
			c->keep_alive && !c->close_after, extra);
	ep_write(c, b.data, b.len);
	buf_free(&b);
}

static void ep_respond_json(struct conn *c, int status, json_t *body,
			    const char *extra)
{
	char *s = json_dumps(body, JSON_COMPACT);
	ep_respond(c, status, "application/json", s, strlen(s), extra);
	free(s);
}

/* An HTTP-level error with a JSON-RPC error body, so MCP clients can show
 * the message. */
static void ep_fail(struct conn *c, int status, int code, const char *message)
{
	json_t *err = jr_error(NULL, code, message, NULL);
	ep_respond_json(c, status, err, NULL);
	json_decref(err);
	ep_conn_request_done(c);
}

/* ---- exchange delivery ---- */

static void ep_sse_start(struct conn *c)
{
	if (c->sse_started)
		return;
	c->sse_started = true;
	struct buf b;
	buf_init(&b);
	char *extra = c->session_id
			      ? xasprintf("Transfer-Encoding: chunked\r\n"
					  "Mcp-Session-Id: %s\r\n",
					  c->session_id)
			      : xstrdup("Transfer-Encoding: chunked\r\n");
	httpresp_head(&b, 200, "text/event-stream", -1, true, extra);
	free(extra);
	ep_write_buf(c, &b);
	buf_free(&b);
}

/* Writes one SSE event as one HTTP chunk. */
static void ep_sse_write(struct conn *c, const char *id, const char *data,
			 size_t len, long retry_ms)
{
	struct buf ev, out;
	buf_init(&ev);
	buf_init(&out);
	httpresp_sse_event(&ev, id, len ? "message" : NULL, data, len,
			   retry_ms);
	buf_printf(&out, "%zx\r\n", ev.len);
	buf_append(&out, ev.data, ev.len);
	buf_puts(&out, "\r\n");
	ep_write(c, out.data, out.len);
	buf_free(&ev);
	buf_free(&out);
}

/* Numbers the stream's events from now on and sends the priming event: an
 * id and no data, with the reconnection delay, so a client that loses the
 * stream can resume from it. */
static void ep_sse_open(struct conn *c, struct session *s)
{
	ep_sse_start(c);
	session_stream_open(s, c->ex);
	char id[24];
	session_stream_prime(s, c->ex, id);
	ep_sse_write(c, id, "", 0, EP_SSE_RETRY_MS);
}

static void ep_ex_deliver_cb(void *ctx, json_t *msg, const char *event_id,
			     const char *data)
{
	struct conn *c = ctx;
	if (c->state == CONN_CLOSING)
		return;
	if (c->sse) {
		ep_sse_start(c);
		if (data) {
			ep_sse_write(c, event_id, data, strlen(data), -1);
		} else {
			char *text = json_dumps(msg, JSON_COMPACT);
			ep_sse_write(c, NULL, text, strlen(text), -1);
			free(text);
		}
		return;
	}
	/* JSON mode carries only the answers. */
	if (json_object_get(msg, "method") != NULL)
		return;
	if (c->batch) {
		json_array_append(c->collected, msg);
	} else {
		json_decref(c->collected);
		c->collected = json_incref(msg);
	}
}

static void ep_ex_finish_cb(void *ctx)
{
	struct conn *c = ctx;
	if (c->state == CONN_CLOSING)
		return;
	if (c->sse) {
		ep_sse_start(c);
		ep_write(c, "0\r\n\r\n", 5);
	} else {
		char *extra = c->session_id
				      ? xasprintf("Mcp-Session-Id: %s\r\n",
						  c->session_id)
				      : NULL;
		ep_respond_json(c, 200, c->collected, extra);
		free(extra);
	}
	ep_conn_request_done(c);
}

static const struct exchange_ops ep_exchange_ops = {
	.deliver = ep_ex_deliver_cb,
	.finish = ep_ex_finish_cb,
};

/* A long answer's stream is closed on purpose (so no proxy or client
 * timeout cuts it): the calls go on, and the client comes back with
 * Last-Event-ID for the rest. */
static void ep_early_close_cb(uv_timer_t *t)
{
	struct conn *c = t->data;
	if (c->state != CONN_BUSY || c->ex == NULL || c->standing ||
	    !exchange_attached(c->ex))
		return;
	struct session *s = hub_session_find(c->ep->hub, c->session_id);
	if (s)
		session_stream_park(s, c->ex);
	exchange_detach(c->ex);
	ep_write(c, "0\r\n\r\n", 5);
	ep_conn_request_done(c);
}

static void ep_arm_early_close(struct conn *c)
{
	if (c->ep->sse_close_ms > 0)
		uv_timer_start(&c->early_timer, ep_early_close_cb,
			       c->ep->sse_close_ms, 0);
}

/* ---- request checks ---- */

static bool ep_host_is_loopback(const char *host, size_t len)
{
	static const char *const ok[] = {"localhost", "127.0.0.1", "[::1]",
					 NULL};
	for (int i = 0; ok[i]; i++)
		if (strlen(ok[i]) == len && strncasecmp(host, ok[i], len) == 0)
			return true;
	return false;
}

/* Origin, when sent, must be a loopback page: anything else may be a
 * web page trying DNS rebinding. */
static bool ep_origin_ok(const char *origin)
{
	if (origin == NULL)
		return true;
	const char *p = strstr(origin, "://");
	if (p == NULL)
		return false;
	p += 3;
	size_t len;
	if (*p == '[') {
		const char *end = strchr(p, ']');
		if (end == NULL)
			return false;
		len = (size_t)(end - p) + 1;
	} else {
		len = strcspn(p, ":/");
	}
	return ep_host_is_loopback(p, len);
}

static bool ep_accepts(const char *accept, const char *type)
{
	if (accept == NULL)
		return false;
	return strcasestr(accept, type) != NULL ||
	       strstr(accept, "*/*") != NULL;
}

/* The forwarded methods: answered as a stream, so progress can flow. */
static bool ep_method_streams(const char *method)
{
	return method && (strcmp(method, "tools/call") == 0 ||
			  strcmp(method, "prompts/get") == 0 ||
			  strcmp(method, "resources/read") == 0 ||
			  strcmp(method, "completion/complete") == 0);
}

/* ---- MCP requests ---- */

static void ep_handle_initialize(struct conn *c, json_t *msg,
				 const struct http_request *req)
{
	char *space = http_query_param(req->url, "space");
	if (space && (space[0] != '/' || strlen(space) > 4096)) {
		free(space);
		ep_fail(c, 400, JR_INVALID_REQUEST,
			"The space query parameter must be an absolute path");
		return;
	}
	struct session *s;
	json_t *result =
		hub_initialize(c->ep->hub, jr_params(msg), space, &s);
	free(space);
	json_t *resp = jr_result(jr_id(msg), result);
	char *extra = xasprintf("Mcp-Session-Id: %s\r\n", session_id(s));
	ep_respond_json(c, 200, resp, extra);
	free(extra);
	json_decref(resp);
	ep_conn_request_done(c);
}

static struct session *ep_session_for(struct conn *c,
				      const struct http_request *req)
{
	const char *sid = http_request_header(req, "mcp-session-id");
	if (sid == NULL) {
		ep_fail(c, 400, JR_INVALID_REQUEST,
			"Bad Request: Mcp-Session-Id header is required; send "
			"initialize first");
		return NULL;
	}
	struct session *s = hub_session_find(c->ep->hub, sid);
	if (s == NULL) {
		ep_fail(c, 404, JR_INVALID_REQUEST,
			"Session not found: it ended or the runtime "
			"restarted; initialize a new session");
		return NULL;
	}
	const char *pv = http_request_header(req, "mcp-protocol-version");
	if (pv && !mcp_version_supported(pv)) {
		char *m = xasprintf("Bad Request: unsupported "
				    "MCP-Protocol-Version \"%.64s\"",
				    pv);
		ep_fail(c, 400, JR_INVALID_REQUEST, m);
		free(m);
		return NULL;
	}
	return s;
}

static void ep_handle_post(struct conn *c, const struct http_request *req)
{
	const char *ctype = http_request_header(req, "content-type");
	if (ctype == NULL || strncasecmp(ctype, "application/json", 16) != 0) {
		ep_fail(c, 415, JR_INVALID_REQUEST,
			"Unsupported Media Type: Content-Type must be "
			"application/json");
		return;
	}
	const char *accept = http_request_header(req, "accept");
	if (!ep_accepts(accept, "application/json") ||
	    !ep_accepts(accept, "text/event-stream")) {
		ep_fail(c, 406, JR_INVALID_REQUEST,
			"Not Acceptable: Accept must list application/json "
			"and text/event-stream");
		return;
	}
	json_error_t jerr;
	json_t *body = json_loadb(req->body, req->body_len, 0, &jerr);
	if (body == NULL) {
		char *m = xasprintf("Parse error: %s (line %d, column %d)",
				    jerr.text, jerr.line, jerr.column);
		ep_fail(c, 400, JR_PARSE_ERROR, m);
		free(m);
		return;
	}
	bool batch = json_is_array(body);
	size_t n = batch ? json_array_size(body) : 1;
	if (batch && (n == 0 || n > EP_MAX_BATCH)) {
		json_decref(body);
		ep_fail(c, 400, JR_INVALID_REQUEST,
			"Invalid Request: a batch must hold 1 to 100 "
			"messages");
		return;
	}
	/* Classify everything first: a batch is answered whole or not. */
	size_t nrequests = 0;
	bool streams = false;
	json_t *init = NULL;
	for (size_t i = 0; i < n; i++) {
		json_t *m = batch ? json_array_get(body, i) : body;
		const char *why;
		enum jr_kind k = jr_classify(m, &why);
		if (k == JR_INVALID) {
			json_t *err = jr_error(json_is_object(m) &&
						       jr_id_valid(jr_id(m))
					       ? jr_id(m)
					       : NULL,
					       JR_INVALID_REQUEST, why, NULL);
			ep_respond_json(c, 400, err, NULL);
			json_decref(err);
			json_decref(body);
			ep_conn_request_done(c);
			return;
		}
		if (k == JR_REQUEST) {
			nrequests++;
			if (strcmp(jr_method(m), "initialize") == 0)
				init = m;
			if (ep_method_streams(jr_method(m)))
				streams = true;
		}
	}
	if (c->ep->draining && nrequests > 0) {
		json_decref(body);
		ep_fail(c, 503, JR_SERVER_UNAVAILABLE,
			"mcpvisor is stopping and takes no new requests");
		return;
	}
	if (init) {
		if (batch) {
			json_decref(body);
			ep_fail(c, 400, JR_INVALID_REQUEST,
				"Invalid Request: initialize must not be part "
				"of a batch");
			return;
		}
		ep_handle_initialize(c, init, req);
		json_decref(body);
		return;
	}
	struct session *s = ep_session_for(c, req);
	if (s == NULL) {
		json_decref(body);
		return;
	}
	if (batch && strcmp(session_protocol_version(s), "2025-03-26") != 0) {
		json_decref(body);
		ep_fail(c, 400, JR_INVALID_REQUEST,
			"Invalid Request: JSON-RPC batches are only part of "
			"protocol version 2025-03-26");
		return;
	}
	if (nrequests == 0) {
		for (size_t i = 0; i < n; i++)
			session_handle(s, batch ? json_array_get(body, i) : body,
				       NULL);
		json_decref(body);
		ep_respond(c, 202, NULL, "", 0, NULL);
		ep_conn_request_done(c);
		return;
	}
	c->session_id = xstrdup(session_id(s));
	c->batch = batch;
	c->sse = streams && !batch;
	c->collected = batch ? json_array() : NULL;
	c->ex = exchange_new(&ep_exchange_ops, c, (unsigned)nrequests);
	struct exchange *ex = c->ex;
	exchange_ref(ex);
	if (c->sse) {
		ep_sse_open(c, s);
		ep_arm_early_close(c);
	}
	for (size_t i = 0; i < n; i++) {
		json_t *m = batch ? json_array_get(body, i) : body;
		session_handle(s, m, jr_id(m) && jr_method(m) ? ex : NULL);
	}
	exchange_unref(ex);
	json_decref(body);
}

/* A GET with Last-Event-ID resumes the stream that event belongs to:
 * what was missed is replayed, then the stream goes on here. */
static bool ep_resume(struct conn *c, struct session *s, const char *last)
{
	struct exchange *ex = NULL;
	json_t *events = NULL;
	if (session_stream_resume(s, last, &ex, &events) < 0)
		return false;
	ep_sse_start(c);
	size_t i;
	json_t *ev;
	json_array_foreach(events, i, ev)
	{
		const char *data = json_string_value(json_object_get(ev, "data"));
		ep_sse_write(c, json_string_value(json_object_get(ev, "id")),
			     data, json_string_length(json_object_get(ev, "data")),
			     -1);
	}
	json_decref(events);
	if (ex == NULL) {
		/* That stream has ended: everything was in the replay. */
		ep_write(c, "0\r\n\r\n", 5);
		ep_conn_request_done(c);
		return true;
	}
	c->ex = ex;
	c->standing = exchange_standing(ex);
	exchange_rebind(ex, &ep_exchange_ops, c);
	if (c->standing)
		session_set_stream(s, ex);
	else
		ep_arm_early_close(c);
	return true;
}

static void ep_handle_get(struct conn *c, const struct http_request *req)
{
	if (!ep_accepts(http_request_header(req, "accept"),
			"text/event-stream")) {
		ep_fail(c, 406, JR_INVALID_REQUEST,
			"Not Acceptable: a GET stream needs Accept: "
			"text/event-stream");
		return;
	}
	struct session *s = ep_session_for(c, req);
	if (s == NULL)
		return;
	c->session_id = xstrdup(session_id(s));
	c->sse = true;
	const char *last = http_request_header(req, "last-event-id");
	if (last && ep_resume(c, s, last))
		return;
	c->standing = true;
	c->ex = exchange_new(&ep_exchange_ops, c, 0);
	session_set_stream(s, c->ex);
	ep_sse_open(c, s);
}

static void ep_handle_delete(struct conn *c, const struct http_request *req)
{
	struct session *s = ep_session_for(c, req);
	if (s == NULL)
		return;
	hub_session_end(c->ep->hub, s);
	ep_respond(c, 200, NULL, "", 0, NULL);
	ep_conn_request_done(c);
}

static void ep_handle_status(struct conn *c, const struct http_request *req)
{
	char *v = http_query_param(req->url, "verbose");
	json_t *st = hub_status(c->ep->hub, v && strcmp(v, "1") == 0);
	free(v);
	json_object_set_new(st, "pid", json_integer(getpid()));
	json_object_set_new(st, "port", json_integer(c->ep->port));
	ep_respond_json(c, 200, st, NULL);
	json_decref(st);
	ep_conn_request_done(c);
}

/* Control actions: only on the Unix socket (mode 0600), so only the user
 * who runs the runtime can stop or reconfigure it. */
static void ep_handle_control(struct conn *c, const struct http_request *req,
			      const char *path)
{
	if (!c->is_unix) {
		ep_fail(c, 403, JR_INVALID_REQUEST,
			"Forbidden: control actions need the Unix socket");
		return;
	}
	if (req->method != HTTP_M_POST || c->ep->control == NULL) {
		ep_respond(c, 405, "text/plain", "Method Not Allowed\n", 19,
			   "Allow: POST\r\n");
		ep_conn_request_done(c);
		return;
	}
	char *force_s = http_query_param(req->url, "force");
	bool force = force_s && strcmp(force_s, "1") == 0;
	free(force_s);
	const char *action = NULL;
	char *server = NULL;
	const char *rest = path + 9;
	if (strcmp(rest, "stop") == 0) {
		action = "shutdown";
	} else if (strcmp(rest, "reload") == 0) {
		action = "reload";
	} else if (strncmp(rest, "servers/", 8) == 0) {
		const char *name = rest + 8;
		const char *slash = strchr(name, '/');
		if (slash && slash > name && slash - name <= CONFIG_MAX_NAME &&
		    (strcmp(slash + 1, "stop") == 0 ||
		     strcmp(slash + 1, "restart") == 0)) {
			server = xstrndup(name, (size_t)(slash - name));
			action = slash + 1;
		}
	}
	if (action == NULL) {
		ep_respond(c, 404, "text/plain", "Not Found\n", 10, NULL);
		ep_conn_request_done(c);
		return;
	}
	char *msg = NULL;
	int rc = c->ep->control(c->ep->control_arg, action, server, force,
				&msg);
	free(server);
	int status = rc == 0 ? 200 : rc == -EBUSY ? 409 : rc == -ENOENT ? 404
								       : 400;
	json_t *body = json_pack("{s:b,s:s}", "ok", rc == 0, "message",
				 msg ? msg : "");
	free(msg);
	if (strcmp(action, "shutdown") == 0)
		c->close_after = true;
	ep_respond_json(c, status, body, NULL);
	json_decref(body);
	ep_conn_request_done(c);
}

static void ep_handle_request(struct conn *c)
{
	const struct http_request *req = httpparse_request(c->hp);
	c->keep_alive = req->keep_alive;
	if (!c->is_unix) {
		const char *host = http_request_header(req, "host");
		size_t hlen = host ? (host[0] == '[' ? strcspn(host, "]") + 1
						     : strcspn(host, ":"))
				   : 0;
		if (host && !ep_host_is_loopback(host, hlen)) {
			ep_fail(c, 403, JR_INVALID_REQUEST,
				"Forbidden: Host is not a loopback name");
			return;
		}
	}
	if (!ep_origin_ok(http_request_header(req, "origin"))) {
		ep_fail(c, 403, JR_INVALID_REQUEST,
			"Forbidden: Origin is not a loopback page");
		return;
	}
	char *path = http_url_path(req->url);
	if (strcmp(path, "/mcp") == 0) {
		free(path);
		switch (req->method) {
		case HTTP_M_POST:
			ep_handle_post(c, req);
			return;
		case HTTP_M_GET:
			ep_handle_get(c, req);
			return;
		case HTTP_M_DELETE:
			ep_handle_delete(c, req);
			return;
		default:
			ep_respond(c, 405, "text/plain", "Method Not Allowed\n",
				   19, "Allow: GET, POST, DELETE\r\n");
			ep_conn_request_done(c);
			return;
		}
	}
	if (strcmp(path, "/status") == 0 && req->method == HTTP_M_GET) {
		free(path);
		ep_handle_status(c, req);
		return;
	}
	if (strncmp(path, "/control/", 9) == 0) {
		ep_handle_control(c, req, path);
		free(path);
		return;
	}
	free(path);
	ep_respond(c, 404, "text/plain", "Not Found\n", 10, NULL);
	ep_conn_request_done(c);
}

/* ---- reading ---- */

static void ep_conn_process(struct conn *c)
{
	while (c->state == CONN_READING && c->in.len > 0) {
		size_t used = 0;
		enum httpparse_state st =
			httpparse_feed(c->hp, c->in.data, c->in.len, &used);
		buf_consume(&c->in, used);
		switch (st) {
		case HTTPPARSE_NEED_MORE:
			return;
		case HTTPPARSE_HEADERS_DONE: {
			const char *exp = http_request_header(
				httpparse_request(c->hp), "expect");
			if (exp && strcasecmp(exp, "100-continue") == 0 &&
			    !c->sent_continue) {
				c->sent_continue = true;
				ep_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
			}
			break;
		}
		case HTTPPARSE_DONE:
			c->state = CONN_BUSY;
			ep_handle_request(c);
			break;
		case HTTPPARSE_ERROR: {
			const char *reason;
			int status = httpparse_error(c->hp, &reason);
			c->keep_alive = false;
			c->close_after = true;
			c->state = CONN_BUSY;
			if (status == 413)
				ep_fail(c, 413, JR_INVALID_REQUEST,
					"Payload Too Large: the body is over "
					"the runtime's limit");
			else
				ep_fail(c, status, JR_INVALID_REQUEST, reason);
			return;
		}
		}
	}
}

static void ep_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
	struct conn *c = h->data;
	buf_reserve(&c->in, EP_READ_CHUNK);
	b->base = c->in.data + c->in.len;
	b->len = EP_READ_CHUNK;
}

static void ep_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct conn *c = s->data;
	if (n < 0) {
		ep_conn_close(c);
		return;
	}
	if (n == 0)
		return;
	c->in.len += (size_t)n;
	c->in.data[c->in.len] = '\0';
	if (c->state == CONN_READING)
		ep_conn_process(c);
	else if (c->in.len > (size_t)64 * 1024 * 1024)
		ep_conn_close(c); /* a client that floods while answered */
}

static void ep_accept(struct endpoint *ep, uv_stream_t *server, bool is_unix)
{
	struct conn *c = xcalloc(1, sizeof *c);
	c->ep = ep;
	c->is_unix = is_unix;
	if (is_unix)
		uv_pipe_init(ep->loop, &c->u.pipe, 0);
	else
		uv_tcp_init(ep->loop, &c->u.tcp);
	c->u.h.data = c;
	uv_timer_init(ep->loop, &c->early_timer);
	c->early_timer.data = c;
	c->handles = 2;
	ep->open_handles++;
	if (uv_accept(server, &c->u.s) < 0 || ep->nconns >= EP_MAX_CONNS) {
		c->state = CONN_CLOSING;
		uv_close(&c->u.h, ep_conn_close_cb);
		uv_close((uv_handle_t *)&c->early_timer, ep_conn_close_cb);
		return;
	}
	if (!is_unix)
		uv_tcp_nodelay(&c->u.tcp, 1);
	c->hp = httpparse_new(ep->max_body);
	buf_init(&c->in);
	c->state = CONN_READING;
	c->keep_alive = true;
	c->pprev = &ep->conns;
	c->next = ep->conns;
	if (ep->conns)
		ep->conns->pprev = &c->next;
	ep->conns = c;
	ep->nconns++;
	uv_read_start(&c->u.s, ep_alloc_cb, ep_read_cb);
}

static void ep_tcp_connection_cb(uv_stream_t *server, int status)
{
	if (status == 0)
		ep_accept(server->data, server, false);
}

static void ep_pipe_connection_cb(uv_stream_t *server, int status)
{
	if (status == 0)
		ep_accept(server->data, server, true);
}

static int ep_bind_tcp(struct endpoint *ep, const char *host, int port)
{
	struct sockaddr_in addr;
	int rc = uv_ip4_addr(host, port, &addr);
	if (rc < 0)
		return rc;
	uv_tcp_init(ep->loop, &ep->tcp);
	ep->tcp.data = ep;
	ep->open_handles++;
	rc = uv_tcp_bind(&ep->tcp, (const struct sockaddr *)&addr, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&ep->tcp, 511,
			       ep_tcp_connection_cb);
	if (rc < 0) {
		uv_close((uv_handle_t *)&ep->tcp, NULL);
		ep->open_handles--;
		return rc;
	}
	ep->have_tcp = true;
	struct sockaddr_storage ss;
	int len = sizeof ss;
	uv_tcp_getsockname(&ep->tcp, (struct sockaddr *)&ss, &len);
	ep->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

int endpoint_start(uv_loop_t *loop, struct hub *hub,
		   const struct endpoint_opts *opts, struct endpoint **out,
		   char **err)
{
	struct endpoint *ep = xcalloc(1, sizeof *ep);
	ep->loop = loop;
	ep->hub = hub;
	ep->max_body = opts->max_body ? opts->max_body : HTTP_DEFAULT_MAX_BODY;
	ep->sse_close_ms = opts->sse_close_ms;
	ep->control = opts->control;
	ep->control_arg = opts->arg;
	const char *host = opts->host ? opts->host : "127.0.0.1";
	int rc;
	if (opts->port < 0) {
		rc = ep_bind_tcp(ep, host, EP_DEFAULT_PORT);
		if (rc == UV_EADDRINUSE) {
			log_info("port %d is taken; using a free port",
				 EP_DEFAULT_PORT);
			/* The failed handle must finish closing first. */
			uv_run(loop, UV_RUN_NOWAIT);
			rc = ep_bind_tcp(ep, host, 0);
		}
	} else {
		rc = ep_bind_tcp(ep, host, opts->port);
	}
	if (rc < 0) {
		*err = xasprintf("cannot listen on %s:%d: %s", host,
				 opts->port < 0 ? EP_DEFAULT_PORT : opts->port,
				 uv_strerror(rc));
		goto fail;
	}
	if (opts->socket_path) {
		ep->socket_path = xstrdup(opts->socket_path);
		unlink(opts->socket_path);
		uv_pipe_init(loop, &ep->pipe, 0);
		ep->pipe.data = ep;
		ep->open_handles++;
		ep->have_pipe = true;
		mode_t old = umask(0077);
		rc = uv_pipe_bind(&ep->pipe, opts->socket_path);
		umask(old);
		if (rc == 0)
			rc = uv_listen((uv_stream_t *)&ep->pipe, 511,
				       ep_pipe_connection_cb);
		if (rc < 0) {
			*err = xasprintf("cannot listen on %s: %s",
					 opts->socket_path, uv_strerror(rc));
			goto fail;
		}
		chmod(opts->socket_path, 0600);
	}
	*out = ep;
	return 0;
fail:
	endpoint_free(ep);
	uv_run(loop, UV_RUN_NOWAIT);
	return rc;
}

int endpoint_port(const struct endpoint *ep)
{
	return ep->port;
}

static void ep_listener_close_cb(uv_handle_t *h)
{
	struct endpoint *ep = h->data;
	ep->open_handles--;
	if (ep->freeing && ep->open_handles == 0) {
		free(ep->socket_path);
		free(ep);
	}
}

void endpoint_stop_accepting(struct endpoint *ep)
{
	if (ep->have_tcp) {
		ep->have_tcp = false;
		uv_close((uv_handle_t *)&ep->tcp, ep_listener_close_cb);
	}
	if (ep->have_pipe) {
		ep->have_pipe = false;
		uv_close((uv_handle_t *)&ep->pipe, ep_listener_close_cb);
		if (ep->socket_path)
			unlink(ep->socket_path);
	}
}

void endpoint_set_draining(struct endpoint *ep)
{
	ep->draining = true;
}

void endpoint_free(struct endpoint *ep)
{
	if (ep == NULL)
		return;
	ep->freeing = true;
	endpoint_stop_accepting(ep);
	while (ep->conns)
		ep_conn_close(ep->conns);
	if (ep->open_handles == 0) {
		free(ep->socket_path);
		free(ep);
	}
}
