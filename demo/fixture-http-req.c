/*
 * fixture-http's requests: reading and parsing connections, the routes of
 * Streamable HTTP (POST, GET, DELETE on /mcp) and of the legacy HTTP+SSE
 * transport (GET /sse, POST /messages), the fault modes, and the flags.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fixture-http-int.h"

static const char *const fxh_hdr_names[FXH_H_N] = {
	"host",		 "origin",	   "accept",
	"content-type",	 "mcp-session-id", "mcp-protocol-version",
	"last-event-id", "authorization",
};

static const char *const fxh_versions[] = {
	"2025-11-25",
	"2025-06-18",
	"2025-03-26",
	"2024-11-05",
};

/* ---- parsing ---------------------------------------------------------- */

static struct fxh_conn *fxh_conn_of(http_parser *p)
{
	return p->data;
}

static int fxh_on_begin(http_parser *p)
{
	struct fxh_conn *c = fxh_conn_of(p);

	memset(c->hlen, 0, sizeof(c->hlen));
	memset(c->hseen, 0, sizeof(c->hseen));
	c->hbad = c->too_big = c->in_value = false;
	c->flen = c->ulen = c->blen = 0;
	c->cur = -1;
	return 0;
}

static void fxh_append(char *buf, size_t *len, size_t cap, const char *at,
		       size_t n, bool *bad)
{
	if (*len + n >= cap) {
		*bad = true;
		return;
	}
	memcpy(buf + *len, at, n);
	*len += n;
	buf[*len] = '\0';
}

static int fxh_on_url(http_parser *p, const char *at, size_t n)
{
	struct fxh_conn *c = fxh_conn_of(p);

	fxh_append(c->url, &c->ulen, sizeof(c->url), at, n, &c->hbad);
	return 0;
}

static int fxh_on_field(http_parser *p, const char *at, size_t n)
{
	struct fxh_conn *c = fxh_conn_of(p);

	if (c->in_value) {
		c->in_value = false;
		c->flen = 0;
	}
	for (size_t i = 0; i < n; i++)
		if (c->flen + 1 < sizeof(c->field))
			c->field[c->flen++] =
				(char)tolower((unsigned char)at[i]);
	c->field[c->flen] = '\0';
	return 0;
}

static int fxh_on_value(http_parser *p, const char *at, size_t n)
{
	struct fxh_conn *c = fxh_conn_of(p);

	if (!c->in_value) {
		c->in_value = true;
		c->cur = -1;
		for (int i = 0; i < FXH_H_N; i++)
			if (strcmp(c->field, fxh_hdr_names[i]) == 0)
				c->cur = i;
		if (c->cur >= 0) {
			c->hseen[c->cur] = true;
			c->hlen[c->cur] = 0;
			c->hdr[c->cur][0] = '\0';
		}
	}
	if (c->cur >= 0)
		fxh_append(c->hdr[c->cur], &c->hlen[c->cur], FXH_HDR_MAX, at, n,
			   &c->hbad);
	return 0;
}

static int fxh_on_body(http_parser *p, const char *at, size_t n)
{
	struct fxh_conn *c = fxh_conn_of(p);

	if (c->too_big || c->blen + n > FXH_MAX_BODY) {
		c->too_big = true;
		return 0;
	}
	c->body = realloc(c->body, c->blen + n + 1);
	if (!c->body)
		abort();
	memcpy(c->body + c->blen, at, n);
	c->blen += n;
	return 0;
}

static int fxh_on_complete(http_parser *p)
{
	struct fxh_conn *c = fxh_conn_of(p);

	c->keep_alive = http_should_keep_alive(p);
	c->ready = true;
	/* One request at a time: the rest waits until this one is
	 * answered. */
	http_parser_pause(p, 1);
	return 0;
}

void fxh_parser_settings(void)
{
	fxh.ps = (http_parser_settings){
		.on_message_begin = fxh_on_begin,
		.on_url = fxh_on_url,
		.on_header_field = fxh_on_field,
		.on_header_value = fxh_on_value,
		.on_body = fxh_on_body,
		.on_message_complete = fxh_on_complete,
	};
}

static const char *fxh_hdr(struct fxh_conn *c, enum fxh_hdr h)
{
	return c->hseen[h] ? c->hdr[h] : NULL;
}

/* ---- routes ----------------------------------------------------------- */

/* A loopback name, with or without a port: anything else is a DNS
 * rebinding attempt (the transport's MUST on Origin; Host likewise). */
static bool fxh_loopback_host(const char *h)
{
	static const char *const names[] = {"127.0.0.1", "localhost", "[::1]"};

	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(names[i]);

		if (strncasecmp(h, names[i], n) == 0 &&
		    (h[n] == '\0' || h[n] == ':'))
			return true;
	}
	return false;
}

static bool fxh_origin_ok(const char *origin)
{
	const char *p = strstr(origin, "://");

	return p && fxh_loopback_host(p + 3);
}

static bool fxh_accepts(struct fxh_conn *c, const char *type)
{
	const char *a = fxh_hdr(c, FXH_H_ACCEPT);

	return !a || strstr(a, type) || strstr(a, "*/*");
}

static bool fxh_authorized(struct fxh_conn *c)
{
	const char *a = fxh_hdr(c, FXH_H_AUTH);

	return a && strncasecmp(a, "Bearer ", 7) == 0 &&
	       strcmp(a + 7, fxh.o->auth) == 0;
}

static void fxh_unauthorized(struct fxh_conn *c)
{
	char extra[256];

	snprintf(extra, sizeof(extra),
		 "WWW-Authenticate: Bearer resource_metadata=\"http://"
		 "127.0.0.1:%d/.well-known/oauth-protected-resource\"\r\n",
		 fxh.port);
	fxh_respond_error(c, 401, -32001,
			  "Unauthorized: bearer token "
			  "missing or wrong",
			  extra);
}

static void fxh_resource_metadata(struct fxh_conn *c)
{
	char body[256];
	int n = snprintf(body, sizeof(body),
			 "{\"resource\":\"http://127.0.0.1:%d/mcp\","
			 "\"authorization_servers\":[],"
			 "\"bearer_methods_supported\":[\"header\"]}",
			 fxh.port);

	fxh_respond(c, 200, NULL, "application/json", body, (size_t)n);
}

static struct fxh_session *fxh_session_of(struct fxh_conn *c)
{
	const char *sid = fxh_hdr(c, FXH_H_SESSION);
	struct fxh_session *hs;

	if (!sid) {
		fxh_respond_error(c, 400, -32000,
				  "Bad Request: Mcp-Session-Id header is "
				  "required",
				  NULL);
		return NULL;
	}
	hs = fxh_session_find(sid);
	if (!hs || hs->legacy) {
		fxh_respond_error(c, 404, -32001, "Session not found", NULL);
		return NULL;
	}
	return hs;
}

/* Parses the body into one JSON-RPC message; answers 4xx when it is not
 * one. *request tells whether it wants an answer. */
static json_t *fxh_body_message(struct fxh_conn *c, bool *request)
{
	json_error_t err;
	json_t *msg, *id, *method;

	if (c->too_big) {
		fxh_respond_error(c, 413, -32600, "Message too large", NULL);
		return NULL;
	}
	msg = json_loadb(c->body ? c->body : "", c->blen, 0, &err);
	if (!msg) {
		fxh_respond_error(c, 400, -32700, "Parse error", NULL);
		return NULL;
	}
	id = json_object_get(msg, "id");
	method = json_object_get(msg, "method");
	*request = json_is_string(method) && id;
	if (!json_is_object(msg) ||
	    (id && !json_is_string(id) && !json_is_integer(id)) ||
	    (!json_is_string(method) &&
	     !(id && (json_object_get(msg, "result") ||
		      json_object_get(msg, "error"))))) {
		fxh_respond_error(c, 400, -32600,
				  "Invalid Request: one JSON-RPC request, "
				  "notification or response (no batches)",
				  NULL);
		json_decref(msg);
		return NULL;
	}
	return msg;
}

static bool fxh_post_headers_ok(struct fxh_conn *c)
{
	const char *ct = fxh_hdr(c, FXH_H_CTYPE);
	const char *v = fxh_hdr(c, FXH_H_VERSION);

	if (!ct || !strstr(ct, "application/json")) {
		fxh_respond_error(c, 415, -32000,
				  "Content-Type must be application/json",
				  NULL);
		return false;
	}
	if (!fxh_accepts(c, "application/json") ||
	    !fxh_accepts(c, "text/event-stream")) {
		fxh_respond_error(c, 406, -32000,
				  "Accept must list application/json and "
				  "text/event-stream",
				  NULL);
		return false;
	}
	for (size_t i = 0;
	     v && i < sizeof(fxh_versions) / sizeof(*fxh_versions); i++)
		if (strcmp(v, fxh_versions[i]) == 0)
			return true;
	if (v) {
		fxh_respond_error(c, 400, -32000,
				  "Unsupported MCP-Protocol-Version", NULL);
		return false;
	}
	return true;
}

/* A request of the client: its answer is JSON when the fixture gives it at
 * once, else an SSE stream. */
static void fxh_post_request(struct fxh_conn *c, struct fxh_session *hs,
			     json_t *msg)
{
	json_t *id = json_object_get(msg, "id");
	const char *method = json_string_value(json_object_get(msg, "method"));
	struct fxh_stream *st;
	unsigned num;

	if (fxh_stream_open(hs, id)) {
		fxh_respond_error(c, 400, -32600,
				  "Request id already in use in this session",
				  NULL);
		return;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		abort();
	st->hs = hs;
	st->num = num = ++hs->next_num;
	st->rid = json_incref(id);
	st->conn = c;
	st->next = hs->streams;
	hs->streams = st;
	c->stream = st;
	c->busy = true;
	if ((fxh.o->drop_once || fxh.o->drop_unresumable) && !fxh.dropped &&
	    strcmp(method, "tools/call") == 0) {
		/* The fault: the stream is cut after its first event with
		 * an id, a priming one, so that it can be resumed. */
		fxh.dropped = true;
		fxh_log("cutting the answer stream of this tools/call (%s)",
			fxh.o->drop_once ? "--drop-sse-once"
					 : "--drop-sse-unresumable");
		fxh_sse_start(st, true);
		fxh_sse_cut(st);
		st->forgotten = fxh.o->drop_unresumable;
	}
	fxh.dispatching = st;
	fxh.ops->message(hs->user, msg);
	fxh.dispatching = NULL;
	/* Not answered at once: an SSE stream, so that what the fixture
	 * sends meanwhile can go on it. */
	st = fxh_stream_num(hs, num);
	if (st && st->conn && !st->started && !st->done)
		fxh_sse_start(st, hs->priming);
	if (hs->failed)
		fxh_session_close(hs);
}

static void fxh_post(struct fxh_conn *c)
{
	struct fxh_session *hs;
	bool request = false;
	json_t *msg;

	if (!fxh_post_headers_ok(c) || !(msg = fxh_body_message(c, &request)))
		return;
	if (request && !fxh_hdr(c, FXH_H_SESSION) &&
	    strcmp(json_string_value(json_object_get(msg, "method")),
		   "initialize") == 0) {
		hs = fxh_session_new(false);
		if (!hs) {
			fxh_respond_error(c, 503, -32000, "Too many sessions",
					  NULL);
			json_decref(msg);
			return;
		}
		hs->init_id = json_incref(json_object_get(msg, "id"));
	} else if (!(hs = fxh_session_of(c))) {
		json_decref(msg);
		return;
	} else if (fxh.o->expire_after > 0 &&
		   hs->posts >= fxh.o->expire_after) {
		fxh_log("session %s expired (--expire-after %lld)", hs->id,
			(long long)fxh.o->expire_after);
		fxh_session_close(hs);
		fxh_respond_error(c, 404, -32001, "Session not found", NULL);
		json_decref(msg);
		return;
	}
	hs->posts++;
	if (request) {
		fxh_post_request(c, hs, msg);
	} else {
		/* Answered before it is handed over: a fixture that exits
		 * in its handler must not leave the client waiting. */
		fxh_respond(c, 202, NULL, NULL, NULL, 0);
		fxh.ops->message(hs->user, msg);
	}
	json_decref(msg);
}

/* A GET stream, new or resumed with Last-Event-ID ("STREAM-SEQ"). */
static void fxh_get(struct fxh_conn *c)
{
	const char *last = fxh_hdr(c, FXH_H_LAST_ID);
	struct fxh_session *hs;
	struct fxh_stream *st;
	unsigned num = 0;
	uint64_t seq = 0;

	if (!fxh_accepts(c, "text/event-stream")) {
		fxh_respond_error(c, 406, -32000,
				  "Accept must list text/event-stream", NULL);
		return;
	}
	if (!(hs = fxh_session_of(c)))
		return;
	if (last && sscanf(last, "%u-%" SCNu64, &num, &seq) != 2) {
		fxh_respond_error(c, 400, -32000, "Bad Last-Event-ID", NULL);
		return;
	}
	st = fxh_stream_num(hs, num);
	if (!st || st->forgotten) {
		/* Unknown (or, by fault, forgotten): an empty stream that
		 * ends at once, without the answer. */
		struct fxh_stream tmp = {.hs = hs, .conn = c};

		c->busy = true;
		c->stream = &tmp;
		fxh_sse_start(&tmp, false);
		fxh_sse_end(&tmp);
		return;
	}
	if (st->conn && !last) {
		fxh_respond_error(c, 409, -32000,
				  "Conflict: this session's GET stream is "
				  "open already",
				  NULL);
		return;
	}
	if (st->conn)
		fxh_sse_cut(st); /* the client left it: this one replaces it */
	st->conn = c;
	c->stream = st;
	c->busy = true;
	fxh_sse_start(st, false);
	fxh_replay(st, last ? seq : st->sent);
	if (st->done)
		fxh_sse_end(st);
}

static void fxh_delete(struct fxh_conn *c)
{
	struct fxh_session *hs = fxh_session_of(c);

	if (!hs)
		return;
	fxh_session_close(hs);
	fxh_respond(c, 200, NULL, NULL, NULL, 0);
}

/* 2024-11-05: GET opens the session's one stream, whose first event names
 * the URL to POST to; every answer goes on that stream. */
static void fxh_legacy_get(struct fxh_conn *c)
{
	struct fxh_session *hs = fxh_session_new(true);
	char ev[128];
	int n;

	if (!hs) {
		fxh_respond_error(c, 503, -32000, "Too many sessions", NULL);
		return;
	}
	hs->get.conn = c;
	c->stream = &hs->get;
	c->busy = true;
	fxh_sse_start(&hs->get, false);
	n = snprintf(ev, sizeof(ev),
		     "event: endpoint\ndata: /messages?sessionId=%s\n\n",
		     hs->id);
	{
		char head[24];
		int h = snprintf(head, sizeof(head), "%x\r\n", n);

		fxh_write3(c, head, (size_t)h, ev, (size_t)n, "\r\n", 2);
	}
}

static void fxh_legacy_post(struct fxh_conn *c, const char *query)
{
	const char *sid = query ? strstr(query, "sessionId=") : NULL;
	struct fxh_session *hs = NULL;
	bool request;
	json_t *msg;

	if (sid) {
		char id[40];

		snprintf(id, sizeof(id), "%.*s", (int)strcspn(sid + 10, "&"),
			 sid + 10);
		hs = fxh_session_find(id);
	}
	if (!hs || !hs->legacy) {
		fxh_respond_error(c, 404, -32001, "Session not found", NULL);
		return;
	}
	if (!(msg = fxh_body_message(c, &request)))
		return;
	hs->posts++;
	fxh_respond(c, 202, NULL, "text/plain", "Accepted", 8);
	fxh.ops->message(hs->user, msg);
	json_decref(msg);
}

static void fxh_route(struct fxh_conn *c)
{
	const char *host = fxh_hdr(c, FXH_H_HOST);
	const char *origin = fxh_hdr(c, FXH_H_ORIGIN);
	enum http_method m = c->parser.method;
	char *query = strchr(c->url, '?');
	bool main;

	if (query)
		*query++ = '\0';
	if (fxh.o->hang_after > 0 && fxh.posts >= fxh.o->hang_after) {
		if (!fxh.hung)
			fxh_log("hanging: %lld POSTs answered (--hang-after)",
				(long long)fxh.posts);
		fxh.hung = true;
		c->busy = true; /* never answered */
		return;
	}
	if (m == HTTP_POST)
		fxh.posts++;
	if (c->hbad) {
		fxh_respond_error(c, 400, -32000, "Header too long", NULL);
		return;
	}
	if ((host && !fxh_loopback_host(host)) ||
	    (origin && !fxh_origin_ok(origin))) {
		fxh_respond_error(c, 403, -32000,
				  "Forbidden: Host and Origin must be "
				  "loopback",
				  NULL);
		return;
	}
	if (strncmp(c->url, "/.well-known/oauth-protected-resource", 37) == 0 &&
	    fxh.o->auth && m == HTTP_GET) {
		fxh_resource_metadata(c);
		return;
	}
	if (fxh.o->auth && !fxh_authorized(c)) {
		fxh_unauthorized(c);
		return;
	}
	main = strcmp(c->url, "/mcp") == 0 || strcmp(c->url, "/") == 0 ||
	       (fxh.o->legacy && strcmp(c->url, "/sse") == 0);
	if (fxh.o->legacy && m == HTTP_POST && strcmp(c->url, "/messages") == 0)
		fxh_legacy_post(c, query);
	else if (!main)
		fxh_respond_error(c, 404, -32000, "Not found", NULL);
	else if (fxh.o->legacy && m == HTTP_GET)
		fxh_legacy_get(c);
	else if (fxh.o->legacy)
		fxh_respond_error(c, 405, -32000,
				  "Method not allowed: this server speaks "
				  "the 2024-11-05 HTTP+SSE transport",
				  "Allow: GET\r\n");
	else if (m == HTTP_POST)
		fxh_post(c);
	else if (m == HTTP_GET)
		fxh_get(c);
	else if (m == HTTP_DELETE)
		fxh_delete(c);
	else
		fxh_respond_error(c, 405, -32000, "Method not allowed",
				  "Allow: GET, POST, DELETE\r\n");
}

/* ---- connections: reading --------------------------------------------- */

void fxh_conn_feed(struct fxh_conn *c, const char *p, size_t n)
{
	while (n > 0 && !c->busy && !c->closing && !c->shutting) {
		size_t used = http_parser_execute(&c->parser, &fxh.ps, p, n);
		enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);

		if (e == HPE_PAUSED) {
			http_parser_pause(&c->parser, 0);
		} else if (e != HPE_OK) {
			c->keep_alive = false;
			fxh_respond_error(c, 400, -32000, "Bad HTTP request",
					  NULL);
			return;
		}
		p += used;
		n -= used;
		if (c->ready) {
			c->ready = false;
			fxh_route(c);
		} else if (used == 0) {
			break;
		}
	}
	if (n > 0 && !c->closing && !c->shutting) {
		if (c->plen + n > FXH_MAX_PEND) {
			fxh_conn_close(c);
			return;
		}
		c->pend = realloc(c->pend, c->plen + n);
		if (!c->pend)
			abort();
		memcpy(c->pend + c->plen, p, n);
		c->plen += n;
	}
}

static void fxh_on_alloc(uv_handle_t *h, size_t size, uv_buf_t *buf)
{
	static char chunk[65536];

	*buf = uv_buf_init(chunk, sizeof(chunk));
}

static void fxh_on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct fxh_conn *c = s->data;

	if (nread < 0) {
		/* A POST stream cut by the client stays resumable. */
		fxh_conn_close(c);
		return;
	}
	if (nread > 0)
		fxh_conn_feed(c, buf->base, (size_t)nread);
}

static void fxh_on_connection(uv_stream_t *server, int status)
{
	struct fxh_conn *c;

	if (status < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c)
		abort();
	uv_tcp_init(&fxh.loop, &c->tcp);
	c->tcp.data = c;
	c->next = fxh.conns;
	fxh.conns = c;
	fxh.nconns++;
	if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0 || fxh.stopping) {
		fxh_conn_close(c);
		return;
	}
	if (fxh.nconns > FXH_MAX_CONNS) {
		/* Said, not just dropped, so a test sees why. */
		c->keep_alive = false;
		fxh_respond_error(c, 503, -32000, "Too many connections", NULL);
		return;
	}
	uv_tcp_nodelay(&c->tcp, 1);
	http_parser_init(&c->parser, HTTP_REQUEST);
	c->parser.data = c;
	c->keep_alive = true;
	uv_read_start((uv_stream_t *)&c->tcp, fxh_on_alloc, fxh_on_read);
}

void fxh_listen(void)
{
	/* In a container the engine's published port arrives on eth0, not on
	 * the container's loopback; the client still names 127.0.0.1:HOSTPORT
	 * in Host, which fxh_route's loopback check accepts. */
	const char *addr = fxh.o->listen_all ? "0.0.0.0" : "127.0.0.1";
	struct sockaddr_storage ss;
	struct sockaddr_in a;
	int len = sizeof(ss);
	int rc;

	uv_ip4_addr(addr, fxh.o->port, &a);
	rc = uv_tcp_bind(&fxh.listener, (const struct sockaddr *)&a, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&fxh.listener, 128,
			       fxh_on_connection);
	if (rc == 0)
		rc = uv_tcp_getsockname(&fxh.listener, (struct sockaddr *)&ss,
					&len);
	if (rc != 0) {
		fxh_log("cannot listen on %s:%d: %s (%s)", addr, fxh.o->port,
			uv_err_name(rc), uv_strerror(rc));
		fxh_stop(rc == UV_EADDRINUSE ? 98 : 1);
		return;
	}
	fxh.port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	fxh_log("listening on %d (http://127.0.0.1:%d/%s)", fxh.port, fxh.port,
		fxh.o->legacy ? "sse" : "mcp");
}
