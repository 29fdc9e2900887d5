/*
 * The 2026-07-28 side of an upstream (up_modern.h): the probe at the
 * initialize, the requests with the revision's _meta and headers (the
 * Mcp-Param-* of a tool's x-mcp-header arguments, from the schemas its
 * tools/list answers gave; tools whose annotations the revision forbids
 * are taken out of those answers), the listen stream (list changes, and
 * the resources 2025 clients subscribed to), logging/setLevel answered
 * (a 2025 client's session puts its level in its own requests' _meta).
 */
#include "transport/up_modern_int.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/envelope.h"
#include "jsonrpc/jsonrpc.h"
#include "jsonrpc/msgq.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xmalloc.h"

struct upm *upm_new(const struct upm_wire *wire, void *wctx, enum upm_probe how,
		    const struct upm_out *out, void *ctx)
{
	struct upm *p = xcalloc(1, sizeof *p);
	p->wire = wire;
	p->wctx = wctx;
	p->how = how;
	p->out = *out;
	p->ctx = ctx;
	p->era = how == UPM_PROBE_NONE ? UPM_LEGACY : UPM_UNKNOWN;
	msgq_init(&p->held);
	msgq_init(&p->later);
	return p;
}

void upm_free(struct upm *p)
{
	if (p == NULL)
		return;
	free(p->init_msg);
	free(p->init_err);
	json_decref(p->subs);
	msgq_clear(&p->held);
	msgq_clear(&p->later);
	json_decref(p->caps);
	json_decref(p->client_info);
	json_decref(p->listen_kinds);
	json_decref(p->lists);
	json_decref(p->schemas);
	upm_mrtr_free(p);
	free(p);
}

void upm_out_message(struct upm *p, const char *msg, size_t len,
		     int64_t related)
{
	if (p->in_send == 0) {
		p->out.message(p->ctx, msg, len, related);
		return;
	}
	bool first = p->later.head == NULL;
	msgq_push(&p->later, msg, len, related);
	if (first)
		p->wire->kick(p->wctx);
}

void upm_run_later(struct upm *p)
{
	struct msgq_item *m;
	while ((m = msgq_pop(&p->later)) != NULL) {
		p->out.message(p->ctx, m->msg, m->len, m->id);
		free(m);
	}
}

bool upm_modern(const struct upm *p)
{
	return p && p->era == UPM_MODERN;
}

/* The _meta of a request of the revision, from the instance's (the
 * request's own clientCapabilities and logLevel kept: a modern client's,
 * forwarded, or the level a 2025 client's session asked for it). */
static void upm_meta(struct upm *p, json_t *params)
{
	json_t *meta = json_object_get(params, "_meta");
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(params, "_meta", meta);
	}
	json_object_set_new(meta, META_PROTOCOL_VERSION,
			    json_string(MODERN_VERSION));
	if (!json_is_object(json_object_get(meta, META_CLIENT_CAPS)))
		json_object_set_new(meta, META_CLIENT_CAPS,
				    p->caps ? json_deep_copy(p->caps)
					    : json_object());
	if (p->client_info)
		json_object_set(meta, META_CLIENT_INFO, p->client_info);
	else
		json_object_del(meta, META_CLIENT_INFO);
}

/* The Mcp-Param-* lines of the x-mcp-header properties of schema
 * (reached through "properties" only) that args gives a value. */
static void upm_param_walk(json_t *schema, json_t *args, int depth,
			   char **lines, size_t *n)
{
	json_t *props = json_object_get(schema, "properties");
	if (!json_is_object(props) || depth >= ENVELOPE_MAX_SCHEMA_DEPTH)
		return;
	const char *key;
	json_t *sub;
	json_object_foreach(props, key, sub)
	{
		json_t *v = json_is_object(args) ? json_object_get(args, key)
						 : NULL;
		const char *mark =
			json_string_value(json_object_get(sub, "x-mcp-header"));
		if (mark && v && *n < ENVELOPE_MAX_PARAMS) {
			char *text = NULL;
			if (json_is_string(v))
				text = envelope_header_encode(
					json_string_value(v));
			else if (json_is_integer(v))
				text = xasprintf("%" JSON_INTEGER_FORMAT,
						 json_integer_value(v));
			else if (json_is_real(v))
				text = xasprintf("%.17g", json_real_value(v));
			else if (json_is_boolean(v))
				text = xstrdup(json_is_true(v) ? "true"
							       : "false");
			/* An empty value goes as libcurl sends one. */
			if (text)
				lines[(*n)++] =
					text[0] ? xasprintf("Mcp-Param-%s: %s",
							    mark, text)
						: xasprintf("Mcp-Param-%s;",
							    mark);
			free(text);
		}
		upm_param_walk(sub, v, depth + 1, lines, n);
	}
}

int upm_post(struct upm *p, json_t *msg, int64_t id)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	if (s == NULL)
		return -EINVAL;
	char *lines[ENVELOPE_MAX_PARAMS + 1] = {0};
	size_t n = 0;
	const char *method = json_string_value(json_object_get(msg, "method"));
	if (p->schemas && method && strcmp(method, "tools/call") == 0) {
		json_t *params = json_object_get(msg, "params");
		const char *name =
			json_string_value(json_object_get(params, "name"));
		json_t *schema =
			name ? json_object_get(p->schemas, name) : NULL;
		if (schema)
			upm_param_walk(schema,
				       json_object_get(params, "arguments"), 0,
				       lines, &n);
	}
	int rc = p->wire->post(p->wctx, s, strlen(s), id,
			       (const char *const *)lines);
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(s);
	return rc;
}

/* A tools/list answer: tools whose x-mcp-header use the revision forbids
 * are dropped (a client of the revision must not call them), and the
 * schemas of those with annotations kept for their calls. true when the
 * answer went on here (changed). */
static bool upm_tools_answer(struct upm *p, const char *msg, size_t len,
			     const char *key)
{
	json_t *a = json_loadb(msg, len, 0, NULL);
	if (json_object_get(a, "method")) {
		json_decref(a); /* a notification on its stream */
		return false;
	}
	bool first = json_is_true(json_object_get(p->lists, key));
	json_object_del(p->lists, key);
	json_t *tools = json_object_get(json_object_get(a, "result"), "tools");
	if (!json_is_array(tools)) {
		json_decref(a);
		return false;
	}
	if (first || p->schemas == NULL) {
		json_decref(p->schemas);
		p->schemas = json_object();
	}
	bool dropped = false;
	for (size_t i = 0; i < json_array_size(tools);) {
		json_t *t = json_array_get(tools, i);
		json_t *schema = json_object_get(t, "inputSchema");
		const char *name =
			json_string_value(json_object_get(t, "name"));
		if (json_is_object(schema) && !envelope_schema_ok(schema)) {
			log_warn("the server's tool \"%s\" uses x-mcp-header "
				 "as 2026-07-28 forbids: it is not offered",
				 name ? name : "?");
			json_array_remove(tools, i);
			dropped = true;
			continue;
		}
		char *text = json_is_object(schema)
				     ? json_dumps(schema, JSON_COMPACT)
				     : NULL;
		if (name && text && strstr(text, "\"x-mcp-header\""))
			json_object_set(p->schemas, name, schema);
		free(text);
		i++;
	}
	if (dropped) {
		char *s = json_dumps(a, JSON_COMPACT);
		json_t *id = json_object_get(a, "id");
		if (s)
			upm_out_message(p, s, strlen(s),
					json_integer_value(id));
		free(s);
	}
	json_decref(a);
	return dropped;
}

void upm_done(struct upm *p, int64_t id)
{
	if (id > 0 && p->wire->forget)
		p->wire->forget(p->wctx, id);
}

void upm_cancel(struct upm *p, int64_t id)
{
	if (id <= 0)
		return;
	upm_done(p, id);
	if (!p->wire->channel)
		return;
	/* One channel: the revision's cancellation is said. */
	char msg[160];
	int n = snprintf(msg, sizeof msg,
			 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
			 "cancelled\",\"params\":{\"requestId\":%" PRId64 "}}",
			 id);
	if (p->wire->send(p->wctx, msg, (size_t)n, 0) < 0)
		log_debug("notifications/cancelled for %" PRId64
			  " could not be sent",
			  id);
}

/* Gives the instance msg (an object), related to request related. */
void upm_give(struct upm *p, json_t *msg, int64_t related)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	if (s)
		upm_out_message(p, s, strlen(s), related);
	free(s);
}

/* The instance's request id answered here, with result (taken). */
void upm_answer(struct upm *p, int64_t id, json_t *result)
{
	json_t *a = json_pack("{s:s,s:I,s:o}", "jsonrpc", "2.0", "id",
			      (json_int_t)id, "result", result);
	upm_give(p, a, id);
	json_decref(a);
}

int upm_request(struct upm *p, const char *method, json_t *params, int64_t id)
{
	upm_meta(p, params);
	json_t *msg =
		json_pack("{s:s,s:I,s:s,s:o}", "jsonrpc", "2.0", "id",
			  (json_int_t)id, "method", method, "params", params);
	int rc = upm_post(p, msg, id);
	json_decref(msg);
	return rc;
}

/* ---- the probe ---------------------------------------------------------- */

/* Keeps what the initialize says (the instance's capabilities and info,
 * for the revision's _meta) and the message itself. */
static void upm_keep_init(struct upm *p, const char *msg, size_t len,
			  int64_t id)
{
	json_t *init = json_loadb(msg, len, 0, NULL);
	json_t *params = json_object_get(init, "params");
	json_t *caps = json_object_get(params, "capabilities");
	json_t *info = json_object_get(params, "clientInfo");
	json_decref(p->caps);
	json_decref(p->client_info);
	p->caps = json_is_object(caps) ? json_deep_copy(caps) : json_object();
	p->client_info = json_is_object(info) ? json_deep_copy(info) : NULL;
	json_decref(init);
	free(p->init_msg);
	p->init_msg = xmalloc(len ? len : 1);
	memcpy(p->init_msg, msg, len);
	p->init_len = len;
	p->init_id = id;
}

/* server/discover, under the initialize's id: what the transport reports
 * of it (a refusal, a 401 fault's facts) is the initialize's for the
 * instance. */
static int upm_discover(struct upm *p)
{
	int rc = upm_request(p, "server/discover", json_object(), p->init_id);
	if (rc == 0)
		p->era = UPM_PROBING;
	return rc;
}

/* What waited for the verdict goes, in order. */
static void upm_flush(struct upm *p)
{
	struct msgq now = p->held;
	msgq_init(&p->held);
	struct msgq_item *h;
	while ((h = msgq_pop(&now)) != NULL) {
		int rc = upm_send(p, h->msg, h->len, h->id);
		if (rc == 0) /* the 2025 way: as it came */
			rc = p->wire->send(p->wctx, h->msg, h->len, h->id);
		if (rc < 0 && h->id > 0)
			p->out.lost(p->ctx, h->id, OUTBOX_UNWRITTEN);
		free(h);
	}
}

/* Not a server of the revision: the initialize goes as it came (or, when
 * it went first, its error is the instance's answer). */
static void upm_legacy(struct upm *p, const char *why)
{
	log_debug("server/discover: %s; speaking 2025 (initialize)", why);
	p->era = UPM_LEGACY;
	if (p->init_err) {
		char *e = p->init_err;
		p->init_err = NULL;
		upm_out_message(p, e, strlen(e), p->init_id);
		free(e);
	} else {
		int rc = p->wire->send(p->wctx, p->init_msg, p->init_len,
				       p->init_id);
		if (rc < 0)
			p->out.lost(p->ctx, p->init_id, OUTBOX_UNWRITTEN);
	}
	free(p->init_msg);
	p->init_msg = NULL;
	upm_flush(p);
}

static bool upm_names_ours(json_t *versions)
{
	size_t i;
	json_t *v;
	json_array_foreach(versions, i, v)
	{
		if (json_is_string(v) &&
		    strcmp(json_string_value(v), MODERN_VERSION) == 0)
			return true;
	}
	return false;
}

/* The discover answer, as the instance reads an initialize answer. */
static void upm_modern_init(struct upm *p, json_t *result)
{
	json_t *caps = json_object_get(result, "capabilities");
	caps = json_is_object(caps) ? json_deep_copy(caps) : json_object();
	/* resources.subscribe and logging stay: resources/subscribe and
	 * logging/setLevel are answered here, in the revision's terms. */
	p->can_subscribe = json_is_true(json_object_get(
		json_object_get(caps, "resources"), "subscribe"));
	json_t *kinds = json_object();
	static const char *const caps_of[] = {"tools", "prompts", "resources"};
	static const char *const kinds_of[] = {"toolsListChanged",
					       "promptsListChanged",
					       "resourcesListChanged"};
	for (int i = 0; i < 3; i++)
		if (json_is_true(json_object_get(
			    json_object_get(caps, caps_of[i]), "listChanged")))
			json_object_set_new(kinds, kinds_of[i], json_true());
	json_decref(p->listen_kinds);
	p->listen_kinds = json_object_size(kinds) ? kinds : NULL;
	if (p->listen_kinds == NULL)
		json_decref(kinds);
	json_t *info = json_object_get(json_object_get(result, "_meta"),
				       META_SERVER_INFO);
	if (!json_is_object(info))
		info = json_object_get(result, "serverInfo");
	json_t *r = json_pack("{s:s,s:o}", "protocolVersion", MODERN_VERSION,
			      "capabilities", caps);
	if (json_is_object(info))
		json_object_set(r, "serverInfo", info);
	json_t *instr = json_object_get(result, "instructions");
	if (json_is_string(instr))
		json_object_set(r, "instructions", instr);
	p->era = UPM_MODERN;
	free(p->init_msg);
	p->init_msg = NULL;
	free(p->init_err);
	p->init_err = NULL;
	log_debug("server/discover: the server speaks %s", MODERN_VERSION);
	upm_answer(p, p->init_id, r);
	upm_flush(p);
}

static void upm_probe_answer(struct upm *p, const char *msg, size_t len)
{
	json_t *a = json_loadb(msg, len, 0, NULL);
	json_t *result = json_object_get(a, "result");
	json_t *err = json_object_get(a, "error");
	/* -32022 naming our version among those supported: a server of the
	 * revision that refused the first request for its own reasons; the
	 * revision says to try again (once). */
	if (err && !p->probe_again &&
	    json_integer_value(json_object_get(err, "code")) ==
		    JR_UNSUPPORTED_VERSION &&
	    upm_names_ours(json_object_get(json_object_get(err, "data"),
					   "supported"))) {
		json_decref(a);
		p->probe_again = true;
		upm_done(p, p->init_id);
		if (upm_discover(p) < 0)
			upm_legacy(p, "the second probe could not be sent");
		return;
	}
	if (json_is_object(result) &&
	    upm_names_ours(json_object_get(result, "supportedVersions")))
		upm_modern_init(p, result);
	else
		upm_legacy(p, json_object_get(a, "error")
				      ? "an error"
				      : "no DiscoverResult naming 2026-07-28");
	json_decref(a);
}

/* The answer to an initialize that went first: a result is a 2025 server
 * (it goes to the instance as it came); an error may be a server of the
 * revision refusing it, which server/discover on the same process finds
 * out. */
static void upm_init_answer(struct upm *p, const char *msg, size_t len,
			    bool error)
{
	if (!error) {
		p->era = UPM_LEGACY;
		free(p->init_msg);
		p->init_msg = NULL;
		upm_out_message(p, msg, len, p->init_id);
		upm_flush(p);
		return;
	}
	free(p->init_err);
	p->init_err = xstrndup(msg, len);
	if (upm_discover(p) < 0)
		upm_legacy(p, "it could not be sent after the initialize's "
			      "error");
}

/* ---- the API ------------------------------------------------------------ */

static bool upm_is_initialize(const char *msg, size_t len, int64_t id)
{
	if (id <= 0 || !memmem(msg, len, "\"initialize\"", 12))
		return false;
	json_t *m = json_loadb(msg, len, 0, NULL);
	const char *method = json_string_value(json_object_get(m, "method"));
	bool init = method && strcmp(method, "initialize") == 0;
	json_decref(m);
	return init;
}

/* The instance's notifications/cancelled on a channel: a call carried on
 * in rounds names its retry upstream (or nothing while a round waits for
 * the client); 1 when dealt with here, 0 to send it as it came. */
static int upm_cancelled(struct upm *p, json_t *params)
{
	json_t *rid = json_object_get(params, "requestId");
	if (!json_is_integer(rid))
		return 0;
	int64_t id = json_integer_value(rid);
	int64_t wire = upm_mrtr_wire(p, id);
	upm_mrtr_forget(p, id); /* cancels a retry upstream, if any */
	return wire == id ? 0 : 1;
}

static int upm_send_in(struct upm *p, const char *msg, size_t len, int64_t id);

int upm_send(struct upm *p, const char *msg, size_t len, int64_t id)
{
	p->in_send++;
	int rc = upm_send_in(p, msg, len, id);
	p->in_send--;
	return rc;
}

static int upm_send_in(struct upm *p, const char *msg, size_t len, int64_t id)
{
	switch (p->era) {
	case UPM_LEGACY:
		return 0;
	case UPM_UNKNOWN:
		/* Only an initialize probes (it is the first request). */
		if (!upm_is_initialize(msg, len, id))
			return 0;
		upm_keep_init(p, msg, len, id);
		if (p->how == UPM_PROBE_AFTER_INIT) {
			int rc = p->wire->send(p->wctx, msg, len, id);
			if (rc < 0)
				return rc;
			p->era = UPM_INITIALIZING;
			return 1;
		}
		{
			int rc = upm_discover(p);
			return rc < 0 ? rc : 1;
		}
	case UPM_INITIALIZING:
	case UPM_PROBING:
		msgq_push(&p->held, msg, len, id);
		return 1;
	case UPM_MODERN:
		break;
	}
	json_t *m = json_loadb(msg, len, 0, NULL);
	if (!json_is_object(m)) {
		json_decref(m);
		return -EINVAL;
	}
	const char *method = json_string_value(json_object_get(m, "method"));
	int rc = 1;
	if (method && id > 0) {
		json_t *params = json_object_get(m, "params");
		if (!json_is_object(params)) {
			params = json_object();
			json_object_set_new(m, "params", params);
		}
		/* A modern client's call carries its own claim: its
		 * input_required is its own to answer, its log level its
		 * own to ask. */
		bool claimed = json_object_get(json_object_get(params, "_meta"),
					       META_PROTOCOL_VERSION) != NULL;
		if (!claimed &&
		    (strcmp(method, "resources/subscribe") == 0 ||
		     strcmp(method, "resources/unsubscribe") == 0)) {
			upm_subscribe(p, id, params,
				      strcmp(method, "resources/subscribe") ==
					      0);
			json_decref(m);
			return 1;
		}
		if (!claimed && strcmp(method, "logging/setLevel") == 0) {
			upm_set_level(p, id, params);
			json_decref(m);
			return 1;
		}
		upm_meta(p, params);
		if (!claimed && upm_mrtr_method(method))
			upm_mrtr_track(p, id, method, params);
		if (strcmp(method, "tools/list") == 0) {
			char key[24];
			snprintf(key, sizeof key, "%" PRId64, id);
			if (p->lists == NULL)
				p->lists = json_object();
			json_object_set_new(p->lists, key,
					    json_boolean(!json_object_get(
						    params, "cursor")));
		}
		rc = upm_post(p, m, id);
		if (rc < 0)
			upm_mrtr_forget(p, id);
		rc = rc < 0 ? rc : 1;
	} else if (method && strcmp(method, "notifications/initialized") == 0) {
		p->listening = true;
		upm_listen(p);
	} else if (method && p->wire->channel &&
		   strcmp(method, "notifications/cancelled") == 0) {
		/* On a channel this is the revision's cancellation. */
		rc = upm_cancelled(p, json_object_get(m, "params"));
	} else if (!method && id == 0) {
		/* An answer of the client's to what a round asked. */
		upm_mrtr_answer(p, m);
	}
	/* Other notifications (cancelled over HTTP: the stream's end says
	 * it) and answers (the revision's servers send no requests) go
	 * nowhere. */
	json_decref(m);
	return rc;
}

/* On a channel, what a message relates to: an answer's own id, a listen
 * stream's message its subscription id, the server's cancellation of a
 * listen stream the id it names; 0 for the rest. */
static int64_t upm_channel_related(const char *msg, size_t len)
{
	json_t *m = json_loadb(msg, len, 0, NULL);
	const char *method = json_string_value(json_object_get(m, "method"));
	json_t *params = json_object_get(m, "params");
	json_t *id = NULL;
	if (method == NULL)
		id = json_object_get(m, "id");
	else if (strcmp(method, "notifications/cancelled") == 0)
		id = json_object_get(params, "requestId");
	else
		id = json_object_get(json_object_get(params, "_meta"),
				     META_SUBSCRIPTION_ID);
	int64_t r = json_is_integer(id) ? json_integer_value(id) : 0;
	json_decref(m);
	return r > 0 ? r : 0;
}

/* 1: msg is an answer with a result, 2: with an error, 0: not one. */
static int upm_is_answer(const char *msg, size_t len)
{
	json_t *a = json_loadb(msg, len, 0, NULL);
	int what = 0;
	if (json_object_get(a, "method") == NULL)
		what = json_object_get(a, "error")    ? 2
		       : json_object_get(a, "result") ? 1
						      : 0;
	json_decref(a);
	return what;
}

bool upm_message(struct upm *p, const char *msg, size_t len, int64_t related)
{
	if (p->era == UPM_LEGACY || p->era == UPM_UNKNOWN)
		return false;
	if (p->wire->channel)
		related = upm_channel_related(msg, len);
	if (p->era == UPM_INITIALIZING) {
		int what = related == p->init_id ? upm_is_answer(msg, len) : 0;
		if (what == 0)
			return false;
		upm_init_answer(p, msg, len, what == 2);
		return true;
	}
	if (p->era == UPM_PROBING) {
		if (related != p->init_id)
			return false;
		/* Only the answer settles it; what else came on its stream is
		 * nobody's. */
		if (upm_is_answer(msg, len))
			upm_probe_answer(p, msg, len);
		return true;
	}
	if (related != 0 &&
	    (related == p->listen_id || related == p->listen_old)) {
		upm_listen_message(p, msg, len, related);
		return true;
	}
	if (p->lists && related > 0) {
		char key[24];
		snprintf(key, sizeof key, "%" PRId64, related);
		if (json_object_get(p->lists, key))
			return upm_tools_answer(p, msg, len, key);
	}
	return upm_mrtr_message(p, msg, len, related);
}

void upm_forget(struct upm *p, int64_t id)
{
	if (p->era == UPM_MODERN)
		upm_mrtr_forget(p, id);
}

bool upm_lost(struct upm *p, int64_t id, enum outbox_fact f)
{
	if (p->era == UPM_PROBING && id == p->init_id) {
		/* Refused without an answer of the revision (a 2025 server's
		 * 400 or 404), or cut: the initialize decides. */
		upm_legacy(p, f == OUTBOX_REFUSED ? "refused" : "no answer");
		return true;
	}
	if (p->era == UPM_MODERN && id != 0 && id == p->listen_old) {
		p->listen_old = 0;
		return true;
	}
	if (p->era == UPM_MODERN && id != 0 && id == p->listen_id) {
		upm_relisten(p);
		return true;
	}
	if (p->lists && id > 0) {
		char key[24];
		snprintf(key, sizeof key, "%" PRId64, id);
		json_object_del(p->lists, key);
	}
	return p->era == UPM_MODERN && upm_mrtr_lost(p, id, f);
}
