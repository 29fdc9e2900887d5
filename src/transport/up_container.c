/*
 * The container upstream: a container server is its engine's CLI run with
 * the command line mcpvisor builds (transport/container_cmd.h), through the
 * stdio upstream (the stdio form) or the local HTTP upstream (the HTTP
 * form, its port published on loopback). This file adds what a container
 * needs beyond the CLI process: the container reported as owned as soon as
 * its name is known and again with its id, the port proved by the engine
 * (the listener of a published port is the engine's, not our process), the
 * engine's own error line in faults, and the stop ladder through the
 * engine: close stdin, `ENGINE stop -t N`, `ENGINE rm -f`, then the CLI's
 * group as for any server. The container is reported gone only once the
 * engine confirmed it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "container/container_cmd.h"
#include "container/engine.h"
#include "jsonrpc/msgq.h"
#include "ports/http_probe.h"
#include "proc/supervisor.h"
#include "transport/up_cmd.h"
#include "transport/upstream.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define UPC_ERR_LINE 512 /* the engine's error line kept for a fault */
/* What docker and podman exit with when the engine itself failed (125: no
 * such image, daemon not running, a name in use; 126: podman's port bind;
 * 127: no such command in the image), not the server. */
#define UPC_ENGINE_FAILED 125
/* How long the first answers wait for the container's id. */
#define UPC_ID_TIMEOUT_MS 5000

struct upstream {
	const struct upstream_ops *inner_ops;
	struct upstream *inner; /* NULL once it closed */
	struct upstream_cbs cbs;
	void *ctx;
	uv_loop_t *loop;
	bool http; /* the HTTP form (inner is up_local's) */

	char *engine, *name, *image;
	char *id; /* NULL until the engine said it */
	char token[SUP_TOKEN_MAX + 1];
	int cport;			       /* the HTTP form's port inside */
	int host_port;			       /* and where it is published */
	const struct upstream_spec *open_spec; /* during open only */
	bool proof_failed; /* the engine could not be asked */

	char **args, **env; /* the CLI's, kept while it may be built */

	bool stopping;	   /* the ladder started */
	bool cli_gone;	   /* the CLI exited or closed its output */
	bool removing;	   /* engine_remove runs */
	bool removed;	   /* engine_remove answered */
	bool id_asked;	   /* the inspect for the id ran */
	bool inner_closed; /* the inner upstream's on_closed came */
	bool closed;	   /* on_closed reported */
	int jobs;	   /* engine commands whose callback is to come */
	uv_timer_t grace;  /* stdio: how long stdin's EOF may take */
	bool timer_open;
	uint64_t grace_ms;
	char err_line[UPC_ERR_LINE]; /* the CLI's last stderr line */
	/* The server's first answers wait (briefly) for the id, so a server
	 * that is running is known by its id in status and the journal. */
	bool holding;
	bool run_failed; /* the engine failed the run before any answer */
	bool answered;
	bool user_named; /* the name is the user's --name: maybe not ours */
	/* Where the engine writes the id as it makes the container (a
	 * private folder of ours); NULL when the user gave --cidfile. */
	char *cid_dir, *cid_path;
	/* Answers that came before the container's id was known, with the
	 * request each relates to. */
	struct msgq held;
};

/* ---- ending ---- */

static void upc_drop_held(struct upstream *u)
{
	msgq_clear(&u->held);
	u->holding = false;
}

static void upc_free(struct upstream *u)
{
	upc_drop_held(u);
	if (u->cid_path)
		unlink(u->cid_path);
	if (u->cid_dir)
		rmdir(u->cid_dir);
	free(u->cid_path);
	free(u->cid_dir);
	free(u->engine);
	free(u->name);
	free(u->image);
	free(u->id);
	container_args_free(u->args);
	sup_env_free(u->env);
	free(u);
}

static void upc_free_closed_cb(uv_handle_t *h)
{
	upc_free(h->data);
}

static void upc_timer_closed_cb(uv_handle_t *h)
{
	struct upstream *u = h->data;
	u->cbs.on_closed(u->ctx);
	upc_free(u);
}

/* Once the CLI's upstream closed and no engine command is to answer. */
static void upc_maybe_close(struct upstream *u)
{
	if (u->closed || !u->inner_closed || u->jobs > 0 ||
	    (u->stopping && !u->removed))
		return;
	u->closed = true;
	if (u->timer_open) {
		uv_close((uv_handle_t *)&u->grace, upc_timer_closed_cb);
		return;
	}
	u->cbs.on_closed(u->ctx);
	upc_free(u);
}

static void upc_report(struct upstream *u, bool live, bool kept)
{
	struct upstream_owned o = {
		.kind = UPSTREAM_OWNED_CONTAINER,
		.token = u->token,
		.engine = u->engine,
		.container_id = u->id,
		.container_name = u->name,
		.kept = kept,
	};
	u->cbs.on_owned(u->ctx, &o, live);
}

static void upc_owned(struct upstream *u, bool live)
{
	upc_report(u, live, false);
}

/* The engine could not say it is gone: logged with its reason, and left
 * to the journal (the drain names it, the next start reconciles it). */
static void upc_given_up(struct upstream *u, const char *why)
{
	log_warn("container %s (%s) could not be confirmed gone: %s", u->name,
		 u->engine, why);
	upc_report(u, false, true);
}

/* ---- the engine's stop ladder ---- */

static void upc_removed_cb(void *ctx, bool gone, const char *why)
{
	struct upstream *u = ctx;
	u->jobs--;
	u->removed = true;
	/* The engine refused the run and now refuses the removal with the
	 * same words (its daemon is not running): it was never reached, so
	 * nothing was made. */
	if (!gone && u->run_failed && why && why[0] &&
	    strstr(u->err_line, why) != NULL) {
		log_info("container %s (%s): never made (%s)", u->name,
			 u->engine, why);
		gone = true;
	}
	if (gone)
		upc_owned(u, false);
	else
		upc_given_up(u, why ? why : "no reason given");
	if (u->http) {
		upl_driver_stopped(u->inner);
	} else if (!u->inner_closed) {
		u->inner_ops->stop(u->inner);
	}
	upc_maybe_close(u);
}

/* A removal the engine could not be asked for, reported on the next
 * turn of the loop. */
struct upc_unasked {
	uv_timer_t timer;
	struct upstream *u;
	int rc;
};

static void upc_unasked_closed_cb(uv_handle_t *h)
{
	free(h->data);
}

static void upc_unasked_cb(uv_timer_t *t)
{
	struct upc_unasked *x = t->data;
	struct upstream *u = x->u;
	char *why = xasprintf("cannot run the engine: %s", strerror(-x->rc));
	upc_given_up(u, why);
	free(why);
	u->removed = true;
	if (u->http && u->inner != NULL)
		upl_driver_stopped(u->inner);
	else if (!u->http && !u->inner_closed)
		u->inner_ops->stop(u->inner);
	uv_close((uv_handle_t *)t, upc_unasked_closed_cb);
	u->jobs--;
	upc_maybe_close(u);
}

/* The engine could not be asked: given up on, and the CLI stopped. From
 * the loop: this runs inside stop or up_local's driver stop hook, which
 * neither report nor hear of the driver's end from inside (upstream.h,
 * up_cmd.h). Counted as a job, so nothing closes before it ran. */
static void upc_remove_failed(struct upstream *u, int rc)
{
	struct upc_unasked *x = xmalloc(sizeof *x);
	x->u = u;
	x->rc = rc;
	x->timer.data = x;
	uv_timer_init(u->loop, &x->timer);
	uv_timer_start(&x->timer, upc_unasked_cb, 0, 0);
	u->jobs++;
}

/* By its id when known (unique); else by name. */
static void upc_remove_now(struct upstream *u)
{
	unsigned secs = (unsigned)((u->grace_ms + 999) / 1000);
	int rc = engine_remove(u->loop, u->engine, u->id ? u->id : u->name,
			       secs ? secs : 1, upc_removed_cb, u);
	if (rc == 0)
		u->jobs++;
	else
		upc_remove_failed(u, rc);
}

/* A name the user gave may be another's container (a second instance
 * whose run the engine refused: "name already in use"): only one that
 * carries our owner token is removed by it. */
static void upc_owner_cb(void *ctx, const struct engine_result *r)
{
	struct upstream *u = ctx;
	size_t n = strcspn(r->out, "\r\n");
	if (r->err == 0 && r->exit_status == 0 && n == strlen(u->token) &&
	    strncmp(r->out, u->token, n) == 0) {
		upc_remove_now(u);
		u->jobs--; /* this one's */
		upc_maybe_close(u);
		return;
	}
	bool absent = r->err == 0 &&
		      (r->exit_status == 0 || engine_says_gone(r->err_line));
	if (absent)
		log_info("container %s (%s): none of ours by that name",
			 u->name, u->engine);
	/* Not ours, or none: ours was never made. upc_removed_cb counts
	 * this job done. */
	upc_removed_cb(u, absent,
		       r->err_line[0] ? r->err_line : "the engine failed");
}

static void upc_remove(struct upstream *u)
{
	if (u->removing)
		return;
	u->removing = true;
	if (u->timer_open && !u->proof_failed)
		uv_timer_stop(&u->grace);
	if (u->id || !u->user_named) {
		upc_remove_now(u);
		return;
	}
	const char *args[] = {"inspect", "--format",
			      "{{index .Config.Labels \"" ENGINE_LABEL_OWNER
			      "\"}}",
			      u->name, NULL};
	int rc = engine_run(u->loop, u->engine, args, ENGINE_TIMEOUT_MS,
			    upc_owner_cb, u);
	if (rc == 0)
		u->jobs++;
	else
		upc_remove_failed(u, rc);
}

static void upc_grace_cb(uv_timer_t *t)
{
	upc_remove(t->data);
}

static void upc_proof_failed_cb(uv_timer_t *t)
{
	struct upstream *u = t->data;
	u->proof_failed = false;
	if (u->inner != NULL)
		upl_proved(u->inner, LISTENER_OTHER);
}

/* The stdio form's ladder: stdin's EOF first (a server that exits on it
 * takes its container with it), then the engine. */
static void upc_stop_stdio(struct upstream *u)
{
	if (u->stopping)
		return;
	u->stopping = true;
	if (u->cli_gone || u->inner_closed) {
		upc_remove(u);
		return;
	}
	up_stdio_close_stdin(u->inner);
	uv_timer_start(&u->grace, upc_grace_cb, u->grace_ms, 0);
}

/* ---- the id ---- */

/* The answers that waited for the id, in order; what comes after a stop
 * is dropped. */
static void upc_flush(struct upstream *u)
{
	u->holding = false;
	struct msgq_item *h;
	while ((h = msgq_pop(&u->held)) != NULL) {
		if (!u->stopping)
			u->cbs.on_message(u->ctx, h->msg, h->len, h->id);
		free(h);
	}
}

static void upc_id_cb(void *ctx, const struct engine_result *r)
{
	struct upstream *u = ctx;
	size_t n = strspn(r->out, "0123456789abcdef");
	if (r->err == 0 && r->exit_status == 0 && n >= 12 && n <= 64 &&
	    !u->removed) {
		u->id = xstrndup(r->out, n);
		upc_owned(u, true); /* the same container, now with its id */
	}
	/* Still counted while the answers go out: nothing closes under
	 * them. */
	upc_flush(u);
	u->jobs--;
	upc_maybe_close(u);
}

/* The id the engine wrote to our --cidfile when it made the container:
 * known at once, without asking it. */
static bool upc_read_cid(struct upstream *u)
{
	char buf[80];
	int fd = u->cid_path ? open(u->cid_path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	size_t hex = strspn(buf, "0123456789abcdef");
	if (hex < 12 || hex > 64)
		return false;
	u->id = xstrndup(buf, hex);
	/* Read once: the folder goes now rather than at the end, so that
	 * only a crash before the first answer can leave one behind. */
	unlink(u->cid_path);
	rmdir(u->cid_dir);
	free(u->cid_path);
	free(u->cid_dir);
	u->cid_path = u->cid_dir = NULL;
	upc_owned(u, true); /* the same container, now with its id */
	return true;
}

static void upc_ask_id(struct upstream *u)
{
	if (u->id_asked)
		return;
	u->id_asked = true;
	if (upc_read_cid(u))
		return;
	const char *args[] = {"inspect", "--format", "{{.Id}}", u->name, NULL};
	if (engine_run(u->loop, u->engine, args, UPC_ID_TIMEOUT_MS, upc_id_cb,
		       u) == 0) {
		u->jobs++;
		u->holding = true;
	}
}

/* ---- the inner upstream's facts ---- */

static void upc_message_cb(void *ctx, const char *msg, size_t len,
			   int64_t related)
{
	struct upstream *u = ctx;
	if (u->stopping)
		return;
	u->answered = true;
	upc_ask_id(u); /* the server answered: the container exists */
	if (!u->holding) {
		u->cbs.on_message(u->ctx, msg, len, related);
		return;
	}
	msgq_push(&u->held, msg, len, related);
}

static void upc_garbage_cb(void *ctx, const char *what)
{
	struct upstream *u = ctx;
	if (u->cbs.on_garbage && !u->stopping)
		u->cbs.on_garbage(u->ctx, what);
}

static void upc_overlong_cb(void *ctx, const char *head, size_t head_len,
			    const char *tail, size_t tail_len)
{
	struct upstream *u = ctx;
	if (u->cbs.on_overlong && !u->stopping)
		u->cbs.on_overlong(u->ctx, head, head_len, tail, tail_len);
}

static void upc_lost_cb(void *ctx, int64_t id, enum outbox_fact f)
{
	struct upstream *u = ctx;
	if (u->cbs.on_lost)
		u->cbs.on_lost(u->ctx, id, f);
}

static void upc_drain_cb(void *ctx)
{
	struct upstream *u = ctx;
	if (u->cbs.on_drain && !u->stopping)
		u->cbs.on_drain(u->ctx);
}

static void upc_log_cb(void *ctx, const char *line, size_t len)
{
	struct upstream *u = ctx;
	size_t lead = 0;
	while (lead < len && (line[lead] == ' ' || line[lead] == '\t'))
		lead++;
	/* docker ends its error with "Run 'docker run --help' for more
	 * information": the line before is the error. */
	bool hint = memmem(line, len, "--help'", 7) != NULL;
	if (lead < len && !hint) {
		size_t n = len - lead < UPC_ERR_LINE - 1 ? len - lead
							 : UPC_ERR_LINE - 1;
		/* It becomes a reason in status: plain text only (the
		 * engines' own lines are ASCII). */
		for (size_t i = 0; i < n; i++) {
			unsigned char ch = (unsigned char)line[lead + i];
			u->err_line[i] = ch == '\t'		   ? ' '
					 : ch < 0x20 || ch >= 0x7f ? '?'
								   : (char)ch;
		}
		u->err_line[n] = '\0';
	}
	if (u->cbs.on_log)
		u->cbs.on_log(u->ctx, line, len);
}

/* A CLI that exits with the engine's own failure: its error line is the
 * reason ("image not known", "Cannot connect to the Docker daemon"). */
static void upc_fault_cb(void *ctx, const struct upstream_fault *f)
{
	struct upstream *u = ctx;
	if (f->kind == UPSTREAM_EXITED || f->kind == UPSTREAM_CLOSED)
		u->cli_gone = true;
	if (u->stopping) {
		if (!u->http && u->cli_gone)
			upc_remove(u); /* stdin's EOF did its work */
		return;
	}
	upc_flush(u); /* what it said before it went */
	struct upstream_fault g = *f;
	char *text = NULL;
	if (f->kind == UPSTREAM_EXITED && f->exit_status >= UPC_ENGINE_FAILED &&
	    f->exit_status <= UPC_ENGINE_FAILED + 2 && u->err_line[0]) {
		text = xasprintf("%s could not run the container: %s",
				 u->engine, u->err_line);
		u->run_failed = !u->answered;
		g.text = text;
	}
	u->cbs.on_fault(u->ctx, &g);
	free(text);
	/* The container goes with the connection; the HTTP form's goes
	 * through the driver's stop, which its upstream runs next. */
	if (!u->http)
		upc_stop_stdio(u);
	else
		u->stopping = true;
}

static void upc_owned_cb(void *ctx, const struct upstream_owned *o, bool live)
{
	struct upstream *u = ctx;
	u->cbs.on_owned(u->ctx, o, live); /* the CLI process */
}

static void upc_closed_cb(void *ctx)
{
	struct upstream *u = ctx;
	u->inner = NULL;
	u->inner_closed = true;
	upc_maybe_close(u);
}

static const struct upstream_cbs upc_inner_cbs = {
	.on_message = upc_message_cb,
	.on_garbage = upc_garbage_cb,
	.on_overlong = upc_overlong_cb,
	.on_lost = upc_lost_cb,
	.on_drain = upc_drain_cb,
	.on_log = upc_log_cb,
	.on_fault = upc_fault_cb,
	.on_owned = upc_owned_cb,
	.on_closed = upc_closed_cb,
};

/* ---- the HTTP form's hooks in up_local ---- */

static int upc_build(void *dctx, int port, struct up_cmd *cmd)
{
	struct upstream *u = dctx;
	struct container_cmd_in in = {
		.s = u->open_spec->server,
		.name = u->name,
		.token = u->token,
		.key = u->open_spec->key,
		.host_port = port,
		.cidfile = u->cid_path,
	};
	u->host_port = port;
	u->args = container_args(&in);
	cmd->command = u->engine;
	cmd->args = u->args;
	cmd->env = u->env;
	return 0;
}

/* Whether the engine's `port` output names 127.0.0.1:port. */
static bool upc_port_says(const char *out, int port)
{
	const char *pfx = "127.0.0.1:";
	for (const char *p = strstr(out, pfx); p; p = strstr(p + 1, pfx)) {
		char *end;
		long v = strtol(p + strlen(pfx), &end, 10);
		if (v == port && (*end == '\0' || *end == '\n' || *end == ' '))
			return true;
	}
	return false;
}

/* The listener of a published port is the engine's (conmon, docker-proxy,
 * or a NAT rule with no listener of ours at all): the engine says whether
 * the port is our container's. Not yet known to it: look again. */
static void upc_port_cb(void *ctx, const struct engine_result *r)
{
	struct upstream *u = ctx;
	u->jobs--;
	enum listener_owner owner = LISTENER_NONE;
	if (r->err == 0 && r->exit_status == 0 && r->out[0])
		owner = upc_port_says(r->out, u->host_port) ? LISTENER_OURS
							    : LISTENER_OTHER;
	if (u->inner != NULL)
		upl_proved(u->inner, owner);
	upc_maybe_close(u);
}

/* The engine says whether the published port is our container's. */
static void upc_ask_port(struct upstream *u)
{
	char cport[16];
	snprintf(cport, sizeof cport, "%d/tcp", u->cport);
	const char *args[] = {"port", u->name, cport, NULL};
	if (engine_run(u->loop, u->engine, args, ENGINE_TIMEOUT_MS, upc_port_cb,
		       u) == 0) {
		u->jobs++;
		return;
	}
	/* It cannot be asked: nothing proves the port ours. The answer
	 * must not come from inside a driver hook. */
	u->proof_failed = true;
	uv_timer_start(&u->grace, upc_proof_failed_cb, 0, 0);
}

/* docker-proxy (and Docker Desktop's port forwarding) accept on the
 * published port before the server inside listens, and close once they
 * find nobody behind: only an answer in HTTP says the server is there. */
#define UPC_CHECK_MS 2000 /* a server that accepts but says nothing */

static void upc_checked_cb(void *ctx, bool answered)
{
	struct upstream *u = ctx;
	u->jobs--;
	if (answered && !u->stopping && u->inner != NULL)
		upc_ask_port(u);
	else if (u->inner != NULL)
		upl_proved(u->inner, LISTENER_NONE); /* up_local looks again */
	upc_maybe_close(u);
}

static void upc_prove(void *dctx, struct upstream *inner, int port)
{
	struct upstream *u = dctx;
	if (http_probe(u->loop, port, UPC_CHECK_MS, upc_checked_cb, u) == 0) {
		u->jobs++;
		return;
	}
	u->proof_failed = true;
	uv_timer_start(&u->grace, upc_proof_failed_cb, 0, 0);
}

/* up_local's session closed: the container, then the CLI. */
static void upc_driver_stop(void *dctx, struct upstream *inner)
{
	struct upstream *u = dctx;
	u->stopping = true;
	upc_remove(u);
}

static const struct upl_driver upc_driver = {
	.build = upc_build,
	.prove = upc_prove,
	.stop = upc_driver_stop,
};

/* ---- the ops ---- */

/* A folder only we can write, for the engine's --cidfile (which must not
 * exist yet: docker refuses one that does). */
static void upc_make_cid_dir(struct upstream *u)
{
	const char *tmp = getenv("TMPDIR");
	char *dir = xasprintf("%s/mcpv-cid-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL) {
		free(dir); /* the id is asked of the engine instead */
		return;
	}
	u->cid_dir = dir;
	u->cid_path = xasprintf("%s/cid", dir);
}

static int upc_open(uv_loop_t *loop, const struct upstream_spec *spec,
		    const struct upstream_cbs *cbs, void *ctx,
		    struct upstream **out)
{
	const struct server_config *s = spec->server;
	const struct container_config *cc = s->container;
	*out = NULL;
	if (cc == NULL || spec->token == NULL)
		return -EINVAL;
	struct upstream *u = xcalloc(1, sizeof *u);
	u->cbs = *cbs;
	u->ctx = ctx;
	u->loop = loop;
	msgq_init(&u->held);
	u->http = cc->port > 0;
	u->inner_ops = u->http ? &upstream_http_local : &upstream_stdio;
	u->engine = container_engine_for(s);
	u->name = cc->name ? xstrdup(cc->name) : container_new_name(s->name);
	u->user_named = cc->name != NULL;
	if (!cc->cidfile)
		upc_make_cid_dir(u);
	u->image = cc->image ? xstrdup(cc->image) : NULL;
	u->cport = cc->port;
	snprintf(u->token, sizeof u->token, "%s", spec->token);
	u->env = sup_env_from_config(s->env, s->nenv);
	u->grace_ms =
		spec->stop_grace_ms ? spec->stop_grace_ms : PROC_STOP_GRACE_MS;
	uv_timer_init(loop, &u->grace);
	u->grace.data = u;
	u->timer_open = true;
	/* Before the engine can create it: the journal must know the name
	 * of what may appear. */
	upc_owned(u, true);
	int rc;
	u->open_spec = spec;
	if (u->http) {
		rc = upl_open_driven(loop, spec, &upc_driver, u, &upc_inner_cbs,
				     u, &u->inner);
	} else {
		struct container_cmd_in in = {
			.s = s,
			.name = u->name,
			.token = u->token,
			.key = spec->key,
			.cidfile = u->cid_path,
		};
		u->args = container_args(&in);
		struct up_cmd cmd = {
			.command = u->engine, .args = u->args, .env = u->env};
		rc = up_stdio_open_cmd(loop, spec, &cmd, &upc_inner_cbs, u,
				       &u->inner);
	}
	u->open_spec = NULL;
	if (rc < 0) {
		/* The CLI never ran: no container was made. */
		upc_owned(u, false);
		u->closed = true;
		uv_close((uv_handle_t *)&u->grace, upc_free_closed_cb);
		return rc;
	}
	*out = u;
	return 0;
}

static int upc_send(struct upstream *u, const char *msg, size_t len, int64_t id)
{
	if (u->stopping || u->inner == NULL)
		return -EPIPE;
	return u->inner_ops->send(u->inner, msg, len, id);
}

static void upc_forget(struct upstream *u, int64_t id)
{
	if (u->inner != NULL && u->inner_ops->forget)
		u->inner_ops->forget(u->inner, id);
}

static void upc_pause(struct upstream *u, bool on)
{
	if (u->inner != NULL && u->inner_ops->pause && !u->stopping)
		u->inner_ops->pause(u->inner, on);
}

static void upc_stop(struct upstream *u)
{
	if (u->http) {
		u->stopping = true;
		if (u->inner != NULL)
			u->inner_ops->stop(u->inner);
		return;
	}
	upc_stop_stdio(u);
}

static json_t *upc_describe(const struct upstream *u, bool verbose)
{
	json_t *d = u->inner ? u->inner_ops->describe(u->inner, verbose)
			     : json_object();
	json_object_set_new(
		d, "transport",
		json_string(u->http ? "container-http" : "container"));
	json_object_set_new(d, "engine", json_string(u->engine));
	if (u->image)
		json_object_set_new(d, "image", json_string(u->image));
	json_object_set_new(d, "container", json_string(u->name));
	if (verbose && u->id)
		json_object_set_new(d, "containerId", json_string(u->id));
	return d;
}

static char *upc_log_tail(const struct upstream *u, int n)
{
	if (u->inner == NULL || u->inner_ops->log_tail == NULL)
		return xstrdup("");
	return u->inner_ops->log_tail(u->inner, n);
}

const struct upstream_ops upstream_container = {
	.kind = "container",
	.caps = UPSTREAM_OWNS,
	.open = upc_open,
	.send = upc_send,
	.forget = upc_forget,
	.pause = upc_pause,
	.stop = upc_stop,
	.describe = upc_describe,
	.log_tail = upc_log_tail,
};

const struct upstream_ops upstream_container_http = {
	.kind = "container-http",
	.caps = UPSTREAM_RELATES | UPSTREAM_OWNS | UPSTREAM_HTTP |
		UPSTREAM_LATE_FACTS,
	.open = upc_open,
	.send = upc_send,
	.forget = upc_forget,
	.pause = upc_pause,
	.stop = upc_stop,
	.describe = upc_describe,
	.log_tail = upc_log_tail,
};
