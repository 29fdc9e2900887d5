/*
 * MCP Streamable HTTP (2025-11-25) at /mcp: POST answered with JSON or an
 * SSE stream, 202 for notifications and responses, the standing GET stream
 * and resumption with Last-Event-ID, DELETE to end a session; the checks
 * of Origin, Host, Accept, Content-Type, session and protocol version.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "endpoint/endpoint_int.h"
#include "http/httpparse.h"
#include "http/httpresp.h"
#include "http/query.h"
#include "jsonrpc/jsonrpc.h"
#include "session/exchange.h"
#include "session/hub.h"
#include "session/session.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/jsonscan.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* Numbers the stream's events from now on and makes the priming event:
 * an id and no data, with the reconnection delay, so a client that loses
 * the stream can resume from it. It goes out with the head, before the
 * first event (so a quick answer takes one write). Only an answer that
 * streams pays for this: the stream opens when the answer's form is
 * known (ep_ex_opening_cb, ep_sse_start). */
void ep_stream_open(struct conn *c)
{
	if (!c->open_pending)
		return;
	c->open_pending = false;
	struct session *s = hub_session_find(c->ep->hub, c->session_id);
	if (s == NULL)
		return;
	session_stream_open(s, c->ex);
	session_stream_prime(s, c->ex, c->prime_id);
	c->prime_pending = true;
}

/* The answer under way is s's. */
static void ep_conn_set_session(struct conn *c, struct session *s)
{
	/* Session ids are SESSION_ID_LEN characters: copied whole. */
	const char *id = session_id(s);
	size_t n = strnlen(id, SESSION_ID_LEN);
	memcpy(c->session_id, id, n);
	c->session_id[n] = '\0';
}

/* An answer that streams, its replay stream opened lazily. */
static void ep_sse_begin(struct conn *c)
{
	c->sse = true;
	c->open_pending = true;
	c->sse_ms = clock_now_ms(); /* the head's heartbeat counts from here */
}

/* Whether a message of len bytes is held for the end of the loop turn:
 * the first of a single request's answer, which goes as JSON if it is
 * the answer. */
static bool ep_may_hold(const struct conn *c, size_t len)
{
	return !c->sse_started && !c->held && !c->batch && !c->standing &&
	       len <= EP_JSON_ANSWER_MAX;
}

static void ep_ex_opening_cb(void *ctx, size_t len, bool last)
{
	struct conn *c = ctx;
	/* Only the answer alone, held, can go as a JSON body; any other
	 * message is an event of the stream. */
	if (c->state != CONN_CLOSING && !(last && ep_may_hold(c, len)))
		ep_stream_open(c);
}

static void ep_ex_deliver_cb(void *ctx, json_t *msg, const char *event_id,
			     const char *data, size_t len)
{
	struct conn *c = ctx;
	if (c->state == CONN_CLOSING)
		return;
	if (c->sse) {
		/* The first message of a single request's answer waits for the
		 * end of the turn: when it is the answer, it goes as JSON. */
		char *text = data ? NULL : json_dumps(msg, JSON_COMPACT);
		const char *d = data ? data : text;
		size_t n = data ? len : strlen(text);
		if (ep_may_hold(c, n)) {
			ep_hold(c, data ? event_id : NULL, d, n);
		} else {
			ep_sse_start(c);
			ep_sse_write(c, data ? event_id : NULL, d, n, -1);
		}
		free(text);
		return;
	}
	/* JSON mode carries only the answers; text comes only for them. */
	json_t *parsed = NULL;
	if (msg == NULL) {
		parsed = json_loadb(data, len, 0, NULL);
		msg = parsed;
		if (msg == NULL)
			return;
	}
	if (json_object_get(msg, "method") == NULL) {
		if (c->batch) {
			json_array_append(c->collected, msg);
		} else {
			json_decref(c->collected);
			c->collected = json_incref(msg);
		}
	}
	json_decref(parsed);
}

static void ep_ex_finish_cb(void *ctx)
{
	struct conn *c = ctx;
	if (c->state == CONN_CLOSING)
		return;
	if (c->sse) {
		/* Finished with its one message: that was the answer. */
		if (!(exchange_finished(c->ex) && ep_answer_held(c))) {
			ep_sse_start(c);
			ep_write(c, "0\r\n\r\n", 5);
		}
	} else {
		struct buf extra;
		buf_init(&extra);
		ep_put_session_header(c, &extra);
		ep_respond_json(c, 200, c->collected, extra.data);
		buf_free(&extra);
	}
	ep_conn_request_done(c);
}

static const struct exchange_ops ep_exchange_ops = {
	.deliver = ep_ex_deliver_cb,
	.finish = ep_ex_finish_cb,
};

/* A POST answered as a stream or, when the answer comes first and alone,
 * as one JSON body: its replay stream opens only if it streams. */
static const struct exchange_ops ep_stream_ops = {
	.deliver = ep_ex_deliver_cb,
	.finish = ep_ex_finish_cb,
	.opening = ep_ex_opening_cb,
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
	/* Started first: a stream still to open opens, then is parked. */
	ep_sse_start(c);
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

/* Host is a loopback name and at most a port: nothing after it, so no
 * other reader can take `localhost:80@evil.example` for another host. */
static bool ep_host_ok(const char *host)
{
	size_t len =
		host[0] == '[' ? strcspn(host, "]") + 1 : strcspn(host, ":");
	if (!ep_host_is_loopback(host, len))
		return false;
	const char *rest = host + len;
	if (*rest == '\0')
		return true;
	if (*rest++ != ':' || *rest == '\0')
		return false;
	return strspn(rest, "0123456789") == strlen(rest);
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

/* Whether the Accept list names type or * / *: each media range's type,
 * before any parameters, compared whole. */
static bool ep_accepts(const char *accept, const char *type)
{
	if (accept == NULL)
		return false;
	size_t tlen = strlen(type);
	for (const char *p = accept; *p;) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		size_t n = strcspn(p, ",;");
		size_t len = n;
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if ((len == tlen && strncasecmp(p, type, len) == 0) ||
		    (len == 3 && memcmp(p, "*/*", 3) == 0))
			return true;
		p += n;
		p += strcspn(p, ","); /* past any parameters */
	}
	return false;
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

static void ep_initialized(void *arg, json_t *result, struct session *s)
{
	struct conn *c = arg;
	c->init = NULL;
	json_t *id = c->init_id;
	c->init_id = NULL;
	if (result == NULL) {
		/* At the session cap with every session busy. */
		json_t *err = jr_error(id, JR_SERVER_UNAVAILABLE,
				       "Too many sessions: every session is "
				       "busy; end one (DELETE) or retry later",
				       NULL);
		ep_respond_json(c, 503, err, "Retry-After: 1\r\n");
		json_decref(err);
		json_decref(id);
		ep_conn_request_done(c);
		return;
	}
	json_t *resp = jr_result(id, result);
	json_decref(id);
	char *extra = xasprintf("Mcp-Session-Id: %s\r\n", session_id(s));
	ep_respond_json(c, 200, resp, extra);
	free(extra);
	json_decref(resp);
	ep_conn_request_done(c);
}

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
	/* With a space, its .mcp.json is read off the loop and the answer
	 * comes in ep_initialized; the conn waits (c->init cancels). */
	c->init_id = json_incref(jr_id(msg));
	struct hub_init *hi = hub_initialize_async(c->ep->hub, jr_params(msg),
						   space, ep_initialized, c);
	if (hi)
		c->init = hi;
	free(space);
}

static struct session *ep_session_for(struct conn *c,
				      const struct http_request *req)
{
	const char *sid = http_request_known(req, HTTP_H_MCP_SESSION_ID);
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
	const char *pv = http_request_known(req, HTTP_H_MCP_PROTOCOL_VERSION);
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

/* The common case, a single tools/call of a known tool with nothing to
 * rewrite but its name, goes on without a jansson parse or serialisation:
 * scanned, checked, and forwarded as text. True when it was taken. The
 * scan accepts only text jansson accepts, and only objects whose members
 * every reader finds alike at the two levels read here (no escaped or
 * repeated names): anything else takes the general path, which parses
 * once and forwards what it parsed. */
static bool ep_text_call(struct conn *c, const struct http_request *req)
{
	static const char *const keys[] = {"jsonrpc", "id", "method", "params"};
	static const char *const pkeys[] = {"name", "_meta"};
	struct jsonscan_span sp[4], pp[2];
	const char *body = req->body;
	size_t len = req->body_len;
	const struct jsonscan_level lv[] = {{keys, 4, sp, 3},
					    {pkeys, 2, pp, 0}};
	if (c->ep->draining || len == 0 ||
	    jsonscan_levels_strict(body, len, lv, 2) < 0 || sp[0].len != 5 ||
	    memcmp(body + sp[0].off, "\"2.0\"", 5) != 0 || sp[2].len != 12 ||
	    memcmp(body + sp[2].off, "\"tools/call\"", 12) != 0 ||
	    sp[3].len == 0 || body[sp[3].off] != '{' || sp[1].len == 0)
		return false;
	/* The spans of params' members are relative to the body. */
	const char *params = body + sp[3].off;
	if (pp[0].len)
		pp[0].off -= sp[3].off;
	if (pp[1].len != 0 || pp[0].len < 2 || params[pp[0].off] != '"' ||
	    memchr(params + pp[0].off, '\\', pp[0].len) != NULL)
		return false;
	long long iv;
	bool int_id = jsonscan_int(body, &sp[1], &iv);
	if (!int_id && (body[sp[1].off] != '"' ||
			memchr(body + sp[1].off, '\\', sp[1].len) != NULL))
		return false;
	const char *sid = http_request_known(req, HTTP_H_MCP_SESSION_ID);
	const char *pv = http_request_known(req, HTTP_H_MCP_PROTOCOL_VERSION);
	struct session *s = sid ? hub_session_find(c->ep->hub, sid) : NULL;
	if (s == NULL || (pv && !mcp_version_supported(pv)))
		return false;
	struct session_text_route rt;
	if (!session_route_text(s, params + pp[0].off + 1, pp[0].len - 2, &rt))
		return false;
	json_t *id = int_id ? json_integer(iv)
			    : json_stringn(body + sp[1].off + 1, sp[1].len - 2);
	ep_conn_set_session(c, s);
	ep_sse_begin(c);
	c->ex = exchange_new(&ep_stream_ops, c, 1);
	struct exchange *ex = c->ex;
	exchange_ref(ex);
	exchange_expect(ex, id, "tools/call");
	ep_arm_early_close(c);
	session_call_text(s, &rt, id, params, sp[3].len, pp[0].off, pp[0].len,
			  ex);
	exchange_unref(ex);
	json_decref(id);
	return true;
}

/* One POST's body and what its messages are. */
struct ep_post {
	json_t *body;
	bool batch;
	size_t n; /* messages */
	size_t nrequests;
	bool streams; /* a request whose answer may stream */
	json_t *init; /* the initialize request, if any (borrowed) */
};

static json_t *ep_post_at(const struct ep_post *p, size_t i)
{
	return p->batch ? json_array_get(p->body, i) : p->body;
}

/* Content-Type and Accept as Streamable HTTP asks. False when answered. */
static bool ep_post_headers_ok(struct conn *c, const struct http_request *req)
{
	const char *ctype = http_request_known(req, HTTP_H_CONTENT_TYPE);
	if (ctype == NULL || strncasecmp(ctype, "application/json", 16) != 0) {
		ep_fail(c, 415, JR_INVALID_REQUEST,
			"Unsupported Media Type: Content-Type must be "
			"application/json");
		return false;
	}
	const char *accept = http_request_known(req, HTTP_H_ACCEPT);
	if (!ep_accepts(accept, "application/json") ||
	    !ep_accepts(accept, "text/event-stream")) {
		ep_fail(c, 406, JR_INVALID_REQUEST,
			"Not Acceptable: Accept must list application/json "
			"and text/event-stream");
		return false;
	}
	return true;
}

/* The body as JSON: one message or a batch of 1 to EP_MAX_BATCH. False
 * when answered. */
static bool ep_post_parse(struct conn *c, const struct http_request *req,
			  struct ep_post *p)
{
	json_error_t jerr;
	p->body = json_loadb(req->body, req->body_len, 0, &jerr);
	if (p->body == NULL) {
		char *m = xasprintf("Parse error: %s (line %d, column %d)",
				    jerr.text, jerr.line, jerr.column);
		ep_fail(c, 400, JR_PARSE_ERROR, m);
		free(m);
		return false;
	}
	p->batch = json_is_array(p->body);
	p->n = p->batch ? json_array_size(p->body) : 1;
	if (p->batch && (p->n == 0 || p->n > EP_MAX_BATCH)) {
		ep_fail(c, 400, JR_INVALID_REQUEST,
			"Invalid Request: a batch must hold 1 to 100 "
			"messages");
		return false;
	}
	return true;
}

/* Classifies every message first: a batch is answered whole or not.
 * False when answered (a message that is not JSON-RPC). */
static bool ep_post_classify(struct conn *c, struct ep_post *p)
{
	for (size_t i = 0; i < p->n; i++) {
		json_t *m = ep_post_at(p, i);
		const char *why;
		enum jr_kind k = jr_classify(m, &why);
		if (k == JR_INVALID) {
			json_t *err = jr_error(
				json_is_object(m) && jr_id_valid(jr_id(m))
					? jr_id(m)
					: NULL,
				JR_INVALID_REQUEST, why, NULL);
			ep_respond_json(c, 400, err, NULL);
			json_decref(err);
			ep_conn_request_done(c);
			return false;
		}
		if (k != JR_REQUEST)
			continue;
		p->nrequests++;
		if (strcmp(jr_method(m), "initialize") == 0)
			p->init = m;
		if (ep_method_streams(jr_method(m)))
			p->streams = true;
	}
	return true;
}

/* Notifications and answers only: handed over, 202 at once. */
static void ep_post_notify(struct conn *c, struct session *s,
			   const struct ep_post *p)
{
	for (size_t i = 0; i < p->n; i++)
		session_handle(s, ep_post_at(p, i), NULL);
	ep_respond(c, 202, NULL, "", 0, NULL);
	ep_conn_request_done(c);
}

/* Requests: one exchange collects their answers, as JSON or as a stream. */
static void ep_post_exchange(struct conn *c, struct session *s,
			     const struct ep_post *p)
{
	ep_conn_set_session(c, s);
	c->batch = p->batch;
	/* A batch that forwards calls is answered as a stream too: a
	 * server's request or progress during one of its calls (sampling,
	 * elicitation) needs a way to the client, and the 2025-03-26 spec
	 * lets a batch be answered by one response event per request. */
	c->collected = p->batch ? json_array() : NULL;
	if (p->streams)
		ep_sse_begin(c);
	c->ex = exchange_new(c->sse ? &ep_stream_ops : &ep_exchange_ops, c,
			     (unsigned)p->nrequests);
	struct exchange *ex = c->ex;
	exchange_ref(ex);
	if (c->sse) {
		/* Its requests, before its stream opens (exchange_expect). */
		for (size_t i = 0; i < p->n; i++) {
			json_t *m = ep_post_at(p, i);
			if (jr_id(m) && jr_method(m))
				exchange_expect(ex, jr_id(m), jr_method(m));
		}
		ep_arm_early_close(c);
	}
	for (size_t i = 0; i < p->n; i++) {
		json_t *m = ep_post_at(p, i);
		session_handle(s, m, jr_id(m) && jr_method(m) ? ex : NULL);
	}
	exchange_unref(ex);
}

static void ep_handle_post(struct conn *c, const struct http_request *req)
{
	struct ep_post p = {0};
	if (!ep_post_headers_ok(c, req) || ep_modern_text_call(c, req) ||
	    ep_text_call(c, req))
		return;
	if (!ep_post_parse(c, req, &p) || ep_modern_post(c, req, p.body) ||
	    !ep_post_classify(c, &p))
		goto done;
	if (c->ep->draining && p.nrequests > 0) {
		ep_fail(c, 503, JR_SERVER_UNAVAILABLE,
			"mcpvisor is stopping and takes no new requests");
		goto done;
	}
	if (p.init && p.batch) {
		ep_fail(c, 400, JR_INVALID_REQUEST,
			"Invalid Request: initialize must not be part of a "
			"batch");
		goto done;
	}
	if (p.init) {
		ep_handle_initialize(c, p.init, req);
		goto done;
	}
	struct session *s = ep_session_for(c, req);
	if (s == NULL)
		goto done;
	if (p.batch && strcmp(session_protocol_version(s), "2025-03-26") != 0) {
		ep_fail(c, 400, JR_INVALID_REQUEST,
			"Invalid Request: JSON-RPC batches are only part of "
			"protocol version 2025-03-26");
		goto done;
	}
	if (p.nrequests == 0)
		ep_post_notify(c, s, &p);
	else
		ep_post_exchange(c, s, &p);
done:
	json_decref(p.body);
}

/* A GET with Last-Event-ID resumes the stream that event belongs to:
 * what was missed is replayed, then the stream goes on here. Returns 0,
 * -ENOENT (an unknown id: a new standing stream instead) or -EBUSY
 * (answered: the stream is still held by another connection). */
static int ep_resume(struct conn *c, struct session *s, const char *last)
{
	struct exchange *ex = NULL;
	json_t *events = NULL;
	int rc = session_stream_resume(s, last, &ex, &events);
	if (rc == -EBUSY) {
		ep_fail(c, 409, JR_INVALID_REQUEST,
			"Conflict: that stream is still open on another "
			"connection; close it before resuming");
		return rc;
	}
	if (rc < 0)
		return rc;
	ep_sse_start(c);
	size_t i;
	json_t *ev;
	json_array_foreach(events, i, ev)
	{
		const char *data =
			json_string_value(json_object_get(ev, "data"));
		ep_sse_write(
			c, json_string_value(json_object_get(ev, "id")), data,
			json_string_length(json_object_get(ev, "data")), -1);
	}
	json_decref(events);
	if (ex == NULL) {
		/* That stream has ended: everything was in the replay. */
		ep_write(c, "0\r\n\r\n", 5);
		ep_conn_request_done(c);
		return 0;
	}
	c->ex = ex;
	c->standing = exchange_standing(ex);
	/* Checked free by the resume above, on this same turn. */
	(void)exchange_rebind(ex, &ep_exchange_ops, c);
	if (c->standing)
		session_set_stream(s, ex);
	else
		ep_arm_early_close(c);
	return 0;
}

static void ep_handle_get(struct conn *c, const struct http_request *req)
{
	if (!ep_accepts(http_request_known(req, HTTP_H_ACCEPT),
			"text/event-stream")) {
		ep_fail(c, 406, JR_INVALID_REQUEST,
			"Not Acceptable: a GET stream needs Accept: "
			"text/event-stream");
		return;
	}
	struct session *s = ep_session_for(c, req);
	if (s == NULL)
		return;
	ep_conn_set_session(c, s);
	c->sse = true;
	const char *last = http_request_known(req, HTTP_H_LAST_EVENT_ID);
	if (last && ep_resume(c, s, last) != -ENOENT)
		return;
	c->standing = true;
	c->open_pending = true;
	c->ex = exchange_new(&ep_exchange_ops, c, 0);
	session_set_stream(s, c->ex);
	ep_sse_start(c); /* opens its replay stream */
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

/* Whether the path of url, its first len bytes, is path. */
static bool ep_path_is(const char *url, size_t len, const char *path)
{
	return strlen(path) == len && memcmp(url, path, len) == 0;
}

void ep_handle_request(struct conn *c)
{
	const struct http_request *req = httpparse_request(c->hp);
	c->keep_alive = req->keep_alive;
	if (!ep_admit(c, req))
		return;
	if (!c->is_unix) {
		const char *host = http_request_known(req, HTTP_H_HOST);
		if (host && !ep_host_ok(host)) {
			ep_fail(c, 403, JR_INVALID_REQUEST,
				"Forbidden: Host is not a loopback name");
			return;
		}
	}
	if (!ep_origin_ok(http_request_known(req, HTTP_H_ORIGIN))) {
		ep_fail(c, 403, JR_INVALID_REQUEST,
			"Forbidden: Origin is not a loopback page");
		return;
	}
	/* The path is compared where it lies in the URL: a copy only for a
	 * control request, which reads its parts. */
	const char *url = req->url;
	size_t plen = strcspn(url, "?#");
	if (ep_path_is(url, plen, "/mcp")) {
		switch (req->method) {
		case HTTP_M_POST:
			ep_handle_post(c, req);
			return;
		case HTTP_M_GET:
			if (!ep_modern_other(c, req))
				ep_handle_get(c, req);
			return;
		case HTTP_M_DELETE:
			if (!ep_modern_other(c, req))
				ep_handle_delete(c, req);
			return;
		default:
			ep_respond(c, 405, "text/plain", "Method Not Allowed\n",
				   19, "Allow: GET, POST, DELETE\r\n");
			ep_conn_request_done(c);
			return;
		}
	}
	if (ep_path_is(url, plen, "/status") && req->method == HTTP_M_GET) {
		ep_handle_status(c, req);
		return;
	}
	if (ep_path_is(url, plen, "/metrics")) {
		ep_handle_metrics(c, req);
		return;
	}
	if (plen >= 9 && strncmp(url, "/control/", 9) == 0) {
		char *path = http_url_path(url);
		ep_handle_control(c, req, path);
		free(path);
		return;
	}
	ep_respond(c, 404, "text/plain", "Not Found\n", 10, NULL);
	ep_conn_request_done(c);
}
