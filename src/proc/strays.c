/*
 * What a stop reaches beyond the processes it was given: the members of
 * its group, and the processes outside it that carry its owner token
 * (whatever left the group with setsid or setpgid still has the token in
 * its environment). One snapshot in the thread pool finds both (it reads
 * environments, of our uid only, start time checked); what it finds joins
 * the ladder (stop.c), and a group member that died as our child is reaped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "proc/owner.h"
#include "proc/reaper.h"
#include "proc/snap.h"
#include "proc/stop_int.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* Where to look for the token: below us when we are a subreaper (orphans
 * of our servers come to us, and no other process's environment is
 * read), else anywhere (they went to init or another subreaper). */
static pid_t proc_stop_ancestor(void)
{
	int reaper = 0;
	if (prctl(PR_GET_CHILD_SUBREAPER, &reaper) == 0 && reaper)
		return getpid();
	return 0;
}

static void proc_stop_push(struct proc_owned **list, size_t *n,
			   const struct procfs_stat *st)
{
	for (size_t i = 0; i < *n; i++)
		if ((*list)[i].pid == st->pid)
			return;
	*list = xrealloc(*list, (*n + 1) * sizeof **list);
	(*list)[(*n)++] =
		(struct proc_owned){st->pid, st->pgrp, st->start_time, 0};
}

/* In the thread pool: reads only what the loop does not change while the
 * search runs (the token, the leader, the search_* fields). Live members
 * of the group and token carriers go to found; a dead member counts as a
 * zombie still to be reaped. */
static void proc_stop_search_work_cb(uv_work_t *req)
{
	struct proc_stop *s = req->data;
	struct proc_snap *snap = NULL;
	s->search_rc = proc_snap_take(&snap);
	if (s->search_rc < 0)
		return;
	for (size_t i = 0; s->leader && i < proc_snap_count(snap); i++) {
		const struct procfs_stat *st = proc_snap_at(snap, i);
		if (st->pgrp != s->leader || st->pid == s->leader)
			continue;
		if (procfs_state_dead(st->state))
			proc_stop_push(&s->zombies, &s->nzombies, st);
		else
			proc_stop_push(&s->found, &s->nfound, st);
	}
	if (s->token[0] != '\0') {
		const char *values[] = {s->token};
		struct proc_owned *owned = NULL;
		size_t n = 0;
		proc_snap_owned(snap, s->search_uid, s->search_ancestor,
				PROC_OWNER_ENV, values, 1, &owned, &n);
		for (size_t i = 0; i < n; i++) {
			const struct procfs_stat *st =
				proc_snap_find(snap, owned[i].pid);
			if (st != NULL && st->pid != s->leader)
				proc_stop_push(&s->found, &s->nfound, st);
		}
		free(owned);
	}
	proc_snap_free(snap);
}

static void proc_stop_search_after_cb(uv_work_t *req, int status)
{
	struct proc_stop *s = req->data;
	s->searching = false;
	if (status < 0 && s->search_rc == 0)
		s->search_rc = status;
	if (s->step != PROC_STOP_DONE) {
		if (s->search_rc < 0)
			log_warn("%s: cannot look for its processes in /proc: "
				 "%s",
				 s->label, strerror(-s->search_rc));
		/* A member that died as our child waits for us as a
		 * zombie and keeps the group from being empty. */
		size_t reaped = 0;
		for (size_t i = 0; i < s->nzombies; i++)
			reaped += reaper_reap(s->loop, s->zombies[i].pid,
					      s->zombies[i].start_time);
		for (size_t i = 0; i < s->nfound; i++)
			proc_stop_found(s, s->found[i].pid,
					s->found[i].start_time);
		/* Clean only when nothing at all was there to find. */
		if (s->search_quiet && s->search_rc == 0 && s->nfound == 0 &&
		    s->nzombies == 0)
			s->search_clean = true;
		s->search_fruitless =
			s->search_rc == 0 && s->nfound == 0 && reaped == 0;
	}
	free(s->found);
	s->found = NULL;
	s->nfound = 0;
	free(s->zombies);
	s->zombies = NULL;
	s->nzombies = 0;
	/* What the search found, or its silence, may end the stop; or a
	 * quiet search asked for meanwhile follows. */
	proc_stop_check(s);
	proc_stop_release(s);
}

static void proc_stop_search_start(struct proc_stop *s, bool quiet)
{
	s->search_req.data = s;
	s->search_uid = geteuid();
	s->search_ancestor = proc_stop_ancestor();
	s->search_quiet = quiet;
	int rc =
		uv_queue_work(s->loop, &s->search_req, proc_stop_search_work_cb,
			      proc_stop_search_after_cb);
	if (rc < 0) {
		log_warn("%s: cannot look for its processes: %s", s->label,
			 uv_strerror(rc));
		return;
	}
	s->searching = true;
	s->open++;
}

void proc_stop_search(struct proc_stop *s, bool quiet)
{
	if ((s->leader == 0 && s->token[0] == '\0') ||
	    s->step == PROC_STOP_DONE)
		return;
	/* One running: its end checks again, and starts what is needed
	 * then (one that began with something known left proves nothing
	 * about after). */
	if (s->searching)
		return;
	proc_stop_search_start(s, quiet);
}
