/*
 * The runtime's reaper of adopted orphans: as a subreaper, a process that
 * left its parent's session comes to us and ends as our zombie; the sweep
 * reaps it, never a child libuv spawned (whose exit status libuv still
 * reads), and on SIGCHLD it sweeps by itself.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <uv.h>

#include "proc/procfs.h"
#include "proc/reaper.h"
#include "proc/snap.h"
#include "util/xmalloc.h"

static void reap_setup(void)
{
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
}

TestSuite(reaper, .init = reap_setup, .timeout = 20);

/* How many zombie children this process has. */
static size_t reap_zombies(void)
{
	struct proc_snap *snap = NULL;
	size_t z = 0;
	cr_assert_eq(proc_snap_take(&snap), 0);
	for (size_t i = 0; i < proc_snap_count(snap); i++) {
		const struct procfs_stat *st = proc_snap_at(snap, i);
		if (st->ppid == getpid() && st->state == 'Z')
			z++;
	}
	proc_snap_free(snap);
	return z;
}

struct reap_exit {
	int calls;
	int64_t status;
};

static void reap_exit_cb(uv_process_t *p, int64_t status, int sig)
{
	struct reap_exit *e = p->data;
	e->calls++;
	e->status = status;
	uv_close((uv_handle_t *)p, NULL);
}

/* sh -c SCRIPT through libuv, in a session of its own (as the runtime
 * spawns). */
static void reap_spawn(uv_loop_t *loop, uv_process_t *p, const char *script,
		       struct reap_exit *e)
{
	char *args[] = {"sh", "-c", (char *)script, NULL};
	uv_process_options_t po = {.exit_cb = reap_exit_cb,
				   .file = "sh",
				   .args = args,
				   .flags = UV_PROCESS_DETACHED};
	p->data = e;
	cr_assert_eq(uv_spawn(loop, p, &po), 0);
}

Test(reaper, an_adopted_orphan_is_reaped_and_libuvs_child_is_not)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	uv_process_t p;
	struct reap_exit e = {0};
	/* A grandchild in a session of its own (as conmon), adopted when
	 * the subshell that started it ends. */
	reap_spawn(&loop, &p, "(setsid sh -c 'sleep 0.2' &); sleep 0.5; exit 3",
		   &e);
	/* Both end without the loop running: libuv's child and the
	 * adopted grandchild are zombies of ours. */
	for (int i = 0; i < 300 && reap_zombies() < 2; i++)
		usleep(10000);
	cr_assert_eq(reap_zombies(), 2);
	cr_assert_eq(reaper_sweep(&loop), 1, "the orphan only");
	cr_assert_eq(reap_zombies(), 1, "libuv's child is left to libuv");
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(e.calls, 1);
	cr_assert_eq(e.status, 3, "libuv read its child's exit status");
	cr_assert_eq(reap_zombies(), 0);
	cr_assert_eq(uv_loop_close(&loop), 0);
}

/* Children of this process in any state (an adopted one sleeping, or its
 * zombie). */
static size_t reap_children(void)
{
	struct proc_snap *snap = NULL;
	size_t c = 0;
	cr_assert_eq(proc_snap_take(&snap), 0);
	for (size_t i = 0; i < proc_snap_count(snap); i++)
		c += proc_snap_at(snap, i)->ppid == getpid();
	proc_snap_free(snap);
	return c;
}

struct reap_wait {
	uv_timer_t timer;
	uv_signal_t *sig;
	int ticks;
};

/* Until the adopted one is gone altogether (3 s at most). */
static void reap_tick_cb(uv_timer_t *t)
{
	struct reap_wait *w = t->data;
	if (reap_children() > 0 && ++w->ticks < 300)
		return;
	uv_close((uv_handle_t *)&w->timer, NULL);
	uv_close((uv_handle_t *)w->sig, NULL);
}

Test(reaper, on_sigchld_it_sweeps_by_itself)
{
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	uv_signal_t sig;
	reaper_start(&loop, &sig);
	uv_process_t p;
	struct reap_exit e = {0};
	/* Its parent ends first; the adopted one 0.3 s later. */
	reap_spawn(&loop, &p, "(setsid sh -c 'sleep 0.3' &); exit 0", &e);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(e.calls, 1, "the signal handle kept the loop");
	cr_assert_eq(reap_children(), 1, "the orphan was not adopted");
	struct reap_wait w = {.sig = &sig};
	uv_timer_init(&loop, &w.timer);
	w.timer.data = &w;
	uv_timer_start(&w.timer, reap_tick_cb, 10, 10);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(reap_children(), 0, "the orphan was not reaped");
	cr_assert_lt(w.ticks, 300);
	cr_assert_eq(uv_loop_close(&loop), 0);
}
