/*
 * One client session and the MCP methods it answers. A request that needs
 * servers becomes a call (one server) or a gather (every server, for the
 * lists); both wait for their instances to be ready, then answer into the
 * exchange the request came on.
 */
#include "session/session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "jsonrpc/jsonrpc.h"
#include "pool/pool.h"
#include "router/router.h"
#include "session/hub.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define SESSION_TOKEN_PREFIX "mcpv-"

/* A client request forwarded to one server. */
struct call {
	struct call *next, *prev;
	struct session *session;
	struct exchange *ex; /* reference */
	json_t *client_id;
	char *method;
	json_t *params; /* to send, until the instance is ready */
	struct instance *inst;
	int64_t server_id; /* 0 until sent */
	json_t *progress_token; /* the client's, or NULL */
	uint64_t seq;
	uint64_t started_ms;
	char *label; /* the name the client used, for status and refusals */
	bool done;
	bool leased; /* holds c->inst for the session */
	int refs;
};

/* A request of a server for the client, waiting for the client's answer. */
struct upstream_req {
	struct upstream_req *next;
	char *client_id; /* the id the client sees */
	char *inst_key;
	json_t *server_id;
	struct exchange *ex; /* where it was sent (reference), or NULL */
};

/* One event kept for replay. */
struct ring_ev {
	uint64_t id;
	uint64_t stream;
	char *data; /* serialized message; "" for a priming event */
	size_t len;
};

/* A numbered stream of the session. */
struct stream_rec {
	struct stream_rec *next;
	uint64_t no;
	struct exchange *ex; /* reference */
	uint64_t parked_ms;  /* 0: not parked */
};

struct session {
	struct hub *hub;
	int refs;    /* the hub's, and one per gather under way */
	bool closed; /* ended; only references keep it */
	char id[SESSION_ID_LEN + 1];
	char *space;
	char *protocol_version;
	json_t *client_caps;
	json_t *client_info;
	char *server_caps_json; /* what servers this session starts are told */
	uint64_t created_ms, last_seen_ms;
	struct call calls; /* list head */
	uint64_t next_seq;
	uint64_t next_event_id;
	uint64_t next_stream;
	struct ring_ev ring[SESSION_RING_EVENTS];
	size_t ring_head, ring_count, ring_bytes;
	struct stream_rec *streams;
	unsigned nstreams;
	struct exchange *stream; /* standing GET stream, reference */
	struct upstream_req *upstream;
	/* What the client was last shown, so list_changed is sent only when
	 * its view really changed. */
	json_t *seen[INSTANCE_NLISTS];
};

static void session_random_id(char out[SESSION_ID_LEN + 1])
{
	unsigned char raw[SESSION_ID_LEN / 2];
	size_t got = 0;
	while (got < sizeof raw) {
		ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
		if (n > 0)
			got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

struct session *session_new(struct hub *hub, const char *space,
			    json_t *init_params)
{
	struct session *s = xcalloc(1, sizeof *s);
	s->hub = hub;
	session_random_id(s->id);
	s->space = space ? xstrdup(space) : NULL;
	const char *req = json_string_value(
		json_object_get(init_params, "protocolVersion"));
	s->protocol_version = xstrdup(mcp_version_negotiate(req));
	json_t *caps = json_object_get(init_params, "capabilities");
	s->client_caps = json_is_object(caps) ? json_incref(caps) : json_object();
	json_t *info = json_object_get(init_params, "clientInfo");
	s->client_info = json_is_object(info) ? json_incref(info) : json_object();
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
	s->refs = 1;
	return s;
}

static void session_destroy(struct session *s);

static void session_ref(struct session *s)
{
	s->refs++;
}

static void session_unref(struct session *s)
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

void session_set_protocol_version(struct session *s, const char *v)
{
	free(s->protocol_version);
	s->protocol_version = xstrdup(v);
}

bool session_client_has(const struct session *s, const char *cap)
{
	return json_object_get(s->client_caps, cap) != NULL;
}

uint64_t session_last_seen(const struct session *s)
{
	return s->last_seen_ms;
}

/* ---- numbered streams and the replay ring ---- */

static void session_ring_drop_oldest(struct session *s)
{
	struct ring_ev *ev = &s->ring[s->ring_head];
	s->ring_bytes -= ev->len;
	free(ev->data);
	ev->data = NULL;
	s->ring_head = (s->ring_head + 1) % SESSION_RING_EVENTS;
	s->ring_count--;
}

static const char *session_ring_push(struct session *s, uint64_t stream,
				     char *data, size_t len, uint64_t *id)
{
	while (s->ring_count > 0 &&
	       (s->ring_count == SESSION_RING_EVENTS ||
		s->ring_bytes + len > SESSION_RING_BYTES))
		session_ring_drop_oldest(s);
	size_t slot = (s->ring_head + s->ring_count) % SESSION_RING_EVENTS;
	struct ring_ev *ev = &s->ring[slot];
	ev->id = s->next_event_id++;
	ev->stream = stream;
	ev->data = data;
	ev->len = len;
	s->ring_count++;
	s->ring_bytes += len;
	*id = ev->id;
	return data;
}

static const char *session_record_cb(void *rctx, uint64_t stream,
				     json_t *msg, char *id)
{
	struct session *s = rctx;
	char *data = json_dumps(msg, JSON_COMPACT);
	uint64_t n;
	const char *kept = session_ring_push(s, stream, data, strlen(data), &n);
	snprintf(id, 24, "%llu", (unsigned long long)n);
	return kept;
}

static void session_stream_free(struct stream_rec *r)
{
	exchange_clear_recorder(r->ex);
	exchange_unref(r->ex);
	free(r);
}

static bool session_stream_in_ring(struct session *s, uint64_t no)
{
	for (size_t i = 0; i < s->ring_count; i++)
		if (s->ring[(s->ring_head + i) % SESSION_RING_EVENTS].stream ==
		    no)
			return true;
	return false;
}

/* Forgets streams nobody can resume any more: ended and out of the
 * ring, or too many. */
static void session_streams_prune(struct session *s)
{
	struct stream_rec **pp = &s->streams;
	while (*pp) {
		struct stream_rec *r = *pp;
		bool over = s->nstreams > SESSION_MAX_STREAMS &&
			    exchange_finished(r->ex);
		bool gone = (exchange_finished(r->ex) ||
			     !exchange_attached(r->ex)) &&
			    r->parked_ms == 0 &&
			    !session_stream_in_ring(s, r->no);
		if (over || gone) {
			*pp = r->next;
			s->nstreams--;
			session_stream_free(r);
		} else {
			pp = &r->next;
		}
	}
}

uint64_t session_stream_open(struct session *s, struct exchange *ex)
{
	session_streams_prune(s);
	struct stream_rec *r = xcalloc(1, sizeof *r);
	r->no = ++s->next_stream;
	r->ex = ex;
	exchange_ref(ex);
	r->next = s->streams;
	s->streams = r;
	s->nstreams++;
	exchange_set_recorder(ex, session_record_cb, s, r->no);
	return r->no;
}

void session_stream_prime(struct session *s, struct exchange *ex, char *id)
{
	uint64_t n;
	session_ring_push(s, exchange_stream(ex), xstrdup(""), 0, &n);
	snprintf(id, 24, "%llu", (unsigned long long)n);
}

static struct stream_rec *session_stream_find(struct session *s,
					      struct exchange *ex)
{
	for (struct stream_rec *r = s->streams; r; r = r->next)
		if (r->ex == ex)
			return r;
	return NULL;
}

void session_stream_park(struct session *s, struct exchange *ex)
{
	struct stream_rec *r = session_stream_find(s, ex);
	if (r && !exchange_finished(ex))
		r->parked_ms = clock_now_ms();
}

int session_stream_resume(struct session *s, const char *last_event_id,
			  struct exchange **ex, json_t **events)
{
	char *end;
	unsigned long long last = strtoull(last_event_id, &end, 10);
	if (*last_event_id == '\0' || *end != '\0')
		return -ENOENT;
	uint64_t stream = 0;
	for (size_t i = 0; i < s->ring_count; i++) {
		struct ring_ev *ev =
			&s->ring[(s->ring_head + i) % SESSION_RING_EVENTS];
		if (ev->id == last) {
			stream = ev->stream;
			break;
		}
	}
	if (stream == 0)
		return -ENOENT;
	json_t *out = json_array();
	for (size_t i = 0; i < s->ring_count; i++) {
		struct ring_ev *ev =
			&s->ring[(s->ring_head + i) % SESSION_RING_EVENTS];
		if (ev->stream != stream || ev->id <= last || ev->len == 0)
			continue;
		char id[24];
		snprintf(id, sizeof id, "%llu", (unsigned long long)ev->id);
		json_array_append_new(out, json_pack("{s:s,s:s%}", "id", id,
						     "data", ev->data, ev->len));
	}
	*events = out;
	*ex = NULL;
	for (struct stream_rec *r = s->streams; r; r = r->next) {
		if (r->no != stream)
			continue;
		r->parked_ms = 0;
		if (!exchange_finished(r->ex)) {
			exchange_ref(r->ex);
			*ex = r->ex;
		}
		break;
	}
	return 0;
}

static void session_scope_ctx(const struct session *s,
			      struct pool_scope_ctx *sc)
{
	sc->session_id = s->id;
	sc->space = s->space;
	sc->app_dir = hub_app_dir(s->hub);
	sc->client_caps_json = s->server_caps_json;
}

/* Servers a session can use: configured, valid and enabled. */
static bool session_server_usable(const struct server_config *sv)
{
	return sv->error == NULL && !sv->disabled;
}

bool session_uses(struct session *s, struct instance *inst)
{
	const struct config *cfg = hub_config(s->hub);
	const struct server_config *sv = config_find(cfg, instance_name(inst));
	if (sv == NULL)
		return false;
	struct pool_scope_ctx sc;
	session_scope_ctx(s, &sc);
	return pool_instance_find(hub_pool(s->hub), sv, &sc) == inst;
}

/* ---- answering ---- */

static void session_reply(struct exchange *ex, json_t *id, json_t *result)
{
	json_t *msg = jr_result(id, result);
	exchange_send(ex, msg);
	json_decref(msg);
}

static void session_reply_error(struct exchange *ex, json_t *id, int code,
				const char *message, json_t *data)
{
	json_t *msg = jr_error(id, code, message, data);
	exchange_send(ex, msg);
	json_decref(msg);
}

/* ---- views of the session's servers ---- */

struct session_views {
	size_t n;
	const struct server_config **servers;
	struct instance **insts;
	struct router_view *v[INSTANCE_NLISTS];
};

static void session_views_build(struct session *s, struct session_views *sv)
{
	const struct config *cfg = hub_config(s->hub);
	struct pool_scope_ctx sc;
	session_scope_ctx(s, &sc);
	sv->n = 0;
	sv->servers = xcalloc(cfg->nservers + 1, sizeof *sv->servers);
	sv->insts = xcalloc(cfg->nservers + 1, sizeof *sv->insts);
	for (int w = 0; w < INSTANCE_NLISTS; w++)
		sv->v[w] = xcalloc(cfg->nservers + 1, sizeof *sv->v[w]);
	for (size_t i = 0; i < cfg->nservers; i++) {
		const struct server_config *srv = &cfg->servers[i];
		if (!session_server_usable(srv))
			continue;
		struct instance *inst =
			pool_instance_find(hub_pool(s->hub), srv, &sc);
		size_t k = sv->n++;
		sv->servers[k] = srv;
		sv->insts[k] = inst;
		for (int w = 0; w < INSTANCE_NLISTS; w++) {
			sv->v[w][k].prefix = srv->prefix;
			sv->v[w][k].items =
				inst ? instance_list(inst,
						     (enum instance_list)w)
				     : NULL;
			sv->v[w][k].visible = srv->exposure == EXPOSE_DIRECT;
		}
	}
}

static void session_views_free(struct session_views *sv)
{
	free(sv->servers);
	free(sv->insts);
	for (int w = 0; w < INSTANCE_NLISTS; w++)
		free(sv->v[w]);
}

/* ---- gathering every server's list ---- */

typedef void (*session_gather_done)(struct session *s, void *arg);

struct gather {
	struct session *s;
	unsigned waiting;
	struct instance **held; /* instances leased during their start */
	size_t nheld;
	session_gather_done done;
	void *arg;
};

static void session_gather_ready_cb(void *arg, struct instance *inst, int err)
{
	struct gather *g = arg;
	for (size_t i = 0; inst && i < g->nheld; i++) {
		if (g->held[i] == inst) {
			pool_release(hub_pool(g->s->hub), inst, g->s->id);
			g->held[i] = g->held[--g->nheld];
			break;
		}
	}
	if (--g->waiting > 0)
		return;
	g->done(g->s, g->arg);
	session_unref(g->s);
	free(g->held);
	free(g);
}

/* Starts every usable server of the session that has no list yet, and
 * calls done once each is ready or failed. */
static void session_gather(struct session *s, session_gather_done done,
			   void *arg)
{
	const struct config *cfg = hub_config(s->hub);
	struct pool_scope_ctx sc;
	session_scope_ctx(s, &sc);
	struct gather *g = xcalloc(1, sizeof *g);
	session_ref(s);
	g->s = s;
	g->done = done;
	g->arg = arg;
	g->waiting = 1; /* held until every start is asked for */
	g->held = xcalloc(cfg->nservers + 1, sizeof *g->held);
	struct pool *pool = hub_pool(s->hub);
	for (size_t i = 0; i < cfg->nservers; i++) {
		const struct server_config *srv = &cfg->servers[i];
		if (!session_server_usable(srv) ||
		    pool_server_held_stopped(pool, srv->name))
			continue;
		struct instance *inst = pool_instance_for(pool, srv, &sc);
		enum instance_state st = instance_state(inst);
		if (st == INSTANCE_READY || st == INSTANCE_NEEDS_AUTH)
			continue;
		/* Lists known from an earlier run or from the tool cache are
		 * offered without starting anything: a dropped or idle server
		 * keeps offering what it had. */
		if (instance_lists_known(inst))
			continue;
		g->waiting++;
		pool_acquire(pool, inst, s->id);
		g->held[g->nheld++] = inst;
		instance_ensure(inst, session_gather_ready_cb, g);
	}
	session_gather_ready_cb(g, NULL, 0);
}

/* ---- list requests ---- */

struct list_req {
	struct exchange *ex;
	json_t *id;
	enum instance_list which;
	char *cursor;
};

static const char *const session_list_keys[INSTANCE_NLISTS] = {
	"tools", "prompts", "resources", "resourceTemplates"};

static json_t *session_aggregate(struct session *s, enum instance_list which)
{
	struct session_views sv;
	session_views_build(s, &sv);
	json_t *all = router_aggregate(sv.v[which], sv.n, which);
	session_views_free(&sv);
	return all;
}

static void session_list_answer(struct session *s, void *arg)
{
	struct list_req *lr = arg;
	if (s->closed) {
		exchange_unref(lr->ex);
		json_decref(lr->id);
		free(lr->cursor);
		free(lr);
		return;
	}
	json_t *all = session_aggregate(s, lr->which);
	json_t *page = NULL;
	char *next = NULL;
	if (router_paginate(all, lr->cursor, hub_page_size(s->hub), &page,
			    &next) < 0) {
		session_reply_error(lr->ex, lr->id, JR_INVALID_PARAMS,
				    "Invalid cursor: it was not made by this "
				    "runtime, or the list changed",
				    NULL);
	} else {
		json_t *result = json_object();
		json_object_set_new(result, session_list_keys[lr->which],
				    page);
		if (next)
			json_object_set_new(result, "nextCursor",
					    json_string(next));
		session_reply(lr->ex, lr->id, result);
		if (lr->cursor == NULL) {
			json_decref(s->seen[lr->which]);
			s->seen[lr->which] = json_incref(all);
		}
	}
	free(next);
	json_decref(all);
	exchange_unref(lr->ex);
	json_decref(lr->id);
	free(lr->cursor);
	free(lr);
}

static void session_list(struct session *s, json_t *id, json_t *params,
			 enum instance_list which, struct exchange *ex)
{
	json_t *cursor = json_object_get(params, "cursor");
	if (cursor && !json_is_string(cursor)) {
		session_reply_error(ex, id, JR_INVALID_PARAMS,
				    "\"cursor\" must be a string", NULL);
		return;
	}
	struct list_req *lr = xcalloc(1, sizeof *lr);
	lr->ex = ex;
	exchange_ref(ex);
	lr->id = json_incref(id);
	lr->which = which;
	lr->cursor = cursor ? xstrdup(json_string_value(cursor)) : NULL;
	session_gather(s, session_list_answer, lr);
}

/* ---- calls on one server ---- */

static void session_call_unref(struct call *c)
{
	if (--c->refs > 0)
		return;
	exchange_unref(c->ex);
	json_decref(c->client_id);
	json_decref(c->params);
	json_decref(c->progress_token);
	free(c->method);
	free(c->label);
	free(c);
}

static void session_call_finish(struct call *c)
{
	if (c->done)
		return;
	c->done = true;
	if (c->leased) {
		c->leased = false;
		pool_release(hub_pool(c->session->hub), c->inst,
			     c->session->id);
		hub_request_done(c->session->hub);
	}
	c->prev->next = c->next;
	c->next->prev = c->prev;
	c->next = c->prev = c;
	session_call_unref(c);
}

static void session_call_reply_cb(void *arg, json_t *resp, bool sent)
{
	struct call *c = arg;
	if (c->done) {
		session_call_unref(c);
		return;
	}
	json_t *out = json_object();
	json_object_set_new(out, "jsonrpc", json_string("2.0"));
	json_object_set(out, "id", c->client_id);
	json_t *error = json_object_get(resp, "error");
	if (error)
		json_object_set(out, "error", error);
	else
		json_object_set(out, "result",
				json_object_get(resp, "result")
					? json_object_get(resp, "result")
					: json_object());
	exchange_send(c->ex, out);
	json_decref(out);
	session_call_finish(c);
	session_call_unref(c);
}

static char *session_call_token(struct session *s, struct call *c)
{
	return xasprintf(SESSION_TOKEN_PREFIX "%s-%llu", s->id,
			 (unsigned long long)c->seq);
}

/* What the model is told when a server cannot take a request: what
 * happened and when it may work again, in one sentence, naming nothing the
 * model could not do itself. */
static char *session_unavailable_text(struct session *s, struct instance *inst,
				      int err)
{
	const char *name = instance_name(inst);
	const char *why = instance_last_error(inst);
	if (pool_server_held_stopped(hub_pool(s->hub), name))
		return xasprintf("Server \"%s\" was stopped by the user and "
				 "does not take requests until it is "
				 "restarted.",
				 name);
	if (err == -EACCES)
		return xasprintf("Server \"%s\" needs authorization: it "
				 "refused its credentials (%s), and it will "
				 "not be retried until they change.",
				 name, why ? why : "no reason given");
	if (err == -EAGAIN) {
		uint64_t ms = instance_backoff_remaining_ms(inst);
		return xasprintf("Server \"%s\" failed to start (%s); the next "
				 "attempt can run in %llu.%llu s.",
				 name, why ? why : "unknown error",
				 (unsigned long long)(ms / 1000),
				 (unsigned long long)(ms % 1000 / 100));
	}
	if (err == -ECANCELED)
		return xasprintf("Server \"%s\" was stopped before it could "
				 "take the request.",
				 name);
	return xasprintf("Server \"%s\" is not available: %s.", name,
			 why ? why : "it could not be started");
}

static void session_call_ready_cb(void *arg, struct instance *inst, int err)
{
	struct call *c = arg;
	if (c->done) {
		session_call_unref(c);
		return;
	}
	if (err < 0) {
		char *msg = session_unavailable_text(c->session, inst, err);
		json_t *data = instance_describe(inst, false);
		json_object_set_new(data, "server",
				    json_string(instance_name(inst)));
		session_reply_error(c->ex, c->client_id, JR_SERVER_UNAVAILABLE,
				    msg, data);
		free(msg);
		session_call_finish(c);
		session_call_unref(c);
		return;
	}
	json_t *params = c->params;
	c->params = NULL;
	if (c->progress_token) {
		char *tok = session_call_token(c->session, c);
		json_t *meta = json_object_get(params, "_meta");
		json_object_set_new(meta, "progressToken", json_string(tok));
		free(tok);
	}
	/* The reply callback inherits this reference. */
	int64_t id = instance_request(inst, c->method, params,
				      session_call_reply_cb, c);
	if (id < 0) {
		session_reply_error(c->ex, c->client_id, JR_SERVER_UNAVAILABLE,
				    "Server connection was lost before the "
				    "request could be sent; it was not sent",
				    NULL);
		session_call_finish(c);
		session_call_unref(c);
		return;
	}
	c->server_id = id;
}

/* Forwards a request to the server that owns it. params is stolen (the
 * routed copy). */
static void session_call_start(struct session *s, json_t *id,
			       const char *method, json_t *params,
			       const struct server_config *srv,
			       struct exchange *ex)
{
	struct pool_scope_ctx sc;
	session_scope_ctx(s, &sc);
	struct call *c = xcalloc(1, sizeof *c);
	c->session = s;
	c->ex = ex;
	exchange_ref(ex);
	c->client_id = json_incref(id);
	c->method = xstrdup(method);
	c->params = params;
	c->seq = s->next_seq++;
	c->started_ms = clock_now_ms();
	c->label = xasprintf("%s %s", method,
			     json_string_value(json_object_get(params, "name"))
				     ? json_string_value(
					       json_object_get(params, "name"))
				     : "");
	json_t *meta = json_object_get(params, "_meta");
	json_t *tok = json_object_get(meta, "progressToken");
	if (tok)
		c->progress_token = json_incref(tok);
	c->inst = pool_instance_for(hub_pool(s->hub), srv, &sc);
	/* The call holds its instance from now on: no idle close under it. */
	pool_acquire(hub_pool(s->hub), c->inst, s->id);
	c->leased = true;
	c->refs = 2; /* the session's list, and the pending callback */
	c->prev = s->calls.prev;
	c->next = &s->calls;
	s->calls.prev->next = c;
	s->calls.prev = c;
	instance_ensure(c->inst, session_call_ready_cb, c);
}

/* ---- routing by name ---- */

struct route_req {
	struct exchange *ex;
	json_t *id;
	char *method;
	json_t *params;
	enum instance_list which;
	bool gathered;
};

static void session_route_free(struct route_req *rr)
{
	exchange_unref(rr->ex);
	json_decref(rr->id);
	json_decref(rr->params);
	free(rr->method);
	free(rr);
}

static void session_route(struct session *s, void *arg);

static void session_route_unknown(struct session *s, struct route_req *rr,
				  const char *what, const char *name)
{
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
		idx = router_resolve(sv.v[rr->which], sv.n, rr->which, name,
				     &orig);
		/* Hidden and deferred servers are not the model's to call
		 * by name. */
		if (idx >= 0 && rr->which == INSTANCE_TOOLS &&
		    sv.servers[idx]->exposure != EXPOSE_DIRECT)
			idx = -1;
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
		if (rr->which == INSTANCE_RESOURCES) {
			char *msg = xasprintf("Resource not found: %s", asked);
			session_reply_error(
				rr->ex, rr->id, JR_RESOURCE_NOT_FOUND, msg,
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
	session_call_start(s, rr->id, rr->method, params, srv, rr->ex);
	session_route_free(rr);
}

static void session_route_request(struct session *s, json_t *id,
				  const char *method, json_t *params,
				  enum instance_list which,
				  struct exchange *ex)
{
	const char *key = which == INSTANCE_RESOURCES ? "uri" : "name";
	if (!json_is_object(params) ||
	    !json_is_string(json_object_get(params, key))) {
		char *msg = xasprintf("%s needs params.%s (a string)", method,
				      key);
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
	struct route_req *rr = xcalloc(1, sizeof *rr);
	rr->ex = ex;
	exchange_ref(ex);
	rr->id = json_incref(id);
	rr->method = xstrdup(method);
	rr->params = json_incref(params);
	rr->which = which;
	session_route(s, rr);
}

/* completion/complete names a prompt or a resource template. */
static void session_complete(struct session *s, json_t *id, json_t *params,
			     struct exchange *ex)
{
	json_t *ref = json_object_get(params, "ref");
	const char *type = json_string_value(json_object_get(ref, "type"));
	if (type && strcmp(type, "ref/prompt") == 0 &&
	    json_is_string(json_object_get(ref, "name"))) {
		/* Route by the prompt's name, then put the ref back. */
		json_t *p = json_deep_copy(params);
		json_object_set(p, "name", json_object_get(ref, "name"));
		struct route_req *rr = xcalloc(1, sizeof *rr);
		rr->ex = ex;
		exchange_ref(ex);
		rr->id = json_incref(id);
		rr->method = xstrdup("completion/complete");
		rr->params = p;
		rr->which = INSTANCE_PROMPTS;
		session_route(s, rr);
		return;
	}
	if (type && strcmp(type, "ref/resource") == 0 &&
	    json_is_string(json_object_get(ref, "uri"))) {
		json_t *p = json_deep_copy(params);
		json_object_set(p, "uri", json_object_get(ref, "uri"));
		struct route_req *rr = xcalloc(1, sizeof *rr);
		rr->ex = ex;
		exchange_ref(ex);
		rr->id = json_incref(id);
		rr->method = xstrdup("completion/complete");
		rr->params = p;
		rr->which = INSTANCE_RESOURCES;
		session_route(s, rr);
		return;
	}
	session_reply_error(ex, id, JR_INVALID_PARAMS,
			    "completion/complete needs params.ref of type "
			    "ref/prompt (with name) or ref/resource (with uri)",
			    NULL);
}

/* ---- methods the runtime answers across servers ---- */

struct fanout {
	struct exchange *ex;
	json_t *id;
	unsigned waiting;
};

static void session_fanout_reply_cb(void *arg, json_t *resp, bool sent)
{
	struct fanout *f = arg;
	if (--f->waiting > 0)
		return;
	session_reply(f->ex, f->id, json_object());
	exchange_unref(f->ex);
	json_decref(f->id);
	free(f);
}

/* logging/setLevel goes to every running server of the session. */
static void session_set_level(struct session *s, json_t *id, json_t *params,
			      struct exchange *ex)
{
	const char *level =
		json_string_value(json_object_get(params, "level"));
	static const char *const levels[] = {
		"debug",    "info",  "notice",	  "warning",
		"error",    "critical", "alert", "emergency", NULL};
	bool ok = false;
	for (int i = 0; level && levels[i]; i++)
		if (strcmp(level, levels[i]) == 0)
			ok = true;
	if (!ok) {
		session_reply_error(ex, id, JR_INVALID_PARAMS,
				    "logging/setLevel needs params.level, one "
				    "of debug, info, notice, warning, error, "
				    "critical, alert, emergency",
				    NULL);
		return;
	}
	struct session_views sv;
	session_views_build(s, &sv);
	struct fanout *f = xcalloc(1, sizeof *f);
	f->ex = ex;
	exchange_ref(ex);
	f->id = json_incref(id);
	f->waiting = 1;
	for (size_t i = 0; i < sv.n; i++) {
		struct instance *inst = sv.insts[i];
		if (inst == NULL || instance_state(inst) != INSTANCE_READY ||
		    !instance_has_capability(inst, "logging"))
			continue;
		f->waiting++;
		if (instance_request(inst, "logging/setLevel",
				     json_pack("{s:s}", "level", level),
				     session_fanout_reply_cb, f) < 0)
			f->waiting--;
	}
	session_views_free(&sv);
	session_fanout_reply_cb(f, NULL, false);
}

/* ---- client notifications and responses ---- */

static struct call *session_find_call(struct session *s, json_t *client_id)
{
	for (struct call *c = s->calls.next; c != &s->calls; c = c->next)
		if (json_equal(c->client_id, client_id))
			return c;
	return NULL;
}

/* Drops a call: the server is told, the client's stream stops waiting. */
static void session_call_cancel(struct call *c, const char *reason)
{
	if (c->done)
		return;
	if (c->server_id > 0) {
		instance_cancel(c->inst, c->server_id, reason);
		/* The reply callback will not run: drop its reference. */
		session_call_unref(c);
		c->server_id = 0;
	}
	exchange_skip(c->ex);
	session_call_finish(c);
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
	struct instance *inst = NULL;
	const struct config *cfg = hub_config(s->hub);
	for (size_t i = 0; i < cfg->nservers && inst == NULL; i++) {
		struct pool_scope_ctx sc;
		session_scope_ctx(s, &sc);
		struct instance *cand = pool_instance_find(
			hub_pool(s->hub), &cfg->servers[i], &sc);
		if (cand && strcmp(instance_key(cand), u->inst_key) == 0)
			inst = cand;
	}
	if (inst) {
		json_t *error = json_object_get(msg, "error");
		json_t *result = json_object_get(msg, "result");
		instance_respond(inst, u->server_id,
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
		session_route_request(s, id, method, params,
				      INSTANCE_RESOURCES, ex);
	} else if (strcmp(method, "completion/complete") == 0) {
		session_complete(s, id, params, ex);
	} else if (strcmp(method, "logging/setLevel") == 0) {
		session_set_level(s, id, params, ex);
	} else {
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

/* ---- the standing stream and server messages ---- */

void session_set_stream(struct session *s, struct exchange *ex)
{
	if (s->stream) {
		exchange_detach(s->stream);
		exchange_unref(s->stream);
	}
	s->stream = ex;
	if (ex)
		exchange_ref(ex);
}

void session_drop_stream(struct session *s, struct exchange *ex)
{
	if (s->stream == ex)
		session_set_stream(s, NULL);
}

bool session_has_stream(const struct session *s)
{
	return s->stream && exchange_attached(s->stream);
}

void session_notify(struct session *s, json_t *msg)
{
	if (s->stream && exchange_attached(s->stream))
		exchange_send(s->stream, msg);
}

bool session_route_progress(struct session *s, json_t *msg)
{
	json_t *params = jr_params(msg);
	const char *tok =
		json_string_value(json_object_get(params, "progressToken"));
	size_t plen = strlen(SESSION_TOKEN_PREFIX);
	if (tok == NULL || strncmp(tok, SESSION_TOKEN_PREFIX, plen) != 0 ||
	    strncmp(tok + plen, s->id, SESSION_ID_LEN) != 0 ||
	    tok[plen + SESSION_ID_LEN] != '-')
		return false;
	unsigned long long seq =
		strtoull(tok + plen + SESSION_ID_LEN + 1, NULL, 10);
	for (struct call *c = s->calls.next; c != &s->calls; c = c->next) {
		if (c->seq != seq || c->progress_token == NULL)
			continue;
		json_t *out = json_deep_copy(msg);
		json_object_set(json_object_get(out, "params"),
				"progressToken", c->progress_token);
		exchange_send(c->ex, out);
		json_decref(out);
		return true;
	}
	return true;
}

bool session_has_call_on(struct session *s, struct instance *inst)
{
	for (struct call *c = s->calls.next; c != &s->calls; c = c->next)
		if (c->inst == inst && c->server_id > 0)
			return true;
	return false;
}

static struct call *session_newest_call_on(struct session *s,
					   struct instance *inst)
{
	for (struct call *c = s->calls.prev; c != &s->calls; c = c->prev)
		if (c->inst == inst && c->server_id > 0 &&
		    exchange_attached(c->ex))
			return c;
	return NULL;
}

void session_route_related(struct session *s, struct instance *inst,
			   json_t *msg)
{
	struct call *c = session_newest_call_on(s, inst);
	if (c)
		exchange_send(c->ex, msg);
	else
		session_notify(s, msg);
}

void session_forward_server_request(struct session *s, struct instance *inst,
				    json_t *msg)
{
	/* The newest call on inst caused it, as far as can be told; its
	 * stream is still open because the call waits for its answer. */
	struct call *cause = session_newest_call_on(s, inst);
	struct upstream_req *u = xcalloc(1, sizeof *u);
	u->client_id = xasprintf("mcpv-%llu",
				 (unsigned long long)s->next_seq++);
	u->inst_key = xstrdup(instance_key(inst));
	u->server_id = json_incref(jr_id(msg));
	u->next = s->upstream;
	s->upstream = u;
	json_t *out = json_deep_copy(msg);
	json_object_set_new(out, "id", json_string(u->client_id));
	u->ex = cause ? cause->ex : (s->stream && exchange_attached(s->stream)
					     ? s->stream
					     : NULL);
	if (u->ex) {
		exchange_ref(u->ex);
		exchange_send(u->ex, out);
	}
	json_decref(out);
}

static void session_upstream_free(struct upstream_req *u)
{
	free(u->client_id);
	free(u->inst_key);
	json_decref(u->server_id);
	exchange_unref(u->ex);
	free(u);
}

bool session_route_server_cancel(struct session *s, struct instance *inst,
				 json_t *msg)
{
	json_t *rid = json_object_get(jr_params(msg), "requestId");
	for (struct upstream_req **pp = &s->upstream; *pp; pp = &(*pp)->next) {
		struct upstream_req *u = *pp;
		if (!json_equal(u->server_id, rid) ||
		    strcmp(u->inst_key, instance_key(inst)) != 0)
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

void session_describe_calls(struct session *s, const char *name,
			    struct buf *b)
{
	uint64_t now = clock_now_ms();
	for (struct call *c = s->calls.next; c != &s->calls; c = c->next) {
		if (c->done || strcmp(instance_name(c->inst), name) != 0)
			continue;
		if (b->len)
			buf_puts(b, ", ");
		buf_printf(b, "%s on %s (session %.8s, running %.1f s)",
			   c->label, name, s->id,
			   (double)(now - c->started_ms) / 1000.0);
	}
}

void session_lists_changed(struct session *s, struct instance *inst)
{
	static const char *const notes[INSTANCE_NLISTS] = {
		"notifications/tools/list_changed",
		"notifications/prompts/list_changed",
		"notifications/resources/list_changed", NULL};
	for (int w = 0; w < INSTANCE_NLISTS; w++) {
		if (s->seen[w] == NULL || notes[w] == NULL)
			continue;
		json_t *now = session_aggregate(s, (enum instance_list)w);
		bool same = json_equal(now, s->seen[w]);
		json_decref(now);
		if (same)
			continue;
		/* The client will list again; until then, do not repeat. */
		json_decref(s->seen[w]);
		s->seen[w] = NULL;
		json_t *msg = jr_notification(notes[w], NULL);
		session_notify(s, msg);
		json_decref(msg);
	}
}

void session_sweep(struct session *s, uint64_t now_ms)
{
	for (struct stream_rec *r = s->streams; r; r = r->next) {
		if (r->parked_ms == 0 || now_ms - r->parked_ms < SESSION_PARK_MS)
			continue;
		r->parked_ms = 0;
		session_exchange_gone(s, r->ex);
	}
	session_streams_prune(s);
}

void session_free(struct session *s)
{
	if (s == NULL || s->closed)
		return;
	s->closed = true;
	while (s->calls.next != &s->calls)
		session_call_cancel(s->calls.next, "session ended");
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
	while (s->streams) {
		struct stream_rec *r = s->streams;
		s->streams = r->next;
		session_stream_free(r);
	}
	while (s->ring_count)
		session_ring_drop_oldest(s);
	for (int w = 0; w < INSTANCE_NLISTS; w++)
		json_decref(s->seen[w]);
	json_decref(s->client_caps);
	json_decref(s->client_info);
	free(s->server_caps_json);
	free(s->space);
	free(s->protocol_version);
	free(s);
}
