/*
 * The endpoint's connection handling on a real loop and real sockets, with
 * a hub that serves nothing and a fake clock for deadlines:
 * close after a reset, idempotent close, header and idle timeouts, the
 * output cap, the Unix socket's own budget, and the fallback port taken
 * without running the loop from inside it.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "config/config.h"
#include "endpoint/endpoint.h"
#include "endpoint/endpoint_int.h"
#include "session/hub.h"
#include "util/clock.h"

#define T_HEADER_MS 1000
#define T_IDLE_MS 5000

static uint64_t fake_now;
static uv_loop_t loop;
static struct endpoint *ep;
static struct hub *hub;
static char sock_path[108];

static uint64_t t_clock(void)
{
	return fake_now;
}

static void t_setup(void)
{
	fake_now = 1000000;
	clock_set_source(t_clock);
	uv_loop_init(&loop);
	const char *text = "{\"mcpServers\":{}}";
	struct config *cfg = config_parse(text, strlen(text), "/tmp/t.json");
	cr_assert_null(cfg->fatal);
	hub = hub_new(&loop, cfg, "/tmp", NULL, NULL);
	snprintf(sock_path, sizeof sock_path, "/tmp/mcpv-ep-test-%d.sock",
		 (int)getpid());
	struct endpoint_opts o = {
		.port = 0,
		.socket_path = sock_path,
		.header_timeout_ms = T_HEADER_MS,
		.idle_timeout_ms = T_IDLE_MS,
	};
	char *err = NULL;
	cr_assert_eq(endpoint_start(&loop, hub, &o, &ep, &err), 0, "%s", err);
}

static void t_teardown(void)
{
	endpoint_free(ep);
	hub_free(hub);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0);
	clock_set_source(NULL);
	unlink(sock_path);
}

TestSuite(endpoint, .init = t_setup, .fini = t_teardown, .timeout = 60);

/* Turns the loop until cond holds (bounded); cond is evaluated once per
 * turn (it may read). */
#define RUN_UNTIL(cond)                                                        \
	do {                                                                   \
		bool ok_ = false;                                              \
		for (int i_ = 0; i_ < 4000 && !(ok_ = (cond)); i_++) {         \
			uv_run(&loop, UV_RUN_NOWAIT);                          \
			struct timespec ts_ = {0, 500000};                     \
			nanosleep(&ts_, NULL);                                 \
		}                                                              \
		cr_assert(ok_, "never: %s", #cond);                            \
	} while (0)

static int t_dial(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)endpoint_port(ep))};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

static int t_dial_unix(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	strcpy(a.sun_path, sock_path);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

static void t_send(int fd, const char *s)
{
	cr_assert_eq(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
}

/* What the peer has sent so far (nonblocking); -1 on EOF or reset. */
static ssize_t t_recv(int fd, char *buf, size_t cap)
{
	ssize_t n = recv(fd, buf, cap - 1, 0);
	if (n > 0) {
		buf[n] = '\0';
		return n;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	return -1;
}

static void t_reset(int fd)
{
	struct linger l = {1, 0};
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
	close(fd);
}

Test(endpoint, reset_after_connection_close_closes_once)
{
	/* R1: the answer's flush fails inside the close it triggers. */
	for (int i = 0; i < 20; i++) {
		int fd = t_dial();
		RUN_UNTIL(ep->nconns == 1);
		t_send(fd, "GET /none HTTP/1.1\r\nHost: localhost\r\n"
			   "Connection: close\r\n\r\n");
		t_reset(fd);
		RUN_UNTIL(ep->nconns == 0);
	}
}

Test(endpoint, close_is_idempotent)
{
	int fd = t_dial();
	RUN_UNTIL(ep->nconns == 1);
	struct conn *c = ep->conns;
	ep_write(c, "x", 1);
	ep_conn_close(c);
	ep_conn_close(c);
	ep_conn_overflow(c);
	cr_assert_eq(ep->nconns, 0);
	uv_run(&loop, UV_RUN_NOWAIT);
	close(fd);
}

Test(endpoint, header_timeout_closes_a_slow_head)
{
	int fd = t_dial();
	RUN_UNTIL(ep->nconns == 1);
	fake_now += 500;
	t_send(fd, "GET /none HT");
	RUN_UNTIL(!ep->conns->idle);
	/* The deadline counts from the first byte. */
	fake_now += T_HEADER_MS - 1;
	ep_sweep(ep, clock_now_ms());
	cr_assert_eq(ep->nconns, 1);
	fake_now += 1;
	ep_sweep(ep, clock_now_ms());
	cr_assert_eq(ep->nconns, 0);
	char buf[256];
	RUN_UNTIL(t_recv(fd, buf, sizeof buf) < 0);
	close(fd);
}

Test(endpoint, silent_connection_is_closed_after_header_timeout)
{
	int fd = t_dial();
	RUN_UNTIL(ep->nconns == 1);
	fake_now += T_HEADER_MS;
	ep_sweep(ep, clock_now_ms());
	cr_assert_eq(ep->nconns, 0);
	close(fd);
}

Test(endpoint, body_that_keeps_coming_is_not_cut)
{
	int fd = t_dial();
	RUN_UNTIL(ep->nconns == 1);
	t_send(fd, "POST /none HTTP/1.1\r\nHost: localhost\r\n"
		   "Content-Length: 4\r\n\r\nab");
	RUN_UNTIL(httpparse_request(ep->conns->hp)->body_len == 2);
	fake_now += T_HEADER_MS - 1;
	ep_sweep(ep, clock_now_ms());
	t_send(fd, "c");
	RUN_UNTIL(httpparse_request(ep->conns->hp)->body_len == 3);
	fake_now += T_HEADER_MS - 1;
	ep_sweep(ep, clock_now_ms());
	cr_assert_eq(ep->nconns, 1, "progress keeps the request");
	t_send(fd, "d");
	char buf[512];
	RUN_UNTIL(t_recv(fd, buf, sizeof buf) > 0);
	cr_assert(strncmp(buf, "HTTP/1.1 404", 12) == 0, "%s", buf);
	close(fd);
}

Test(endpoint, idle_keep_alive_connection_is_closed)
{
	int fd = t_dial();
	RUN_UNTIL(ep->nconns == 1);
	t_send(fd, "GET /none HTTP/1.1\r\nHost: localhost\r\n\r\n");
	char buf[512];
	RUN_UNTIL(t_recv(fd, buf, sizeof buf) > 0);
	cr_assert(strncmp(buf, "HTTP/1.1 404", 12) == 0);
	fake_now += T_IDLE_MS - 1;
	ep_sweep(ep, clock_now_ms());
	cr_assert_eq(ep->nconns, 1, "kept while not idle for long");
	fake_now += 1;
	ep_sweep(ep, clock_now_ms());
	cr_assert_eq(ep->nconns, 0);
	close(fd);
}

Test(endpoint, output_over_the_cap_closes_a_client_that_reads_nothing)
{
	int fd = t_dial();
	RUN_UNTIL(ep->nconns == 1);
	struct conn *c = ep->conns;
	c->state = CONN_BUSY; /* as if answering */
	size_t big = EP_OUT_CAP + 1024;
	char *data = calloc(1, big);
	/* One message over the cap goes out when nothing else waits. */
	ep_write(c, data, big);
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(ep->nconns, 1);
	cr_assert_gt(c->u.s.write_queue_size, 0, "the client reads nothing");
	/* Anything that would take it over the cap is not kept: the
	 * connection is closed, its memory freed. */
	ep_write(c, data, EP_OUT_CAP);
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(ep->nconns, 0);
	free(data);
	close(fd);
}

Test(endpoint, stalled_writer_is_closed_after_idle_timeout)
{
	int fd = t_dial();
	RUN_UNTIL(ep->nconns == 1);
	struct conn *c = ep->conns;
	c->state = CONN_BUSY;
	c->deadline_ms = 0;
	/* Small socket buffers on both ends, so the 4 MiB cannot all go
	 * into them however the kernel would size them (on a busy CI run
	 * it all went). */
	int small = 64 * 1024;
	cr_assert_eq(
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
	cr_assert_eq(uv_send_buffer_size((uv_handle_t *)&c->u.s, &small), 0);
	size_t big = 4 * 1024 * 1024;
	char *data = calloc(1, big);
	ep_write(c, data, big);
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_gt(c->u.s.write_queue_size, 0);
	fake_now += T_IDLE_MS - 1;
	ep_sweep(ep, clock_now_ms());
	cr_assert_eq(ep->nconns, 1);
	fake_now += 1;
	ep_sweep(ep, clock_now_ms());
	cr_assert_eq(ep->nconns, 0);
	free(data);
	close(fd);
}

static size_t t_idle(void)
{
	size_t n = 0;
	for (struct conn *c = ep->conns; c; c = c->next)
		n += c->idle;
	return n;
}

Test(endpoint, unix_socket_has_its_own_budget)
{
	static int fds[EP_MAX_CONNS + 1];
	for (int i = 0; i < EP_MAX_CONNS; i++) {
		fds[i] = t_dial();
		t_send(fds[i], "G"); /* a request begun: not idle */
		if (i % 256 == 255)
			RUN_UNTIL(ep->nconns == (size_t)i + 1);
	}
	RUN_UNTIL(ep->nconns == EP_MAX_CONNS && t_idle() == 0);
	/* TCP is full and nothing is idle: the oldest slow sender makes
	 * room. */
	fds[EP_MAX_CONNS] = t_dial();
	char buf[512];
	RUN_UNTIL(t_recv(fds[0], buf, sizeof buf) < 0);
	cr_assert_eq(ep->nconns, EP_MAX_CONNS);
	/* The Unix socket still answers. */
	int u = t_dial_unix();
	t_send(u, "GET /none HTTP/1.1\r\n\r\n");
	RUN_UNTIL(t_recv(u, buf, sizeof buf) > 0);
	cr_assert(strncmp(buf, "HTTP/1.1 404", 12) == 0, "%s", buf);
	close(u);
	for (int i = 0; i <= EP_MAX_CONNS; i++)
		close(fds[i]);
	RUN_UNTIL(ep->nconns == 0);
}

Test(endpoint, full_tcp_makes_room_by_closing_the_longest_idle)
{
	static int fds[EP_MAX_CONNS];
	for (int i = 0; i < EP_MAX_CONNS; i++) {
		fds[i] = t_dial();
		if (i % 256 == 255)
			RUN_UNTIL(ep->nconns == (size_t)i + 1);
	}
	RUN_UNTIL(ep->nconns == EP_MAX_CONNS);
	int fd = t_dial();
	t_send(fd, "GET /none HTTP/1.1\r\nHost: localhost\r\n\r\n");
	char buf[512];
	RUN_UNTIL(t_recv(fd, buf, sizeof buf) > 0);
	cr_assert(strncmp(buf, "HTTP/1.1 404", 12) == 0, "%s", buf);
	/* The first (oldest) idle one made room. */
	RUN_UNTIL(t_recv(fds[0], buf, sizeof buf) < 0);
	close(fd);
	for (int i = 0; i < EP_MAX_CONNS; i++)
		close(fds[i]);
	RUN_UNTIL(ep->nconns == 0);
}

/* R21: the fallback port is taken from inside a running loop (as a reload
 * might) without running the loop again from there. */
static struct endpoint *ep2;
static int ep2_rc = 1;

static void t_start_cb(uv_timer_t *t)
{
	struct endpoint_opts o = {.port = -1};
	char *err = NULL;
	ep2_rc = endpoint_start(&loop, hub, &o, &ep2, &err);
	free(err);
	uv_close((uv_handle_t *)t, NULL);
}

Test(endpoint, fallback_port_from_inside_the_loop)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(EP_DEFAULT_PORT)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* Taken by us, or by someone else: taken either way. */
	if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0)
		listen(fd, 1);
	uv_timer_t t;
	uv_timer_init(&loop, &t);
	uv_timer_start(&t, t_start_cb, 0, 0);
	RUN_UNTIL(ep2_rc != 1);
	cr_assert_eq(ep2_rc, 0);
	cr_assert_neq(endpoint_port(ep2), EP_DEFAULT_PORT);
	endpoint_free(ep2);
	uv_run(&loop, UV_RUN_NOWAIT);
	close(fd);
}

/* Makes the connection look like an open SSE answer whose reading the
 * input cap stopped (what a GET stream fed junk comes to). */
static struct conn *t_quiet_stream(void)
{
	struct conn *c = ep->conns;
	c->state = CONN_BUSY;
	c->deadline_ms = 0;
	c->sse_started = true;
	c->sse_ms = c->event_ms = fake_now;
	uv_read_stop(&c->u.s);
	c->reading = false;
	return c;
}

Test(endpoint, quiet_sse_answer_gets_a_heartbeat_each_second)
{
	int fd = t_dial();
	RUN_UNTIL(ep->nconns == 1);
	struct conn *c = t_quiet_stream();
	char buf[256];
	fake_now += 600;
	/* Written to 600 ms in: the stream is not quiet. */
	ep_sse_write(c, "1", "{}", 2, 0);
	fake_now += 600;
	ep_sweep(ep, clock_now_ms());
	uv_run(&loop, UV_RUN_NOWAIT);
	ssize_t n = t_recv(fd, buf, sizeof buf);
	cr_assert(n > 0 && strstr(buf, ": hb") == NULL, "%s", buf);
	fake_now += EP_HEARTBEAT_MS - 600 - 1;
	ep_sweep(ep, clock_now_ms());
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(t_recv(fd, buf, sizeof buf), 0);
	fake_now += 1;
	ep_sweep(ep, clock_now_ms());
	RUN_UNTIL(t_recv(fd, buf, sizeof buf) > 0);
	cr_assert_str_eq(buf, "6\r\n: hb\n\n\r\n");
	fake_now += EP_HEARTBEAT_MS;
	ep_sweep(ep, clock_now_ms());
	RUN_UNTIL(t_recv(fd, buf, sizeof buf) > 0);
	cr_assert_str_eq(buf, "6\r\n: hb\n\n\r\n");
	close(fd);
}

Test(endpoint, waiting_sse_answer_gets_its_head_at_the_first_heartbeat)
{
	int fd = t_dial();
	RUN_UNTIL(ep->nconns == 1);
	struct conn *c = t_quiet_stream();
	/* A long call: its SSE answer chosen, nothing written yet. */
	c->sse = true;
	c->sse_started = false;
	c->prime_pending = true;
	snprintf(c->prime_id, sizeof c->prime_id, "1-1");
	char buf[512];
	fake_now += EP_HEARTBEAT_MS - 1;
	ep_sweep(ep, clock_now_ms());
	uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_eq(t_recv(fd, buf, sizeof buf), 0,
		     "a quick answer: one write");
	fake_now += 1;
	ep_sweep(ep, clock_now_ms());
	RUN_UNTIL(t_recv(fd, buf, sizeof buf) > 0);
	cr_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0, "%s", buf);
	cr_assert_not_null(strstr(buf, "text/event-stream"), "%s", buf);
	cr_assert_not_null(strstr(buf, "id: 1-1"), "the priming event: %s",
			   buf);
	fake_now += EP_HEARTBEAT_MS;
	ep_sweep(ep, clock_now_ms());
	RUN_UNTIL(t_recv(fd, buf, sizeof buf) > 0);
	cr_assert_str_eq(buf, "6\r\n: hb\n\n\r\n");
	close(fd);
}

Test(endpoint, heartbeat_closes_a_stream_whose_peer_is_gone)
{
	/* Reading is stopped, so the reset is seen only by a write. */
	int fd = t_dial();
	RUN_UNTIL(ep->nconns == 1);
	t_quiet_stream();
	t_reset(fd);
	for (int i = 0; i < 3 && ep->nconns > 0; i++) {
		fake_now += EP_HEARTBEAT_MS;
		ep_sweep(ep, clock_now_ms());
		RUN_UNTIL(ep->conns == NULL || ep->conns->out.len == 0);
	}
	cr_assert_eq(ep->nconns, 0);
}

Test(endpoint, answer_paused_by_the_input_cap_is_closed_when_quiet)
{
	int fd = t_dial();
	RUN_UNTIL(ep->nconns == 1);
	struct conn *c = t_quiet_stream();
	c->sse_started = false; /* no heartbeats: the rule alone */
	c->paused_ms = fake_now;
	fake_now += T_IDLE_MS - 1;
	ep_sweep(ep, clock_now_ms());
	cr_assert_eq(ep->nconns, 1);
	fake_now += 1;
	ep_sweep(ep, clock_now_ms());
	cr_assert_eq(ep->nconns, 0);
	close(fd);
}

static size_t t_count(const char *s, const char *what)
{
	size_t n = 0;
	for (const char *p = s; (p = strstr(p, what)) != NULL; p++)
		n++;
	return n;
}

Test(endpoint, pipelined_batch_is_served_over_several_turns)
{
	/* The Unix socket: its peer is known at once (a TCP peer is
	 * looked up first, which spreads requests over turns anyway). */
	int fd = t_dial_unix();
	RUN_UNTIL(ep->nconns == 1);
	static char req[100 * 64], got[100 * 1024];
	size_t len = 0, have = 0;
	for (int i = 0; i < 100; i++)
		len += (size_t)snprintf(
			req + len, sizeof req - len,
			"GET /none HTTP/1.1\r\nHost: x\r\n\r\n");
	cr_assert_eq(send(fd, req, len, MSG_NOSIGNAL), (ssize_t)len);
	size_t answered = 0, most = 0;
	for (int turn = 0; turn < 4000 && answered < 100; turn++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		ssize_t n;
		while ((n = recv(fd, got + have, sizeof got - have - 1, 0)) > 0)
			have += (size_t)n;
		got[have] = '\0';
		size_t now = t_count(got, "HTTP/1.1 ");
		if (now - answered > most)
			most = now - answered;
		answered = now;
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
	cr_assert_eq(answered, 100);
	/* Not all in one turn (as before), and no more than the share. */
	cr_assert_lt(most, 100, "the whole batch answered in one turn");
	cr_assert_leq(most, EP_TURN_REQUESTS, "%zu answered in one turn", most);
	close(fd);
}

/* Output written from a timer (a heartbeat, an answer made in a timer)
 * goes out before the loop waits for events, not when something else
 * wakes it: the client's socket turns readable while the loop polls, long
 * before the guard. */
static bool t_readable, t_guard_fired;

static void t_readable_cb(uv_poll_t *p, int status, int events)
{
	t_readable = true;
	uv_poll_stop(p);
}

static void t_guard_cb(uv_timer_t *t)
{
	t_guard_fired = true;
}

static void t_write_later_cb(uv_timer_t *t)
{
	ep_write(t->data, "hello", 5);
}

/* Stops the runtime's own timers (sweeps), which would wake the loop. */
static void t_stop_timer(uv_handle_t *h, void *arg)
{
	if (h->type == UV_TIMER && h != arg)
		uv_timer_stop((uv_timer_t *)h);
}

Test(endpoint, output_written_from_a_timer_goes_before_the_loop_waits)
{
	int fd = t_dial();
	RUN_UNTIL(ep->nconns == 1);
	struct conn *c = t_quiet_stream();
	uv_poll_t p;
	cr_assert_eq(uv_poll_init(&loop, &p, fd), 0);
	uv_poll_start(&p, UV_READABLE, t_readable_cb);
	uv_timer_t w, guard;
	uv_timer_init(&loop, &guard);
	uv_walk(&loop, t_stop_timer, &guard);
	uv_timer_init(&loop, &w);
	w.data = c;
	uv_timer_start(&w, t_write_later_cb, 0, 0);
	uv_timer_start(&guard, t_guard_cb, 3000, 0);
	t_readable = t_guard_fired = false;
	while (!t_readable && !t_guard_fired)
		uv_run(&loop, UV_RUN_ONCE);
	cr_assert(t_readable && !t_guard_fired,
		  "the write waited for the next wake-up");
	char buf[64];
	cr_assert_eq(t_recv(fd, buf, sizeof buf), 5);
	uv_close((uv_handle_t *)&p, NULL);
	uv_close((uv_handle_t *)&w, NULL);
	uv_close((uv_handle_t *)&guard, NULL);
	close(fd);
}
