/*
 * A server's processes outside its process group: anything that left the
 * group (setsid, setpgid) still carries the server's owner token in its
 * environment, so the stop ladder finds it by that token (our uid only,
 * start time checked) and stops it with the group. Owns the conn's list
 * of such strays.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "transport/stdio.h"
#include "transport/stdio_int.h"
#include "util/log.h"
#include "util/procfs.h"

uint64_t proc_start_time(pid_t pid)
{
	return procfs_start_time(pid);
}

int stdio_conn_set_owner(struct stdio_conn *c, const char *name,
			 const char *token)
{
	if (c == NULL || name == NULL || token == NULL ||
	    strlen(name) >= sizeof c->owner_name ||
	    strlen(token) >= sizeof c->owner_token || token[0] == '\0')
		return -EINVAL;
	strcpy(c->owner_name, name);
	strcpy(c->owner_token, token);
	return 0;
}

void stdio_strays_free(struct stdio_conn *c)
{
	free(c->strays);
	c->strays = NULL;
	c->nstrays = 0;
}

/* A stray that died as our child (we are a subreaper) waits for us as a
 * zombie; libuv reaps only the leaders it spawned. Only a zombie whose
 * parent is us and whose start time is the stray's is reaped, so no other
 * child's exit is ever taken. */
static void stdio_stray_reap(const struct procfs_owned *s)
{
	struct procfs_stat st;
	if (procfs_read_stat(s->pid, &st) == 0 && procfs_state_dead(st.state) &&
	    st.ppid == getpid() && st.start_time == s->start_time) {
		int status;
		while (waitpid(s->pid, &status, WNOHANG) < 0 && errno == EINTR)
			;
	}
}

size_t stdio_strays_prune(struct stdio_conn *c)
{
	size_t k = 0;
	for (size_t i = 0; i < c->nstrays; i++) {
		struct procfs_owned *s = &c->strays[i];
		if (procfs_alive(s->pid, s->start_time)) {
			c->strays[k++] = *s;
			continue;
		}
		stdio_stray_reap(s);
	}
	c->nstrays = k;
	return k;
}

/* Where to look: below us when we are a subreaper (orphans of our
 * servers come to us), else anywhere (they went to init or another
 * subreaper). */
static pid_t stdio_strays_ancestor(void)
{
	int reaper = 0;
	if (prctl(PR_GET_CHILD_SUBREAPER, &reaper) == 0 && reaper)
		return getpid();
	return 0;
}

size_t stdio_strays_scan(struct stdio_conn *c)
{
	stdio_strays_free(c);
	if (c->owner_token[0] == '\0')
		return 0;
	const char *values[] = {c->owner_token};
	struct procfs_owned *found = NULL;
	size_t n = 0;
	/* The runtime is a subreaper: whatever a server left behind is
	 * still below us, so no other process's environment is read. */
	int rc = procfs_find_by_env(geteuid(), stdio_strays_ancestor(),
				    c->owner_name, values, 1, &found, &n);
	if (rc < 0) {
		log_warn("pid %d: cannot look for its processes in /proc: %s",
			 (int)c->pid, strerror(-rc));
		return 0;
	}
	/* The leader is libuv's to reap, and the group (the leader's
	 * members) is signalled as a whole. */
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (found[i].pid != c->pid && found[i].pgrp != c->pid)
			found[k++] = found[i];
	}
	c->strays = found;
	c->nstrays = k;
	if (k > 0)
		log_debug("pid %d: %zu process(es) with its token outside its "
			  "group",
			  (int)c->pid, k);
	return k;
}

void stdio_strays_signal(struct stdio_conn *c, int sig)
{
	for (size_t i = 0; i < c->nstrays; i++) {
		if (procfs_signal(c->strays[i].pid, c->strays[i].start_time,
				  sig))
			log_debug("pid %d: sent %s to %d (left its group)",
				  (int)c->pid,
				  sig == SIGKILL ? "SIGKILL" : "SIGTERM",
				  (int)c->strays[i].pid);
	}
}
