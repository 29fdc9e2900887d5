/*
 * Simple answers and SSE framing on a connection: what the endpoint and
 * its MCP handler write, built here and gathered by ep_write.
 */
#include <stdlib.h>
#include <string.h>

#include "endpoint/endpoint_int.h"
#include "http/httpresp.h"
#include "jsonrpc/jsonrpc.h"
#include "util/buf.h"
#include "util/clock.h"

/* ---- simple answers ---- */

void ep_respond(struct conn *c, int status, const char *ctype, const char *body,
		size_t len, const char *extra)
{
	struct buf b;
	buf_init(&b);
	httpresp_simple(&b, status, ctype, body, len,
			c->keep_alive && !c->close_after, extra);
	ep_write(c, b.data, b.len);
	buf_free(&b);
}

void ep_respond_json(struct conn *c, int status, json_t *body,
		     const char *extra)
{
	char *s = json_dumps(body, JSON_COMPACT);
	ep_respond(c, status, "application/json", s, strlen(s), extra);
	free(s);
}

/* An HTTP-level error with a JSON-RPC error body, so MCP clients can show
 * the message. */
void ep_fail(struct conn *c, int status, int code, const char *message)
{
	json_t *err = jr_error(NULL, code, message, NULL);
	ep_respond_json(c, status, err, NULL);
	json_decref(err);
	ep_conn_request_done(c);
}

/* ---- exchange delivery ---- */

void ep_session_header(const struct conn *c, char out[EP_SESSION_HEADER_MAX])
{
	static const char name[] = "Mcp-Session-Id: ";
	size_t n = strnlen(c->session_id, SESSION_ID_LEN);
	out[0] = '\0';
	if (n == 0)
		return;
	memcpy(out, name, sizeof name - 1);
	memcpy(out + sizeof name - 1, c->session_id, n);
	memcpy(out + sizeof name - 1 + n, "\r\n", 3);
}

void ep_put_session_header(const struct conn *c, struct buf *b)
{
	char line[EP_SESSION_HEADER_MAX];
	ep_session_header(c, line);
	buf_puts(b, line);
}

void ep_sse_start(struct conn *c)
{
	if (c->sse_started)
		return;
	ep_stream_open(c);
	c->sse_started = true;
	c->sse_ms = c->event_ms = clock_now_ms();
	struct buf b;
	buf_init(&b);
	struct buf extra;
	buf_init(&extra);
	buf_puts(&extra, "Transfer-Encoding: chunked\r\n");
	ep_put_session_header(c, &extra);
	httpresp_head(&b, 200, "text/event-stream", -1, true, extra.data);
	buf_free(&extra);
	ep_write_buf(c, &b);
	buf_free(&b);
	if (c->prime_pending) {
		c->prime_pending = false;
		ep_sse_write(c, c->prime_id, "", 0, EP_SSE_RETRY_MS);
	}
	if (c->held) {
		c->held = false;
		ep_sse_write(c, c->held_id[0] ? c->held_id : NULL,
			     c->held_data.data, c->held_data.len, -1);
		buf_reset(&c->held_data);
	}
}

void ep_hold(struct conn *c, const char *event_id, const char *data, size_t len)
{
	c->held = true;
	buf_reset(&c->held_data);
	buf_append(&c->held_data, data, len);
	size_t n = event_id ? strlen(event_id) : 0;
	if (n >= sizeof c->held_id)
		n = sizeof c->held_id - 1;
	memcpy(c->held_id, event_id ? event_id : "", n);
	c->held_id[n] = '\0';
	ep_conn_mark_dirty(c);
}

bool ep_answer_held(struct conn *c)
{
	if (!c->held || c->sse_started)
		return false;
	c->held = false;
	c->prime_pending = false;
	/* The head is formatted in place: a call's answer makes no buffer of
	 * its own. */
	char extra[EP_SESSION_HEADER_MAX];
	ep_session_header(c, extra);
	struct buf *out = ep_out_begin(c);
	if (out) {
		size_t from = out->len;
		httpresp_head(out, 200, "application/json",
			      (long long)c->held_data.len,
			      c->keep_alive && !c->close_after, extra);
		ep_out_end(c, from);
	}
	ep_write(c, c->held_data.data, c->held_data.len);
	buf_reset(&c->held_data);
	return true;
}

/* Writes one SSE event as one HTTP chunk. */
void ep_sse_write(struct conn *c, const char *id, const char *data, size_t len,
		  long retry_ms)
{
	struct buf ev, out;
	buf_init(&ev);
	buf_init(&out);
	httpresp_sse_event(&ev, id, len ? "message" : NULL, data, len,
			   retry_ms);
	buf_put_hex(&out, ev.len);
	buf_puts(&out, "\r\n");
	buf_append(&out, ev.data, ev.len);
	buf_puts(&out, "\r\n");
	ep_write(c, out.data, out.len);
	c->sse_ms = c->event_ms = clock_now_ms();
	buf_free(&ev);
	buf_free(&out);
}
