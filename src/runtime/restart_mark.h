/*
 * The restart mark: `mcpvisor restart` (the runtime itself) leaves it in
 * the home's state directory before the old runtime stops, so that a relay
 * that finds the runtime gone waits for the new one instead of starting a
 * second. The file STATE_DIR/restart.mark holds the old runtime's pid and
 * a newline. A mark older than RESTART_MARK_TTL_S is stale (a restart that
 * died half-way) and ignored; the new runtime (or the restart command once
 * it answers) removes it.
 */
#ifndef MCPV_RUNTIME_RESTART_MARK_H
#define MCPV_RUNTIME_RESTART_MARK_H

#include <stdbool.h>

#define RESTART_MARK_NAME "restart.mark"
#define RESTART_MARK_TTL_S 30

/* Writes the mark of home (NULL: MCPVISOR_HOME or XDG) naming old_pid.
 * 0 or -errno. */
int restart_mark_write(const char *home, long old_pid);
/* Whether a fresh mark is there; *old_pid (may be NULL) the pid in it. */
bool restart_mark_pending(const char *home, long *old_pid);
void restart_mark_clear(const char *home);

#endif
