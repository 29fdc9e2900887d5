/*
 * A connection's output: what it is to send, gathered in its buffer and
 * written once per loop turn (from a prepare handle before the loop
 * waits, and a check handle after), counted against the session's flow
 * and the output cap, with the reading paused while too much waits.
 */
#include <stdlib.h>
#include <string.h>

#include "endpoint/endpoint_int.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/flow.h"
#include "util/log.h"
#include "util/xmalloc.h"

struct ep_write {
	uv_write_t req;
	struct conn *c;
	char *data;
	struct flow *flow; /* with flow_bytes of data counted there */
	size_t flow_bytes;
};

/* The counted bytes of out are gone (written, failed or dropped). */
void ep_flow_settle(struct conn *c)
{
	if (c->flow_out > 0)
		flow_sub(c->flow, c->flow_out);
	c->flow_out = 0;
}

/* Output held for the connection: queued in libuv and gathered. */
size_t ep_conn_pending(const struct conn *c)
{
	return c->u.s.write_queue_size + c->out.len;
}

static void ep_write_cb(uv_write_t *req, int status)
{
	struct ep_write *w = (struct ep_write *)req;
	struct conn *c = w->c;
	if (w->flow) { /* written, failed or cancelled: no longer queued */
		flow_sub(w->flow, w->flow_bytes);
		flow_unref(w->flow);
	}
	free(w->data);
	free(w);
	if (c->state == CONN_CLOSING)
		return;
	if (status < 0) {
		ep_conn_close(c);
		return;
	}
	c->write_ms = clock_now_ms();
	/* While output waited, the client could not be expected to send:
	 * the head of a request behind it gets its full time from now. */
	if (c->state == CONN_READING && !c->idle &&
	    c->u.s.write_queue_size == 0)
		c->deadline_ms = c->write_ms + c->ep->header_timeout_ms;
	ep_conn_resume(c);
}

/* Writes what the connection gathered: at once when the socket takes it,
 * else queued in order behind what is already queued. Returns 0 or a
 * libuv error; the caller decides what to do with the connection (never
 * closed here, so no caller finds it closed behind its back). */
int ep_conn_flush(struct conn *c)
{
	if (c->out.len == 0)
		return 0;
	size_t done = 0;
	if (c->u.s.write_queue_size == 0) {
		uv_buf_t b = uv_buf_init(c->out.data, (unsigned)c->out.len);
		int n = uv_try_write(&c->u.s, &b, 1);
		if (n == (int)c->out.len) {
			ep_flow_settle(c);
			buf_reset(&c->out);
			return 0;
		}
		if (n < 0 && n != UV_EAGAIN) {
			ep_flow_settle(c);
			buf_reset(&c->out);
			return n;
		}
		done = n > 0 ? (size_t)n : 0;
		/* The stall clock starts when the queue does. */
		c->write_ms = clock_now_ms();
	}
	struct ep_write *w = xcalloc(1, sizeof *w);
	w->c = c;
	w->data = xmalloc(c->out.len - done);
	memcpy(w->data, c->out.data + done, c->out.len - done);
	uv_buf_t rest = uv_buf_init(w->data, (unsigned)(c->out.len - done));
	buf_reset(&c->out);
	/* The counted bytes stay counted until the write's callback, even
	 * those try_write took: a little late, never twice. */
	if (c->flow_out > 0) {
		w->flow = c->flow;
		w->flow_bytes = c->flow_out;
		flow_ref(w->flow);
		c->flow_out = 0;
	}
	int rc = uv_write(&w->req, &c->u.s, &rest, 1, ep_write_cb);
	if (rc < 0) {
		if (w->flow) {
			flow_sub(w->flow, w->flow_bytes);
			flow_unref(w->flow);
		}
		free(w->data);
		free(w);
	}
	return rc;
}

static void ep_flush(struct endpoint *ep)
{
	while (ep->dirty) {
		struct conn *c = ep->dirty;
		ep->dirty = c->dirty_next;
		c->dirty = false;
		if (c->state == CONN_CLOSING)
			continue;
		/* A message held for the form it goes in and not followed by
		 * the end of its answer in the same turn: the stream starts. */
		if (c->held)
			ep_sse_start(c);
		if (ep_conn_flush(c) < 0)
			ep_conn_close(c);
		else if (c->over || ep_conn_pending(c) > EP_OUT_CAP)
			ep_conn_overflow(c);
		else
			ep_conn_resume(c); /* may dirty it again: looped */
	}
	uv_check_stop(&ep->flush);
	uv_prepare_stop(&ep->flush_early);
}

/* After the turn's callbacks (output made while handling events)... */
static void ep_flush_cb(uv_check_t *h)
{
	ep_flush(h->data);
}

/* ...and before the loop waits (output made in a timer, which runs
 * before the wait: it must not wait for the next event). */
static void ep_flush_early_cb(uv_prepare_t *h)
{
	ep_flush(h->data);
}

void ep_conn_mark_dirty(struct conn *c)
{
	if (!c->dirty) {
		c->dirty = true;
		c->dirty_next = c->ep->dirty;
		c->ep->dirty = c;
		uv_check_start(&c->ep->flush, ep_flush_cb);
		uv_prepare_start(&c->ep->flush_early, ep_flush_early_cb);
	}
}

/* Counts len bytes about to be gathered for c against the server whose
 * message is being handled (util/flow.h). */
static void ep_flow_count(struct conn *c, size_t len)
{
	if (c->flow != flow_current) {
		/* Another server's counted bytes leave first, so each write
		 * carries one server's count. Rare: a connection mostly
		 * carries one server's answers. */
		if (c->flow_out > 0 && ep_conn_flush(c) < 0)
			c->over = true; /* closed at the flush */
		flow_unref(c->flow);
		c->flow = flow_current;
		flow_ref(c->flow);
	}
	c->flow_out += len;
	flow_add(c->flow, len);
}

/* Whether len more bytes would take c's output over its cap. Over it the
 * rest is not kept: the flush drops the answer (the connection is closed
 * there, outside any caller). One message larger than the cap still goes
 * when nothing else is pending. */
static bool ep_out_over(const struct conn *c, size_t pending, size_t len)
{
	return pending > 0 && pending + len > EP_OUT_CAP;
}

void ep_write(struct conn *c, const char *data, size_t len)
{
	if (c->state == CONN_CLOSING || c->state == CONN_LINGER || len == 0 ||
	    c->over)
		return;
	if (ep_out_over(c, ep_conn_pending(c), len))
		c->over = true;
	else {
		if (flow_current)
			ep_flow_count(c, len);
		buf_append(&c->out, data, len);
	}
	ep_conn_mark_dirty(c);
}

struct buf *ep_out_begin(struct conn *c)
{
	if (c->state == CONN_CLOSING || c->state == CONN_LINGER || c->over)
		return NULL;
	/* Another server's counted bytes leave first, as in ep_write. */
	if (flow_current)
		ep_flow_count(c, 0);
	return &c->out;
}

void ep_out_end(struct conn *c, size_t from)
{
	size_t len = c->out.len - from;
	if (ep_out_over(c, ep_conn_pending(c) - len, len)) {
		c->out.len = from;
		c->over = true;
	} else if (flow_current) {
		c->flow_out += len;
		flow_add(c->flow, len);
	}
	ep_conn_mark_dirty(c);
}

void ep_write_buf(struct conn *c, struct buf *b)
{
	ep_write(c, b->data, b->len);
	buf_reset(b);
}
