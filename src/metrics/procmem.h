/*
 * Memory of processes, from /proc: the resident set of every process in
 * given process groups (a server's program and whatever it started in its
 * group or session), and the runtime's own. These are blocking reads of
 * /proc: the runtime runs them off the loop (a thread-pool job).
 */
#ifndef MCPV_METRICS_PROCMEM_H
#define MCPV_METRICS_PROCMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Groups read in one pass at most; the rest read as 0. */
#define PROCMEM_MAX_GROUPS 4096

/* rss[i] gets the resident bytes of all live processes whose process
 * group is groups[i], or whose session is when none's group is: the
 * programs the runtime starts lead their own session, so a grandchild
 * that moved to a group of its own still counts. 0, or -errno when /proc
 * cannot be listed (rss is all 0 then). */
int procmem_groups_rss(const pid_t *groups, size_t n, uint64_t *rss);

/* The resident bytes of the calling process; 0 when unknown. */
uint64_t procmem_self_rss(void);

#endif
