/*
 * Process identity from /proc: a process's start time, which with its pid
 * tells it apart from a later process given the same pid.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/stdio.h"

#define STDIO_PROC_STAT_MAX 4096

uint64_t proc_start_time(pid_t pid)
{
	char path[64];
	char buf[STDIO_PROC_STAT_MAX];
	size_t len = 0;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return 0;
	while (len < sizeof buf - 1) {
		ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
		if (n > 0) {
			len += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		break;
	}
	close(fd);
	buf[len] = '\0';

	/* Field 2 is "(comm)", and comm may hold spaces and parens. */
	char *p = strrchr(buf, ')');
	if (p == NULL)
		return 0;
	p++;
	for (int field = 3; field < 22; field++) {
		while (*p == ' ')
			p++;
		while (*p != ' ' && *p != '\0')
			p++;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 10);
	if (errno != 0 || end == p)
		return 0;
	return (uint64_t)v;
}
