/*
 * Unit tests for what the local HTTP upstream decides before it speaks
 * MCP: the {port} template, the loopback rule for its url, the listeners
 * read from /proc/net/tcp text, and the proof of who holds a listening
 * socket (this process, a child in its own group, a child carrying an
 * owner token, or a stranger).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ports/listener.h"
#include "ports/ports.h"
#include "transport/upstream.h"

Test(listener, subst_replaces_every_template)
{
	struct {
		const char *in, *out;
	} cases[] = {
		{"http://127.0.0.1:{port}/mcp", "http://127.0.0.1:4123/mcp"},
		{"{port}", "4123"},
		{"{port}{port}", "41234123"},
		{"--port={port} --x={port}", "--port=4123 --x=4123"},
		{"no template", "no template"},
		{"{port", "{port"},
		{"", ""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *got = listener_subst(cases[i].in, 4123);
		cr_assert_str_eq(got, cases[i].out, "case %zu", i);
		free(got);
	}
}

Test(listener, url_must_name_a_loopback_host)
{
	struct {
		const char *url;
		int rc;
	} cases[] = {
		{"http://127.0.0.1:{port}/mcp", 0},
		{"http://127.0.0.1:8080", 0},
		{"http://localhost:1/mcp", 0},
		{"http://LocalHost:1/mcp", 0},
		{"http://[::1]:9/mcp", 0},
		{"https://127.0.0.1/mcp", 0},
		{"http://user:pw@127.0.0.1:1/mcp", 0},
		{"http://127.0.0.1?q=1", 0},
		{"http://10.0.0.1:1/mcp", -EPERM},
		{"http://example.com/mcp", -EPERM},
		{"http://127.0.0.1.example.com/mcp", -EPERM},
		{"http://localhost.evil:1/", -EPERM},
		{"http://127.0.0.1@evil.com/", -EPERM},
		{"http://[::2]:1/", -EPERM},
		{"http://0.0.0.0:1/", -EPERM},
		{"ftp://127.0.0.1/", -EINVAL},
		{"http:///mcp", -EINVAL},
		{"http://[::1/mcp", -EINVAL},
		{"127.0.0.1:1", -EINVAL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		cr_assert_eq(listener_url_loopback(cases[i].url), cases[i].rc,
			     "%s", cases[i].url);
}

/* An address as /proc/net/tcp prints it: 32-bit words in host order. */
static void tst_hex(const uint8_t *a, size_t len, char *out)
{
	for (size_t w = 0; w < len / 4; w++) {
		uint32_t v;
		memcpy(&v, a + w * 4, 4);
		sprintf(out + w * 8, "%08X", v);
	}
}

static void tst_line(char *out, size_t size, int sl, const uint8_t *a,
		     size_t alen, int port, int state, unsigned long inode)
{
	char hex[33];
	tst_hex(a, alen, hex);
	snprintf(
		out, size,
		"%4d: %s:%04X %s:0000 %02X 00000000:00000000 00:00000000 "
		"00000000  1000        0 %lu 1 0000000000000000 100 0 0 10 0\n",
		sl, hex, port,
		alen == 4 ? "00000000"
			  : "0000000000000000"
			    "0000000000000000",
		state, inode);
}

Test(listener, parse_keeps_reachable_listeners_on_the_port)
{
	static const uint8_t lo[4] = {127, 0, 0, 1}, any[4] = {0},
			     other[4] = {127, 0, 0, 2}, lan[4] = {10, 1, 2, 3};
	char text[4096] =
		"  sl  local_address rem_address   st tx_queue "
		"rx_queue tr tm->when retrnsmt   uid  timeout inode\n";
	char line[512];
	tst_line(line, sizeof line, 0, lo, 4, 4123, 0x0A, 111);
	strcat(text, line);
	tst_line(line, sizeof line, 1, any, 4, 4123, 0x0A, 222);
	strcat(text, line);
	tst_line(line, sizeof line, 2, other, 4, 4123, 0x0A, 333);
	strcat(text, line);
	tst_line(line, sizeof line, 3, lan, 4, 4123, 0x0A, 444);
	strcat(text, line);
	tst_line(line, sizeof line, 4, lo, 4, 4124, 0x0A, 555);
	strcat(text, line);
	tst_line(line, sizeof line, 5, lo, 4, 4123, 0x01, 666); /* ESTAB */
	strcat(text, line);
	strcat(text, "garbage line\n   7: zz:zz\n");
	uint64_t inodes[8];
	size_t n = 0;
	listener_parse_proc_net(text, strlen(text), false, 4123, inodes, 8, &n);
	cr_assert_eq(n, 2);
	cr_assert_eq(inodes[0], 111);
	cr_assert_eq(inodes[1], 222);

	static const uint8_t lo6[16] = {[15] = 1}, any6[16] = {0},
			     mapped[16] = {[10] = 0xff, [11] = 0xff, 127,
					   0,		0,	     1},
			     two6[16] = {[15] = 2};
	char text6[4096] = "header\n";
	tst_line(line, sizeof line, 0, lo6, 16, 4123, 0x0A, 701);
	strcat(text6, line);
	tst_line(line, sizeof line, 1, any6, 16, 4123, 0x0A, 702);
	strcat(text6, line);
	tst_line(line, sizeof line, 2, mapped, 16, 4123, 0x0A, 703);
	strcat(text6, line);
	tst_line(line, sizeof line, 3, two6, 16, 4123, 0x0A, 704);
	strcat(text6, line);
	n = 0;
	listener_parse_proc_net(text6, strlen(text6), true, 4123, inodes, 8,
				&n);
	cr_assert_eq(n, 3);
	cr_assert_eq(inodes[2], 703);

	/* Bounded by max. */
	n = 0;
	listener_parse_proc_net(text6, strlen(text6), true, 4123, inodes, 1,
				&n);
	cr_assert_eq(n, 1);
}

/* A listening socket on 127.0.0.1 (inherited by children we exec). */
static int tst_listen(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	cr_assert_eq(listen(fd, 4), 0);
	socklen_t len = sizeof sa;
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

/* A child in its own session and group that holds fd (and nothing of
 * ours otherwise), with MCPVISOR_OWNER=token in its environment. */
static pid_t tst_holder(int fd, const char *token)
{
	int ready[2];
	cr_assert_eq(pipe(ready), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		setsid();
		close(ready[0]);
		char env[128];
		snprintf(env, sizeof env, "MCPVISOR_OWNER=%s", token);
		char *envp[] = {env, NULL};
		/* fd stays open across exec; the pipe closes there, which is
		 * how the parent knows the exec (and its environ) is done. */
		fcntl(ready[1], F_SETFD, FD_CLOEXEC);
		(void)fd;
		char *argv[] = {"sleep", "30", NULL};
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	close(ready[1]);
	char c;
	while (read(ready[0], &c, 1) > 0)
		;
	close(ready[0]);
	return pid;
}

static void tst_reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

Test(listener, sock_diag_and_proc_find_the_same_listeners)
{
	/* One listener on 127.0.0.1 and one on ::1, same port; a connected
	 * socket on it too, which is no listener. */
	int port = 0;
	int v4 = tst_listen(&port);
	int v6 = socket(AF_INET6, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(v6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6,
				  .sin6_port = htons((uint16_t)port),
				  .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	bool have_v6 = bind(v6, (struct sockaddr *)&sa, sizeof sa) == 0 &&
		       listen(v6, 4) == 0;
	int cl = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in to = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert_eq(connect(cl, (struct sockaddr *)&to, sizeof to), 0);

	static const int families[] = {AF_INET, AF_INET6};
	for (size_t i = 0; i < 2; i++) {
		uint64_t a[8], b[8];
		size_t na = 0, nb = 0;
		int rc = listener_diag(families[i], port, a, 8, &na);
		if (rc < 0)
			cr_skip_test("no sock_diag here: %s", strerror(-rc));
		listener_proc(families[i], port, b, 8, &nb);
		size_t want = families[i] == AF_INET ? 1 : (have_v6 ? 1 : 0);
		cr_assert_eq(na, want, "family %d: %zu from sock_diag",
			     families[i], na);
		cr_assert_eq(nb, want, "family %d: %zu from /proc", families[i],
			     nb);
		if (want)
			cr_assert_eq(a[0], b[0], "not the same socket");
	}
	close(cl);
	close(v6);
	close(v4);
}

Test(listener, owner_is_nobody_until_someone_listens)
{
	int port = 0;
	int fd = tst_listen(&port);
	close(fd);
	cr_assert_eq(listener_owner(port, getuid(), getpgrp(), "MCPVISOR_OWNER",
				    NULL),
		     LISTENER_NONE);
}

Test(listener, owner_by_group)
{
	int port = 0;
	int fd = tst_listen(&port);
	/* This process, in its group: ours. Another group: a stranger. */
	cr_assert_eq(listener_owner(port, getuid(), getpgrp(), "MCPVISOR_OWNER",
				    NULL),
		     LISTENER_OURS);
	cr_assert_eq(listener_owner(port, getuid(), 1, "MCPVISOR_OWNER", NULL),
		     LISTENER_OTHER);
	/* Another user's processes are never ours. */
	cr_assert_eq(listener_owner(port, getuid() + 1, getpgrp(),
				    "MCPVISOR_OWNER", NULL),
		     LISTENER_OTHER);
	close(fd);
}

Test(listener, owner_by_token_outside_the_group)
{
	int port = 0;
	int fd = tst_listen(&port);
	pid_t child = tst_holder(fd, "tok-abc123");
	close(fd); /* only the child holds it now */
	cr_assert_eq(listener_owner(port, getuid(), getpgrp(), "MCPVISOR_OWNER",
				    "tok-abc123"),
		     LISTENER_OURS);
	cr_assert_eq(
		listener_owner(port, getuid(), child, "MCPVISOR_OWNER", NULL),
		LISTENER_OURS);
	/* A squatter: neither our group nor our token. */
	cr_assert_eq(listener_owner(port, getuid(), getpgrp(), "MCPVISOR_OWNER",
				    "tok-other"),
		     LISTENER_OTHER);
	cr_assert_eq(listener_owner(port, getuid(), getpgrp(), "MCPVISOR_OWNER",
				    NULL),
		     LISTENER_OTHER);
	tst_reap(child);
}

Test(listener, one_stranger_among_listeners_is_enough)
{
	/* Ours on ::1, a stranger on 127.0.0.1, same port: a connection
	 * to 127.0.0.1 would reach the stranger. */
	int port = 0;
	int v4 = tst_listen(&port);
	pid_t child = tst_holder(v4, "tok-stranger");
	close(v4);
	int v6 = socket(AF_INET6, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(v6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6,
				  .sin6_port = htons((uint16_t)port),
				  .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	if (bind(v6, (struct sockaddr *)&sa, sizeof sa) < 0) {
		tst_reap(child);
		close(v6);
		cr_skip_test("no ::1 on this host");
	}
	cr_assert_eq(listen(v6, 4), 0);
	cr_assert_eq(listener_owner(port, getuid(), getpgrp(), "MCPVISOR_OWNER",
				    NULL),
		     LISTENER_OTHER);
	tst_reap(child);
	cr_assert_eq(listener_owner(port, getuid(), getpgrp(), "MCPVISOR_OWNER",
				    NULL),
		     LISTENER_OURS);
	close(v6);
}

/* A port taken, as servers and engines say it; and a container's name
 * taken, which is no port at all (a new port would meet the same name). */
Test(listener, says_addr_in_use_of_a_port_only)
{
	static const char *const port[] = {
		"Error: listen EADDRINUSE: address already in use :::4123",
		"listen tcp 127.0.0.1:4123: bind: address already in use",
		"OSError: [Errno 98] Address already in use",
		"Error: Address already in use (os error 98)",
		"java.net.BindException: Address already in use",
		"Error: cannot listen on the TCP port: listen tcp4 "
		"127.0.0.1:4123: bind: address already in use",
		"docker: Error response from daemon: driver failed programming "
		"external connectivity on endpoint x: Bind for "
		"127.0.0.1:4123 failed: port is already allocated.",
		/* server-everything's own words */
		"Failed to start: Port 4123 is already in use. Set PORT to a "
		"free port or stop the conflicting process.",
	};
	static const char *const other[] = {
		"Error: creating container storage: the container name "
		"\"mcpv-x\" is already in use by 5d98. You have to remove that "
		"container to be able to reuse that name: that name is already "
		"in use",
		"docker: Error response from daemon: Conflict. The container "
		"name \"/mcpv-x\" is already in use by container \"5d98\". You "
		"have to remove (or rename) that container to be able to reuse "
		"that name.",
		"listening on 127.0.0.1:4123",
	};
	for (size_t i = 0; i < sizeof port / sizeof *port; i++)
		cr_assert(listener_says_addr_in_use(port[i], strlen(port[i])),
			  "%s", port[i]);
	for (size_t i = 0; i < sizeof other / sizeof *other; i++)
		cr_assert_not(
			listener_says_addr_in_use(other[i], strlen(other[i])),
			"%s", other[i]);
}

/* ---- the local upstream before its server listens, on a real loop ---- */

#define TST_GUARD_MS 8000

struct tst_up {
	uv_loop_t loop;
	uv_timer_t guard;
	struct upstream *u;
	int nfault;
	enum upstream_fault_kind kind;
	int64_t exit_status;
	char text[256];
	int nclosed;
	int live, gone;
	int port;
	pid_t pid;
	pid_t squatter;
	bool squat; /* take the port when it is handed out */
	int64_t lost[4];
	bool lost_sent[4];
	int nlost;
	char logs[1024];
	bool closed_after_fault;
};

static pid_t tst_live_squatter;

static void tst_up_fini(void)
{
	if (tst_live_squatter > 0) {
		kill(tst_live_squatter, SIGKILL);
		waitpid(tst_live_squatter, NULL, 0);
	}
	tst_live_squatter = 0;
}

TestSuite(up_local, .fini = tst_up_fini, .timeout = 30);

static void tst_up_message(void *ctx, const char *m, size_t n, int64_t rel)
{
}

static void tst_up_lost(void *ctx, int64_t id, enum outbox_fact f)
{
	struct tst_up *t = ctx;
	if (t->nlost < 4) {
		t->lost[t->nlost] = id;
		t->lost_sent[t->nlost++] = f == OUTBOX_CUT;
	}
}

static void tst_up_log(void *ctx, const char *line, size_t len)
{
	struct tst_up *t = ctx;
	size_t have = strlen(t->logs);
	if (have + len + 2 < sizeof t->logs) {
		memcpy(t->logs + have, line, len);
		t->logs[have + len] = '\n';
		t->logs[have + len + 1] = '\0';
	}
}

static void tst_up_fault(void *ctx, const struct upstream_fault *f)
{
	struct tst_up *t = ctx;
	t->nfault++;
	t->kind = f->kind;
	t->exit_status = f->exit_status;
	snprintf(t->text, sizeof t->text, "%s", f->text ? f->text : "");
}

static void tst_up_owned(void *ctx, const struct upstream_owned *o, bool live)
{
	struct tst_up *t = ctx;
	cr_assert_eq(o->kind, UPSTREAM_OWNED_PROCESS);
	cr_assert_gt(o->port, 0);
	if (!live) {
		cr_assert_eq(o->pid, t->pid);
		t->gone++;
		return;
	}
	t->live++;
	t->port = o->port;
	t->pid = o->pid;
	if (!t->squat)
		return;
	/* Another program takes the port between allocation and bind. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)o->port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	cr_assert_eq(listen(fd, 4), 0);
	t->squatter = tst_holder(fd, "not-ours");
	tst_live_squatter = t->squatter;
	close(fd);
}

static void tst_up_closed(void *ctx)
{
	struct tst_up *t = ctx;
	t->nclosed++;
	t->closed_after_fault = t->nfault > 0;
	t->u = NULL;
	uv_stop(&t->loop);
}

static const struct upstream_cbs tst_up_cbs = {
	.on_message = tst_up_message,
	.on_lost = tst_up_lost,
	.on_log = tst_up_log,
	.on_fault = tst_up_fault,
	.on_owned = tst_up_owned,
	.on_closed = tst_up_closed,
};

static void tst_up_guard_cb(uv_timer_t *timer)
{
	cr_assert_fail("timed out after %d ms", TST_GUARD_MS);
}

/* Never used before the server listens; these tests stop earlier. */
static char tst_no_http;

/* Opens a local upstream for command (args, env) with url and runs the
 * loop until on_closed. stop_at_once: stop right after open. */
static void tst_up_run(struct tst_up *t, const char *command, char **args,
		       size_t nargs, struct config_kv *env, size_t nenv,
		       const char *url, uint64_t startup_ms, bool stop_at_once)
{
	uv_loop_init(&t->loop);
	uv_timer_init(&t->loop, &t->guard);
	uv_timer_start(&t->guard, tst_up_guard_cb, TST_GUARD_MS, 0);
	struct server_config s = {
		.name = "local",
		.kind = SERVER_HTTP_LOCAL,
		.command = (char *)command,
		.args = args,
		.nargs = nargs,
		.env = env,
		.nenv = nenv,
		.url = (char *)url,
		.startup_timeout_ms = (int64_t)startup_ms,
	};
	/* Each test its own token: a ladder stops every process that
	 * carries its token, and tests run side by side. */
	char token[40];
	snprintf(token, sizeof token, "tst%d", (int)getpid());
	struct upstream_spec spec = {
		.server = &s,
		.token = token,
		.http = (struct httpc *)&tst_no_http,
		.startup_timeout_ms = startup_ms,
		/* Stopping at once: a program whose stdin is /dev/null
		 * gets SIGTERM without waiting for it. A grace longer than
		 * the guard makes such a wait a failure, with no bound on
		 * how fast a busy machine must be. */
		.stop_grace_ms = stop_at_once ? 2 * TST_GUARD_MS : 300,
	};
	int rc = upstream_http_local.open(&t->loop, &spec, &tst_up_cbs, t,
					  &t->u);
	cr_assert_eq(rc, 0, "open: %s", strerror(-rc));
	if (stop_at_once) {
		const char *msg = "{\"jsonrpc\":\"2.0\",\"id\":1}";
		cr_assert_eq(
			upstream_http_local.send(t->u, msg, strlen(msg), 1), 0);
		upstream_http_local.stop(t->u);
		upstream_http_local.stop(t->u); /* idempotent */
		cr_assert_eq(t->nclosed, 0, "on_closed inside stop");
	}
	uv_run(&t->loop, UV_RUN_DEFAULT);
	cr_assert_eq(t->nclosed, 1);
	uv_close((uv_handle_t *)&t->guard, NULL);
	uv_run(&t->loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&t->loop), 0, "handles left open");
	if (t->port > 0)
		cr_assert_not(ports_is_reserved(ports_default(), t->port),
			      "port %d still reserved", t->port);
}

static bool tst_alive(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return false;
	char buf[512];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *rp = strrchr(buf, ')');
	return rp && rp[2] != 'Z' && rp[2] != 'X';
}

Test(up_local, a_squatter_on_the_port_is_a_lost_port_and_left_alone)
{
	struct tst_up t = {.squat = true};
	char *args[] = {"30"};
	tst_up_run(&t, "/bin/sleep", args, 1, NULL, 0,
		   "http://127.0.0.1:{port}/mcp", 5000, false);
	cr_assert_eq(t.nfault, 1);
	cr_assert_eq(t.kind, UPSTREAM_LOST_PORT, "%s", t.text);
	cr_assert(strstr(t.text, "another program") != NULL, "%s", t.text);
	cr_assert_eq(t.live, 1);
	cr_assert_eq(t.gone, 1, "our server was not stopped");
	cr_assert(t.closed_after_fault);
	cr_assert_not(tst_alive(t.pid));
	cr_assert(tst_alive(t.squatter), "the squatter was signalled");
	tst_up_fini();
}

Test(up_local, eaddrinuse_in_its_output_is_a_lost_port)
{
	struct tst_up t = {0};
	char *args[] = {"-c",
			"echo \"Error: listen EADDRINUSE: address already in "
			"use :::$0\" >&2; exit 1",
			"{port}"};
	tst_up_run(&t, "/bin/sh", args, 3, NULL, 0,
		   "http://localhost:{port}/mcp", 5000, false);
	cr_assert_eq(t.kind, UPSTREAM_LOST_PORT, "%s", t.text);
	char want[64];
	snprintf(want, sizeof want, ":::%d", t.port);
	cr_assert(strstr(t.logs, want) != NULL, "logs: %s", t.logs);
	cr_assert_eq(t.gone, 1);
}

/* The engine's "name ... is already in use" (exit 125) is a failed start
 * with its line, not a lost port to start again on another. */
Test(up_local, a_container_name_in_use_is_an_exit_not_a_lost_port)
{
	struct tst_up t = {0};
	char *args[] = {
		"-c", "echo 'Error: creating container storage: the "
		      "container name \"mcpv-x\" is already in use by 5d98. "
		      "You have to remove that container to be able to reuse "
		      "that name: that name is already in use' >&2; exit 125"};
	tst_up_run(&t, "/bin/sh", args, 2, NULL, 0,
		   "http://127.0.0.1:{port}/mcp", 5000, false);
	cr_assert_eq(t.kind, UPSTREAM_EXITED, "%s", t.text);
	cr_assert_eq(t.exit_status, 125, "%s", t.text);
	cr_assert_eq(t.gone, 1);
}

Test(up_local, an_exit_before_listening_is_an_exit)
{
	struct tst_up t = {0};
	char *args[] = {"-c", "sleep 0.2; exit 3"};
	tst_up_run(&t, "/bin/sh", args, 2, NULL, 0,
		   "http://127.0.0.1:{port}/mcp", 5000, false);
	cr_assert_eq(t.kind, UPSTREAM_EXITED, "%s", t.text);
	cr_assert_eq(t.exit_status, 3, "%s", t.text);
	cr_assert_eq(t.gone, 1);
}

Test(up_local, what_waits_for_the_port_is_settled_by_the_fault)
{
	struct tst_up t = {0};
	char *args[] = {"-c", "sleep 0.3; exit 1"};
	struct server_config s = {
		.name = "local",
		.kind = SERVER_HTTP_LOCAL,
		.command = "/bin/sh",
		.args = args,
		.nargs = 2,
		.url = "http://127.0.0.1:{port}/mcp",
	};
	uv_loop_init(&t.loop);
	uv_timer_init(&t.loop, &t.guard);
	uv_timer_start(&t.guard, tst_up_guard_cb, TST_GUARD_MS, 0);
	struct upstream_spec spec = {
		.server = &s,
		.http = (struct httpc *)&tst_no_http,
		.startup_timeout_ms = 5000,
	};
	cr_assert_eq(
		upstream_http_local.open(&t.loop, &spec, &tst_up_cbs, &t, &t.u),
		0);
	const char *req = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"x\"}";
	const char *note = "{\"jsonrpc\":\"2.0\",\"method\":\"y\"}";
	cr_assert_eq(upstream_http_local.send(t.u, req, strlen(req), 7), 0);
	cr_assert_eq(upstream_http_local.send(t.u, note, strlen(note), 0), 0);
	const char *gone = "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"x\"}";
	cr_assert_eq(upstream_http_local.send(t.u, gone, strlen(gone), 8), 0);
	upstream_http_local.forget(t.u, 8); /* cancelled: no on_lost */
	uv_run(&t.loop, UV_RUN_DEFAULT);
	cr_assert_eq(t.kind, UPSTREAM_EXITED);
	/* A fault settles nothing: no on_lost (the instance settles). */
	cr_assert_eq(t.nlost, 0);
	uv_close((uv_handle_t *)&t.guard, NULL);
	uv_run(&t.loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&t.loop), 0);
}

Test(up_local, a_url_off_the_loopback_is_refused_before_spawning)
{
	struct tst_up t = {0};
	char *args[] = {"30"};
	tst_up_run(&t, "/bin/sleep", args, 1, NULL, 0,
		   "http://10.1.2.3:{port}/mcp", 5000, false);
	cr_assert_eq(t.nfault, 1);
	cr_assert_eq(t.kind, UPSTREAM_PROTOCOL);
	cr_assert(strstr(t.text, "loopback") != NULL, "%s", t.text);
	cr_assert_eq(t.live, 0, "spawned anyway");
}

Test(up_local, a_server_that_never_listens_times_out)
{
	struct tst_up t = {0};
	char *args[] = {"30"};
	tst_up_run(&t, "/bin/sleep", args, 1, NULL, 0,
		   "http://127.0.0.1:{port}/mcp", 300, false);
	cr_assert_eq(t.kind, UPSTREAM_TIMEOUT, "%s", t.text);
	cr_assert_eq(t.gone, 1);
	cr_assert_not(tst_alive(t.pid));
}

Test(up_local, stop_before_listening_stops_the_program_quietly)
{
	struct tst_up t = {0};
	char *args[] = {"30"};
	tst_up_run(&t, "/bin/sleep", args, 1, NULL, 0,
		   "http://127.0.0.1:{port}/mcp", 5000, true);
	cr_assert_eq(t.nfault, 0);
	cr_assert_eq(t.live, 1);
	cr_assert_eq(t.gone, 1);
	cr_assert_not(tst_alive(t.pid));
}

Test(up_local, the_port_reaches_args_and_env)
{
	struct tst_up t = {0};
	char *args[] = {"-c", "echo \"arg=$0 env=$MY_PORT\"; exit 0", "{port}"};
	struct config_kv env[] = {{"MY_PORT", "p{port}"}};
	tst_up_run(&t, "/bin/sh", args, 3, env, 1,
		   "http://127.0.0.1:{port}/mcp", 5000, false);
	char want[64];
	snprintf(want, sizeof want, "arg=%d env=p%d", t.port, t.port);
	cr_assert(strstr(t.logs, want) != NULL, "logs: %s", t.logs);
	cr_assert_eq(t.kind, UPSTREAM_EXITED);
}

/* Many local servers opened at once on one loop (none listens): each
 * gets its own port, reserved until it is gone. */
#define TST_MANY 24

struct tst_many {
	int ports[TST_MANY];
	int nowned, ngone, nclosed;
};

static void tst_many_owned(void *ctx, const struct upstream_owned *o, bool live)
{
	struct tst_many *m = ctx;
	if (live)
		m->ports[m->nowned++] = o->port;
	else
		m->ngone++;
}

static void tst_many_closed(void *ctx)
{
	((struct tst_many *)ctx)->nclosed++;
}

static void tst_many_fault(void *ctx, const struct upstream_fault *f)
{
	cr_assert_fail("fault: %s", f->text);
}

Test(up_local, concurrent_starts_get_distinct_ports)
{
	static const struct upstream_cbs cbs = {
		.on_message = tst_up_message,
		.on_lost = tst_up_lost,
		.on_fault = tst_many_fault,
		.on_owned = tst_many_owned,
		.on_closed = tst_many_closed,
	};
	uv_loop_t loop;
	uv_loop_init(&loop);
	char *args[] = {"30"};
	struct server_config s = {
		.name = "many",
		.kind = SERVER_HTTP_LOCAL,
		.command = "/bin/sleep",
		.args = args,
		.nargs = 1,
		.url = "http://127.0.0.1:{port}/mcp",
	};
	char token[40];
	snprintf(token, sizeof token, "tst%d", (int)getpid());
	struct upstream_spec spec = {
		.server = &s,
		.token = token,
		.http = (struct httpc *)&tst_no_http,
		.startup_timeout_ms = 20000,
	};
	struct tst_many m = {0};
	struct upstream *ups[TST_MANY];
	for (int i = 0; i < TST_MANY; i++)
		cr_assert_eq(upstream_http_local.open(&loop, &spec, &cbs, &m,
						      &ups[i]),
			     0);
	cr_assert_eq(m.nowned, TST_MANY);
	for (int i = 0; i < TST_MANY; i++) {
		cr_assert(ports_is_reserved(ports_default(), m.ports[i]));
		for (int j = 0; j < i; j++)
			cr_assert_neq(m.ports[i], m.ports[j],
				      "starts %d and %d", i, j);
	}
	/* Let them probe a while, then stop them all. */
	uv_run(&loop, UV_RUN_NOWAIT);
	for (int i = 0; i < TST_MANY; i++)
		upstream_http_local.stop(ups[i]);
	while (m.nclosed < TST_MANY)
		uv_run(&loop, UV_RUN_ONCE);
	cr_assert_eq(m.ngone, TST_MANY);
	cr_assert_eq(ports_count(ports_default()), 0);
	cr_assert_eq(uv_loop_close(&loop), 0);
}
