/*
 * The stdio upstream: a stdio MCP server is the process supervisor with
 * pipes, its stdout framed into messages. Its facts: messages (related 0:
 * a pipe cannot tell which request a message belongs to), garbage and
 * overlong lines, stderr lines, the stdin queue draining, the process
 * appearing and going (with its group), and its exit or its stdout's end
 * as the one fault. Decides nothing. A server of MCP 2026-07-28 is spoken
 * to in its revision by up_modern.h over the same pipes.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/supervisor.h"
#include "transport/up_cmd.h"
#include "transport/up_modern.h"
#include "transport/upstream.h"
#include "util/xmalloc.h"

struct upstream {
	struct supervisor *sup;
	struct upstream_cbs cbs;
	void *ctx;
	bool stopping; /* stop was called: its exit is no fault */
	pid_t pid;
	uint64_t start_time;
	char token[SUP_TOKEN_MAX + 1];
	/* The era, and the revision's side; NULL: known to speak 2025. Its
	 * answers made inside send go from the timer. */
	struct upm *upm;
	uv_timer_t later;
};

static void up_stdio_message(void *ctx, const char *line, size_t len)
{
	struct upstream *u = ctx;
	if (u->upm && upm_message(u->upm, line, len, 0))
		return;
	u->cbs.on_message(u->ctx, line, len, 0);
}

static void up_stdio_garbage(void *ctx, const char *what)
{
	struct upstream *u = ctx;
	if (u->cbs.on_garbage)
		u->cbs.on_garbage(u->ctx, what);
}

static void up_stdio_overlong(void *ctx, const char *head, size_t head_len,
			      const char *tail, size_t tail_len)
{
	struct upstream *u = ctx;
	if (u->cbs.on_overlong)
		u->cbs.on_overlong(u->ctx, head, head_len, tail, tail_len);
}

static void up_stdio_drain(void *ctx)
{
	struct upstream *u = ctx;
	if (u->cbs.on_drain)
		u->cbs.on_drain(u->ctx);
}

static void up_stdio_log(void *ctx, const char *line, size_t len)
{
	struct upstream *u = ctx;
	if (u->cbs.on_log)
		u->cbs.on_log(u->ctx, line, len);
}

static void up_stdio_exit(void *ctx, int64_t status, int sig)
{
	struct upstream *u = ctx;
	if (u->stopping || u->cbs.on_fault == NULL)
		return;
	/* The supervisor says -1 and no signal when stdout ended while
	 * the process still ran (or was never reaped): the pipe closed. */
	struct upstream_fault f = {
		.kind = status < 0 && sig == 0 ? UPSTREAM_CLOSED
					       : UPSTREAM_EXITED,
		.exit_status = status,
		.term_signal = sig,
	};
	char *text;
	if (sig)
		text = xasprintf("exited on signal %d (%s)", sig,
				 strsignal(sig));
	else if (status >= 0)
		text = xasprintf("exited with code %lld", (long long)status);
	else
		text = xstrdup("closed its output");
	f.text = text;
	u->cbs.on_fault(u->ctx, &f);
	free(text);
}

static void up_stdio_owned(struct upstream *u, bool live)
{
	if (u->cbs.on_owned == NULL)
		return;
	struct upstream_owned o = {
		.kind = UPSTREAM_OWNED_PROCESS,
		.token = u->token,
		.pid = u->pid,
		.pgid = u->pid, /* its own group (the supervisor's setsid) */
		.start_time = u->start_time,
	};
	u->cbs.on_owned(u->ctx, &o, live);
}

static void up_stdio_free(struct upstream *u)
{
	if (u->cbs.on_closed)
		u->cbs.on_closed(u->ctx);
	free(u);
}

static void up_stdio_later_closed(uv_handle_t *h)
{
	up_stdio_free(h->data);
}

static void up_stdio_closed(void *ctx)
{
	struct upstream *u = ctx;
	/* The supervisor calls this once the group and every process with
	 * the token are gone or killed. */
	up_stdio_owned(u, false);
	/* The supervisor frees itself after this: with a upm, the owner
	 * hears on_closed a turn later, and anything it asks until then
	 * finds no process. */
	u->sup = NULL;
	if (u->upm == NULL) {
		up_stdio_free(u);
		return;
	}
	upm_free(u->upm);
	u->upm = NULL;
	uv_close((uv_handle_t *)&u->later, up_stdio_later_closed);
}

/* ---- the revision's side (up_modern.h): the pipes are its channel ---- */

static int up_stdio_wire_send(void *w, const char *msg, size_t len, int64_t id)
{
	struct upstream *u = w;
	return u->stopping || u->sup == NULL ? -EPIPE
					     : sup_send(u->sup, msg, len);
}

static int up_stdio_wire_post(void *w, const char *msg, size_t len, int64_t id,
			      const char *const *headers)
{
	return up_stdio_wire_send(w, msg, len, id);
}

static void up_stdio_later_cb(uv_timer_t *t)
{
	struct upstream *u = t->data;
	if (u->upm && !u->stopping)
		upm_run_later(u->upm);
}

static void up_stdio_wire_kick(void *w)
{
	struct upstream *u = w;
	uv_timer_start(&u->later, up_stdio_later_cb, 0, 0);
}

static void up_stdio_deliver(void *ctx, const char *msg, size_t len,
			     int64_t related)
{
	struct upstream *u = ctx;
	u->cbs.on_message(u->ctx, msg, len, related);
}

static void up_stdio_lose(void *ctx, int64_t id, enum outbox_fact f)
{
	struct upstream *u = ctx;
	if (u->cbs.on_lost)
		u->cbs.on_lost(u->ctx, id, f);
}

/* A process of unknown era gets the initialize first (a 2025 server that
 * exits on an unknown method is never sent one); one known to be of the
 * revision, server/discover. */
static void up_stdio_era(uv_loop_t *loop, struct upstream *u,
			 const struct upstream_spec *spec)
{
	if (!spec->probe_era && !spec->era_modern)
		return;
	static const struct upm_wire uw = {
		.post = up_stdio_wire_post,
		.send = up_stdio_wire_send,
		.kick = up_stdio_wire_kick,
		.channel = true,
	};
	static const struct upm_out uo = {up_stdio_deliver, up_stdio_lose};
	u->upm = upm_new(&uw, u,
			 spec->era_modern ? UPM_PROBE_DISCOVER
					  : UPM_PROBE_AFTER_INIT,
			 &uo, u);
	upm_follow(u->upm, spec->subs);
	uv_timer_init(loop, &u->later);
	u->later.data = u;
}

static const struct sup_cbs up_stdio_sup_cbs = {
	.on_message = up_stdio_message,
	.on_garbage = up_stdio_garbage,
	.on_overlong = up_stdio_overlong,
	.on_drain = up_stdio_drain,
	.on_log = up_stdio_log,
	.on_exit = up_stdio_exit,
	.on_closed = up_stdio_closed,
};

int up_stdio_open_cmd(uv_loop_t *loop, const struct upstream_spec *spec,
		      const struct up_cmd *cmd, const struct upstream_cbs *cbs,
		      void *ctx, struct upstream **out)
{
	*out = NULL;
	struct upstream *u = xcalloc(1, sizeof *u);
	u->cbs = *cbs;
	u->ctx = ctx;
	struct sup_spec sp = {
		.command = cmd->command,
		.args = cmd->args,
		.env = cmd->env,
		.token = spec->token,
		.cwd = spec->cwd,
		.mode = SUP_PIPES,
		.stop_grace_ms = spec->stop_grace_ms,
	};
	int rc = sup_spawn(loop, &sp, &up_stdio_sup_cbs, u, &u->sup);
	if (rc < 0) {
		free(u);
		return rc;
	}
	u->pid = sup_pid(u->sup);
	u->start_time = sup_start_time(u->sup);
	snprintf(u->token, sizeof u->token, "%s", sup_token(u->sup));
	up_stdio_era(loop, u, spec);
	*out = u;
	up_stdio_owned(u, true);
	return 0;
}

static int up_stdio_open(uv_loop_t *loop, const struct upstream_spec *spec,
			 const struct upstream_cbs *cbs, void *ctx,
			 struct upstream **out)
{
	const struct server_config *s = spec->server;
	*out = NULL;
	if (s->command == NULL)
		return -EINVAL;
	char **args = xcalloc(s->nargs + 1, sizeof *args);
	for (size_t i = 0; i < s->nargs; i++)
		args[i] = s->args[i];
	char **env = sup_env_from_config(s->env, s->nenv);
	struct up_cmd cmd = {.command = s->command, .args = args, .env = env};
	int rc = up_stdio_open_cmd(loop, spec, &cmd, cbs, ctx, out);
	free(args);
	sup_env_free(env);
	return rc;
}

void up_stdio_close_stdin(struct upstream *u)
{
	if (u->sup)
		sup_close_stdin(u->sup);
}

static int up_stdio_send(struct upstream *u, const char *msg, size_t len,
			 int64_t id)
{
	if (u->upm) {
		int rc = upm_send(u->upm, msg, len, id);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
	return u->sup ? sup_send(u->sup, msg, len) : -EPIPE;
}

static void up_stdio_pause(struct upstream *u, bool on)
{
	if (u->sup)
		sup_pause(u->sup, on);
}

static void up_stdio_stop(struct upstream *u)
{
	u->stopping = true;
	if (u->sup)
		sup_stop(u->sup);
}

static json_t *up_stdio_describe(const struct upstream *u, bool verbose)
{
	json_t *o = json_pack("{s:s}", "transport", "stdio");
	if (upm_modern(u->upm))
		json_object_set_new(o, "era", json_string("2026-07-28"));
	if (verbose)
		json_object_set_new(o, "pid", json_integer(u->pid));
	return o;
}

static char *up_stdio_log_tail(const struct upstream *u, int n)
{
	return u->sup ? sup_log_tail(u->sup, n) : xstrdup("");
}

const struct upstream_ops upstream_stdio = {
	.kind = "stdio",
	.caps = UPSTREAM_OWNS,
	.open = up_stdio_open,
	.send = up_stdio_send,
	.forget = NULL, /* a pipe has nothing to let go of */
	.pause = up_stdio_pause,
	.stop = up_stdio_stop,
	.describe = up_stdio_describe,
	.log_tail = up_stdio_log_tail,
};
