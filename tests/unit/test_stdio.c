/*
 * Unit tests for the stdio transport on real processes (/bin/sh scripts):
 * echo, stderr ring, exit reporting, command lookup, env and cwd, the stop
 * ladder against servers and grandchildren that ignore SIGTERM, /proc start
 * times and the exec step. Each test runs its own loop under a guard timer.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "proc/procfs.h"
#include "proc/supervisor.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define TST_GUARD_MS 5000
#define TST_GRACE_MS 200
#define TST_MAX_MSGS 2048

struct tst {
	uv_loop_t loop;
	uv_timer_t guard;
	struct supervisor *conn;
	pid_t pid;
	pid_t extra_pid; /* a grandchild whose pid the script printed */
	char *msgs[TST_MAX_MSGS];
	int nmsgs;
	int ngarbage;
	int nexit;
	int nclosed;
	int64_t exit_status;
	int term_signal;
	int msgs_at_exit;
	char *tail_all; /* stderr tails taken inside on_exit */
	char *tail_few;
	char *tail_none;
	int send_at_exit; /* sup_send's answer inside on_exit */
	int stop_at_exit; /* call sup_stop from on_exit */
	uint64_t t_stop;
	uint64_t t_closed;
	uint64_t grace_ms;	 /* for the next spawn; 0: TST_GRACE_MS */
	int nstderr;		 /* lines through on_stderr */
	char first_stderr[64];	 /* the first of them */
	const char *want_stderr; /* a line to count in nwanted */
	int nwanted;
	int noverlong;
	char overlong_head[32];
	/* Called on each message, for tests that react to one. */
	void (*on_msg)(struct tst *t, const char *msg);
};

/* What a test started, until it has seen it gone: a test that fails
 * half-way leaves nothing running (the suite's fini kills these). */
static pid_t tst_live_group;
static pid_t tst_live_extra;

static void tst_kill_leftovers(void)
{
	if (tst_live_group > 0)
		kill(-tst_live_group, SIGKILL);
	if (tst_live_extra > 0)
		kill(tst_live_extra, SIGKILL);
	tst_live_group = tst_live_extra = 0;
}

TestSuite(stdio, .fini = tst_kill_leftovers);

static void tst_guard_cb(uv_timer_t *timer)
{
	tst_kill_leftovers();
	cr_assert_fail("timed out after %d ms", TST_GUARD_MS);
}

static void tst_init(struct tst *t)
{
	memset(t, 0, sizeof *t);
	/* Orphaned grandchildren come to us, so the ladder can reap them
	 * whatever pid 1 does. */
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	signal(SIGPIPE, SIG_IGN);
	if (getenv("TST_DEBUG"))
		log_set_level(LOG_DEBUG);
	cr_assert_eq(uv_loop_init(&t->loop), 0);
	uv_timer_init(&t->loop, &t->guard);
	t->guard.data = t;
	uv_timer_start(&t->guard, tst_guard_cb, TST_GUARD_MS, 0);
	uv_unref((uv_handle_t *)&t->guard);
	t->exit_status = -42;
	t->term_signal = -42;
}

static void tst_fini(struct tst *t)
{
	tst_live_group = tst_live_extra = 0;
	uv_close((uv_handle_t *)&t->guard, NULL);
	uv_run(&t->loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&t->loop), 0, "handles left open");
	for (int i = 0; i < t->nmsgs; i++)
		free(t->msgs[i]);
	free(t->tail_all);
	free(t->tail_few);
	free(t->tail_none);
}

static void tst_on_message(void *ctx, const char *line, size_t len)
{
	struct tst *t = ctx;

	cr_assert_lt(t->nmsgs, TST_MAX_MSGS);
	t->msgs[t->nmsgs] = xmalloc(len + 1);
	memcpy(t->msgs[t->nmsgs], line, len);
	t->msgs[t->nmsgs++][len] = '\0';
	if (t->on_msg != NULL)
		t->on_msg(t, t->msgs[t->nmsgs - 1]);
}

static void tst_on_garbage(void *ctx, const char *what)
{
	struct tst *t = ctx;

	t->ngarbage++;
}

static void tst_on_exit(void *ctx, int64_t exit_status, int term_signal)
{
	struct tst *t = ctx;

	t->nexit++;
	t->exit_status = exit_status;
	t->term_signal = term_signal;
	t->msgs_at_exit = t->nmsgs;
	free(t->tail_all);
	free(t->tail_few);
	free(t->tail_none);
	t->tail_all = sup_log_tail(t->conn, 1000);
	t->tail_few = sup_log_tail(t->conn, 4);
	t->tail_none = sup_log_tail(t->conn, 0);
	t->send_at_exit = sup_send(t->conn, "{}", 2);
	if (t->stop_at_exit)
		sup_stop(t->conn);
}

static void tst_on_closed(void *ctx)
{
	struct tst *t = ctx;

	cr_assert_eq(t->nexit, 1, "on_closed before on_exit");
	t->nclosed++;
	t->t_closed = uv_now(&t->loop);
}

static void tst_on_stderr(void *ctx, const char *line, size_t len)
{
	struct tst *t = ctx;

	if (t->nstderr++ == 0)
		snprintf(t->first_stderr, sizeof t->first_stderr, "%.*s",
			 (int)len, line);
	if (t->want_stderr != NULL && strlen(t->want_stderr) == len &&
	    memcmp(t->want_stderr, line, len) == 0)
		t->nwanted++;
}

static void tst_on_overlong(void *ctx, const char *head, size_t head_len,
			    const char *tail, size_t tail_len)
{
	struct tst *t = ctx;

	t->noverlong++;
	snprintf(t->overlong_head, sizeof t->overlong_head, "%.*s",
		 (int)head_len, head);
}

static const struct sup_cbs tst_cbs = {
	.on_log = tst_on_stderr,
	.on_overlong = tst_on_overlong,
	.on_message = tst_on_message,
	.on_garbage = tst_on_garbage,
	.on_exit = tst_on_exit,
	.on_closed = tst_on_closed,
};

static int tst_spawn_full(struct tst *t, const char *command, char *const *args,
			  char *const *env, const char *cwd)
{
	struct sup_spec o = {
		.command = command,
		.args = args,
		.env = env,
		.cwd = cwd,
		.stop_grace_ms = t->grace_ms ? t->grace_ms : TST_GRACE_MS,
	};
	int err = sup_spawn(&t->loop, &o, &tst_cbs, t, &t->conn);
	if (err == 0) {
		t->pid = sup_pid(t->conn);
		tst_live_group = t->pid;
	} else
		cr_assert_null(t->conn);
	return err;
}

static void tst_spawn_sh(struct tst *t, const char *script)
{
	char *args[] = {"-c", (char *)script, NULL};

	cr_assert_eq(tst_spawn_full(t, "sh", args, NULL, NULL), 0);
	cr_assert_gt(t->pid, 0);
}

/* A loop with nothing left to wait for returns at once, and its guard
 * timer (unreferenced) never fires: that is a failure, not a spin. */
static void tst_run_until(struct tst *t, const int *counter, int want)
{
	while (*counter < want)
		cr_assert(uv_run(&t->loop, UV_RUN_ONCE) != 0 ||
				  *counter >= want,
			  "nothing left to wait for: %d of %d callbacks",
			  *counter, want);
}

static void tst_stop(struct tst *t)
{
	t->t_stop = uv_now(&t->loop);
	sup_stop(t->conn);
}

static int tst_gone(pid_t pid)
{
	return kill(pid, 0) == -1 && errno == ESRCH;
}

/* The test process has no child left: nothing was spawned or all was
 * reaped. */
static int tst_no_children(void)
{
	int st;
	return waitpid(-1, &st, WNOHANG) == -1 && errno == ECHILD;
}

Test(stdio, echo_through_cat)
{
	struct tst t;

	tst_init(&t);
	cr_assert_eq(tst_spawn_full(&t, "cat", NULL, NULL, NULL), 0);
	cr_assert_neq(sup_start_time(t.conn), 0);
	cr_assert_eq(sup_start_time(t.conn), procfs_start_time(t.pid));
	cr_assert_eq(getpgid(t.pid), t.pid, "not its own group leader");
	cr_assert_eq(getsid(t.pid), t.pid, "not its own session");

	const char *m1 = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
	cr_assert_eq(sup_send(t.conn, m1, strlen(m1)), 0);
	/* Pretty-printed JSON stays one line. */
	const char *m2 = "{\n  \"id\": 2\r\n}";
	cr_assert_eq(sup_send(t.conn, m2, strlen(m2)), 0);
	tst_run_until(&t, &t.nmsgs, 2);
	cr_assert_str_eq(t.msgs[0], m1);
	cr_assert_str_eq(t.msgs[1], "{   \"id\": 2  }");

	/* A burst arrives whole and in order. */
	for (int i = 0; i < 1000; i++) {
		char m[64];
		int n = snprintf(m, sizeof m, "{\"id\":%d}", i + 3);
		cr_assert_eq(sup_send(t.conn, m, (size_t)n), 0);
	}
	tst_run_until(&t, &t.nmsgs, 1002);
	for (int i = 0; i < 1000; i++) {
		char m[64];
		snprintf(m, sizeof m, "{\"id\":%d}", i + 3);
		cr_assert_str_eq(t.msgs[i + 2], m);
	}

	tst_stop(&t);
	cr_assert_eq(sup_send(t.conn, "{}", 2), -EPIPE);
	sup_stop(t.conn); /* twice is fine */
	tst_run_until(&t, &t.nclosed, 1);
	cr_assert_eq(t.nexit, 1);
	cr_assert_eq(t.exit_status, 0);
	cr_assert_eq(t.term_signal, 0);
	cr_assert_eq(t.send_at_exit, -EPIPE);
	cr_assert_eq(t.ngarbage, 0);
	cr_assert(tst_gone(t.pid));
	tst_fini(&t);
	cr_assert(tst_no_children());
}

Test(stdio, garbage_reported_and_skipped)
{
	struct tst t;

	tst_init(&t);
	tst_spawn_sh(&t, "printf '\\377\\n{\"ok\":1}\\n'; exec cat");
	tst_run_until(&t, &t.nmsgs, 1);
	cr_assert_str_eq(t.msgs[0], "{\"ok\":1}");
	cr_assert_eq(t.ngarbage, 1);
	tst_stop(&t);
	tst_run_until(&t, &t.nclosed, 1);
	cr_assert_eq(t.nmsgs, 1);
	tst_fini(&t);
}

Test(stdio, stderr_ring_keeps_last_lines)
{
	struct tst t;

	tst_init(&t);
	/* 60 lines, a 600-byte line, one that is not UTF-8, a partial one;
	 * then a message just before exit, which must come before on_exit. */
	tst_spawn_sh(&t, "i=0; while [ $i -lt 60 ]; do echo line$i >&2; "
			 "i=$((i+1)); done; printf '%0600d\\n' 0 >&2; "
			 "printf '\\377bad\\r\\n' >&2; printf partial >&2; "
			 "echo '{\"last\":1}'; exit 3");
	tst_run_until(&t, &t.nclosed, 1);
	cr_assert_eq(t.exit_status, 3);
	cr_assert_eq(t.term_signal, 0);
	cr_assert_eq(t.msgs_at_exit, 1, "message lost or late");
	cr_assert_str_eq(t.msgs[0], "{\"last\":1}");

	struct buf want;
	buf_init(&want);
	buf_puts(&want, "line59\n");
	for (int i = 0; i < SUP_LOG_LINE_MAX; i++)
		buf_puts(&want, "0");
	buf_puts(&want, "\n?bad\npartial");
	cr_assert_str_eq(t.tail_few, want.data);
	buf_free(&want);

	cr_assert_str_eq(t.tail_none, "");
	/* 63 lines went in; the ring kept the last 50: line13 onwards. */
	cr_assert(strncmp(t.tail_all, "line13\nline14\n", 14) == 0, "%.20s",
		  t.tail_all);
	int nl = 0;
	for (const char *p = t.tail_all; *p; p++)
		nl += *p == '\n';
	cr_assert_eq(nl, SUP_LOG_LINES - 1);
	tst_fini(&t);
}

Test(stdio, stderr_lines_and_oversize_lines_reach_the_owner)
{
	struct tst t;

	tst_init(&t);
	tst_spawn_sh(&t, "echo 'boom: missing API_KEY' >&2; echo two >&2; "
			 "printf '{\"id\":3,\"result\":\"'; "
			 "head -c 17000000 /dev/zero | tr '\\0' x; "
			 "echo '\"}'; echo '{\"after\":1}'; exit 0");
	tst_run_until(&t, &t.nclosed, 1);
	cr_assert_eq(t.nstderr, 2);
	cr_assert_str_eq(t.first_stderr, "boom: missing API_KEY");
	cr_assert_eq(t.noverlong, 1);
	cr_assert_eq(strncmp(t.overlong_head, "{\"id\":3,\"result\":\"xx", 20),
		     0, "%s", t.overlong_head);
	cr_assert_eq(t.nmsgs, 1);
	cr_assert_str_eq(t.msgs[0], "{\"after\":1}");
	tst_fini(&t);
}

Test(stdio, stderr_pending_at_exit_is_read_first)
{
	struct tst t;
	siginfo_t si;

	tst_init(&t);
	/* 150 KB in the leader's last write: more than libuv reads in one
	 * loop turn, less than the socket holds, so it exits at once. */
	tst_spawn_sh(&t, "f=$(mktemp); exec 4>$f 3<$f; rm $f; "
			 "{ head -c 150000 /dev/zero | tr '\\0' z; echo; "
			 "echo last-line; printf partial; } >&4; "
			 "exec cat <&3 >&2");
	/* Let the exit and all the output be pending in the same turn (the
	 * zombie stays for libuv to reap). */
	cr_assert_eq(waitid(P_PID, (id_t)t.pid, &si, WEXITED | WNOWAIT), 0);
	tst_run_until(&t, &t.nclosed, 1);
	cr_assert_eq(t.exit_status, 0);

	struct buf want;
	buf_init(&want);
	for (int i = 0; i < SUP_LOG_LINE_MAX; i++)
		buf_puts(&want, "z");
	buf_puts(&want, "\nlast-line\npartial");
	cr_assert_str_eq(t.tail_few, want.data);
	buf_free(&want);
	tst_fini(&t);
}

Test(stdio, exit_by_signal_reported)
{
	struct tst t;

	tst_init(&t);
	t.stop_at_exit = 1; /* allowed from on_exit */
	tst_spawn_sh(&t, "kill -9 $$");
	tst_run_until(&t, &t.nclosed, 1);
	cr_assert_eq(t.nexit, 1);
	cr_assert_eq(t.term_signal, SIGKILL);
	cr_assert_eq(t.send_at_exit, -EPIPE);
	cr_assert(tst_gone(t.pid));
	tst_fini(&t);
}

Test(stdio, missing_command_spawns_nothing)
{
	struct tst t;
	char *bad_path_env[] = {"PATH=/nonexistent-mcpv", NULL};
	char tmpl[] = "/tmp/mcpv-stdio-XXXXXX";

	tst_init(&t);
	cr_assert_eq(tst_spawn_full(&t, "mcpv-no-such-command-xyz", NULL, NULL,
				    NULL),
		     -ENOENT);
	cr_assert_eq(
		tst_spawn_full(&t, "/nonexistent/mcpv/x", NULL, NULL, NULL),
		-ENOENT);
	/* The lookup uses the child's PATH, not ours. */
	cr_assert_eq(tst_spawn_full(&t, "sh", NULL, bad_path_env, NULL),
		     -ENOENT);
	cr_assert_eq(tst_spawn_full(&t, "", NULL, NULL, NULL), -ENOENT);
	/* Not executable, or not a file. */
	cr_assert_not_null(mkdtemp(tmpl));
	char *file = xasprintf("%s/plain", tmpl);
	int fd = open(file, O_WRONLY | O_CREAT, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(tst_spawn_full(&t, file, NULL, NULL, NULL), -EACCES);
	cr_assert_eq(tst_spawn_full(&t, tmpl, NULL, NULL, NULL), -EACCES);
	cr_assert(tst_no_children());
	unlink(file);
	rmdir(tmpl);
	free(file);

	/* A cwd that does not exist fails inside uv_spawn: handles are
	 * released without on_closed. */
	cr_assert_eq(tst_spawn_full(&t, "/bin/sh", NULL, NULL,
				    "/nonexistent-mcpv-dir"),
		     -ENOENT);
	uv_run(&t.loop, UV_RUN_NOWAIT);
	cr_assert_eq(t.nclosed, 0);
	cr_assert_eq(t.nexit, 0);
	tst_fini(&t);
	cr_assert(tst_no_children());
}

Test(stdio, env_and_cwd_applied)
{
	struct tst t;
	char tmpl[] = "/tmp/mcpv-stdio-XXXXXX";
	/* env is laid over ours; the owner variable is never the config's
	 * nor ours. */
	char *env[] = {"FOO=bar baz", "PATH=/usr/bin:/bin",
		       "MCPVISOR_OWNER=forged", NULL};
	char *args[] = {
		"-c",
		"printf '%s|%s|%s|%s\\n' \"$FOO\" \"$(pwd -P)\" "
		"\"${TST_INHERITED-unset}\" \"${MCPVISOR_OWNER-unset}\"",
		NULL};
	setenv("TST_INHERITED", "ours", 1);
	setenv("MCPVISOR_OWNER", "the-runtime-s", 1);

	tst_init(&t);
	cr_assert_not_null(mkdtemp(tmpl));
	char real[PATH_MAX];
	cr_assert_not_null(realpath(tmpl, real));

	cr_assert_eq(tst_spawn_full(&t, "sh", args, env, tmpl), 0);
	tst_run_until(&t, &t.nclosed, 1);
	unsetenv("TST_INHERITED");
	unsetenv("MCPVISOR_OWNER");
	char *want = xasprintf("bar baz|%s|ours|unset", real);
	cr_assert_eq(t.nmsgs, 1);
	cr_assert_str_eq(t.msgs[0], want);
	free(want);

	/* A relative command is found relative to the child's cwd. */
	char *srv = xasprintf("%s/srv", tmpl);
	FILE *f = fopen(srv, "w");
	cr_assert_not_null(f);
	fputs("#!/bin/sh\necho '{\"rel\":1}'\n", f);
	fclose(f);
	chmod(srv, 0755);
	struct tst t2;
	tst_init(&t2);
	cr_assert_eq(tst_spawn_full(&t2, "./srv", NULL, env, tmpl), 0);
	tst_run_until(&t2, &t2.nclosed, 1);
	cr_assert_eq(t2.nmsgs, 1);
	cr_assert_str_eq(t2.msgs[0], "{\"rel\":1}");
	tst_fini(&t2);

	unlink(srv);
	free(srv);
	rmdir(tmpl);
	tst_fini(&t);
}

Test(stdio, stop_well_behaved_needs_no_signal)
{
	struct tst t;

	tst_init(&t);
	cr_assert_eq(tst_spawn_full(&t, "cat", NULL, NULL, NULL), 0);
	cr_assert_eq(sup_send(t.conn, "[1]", 3), 0);
	tst_run_until(&t, &t.nmsgs, 1);
	tst_stop(&t);
	tst_run_until(&t, &t.nclosed, 1);
	/* cat ended at its stdin's end, before any signal. */
	cr_assert_eq(t.exit_status, 0);
	cr_assert_eq(t.term_signal, 0);
	cr_assert(tst_gone(t.pid));
	tst_fini(&t);
}

static void tst_stop_on_msg(struct tst *t, const char *msg)
{
	if (strcmp(msg, "\"ready\"") == 0)
		tst_stop(t);
}

Test(stdio, stop_server_ignoring_term_and_eof)
{
	struct tst t;

	tst_init(&t);
	t.on_msg = tst_stop_on_msg;
	tst_spawn_sh(
		&t,
		"trap '' TERM; echo '\"ready\"'; while :; do sleep 1; done");
	tst_run_until(&t, &t.nclosed, 1);
	uint64_t took = t.t_closed - t.t_stop;
	/* stdin EOF, then SIGTERM, then SIGKILL, a grace period apart. */
	cr_assert_geq(took, 2 * TST_GRACE_MS - 10, "took %llu ms",
		      (unsigned long long)took);
	cr_assert_eq(t.term_signal, SIGKILL);
	cr_assert(tst_gone(t.pid));
	cr_assert(tst_gone(-t.pid), "group still there");
	tst_fini(&t);
	cr_assert(tst_no_children());
}

static void tst_note_grandchild(struct tst *t, const char *msg)
{
	t->extra_pid = (pid_t)atoi(msg);
	tst_live_extra = t->extra_pid;
	cr_assert_gt(t->extra_pid, 1);
	tst_stop(t);
}

Test(stdio, stop_kills_grandchild_ignoring_term)
{
	struct tst t;

	tst_init(&t);
	t.on_msg = tst_note_grandchild;
	/* The leader exits on stdin EOF; the grandchild prints its pid once
	 * it ignores SIGTERM, and keeps our stdout open. */
	tst_spawn_sh(&t, "sh -c 'trap \"\" TERM; echo $$; "
			 "while :; do sleep 1; done' & exec cat >/dev/null");
	tst_run_until(&t, &t.nclosed, 1);
	uint64_t took = t.t_closed - t.t_stop;
	cr_assert_eq(t.exit_status, 0, "the leader should exit on EOF");
	cr_assert_eq(t.term_signal, 0);
	/* SIGTERM (ignored), SIGKILL a grace later; that the SIGTERM comes
	 * as soon as the leader leaves is the next test. */
	cr_assert_geq(took, TST_GRACE_MS - 10, "took %llu ms",
		      (unsigned long long)took);
	cr_assert(tst_gone(t.pid));
	cr_assert(tst_gone(t.extra_pid), "grandchild %d survived",
		  (int)t.extra_pid);
	cr_assert(tst_gone(-t.pid), "group still there");
	tst_fini(&t);
	cr_assert(tst_no_children());
}

Test(stdio, stop_sigterms_the_group_as_soon_as_the_leader_leaves)
{
	struct tst t;

	tst_init(&t);
	t.on_msg = tst_note_grandchild;
	/* The leader exits on stdin EOF; the grandchild ends on SIGTERM. A
	 * grace period longer than the guard makes a wait before that
	 * SIGTERM a failure, with no bound on how fast the machine is. */
	t.grace_ms = 60 * 1000;
	tst_spawn_sh(&t, "sh -c 'trap \"exit 0\" TERM; echo $$; "
			 "while :; do sleep 1; done' & exec cat >/dev/null");
	tst_run_until(&t, &t.nclosed, 1);
	cr_assert_eq(t.exit_status, 0, "the leader should exit on EOF");
	cr_assert(tst_gone(t.pid));
	cr_assert(tst_gone(t.extra_pid), "grandchild %d survived",
		  (int)t.extra_pid);
	cr_assert(tst_gone(-t.pid), "group still there");
	tst_fini(&t);
	cr_assert(tst_no_children());
}

static void tst_release_leader(struct tst *t, const char *msg)
{
	t->extra_pid = (pid_t)atoi(msg);
	tst_live_extra = t->extra_pid;
	cr_assert_gt(t->extra_pid, 1);
	cr_assert_eq(sup_send(t->conn, "{}", 2), 0);
}

Test(stdio, exit_alone_still_cleans_group)
{
	struct tst t;

	tst_init(&t);
	t.on_msg = tst_release_leader;
	/* The leader exits on its own and leaves a grandchild behind; no
	 * stop is ever called. */
	tst_spawn_sh(&t, "sh -c 'trap \"\" TERM; echo $$; "
			 "while :; do sleep 1; done' & read x; exit 5");
	tst_run_until(&t, &t.nclosed, 1);
	cr_assert_eq(t.exit_status, 5);
	cr_assert_eq(t.nexit, 1);
	cr_assert(tst_gone(t.pid));
	cr_assert(tst_gone(t.extra_pid), "grandchild %d survived",
		  (int)t.extra_pid);
	tst_fini(&t);
	cr_assert(tst_no_children());
}

Test(stdio, stdout_closed_while_running)
{
	struct tst t;

	tst_init(&t);
	/* It ignores its stdin, and says when SIGTERM came (sh also says
	 * its sleep was terminated). */
	t.want_stderr = "term";
	tst_spawn_sh(&t, "exec >&-; trap 'echo term >&2; exit 0' TERM; "
			 "while :; do sleep 1; done");
	tst_run_until(&t, &t.nexit, 1);
	cr_assert_eq(t.exit_status, -1);
	cr_assert_eq(t.send_at_exit, -EPIPE);
	tst_run_until(&t, &t.nclosed, 1);
	/* The ladder ran without a stop: stdin's end, then SIGTERM, which
	 * ended it. */
	cr_assert_eq(t.nwanted, 1, "%d lines on stderr, the first: %s",
		     t.nstderr, t.first_stderr);
	cr_assert(tst_gone(t.pid));
	tst_fini(&t);
}

Test(stdio, send_backpressure_and_cancel)
{
	struct tst t;
	size_t big = SUP_MAX_LINE;

	tst_init(&t);
	/* Never reads stdin. */
	tst_spawn_sh(&t, "exec sleep 5");
	char *m = xmalloc(big);
	memset(m, 'x', big);
	int err = 0;
	int sent = 0;
	for (int i = 0; i < 8 && err == 0; i++) {
		err = sup_send(t.conn, m, big);
		sent += err == 0;
	}
	cr_assert_eq(err, -ENOBUFS);
	cr_assert_geq(sent, 3);
	free(m);
	tst_stop(&t);
	tst_run_until(&t, &t.nclosed, 1);
	cr_assert(tst_gone(t.pid));
	tst_fini(&t);
}

Test(stdio, proc_start_time_values)
{
	cr_assert_neq(procfs_start_time(getpid()), 0);
	cr_assert_eq(procfs_start_time(0), 0);
	cr_assert_eq(procfs_start_time(-1), 0);
	cr_assert_eq(procfs_start_time(INT_MAX), 0);
}

Test(stdio, proc_start_time_survives_odd_comm)
{
	int to_child[2], to_parent[2];
	char c = 0;

	cr_assert_eq(pipe(to_child), 0);
	cr_assert_eq(pipe(to_parent), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (read(to_child[0], &c, 1) != 1)
			_exit(1);
		prctl(PR_SET_NAME, "a) 1 2 (3 4) 5");
		if (write(to_parent[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	uint64_t before = procfs_start_time(pid);
	cr_assert_eq(write(to_child[1], &c, 1), 1);
	cr_assert_eq(read(to_parent[0], &c, 1), 1);
	uint64_t after = procfs_start_time(pid);

	char path[64], comm[64] = {0};
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	int fd = open(path, O_RDONLY);
	ssize_t n = read(fd, comm, sizeof comm - 1);
	close(fd);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);

	cr_assert_gt(n, 0);
	cr_assert_str_eq(comm, "a) 1 2 (3 4) 5\n");
	cr_assert_neq(before, 0);
	cr_assert_eq(after, before);
	cr_assert_geq(before, procfs_start_time(getpid()));
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);
}

Test(stdio, exec_shim_is_spawned)
{
	struct tst t;
	char tmpl[] = "/tmp/mcpv-stdio-XXXXXX";

	cr_assert_not_null(mkdtemp(tmpl));
	char *shim = xasprintf("%s/shim", tmpl);
	FILE *f = fopen(shim, "w");
	cr_assert_not_null(f);
	/* Stands in for `mcpvisor __exec PARENT_PID COMMAND ARGS`. */
	fputs("#!/bin/sh\n[ \"$1\" = __exec ] || exit 126\n"
	      "[ \"$2\" = \"$PPID\" ] || exit 125\nshift 2\nexec \"$@\"\n",
	      f);
	fclose(f);
	chmod(shim, 0755);
	sup_set_exec_shim(shim);

	tst_init(&t);
	cr_assert_eq(tst_spawn_full(&t, "mcpv-no-such-command-xyz", NULL, NULL,
				    NULL),
		     -ENOENT);
	cr_assert(tst_no_children());
	tst_spawn_sh(&t, "echo '\"shimmed\"'; exit 4");
	tst_run_until(&t, &t.nclosed, 1);
	cr_assert_eq(t.exit_status, 4);
	cr_assert_eq(t.nmsgs, 1);
	cr_assert_str_eq(t.msgs[0], "\"shimmed\"");
	tst_fini(&t);

	sup_set_exec_shim(NULL);
	unlink(shim);
	rmdir(tmpl);
	free(shim);
}

/* Runs sup_exec_main in a child; returns its wait status. err_out (if
 * not NULL) gets the child's stderr. */
static int tst_exec_main(char **argv, int argc, char *err_out, size_t cap)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(p[1], 2);
		close(p[0]);
		_exit(sup_exec_main(argc, argv));
	}
	close(p[1]);
	size_t len = 0;
	ssize_t n;
	while (len + 1 < cap &&
	       (n = read(p[0], err_out + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	err_out[len] = '\0';
	close(p[0]);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return st;
}

Test(stdio, exec_main_paths)
{
	char me[32], err[512];
	snprintf(me, sizeof me, "%d", (int)getpid());

	char *ok[] = {"mcpvisor", "__exec", me,	 "/bin/sh",
		      "-c",	  "exit 7", NULL};
	int st = tst_exec_main(ok, 6, err, sizeof err);
	cr_assert(WIFEXITED(st));
	cr_assert_eq(WEXITSTATUS(st), 7);

	/* Looked up in PATH like execvp. */
	char *path[] = {"mcpvisor", "__exec", me, "sh", "-c", "exit 8", NULL};
	st = tst_exec_main(path, 6, err, sizeof err);
	cr_assert_eq(WEXITSTATUS(st), 8);

	char *missing[] = {"mcpvisor", "__exec", me, "mcpv-no-such-xyz", NULL};
	st = tst_exec_main(missing, 4, err, sizeof err);
	cr_assert_eq(WEXITSTATUS(st), 127);
	cr_assert_not_null(strstr(err, "cannot run mcpv-no-such-xyz"), "%s",
			   err);

	char *orphan[] = {"mcpvisor", "__exec", "1", "/bin/true", NULL};
	st = tst_exec_main(orphan, 4, err, sizeof err);
	cr_assert_eq(WEXITSTATUS(st), 127);
	cr_assert_not_null(strstr(err, "gone"), "%s", err);

	char *bad[] = {"mcpvisor", "__exec", "12x", "/bin/true", NULL};
	st = tst_exec_main(bad, 4, err, sizeof err);
	cr_assert_eq(WEXITSTATUS(st), 127);

	char *few[] = {"mcpvisor", "__exec", me, NULL};
	st = tst_exec_main(few, 3, err, sizeof err);
	cr_assert_eq(WEXITSTATUS(st), 127);
}

Test(stdio, exec_main_dies_with_parent)
{
	int ready[2], report[2];

	/* The orphan comes back to us once its parent is gone. */
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
	cr_assert_eq(pipe(report), 0);
	pid_t mid = fork();
	cr_assert_geq(mid, 0);
	if (mid == 0) {
		char me[32];
		snprintf(me, sizeof me, "%d", (int)getpid());
		pid_t server = fork();
		if (server == 0) {
			char *argv[] = {"mcpvisor", "__exec", me,
					"sleep",    "5",      NULL};
			_exit(sup_exec_main(5, argv));
		}
		close(ready[1]);
		char c;
		/* EOF once the exec closed the CLOEXEC end. */
		if (read(ready[0], &c, 1) != 0)
			_exit(1);
		if (write(report[1], &server, sizeof server) != sizeof server)
			_exit(1);
		_exit(0);
	}
	close(ready[0]);
	close(ready[1]);
	close(report[1]);
	pid_t server = 0;
	cr_assert_eq(read(report[0], &server, sizeof server), sizeof server);
	close(report[0]);
	int st;
	cr_assert_eq(waitpid(mid, &st, 0), mid);
	cr_assert_eq(waitpid(server, &st, 0), server);
	cr_assert(WIFSIGNALED(st), "server outlived its parent");
	cr_assert_eq(WTERMSIG(st), SIGKILL);
}
