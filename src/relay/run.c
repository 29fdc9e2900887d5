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
	struct httpc_req *ping;
	bool ping_answered;
	char *url; /* of the MCP endpoint, with ?space= */
	char *ping_url;
	char *auth;  /* Authorization line from MCPVISOR_API_KEY */
	int closing; /* mcpc closes still to come */
	bool eof;
};

/* ---- the host ---- */

static void host_write(void *ctx, const char *msg, size_t len)
{
	struct iovec v[2] = {{(void *)msg, len}, {"\n", 1}};
	size_t left = len + 1;
	while (left > 0) {
		ssize_t n = writev(STDOUT_FILENO, v, 2);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* the host is gone; stdin's end follows */
		left -= (size_t)n;
		for (int i = 0; i < 2 && n > 0; i++) {
			size_t k = (size_t)n < v[i].iov_len ? (size_t)n
							    : v[i].iov_len;
			v[i].iov_base = (char *)v[i].iov_base + k;
			v[i].iov_len -= k;
			n -= (ssize_t)k;
		}
	}
}

static void on_line(void *ctx, const char *line, size_t len)
{
	struct run *u = ctx;
	relay_host_line(u->core, line, len);
}

static void on_garbage(void *ctx, const char *what)
{
	struct run *u = ctx;
	relay_host_garbage(u->core, what);
}

static void in_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	static char chunk[64 * 1024];
	b->base = chunk;
	b->len = sizeof chunk;
}

static void run_stop(struct run *u);

static void in_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct run *u = s->data;
	if (n > 0)
		framer_feed(u->fr, b->base, (size_t)n, on_line, on_garbage, u);
	else if (n < 0)
		run_stop(u);
}

/* ---- the runtime session ---- */

static void mc_message(void *ctx, const char *msg, size_t len, int64_t related)
{
	struct run *u = ctx;
	relay_link_message(u->core, msg, len, related);
}

static void mc_lost(void *ctx, int64_t id, bool sent)
{
	struct run *u = ctx;
	relay_link_lost(u->core, id, sent);
}

static void mc_heartbeat(void *ctx)
{
	struct run *u = ctx;
	relay_link_heartbeat(u->core);
}

static void mc_fault(void *ctx, enum mcpc_fault f, int status, const char *text,
		     const char *rm)
{
	struct run *u = ctx;
	enum relay_fault rf = f == MCPC_FAULT_AUTH	 ? RELAY_FAULT_AUTH
			      : f == MCPC_FAULT_EXPIRED	 ? RELAY_FAULT_EXPIRED
			      : f == MCPC_FAULT_PROTOCOL ? RELAY_FAULT_BROKEN
							 : RELAY_FAULT_REFUSED;
	relay_link_fault(u->core, rf, text);
}

static void mc_closed(void *arg)
{
	struct run *u = arg;
	if (--u->closing == 0 && u->eof)
		uv_stop(u->loop);
}

static void link_close(void *ctx)
{
	struct run *u = ctx;
	if (u->mc == NULL)
		return;
	u->closing++;
	mcpc_close(u->mc, mc_closed, u);
	u->mc = NULL;
}

static int link_open(void *ctx)
{
	struct run *u = ctx;
	link_close(u);
	static const struct mcpc_cbs cbs = {
		.on_message = mc_message,
		.on_lost = mc_lost,
		.on_heartbeat = mc_heartbeat,
		.on_fault = mc_fault,
	};
	const char *hs[] = {u->auth, NULL};
	struct mcpc_opts mo = {
		.url = u->url,
		.headers = hs,
		.unix_socket = u->o->url ? NULL : launch_socket(u->launch),
		.mode = MCPC_STREAMABLE,
		.connect_timeout_ms = RELAY_PING_TIMEOUT_MS,
	};
	return mcpc_new(u->http, &mo, &cbs, u, &u->mc);
}

static int link_send(void *ctx, const char *msg, size_t len, int64_t id)
{
	struct run *u = ctx;
	return u->mc ? mcpc_send(u->mc, msg, len, id) : -EPIPE;
}

static void link_forget(void *ctx, int64_t id)
{
	struct run *u = ctx;
	if (u->mc)
		mcpc_forget(u->mc, id);
}

/* ---- the ping: any HTTP answer on a fresh connection ---- */

static bool ping_head(void *ctx, struct httpc_req *r)
{
	struct run *u = ctx;
	u->ping_answered = true;
	return false;
}

static void ping_done(void *ctx, struct httpc_req *r, int err, const char *why)
{
	struct run *u = ctx;
	u->ping = NULL;
	relay_ping_done(u->core, u->ping_answered);
}

static void ping(void *ctx)
{
	struct run *u = ctx;
	if (u->ping)
		httpc_cancel(u->ping);
	u->ping = NULL;
	u->ping_answered = false;
	static const struct httpc_cbs cbs = {.on_head = ping_head,
					     .on_done = ping_done};
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

static void launched(void *arg, const char *fail)
{
	struct run *u = arg;
	relay_recovered(u->core, fail);
}

static void recover(void *ctx, enum relay_loss why)
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

static void timer_cb(uv_timer_t *t)
{
	struct run *u = t->data;
	relay_tick(u->core);
}

static void arm(void *ctx, uint64_t at)
{
	struct run *u = ctx;
	if (at == 0) {
		uv_timer_stop(&u->timer);
		return;
	}
	uint64_t now = clock_now_ms();
	uv_timer_start(&u->timer, timer_cb, at > now ? at - now : 0, 0);
}

static void run_end(struct run *u);

/* stdin ended: what is in flight is still answered (bounded by the
 * watch and the recovery cap), then the relay ends. */
static void drain_cb(uv_timer_t *t)
{
	struct run *u = t->data;
	if (u->core && relay_pending(u->core) > 0)
		return;
	uv_timer_stop(t);
	run_end(u);
}

static void run_stop(struct run *u)
{
	if (u->eof)
		return;
	u->eof = true;
	uv_read_stop((uv_stream_t *)&u->in);
	uv_timer_start(&u->drain, drain_cb, 0, 20);
}

static void run_end(struct run *u)
{
	relay_free(u->core);
	u->core = NULL;
	if (u->ping)
		httpc_cancel(u->ping);
	u->ping = NULL;
	if (u->closing == 0)
		uv_stop(u->loop);
}

/* The space as a query value: every byte but the unreserved ones and
 * '/' percent-encoded. */
static char *space_query(const char *space)
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
	.link_open = link_open,
	.link_send = link_send,
	.link_forget = link_forget,
	.link_close = link_close,
	.ping = ping,
	.recover = recover,
	.host_write = host_write,
	.arm = arm,
};

static void close_walk(uv_handle_t *h, void *arg)
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
	char *q = space_query(o->space);
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
	u.launch = launch_new(u.loop, o->home, launched, &u);
	u.core = relay_new(&run_ops, &u);
	if (uv_pipe_init(u.loop, &u.in, 0) < 0 ||
	    uv_pipe_open(&u.in, STDIN_FILENO) < 0) {
		fprintf(stderr, "mcpvisor relay: stdin must be a pipe\n");
		return 1;
	}
	u.in.data = &u;
	uv_read_start((uv_stream_t *)&u.in, in_alloc, in_read);
	relay_start(u.core);
	uv_run(u.loop, UV_RUN_DEFAULT);
	/* stdin ended and the session's DELETE went (bounded by mcpc). */
	launch_free(u.launch);
	httpc_free(u.http);
	uv_walk(u.loop, close_walk, NULL);
	uv_run(u.loop, UV_RUN_DEFAULT);
	uv_loop_close(u.loop);
	framer_free(u.fr);
	free(u.url);
	free(u.ping_url);
	free(u.auth);
	return 0;
}
