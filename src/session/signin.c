/*
 * A call of a server that needs a sign-in, from a client that declared
 * URL-mode elicitation (2025-11-25): the runtime runs the authorization
 * flow itself (auth_flow_start: discovery, registration, the loopback
 * listener), asks the client with elicitation/create {mode: "url"} to open
 * the authorization URL in its own window, and holds the call until the
 * tokens are stored; then the server starts and the call goes on, as if
 * `mcpvisor login` had run. One flow per server at a time, shared by every
 * call that waits for it. The URL carries no secret (a PKCE challenge and
 * a state); the tokens never leave auth/.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "jsonrpc/jsonrpc.h"
#include "session/hub_int.h"
#include "session/session_int.h"
#include "util/log.h"
#include "util/random.h"
#include "util/xmalloc.h"

/* The ids of our elicitations, so the client's answer is told apart from
 * answers to servers' requests. */
#define SIGNIN_ID_PREFIX "mcpv-signin-"

struct signin_wait {
	struct signin_wait *next;
	struct signin_flow *flow;
	struct call *c;
	char *request_id; /* of the elicitation/create sent; NULL: not yet */
};

struct signin_flow {
	struct signin_flow *next;
	struct hub *hub;
	char *name;
	char *url;
	struct auth_flow *flow; /* NULL once it ended */
	char *auth_url;		/* once on_url came */
	char elicitation_id[33];
	struct signin_wait *waits;
};

/* Whether the client declared URL-mode elicitation. */
static bool signin_client_can(const struct session *s)
{
	json_t *el = json_object_get(s->client_caps, "elicitation");
	return json_is_object(json_object_get(el, "url"));
}

static void signin_ask(struct signin_wait *w)
{
	struct signin_flow *f = w->flow;
	struct call *c = w->c;
	static unsigned long long next_id;
	w->request_id = xasprintf(SIGNIN_ID_PREFIX "%llu",
				  (unsigned long long)++next_id);
	char *msg = xasprintf("Sign in to \"%s\" to use its tools: open the "
			      "link and approve; the call goes on once you "
			      "have.",
			      f->name);
	json_t *req = json_pack("{s:s,s:s,s:s,s:{s:s,s:s,s:s,s:s}}", "jsonrpc",
				"2.0", "id", w->request_id, "method",
				"elicitation/create", "params", "mode", "url",
				"elicitationId", f->elicitation_id, "url",
				f->auth_url, "message", msg);
	free(msg);
	log_info("session %.8s: asked its client to sign in to %s (URL-mode "
		 "elicitation)",
		 c->session->id, f->name);
	exchange_send(c->ex, req);
	json_decref(req);
}

static void signin_url_cb(void *arg, const char *auth_url,
			  const char *redirect_uri)
{
	struct signin_flow *f = arg;
	(void)redirect_uri;
	free(f->auth_url);
	f->auth_url = xstrdup(auth_url);
	for (struct signin_wait *w = f->waits; w; w = w->next)
		if (w->request_id == NULL)
			signin_ask(w);
}

static void signin_unlink_flow(struct signin_flow *f)
{
	struct signin_flow **pp = &f->hub->signins;
	while (*pp && *pp != f)
		pp = &(*pp)->next;
	if (*pp)
		*pp = f->next;
}

static void signin_flow_free(struct signin_flow *f)
{
	free(f->name);
	free(f->url);
	free(f->auth_url);
	free(f);
}

static void signin_wait_free(struct signin_wait *w)
{
	free(w->request_id);
	free(w);
}

static void signin_done_cb(void *arg, int err, const char *why)
{
	struct signin_flow *f = arg;
	f->flow = NULL;
	signin_unlink_flow(f);
	if (err == 0) {
		log_info("signed in to %s (through a client's URL-mode "
			 "elicitation)",
			 f->name);
		/* At once, before the token folder's watch says so: the
		 * server starts and the calls wait for that start. */
		pool_credentials_changed(hub_pool(f->hub), f->name, f->url);
	} else {
		log_warn("the sign-in to %s did not complete: %s", f->name,
			 why ? why : strerror(-err));
	}
	struct signin_wait *w;
	while ((w = f->waits) != NULL) {
		f->waits = w->next;
		struct call *c = w->c;
		c->signin = NULL;
		if (err == 0) {
			json_t *note = json_pack(
				"{s:s,s:s,s:{s:s}}", "jsonrpc", "2.0", "method",
				"notifications/elicitation/complete", "params",
				"elicitationId", f->elicitation_id);
			exchange_send(c->ex, note);
			json_decref(note);
			session_call_resume(c);
		} else {
			char *text = xasprintf(
				"Server \"%s\" needs a sign-in, and the "
				"sign-in "
				"did not complete (%s); run `mcpvisor login "
				"%s`, then call again.",
				f->name, why ? why : strerror(-err), f->name);
			session_call_fail(c, text);
			free(text);
		}
		signin_wait_free(w);
	}
	signin_flow_free(f);
}

static struct signin_flow *signin_flow_for(struct hub *hub,
					   const struct server_config *srv)
{
	for (struct signin_flow *f = hub->signins; f; f = f->next)
		if (strcmp(f->name, srv->name) == 0 &&
		    strcmp(f->url, srv->url) == 0)
			return f;
	struct auth *a = pool_auth(hub_pool(hub));
	if (a == NULL)
		return NULL;
	struct signin_flow *f = xcalloc(1, sizeof *f);
	f->hub = hub;
	f->name = xstrdup(srv->name);
	f->url = xstrdup(srv->url);
	random_hex(f->elicitation_id, 16);
	struct auth_flow_opts o = {
		.name = srv->name,
		.url = srv->url,
		.oauth = srv->oauth,
	};
	static const struct auth_flow_cbs cbs = {
		.on_url = signin_url_cb,
		.on_done = signin_done_cb,
	};
	int rc = auth_flow_start(a, &o, &cbs, f, &f->flow);
	if (rc < 0) {
		log_warn("cannot start a sign-in to %s: %s", srv->name,
			 strerror(-rc));
		signin_flow_free(f);
		return NULL;
	}
	f->next = hub->signins;
	hub->signins = f;
	return f;
}

bool session_call_signin(struct call *c)
{
	struct session *s = c->session;
	if (c->signin_tried || !signin_client_can(s) ||
	    !instance_signs_in(c->inst))
		return false;
	const struct server_config *srv =
		session_server(s, instance_name(c->inst));
	if (srv == NULL || srv->url == NULL)
		return false;
	struct signin_flow *f = signin_flow_for(s->hub, srv);
	if (f == NULL)
		return false;
	c->signin_tried = true;
	struct signin_wait *w = xcalloc(1, sizeof *w);
	w->flow = f;
	w->c = c;
	w->next = f->waits;
	f->waits = w;
	c->signin = w;
	if (f->auth_url)
		signin_ask(w);
	return true;
}

void session_call_signin_drop(struct call *c)
{
	struct signin_wait *w = c->signin;
	if (w == NULL)
		return;
	c->signin = NULL;
	struct signin_wait **pp = &w->flow->waits;
	while (*pp && *pp != w)
		pp = &(*pp)->next;
	if (*pp)
		*pp = w->next;
	/* The flow goes on without it: a sign-in the user is completing in
	 * the browser still stores its tokens (a login, for the next
	 * call). */
	signin_wait_free(w);
}

bool session_signin_response(struct session *s, json_t *msg)
{
	const char *id = json_string_value(jr_id(msg));
	if (id == NULL ||
	    strncmp(id, SIGNIN_ID_PREFIX, sizeof SIGNIN_ID_PREFIX - 1) != 0)
		return false;
	for (struct signin_flow *f = s->hub->signins; f; f = f->next) {
		for (struct signin_wait *w = f->waits; w; w = w->next) {
			if (w->c->session != s || w->request_id == NULL ||
			    strcmp(w->request_id, id) != 0)
				continue;
			const char *action = json_string_value(json_object_get(
				json_object_get(msg, "result"), "action"));
			/* Accepted: the user is on the page; the tokens end
			 * the wait. */
			if (action && strcmp(action, "accept") == 0)
				return true;
			struct call *c = w->c;
			/* The wait's reference goes to the failure. */
			session_call_signin_drop(c);
			char *text = xasprintf(
				"Server \"%s\" needs a sign-in, which was %s; "
				"the call was not made. Run `mcpvisor login "
				"%s` to sign in from a terminal.",
				f->name,
				action && strcmp(action, "decline") == 0
					? "declined"
					: "cancelled",
				f->name);
			session_call_fail(c, text);
			free(text);
			return true;
		}
	}
	return true; /* ours, for a call that is gone */
}

void hub_signins_free(struct hub *hub)
{
	struct signin_flow *f;
	while ((f = hub->signins) != NULL) {
		hub->signins = f->next;
		auth_flow_cancel(f->flow);
		struct signin_wait *w;
		while ((w = f->waits) != NULL) {
			f->waits = w->next;
			w->c->signin = NULL;
			signin_wait_free(w);
		}
		signin_flow_free(f);
	}
}
