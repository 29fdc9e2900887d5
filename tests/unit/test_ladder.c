/*
 * Unit tests for the stop ladder's reach beyond the process group: a
 * server's child that called setsid() is found by the owner token in its
 * environment and stopped (SIGTERM, then SIGKILL when it ignores that), and
 * reaped when it comes to us as subreaper; a process with another token or
 * none is never touched. Real /bin/sh servers, one loop per test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "proc/procfs.h"
#include "proc/supervisor.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define TST_GUARD_MS 8000
#define TST_GRACE_MS 200
#define TST_TOKEN "0123456789abcdef0123456789abcdef"
#define TST_OTHER "fedcba9876543210fedcba9876543210"

struct tst {
	uv_loop_t loop;
	uv_timer_t guard;
	struct supervisor *conn;
	pid_t pid;
	pid_t stray; /* the pid the script printed */
	int nexit;
	int nclosed;
	uint64_t t_stop;
	uint64_t t_closed;
	uint64_t grace_ms; /* 0: TST_GRACE_MS */
	int turns;	   /* loop turns from the stop to on_closed */
};

/* Started by a test and not yet seen gone: killed by pid at fini. */
static pid_t tst_live[3];

static void tst_kill_leftovers(void)
{
	for (size_t i = 0; i < sizeof tst_live / sizeof *tst_live; i++) {
		if (tst_live[i] > 0)
			kill(tst_live[i], SIGKILL);
		tst_live[i] = 0;
	}
}

TestSuite(ladder, .fini = tst_kill_leftovers, .timeout = 30);

static void tst_guard_cb(uv_timer_t *timer)
{
	tst_kill_leftovers();
	cr_assert_fail("timed out after %d ms", TST_GUARD_MS);
}

static void tst_on_message(void *ctx, const char *line, size_t len)
{
	struct tst *t = ctx;
	if (t->stray == 0) {
		t->stray = (pid_t)atoi(line);
		tst_live[1] = t->stray;
	}
}

static void tst_on_garbage(void *ctx, const char *what)
{
}

static void tst_on_exit(void *ctx, int64_t exit_status, int term_signal)
{
	struct tst *t = ctx;
	t->nexit++;
}

static void tst_on_closed(void *ctx)
{
	struct tst *t = ctx;
	t->nclosed++;
	t->t_closed = uv_now(&t->loop);
}

static const struct sup_cbs tst_cbs = {
	.on_message = tst_on_message,
	.on_garbage = tst_on_garbage,
	.on_exit = tst_on_exit,
	.on_closed = tst_on_closed,
};

static void tst_init(struct tst *t)
{
	memset(t, 0, sizeof *t);
	/* Orphans come to us, as they come to the runtime. */
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	signal(SIGPIPE, SIG_IGN);
	if (getenv("TST_DEBUG"))
		log_set_level(LOG_DEBUG);
	cr_assert_eq(uv_loop_init(&t->loop), 0);
	uv_timer_init(&t->loop, &t->guard);
	uv_timer_start(&t->guard, tst_guard_cb, TST_GUARD_MS, 0);
	uv_unref((uv_handle_t *)&t->guard);
}

/* Turns t's loop until cond holds. A loop with nothing left to wait for
 * returns at once, and its guard timer (unreferenced) never fires: that
 * is a failure, not a spin. */
#define TST_RUN_UNTIL(t, cond)                                                 \
	while (!(cond))                                                        \
	cr_assert(uv_run(&(t)->loop, UV_RUN_ONCE) != 0 || (cond),              \
		  "nothing left to wait for: %s", #cond)

static void tst_fini(struct tst *t)
{
	uv_close((uv_handle_t *)&t->guard, NULL);
	uv_run(&t->loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&t->loop), 0, "handles left open");
}

/* Runs script as a server whose processes carry MCPVISOR_OWNER=TST_TOKEN,
 * and waits for the pid it prints. */
static void tst_spawn(struct tst *t, const char *script, bool owner)
{
	char *args[] = {"-c", (char *)script, NULL};
	char *env[] = {"PATH=/usr/bin:/bin", NULL};
	struct sup_spec o = {
		.command = "/bin/sh",
		.args = args,
		.env = env,
		.token = owner ? TST_TOKEN : NULL,
		.stop_grace_ms = t->grace_ms ? t->grace_ms : TST_GRACE_MS,
	};
	cr_assert_eq(sup_spawn(&t->loop, &o, &tst_cbs, t, &t->conn), 0);
	t->pid = sup_pid(t->conn);
	tst_live[0] = t->pid;
	TST_RUN_UNTIL(t, t->stray != 0);
	/* The stray has left the group, and has run its own command. */
	struct procfs_stat st;
	for (int i = 0; i < 500; i++) {
		cr_assert_eq(procfs_read_stat(t->stray, &st), 0);
		if (st.pgrp == t->stray)
			break;
		usleep(10 * 1000);
	}
	cr_assert_eq(st.pgrp, t->stray, "the stray did not call setsid");
}

static void tst_stop(struct tst *t)
{
	t->t_stop = uv_now(&t->loop);
	sup_stop(t->conn);
	while (t->nclosed == 0) {
		cr_assert(uv_run(&t->loop, UV_RUN_ONCE) != 0 || t->nclosed != 0,
			  "nothing left to wait for: the close");
		t->turns++;
	}
}

static bool tst_gone(pid_t pid)
{
	struct procfs_stat st;
	return procfs_read_stat(pid, &st) < 0 || procfs_state_dead(st.state);
}

/* A sleep that is not the server's: env holds token (or nothing). */
static pid_t tst_stranger(const char *token)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char *owner =
			token ? xasprintf("MCPVISOR_OWNER=%s", token) : NULL;
		char *argv[] = {"sleep", "30", NULL};
		char *envp[] = {"PATH=/usr/bin:/bin", owner, NULL};
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	tst_live[2] = pid;
	/* Until it has exec'd, it still holds our environment. */
	char v[64];
	for (int i = 0; i < 500; i++) {
		int rc =
			procfs_environ_get(pid, geteuid(), "PATH", v, sizeof v);
		if (rc == 0 && strcmp(v, "/usr/bin:/bin") == 0)
			break;
		usleep(10 * 1000);
	}
	return pid;
}

Test(ladder, stop_reaches_a_child_that_called_setsid)
{
	struct tst t;
	tst_init(&t);
	pid_t plain = tst_stranger(NULL);
	tst_spawn(&t,
		  "setsid sleep 30 </dev/null >/dev/null 2>&1 & echo $!; "
		  "exec cat >/dev/null",
		  true);
	tst_stop(&t);
	cr_assert_eq(t.nexit, 1);
	cr_assert(tst_gone(t.pid));
	cr_assert(tst_gone(t.stray), "setsid child %d survived the stop",
		  (int)t.stray);
	/* It came to us as subreaper; the ladder reaped it. */
	cr_assert_eq(waitpid(t.stray, NULL, WNOHANG), -1);
	cr_assert_eq(errno, ECHILD);
	cr_assert(!tst_gone(plain), "a process without the token was hit");
	tst_fini(&t);
	kill(plain, SIGKILL);
	waitpid(plain, NULL, 0);
}

Test(ladder, stray_ignoring_sigterm_gets_sigkill_after_grace)
{
	struct tst t;
	tst_init(&t);
	pid_t other = tst_stranger(TST_OTHER);
	tst_spawn(&t,
		  "setsid sh -c 'trap \"\" TERM; echo $$; "
		  "exec sleep 30' 2>/dev/null & exec cat >/dev/null",
		  true);
	tst_stop(&t);
	uint64_t took = t.t_closed - t.t_stop;
	cr_assert(tst_gone(t.stray), "stray %d survived", (int)t.stray);
	/* It ignored SIGTERM: SIGKILL a grace period later ended it. */
	cr_assert_geq(took, TST_GRACE_MS - 10, "SIGKILL after %llu ms",
		      (unsigned long long)took);
	cr_assert(!tst_gone(other), "a process with another token was hit");
	tst_fini(&t);
	kill(other, SIGKILL);
	waitpid(other, NULL, 0);
}

Test(ladder, without_an_owner_only_the_group_is_stopped)
{
	struct tst t;
	tst_init(&t);
	tst_spawn(&t,
		  "setsid sleep 30 </dev/null >/dev/null 2>&1 & echo $!; "
		  "exec cat >/dev/null",
		  false);
	tst_stop(&t);
	cr_assert(tst_gone(t.pid));
	cr_assert(!tst_gone(t.stray), "no token, yet the stray was found");
	tst_fini(&t);
	kill(t.stray, SIGKILL);
	waitpid(t.stray, NULL, 0);
}

Test(ladder, a_bad_owner_token_is_refused_before_anything_runs)
{
	struct tst t;
	tst_init(&t);
	char *args[] = {"-c", "echo 1; exec cat >/dev/null", NULL};
	char big[128];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	const char *bad[] = {"", big, "a=b", "a\nb"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct sup_spec o = {
			.command = "/bin/sh",
			.args = args,
			.token = bad[i],
		};
		cr_assert_eq(sup_spawn(&t.loop, &o, &tst_cbs, &t, &t.conn),
			     -EINVAL);
		cr_assert_null(t.conn);
	}
	tst_fini(&t);
}

Test(ladder, a_leader_that_exits_alone_takes_its_setsid_child)
{
	struct tst t;
	tst_init(&t);
	/* No stop is ever called: the server exits when told to, and the
	 * ladder that follows its exit still reaches the daemon it left. */
	tst_spawn(&t,
		  "setsid sleep 30 </dev/null >/dev/null 2>&1 & echo $!; "
		  "read x; exit 5",
		  true);
	cr_assert_eq(sup_send(t.conn, "{}", 2), 0);
	while (t.nclosed == 0)
		uv_run(&t.loop, UV_RUN_ONCE);
	cr_assert_eq(t.nexit, 1);
	cr_assert(tst_gone(t.stray), "setsid child %d outlived its server",
		  (int)t.stray);
	tst_fini(&t);
}

Test(ladder, a_stop_waits_on_events_not_a_poll)
{
	struct tst t;
	tst_init(&t);
	t.grace_ms = 1000;
	/* The leader ends on stdin's EOF; the stray it left outside its
	 * group ignores SIGTERM, so the stop lasts the whole grace. */
	tst_spawn(&t,
		  "setsid sh -c 'trap \"\" TERM; echo $$; "
		  "exec sleep 30' 2>/dev/null & exec cat >/dev/null",
		  true);
	tst_stop(&t);
	uint64_t took = t.t_closed - t.t_stop;
	cr_assert(tst_gone(t.stray), "stray %d survived", (int)t.stray);
	cr_assert_geq(took, t.grace_ms - 10, "SIGKILL after %llu ms",
		      (unsigned long long)took);
	/* Exits, searches and the grace's timer wake the loop; a look
	 * every 20 ms through the grace would be about 50 turns. */
	cr_assert_lt(t.turns, 20, "the loop turned %d times in %llu ms",
		     t.turns, (unsigned long long)took);
	tst_fini(&t);
}
