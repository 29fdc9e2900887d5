/*
 * The relay's launcher on a real home: a runtime it did not start is
 * never signalled (the host gets one sentence naming it), one that is
 * exiting is waited for rather than named, and a restart
 * mark makes it wait for the new runtime instead of starting one. The
 * "runtimes" are forked children that hold the home's lock and write a
 * runtime file, as a runtime does.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "home/info.h"
#include "home/mark.h"
#include "relay/launch.h"
#include "util/paths.h"
#include "util/xmalloc.h"

static char home[] = "/tmp/mcpv-relay-launch-XXXXXX";
static struct paths P;
static uv_loop_t loop;
static int dones;
static char *fail_text;

static void on_done(void *arg, const char *fail)
{
	dones++;
	free(fail_text);
	fail_text = fail ? xstrdup(fail) : NULL;
}

static void setup(void)
{
	cr_assert_not_null(mkdtemp(home));
	paths_resolve(&P, home);
	char *err = NULL;
	cr_assert_eq(paths_create(&P, &err), 0, "%s", err ? err : "");
	uv_loop_init(&loop);
	dones = 0;
}

/* Fake runtimes started and not yet ended: a failed test leaves none
 * behind (each pauses until killed). */
static pid_t live_rt[4];

static void live_set(pid_t pid, pid_t to)
{
	for (size_t i = 0; i < sizeof live_rt / sizeof *live_rt; i++) {
		if (live_rt[i] == pid) {
			live_rt[i] = to;
			return;
		}
	}
}

static void teardown(void)
{
	for (size_t i = 0; i < sizeof live_rt / sizeof *live_rt; i++) {
		if (live_rt[i] > 0) {
			kill(live_rt[i], SIGKILL);
			waitpid(live_rt[i], NULL, 0);
		}
		live_rt[i] = 0;
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	char *cmd = xasprintf("rm -rf %s", home);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	paths_free(&P);
	free(fail_text);
	fail_text = NULL;
}

TestSuite(relay_launch, .init = setup, .fini = teardown);

/* A child that holds the home's lock and names itself in the runtime
 * file, as `mcpvisor serve` does, until killed. */
static pid_t fake_runtime(void)
{
	int ready[2];
	cr_assert_eq(pipe(ready), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		long holder;
		int fd = runtime_lock_take(P.lock_file, &holder);
		char *text = xasprintf("{\"pid\":%ld,\"port\":1,\"socket\":"
				       "\"%s\"}",
				       (long)getpid(), P.socket_path);
		FILE *f = fopen(P.runtime_file, "w");
		fputs(text, f);
		fclose(f);
		if (write(ready[1], fd >= 0 ? "y" : "n", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	char c = 0;
	cr_assert_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	live_set(0, pid);
	cr_assert_eq(c, 'y');
	return pid;
}

static void end_runtime(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	live_set(pid, 0);
}

static void run_until(int want, int ms)
{
	for (int i = 0; i < ms && dones < want; i++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		usleep(1000);
	}
}

Test(relay_launch, a_runtime_it_did_not_start_is_never_signalled)
{
	pid_t rt = fake_runtime();
	struct launch *l = launch_new(&loop, home, on_done, NULL);
	launch_recover(l, RELAY_LOSS_NONE);
	run_until(1, 2000);
	cr_assert_eq(dones, 1);
	cr_assert_null(fail_text, "%s", fail_text);
	cr_assert_str_eq(launch_socket(l), P.socket_path);
	cr_assert_not(launch_owns(l));
	/* It stops answering: the host is told what to stop. */
	launch_recover(l, RELAY_LOSS_SILENT);
	run_until(2, 2000);
	cr_assert_eq(dones, 2);
	cr_assert_not_null(fail_text);
	char *want = xasprintf("pid %ld", (long)rt);
	cr_assert(strstr(fail_text, want), "%s", fail_text);
	cr_assert(strstr(fail_text, "kill"), "%s", fail_text);
	free(want);
	int st;
	cr_assert_eq(waitpid(rt, &st, WNOHANG), 0,
		     "the runtime was left alone");
	launch_free(l);
	end_runtime(rt);
}

Test(relay_launch, a_restart_mark_waits_for_the_new_runtime)
{
	pid_t old = fake_runtime();
	struct launch *l = launch_new(&loop, home, on_done, NULL);
	launch_recover(l, RELAY_LOSS_NONE);
	run_until(1, 2000);
	cr_assert_eq(dones, 1);
	cr_assert_eq(mark_write(home, old), 0);
	struct restart_mark mk;
	cr_assert_eq(mark_read(home, &mk), 0);
	cr_assert_eq(mk.old_pid, old);
	end_runtime(old);
	/* Gone with the mark: no runtime is started, the relay waits. */
	launch_recover(l, RELAY_LOSS_REFUSED);
	run_until(2, 300);
	cr_assert_eq(dones, 1, "still waiting for the restart");
	pid_t fresh = fake_runtime();
	run_until(2, 2000);
	cr_assert_eq(dones, 2);
	cr_assert_null(fail_text, "%s", fail_text);
	cr_assert_str_eq(launch_socket(l), P.socket_path);
	mark_clear(home);
	launch_free(l);
	end_runtime(fresh);
}

Test(relay_launch, describes_a_pid_by_its_command)
{
	char *d = launch_describe_pid(getpid());
	char *want = xasprintf("pid %ld (", (long)getpid());
	bool ok = strncmp(d, want, strlen(want)) == 0 &&
		  d[strlen(d) - 1] == ')' && strlen(d) > strlen(want) + 1;
	free(want);
	cr_assert(ok, "%s", d);
	free(d);
}

static pid_t later_rt;

static void later_cb(uv_timer_t *t)
{
	later_rt = fake_runtime();
}

/* While a restart is under way nothing needs the relay but the new
 * runtime's file: the loop wakes for the home's changes, not a poll. */
Test(relay_launch, a_waited_start_wakes_the_loop_by_events_not_a_poll,
     .timeout = 15)
{
	pid_t old = fake_runtime();
	struct launch *l = launch_new(&loop, home, on_done, NULL);
	launch_recover(l, RELAY_LOSS_NONE);
	run_until(1, 2000);
	cr_assert_eq(dones, 1);
	cr_assert_eq(mark_write(home, old), 0);
	end_runtime(old);
	launch_recover(l, RELAY_LOSS_REFUSED);
	/* Static: its close completes in the teardown's loop run, after
	 * this frame is gone. */
	static uv_timer_t later;
	uv_timer_init(&loop, &later);
	uv_timer_start(&later, later_cb, 300, 0);
	int turns = 0;
	while (dones < 2) {
		uv_run(&loop, UV_RUN_ONCE);
		turns++;
	}
	cr_assert_null(fail_text, "%s", fail_text);
	cr_assert_str_eq(launch_socket(l), P.socket_path);
	/* A look every 10 ms through the wait would be about 30 turns. */
	cr_assert_lt(turns, 10, "the loop turned %d times", turns);
	mark_clear(home);
	uv_close((uv_handle_t *)&later, NULL);
	launch_free(l);
	end_runtime(later_rt);
}

static void *exiting_hold(void *arg)
{
	for (;;)
		pause();
	return NULL;
}

/* A child that holds the lock and names itself, as fake_runtime, then
 * begins to exit and does not finish: its leader thread ends (the kernel
 * marks it exiting, a zombie) while another thread keeps its files, the
 * lock among them. So a killed runtime looks for a moment: its sockets
 * gone, its lock not yet. */
static pid_t exiting_runtime(void)
{
	int ready[2];
	cr_assert_eq(pipe(ready), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		long holder;
		int fd = runtime_lock_take(P.lock_file, &holder);
		char *text = xasprintf("{\"pid\":%ld,\"port\":1,\"socket\":"
				       "\"%s\"}",
				       (long)getpid(), P.socket_path);
		FILE *f = fopen(P.runtime_file, "w");
		fputs(text, f);
		fclose(f);
		pthread_t t;
		if (fd < 0 || pthread_create(&t, NULL, exiting_hold, NULL) != 0)
			_exit(1);
		if (write(ready[1], "y", 1) != 1)
			_exit(1);
		pthread_exit(NULL);
	}
	close(ready[1]);
	char c = 0;
	cr_assert_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	live_set(0, pid);
	return pid;
}

/* The runtime it did not start is lost because it was killed: while it
 * is still on its way out (its lock not yet let go), the host is not
 * told to kill it; the relay waits for it to be gone. */
Test(relay_launch, a_lost_runtime_on_its_way_out_is_waited_for_not_named,
     .timeout = 15)
{
	pid_t rt = exiting_runtime();
	struct launch *l = launch_new(&loop, home, on_done, NULL);
	launch_recover(l, RELAY_LOSS_NONE);
	run_until(1, 2000);
	cr_assert_eq(dones, 1);
	cr_assert_null(fail_text, "%s", fail_text);
	/* Its leader has ended: the kernel says it is exiting. */
	for (int i = 0; i < 2000; i++) {
		char path[64], st[256] = "";
		snprintf(path, sizeof path, "/proc/%ld/stat", (long)rt);
		FILE *f = fopen(path, "r");
		if (f) {
			if (fgets(st, sizeof st, f) == NULL)
				st[0] = '\0';
			fclose(f);
		}
		const char *p = strrchr(st, ')');
		if (p && p[2] == 'Z')
			break;
		usleep(1000);
	}
	launch_recover(l, RELAY_LOSS_SILENT);
	run_until(2, 300);
	cr_assert_eq(dones, 1, "told: %s", fail_text ? fail_text : "");
	launch_free(l);
	end_runtime(rt);
}
