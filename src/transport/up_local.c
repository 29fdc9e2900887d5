/*
 * The local HTTP upstream: a program that serves MCP over HTTP on a
 * loopback port mcpvisor picks. It reserves a port, puts it where the
 * config says {port}, runs the program through the supervisor (its
 * output as log lines), waits until the port accepts a connection, proves
 * the listener is the program's (never a squatter's), and then carries
 * messages through a remote HTTP upstream (up_http.c) to the url. What
 * the instance sends before that waits here. The instance never sees the
 * port: a restart simply gets a new one. Another transport may drive it
 * (transport/up_cmd.h) with the program it builds, its own proof of the
 * port and what it stops before the program.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "config/secrets.h"
#include "jsonrpc/msgq.h"
#include "ports/listener.h"
#include "ports/ports.h"
#include "proc/owner.h"
#include "proc/supervisor.h"
#include "transport/up_cmd.h"
#include "transport/upstream.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define UPL_PROBE_MS 50			  /* between connection attempts */
#define UPL_MAX_QUEUED (16 * 1024 * 1024) /* bytes waiting for the port */

enum upl_state {
	UPL_STARTING, /* spawned; probing the port */
	UPL_PROVING,  /* the port answered: whose listener is it? */
	UPL_READY,    /* the HTTP session carries messages */
	UPL_STOPPING, /* the session closes, then the stop ladder */
};

struct upstream {
	struct upstream_cbs cbs;
	void *ctx;
	uv_loop_t *loop;
	enum upl_state state;

	struct supervisor *sup; /* NULL once its on_closed ran */
	pid_t pid;
	uint64_t start_time;
	char token[SUP_TOKEN_MAX + 1];

	struct ports *ports;
	int port;
	bool port_held; /* reserved in ports, not yet released */

	/* What the HTTP session is opened with, {port} put in (url and
	 * headers), and the program's env with its port. */
	struct server_config http_cfg;
	struct config_kv *env;
	size_t nenv;
	struct httpc *http;
	/* The Authorization provider, passed on to the HTTP session. */
	const char *(*authorization)(void *arg);
	void *auth_arg;
	bool probe_era;		/* passed on: the session finds out the era */
	const json_t *subs;	/* passed on: the instance's, borrowed */
	struct upstream *inner; /* upstream_http; NULL before and after */
	struct secrets *sec;

	uv_timer_t probe_timer, startup_timer, defer;
	uv_tcp_t probe;
	uv_connect_t probe_req;
	bool probing;	 /* probe handle open */
	int probe_turn;	 /* localhost: 127.0.0.1 and ::1 in turn */
	bool probe_v6;	 /* the url names [::1] */
	bool probe_both; /* the url names localhost */
	uv_work_t work;
	enum listener_owner proof;
	int handles; /* timers, probe, work still open */

	struct msgq queue; /* sent before the server listened */
	bool want_drain;
	bool paused; /* clients stopped reading: so does the session */

	bool addr_in_use; /* its output said it could not bind */
	bool fault_pending, faulted;
	struct upstream_fault fault; /* text owned */
	bool shutting;		     /* stopping what runs */
	bool inner_closed, sup_closed, finishing;
	uint64_t spawned_ms;

	const struct upl_driver *drv; /* NULL: the server's own command */
	void *dctx;
	bool drv_stopping, drv_stopped; /* drv->stop called, answered */
};

static const struct upstream_cbs upl_inner_cbs;

/* ---- ending ---- */

static void upl_free(struct upstream *u)
{
	msgq_clear(&u->queue);
	free((char *)u->fault.text);
	free((struct outbox_fact_of *)u->fault.facts);
	secrets_free(u->sec);
	free(u->http_cfg.url);
	for (size_t i = 0; i < u->http_cfg.nheaders; i++) {
		free(u->http_cfg.headers[i].key);
		free(u->http_cfg.headers[i].value);
	}
	free(u->http_cfg.headers);
	for (size_t i = 0; i < u->nenv; i++) {
		free(u->env[i].key);
		free(u->env[i].value);
	}
	free(u->env);
	free(u);
}

static void upl_handle_closed_cb(uv_handle_t *h)
{
	struct upstream *u = h->data;
	if (--u->handles > 0)
		return;
	u->cbs.on_closed(u->ctx);
	upl_free(u);
}

static void upl_close(struct upstream *u, uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, upl_handle_closed_cb);
}

static void upl_release_port(struct upstream *u)
{
	if (u->port_held)
		ports_release(u->ports, u->port);
	u->port_held = false;
}

static void upl_deliver_fault(struct upstream *u);

/* Once the session and the program are gone: the handles, then
 * on_closed. A proof still running in the pool holds one more. */
static void upl_finish(struct upstream *u)
{
	if (u->finishing || !u->inner_closed || !u->sup_closed ||
	    (u->drv_stopping && !u->drv_stopped))
		return;
	/* Everything went before the deferred report ran: it still comes
	 * before on_closed. */
	upl_deliver_fault(u);
	u->finishing = true;
	upl_release_port(u);
	upl_close(u, (uv_handle_t *)&u->probe_timer);
	upl_close(u, (uv_handle_t *)&u->startup_timer);
	upl_close(u, (uv_handle_t *)&u->defer);
	if (u->probing)
		upl_close(u, (uv_handle_t *)&u->probe);
}

/* What the program started elsewhere (the driver's), then its own stop
 * ladder. */
static void upl_stop_program(struct upstream *u)
{
	if (u->drv && u->drv->stop && !u->drv_stopping) {
		u->drv_stopping = true;
		u->drv->stop(u->dctx, u);
		return;
	}
	if (u->sup != NULL && (!u->drv_stopping || u->drv_stopped))
		sup_stop(u->sup);
}

void upl_driver_stopped(struct upstream *u)
{
	u->drv_stopped = true;
	if (u->sup != NULL)
		sup_stop(u->sup);
	upl_finish(u);
}

/* The session first (its DELETE must reach a live server), then the
 * program's stop ladder. */
static void upl_shutdown(struct upstream *u)
{
	if (u->shutting)
		return;
	u->shutting = true;
	u->state = UPL_STOPPING;
	uv_timer_stop(&u->probe_timer);
	uv_timer_stop(&u->startup_timer);
	if (u->inner != NULL)
		upstream_http.stop(u->inner);
	else
		u->inner_closed = true;
	if (u->inner_closed)
		upl_stop_program(u);
	upl_finish(u);
}

/* The fault settles nothing: what waited for the port (the handshake:
 * the instance sends nothing else before it is ready) is the instance's
 * to settle, as after any fault, told that it was never sent. */
static void upl_deliver_fault(struct upstream *u)
{
	if (!u->fault_pending)
		return;
	u->fault_pending = false;
	size_t n = u->fault.nfacts + u->queue.count;
	struct outbox_fact_of *facts = xcalloc(n ? n : 1, sizeof *facts);
	size_t k = 0;
	for (size_t i = 0; i < u->fault.nfacts; i++)
		facts[k++] = u->fault.facts[i];
	struct msgq_item *m;
	while ((m = msgq_pop(&u->queue)) != NULL) {
		if (m->id > 0)
			facts[k++] = (struct outbox_fact_of){m->id,
							     OUTBOX_UNWRITTEN};
		free(m);
	}
	free((struct outbox_fact_of *)u->fault.facts);
	u->fault.facts = facts;
	u->fault.nfacts = k;
	u->cbs.on_fault(u->ctx, &u->fault);
}

static void upl_defer_cb(uv_timer_t *t)
{
	struct upstream *u = t->data;
	if (!u->fault_pending)
		return;
	upl_deliver_fault(u);
	upl_shutdown(u);
}

/* Reports a fault once (from the loop, never from inside an op) and
 * stops everything. */
static void upl_fault(struct upstream *u, enum upstream_fault_kind kind,
		      int64_t exit_status, int term_signal, int http_status,
		      char *text)
{
	if (u->faulted || u->shutting) {
		free(text);
		return;
	}
	u->faulted = true;
	u->fault_pending = true;
	u->fault = (struct upstream_fault){
		.kind = kind,
		.exit_status = exit_status,
		.term_signal = term_signal,
		.http_status = http_status,
		.text = text,
	};
	if (kind == UPSTREAM_LOST_PORT)
		upl_release_port(u);
	uv_timer_stop(&u->probe_timer);
	uv_timer_stop(&u->startup_timer);
	uv_timer_start(&u->defer, upl_defer_cb, 0, 0);
}

/* ---- the program ---- */

static void upl_sup_log_cb(void *ctx, const char *line, size_t len)
{
	struct upstream *u = ctx;
	if (u->state != UPL_READY && listener_says_addr_in_use(line, len))
		u->addr_in_use = true;
	if (u->cbs.on_log)
		u->cbs.on_log(u->ctx, line, len);
}

static void upl_sup_exit_cb(void *ctx, int64_t exit_status, int term_signal)
{
	struct upstream *u = ctx;
	if (u->state == UPL_STOPPING)
		return;
	if (u->state != UPL_READY && u->addr_in_use) {
		upl_fault(u, UPSTREAM_LOST_PORT, exit_status, term_signal, 0,
			  xasprintf("the server could not bind port %d "
				    "(another program took it first)",
				    u->port));
		return;
	}
	char *text;
	if (term_signal)
		text = xasprintf("the server was killed by signal %d%s",
				 term_signal,
				 u->state == UPL_READY
					 ? ""
					 : " before it listened on its port");
	else
		text = xasprintf("the server exited with code %" PRId64 "%s",
				 exit_status,
				 u->state == UPL_READY
					 ? ""
					 : " before it listened on its port");
	upl_fault(u, UPSTREAM_EXITED, exit_status, term_signal, 0, text);
}

static void upl_sup_closed_cb(void *ctx)
{
	struct upstream *u = ctx;
	struct upstream_owned o = {
		.kind = UPSTREAM_OWNED_PROCESS,
		.token = u->token,
		.pid = u->pid,
		.pgid = u->pid,
		.start_time = u->start_time,
		.port = u->port,
	};
	u->sup = NULL;
	u->sup_closed = true;
	/* The program is gone: nothing holds the port for it any more. */
	upl_release_port(u);
	u->cbs.on_owned(u->ctx, &o, false);
	if (!u->shutting) {
		/* on_exit reported it; the ladder ran on its own. */
		upl_shutdown(u);
	}
	upl_finish(u);
}

static const struct sup_cbs upl_sup_cbs = {
	.on_log = upl_sup_log_cb,
	.on_exit = upl_sup_exit_cb,
	.on_closed = upl_sup_closed_cb,
};

/* ---- readiness: the port answers, and the listener is ours ---- */

static void upl_flush(struct upstream *u)
{
	struct msgq_item *m;
	while (u->inner != NULL && (m = msgq_pop(&u->queue)) != NULL) {
		int rc = upstream_http.send(u->inner, m->msg, m->len, m->id);
		if (rc < 0 && m->id > 0)
			u->cbs.on_lost(u->ctx, m->id, OUTBOX_UNWRITTEN);
		free(m);
	}
	if (u->want_drain && u->cbs.on_drain) {
		u->want_drain = false;
		u->cbs.on_drain(u->ctx);
	}
}

static void upl_ready(struct upstream *u)
{
	/* It is bound: the reservation has done its work. */
	upl_release_port(u);
	uv_timer_stop(&u->startup_timer);
	struct upstream_spec spec = {
		.server = &u->http_cfg,
		.token = u->token,
		.http = u->http,
		.authorization = u->authorization,
		.auth_arg = u->auth_arg,
		.probe_era = u->probe_era,
		.subs = u->subs,
	};
	int rc = upstream_http.open(u->loop, &spec, &upl_inner_cbs, u,
				    &u->inner);
	if (rc < 0) {
		u->inner = NULL;
		upl_fault(u, UPSTREAM_CLOSED, -1, 0, 0,
			  xasprintf("cannot open an HTTP session to the "
				    "server on port %d: %s",
				    u->port, strerror(-rc)));
		return;
	}
	u->state = UPL_READY;
	if (u->paused)
		upstream_http.pause(u->inner, true);
	log_info("listening on port %d, %" PRIu64 " ms after start", u->port,
		 clock_now_ms() - u->spawned_ms);
	upl_flush(u);
}

static void upl_proof_work_cb(uv_work_t *w)
{
	struct upstream *u = w->data;
	u->proof = listener_owner(u->port, getuid(), u->pid, PROC_OWNER_ENV,
				  u->token[0] ? u->token : NULL);
}

static void upl_probe_cb(uv_timer_t *t);

/* What the proof found (u->proof; failed: it could not look). */
static void upl_proof_result(struct upstream *u, bool failed)
{
	u->handles--;
	if (u->state != UPL_PROVING || u->faulted) {
		if (u->finishing && u->handles == 0) {
			u->cbs.on_closed(u->ctx);
			upl_free(u);
		}
		return;
	}
	if (failed || u->proof == LISTENER_NONE) {
		/* Gone between the connection and the search: look again. */
		u->state = UPL_STARTING;
		uv_timer_start(&u->probe_timer, upl_probe_cb, UPL_PROBE_MS, 0);
		return;
	}
	if (u->proof == LISTENER_OTHER) {
		log_warn("port %d is held by a program that is not the "
			 "server's; it is left alone",
			 u->port);
		upl_fault(u, UPSTREAM_LOST_PORT, -1, 0, 0,
			  xasprintf("another program answers on port %d "
				    "(not the server mcpvisor started)",
				    u->port));
		return;
	}
	upl_ready(u);
}

static void upl_proof_done_cb(uv_work_t *w, int status)
{
	upl_proof_result(w->data, status < 0);
}

void upl_proved(struct upstream *u, enum listener_owner owner)
{
	u->proof = owner;
	upl_proof_result(u, false);
}

static void upl_probe_closed_cb(uv_handle_t *h)
{
	struct upstream *u = h->data;
	u->probing = false;
	upl_handle_closed_cb(h);
}

static void upl_probe_connect_cb(uv_connect_t *req, int status)
{
	struct upstream *u = req->data;
	if (!uv_is_closing((uv_handle_t *)&u->probe))
		uv_close((uv_handle_t *)&u->probe, upl_probe_closed_cb);
	if (u->state != UPL_STARTING || u->faulted)
		return;
	if (status < 0) {
		uv_timer_start(&u->probe_timer, upl_probe_cb, UPL_PROBE_MS, 0);
		return;
	}
	/* Something accepts connections there. Whose it is takes reads
	 * of /proc (and sock_diag): off the loop. */
	u->state = UPL_PROVING;
	u->work.data = u;
	if (u->drv && u->drv->prove) {
		u->handles++; /* until upl_proved */
		u->drv->prove(u->dctx, u, u->port);
	} else if (uv_queue_work(u->loop, &u->work, upl_proof_work_cb,
				 upl_proof_done_cb) == 0)
		u->handles++;
	else
		upl_fault(u, UPSTREAM_CLOSED, -1, 0, 0,
			  xstrdup("cannot check who listens on the port"));
}

static void upl_probe_cb(uv_timer_t *t)
{
	struct upstream *u = t->data;
	if (u->state != UPL_STARTING)
		return;
	if (u->probing) { /* the last probe's handle is still closing */
		uv_timer_start(&u->probe_timer, upl_probe_cb, UPL_PROBE_MS, 0);
		return;
	}
	bool v6 = u->probe_v6 || (u->probe_both && (u->probe_turn++ & 1));
	struct sockaddr_storage ss;
	if (v6)
		uv_ip6_addr("::1", u->port, (struct sockaddr_in6 *)&ss);
	else
		uv_ip4_addr("127.0.0.1", u->port, (struct sockaddr_in *)&ss);
	uv_tcp_init(u->loop, &u->probe);
	u->probe.data = u;
	u->probe_req.data = u;
	u->probing = true;
	u->handles++;
	if (uv_tcp_connect(&u->probe_req, &u->probe, (struct sockaddr *)&ss,
			   upl_probe_connect_cb) < 0) {
		uv_close((uv_handle_t *)&u->probe, upl_probe_closed_cb);
		uv_timer_start(&u->probe_timer, upl_probe_cb, UPL_PROBE_MS, 0);
	}
}

static void upl_startup_cb(uv_timer_t *t)
{
	struct upstream *u = t->data;
	if (u->state == UPL_READY)
		return;
	upl_fault(u, UPSTREAM_TIMEOUT, -1, 0, 0,
		  xasprintf("the server did not listen on port %d in time",
			    u->port));
}

/* ---- the HTTP session, once ready ---- */

static void upl_inner_message_cb(void *ctx, const char *msg, size_t len,
				 int64_t related)
{
	struct upstream *u = ctx;
	if (!u->shutting)
		u->cbs.on_message(u->ctx, msg, len, related);
}

static void upl_inner_lost_cb(void *ctx, int64_t id, enum outbox_fact f)
{
	struct upstream *u = ctx;
	if (!u->shutting)
		u->cbs.on_lost(u->ctx, id, f);
}

static void upl_inner_fault_cb(void *ctx, const struct upstream_fault *f)
{
	struct upstream *u = ctx;
	upl_fault(u, f->kind, f->exit_status, f->term_signal, f->http_status,
		  xstrdup(f->text ? f->text : "the HTTP session failed"));
	/* What the session knew of its requests goes with the fault. */
	if (u->fault_pending && u->fault.facts == NULL && f->nfacts > 0) {
		u->fault.facts =
			xmemdup(f->facts, f->nfacts * sizeof *f->facts);
		u->fault.nfacts = f->nfacts;
	}
}

static void upl_inner_drain_cb(void *ctx)
{
	struct upstream *u = ctx;
	if (!u->shutting && u->cbs.on_drain)
		u->cbs.on_drain(u->ctx);
}

static void upl_inner_owned_cb(void *ctx, const struct upstream_owned *o,
			       bool live)
{
	(void)ctx, (void)o, (void)live; /* a remote session owns nothing */
}

static void upl_inner_closed_cb(void *ctx)
{
	struct upstream *u = ctx;
	u->inner = NULL;
	u->inner_closed = true;
	if (!u->shutting)
		upl_shutdown(u); /* after its fault: the rest goes too */
	else
		upl_stop_program(u);
	upl_finish(u);
}

static const struct upstream_cbs upl_inner_cbs = {
	.on_message = upl_inner_message_cb,
	.on_lost = upl_inner_lost_cb,
	.on_fault = upl_inner_fault_cb,
	.on_drain = upl_inner_drain_cb,
	.on_owned = upl_inner_owned_cb,
	.on_closed = upl_inner_closed_cb,
};

/* ---- the ops ---- */

static struct config_kv *upl_copy_kv(const struct config_kv *kv, size_t n,
				     int port)
{
	struct config_kv *out = xcalloc(n ? n : 1, sizeof *out);
	for (size_t i = 0; i < n; i++) {
		out[i].key = xstrdup(kv[i].key);
		out[i].value = port ? listener_subst(kv[i].value, port)
				    : xstrdup(kv[i].value);
	}
	return out;
}

static int upl_spawn_cmd(struct upstream *u, const struct upstream_spec *spec,
			 const struct up_cmd *cmd)
{
	struct sup_spec ss = {
		.command = cmd->command,
		.args = cmd->args,
		.env = cmd->env,
		.token = spec->token,
		.cwd = spec->cwd,
		.mode = SUP_LOGS,
		.stop_grace_ms = spec->stop_grace_ms,
	};
	return sup_spawn(u->loop, &ss, &upl_sup_cbs, u, &u->sup);
}

static int upl_spawn(struct upstream *u, const struct upstream_spec *spec)
{
	const struct server_config *s = spec->server;
	if (u->drv) {
		struct up_cmd cmd = {0};
		int rc = u->drv->build(u->dctx, u->port, &cmd);
		return rc < 0 ? rc : upl_spawn_cmd(u, spec, &cmd);
	}
	char **args = xcalloc(s->nargs + 1, sizeof *args);
	for (size_t i = 0; i < s->nargs; i++)
		args[i] = listener_subst(s->args[i], u->port);
	char **env = sup_env_from_config(u->env, u->nenv);
	struct up_cmd cmd = {.command = s->command, .args = args, .env = env};
	int rc = upl_spawn_cmd(u, spec, &cmd);
	for (size_t i = 0; i < s->nargs; i++)
		free(args[i]);
	free(args);
	sup_env_free(env);
	return rc;
}

int upl_open_driven(uv_loop_t *loop, const struct upstream_spec *spec,
		    const struct upl_driver *drv, void *dctx,
		    const struct upstream_cbs *cbs, void *ctx,
		    struct upstream **out)
{
	const struct server_config *s = spec->server;
	if ((drv == NULL && s->command == NULL) || s->url == NULL)
		return -EINVAL;
	if (spec->http == NULL)
		return -ELIBACC; /* libcurl could not be loaded */
	struct upstream *u = xcalloc(1, sizeof *u);
	u->drv = drv;
	u->dctx = dctx;
	u->cbs = *cbs;
	u->ctx = ctx;
	u->loop = loop;
	u->http = spec->http;
	u->authorization = spec->authorization;
	u->auth_arg = spec->auth_arg;
	u->probe_era = spec->probe_era;
	u->subs = spec->subs;
	u->ports = ports_default();
	msgq_init(&u->queue);
	u->inner_closed = true; /* until a session is opened */
	if (spec->token)
		snprintf(u->token, sizeof u->token, "%s", spec->token);

	int rc = ports_reserve(u->ports, &u->port);
	if (rc < 0) {
		free(u);
		return rc;
	}
	u->port_held = true;
	u->http_cfg.name = s->name;
	u->http_cfg.kind = SERVER_HTTP_REMOTE;
	u->http_cfg.http_type = s->http_type;
	u->http_cfg.url = listener_subst(s->url, u->port);
	u->http_cfg.headers = upl_copy_kv(s->headers, s->nheaders, 0);
	u->http_cfg.nheaders = s->nheaders;
	u->env = upl_copy_kv(s->env, s->nenv, u->port);
	u->nenv = s->nenv;
	/* The secrets as configured: an env value that is only {port}
	 * becomes a port number, which is no secret (masked, it would hide
	 * the port in the url). */
	u->sec = secrets_new();
	secrets_add_server(u->sec, s);
	u->probe_v6 = strstr(u->http_cfg.url, "[::1]") != NULL;
	u->probe_both = strcasestr(u->http_cfg.url, "localhost") != NULL;

	/* Config refuses such a url too; this side does not rely on it. */
	bool loopback = listener_url_loopback(u->http_cfg.url) == 0;
	if (loopback) {
		rc = upl_spawn(u, spec);
		if (rc < 0) {
			upl_release_port(u);
			upl_free(u);
			return rc;
		}
	}
	uv_timer_init(loop, &u->probe_timer);
	uv_timer_init(loop, &u->startup_timer);
	uv_timer_init(loop, &u->defer);
	u->probe_timer.data = u->startup_timer.data = u->defer.data = u;
	u->handles = 3;
	*out = u;
	if (!loopback) {
		u->sup_closed = true;
		upl_fault(u, UPSTREAM_PROTOCOL, -1, 0, 0,
			  xstrdup("a local server's url must name a loopback "
				  "host (127.0.0.1, [::1] or localhost)"));
		return 0;
	}
	u->pid = sup_pid(u->sup);
	u->start_time = sup_start_time(u->sup);
	u->spawned_ms = clock_now_ms();
	struct upstream_owned o = {
		.kind = UPSTREAM_OWNED_PROCESS,
		.token = u->token,
		.pid = u->pid,
		.pgid = u->pid,
		.start_time = u->start_time,
		.port = u->port,
	};
	cbs->on_owned(ctx, &o, true);
	uint64_t limit = spec->startup_timeout_ms
				 ? spec->startup_timeout_ms
				 : (uint64_t)s->startup_timeout_ms;
	if (limit > 0)
		uv_timer_start(&u->startup_timer, upl_startup_cb, limit, 0);
	uv_timer_start(&u->probe_timer, upl_probe_cb, 0, 0);
	return 0;
}

static int upl_open(uv_loop_t *loop, const struct upstream_spec *spec,
		    const struct upstream_cbs *cbs, void *ctx,
		    struct upstream **out)
{
	return upl_open_driven(loop, spec, NULL, NULL, cbs, ctx, out);
}

static int upl_send(struct upstream *u, const char *msg, size_t len, int64_t id)
{
	if (u->faulted || u->shutting)
		return -EPIPE;
	if (u->state == UPL_READY)
		return upstream_http.send(u->inner, msg, len, id);
	if (u->queue.bytes + len > UPL_MAX_QUEUED) {
		u->want_drain = true;
		return -ENOBUFS;
	}
	msgq_push(&u->queue, msg, len, id);
	return 0;
}

static void upl_forget(struct upstream *u, int64_t id)
{
	if (u->inner != NULL) {
		upstream_http.forget(u->inner, id);
		return;
	}
	msgq_forget(&u->queue, id);
}

static void upl_stop(struct upstream *u)
{
	u->fault_pending = false; /* moot once the owner stops us */
	upl_shutdown(u);
}

static json_t *upl_describe(const struct upstream *u, bool verbose)
{
	json_t *d;
	if (u->inner != NULL) {
		d = upstream_http.describe(u->inner, verbose);
	} else {
		d = json_object();
		char *masked = secrets_mask(u->sec, u->http_cfg.url);
		json_object_set_new(d, "url", json_string(masked));
		free(masked);
	}
	json_object_set_new(d, "transport", json_string("http-local"));
	json_object_set_new(d, "port", json_integer(u->port));
	if (verbose && u->pid > 0)
		json_object_set_new(d, "pid", json_integer(u->pid));
	if (u->state != UPL_READY && u->state != UPL_STOPPING)
		json_object_set_new(d, "listening", json_false());
	return d;
}

static char *upl_log_tail(const struct upstream *u, int n)
{
	return u->sup ? sup_log_tail(u->sup, n) : xstrdup("");
}

/* Clients stopped reading what the server sends: the HTTP session stops
 * reading it too (the server's own output to our logs goes on). */
static void upl_pause(struct upstream *u, bool on)
{
	u->paused = on;
	if (u->inner != NULL && !u->shutting)
		upstream_http.pause(u->inner, on);
}

const struct upstream_ops upstream_http_local = {
	.kind = "http-local",
	.caps = UPSTREAM_RELATES | UPSTREAM_OWNS | UPSTREAM_HTTP |
		UPSTREAM_LATE_FACTS,
	.open = upl_open,
	.send = upl_send,
	.forget = upl_forget,
	.pause = upl_pause,
	.stop = upl_stop,
	.describe = upl_describe,
	.log_tail = upl_log_tail,
};
