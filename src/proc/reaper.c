/*
 * Orphans the runtime adopts: it is a subreaper, so that what its servers
 * leave behind comes to it to be found and stopped; but so do the daemons
 * an engine CLI starts (podman's conmon, one per container, and the
 * cleanup it runs), which end as zombies of ours, and libuv reaps only the
 * processes it spawned. On SIGCHLD every zombie child that is not one of
 * the loop's live process handles is reaped, so none piles up over a run.
 */
#include "proc/reaper.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/procfs.h"
#include "proc/snap.h"
#include "util/log.h"
#include "util/xmalloc.h"

struct reaper_pids {
	pid_t *pid;
	size_t n;
};

/* libuv's own children: it reaps them (and reads their exit status). */
static void reaper_collect_cb(uv_handle_t *h, void *arg)
{
	struct reaper_pids *s = arg;
	if (h->type != UV_PROCESS || !uv_is_active(h))
		return;
	s->pid = xrealloc(s->pid, (s->n + 1) * sizeof *s->pid);
	s->pid[s->n++] = ((uv_process_t *)h)->pid;
}

static bool reaper_is_libuvs(const struct reaper_pids *s, pid_t pid)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->pid[i] == pid)
			return true;
	}
	return false;
}

/* A zombie child of ours: its pid cannot be reused until this wait, so
 * this reaps exactly the one read. */
static bool reaper_wait(pid_t pid)
{
	int status;
	pid_t r;
	while ((r = waitpid(pid, &status, WNOHANG)) < 0 && errno == EINTR)
		;
	if (r != pid)
		return false;
	log_debug("reaped adopted pid %d", (int)r);
	return true;
}

size_t reaper_sweep(uv_loop_t *loop)
{
	struct proc_snap *snap = NULL;
	if (proc_snap_take(&snap) < 0)
		return 0;
	pid_t self = getpid();
	struct reaper_pids libuvs = {0};
	bool walked = false;
	size_t reaped = 0;
	for (size_t i = 0; i < proc_snap_count(snap); i++) {
		const struct procfs_stat *st = proc_snap_at(snap, i);
		if (st->ppid != self || st->state != 'Z')
			continue;
		if (!walked) {
			uv_walk(loop, reaper_collect_cb, &libuvs);
			walked = true;
		}
		if (!reaper_is_libuvs(&libuvs, st->pid))
			reaped += reaper_wait(st->pid);
	}
	free(libuvs.pid);
	proc_snap_free(snap);
	return reaped;
}

bool reaper_reap(uv_loop_t *loop, pid_t pid, uint64_t start_time)
{
	struct procfs_stat st;
	if (procfs_read_stat(pid, &st) < 0 || st.state != 'Z' ||
	    st.ppid != getpid() || st.start_time != start_time)
		return false;
	struct reaper_pids libuvs = {0};
	uv_walk(loop, reaper_collect_cb, &libuvs);
	bool ours = !reaper_is_libuvs(&libuvs, pid);
	free(libuvs.pid);
	return ours && reaper_wait(pid);
}

static void reaper_signal_cb(uv_signal_t *h, int signum)
{
	reaper_sweep(h->loop);
}

void reaper_start(uv_loop_t *loop, uv_signal_t *sig)
{
	uv_signal_init(loop, sig);
	uv_signal_start(sig, reaper_signal_cb, SIGCHLD);
	uv_unref((uv_handle_t *)sig);
}
