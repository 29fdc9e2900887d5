/*
 * The end of a supervised program: its stdin closed and a grace for it to
 * leave by itself (a well-behaved stdio server exits on EOF), then the stop
 * ladder (stop.h) over its process group and whatever carries its owner
 * token, then its handles closed until on_closed. Owns every state change
 * after spawn.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "jsonrpc/framer.h"
#include "proc/stop.h"
#include "proc/supervisor.h"
#include "proc/supervisor_int.h"
#include "util/buf.h"
#include "util/log.h"

static const char *const sup_state_names[] = {
	"running",
	"stop-stdin",
	"stopping",
	"closing",
};

static void sup_set_state(struct supervisor *c, enum sup_state state)
{
	log_debug("pid %d: %s -> %s", (int)c->pid, sup_state_names[c->state],
		  sup_state_names[state]);
	c->state = state;
}

/* ---- handles and lifetime ---- */

static void sup_release(struct supervisor *c)
{
	if (--c->open_handles > 0)
		return;
	if (!c->discard && c->cbs.on_closed != NULL)
		c->cbs.on_closed(c->ctx);
	framer_free(c->framer);
	buf_free(&c->gather);
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
	sup_close_handle(c, &c->stdin_timer);
	sup_close_handle(c, &c->eof_timer);
	sup_close_handle(c, &c->flush);
	sup_close_handle(c, &c->proc);
}

/* Closes the program's stdin on purpose: what this turn gathered for it
 * is written first (what the pipe does not take at once is dropped with
 * the rest of the queue), so a message sent just before the close still
 * reaches it. */
static void sup_end_stdin(struct supervisor *c)
{
	sup_flush_stdin(c);
	sup_close_handle(c, &c->in);
}

void sup_report_exit(struct supervisor *c, int64_t exit_status, int term_signal)
{
	if (c->reported)
		return;
	c->reported = true;
	if (c->cbs.on_exit != NULL)
		c->cbs.on_exit(c->ctx, exit_status, term_signal);
}

static void sup_stop_closed_cb(void *ctx)
{
	sup_release(ctx);
}

/* The ladder is done: everything is gone, or it gave up. */
static void sup_stop_done_cb(void *ctx, size_t left)
{
	struct supervisor *c = ctx;

	if (c->state == SUP_CLOSING)
		return;
	sup_set_state(c, SUP_CLOSING);
	/* on_closed waits for the ladder's handles and search too. */
	c->open_handles++;
	proc_stop_free(c->stop, sup_stop_closed_cb);
	c->stop = NULL;
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

/* ---- the ladder ---- */

static void sup_ladder_start(struct supervisor *c)
{
	if (c->state != SUP_RUNNING && c->state != SUP_STOP_STDIN)
		return;
	uv_timer_stop(&c->stdin_timer);
	uv_timer_stop(&c->eof_timer);
	sup_set_state(c, SUP_STOPPING);
	char label[32];
	snprintf(label, sizeof label, "pid %d", (int)c->pid);
	c->stop = proc_stop_new(c->proc.loop, label, c->grace_ms,
				sup_stop_done_cb, c);
	proc_stop_group(c->stop, c->pid);
	/* A child that called setsid() is no longer in the group: the
	 * token finds it. */
	proc_stop_token(c->stop, c->owner_token);
	if (c->exited)
		proc_stop_leader_reaped(c->stop);
	proc_stop_start(c->stop);
}

static void sup_stdin_timer_cb(uv_timer_t *t)
{
	sup_ladder_start(t->data);
}

void sup_leader_reaped(struct supervisor *c)
{
	if (c->state == SUP_STOPPING) {
		proc_stop_leader_reaped(c->stop);
		return;
	}
	/* The leader is gone but its group may not be: what it left
	 * behind gets SIGTERM at once, with or without a stop asked. */
	sup_stop(c);
	sup_ladder_start(c);
}

void sup_stop(struct supervisor *c)
{
	if (c == NULL || c->state != SUP_RUNNING)
		return;
	if (c->mode == SUP_LOGS || c->exited) {
		/* Its stdin is /dev/null, or it is gone: there is no EOF to
		 * wait for, so a wait for one would only delay every stop. */
		sup_close_handle(c, &c->in);
		sup_pause(c, false);
		sup_ladder_start(c);
		return;
	}
	sup_set_state(c, SUP_STOP_STDIN);
	uv_timer_stop(&c->eof_timer);
	/* A well-behaved server exits on stdin EOF; anything still queued
	 * for it is dropped (its callbacks see UV_ECANCELED). */
	sup_end_stdin(c);
	/* A server paused by slow clients may be blocked writing: its
	 * output is read (and dropped) again so it can see that EOF. */
	sup_pause(c, false);
	uv_timer_start(&c->stdin_timer, sup_stdin_timer_cb, c->grace_ms, 0);
}

void sup_close_stdin(struct supervisor *c)
{
	if (c == NULL || c->state != SUP_RUNNING || c->mode != SUP_PIPES)
		return;
	sup_end_stdin(c);
	/* A server paused by slow clients may be blocked writing: it must
	 * be able to read that EOF. */
	sup_pause(c, false);
}
