/*
 * The front of the modern side: a checked 2026-07-28 request goes to its
 * principal's hidden session in its space (made on first use, with every
 * capability, since each request says its own and the bridge checks
 * them), under an id of ours (stateless clients reuse theirs); the answer
 * is stamped as the revision asks and goes to the HTTP side as one JSON
 * body, or as an SSE stream once something comes before it.
 */
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/jsonrpc.h"
#include "modern/modern_int.h"
#include "session/hub.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/jsonscan.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* The methods whose results a client may cache (SEP-2549). */
static bool front_cacheable(const char *method)
{
	static const char *const m[] = {"server/discover",
					"tools/list",
					"prompts/list",
					"resources/list",
					"resources/templates/list",
					"resources/read",
					NULL};
	for (int i = 0; m[i]; i++)
		if (strcmp(method, m[i]) == 0)
			return true;
	return false;
}

/* Whether a method's answer may carry notifications first (progress,
 * logging, a server's request): the ones forwarded to a server's call. */
static bool front_forwards(const char *method)
{
	return strcmp(method, "tools/call") == 0 ||
	       strcmp(method, "prompts/get") == 0 ||
	       strcmp(method, "resources/read") == 0 ||
	       strcmp(method, "completion/complete") == 0;
}

/* ---- the hidden sessions ---- */

static void space_free(struct modern_space *sp)
{
	*sp->pprev = sp->next;
	if (sp->next)
		sp->next->pprev = sp->pprev;
	sp->m->nspaces--;
	hub_initialize_cancel(sp->hi);
	if (sp->fan) {
		exchange_detach(sp->fan);
		exchange_unref(sp->fan);
	}
	json_decref(sp->init);
	free(sp->server_info);
	free(sp->principal);
	free(sp->space);
	free(sp);
}

static bool space_busy(const struct modern_space *sp)
{
	return sp->hi || sp->waiting || sp->listeners;
}

struct session *mreq_session(struct modern_req *r)
{
	return r->sid[0] ? hub_session_find(r->m->hub, r->sid) : NULL;
}

/* The record of principal in space, made when missing; at the cap the
 * one used longest ago that waits for nothing makes room. */
static struct modern_space *space_get(struct modern *m, const char *principal,
				      const char *space)
{
	struct modern_space *oldest = NULL;
	for (struct modern_space *sp = m->spaces; sp; sp = sp->next) {
		if (strcmp(sp->principal, principal) == 0 &&
		    ((sp->space == NULL && space == NULL) ||
		     (sp->space && space && strcmp(sp->space, space) == 0)))
			return sp;
		if (!space_busy(sp) &&
		    (oldest == NULL || sp->used_ms < oldest->used_ms))
			oldest = sp;
	}
	if (m->nspaces >= MODERN_MAX_SPACES) {
		if (oldest == NULL)
			return NULL;
		space_free(oldest);
	}
	struct modern_space *sp = xcalloc(1, sizeof *sp);
	sp->m = m;
	sp->principal = xstrdup(principal);
	sp->space = space ? xstrdup(space) : NULL;
	sp->next = m->spaces;
	if (sp->next)
		sp->next->pprev = &sp->next;
	sp->pprev = &m->spaces;
	m->spaces = sp;
	m->nspaces++;
	return sp;
}

/* What the hidden session declares: everything a client can, so servers
 * ask; whether this request's client can answer is the bridge's to say. */
static json_t *space_init_params(void)
{
	return json_pack("{s:s,s:{s:{},s:{s:{},s:{}},s:{s:b}},s:{s:s,s:s}}",
			 "protocolVersion", "2025-11-25", "capabilities",
			 "sampling", "elicitation", "form", "url", "roots",
			 "listChanged", 0, "clientInfo", "name",
			 "mcpvisor-2026-07-28", "version", "1");
}

static void front_dispatch(struct modern_req *r, struct session *s);

static void space_made(void *arg, json_t *result, struct session *s)
{
	struct modern_space *sp = arg;
	sp->hi = NULL;
	if (result) {
		snprintf(sp->sid, sizeof sp->sid, "%s", session_id(s));
		json_decref(sp->init);
		sp->init = result;
		free(sp->server_info);
		sp->server_info = NULL;
	}
	struct modern_req *w = sp->waiting;
	sp->waiting = NULL;
	while (w) {
		struct modern_req *next = w->next_wait;
		w->next_wait = NULL;
		if (result == NULL) {
			mreq_fail(w, JR_SERVER_UNAVAILABLE,
				  "Too many sessions: every session is busy; "
				  "retry later",
				  NULL);
			mreq_end(w);
		} else {
			front_dispatch(w, s);
		}
		w = next;
	}
}

/* sp's session, or NULL while it is being made (r then waits for it). */
static struct session *space_session(struct modern_space *sp,
				     struct modern_req *r)
{
	struct session *s =
		sp->sid[0] ? hub_session_find(sp->m->hub, sp->sid) : NULL;
	if (s)
		return s;
	sp->sid[0] = '\0';
	r->state = MREQ_WAIT;
	r->next_wait = sp->waiting;
	sp->waiting = r;
	if (sp->hi == NULL) {
		json_t *params = space_init_params();
		/* Without a space this answers at once (space_made). */
		sp->hi = hub_initialize_async(sp->m->hub, params, sp->space,
					      space_made, sp);
		json_decref(params);
	}
	return NULL;
}

/* ---- stamping answers ---- */

static json_t *front_server_info(struct modern_req *r)
{
	json_t *si = r->sp && r->sp->init
			     ? json_object_get(r->sp->init, "serverInfo")
			     : NULL;
	return si ? json_incref(si)
		  : json_pack("{s:s,s:s}", "name", "mcpvisor", "version", "0");
}

/* serverInfo as JSON text, made once per hidden session. */
static const char *front_server_info_text(struct modern_req *r)
{
	if (r->sp == NULL || r->sp->init == NULL)
		return "{\"name\":\"mcpvisor\",\"version\":\"0\"}";
	if (r->sp->server_info == NULL) {
		json_t *si = front_server_info(r);
		r->sp->server_info = json_dumps(si, JSON_COMPACT);
		json_decref(si);
	}
	return r->sp->server_info;
}

/* Whether r's result gets the cache hints: a cacheable method's, and
 * not a retry's (its answer is the call's, not the list's). */
static bool front_hints_due(struct modern_req *r)
{
	return front_cacheable(r->method) && r->rounds == 0 &&
	       json_object_get(jr_params(r->msg), "requestState") == NULL;
}

/* The revision's fields on a result: resultType, the cache hints where
 * they are due (private when the answer depends on the client's space),
 * and serverInfo in _meta. result is changed (a copy of the caller's). */
static void front_stamp_result(struct modern_req *r, json_t *result)
{
	if (json_object_get(result, "resultType") == NULL)
		json_object_set_new(result, "resultType",
				    json_string("complete"));
	if (front_hints_due(r)) {
		if (json_object_get(result, "ttlMs") == NULL)
			json_object_set_new(result, "ttlMs", json_integer(0));
		if (json_object_get(result, "cacheScope") == NULL)
			json_object_set_new(result, "cacheScope",
					    json_string(r->sp && r->sp->space
								? "private"
								: "public"));
	}
	json_t *meta = json_object_get(result, "_meta");
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(result, "_meta", meta);
	} else {
		meta = json_copy(meta);
		json_object_set_new(result, "_meta", meta);
	}
	json_object_set_new(meta, META_SERVER_INFO, front_server_info(r));
}

/* The answer of the session (msg borrowed) as the client sees it: its
 * own id, the revision's fields; a resource the server did not find is
 * -32602 with the uri (2026-07-28 has no -32002). */
static json_t *front_answer(struct modern_req *r, json_t *msg)
{
	json_t *out = json_copy(msg);
	json_object_set(out, "id", r->client_id);
	json_t *result = json_object_get(msg, "result");
	json_t *err = json_object_get(msg, "error");
	if (json_is_object(result)) {
		result = json_copy(result);
		json_object_set_new(out, "result", result);
		front_stamp_result(r, result);
	} else if (json_is_object(err) &&
		   json_integer_value(json_object_get(err, "code")) ==
			   JR_RESOURCE_NOT_FOUND) {
		err = json_copy(err);
		json_object_set_new(out, "error", err);
		json_object_set_new(err, "code",
				    json_integer(JR_INVALID_PARAMS));
		json_t *uri = json_object_get(jr_params(r->msg), "uri");
		if (uri && json_object_get(err, "data") == NULL)
			json_object_set_new(err, "data",
					    json_pack("{s:O}", "uri", uri));
	}
	return out;
}

/* Whether the object text p[0..n) has no members. */
static bool front_text_empty_object(const char *p, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\n' && p[i] != '\r')
			return p[i] == '}';
	return false;
}

static void front_put_id(struct buf *b, json_t *id)
{
	if (json_is_integer(id) && json_integer_value(id) >= 0) {
		buf_put_u64(b, (unsigned long long)json_integer_value(id));
		return;
	}
	char *text = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
	buf_puts(b, text);
	free(text);
}

/* The session's answer as text (a result, the session's id on it)
 * stamped as front_answer stamps it, without a parse or a dump: the
 * client's id, and the fields the result lacks written in at the start
 * of the result object and of its _meta. NULL when the text is anything
 * else (an error, a server's message) or the result's _meta is not an
 * object or names serverInfo already: front_answer takes those. A call's
 * answer is the hot path of every modern client, and jansson would cost
 * more than everything else mcpvisor does for it. */
static char *front_answer_text(struct modern_req *r, const char *data,
			       size_t len, size_t *out_len)
{
	static const char *const keys[] = {"method", "result", "error"};
	static const char *const rkeys[] = {"resultType", "ttlMs", "cacheScope",
					    "_meta"};
	static const char *const mkeys[] = {META_SERVER_INFO};
	struct jsonscan_span sp[3], rp[4], mp[1];
	if (jsonscan_members(data, len, keys, 3, sp) < 0 || sp[0].len ||
	    sp[2].len || sp[1].len == 0 || data[sp[1].off] != '{')
		return NULL;
	const char *res = data + sp[1].off;
	size_t rlen = sp[1].len;
	if (jsonscan_members(res, rlen, rkeys, 4, rp) < 0)
		return NULL;
	const char *meta = rp[3].len ? res + rp[3].off : NULL;
	if (meta &&
	    (*meta != '{' ||
	     jsonscan_members(meta, rp[3].len, mkeys, 1, mp) < 0 || mp[0].len))
		return NULL;
	const char *si_text = front_server_info_text(r);
	struct buf b;
	buf_init(&b);
	buf_reserve(&b, len + 160 + strlen(si_text));
	buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
	front_put_id(&b, r->client_id);
	buf_puts(&b, ",\"result\":{");
	/* Each member written in ends with a comma, for the result's own. */
	if (rp[0].len == 0)
		buf_puts(&b, "\"resultType\":\"complete\",");
	if (front_hints_due(r)) {
		if (rp[1].len == 0)
			buf_puts(&b, "\"ttlMs\":0,");
		if (rp[2].len == 0)
			buf_puts(&b, r->sp && r->sp->space
					     ? "\"cacheScope\":\"private\","
					     : "\"cacheScope\":\"public\",");
	}
	if (meta == NULL) {
		buf_puts(&b, "\"_meta\":{\"" META_SERVER_INFO "\":");
		buf_puts(&b, si_text);
		buf_puts(&b, "},");
	}
	if (front_text_empty_object(res, rlen)) {
		b.len--; /* the last comma: resultType at least went in */
		buf_puts(&b, "}");
	} else if (meta == NULL) {
		buf_append(&b, res + 1, rlen - 1);
	} else {
		size_t in = rp[3].off + 1; /* just inside _meta's brace */
		buf_append(&b, res + 1, in - 1);
		buf_puts(&b, "\"" META_SERVER_INFO "\":");
		buf_puts(&b, si_text);
		if (!front_text_empty_object(meta, rp[3].len))
			buf_puts(&b, ",");
		buf_append(&b, res + in, rlen - in);
	}
	buf_puts(&b, "}");
	*out_len = b.len;
	return buf_steal(&b);
}

/* A notification of the server during r's call: progress passes,
 * logging only at the level r's request asked. */
static void front_notification(struct modern_req *r, json_t *msg)
{
	const char *method = jr_method(msg);
	if (strcmp(method, "notifications/message") == 0) {
		const char *level = json_string_value(
			json_object_get(jr_params(msg), "level"));
		if (!envelope_log_passes(r->log_level, level))
			return;
	} else if (strcmp(method, "notifications/progress") != 0) {
		return; /* list changes go to listen streams, not here */
	}
	if (r->ops)
		mreq_send(r, json_incref(msg), false);
}

/* ---- the session's side of a request ---- */

/* A call that came as text (modern_call_text) is parsed when it needs
 * more than its answer stamped: a server's request for the bridge (the
 * capabilities it declared, the digest of its params), a notification,
 * an error. */
static void front_parse_text(struct modern_req *r)
{
	if (r->text == NULL)
		return;
	r->msg = json_loadb(r->text, r->text_len, 0, NULL);
	json_t *meta = json_object_get(jr_params(r->msg), "_meta");
	r->caps = json_incref(json_object_get(meta, META_CLIENT_CAPS));
	free(r->text);
	r->text = NULL;
}

static void mreq_emit(struct modern_req *r, char *text, size_t len, int status,
		      bool final);

static void front_deliver(void *ctx, json_t *msg, const char *event_id,
			  const char *data, size_t len)
{
	struct modern_req *r = ctx;
	json_t *parsed = NULL;
	if (msg == NULL && r->state == MREQ_RUN && r->ops) {
		size_t n;
		char *text = front_answer_text(r, data, len, &n);
		if (text) {
			mreq_emit(r, text, n, 200, true);
			return;
		}
	}
	front_parse_text(r);
	if (msg == NULL) {
		parsed = json_loadb(data, len, 0, NULL);
		msg = parsed;
		if (msg == NULL)
			return;
	}
	const char *method = jr_method(msg);
	if (method && json_object_get(msg, "id")) {
		bridge_server_request(r, msg);
	} else if (method && strcmp(method, "notifications/cancelled") == 0) {
		bridge_server_cancel(r, msg);
	} else if (method) {
		front_notification(r, msg);
	} else if (r->state != MREQ_DONE) {
		json_t *out = front_answer(r, msg);
		mreq_send(r, out, true);
	}
	json_decref(parsed);
}

/* Every answer the session owed came (or its call was cancelled). */
static void front_finish(void *ctx)
{
	struct modern_req *r = ctx;
	if (r->state == MREQ_PARKED && r->held == NULL)
		r->held = jr_error(r->client_id, JR_INTERNAL_ERROR,
				   "The call ended without an answer", NULL);
	if (r->ops && r->state != MREQ_DONE)
		mreq_fail(r, JR_INTERNAL_ERROR,
			  "The call ended without an answer", NULL);
	if (r->state != MREQ_PARKED)
		mreq_end(r);
}

static const struct exchange_ops front_ops = {
	.deliver = front_deliver,
	.finish = front_finish,
};

/* ---- sending to the client ---- */

static int front_status(json_t *out)
{
	json_t *err = json_object_get(out, "error");
	if (err == NULL)
		return 200;
	json_int_t code = json_integer_value(json_object_get(err, "code"));
	return code == JR_MISSING_CAPABILITY || code == JR_HEADER_MISMATCH ||
			       code == JR_UNSUPPORTED_VERSION
		       ? 400
		       : 200;
}

/* Sends text (taken, len bytes) to r's client, which r->ops must be. */
static void mreq_emit(struct modern_req *r, char *text, size_t len, int status,
		      bool final)
{
	const struct modern_sink_ops *ops = r->ops;
	void *ctx = r->ctx;
	if (final) {
		r->ops = NULL;
		r->ctx = NULL;
		r->state = MREQ_DONE;
	}
	r->depth++;
	if (final && !r->streaming) {
		ops->json(ctx, status, text, len);
	} else {
		r->streaming = true;
		ops->event(ctx, text, len);
		if (final)
			ops->end(ctx);
	}
	r->depth--;
	free(text);
}

void mreq_send(struct modern_req *r, json_t *out, bool final)
{
	if (r->ops == NULL) {
		if (final && r->state == MREQ_PARKED) {
			json_decref(r->held);
			r->held = out;
			return;
		}
		json_decref(out);
		return;
	}
	char *text = json_dumps(out, JSON_COMPACT);
	mreq_emit(r, text, strlen(text), front_status(out), final);
	json_decref(out);
}

void mreq_fail(struct modern_req *r, int code, const char *message,
	       json_t *data)
{
	mreq_send(r, jr_error(r->client_id, code, message, data), true);
}

static void mreq_free(struct modern_req *r)
{
	r->prev->next = r->next;
	r->next->prev = r->prev;
	json_decref(r->msg);
	json_decref(r->client_id);
	json_decref(r->caps);
	json_decref(r->inner_id);
	json_decref(r->pending);
	json_decref(r->held);
	json_decref(r->param_headers);
	json_decref(r->subs);
	free(r->text);
	free(r->method);
	free(r->principal);
	free(r);
}

void mreq_end(struct modern_req *r)
{
	if (r->ended)
		return;
	r->ended = true;
	if (r->state == MREQ_PARKED) {
		r->m->nparked--;
		reqstate_forget(r->m->rs, r->handle);
	}
	if (r->listening)
		listen_drop(r);
	if (r->state == MREQ_WAIT && r->sp) {
		struct modern_req **pp = &r->sp->waiting;
		while (*pp && *pp != r)
			pp = &(*pp)->next_wait;
		if (*pp)
			*pp = r->next_wait;
	}
	r->state = MREQ_DONE;
	r->ops = NULL;
	if (r->ex) {
		struct exchange *ex = r->ex;
		r->ex = NULL;
		bool running = exchange_attached(ex);
		exchange_detach(ex);
		struct session *s = mreq_session(r);
		if (s && running)
			session_exchange_gone(s, ex);
		exchange_unref(ex);
	}
	if (r->depth == 0)
		mreq_free(r);
}

void mreq_hold(struct modern_req *r)
{
	r->depth++;
}

bool mreq_unhold(struct modern_req *r)
{
	if (--r->depth > 0 || !r->ended)
		return false;
	mreq_free(r);
	return true;
}

void modern_release(struct modern_req *r)
{
	if (r == NULL)
		return;
	r->ops = NULL;
	r->ctx = NULL;
	if (r->state != MREQ_PARKED)
		mreq_end(r);
}

/* ---- serving ---- */

static json_t *front_discover(struct modern_req *r)
{
	json_t *init = r->sp->init;
	json_t *caps = json_deep_copy(json_object_get(init, "capabilities"));
	if (!json_is_object(caps)) {
		json_decref(caps);
		caps = json_object();
	}
	json_t *result = json_pack("{s:[s],s:o}", "supportedVersions",
				   MODERN_VERSION, "capabilities", caps);
	json_t *instr = json_object_get(init, "instructions");
	if (json_is_string(instr))
		json_object_set(result, "instructions", instr);
	json_t *msg = jr_result(r->inner_id, result);
	json_t *out = front_answer(r, msg);
	json_decref(msg);
	return out;
}

/* The request as the session gets it: under our id. A retry's fields
 * go on as they came: only a state mcpvisor did not make gets here, and
 * it is the server's own (a 2026-07-28 server behind). */
static json_t *front_inner(struct modern_req *r)
{
	json_t *params = jr_params(r->msg);
	return jr_request(json_incref(r->inner_id), r->method,
			  json_is_object(params) ? json_incref(params) : NULL);
}

static const char *front_param_header(void *arg, const char *lname)
{
	return json_string_value(json_object_get(arg, lname));
}

/* The Mcp-Param-* headers of a tools/call against its tool's schema, as
 * the session knows the tool now (a tool not known yet is checked by its
 * server). False when refused (answered). */
static bool front_params_ok(struct modern_req *r, struct session *s)
{
	json_t *params = jr_params(r->msg);
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *schema = name ? session_tool_schema(s, name) : NULL;
	if (schema == NULL)
		return true;
	struct envelope_err e = {0};
	json_t *none = r->param_headers ? NULL : json_object();
	int rc = envelope_check_params(
		schema, json_object_get(params, "arguments"),
		front_param_header, r->param_headers ? r->param_headers : none,
		&e);
	json_decref(none);
	if (rc == 0)
		return true;
	mreq_fail(r, e.code, e.message, e.data);
	e.data = NULL;
	envelope_err_clear(&e);
	return false;
}

static void front_dispatch(struct modern_req *r, struct session *s)
{
	r->depth++;
	snprintf(r->sid, sizeof r->sid, "%s", session_id(s));
	if (strcmp(r->method, "tools/call") == 0 && !front_params_ok(r, s)) {
		/* answered */
	} else if (strcmp(r->method, "server/discover") == 0) {
		mreq_send(r, front_discover(r), true);
	} else if (strcmp(r->method, "subscriptions/listen") == 0) {
		listen_start(r->sp, s, r);
	} else {
		r->state = MREQ_RUN;
		r->ex = exchange_new(&front_ops, r, 1);
		json_t *inner = front_inner(r);
		session_handle(s, inner, r->ex);
		json_decref(inner);
	}
	r->depth--;
	if (r->state == MREQ_DONE && !r->ended)
		mreq_end(r);
	else if (r->ended && r->depth == 0)
		mreq_free(r);
}

/* A new request of principal (method and id borrowed), in m's list. */
static struct modern_req *mreq_new(struct modern *m, const char *method,
				   json_t *id, const char *principal,
				   const struct modern_sink_ops *ops, void *ctx)
{
	struct modern_req *r = xcalloc(1, sizeof *r);
	r->m = m;
	r->next = &m->reqs;
	r->prev = m->reqs.prev;
	r->prev->next = r;
	m->reqs.prev = r;
	r->method = xstrdup(method);
	r->client_id = json_incref(id);
	r->log_level = ENVELOPE_LOG_NONE;
	r->inner_id = json_integer(++m->next_inner);
	r->principal = xstrdup(principal);
	r->pending = json_object();
	r->ops = ops;
	r->ctx = ctx;
	return r;
}

/* After r's first turn (its depth back to 0): ended or answered, it goes
 * (NULL); else the handle the HTTP side keeps. */
static struct modern_req *mreq_settle(struct modern_req *r)
{
	if (r->state == MREQ_DONE || r->ended) {
		if (!r->ended)
			mreq_end(r);
		else if (r->depth == 0)
			mreq_free(r);
		return NULL;
	}
	if (r->ops == NULL && r->state != MREQ_PARKED)
		return NULL;
	return r;
}

struct modern_req *modern_request(struct modern *m, json_t *msg,
				  const struct envelope *env,
				  const char *principal, const char *space,
				  json_t *param_headers,
				  const struct modern_sink_ops *ops, void *ctx)
{
	/* A retry of a call the bridge keeps waiting; a state of another
	 * form is a server's own, sent on with the call. */
	json_t *state = json_object_get(jr_params(msg), "requestState");
	if (state && front_forwards(env->method) &&
	    strcmp(env->method, "completion/complete") != 0 &&
	    (!json_is_string(state) ||
	     reqstate_claims(json_string_value(state))))
		return bridge_retry(m, msg, env, principal, ops, ctx);
	struct modern_req *r =
		mreq_new(m, env->method, jr_id(msg), principal, ops, ctx);
	r->msg = json_incref(msg);
	r->caps = json_incref(env->client_caps);
	r->log_level = env->log_level;
	r->param_headers = param_headers ? json_incref(param_headers) : NULL;
	r->sp = space_get(m, principal, space);
	r->depth++;
	if (r->sp == NULL) {
		mreq_fail(r, JR_SERVER_UNAVAILABLE,
			  "Too many clients are waiting; retry later", NULL);
		r->state = MREQ_DONE;
	} else {
		r->sp->used_ms = clock_now_ms();
		struct session *s = space_session(r->sp, r);
		if (s)
			front_dispatch(r, s);
	}
	r->depth--;
	return mreq_settle(r);
}

static const char *front_param_asked(void *arg, const char *lname)
{
	*(bool *)arg = true;
	return NULL;
}

/* Whether tool (as the session knows it) marks no argument with
 * x-mcp-header: the check asks for a header per mark, arguments or not.
 * A marked tool's call takes the general path, which checks them. */
static bool front_text_params_none(struct session *s, const char *tool)
{
	json_t *schema = session_tool_schema(s, tool);
	bool asked = false;
	struct envelope_err e;
	envelope_check_params(schema, NULL, front_param_asked, &asked, &e);
	envelope_err_clear(&e);
	return !asked;
}

bool modern_call_text(struct modern *m, const struct modern_text_call *tc,
		      const char *principal, const char *space,
		      const struct modern_sink_ops *ops, void *ctx,
		      struct modern_req **out)
{
	struct modern_space *sp = space_get(m, principal, space);
	struct session *s =
		sp && sp->sid[0] ? hub_session_find(m->hub, sp->sid) : NULL;
	if (s == NULL)
		return false; /* the general path makes it */
	const char *params = tc->body + tc->params_off;
	struct session_text_route rt;
	if (!session_route_text(s, params + tc->name_off + 1, tc->name_len - 2,
				&rt))
		return false;
	if (!front_text_params_none(s, rt.tool)) {
		free(rt.tool);
		return false;
	}
	struct modern_req *r =
		mreq_new(m, "tools/call", tc->id, principal, ops, ctx);
	/* Parsed only if the call needs more than its answer stamped. */
	r->text = xstrndup(tc->body, tc->len);
	r->text_len = tc->len;
	r->sp = sp;
	sp->used_ms = clock_now_ms();
	r->depth++;
	snprintf(r->sid, sizeof r->sid, "%s", session_id(s));
	r->state = MREQ_RUN;
	r->ex = exchange_new(&front_ops, r, 1);
	session_call_text(s, &rt, r->inner_id, params, tc->params_len,
			  tc->name_off, tc->name_len, r->ex);
	r->depth--;
	*out = mreq_settle(r);
	return true;
}

/* ---- deadlines ---- */

static void front_timer_cb(uv_timer_t *t)
{
	struct modern *m = t->data;
	uint64_t now = clock_now_ms();
	struct modern_req *r = m->reqs.next;
	while (r != &m->reqs) {
		struct modern_req *next = r->next;
		if ((r->state == MREQ_SETTLE || r->state == MREQ_PARKED) &&
		    r->deadline_ms <= now) {
			/* Kept in the list across the call: next may end. */
			r->depth++;
			bridge_deadline(r);
			r->depth--;
			next = r->next;
			if (r->ended)
				mreq_free(r);
		}
		r = next;
	}
	modern_arm(m);
}

void modern_arm(struct modern *m)
{
	uint64_t soonest = UINT64_MAX;
	for (struct modern_req *r = m->reqs.next; r != &m->reqs; r = r->next)
		if ((r->state == MREQ_SETTLE || r->state == MREQ_PARKED) &&
		    r->deadline_ms < soonest)
			soonest = r->deadline_ms;
	if (soonest == UINT64_MAX) {
		uv_timer_stop(&m->timer);
		return;
	}
	uint64_t now = clock_now_ms();
	uv_timer_start(&m->timer, front_timer_cb,
		       soonest > now ? soonest - now : 0, 0);
}

struct modern *modern_new(uv_loop_t *loop, struct hub *hub)
{
	struct modern *m = xcalloc(1, sizeof *m);
	m->loop = loop;
	m->hub = hub;
	m->rs = reqstate_new(0);
	m->reqs.next = m->reqs.prev = &m->reqs;
	uv_timer_init(loop, &m->timer);
	m->timer.data = m;
	m->timer_open = true;
	return m;
}

static void front_timer_closed(uv_handle_t *h)
{
	free(h->data);
}

void modern_free(struct modern *m)
{
	if (m == NULL)
		return;
	while (m->reqs.next != &m->reqs) {
		struct modern_req *r = m->reqs.next;
		r->ops = NULL;
		r->depth = 0;
		if (r->state == MREQ_PARKED) {
			/* Its call ends: end (not park) it. */
			m->nparked--;
			reqstate_forget(m->rs, r->handle);
			r->state = MREQ_RUN;
		}
		mreq_end(r);
	}
	while (m->spaces)
		space_free(m->spaces);
	reqstate_free(m->rs);
	uv_close((uv_handle_t *)&m->timer, front_timer_closed);
}

void modern_drain(struct modern *m)
{
	struct modern_req *r = m->reqs.next;
	while (r != &m->reqs) {
		struct modern_req *next = r->next;
		if (r->state == MREQ_PARKED)
			mreq_end(r);
		r = next;
	}
	modern_arm(m);
}

size_t modern_parked(const struct modern *m)
{
	return m->nparked;
}

size_t modern_listeners(const struct modern *m)
{
	return m->nlisteners;
}
