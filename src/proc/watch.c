/*
 * A process's exit through its pidfd (watch.h): opened, then proved to be
 * the process named by pid and start time, then polled for readability.
 */
#include "proc/watch.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "proc/procfs.h"
#include "util/xmalloc.h"

struct proc_watch {
	uv_poll_t poll;
	int fd;
	pid_t pid;
	bool fired;
	proc_watch_cb cb;
	void *ctx;
};

static void proc_watch_poll_cb(uv_poll_t *p, int status, int events)
{
	struct proc_watch *w = p->data;
	/* Readable means exited; an error on a pidfd means the same. */
	uv_poll_stop(p);
	if (w->fired)
		return;
	w->fired = true;
	w->cb(w->ctx, w);
}

int proc_watch_new(uv_loop_t *loop, pid_t pid, uint64_t start_time,
		   proc_watch_cb cb, void *ctx, struct proc_watch **out)
{
	*out = NULL;
	if (pid <= 0)
		return -ESRCH;
	int fd = pidfd_open(pid, 0);
	if (fd < 0)
		return errno == ESRCH ? -ESRCH : -errno;
	/* The pidfd names whatever held pid at the open: only now can the
	 * start time prove that it is the process meant. */
	if (!procfs_alive(pid, start_time)) {
		close(fd);
		return -ESRCH;
	}
	struct proc_watch *w = xcalloc(1, sizeof *w);
	w->fd = fd;
	w->pid = pid;
	w->cb = cb;
	w->ctx = ctx;
	int rc = uv_poll_init(loop, &w->poll, fd);
	if (rc < 0) {
		close(fd);
		free(w);
		return rc;
	}
	w->poll.data = w;
	uv_poll_start(&w->poll, UV_READABLE, proc_watch_poll_cb);
	*out = w;
	return 0;
}

static void proc_watch_closed_cb(uv_handle_t *h)
{
	struct proc_watch *w = h->data;
	close(w->fd);
	free(w);
}

void proc_watch_free(struct proc_watch *w)
{
	if (w == NULL)
		return;
	w->fired = true;
	uv_close((uv_handle_t *)&w->poll, proc_watch_closed_cb);
}

pid_t proc_watch_pid(const struct proc_watch *w)
{
	return w->pid;
}

bool proc_watch_signal(struct proc_watch *w, int sig)
{
	return pidfd_send_signal(w->fd, sig, NULL, 0) == 0;
}
