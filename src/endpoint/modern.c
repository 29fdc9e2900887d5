/*
 * The HTTP side of MCP 2026-07-28 at /mcp: which POST is modern, its
 * envelope checked (jsonrpc/envelope.h) and answered with the status the
 * revision names, the principal it is served for, and the sink its answer
 * comes through: one JSON body, or an SSE stream once a notification comes
 * first (or the answer takes long enough that a heartbeat is due).
 */
#include <stdlib.h>
#include <string.h>

#include "endpoint/auth.h"
#include "endpoint/endpoint_int.h"
#include "http/httpparse.h"
#include "http/httpresp.h"
#include "http/query.h"
#include "jsonrpc/jsonrpc.h"
#include "modern/modern.h"
#include "session/hub.h"
#include "util/clock.h"
#include "util/jsonscan.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

static const char *ep_modern_header(void *arg, const char *lname)
{
	return http_request_header(arg, lname);
}

static void ep_modern_json(void *ctx, int status, const char *body, size_t len)
{
	struct conn *c = ctx;
	c->mreq = NULL;
	if (c->state == CONN_CLOSING)
		return;
	if (c->sse_started) {
		/* A heartbeat sent the stream's head already. */
		ep_sse_write(c, NULL, body, len, -1);
		ep_write(c, "0\r\n\r\n", 5);
	} else {
		ep_respond(c, status, "application/json", body, len, NULL);
	}
	ep_conn_request_done(c);
}

static void ep_modern_event(void *ctx, const char *data, size_t len)
{
	struct conn *c = ctx;
	if (c->state == CONN_CLOSING)
		return;
	c->sse = true;
	ep_sse_start(c);
	ep_sse_write(c, NULL, data, len, -1);
}

static void ep_modern_end(void *ctx)
{
	struct conn *c = ctx;
	c->mreq = NULL;
	if (c->state == CONN_CLOSING)
		return;
	ep_sse_start(c);
	ep_write(c, "0\r\n\r\n", 5);
	ep_conn_request_done(c);
}

static const struct modern_sink_ops ep_modern_sink = {
	.json = ep_modern_json,
	.event = ep_modern_event,
	.end = ep_modern_end,
};

/* Who the request is served for, into out: the holder of a valid API
 * key (by its digest, never the key), else the runtime's own user (the
 * only other one admitted). */
static void ep_principal(struct conn *c, const struct http_request *req,
			 char out[MODERN_PRINCIPAL_MAX])
{
	_Static_assert(MODERN_PRINCIPAL_MAX >= 4 + SHA256_HEX_BYTES,
		       "room for key: and a digest");
	const char *a = http_request_known(req, HTTP_H_AUTHORIZATION);
	if (a && strncasecmp(a, "Bearer ", 7) == 0) {
		const char *k = a + 7;
		while (*k == ' ')
			k++;
		const struct config *cfg = hub_config(c->ep->hub);
		if (auth_key_match(cfg->api_keys, cfg->napi_keys, k,
				   strlen(k))) {
			memcpy(out, "key:", 4);
			sha256_hex(k, strlen(k), out + 4);
			return;
		}
	}
	memcpy(out, "own", 4);
}

static void ep_modern_fail(struct conn *c, int status, json_t *id,
			   struct envelope_err *e)
{
	json_t *err = jr_error(id, e->code, e->message, e->data);
	e->data = NULL;
	ep_respond_json(c, status, err, NULL);
	json_decref(err);
	ep_conn_request_done(c);
}

/* The request's Mcp-Param-* headers (names come lower-cased); NULL:
 * none. */
static json_t *ep_modern_param_headers(const struct http_request *req)
{
	json_t *ph = NULL;
	for (size_t i = 0; i < req->nheaders; i++) {
		if (strncmp(req->headers[i].name, "mcp-param-", 10) != 0)
			continue;
		if (ph == NULL)
			ph = json_object();
		json_object_set_new(ph, req->headers[i].name,
				    json_string(req->headers[i].value));
	}
	return ph;
}

/* The methods whose answers may stream (a call under way). */
static bool ep_modern_streams(const char *method)
{
	return strcmp(method, "tools/call") == 0 ||
	       strcmp(method, "prompts/get") == 0 ||
	       strcmp(method, "resources/read") == 0 ||
	       strcmp(method, "completion/complete") == 0 ||
	       strcmp(method, "subscriptions/listen") == 0;
}

bool ep_modern_post(struct conn *c, const struct http_request *req,
		    json_t *body)
{
	/* A request of a 2025 session (its id sent, no claim in the body)
	 * is the 2025 path's, whatever its version header says. */
	const char *pv =
		http_request_known(req, HTTP_H_MCP_SESSION_ID)
			? NULL
			: http_request_known(req, HTTP_H_MCP_PROTOCOL_VERSION);
	if (json_is_array(body)) {
		size_t i;
		json_t *m;
		json_array_foreach(body, i, m)
		{
			if (envelope_classify(m, pv) != ENVELOPE_MODERN)
				continue;
			ep_fail(c, 400, JR_INVALID_REQUEST,
				"Invalid Request: 2026-07-28 has no batches; "
				"send each request in its own POST");
			return true;
		}
		return false;
	}
	if (envelope_classify(body, pv) != ENVELOPE_MODERN)
		return false;
	json_t *id = json_is_object(body) ? jr_id(body) : NULL;
	if (!json_is_object(body) || json_object_get(body, "method") == NULL) {
		ep_fail(c, 400, JR_INVALID_REQUEST,
			"Invalid Request: a 2026-07-28 message to the server "
			"is a request");
		return true;
	}
	struct envelope env;
	struct envelope_err e = {0};
	if (envelope_check(body, ep_modern_header, (void *)req, &env, &e) < 0) {
		ep_modern_fail(c, e.http_status, jr_id_valid(id) ? id : NULL,
			       &e);
		envelope_err_clear(&e);
		return true;
	}
	if (env.notification) {
		ep_respond(c, 202, NULL, "", 0, NULL);
		ep_conn_request_done(c);
		return true;
	}
	if (c->ep->draining) {
		ep_fail(c, 503, JR_SERVER_UNAVAILABLE,
			"mcpvisor is stopping and takes no new requests");
		return true;
	}
	char principal[MODERN_PRINCIPAL_MAX];
	ep_principal(c, req, principal);
	char *space = http_query_param(req->url, "space");
	if (space && (space[0] != '/' || strlen(space) > 4096)) {
		free(space);
		ep_fail(c, 400, JR_INVALID_REQUEST,
			"The space query parameter must be an absolute path");
		return true;
	}
	/* A call's answer may become a stream: a heartbeat may then send
	 * its head before its first event. */
	c->sse = ep_modern_streams(env.method);
	c->sse_ms = clock_now_ms(); /* the heartbeat counts from here */
	json_t *ph = ep_modern_param_headers(req);
	struct modern_req *r =
		modern_request(c->ep->modern, body, &env, principal, space, ph,
			       &ep_modern_sink, c);
	json_decref(ph);
	if (r)
		c->mreq = r;
	free(space);
	return true;
}

static bool ep_span_is(const char *text, const struct jsonscan_span *sp,
		       const char *want)
{
	size_t n = strlen(want);
	return sp->len == n && memcmp(text + sp->off, want, n) == 0;
}

/* A name (its JSON string at sp, quotes included) that Mcp-Name carries
 * plainly: visible ASCII with nothing escaped, not sentinel-shaped, so
 * the header must hold the very same bytes. */
/* Spans of a nested level, made offsets in its own object (at base). */
static void ep_spans_rebase(struct jsonscan_span *sp, size_t n, size_t base)
{
	for (size_t k = 0; k < n; k++)
		if (sp[k].len)
			sp[k].off -= base;
}

static bool ep_plain_name(const char *text, const struct jsonscan_span *sp)
{
	const char *s = text + sp->off + 1;
	size_t n = sp->len - 2;
	if (sp->len < 3 || text[sp->off] != '"' ||
	    (n >= 9 && memcmp(s, "=?base64?", 9) == 0))
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e || s[i] == '\\')
			return false;
	return true;
}

static bool ep_header_is(const struct http_request *req, enum http_hdr h,
			 const char *want, size_t n)
{
	const char *v = http_request_known(req, h);
	return v && strlen(v) == n && memcmp(v, want, n) == 0;
}

static bool ep_has_param_headers(const struct http_request *req)
{
	for (size_t i = 0; i < req->nheaders; i++)
		if (strncmp(req->headers[i].name, "mcp-param-", 10) == 0)
			return true;
	return false;
}

/* The body of a plain modern tools/call, scanned: its spans in tc. The
 * scans accept only text jansson accepts with member names every reader
 * finds alike; the plain case is a subset of what envelope_check
 * accepts (the right version in the body and the headers, the required
 * _meta keys of the right types, Mcp-Method and Mcp-Name as the body
 * says), without what asks for more than forwarding. */
static bool ep_modern_scan(const struct http_request *req,
			   struct modern_text_call *tc, bool *int_id,
			   long long *iv)
{
	static const char *const keys[] = {"jsonrpc", "id", "method", "params"};
	static const char *const pkeys[] = {"name", "_meta", "requestState",
					    "inputResponses"};
	static const char *const mkeys[] = {META_PROTOCOL_VERSION,
					    META_CLIENT_CAPS, META_CLIENT_INFO,
					    META_LOG_LEVEL, "progressToken"};
	struct jsonscan_span sp[4], pp[4], mp[5];
	const char *body = req->body;
	/* One pass over the three levels; the spans are offsets in body,
	 * made relative to their own object below. */
	const struct jsonscan_level lv[] = {
		{keys, 4, sp, 3}, {pkeys, 4, pp, 1}, {mkeys, 5, mp, 0}};
	if (jsonscan_levels_strict(body, req->body_len, lv, 3) < 0 ||
	    !ep_span_is(body, &sp[0], "\"2.0\"") ||
	    !ep_span_is(body, &sp[2], "\"tools/call\"") || sp[1].len == 0 ||
	    sp[3].len == 0 || body[sp[3].off] != '{')
		return false;
	const char *params = body + sp[3].off;
	ep_spans_rebase(pp, 4, sp[3].off);
	if (!ep_plain_name(params, &pp[0]) || pp[1].len == 0 ||
	    params[pp[1].off] != '{' || pp[2].len || pp[3].len)
		return false;
	const char *meta = params + pp[1].off;
	ep_spans_rebase(mp, 5, sp[3].off + pp[1].off);
	if (!ep_span_is(meta, &mp[0], "\"" MODERN_VERSION "\"") ||
	    mp[1].len == 0 || meta[mp[1].off] != '{' ||
	    (mp[2].len && meta[mp[2].off] != '{') || mp[3].len || mp[4].len)
		return false;
	*int_id = jsonscan_int(body, &sp[1], iv);
	if (!*int_id && (body[sp[1].off] != '"' ||
			 memchr(body + sp[1].off, '\\', sp[1].len) != NULL))
		return false;
	if (!ep_header_is(req, HTTP_H_MCP_NAME, params + pp[0].off + 1,
			  pp[0].len - 2) ||
	    ep_has_param_headers(req))
		return false;
	tc->body = body;
	tc->len = req->body_len;
	tc->params_off = sp[3].off;
	tc->params_len = sp[3].len;
	tc->name_off = pp[0].off;
	tc->name_len = pp[0].len;
	tc->id_off = sp[1].off;
	tc->id_len = sp[1].len;
	return true;
}

bool ep_modern_text_call(struct conn *c, const struct http_request *req)
{
	static const char version[] = MODERN_VERSION;
	static const char method[] = "tools/call";
	if (c->ep->draining || req->body_len == 0 ||
	    !ep_header_is(req, HTTP_H_MCP_PROTOCOL_VERSION, version,
			  sizeof version - 1) ||
	    !ep_header_is(req, HTTP_H_MCP_METHOD, method, sizeof method - 1))
		return false;
	struct modern_text_call tc;
	bool int_id;
	long long iv;
	if (!ep_modern_scan(req, &tc, &int_id, &iv))
		return false;
	char *space = http_query_param(req->url, "space");
	if (space && (space[0] != '/' || strlen(space) > 4096)) {
		free(space);
		return false; /* the general path says why */
	}
	char principal[MODERN_PRINCIPAL_MAX];
	ep_principal(c, req, principal);
	tc.id = int_id ? json_integer(iv)
		       : json_stringn(req->body + tc.id_off + 1, tc.id_len - 2);
	/* As ep_modern_post: the answer may become a stream, whose
	 * heartbeat counts from here. */
	bool sse = c->sse;
	uint64_t sse_ms = c->sse_ms;
	c->sse = true;
	c->sse_ms = clock_now_ms();
	struct modern_req *r = NULL;
	bool taken = modern_call_text(c->ep->modern, &tc, principal, space,
				      &ep_modern_sink, c, &r);
	if (!taken) {
		c->sse = sse;
		c->sse_ms = sse_ms;
	} else if (r) {
		c->mreq = r;
	}
	json_decref(tc.id);
	free(space);
	return taken;
}

bool ep_modern_other(struct conn *c, const struct http_request *req)
{
	const char *pv = http_request_known(req, HTTP_H_MCP_PROTOCOL_VERSION);
	if (pv == NULL || envelope_classify(NULL, pv) != ENVELOPE_MODERN)
		return false;
	ep_respond(c, 405, "text/plain", "Method Not Allowed\n", 19,
		   "Allow: POST\r\n");
	ep_conn_request_done(c);
	return true;
}
