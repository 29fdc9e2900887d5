/*
 * The launcher: a small state machine driven by events. Every decision
 * reads the runtime file of the home (runtime_info_read), whose lock says
 * whether a runtime runs; the pid alone proves nothing. Between looks it
 * waits for what can change the answer: a file of the home written or
 * removed (inotify on its runtime and state folders), the end of a
 * process it waits on (the lock's holder, the runtime it started, the
 * restart that marked the home), or a deadline. A runtime of its own that
 * it must replace is stopped with the stop ladder.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "home/info.h"
#include "home/launch.h"
#include "home/mark.h"
#include "proc/procfs.h"
#include "proc/stop.h"
#include "proc/watch.h"
#include "relay/launch.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/paths.h"
#include "util/xmalloc.h"

enum launch_step {
	LS_IDLE,
	LS_STOPPING, /* our lost runtime, through the stop ladder */
	LS_FINDING,  /* looking at the home until a runtime answers */
};

/* The processes a look may wait on. */
enum { LW_HOLDER, LW_OWN, LW_RESTART, LW_COUNT };

struct launch {
	uv_loop_t *loop;
	char *home;
	struct paths paths;
	launch_done_cb done;
	void *arg;
	enum launch_step step;
	enum relay_loss why;
	uint64_t step_at;
	bool spawned;  /* this recovery started a runtime */
	long lost_pid; /* the runtime the lost session was with */
	char *socket;
	long cur_pid;
	/* The runtime this relay started. */
	long own_pid;
	uint64_t own_start;

	struct proc_stop *stop; /* LS_STOPPING */
	/* LS_FINDING's events: the home's folders, the processes. */
	uv_fs_event_t dirs[2];
	bool dir_on[2];
	struct proc_watch *watch[LW_COUNT];
	/* The next look: a deadline, or at once after a new watch (what
	 * changed before it was armed), or soon where no event serves. */
	uv_timer_t timer;
	int open; /* handles not yet closed at launch_free */
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

/* The last line of the runtime's log, for the host. */
static char *launch_log_tail(const struct launch *l)
{
	char *path = xasprintf("%s/%s", l->paths.state_dir, LAUNCH_LOG_NAME);
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

/* ---- what a look waits on ---- */

static void launch_look_cb(uv_timer_t *t);

static void launch_look_soon(struct launch *l, uint64_t ms)
{
	if (uv_is_active((uv_handle_t *)&l->timer) &&
	    uv_timer_get_due_in(&l->timer) <= ms)
		return;
	uv_timer_start(&l->timer, launch_look_cb, ms, 0);
}

static void launch_dir_cb(uv_fs_event_t *h, const char *name, int events,
			  int status)
{
	struct launch *l = h->data;
	if (l->step == LS_FINDING)
		launch_look_soon(l, 0);
}

static void launch_watch_cb(void *ctx, struct proc_watch *w)
{
	struct launch *l = ctx;
	if (l->step == LS_FINDING)
		launch_look_soon(l, 0);
}

/* Watches the home's folder i (its runtime folder, its state folder).
 * False when it cannot be watched (not there yet, no inotify). A watch
 * armed now may have missed a change: the caller looks again. */
static bool launch_watch_dir(struct launch *l, int i, bool *armed)
{
	const char *dir = i == 0 ? l->paths.runtime_dir : l->paths.state_dir;
	if (l->dir_on[i])
		return true;
	if (i == 1 && strcmp(dir, l->paths.runtime_dir) == 0)
		return true;
	if (uv_fs_event_start(&l->dirs[i], launch_dir_cb, dir, 0) < 0)
		return false;
	l->dir_on[i] = true;
	*armed = true;
	return true;
}

/* Watches process pid (started at start; 0: none) in slot; false when no
 * event can tell its end: it is gone already, or this system gives no
 * pidfds. */
static bool launch_watch_pid(struct launch *l, int slot, long pid,
			     uint64_t start)
{
	struct proc_watch *w = l->watch[slot];
	if (w != NULL && pid > 0 && proc_watch_pid(w) == (pid_t)pid)
		return true;
	proc_watch_free(w);
	l->watch[slot] = NULL;
	if (pid <= 0)
		return true;
	if (start == 0)
		start = procfs_start_time((pid_t)pid);
	int rc = proc_watch_new(l->loop, (pid_t)pid, start, launch_watch_cb, l,
				&l->watch[slot]);
	/* Gone already (or a pid that names no one now, as a lock file
	 * may while its holder writes): the next look, soon, sees it. */
	return rc == 0;
}

static void launch_unwatch(struct launch *l)
{
	for (int i = 0; i < 2; i++) {
		if (l->dir_on[i])
			uv_fs_event_stop(&l->dirs[i]);
		l->dir_on[i] = false;
	}
	for (int i = 0; i < LW_COUNT; i++) {
		proc_watch_free(l->watch[i]);
		l->watch[i] = NULL;
	}
}

/* ---- the looks ---- */

static void launch_finish(struct launch *l, const char *fail)
{
	l->step = LS_IDLE;
	uv_timer_stop(&l->timer);
	launch_unwatch(l);
	l->done(l->arg, fail);
}

/* `mcpvisor serve` of this home in the background (runtime_launch: its
 * own session, no stdin, output appended to runtime.log). */
static int launch_spawn(struct launch *l)
{
	char *err = NULL;
	int rc = paths_create(&l->paths, &err);
	free(err);
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

/* The kernel's flag on a task that has begun to exit (PF_EXITING in
 * /proc/PID/stat's ninth field). */
#define LAUNCH_PF_EXITING 0x4u

/* pid is on its way out (killed): its sockets close before its last file
 * (the home's lock) does, so for a moment it holds the lock of a runtime
 * that no longer answers. */
static bool launch_pid_exiting(long pid)
{
	char path[64], text[512];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return false;
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	const char *p = strrchr(text, ')');
	char state = 0;
	unsigned flags = 0;
	if (p == NULL ||
	    sscanf(p + 1, " %c %*d %*d %*d %*d %*d %u", &state, &flags) != 2)
		return false;
	return procfs_state_dead(state) || (flags & LAUNCH_PF_EXITING);
}

/* A runtime answers: ours, or one whose loss is not the one we saw. NULL
 * when it is taken; else the sentence for the host (to free). */
static char *launch_take(struct launch *l, const struct runtime_info *info)
{
	bool same = l->why != RELAY_LOSS_NONE && info->pid == l->lost_pid;
	if (same && !(l->own_pid && info->pid == l->own_pid)) {
		/* Not ours, and still the one that was lost. */
		char *who = launch_describe_pid(info->pid);
		char *t = xasprintf("The mcpvisor runtime, %s, does not "
				    "answer; the relay did not start it and "
				    "leaves it alone: stop it (kill %ld) and "
				    "the relay starts another, or point the "
				    "relay at another with --url",
				    who, info->pid);
		free(who);
		return t;
	}
	free(l->socket);
	l->socket = xstrdup(info->socket);
	l->cur_pid = info->pid;
	return NULL;
}

/* Arms what can end the wait: the folders, the processes that matter
 * now, and the nearest deadline (the start's, a mark's age). */
static void launch_wait(struct launch *l, long holder,
			const struct restart_mark *mk, bool marked)
{
	bool armed = false, seen = true;
	seen &= launch_watch_dir(l, 0, &armed);
	seen &= launch_watch_dir(l, 1, &armed);
	seen &= launch_watch_pid(l, LW_HOLDER, holder, 0);
	bool own = l->spawned && l->own_pid;
	seen &= launch_watch_pid(l, LW_OWN, own ? l->own_pid : 0, l->own_start);
	seen &= launch_watch_pid(l, LW_RESTART, marked ? mk->by_pid : 0,
				 marked ? mk->by_start : 0);
	uint64_t elapsed = clock_now_ms() - l->step_at;
	uint64_t next =
		elapsed < LAUNCH_START_MS ? LAUNCH_START_MS - elapsed : 0;
	if (marked) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		int64_t age = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 -
			      mk->time_ms;
		uint64_t left = age < MARK_MAX_AGE_MS
					? (uint64_t)(MARK_MAX_AGE_MS - age)
					: 0;
		next = left < next ? left : next;
	}
	if (!seen && next > LAUNCH_BLIND_MS)
		next = LAUNCH_BLIND_MS;
	if (armed)
		next = 0;
	uv_timer_start(&l->timer, launch_look_cb, next, 0);
}

/* One look at the home: a runtime answers (done), or the home cannot be
 * used, or the runtime we started ended, or the start took too long
 * (done, failed); else start one if none runs and no restart is under
 * way, and wait. */
static void launch_find(struct launch *l)
{
	struct runtime_info info;
	struct restart_mark mk;
	char *fail = NULL;
	long holder = 0;
	int rc = runtime_info_read(l->home, &info);
	bool marked = mark_read(l->home, &mk) == 0;
	if (rc == 0 && marked && info.pid == mk.old_pid)
		rc = -EAGAIN; /* the old one, on its way out */
	/* The lost one, killed and not yet gone: looked at again when it is
	 * (its pid is watched), not taken for one that hangs. */
	if (rc == 0 && l->why != RELAY_LOSS_NONE && info.pid == l->lost_pid &&
	    launch_pid_exiting(info.pid))
		rc = -EAGAIN;
	if (rc == 0) {
		fail = launch_take(l, &info);
		goto done;
	}
	if (rc == -EPERM) {
		fail = xstrdup(info.error ? info.error : "home not private");
		goto done;
	}
	if (rc == -EAGAIN)
		holder = info.pid;
	bool none = rc == -ENOENT || rc == -ESRCH;
	if (none && !marked && !l->spawned) {
		l->spawned = true;
		if (rc == -ESRCH)
			runtime_info_clear(l->home);
		int e = launch_spawn(l);
		if (e < 0) {
			fail = xasprintf("The relay could not start the "
					 "mcpvisor runtime: %s",
					 strerror(-e));
			goto done;
		}
	}
	if (none && l->spawned && !marked &&
	    !procfs_alive((pid_t)l->own_pid, l->own_start)) {
		/* It ended without a runtime in its place: its own words say
		 * why (a config it cannot read, a home that is not private). */
		fail = launch_log_tail(l);
		goto done;
	}
	if (clock_now_ms() - l->step_at >= LAUNCH_START_MS) {
		fail = xstrdup("The mcpvisor runtime did not come up within "
			       "30 s; see runtime.log in its state directory");
		goto done;
	}
	runtime_info_free(&info);
	launch_wait(l, holder, &mk, marked);
	return;
done:
	runtime_info_free(&info);
	launch_finish(l, fail);
	free(fail);
}

static void launch_look_cb(uv_timer_t *t)
{
	struct launch *l = t->data;
	if (l->step == LS_FINDING)
		launch_find(l);
}

/* ---- stopping our own runtime ---- */

static void launch_stopped_cb(void *ctx, size_t left)
{
	struct launch *l = ctx;
	proc_stop_free(l->stop, NULL);
	l->stop = NULL;
	l->own_pid = 0;
	l->step = LS_FINDING;
	l->step_at = clock_now_ms();
	launch_find(l);
}

/* ---- the API ---- */

struct launch *launch_new(uv_loop_t *loop, const char *home,
			  launch_done_cb done, void *arg)
{
	struct launch *l = xcalloc(1, sizeof *l);
	l->loop = loop;
	l->home = home ? xstrdup(home) : NULL;
	paths_resolve(&l->paths, home);
	l->done = done;
	l->arg = arg;
	uv_timer_init(loop, &l->timer);
	uv_fs_event_init(loop, &l->dirs[0]);
	uv_fs_event_init(loop, &l->dirs[1]);
	l->timer.data = l->dirs[0].data = l->dirs[1].data = l;
	l->open = 3;
	return l;
}

static void launch_closed_cb(uv_handle_t *h)
{
	struct launch *l = h->data;
	if (--l->open > 0)
		return;
	paths_free(&l->paths);
	free(l->home);
	free(l->socket);
	free(l);
}

void launch_free(struct launch *l)
{
	/* The runtime it started runs on: it serves other hosts too. */
	proc_stop_free(l->stop, NULL);
	l->stop = NULL;
	l->step = LS_IDLE;
	launch_unwatch(l);
	uv_close((uv_handle_t *)&l->timer, launch_closed_cb);
	uv_close((uv_handle_t *)&l->dirs[0], launch_closed_cb);
	uv_close((uv_handle_t *)&l->dirs[1], launch_closed_cb);
}

void launch_recover(struct launch *l, enum relay_loss why)
{
	l->why = why;
	l->lost_pid = l->cur_pid;
	l->spawned = false;
	l->step_at = clock_now_ms();
	l->step = LS_FINDING;
	proc_stop_free(l->stop, NULL);
	l->stop = NULL;
	/* A runtime on its way out through `mcpvisor restart` drains: it
	 * is not signalled even when it is ours. */
	if (why != RELAY_LOSS_NONE && launch_owns(l) && !launch_marked(l)) {
		char label[48];
		snprintf(label, sizeof label, "the relay's runtime, pid %ld",
			 l->own_pid);
		l->stop =
			proc_stop_new(l->loop, label, 0, launch_stopped_cb, l);
		proc_stop_add(l->stop, (pid_t)l->own_pid, l->own_start);
		l->step = LS_STOPPING;
		proc_stop_start(l->stop);
		return;
	}
	/* Never from inside the caller: the first look on the next turn. */
	uv_timer_start(&l->timer, launch_look_cb, 0, 0);
}

const char *launch_socket(const struct launch *l)
{
	return l->socket;
}
