/*
 * One process's end as a loop event: a pidfd, readable once the process
 * has exited (a child of ours or not), polled by the loop. The process is
 * named by pid and start time, so a pid that changed hands is never
 * watched, or signalled, in its place.
 */
#ifndef MCPV_PROC_WATCH_H
#define MCPV_PROC_WATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

struct proc_watch;

/* The process has exited (it may wait to be reaped). Called once; the
 * watch may be freed inside. */
typedef void (*proc_watch_cb)(void *ctx, struct proc_watch *w);

/* Watches pid while it is the live process that started at start_time. 0;
 * -ESRCH when it is not (already gone: nothing to wait for); -ENOSYS or
 * -EPERM when this system gives no pidfd (the caller must look again by
 * itself); -errno. */
int proc_watch_new(uv_loop_t *loop, pid_t pid, uint64_t start_time,
		   proc_watch_cb cb, void *ctx, struct proc_watch **out);
/* No callback after this; the memory goes once libuv has closed the
 * handle, so the loop must run on. NULL does nothing. */
void proc_watch_free(struct proc_watch *w);

pid_t proc_watch_pid(const struct proc_watch *w);
/* Sends sig to the very process watched, never to one that took its pid.
 * True when sent; false once it has exited. */
bool proc_watch_signal(struct proc_watch *w, int sig);

#endif
