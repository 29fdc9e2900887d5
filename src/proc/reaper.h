/*
 * Reaping the orphans the runtime adopts as a subreaper (reaper.c).
 */
#ifndef MCPV_PROC_REAPER_H
#define MCPV_PROC_REAPER_H

#include <stddef.h>
#include <uv.h>

/* Reaps every zombie child of this process that is not one of loop's live
 * process handles (libuv reaps those). Returns how many were reaped. */
size_t reaper_sweep(uv_loop_t *loop);

/* Sweeps on every SIGCHLD from now on. sig is the caller's: initialised
 * here, unreferenced (it does not keep the loop alive), closed by the
 * caller with its other handles. */
void reaper_start(uv_loop_t *loop, uv_signal_t *sig);

#endif
