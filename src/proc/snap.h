/*
 * One look at every process: each one's stat line (pid, state, parent,
 * group, session, start time, resident pages), read once and sorted by
 * pid. Whatever must prove a process ours, find what an owner token
 * reaches, reap adopted zombies or count a group's memory walks a snapshot,
 * never /proc itself. A snapshot is a moment: a process in it may be gone,
 * and its pid taken, by the time it is used, which is why whatever reads
 * more of a process or signals it goes by pid and start time.
 */
#ifndef MCPV_PROC_SNAP_H
#define MCPV_PROC_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/procfs.h"

/* The longest environment value a snapshot compares or hands out. */
#define PROC_SNAP_VALUE_MAX 256
/* Deeper process trees than this are not followed to an ancestor. */
#define PROC_SNAP_DEPTH_MAX 64

struct proc_snap;

/* Reads the stat line of every process (the caller too; zombies too). 0,
 * or -errno when /proc cannot be listed. Processes that end while it reads
 * are left out. */
int proc_snap_take(struct proc_snap **out);
/* NULL does nothing. */
void proc_snap_free(struct proc_snap *s);

size_t proc_snap_count(const struct proc_snap *s);
/* The i-th process, in pid order. */
const struct procfs_stat *proc_snap_at(const struct proc_snap *s, size_t i);
/* The process pid, or NULL when it was not there. */
const struct procfs_stat *proc_snap_find(const struct proc_snap *s, pid_t pid);
/* Whether ancestor is above st (its parent, its parent's parent, ...). */
bool proc_snap_descends(const struct proc_snap *s, const struct procfs_stat *st,
			pid_t ancestor);

/* The value of name in the environment of the process st describes, in
 * out (at most size-1 bytes, NUL-terminated), only while it is still that
 * process: the start time is read again after the environment, so a pid
 * that changed hands meanwhile is never credited with its new owner's
 * value. Another user's process is never read. 0; -ENOENT (no such
 * variable, or gone); -ESRCH (the pid changed hands); -EPERM; -errno. */
int proc_snap_environ(const struct procfs_stat *st, uid_t uid, const char *name,
		      char *out, size_t size);

/* A process proved to carry an owner value. */
struct proc_owned {
	pid_t pid;
	pid_t pgrp;
	uint64_t start_time;
	size_t which; /* index into the values searched for */
};

/* Every live process of uid but the caller whose environment holds
 * name=values[i] for some i, in *out (caller frees; NULL when none).
 * ancestor > 0: only its descendants (a subreaper finds all that its
 * children left behind there, and reads no other environment). */
void proc_snap_owned(const struct proc_snap *s, uid_t uid, pid_t ancestor,
		     const char *name, const char *const *values,
		     size_t nvalues, struct proc_owned **out, size_t *count);

#endif
