/*
 * The snapshot of every process (snap.h): the list of /proc, one stat line
 * each, sorted by pid for lookups and walks up the tree; and the owner
 * searches over it, which read an environment only where the stat lines
 * leave a process in question.
 */
#include "proc/snap.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/xmalloc.h"

struct proc_snap {
	struct procfs_stat *all; /* sorted by pid */
	size_t n;
};

/* Every numeric entry of /proc. */
static int proc_snap_pids(pid_t **out, size_t *count)
{
	DIR *d = opendir("/proc");
	if (d == NULL)
		return -errno;
	pid_t *pids = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (de->d_name[0] < '1' || de->d_name[0] > '9' ||
		    *end != '\0' || pid <= 0 || pid > INT32_MAX)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			pids = xrealloc(pids, cap * sizeof *pids);
		}
		pids[n++] = (pid_t)pid;
	}
	closedir(d);
	*out = pids;
	*count = n;
	return 0;
}

static int proc_snap_cmp(const void *a, const void *b)
{
	const struct procfs_stat *x = a, *y = b;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

int proc_snap_take(struct proc_snap **out)
{
	pid_t *pids = NULL;
	size_t npids = 0;
	*out = NULL;
	int rc = proc_snap_pids(&pids, &npids);
	if (rc < 0)
		return rc;
	struct proc_snap *s = xcalloc(1, sizeof *s);
	s->all = xcalloc(npids ? npids : 1, sizeof *s->all);
	for (size_t i = 0; i < npids; i++) {
		if (procfs_read_stat(pids[i], &s->all[s->n]) == 0)
			s->n++;
	}
	free(pids);
	qsort(s->all, s->n, sizeof *s->all, proc_snap_cmp);
	*out = s;
	return 0;
}

void proc_snap_free(struct proc_snap *s)
{
	if (s == NULL)
		return;
	free(s->all);
	free(s);
}

size_t proc_snap_count(const struct proc_snap *s)
{
	return s->n;
}

const struct procfs_stat *proc_snap_at(const struct proc_snap *s, size_t i)
{
	return i < s->n ? &s->all[i] : NULL;
}

const struct procfs_stat *proc_snap_find(const struct proc_snap *s, pid_t pid)
{
	struct procfs_stat key = {.pid = pid};
	return bsearch(&key, s->all, s->n, sizeof *s->all, proc_snap_cmp);
}

bool proc_snap_descends(const struct proc_snap *s, const struct procfs_stat *st,
			pid_t ancestor)
{
	pid_t ppid = st->ppid;
	for (int depth = 0; depth < PROC_SNAP_DEPTH_MAX && ppid > 1; depth++) {
		if (ppid == ancestor)
			return true;
		const struct procfs_stat *up = proc_snap_find(s, ppid);
		if (up == NULL)
			return false;
		ppid = up->ppid;
	}
	return false;
}

int proc_snap_environ(const struct procfs_stat *st, uid_t uid, const char *name,
		      char *out, size_t size)
{
	int rc = procfs_environ_get(st->pid, uid, name, out, size);
	if (rc < 0)
		return rc;
	struct procfs_stat after;
	rc = procfs_read_stat(st->pid, &after);
	if (rc < 0)
		return rc;
	return after.start_time == st->start_time ? 0 : -ESRCH;
}

void proc_snap_owned(const struct proc_snap *s, uid_t uid, pid_t ancestor,
		     const char *name, const char *const *values,
		     size_t nvalues, struct proc_owned **out, size_t *count)
{
	pid_t self = getpid();
	struct proc_owned *found = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct procfs_stat *st = &s->all[i];
		char value[PROC_SNAP_VALUE_MAX];
		/* The stat line rules most processes out before any
		 * environment is read. */
		if (st->pid == self || procfs_state_dead(st->state))
			continue;
		if (ancestor > 0 && !proc_snap_descends(s, st, ancestor))
			continue;
		if (proc_snap_environ(st, uid, name, value, sizeof value) < 0)
			continue;
		for (size_t k = 0; k < nvalues; k++) {
			if (strcmp(value, values[k]) != 0)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				found = xrealloc(found, cap * sizeof *found);
			}
			found[n++] = (struct proc_owned){st->pid, st->pgrp,
							 st->start_time, k};
			break;
		}
	}
	*out = found;
	*count = n;
}
