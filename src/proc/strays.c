/*
 * The search for a stop's strays (strays.h): its inputs copied, one
 * snapshot walked in the thread pool, the result handed to the caller on
 * the loop and freed.
 */
#include "proc/strays.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "proc/owner.h"
#include "util/xmalloc.h"

struct strays_req {
	uv_work_t work;
	pid_t leader;
	char token[PROC_OWNER_TOKEN_MAX + 1];
	uid_t uid;
	pid_t ancestor;
	struct strays found;
	strays_cb cb;
	void *ctx;
};

/* Where to look for the token: below us when we are a subreaper, else
 * anywhere (they went to init or another subreaper). */
static pid_t strays_ancestor(void)
{
	int reaper = 0;
	if (prctl(PR_GET_CHILD_SUBREAPER, &reaper) == 0 && reaper)
		return getpid();
	return 0;
}

static void strays_push(struct proc_owned **list, size_t *n,
			const struct procfs_stat *st)
{
	for (size_t i = 0; i < *n; i++)
		if ((*list)[i].pid == st->pid)
			return;
	*list = xrealloc(*list, (*n + 1) * sizeof **list);
	(*list)[(*n)++] =
		(struct proc_owned){st->pid, st->pgrp, st->start_time, 0};
}

/* In the thread pool: touches only the request. */
static void strays_work_cb(uv_work_t *work)
{
	struct strays_req *q = work->data;
	struct strays *f = &q->found;
	struct proc_snap *snap = NULL;
	f->rc = proc_snap_take(&snap);
	if (f->rc < 0)
		return;
	for (size_t i = 0; q->leader && i < proc_snap_count(snap); i++) {
		const struct procfs_stat *st = proc_snap_at(snap, i);
		if (st->pgrp != q->leader || st->pid == q->leader)
			continue;
		if (procfs_state_dead(st->state))
			strays_push(&f->dead, &f->ndead, st);
		else
			strays_push(&f->live, &f->nlive, st);
	}
	if (q->token[0] != '\0') {
		const char *values[] = {q->token};
		struct proc_owned *owned = NULL;
		size_t n = 0;
		proc_snap_owned(snap, q->uid, q->ancestor, PROC_OWNER_ENV,
				values, 1, &owned, &n);
		for (size_t i = 0; i < n; i++) {
			const struct procfs_stat *st =
				proc_snap_find(snap, owned[i].pid);
			if (st != NULL && st->pid != q->leader)
				strays_push(&f->live, &f->nlive, st);
		}
		free(owned);
	}
	proc_snap_free(snap);
}

static void strays_after_cb(uv_work_t *work, int status)
{
	struct strays_req *q = work->data;
	if (status < 0 && q->found.rc == 0)
		q->found.rc = status;
	q->cb(q->ctx, &q->found);
	free(q->found.live);
	free(q->found.dead);
	free(q);
}

int strays_search(uv_loop_t *loop, pid_t leader, const char *token,
		  strays_cb cb, void *ctx)
{
	struct strays_req *q = xcalloc(1, sizeof *q);
	q->work.data = q;
	q->leader = leader;
	if (token != NULL && strlen(token) <= PROC_OWNER_TOKEN_MAX)
		strcpy(q->token, token);
	q->uid = geteuid();
	q->ancestor = strays_ancestor();
	q->cb = cb;
	q->ctx = ctx;
	int rc = uv_queue_work(loop, &q->work, strays_work_cb, strays_after_cb);
	if (rc < 0)
		free(q);
	return rc;
}
