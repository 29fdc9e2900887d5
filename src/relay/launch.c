/*
 * The launcher: a small state machine on one loop timer. Every decision
 * reads the runtime file of the home (runtime_info_read), whose lock says
 * whether a runtime runs; the pid alone proves nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "home/info.h"
#include "home/launch.h"
#include "home/mark.h"
#include "proc/procfs.h"
#include "relay/launch.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/paths.h"
#include "util/xmalloc.h"

enum launch_step {
	LS_IDLE,
	LS_STOPPING, /* our lost runtime: SIGTERM sent, then SIGKILL */
	LS_FINDING,  /* reading the runtime file until one answers */
};

struct launch {
	uv_loop_t *loop;
	char *home;
	launch_done_cb done;
	void *arg;
	uv_timer_t timer;
	enum launch_step step;
	enum relay_loss why;
	uint64_t step_at;
	bool killed;
	bool spawned;  /* this recovery started a runtime */
	long lost_pid; /* the runtime the lost session was with */
	char *socket;
	long cur_pid;
	/* The runtime this relay started. */
	long own_pid;
	uint64_t own_start;
};

char *launch_describe_pid(long pid)
{
	char cmd[256];
	size_t n = 0;
	if (procfs_cmdline((pid_t)pid, cmd, sizeof cmd - 1, &n) < 0)
		n = 0;
	while (n > 0 && cmd[n - 1] == '\0')
		n--;
	for (size_t i = 0; i < n; i++)
		if (cmd[i] == '\0' || (unsigned char)cmd[i] < 0x20)
			cmd[i] = ' ';
	cmd[n] = '\0';
	return n ? xasprintf("pid %ld (%s)", pid, cmd)
		 : xasprintf("pid %ld", pid);
}

static char *log_path(const char *home)
{
	struct paths p;
	paths_resolve(&p, home);
	char *path = xasprintf("%s/%s", p.state_dir, LAUNCH_LOG_NAME);
	paths_free(&p);
	return path;
}

/* The last line of the runtime's log, for the host. */
static char *launch_log_tail(const char *home)
{
	char *path = log_path(home);
	char text[1024];
	ssize_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		off_t end = lseek(fd, 0, SEEK_END);
		off_t from = end > (off_t)sizeof text - 1
				     ? end - (off_t)sizeof text + 1
				     : 0;
		n = pread(fd, text, sizeof text - 1, from);
		close(fd);
	}
	text[n > 0 ? n : 0] = '\0';
	size_t len = strlen(text);
	while (len > 0 && text[len - 1] == '\n')
		text[--len] = '\0';
	char *last = strrchr(text, '\n');
	char *t = xasprintf("The mcpvisor runtime the relay started exited: "
			    "%s (log: %s)",
			    last ? last + 1 : text, path);
	free(path);
	return t;
}

static void launch_finish(struct launch *l, const char *fail)
{
	l->step = LS_IDLE;
	uv_timer_stop(&l->timer);
	l->done(l->arg, fail);
}

/* `mcpvisor serve` of this home in the background (runtime_launch: its
 * own session, no stdin, output appended to runtime.log). */
static int launch_spawn(struct launch *l)
{
	struct paths p;
	paths_resolve(&p, l->home);
	char *err = NULL;
	int rc = paths_create(&p, &err);
	free(err);
	paths_free(&p);
	if (rc < 0)
		return rc;
	char *args[] = {l->home ? "--home" : NULL, l->home, NULL};
	pid_t pid;
	uint64_t start;
	rc = runtime_launch(l->home, NULL, NULL, args, NULL, &pid, &start);
	if (rc < 0)
		return rc;
	l->own_pid = pid;
	l->own_start = start;
	return 0;
}

/* `mcpvisor restart` is replacing the runtime (its mark, fresh). */
static bool launch_marked(const struct launch *l)
{
	struct restart_mark mk;
	return mark_read(l->home, &mk) == 0;
}

bool launch_owns(const struct launch *l)
{
	return l->own_pid && l->cur_pid == l->own_pid &&
	       procfs_alive((pid_t)l->own_pid, l->own_start);
}

/* One look at the home. */
static void launch_find(struct launch *l)
{
	uint64_t now = clock_now_ms();
	struct runtime_info info;
	int rc = runtime_info_read(l->home, &info);
	struct restart_mark mk;
	bool marked = mark_read(l->home, &mk) == 0;
	if (rc == 0 && marked && info.pid == mk.old_pid)
		rc = -EAGAIN; /* the old one, on its way out */
	if (rc == 0) {
		bool same =
			l->why != RELAY_LOSS_NONE && info.pid == l->lost_pid;
		if (same && !(l->own_pid && info.pid == l->own_pid)) {
			/* Not ours, and still the one that was lost. */
			char *who = launch_describe_pid(info.pid);
			char *t = xasprintf(
				"The mcpvisor runtime, %s, does not answer; "
				"the relay did not start it and leaves it "
				"alone: stop it (kill %ld) and the relay "
				"starts another, or point the relay at "
				"another with --url",
				who, info.pid);
			free(who);
			runtime_info_free(&info);
			launch_finish(l, t);
			free(t);
			return;
		}
		free(l->socket);
		l->socket = xstrdup(info.socket);
		l->cur_pid = info.pid;
		runtime_info_free(&info);
		launch_finish(l, NULL);
		return;
	}
	if (rc == -EPERM) {
		char *t = xstrdup(info.error ? info.error : "home not private");
		runtime_info_free(&info);
		launch_finish(l, t);
		free(t);
		return;
	}
	runtime_info_free(&info);
	if ((rc == -ENOENT || rc == -ESRCH) && !marked && !l->spawned) {
		l->spawned = true;
		if (rc == -ESRCH)
			runtime_info_clear(l->home);
		int e = launch_spawn(l);
		if (e < 0) {
			char *t = xasprintf("The relay could not start the "
					    "mcpvisor runtime: %s",
					    strerror(-e));
			launch_finish(l, t);
			free(t);
			return;
		}
	}
	if ((rc == -ENOENT || rc == -ESRCH) && l->spawned && !marked &&
	    !procfs_alive((pid_t)l->own_pid, l->own_start)) {
		/* It ended without a runtime in its place: its own words say
		 * why (a config it cannot read, a home that is not private). */
		char *t = launch_log_tail(l->home);
		launch_finish(l, t);
		free(t);
		return;
	}
	if (now - l->step_at >= LAUNCH_START_MS) {
		launch_finish(l, "The mcpvisor runtime did not come up within "
				 "30 s; see runtime.log in its state "
				 "directory");
		return;
	}
}

static void launch_tick(uv_timer_t *t)
{
	struct launch *l = t->data;
	if (l->step == LS_STOPPING) {
		bool alive = procfs_alive((pid_t)l->own_pid, l->own_start);
		struct procfs_stat ps;
		/* A stopped runtime (SIGSTOP) never handles SIGTERM: it is
		 * killed at once rather than waited on. */
		bool stopped = alive &&
			       procfs_read_stat((pid_t)l->own_pid, &ps) == 0 &&
			       (ps.state == 'T' || ps.state == 't');
		if (alive && !stopped &&
		    clock_now_ms() - l->step_at < LAUNCH_TERM_MS)
			goto again;
		if (alive && !l->killed) {
			/* A frozen runtime never handles SIGTERM. */
			procfs_signal((pid_t)l->own_pid, l->own_start, SIGKILL);
			l->killed = true;
			goto again;
		}
		if (alive)
			goto again;
		l->own_pid = 0;
		l->step = LS_FINDING;
		l->step_at = clock_now_ms();
	}
	if (l->step == LS_FINDING) {
		launch_find(l);
		if (l->step == LS_IDLE)
			return;
	}
again:
	uv_timer_start(&l->timer, launch_tick, LAUNCH_POLL_MS, 0);
}

struct launch *launch_new(uv_loop_t *loop, const char *home,
			  launch_done_cb done, void *arg)
{
	struct launch *l = xcalloc(1, sizeof *l);
	l->loop = loop;
	l->home = home ? xstrdup(home) : NULL;
	l->done = done;
	l->arg = arg;
	uv_timer_init(loop, &l->timer);
	l->timer.data = l;
	return l;
}

static void launch_closed(uv_handle_t *h)
{
	struct launch *l = h->data;
	free(l->home);
	free(l->socket);
	free(l);
}

void launch_free(struct launch *l)
{
	/* The runtime it started runs on: it serves other hosts too. */
	uv_close((uv_handle_t *)&l->timer, launch_closed);
}

void launch_recover(struct launch *l, enum relay_loss why)
{
	l->why = why;
	l->lost_pid = l->cur_pid;
	l->spawned = false;
	l->killed = false;
	l->step_at = clock_now_ms();
	l->step = LS_FINDING;
	/* A runtime on its way out through `mcpvisor restart` drains: it
	 * is not signalled even when it is ours. */
	if (why != RELAY_LOSS_NONE && launch_owns(l) && !launch_marked(l)) {
		procfs_signal((pid_t)l->own_pid, l->own_start, SIGTERM);
		l->step = LS_STOPPING;
	}
	/* Never from inside the caller: the first look on the next turn. */
	uv_timer_start(&l->timer, launch_tick, 0, 0);
}

const char *launch_socket(const struct launch *l)
{
	return l->socket;
}
