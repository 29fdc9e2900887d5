/*
 * The remote HTTP upstream: one MCP client session (mcpc) to a server's
 * url, Streamable HTTP or the legacy HTTP+SSE transport. It turns mcpc's
 * facts into the upstream's (a message and the request whose stream
 * carried it, a lost request, a typed fault) and masks the config's
 * secrets in everything it says. The local HTTP upstream (up_local.c)
 * runs one of these once its server answers on its port.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/secrets.h"
#include "mcpc/mcpc.h"
#include "transport/up_modern.h"
#include "transport/upstream.h"
#include "util/xmalloc.h"

struct upstream {
	struct upstream_cbs cbs;
	void *ctx;
	struct mcpc *m;	     /* NULL once mcpc_close has let it go */
	struct upm *upm;     /* the era, and the revision's side */
	struct secrets *sec; /* the server's header, env and url secrets */
	char *url;	     /* as configured (unmasked: a secret may be in
				it; masked on the way out) */
	enum mcpc_mode mode;
	/* Callbacks are delivered from this timer, never from inside open,
	 * send, forget or stop: a fault to report, then on_closed. */
	uv_timer_t defer;
	bool fault_pending;
	bool upm_later; /* the revision's side has answers to give */
	struct upstream_fault fault; /* its strings owned (auth_sent wiped) */
	bool closing;		     /* mcpc_close was called */
	bool mcpc_done;		     /* its done callback ran */
	bool finishing;		     /* the timer is closing: on_closed next */
};

static void up_http_defer_cb(uv_timer_t *t);

static void up_http_kick(struct upstream *u)
{
	if (!u->finishing)
		uv_timer_start(&u->defer, up_http_defer_cb, 0, 0);
}

static void up_http_free(struct upstream *u)
{
	free((struct outbox_fact_of *)u->fault.facts);
	free((char *)u->fault.text);
	free((char *)u->fault.resource_metadata);
	free((char *)u->fault.www_authenticate);
	if (u->fault.auth_sent)
		explicit_bzero((char *)u->fault.auth_sent,
			       strlen(u->fault.auth_sent));
	free((char *)u->fault.auth_sent);
	secrets_free(u->sec);
	upm_free(u->upm);
	free(u->url);
	free(u);
}

static void up_http_timer_closed_cb(uv_handle_t *h)
{
	struct upstream *u = h->data;
	u->cbs.on_closed(u->ctx);
	up_http_free(u);
}

static void up_http_mcpc_done_cb(void *arg)
{
	struct upstream *u = arg;
	u->m = NULL;
	u->mcpc_done = true;
	up_http_kick(u);
}

static void up_http_close_mcpc(struct upstream *u)
{
	if (u->closing)
		return;
	u->closing = true;
	mcpc_close(u->m, up_http_mcpc_done_cb, u);
}

static void up_http_defer_cb(uv_timer_t *t)
{
	struct upstream *u = t->data;
	if (u->upm_later) {
		u->upm_later = false;
		if (!u->closing && !u->fault_pending)
			upm_run_later(u->upm);
	}
	if (u->fault_pending) {
		u->fault_pending = false;
		u->cbs.on_fault(u->ctx, &u->fault);
		up_http_close_mcpc(u);
	}
	if (u->mcpc_done && !u->finishing) {
		u->finishing = true;
		uv_close((uv_handle_t *)&u->defer, up_http_timer_closed_cb);
	}
}

static void up_http_deliver(void *ctx, const char *msg, size_t len,
			    int64_t related)
{
	struct upstream *u = ctx;
	if (!u->closing && !u->fault_pending)
		u->cbs.on_message(u->ctx, msg, len, related);
}

static void up_http_lose(void *ctx, int64_t id, enum outbox_fact f)
{
	struct upstream *u = ctx;
	if (!u->closing && !u->fault_pending)
		u->cbs.on_lost(u->ctx, id, f);
}

static void up_http_message_cb(void *ctx, const char *msg, size_t len,
			       int64_t related)
{
	struct upstream *u = ctx;
	if (u->closing || u->fault_pending)
		return;
	if (u->upm && upm_message(u->upm, msg, len, related))
		return;
	up_http_deliver(u, msg, len, related);
}

static void up_http_lost_cb(void *ctx, int64_t id, enum outbox_fact f)
{
	struct upstream *u = ctx;
	if (u->closing || u->fault_pending)
		return;
	if (u->upm && upm_lost(u->upm, id, f))
		return;
	up_http_lose(u, id, f);
}

static void up_http_drain_cb(void *ctx)
{
	struct upstream *u = ctx;
	if (!u->closing && !u->fault_pending && u->cbs.on_drain)
		u->cbs.on_drain(u->ctx);
}

static enum upstream_fault_kind up_http_kind(enum mcpc_fault f)
{
	switch (f) {
	case MCPC_FAULT_TIMEOUT:
		return UPSTREAM_TIMEOUT;
	case MCPC_FAULT_AUTH:
		return UPSTREAM_AUTH;
	case MCPC_FAULT_EXPIRED:
		return UPSTREAM_EXPIRED;
	case MCPC_FAULT_PROTOCOL:
		return UPSTREAM_PROTOCOL;
	case MCPC_FAULT_CLOSED:
	default:
		return UPSTREAM_CLOSED;
	}
}

static void up_http_fault_cb(void *ctx, const struct mcpc_fault_info *f)
{
	struct upstream *u = ctx;
	if (u->closing || u->fault_pending)
		return;
	/* mcpc names no header value; the url (and its query) may still be
	 * in a sentence, so the config's secrets are masked anyway. */
	u->fault = (struct upstream_fault){
		.kind = up_http_kind(f->kind),
		.exit_status = -1,
		.http_status = f->http_status,
		.text = secrets_mask(u->sec,
				     f->text ? f->text : "connection failed"),
		.resource_metadata =
			f->resource_metadata
				? secrets_mask(u->sec, f->resource_metadata)
				: NULL,
		.www_authenticate = f->www_authenticate
					    ? xstrdup(f->www_authenticate)
					    : NULL,
		.auth_sent = f->auth_sent ? xstrdup(f->auth_sent) : NULL,
		.facts = xmemdup(f->facts, f->nfacts * sizeof *f->facts),
		.nfacts = f->nfacts,
	};
	u->fault_pending = true;
	up_http_kick(u);
}

/* The revision's side sends through the session (up_modern.h). */
static int up_http_wire_post(void *w, const char *msg, size_t len, int64_t id,
			     const char *const *headers)
{
	struct upstream *u = w;
	return mcpc_send_modern_with(u->m, msg, len, id, headers);
}

static int up_http_wire_send(void *w, const char *msg, size_t len, int64_t id)
{
	struct upstream *u = w;
	return mcpc_send(u->m, msg, len, id);
}

static void up_http_wire_forget(void *w, int64_t id)
{
	struct upstream *u = w;
	mcpc_forget(u->m, id);
}

static void up_http_wire_kick(void *w)
{
	struct upstream *u = w;
	u->upm_later = true;
	up_http_kick(u);
}

static enum mcpc_mode up_http_mode(enum server_http_type t)
{
	switch (t) {
	case HTTP_TYPE_STREAMABLE:
		return MCPC_STREAMABLE;
	case HTTP_TYPE_SSE:
		return MCPC_SSE;
	case HTTP_TYPE_AUTO:
	default:
		return MCPC_AUTO;
	}
}

static int up_http_open(uv_loop_t *loop, const struct upstream_spec *spec,
			const struct upstream_cbs *cbs, void *ctx,
			struct upstream **out)
{
	const struct server_config *s = spec->server;
	if (s->url == NULL)
		return -EINVAL;
	if (spec->http == NULL)
		return -ELIBACC; /* libcurl could not be loaded */
	struct upstream *u = xcalloc(1, sizeof *u);
	u->cbs = *cbs;
	u->ctx = ctx;
	u->url = xstrdup(s->url);
	u->mode = up_http_mode(s->http_type);
	u->sec = secrets_new();
	secrets_add_server(u->sec, s);

	/* "Name: value" lines; mcpc copies them, so ours are wiped after. */
	char **lines = xcalloc(s->nheaders + 1, sizeof *lines);
	for (size_t i = 0; i < s->nheaders; i++)
		lines[i] = xasprintf("%s: %s", s->headers[i].key,
				     s->headers[i].value);
	struct mcpc_opts opts = {
		.url = s->url,
		.headers = (const char *const *)lines,
		.mode = u->mode,
		.authorization = spec->authorization,
		.auth_arg = spec->auth_arg,
	};
	static const struct mcpc_cbs mcbs = {
		.on_message = up_http_message_cb,
		.on_lost = up_http_lost_cb,
		.on_fault = up_http_fault_cb,
		.on_drain = up_http_drain_cb,
	};
	int rc = mcpc_new(spec->http, &opts, &mcbs, u, &u->m);
	for (size_t i = 0; i < s->nheaders; i++) {
		explicit_bzero(lines[i], strlen(lines[i]));
		free(lines[i]);
	}
	free(lines);
	if (rc < 0) {
		up_http_free(u);
		return rc;
	}
	/* The revision has no binding to the legacy HTTP+SSE transport. */
	if (spec->probe_era && u->mode != MCPC_SSE) {
		static const struct upm_out uo = {up_http_deliver,
						  up_http_lose};
		static const struct upm_wire uw = {
			.post = up_http_wire_post,
			.send = up_http_wire_send,
			.forget = up_http_wire_forget,
			.kick = up_http_wire_kick,
		};
		u->upm = upm_new(&uw, u, UPM_PROBE_DISCOVER, &uo, u);
		upm_follow(u->upm, spec->subs);
	}
	uv_timer_init(loop, &u->defer);
	u->defer.data = u;
	*out = u;
	return 0;
}

static int up_http_send(struct upstream *u, const char *msg, size_t len,
			int64_t id)
{
	if (u->closing || u->fault_pending)
		return -EPIPE;
	if (u->upm) {
		int rc = upm_send(u->upm, msg, len, id);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
	return mcpc_send(u->m, msg, len, id);
}

static void up_http_forget(struct upstream *u, int64_t id)
{
	if (u->closing)
		return;
	if (u->upm)
		upm_forget(u->upm, id);
	mcpc_forget(u->m, id);
}

/* Clients stopped reading what the server sends: so does the session
 * (its answers wait in the server's socket, not in our memory). */
static void up_http_pause(struct upstream *u, bool on)
{
	if (!u->closing)
		mcpc_pause(u->m, on);
}

static void up_http_stop(struct upstream *u)
{
	/* A fault not yet reported is moot once the owner stops us. */
	u->fault_pending = false;
	up_http_close_mcpc(u);
}

/* "sse" once the session speaks the legacy transport (configured, or
 * fallen back to), else "http". */
static const char *up_http_transport(const json_t *d)
{
	const char *proto = json_string_value(json_object_get(d, "protocol"));
	return proto && strcmp(proto, "sse") == 0 ? "sse" : "http";
}

static json_t *up_http_describe(const struct upstream *u, bool verbose)
{
	json_t *d = u->m ? mcpc_describe(u->m, verbose) : json_object();
	char *masked = secrets_mask(u->sec, u->url);
	json_object_set_new(d, "url", json_string(masked));
	free(masked);
	if (!verbose)
		json_object_del(d, "sessionId");
	const char *t = u->mode == MCPC_SSE ? "sse" : up_http_transport(d);
	json_object_set_new(d, "transport", json_string(t));
	if (upm_modern(u->upm))
		json_object_set_new(d, "era", json_string("2026-07-28"));
	return d;
}

const struct upstream_ops upstream_http = {
	.kind = "http",
	.caps = UPSTREAM_RELATES | UPSTREAM_HTTP | UPSTREAM_LATE_FACTS,
	.open = up_http_open,
	.send = up_http_send,
	.forget = up_http_forget,
	.pause = up_http_pause,
	.stop = up_http_stop,
	.describe = up_http_describe,
	.log_tail = NULL,
};
