/*
 * The end of a stdio server: the stop ladder over its process group and the
 * processes that left the group but carry its owner token (close stdin,
 * wait, SIGTERM, wait, SIGKILL, wait), reaping what is left, and closing the
 * connection's handles until on_closed. Owns every state change after
 * spawn.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "jsonrpc/framer.h"
#include "proc/supervisor.h"
#include "proc/supervisor_int.h"
#include "util/log.h"

/* While a stop waits for orphaned group members that are not our
 * children (no subreaper), nothing signals their end: poll this often. */
#define SUP_RECHECK_MS 20

static const char *const sup_state_names[] = {
	"running", "stop-stdin", "stop-term", "stop-kill", "closing",
};

static void sup_set_state(struct supervisor *c, enum sup_state state)
{
	log_debug("pid %d: %s -> %s", (int)c->pid, sup_state_names[c->state],
		  sup_state_names[state]);
	c->state = state;
}

/* ---- handles and lifetime ---- */

void sup_release(struct supervisor *c)
{
	if (--c->open_handles > 0)
		return;
	if (!c->discard && c->cbs.on_closed != NULL)
		c->cbs.on_closed(c->ctx);
	framer_free(c->framer);
	sup_strays_free(c);
	free(c);
}

static void sup_close_cb(uv_handle_t *h)
{
	sup_release(h->data);
}

static void sup_close_handle(struct supervisor *c, void *handle)
{
	uv_handle_t *h = handle;

	if (!uv_is_closing(h))
		uv_close(h, sup_close_cb);
}

void sup_close_all(struct supervisor *c)
{
	sup_close_handle(c, &c->in);
	sup_close_handle(c, &c->out);
	sup_close_handle(c, &c->err);
	sup_close_handle(c, &c->ladder_timer);
	sup_close_handle(c, &c->recheck_timer);
	sup_close_handle(c, &c->eof_timer);
	sup_close_handle(c, &c->sigchld);
	sup_close_handle(c, &c->proc);
}

void sup_report_exit(struct supervisor *c, int64_t exit_status, int term_signal)
{
	if (c->reported)
		return;
	c->reported = true;
	if (c->cbs.on_exit != NULL)
		c->cbs.on_exit(c->ctx, exit_status, term_signal);
}

static void sup_finish(struct supervisor *c)
{
	if (c->state == SUP_CLOSING)
		return;
	sup_set_state(c, SUP_CLOSING);
	if (c->exited)
		sup_report_exit(c, c->exit_status, c->term_signal);
	else
		sup_report_exit(c, -1, 0);
	sup_close_all(c);
	if (!c->exited) {
		/* libuv stops tracking the process once its handle closes;
		 * take the exit ourselves if it is there by now. */
		int st;
		if (waitpid(c->pid, &st, WNOHANG) != c->pid)
			log_warn("pid %d survived SIGKILL; left unreaped",
				 (int)c->pid);
	}
}

/* ---- the process group ---- */

/* Only meaningful once libuv has reaped the leader: before that the
 * leader itself keeps the group (and its id) alive. */
static bool sup_group_gone(struct supervisor *c)
{
	if (c->group_gone)
		return true;
	if (!c->exited)
		return false;
	for (;;) {
		int st;
		/* Members are our children only when we are a subreaper;
		 * otherwise init reaps them and this finds nothing. */
		pid_t r = waitpid(-c->pid, &st, WNOHANG);
		if (r > 0) {
			log_debug("pid %d: reaped group member %d", (int)c->pid,
				  (int)r);
			continue;
		}
		if (r == -1 && errno == EINTR)
			continue;
		break;
	}
	/* Zombies still count as members, which is why they are reaped
	 * first. */
	if (kill(-c->pid, 0) == -1 && errno == ESRCH)
		c->group_gone = true;
	return c->group_gone;
}

int sup_ladder_signal(const struct supervisor *c)
{
	if (c->state == SUP_STOP_TERM)
		return SIGTERM;
	if (c->state == SUP_STOP_KILL)
		return SIGKILL;
	return 0;
}

/* Done when the group is empty and nothing outside it carries the owner
 * token: known strays are checked here (cheap), and a /proc search that
 * began after the group went must have found nothing. The search runs
 * only once the cheap checks pass, so a stop costs a few, not one per
 * recheck; its result checks the ladder again. */
static bool sup_all_gone(struct supervisor *c)
{
	if (!sup_group_gone(c))
		return false;
	if (sup_strays_prune(c) > 0)
		return false;
	if (c->owner_token[0] == '\0' || c->scan_clean)
		return true;
	sup_strays_scan(c);
	return false;
}

static void sup_signal_group(struct supervisor *c, int sig)
{
	if (c->group_gone)
		return;
	if (kill(-c->pid, sig) == 0) {
		log_debug("pid %d: group sent %s", (int)c->pid,
			  sig == SIGKILL ? "SIGKILL" : "SIGTERM");
		return;
	}
	if (errno == ESRCH && c->exited)
		c->group_gone = true;
	else
		log_warn("pid %d: cannot signal its group: %s", (int)c->pid,
			 strerror(errno));
}

/* One ladder step: signal the group and wait one grace period more. */
static void sup_escalate(struct supervisor *c, int sig, enum sup_state next);

static void sup_ladder_timer_cb(uv_timer_t *t)
{
	struct supervisor *c = t->data;

	if (sup_all_gone(c)) {
		sup_finish(c);
		return;
	}
	switch (c->state) {
	case SUP_STOP_STDIN:
		sup_escalate(c, SIGTERM, SUP_STOP_TERM);
		break;
	case SUP_STOP_TERM:
		sup_escalate(c, SIGKILL, SUP_STOP_KILL);
		break;
	case SUP_STOP_KILL:
		log_warn("pid %d: its processes are still there %llu ms "
			 "after SIGKILL; giving up on them",
			 (int)c->pid, (unsigned long long)c->grace_ms);
		sup_finish(c);
		break;
	default:
		break;
	}
}

static void sup_escalate(struct supervisor *c, int sig, enum sup_state next)
{
	sup_signal_group(c, sig);
	/* A child that called setsid() is no longer in the group: those
	 * known now get the signal at once, those found later on arrival. */
	sup_strays_signal(c, sig);
	sup_set_state(c, next);
	sup_strays_scan(c);
	uv_timer_start(&c->ladder_timer, sup_ladder_timer_cb, c->grace_ms, 0);
	if (sup_all_gone(c))
		sup_finish(c);
}

static void sup_recheck_timer_cb(uv_timer_t *t)
{
	sup_ladder_check(t->data);
}

static void sup_sigchld_cb(uv_signal_t *s, int signum)
{
	sup_ladder_check(s->data);
}

/* Re-evaluates a stop in progress: done when the leader is reaped, the
 * group is empty and no process carries the owner token; what the leader
 * left behind gets SIGTERM at once. */
void sup_ladder_check(struct supervisor *c)
{
	if (c->state == SUP_RUNNING || c->state == SUP_CLOSING || !c->exited)
		return;
	if (sup_all_gone(c)) {
		sup_finish(c);
		return;
	}
	/* Until a search says whether anything left the group, there may be
	 * nothing to signal: its result checks again. */
	if (c->state == SUP_STOP_STDIN && (!c->group_gone || c->nstrays > 0)) {
		/* The leader is gone, and nothing else would tell its
		 * leftovers to go. */
		sup_escalate(c, SIGTERM, SUP_STOP_TERM);
		if (c->state == SUP_CLOSING)
			return;
	}
	if (!uv_is_active((uv_handle_t *)&c->recheck_timer)) {
		uv_timer_start(&c->recheck_timer, sup_recheck_timer_cb,
			       SUP_RECHECK_MS, SUP_RECHECK_MS);
		uv_signal_start(&c->sigchld, sup_sigchld_cb, SIGCHLD);
	}
}

void sup_stop(struct supervisor *c)
{
	if (c == NULL || c->state != SUP_RUNNING)
		return;
	if (c->mode == SUP_LOGS) {
		/* Its stdin is /dev/null: there is no EOF to tell it to
		 * leave, so a wait for one would only delay every stop. */
		uv_timer_stop(&c->eof_timer);
		sup_escalate(c, SIGTERM, SUP_STOP_TERM);
		return;
	}
	sup_set_state(c, SUP_STOP_STDIN);
	uv_timer_stop(&c->eof_timer);
	/* A well-behaved server exits on stdin EOF; anything still queued
	 * for it is dropped (its callbacks see UV_ECANCELED). */
	sup_close_handle(c, &c->in);
	/* A server paused by slow clients may be blocked writing: its
	 * output is read (and dropped) again so it can see that EOF. */
	sup_pause(c, false);
	uv_timer_start(&c->ladder_timer, sup_ladder_timer_cb, c->grace_ms, 0);
	sup_ladder_check(c);
}

void sup_close_stdin(struct supervisor *c)
{
	if (c == NULL || c->state != SUP_RUNNING || c->mode != SUP_PIPES)
		return;
	sup_close_handle(c, &c->in);
	/* A server paused by slow clients may be blocked writing: it must
	 * be able to read that EOF. */
	sup_pause(c, false);
}
