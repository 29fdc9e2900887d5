/*
 * A server's processes outside its process group: anything that left the
 * group (setsid, setpgid) still carries the server's owner token in its
 * environment, so the stop ladder finds it by that token (our uid only,
 * start time checked; the search of /proc runs in the thread pool) and
 * stops it with the group. Owns the conn's list of such strays.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/owner.h"
#include "proc/procfs.h"
#include "proc/snap.h"
#include "proc/supervisor.h"
#include "proc/supervisor_int.h"
#include "util/log.h"
#include "util/xmalloc.h"

uint64_t proc_start_time(pid_t pid)
{
	return procfs_start_time(pid);
}

void sup_strays_free(struct supervisor *c)
{
	free(c->strays);
	c->strays = NULL;
	c->nstrays = 0;
}

/* A stray that died as our child (we are a subreaper) waits for us as a
 * zombie; libuv reaps only the leaders it spawned. Only a zombie whose
 * parent is us and whose start time is the stray's is reaped, so no other
 * child's exit is ever taken. */
static void sup_stray_reap(const struct proc_owned *s)
{
	struct procfs_stat st;
	if (procfs_read_stat(s->pid, &st) == 0 && procfs_state_dead(st.state) &&
	    st.ppid == getpid() && st.start_time == s->start_time) {
		int status;
		while (waitpid(s->pid, &status, WNOHANG) < 0 && errno == EINTR)
			;
	}
}

size_t sup_strays_prune(struct supervisor *c)
{
	size_t k = 0;
	for (size_t i = 0; i < c->nstrays; i++) {
		struct proc_owned *s = &c->strays[i];
		if (procfs_alive(s->pid, s->start_time)) {
			c->strays[k++] = *s;
			continue;
		}
		sup_stray_reap(s);
	}
	c->nstrays = k;
	return k;
}

/* Where to look: below us when we are a subreaper (orphans of our
 * servers come to us), else anywhere (they went to init or another
 * subreaper). */
static pid_t sup_strays_ancestor(void)
{
	int reaper = 0;
	if (prctl(PR_GET_CHILD_SUBREAPER, &reaper) == 0 && reaper)
		return getpid();
	return 0;
}

/* In the thread pool: reads only what the loop does not change while the
 * scan runs (the owner token, the pid, the scan_* inputs and outputs). */
static void sup_scan_work_cb(uv_work_t *req)
{
	struct supervisor *c = req->data;
	const char *values[] = {c->owner_token};
	struct proc_snap *snap = NULL;
	c->scan_found = NULL;
	c->scan_nfound = 0;
	c->scan_rc = proc_snap_take(&snap);
	if (c->scan_rc == 0)
		proc_snap_owned(snap, c->scan_uid, c->scan_ancestor,
				PROC_OWNER_ENV, values, 1, &c->scan_found,
				&c->scan_nfound);
	proc_snap_free(snap);
}

static void sup_scan_start(struct supervisor *c);

/* Adds what the scan found to the strays: not the leader (libuv's to
 * reap), not its group's members (signalled as a group), not one known.
 * *outside* counts every process found outside the group. */
static size_t sup_scan_merge(struct supervisor *c, size_t *outside)
{
	size_t added = 0;
	*outside = 0;
	for (size_t i = 0; i < c->scan_nfound; i++) {
		const struct proc_owned *f = &c->scan_found[i];
		if (f->pid == c->pid || f->pgrp == c->pid)
			continue;
		(*outside)++;
		bool known = false;
		for (size_t k = 0; !known && k < c->nstrays; k++)
			known = c->strays[k].pid == f->pid &&
				c->strays[k].start_time == f->start_time;
		if (known)
			continue;
		c->strays = xrealloc(c->strays,
				     (c->nstrays + 1) * sizeof *c->strays);
		c->strays[c->nstrays++] = *f;
		added++;
	}
	return added;
}

static void sup_scan_after_cb(uv_work_t *req, int status)
{
	struct supervisor *c = req->data;
	c->scanning = false;
	if (status < 0 && c->scan_rc == 0)
		c->scan_rc = status;
	if (c->state != SUP_CLOSING) {
		if (c->scan_rc < 0)
			log_warn("pid %d: cannot look for its processes in "
				 "/proc: %s",
				 (int)c->pid, strerror(-c->scan_rc));
		size_t outside = 0;
		size_t added = sup_scan_merge(c, &outside);
		/* Clean only when nothing at all carries the token. */
		c->scan_clean =
			outside == 0 && c->scan_after_group && c->scan_rc == 0;
		if (added > 0) {
			log_debug("pid %d: %zu process(es) with its token "
				  "outside its group",
				  (int)c->pid, added);
			int sig = sup_ladder_signal(c);
			if (sig)
				sup_strays_signal(c, sig);
		}
	}
	free(c->scan_found);
	c->scan_found = NULL;
	c->scan_nfound = 0;
	if (c->state != SUP_CLOSING) {
		if (c->scan_again) {
			c->scan_again = false;
			sup_scan_start(c);
		}
		sup_ladder_check(c);
	}
	sup_release(c);
}

static void sup_scan_start(struct supervisor *c)
{
	c->scan_req.data = c;
	c->scan_uid = geteuid();
	/* The runtime is a subreaper: whatever a server left behind is
	 * still below us, so no other process's environment is read. */
	c->scan_ancestor = sup_strays_ancestor();
	c->scan_after_group = c->group_gone;
	int rc = uv_queue_work(c->proc.loop, &c->scan_req, sup_scan_work_cb,
			       sup_scan_after_cb);
	if (rc < 0) {
		log_warn("pid %d: cannot look for its processes: %s",
			 (int)c->pid, uv_strerror(rc));
		return;
	}
	c->scanning = true;
	c->open_handles++;
}

void sup_strays_scan(struct supervisor *c)
{
	if (c->owner_token[0] == '\0' || c->state == SUP_CLOSING)
		return;
	if (c->scanning) {
		/* One that began before the group went proves nothing
		 * about after. */
		if (c->group_gone && !c->scan_after_group)
			c->scan_again = true;
		return;
	}
	sup_scan_start(c);
}

void sup_strays_signal(struct supervisor *c, int sig)
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
