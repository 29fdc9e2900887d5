/*
 * The loop's HTTP client against a small scripted server on the same loop
 * (TCP on 127.0.0.1 and a Unix socket): whole, chunked and trickled
 * bodies, refused and silent servers, cancel from inside the callbacks,
 * pause and resume, the head's limit and interim heads, connection reuse,
 * and httpc_fetch. Every wait runs the loop until its condition.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "http/httpc.h"
#include "http/httpc_int.h"
#include "util/buf.h"
#include "util/xmalloc.h"

static uv_loop_t loop;
static struct httpc *hc;

/* The loop's changes to its epoll set for one fd (libuv's), counted:
 * defined here, this epoll_ctl comes before libc's. */
static int epoll_ctl_fd = -1;
static int epoll_ctls;
int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	static int (*real)(int, int, int, struct epoll_event *);
	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "epoll_ctl");
	if (fd == epoll_ctl_fd)
		epoll_ctls++;
	return real(epfd, op, fd, ev);
}

/* ---- the scripted server ---- */

struct sconn {
	union {
		uv_tcp_t tcp;
		uv_pipe_t pipe;
		uv_stream_t stream;
	} u;
	uv_timer_t step_timer;
	struct buf in;
	const char *const *steps; /* pieces written one per timer tick */
	int step;
	uint64_t step_ms;
	int handles;
	bool unix_conn; /* accepted on the Unix socket */
};

static uv_tcp_t srv_tcp;
static uv_pipe_t srv_pipe;
static int srv_port;
static char srv_sock[108];
static int srv_accepts;
static int srv_requests;
static int srv_json_requests;
static int srv_die_requests;
static char srv_target[64]; /* the last request's target, query and all */
static char srv_head[1024]; /* the last request's head */
static bool srv_last_unix;  /* the last request came on the Unix socket */

static const char *const chunked_steps[] = {
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
	"6\r\nhello \r\n",
	"6\r\nchunky\r\n",
	"6\r\n world\r\n",
	"0\r\n\r\n",
	NULL,
};

static const char *const sse_steps[] = {
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	"Transfer-Encoding: chunked\r\n\r\n",
	"6\r\n: hb\n\n\r\n",
	"b\r\ndata: one\n\n\r\n",
	"b\r\ndata: two\n\n\r\n",
	"d\r\ndata: three\n\n\r\n",
	"0\r\n\r\n",
	NULL,
};

static void srv_conn_closed(uv_handle_t *h)
{
	struct sconn *s = h->data;
	if (--s->handles == 0) {
		buf_free(&s->in);
		free(s);
	}
}

static void srv_close(struct sconn *s)
{
	if (uv_is_closing((uv_handle_t *)&s->u.stream))
		return;
	uv_close((uv_handle_t *)&s->u.stream, srv_conn_closed);
	uv_close((uv_handle_t *)&s->step_timer, srv_conn_closed);
}

static void srv_write_cb(uv_write_t *w, int status)
{
	free(w);
}

static void srv_write(struct sconn *s, const char *p, size_t n)
{
	if (uv_is_closing((uv_handle_t *)&s->u.stream))
		return;
	uv_write_t *w = xmalloc(sizeof *w + n);
	memcpy(w + 1, p, n);
	uv_buf_t b = uv_buf_init((char *)(w + 1), (unsigned)n);
	uv_write(w, &s->u.stream, &b, 1, srv_write_cb);
}

static void srv_puts(struct sconn *s, const char *p)
{
	srv_write(s, p, strlen(p));
}

static void srv_step_cb(uv_timer_t *t)
{
	struct sconn *s = t->data;
	if (s->steps[s->step] == NULL)
		return;
	srv_puts(s, s->steps[s->step++]);
	if (s->steps[s->step])
		uv_timer_start(&s->step_timer, srv_step_cb, s->step_ms, 0);
}

static void srv_answer(struct sconn *s, const char *path, const char *body,
		       size_t body_len)
{
	srv_requests++;
	srv_last_unix = s->unix_conn;
	struct buf out;
	buf_init(&out);
	if (strcmp(path, "/json") == 0) {
		srv_json_requests++;
		const char *j = "{\"ok\":true}";
		buf_printf(&out,
			   "HTTP/1.1 200 OK\r\nContent-Type: application/json"
			   "\r\nX-Mixed-Case: Yes \r\nContent-Length: %zu"
			   "\r\n\r\n%s",
			   strlen(j), j);
	} else if (strcmp(path, "/echo") == 0) {
		buf_printf(&out,
			   "HTTP/1.1 201 Created\r\nContent-Length: %zu"
			   "\r\n\r\n",
			   body_len);
		buf_append(&out, body, body_len);
	} else if (strcmp(path, "/chunked") == 0 ||
		   strncmp(path, "/sse", 4) == 0) {
		s->steps = path[1] == 'c' ? chunked_steps : sse_steps;
		s->step = 0;
		/* /sse-slow: 400 ms between pieces, 2 s in all */
		s->step_ms = strcmp(path, "/sse-slow") == 0 ? 400 : 5;
		srv_step_cb(&s->step_timer);
	} else if (strcmp(path, "/close") == 0) {
		srv_close(s);
	} else if (strcmp(path, "/flood") == 0) {
		/* As fast as the socket takes it. */
		size_t n = 8u << 20;
		buf_printf(&out,
			   "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", n);
		buf_reserve(&out, n);
		memset(out.data + out.len, 'x', n);
		out.len += n;
	} else if (strcmp(path, "/die") == 0) {
		/* Ran it, then the connection dies before a byte of answer
		 * (a server that crashed after the work, a balancer reset). */
		srv_die_requests++;
		srv_close(s);
	} else if (strcmp(path, "/bighead") == 0) {
		buf_puts(&out, "HTTP/1.1 200 OK\r\nX-Big: ");
		for (int i = 0; i < 70 * 1024; i++)
			buf_append(&out, "a", 1);
		buf_puts(&out, "\r\nContent-Length: 0\r\n\r\n");
	} else if (strcmp(path, "/interim") == 0) {
		buf_puts(&out, "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
			       "HTTP/1.1 200 OK\r\nX-Final: 1\r\n"
			       "Content-Length: 2\r\n\r\nok");
	} else if (strcmp(path, "/redirect") == 0) {
		buf_printf(&out,
			   "HTTP/1.1 302 Found\r\nLocation: "
			   "http://127.0.0.1:%d/json\r\nContent-Length: 0"
			   "\r\n\r\n",
			   srv_port);
	} else if (strcmp(path, "/silent") == 0) {
		/* accepts, reads, never answers */
	} else {
		buf_puts(&out, "HTTP/1.1 404 Not Found\r\nContent-Length: 0"
			       "\r\n\r\n");
	}
	if (out.len)
		srv_write(s, out.data, out.len);
	buf_free(&out);
}

/* Answers every whole request in s->in (keep-alive). */
static void srv_parse(struct sconn *s)
{
	for (;;) {
		/* Not HTTP (a TLS hello): hang up, as a plain server would. */
		if (s->in.len && (s->in.data[0] < 'A' || s->in.data[0] > 'Z')) {
			srv_close(s);
			return;
		}
		char *eoh = s->in.data ? strstr(s->in.data, "\r\n\r\n") : NULL;
		if (eoh == NULL)
			return;
		size_t head = (size_t)(eoh + 4 - s->in.data);
		snprintf(srv_head, sizeof srv_head, "%.*s", (int)head,
			 s->in.data);
		size_t clen = 0;
		const char *cl = strcasestr(s->in.data, "\r\ncontent-length:");
		if (cl && cl < eoh)
			clen = strtoul(cl + 17, NULL, 10);
		if (s->in.len < head + clen)
			return;
		char path[64] = "";
		sscanf(s->in.data, "%*s %63s", path);
		/* A query tells requests apart; the path says what to do. */
		snprintf(srv_target, sizeof srv_target, "%s", path);
		path[strcspn(path, "?")] = '\0';
		char *body = xstrndup(s->in.data + head, clen);
		buf_consume(&s->in, head + clen);
		srv_answer(s, path, body, clen);
		free(body);
	}
}

static void srv_alloc_cb(uv_handle_t *h, size_t sz, uv_buf_t *b)
{
	b->base = xmalloc(65536);
	b->len = 65536;
}

static void srv_read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	struct sconn *s = st->data;
	if (n > 0) {
		buf_append(&s->in, b->base, (size_t)n);
		srv_parse(s);
	} else if (n < 0) {
		srv_close(s);
	}
	free(b->base);
}

static void srv_accept(uv_stream_t *server, bool tcp)
{
	struct sconn *s = xcalloc(1, sizeof *s);
	buf_init(&s->in);
	if (tcp)
		uv_tcp_init(&loop, &s->u.tcp);
	else
		uv_pipe_init(&loop, &s->u.pipe, 0);
	uv_timer_init(&loop, &s->step_timer);
	s->handles = 2;
	s->unix_conn = !tcp;
	s->u.stream.data = s->step_timer.data = s;
	cr_assert_eq(uv_accept(server, &s->u.stream), 0);
	srv_accepts++;
	uv_read_start(&s->u.stream, srv_alloc_cb, srv_read_cb);
}

static void srv_tcp_cb(uv_stream_t *server, int status)
{
	srv_accept(server, true);
}

static void srv_pipe_cb(uv_stream_t *server, int status)
{
	srv_accept(server, false);
}

/* Closes every connection the server holds. */
static void srv_walk_cb(uv_handle_t *h, void *arg)
{
	if (uv_is_closing(h) || h->data == NULL)
		return;
	if (h->type == UV_TCP || h->type == UV_NAMED_PIPE) {
		if (h == (uv_handle_t *)&srv_tcp ||
		    h == (uv_handle_t *)&srv_pipe)
			return;
		srv_close(h->data);
	}
}

static void t_setup(void)
{
	cr_assert_eq(uv_loop_init(&loop), 0);
	uv_tcp_init(&loop, &srv_tcp);
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", 0, &a);
	cr_assert_eq(uv_tcp_bind(&srv_tcp, (struct sockaddr *)&a, 0), 0);
	cr_assert_eq(uv_listen((uv_stream_t *)&srv_tcp, 64, srv_tcp_cb), 0);
	struct sockaddr_in got;
	int len = sizeof got;
	uv_tcp_getsockname(&srv_tcp, (struct sockaddr *)&got, &len);
	srv_port = ntohs(got.sin_port);
	snprintf(srv_sock, sizeof srv_sock, "/tmp/mcpv-httpc-test-%d.sock",
		 (int)getpid());
	unlink(srv_sock);
	uv_pipe_init(&loop, &srv_pipe, 0);
	cr_assert_eq(uv_pipe_bind(&srv_pipe, srv_sock), 0);
	cr_assert_eq(uv_listen((uv_stream_t *)&srv_pipe, 64, srv_pipe_cb), 0);
	const char *why = NULL;
	hc = httpc_new(&loop, &why);
	cr_assert_not_null(hc, "%s", why);
}

static uv_process_t tls_proc;
static bool tls_made, tls_spawned, tls_exited;
static char tls_dir[] = "/tmp/mcpv-httpc-tls-XXXXXX";

static void t_teardown(void)
{
	/* A failed TLS test leaves no s_server behind. */
	if (tls_spawned && !tls_exited)
		uv_process_kill(&tls_proc, SIGKILL);
	if (tls_made) {
		char cmd[64];
		snprintf(cmd, sizeof cmd, "rm -rf %s", tls_dir);
		cr_assert_eq(system(cmd), 0);
	}
	httpc_free(hc);
	uv_walk(&loop, srv_walk_cb, NULL);
	uv_close((uv_handle_t *)&srv_tcp, NULL);
	uv_close((uv_handle_t *)&srv_pipe, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0, "a handle was left open");
	unlink(srv_sock);
}

TestSuite(httpc, .init = t_setup, .fini = t_teardown, .timeout = 30);

/* Turns the loop until cond holds; the suite's timeout bounds it. */
#define RUN_UNTIL(cond)                                                        \
	do {                                                                   \
		while (!(cond))                                                \
			uv_run(&loop, UV_RUN_ONCE);                            \
	} while (0)

/* ---- a request's record ---- */

struct rec {
	struct httpc_req *r;
	int status;
	struct buf body;
	int bodies; /* on_body calls */
	int done;   /* on_done calls */
	int err;
	char why[256];
	bool sent;
	int after;	   /* callbacks after a cancel */
	bool cancelled;	   /* cancelled by the test */
	int cancel_on;	   /* 1: in on_head, 2: in on_body */
	bool stop_body;	   /* on_body returns false */
	bool pause_first;  /* pause at the first body piece */
	struct rec *start; /* started from inside the first on_body */
	bool free_client;  /* httpc_free from inside on_body */
	char ctype[64];
	char mixed[64];
	bool has_link, has_final;
};

static bool rec_head(void *ctx, struct httpc_req *r)
{
	struct rec *x = ctx;
	if (x->cancelled)
		x->after++;
	x->status = httpc_status(r);
	const char *v = httpc_header(r, "CONTENT-TYPE");
	snprintf(x->ctype, sizeof x->ctype, "%s", v ? v : "");
	v = httpc_header(r, "x-mixed-case");
	snprintf(x->mixed, sizeof x->mixed, "%s", v ? v : "");
	x->has_link = httpc_header(r, "link") != NULL;
	x->has_final = httpc_header(r, "X-Final") != NULL;
	if (x->cancel_on == 1) {
		x->cancelled = true;
		httpc_cancel(r);
	}
	return true;
}

static void rec_start(struct rec *x, const char *path, bool unix_socket,
		      const struct httpc_opts *base);

static bool rec_body(void *ctx, struct httpc_req *r, const char *p, size_t n)
{
	struct rec *x = ctx;
	if (x->cancelled)
		x->after++;
	x->bodies++;
	buf_append(&x->body, p, n);
	if (x->cancel_on == 2) {
		x->cancelled = true;
		httpc_cancel(r);
	}
	if (x->pause_first && x->bodies == 1)
		httpc_pause(r, true);
	if (x->start && x->bodies == 1)
		rec_start(x->start, "/json", false, NULL);
	if (x->free_client && x->bodies == 1) {
		httpc_free(hc);
		hc = NULL;
	}
	return !x->stop_body;
}

static void rec_done(void *ctx, struct httpc_req *r, int err, const char *why)
{
	struct rec *x = ctx;
	if (x->cancelled)
		x->after++;
	x->done++;
	x->err = err;
	x->sent = httpc_sent(r);
	snprintf(x->why, sizeof x->why, "%s", why);
}

static const struct httpc_cbs rec_cbs = {
	.on_head = rec_head,
	.on_body = rec_body,
	.on_done = rec_done,
};

static void rec_start(struct rec *x, const char *path, bool unix_socket,
		      const struct httpc_opts *base)
{
	char url[128];
	snprintf(url, sizeof url, "http://%s:%d%s",
		 unix_socket ? "localhost" : "127.0.0.1", srv_port, path);
	struct httpc_opts o = base ? *base : (struct httpc_opts){0};
	o.url = url;
	if (unix_socket)
		o.unix_socket = srv_sock;
	buf_init(&x->body);
	cr_assert_eq(httpc_start(hc, &o, &rec_cbs, x, &x->r), 0);
}

static void rec_free(struct rec *x)
{
	buf_free(&x->body);
}

/* ---- tests ---- */

Test(httpc, json_body_and_headers_case_insensitive)
{
	struct rec x = {0};
	rec_start(&x, "/json", false, NULL);
	RUN_UNTIL(x.done);
	cr_assert_eq(x.err, 0, "%s", x.why);
	cr_assert_eq(x.status, 200);
	cr_assert_str_eq(x.body.data, "{\"ok\":true}");
	cr_assert_str_eq(x.ctype, "application/json");
	cr_assert_str_eq(x.mixed, "Yes", "trimmed, any case");
	cr_assert(x.sent);
	rec_free(&x);
}

Test(httpc, unix_socket)
{
	struct rec x = {0};
	rec_start(&x, "/json", true, NULL);
	RUN_UNTIL(x.done);
	cr_assert_eq(x.err, 0, "%s", x.why);
	cr_assert_eq(x.status, 200);
	cr_assert_str_eq(x.body.data, "{\"ok\":true}");
	rec_free(&x);
}

Test(httpc, post_body_and_headers_sent)
{
	struct rec x = {0};
	static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":1}";
	const char *hs[] = {"Content-Type: application/json", NULL};
	struct httpc_opts o = {.method = "POST",
			       .headers = hs,
			       .body = body,
			       .body_len = sizeof body - 1};
	rec_start(&x, "/echo", false, &o);
	RUN_UNTIL(x.done);
	cr_assert_eq(x.err, 0, "%s", x.why);
	cr_assert_eq(x.status, 201);
	cr_assert_str_eq(x.body.data, body);
	rec_free(&x);
}

/* The caller's lines go as given, in order ("Name;" as an empty value),
 * and a large body goes at once: no "Expect: 100-continue" wait. */
Test(httpc, header_lines_go_as_given_without_expect)
{
	struct rec x = {0};
	size_t n = 2u << 20;
	char *body = xmalloc(n);
	memset(body, 'b', n);
	const char *hs[] = {"X-One: 1", "X-Two: two words", "X-Empty;", NULL};
	struct httpc_opts o = {
		.method = "POST", .headers = hs, .body = body, .body_len = n};
	rec_start(&x, "/echo", false, &o);
	RUN_UNTIL(x.done);
	cr_assert_eq(x.err, 0, "%s", x.why);
	cr_assert_eq(x.status, 201);
	cr_assert_eq(x.body.len, n);
	cr_assert_not_null(strstr(srv_head,
				  "\r\nX-One: 1\r\nX-Two: two words\r\n"
				  "X-Empty:\r\n"),
			   "%s", srv_head);
	cr_assert_null(strcasestr(srv_head, "expect"), "%s", srv_head);
	free(body);
	rec_free(&x);
}

Test(httpc, bad_options_refused)
{
	struct rec x = {0};
	const char *inject[] = {"X-A: 1\r\nX-B: 2", NULL};
	struct httpc_opts o = {.url = "http://127.0.0.1:1/", .headers = inject};
	cr_assert_eq(httpc_start(hc, &o, &rec_cbs, &x, NULL), -EINVAL);
	o = (struct httpc_opts){.url = "ftp://127.0.0.1/x"};
	cr_assert_eq(httpc_start(hc, &o, &rec_cbs, &x, NULL), -EINVAL);
	cr_assert_eq(x.done, 0);
}

Test(httpc, chunked_body_in_pieces)
{
	struct rec x = {0};
	rec_start(&x, "/chunked", false, NULL);
	RUN_UNTIL(x.done);
	cr_assert_eq(x.err, 0, "%s", x.why);
	cr_assert_str_eq(x.body.data, "hello chunky world");
	cr_assert_geq(x.bodies, 2, "pieces as they came: %d", x.bodies);
	rec_free(&x);
}

Test(httpc, sse_trickled_within_silence)
{
	struct rec x = {0};
	struct httpc_opts o = {.silence_timeout_ms = 2000};
	rec_start(&x, "/sse", true, &o);
	RUN_UNTIL(x.done);
	cr_assert_eq(x.err, 0, "%s", x.why);
	cr_assert_str_eq(x.ctype, "text/event-stream");
	cr_assert_str_eq(x.body.data,
			 ": hb\n\ndata: one\n\ndata: two\n\ndata: three\n\n");
	cr_assert_geq(x.bodies, 3);
	rec_free(&x);
}

Test(httpc, silence_counts_from_the_last_byte)
{
	/* Pieces every 400 ms for 2 s: a 1.2 s silence timeout that
	 * counted from the start would end it. The margin between a gap
	 * and the timeout is one a busy machine keeps: its loop runs
	 * timers before it reads, so a stall longer than the timeout would
	 * end a request whose bytes wait in the socket. */
	struct rec x = {0};
	struct httpc_opts o = {.silence_timeout_ms = 1200};
	rec_start(&x, "/sse-slow", false, &o);
	RUN_UNTIL(x.done);
	cr_assert_eq(x.err, 0, "%d %s", x.err, x.why);
	cr_assert_str_eq(x.body.data,
			 ": hb\n\ndata: one\n\ndata: two\n\ndata: three\n\n");
	rec_free(&x);
}

Test(httpc, closed_after_the_request_is_reset_and_sent)
{
	struct rec x = {0};
	rec_start(&x, "/close", false, NULL);
	RUN_UNTIL(x.done);
	cr_assert_eq(x.err, -ECONNRESET, "%d %s", x.err, x.why);
	cr_assert(x.sent, "the request reached the server");
	rec_free(&x);
}

Test(httpc, connection_refused_not_sent)
{
	/* A port that was free a moment ago: bound, never listened. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	socklen_t len = sizeof a;
	getsockname(fd, (struct sockaddr *)&a, &len);
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/x", ntohs(a.sin_port));
	struct rec x = {0};
	buf_init(&x.body);
	struct httpc_opts o = {
		.url = url, .method = "POST", .body = "{}", .body_len = 2};
	cr_assert_eq(httpc_start(hc, &o, &rec_cbs, &x, NULL), 0);
	RUN_UNTIL(x.done);
	close(fd);
	cr_assert_eq(x.err, -ECONNREFUSED, "%d %s", x.err, x.why);
	cr_assert_not(x.sent, "nothing reached a server");
	cr_assert_null(strstr(x.why, "127.0.0.1"), "no URL in why");
	rec_free(&x);
}

Test(httpc, tls_failure_is_eproto_and_not_sent)
{
	/* https to a plain HTTP server: the handshake fails before any
	 * byte of the request could go. */
	char url[64];
	snprintf(url, sizeof url, "https://127.0.0.1:%d/json", srv_port);
	struct rec x = {0};
	buf_init(&x.body);
	struct httpc_opts o = {.url = url};
	cr_assert_eq(httpc_start(hc, &o, &rec_cbs, &x, NULL), 0);
	RUN_UNTIL(x.done);
	cr_assert_eq(x.err, -EPROTO, "%d %s", x.err, x.why);
	cr_assert_not(x.sent);
	cr_assert_eq(srv_requests, 0);
	rec_free(&x);
}

/* ---- TLS verification: a self-signed server (openssl s_server) ---- */

static bool tls_up;
static int tls_tries;
static uv_tcp_t tls_probe;
static uv_connect_t tls_conn;
static uv_timer_t tls_retry;

static void tls_exit_cb(uv_process_t *p, int64_t status, int sig)
{
	tls_exited = true;
	uv_close((uv_handle_t *)p, NULL);
}

static void tls_dial(uv_timer_t *t);

static void tls_probe_closed(uv_handle_t *h)
{
	if (!tls_up && !tls_exited && ++tls_tries < 250)
		uv_timer_start(&tls_retry, tls_dial, 20, 0);
}

static void tls_connect_cb(uv_connect_t *c, int status)
{
	tls_up = status == 0;
	uv_close((uv_handle_t *)&tls_probe, tls_probe_closed);
}

/* Dials until the server listens (it takes a moment to start). */
static void tls_dial(uv_timer_t *t)
{
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", *(int *)t->data, &a);
	uv_tcp_init(&loop, &tls_probe);
	uv_tcp_connect(&tls_conn, &tls_probe, (struct sockaddr *)&a,
		       tls_connect_cb);
}

Test(httpc, tls_verification_refuses_a_self_signed_server)
{
	const char *dir = mkdtemp(tls_dir);
	cr_assert_not_null(dir);
	tls_made = true;
	char cmd[512];
	snprintf(cmd, sizeof cmd,
		 "openssl req -x509 -newkey ec -pkeyopt "
		 "ec_paramgen_curve:prime256v1 -nodes -subj /CN=localhost "
		 "-days 1 -keyout %s/k.pem -out %s/c.pem >/dev/null 2>&1",
		 dir, dir);
	if (system(cmd) != 0)
		cr_skip_test("no openssl command to make a certificate");
	/* A port that was free a moment ago. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bind(fd, (struct sockaddr *)&a, sizeof a);
	socklen_t alen = sizeof a;
	getsockname(fd, (struct sockaddr *)&a, &alen);
	close(fd);
	static int port;
	port = ntohs(a.sin_port);
	char accept[32], cert[96], key[96];
	snprintf(accept, sizeof accept, "127.0.0.1:%d", port);
	snprintf(cert, sizeof cert, "%s/c.pem", dir);
	snprintf(key, sizeof key, "%s/k.pem", dir);
	char *args[] = {"openssl", "s_server", "-accept", accept,
			"-cert",   cert,       "-key",	  key,
			"-www",	   "-quiet",   NULL};
	uv_stdio_container_t io[3] = {{.flags = UV_IGNORE},
				      {.flags = UV_IGNORE},
				      {.flags = UV_IGNORE}};
	uv_process_options_t po = {.file = "openssl",
				   .args = args,
				   .exit_cb = tls_exit_cb,
				   .stdio = io,
				   .stdio_count = 3};
	cr_assert_eq(uv_spawn(&loop, &tls_proc, &po), 0);
	tls_spawned = true;
	uv_timer_init(&loop, &tls_retry);
	tls_retry.data = &port;
	tls_dial(&tls_retry);
	RUN_UNTIL(tls_up || tls_exited || tls_tries >= 250);
	cr_assert(tls_up, "s_server did not start");

	char url[64];
	snprintf(url, sizeof url, "https://127.0.0.1:%d/", port);
	const char *hs[] = {"Authorization: Bearer s3cret", NULL};
	struct rec x = {0};
	buf_init(&x.body);
	struct httpc_opts o = {.url = url, .headers = hs};
	cr_assert_eq(httpc_start(hc, &o, &rec_cbs, &x, NULL), 0);
	RUN_UNTIL(x.done);
	cr_assert_eq(x.err, -EPROTO, "%d %s", x.err, x.why);
	cr_assert_not_null(strstr(x.why, "certificate"), "%s", x.why);
	cr_assert_null(strstr(x.why, "s3cret"));
	cr_assert_not(x.sent, "no byte of the request went");
	cr_assert_eq(x.status, 0);
	rec_free(&x);

	uv_process_kill(&tls_proc, SIGTERM);
	RUN_UNTIL(tls_exited);
	uv_close((uv_handle_t *)&tls_retry, NULL);
}

Test(httpc, silent_server_times_out)
{
	struct rec x = {0};
	struct httpc_opts o = {.silence_timeout_ms = 200};
	uv_update_time(&loop);
	uint64_t t0 = uv_now(&loop);
	rec_start(&x, "/silent", false, &o);
	RUN_UNTIL(x.done);
	uint64_t took = uv_now(&loop) - t0;
	cr_assert_eq(x.err, -ETIMEDOUT, "%d %s", x.err, x.why);
	cr_assert(took >= 200 && took < 2000, "took %llu ms",
		  (unsigned long long)took);
	cr_assert(x.sent, "the request reached the server");
	rec_free(&x);
}

Test(httpc, total_timeout)
{
	struct rec x = {0};
	struct httpc_opts o = {.total_timeout_ms = 200};
	rec_start(&x, "/silent", true, &o);
	RUN_UNTIL(x.done);
	cr_assert_eq(x.err, -ETIMEDOUT, "%d %s", x.err, x.why);
	rec_free(&x);
}

/* A cancelled request gets no callback; another request after it is the
 * barrier that shows the loop went on. */
static void t_cancel(int where, const char *path)
{
	struct rec x = {.cancel_on = where};
	rec_start(&x, path, false, NULL);
	RUN_UNTIL(x.cancelled);
	struct rec y = {0};
	rec_start(&y, "/chunked", false, NULL);
	RUN_UNTIL(y.done);
	cr_assert_eq(y.err, 0, "%s", y.why);
	cr_assert_eq(x.after, 0, "no callback after the cancel");
	cr_assert_eq(x.done, 0, "not even on_done");
	rec_free(&x);
	rec_free(&y);
}

Test(httpc, cancel_inside_on_head)
{
	t_cancel(1, "/chunked");
}

Test(httpc, cancel_inside_on_body)
{
	t_cancel(2, "/chunked");
}

Test(httpc, cancel_from_outside)
{
	struct rec x = {0};
	rec_start(&x, "/silent", false, NULL);
	RUN_UNTIL(srv_requests == 1);
	httpc_cancel(x.r);
	x.cancelled = true;
	struct rec y = {0};
	rec_start(&y, "/json", false, NULL);
	RUN_UNTIL(y.done);
	cr_assert_eq(x.after + x.done, 0);
	rec_free(&x);
	rec_free(&y);
}

Test(httpc, on_body_false_ends_with_ecanceled)
{
	struct rec x = {.stop_body = true};
	rec_start(&x, "/chunked", false, NULL);
	RUN_UNTIL(x.done);
	cr_assert_eq(x.err, -ECANCELED, "%d %s", x.err, x.why);
	cr_assert_eq(x.bodies, 1);
	rec_free(&x);
}

Test(httpc, start_inside_a_callback)
{
	struct rec y = {0};
	struct rec x = {.start = &y};
	rec_start(&x, "/chunked", false, NULL);
	RUN_UNTIL(x.done && y.done);
	cr_assert_eq(x.err, 0, "%s", x.why);
	cr_assert_eq(y.err, 0, "%s", y.why);
	cr_assert_str_eq(y.body.data, "{\"ok\":true}");
	rec_free(&x);
	rec_free(&y);
}

Test(httpc, free_inside_a_callback)
{
	struct rec y = {0};
	rec_start(&y, "/silent", false, NULL);
	struct rec x = {.free_client = true};
	rec_start(&x, "/chunked", false, NULL);
	RUN_UNTIL(x.done);
	cr_assert_eq(x.err, -ECANCELED, "%d %s", x.err, x.why);
	cr_assert_eq(x.bodies, 1, "nothing after the free");
	cr_assert_eq(y.done, 1);
	cr_assert_eq(y.err, -ECANCELED);
	rec_free(&x);
	rec_free(&y);
}

static struct rec *pause_rec;
static void t_resume_cb(uv_timer_t *t)
{
	/* While paused, the server wrote the rest: none of it came. */
	cr_assert_eq(pause_rec->bodies, 1);
	cr_assert_eq(pause_rec->done, 0);
	httpc_pause(pause_rec->r, false);
}

Test(httpc, pause_and_resume)
{
	/* A silence timeout a busy machine's stalls do not reach (its loop
	 * runs timers before it reads); 100 ms ended the request before
	 * its first byte was read, and the wait for that byte never
	 * ended. */
	struct rec x = {.pause_first = true};
	struct httpc_opts o = {.silence_timeout_ms = 1000};
	pause_rec = &x;
	rec_start(&x, "/sse", false, &o);
	RUN_UNTIL(x.bodies == 1 || x.done);
	cr_assert_eq(x.done, 0, "ended before the pause: %d %s", x.err, x.why);
	/* Longer than the silence timeout and than the server's script:
	 * a paused request is not silent, it is held. */
	static uv_timer_t t;
	uv_timer_init(&loop, &t);
	uv_timer_start(&t, t_resume_cb, 2500, 0);
	RUN_UNTIL(x.done);
	uv_close((uv_handle_t *)&t, NULL);
	cr_assert_eq(x.err, 0, "%d %s", x.err, x.why);
	cr_assert_str_eq(x.body.data,
			 ": hb\n\ndata: one\n\ndata: two\n\ndata: three\n\n");
	rec_free(&x);
}

Test(httpc, head_over_the_limit)
{
	struct rec x = {0};
	rec_start(&x, "/bighead", false, NULL);
	RUN_UNTIL(x.done);
	cr_assert_eq(x.err, -EPROTO, "%d %s", x.err, x.why);
	cr_assert_eq(x.status, 0, "no head was delivered");
	cr_assert_null(strstr(x.why, "aaaa"), "no header value in why");
	rec_free(&x);
}

Test(httpc, interim_head_replaced)
{
	struct rec x = {0};
	rec_start(&x, "/interim", false, NULL);
	RUN_UNTIL(x.done);
	cr_assert_eq(x.err, 0, "%s", x.why);
	cr_assert_eq(x.status, 200);
	cr_assert(x.has_final);
	cr_assert_not(x.has_link, "the 103's headers are gone");
	cr_assert_str_eq(x.body.data, "ok");
	rec_free(&x);
}

Test(httpc, redirect_not_followed)
{
	struct rec x = {0};
	const char *hs[] = {"Authorization: Bearer s3cret", NULL};
	struct httpc_opts o = {.headers = hs};
	rec_start(&x, "/redirect", false, &o);
	RUN_UNTIL(x.done);
	cr_assert_eq(x.err, 0, "%s", x.why);
	cr_assert_eq(x.status, 302);
	cr_assert_eq(srv_json_requests, 0, "the Location was not visited");
	rec_free(&x);
}

/* 100 requests one after another, each started from the last one's
 * on_done: one connection carries them all. */
static int seq_left;
static int seq_failed;
static void seq_done(void *ctx, struct httpc_req *r, int err, const char *why);
static const struct httpc_cbs seq_cbs = {.on_done = seq_done};

static void seq_start(void)
{
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/json", srv_port);
	struct httpc_opts o = {.url = url};
	cr_assert_eq(httpc_start(hc, &o, &seq_cbs, NULL, NULL), 0);
}

static void seq_done(void *ctx, struct httpc_req *r, int err, const char *why)
{
	if (err || httpc_status(r) != 200)
		seq_failed++;
	if (--seq_left > 0)
		seq_start();
}

Test(httpc, sequential_requests_reuse_one_connection)
{
	seq_left = 100;
	seq_start();
	RUN_UNTIL(seq_left == 0);
	cr_assert_eq(seq_failed, 0);
	cr_assert_eq(srv_json_requests, 100);
	cr_assert_eq(srv_accepts, 1, "accepts: %d", srv_accepts);
}

/* A kept connection stays in epoll as it is from one request to the
 * next: no system call to take it out and put it back each time. */
Test(httpc, a_kept_connection_stays_in_epoll_between_requests)
{
	struct rec first = {0};
	rec_start(&first, "/json", false, NULL);
	RUN_UNTIL(first.done);
	cr_assert_eq(first.err, 0, "%s", first.why);
	rec_free(&first);
	cr_assert(hc->socks && hc->socks->next == NULL, "one connection");
	epoll_ctl_fd = hc->socks->fd;
	for (int i = 0; i < 10; i++) {
		struct rec x = {0};
		rec_start(&x, "/json", false, NULL);
		RUN_UNTIL(x.done);
		cr_assert_eq(x.err, 0, "%s", x.why);
		cr_assert_eq(x.status, 200);
		rec_free(&x);
	}
	cr_assert_eq(srv_accepts, 1, "one connection carried them");
	cr_assert_eq(epoll_ctls, 0, "%d epoll_ctl for 10 requests", epoll_ctls);
	epoll_ctl_fd = -1;
}

/* curl replays a request on a fresh connection when a reused one closes
 * with no answer byte: a POST that ran must not run twice. */
Test(httpc, a_request_is_never_replayed_by_curl_on_a_dead_reused_connection)
{
	struct rec a = {0}, b = {0}, c = {0};
	rec_start(&a, "/json", false, NULL);
	RUN_UNTIL(a.done);
	cr_assert_eq(a.err, 0);
	struct httpc_opts post = {
		.method = "POST", .body = "{\"x\":1}", .body_len = 7};
	rec_start(&b, "/die", false, &post);
	RUN_UNTIL(b.done);
	cr_assert_eq(srv_die_requests, 1, "curl sent it %d times",
		     srv_die_requests);
	cr_assert_neq(b.err, 0);
	cr_assert(b.sent, "it may have reached the server");
	/* The client goes on: a new connection for the next request. */
	rec_start(&c, "/json", false, &post);
	RUN_UNTIL(c.done);
	cr_assert_eq(c.err, 0);
	cr_assert_eq(c.status, 200);
	rec_free(&a);
	rec_free(&b);
	rec_free(&c);
}

/* Bytes delivered since the last loop turn, and the most in one turn. */
static size_t turn_bytes, turn_max;
static int turns;

static void turn_cb(uv_check_t *h)
{
	turns++;
	turn_bytes = 0;
}

static bool turn_body(void *ctx, struct httpc_req *r, const char *p, size_t n)
{
	struct rec *x = ctx;
	x->bodies++;
	x->status = (int)(x->status + 0);
	turn_bytes += n;
	if (turn_bytes > turn_max)
		turn_max = turn_bytes;
	buf_append(&x->body, p, n > 1 ? 1 : n); /* counted, not kept */
	return true;
}

/* A server that writes as fast as the socket takes it does not keep the
 * loop inside curl: each turn of the loop gets a bounded share. */
Test(httpc, a_flood_yields_to_the_loop_every_turn)
{
	static uv_check_t check; /* closed in the teardown's loop run */
	uv_check_init(&loop, &check);
	uv_check_start(&check, turn_cb);
	struct rec x = {0};
	static const struct httpc_cbs cbs = {.on_body = turn_body,
					     .on_done = rec_done};
	char url[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/flood", srv_port);
	struct httpc_opts o = {.url = url};
	buf_init(&x.body);
	cr_assert_eq(httpc_start(hc, &o, &cbs, &x, &x.r), 0);
	RUN_UNTIL(x.done);
	cr_assert_eq(x.err, 0, "%s", x.why);
	cr_log_info("8 MiB in %d turns, at most %zu bytes in one", turns,
		    turn_max);
	cr_assert_leq(turn_max, 256 * 1024 + 64 * 1024,
		      "%zu bytes in one turn of the loop", turn_max);
	uv_close((uv_handle_t *)&check, NULL);
	rec_free(&x);
}

/* A GET changes nothing: curl may replay it on a fresh connection when a
 * reused one closes first (a ping that meets a connection the server
 * just closed is not a lost server). */
Test(httpc, a_get_may_be_replayed_by_curl_on_a_dead_reused_connection)
{
	struct rec a = {0}, b = {0};
	rec_start(&a, "/json", false, NULL);
	RUN_UNTIL(a.done);
	cr_assert_eq(a.err, 0);
	rec_start(&b, "/die", false, NULL);
	RUN_UNTIL(b.done);
	cr_assert_eq(srv_die_requests, 2, "a GET went %d times",
		     srv_die_requests);
	rec_free(&a);
	rec_free(&b);
}

/* The idempotent path keeps its keep-alive: POSTs reuse one connection. */
Test(httpc, posts_reuse_one_connection)
{
	for (int i = 0; i < 20; i++) {
		struct rec x = {0};
		struct httpc_opts post = {
			.method = "POST", .body = "{}", .body_len = 2};
		rec_start(&x, "/json", false, &post);
		RUN_UNTIL(x.done);
		cr_assert_eq(x.err, 0);
		rec_free(&x);
	}
	cr_assert_eq(srv_json_requests, 20);
	cr_assert_eq(srv_accepts, 1, "accepts: %d", srv_accepts);
}

/* ---- easy handles kept between requests ---- */

static int resets;
static __typeof__(curl_easy_reset) *real_reset;

static void counting_reset(CURL *e)
{
	resets++;
	real_reset(e);
}

/* curl_easy_reset counted (the table is filled at run time, so it can
 * be pointed elsewhere for the test), undone by reset_count_end. */
static void reset_count_begin(void)
{
	struct curlso *cu = (struct curlso *)hc->cu;
	real_reset = cu->easy_reset;
	cu->easy_reset = counting_reset;
	resets = 0;
}

static void reset_count_end(void)
{
	((struct curlso *)hc->cu)->easy_reset = real_reset;
}

static void rec_run(struct rec *x, const char *path, bool unix_socket,
		    const struct httpc_opts *o)
{
	*x = (struct rec){0};
	rec_start(x, path, unix_socket, o);
	RUN_UNTIL(x->done);
}

/* A request that ended well leaves its easy handle set up for the next
 * one, without curl_easy_reset (about 5,000 instructions a request);
 * one that did not (ended by its owner here) is reset before it serves again.
 */
Test(httpc, a_handle_that_ended_well_is_kept_without_a_reset)
{
	reset_count_begin();
	struct httpc_opts post = {
		.method = "POST", .body = "{}", .body_len = 2};
	for (int i = 0; i < 5; i++) {
		struct rec x;
		rec_run(&x, "/json", false, i % 2 ? &post : NULL);
		cr_assert_eq(x.err, 0, "%s", x.why);
		cr_assert_eq(x.status, 200);
		rec_free(&x);
	}
	cr_assert_eq(hc->nidle, 1, "one handle served them all");
	cr_assert_eq(resets, 0, "%d resets for 5 clean requests", resets);
	struct rec c = {.stop_body = true};
	rec_start(&c, "/json", false, NULL);
	RUN_UNTIL(c.done);
	cr_assert_eq(c.err, -ECANCELED);
	cr_assert_eq(resets, 1, "the ended request's handle is reset");
	rec_free(&c);
	struct rec after;
	rec_run(&after, "/json", false, NULL);
	cr_assert_eq(after.err, 0, "%s", after.why);
	cr_assert_eq(after.status, 200, "a reset handle is set up again");
	rec_free(&after);
	reset_count_end();
}

/* One kept handle serves requests that differ in everything a request
 * may set: nothing of one is left on the next (method, body, header
 * lines, Unix socket, total timeout). */
Test(httpc, a_kept_handle_carries_nothing_of_the_request_before)
{
	static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":1}";
	const char *hs[] = {"X-One: 1", NULL};
	struct httpc_opts post = {.method = "POST",
				  .headers = hs,
				  .body = body,
				  .body_len = sizeof body - 1,
				  .total_timeout_ms = 300};
	struct rec x;
	rec_run(&x, "/echo", true, &post);
	cr_assert_eq(x.err, 0, "%s", x.why);
	cr_assert_eq(x.status, 201);
	cr_assert_str_eq(x.body.data, body);
	cr_assert(srv_last_unix);
	rec_free(&x);
	/* No body, no header lines, over TCP, no total timeout: the SSE
	 * stream takes 2 s, longer than the POST's 300 ms. */
	rec_run(&x, "/sse-slow", false, NULL);
	cr_assert_eq(x.err, 0, "%s", x.why);
	cr_assert_eq(x.status, 200);
	cr_assert_not(srv_last_unix, "the Unix socket was the POST's");
	cr_assert_eq(strncmp(srv_head, "GET /sse-slow ", 14), 0, "%s",
		     srv_head);
	cr_assert_null(strcasestr(srv_head, "x-one"), "%s", srv_head);
	cr_assert_null(strcasestr(srv_head, "content-length"), "%s", srv_head);
	rec_free(&x);
	struct httpc_opts del = {.method = "DELETE"};
	rec_run(&x, "/json", false, &del);
	cr_assert_eq(x.err, 0, "%s", x.why);
	cr_assert_eq(strncmp(srv_head, "DELETE /json ", 13), 0, "%s", srv_head);
	cr_assert_null(strcasestr(srv_head, "content-length"), "%s", srv_head);
	rec_free(&x);
	struct httpc_opts put = {
		.method = "PUT", .body = "{\"a\":2}", .body_len = 7};
	rec_run(&x, "/echo", false, &put);
	cr_assert_eq(x.err, 0, "%s", x.why);
	cr_assert_str_eq(x.body.data, "{\"a\":2}");
	cr_assert_eq(strncmp(srv_head, "PUT /echo ", 10), 0, "%s", srv_head);
	rec_free(&x);
	rec_run(&x, "/json", false, NULL);
	cr_assert_eq(x.err, 0, "%s", x.why);
	cr_assert_eq(strncmp(srv_head, "GET /json ", 10), 0, "%s", srv_head);
	rec_free(&x);
	cr_assert_eq(hc->nidle, 1, "one handle served them all");
}

/* ---- the parsed URLs (struct httpc_url) ---- */

/* The slot that holds url, or NULL. */
static const struct httpc_url *url_slot(const char *url)
{
	for (int i = 0; i < HTTPC_URLS; i++)
		if (hc->urls[i].text && strcmp(hc->urls[i].text, url) == 0)
			return &hc->urls[i];
	return NULL;
}

static unsigned url_users(void)
{
	unsigned n = 0;
	for (int i = 0; i < HTTPC_URLS; i++)
		n += hc->urls[i].users;
	return n;
}

/* Requests to one URL share one parse; the server sees the URL as given,
 * query and all, and a request gives its hold back when it ends. */
Test(httpc, requests_to_one_url_share_its_parse)
{
	char url[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/json?space=a%%20b",
		 srv_port);
	for (int i = 0; i < 3; i++) {
		struct rec x = {0};
		rec_start(&x, "/json?space=a%20b", false, NULL);
		cr_assert_not_null(x.r->url, "the request has the parsed URL");
		cr_assert_eq(x.r->url, url_slot(url));
		RUN_UNTIL(x.done);
		cr_assert_eq(x.err, 0, "%s", x.why);
		cr_assert_eq(x.status, 200);
		cr_assert_str_eq(srv_target, "/json?space=a%20b");
		rec_free(&x);
	}
	int held = 0;
	for (int i = 0; i < HTTPC_URLS; i++)
		held += hc->urls[i].text != NULL;
	cr_assert_eq(held, 1, "one parse for three requests");
	cr_assert_eq(url_slot(url)->users, 0);
}

/* More URLs in flight than slots: the ones past them go as text and work
 * the same; a URL in use is never the one replaced; once requests end,
 * their slots serve new URLs, the least recently taken first. */
Test(httpc, more_urls_than_slots)
{
	enum { N = HTTPC_URLS + 2 };
	struct rec held[N];
	struct httpc_opts quiet = {.silence_timeout_ms = 0};
	for (int i = 0; i < N; i++) {
		char path[32];
		snprintf(path, sizeof path, "/silent?%d", i);
		held[i] = (struct rec){0};
		rec_start(&held[i], path, false, &quiet);
		if (i < HTTPC_URLS)
			cr_assert_not_null(held[i].r->url);
		else
			cr_assert_null(held[i].r->url, "no free slot");
	}
	RUN_UNTIL(srv_requests == N);
	cr_assert_eq(url_users(), HTTPC_URLS);
	/* As text, while every slot is held. */
	struct rec t = {0};
	rec_start(&t, "/json?text", false, NULL);
	cr_assert_null(t.r->url);
	RUN_UNTIL(t.done);
	cr_assert_eq(t.err, 0, "%s", t.why);
	cr_assert_eq(t.status, 200);
	cr_assert_str_eq(srv_target, "/json?text");
	/* Two end: their slots go to the next two URLs; the rest stay. */
	held[3].cancelled = held[5].cancelled = true;
	httpc_cancel(held[3].r);
	httpc_cancel(held[5].r);
	cr_assert_eq(url_users(), HTTPC_URLS - 2);
	char url[128];
	for (int i = 0; i < 2; i++) {
		struct rec x = {0};
		char path[32];
		snprintf(path, sizeof path, "/json?new%d", i);
		rec_start(&x, path, false, NULL);
		cr_assert_not_null(x.r->url, "a slot was given back");
		RUN_UNTIL(x.done);
		cr_assert_eq(x.status, 200);
		rec_free(&x);
	}
	for (int i = 0; i < HTTPC_URLS; i++) {
		snprintf(url, sizeof url, "http://127.0.0.1:%d/silent?%d",
			 srv_port, i);
		if (i == 3 || i == 5)
			cr_assert_null(url_slot(url), "%d was replaced", i);
		else
			cr_assert_eq(url_slot(url)->users, 1, "%d is held", i);
	}
	for (int i = 0; i < N; i++) {
		if (i != 3 && i != 5) {
			held[i].cancelled = true;
			httpc_cancel(held[i].r);
		}
		cr_assert_eq(held[i].after, 0);
		rec_free(&held[i]);
	}
	cr_assert_eq(url_users(), 0);
	rec_free(&t);
}

Test(httpc, free_ends_requests_in_flight)
{
	struct rec x = {0};
	rec_start(&x, "/silent", false, NULL);
	RUN_UNTIL(srv_requests == 1);
	httpc_free(hc);
	hc = NULL;
	cr_assert_eq(x.done, 1);
	cr_assert_eq(x.err, -ECANCELED);
	rec_free(&x);
}

/* ---- httpc_fetch on its own loop ---- */

static bool t_sse_cb(void *arg, const char *data, size_t len)
{
	struct buf *b = arg;
	buf_append(b, data, len);
	buf_append(b, "|", 1);
	return true;
}

static bool t_sse_stop_cb(void *arg, const char *data, size_t len)
{
	int *n = arg;
	return ++*n < 2;
}

/* The server runs on the test's loop, so httpc_fetch (a private loop)
 * talks to it from a thread. */
struct fetch_job {
	struct httpc_opts o;
	char url[128];
	int rc, status, stops;
	struct buf body, events, head;
	const char *why;
	bool sse, stop, done;
};
/* The thread's end wakes the test's loop (static: closed at teardown). */
static uv_async_t fetch_wake;

static void fetch_thread(void *arg)
{
	struct fetch_job *j = arg;
	if (j->stop)
		j->rc = httpc_fetch(&j->o, &j->status, &j->body, 1 << 20,
				    t_sse_stop_cb, &j->stops, &j->why);
	else
		j->rc = httpc_fetch_head(&j->o, &j->status, &j->head, &j->body,
					 1 << 20, j->sse ? t_sse_cb : NULL,
					 &j->events, &j->why);
	__atomic_store_n(&j->done, true, __ATOMIC_RELEASE);
	if (fetch_wake.loop)
		uv_async_send(&fetch_wake);
}

static void t_fetch(struct fetch_job *j, const char *path)
{
	snprintf(j->url, sizeof j->url, "http://localhost%s", path);
	j->o.url = j->url;
	j->o.unix_socket = srv_sock;
	j->o.total_timeout_ms = 5000;
	buf_init(&j->body);
	buf_init(&j->events);
	buf_init(&j->head);
	uv_async_init(&loop, &fetch_wake, NULL);
	uv_thread_t th;
	cr_assert_eq(uv_thread_create(&th, fetch_thread, j), 0);
	RUN_UNTIL(__atomic_load_n(&j->done, __ATOMIC_ACQUIRE));
	uv_thread_join(&th);
	uv_close((uv_handle_t *)&fetch_wake, NULL);
}

static void t_fetch_free(struct fetch_job *j)
{
	buf_free(&j->body);
	buf_free(&j->events);
	buf_free(&j->head);
}

Test(httpc, fetch_json_with_head)
{
	struct fetch_job j = {0};
	t_fetch(&j, "/json");
	cr_assert_eq(j.rc, 0, "%s", j.why);
	cr_assert_eq(j.status, 200);
	cr_assert_str_eq(j.body.data, "{\"ok\":true}");
	cr_assert_str_eq(httpc_head_get(&j.head, "Content-Type"),
			 "application/json");
	t_fetch_free(&j);
}

Test(httpc, fetch_sse_events)
{
	struct fetch_job j = {.sse = true};
	t_fetch(&j, "/sse");
	cr_assert_eq(j.rc, 0, "%s", j.why);
	cr_assert_str_eq(j.events.data, "one|two|three|");
	cr_assert_eq(j.body.len, 0, "events are not kept as a body");
	t_fetch_free(&j);
}

Test(httpc, fetch_sse_stop_is_success)
{
	struct fetch_job j = {.stop = true};
	t_fetch(&j, "/sse");
	cr_assert_eq(j.rc, 0, "%s", j.why);
	cr_assert_eq(j.stops, 2);
	t_fetch_free(&j);
}

Test(httpc, fetch_refused)
{
	struct fetch_job j = {0};
	snprintf(j.url, sizeof j.url, "http://localhost/json");
	j.o.url = j.url;
	j.o.unix_socket = "/nonexistent/mcpv-httpc.sock";
	buf_init(&j.body);
	buf_init(&j.events);
	buf_init(&j.head);
	fetch_thread(&j);
	cr_assert_lt(j.rc, 0);
	cr_assert_gt(strlen(j.why), 0);
	t_fetch_free(&j);
}
