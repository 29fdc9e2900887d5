/*
 * Reaping the orphans the runtime adopts as a subreaper (reaper.c), and
 * the one rule for reaping a child: never one that libuv waits for.
 */
#ifndef MCPV_PROC_REAPER_H
#define MCPV_PROC_REAPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

/* Reaps every zombie child of this process that is not one of loop's live
 * process handles (libuv reaps those). Returns how many were reaped. */
size_t reaper_sweep(uv_loop_t *loop);

/* Reaps pid when it is a zombie child of this process that started at
 * start_time and not one of loop's live process handles: what the stop
 * ladder ends below a subreaper. True when reaped. */
bool reaper_reap(uv_loop_t *loop, pid_t pid, uint64_t start_time);

/* Sweeps on every SIGCHLD from now on. sig is the caller's: initialised
 * here, unreferenced (it does not keep the loop alive), closed by the
 * caller with its other handles. */
void reaper_start(uv_loop_t *loop, uv_signal_t *sig);

#endif
