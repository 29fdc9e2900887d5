/* A modern client's answers as stamp.c stamps them, parsed and as text:
 * the cache hints (ttlMs, cacheScope) on the cacheable methods' results
 * only, never on an input_required result or a retry's (SEP-2549); a
 * 2026-07-28 server's own hints kept, its scope made private when the
 * answer depends on the client's space. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "modern/modern_int.h"

struct ts {
	struct modern_req r;
	struct modern_space sp;
};

/* A request of method (params as JSON text) answered now; space: the
 * hidden session's space, or NULL. */
static void ts_init(struct ts *t, const char *method, const char *params,
		    const char *space)
{
	memset(t, 0, sizeof *t);
	t->sp.space = space ? strdup(space) : NULL;
	t->r.sp = &t->sp;
	t->r.method = strdup(method);
	t->r.client_id = json_integer(7);
	t->r.msg = json_pack("{s:s,s:i,s:s,s:o}", "jsonrpc", "2.0", "id", 7,
			     "method", method, "params",
			     json_loads(params, 0, NULL));
}

static void ts_fini(struct ts *t)
{
	free(t->sp.space);
	free(t->r.method);
	json_decref(t->r.client_id);
	json_decref(t->r.msg);
}

/* The result of the answer stamped (parsed path), new reference. */
static json_t *ts_stamp(struct ts *t, const char *answer)
{
	json_t *msg = json_loads(answer, 0, NULL);
	cr_assert_not_null(msg);
	json_t *out = stamp_answer(&t->r, msg);
	json_decref(msg);
	json_t *result = json_incref(json_object_get(out, "result"));
	json_decref(out);
	return result;
}

/* The same through the text path; NULL when it leaves the answer to the
 * parsed path. */
static json_t *ts_stamp_text(struct ts *t, const char *answer)
{
	size_t n = 0;
	char *text = stamp_answer_text(&t->r, answer, strlen(answer), &n);
	if (text == NULL)
		return NULL;
	json_t *out = json_loadb(text, n, 0, NULL);
	free(text);
	cr_assert_not_null(out, "the text path wrote invalid JSON");
	json_t *result = json_incref(json_object_get(out, "result"));
	json_decref(out);
	return result;
}

static const char *scope_of(json_t *result)
{
	return json_string_value(json_object_get(result, "cacheScope"));
}

Test(stamp, list_gets_hints_public_without_space)
{
	struct ts t;
	ts_init(&t, "tools/list", "{}", NULL);
	const char *a =
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[]}}";
	json_t *res = ts_stamp(&t, a);
	cr_assert_eq(json_integer_value(json_object_get(res, "ttlMs")), 0);
	cr_assert(json_is_integer(json_object_get(res, "ttlMs")));
	cr_assert_str_eq(scope_of(res), "public");
	json_decref(res);
	res = ts_stamp_text(&t, a);
	cr_assert_not_null(res);
	cr_assert(json_is_integer(json_object_get(res, "ttlMs")));
	cr_assert_str_eq(scope_of(res), "public");
	json_decref(res);
	ts_fini(&t);
}

Test(stamp, list_in_a_space_is_private)
{
	struct ts t;
	ts_init(&t, "prompts/list", "{}", "/home/u/proj");
	const char *a =
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"prompts\":[]}}";
	json_t *res = ts_stamp(&t, a);
	cr_assert_str_eq(scope_of(res), "private");
	json_decref(res);
	res = ts_stamp_text(&t, a);
	cr_assert_str_eq(scope_of(res), "private");
	json_decref(res);
	ts_fini(&t);
}

/* A call's result is not cacheable: no hints. */
Test(stamp, call_gets_no_hints)
{
	struct ts t;
	ts_init(&t, "tools/call", "{\"name\":\"x\"}", NULL);
	const char *a =
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[]}}";
	json_t *res = ts_stamp(&t, a);
	cr_assert_null(json_object_get(res, "ttlMs"));
	cr_assert_null(json_object_get(res, "cacheScope"));
	cr_assert_str_eq(json_string_value(json_object_get(res, "resultType")),
			 "complete");
	json_decref(res);
	res = ts_stamp_text(&t, a);
	cr_assert_null(json_object_get(res, "ttlMs"));
	json_decref(res);
	ts_fini(&t);
}

/* A 2026-07-28 server answers a resources/read input_required (passed to
 * the modern client untouched): the revision forbids hints on it, and a
 * server's own are taken out. */
Test(stamp, input_required_gets_no_hints)
{
	struct ts t;
	ts_init(&t, "resources/read", "{\"uri\":\"test://a\"}", NULL);
	const char *a = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{"
			"\"resultType\":\"input_required\",\"inputRequests\":"
			"{\"k\":{\"method\":\"roots/list\",\"params\":{}}},"
			"\"requestState\":\"s\"}}";
	json_t *res = ts_stamp(&t, a);
	cr_assert_null(json_object_get(res, "ttlMs"));
	cr_assert_null(json_object_get(res, "cacheScope"));
	cr_assert_str_eq(json_string_value(json_object_get(res, "resultType")),
			 "input_required");
	json_decref(res);
	res = ts_stamp_text(&t, a);
	cr_assert_not_null(res);
	cr_assert_null(json_object_get(res, "ttlMs"));
	cr_assert_null(json_object_get(res, "cacheScope"));
	json_decref(res);
	const char *own = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{"
			  "\"resultType\":\"input_required\",\"ttlMs\":5000,"
			  "\"cacheScope\":\"public\",\"inputRequests\":{}}}";
	cr_assert_null(ts_stamp_text(&t, own));
	res = ts_stamp(&t, own);
	cr_assert_null(json_object_get(res, "ttlMs"));
	cr_assert_null(json_object_get(res, "cacheScope"));
	json_decref(res);
	ts_fini(&t);
}

/* The retry of an input_required resources/read (it carries the state):
 * its complete result is the call's, and takes no hints. */
Test(stamp, retry_gets_no_hints)
{
	struct ts t;
	ts_init(&t, "resources/read",
		"{\"uri\":\"test://a\",\"requestState\":\"s\","
		"\"inputResponses\":{}}",
		NULL);
	const char *a = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{"
			"\"contents\":[],\"ttlMs\":9000,\"cacheScope\":"
			"\"public\"}}";
	json_t *res = ts_stamp(&t, a);
	cr_assert_null(json_object_get(res, "ttlMs"));
	cr_assert_null(json_object_get(res, "cacheScope"));
	json_decref(res);
	ts_fini(&t);
	/* A call the bridge carried through rounds: the same. */
	ts_init(&t, "resources/read", "{\"uri\":\"test://a\"}", NULL);
	t.r.rounds = 1;
	const char *b = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{"
			"\"contents\":[]}}";
	res = ts_stamp(&t, b);
	cr_assert_null(json_object_get(res, "ttlMs"));
	json_decref(res);
	res = ts_stamp_text(&t, b);
	cr_assert_null(json_object_get(res, "ttlMs"));
	json_decref(res);
	ts_fini(&t);
}

/* A 2026-07-28 server's own hints on a read routed to it: its ttlMs is
 * its promise and is kept; its public scope is private in a space (the
 * space decides which server answers), and its private scope stays. */
Test(stamp, server_hints_pass_through)
{
	struct ts t;
	ts_init(&t, "resources/read", "{\"uri\":\"test://a\"}", NULL);
	const char *pub = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{"
			  "\"contents\":[],\"ttlMs\":60000,\"cacheScope\":"
			  "\"public\"}}";
	const char *priv = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{"
			   "\"contents\":[],\"ttlMs\":1500,\"cacheScope\":"
			   "\"private\"}}";
	const char *bad = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{"
			  "\"contents\":[],\"ttlMs\":-4,\"cacheScope\":"
			  "\"shared\"}}";
	cr_assert_null(ts_stamp_text(&t, pub));
	json_t *res = ts_stamp(&t, pub);
	cr_assert_eq(json_integer_value(json_object_get(res, "ttlMs")), 60000);
	cr_assert_str_eq(scope_of(res), "public");
	json_decref(res);
	res = ts_stamp(&t, priv);
	cr_assert_eq(json_integer_value(json_object_get(res, "ttlMs")), 1500);
	cr_assert_str_eq(scope_of(res), "private");
	json_decref(res);
	/* Not the revision's values: what is known to be true instead. */
	res = ts_stamp(&t, bad);
	cr_assert_eq(json_integer_value(json_object_get(res, "ttlMs")), 0);
	cr_assert(json_is_integer(json_object_get(res, "ttlMs")));
	cr_assert_str_eq(scope_of(res), "private");
	json_decref(res);
	ts_fini(&t);
	ts_init(&t, "resources/read", "{\"uri\":\"test://a\"}", "/srv/p");
	res = ts_stamp(&t, pub);
	cr_assert_eq(json_integer_value(json_object_get(res, "ttlMs")), 60000);
	cr_assert_str_eq(scope_of(res), "private");
	json_decref(res);
	ts_fini(&t);
}
