/*
 * What the hub shows of itself: status of every server, instance and
 * session, and one instance's description, with each configured secret
 * masked in whatever text a server wrote.
 */
#include <stdlib.h>
#include <string.h>

#include "config/secrets.h"
#include "session/hub.h"
#include "session/hub_int.h"
#include "session/session_int.h"
#include "util/xmalloc.h"

struct hub_status_walk {
	struct hub *hub;
	const char *name;
	const struct server_config *sv; /* NULL: a space's server */
	json_t *out;
	enum hub_status_detail detail;
	struct secrets *sec;
};

/* Text a server wrote (stderr, its error) may hold a secret the config
 * gave it: shown only with each configured secret masked. */
static void hub_status_mask(json_t *o, const char *field, struct secrets *sec)
{
	const char *text = json_string_value(json_object_get(o, field));
	if (text == NULL)
		return;
	char *masked = secrets_mask(sec, text);
	json_object_set_new(o, field, json_string(masked));
	free(masked);
}

/* How a server is reached, named as its transport names itself: "stdio",
 * "http" (Streamable HTTP; an instance may find it legacy and say "sse"),
 * "sse" (the 2024-11-05 HTTP+SSE transport), "http-local" (a program of
 * ours serving HTTP on a loopback port), "container" and "container-http"
 * (a container we own, over its stdio or a port published on loopback). */
static const char *hub_status_transport(const struct server_config *sv)
{
	switch (sv->kind) {
	case SERVER_HTTP_REMOTE:
		return sv->http_type == HTTP_TYPE_SSE ? "sse" : "http";
	case SERVER_HTTP_LOCAL:
		return "http-local";
	case SERVER_CONTAINER:
		return "container";
	case SERVER_CONTAINER_HTTP:
		return "container-http";
	case SERVER_STDIO:
	default:
		return "stdio";
	}
}

/* The server's transport and url, as o shows them: the url with its user
 * info and query values masked (as `check` shows it), then every
 * configured secret (a ${VAR} may have put one in its path). */
static void hub_status_reach(json_t *o, const struct server_config *sv,
			     struct secrets *sec)
{
	if (json_object_get(o, "transport") == NULL)
		json_object_set_new(o, "transport",
				    json_string(hub_status_transport(sv)));
	if (sv->url && json_object_get(o, "url") == NULL) {
		json_t *d = config_server_describe(sv);
		json_object_set(o, "url", json_object_get(d, "url"));
		json_decref(d);
	}
	hub_status_mask(o, "url", sec);
	/* A container's image and engine as configured (an instance says
	 * the engine it chose, its container's name and id); an image made
	 * from ${VAR} is a secret. */
	const struct container_config *cc = sv->container;
	if (cc && cc->image && json_object_get(o, "image") == NULL)
		json_object_set_new(o, "image", json_string(cc->image));
	if (cc && cc->engine && json_object_get(o, "engine") == NULL)
		json_object_set_new(o, "engine", json_string(cc->engine));
	hub_status_mask(o, "image", sec);
}

/* A server that refused our credentials: what its challenge named (the
 * resource metadata url, masked) and what to do: sign in, for a url server
 * that signs in with OAuth; else set them, in "headers" for a url server,
 * in "env" for a stdio one. */
static void hub_status_auth(json_t *d, const char *name, struct secrets *sec)
{
	const char *state = json_string_value(json_object_get(d, "state"));
	json_t *auth = json_object_get(d, "auth");
	if (!json_is_object(auth) &&
	    (state == NULL || strcmp(state, "needs_auth") != 0))
		return;
	if (!json_is_object(auth)) {
		auth = json_object();
		json_object_set_new(d, "auth", auth);
	}
	hub_status_mask(auth, "resourceMetadata", sec);
	hub_status_mask(auth, "challenge", sec);
	/* A server that signs in with OAuth: the command that does it. */
	const char *cmd = json_string_value(json_object_get(auth, "signIn"));
	if (cmd) {
		char *hint = xasprintf("run `%s` to sign in; the runtime "
				       "picks the login up at once",
				       cmd);
		json_object_set_new(auth, "hint", json_string(hint));
		free(hint);
		return;
	}
	const char *t = json_string_value(json_object_get(d, "transport"));
	bool stdio = t == NULL || strcmp(t, "stdio") == 0;
	char *hint = xasprintf(
		"set the credentials of server \"%s\" in its \"%s\" (for "
		"example %s) and reload the config; it is not tried again "
		"until "
		"they change",
		name, stdio ? "env" : "headers",
		stdio ? "\"API_KEY\": \"${API_KEY}\""
		      : "\"Authorization\": \"Bearer ${TOKEN}\"");
	json_object_set_new(auth, "hint", json_string(hint));
	free(hint);
}

static void hub_status_inst_cb(void *arg, struct instance *inst)
{
	struct hub_status_walk *w = arg;
	if (strcmp(instance_name(inst), w->name) != 0)
		return;
	json_t *d = instance_describe(inst, w->detail == HUB_STATUS_VERBOSE);
	if (w->detail == HUB_STATUS_PUBLIC)
		json_object_del(d, "stderr");
	hub_status_mask(d, "stderr", w->sec);
	hub_status_mask(d, "error", w->sec);
	hub_status_mask(d, "note", w->sec);
	if (w->sv) {
		hub_status_reach(d, w->sv, w->sec);
	} else {
		hub_status_mask(d, "url", w->sec);
		hub_status_mask(d, "image", w->sec);
	}
	hub_status_auth(d, w->name, w->sec);
	json_t *p = pool_describe(w->hub->pool, inst);
	json_t *members = json_object_get(p, "members");
	json_t *labels = json_array();
	size_t i;
	json_t *m;
	json_array_foreach(members, i, m)
	{
		const char *id =
			json_string_value(json_object_get(m, "session"));
		char label[HUB_LABEL_LEN + 1];
		hub_session_label(id ? id : "", label);
		json_array_append_new(labels, json_string(label));
	}
	json_object_set_new(d, "sessions", labels);
	json_object_set(d, "holders", json_object_get(p, "holders"));
	json_object_set(d, "inflight", json_object_get(p, "requests"));
	json_object_set(d, "idleTimeoutMs",
			json_object_get(p, "idleTimeoutMs"));
	if (json_object_get(p, "idleClosesInMs"))
		json_object_set(d, "idleClosesInMs",
				json_object_get(p, "idleClosesInMs"));
	json_decref(p);
	json_array_append_new(w->out, d);
}

static void hub_status_name_cb(void *arg, struct instance *inst)
{
	json_array_append_new(arg, json_string(instance_name(inst)));
}

/* Every secret a status could meet: the global config's, the API keys,
 * and those of each space's .mcp.json. */
static struct secrets *hub_status_secrets(struct hub *hub)
{
	struct secrets *sec = secrets_new();
	secrets_add_config(sec, hub->cfg);
	for (struct hub_entry *e = hub->sessions; e; e = e->next)
		secrets_add_config(sec, e->s->space_cfg);
	return sec;
}

json_t *hub_instance_describe(struct hub *hub, struct instance *inst)
{
	struct secrets *sec = hub_status_secrets(hub);
	json_t *d = instance_describe(inst, false);
	hub_status_mask(d, "stderr", sec);
	hub_status_mask(d, "error", sec);
	hub_status_mask(d, "note", sec);
	hub_status_mask(d, "url", sec);
	hub_status_mask(d, "image", sec);
	hub_status_auth(d, instance_name(inst), sec);
	secrets_free(sec);
	return d;
}

/* Each session by label, client name and space. */
static json_t *hub_status_sessions(struct hub *hub)
{
	json_t *out = json_array();
	for (struct hub_entry *e = hub->sessions; e; e = e->next) {
		char label[HUB_LABEL_LEN + 1];
		hub_session_label(session_id(e->s), label);
		json_t *o = json_pack("{s:s}", "label", label);
		json_t *cname = json_object_get(e->s->client_info, "name");
		if (json_is_string(cname))
			json_object_set(o, "client", cname);
		if (session_space(e->s))
			json_object_set_new(o, "space",
					    json_string(session_space(e->s)));
		json_array_append_new(out, o);
	}
	return out;
}

/* Servers of a space's .mcp.json that the user has not allowed: they run
 * nothing, and status says what allows them. One line per space and
 * name. */
static void hub_status_untrusted(struct hub *hub, json_t *servers)
{
	json_t *seen = json_object();
	for (struct hub_entry *e = hub->sessions; e; e = e->next) {
		const struct config *sc = e->s->space_cfg;
		for (size_t i = 0; sc && i < sc->nservers; i++) {
			const struct server_config *sv = &sc->servers[i];
			if (sv->untrusted == NULL)
				continue;
			char *k = xasprintf("%s\n%s", sv->name, sv->untrusted);
			if (json_object_get(seen, k) == NULL) {
				json_object_set_new(seen, k, json_true());
				json_array_append_new(
					servers,
					json_pack("{s:s,s:s,s:s,s:s,s:s,s:[]}",
						  "name", sv->name, "source",
						  "space", "space",
						  session_space(e->s), "state",
						  "untrusted", "untrusted",
						  sv->untrusted, "instances"));
			}
			free(k);
		}
	}
	json_decref(seen);
}

json_t *hub_status(struct hub *hub, enum hub_status_detail detail)
{
	struct secrets *sec = hub_status_secrets(hub);
	json_t *servers = json_array();
	for (size_t i = 0; i < hub->cfg->nservers; i++) {
		const struct server_config *sv = &hub->cfg->servers[i];
		json_t *o = json_object();
		json_object_set_new(o, "name", json_string(sv->name));
		json_object_set_new(o, "kind",
				    json_string(config_kind_name(sv->kind)));
		json_object_set_new(o, "scope",
				    json_string(config_scope_name(sv->scope)));
		json_object_set_new(
			o, "exposure",
			json_string(config_exposure_name(sv->exposure)));
		if (sv->error)
			json_object_set_new(o, "configError",
					    json_string(sv->error));
		if (sv->disabled)
			json_object_set_new(o, "disabled", json_true());
		if (pool_server_held_stopped(hub->pool, sv->name))
			json_object_set_new(o, "stoppedByUser", json_true());
		hub_status_reach(o, sv, sec);
		struct hub_status_walk w = {.hub = hub,
					    .name = sv->name,
					    .sv = sv,
					    .out = json_array(),
					    .detail = detail,
					    .sec = sec};
		pool_foreach(hub->pool, hub_status_inst_cb, &w);
		json_object_set_new(o, "instances", w.out);
		hub_status_names(hub, sv, o, detail);
		/* Why it last failed, also once its instance is gone. */
		json_t *lf = instance_failure_of(sv->name);
		if (lf && detail == HUB_STATUS_PUBLIC)
			json_object_del(lf, "stderr");
		if (lf) {
			hub_status_mask(lf, "stderr", sec);
			hub_status_mask(lf, "reason", sec);
			json_object_set_new(o, "lastFailure", lf);
		}
		json_array_append_new(servers, o);
	}
	/* Servers that only a space's .mcp.json names. */
	json_t *seen = json_object();
	for (size_t i = 0; i < hub->cfg->nservers; i++)
		json_object_set_new(seen, hub->cfg->servers[i].name,
				    json_true());
	json_t *names = json_array();
	pool_foreach(hub->pool, hub_status_name_cb, names);
	size_t k;
	json_t *nm;
	json_array_foreach(names, k, nm)
	{
		const char *name = json_string_value(nm);
		if (json_object_get(seen, name))
			continue;
		json_object_set_new(seen, name, json_true());
		struct hub_status_walk w = {.hub = hub,
					    .name = name,
					    .out = json_array(),
					    .detail = detail,
					    .sec = sec};
		pool_foreach(hub->pool, hub_status_inst_cb, &w);
		json_array_append_new(servers,
				      json_pack("{s:s,s:s,s:o}", "name", name,
						"source", "space", "instances",
						w.out));
	}
	json_decref(names);
	json_decref(seen);
	hub_status_untrusted(hub, servers);
	secrets_free(sec);
	json_t *st = json_pack("{s:o,s:I,s:o,s:s}", "servers", servers,
			       "sessions", (json_int_t)hub->nsessions,
			       "sessionList", hub_status_sessions(hub),
			       "config", hub->cfg->path ? hub->cfg->path : "");
	/* The file on disk is not what runs: say why until it loads. */
	if (hub->reload_error)
		json_object_set_new(
			st, "reloadError",
			json_pack("{s:s,s:I}", "message", hub->reload_error,
				  "at", (json_int_t)hub->reload_error_at));
	return st;
}
