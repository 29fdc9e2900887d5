/*
 * Internal to the stop ladder (stop.c, strays.c): not for use elsewhere.
 * The ladder's state, its processes, and its search of /proc for what the
 * group and the owner token reach.
 */
#ifndef MCPV_PROC_STOP_INT_H
#define MCPV_PROC_STOP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "proc/snap.h"
#include "proc/stop.h"
#include "proc/watch.h"

/* Where no event can tell a wait is over, the ladder looks again this
 * often: without pidfds, and while the group holds only zombies that
 * another process must reap. */
#define PROC_STOP_RECHECK_MS 20

enum proc_stop_step {
	PROC_STOP_READY, /* gathering what to stop; nothing sent */
	PROC_STOP_TERM,	 /* SIGTERM sent, waiting the grace */
	PROC_STOP_KILL,	 /* SIGKILL sent, waiting PROC_KILL_WAIT_MS */
	PROC_STOP_DONE,	 /* reported (or freed): nothing more happens */
};

/* One process to stop. */
struct proc_stop_target {
	pid_t pid;
	uint64_t start_time;
	struct proc_watch *watch; /* NULL once gone, or without pidfds */
	bool gone;
	bool found; /* by a search, not given by the caller */
};

struct proc_stop {
	uv_loop_t *loop;
	char *label; /* for the log: "pid 123", "reconcile" */
	enum proc_stop_step step;
	uint64_t grace_ms;
	proc_stop_cb done;
	void *ctx;
	uv_timer_t step_timer;
	/* Deferred checks (so no callback comes from inside a call), and
	 * the looks again where no event comes. */
	uv_timer_t recheck;
	int open; /* handles not yet closed and searches not yet back */
	bool freed;
	void (*closed)(void *ctx); /* once the memory goes */

	struct proc_stop_target *t;
	size_t n, cap;
	bool blind; /* a live target has no pidfd: looked at on recheck */

	/* The group (leader 0: none). */
	pid_t leader;
	bool leader_reaped;
	bool group_gone; /* seen empty: its id is never signalled again */

	/* The search in the thread pool (strays.c). */
	char token[PROC_STOP_TOKEN_MAX + 1]; /* "" when none */
	uv_work_t search_req;
	bool searching;
	bool search_quiet; /* the running one began with nothing known left */
	bool search_clean; /* a quiet search found nothing live */
	uid_t search_uid;
	pid_t search_ancestor;
	int search_rc;
	struct proc_owned *found; /* live: token carriers, group members */
	size_t nfound;
	struct proc_owned *zombies; /* dead group members, maybe ours */
	size_t nzombies;
	/* The last search, with the group not empty, found nothing live to
	 * stop or watch. */
	bool search_fruitless;
};

/* ---- stop.c ---- */

/* Adds a process found by a search (known ones are skipped); it gets the
 * current step's signal. */
void proc_stop_found(struct proc_stop *s, pid_t pid, uint64_t start_time);
/* Looks whether everything is gone, and moves on when it is. */
void proc_stop_check(struct proc_stop *s);
/* One open handle or search fewer; the last frees the ladder. */
void proc_stop_release(struct proc_stop *s);

/* ---- strays.c ---- */

/* Starts a search (no-op without a group or token, once done, or while
 * one runs: its end checks again). quiet: nothing known is left, so a
 * search that finds nothing proves the stop complete. */
void proc_stop_search(struct proc_stop *s, bool quiet);

#endif
