/* The flow's loopback redirect listener: one path, small pages, bounded
 * connections. */
#include "auth/loopback.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "http/httpparse.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/xmalloc.h"

struct lb_conn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	struct loopback *l;
	struct httpparse *p;
	struct lb_conn *next;
	uv_write_t wr;
	char *out;
	int closing; /* handles still to close */
	bool answered;
};

struct loopback {
	uv_tcp_t tcp;
	loopback_cb cb;
	void *arg;
	struct lb_conn *conns;
	int nconns;
	int handles; /* open handles of ours: freed at 0 */
	bool freed;
};

static void lb_maybe_free(struct loopback *l)
{
	if (l->freed && l->handles == 0)
		free(l);
}

static void lb_conn_closed(uv_handle_t *h)
{
	struct lb_conn *c = h->data;
	if (--c->closing > 0)
		return;
	struct loopback *l = c->l;
	httpparse_free(c->p);
	free(c->out);
	free(c);
	l->handles--;
	lb_maybe_free(l);
}

static void lb_conn_close(struct lb_conn *c)
{
	if (c->closing)
		return;
	struct loopback *l = c->l;
	for (struct lb_conn **pp = &l->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	l->nconns--;
	c->closing = 2;
	uv_close((uv_handle_t *)&c->tcp, lb_conn_closed);
	uv_close((uv_handle_t *)&c->timer, lb_conn_closed);
}

static void lb_written(uv_write_t *w, int status)
{
	lb_conn_close(w->data);
}

static void lb_answer(struct lb_conn *c, int status, const char *reason,
		      const char *msg)
{
	c->answered = true;
	if (c->closing)
		return;
	uv_read_stop((uv_stream_t *)&c->tcp);
	struct buf b;
	buf_init(&b);
	buf_printf(&b,
		   "<!doctype html><meta charset=utf-8><title>mcpvisor</title>"
		   "<p>%s</p>\n",
		   msg);
	char *page = buf_steal(&b);
	buf_printf(&b,
		   "HTTP/1.1 %d %s\r\nContent-Type: text/html; charset=utf-8"
		   "\r\nContent-Length: %zu\r\nCache-Control: no-store\r\n"
		   "Referrer-Policy: no-referrer\r\nConnection: close\r\n\r\n"
		   "%s",
		   status, reason, strlen(page), page);
	free(page);
	c->out = buf_steal(&b);
	uv_buf_t ub = uv_buf_init(c->out, (unsigned)strlen(c->out));
	c->wr.data = c;
	if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &ub, 1, lb_written) < 0)
		lb_conn_close(c);
}

static void lb_request(struct lb_conn *c, const struct http_request *r)
{
	struct loopback *l = c->l;
	const char *q = strchr(r->url, '?');
	size_t plen = q ? (size_t)(q - r->url) : strlen(r->url);
	if (plen != strlen(LOOPBACK_PATH) ||
	    strncmp(r->url, LOOPBACK_PATH, plen) != 0) {
		lb_answer(c, 404, "Not Found", "Not found.");
		return;
	}
	if (r->method != HTTP_M_GET) {
		lb_answer(c, 405, "Method Not Allowed", "Not allowed.");
		return;
	}
	const char *msg = "Signed in.";
	/* The flow may free the listener from inside: this connection,
	 * marked answered, is the one left to write its page. */
	c->answered = true;
	char *query = xstrdup(q ? q + 1 : "");
	/* A fragment never reaches a server; a browser does not send one. */
	query[strcspn(query, "#")] = '\0';
	int rc = l->cb(l->arg, query, &msg);
	free(query);
	if (rc == 0)
		lb_answer(c, 200, "OK", msg);
	else
		lb_answer(c, 400, "Bad Request", msg);
}

static void lb_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	static char slab[16 * 1024];
	(void)h;
	(void)hint;
	*b = uv_buf_init(slab, sizeof slab);
}

static void lb_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct lb_conn *c = s->data;
	if (n < 0) {
		lb_conn_close(c);
		return;
	}
	if (n == 0 || c->answered)
		return;
	size_t used = 0;
	enum httpparse_state st =
		httpparse_feed(c->p, b->base, (size_t)n, &used);
	if (st == HTTPPARSE_ERROR) {
		const char *reason;
		int code = httpparse_error(c->p, &reason);
		lb_answer(c, code, "Bad Request", "Bad request.");
	} else if (st == HTTPPARSE_DONE) {
		lb_request(c, httpparse_request(c->p));
	}
}

static void lb_timeout(uv_timer_t *t)
{
	lb_conn_close(t->data);
}

static void lb_accept(uv_stream_t *server, int status)
{
	struct loopback *l = server->data;
	if (status < 0)
		return;
	struct lb_conn *c = xcalloc(1, sizeof *c);
	c->l = l;
	uv_tcp_init(server->loop, &c->tcp);
	uv_timer_init(server->loop, &c->timer);
	c->tcp.data = c->timer.data = c;
	l->handles++;
	c->p = httpparse_new(1024);
	c->next = l->conns;
	l->conns = c;
	l->nconns++;
	if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0 ||
	    l->nconns > LOOPBACK_MAX_CONNS) {
		lb_conn_close(c);
		return;
	}
	uv_timer_start(&c->timer, lb_timeout, LOOPBACK_READ_MS, 0);
	uv_read_start((uv_stream_t *)&c->tcp, lb_alloc, lb_read);
}

static void lb_closed(uv_handle_t *h)
{
	struct loopback *l = h->data;
	l->handles--;
	lb_maybe_free(l);
}

int loopback_start(uv_loop_t *loop, int port, loopback_cb cb, void *arg,
		   struct loopback **out, int *bound)
{
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", port, &a);
	struct loopback *l = xcalloc(1, sizeof *l);
	l->cb = cb;
	l->arg = arg;
	uv_tcp_init(loop, &l->tcp);
	l->tcp.data = l;
	l->handles = 1;
	int rc = uv_tcp_bind(&l->tcp, (const struct sockaddr *)&a, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&l->tcp, 8, lb_accept);
	if (rc < 0) {
		l->freed = true;
		uv_close((uv_handle_t *)&l->tcp, lb_closed);
		return rc;
	}
	struct sockaddr_storage ss;
	int len = sizeof ss;
	uv_tcp_getsockname(&l->tcp, (struct sockaddr *)&ss, &len);
	*bound = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	*out = l;
	return 0;
}

void loopback_free(struct loopback *l)
{
	if (l == NULL || l->freed)
		return;
	l->freed = true;
	/* A page being written is let finish: its write callback closes
	 * it. Others go now. */
	for (struct lb_conn *c = l->conns, *next; c; c = next) {
		next = c->next;
		if (!c->answered)
			lb_conn_close(c);
	}
	uv_close((uv_handle_t *)&l->tcp, lb_closed);
}
