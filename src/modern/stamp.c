/*
 * Stamping a modern client's answers as 2026-07-28 asks: resultType on
 * every result, the cache hints (ttlMs, cacheScope) where they are due,
 * serverInfo in _meta, and -32602 with the uri for a server's -32002; on
 * parsed messages, and on the hot path as text, without a parse.
 */
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/jsonrpc.h"
#include "modern/modern_int.h"
#include "util/buf.h"
#include "util/jsonscan.h"
#include "util/xmalloc.h"

/* The methods whose results a client may cache (SEP-2549). */
static bool stamp_cacheable(const char *method)
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

static json_t *stamp_server_info(struct modern_req *r)
{
	json_t *si = r->sp && r->sp->init
			     ? json_object_get(r->sp->init, "serverInfo")
			     : NULL;
	return si ? json_incref(si)
		  : json_pack("{s:s,s:s}", "name", "mcpvisor", "version", "0");
}

/* serverInfo as JSON text, made once per hidden session. */
static const char *stamp_server_info_text(struct modern_req *r)
{
	if (r->sp == NULL || r->sp->init == NULL)
		return "{\"name\":\"mcpvisor\",\"version\":\"0\"}";
	if (r->sp->server_info == NULL) {
		json_t *si = stamp_server_info(r);
		r->sp->server_info = json_dumps(si, JSON_COMPACT);
		json_decref(si);
	}
	return r->sp->server_info;
}

/* Whether r is a retry (it carries a requestState, or the bridge took
 * rounds): its answer is the call's, never a cacheable one. */
static bool stamp_retry(struct modern_req *r)
{
	return r->rounds > 0 ||
	       (r->msg && json_object_get(jr_params(r->msg), "requestState"));
}

/* Whether r's result gets the cache hints: a cacheable method's, not a
 * retry's, and not an input_required one (SEP-2549: never on those). */
static bool stamp_hints_due(struct modern_req *r, bool input_required)
{
	return stamp_cacheable(r->method) && !input_required && !stamp_retry(r);
}

/* The cache hints of a result that is due them. What mcpvisor composes
 * (a list merged from its servers' last lists, discover) gets ttlMs 0:
 * those lists change at a server's restart or first start (the tool
 * cache's copy is replaced) with nothing a client that does not listen
 * would hear, so no time can be promised. An answer a 2026-07-28 server
 * gave with its own hints (resources/read routed to it) keeps its ttlMs,
 * the server's promise about its own answer; its scope is private when
 * the server said so or the answer depends on the client's space (which
 * servers answer, and how they are configured, is the space's). */
static void stamp_hints(struct modern_req *r, json_t *result)
{
	json_t *ttl = json_object_get(result, "ttlMs");
	if (!json_is_integer(ttl) || json_integer_value(ttl) < 0)
		json_object_set_new(result, "ttlMs", json_integer(0));
	const char *scope =
		json_string_value(json_object_get(result, "cacheScope"));
	bool priv = (r->sp && r->sp->space) ||
		    (scope && strcmp(scope, "public") != 0);
	json_object_set_new(result, "cacheScope",
			    json_string(priv ? "private" : "public"));
}

/* The revision's fields on a result: resultType, the cache hints where
 * they are due (stamp_hints) and none where they are not (a server's own
 * on an input_required result or a retry's is taken out), and serverInfo
 * in _meta. result is changed (a copy of the caller's). */
static void stamp_result(struct modern_req *r, json_t *result)
{
	const char *rt =
		json_string_value(json_object_get(result, "resultType"));
	bool input_required = rt && strcmp(rt, "input_required") == 0;
	if (json_object_get(result, "resultType") == NULL)
		json_object_set_new(result, "resultType",
				    json_string("complete"));
	if (stamp_hints_due(r, input_required)) {
		stamp_hints(r, result);
	} else if (input_required || stamp_retry(r)) {
		json_object_del(result, "ttlMs");
		json_object_del(result, "cacheScope");
	}
	json_t *meta = json_object_get(result, "_meta");
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(result, "_meta", meta);
	} else {
		meta = json_copy(meta);
		json_object_set_new(result, "_meta", meta);
	}
	json_object_set_new(meta, META_SERVER_INFO, stamp_server_info(r));
}

/* The answer of the session (msg borrowed) as the client sees it: its
 * own id, the revision's fields; a resource the server did not find is
 * -32602 with the uri (2026-07-28 has no -32002). */
json_t *stamp_answer(struct modern_req *r, json_t *msg)
{
	json_t *out = json_copy(msg);
	json_object_set(out, "id", r->client_id);
	json_t *result = json_object_get(msg, "result");
	json_t *err = json_object_get(msg, "error");
	if (json_is_object(result)) {
		result = json_copy(result);
		json_object_set_new(out, "result", result);
		stamp_result(r, result);
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
static bool stamp_empty_object(const char *p, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\n' && p[i] != '\r')
			return p[i] == '}';
	return false;
}

static void stamp_put_id(struct buf *b, json_t *id)
{
	if (json_is_integer(id) && json_integer_value(id) >= 0) {
		buf_put_u64(b, (unsigned long long)json_integer_value(id));
		return;
	}
	char *text = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
	buf_puts(b, text);
	free(text);
}

/* Whether the _meta object text p[0..n) names serverInfo: a result that
 * has _meta is rare, so its members are looked at only then. */
static bool stamp_meta_has_server_info(const char *p, size_t n)
{
	static const char *const keys[] = {META_SERVER_INFO};
	struct jsonscan_span si;
	return jsonscan_members(p, n, keys, 1, &si) < 0 || si.len;
}

/* The answer is spliced, never parsed: the client's id, and the fields
 * the result lacks written in at the start of the result object and of
 * its _meta. Left to stamp_answer (NULL): a result that is not an
 * object, a _meta that is not one or names serverInfo already, and cache
 * hints of the result's own (a 2026-07-28 server's, which stamp_hints
 * weighs). */
char *stamp_answer_scanned(struct modern_req *r, const char *msg,
			   const struct instance_answer *a, size_t *out_len)
{
	if (a->result.len == 0 || msg[a->result.off] != '{' || a->ttl_ms.len ||
	    a->cache_scope.len)
		return NULL;
	const char *res = msg + a->result.off;
	size_t rlen = a->result.len;
	const char *meta = a->meta.len ? msg + a->meta.off : NULL;
	if (meta &&
	    (*meta != '{' || stamp_meta_has_server_info(meta, a->meta.len)))
		return NULL;
	/* The value's span has its quotes. */
	bool input_required =
		a->result_type.len == 16 &&
		memcmp(msg + a->result_type.off, "\"input_required\"", 16) == 0;
	const char *si_text = stamp_server_info_text(r);
	struct buf b;
	buf_init(&b);
	buf_reserve(&b, rlen + 200 + strlen(si_text));
	buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
	stamp_put_id(&b, r->client_id);
	buf_puts(&b, ",\"result\":{");
	/* Each member written in ends with a comma, for the result's own. */
	if (a->result_type.len == 0)
		buf_puts(&b, "\"resultType\":\"complete\",");
	if (stamp_hints_due(r, input_required))
		buf_puts(&b,
			 r->sp && r->sp->space
				 ? "\"ttlMs\":0,\"cacheScope\":\"private\","
				 : "\"ttlMs\":0,\"cacheScope\":\"public\",");
	if (meta == NULL) {
		buf_puts(&b, "\"_meta\":{\"" META_SERVER_INFO "\":");
		buf_puts(&b, si_text);
		buf_puts(&b, "},");
	}
	if (stamp_empty_object(res, rlen)) {
		b.len--; /* the last comma: resultType at least went in */
		buf_puts(&b, "}");
	} else if (meta == NULL) {
		buf_append(&b, res + 1, rlen - 1);
	} else {
		size_t in = (size_t)(meta - res) + 1; /* inside _meta's brace */
		buf_append(&b, res + 1, in - 1);
		buf_puts(&b, "\"" META_SERVER_INFO "\":");
		buf_puts(&b, si_text);
		if (!stamp_empty_object(meta, a->meta.len))
			buf_puts(&b, ",");
		buf_append(&b, res + in, rlen - in);
	}
	buf_puts(&b, "}");
	*out_len = b.len;
	return buf_steal(&b);
}

/* The session's answer as text (a result, the session's id on it)
 * stamped as stamp_answer stamps it, without a parse or a dump
 * (stamp_answer_scanned); NULL when the text is anything else (an error, a
 * server's message) or not of the form the splice takes. A call's
 * answer is the hot path of every modern client, and jansson would cost
 * more than everything else mcpvisor does for it. */
char *stamp_answer_text(struct modern_req *r, const char *data, size_t len,
			size_t *out_len)
{
	static const char *const keys[] = {"method", "result", "error"};
	static const char *const rkeys[] = {"resultType", "ttlMs", "cacheScope",
					    "_meta"};
	struct jsonscan_span sp[3], rp[4];
	/* One pass over the answer and its result. */
	const struct jsonscan_level lv[] = {{keys, 3, sp, 1},
					    {rkeys, 4, rp, 0}};
	if (jsonscan_levels(data, len, lv, 2) < 0 || sp[0].len || sp[2].len)
		return NULL;
	struct instance_answer a = {sp[1], rp[0], rp[1], rp[2], rp[3]};
	return stamp_answer_scanned(r, data, &a, out_len);
}
