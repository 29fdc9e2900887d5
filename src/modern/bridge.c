/*
 * The bridge no gateway does well: a 2025-era server asks its client
 * (sampling, elicitation, roots) in the middle of a call made by a
 * 2026-07-28 client, which cannot be asked. The call is kept waiting
 * upstream; the client is answered input_required with the server's
 * requests and a requestState (reqstate.h) naming the waiting call; its
 * retry answers the server's requests and continues the same call, round
 * after round. A bad state is refused and the call it names cancelled.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/jsonrpc.h"
#include "modern/modern_int.h"
#include "util/clock.h"
#include "util/xmalloc.h"

/* The client capability a server request needs; NULL: not one a client
 * answers (ping is answered here, the rest refused). */
static const char *bridge_cap(const char *method)
{
	return strcmp(method, "sampling/createMessage") == 0 ? "sampling"
	       : strcmp(method, "elicitation/create") == 0   ? "elicitation"
	       : strcmp(method, "roots/list") == 0	     ? "roots"
							     : NULL;
}

/* Answers the server's request id (the session's name for it). */
static void bridge_reply(struct modern_req *r, json_t *id, json_t *result,
			 int code, const char *message)
{
	struct session *s = mreq_session(r);
	if (s == NULL)
		return;
	json_t *msg = result ? jr_result(id, result)
			     : jr_error(id, code, message, NULL);
	session_handle(s, msg, NULL);
	json_decref(msg);
}

/* The key of a server request in inputRequests: the id the server gave
 * it when that id is a short plain string (so a server names its
 * inputs), else input-N; unique within the call. */
static char *bridge_key(struct modern_req *r, json_t *server_id)
{
	const char *sid = json_string_value(server_id);
	size_t n = sid ? strlen(sid) : 0;
	bool plain = n > 0 && n <= 64;
	for (size_t i = 0; plain && i < n; i++)
		plain = isalnum((unsigned char)sid[i]) || sid[i] == '_' ||
			sid[i] == '-' || sid[i] == '.';
	if (plain && json_object_get(r->pending, sid) == NULL)
		return xstrdup(sid);
	char *key;
	do {
		key = xasprintf("input-%u", ++r->next_key);
		if (json_object_get(r->pending, key) == NULL)
			return key;
		free(key);
	} while (1);
}

static bool bridge_declared(struct modern_req *r, const char *cap)
{
	return json_is_object(json_object_get(r->caps, cap));
}

/* The round closes soon (at once for a refusal). */
static void bridge_settle(struct modern_req *r, uint64_t after_ms)
{
	uint64_t at = clock_now_ms() + after_ms;
	if (r->state != MREQ_SETTLE || at < r->deadline_ms)
		r->deadline_ms = at;
	r->state = MREQ_SETTLE;
	modern_arm(r->m);
}

void bridge_server_request(struct modern_req *r, json_t *msg)
{
	const char *method = jr_method(msg);
	json_t *id = jr_id(msg);
	const char *cap = bridge_cap(method);
	if (strcmp(method, "ping") == 0) {
		bridge_reply(r, id, json_object(), 0, NULL);
		return;
	}
	if (cap == NULL || (r->state != MREQ_RUN && r->state != MREQ_SETTLE &&
			    r->state != MREQ_PARKED)) {
		bridge_reply(r, id, NULL, JR_METHOD_NOT_FOUND,
			     "A 2026-07-28 client cannot be asked this");
		return;
	}
	struct session *s = mreq_session(r);
	json_t *server_id =
		s ? session_server_request_id(s, json_string_value(id)) : NULL;
	char *key = bridge_key(r, server_id);
	json_t *params = jr_params(msg);
	json_object_set_new(
		r->pending, key,
		json_pack("{s:O,s:s,s:o}", "id", id, "method", method, "params",
			  params ? json_incref(params) : json_object()));
	free(key);
	if (r->state == MREQ_PARKED)
		return; /* asked in the next round, when the client is back */
	if (!bridge_declared(r, cap)) {
		r->refuse_cap = cap;
		bridge_settle(r, 0);
		return;
	}
	bridge_settle(r, MODERN_GATHER_MS);
}

void bridge_server_cancel(struct modern_req *r, json_t *msg)
{
	json_t *rid = json_object_get(jr_params(msg), "requestId");
	const char *key;
	json_t *v;
	void *tmp;
	json_object_foreach_safe(r->pending, tmp, key, v)
	{
		if (json_equal(json_object_get(v, "id"), rid))
			json_object_del(r->pending, key);
	}
}

/* The client lacks what the server asked: the server's requests get an
 * error, the client -32021 naming the capability, and the call ends. */
static void bridge_refuse(struct modern_req *r)
{
	const char *key;
	json_t *v;
	json_object_foreach(r->pending, key, v)
	{
		bridge_reply(r, json_object_get(v, "id"), NULL,
			     JR_INTERNAL_ERROR,
			     "The client did not declare the capability "
			     "this request needs");
	}
	json_object_clear(r->pending);
	char *m = xasprintf("The server asked for %s, which this request's "
			    "clientCapabilities do not declare",
			    r->refuse_cap);
	mreq_fail(
		r, JR_MISSING_CAPABILITY, m,
		json_pack("{s:{s:{}}}", "requiredCapabilities", r->refuse_cap));
	free(m);
	mreq_end(r);
}

/* input_required with the server's requests still unanswered, and a
 * state naming the call; the call waits for the retry. */
static void bridge_ask(struct modern_req *r)
{
	if (++r->rounds > MODERN_MAX_ROUNDS) {
		mreq_fail(r, JR_INTERNAL_ERROR,
			  "The server asked for input too many times", NULL);
		mreq_end(r);
		return;
	}
	json_t *reqs = json_object();
	const char *key;
	json_t *v;
	json_object_foreach(r->pending, key, v)
	{
		json_object_set_new(reqs, key,
				    json_pack("{s:O,s:O}", "method",
					      json_object_get(v, "method"),
					      "params",
					      json_object_get(v, "params")));
	}
	if (r->rounds == 1)
		reqstate_digest(r->method, jr_params(r->msg), r->digest);
	reqstate_handle(r->handle);
	char *state = reqstate_seal(r->m->rs, r->handle, r->principal,
				    r->method, r->digest);
	json_t *result =
		json_pack("{s:s,s:o,s:s}", "resultType", "input_required",
			  "inputRequests", reqs, "requestState", state);
	free(state);
	mreq_send(r, jr_result(r->client_id, result), true);
	if (r->ended)
		return;
	r->state = MREQ_PARKED;
	if (r->ex) {
		struct session *s = mreq_session(r);
		if (s)
			session_call_waits_client(s, r->ex, true);
		else
			exchange_set_waits_client(r->ex, true);
	}
	r->deadline_ms = clock_now_ms() + REQSTATE_TTL_MS;
	r->m->nparked++;
	modern_arm(r->m);
}

static void bridge_answer(struct modern_req *r, json_t *answers);

void bridge_deadline(struct modern_req *r)
{
	if (r->state == MREQ_TURN) {
		/* The server's turn is r's now: its answers go. */
		json_t *answers = r->answers;
		r->answers = NULL;
		r->state = MREQ_RUN;
		bridge_answer(r, answers);
		json_decref(answers);
		return;
	}
	if (r->state == MREQ_PARKED) {
		mreq_end(r); /* nobody came back for it */
		return;
	}
	if (r->refuse_cap)
		bridge_refuse(r);
	else if (json_object_size(r->pending) == 0)
		r->state = MREQ_RUN; /* the server withdrew its requests */
	else
		bridge_ask(r);
}

static struct modern_req *bridge_find(struct modern *m, const char *handle)
{
	for (struct modern_req *r = m->reqs.next; r != &m->reqs; r = r->next)
		if (r->state == MREQ_PARKED && strcmp(r->handle, handle) == 0)
			return r;
	return NULL;
}

static void bridge_sink_fail(const struct modern_sink_ops *ops, void *ctx,
			     json_t *id, int code, const char *message)
{
	json_t *err = jr_error(id, code, message, NULL);
	char *text = json_dumps(err, JSON_COMPACT);
	ops->json(ctx, 200, text, strlen(text));
	free(text);
	json_decref(err);
}

/* A state that does not open: the call it names (read unchecked from a
 * tampered state) is cancelled when it is this client's, so a stranger
 * cannot end another's call, and a client that spoilt its state does not
 * leave its call waiting. */
static void bridge_refused(struct modern *m, enum reqstate_verdict v,
			   const char *handle, const char *principal)
{
	if (v == REQSTATE_FOREIGN || handle[0] == '\0')
		return;
	struct modern_req *r = bridge_find(m, handle);
	if (r && strcmp(r->principal, principal) == 0)
		mreq_end(r);
}

/* The retry's answers (borrowed) go to the server's requests they name;
 * what they leave unanswered is asked again (input_required). */
static void bridge_answer(struct modern_req *r, json_t *answers)
{
	const char *key;
	json_t *pv;
	void *tmp;
	json_object_foreach_safe(r->pending, tmp, key, pv)
	{
		json_t *a = json_object_get(answers, key);
		if (!json_is_object(a))
			continue; /* asked again below */
		bridge_reply(r, json_object_get(pv, "id"), json_incref(a), 0,
			     NULL);
		json_object_del(r->pending, key);
	}
	json_object_foreach(r->pending, key, pv)
	{
		const char *cap = bridge_cap(
			json_string_value(json_object_get(pv, "method")));
		if (cap && !bridge_declared(r, cap))
			r->refuse_cap = cap;
	}
	if (json_object_size(r->pending) > 0)
		bridge_settle(r, 0);
}

/* The session gives r the server's turn (from inside its own work): the
 * answers go from the timer. */
static void bridge_turn_go(void *arg)
{
	struct modern_req *r = arg;
	r->turn_wait = false;
	r->deadline_ms = clock_now_ms();
	modern_arm(r->m);
}

struct modern_req *bridge_retry(struct modern *m, json_t *msg,
				const struct envelope *env,
				const char *principal,
				const struct modern_sink_ops *ops, void *ctx)
{
	json_t *params = jr_params(msg);
	const char *state =
		json_string_value(json_object_get(params, "requestState"));
	if (state == NULL) {
		bridge_sink_fail(ops, ctx, jr_id(msg), JR_INVALID_PARAMS,
				 "Invalid requestState: it must be a string");
		return NULL;
	}
	unsigned char digest[32];
	reqstate_digest(env->method, params, digest);
	char handle[REQSTATE_HANDLE_LEN] = "";
	enum reqstate_verdict v = reqstate_open(m->rs, state, principal,
						env->method, digest, handle);
	if (v == REQSTATE_TAMPERED || v == REQSTATE_MALFORMED)
		reqstate_peek(state, handle);
	struct modern_req *r = v == REQSTATE_OK ? bridge_find(m, handle) : NULL;
	if (r == NULL) {
		if (v != REQSTATE_OK)
			bridge_refused(m, v, handle, principal);
		char *text = xasprintf("Invalid requestState: %s",
				       v == REQSTATE_OK
					       ? "the call it names has ended"
					       : reqstate_verdict_str(v));
		bridge_sink_fail(ops, ctx, jr_id(msg), JR_INVALID_PARAMS, text);
		free(text);
		return NULL;
	}
	/* The same call goes on for this request. */
	m->nparked--;
	r->state = MREQ_RUN;
	json_decref(r->client_id);
	r->client_id = json_incref(jr_id(msg));
	json_decref(r->caps);
	r->caps = json_incref(env->client_caps);
	r->log_level = env->log_level;
	r->ops = ops;
	r->ctx = ctx;
	r->streaming = false;
	r->refuse_cap = NULL;
	mreq_hold(r);
	struct session *s = r->ex ? mreq_session(r) : NULL;
	if (r->held) {
		if (r->ex)
			exchange_set_waits_client(r->ex, false);
		json_t *held = r->held;
		r->held = NULL;
		json_object_set(held, "id", r->client_id);
		mreq_send(r, held, true);
		mreq_end(r);
	} else if (s && session_turn_wait(s, r->ex, bridge_turn_go, r)) {
		/* Another call is on the server: the answers wait. */
		r->state = MREQ_TURN;
		r->turn_wait = true;
		r->deadline_ms = UINT64_MAX;
		r->answers =
			json_incref(json_object_get(params, "inputResponses"));
	} else {
		if (r->ex && s == NULL)
			exchange_set_waits_client(r->ex, false);
		bridge_answer(r, json_object_get(params, "inputResponses"));
	}
	return mreq_unhold(r) ? NULL : r;
}
