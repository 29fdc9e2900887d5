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

#include "transport/listener.h"

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
