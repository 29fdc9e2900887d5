/*
 * Messages from the server: answers matched to the outbox (the text fast
 * path first), notifications (list_changed is the instance's own),
 * the server's own requests, and the ones that cannot be used as they
 * came: an error with id null, a line over the limit, a line no JSON
 * parser takes, an answer that is not JSON-RPC. Those still answer the
 * request they belong to (its id found by a scan, without the parse), so
 * no client waits for an answer that was dropped. Warnings about what
 * the server sends are capped (instance_warn).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "instance/instance_int.h"
#include "jsonrpc/jsonrpc.h"
#include "jsonrpc/outbox.h"
#include "transport/upstream.h"
#include "util/flow.h"
#include "util/jsonscan.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* list_changed is the instance's to act on: it fetches the list again
 * (coalesced: a burst costs two fetches), and its clients hear of it only
 * when what they see changed (on_lists). Never passed on as it came. */
static bool instance_list_changed(struct instance *inst, const char *method)
{
	static const char *const notes[INSTANCE_NLISTS] = {
		"notifications/tools/list_changed",
		"notifications/prompts/list_changed",
		"notifications/resources/list_changed", NULL};
	for (int i = 0; i < INSTANCE_NLISTS; i++) {
		if (notes[i] == NULL || strcmp(method, notes[i]) != 0)
			continue;
		instance_list_refresh(inst, (enum instance_list)i);
		/* Templates change with resources: one notice for both. */
		if (i == INSTANCE_RESOURCES)
			instance_list_refresh(inst, INSTANCE_TEMPLATES);
		return true;
	}
	return false;
}

static void instance_handle_notification(struct instance *inst, json_t *msg,
					 void *cause)
{
	if (instance_list_changed(inst, jr_method(msg)))
		return;
	if (inst->cbs.on_notification)
		inst->cbs.on_notification(inst->ctx, inst, msg, cause);
}

/* A client's request was answered: the server keeps its session, so
 * expiries before this one are not "in a row". */
static void instance_answered_ok(struct instance *inst,
				 const struct outbox_req *r)
{
	if (!outbox_req_internal(r))
		inst->expiries = 0;
	instance_subs_answered(inst, r);
}

/* The request id answers on this connection: only one written on it. */
static struct outbox_req *instance_answered(struct instance *inst, int64_t id)
{
	struct outbox_req *r = outbox_find(inst->outbox, id);
	if (r == NULL || !outbox_req_on(r, inst->gen))
		return NULL;
	return r;
}

/* A successful answer to a request that takes text goes on without a
 * parse. True when the line was one and is dealt with. The one scan of
 * the line finds the result's own members too (instance_answer), for a
 * text callback that stamps them. */
static bool instance_fast_answer(struct instance *inst, const char *line,
				 size_t len)
{
	static const char *const keys[] = {"jsonrpc", "id", "method", "result",
					   "error"};
	static const char *const rkeys[] = {"resultType", "ttlMs", "cacheScope",
					    "_meta"};
	struct jsonscan_span sp[5], rp[4];
	const struct jsonscan_level lv[] = {{keys, 5, sp, 3},
					    {rkeys, 4, rp, 0}};
	long long id;
	if (jsonscan_levels(line, len, lv, 2) < 0 || sp[2].len || sp[4].len ||
	    sp[3].len == 0 || !jsonscan_int(line, &sp[1], &id) ||
	    sp[0].len != 5 || memcmp(line + sp[0].off, "\"2.0\"", 5) != 0)
		return false;
	struct outbox_req *r = instance_answered(inst, id);
	if (r == NULL) {
		log_debug("instance %s: answer to an unknown or cancelled "
			  "request; dropped",
			  inst->name);
		return true;
	}
	if (!outbox_req_has_text(r))
		return false; /* the full parse hands it to cb */
	instance_answered_ok(inst, r);
	struct instance_answer a = {sp[3], rp[0], rp[1], rp[2], rp[3]};
	inst->answer = &a;
	outbox_settle_text(inst->outbox, r, line, sp[3].off, sp[3].len);
	inst->answer = NULL;
	return true;
}

const struct instance_answer *instance_answer_scan(const struct instance *inst)
{
	return inst->answer;
}

/*
 * A message that belongs to a request but names none we can match. The
 * requests that could be its are the client's written on this connection
 * (a server answers only what it read): with one, the message is its, and
 * that is exact; with several, the server did not say which, so each of
 * them is failed and told so (left alone, one would wait forever).
 */
static void instance_fail_unnamed(struct instance *inst, const char *what,
				  json_t *server_error)
{
	size_t n = 0;
	for (struct outbox_req *r = outbox_first(inst->outbox); r;
	     r = outbox_next(inst->outbox, r))
		if (outbox_req_on(r, inst->gen) && !outbox_req_internal(r))
			n++;
	if (n == 0) {
		instance_warn(inst, "%s, and no request is in flight; dropped",
			      what);
		return;
	}
	instance_warn(inst, "%s; failing %s", what,
		      n == 1 ? "the one request in flight"
			     : "every request in flight that it could belong "
			       "to");
	int64_t *ids = xcalloc(n, sizeof *ids);
	size_t k = 0;
	for (struct outbox_req *r = outbox_first(inst->outbox); r && k < n;
	     r = outbox_next(inst->outbox, r))
		if (outbox_req_on(r, inst->gen) && !outbox_req_internal(r))
			ids[k++] = outbox_req_id(r);
	for (size_t i = 0; i < k; i++) {
		struct outbox_req *r = outbox_find(inst->outbox, ids[i]);
		if (r == NULL)
			continue;
		char *msg =
			n == 1 ? xasprintf("Server \"%s\": %s; this was the "
					   "only request in flight, so it is "
					   "this request's.",
					   inst->name, what)
			       : xasprintf("Server \"%s\": %s while %zu "
					   "requests were in flight; it "
					   "belongs to one of them and the "
					   "server did not say which, so each "
					   "is failed. This one may or may "
					   "not have taken effect.",
					   inst->name, what, n);
		json_t *data =
			json_pack("{s:s,s:b,s:I}", "server", inst->name,
				  "mayHaveRun", 1, "candidates", (json_int_t)n);
		if (server_error)
			json_object_set(data, "serverError", server_error);
		json_t *code = json_object_get(server_error, "code");
		json_t *err = jr_error(NULL,
				       n == 1 && json_is_integer(code)
					       ? (int)json_integer_value(code)
					       : JR_SERVER_UNAVAILABLE,
				       msg, data);
		free(msg);
		outbox_settle(inst->outbox, r, OUTBOX_LOST_SENT, err);
		json_decref(err);
	}
	free(ids);
}

/* An error the server could not tie to a request (id null: it could not
 * read one, JSON-RPC's parse error or invalid request). */
static void instance_orphan_error(struct instance *inst, json_t *msg)
{
	json_t *error = json_object_get(msg, "error");
	const char *text = json_string_value(json_object_get(error, "message"));
	char *what = xasprintf(
		"its error \"%.200s\" (code %lld) names no "
		"request (id null)",
		text ? text : "",
		(long long)json_integer_value(json_object_get(error, "code")));
	instance_fail_unnamed(inst, what, error);
	free(what);
}

/* Our ids are integers; an answer under another id (a server that
 * echoes ids as strings) is still an answer. The string of an id in
 * flight is that request's; any other names none we sent, so it goes to
 * the rule for answers that name no request. */
static void instance_odd_id_answer(struct instance *inst, json_t *msg,
				   json_t *id)
{
	const char *s = json_string_value(id);
	char *end = NULL;
	long long v = s && *s ? strtoll(s, &end, 10) : 0;
	struct outbox_req *r =
		end && *end == '\0' ? instance_answered(inst, v) : NULL;
	if (r) {
		instance_warn(inst,
			      "answered request %lld under the string id "
			      "\"%s\"; taken as its answer",
			      v, s);
		outbox_settle(inst->outbox, r, OUTBOX_ANSWERED, msg);
		return;
	}
	char *ids = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
	char *what = xasprintf("its answer names id %.40s, which is not one "
			       "it was sent",
			       ids ? ids : "?");
	free(ids);
	instance_fail_unnamed(inst, what, json_object_get(msg, "error"));
	free(what);
}

static int edge_scan_head(const char *s, size_t n, long long *id);
static bool edge_scan_tail(const char *s, size_t n, long long *id);

/* The "id" of a message that was not parsed, found by a scan: 1 (in *id,
 * an integer), 2 when it is a request or notification (it has a
 * "method"), 0 when neither can be told. The scan of the whole object
 * first (it takes what only a full parse refuses: a number out of range,
 * bytes that are not UTF-8); for text that is not even that, its first
 * members and its last. */
static int instance_scan_id(const char *line, size_t len, long long *id)
{
	static const char *const keys[] = {"id", "method"};
	struct jsonscan_span sp[2];
	if (jsonscan_members(line, len, keys, 2, sp) == 0) {
		if (sp[1].len)
			return 2;
		return sp[0].len && jsonscan_int(line, &sp[0], id) ? 1 : 0;
	}
	int h = edge_scan_head(line, len, id);
	if (h != 0)
		return h;
	return edge_scan_tail(line, len, id) ? 1 : 0;
}

/* The answer to request r came but cannot be used (why): r fails now,
 * instead of waiting for an answer that already came, and its client is
 * told that the server did answer (a call ran). */
static void instance_answer_unusable(struct instance *inst,
				     struct outbox_req *r, const char *why)
{
	instance_warn(inst,
		      "the answer to %s (id %" PRId64 ") %s; the "
		      "request fails",
		      outbox_req_method(r), outbox_req_id(r), why);
	char *msg = xasprintf("Server \"%s\" answered %s, but its answer %s, "
			      "so it was dropped; the request ran.",
			      inst->name, outbox_req_method(r), why);
	json_t *data =
		json_pack("{s:s,s:s,s:s,s:b}", "server", inst->name, "reason",
			  why, "answerUnusable", why, "mayHaveRun", 1);
	json_t *err = jr_error(NULL, JR_INTERNAL_ERROR, msg, data);
	free(msg);
	outbox_settle(inst->outbox, r, OUTBOX_LOST_SENT, err);
	json_decref(err);
}

/* A line no JSON parser takes. An answer to a request we sent (its id
 * found without the parse) fails that request at once; anything else is
 * only noted (a stray line on stdout is no one's answer). */
static void instance_unreadable(struct instance *inst, const char *line,
				size_t len, const char *jerr)
{
	long long id = 0;
	struct outbox_req *r = instance_scan_id(line, len, &id) == 1
				       ? instance_answered(inst, id)
				       : NULL;
	if (r == NULL) {
		instance_warn(inst, "skipped a line that is not JSON (%s)",
			      jerr);
		return;
	}
	char *why = xasprintf("is not JSON that can be read (%.200s)", jerr);
	instance_answer_unusable(inst, r, why);
	free(why);
}

/* JSON, but not a JSON-RPC message: one that names a request of ours and
 * no method (an answer with neither result nor error, or both) fails
 * that request; the rest is only noted. */
static void instance_invalid(struct instance *inst, json_t *msg,
			     const char *why)
{
	json_t *id = jr_id(msg);
	struct outbox_req *r =
		json_is_integer(id) && !json_object_get(msg, "method")
			? instance_answered(inst, json_integer_value(id))
			: NULL;
	if (r == NULL) {
		instance_warn(inst, "skipped an invalid message (%s)", why);
		return;
	}
	char *what = xasprintf("is not a valid JSON-RPC answer (%.200s)", why);
	instance_answer_unusable(inst, r, what);
	free(what);
}

static void instance_handle_line(struct instance *inst, const char *line,
				 size_t len, void *cause);

/* The caller's arg of the client request whose answer stream carried a
 * message (transports that can tell), so a server's question goes to
 * that call's session; NULL when unknown or the instance's own. */
static void *instance_cause(struct instance *inst, int64_t related)
{
	if (related <= 0)
		return NULL;
	struct outbox_req *r = outbox_find(inst->outbox, related);
	if (r == NULL || outbox_req_internal(r))
		return NULL;
	return outbox_req_arg(r);
}

void instance_message_cb(void *ctx, const char *line, size_t len,
			 int64_t related)
{
	struct instance_link *link = ctx;
	struct instance *inst = link->inst;
	if (link->detached)
		return;
	/* What clients are sent while this message is handled is this
	 * server's output (util/flow.h); set per message, restored after
	 * (handling it may run another instance's code, never its reads). */
	struct flow *outer = flow_current;
	flow_current = inst->flow;
	inst->inbound_len = len;
	instance_handle_line(inst, line, len, instance_cause(inst, related));
	inst->inbound_len = 0;
	flow_current = outer;
}

static void instance_handle_line(struct instance *inst, const char *line,
				 size_t len, void *cause)
{
	if (instance_fast_answer(inst, line, len))
		return;
	json_error_t jerr;
	json_t *msg = json_loadb(line, len, JSON_ALLOW_NUL, &jerr);
	if (msg == NULL) {
		instance_unreadable(inst, line, len, jerr.text);
		return;
	}
	json_t *id = jr_id(msg);
	if (json_is_object(msg) && json_is_null(id) &&
	    json_is_object(json_object_get(msg, "error")) &&
	    !json_object_get(msg, "method")) {
		instance_orphan_error(inst, msg);
		json_decref(msg);
		return;
	}
	const char *why;
	switch (jr_classify(msg, &why)) {
	case JR_RESPONSE: {
		if (!json_is_integer(id)) {
			instance_odd_id_answer(inst, msg, id);
			break;
		}
		struct outbox_req *r =
			instance_answered(inst, json_integer_value(id));
		if (r == NULL) {
			log_debug("instance %s: answer to an unknown or "
				  "cancelled request; dropped",
				  inst->name);
			break;
		}
		if (!json_object_get(msg, "error"))
			instance_answered_ok(inst, r);
		outbox_settle(inst->outbox, r, OUTBOX_ANSWERED, msg);
		break;
	}
	case JR_NOTIFICATION:
		instance_handle_notification(inst, msg, cause);
		break;
	case JR_REQUEST:
		if (strcmp(jr_method(msg), "ping") == 0)
			instance_respond(inst, id, json_object(), NULL);
		else if (inst->cbs.on_request)
			inst->cbs.on_request(inst->ctx, inst, msg, cause);
		else
			instance_respond(inst, id, NULL,
					 json_pack("{s:i,s:s}", "code",
						   JR_METHOD_NOT_FOUND,
						   "message",
						   "method not found"));
		break;
	case JR_INVALID:
		instance_invalid(inst, msg, why);
		break;
	}
	json_decref(msg);
}

void instance_garbage_cb(void *ctx, const char *what)
{
	struct instance_link *link = ctx;
	struct instance *inst = link->inst;
	if (link->detached)
		return;
	instance_warn(inst, "%s", what);
}

/* ---- a line over the limit ---- */

static size_t edge_ws(const char *s, size_t i, size_t n)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
		i++;
	return i;
}

/* The first members of the object, while they are short: "id" (an
 * integer, *id) or "method" (a request or notification: not an answer).
 * 1: id found, 2: method found, 0: neither before a nested value or the
 * end of what was kept. */
static int edge_scan_head(const char *s, size_t n, long long *id)
{
	size_t i = edge_ws(s, 0, n);
	if (i >= n || s[i] != '{')
		return 0;
	i++;
	for (;;) {
		i = edge_ws(s, i, n);
		if (i >= n || s[i] != '"')
			return 0;
		size_t k = ++i;
		while (i < n && s[i] != '"' && s[i] != '\\')
			i++;
		if (i >= n || s[i] != '"')
			return 0;
		size_t klen = i - k;
		const char *key = s + k;
		i = edge_ws(s, i + 1, n);
		if (i >= n || s[i] != ':')
			return 0;
		i = edge_ws(s, i + 1, n);
		if (i >= n)
			return 0;
		if (klen == 6 && memcmp(key, "method", 6) == 0)
			return 2;
		size_t v = i;
		if (s[i] == '"') {
			for (i++; i < n && s[i] != '"'; i++)
				if (s[i] == '\\')
					i++;
			if (i >= n)
				return 0;
			i++;
		} else if (s[i] == '{' || s[i] == '[') {
			return 0;
		} else {
			while (i < n && s[i] != ',' && s[i] != '}' &&
			       s[i] != ' ')
				i++;
			if (i >= n)
				return 0;
		}
		if (klen == 2 && memcmp(key, "id", 2) == 0) {
			struct jsonscan_span sp = {v, i - v};
			return jsonscan_int(s, &sp, id) ? 1 : 0;
		}
		i = edge_ws(s, i, n);
		if (i >= n || s[i] != ',')
			return 0;
		i++;
	}
}

/* The object's last member, when it is "id": `,"id":N}` at the very end
 * (serialisers that write the envelope last). */
static bool edge_scan_tail(const char *s, size_t n, long long *id)
{
	size_t e = n;
	while (e > 0 && (s[e - 1] == ' ' || s[e - 1] == '\t'))
		e--;
	if (e == 0 || s[e - 1] != '}')
		return false;
	e--;
	while (e > 0 && s[e - 1] == ' ')
		e--;
	size_t d = e;
	while (d > 0 && s[d - 1] >= '0' && s[d - 1] <= '9')
		d--;
	if (d > 0 && s[d - 1] == '-')
		d--;
	if (d == e)
		return false;
	struct jsonscan_span sp = {d, e - d};
	if (!jsonscan_int(s, &sp, id))
		return false;
	size_t c = d;
	while (c > 0 && s[c - 1] == ' ')
		c--;
	if (c < 5 || s[c - 1] != ':')
		return false;
	c--;
	while (c > 0 && s[c - 1] == ' ')
		c--;
	if (c < 5 || memcmp(s + c - 4, "\"id\"", 4) != 0)
		return false;
	c -= 4;
	while (c > 0 && s[c - 1] == ' ')
		c--;
	/* The member before it ended, or the object began: not the inside
	 * of a string. */
	return c > 0 && (s[c - 1] == ',' || s[c - 1] == '{');
}

void instance_overlong_cb(void *ctx, const char *head, size_t head_len,
			  const char *tail, size_t tail_len)
{
	struct instance_link *link = ctx;
	struct instance *inst = link->inst;
	if (link->detached)
		return;
	long long id = 0;
	int h = edge_scan_head(head, head_len, &id);
	if (h == 2) {
		instance_warn(inst,
			      "a request or notification over %d bytes was "
			      "dropped",
			      UPSTREAM_MAX_MESSAGE);
		return;
	}
	bool found = h == 1 || edge_scan_tail(tail, tail_len, &id);
	struct outbox_req *r = found ? instance_answered(inst, id) : NULL;
	if (found && r == NULL) {
		instance_warn(inst,
			      "an answer over %d bytes to request %lld, which "
			      "is no longer in flight, was dropped",
			      UPSTREAM_MAX_MESSAGE, id);
		return;
	}
	if (r == NULL) {
		char *what = xasprintf("its message over the %d MiB line "
				       "limit was dropped and names no "
				       "request we could read",
				       UPSTREAM_MAX_MESSAGE / (1024 * 1024));
		instance_fail_unnamed(inst, what, NULL);
		free(what);
		return;
	}
	instance_warn(inst,
		      "the answer to %s (id %lld) is over %d bytes; "
		      "the request fails",
		      outbox_req_method(r), id, UPSTREAM_MAX_MESSAGE);
	char *msg = xasprintf("Server \"%s\" answered %s with a message over "
			      "the runtime's %d MiB limit, so the answer was "
			      "dropped; the request ran, ask for less (a "
			      "smaller range or page).",
			      inst->name, outbox_req_method(r),
			      UPSTREAM_MAX_MESSAGE / (1024 * 1024));
	json_t *data =
		json_pack("{s:s,s:i,s:b}", "server", inst->name, "limitBytes",
			  UPSTREAM_MAX_MESSAGE, "mayHaveRun", 1);
	json_t *err = jr_error(NULL, JR_INTERNAL_ERROR, msg, data);
	free(msg);
	outbox_settle(inst->outbox, r, OUTBOX_LOST_SENT, err);
	json_decref(err);
}
