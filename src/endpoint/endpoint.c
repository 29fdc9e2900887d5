/*
 * The endpoint's HTTP/1.1 side: listeners on TCP and the Unix socket,
 * connections that read one request at a time through the parser and
 * write answers (plain, or SSE as chunks so the connection stays alive;
 * their output is output.c's).
 * What a request means is decided in mcp.c and control.c.
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
#include "jsonrpc/jsonrpc.h"
#include "modern/modern.h"
#include "session/exchange.h"
#include "session/hub.h"
#include "session/session.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/flow.h"
#include "util/log.h"
#include "util/xmalloc.h"

static void ep_conn_process(struct conn *c);
static void ep_conn_update_read(struct conn *c);
static void ep_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b);
static void ep_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b);

/* ---- connection lifecycle ---- */

static void ep_conn_close_cb(uv_handle_t *h)
{
	struct conn *c = h->data;
	struct endpoint *ep = c->ep;
	if (--c->handles > 0)
		return;
	httpparse_free(c->hp);
	buf_free(&c->in);
	buf_free(&c->out);
	buf_free(&c->held_data);
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
	hub_initialize_cancel(c->init);
	c->init = NULL;
	hub_metrics_cancel(c->metrics);
	c->metrics = NULL;
	json_decref(c->init_id);
	c->init_id = NULL;
	if (c->mreq) {
		struct modern_req *r = c->mreq;
		c->mreq = NULL;
		modern_release(r);
	}
	if (c->ex == NULL) {
		/* A resumed stream that had ended holds only its session. */
		c->session_id[0] = '\0';
		return;
	}
	struct exchange *ex = c->ex;
	c->ex = NULL;
	bool unfinished = exchange_attached(ex);
	exchange_detach(ex);
	if (c->session_id[0]) {
		struct session *s = hub_session_find(c->ep->hub, c->session_id);
		if (s && unfinished)
			session_exchange_gone(s, ex);
		if (s && c->standing)
			session_drop_stream(s, ex);
	}
	exchange_unref(ex);
	c->session_id[0] = '\0';
	json_decref(c->collected);
	c->collected = NULL;
}

void ep_conn_close(struct conn *c)
{
	/* Marked first: whatever runs below (releasing the exchange) and
	 * calls back in finds it closing. */
	if (c->state == CONN_CLOSING)
		return;
	c->state = CONN_CLOSING;
	/* What was answered last goes out if the socket takes it now. */
	if (c->out.len > 0 && c->u.s.write_queue_size == 0) {
		uv_buf_t b = uv_buf_init(c->out.data, (unsigned)c->out.len);
		(void)uv_try_write(&c->u.s, &b, 1);
	}
	ep_flow_settle(c);
	flow_unref(c->flow);
	c->flow = NULL;
	buf_reset(&c->out);
	if (c->dirty) {
		struct conn **pp = &c->ep->dirty;
		while (*pp && *pp != c)
			pp = &(*pp)->dirty_next;
		if (*pp)
			*pp = c->dirty_next;
		c->dirty = false;
	}
	if (c->deferred) {
		struct conn **pp = &c->ep->deferred;
		while (*pp != c)
			pp = &(*pp)->deferred_next;
		*pp = c->deferred_next;
		c->deferred = false;
	}
	ep_conn_release_exchange(c);
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	c->ep->nconns--;
	if (c->is_unix)
		c->ep->nconns_unix--;
	uv_close(&c->u.h, ep_conn_close_cb);
	uv_close((uv_handle_t *)&c->early_timer, ep_conn_close_cb);
}

void ep_conn_overflow(struct conn *c)
{
	if (c->state == CONN_CLOSING)
		return;
	if (c->ex && c->sse && !c->standing && exchange_attached(c->ex)) {
		/* Parked as before even when its client saw nothing of it. */
		ep_stream_open(c);
		struct session *s = hub_session_find(c->ep->hub, c->session_id);
		if (s)
			session_stream_park(s, c->ex);
		exchange_detach(c->ex);
	}
	log_info("closing a connection whose client reads nothing "
		 "(%zu bytes waiting)",
		 ep_conn_pending(c));
	ep_conn_close(c);
}

static void ep_linger_timeout_cb(uv_timer_t *t)
{
	ep_conn_close(t->data);
}

/* Every answer is out and the write side is shut: wait a little for the
 * client to close first. */
static void ep_shutdown_cb(uv_shutdown_t *req, int status)
{
	struct conn *c = req->handle->data;
	if (c->state == CONN_CLOSING)
		return;
	if (status < 0) {
		ep_conn_close(c);
		return;
	}
	c->deadline_ms = 0;
	uv_timer_start(&c->early_timer, ep_linger_timeout_cb, EP_LINGER_MS, 0);
}

/* The last answer (Connection: close, 413, a parse error) is written:
 * finish sending it, shut the write side, and read what the client still
 * sends for a while, because closing with unread input would reset the
 * connection and the client might never see the answer. */
static void ep_conn_linger(struct conn *c)
{
	c->state = CONN_LINGER;
	buf_free(&c->in);
	/* Draining the answer is bounded like a stalled writer. */
	c->deadline_ms = clock_now_ms() + c->ep->idle_timeout_ms;
	c->shutdown.data = c;
	if (ep_conn_flush(c) < 0 ||
	    uv_shutdown(&c->shutdown, &c->u.s, ep_shutdown_cb) < 0) {
		ep_conn_close(c);
		return;
	}
	ep_conn_update_read(c);
}

/* The current request is answered: read the next one. */
void ep_conn_request_done(struct conn *c)
{
	if (c->state == CONN_CLOSING || c->state == CONN_LINGER)
		return;
	uv_timer_stop(&c->early_timer);
	ep_conn_release_exchange(c);
	c->sse = c->sse_started = c->standing = c->batch = false;
	c->open_pending = c->prime_pending = c->held = false;
	buf_reset(&c->held_data);
	c->sent_continue = false;
	if (c->linger || !c->keep_alive || c->close_after) {
		ep_conn_linger(c);
		return;
	}
	httpparse_next(c->hp);
	c->state = CONN_READING;
	c->idle = c->in.len == 0 && c->lent_len == 0;
	c->deadline_ms = clock_now_ms() + (c->idle ? c->ep->idle_timeout_ms
						   : c->ep->header_timeout_ms);
	/* A buffer that a large body grew is let go; a small one stays for
	 * the next request (freeing it each time churns malloc). */
	if (c->in.len == 0 && c->in.cap > EP_READ_KEEP)
		buf_free(&c->in);
	/* Inside ep_conn_process its loop goes on with the next request;
	 * else (an answer that came later) start it here. */
	if (!c->processing)
		ep_conn_process(c);
}

/* ---- reading ---- */

/* Pipelined requests wait while output is queued; they go on here once
 * it has drained. */
void ep_conn_resume(struct conn *c)
{
	if (c->state == CONN_READING && !c->processing && c->in.len > 0 &&
	    ep_conn_pending(c) <= EP_OUT_LOW)
		ep_conn_process(c);
}

/* Reads while the connection has room for input: one request's worth.
 * A client that sends more while it is answered waits (TCP backpressure)
 * instead of growing the buffer. */
static void ep_conn_update_read(struct conn *c)
{
	if (c->state == CONN_CLOSING)
		return;
	bool want = c->state == CONN_LINGER || c->in.len < c->ep->in_cap;
	if (want && !c->reading) {
		if (uv_read_start(&c->u.s, ep_alloc_cb, ep_read_cb) == 0)
			c->reading = true;
		c->paused_ms = 0;
	} else if (!want && c->reading) {
		uv_read_stop(&c->u.s);
		c->reading = false;
		c->paused_ms = clock_now_ms();
	}
}

static void ep_conn_process(struct conn *c)
{
	if (c->processing)
		return;
	c->processing = true;
	while (c->state == CONN_READING && (c->in.len > 0 || c->lent_len > 0) &&
	       ep_conn_pending(c) <= EP_OUT_LOW) {
		if (c->served >= EP_TURN_REQUESTS) {
			ep_conn_defer(c);
			break;
		}
		/* Buffered input first; lent bytes only come when none is. */
		bool own = c->in.len > 0;
		size_t used = 0;
		enum httpparse_state st =
			httpparse_feed(c->hp, own ? c->in.data : c->lent,
				       own ? c->in.len : c->lent_len, &used);
		if (own) {
			buf_consume(&c->in, used);
		} else {
			c->lent += used;
			c->lent_len -= used;
		}
		if (st == HTTPPARSE_NEED_MORE) {
			/* Input ran out: the client is not pipelining. */
			c->served = 0;
			break;
		}
		if (st == HTTPPARSE_HEADERS_DONE) {
			const char *exp = http_request_known(
				httpparse_request(c->hp), HTTP_H_EXPECT);
			if (exp && strcasecmp(exp, "100-continue") == 0 &&
			    !c->sent_continue) {
				c->sent_continue = true;
				ep_write(c, "HTTP/1.1 100 Continue\r\n\r\n",
					 25);
			}
			continue;
		}
		c->state = CONN_BUSY;
		c->deadline_ms = 0;
		if (st == HTTPPARSE_DONE) {
			c->served++;
			ep_handle_request(c);
			continue;
		}
		const char *reason;
		int status = httpparse_error(c->hp, &reason);
		c->keep_alive = false;
		c->close_after = true;
		c->linger = true;
		if (status == 413)
			ep_fail(c, 413, JR_INVALID_REQUEST,
				"Payload Too Large: the body is over "
				"the runtime's limit");
		else
			ep_fail(c, status, JR_INVALID_REQUEST, reason);
		break;
	}
	/* All input is handled: the next request starts a new share. */
	if (c->in.len == 0 && c->lent_len == 0)
		c->served = 0;
	c->processing = false;
	ep_conn_update_read(c);
}

/* Every connection reads into the endpoint's one buffer (libuv reads one
 * stream at a time and hands the bytes over at once), so a connection
 * holds no read buffer of its own while it waits. */
static void ep_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
	struct conn *c = h->data;
	b->base = c->ep->rbuf;
	b->len = sizeof c->ep->rbuf;
}

static void ep_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct conn *c = s->data;
	if (n < 0) {
		ep_conn_close(c);
		return;
	}
	if (n == 0 || c->state == CONN_CLOSING)
		return;
	if (c->state == CONN_LINGER) {
		c->lingered += (size_t)n;
		if (c->lingered > EP_LINGER_BYTES)
			ep_conn_close(c);
		return; /* thrown away */
	}
	if (c->state != CONN_READING || c->in.len > 0 || c->processing) {
		/* Kept for later, within the input cap. */
		buf_append(&c->in, b->base, (size_t)n);
		if (c->state == CONN_READING)
			ep_conn_process(c);
		else
			ep_conn_update_read(c);
		return;
	}
	uint64_t now = clock_now_ms();
	if (c->idle) {
		/* A request starts: its head has a deadline. */
		c->idle = false;
		c->deadline_ms = now + c->ep->header_timeout_ms;
	} else if (httpparse_request(c->hp)->url != NULL) {
		/* A body that keeps coming keeps its request. */
		c->deadline_ms = now + c->ep->header_timeout_ms;
	}
	/* The common case: parsed straight from the shared buffer, and only
	 * what the parser leaves (pipelined bytes behind a request that is
	 * answered later) is copied. */
	c->lent = b->base;
	c->lent_len = (size_t)n;
	ep_conn_process(c);
	if (c->lent_len > 0 &&
	    (c->state == CONN_READING || c->state == CONN_BUSY))
		buf_append(&c->in, c->lent, c->lent_len);
	c->lent = NULL;
	c->lent_len = 0;
	ep_conn_update_read(c);
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
	size_t used = is_unix ? ep->nconns_unix : ep->nconns - ep->nconns_unix;
	size_t cap = is_unix ? EP_MAX_UNIX_CONNS : EP_MAX_CONNS;
	if (uv_accept(server, &c->u.s) < 0 ||
	    (used >= cap && !ep_evict_idle(ep, is_unix))) {
		c->state = CONN_CLOSING;
		uv_close(&c->u.h, ep_conn_close_cb);
		uv_close((uv_handle_t *)&c->early_timer, ep_conn_close_cb);
		return;
	}
	if (!is_unix)
		uv_tcp_nodelay(&c->u.tcp, 1);
	c->hp = httpparse_new(ep->max_body);
	buf_init(&c->in);
	buf_init(&c->out);
	c->state = CONN_READING;
	c->keep_alive = true;
	c->idle = true;
	/* A connection that sends nothing is held no longer than a slow
	 * request head. */
	c->deadline_ms = clock_now_ms() + ep->header_timeout_ms;
	c->pprev = &ep->conns;
	c->next = ep->conns;
	if (ep->conns)
		ep->conns->pprev = &c->next;
	ep->conns = c;
	ep->nconns++;
	if (is_unix)
		ep->nconns_unix++;
	ep_conn_update_read(c);
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

static void ep_listener_close_cb(uv_handle_t *h);

/* Binds the listener in slot (a port taken makes the caller try again in
 * the other slot: the failed handle closes in the background, so the
 * loop is never run from here). */
static int ep_bind_tcp(struct endpoint *ep, int slot, const char *host,
		       int port)
{
	struct sockaddr_in addr;
	int rc = uv_ip4_addr(host, port, &addr);
	if (rc < 0)
		return rc;
	uv_tcp_t *t = &ep->tcp_slots[slot];
	uv_tcp_init(ep->loop, t);
	t->data = ep;
	ep->open_handles++;
	rc = uv_tcp_bind(t, (const struct sockaddr *)&addr, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)t, 511, ep_tcp_connection_cb);
	if (rc < 0) {
		uv_close((uv_handle_t *)t, ep_listener_close_cb);
		return rc;
	}
	ep->tcp = t;
	ep->have_tcp = true;
	struct sockaddr_storage ss;
	int len = sizeof ss;
	uv_tcp_getsockname(t, (struct sockaddr *)&ss, &len);
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
	/* The parser holds the request it reads (its body up to max_body);
	 * this is what may wait behind it: the next request's head. */
	ep->in_cap = HTTP_MAX_HEAD + sizeof ep->rbuf;
	ep->sse_close_ms = opts->sse_close_ms;
	ep->header_timeout_ms = opts->header_timeout_ms
					? opts->header_timeout_ms
					: EP_HEADER_TIMEOUT_MS;
	ep->idle_timeout_ms = opts->idle_timeout_ms ? opts->idle_timeout_ms
						    : EP_IDLE_TIMEOUT_MS;
	ep->control = opts->control;
	ep->control_arg = opts->arg;
	ep->modern = modern_new(loop, hub);
	uv_check_init(loop, &ep->flush);
	ep->flush.data = ep;
	ep->open_handles++;
	uv_prepare_init(loop, &ep->flush_early);
	ep->flush_early.data = ep;
	ep->open_handles++;
	uv_idle_init(loop, &ep->again);
	ep->again.data = ep;
	ep->open_handles++;
	uv_timer_init(loop, &ep->sweep);
	ep->sweep.data = ep;
	ep->open_handles++;
	uint64_t tick = ep->header_timeout_ms < ep->idle_timeout_ms
				? ep->header_timeout_ms
				: ep->idle_timeout_ms;
	tick = tick / 4 < EP_SWEEP_MS ? tick / 4 : EP_SWEEP_MS;
	/* Heartbeats come about once a second, not up to a tick later. */
	if (tick > EP_HEARTBEAT_MS / 4)
		tick = EP_HEARTBEAT_MS / 4;
	uv_timer_start(&ep->sweep, ep_sweep_cb, tick ? tick : 1,
		       tick ? tick : 1);
	/* Deadlines only: the sweep keeps no loop alive. */
	uv_unref((uv_handle_t *)&ep->sweep);
	const char *host = opts->host ? opts->host : "127.0.0.1";
	int rc;
	if (opts->port < 0) {
		rc = ep_bind_tcp(ep, 0, host, EP_DEFAULT_PORT);
		if (rc == UV_EADDRINUSE) {
			log_info("port %d is taken; using a free port",
				 EP_DEFAULT_PORT);
			rc = ep_bind_tcp(ep, 1, host, 0);
		}
	} else {
		rc = ep_bind_tcp(ep, 0, host, opts->port);
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
	/* Freed once its handles have closed, when the caller runs the
	 * loop (it must, before closing it). */
	endpoint_free(ep);
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
		uv_close((uv_handle_t *)ep->tcp, ep_listener_close_cb);
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
	/* A call waiting for a retry that would be refused now. */
	modern_drain(ep->modern);
}

void endpoint_free(struct endpoint *ep)
{
	if (ep == NULL)
		return;
	ep->freeing = true;
	endpoint_stop_accepting(ep);
	while (ep->conns)
		ep_conn_close(ep->conns);
	modern_free(ep->modern);
	ep->modern = NULL;
	uv_close((uv_handle_t *)&ep->flush, ep_listener_close_cb);
	uv_close((uv_handle_t *)&ep->flush_early, ep_listener_close_cb);
	uv_close((uv_handle_t *)&ep->again, ep_listener_close_cb);
	uv_close((uv_handle_t *)&ep->sweep, ep_listener_close_cb);
	if (ep->open_handles == 0) {
		free(ep->socket_path);
		free(ep);
	}
}
