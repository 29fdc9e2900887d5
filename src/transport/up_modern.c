/*
 * The 2026-07-28 side of an HTTP upstream (up_modern.h): the probe at the
 * initialize, the requests with the revision's _meta and headers (the
 * Mcp-Param-* of a tool's x-mcp-header arguments, from the schemas its
 * tools/list answers gave; tools whose annotations the revision forbids
 * are taken out of those answers), the listen stream.
 */
#include "transport/up_modern_int.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/envelope.h"
#include "jsonrpc/msgq.h"
#include "mcpc/mcpc.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xmalloc.h"

struct upm *upm_new(struct mcpc *m, bool probe, const struct upm_out *out,
		    void *ctx)
{
	struct upm *p = xcalloc(1, sizeof *p);
	p->m = m;
	p->out = *out;
	p->ctx = ctx;
	p->era = probe ? UPM_UNKNOWN : UPM_LEGACY;
	msgq_init(&p->held);
	return p;
}

void upm_free(struct upm *p)
{
	if (p == NULL)
		return;
	free(p->init_msg);
	msgq_clear(&p->held);
	json_decref(p->caps);
	json_decref(p->client_info);
	json_decref(p->listen_kinds);
	json_decref(p->lists);
	json_decref(p->schemas);
	upm_mrtr_free(p);
	free(p);
}

bool upm_modern(const struct upm *p)
{
	return p && p->era == UPM_MODERN;
}

/* The _meta of a request of the revision, from the instance's (the
 * request's own clientCapabilities and logLevel kept: a modern client's,
 * forwarded). */
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
	int rc = mcpc_send_modern_with(p->m, s, strlen(s), id,
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
			p->out.message(p->ctx, s, strlen(s),
				       json_integer_value(id));
		free(s);
	}
	json_decref(a);
	return dropped;
}

static int upm_request(struct upm *p, const char *method, json_t *params,
		       int64_t id)
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

static int upm_probe(struct upm *p, const char *msg, size_t len, int64_t id)
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
	/* Under the initialize's id: what mcpc reports of it (a refusal, a
	 * 401 fault's facts) is the initialize's for the instance. */
	int rc = upm_request(p, "server/discover", json_object(), id);
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
			rc = mcpc_send(p->m, h->msg, h->len, h->id);
		if (rc < 0 && h->id > 0)
			p->out.lost(p->ctx, h->id, OUTBOX_UNWRITTEN);
		free(h);
	}
}

/* Not a server of the revision: the initialize goes as it came. */
static void upm_legacy(struct upm *p, const char *why)
{
	log_debug("server/discover: %s; speaking 2025 (initialize)", why);
	p->era = UPM_LEGACY;
	int rc = mcpc_send(p->m, p->init_msg, p->init_len, p->init_id);
	free(p->init_msg);
	p->init_msg = NULL;
	if (rc < 0)
		p->out.lost(p->ctx, p->init_id, OUTBOX_UNWRITTEN);
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
	/* The revision has no resources/subscribe and no logging/setLevel:
	 * nothing is to ask for them. */
	json_object_del(json_object_get(caps, "resources"), "subscribe");
	json_object_del(caps, "logging");
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
	json_t *msg = json_pack("{s:s,s:I,s:o}", "jsonrpc", "2.0", "id",
				(json_int_t)p->init_id, "result", r);
	char *s = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	p->era = UPM_MODERN;
	free(p->init_msg);
	p->init_msg = NULL;
	log_debug("server/discover: the server speaks %s", MODERN_VERSION);
	if (s)
		p->out.message(p->ctx, s, strlen(s), p->init_id);
	free(s);
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
		mcpc_forget(p->m, p->init_id);
		if (upm_request(p, "server/discover", json_object(),
				p->init_id) < 0)
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

/* ---- listening ---------------------------------------------------------- */

static void upm_listen(struct upm *p)
{
	if (p->listen_kinds == NULL || p->relistens >= UPM_MAX_RELISTENS) {
		if (p->listen_kinds)
			log_warn("the server's subscriptions/listen stream "
				 "ended %d times in a row; its list changes "
				 "are no longer heard",
				 UPM_MAX_RELISTENS);
		p->listen_id = 0;
		return;
	}
	p->listen_id = UPM_LISTEN_BASE + (int64_t)p->listen_seq++;
	p->listen_ms = clock_now_ms();
	json_t *params = json_pack("{s:O}", "notifications", p->listen_kinds);
	if (upm_request(p, "subscriptions/listen", params, p->listen_id) < 0) {
		log_warn("subscriptions/listen could not be sent");
		p->listen_id = 0;
	}
}

/* The listen stream ended: asked for again, unless streams keep ending
 * at once (a server that cannot keep one open must not loop us). */
static void upm_relisten(struct upm *p)
{
	if (clock_now_ms() - p->listen_ms >= UPM_LISTEN_SHORT_MS)
		p->relistens = 0;
	p->relistens++;
	upm_listen(p);
}

/* A message on the listen stream: list changes go on as 2025's (no
 * request caused them); the acknowledgement and the stream's final
 * answer stay here. */
static void upm_listen_message(struct upm *p, const char *msg, size_t len)
{
	json_t *n = json_loadb(msg, len, 0, NULL);
	const char *method = json_string_value(json_object_get(n, "method"));
	if (method == NULL) {
		/* The stream's end, answered: listen again. */
		json_decref(n);
		mcpc_forget(p->m, p->listen_id);
		upm_relisten(p);
		return;
	}
	if (strcmp(method, "notifications/subscriptions/acknowledged") != 0) {
		json_t *params = json_object_get(n, "params");
		json_object_del(json_object_get(params, "_meta"),
				META_SUBSCRIPTION_ID);
		if (json_object_size(json_object_get(params, "_meta")) == 0)
			json_object_del(params, "_meta");
		char *s = json_dumps(n, JSON_COMPACT);
		if (s)
			p->out.message(p->ctx, s, strlen(s), 0);
		free(s);
	}
	json_decref(n);
}

/* ---- the API ------------------------------------------------------------ */

int upm_send(struct upm *p, const char *msg, size_t len, int64_t id)
{
	switch (p->era) {
	case UPM_LEGACY:
		return 0;
	case UPM_UNKNOWN:
		/* Only an initialize probes (it is the first request). */
		if (id <= 0 || !memmem(msg, len, "\"initialize\"", 12))
			return 0;
		{
			json_t *m = json_loadb(msg, len, 0, NULL);
			const char *method =
				json_string_value(json_object_get(m, "method"));
			bool init = method && strcmp(method, "initialize") == 0;
			json_decref(m);
			if (!init)
				return 0;
		}
		{
			int rc = upm_probe(p, msg, len, id);
			return rc < 0 ? rc : 1;
		}
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
		 * input_required is its own to answer. */
		bool claimed = json_object_get(json_object_get(params, "_meta"),
					       META_PROTOCOL_VERSION) != NULL;
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
		upm_listen(p);
	} else if (!method && id == 0) {
		/* An answer of the client's to what a round asked. */
		upm_mrtr_answer(p, m);
	}
	/* Other notifications (cancelled: the stream's end says it) and
	 * answers (the revision's servers send no requests) go nowhere. */
	json_decref(m);
	return rc;
}

bool upm_message(struct upm *p, const char *msg, size_t len, int64_t related)
{
	if (p->era == UPM_PROBING && related == p->init_id) {
		/* Only the answer settles it; what else came on its stream is
		 * nobody's. */
		json_t *a = json_loadb(msg, len, 0, NULL);
		bool answer = json_object_get(a, "method") == NULL &&
			      (json_object_get(a, "result") ||
			       json_object_get(a, "error"));
		json_decref(a);
		if (answer)
			upm_probe_answer(p, msg, len);
		return true;
	}
	if (p->era == UPM_MODERN && related != 0 && related == p->listen_id) {
		upm_listen_message(p, msg, len);
		return true;
	}
	if (p->era == UPM_MODERN && p->lists && related > 0) {
		char key[24];
		snprintf(key, sizeof key, "%" PRId64, related);
		if (json_object_get(p->lists, key))
			return upm_tools_answer(p, msg, len, key);
	}
	return p->era == UPM_MODERN && upm_mrtr_message(p, msg, len, related);
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
