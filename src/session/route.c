/*
 * Routing by name: a client request whose tool, prompt or resource names
 * one server is sent to it (session_call_start), waiting for that
 * server's lists when it is starting; an unknown or unserved name gets an
 * answer that says why; a method the runtime does not know passes through
 * to the one server that can take it.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/jsonrpc.h"
#include "pool/pool.h"
#include "router/router.h"
#include "session/hub.h"
#include "session/session_int.h"
#include "trust/trust.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/xmalloc.h"

/* A request to route by name or uri; takes params, refs ex and id. */
static struct route_req *session_route_new(struct exchange *ex, json_t *id,
					   const char *method, json_t *params,
					   enum instance_list which)
{
	struct route_req *rr = xcalloc(1, sizeof *rr);
	rr->ex = ex;
	exchange_ref(ex);
	rr->id = json_incref(id);
	rr->method = xstrdup(method);
	rr->params = params;
	rr->which = which;
	rr->started_ms = clock_now_ms();
	return rr;
}

static void session_route_wait(struct session *s, struct route_req *rr,
			       const char *server, const char *label)
{
	rr->server = xstrdup(server);
	rr->label = xstrdup(label);
	rr->next_waiting = s->routing;
	s->routing = rr;
}

static void session_route_unwait(struct session *s, struct route_req *rr)
{
	if (rr->server == NULL)
		return;
	struct route_req **pp = &s->routing;
	while (*pp != rr)
		pp = &(*pp)->next_waiting;
	*pp = rr->next_waiting;
	free(rr->server);
	free(rr->label);
	rr->server = rr->label = NULL;
}

static void session_route_free(struct route_req *rr)
{
	exchange_unref(rr->ex);
	json_decref(rr->id);
	json_decref(rr->params);
	free(rr->method);
	free(rr);
}

static void session_route(struct session *s, void *arg);

/* A name whose prefix is that of a server the runtime does not serve
 * (its config has an error, or it is disabled): what to say instead of
 * "Unknown", which sends the user looking for a typo. NULL when the name
 * is no such server's. */
static char *session_unserved_text(struct session *s, const char *what,
				   const char *name)
{
	for (size_t i = 0; name && i < s->nsrv; i++) {
		const struct server_config *sv = s->srv[i];
		size_t pl = strlen(sv->prefix);
		if (pl == 0 || sv->untrusted || strncmp(name, sv->prefix, pl) ||
		    strncmp(name + pl, ROUTER_SEP, strlen(ROUTER_SEP)))
			continue;
		if (sv->error)
			return xasprintf("%c%s \"%s\" cannot be called: server "
					 "\"%s\" is not served because of an "
					 "error in its config: %s",
					 toupper((unsigned char)what[0]),
					 what + 1, name, sv->name, sv->error);
		if (sv->disabled)
			return xasprintf("%c%s \"%s\" cannot be called: server "
					 "\"%s\" is disabled in the config",
					 toupper((unsigned char)what[0]),
					 what + 1, name, sv->name);
	}
	return NULL;
}

static void session_route_unknown(struct session *s, struct route_req *rr,
				  const char *what, const char *name)
{
	const char *untrusted = trust_refusal(s->srv, s->nsrv, name);
	if (untrusted) {
		session_reply_error(rr->ex, rr->id, JR_INVALID_PARAMS,
				    untrusted, NULL);
		return;
	}
	char *unserved = session_unserved_text(s, what, name);
	if (unserved) {
		session_reply_error(rr->ex, rr->id, JR_INVALID_PARAMS, unserved,
				    NULL);
		free(unserved);
		return;
	}
	json_t *all = session_aggregate(s, rr->which);
	char *names = router_names_summary(all, 20);
	char *msg = xasprintf("Unknown %s \"%s\". Available: %s", what, name,
			      names);
	session_reply_error(rr->ex, rr->id, JR_INVALID_PARAMS, msg, NULL);
	free(msg);
	free(names);
	json_decref(all);
}

/* Routes a request by the name or uri it carries, starting servers to
 * learn their lists when needed. */
static void session_route(struct session *s, void *arg)
{
	struct route_req *rr = arg;
	session_route_unwait(s, rr);
	if (s->closed) {
		session_route_free(rr);
		return;
	}
	struct session_views sv;
	session_views_build(s, &sv);
	int idx = -1;
	const char *orig = NULL;
	const char *key = NULL;
	const char *what = "tool";
	bool visible = true;
	if (rr->which == INSTANCE_RESOURCES) {
		key = "uri";
		what = "resource";
		const char *uri =
			json_string_value(json_object_get(rr->params, key));
		idx = router_resolve_uri(sv.v[INSTANCE_RESOURCES],
					 sv.v[INSTANCE_TEMPLATES], sv.n, uri);
		orig = uri;
	} else {
		key = "name";
		what = rr->which == INSTANCE_PROMPTS ? "prompt" : "tool";
		const char *name =
			json_string_value(json_object_get(rr->params, key));
		/* Deferred tools are not shown by name: resolved among the
		 * views that are not. */
		visible = !rr->deferred;
		idx = router_resolve(sv.v[rr->which], sv.n, rr->which, name,
				     visible, &orig);
		/* Hidden and deferred servers are not the model's to call
		 * by name; deferred ones go through SESSION_CALL_TOOL. */
		if (idx >= 0 && rr->which == INSTANCE_TOOLS &&
		    sv.servers[idx]->exposure !=
			    (rr->deferred ? EXPOSE_DEFERRED : EXPOSE_DIRECT))
			idx = -1;
		if (idx >= 0 && rr->which == INSTANCE_PROMPTS &&
		    sv.servers[idx]->exposure != EXPOSE_DIRECT)
			idx = -1;
	}
	if (idx == ROUTER_AMBIGUOUS) {
		char *text = router_collision_text(
			sv.v[rr->which], sv.servers, sv.n, rr->which,
			json_string_value(json_object_get(rr->params, key)),
			visible);
		text[0] = (char)toupper((unsigned char)text[0]);
		session_views_free(&sv);
		session_reply_error(rr->ex, rr->id, JR_INVALID_PARAMS, text,
				    NULL);
		free(text);
		session_route_free(rr);
		return;
	}
	/* Routed by its prefix to a server whose lists are not known yet:
	 * learn them first (from the cache, or a start), so an unknown name
	 * is answered by the runtime with what exists. */
	if (idx >= 0 && sv.v[rr->which][idx].items == NULL && !rr->gathered) {
		const struct server_config *only = sv.servers[idx];
		session_views_free(&sv);
		rr->gathered = true;
		session_route_wait(s, rr, only->name, orig);
		session_gather_only(s, only, session_route, rr);
		return;
	}
	if (idx < 0) {
		bool unknown_lists = false;
		for (size_t i = 0; i < sv.n; i++)
			if (sv.v[rr->which][i].items == NULL)
				unknown_lists = true;
		session_views_free(&sv);
		if (unknown_lists && !rr->gathered) {
			rr->gathered = true;
			session_gather(s, session_route, rr);
			return;
		}
		const char *asked =
			json_string_value(json_object_get(rr->params, key));
		if (rr->passthrough) {
			char *msg =
				xasprintf("Method not found: %s", rr->method);
			session_reply_error(rr->ex, rr->id, JR_METHOD_NOT_FOUND,
					    msg, NULL);
			free(msg);
		} else if (rr->which == INSTANCE_RESOURCES) {
			char *msg = xasprintf("Resource not found: %s", asked);
			session_reply_error(rr->ex, rr->id,
					    JR_RESOURCE_NOT_FOUND, msg,
					    json_pack("{s:s}", "uri", asked));
			free(msg);
		} else {
			session_route_unknown(s, rr, what, asked);
		}
		session_route_free(rr);
		return;
	}
	if (pool_server_held_stopped(hub_pool(s->hub), sv.servers[idx]->name)) {
		char *msg = xasprintf("Server \"%s\" was stopped by the user "
				      "and does not take requests until it is "
				      "restarted.",
				      sv.servers[idx]->name);
		session_reply_error(rr->ex, rr->id, JR_SERVER_UNAVAILABLE, msg,
				    NULL);
		free(msg);
		session_views_free(&sv);
		session_route_free(rr);
		return;
	}
	json_t *params = json_deep_copy(rr->params);
	if (strcmp(rr->method, "completion/complete") == 0) {
		/* The routing key was lifted out of ref; put it back. */
		json_t *ref = json_object_get(params, "ref");
		if (rr->which != INSTANCE_RESOURCES)
			json_object_set_new(ref, "name", json_string(orig));
		json_object_del(params, key);
	} else if (rr->which != INSTANCE_RESOURCES) {
		json_object_set_new(params, key, json_string(orig));
	}
	const struct server_config *srv = sv.servers[idx];
	session_views_free(&sv);
	session_call_start(s, rr->id, rr->method, params, srv, rr->ex, NULL, 0,
			   NULL);
	session_route_free(rr);
}

void session_route_request(struct session *s, json_t *id, const char *method,
			   json_t *params, enum instance_list which,
			   struct exchange *ex)
{
	const char *key = which == INSTANCE_RESOURCES ? "uri" : "name";
	if (!json_is_object(params) ||
	    !json_is_string(json_object_get(params, key))) {
		char *msg =
			xasprintf("%s needs params.%s (a string)", method, key);
		session_reply_error(ex, id, JR_INVALID_PARAMS, msg, NULL);
		free(msg);
		return;
	}
	json_t *meta = json_object_get(params, "_meta");
	if (meta && !json_is_object(meta)) {
		session_reply_error(ex, id, JR_INVALID_PARAMS,
				    "params._meta must be an object", NULL);
		return;
	}
	if (which == INSTANCE_TOOLS && session_has_deferred(s)) {
		const char *name =
			json_string_value(json_object_get(params, "name"));
		json_t *args = json_object_get(params, "arguments");
		if (strcmp(name, SESSION_FIND_TOOL) == 0) {
			session_find_deferred(s, id, args, ex);
			return;
		}
		if (strcmp(name, SESSION_CALL_TOOL) == 0) {
			session_call_deferred(s, id, params, ex);
			return;
		}
	}
	struct route_req *rr =
		session_route_new(ex, id, method, json_incref(params), which);
	session_route(s, rr);
}

bool session_pass_through(struct session *s, json_t *id, const char *method,
			  json_t *params, struct exchange *ex)
{
	const char *key = NULL;
	enum instance_list which = INSTANCE_TOOLS;
	if (json_is_string(json_object_get(params, "name"))) {
		key = "name";
	} else if (json_is_string(json_object_get(params, "uri"))) {
		key = "uri";
		which = INSTANCE_RESOURCES;
	}
	if (key == NULL)
		return false;
	struct route_req *rr =
		session_route_new(ex, id, method, json_incref(params), which);
	rr->passthrough = true;
	session_route(s, rr);
	return true;
}

void session_call_deferred(struct session *s, json_t *id, json_t *params,
			   struct exchange *ex)
{
	json_t *args = json_object_get(params, "arguments");
	json_t *name = json_object_get(args, "name");
	json_t *inner = json_object_get(args, "arguments");
	if (!json_is_string(name) || (inner && !json_is_object(inner))) {
		session_reply_error(ex, id, JR_INVALID_PARAMS,
				    SESSION_CALL_TOOL " needs arguments.name "
						      "(a string) and "
						      "arguments.arguments (an "
						      "object)",
				    NULL);
		return;
	}
	/* The same call, as if the deferred tool had been called by name;
	 * progress tokens and the like come along. */
	json_t *p = json_pack("{s:O,s:o}", "name", name, "arguments",
			      inner ? json_incref(inner) : json_object());
	json_t *meta = json_object_get(params, "_meta");
	if (json_is_object(meta))
		json_object_set(p, "_meta", meta);
	struct route_req *rr =
		session_route_new(ex, id, "tools/call", p, INSTANCE_TOOLS);
	rr->deferred = true;
	session_route(s, rr);
}

/* completion/complete names a prompt or a resource template: routed by
 * that name or uri, which session_route then puts back into ref. */
void session_complete(struct session *s, json_t *id, json_t *params,
		      struct exchange *ex)
{
	json_t *ref = json_object_get(params, "ref");
	const char *type = json_string_value(json_object_get(ref, "type"));
	const char *key = NULL;
	enum instance_list which = INSTANCE_PROMPTS;
	if (type && strcmp(type, "ref/prompt") == 0) {
		key = "name";
	} else if (type && strcmp(type, "ref/resource") == 0) {
		key = "uri";
		which = INSTANCE_RESOURCES;
	}
	if (key && json_is_string(json_object_get(ref, key))) {
		json_t *p = json_deep_copy(params);
		json_object_set(p, key, json_object_get(ref, key));
		struct route_req *rr = session_route_new(
			ex, id, "completion/complete", p, which);
		session_route(s, rr);
		return;
	}
	session_reply_error(ex, id, JR_INVALID_PARAMS,
			    "completion/complete needs params.ref of type "
			    "ref/prompt (with name) or ref/resource (with uri)",
			    NULL);
}
