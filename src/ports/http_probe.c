/*
 * Whether an HTTP server answers on a loopback port (ports/http_probe.h).
 */
#include "ports/http_probe.h"

#include <errno.h>
#include <stdlib.h>

#include "util/xmalloc.h"

#define HTTP_PROBE_REQUEST "GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"

struct http_probe {
	uv_tcp_t tcp;
	uv_timer_t timer;
	uv_connect_t req;
	uv_write_t wr;
	http_probe_cb cb;
	void *ctx;
	bool done;
	int handles;
	char buf[256]; /* what came back: read and dropped */
};

static void http_probe_closed_cb(uv_handle_t *h)
{
	struct http_probe *p = h->data;
	if (--p->handles == 0)
		free(p);
}

static void http_probe_end(struct http_probe *p, bool answered)
{
	if (p->done)
		return;
	p->done = true;
	uv_close((uv_handle_t *)&p->tcp, http_probe_closed_cb);
	uv_close((uv_handle_t *)&p->timer, http_probe_closed_cb);
	p->cb(p->ctx, answered);
}

static void http_probe_alloc_cb(uv_handle_t *h, size_t n, uv_buf_t *b)
{
	struct http_probe *p = h->data;
	*b = uv_buf_init(p->buf, sizeof p->buf);
}

static void http_probe_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	if (n != 0)
		http_probe_end(s->data, n > 0);
}

static void http_probe_write_cb(uv_write_t *req, int status)
{
	if (status < 0)
		http_probe_end(req->data, false);
}

static void http_probe_connect_cb(uv_connect_t *req, int status)
{
	struct http_probe *p = req->data;
	if (p->done)
		return;
	if (status < 0) {
		http_probe_end(p, false);
		return;
	}
	static char request[] = HTTP_PROBE_REQUEST;
	uv_buf_t b = uv_buf_init(request, sizeof request - 1);
	p->wr.data = p;
	if (uv_write(&p->wr, (uv_stream_t *)&p->tcp, &b, 1,
		     http_probe_write_cb) < 0 ||
	    uv_read_start((uv_stream_t *)&p->tcp, http_probe_alloc_cb,
			  http_probe_read_cb) < 0)
		http_probe_end(p, false);
}

static void http_probe_timeout_cb(uv_timer_t *t)
{
	http_probe_end(t->data, false);
}

int http_probe(uv_loop_t *loop, int port, uint64_t timeout_ms, http_probe_cb cb,
	       void *ctx)
{
	struct sockaddr_in a;
	int rc = uv_ip4_addr("127.0.0.1", port, &a);
	if (rc < 0)
		return rc;
	struct http_probe *p = xcalloc(1, sizeof *p);
	p->cb = cb;
	p->ctx = ctx;
	uv_tcp_init(loop, &p->tcp);
	uv_timer_init(loop, &p->timer);
	p->tcp.data = p->timer.data = p->req.data = p;
	p->handles = 2;
	rc = uv_tcp_connect(&p->req, &p->tcp, (struct sockaddr *)&a,
			    http_probe_connect_cb);
	if (rc < 0) {
		p->done = true;
		uv_close((uv_handle_t *)&p->tcp, http_probe_closed_cb);
		uv_close((uv_handle_t *)&p->timer, http_probe_closed_cb);
		return rc;
	}
	uv_timer_start(&p->timer, http_probe_timeout_cb, timeout_ms, 0);
	return 0;
}
