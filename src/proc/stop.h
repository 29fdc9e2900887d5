/*
 * The stop ladder, the one way mcpvisor ends processes: SIGTERM, a grace,
 * SIGKILL, a last wait, then giving up, with one set of constants. It
 * stops processes known by pid and start time, one process group if asked
 * (its members found in a snapshot), and the processes that carry an owner
 * token if asked (those that left the group, or outlived their parent);
 * whatever it finds later joins at the step it is on. Each end is an
 * event: a pidfd per process, readable when it exits, child or not; a
 * timer per step. Used by the supervisor, the relay's launcher and the
 * journal's reconcile.
 */
#ifndef MCPV_PROC_STOP_H
#define MCPV_PROC_STOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "proc/owner.h"

/* From SIGTERM to SIGKILL, unless the caller gives its own grace (a
 * server's config). */
#define PROC_STOP_GRACE_MS 2000
/* After SIGKILL a process goes at once unless stuck in the kernel: past
 * this the ladder gives up on what is left. */
#define PROC_KILL_WAIT_MS 1000

struct proc_stop;

/* The stop is over: everything is gone, or PROC_KILL_WAIT_MS after
 * SIGKILL it gave up (logged); left counts what it knows is still there
 * (processes, and the group as one), 0 when nothing. Called once, never
 * from inside a call into the ladder; proc_stop_free may be called from
 * it. */
typedef void (*proc_stop_cb)(void *ctx, size_t left);

/* A ladder with nothing to stop yet. label names it in the log ("pid
 * 123"; copied). grace_ms 0: PROC_STOP_GRACE_MS. */
struct proc_stop *proc_stop_new(uv_loop_t *loop, const char *label,
				uint64_t grace_ms, proc_stop_cb done,
				void *ctx);
/* Stops at once (no done callback after this); whatever it was stopping
 * is no longer signalled. The memory goes once libuv has closed its
 * handles and its search is back, so the loop must run on; closed(ctx),
 * when not NULL, says when. NULL does nothing. */
void proc_stop_free(struct proc_stop *s, void (*closed)(void *ctx));

/* A process to stop, while it is the one that started at start_time. 0;
 * -ESRCH when it is not there (nothing to stop). Added after the start,
 * it gets the signal of the step the ladder is on at once. A child of the
 * caller's stays the caller's to reap; what the ladder finds by itself
 * (group members, token carriers) it reaps when they die as our children,
 * never one that libuv waits for. */
int proc_stop_add(struct proc_stop *s, pid_t pid, uint64_t start_time);
/* The process group led by leader, a child libuv spawned and reaps (the
 * ladder never does): signalled as a group, its members found and watched.
 * The group counts as gone only once proc_stop_leader_reaped has said so.
 * Before proc_stop_start. */
void proc_stop_group(struct proc_stop *s, pid_t leader);
/* libuv has reaped the group's leader. */
void proc_stop_leader_reaped(struct proc_stop *s);
/* Processes of our uid whose environment holds PROC_OWNER_ENV=token are
 * stopped too, wherever they are (below us when we are a subreaper): found
 * by a search in the thread pool when the ladder starts, at each step, and
 * once the group is gone (the search that proves nothing is left). The
 * string is copied. Before proc_stop_start. */
void proc_stop_token(struct proc_stop *s, const char *token);

/* Sends SIGTERM (SIGKILL to a stopped process, which cannot act on
 * SIGTERM) and waits the grace; then SIGKILL and PROC_KILL_WAIT_MS. With
 * nothing left the callback comes on the next loop turn. */
void proc_stop_start(struct proc_stop *s);
/* The signal of the step the ladder is on, 0 before the start. */
int proc_stop_signal(const struct proc_stop *s);

#endif
