/*
 * Resident memory of process groups, summed over a snapshot of every
 * process (proc/snap.h), and of the runtime, from /proc/self/statm
 * (procmem.h).
 */
#include "metrics/procmem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/snap.h"

/* Reads a small /proc file into buf (NUL-terminated); its length or -1. */
static ssize_t procmem_read(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

static long procmem_find(const pid_t *groups, size_t n, pid_t g)
{
	for (size_t i = 0; i < n; i++)
		if (groups[i] == g)
			return (long)i;
	return -1;
}

int procmem_groups_rss(const pid_t *groups, size_t n, uint64_t *rss)
{
	if (n > PROCMEM_MAX_GROUPS)
		n = PROCMEM_MAX_GROUPS;
	memset(rss, 0, n * sizeof *rss);
	if (n == 0)
		return 0;
	struct proc_snap *snap = NULL;
	int rc = proc_snap_take(&snap);
	if (rc < 0)
		return rc;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	for (size_t i = 0; i < proc_snap_count(snap); i++) {
		const struct procfs_stat *st = proc_snap_at(snap, i);
		long at = procmem_find(groups, n, st->pgrp);
		if (at < 0)
			at = procmem_find(groups, n, st->sid);
		if (at >= 0)
			rss[at] += st->rss_pages * page;
	}
	proc_snap_free(snap);
	return 0;
}

uint64_t procmem_self_rss(void)
{
	char text[256];
	if (procmem_read("/proc/self/statm", text, sizeof text) <= 0)
		return 0;
	unsigned long long size = 0, resident = 0;
	if (sscanf(text, "%llu %llu", &size, &resident) != 2)
		return 0;
	return resident * (uint64_t)sysconf(_SC_PAGESIZE);
}
