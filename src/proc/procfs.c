/*
 * The one reader of /proc: stat fields, owner, environment and the pid
 * list, each read bounded, and the pidfd-checked signal that never reaches
 * a process that took over a pid we knew.
 */
#include "proc/procfs.h"

#include <dirent.h>
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
#define PROCFS_F_START 22

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
	for (int field = PROCFS_F_STATE; field <= PROCFS_F_START; field++) {
		while (p < end && *p == ' ')
			p++;
		const char *tok = p;
		while (p < end && *p != ' ' && *p != '\n' && *p != '\0')
			p++;
		size_t tlen = (size_t)(p - tok);
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
		case PROCFS_F_START:
			rc = procfs_parse_u64(tok, tlen, &out->start_time);
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

int procfs_list_pids(pid_t **out, size_t *count)
{
	DIR *d = opendir("/proc");
	if (d == NULL)
		return -errno;
	pid_t *pids = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		pid_t pid;
		if (procfs_parse_int(de->d_name, strlen(de->d_name), &pid) <
			    0 ||
		    pid <= 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			pids = xrealloc(pids, cap * sizeof *pids);
		}
		pids[n++] = pid;
	}
	closedir(d);
	*out = pids;
	*count = n;
	return 0;
}

/* The longest value procfs_find_by_env compares. */
#define PROCFS_VALUE_MAX 256
/* Deeper process trees than this are not followed to their ancestor. */
#define PROCFS_DEPTH_MAX 64

static int procfs_stat_cmp(const void *a, const void *b)
{
	const struct procfs_stat *x = a, *y = b;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Whether ancestor is above st in the tree of all (sorted by pid). */
static bool procfs_descends(const struct procfs_stat *all, size_t n,
			    const struct procfs_stat *st, pid_t ancestor)
{
	pid_t ppid = st->ppid;
	for (int depth = 0; depth < PROCFS_DEPTH_MAX && ppid > 1; depth++) {
		if (ppid == ancestor)
			return true;
		struct procfs_stat key = {.pid = ppid};
		const struct procfs_stat *up =
			bsearch(&key, all, n, sizeof *all, procfs_stat_cmp);
		if (up == NULL)
			return false;
		ppid = up->ppid;
	}
	return false;
}

int procfs_find_by_env(uid_t uid, pid_t ancestor, const char *name,
		       const char *const *values, size_t nvalues,
		       struct procfs_owned **out, size_t *count)
{
	pid_t *pids = NULL;
	size_t npids = 0;
	*out = NULL;
	*count = 0;
	int rc = procfs_list_pids(&pids, &npids);
	if (rc < 0)
		return rc;
	/* Stat lines first: cheap, and enough to rule most processes out
	 * before any environment is read. */
	struct procfs_stat *all = xcalloc(npids ? npids : 1, sizeof *all);
	size_t nall = 0;
	for (size_t i = 0; i < npids; i++) {
		if (procfs_read_stat(pids[i], &all[nall]) == 0)
			nall++;
	}
	free(pids);
	qsort(all, nall, sizeof *all, procfs_stat_cmp);
	pid_t self = getpid();
	struct procfs_owned *found = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < nall; i++) {
		const struct procfs_stat *before = &all[i];
		struct procfs_stat after;
		char value[PROCFS_VALUE_MAX];
		uid_t owner = (uid_t)-1;
		pid_t pid = before->pid;
		if (pid == self || procfs_state_dead(before->state))
			continue;
		if (ancestor > 0 &&
		    !procfs_descends(all, nall, before, ancestor))
			continue;
		if (procfs_uid(pid, &owner) < 0 || owner != uid)
			continue;
		if (procfs_environ_get(pid, uid, name, value, sizeof value) < 0)
			continue;
		/* The environment read belongs to the process we looked at. */
		if (procfs_read_stat(pid, &after) < 0 ||
		    after.start_time != before->start_time)
			continue;
		for (size_t k = 0; k < nvalues; k++) {
			if (strcmp(value, values[k]) != 0)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				found = xrealloc(found, cap * sizeof *found);
			}
			found[n++] = (struct procfs_owned){
				pid, before->pgrp, before->start_time, k};
			break;
		}
	}
	free(all);
	*out = found;
	*count = n;
	return 0;
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
