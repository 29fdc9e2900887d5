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
#include "util/jsonscan.h"

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
	free((char *)t->r.method);
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

/* ---- a text call's answer: one scan, one splice ---- */

/* What the instance's one scan of a server's answer line finds
 * (instance_answer): the result, and its members the revision sets. */
static struct instance_answer ts_scan(const char *line)
{
	static const char *const keys[] = {"result"};
	static const char *const rkeys[] = {"resultType", "ttlMs", "cacheScope",
					    "_meta"};
	struct jsonscan_span sp[1], rp[4];
	const struct jsonscan_level lv[] = {{keys, 1, sp, 0},
					    {rkeys, 4, rp, 0}};
	cr_assert_eq(jsonscan_levels(line, strlen(line), lv, 2), 0, "%s", line);
	struct instance_answer a = {sp[0], rp[0], rp[1], rp[2], rp[3]};
	return a;
}

/* The session's form of a server's answer line: its own id (9) in the
 * server's place, the result as it came (what session_call_text_cb
 * sends when no shaper takes the answer). */
static char *ts_session_form(const char *line)
{
	struct instance_answer a = ts_scan(line);
	char *out;
	if (asprintf(&out, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":%.*s}",
		     (int)a.result.len, line + a.result.off) < 0)
		abort();
	return out;
}

/* The server's answer line stamped in one pass (stamp_answer_scanned)
 * is byte for byte what stamping the session's form of it gave (the two
 * passes it replaced), and what stamp_answer makes of it parsed. NULL
 * when both leave it to the parsed path. */
static char *ts_one_pass(struct ts *t, const char *line)
{
	struct instance_answer a = ts_scan(line);
	size_t n1 = 0, n2 = 0;
	char *one = stamp_answer_scanned(&t->r, line, &a, &n1);
	char *form = ts_session_form(line);
	char *two = stamp_answer_text(&t->r, form, strlen(form), &n2);
	free(form);
	if (one == NULL || two == NULL) {
		cr_assert(one == NULL && two == NULL,
			  "%s: the paths disagree on taking it", line);
		return NULL;
	}
	cr_assert_eq(n1, strlen(one));
	cr_assert_str_eq(one, two, "%s", line);
	free(two);
	json_t *msg = json_loads(line, 0, NULL);
	json_t *parsed = stamp_answer(&t->r, msg);
	json_t *got = json_loadb(one, n1, 0, NULL);
	cr_assert_not_null(got, "invalid JSON: %s", one);
	cr_assert(json_equal(got, parsed), "%s", one);
	json_decref(got);
	json_decref(parsed);
	json_decref(msg);
	return one;
}

#define TS_SI                                                                  \
	"\"io.modelcontextprotocol/serverInfo\":"                              \
	"{\"name\":\"mcpvisor\",\"version\":\"0\"}"

Test(stamp, one_pass_bytes)
{
	static const struct {
		const char *line, *want;
	} cases[] = {
		/* A plain call result: resultType and _meta go first. */
		{"{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{\"content\":"
		 "[{\"type\":\"text\",\"text\":\"hi\"}]}}",
		 "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"resultType\":"
		 "\"complete\",\"_meta\":{" TS_SI "},\"content\":[{\"type\":"
		 "\"text\",\"text\":\"hi\"}]}}"},
		/* The id last, and text that looks like members. */
		{"{\"result\":{\"content\":[{\"type\":\"text\",\"text\":"
		 "\"\\\"_meta\\\":{\"}]},\"jsonrpc\":\"2.0\",\"id\":42}",
		 "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"resultType\":"
		 "\"complete\",\"_meta\":{" TS_SI "},\"content\":[{\"type\":"
		 "\"text\",\"text\":\"\\\"_meta\\\":{\"}]}}"},
		/* An empty result. */
		{"{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{ }}",
		 "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"resultType\":"
		 "\"complete\",\"_meta\":{" TS_SI "}}}"},
		/* _meta of its own: serverInfo goes in first inside it. */
		{"{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{\"content\":[],"
		 "\"_meta\":{\"a\":1}}}",
		 "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"resultType\":"
		 "\"complete\",\"content\":[],\"_meta\":{" TS_SI ",\"a\":1}}}"},
		{"{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{\"_meta\":{ },"
		 "\"content\":[]}}",
		 "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"resultType\":"
		 "\"complete\",\"_meta\":{" TS_SI " },\"content\":[]}}"},
		/* A resultType of its own stays, and no other goes in. */
		{"{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{\"resultType\":"
		 "\"complete\",\"content\":[]}}",
		 "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"_meta\":{" TS_SI
		 "},\"resultType\":\"complete\",\"content\":[]}}"},
		/* Whitespace anywhere. */
		{" { \"jsonrpc\" : \"2.0\" , \"id\" : 42 , \"result\" : "
		 "{ \"content\" : [ ] , \"_meta\" : { \"b\" : true } } } ",
		 "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"resultType\":"
		 "\"complete\", \"content\" : [ ] , \"_meta\" : {" TS_SI
		 ", \"b\" : true } }}"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct ts t;
		ts_init(&t, "tools/call", "{\"name\":\"x\"}", NULL);
		char *got = ts_one_pass(&t, cases[i].line);
		cr_assert_not_null(got, "%s", cases[i].line);
		cr_assert_str_eq(got, cases[i].want);
		free(got);
		ts_fini(&t);
	}
}

/* The client's id in every form an id takes, in place of the server's
 * (42) and the session's (9). */
Test(stamp, one_pass_client_ids)
{
	static const char *const ids[] = {"0",	     "7",
					  "-3",	     "9007199254740993",
					  "\"abc\"", "\"a\\\"b\\u00e9\"",
					  ""};
	const char *line = "{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":"
			   "{\"content\":[]}}";
	for (size_t i = 0; ids[i][0]; i++) {
		struct ts t;
		ts_init(&t, "tools/call", "{\"name\":\"x\"}", NULL);
		json_decref(t.r.client_id);
		t.r.client_id = json_loads(ids[i], JSON_DECODE_ANY, NULL);
		char *got = ts_one_pass(&t, line);
		char *id = json_dumps(t.r.client_id,
				      JSON_ENCODE_ANY | JSON_COMPACT);
		char *want;
		if (asprintf(&want,
			     "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{"
			     "\"resultType\":\"complete\",\"_meta\":{" TS_SI
			     "},\"content\":[]}}",
			     id) < 0)
			abort();
		cr_assert_str_eq(got, want);
		free(want);
		free(id);
		free(got);
		ts_fini(&t);
	}
}

/* The hints where due (a list, in a space or not), none on an
 * input_required result; and what the splice leaves to the parsed path
 * (its own hints, serverInfo in _meta already, a result that is not an
 * object) it leaves in both forms. */
Test(stamp, one_pass_hints_and_refusals)
{
	struct ts t;
	ts_init(&t, "tools/list", "{}", "/home/u/p");
	char *got = ts_one_pass(&t, "{\"jsonrpc\":\"2.0\",\"id\":42,"
				    "\"result\":{\"tools\":[]}}");
	cr_assert_str_eq(got, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{"
			      "\"resultType\":\"complete\",\"ttlMs\":0,"
			      "\"cacheScope\":\"private\",\"_meta\":{" TS_SI
			      "},\"tools\":[]}}");
	free(got);
	ts_fini(&t);
	ts_init(&t, "resources/read", "{\"uri\":\"test://a\"}", NULL);
	got = ts_one_pass(&t, "{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{"
			      "\"contents\":[]}}");
	cr_assert(strstr(got, "\"ttlMs\":0,\"cacheScope\":\"public\","));
	free(got);
	got = ts_one_pass(&t, "{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{"
			      "\"resultType\":\"input_required\","
			      "\"inputRequests\":{},\"requestState\":\"s\"}}");
	cr_assert_str_eq(got, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{"
			      "\"_meta\":{" TS_SI "},\"resultType\":"
			      "\"input_required\",\"inputRequests\":{},"
			      "\"requestState\":\"s\"}}");
	free(got);
	static const char *const left[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{\"contents\":[],"
		"\"ttlMs\":5}}",
		"{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{\"contents\":[],"
		"\"cacheScope\":\"public\"}}",
		"{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{\"_meta\":{\"x\":1,"
		"\"io.modelcontextprotocol/serverInfo\":{}}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{\"_meta\":[]}}",
		"{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":[1]}",
		NULL};
	for (size_t i = 0; left[i]; i++)
		cr_assert_null(ts_one_pass(&t, left[i]), "%s", left[i]);
	ts_fini(&t);
}

/* An error answer is never the splice's (the parsed path turns -32002
 * into -32602). */
Test(stamp, text_path_leaves_errors)
{
	struct ts t;
	ts_init(&t, "resources/read", "{\"uri\":\"test://a\"}", NULL);
	const char *e = "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":"
			"-32002,\"message\":\"nope\"}}";
	size_t n = 0;
	cr_assert_null(stamp_answer_text(&t.r, e, strlen(e), &n));
	ts_fini(&t);
}
