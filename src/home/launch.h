/*
 * Starting a runtime in the background: `mcpvisor serve ARGS` detached from
 * whoever starts it (its own session, no terminal, not its child), output
 * to a log file in the home's state directory. Used by `mcpvisor restart`
 * and by the relay's launcher.
 */
#ifndef MCPV_HOME_LAUNCH_H
#define MCPV_HOME_LAUNCH_H

#include <stdint.h>
#include <sys/types.h>

/* The log every background runtime of a home appends to (in STATE); the
 * runtime rotates it to LAUNCH_LOG_NAME.1 (util/log.h). */
#define LAUNCH_LOG_NAME "runtime.log"

/* Starts exe (NULL: this binary) as `serve` with args (NULL-terminated,
 * the arguments after "serve") in cwd (NULL: ours), with env entries
 * "NAME=VALUE" set or "NAME" removed (NULL-terminated; may be NULL). The
 * new process is a grandchild: reparented at once, so no zombie is left to
 * whoever started it. *pid and *start (procfs start time, for
 * procfs_signal) name it. 0, or -errno when it could not be started (exec
 * failed: the errno of exec). */
int runtime_launch(const char *home, const char *exe, const char *cwd,
		   char *const args[], char *const env[], pid_t *pid,
		   uint64_t *start);

#endif
