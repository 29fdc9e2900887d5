/*
 * Unit tests for the stop ladder (proc/stop.c) on real processes: what
 * heeds SIGTERM ends on it; what ignores it gets SIGKILL after the grace;
 * a stopped process gets SIGKILL at once; a pid that changed hands is
 * never signalled; a process that is not our child is seen to end by its
 * pidfd, and the loop is woken by events, not by a poll. One loop per
 * test; every process started is killed by pid at the end.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "proc/procfs.h"
#include "proc/stop.h"
#include "util/log.h"

#define TST_GUARD_MS 8000

/* Started by a test and not yet seen gone: killed by pid at fini. */
static pid_t tst_live[4];

static void tst_kill_leftovers(void)
{
	for (size_t i = 0; i < sizeof tst_live / sizeof *tst_live; i++) {
		if (tst_live[i] > 0)
			kill(tst_live[i], SIGKILL);
		tst_live[i] = 0;
	}
}

static void tst_init(void)
{
	if (getenv("TST_DEBUG"))
		log_set_level(LOG_DEBUG);
}

TestSuite(stop, .init = tst_init, .fini = tst_kill_leftovers, .timeout = 30);

struct tst {
	uv_loop_t loop;
	uv_timer_t guard;
	struct proc_stop *s;
	int ndone;
	size_t left;
	uint64_t t_start, t_done;
	int turns; /* loop turns until done */
};

static void tst_guard_cb(uv_timer_t *timer)
{
	tst_kill_leftovers();
	cr_assert_fail("timed out after %d ms", TST_GUARD_MS);
}

static void tst_done_cb(void *ctx, size_t left)
{
	struct tst *t = ctx;
	t->ndone++;
	t->left = left;
	t->t_done = uv_now(&t->loop);
}

static void tst_begin(struct tst *t, uint64_t grace_ms)
{
	memset(t, 0, sizeof *t);
	cr_assert_eq(uv_loop_init(&t->loop), 0);
	uv_timer_init(&t->loop, &t->guard);
	uv_timer_start(&t->guard, tst_guard_cb, TST_GUARD_MS, 0);
	uv_unref((uv_handle_t *)&t->guard);
	t->s = proc_stop_new(&t->loop, "test", grace_ms, tst_done_cb, t);
}

/* Starts the ladder and turns the loop until it is done. */
static void tst_run(struct tst *t)
{
	uv_update_time(&t->loop);
	t->t_start = uv_now(&t->loop);
	proc_stop_start(t->s);
	cr_assert_eq(t->ndone, 0, "done from inside the start");
	while (t->ndone == 0) {
		uv_run(&t->loop, UV_RUN_ONCE);
		t->turns++;
	}
}

static void tst_end(struct tst *t)
{
	proc_stop_free(t->s, NULL);
	uv_close((uv_handle_t *)&t->guard, NULL);
	uv_run(&t->loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&t->loop), 0, "handles left open");
}

/* A child running script, ready once it printed a line. */
static pid_t tst_child(const char *script, int slot)
{
	int ready[2];
	cr_assert_eq(pipe(ready), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(ready[1], 1);
		close(ready[0]);
		execl("/bin/sh", "sh", "-c", script, (char *)NULL);
		_exit(127);
	}
	close(ready[1]);
	char c;
	cr_assert_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	tst_live[slot] = pid;
	return pid;
}

static int tst_wait(pid_t pid)
{
	int st = -1;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	for (size_t i = 0; i < sizeof tst_live / sizeof *tst_live; i++)
		if (tst_live[i] == pid)
			tst_live[i] = 0;
	return st;
}

Test(stop, sigterm_ends_what_heeds_it)
{
	struct tst t;
	tst_begin(&t, 10000);
	pid_t pid = tst_child("echo; exec sleep 30", 0);
	cr_assert_eq(proc_stop_add(t.s, pid, procfs_start_time(pid)), 0);
	tst_run(&t);
	cr_assert_eq(t.left, 0);
	int st = tst_wait(pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %d", st);
	cr_assert_lt(t.t_done - t.t_start, 10000, "it waited the grace");
	tst_end(&t);
}

Test(stop, what_ignores_sigterm_gets_sigkill_after_the_grace)
{
	struct tst t;
	tst_begin(&t, 200);
	pid_t pid =
		tst_child("trap '' TERM; echo; while :; do sleep 1; done", 0);
	cr_assert_eq(proc_stop_add(t.s, pid, procfs_start_time(pid)), 0);
	tst_run(&t);
	cr_assert_eq(t.left, 0);
	cr_assert_geq(t.t_done - t.t_start, 190, "SIGKILL after %llu ms",
		      (unsigned long long)(t.t_done - t.t_start));
	int st = tst_wait(pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %d", st);
	tst_end(&t);
}

Test(stop, a_stopped_process_gets_sigkill_at_once)
{
	struct tst t;
	tst_begin(&t, 10000);
	pid_t pid = tst_child("echo; exec sleep 30", 0);
	cr_assert_eq(kill(pid, SIGSTOP), 0);
	int st;
	cr_assert_eq(waitpid(pid, &st, WUNTRACED), pid);
	cr_assert(WIFSTOPPED(st));
	cr_assert_eq(proc_stop_add(t.s, pid, procfs_start_time(pid)), 0);
	tst_run(&t);
	cr_assert_eq(t.left, 0);
	cr_assert_lt(t.t_done - t.t_start, 10000, "it waited the grace");
	st = tst_wait(pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %d", st);
	tst_end(&t);
}

Test(stop, a_pid_that_changed_hands_is_never_signalled)
{
	struct tst t;
	tst_begin(&t, 200);
	pid_t pid = tst_child("echo; exec sleep 30", 0);
	uint64_t start = procfs_start_time(pid);
	cr_assert_eq(proc_stop_add(t.s, pid, start + 1), -ESRCH);
	cr_assert_eq(proc_stop_add(t.s, 0x3fffffff, 1), -ESRCH);
	tst_run(&t);
	cr_assert_eq(t.left, 0);
	cr_assert(procfs_alive(pid, start), "signalled despite its start");
	kill(pid, SIGKILL);
	tst_wait(pid);
	tst_end(&t);
}

/* A grandchild whose parent is gone belongs to init (we are no
 * subreaper here): no SIGCHLD ever tells us of its end, only its pidfd. A
 * stop of one that takes a second to heed SIGTERM wakes the loop a few
 * times, not once per poll. */
Test(stop, a_process_not_ours_ends_by_event_without_polling)
{
	struct tst t;
	tst_begin(&t, 5000);
	int ready[2];
	cr_assert_eq(pipe(ready), 0);
	pid_t mid = fork();
	cr_assert_geq(mid, 0);
	if (mid == 0) {
		pid_t gc = fork();
		if (gc == 0) {
			close(ready[0]);
			dup2(ready[1], 1);
			execl("/bin/sh", "sh", "-c",
			      "trap 'sleep 1; exit 0' TERM; echo $$; "
			      "while :; do sleep 1; done",
			      (char *)NULL);
			_exit(127);
		}
		_exit(0);
	}
	close(ready[1]);
	char line[32] = {0};
	cr_assert_gt(read(ready[0], line, sizeof line - 1), 0);
	close(ready[0]);
	pid_t gc = (pid_t)atoi(line);
	tst_live[1] = gc;
	cr_assert_eq(waitpid(mid, NULL, 0), mid);
	struct procfs_stat st;
	cr_assert_eq(procfs_read_stat(gc, &st), 0);
	cr_assert_neq(st.ppid, getpid(), "the grandchild is not ours");
	cr_assert_eq(proc_stop_add(t.s, gc, st.start_time), 0);
	tst_run(&t);
	cr_assert_eq(t.left, 0);
	cr_assert_not(procfs_alive(gc, st.start_time));
	tst_live[1] = 0;
	cr_assert_geq(t.t_done - t.t_start, 900, "done before it ended");
	cr_assert_lt(t.t_done - t.t_start, 5000, "it waited the grace");
	/* A poll every 20 ms would have turned the loop about 50 times. */
	cr_assert_lt(t.turns, 10, "the loop turned %d times", t.turns);
	tst_end(&t);
}

Test(stop, nothing_to_stop_is_done_on_the_next_turn)
{
	struct tst t;
	tst_begin(&t, 200);
	tst_run(&t);
	cr_assert_eq(t.ndone, 1);
	cr_assert_eq(t.left, 0);
	cr_assert_lt(t.t_done - t.t_start, 200);
	tst_end(&t);
}

Test(stop, freed_before_done_says_nothing_more)
{
	struct tst t;
	tst_begin(&t, 200);
	pid_t pid =
		tst_child("trap '' TERM; echo; while :; do sleep 1; done", 0);
	cr_assert_eq(proc_stop_add(t.s, pid, procfs_start_time(pid)), 0);
	proc_stop_start(t.s);
	uv_run(&t.loop, UV_RUN_NOWAIT);
	tst_end(&t);
	cr_assert_eq(t.ndone, 0);
	cr_assert(procfs_alive(pid, procfs_start_time(pid)),
		  "SIGKILL after the free");
	kill(pid, SIGKILL);
	tst_wait(pid);
}
