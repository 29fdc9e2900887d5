/*
 * One client session: its identity, the servers it resolves, and the MCP
 * messages it takes from its client (dispatch) and from servers (progress,
 * notifications and requests routed back to it and its calls). Lists live
 * in lists.c, calls in calls.c, numbered streams in streams.c.
 */
#include "session/session.h"

#include <sys/random.h>
#include <unistd.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/filter.h"
#include "jsonrpc/jsonrpc.h"
#include "pool/pool.h"
#include "router/router.h"
#include "session/hub.h"
#include "session/session_int.h"
#include "trust/trust.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/random.h"
#include "util/xmalloc.h"

struct session *session_new(struct hub *hub, const char *space,
			    struct trust_space *space_ts, json_t *init_params)
{
	struct session *s = xcalloc(1, sizeof *s);
	s->hub = hub;
	random_hex(s->id, SESSION_ID_LEN / 2);
	s->space = space ? xstrdup(space) : NULL;
	if (space_ts)
		trust_space_ref(space_ts);
	s->space_ts = space_ts;
	const char *req = json_string_value(
		json_object_get(init_params, "protocolVersion"));
	s->protocol_version = xstrdup(mcp_version_negotiate(req));
	json_t *caps = json_object_get(init_params, "capabilities");
	s->client_caps =
		json_is_object(caps) ? json_incref(caps) : json_object();
	json_t *info = json_object_get(init_params, "clientInfo");
	s->client_info =
		json_is_object(info) ? json_incref(info) : json_object();
	/* Servers may ask for roots (the runtime can always answer), and for
	 * sampling and elicitation only when this client can. */
	json_t *adv = json_pack("{s:{s:b}}", "roots", "listChanged", 1);
	if (json_object_get(s->client_caps, "sampling"))
		json_object_set(adv, "sampling",
				json_object_get(s->client_caps, "sampling"));
	if (json_object_get(s->client_caps, "elicitation"))
		json_object_set(adv, "elicitation",
				json_object_get(s->client_caps, "elicitation"));
	s->server_caps_json = json_dumps(adv, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(adv);
	s->calls.next = s->calls.prev = &s->calls;
	s->created_ms = s->last_seen_ms = clock_now_ms();
	s->next_seq = 1;
	s->next_event_id = 1;
	s->log_level = ENVELOPE_LOG_NONE;
	s->refs = 1;
	session_reconfigure(s);
	return s;
}

static void session_destroy(struct session *s);

void session_ref(struct session *s)
{
	s->refs++;
}

void session_unref(struct session *s)
{
	if (--s->refs == 0)
		session_destroy(s);
}

const char *session_id(const struct session *s)
{
	return s->id;
}

const char *session_space(const struct session *s)
{
	return s->space;
}

const char *session_protocol_version(const struct session *s)
{
	return s->protocol_version;
}

bool session_client_has(const struct session *s, const char *cap)
{
	return json_object_get(s->client_caps, cap) != NULL;
}

uint64_t session_last_seen(const struct session *s)
{
	return s->last_seen_ms;
}

bool session_busy(const struct session *s)
{
	return s->calls.next != &s->calls || s->refs > 1;
}

void session_touch(struct session *s, uint64_t now_ms)
{
	s->last_seen_ms = now_ms;
}

void session_scope_ctx(const struct session *s, struct pool_scope_ctx *sc)
{
	sc->session_id = s->id;
	sc->space = s->space;
	sc->app_dir = hub_app_dir(s->hub);
	sc->client_caps_json = s->server_caps_json;
}

/* Servers a session can use: configured, valid and enabled. */
bool session_server_usable(const struct server_config *sv)
{
	return sv->error == NULL && !sv->disabled;
}

const struct server_config *session_server(const struct session *s,
					   const char *name)
{
	for (size_t i = 0; i < s->nsrv; i++)
		if (strcmp(s->srv[i]->name, name) == 0)
			return s->srv[i];
	return NULL;
}

const struct server_config *const *session_servers(const struct session *s,
						   size_t *n)
{
	*n = s->nsrv;
	return s->srv;
}

const char *session_key(const struct session *s,
			const struct server_config *srv)
{
	for (size_t i = 0; i < s->nsrv; i++)
		if (s->srv[i] == srv)
			return s->keys[i];
	return "";
}

static void session_keys_free(struct session *s)
{
	for (size_t i = 0; s->keys && i < s->nsrv; i++)
		free(s->keys[i]);
	free(s->keys);
	s->keys = NULL;
}

bool session_has_deferred(const struct session *s)
{
	for (size_t i = 0; i < s->nsrv; i++)
		if (s->srv[i]->exposure == EXPOSE_DEFERRED &&
		    session_server_usable(s->srv[i]))
			return true;
	return false;
}

/* What the session's view of a server is made of: its instance, how it
 * is shown (exposure, prefix) and what its filters keep. */
static json_t *session_view_of(const struct server_config *srv, const char *key)
{
	return json_pack("{s:s,s:s,s:s,s:o}", "key", key, "exposure",
			 config_exposure_name(srv->exposure), "prefix",
			 srv->prefix, "filters", config_filters_json(srv));
}

bool session_reconfigure(struct session *s)
{
	/* What it resolved before, to tell whether anything changed. */
	json_t *before = json_array();
	for (size_t i = 0; s->keys && i < s->nsrv; i++)
		json_array_append_new(before,
				      session_view_of(s->srv[i], s->keys[i]));
	session_keys_free(s);
	config_free(s->space_cfg);
	s->space_cfg = NULL;
	free(s->srv);
	/* Made from what was read off the loop (spaces.c): no disk here. */
	if (s->space_ts) {
		s->space_cfg =
			trust_space_config(s->space_ts, hub_config(s->hub));
		if (s->space_cfg && s->space_cfg->fatal) {
			log_warn("%s (ignored)", s->space_cfg->fatal);
			config_free(s->space_cfg);
			s->space_cfg = NULL;
		} else {
			for (size_t i = 0;
			     s->space_cfg && i < s->space_cfg->nservers; i++)
				if (s->space_cfg->servers[i].error)
					log_warn(
						"%s",
						s->space_cfg->servers[i].error);
		}
	}
	const struct config *g = hub_config(s->hub);
	size_t extra = s->space_cfg ? s->space_cfg->nservers : 0;
	s->srv = xcalloc(g->nservers + extra + 1, sizeof *s->srv);
	s->nsrv = 0;
	/* Global order first, a space's override in its place; then the
	 * space's own servers in its order. */
	for (size_t i = 0; i < g->nservers; i++) {
		const struct server_config *o =
			s->space_cfg
				? config_find(s->space_cfg, g->servers[i].name)
				: NULL;
		s->srv[s->nsrv++] = o ? o : &g->servers[i];
	}
	for (size_t i = 0; i < extra; i++)
		if (config_find(g, s->space_cfg->servers[i].name) == NULL)
			s->srv[s->nsrv++] = &s->space_cfg->servers[i];
	/* Keys are canonical JSON of the whole connection: made once here,
	 * not on every request. */
	struct pool_scope_ctx sc;
	session_scope_ctx(s, &sc);
	s->keys = xcalloc(s->nsrv + 1, sizeof *s->keys);
	json_t *after = json_array();
	for (size_t i = 0; i < s->nsrv; i++) {
		s->keys[i] = pool_instance_key(s->srv[i], &sc, NULL);
		json_array_append_new(after,
				      session_view_of(s->srv[i], s->keys[i]));
	}
	bool changed = !json_equal(before, after);
	json_decref(before);
	json_decref(after);
	return changed;
}

bool session_set_space(struct session *s, struct trust_space *ts)
{
	trust_space_ref(ts);
	trust_space_unref(s->space_ts);
	s->space_ts = ts;
	return session_reconfigure(s);
}

bool session_uses(struct session *s, struct instance *inst)
{
	const struct server_config *sv = session_server(s, instance_name(inst));
	if (sv == NULL)
		return false;
	struct pool_scope_ctx sc;
	session_scope_ctx(s, &sc);
	return pool_instance_find(hub_pool(s->hub), session_key(s, sv)) == inst;
}

bool session_owns(const struct session *s, struct instance *inst)
{
	const struct server_config *sv = session_server(s, instance_name(inst));
	return sv &&
	       (sv->scope == SCOPE_SESSION ||
		(sv->scope == SCOPE_SPACE && s->space == NULL)) &&
	       strcmp(session_key(s, sv), instance_key(inst)) == 0;
}

bool session_roots_for(const struct session *s, struct instance *inst)
{
	const struct server_config *sv = session_server(s, instance_name(inst));
	return sv && sv->scope != SCOPE_APP;
}

/* ---- answering ---- */

void session_reply(struct exchange *ex, json_t *id, json_t *result)
{
	json_t *msg = jr_result(id, result);
	exchange_send(ex, msg);
	json_decref(msg);
}

void session_reply_error(struct exchange *ex, json_t *id, int code,
			 const char *message, json_t *data)
{
	json_t *msg = jr_error(id, code, message, data);
	exchange_send(ex, msg);
	json_decref(msg);
}

static void session_client_notification(struct session *s, json_t *msg)
{
	const char *method = jr_method(msg);
	json_t *params = jr_params(msg);
	if (strcmp(method, "notifications/cancelled") == 0) {
		json_t *rid = json_object_get(params, "requestId");
		struct call *c = rid ? session_find_call(s, rid) : NULL;
		const char *reason =
			json_string_value(json_object_get(params, "reason"));
		if (c)
			session_call_cancel(c, reason ? reason
						      : "cancelled by client");
		return;
	}
	if (strcmp(method, "notifications/roots/list_changed") == 0) {
		struct session_views sv;
		session_views_build(s, &sv);
		for (size_t i = 0; i < sv.n; i++)
			if (sv.insts[i] &&
			    instance_state(sv.insts[i]) == INSTANCE_READY)
				instance_notify(sv.insts[i], method, NULL);
		session_views_free(&sv);
		return;
	}
	/* notifications/initialized and anything unknown need nothing. */
}

static void session_upstream_free(struct upstream_req *u);

static void session_client_response(struct session *s, json_t *msg)
{
	if (session_signin_response(s, msg))
		return;
	json_t *id = jr_id(msg);
	const char *sid = json_string_value(id);
	if (sid == NULL)
		return;
	struct upstream_req **pp = &s->upstream;
	while (*pp && strcmp((*pp)->client_id, sid) != 0)
		pp = &(*pp)->next;
	struct upstream_req *u = *pp;
	if (u == NULL) {
		log_debug("session %s: answer to unknown request %s", s->id,
			  sid);
		return;
	}
	*pp = u->next;
	/* The instance that asked, if this session still resolves to it:
	 * keys compared first, one pool lookup after. */
	struct instance *inst = NULL;
	for (size_t i = 0; i < s->nsrv && inst == NULL; i++)
		if (strcmp(s->keys[i], u->inst_key) == 0)
			inst = pool_instance_find(hub_pool(s->hub), s->keys[i]);
	if (inst) {
		json_t *error = json_object_get(msg, "error");
		json_t *result = json_object_get(msg, "result");
		instance_respond_on(inst, u->gen, u->server_id,
				    result ? json_incref(result) : NULL,
				    error ? json_incref(error) : NULL);
	}
	session_upstream_free(u);
}

/* ---- dispatch ---- */

void session_handle(struct session *s, json_t *msg, struct exchange *ex)
{
	s->last_seen_ms = clock_now_ms();
	const char *why;
	enum jr_kind kind = jr_classify(msg, &why);
	if (kind == JR_NOTIFICATION) {
		session_client_notification(s, msg);
		return;
	}
	if (kind == JR_RESPONSE) {
		session_client_response(s, msg);
		return;
	}
	if (kind != JR_REQUEST) {
		if (ex)
			session_reply_error(ex, NULL, JR_INVALID_REQUEST, why,
					    NULL);
		return;
	}
	json_t *id = jr_id(msg);
	const char *method = jr_method(msg);
	json_t *params = jr_params(msg);
	if (params && !json_is_object(params)) {
		session_reply_error(ex, id, JR_INVALID_PARAMS,
				    "params must be an object", NULL);
		return;
	}
	if (strcmp(method, "ping") == 0) {
		session_reply(ex, id, json_object());
	} else if (strcmp(method, "initialize") == 0) {
		session_reply_error(ex, id, JR_INVALID_REQUEST,
				    "This session is already initialized; "
				    "send initialize without Mcp-Session-Id "
				    "to start a new one",
				    NULL);
	} else if (strcmp(method, "tools/list") == 0) {
		session_list(s, id, params, INSTANCE_TOOLS, ex);
	} else if (strcmp(method, "prompts/list") == 0) {
		session_list(s, id, params, INSTANCE_PROMPTS, ex);
	} else if (strcmp(method, "resources/list") == 0) {
		session_list(s, id, params, INSTANCE_RESOURCES, ex);
	} else if (strcmp(method, "resources/templates/list") == 0) {
		session_list(s, id, params, INSTANCE_TEMPLATES, ex);
	} else if (strcmp(method, "tools/call") == 0) {
		session_route_request(s, id, method, params, INSTANCE_TOOLS,
				      ex);
	} else if (strcmp(method, "prompts/get") == 0) {
		session_route_request(s, id, method, params, INSTANCE_PROMPTS,
				      ex);
	} else if (strcmp(method, "resources/read") == 0 ||
		   strcmp(method, "resources/subscribe") == 0 ||
		   strcmp(method, "resources/unsubscribe") == 0) {
		session_route_request(s, id, method, params, INSTANCE_RESOURCES,
				      ex);
	} else if (strcmp(method, "completion/complete") == 0) {
		session_complete(s, id, params, ex);
	} else if (strcmp(method, "logging/setLevel") == 0) {
		session_set_level(s, id, params, ex);
	} else if (!session_pass_through(s, id, method, params, ex)) {
		char *m = xasprintf("Method not found: %s", method);
		session_reply_error(ex, id, JR_METHOD_NOT_FOUND, m, NULL);
		free(m);
	}
}

void session_exchange_gone(struct session *s, struct exchange *ex)
{
	struct call *c = s->calls.next;
	while (c != &s->calls) {
		struct call *next = c->next;
		if (c->ex == ex)
			session_call_cancel(c, "client disconnected");
		c = next;
	}
}

/* ---- what servers send back, routed to a call ---- */

void session_call_progress(struct call *c, struct instance *inst, json_t *msg)
{
	if (c->done || c->inst != inst || c->progress_token == NULL)
		return;
	json_t *out = json_deep_copy(msg);
	json_object_set(json_object_get(out, "params"), "progressToken",
			c->progress_token);
	exchange_send(c->ex, out);
	json_decref(out);
}

struct call *session_newest_call_on(struct session *s, struct instance *inst)
{
	for (struct call *c = s->calls.prev; c != &s->calls; c = c->prev)
		if (c->inst == inst && c->server_id > 0 &&
		    exchange_attached(c->ex))
			return c;
	return NULL;
}

struct call *session_cause_on(struct session *s, struct instance *inst)
{
	struct call *best = NULL;
	bool best_waits = false;
	for (struct call *c = s->calls.next; c != &s->calls; c = c->next) {
		if (c->inst != inst || c->server_id <= 0 ||
		    !exchange_attached(c->ex))
			continue;
		bool waits = exchange_waits_client(c->ex);
		if (best == NULL || (best_waits && !waits) ||
		    (waits == best_waits &&
		     (c->asked < best->asked ||
		      (c->asked == best->asked && c->order < best->order)))) {
			best = c;
			best_waits = waits;
		}
	}
	return best;
}

bool session_log_wanted(const struct session *s, json_t *msg)
{
	if (s->log_level == ENVELOPE_LOG_NONE)
		return true; /* the server's own choice, as 2025 has it */
	if (strcmp(jr_method(msg), "notifications/message") != 0)
		return true;
	return envelope_log_passes(
		s->log_level,
		json_string_value(json_object_get(jr_params(msg), "level")));
}

void session_route_related(struct session *s, struct instance *inst,
			   json_t *msg)
{
	if (!session_log_wanted(s, msg))
		return;
	struct call *c = session_newest_call_on(s, inst);
	if (c)
		exchange_send(c->ex, msg);
	else
		session_notify(s, msg);
}

bool session_cause_rank(struct session *s, struct instance *inst, bool *waits,
			unsigned *asked, uint64_t *order)
{
	struct call *c = session_cause_on(s, inst);
	if (c == NULL)
		return false;
	*waits = exchange_waits_client(c->ex);
	*asked = c->asked;
	*order = c->order;
	return true;
}

void session_call_related(struct call *c, json_t *msg)
{
	if (!session_log_wanted(c->session, msg))
		return;
	if (exchange_attached(c->ex))
		exchange_send(c->ex, msg);
	else
		session_notify(c->session, msg);
}

bool session_forward_server_request(struct session *s, struct instance *inst,
				    json_t *msg, struct call *cause, bool guess)
{
	/* The call that caused it, as far as can be told; its stream is
	 * still open because the call waits for its answer (a known cause
	 * whose client dropped that stream is asked on the standing one).
	 * Without one, the standing stream; without that, nowhere (the hub
	 * answers the server). */
	if (cause == NULL && guess)
		cause = session_cause_on(s, inst);
	if (cause && !exchange_attached(cause->ex))
		cause = NULL;
	struct exchange *ex =
		cause ? cause->ex
		      : (s->stream && exchange_attached(s->stream) ? s->stream
								   : NULL);
	if (ex == NULL)
		return false;
	if (cause)
		cause->asked++;
	struct upstream_req *u = xcalloc(1, sizeof *u);
	u->client_id =
		xasprintf("mcpv-%llu", (unsigned long long)s->next_seq++);
	u->inst_key = xstrdup(instance_key(inst));
	u->gen = instance_conn_gen(inst);
	u->server_id = json_incref(jr_id(msg));
	u->next = s->upstream;
	s->upstream = u;
	json_t *out = json_deep_copy(msg);
	json_object_set_new(out, "id", json_string(u->client_id));
	u->ex = ex;
	exchange_ref(u->ex);
	exchange_send(u->ex, out);
	json_decref(out);
	return true;
}

static void session_upstream_free(struct upstream_req *u)
{
	free(u->client_id);
	free(u->inst_key);
	json_decref(u->server_id);
	exchange_unref(u->ex);
	free(u);
}

json_t *session_server_request_id(struct session *s, const char *client_id)
{
	for (struct upstream_req *u = s->upstream; u; u = u->next)
		if (strcmp(u->client_id, client_id) == 0)
			return u->server_id;
	return NULL;
}

bool session_route_server_cancel(struct session *s, struct instance *inst,
				 json_t *msg)
{
	json_t *rid = json_object_get(jr_params(msg), "requestId");
	for (struct upstream_req **pp = &s->upstream; *pp; pp = &(*pp)->next) {
		struct upstream_req *u = *pp;
		if (!json_equal(u->server_id, rid) ||
		    strcmp(u->inst_key, instance_key(inst)) != 0 ||
		    u->gen != instance_conn_gen(inst))
			continue;
		*pp = u->next;
		json_t *out = json_deep_copy(msg);
		json_object_set_new(json_object_get(out, "params"), "requestId",
				    json_string(u->client_id));
		if (u->ex)
			exchange_send(u->ex, out);
		json_decref(out);
		session_upstream_free(u);
		return true;
	}
	return false;
}

void session_free(struct session *s)
{
	if (s == NULL || s->closed)
		return;
	s->closed = true;
	while (s->calls.next != &s->calls)
		session_call_abort(s->calls.next, "the session ended");
	while (s->upstream) {
		struct upstream_req *u = s->upstream;
		s->upstream = u->next;
		session_upstream_free(u);
	}
	session_set_stream(s, NULL);
	session_unref(s);
}

static void session_destroy(struct session *s)
{
	session_streams_destroy(s);
	for (int w = 0; w < INSTANCE_NLISTS; w++)
		json_decref(s->seen[w]);
	json_decref(s->client_caps);
	json_decref(s->client_info);
	free(s->server_caps_json);
	session_keys_free(s);
	session_subs_free(s);
	config_free(s->space_cfg);
	trust_space_unref(s->space_ts);
	free(s->srv);
	free(s->space);
	free(s->protocol_version);
	free(s);
}
