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

/* Whether r's result gets the cache hints: a cacheable method's, and
 * not a retry's (its answer is the call's, not the list's). */
static bool stamp_hints_due(struct modern_req *r)
{
	return stamp_cacheable(r->method) && r->rounds == 0 &&
	       json_object_get(jr_params(r->msg), "requestState") == NULL;
}

/* The revision's fields on a result: resultType, the cache hints where
 * they are due (private when the answer depends on the client's space),
 * and serverInfo in _meta. result is changed (a copy of the caller's). */
static void stamp_result(struct modern_req *r, json_t *result)
{
	if (json_object_get(result, "resultType") == NULL)
		json_object_set_new(result, "resultType",
				    json_string("complete"));
	if (stamp_hints_due(r)) {
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

/* The session's answer as text (a result, the session's id on it)
 * stamped as stamp_answer stamps it, without a parse or a dump: the
 * client's id, and the fields the result lacks written in at the start
 * of the result object and of its _meta. NULL when the text is anything
 * else (an error, a server's message) or the result's _meta is not an
 * object or names serverInfo already: stamp_answer takes those. A call's
 * answer is the hot path of every modern client, and jansson would cost
 * more than everything else mcpvisor does for it. */
char *stamp_answer_text(struct modern_req *r, const char *data, size_t len,
			size_t *out_len)
{
	static const char *const keys[] = {"method", "result", "error"};
	static const char *const rkeys[] = {"resultType", "ttlMs", "cacheScope",
					    "_meta"};
	static const char *const mkeys[] = {META_SERVER_INFO};
	struct jsonscan_span sp[3], rp[4], mp[1];
	/* One pass over the answer, its result and the result's _meta. */
	const struct jsonscan_level lv[] = {
		{keys, 3, sp, 1}, {rkeys, 4, rp, 3}, {mkeys, 1, mp, 0}};
	if (jsonscan_levels(data, len, lv, 3) < 0 || sp[0].len || sp[2].len ||
	    sp[1].len == 0 || data[sp[1].off] != '{')
		return NULL;
	const char *res = data + sp[1].off;
	size_t rlen = sp[1].len;
	/* rp's offsets are made relative to the result. */
	for (size_t k = 0; k < 4; k++)
		if (rp[k].len)
			rp[k].off -= sp[1].off;
	const char *meta = rp[3].len ? res + rp[3].off : NULL;
	if (meta && (*meta != '{' || mp[0].len))
		return NULL;
	const char *si_text = stamp_server_info_text(r);
	struct buf b;
	buf_init(&b);
	buf_reserve(&b, len + 160 + strlen(si_text));
	buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
	stamp_put_id(&b, r->client_id);
	buf_puts(&b, ",\"result\":{");
	/* Each member written in ends with a comma, for the result's own. */
	if (rp[0].len == 0)
		buf_puts(&b, "\"resultType\":\"complete\",");
	if (stamp_hints_due(r)) {
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
	if (stamp_empty_object(res, rlen)) {
		b.len--; /* the last comma: resultType at least went in */
		buf_puts(&b, "}");
	} else if (meta == NULL) {
		buf_append(&b, res + 1, rlen - 1);
	} else {
		size_t in = rp[3].off + 1; /* just inside _meta's brace */
		buf_append(&b, res + 1, in - 1);
		buf_puts(&b, "\"" META_SERVER_INFO "\":");
		buf_puts(&b, si_text);
		if (!stamp_empty_object(meta, rp[3].len))
			buf_puts(&b, ",");
		buf_append(&b, res + in, rlen - in);
	}
	buf_puts(&b, "}");
	*out_len = b.len;
	return buf_steal(&b);
}
