/*
 * Reconciliation after a crash: stops only what /proc proves is ours, the
 * leader by pid and start time, anything else by the owner token in its
 * environment (our uid only, wherever it is: in the group or in a session
 * of its own), through the stop ladder (SIGTERM then SIGKILL), and never a
 * pid that changed hands.
 * Container entries go to their engines (containers.c).
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "journal/journal.h"
#include "journal/journal_int.h"
#include "proc/owner.h"
#include "proc/procfs.h"
#include "proc/snap.h"
#include "proc/stop.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* What /proc says about one live process of ours. */
struct journal_proc {
	struct procfs_stat st;
	bool has_token;
	char token[JOURNAL_TOKEN_LEN + 1];
};

/* A process proven ours, to be stopped. */
struct journal_target {
	pid_t pid;
	uint64_t start_time;
};

/* Every live process (not a zombie) other than us, with the owner token
 * of those of our uid. The start time is read again after the environment
 * so that a pid reused during the read is not credited with a token. */
static int journal_proc_scan(struct journal_proc **out, size_t *count)
{
	struct proc_snap *snap = NULL;
	int rc = proc_snap_take(&snap);
	if (rc < 0)
		return rc;
	size_t nall = proc_snap_count(snap);
	struct journal_proc *procs = xcalloc(nall ? nall : 1, sizeof *procs);
	size_t n = 0;
	pid_t self = getpid();
	uid_t uid = geteuid();
	for (size_t i = 0; i < nall; i++) {
		const struct procfs_stat *st = proc_snap_at(snap, i);
		if (st->pid == self || procfs_state_dead(st->state))
			continue;
		struct journal_proc *p = &procs[n++];
		p->st = *st;
		p->has_token =
			proc_snap_environ(st, uid, PROC_OWNER_ENV, p->token,
					  sizeof p->token) == 0;
	}
	proc_snap_free(snap);
	*out = procs;
	*count = n;
	return 0;
}

/* The ladder is over; left: what it knows is still there. */
static void journal_stop_done_cb(void *ctx, size_t left)
{
	*(size_t *)ctx = left;
}

/* Stops the targets with the stop ladder, on a loop of our own: the
 * runtime's loop does not run yet, and nothing it would start may meet
 * what the last runtime left. Returns how many got SIGTERM. */
static unsigned journal_stop(const struct journal_target *t, size_t n,
			     unsigned grace_ms)
{
	uv_loop_t loop;
	size_t left = 0;
	unsigned stopped = 0;
	if (n == 0 || uv_loop_init(&loop) < 0)
		return 0;
	struct proc_stop *s = proc_stop_new(&loop, "reconcile", grace_ms,
					    journal_stop_done_cb, &left);
	for (size_t i = 0; i < n; i++)
		stopped += proc_stop_add(s, t[i].pid, t[i].start_time) == 0;
	proc_stop_start(s);
	uv_run(&loop, UV_RUN_DEFAULT);
	proc_stop_free(s, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	if (left)
		log_warn("%zu process(es) still alive after SIGKILL", left);
	return stopped;
}

static void journal_target_push(struct journal_target **t, size_t *n,
				size_t *cap, const struct journal_proc *p)
{
	for (size_t i = 0; i < *n; i++) {
		if ((*t)[i].pid == p->st.pid)
			return;
	}
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*t = xrealloc(*t, *cap * sizeof **t);
	}
	(*t)[(*n)++] = (struct journal_target){p->st.pid, p->st.start_time};
}

static bool journal_is_reserved(const struct journal *j, const char *token)
{
	for (size_t i = 0; i < j->nreserved; i++) {
		if (strcmp(j->reserved[i].token, token) == 0)
			return true;
	}
	return false;
}

struct journal_found {
	struct journal_target *t;
	size_t n, cap;
};

/* The processes of one entry: its leader (same start time) and every
 * process that carries its token; group members without it are counted
 * as left alone. */
static void journal_match_entry(const struct journal_entry *e,
				const struct journal_proc *procs, size_t nprocs,
				struct journal_found *f,
				struct journal_report *r)
{
	size_t before = f->n;
	for (size_t k = 0; k < nprocs; k++) {
		const struct journal_proc *p = &procs[k];
		bool leader = p->st.pid == e->pid;
		bool token = p->has_token && strcmp(p->token, e->token) == 0;
		if (leader && p->st.start_time != e->start_time && !token) {
			log_info("pid %ld now belongs to another process; "
				 "left alone",
				 (long)p->st.pid);
			r->left_alone++;
			continue;
		}
		if (leader || token) {
			journal_target_push(&f->t, &f->n, &f->cap, p);
			continue;
		}
		if (p->st.pgrp == e->pgid) {
			log_info("pid %ld in group %ld lacks the owner token; "
				 "left alone",
				 (long)p->st.pid, (long)e->pgid);
			r->left_alone++;
		}
	}
	if (f->n == before)
		r->gone++;
	else
		log_info("stopping %zu leftover process(es) of pid %ld (%.*s)",
			 f->n - before, (long)e->pid, JOURNAL_KEY_LOG, e->key);
}

/* Everything reconciled is forgotten: the entries but those kept for the
 * next start (carried), and the reserved tokens. */
static void journal_clear_reconciled(struct journal *j)
{
	size_t keep = 0;
	for (size_t i = 0; i < j->n; i++) {
		if (!j->entries[i].carried) {
			journal_entry_clear(&j->entries[i]);
			continue;
		}
		j->entries[keep++] = j->entries[i];
	}
	j->n = keep;
	free(j->reserved);
	j->reserved = NULL;
	j->nreserved = 0;
}

int journal_reconcile(struct journal *j, unsigned grace_ms,
		      struct journal_report *report)
{
	struct journal_report r = {0};
	r.entries = (unsigned)j->n;
	if (j->n == 0 && j->nreserved == 0 && !j->stale) {
		if (report)
			*report = r;
		return 0;
	}
	struct journal_proc *procs = NULL;
	size_t nprocs = 0;
	int rc = journal_proc_scan(&procs, &nprocs);
	if (rc < 0) {
		/* Without /proc nothing can be proved ours: keep the
		 * journal for a later try rather than forget it. */
		log_error("cannot scan /proc: %s", strerror(-rc));
		return rc;
	}
	struct journal_found f = {0};
	for (size_t i = 0; i < j->n; i++) {
		if (j->entries[i].kind == UPSTREAM_OWNED_PROCESS)
			journal_match_entry(&j->entries[i], procs, nprocs, &f,
					    &r);
	}
	/* A token handed out just before the crash, whose entry never
	 * reached the file. */
	size_t before = f.n;
	for (size_t k = 0; k < nprocs; k++) {
		if (procs[k].has_token &&
		    journal_is_reserved(j, procs[k].token))
			journal_target_push(&f.t, &f.n, &f.cap, &procs[k]);
	}
	if (f.n > before)
		log_info("stopping %zu process(es) started just before the "
			 "crash",
			 f.n - before);
	free(procs);

	r.stopped = journal_stop(f.t, f.n, grace_ms);
	free(f.t);
	/* The reserved tokens are still known here: a container started
	 * just before the crash carries one. */
	journal_reconcile_containers(j, grace_ms, &r);

	log_info("journal reconciled: %u entries, %u stopped, %u left alone, "
		 "%u gone; containers: %u stopped, %u left alone, %u kept",
		 r.entries, r.stopped, r.left_alone, r.gone,
		 r.containers_stopped, r.containers_left_alone, r.kept);
	journal_clear_reconciled(j);
	rc = journal_write_now(j);
	if (report)
		*report = r;
	return rc;
}
