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

/* Whether a method's answer may carry notifications first (progress,
 * logging, a server's request): the ones forwarded to a server's call. */
static bool front_forwards(const char *method)
{
	return strcmp(method, "tools/call") == 0 ||
	       strcmp(method, "prompts/get") == 0 ||
	       strcmp(method, "resources/read") == 0 ||
	       strcmp(method, "completion/complete") == 0;
}

/* A session's id into a record's room for it (a session id has
 * SESSION_ID_LEN characters). */
static void front_copy_sid(char sid[SESSION_ID_LEN + 1], struct session *s)
{
	memcpy(sid, session_id(s), SESSION_ID_LEN);
	sid[SESSION_ID_LEN] = '\0';
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
	json_decref(sp->plain_schema);
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
		/* A question of a server is one call's input_required. */
		session_keep_calls_apart(s);
		front_copy_sid(sp->sid, s);
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
	r->text = NULL; /* in r's allocation: goes with r */
}

static void mreq_emit(struct modern_req *r, char *text, size_t len, int status,
		      bool final);
static void mreq_emit_text(struct modern_req *r, const char *text, size_t len,
			   int status, bool final);

/* A text call's answer, stamped in the splice that makes the session's
 * text of it (session_answer_fn): the one scan of the server's answer is
 * the only one. NULL (the session's form, stamped in front_deliver) when
 * the call is no longer simply running (the bridge holds it), or the
 * answer is not of the form the splice takes. */
static char *front_answer_text(void *arg, const char *msg,
			       const struct instance_answer *a, size_t *len)
{
	struct modern_req *r = arg;
	if (r->state != MREQ_RUN || r->ops == NULL)
		return NULL;
	char *text = stamp_answer_scanned(r, msg, a, len);
	r->stamped = text != NULL;
	return text;
}

static void front_deliver(void *ctx, json_t *msg, const char *event_id,
			  const char *data, size_t len)
{
	struct modern_req *r = ctx;
	json_t *parsed = NULL;
	if (msg == NULL && r->stamped) {
		r->stamped = false;
		mreq_emit_text(r, data, len, 200, true);
		return;
	}
	if (msg == NULL && r->state == MREQ_RUN && r->ops) {
		size_t n;
		char *text = stamp_answer_text(r, data, len, &n);
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
		if (r->pending == NULL)
			r->pending = json_object();
		bridge_server_request(r, msg);
	} else if (method && strcmp(method, "notifications/cancelled") == 0) {
		bridge_server_cancel(r, msg);
	} else if (method) {
		front_notification(r, msg);
	} else if (r->state != MREQ_DONE) {
		json_t *out = stamp_answer(r, msg);
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

/* Sends text (borrowed, len bytes) to r's client, which r->ops must be. */
static void mreq_emit_text(struct modern_req *r, const char *text, size_t len,
			   int status, bool final)
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
}

/* The same with text taken. */
static void mreq_emit(struct modern_req *r, char *text, size_t len, int status,
		      bool final)
{
	mreq_emit_text(r, text, len, status, final);
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
	json_decref(r->answers);
	json_decref(r->param_headers);
	json_decref(r->subs);
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
	if (r->turn_wait) {
		struct session *s = r->ex ? mreq_session(r) : NULL;
		if (s)
			session_turn_unwait(s, r->ex);
		r->turn_wait = false;
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
	json_t *out = stamp_answer(r, msg);
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
	front_copy_sid(r->sid, s);
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

/* A new request of principal, in m's list; method must live as long
 * as r, id is borrowed. text (len bytes, NULL: none) is copied into
 * r's own allocation: one allocation for both. */
static struct modern_req *mreq_new(struct modern *m, const char *method,
				   json_t *id, const char *principal,
				   const char *text, size_t len,
				   const struct modern_sink_ops *ops, void *ctx)
{
	size_t plen = strlen(principal);
	if (plen >= MODERN_PRINCIPAL_MAX)
		abort(); /* the endpoint makes no longer one */
	struct modern_req *r = xcalloc(1, sizeof *r + (text ? len + 1 : 0));
	memcpy(r->principal, principal, plen + 1);
	if (text) {
		r->text = (char *)(r + 1);
		memcpy(r->text, text, len);
		r->text[len] = '\0';
		r->text_len = len;
	}
	r->m = m;
	r->next = &m->reqs;
	r->prev = m->reqs.prev;
	r->prev->next = r;
	m->reqs.prev = r;
	r->method = method;
	r->client_id = json_incref(id);
	r->log_level = ENVELOPE_LOG_NONE;
	r->inner_id = json_integer(++m->next_inner);
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
	/* env->method is msg's own, which r holds. */
	struct modern_req *r = mreq_new(m, env->method, jr_id(msg), principal,
					NULL, 0, ops, ctx);
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

/* Whether the tool rt routes to marks no argument with x-mcp-header:
 * the check asks for a header per mark, arguments or not. A marked
 * tool's call takes the general path, which checks them. The schema last
 * found plain is kept (held, so that no other takes its address):
 * calling the same tool again skips the walk. */
static bool front_text_params_none(struct modern_space *sp,
				   const struct session_text_route *rt)
{
	json_t *schema = session_route_schema(rt);
	if (schema == NULL || schema == sp->plain_schema)
		return true;
	bool asked = false;
	struct envelope_err e;
	envelope_check_params(schema, NULL, front_param_asked, &asked, &e);
	envelope_err_clear(&e);
	if (!asked) {
		json_decref(sp->plain_schema);
		sp->plain_schema = json_incref(schema);
	}
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
	if (!front_text_params_none(sp, &rt)) {
		free(rt.tool);
		return false;
	}
	/* Its text is parsed only if the call needs more than its answer
	 * stamped. */
	struct modern_req *r = mreq_new(m, "tools/call", tc->id, principal,
					tc->body, tc->len, ops, ctx);
	r->sp = sp;
	sp->used_ms = clock_now_ms();
	r->depth++;
	front_copy_sid(r->sid, s);
	r->state = MREQ_RUN;
	r->ex = exchange_new(&front_ops, r, 1);
	rt.answer = front_answer_text;
	rt.answer_arg = r;
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
		if ((r->state == MREQ_SETTLE || r->state == MREQ_PARKED ||
		     r->state == MREQ_TURN) &&
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
		if ((r->state == MREQ_SETTLE || r->state == MREQ_PARKED ||
		     r->state == MREQ_TURN) &&
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
