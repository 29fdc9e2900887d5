/*
 * The relay's real operations (relay_ops) and its loop. The core decides;
 * this file only carries bytes and reports what happened.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <uv.h>

#include "http/httpc.h"
#include "jsonrpc/framer.h"
#include "mcpc/mcpc.h"
#include "relay/launch.h"
#include "relay/relay.h"
#include "relay/run.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/xmalloc.h"

/* What waits for the host to read before the relay stops reading the
 * runtime (the runtime then holds the rest, as a server does for it). */
#define RUN_HOST_QUEUE_MAX (16 * 1024 * 1024)

struct run {
	uv_loop_t *loop;
	const struct relay_run_opts *o;
	struct httpc *http;
	struct mcpc *mc;
	struct relay *core;
	struct launch *launch;
	struct framer *fr;
	uv_timer_t timer;
	uv_timer_t drain;
	uv_pipe_t in;
	/* The host's stdout: a stream when it is a pipe, socket or terminal
	 * (written without blocking, in order, whole lines); out_fd >= 0 for
	 * a file, written as it is. */
	union {
		uv_stream_t stream;
		uv_pipe_t pipe;
		uv_tty_t tty;
	} out;
	bool out_stream;
	bool out_paused; /* the runtime's session is paused for the host */
	struct httpc_req *ping;
	bool ping_answered;
	char *url; /* of the MCP endpoint, with ?space= */
	char *ping_url;
	char *auth;  /* Authorization line from MCPVISOR_API_KEY */
	int closing; /* mcpc closes still to come */
	bool eof;
};

static void run_check_end(struct run *u);

/* ---- the host ---- */

/* Writes all of v to a file (stdout that is no stream), as the kernel
 * takes it. */
static void run_write_all(struct iovec *v, int n)
{
	size_t left = 0;
	for (int i = 0; i < n; i++)
		left += v[i].iov_len;
	while (left > 0) {
		ssize_t k = writev(STDOUT_FILENO, v, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return; /* the host is gone; stdin's end follows */
		left -= (size_t)k;
		for (int i = 0; i < n && k > 0; i++) {
			size_t d = (size_t)k < v[i].iov_len ? (size_t)k
							    : v[i].iov_len;
			v[i].iov_base = (char *)v[i].iov_base + d;
			v[i].iov_len -= d;
			k -= (ssize_t)d;
		}
	}
}

static void run_out_pause(struct run *u, bool on)
{
	if (u->out_paused == on)
		return;
	u->out_paused = on;
	if (u->mc)
		mcpc_pause(u->mc, on);
}

static void run_out_written_cb(uv_write_t *w, int status)
{
	struct run *u = w->data;
	free(w);
	if (uv_stream_get_write_queue_size(&u->out.stream) <=
	    RUN_HOST_QUEUE_MAX / 2)
		run_out_pause(u, false);
	run_check_end(u);
}

/* One line for the host: never blocks the loop (a host slow to read must
 * not freeze the relay's watch), never cuts a line (what the kernel does
 * not take now is queued whole, in order). Past RUN_HOST_QUEUE_MAX queued,
 * the runtime's answers wait in the runtime. */
static void run_host_write(void *ctx, const char *msg, size_t len)
{
	struct run *u = ctx;
	struct iovec v[2] = {{(void *)msg, len}, {"\n", 1}};
	if (!u->out_stream) {
		run_write_all(v, 2);
		return;
	}
	size_t done = 0;
	if (uv_stream_get_write_queue_size(&u->out.stream) == 0) {
		uv_buf_t b[2] = {uv_buf_init((char *)msg, (unsigned)len),
				 uv_buf_init("\n", 1)};
		int k = uv_try_write(&u->out.stream, b, 2);
		if (k > 0)
			done = (size_t)k;
		else if (k < 0 && k != UV_EAGAIN)
			return; /* the host is gone; stdin's end follows */
	}
	if (done == len + 1)
		return;
	size_t rest = len + 1 - done;
	uv_write_t *w = xmalloc(sizeof *w + rest);
	char *copy = (char *)(w + 1);
	if (done < len) {
		memcpy(copy, msg + done, len - done);
		copy[len - done] = '\n';
	} else {
		copy[0] = '\n';
	}
	w->data = u;
	uv_buf_t b = uv_buf_init(copy, (unsigned)rest);
	if (uv_write(w, &u->out.stream, &b, 1, run_out_written_cb) < 0) {
		free(w);
		return;
	}
	if (uv_stream_get_write_queue_size(&u->out.stream) > RUN_HOST_QUEUE_MAX)
		run_out_pause(u, true);
}

/* stdout as a stream when it is one; else (a file) written as it is. */
static void run_out_open(struct run *u)
{
	uv_handle_type t = uv_guess_handle(STDOUT_FILENO);
	int rc = -1;
	if (t == UV_NAMED_PIPE || t == UV_TCP) {
		rc = uv_pipe_init(u->loop, &u->out.pipe, 0);
		if (rc == 0 &&
		    (rc = uv_pipe_open(&u->out.pipe, STDOUT_FILENO)) < 0)
			uv_close((uv_handle_t *)&u->out.pipe, NULL);
	} else if (t == UV_TTY) {
		rc = uv_tty_init(u->loop, &u->out.tty, STDOUT_FILENO, 0);
	}
	u->out_stream = rc == 0;
}

static bool run_out_busy(const struct run *u)
{
	return u->out_stream &&
	       uv_stream_get_write_queue_size(&u->out.stream) > 0;
}

static void run_host_line_cb(void *ctx, const char *line, size_t len)
{
	struct run *u = ctx;
	relay_host_line(u->core, line, len);
}

static void run_host_garbage_cb(void *ctx, const char *what)
{
	struct run *u = ctx;
	relay_host_garbage(u->core, what);
}

static void run_in_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	static char chunk[64 * 1024];
	b->base = chunk;
	b->len = sizeof chunk;
}

static void run_stop(struct run *u);

static void run_in_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct run *u = s->data;
	if (n > 0)
		framer_feed(u->fr, b->base, (size_t)n, run_host_line_cb,
			    run_host_garbage_cb, u);
	else if (n < 0)
		run_stop(u);
}

/* ---- the runtime session ---- */

static void run_link_message_cb(void *ctx, const char *msg, size_t len,
				int64_t related)
{
	struct run *u = ctx;
	relay_link_message(u->core, msg, len, related);
}

static void run_link_lost_cb(void *ctx, int64_t id, enum outbox_fact f)
{
	struct run *u = ctx;
	relay_link_lost(u->core, id, f);
}

static void run_link_heartbeat_cb(void *ctx)
{
	struct run *u = ctx;
	relay_link_heartbeat(u->core);
}

static void run_link_fault_cb(void *ctx, const struct mcpc_fault_info *f)
{
	struct run *u = ctx;
	enum relay_fault rf =
		f->kind == MCPC_FAULT_AUTH	 ? RELAY_FAULT_AUTH
		: f->kind == MCPC_FAULT_EXPIRED	 ? RELAY_FAULT_EXPIRED
		: f->kind == MCPC_FAULT_PROTOCOL ? RELAY_FAULT_BROKEN
						 : RELAY_FAULT_REFUSED;
	relay_link_fault(u->core, rf, f->text, f->facts, f->nfacts);
}

static void run_link_closed_cb(void *arg)
{
	struct run *u = arg;
	if (--u->closing == 0 && u->eof)
		uv_stop(u->loop);
}

static void run_link_close(void *ctx)
{
	struct run *u = ctx;
	if (u->mc == NULL)
		return;
	u->closing++;
	mcpc_close(u->mc, run_link_closed_cb, u);
	u->mc = NULL;
}

static int run_link_open(void *ctx)
{
	struct run *u = ctx;
	run_link_close(u);
	static const struct mcpc_cbs cbs = {
		.on_message = run_link_message_cb,
		.on_lost = run_link_lost_cb,
		.on_heartbeat = run_link_heartbeat_cb,
		.on_fault = run_link_fault_cb,
	};
	const char *hs[] = {u->auth, NULL};
	struct mcpc_opts mo = {
		.url = u->url,
		.headers = hs,
		.unix_socket = u->o->url ? NULL : launch_socket(u->launch),
		.mode = MCPC_STREAMABLE,
		.connect_timeout_ms = RELAY_PING_TIMEOUT_MS,
		/* The runtime answers 503 only to what it did not take
		 * (draining): such a request never ran. */
		.refuses_with_503 = true,
	};
	int rc = mcpc_new(u->http, &mo, &cbs, u, &u->mc);
	if (rc == 0 && u->out_paused)
		mcpc_pause(u->mc, true);
	return rc;
}

static int run_link_send(void *ctx, const char *msg, size_t len, int64_t id)
{
	struct run *u = ctx;
	return u->mc ? mcpc_send(u->mc, msg, len, id) : -EPIPE;
}

static int run_link_send_modern(void *ctx, const char *msg, size_t len,
				int64_t id)
{
	struct run *u = ctx;
	return u->mc ? mcpc_send_modern(u->mc, msg, len, id) : -EPIPE;
}

static void run_link_forget(void *ctx, int64_t id)
{
	struct run *u = ctx;
	if (u->mc)
		mcpc_forget(u->mc, id);
}

/* ---- the ping: any HTTP answer on a fresh connection ---- */

static bool run_ping_head_cb(void *ctx, struct httpc_req *r)
{
	struct run *u = ctx;
	u->ping_answered = true;
	return false;
}

static void run_ping_done_cb(void *ctx, struct httpc_req *r, int err,
			     const char *why)
{
	struct run *u = ctx;
	u->ping = NULL;
	relay_ping_done(u->core, u->ping_answered);
}

static void run_ping(void *ctx)
{
	struct run *u = ctx;
	if (u->ping)
		httpc_cancel(u->ping);
	u->ping = NULL;
	u->ping_answered = false;
	static const struct httpc_cbs cbs = {.on_head = run_ping_head_cb,
					     .on_done = run_ping_done_cb};
	struct httpc_opts ho = {
		.method = "GET",
		.url = u->ping_url,
		.unix_socket = u->o->url ? NULL : launch_socket(u->launch),
		.connect_timeout_ms = RELAY_PING_TIMEOUT_MS,
		.total_timeout_ms = RELAY_PING_TIMEOUT_MS,
	};
	/* A ping that cannot start is a ping not answered; the core's own
	 * timeout settles it. */
	httpc_start(u->http, &ho, &cbs, u, &u->ping);
}

/* ---- recovery ---- */

static void run_launched_cb(void *arg, const char *fail)
{
	struct run *u = arg;
	relay_recovered(u->core, fail);
}

static void run_recover(void *ctx, enum relay_loss why)
{
	struct run *u = ctx;
	if (u->o->url) {
		/* A runtime elsewhere is never started or stopped here. */
		char *t = why == RELAY_LOSS_NONE
				  ? NULL
				  : xasprintf("The runtime at %s does not "
					      "answer; start it, stop the "
					      "program on its port, or set "
					      "--url to where it listens",
					      u->o->url);
		relay_recovered(u->core, t);
		free(t);
		return;
	}
	launch_recover(u->launch, why);
}

static void run_timer_cb(uv_timer_t *t)
{
	struct run *u = t->data;
	relay_tick(u->core);
}

static void run_arm(void *ctx, uint64_t at)
{
	struct run *u = ctx;
	if (at == 0) {
		uv_timer_stop(&u->timer);
		return;
	}
	uint64_t now = clock_now_ms();
	uv_timer_start(&u->timer, run_timer_cb, at > now ? at - now : 0, 0);
}

static void run_end(struct run *u);

/* stdin ended: what is in flight is still answered (bounded by the
 * watch and the recovery cap), then the relay ends. */
static void run_drain_cb(uv_timer_t *t)
{
	struct run *u = t->data;
	if ((u->core && relay_pending(u->core) > 0) || run_out_busy(u))
		return;
	run_end(u);
}

/* stdin ended: once what is in flight is answered (bounded by the watch
 * and the recovery cap) and the host has taken every answer, the relay
 * ends (from the loop, never inside the core's call). */
static void run_check_end(struct run *u)
{
	if (u->eof && u->core && relay_pending(u->core) == 0 &&
	    !run_out_busy(u))
		uv_timer_start(&u->drain, run_drain_cb, 0, 0);
}

static void run_settled(void *ctx)
{
	run_check_end(ctx);
}

static void run_stop(struct run *u)
{
	if (u->eof)
		return;
	u->eof = true;
	uv_read_stop((uv_stream_t *)&u->in);
	run_check_end(u);
}

static void run_end(struct run *u)
{
	struct relay *core = u->core;
	u->core = NULL; /* what relay_free settles reaches no check */
	relay_free(core);
	if (u->ping)
		httpc_cancel(u->ping);
	u->ping = NULL;
	if (u->closing == 0)
		uv_stop(u->loop);
}

/* The space as a query value: every byte but the unreserved ones and
 * '/' percent-encoded. */
static char *run_space_query(const char *space)
{
	struct buf b;
	buf_init(&b);
	for (const char *p = space; *p; p++) {
		unsigned char c = (unsigned char)*p;
		char esc[4];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("-._~/", c))
			buf_append(&b, p, 1);
		else {
			snprintf(esc, sizeof esc, "%%%02X", c);
			buf_append(&b, esc, 3);
		}
	}
	buf_append(&b, "", 1);
	return b.data;
}

static const struct relay_ops run_ops = {
	.link_open = run_link_open,
	.link_send = run_link_send,
	.link_send_modern = run_link_send_modern,
	.link_forget = run_link_forget,
	.link_close = run_link_close,
	.ping = run_ping,
	.recover = run_recover,
	.host_write = run_host_write,
	.arm = run_arm,
	.settled = run_settled,
};

static void run_close_walk_cb(uv_handle_t *h, void *arg)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

int relay_run(const struct relay_run_opts *o)
{
	struct run u = {.o = o};
	/* A host that went away must end the relay through stdin's end, not
	 * a signal on the next write. */
	signal(SIGPIPE, SIG_IGN);
	u.loop = uv_default_loop();
	const char *why = NULL;
	u.http = httpc_new(u.loop, &why);
	if (u.http == NULL) {
		fprintf(stderr, "mcpvisor relay: %s\n", why);
		return 1;
	}
	char *q = run_space_query(o->space);
	if (o->url) {
		u.url = xasprintf("%s%sspace=%s", o->url,
				  strchr(o->url, '?') ? "&" : "?", q);
		/* The origin of the URL, for the ping. */
		const char *s = strstr(o->url, "://");
		const char *e = s ? strchr(s + 3, '/') : NULL;
		size_t n = e ? (size_t)(e - o->url) : strlen(o->url);
		u.ping_url = xasprintf("%.*s/status", (int)n, o->url);
	} else {
		u.url = xasprintf("http://localhost/mcp?space=%s", q);
		u.ping_url = xstrdup("http://localhost/status");
	}
	free(q);
	const char *key = getenv("MCPVISOR_API_KEY");
	if (key && key[0])
		u.auth = xasprintf("Authorization: Bearer %s", key);
	u.fr = framer_new(RELAY_MAX_LINE);
	uv_timer_init(u.loop, &u.timer);
	u.timer.data = &u;
	uv_timer_init(u.loop, &u.drain);
	u.drain.data = &u;
	u.launch = launch_new(u.loop, o->home, run_launched_cb, &u);
	u.core = relay_new(&run_ops, &u);
	if (uv_pipe_init(u.loop, &u.in, 0) < 0 ||
	    uv_pipe_open(&u.in, STDIN_FILENO) < 0) {
		fprintf(stderr, "mcpvisor relay: stdin must be a pipe\n");
		return 1;
	}
	u.in.data = &u;
	run_out_open(&u);
	uv_read_start((uv_stream_t *)&u.in, run_in_alloc_cb, run_in_read_cb);
	relay_start(u.core);
	uv_run(u.loop, UV_RUN_DEFAULT);
	/* stdin ended and the session's DELETE went (bounded by mcpc). */
	launch_free(u.launch);
	httpc_free(u.http);
	uv_walk(u.loop, run_close_walk_cb, NULL);
	uv_run(u.loop, UV_RUN_DEFAULT);
	uv_loop_close(u.loop);
	framer_free(u.fr);
	free(u.url);
	free(u.ping_url);
	free(u.auth);
	return 0;
}
