/*
 * The one reader of /proc for one process: its stat fields, owner and
 * environment, each read bounded, and the pidfd-checked signal that never
 * reaches a process that took over a pid we knew. Walks over every process
 * go through a snapshot (snap.c).
 */
#include "proc/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/xmalloc.h"

/* The field numbers of proc(5). */
#define PROCFS_F_STATE 3
#define PROCFS_F_PPID 4
#define PROCFS_F_PGRP 5
#define PROCFS_F_SESSION 6
#define PROCFS_F_START 22
#define PROCFS_F_RSS 24

static int procfs_parse_int(const char *s, size_t n, pid_t *out)
{
	long v = 0;
	if (n == 0 || n > 10)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	if (v > INT_MAX)
		return -EINVAL;
	*out = (pid_t)v;
	return 0;
}

static int procfs_parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	if (n == 0 || n > 20)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		uint64_t d = (uint64_t)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int procfs_parse_stat(const char *text, size_t len, struct procfs_stat *out)
{
	memset(out, 0, sizeof *out);
	const char *open = memchr(text, '(', len);
	const char *close = NULL;
	for (size_t i = len; i > 0; i--) {
		if (text[i - 1] == ')') {
			close = text + i - 1;
			break;
		}
	}
	if (open == NULL || close == NULL || close < open)
		return -EINVAL;
	/* Field 1, the pid, comes before the comm. */
	const char *p = text;
	while (p < open && *p == ' ')
		p++;
	size_t n = 0;
	while (p + n < open && p[n] != ' ')
		n++;
	if (procfs_parse_int(p, n, &out->pid) < 0)
		return -EINVAL;
	const char *end = text + len;
	p = close + 1;
	for (int field = PROCFS_F_STATE; field <= PROCFS_F_RSS; field++) {
		while (p < end && *p == ' ')
			p++;
		const char *tok = p;
		while (p < end && *p != ' ' && *p != '\n' && *p != '\0')
			p++;
		size_t tlen = (size_t)(p - tok);
		/* The fields after the start time are read when there. */
		if (tlen == 0 && field > PROCFS_F_START)
			break;
		if (tlen == 0)
			return -EINVAL;
		int rc = 0;
		switch (field) {
		case PROCFS_F_STATE:
			if (tlen != 1)
				return -EINVAL;
			out->state = tok[0];
			break;
		case PROCFS_F_PPID:
			rc = procfs_parse_int(tok, tlen, &out->ppid);
			break;
		case PROCFS_F_PGRP:
			rc = procfs_parse_int(tok, tlen, &out->pgrp);
			break;
		case PROCFS_F_SESSION:
			rc = procfs_parse_int(tok, tlen, &out->sid);
			break;
		case PROCFS_F_START:
			rc = procfs_parse_u64(tok, tlen, &out->start_time);
			break;
		case PROCFS_F_RSS:
			/* A signed count that is never negative in practice:
			 * a negative one reads as none. */
			if (tok[0] != '-')
				rc = procfs_parse_u64(tok, tlen,
						      &out->rss_pages);
			break;
		default:
			break;
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Reads up to size bytes of path; -ENOENT once the process is gone (ESRCH
 * from a read of a dying process counts as gone too). */
static int procfs_read(const char *path, char *buf, size_t size, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? -ENOENT : -errno;
	size_t n = 0;
	int rc = 0;
	while (n < size) {
		ssize_t r = read(fd, buf + n, size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = errno == ESRCH ? -ENOENT : -errno;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	*len = n;
	return rc;
}

int procfs_read_stat(pid_t pid, struct procfs_stat *out)
{
	char path[64], buf[PROCFS_STAT_MAX];
	size_t len = 0;
	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	int rc = procfs_read(path, buf, sizeof buf, &len);
	if (rc < 0)
		return rc;
	rc = procfs_parse_stat(buf, len, out);
	if (rc == 0 && out->pid != pid)
		return -EINVAL;
	return rc;
}

uint64_t procfs_start_time(pid_t pid)
{
	struct procfs_stat st;
	return procfs_read_stat(pid, &st) == 0 ? st.start_time : 0;
}

bool procfs_state_dead(char state)
{
	return state == 'Z' || state == 'X' || state == 'x';
}

int procfs_uid(pid_t pid, uid_t *out)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%ld", (long)pid);
	if (stat(path, &st) < 0)
		return -errno;
	*out = st.st_uid;
	return 0;
}

const char *procfs_environ_find(const char *env, size_t len, const char *name,
				size_t *vlen)
{
	size_t nlen = strlen(name);
	size_t start = 0;
	for (size_t i = 0; i < len; i++) {
		if (env[i] != '\0')
			continue;
		size_t elen = i - start;
		if (elen > nlen && env[start + nlen] == '=' &&
		    memcmp(env + start, name, nlen) == 0) {
			*vlen = elen - nlen - 1;
			return env + start + nlen + 1;
		}
		start = i + 1;
	}
	return NULL;
}

int procfs_environ_get(pid_t pid, uid_t uid, const char *name, char *out,
		       size_t size)
{
	char path[64];
	uid_t owner = (uid_t)-1;
	int rc = procfs_uid(pid, &owner);
	if (rc < 0)
		return rc;
	/* Another user's process is never read, let alone proved ours. */
	if (owner != uid)
		return -EPERM;
	snprintf(path, sizeof path, "/proc/%ld/environ", (long)pid);
	char *buf = xmalloc(PROCFS_ENVIRON_MAX);
	size_t len = 0;
	rc = procfs_read(path, buf, PROCFS_ENVIRON_MAX, &len);
	if (rc < 0)
		goto out;
	size_t vlen = 0;
	const char *v = procfs_environ_find(buf, len, name, &vlen);
	if (v == NULL || vlen >= size) {
		rc = -ENOENT;
		goto out;
	}
	memcpy(out, v, vlen);
	out[vlen] = '\0';
out:
	free(buf);
	return rc;
}

int procfs_cmdline(pid_t pid, char *buf, size_t size, size_t *len)
{
	char path[64];
	*len = 0;
	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)pid);
	return procfs_read(path, buf, size, len);
}

bool procfs_alive(pid_t pid, uint64_t start_time)
{
	struct procfs_stat st;
	return procfs_read_stat(pid, &st) == 0 &&
	       !procfs_state_dead(st.state) && st.start_time == start_time;
}

bool procfs_signal(pid_t pid, uint64_t start_time, int sig)
{
	if (pid <= 0)
		return false;
	int fd = pidfd_open(pid, 0);
	/* ENOSYS, or EPERM from a seccomp filter that predates pidfds. */
	if (fd < 0 && errno != ENOSYS && errno != EPERM)
		return false;
	bool sent = false;
	if (procfs_alive(pid, start_time)) {
		if (fd >= 0)
			sent = pidfd_send_signal(fd, sig, NULL, 0) == 0;
		else
			sent = kill(pid, sig) == 0;
	}
	if (fd >= 0)
		close(fd);
	return sent;
}
