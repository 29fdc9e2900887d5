/*
 * The restart mark: a small file in the home's state directory that
 * `mcpvisor restart` (no server name) leaves while it replaces the runtime.
 * A relay that finds the runtime gone reads it and waits through the
 * restart instead of starting a second runtime. It names the runtime being
 * replaced, the restart process that wrote it (pid and start time, so a
 * mark whose restart died is known for what it is) and when it was written.
 * The file is STATE/restart.mark: the old pid alone on its first line (what
 * relays of earlier versions read), a JSON object on the second.
 */
#ifndef MCPV_HOME_MARK_H
#define MCPV_HOME_MARK_H

#include <stdint.h>

/* A restart stops the old runtime (at most its drain grace plus the stop
 * wait) and starts the new one; a mark older than this is left behind. */
#define MARK_MAX_AGE_MS (120 * 1000)

struct restart_mark {
	long old_pid;	   /* the runtime being replaced (0: none ran) */
	long by_pid;	   /* the `mcpvisor restart` process */
	uint64_t by_start; /* its start time (procfs ticks) */
	int64_t time_ms;   /* when written, ms since the epoch */
};

/* Writes the mark of home (NULL: MCPVISOR_HOME, then XDG) naming old_pid
 * and this process. 0 or -errno. */
int mark_write(const char *home, long old_pid);
/* Reads the mark. 0: a restart is under way (*m filled); -ENOENT: no mark;
 * -ESTALE: a mark left behind (its restart process is gone, or it is older
 * than MARK_MAX_AGE_MS; *m filled), to be ignored; -errno otherwise. */
int mark_read(const char *home, struct restart_mark *m);
/* Removes the mark. 0 (also when there was none) or -errno. */
int mark_clear(const char *home);

#endif
