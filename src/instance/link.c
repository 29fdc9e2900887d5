/*
 * The instance's side of the transport seam (transport/upstream.h): it
 * opens an upstream for each start under a link of its own, and decides
 * what every fact the transport reports means. Transports decide nothing;
 * this file is where their faults become states:
 *   EXITED, CLOSED, TIMEOUT, PROTOCOL: FAILED (tools kept after a drop of
 *     a ready instance; a failed start backs off);
 *   AUTH: with tokens, a refresh (or a newer token) and a new
 *     connection when auth says it may help (signin.c); else
 *     NEEDS_AUTH, never retried on its own until a login;
 *   EXPIRED: the server dropped our session: open again at once (no
 *     backoff), bounded to INSTANCE_MAX_EXPIRIES in a row;
 *   LOST_PORT: start again on a new port at once, at most
 *     INSTANCE_MAX_LOST_PORTS times in a row.
 * Callbacks of a link the instance let go of are no-ops, except the
 * owned resources going (the journal must hear) and the close.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "instance/backoff.h"
#include "instance/instance_int.h"
#include "jsonrpc/outbox.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xmalloc.h"
#include <stdio.h>

/* ---- opening ---- */

int instance_open_upstream(struct instance *inst)
{
	struct instance_link *link = xcalloc(1, sizeof *link);
	link->inst = inst;
	link->gen = ++inst->gen;
	/* A token already on disk: whatever the server starts can be found
	 * after a crash, however soon it comes. */
	char token[JOURNAL_TOKEN_LEN + 1];
	journal_take_token(inst->journal, token);
	struct upstream_spec spec = {
		.server = &inst->server,
		.cwd = inst->cwd,
		.token = token,
		.startup_timeout_ms = inst->startup_timeout_ms,
		.key = inst->public_key,
		.probe_era = !inst->era_legacy,
		.era_modern = inst->era_modern,
		.subs = inst->subs,
	};
	/* The bearer goes on each request, read anew every time. */
	if (instance_signs_in(inst)) {
		spec.authorization = instance_authorization_cb;
		spec.auth_arg = inst;
	}
	/* The HTTP client loads libcurl: only a transport that speaks HTTP
	 * asks for it (a stdio container does not). */
	if ((inst->ops->caps & UPSTREAM_HTTP) && inst->http != NULL)
		spec.http = inst->http(inst->http_arg);
	/* Set first: on_owned may come from inside open. */
	inst->link = link;
	struct upstream *up = NULL;
	int rc = inst->ops->open(inst->loop, &spec, &instance_upstream_cbs,
				 link, &up);
	if (rc < 0) {
		inst->link = NULL;
		free(link);
		return rc;
	}
	inst->up = up;
	inst->handles_open++; /* the upstream, until its on_closed */
	return 0;
}

void instance_set_ops(struct instance *inst, const struct upstream_ops *ops)
{
	inst->ops = ops;
}

/* ---- faults ---- */

/* The transport's sentence (masked again: it becomes last_error, which
 * status and hosts show), or one made from the fact. */
static char *instance_fault_text(const struct instance *inst,
				 const struct upstream_fault *f)
{
	if (f->text != NULL)
		return instance_mask(inst, f->text, strlen(f->text));
	switch (f->kind) {
	case UPSTREAM_EXITED:
		if (f->term_signal)
			return xasprintf("exited on signal %d (%s)",
					 f->term_signal,
					 strsignal(f->term_signal));
		return xasprintf("exited with code %lld",
				 (long long)f->exit_status);
	case UPSTREAM_CLOSED:
		return xstrdup("closed its output");
	case UPSTREAM_TIMEOUT:
		return xstrdup("did not answer in time");
	case UPSTREAM_AUTH:
		return xstrdup("refused our credentials");
	case UPSTREAM_EXPIRED:
		return xstrdup("dropped our session");
	case UPSTREAM_LOST_PORT:
		return xstrdup("lost its port");
	case UPSTREAM_PROTOCOL:
		return xstrdup("sent something that is not MCP");
	}
	return xstrdup("failed");
}

/* The server dropped the session (or its port) but is not broken: the
 * old connection goes, requests that change nothing and those never
 * written wait, a call that may have run is told so, and a new one opens
 * at once without counting for the backoff. */
void instance_reopen(struct instance *inst, const char *why)
{
	log_info("instance %s: %s; opening it again at once", inst->name, why);
	instance_save_stderr(inst);
	uv_timer_stop(&inst->startup_timer);
	instance_detach_conn(inst, false);
	inst->stop_why = why;
	instance_fail_pending(inst, true);
	inst->stop_why = NULL;
	if (!inst->freeing)
		instance_start(inst);
}

static void instance_expired(struct instance *inst, const char *text)
{
	uint64_t now = clock_now_ms();
	if (inst->expiries == 0 ||
	    now - inst->expiry_first_ms > INSTANCE_EXPIRY_WINDOW_MS) {
		inst->expiries = 0;
		inst->expiry_first_ms = now;
	}
	if (++inst->expiries < INSTANCE_MAX_EXPIRIES) {
		instance_reopen(inst, text);
		return;
	}
	inst->expiries = 0;
	/* Counted as a failed start: the backoff holds the next one. */
	instance_fail_how(inst, INSTANCE_FAILED,
			  xasprintf("%s %d times in a row within %d s, with no "
				    "request answered in between; not opened "
				    "again until the backoff passes",
				    text, INSTANCE_MAX_EXPIRIES,
				    INSTANCE_EXPIRY_WINDOW_MS / 1000),
			  true);
}

static void instance_lost_port(struct instance *inst, const char *text)
{
	if (++inst->lost_ports <= INSTANCE_MAX_LOST_PORTS) {
		instance_reopen(inst, text);
		return;
	}
	inst->lost_ports = 0;
	instance_fail_how(
		inst, INSTANCE_FAILED,
		xasprintf("%s; it could not keep a port %d times in a "
			  "row (another program takes the ports it is "
			  "given)",
			  text, INSTANCE_MAX_LOST_PORTS + 1),
		true);
}

static void instance_needs_auth(struct instance *inst,
				const struct upstream_fault *f,
				const char *text)
{
	inst->auth_status = f->http_status;
	free(inst->auth_metadata);
	inst->auth_metadata =
		f->resource_metadata
			? instance_mask(inst, f->resource_metadata,
					strlen(f->resource_metadata))
			: NULL;
	instance_fail(inst, INSTANCE_NEEDS_AUTH,
		      instance_signin_needs_text(inst, f->http_status, text));
}

/* What the transport knew of requests when it failed (a POST refused
 * unprocessed, messages never sent): judged before the connection's end
 * judges the rest as cut. A re-send waits for the next connection. */
static void instance_fault_facts(struct instance *inst, uint64_t gen,
				 const struct upstream_fault *f)
{
	for (size_t i = 0; i < f->nfacts; i++) {
		struct outbox_req *r =
			outbox_find(inst->outbox, f->facts[i].id);
		/* The handshake's own go with the connection, as the fault
		 * decides (a start failed, or opened again). */
		if (r == NULL || !outbox_req_on(r, gen) ||
		    outbox_req_internal(r))
			continue;
		log_info("instance %s: %s (id %lld) %s", inst->name,
			 outbox_req_method(r), (long long)f->facts[i].id,
			 f->facts[i].fact == OUTBOX_REFUSED
				 ? "was refused unprocessed"
				 : "was never sent");
		enum outbox_verdict v =
			outbox_judge(inst->outbox, r, f->facts[i].fact);
		if (v != OUTBOX_RESEND)
			instance_settle_lost(inst, r, v);
	}
}

static void instance_fault_cb(void *ctx, const struct upstream_fault *f)
{
	struct instance_link *link = ctx;
	struct instance *inst = link->inst;
	if (link->detached)
		return;
	instance_fault_facts(inst, link->gen, f);
	char *text = instance_fault_text(inst, f);
	switch (f->kind) {
	case UPSTREAM_AUTH:
		/* With tokens: a refresh (or a newer token) on a new
		 * connection, when auth says it may help. */
		if (!instance_signin_fault(inst, f))
			instance_needs_auth(inst, f, text);
		break;
	case UPSTREAM_EXPIRED:
		instance_expired(inst, text);
		break;
	case UPSTREAM_LOST_PORT:
		instance_lost_port(inst, text);
		break;
	case UPSTREAM_EXITED:
	case UPSTREAM_CLOSED:
	case UPSTREAM_TIMEOUT:
	case UPSTREAM_PROTOCOL:
		instance_fail(inst, INSTANCE_FAILED,
			      inst->state == INSTANCE_STARTING
				      ? xasprintf("%s during startup", text)
				      : xstrdup(text));
		break;
	}
	free(text);
}

/* ---- requests, output, owned things ---- */

static void instance_lost_cb(void *ctx, int64_t id, enum outbox_fact f)
{
	struct instance_link *link = ctx;
	struct instance *inst = link->inst;
	if (link->detached)
		return;
	struct outbox_req *r = outbox_find(inst->outbox, id);
	if (r == NULL || !outbox_req_on(r, link->gen))
		return;
	instance_lose_request(inst, r, f);
}

/* Requests wait in the outbox (queued) while the transport's queue is
 * full; this writes them. A new request that finds it full is refused
 * with -ENOBUFS (its caller answers its client): only re-sends wait. */
static void instance_drain_cb(void *ctx)
{
	struct instance_link *link = ctx;
	struct instance *inst = link->inst;
	if (link->detached || inst->state != INSTANCE_READY)
		return;
	instance_resend(inst);
}

static void instance_owned_cb(void *ctx, const struct upstream_owned *o,
			      bool live)
{
	struct instance_link *link = ctx;
	struct instance *inst = link->inst;
	if (o->kind == UPSTREAM_OWNED_PROCESS && !link->detached)
		inst->pid = live ? o->pid : 0;
	/* Also for a link let go of: the journal forgets it only now. */
	if (inst->cbs.on_owned)
		inst->cbs.on_owned(inst->ctx, inst, o, live);
}

static void instance_closed_cb(void *ctx)
{
	struct instance_link *link = ctx;
	struct instance *inst = link->inst;
	bool settles = link->settles_stop;
	if (!link->detached) {
		/* Closed without a fault or a stop: treat it as a drop. */
		link->detached = true;
		inst->up = NULL;
		inst->link = NULL;
		inst->pid = 0;
		if (inst->state == INSTANCE_STARTING ||
		    inst->state == INSTANCE_READY)
			instance_fail(inst, INSTANCE_FAILED,
				      xstrdup("connection closed"));
	}
	free(link);
	if (settles && inst->state == INSTANCE_STOPPING) {
		instance_set_state(inst, INSTANCE_STOPPED, NULL);
		/* Requests that came during the stop wait for the start that
		 * follows it (a restart), or learn that nothing follows. */
		if (inst->restart_after_stop && !inst->freeing) {
			inst->restart_after_stop = false;
			instance_start(inst);
		} else {
			instance_wake_waiters(inst, -ECANCELED);
		}
	}
	inst->handles_open--;
	instance_maybe_free(inst);
}

const struct upstream_cbs instance_upstream_cbs = {
	.on_message = instance_message_cb,
	.on_garbage = instance_garbage_cb,
	.on_overlong = instance_overlong_cb,
	.on_lost = instance_lost_cb,
	.on_drain = instance_drain_cb,
	.on_log = instance_stderr_cb,
	.on_fault = instance_fault_cb,
	.on_owned = instance_owned_cb,
	.on_closed = instance_closed_cb,
};
