/*
 * The stop ladder (stop.h): its steps and their timer, the processes it
 * stops and the watch on each one's end, the group, what the search for
 * the group's members and the token's carriers (strays.c) brings, and the
 * one function that decides when everything is gone.
 */
#include "proc/stop.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "proc/procfs.h"
#include "proc/reaper.h"
#include "proc/strays.h"
#include "proc/watch.h"
#include "util/log.h"
#include "util/xmalloc.h"

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

	/* The search for what the group and the token reach (strays.c). */
	char token[PROC_OWNER_TOKEN_MAX + 1]; /* "" when none */
	bool searching;
	bool search_quiet; /* the running one began with nothing known left */
	bool search_clean; /* a quiet search found nothing live */
	/* The last search, with the group not empty, found nothing live to
	 * stop or watch. */
	bool search_fruitless;
};

static const char *const proc_stop_step_names[] = {
	"ready",
	"term",
	"kill",
	"done",
};

static void proc_stop_set_step(struct proc_stop *s, enum proc_stop_step step)
{
	log_debug("%s: stop %s -> %s", s->label, proc_stop_step_names[s->step],
		  proc_stop_step_names[step]);
	s->step = step;
}

static const char *proc_stop_sig_name(int sig)
{
	return sig == SIGKILL ? "SIGKILL" : "SIGTERM";
}

/* ---- lifetime ---- */

/* One open handle or search fewer; the last frees the ladder. */
static void proc_stop_release(struct proc_stop *s)
{
	if (--s->open > 0)
		return;
	if (s->closed != NULL)
		s->closed(s->ctx);
	free(s->t);
	free(s->label);
	free(s);
}

static void proc_stop_closed_cb(uv_handle_t *h)
{
	proc_stop_release(h->data);
}

static void proc_stop_recheck_cb(uv_timer_t *t);
static void proc_stop_check(struct proc_stop *s);
static void proc_stop_search(struct proc_stop *s, bool quiet);

struct proc_stop *proc_stop_new(uv_loop_t *loop, const char *label,
				uint64_t grace_ms, proc_stop_cb done, void *ctx)
{
	struct proc_stop *s = xcalloc(1, sizeof *s);
	s->loop = loop;
	s->label = xstrdup(label);
	s->grace_ms = grace_ms ? grace_ms : PROC_STOP_GRACE_MS;
	s->done = done;
	s->ctx = ctx;
	uv_timer_init(loop, &s->step_timer);
	uv_timer_init(loop, &s->recheck);
	s->step_timer.data = s->recheck.data = s;
	s->open = 2;
	return s;
}

/* The target's watch ends; nothing more is heard of it. */
static void proc_stop_unwatch(struct proc_stop_target *t)
{
	proc_watch_free(t->watch);
	t->watch = NULL;
}

void proc_stop_free(struct proc_stop *s, void (*closed)(void *ctx))
{
	if (s == NULL || s->freed)
		return;
	s->freed = true;
	s->closed = closed;
	s->step = PROC_STOP_DONE;
	for (size_t i = 0; i < s->n; i++)
		proc_stop_unwatch(&s->t[i]);
	uv_close((uv_handle_t *)&s->step_timer, proc_stop_closed_cb);
	uv_close((uv_handle_t *)&s->recheck, proc_stop_closed_cb);
}

/* ---- the processes ---- */

static struct proc_stop_target *proc_stop_find(struct proc_stop *s, pid_t pid,
					       uint64_t start_time)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->t[i].pid == pid && s->t[i].start_time == start_time)
			return &s->t[i];
	return NULL;
}

/* Its end was seen. One the ladder found that died as our child (it came
 * to us as subreaper) is reaped now: no one else knows it, and libuv
 * reaps only what it spawned. One the caller gave is the caller's. */
static void proc_stop_target_gone(struct proc_stop *s,
				  struct proc_stop_target *t)
{
	proc_stop_unwatch(t);
	t->gone = true;
	if (t->found)
		reaper_reap(s->loop, t->pid, t->start_time);
}

static void proc_stop_watch_cb(void *ctx, struct proc_watch *w)
{
	struct proc_stop *s = ctx;
	for (size_t i = 0; i < s->n; i++) {
		if (s->t[i].watch == w) {
			proc_stop_target_gone(s, &s->t[i]);
			break;
		}
	}
	proc_stop_check(s);
}

/* A stopped process (SIGSTOP, a debugger) cannot act on SIGTERM: waiting
 * a grace on it only delays the stop. */
static int proc_stop_sig_for(const struct proc_stop_target *t, int sig)
{
	struct procfs_stat st;
	if (sig == SIGTERM && procfs_read_stat(t->pid, &st) == 0 &&
	    st.start_time == t->start_time &&
	    (st.state == 'T' || st.state == 't'))
		return SIGKILL;
	return sig;
}

static void proc_stop_signal_target(struct proc_stop *s,
				    struct proc_stop_target *t, int sig)
{
	if (t->gone || sig == 0)
		return;
	sig = proc_stop_sig_for(t, sig);
	bool sent = t->watch ? proc_watch_signal(t->watch, sig)
			     : procfs_signal(t->pid, t->start_time, sig);
	if (sent && sig == SIGKILL && s->step == PROC_STOP_KILL)
		log_info("%s: pid %d outlived SIGTERM; killed", s->label,
			 (int)t->pid);
	else if (sent)
		log_debug("%s: pid %d sent %s", s->label, (int)t->pid,
			  proc_stop_sig_name(sig));
}

static int proc_stop_track(struct proc_stop *s, pid_t pid, uint64_t start_time,
			   bool found)
{
	struct proc_watch *w = NULL;
	int rc = proc_watch_new(s->loop, pid, start_time, proc_stop_watch_cb, s,
				&w);
	if (rc == -ESRCH) {
		/* Already ended: only its zombie may be left. */
		if (found)
			reaper_reap(s->loop, pid, start_time);
		return rc;
	}
	if (rc < 0 && !procfs_alive(pid, start_time))
		return -ESRCH;
	if (rc < 0)
		s->blind = true; /* no pidfd: looked at on recheck */
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 8;
		s->t = xrealloc(s->t, s->cap * sizeof *s->t);
	}
	s->t[s->n++] = (struct proc_stop_target){
		.pid = pid,
		.start_time = start_time,
		.watch = w,
		.found = found,
	};
	return 0;
}

int proc_stop_add(struct proc_stop *s, pid_t pid, uint64_t start_time)
{
	if (s->step == PROC_STOP_DONE)
		return -ESRCH;
	if (proc_stop_find(s, pid, start_time) != NULL)
		return 0;
	int rc = proc_stop_track(s, pid, start_time, false);
	if (rc < 0)
		return rc;
	s->search_clean = false;
	proc_stop_signal_target(s, &s->t[s->n - 1], proc_stop_signal(s));
	return 0;
}

/* A process the search found (known ones are skipped); it gets the
 * current step's signal. */
static void proc_stop_found(struct proc_stop *s, pid_t pid, uint64_t start_time)
{
	if (pid == s->leader || proc_stop_find(s, pid, start_time) != NULL)
		return;
	if (proc_stop_track(s, pid, start_time, true) < 0)
		return;
	s->search_clean = false;
	log_debug("%s: found pid %d to stop", s->label, (int)pid);
	proc_stop_signal_target(s, &s->t[s->n - 1], proc_stop_signal(s));
}

/* Targets still there; those without a watch are looked at. */
static size_t proc_stop_live(struct proc_stop *s)
{
	size_t live = 0;
	bool blind = false;
	for (size_t i = 0; i < s->n; i++) {
		struct proc_stop_target *t = &s->t[i];
		if (t->gone)
			continue;
		if (t->watch == NULL && !procfs_alive(t->pid, t->start_time)) {
			proc_stop_target_gone(s, t);
			continue;
		}
		blind |= t->watch == NULL;
		live++;
	}
	s->blind = blind;
	return live;
}

/* ---- the group ---- */

void proc_stop_group(struct proc_stop *s, pid_t leader)
{
	s->leader = leader;
}

void proc_stop_leader_reaped(struct proc_stop *s)
{
	if (s->leader_reaped)
		return;
	s->leader_reaped = true;
	if (s->step != PROC_STOP_READY && s->step != PROC_STOP_DONE)
		uv_timer_start(&s->recheck, proc_stop_recheck_cb, 0, 0);
}

/* Only meaningful once libuv has reaped the leader: until then the
 * leader keeps the group, and its id, alive. Zombies count as members
 * until reaped, which the search and the watches take care of. */
static bool proc_stop_group_gone(struct proc_stop *s)
{
	if (s->leader == 0 || s->group_gone)
		return true;
	if (!s->leader_reaped)
		return false;
	if (kill(-s->leader, 0) == -1 && errno == ESRCH)
		s->group_gone = true;
	return s->group_gone;
}

static void proc_stop_signal_group(struct proc_stop *s, int sig)
{
	if (s->leader == 0 || s->group_gone)
		return;
	if (kill(-s->leader, sig) == 0) {
		log_debug("%s: group sent %s", s->label,
			  proc_stop_sig_name(sig));
		return;
	}
	if (errno == ESRCH && s->leader_reaped)
		s->group_gone = true;
	else if (errno != ESRCH)
		log_warn("%s: cannot signal its group: %s", s->label,
			 strerror(errno));
}

void proc_stop_token(struct proc_stop *s, const char *token)
{
	snprintf(s->token, sizeof s->token, "%s", token ? token : "");
}

/* ---- the steps ---- */

int proc_stop_signal(const struct proc_stop *s)
{
	if (s->step == PROC_STOP_TERM)
		return SIGTERM;
	if (s->step == PROC_STOP_KILL)
		return SIGKILL;
	return 0;
}

static void proc_stop_finish(struct proc_stop *s, size_t left)
{
	if (s->step == PROC_STOP_DONE)
		return;
	proc_stop_set_step(s, PROC_STOP_DONE);
	uv_timer_stop(&s->step_timer);
	uv_timer_stop(&s->recheck);
	for (size_t i = 0; i < s->n; i++)
		proc_stop_unwatch(&s->t[i]);
	s->done(s->ctx, left);
}

static void proc_stop_step_cb(uv_timer_t *timer);

/* One step: the signal to everything known, and one wait more. */
static void proc_stop_escalate(struct proc_stop *s, enum proc_stop_step step)
{
	proc_stop_set_step(s, step);
	int sig = proc_stop_signal(s);
	proc_stop_signal_group(s, sig);
	for (size_t i = 0; i < s->n; i++)
		proc_stop_signal_target(s, &s->t[i], sig);
	uv_timer_start(&s->step_timer, proc_stop_step_cb,
		       step == PROC_STOP_TERM ? s->grace_ms : PROC_KILL_WAIT_MS,
		       0);
	/* What the group or the token reach now, also what was started
	 * since the last look. */
	proc_stop_search(s, false);
}

static void proc_stop_step_cb(uv_timer_t *timer)
{
	struct proc_stop *s = timer->data;
	proc_stop_check(s);
	if (s->step == PROC_STOP_TERM) {
		proc_stop_escalate(s, PROC_STOP_KILL);
		proc_stop_check(s);
		return;
	}
	if (s->step != PROC_STOP_KILL)
		return;
	size_t left = proc_stop_live(s) + !proc_stop_group_gone(s);
	if (left > 0)
		log_warn("%s: %zu process(es) or its group still there %llu ms "
			 "after SIGKILL; giving up on them",
			 s->label, left, (unsigned long long)PROC_KILL_WAIT_MS);
	else
		log_warn("%s: no search proved its processes gone %llu ms "
			 "after SIGKILL; giving up",
			 s->label, (unsigned long long)PROC_KILL_WAIT_MS);
	proc_stop_finish(s, left);
}

void proc_stop_start(struct proc_stop *s)
{
	if (s->step != PROC_STOP_READY)
		return;
	proc_stop_escalate(s, PROC_STOP_TERM);
	/* Never from inside the caller: the first look on the next turn. */
	uv_timer_start(&s->recheck, proc_stop_recheck_cb, 0, 0);
}

static void proc_stop_recheck_cb(uv_timer_t *t)
{
	proc_stop_check(t->data);
}

/* The one decision: done when no process known is left, the group is
 * empty, and a search that began with nothing known left found nothing
 * (with a group or a token: a process can start another until its last
 * moment). Where no event can say a wait is over, look again soon. */
static void proc_stop_check(struct proc_stop *s)
{
	if (s->step == PROC_STOP_READY || s->step == PROC_STOP_DONE)
		return;
	size_t live = proc_stop_live(s);
	bool group_gone = proc_stop_group_gone(s);
	bool searched = s->leader == 0 && s->token[0] == '\0';
	if (live == 0 && group_gone && (searched || s->search_clean)) {
		proc_stop_finish(s, 0);
		return;
	}
	if (live > 0) {
		/* Their watches say when they go. */
		if (s->blind)
			uv_timer_start(&s->recheck, proc_stop_recheck_cb,
				       PROC_STOP_RECHECK_MS, 0);
		return;
	}
	/* Nothing known is left. Until libuv reaps the leader, the group
	 * cannot be empty, and that reaping is reported. */
	if (!group_gone && !s->leader_reaped)
		return;
	if (!group_gone && s->search_fruitless && !s->searching) {
		/* Members the last search could not stop or watch: zombies
		 * their parents have yet to reap, or one that started after
		 * it looked. No event tells either: look again soon. */
		s->search_fruitless = false;
		uv_timer_start(&s->recheck, proc_stop_recheck_cb,
			       PROC_STOP_RECHECK_MS, 0);
		return;
	}
	/* What the search finds joins; a quiet one that finds nothing ends
	 * the stop. */
	proc_stop_search(s, group_gone);
}

/* ---- the search ---- */

static void proc_stop_searched_cb(void *ctx, const struct strays *found)
{
	struct proc_stop *s = ctx;
	s->searching = false;
	if (s->step != PROC_STOP_DONE) {
		if (found->rc < 0)
			log_warn("%s: cannot look for its processes in /proc: "
				 "%s",
				 s->label, strerror(-found->rc));
		/* A member that died as our child waits for us as a
		 * zombie and keeps the group from being empty. */
		size_t reaped = 0;
		for (size_t i = 0; i < found->ndead; i++)
			reaped += reaper_reap(s->loop, found->dead[i].pid,
					      found->dead[i].start_time);
		for (size_t i = 0; i < found->nlive; i++)
			proc_stop_found(s, found->live[i].pid,
					found->live[i].start_time);
		/* Clean only when nothing at all was there to find. */
		if (s->search_quiet && found->rc == 0 && found->nlive == 0 &&
		    found->ndead == 0)
			s->search_clean = true;
		s->search_fruitless =
			found->rc == 0 && found->nlive == 0 && reaped == 0;
		/* What it found, or its silence, may end the stop; or a
		 * quiet search asked for meanwhile follows. */
		proc_stop_check(s);
	}
	proc_stop_release(s);
}

/* Starts a search (not without a group or token, once done, or while one
 * runs: its end checks again, and starts what is needed then; one that
 * began with something known left proves nothing about after). quiet:
 * nothing known is left, so a search that finds nothing proves the stop
 * complete. */
static void proc_stop_search(struct proc_stop *s, bool quiet)
{
	if ((s->leader == 0 && s->token[0] == '\0') ||
	    s->step == PROC_STOP_DONE || s->searching)
		return;
	int rc = strays_search(s->loop, s->leader, s->token,
			       proc_stop_searched_cb, s);
	if (rc < 0) {
		log_warn("%s: cannot look for its processes: %s", s->label,
			 uv_strerror(rc));
		return;
	}
	s->search_quiet = quiet;
	s->searching = true;
	s->open++;
}
