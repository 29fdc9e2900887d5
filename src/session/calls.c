/*
 * Calls: a client request forwarded to the one server that owns it (the
 * routing by name or uri is route.c's), with its lease, id and progress
 * token maps, cancellation both ways, and the requests the runtime fans
 * out (logging/setLevel).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/jsonrpc.h"
#include "pool/pool.h"
#include "router/router.h"
#include "session/hub.h"
#include "session/hub_int.h"
#include "session/session_int.h"
#include "session/tokens.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/xmalloc.h"

/* ---- calls on one server ---- */

static void session_call_unref(struct call *c)
{
	if (--c->refs > 0)
		return;
	exchange_unref(c->ex);
	json_decref(c->client_id);
	json_decref(c->params);
	free(c->params_text);
	json_decref(c->progress_token);
	free(c->sub_uri);
	free(c);
}

static void session_call_ready_cb(void *arg, struct instance *inst, int err);

static void session_call_finish(struct call *c, bool error)
{
	if (c->done)
		return;
	c->done = true;
	/* A call that waited for its turn: the ready callback's reference,
	 * which will not be called now. */
	if (session_turn_leave(c))
		session_call_unref(c);
	/* A call that waited for a sign-in: the wait's reference. */
	if (c->signin) {
		session_call_signin_drop(c);
		session_call_unref(c);
	}
	c->error = error; /* for its server's figures (hub_call_gone) */
	c->prev->next = c->next;
	c->next->prev = c->prev;
	c->next = c->prev = c;
	struct hub *hub = c->session->hub;
	hub_call_gone(hub, c);
	bool leased = c->leased;
	c->leased = false;
	struct instance *inst = c->inst;
	bool sent = c->order != 0; /* it reached its server */
	if (leased)
		pool_release(hub_pool(hub), c->inst, c->session->id);
	session_call_unref(c);
	if (sent && (hub->turns || hub->resumes))
		session_turn_next(hub, inst);
	/* Last: a drain waiting for quiet may end the runtime from here. */
	if (leased)
		hub_request_done(hub);
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
	if (error == NULL && c->sub_uri)
		session_subs_note(c->session, c->inst, c->method, c->sub_uri);
	if (error)
		json_object_set(out, "error", error);
	else
		json_object_set(out, "result",
				json_object_get(resp, "result")
					? json_object_get(resp, "result")
					: json_object());
	exchange_send(c->ex, out);
	json_decref(out);
	session_call_finish(c, error != NULL);
	session_call_unref(c);
}

/* The server's answer as text: the client's id goes in, the result is
 * passed on as it came, with no parse or re-serialisation; or the call's
 * shaper makes the client's text (a 2026-07-28 client's, stamped) from
 * what the one scan of the answer found. */
static void session_call_text_cb(void *arg, const char *msg, size_t off,
				 size_t len)
{
	struct call *c = arg;
	if (c->done) {
		session_call_unref(c);
		return;
	}
	size_t n = 0;
	char *text = NULL;
	if (c->answer && exchange_attached(c->ex))
		text = c->answer(c->answer_arg, msg,
				 instance_answer_scan(c->inst), &n);
	if (text == NULL) {
		struct buf b;
		buf_init(&b);
		buf_reserve(&b, len + 64);
		buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
		json_int_t iv = json_integer_value(c->client_id);
		if (json_is_integer(c->client_id) && iv >= 0) {
			buf_put_u64(&b, (unsigned long long)iv);
		} else {
			char *id = json_dumps(c->client_id,
					      JSON_ENCODE_ANY | JSON_COMPACT);
			buf_puts(&b, id);
			free(id);
		}
		buf_puts(&b, ",\"result\":");
		buf_append(&b, msg + off, len);
		buf_puts(&b, "}");
		n = b.len;
		text = buf_steal(&b);
	}
	exchange_send_text(c->ex, text, n, true);
	if (c->sub_uri)
		session_subs_note(c->session, c->inst, c->method, c->sub_uri);
	session_call_finish(c, false);
	session_call_unref(c);
}

/* The order in which calls reached their servers, across sessions: a
 * server answers its requests' questions in that order. */
static uint64_t session_next_order(void)
{
	static uint64_t order;
	return ++order;
}

/* The progress token the server sees for c: opaque, mapped back by the
 * hub; dropped when the call finishes. */
static json_t *session_call_token(struct session *s, struct call *c)
{
	char text[TOKENS_LEN + 1];
	c->token = tokens_add(hub_tokens(s->hub), c);
	tokens_format(c->token, text);
	return json_string(text);
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
	if (err == -EACCES && instance_signs_in(inst))
		return xasprintf("Server \"%s\" needs a sign-in: run `mcpvisor "
				 "login %s` in a terminal, then call again (a "
				 "login is picked up at once).",
				 name, name);
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

/* The level the call's client asked with logging/setLevel, in the
 * request's _meta, for a 2026-07-28 server: it takes the level there, per
 * request, and logs on that call's answer stream only, so one client's
 * level is never another's on a shared instance (a 2025 server has it
 * from setLevel). A level the request carries stays. */
static void session_call_level(struct call *c, struct instance *inst,
			       json_t *params)
{
	enum envelope_log want = c->session->log_level;
	if (want == ENVELOPE_LOG_NONE || !json_is_object(params) ||
	    !instance_speaks_modern(inst) ||
	    !instance_has_capability(inst, "logging"))
		return;
	json_t *meta = json_object_get(params, "_meta");
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(params, "_meta", meta);
	}
	if (json_object_get(meta, META_LOG_LEVEL) == NULL)
		json_object_set_new(meta, META_LOG_LEVEL,
				    json_string(envelope_log_name(want)));
}

static void session_call_ready_cb(void *arg, struct instance *inst, int err)
{
	struct call *c = arg;
	if (c->done) {
		session_call_unref(c);
		return;
	}
	/* A client that can show a sign-in page is asked to: the call waits
	 * for the tokens. */
	if (err == -EACCES && session_call_signin(c))
		return;
	if (err < 0) {
		char *msg = session_unavailable_text(c->session, inst, err);
		const char *line = instance_failure_line(inst);
		if (line && (err == -EAGAIN || err == -EIO)) {
			/* What the server said is often the whole story
			 * ("missing API_KEY"), and hosts show only this. */
			char *with = xasprintf("%s It printed: %s", msg, line);
			free(msg);
			msg = with;
		}
		json_t *data = hub_instance_describe(c->session->hub, inst);
		json_object_set_new(data, "server",
				    json_string(instance_name(inst)));
		session_reply_error(c->ex, c->client_id, JR_SERVER_UNAVAILABLE,
				    msg, data);
		free(msg);
		session_call_finish(c, true);
		session_call_unref(c);
		return;
	}
	if (session_call_wait_turn(c, inst))
		return;
	int64_t id;
	if (c->params_text) {
		/* A call that came as text goes on as text. */
		id = instance_request_raw(inst, c->method, c->params_text,
					  c->params_len, session_call_reply_cb,
					  session_call_text_cb, c);
		free(c->params_text);
		c->params_text = NULL;
	} else {
		json_t *params = c->params;
		c->params = NULL;
		session_call_level(c, inst, params);
		if (c->progress_token) {
			json_t *meta = json_object_get(params, "_meta");
			json_object_set_new(meta, "progressToken",
					    session_call_token(c->session, c));
		}
		id = instance_request_text(inst, c->method, params,
					   session_call_reply_cb,
					   session_call_text_cb, c);
	}
	if (id < 0) {
		/* Nothing was sent: say why, truly (a server that does not
		 * read its input is not a lost connection). */
		char *msg =
			id == -ENOBUFS
				? xasprintf("Server \"%s\" is not reading its "
					    "input (too much is waiting for "
					    "it); the request was not sent.",
					    instance_name(inst))
			: id == -EAGAIN
				? xasprintf("Server \"%s\" stopped being "
					    "ready before the request could be "
					    "sent; it was not sent.",
					    instance_name(inst))
				: xasprintf("Server \"%s\": the connection "
					    "was lost before the request could "
					    "be sent; it was not sent.",
					    instance_name(inst));
		session_reply_error(
			c->ex, c->client_id, JR_SERVER_UNAVAILABLE, msg,
			json_pack("{s:s,s:b}", "server", instance_name(inst),
				  "mayHaveRun", 0));
		free(msg);
		session_call_finish(c, true);
		session_call_unref(c);
		return;
	}
	/* The reply callback inherits this reference. */
	c->server_id = id;
	c->order = session_next_order();
}

void session_call_resume(struct call *c)
{
	instance_ensure(c->inst, session_call_ready_cb, c);
}

void session_call_fail(struct call *c, const char *text)
{
	json_t *data = hub_instance_describe(c->session->hub, c->inst);
	json_object_set_new(data, "server",
			    json_string(instance_name(c->inst)));
	session_reply_error(c->ex, c->client_id, JR_SERVER_UNAVAILABLE, text,
			    data);
	session_call_finish(c, true);
	session_call_unref(c);
}

/* A call of s, on the session's list and its server's lease, not yet
 * sent (session_call_start's arguments). */
static struct call *session_call_new(struct session *s, json_t *id,
				     const char *method, json_t *params,
				     const struct server_config *srv,
				     struct exchange *ex, char *params_text,
				     size_t params_len, const char *label)
{
	struct pool_scope_ctx sc;
	session_scope_ctx(s, &sc);
	/* What status and refusals call it: the name the server knows. */
	if (label == NULL) {
		label = json_string_value(json_object_get(params, "name"));
		if (label == NULL)
			label = "";
	}
	/* Its method and label live after it, in the same allocation: one
	 * malloc and one free a call instead of three. */
	size_t mlen = strlen(method) + 1, llen = strlen(label) + 1;
	/* Zeroed by hand: glibc's calloc never takes a chunk from its
	 * per-thread cache, which malloc does, at a third of the cost. */
	struct call *c = xmalloc(sizeof *c + mlen + llen);
	memset(c, 0, sizeof *c);
	char *names = (char *)(c + 1);
	c->method = memcpy(names, method, mlen);
	c->label = memcpy(names + mlen, label, llen);
	c->session = s;
	c->ex = ex;
	exchange_ref(ex);
	c->client_id = json_incref(id);
	c->params = params;
	c->params_text = params_text;
	c->params_len = params_len;
	c->seq = s->next_seq++;
	if (method[0] == 'r' && session_subs_method(method)) {
		const char *uri =
			json_string_value(json_object_get(params, "uri"));
		c->sub_uri = uri ? xstrdup(uri) : NULL;
	}
	json_t *meta = json_object_get(params, "_meta");
	json_t *tok = json_object_get(meta, "progressToken");
	if (tok)
		c->progress_token = json_incref(tok);
	c->inst = pool_instance_for(hub_pool(s->hub), srv, &sc,
				    session_key(s, srv));
	/* The call holds its instance from now on: no idle close under it. */
	pool_acquire(hub_pool(s->hub), c->inst, s->id);
	c->leased = true;
	c->refs = 2; /* the session's list, and the pending callback */
	hub_call_live(s->hub, c);
	c->prev = s->calls.prev;
	c->next = &s->calls;
	s->calls.prev->next = c;
	s->calls.prev = c;
	return c;
}

void session_call_start(struct session *s, json_t *id, const char *method,
			json_t *params, const struct server_config *srv,
			struct exchange *ex, char *params_text,
			size_t params_len, const char *label)
{
	struct call *c = session_call_new(s, id, method, params, srv, ex,
					  params_text, params_len, label);
	instance_ensure(c->inst, session_call_ready_cb, c);
}

/* Whether another server of s's than the one at `found`, shown by name,
 * gives tool too (its known list, or what the tool cache knows of it):
 * then the name is no one's, and the general path says why. */
static bool session_route_text_taken(struct session *s, size_t found,
				     const char *tool)
{
	struct pool *pool = hub_pool(s->hub);
	for (size_t i = 0; i < s->nsrv; i++) {
		const struct server_config *srv = s->srv[i];
		if (i == found || !session_server_usable(srv) ||
		    srv->exposure != EXPOSE_DIRECT)
			continue;
		struct instance *inst = pool_instance_find(pool, s->keys[i]);
		/* What the tool cache knows has no index: walked. */
		struct router_view v = {
			srv->prefix,
			inst ? instance_list(inst, INSTANCE_TOOLS)
			     : pool_lists_offered(pool, s->keys[i],
						  INSTANCE_TOOLS),
			true, &srv->tools};
		const struct listindex *ix =
			inst ? instance_list_index(inst, INSTANCE_TOOLS) : NULL;
		const char *orig;
		if (v.items &&
		    router_view_item(&v, ix, INSTANCE_TOOLS, tool, &orig))
			return true;
	}
	return false;
}

json_t *session_tool_schema(struct session *s, const char *name)
{
	for (size_t i = 0; i < s->nsrv; i++) {
		const struct server_config *srv = s->srv[i];
		if (!session_server_usable(srv))
			continue;
		struct instance *inst =
			pool_instance_find(hub_pool(s->hub), s->keys[i]);
		json_t *tools =
			inst ? instance_list(inst, INSTANCE_TOOLS) : NULL;
		struct router_view v = {srv->prefix, tools, true, &srv->tools};
		const char *orig = NULL;
		json_t *item =
			tools ? router_view_item(&v,
						 instance_list_index(
							 inst, INSTANCE_TOOLS),
						 INSTANCE_TOOLS, name, &orig)
			      : NULL;
		if (item)
			return json_object_get(item, "inputSchema");
	}
	return NULL;
}

json_t *session_route_schema(const struct session_text_route *rt)
{
	return json_object_get(rt->item, "inputSchema");
}

bool session_route_text(struct session *s, const char *name, size_t name_len,
			struct session_text_route *rt)
{
	s->last_seen_ms = clock_now_ms();
	if (session_has_deferred(s) || name_len > CONFIG_MAX_STRING)
		return false;
	char *tool = xstrndup(name, name_len);
	/* The first server, in order, whose known tools hold the name: what
	 * router_resolve finds first too, without building every view on
	 * each call. Only such a tool, on a server the model may call by
	 * name and that was not stopped on purpose, takes this path;
	 * everything else takes the general one, with its messages. */
	for (size_t i = 0; i < s->nsrv; i++) {
		const struct server_config *srv = s->srv[i];
		if (!session_server_usable(srv))
			continue;
		struct instance *inst =
			pool_instance_find(hub_pool(s->hub), s->keys[i]);
		struct router_view v = {
			srv->prefix,
			inst ? instance_list(inst, INSTANCE_TOOLS) : NULL, true,
			&srv->tools};
		const char *orig = NULL;
		/* By the list's index: a hash, not a walk of its tools. */
		json_t *item = v.items ? router_view_item(
						 &v,
						 instance_list_index(
							 inst, INSTANCE_TOOLS),
						 INSTANCE_TOOLS, tool, &orig)
				       : NULL;
		if (item == NULL)
			continue;
		/* A client that set a log level, to a 2026-07-28 server: the
		 * general path puts the level in the call's _meta. */
		if (srv->exposure != EXPOSE_DIRECT ||
		    pool_server_held_stopped(hub_pool(s->hub), srv->name) ||
		    session_route_text_taken(s, i, tool) ||
		    (s->log_level != ENVELOPE_LOG_NONE &&
		     instance_speaks_modern(inst)))
			break;
		rt->srv = srv;
		rt->tool = tool;
		rt->orig = orig;
		rt->item = item;
		rt->answer = NULL;
		rt->answer_arg = NULL;
		return true;
	}
	free(tool);
	return false;
}

void session_call_text(struct session *s, struct session_text_route *rt,
		       json_t *id, const char *params, size_t params_len,
		       size_t name_off, size_t name_span, struct exchange *ex)
{
	size_t olen = strlen(rt->orig);
	struct buf b;
	buf_init(&b);
	buf_reserve(&b, params_len + olen + 2);
	buf_append(&b, params, name_off);
	buf_puts(&b, "\"");
	buf_append(&b, rt->orig, olen);
	buf_puts(&b, "\"");
	buf_append(&b, params + name_off + name_span,
		   params_len - name_off - name_span);
	size_t n = b.len;
	/* Labelled like the general path: by the name the server knows. */
	struct call *c = session_call_new(s, id, "tools/call", NULL, rt->srv,
					  ex, buf_steal(&b), n, rt->orig);
	free(rt->tool);
	rt->tool = NULL;
	c->answer = rt->answer;
	c->answer_arg = rt->answer_arg;
	instance_ensure(c->inst, session_call_ready_cb, c);
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

/* logging/setLevel is the session's level, put on its requests to the
 * servers that log (session_call_ready_cb); and it goes to every running
 * server of the session, as 2025 servers take it (a 2026-07-28 server's
 * side answers it without sending it on). */
void session_set_level(struct session *s, json_t *id, json_t *params,
		       struct exchange *ex)
{
	const char *level = json_string_value(json_object_get(params, "level"));
	enum envelope_log found = envelope_log_parse(level);
	if (found == ENVELOPE_LOG_NONE) {
		session_reply_error(ex, id, JR_INVALID_PARAMS,
				    "logging/setLevel needs params.level, one "
				    "of debug, info, notice, warning, error, "
				    "critical, alert, emergency",
				    NULL);
		return;
	}
	s->log_level = found;
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

struct call *session_find_call(struct session *s, json_t *client_id)
{
	for (struct call *c = s->calls.next; c != &s->calls; c = c->next)
		if (json_equal(c->client_id, client_id))
			return c;
	return NULL;
}

/* Drops a call: the server is told, the client's stream stops waiting. */
void session_call_abort(struct call *c, const char *why)
{
	if (c->done)
		return;
	bool sent = c->order != 0; /* it reached its server */
	if (sent) {
		/* The request's handle is stable across re-sends; only when
		 * the instance settled it here will the reply callback not
		 * run, and only then is its reference ours to drop. */
		if (instance_cancel(c->inst, c->server_id, why))
			session_call_unref(c);
		c->server_id = 0;
	}
	char *msg = sent && !jr_method_is_idempotent(c->method)
			    ? xasprintf("The call was stopped before it "
					"finished (%s); it may or may not have "
					"taken effect, so check before "
					"retrying.",
					why)
			    : xasprintf("The request was stopped before it "
					"finished (%s).",
					why);
	json_t *err = jr_error(c->client_id, JR_SERVER_UNAVAILABLE, msg,
			       json_pack("{s:b}", "mayHaveRun", sent));
	free(msg);
	exchange_send(c->ex, err);
	json_decref(err);
	session_call_finish(c, false);
}

void session_call_cancel(struct call *c, const char *reason)
{
	if (c->done)
		return;
	if (c->server_id > 0) {
		if (instance_cancel(c->inst, c->server_id, reason))
			session_call_unref(c); /* the reply callback's */
		c->server_id = 0;
	}
	exchange_skip(c->ex);
	session_call_finish(c, false);
}

static void session_describe_call(struct buf *b, const char *method,
				  const char *label, const char *name,
				  const char *sid, uint64_t started_ms)
{
	if (b->len)
		buf_puts(b, ", ");
	buf_printf(b, "%s %s on %s (session %.8s, running %.1f s)", method,
		   label, name, sid,
		   (double)(clock_now_ms() - started_ms) / 1000.0);
}

void session_describe_calls(struct session *s, const char *name, struct buf *b)
{
	for (struct route_req *rr = s->routing; rr; rr = rr->next_waiting)
		if (strcmp(rr->server, name) == 0)
			session_describe_call(b, rr->method, rr->label, name,
					      s->id, rr->started_ms);
	for (struct call *c = s->calls.next; c != &s->calls; c = c->next)
		if (!c->done && strcmp(instance_name(c->inst), name) == 0)
			session_describe_call(b, c->method, c->label, name,
					      s->id, c->started_ms);
}
