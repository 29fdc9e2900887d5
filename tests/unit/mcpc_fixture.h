/*
 * The scripted HTTP server and the recording client of test_mcpc*.c: a
 * libuv TCP server on 127.0.0.1 port 0 that parses requests with the
 * runtime's own parser, records them, and hands each to the test's
 * script; an mcpc on the same loop whose callbacks log what they get.
 * Static inline functions: a test file uses what it needs.
 */
#ifndef MCPV_TESTS_MCPC_FIXTURE_H
#define MCPV_TESTS_MCPC_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "http/httpc.h"
#include "http/httpparse.h"
#include "mcpc/mcpc.h"
#include "util/buf.h"
#include "util/xmalloc.h"

#ifndef TM_MAX_REQS
#define TM_MAX_REQS 32
#endif
#ifndef TM_MAX_CONNS
#define TM_MAX_CONNS 32
#endif

struct tmc;
struct tm_conn;

/* One request as the server saw it. */
struct tm_req {
	char method[8];
	char *url;
	char *headers; /* "name: value\n" lines, names lower-cased */
	char *body;
	struct tm_conn *conn;
};

struct tm_conn {
	uv_tcp_t tcp;
	struct tmc *t;
	struct httpparse *hp;
	bool closed;
	bool open_stream; /* an SSE answer is being written */
};

struct tmc {
	uv_loop_t loop;
	uv_tcp_t listener;
	int port;
	char url[64];
	/* The script: answers request n (0-based) on conn. */
	void (*script)(struct tmc *t, struct tm_conn *c, int n,
		       const struct tm_req *r);
	struct tm_req reqs[TM_MAX_REQS];
	int nreqs;
	struct tm_conn *conns[TM_MAX_CONNS];
	int nconns;
	/* the client */
	struct httpc *http;
	struct mcpc *m;
	struct buf log; /* messages: "related: msg\n" */
	int nmsgs;
	int nlost;
	int64_t lost_id;
	bool lost_sent; /* the fact: it may have reached the server */
	enum outbox_fact lost_fact;
	struct outbox_fact_of fault_facts[8];
	size_t nfault_facts;
	int faults;
	enum mcpc_fault fault;
	int fault_status;
	char fault_text[256];
	char fault_rm[256];
	char fault_www[256];
	char fault_sent[64];
	int heartbeats;
	int drains;
	bool closed;
	int scratch;		/* for scripts */
	struct tm_conn *stream; /* a script's open event stream */
	int on_msg;		/* 1: forget, 2: close from inside on_message */
	bool closing;
	uv_timer_t deadline;
	bool late;
};

/* ---- the scripted server --------------------------------------------- */

static inline void tm_alloc_cb(uv_handle_t *h, size_t sz, uv_buf_t *b)
{
	b->base = xmalloc(sz);
	b->len = sz;
}

static inline void tm_conn_closed_cb(uv_handle_t *h)
{
	struct tm_conn *c = h->data;
	httpparse_free(c->hp);
	c->hp = NULL;
}

static inline void tm_close(struct tm_conn *c)
{
	if (c->closed)
		return;
	c->closed = true;
	uv_close((uv_handle_t *)&c->tcp, tm_conn_closed_cb);
}

static inline void tm_write_cb(uv_write_t *w, int status)
{
	free(w->data);
	free(w);
}

static inline void tm_write(struct tm_conn *c, const char *text)
{
	if (c->closed)
		return;
	size_t n = strlen(text);
	uv_write_t *w = xmalloc(sizeof *w);
	w->data = xmalloc(n);
	memcpy(w->data, text, n);
	uv_buf_t b = uv_buf_init(w->data, (unsigned)n);
	uv_write(w, (uv_stream_t *)&c->tcp, &b, 1, tm_write_cb);
}

static inline void tm_shutdown_cb(uv_shutdown_t *s, int status)
{
	struct tm_conn *c = s->data;
	free(s);
	tm_close(c);
}

/* Ends the response (and the connection) once what was written is out. */
static inline void tm_end(struct tm_conn *c)
{
	if (c->closed)
		return;
	uv_shutdown_t *s = xmalloc(sizeof *s);
	s->data = c;
	if (uv_shutdown(s, (uv_stream_t *)&c->tcp, tm_shutdown_cb) < 0) {
		free(s);
		tm_close(c);
	}
}

/* A whole response; the connection closes after it. */
static inline void tm_reply(struct tm_conn *c, int status, const char *headers,
			    const char *ctype, const char *body)
{
	struct buf b;
	buf_init(&b);
	buf_printf(&b,
		   "HTTP/1.1 %d X\r\n%s%s%s%sContent-Length: %zu\r\n"
		   "Connection: close\r\n\r\n%s",
		   status, headers ? headers : "",
		   ctype ? "Content-Type: " : "", ctype ? ctype : "",
		   ctype ? "\r\n" : "", body ? strlen(body) : 0,
		   body ? body : "");
	tm_write(c, b.data);
	buf_free(&b);
	tm_end(c);
}

/* The head of an event stream; the body is written with tm_write, ended
 * with tm_end (a close-delimited body). */
static inline void tm_sse(struct tm_conn *c, const char *headers)
{
	struct buf b;
	buf_init(&b);
	buf_printf(&b,
		   "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n%s"
		   "Connection: close\r\n\r\n",
		   headers ? headers : "");
	tm_write(c, b.data);
	buf_free(&b);
	c->open_stream = true;
}

static inline void tm_read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	struct tm_conn *c = st->data;
	struct tmc *t = c->t;
	if (n < 0) {
		tm_close(c);
		free(b->base);
		return;
	}
	size_t off = 0;
	while (off < (size_t)n && !c->closed) {
		size_t used = 0;
		enum httpparse_state s =
			httpparse_feed(c->hp, b->base + off, n - off, &used);
		off += used;
		if (s == HTTPPARSE_ERROR) {
			tm_close(c);
			break;
		}
		if (s != HTTPPARSE_DONE) {
			if (used == 0)
				break;
			continue;
		}
		const struct http_request *r = httpparse_request(c->hp);
		cr_assert_lt(t->nreqs, TM_MAX_REQS);
		struct tm_req *q = &t->reqs[t->nreqs];
		snprintf(q->method, sizeof q->method, "%s",
			 r->method == HTTP_M_GET      ? "GET"
			 : r->method == HTTP_M_POST   ? "POST"
			 : r->method == HTTP_M_DELETE ? "DELETE"
						      : "OTHER");
		q->url = xstrdup(r->url);
		struct buf h;
		buf_init(&h);
		buf_puts(&h, "");
		for (size_t i = 0; i < r->nheaders; i++)
			buf_printf(&h, "%s: %s\n", r->headers[i].name,
				   r->headers[i].value);
		q->headers = buf_steal(&h);
		q->body = xstrndup(r->body ? r->body : "", r->body_len);
		q->conn = c;
		int idx = t->nreqs++;
		httpparse_next(c->hp);
		t->script(t, c, idx, q);
	}
	free(b->base);
}

static inline void tm_accept_cb(uv_stream_t *l, int status)
{
	struct tmc *t = l->data;
	cr_assert_lt(t->nconns, TM_MAX_CONNS);
	struct tm_conn *c = xcalloc(1, sizeof *c);
	c->t = t;
	c->hp = httpparse_new(HTTP_DEFAULT_MAX_BODY);
	uv_tcp_init(&t->loop, &c->tcp);
	c->tcp.data = c;
	t->conns[t->nconns++] = c;
	if (uv_accept(l, (uv_stream_t *)&c->tcp) == 0)
		uv_read_start((uv_stream_t *)&c->tcp, tm_alloc_cb, tm_read_cb);
	else
		tm_close(c);
}

/* ---- the client's callbacks -------------------------------------------- */

static inline void tm_done_cb(void *arg)
{
	((struct tmc *)arg)->closed = true;
}

static inline void tm_on_message(void *ctx, const char *msg, size_t len,
				 int64_t related)
{
	struct tmc *t = ctx;
	buf_printf(&t->log, "%lld: %.*s\n", (long long)related, (int)len, msg);
	t->nmsgs++;
	/* What a caller may do from inside the callback. */
	if (t->on_msg == 1)
		mcpc_forget(t->m, related);
	else if (t->on_msg == 2 && !t->closing)
		mcpc_close(t->m, tm_done_cb, t);
	if (t->on_msg == 2)
		t->closing = true;
}

static inline void tm_on_lost(void *ctx, int64_t id, enum outbox_fact f)
{
	struct tmc *t = ctx;
	t->nlost++;
	t->lost_id = id;
	t->lost_fact = f;
	t->lost_sent = f == OUTBOX_CUT;
	if (t->on_msg == 3 && !t->closing) {
		t->closing = true;
		mcpc_close(t->m, tm_done_cb, t);
	}
}

static inline void tm_on_heartbeat(void *ctx)
{
	((struct tmc *)ctx)->heartbeats++;
}

static inline void tm_on_fault(void *ctx, const struct mcpc_fault_info *f)
{
	struct tmc *t = ctx;
	t->faults++;
	t->fault = f->kind;
	t->fault_status = f->http_status;
	snprintf(t->fault_text, sizeof t->fault_text, "%s", f->text);
	snprintf(t->fault_rm, sizeof t->fault_rm, "%s",
		 f->resource_metadata ? f->resource_metadata : "");
	snprintf(t->fault_www, sizeof t->fault_www, "%s",
		 f->www_authenticate ? f->www_authenticate : "");
	snprintf(t->fault_sent, sizeof t->fault_sent, "%s",
		 f->auth_sent ? f->auth_sent : "");
	t->nfault_facts = 0;
	for (size_t i = 0; i < f->nfacts && i < 8; i++)
		t->fault_facts[t->nfault_facts++] = f->facts[i];
	if (t->on_msg == 3 && !t->closing) {
		t->closing = true;
		mcpc_close(t->m, tm_done_cb, t);
	}
}

static inline void tm_on_drain(void *ctx)
{
	((struct tmc *)ctx)->drains++;
}

static const struct mcpc_cbs tm_cbs = {
	tm_on_message, tm_on_lost, tm_on_heartbeat, tm_on_fault, tm_on_drain};

static const char *const tm_headers[] = {"Authorization: Bearer s3cr3t",
					 "X-Team: blue", NULL};

/* The scripted server on 127.0.0.1 (t->port, t->url) and an HTTP client
 * on the same loop (t->http); no session yet. */
static inline void tm_listen(struct tmc *t,
			     void (*script)(struct tmc *, struct tm_conn *, int,
					    const struct tm_req *))
{
	memset(t, 0, sizeof *t);
	cr_assert_eq(uv_loop_init(&t->loop), 0);
	buf_init(&t->log);
	buf_puts(&t->log, "");
	t->script = script;
	uv_timer_init(&t->loop, &t->deadline);
	t->deadline.data = t;
	uv_tcp_init(&t->loop, &t->listener);
	t->listener.data = t;
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", 0, &a);
	cr_assert_eq(uv_tcp_bind(&t->listener, (struct sockaddr *)&a, 0), 0);
	cr_assert_eq(uv_listen((uv_stream_t *)&t->listener, 16, tm_accept_cb),
		     0);
	struct sockaddr_in got;
	int len = sizeof got;
	uv_tcp_getsockname(&t->listener, (struct sockaddr *)&got, &len);
	t->port = ntohs(got.sin_port);
	snprintf(t->url, sizeof t->url, "http://127.0.0.1:%d/mcp", t->port);
	const char *why = NULL;
	t->http = httpc_new(&t->loop, &why);
	cr_assert_not_null(t->http, "httpc: %s", why ? why : "?");
}

/* The next tm_start's peer answers 503 only to what it did not process. */
static bool tm_refuses_503;
/* The next tm_start's Authorization provider (NULL: none). */
static const char *(*tm_authorization)(void *arg);

static inline void tm_start(struct tmc *t, enum mcpc_mode mode,
			    void (*script)(struct tmc *, struct tm_conn *, int,
					   const struct tm_req *))
{
	tm_listen(t, script);
	struct mcpc_opts o = {
		.url = t->url,
		.headers = tm_headers,
		.mode = mode,
		.refuses_with_503 = tm_refuses_503,
		.authorization = tm_authorization,
		.auth_arg = t,
	};
	cr_assert_eq(mcpc_new(t->http, &o, &tm_cbs, t, &t->m), 0);
}

static inline void tm_deadline_cb(uv_timer_t *h)
{
	((struct tmc *)h->data)->late = true;
}

/* Runs the loop until cond(t) holds or 5 s passed (then fails). */
static inline void tm_run_until(struct tmc *t, bool (*cond)(struct tmc *),
				const char *what)
{
	t->late = false;
	uv_timer_start(&t->deadline, tm_deadline_cb, 5000, 0);
	while (!cond(t) && !t->late)
		uv_run(&t->loop, UV_RUN_ONCE);
	uv_timer_stop(&t->deadline);
	if (!t->late)
		return;
	struct buf seen;
	buf_init(&seen);
	buf_puts(&seen, "");
	for (int i = 0; i < t->nreqs; i++)
		buf_printf(&seen, " %s %s;", t->reqs[i].method, t->reqs[i].url);
	cr_assert(false,
		  "timed out waiting for %s; requests:%s messages: %s "
		  "faults %d (%s) lost %d",
		  what, seen.data, t->log.data, t->faults, t->fault_text,
		  t->nlost);
}

static inline bool tm_is_closed(struct tmc *t)
{
	return t->closed;
}

static inline void tm_walk_close(uv_handle_t *h, void *arg)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static inline void tm_stop(struct tmc *t)
{
	if (t->m && !t->closed) {
		if (!t->closing)
			mcpc_close(t->m, tm_done_cb, t);
		tm_run_until(t, tm_is_closed, "close");
	}
	httpc_free(t->http);
	for (int i = 0; i < t->nconns; i++)
		tm_close(t->conns[i]);
	uv_close((uv_handle_t *)&t->listener, NULL);
	uv_close((uv_handle_t *)&t->deadline, NULL);
	uv_run(&t->loop, UV_RUN_DEFAULT);
	uv_walk(&t->loop, tm_walk_close, NULL);
	uv_run(&t->loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&t->loop), 0);
	for (int i = 0; i < t->nconns; i++)
		free(t->conns[i]);
	for (int i = 0; i < t->nreqs; i++) {
		free(t->reqs[i].url);
		free(t->reqs[i].headers);
		free(t->reqs[i].body);
	}
	buf_free(&t->log);
}

static inline void tm_send(struct tmc *t, const char *msg, int64_t id)
{
	cr_assert_eq(mcpc_send(t->m, msg, strlen(msg), id), 0);
}

static inline bool tm_has_header(const struct tm_req *r, const char *line)
{
	return strstr(r->headers, line) != NULL;
}

#define TM_INIT                                                                \
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","             \
	"\"params\":{\"protocolVersion\":\"2025-11-25\"}}"
#define TM_INIT_RESULT                                                         \
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":"       \
	"\"2025-06-18\",\"capabilities\":{}}}"
#define TM_INITIALIZED                                                         \
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"
#define TM_CALL(id)                                                            \
	"{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"tools/call\","       \
	"\"params\":{\"name\":\"echo\"}}"
#define TM_ANSWER(id) "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"result\":{}}"

/* Conditions. */
static inline bool tm_msgs1(struct tmc *t)
{
	return t->nmsgs >= 1;
}
static inline bool tm_msgs2(struct tmc *t)
{
	return t->nmsgs >= 2;
}
static inline bool tm_msgs3(struct tmc *t)
{
	return t->nmsgs >= 3;
}
static inline bool tm_lost(struct tmc *t)
{
	return t->nlost > 0;
}
static inline bool tm_faulted(struct tmc *t)
{
	return t->faults > 0;
}

/* The requests seen with this method, in order. */
static inline const struct tm_req *tm_nth(struct tmc *t, const char *method,
					  int k)
{
	for (int i = 0; i < t->nreqs; i++)
		if (strcmp(t->reqs[i].method, method) == 0 && k-- == 0)
			return &t->reqs[i];
	return NULL;
}

static inline bool tm_body_has(const struct tm_req *r, const char *s)
{
	return strstr(r->body, s) != NULL;
}

#endif
