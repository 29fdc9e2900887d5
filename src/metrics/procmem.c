/*
 * Resident memory of process groups and of the runtime, read from
 * /proc/PID/stat and /proc/self/statm (procmem.h).
 */
#include "metrics/procmem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/procfs.h"

/* Field numbers of /proc/PID/stat (man 5 proc). */
#define STAT_PGRP 5
#define STAT_SESSION 6
#define STAT_RSS 24

int procmem_parse_stat(const char *text, size_t len, pid_t *pgrp, pid_t *sid,
		       uint64_t *rss_pages)
{
	const char *end = text + len;
	const char *p = NULL;
	for (const char *q = text; q < end; q++)
		if (*q == ')')
			p = q;
	if (p == NULL)
		return -EINVAL;
	p++; /* field 3 (state) follows */
	int field = 2;
	long long got[STAT_RSS + 1] = {0};
	while (p < end && field < STAT_RSS) {
		while (p < end && *p == ' ')
			p++;
		if (p >= end)
			break;
		field++;
		const char *start = p;
		while (p < end && *p != ' ' && *p != '\n')
			p++;
		if (field == STAT_PGRP || field == STAT_SESSION ||
		    field == STAT_RSS) {
			char num[32];
			size_t n = (size_t)(p - start);
			if (n == 0 || n >= sizeof num)
				return -EINVAL;
			memcpy(num, start, n);
			num[n] = '\0';
			char *stop;
			errno = 0;
			got[field] = strtoll(num, &stop, 10);
			if (errno || *stop != '\0')
				return -EINVAL;
		}
	}
	if (field < STAT_RSS)
		return -EINVAL;
	*pgrp = (pid_t)got[STAT_PGRP];
	*sid = (pid_t)got[STAT_SESSION];
	*rss_pages = got[STAT_RSS] > 0 ? (uint64_t)got[STAT_RSS] : 0;
	return 0;
}

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
	pid_t *pids = NULL;
	size_t npids = 0;
	int rc = procfs_list_pids(&pids, &npids);
	if (rc < 0)
		return rc;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	char path[64], text[PROCFS_STAT_MAX];
	for (size_t i = 0; i < npids; i++) {
		snprintf(path, sizeof path, "/proc/%d/stat", (int)pids[i]);
		ssize_t len = procmem_read(path, text, sizeof text);
		pid_t pgrp, sid;
		uint64_t pages;
		if (len <= 0 || procmem_parse_stat(text, (size_t)len, &pgrp,
						   &sid, &pages) < 0)
			continue; /* gone meanwhile */
		long at = procmem_find(groups, n, pgrp);
		if (at < 0)
			at = procmem_find(groups, n, sid);
		if (at >= 0)
			rss[at] += pages * page;
	}
	free(pids);
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
