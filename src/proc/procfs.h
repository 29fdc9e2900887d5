/*
 * The one reader of /proc for one process: its stat fields (state, parent,
 * group, session, start time, resident pages), its owner uid, one variable
 * of its environment, and a signal that reaches a process only while it is
 * still the one we identified by pid and start time. Every read is bounded.
 * A look at every process is a snapshot (proc/snap.h).
 */
#ifndef MCPV_PROC_PROCFS_H
#define MCPV_PROC_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* /proc/PID/stat is a few hundred bytes; comm is at most 16. */
#define PROCFS_STAT_MAX 4096
/* The kernel caps one environment at what fits in the stack rlimit; a
 * process whose environment is larger than this is read only this far. */
#define PROCFS_ENVIRON_MAX (256 * 1024)

struct procfs_stat {
	pid_t pid;
	char state; /* 'R', 'S', ..., 'Z' zombie, 'X' dead */
	pid_t ppid;
	pid_t pgrp;
	pid_t sid;	     /* session */
	uint64_t start_time; /* field 22: clock ticks since boot */
	uint64_t rss_pages;  /* field 24: resident pages, 0 when not given */
};

/* Parses the text of /proc/PID/stat. Fields are counted after the last
 * ')', since comm may hold spaces and parentheses; those after the start
 * time may be missing. 0 or -EINVAL. */
int procfs_parse_stat(const char *text, size_t len, struct procfs_stat *out);

/* Reads /proc/PID/stat. 0, -ENOENT once the pid is free, or -errno. */
int procfs_read_stat(pid_t pid, struct procfs_stat *out);

/* The start time of pid, 0 when it does not exist. */
uint64_t procfs_start_time(pid_t pid);

/* A zombie or a dead process: it only waits to be reaped. */
bool procfs_state_dead(char state);

/* The owner of /proc/PID (the process's effective uid; root while it is
 * not dumpable). 0 or -errno. */
int procfs_uid(pid_t pid, uid_t *out);

/* In env (NUL-separated entries, as /proc/PID/environ), the value of the
 * entry NAME=..., or NULL. Only NUL-terminated entries count: one cut off
 * by a read bound proves nothing. *vlen gets the value's length. */
const char *procfs_environ_find(const char *env, size_t len, const char *name,
				size_t *vlen);

/* Copies the value of NAME in pid's environment into out (at most size-1
 * bytes, NUL-terminated). Reads at most PROCFS_ENVIRON_MAX bytes, only of
 * processes whose /proc entry belongs to uid. 0; -ENOENT when the variable
 * is not there (or the value does not fit); -EPERM for another user's
 * process; -errno. */
int procfs_environ_get(pid_t pid, uid_t uid, const char *name, char *out,
		       size_t size);

/* The arguments of pid, NUL-separated as /proc/PID/cmdline holds them,
 * in buf (at most size bytes, not terminated), *len their length. 0,
 * -ENOENT once it is gone, or -errno. */
int procfs_cmdline(pid_t pid, char *buf, size_t size, size_t *len);

/* Sends sig to pid only if it still is the live process that started at
 * start_time. With a pidfd the check and the signal refer to the same
 * process, so a pid reused in between is never hit; kill() after the check
 * is the fallback where pidfds are missing. True when the signal was sent. */
bool procfs_signal(pid_t pid, uint64_t start_time, int sig);

/* Still the live process (not a zombie) that started at start_time? */
bool procfs_alive(pid_t pid, uint64_t start_time);

#endif
