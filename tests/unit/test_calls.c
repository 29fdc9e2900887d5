/*
 * Routing of what servers send back: a server's request reaches only the
 * session whose call caused it (or fails back to the server), app servers
 * get no roots, and progress comes back to its own call under the client's
 * token while servers only ever see opaque ones. Fake clock, real loop,
 * the demo fixture server.
 */
#include "hub_fixture.h"
#include "session/tokens.h"

TestSuite(calls, .init = fx_setup, .fini = fx_teardown, .timeout = 30);

static char *tool_call(int id, const char *tool, const char *args)
{
	char *t;
	if (asprintf(&t,
		     "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
		     "\"params\":{\"name\":\"%s\",\"arguments\":%s}}",
		     id, tool, args) < 0)
		abort();
	return t;
}

/* Calls tool in s and waits for its answer; asserts no server request
 * came on its stream. */
static struct fx_req *call_and_wait(struct session *s, const char *tool,
				    const char *args)
{
	char *t = tool_call(7, tool, args);
	struct fx_req *r = fx_send(s, t);
	free(t);
	cr_assert(fx_run_until(fx_answered, r), "%s answered", tool);
	return r;
}

/* A client with sampling and roots that listens on a standing stream. */
struct rich {
	struct session *s;
	struct fx_capture stream;
	struct exchange *ex;
};

static void rich_open(struct rich *a)
{
	a->s = fx_open("{\"sampling\":{},\"roots\":{\"listChanged\":true}}");
	a->stream.msgs = json_array();
	a->ex = exchange_new(&fx_ops, &a->stream, 0);
	session_set_stream(a->s, a->ex);
}

static void rich_close(struct rich *a)
{
	exchange_unref(a->ex);
	json_decref(a->stream.msgs);
}

/* P3: a plain client's call on a shared server asks for sampling and
 * roots; the rich client connected beside it is never asked. */
Test(calls, server_requests_never_reach_another_session)
{
	struct rich a;
	rich_open(&a);
	/* A uses the shared instance too. */
	fx_req_free(call_and_wait(a.s, "shared__echo", "{\"text\":\"hi\"}"));
	struct session *b = fx_open(NULL);

	struct fx_req *r =
		call_and_wait(b, "shared__sample", "{\"prompt\":\"B asks\"}");
	json_t *resp = fx_response(r);
	cr_assert(json_is_true(json_object_get(json_object_get(resp, "result"),
					       "isError")),
		  "the server got an error back");
	cr_assert(strstr(fx_text(resp), "does not support"), "%s",
		  fx_text(resp));
	fx_req_free(r);

	r = call_and_wait(b, "shared__roots", "{}");
	cr_assert_str_eq(fx_text(fx_response(r)), "[]");
	fx_req_free(r);
	cr_assert_eq(json_array_size(a.stream.msgs), 0,
		     "A was asked nothing: %s",
		     json_dumps(a.stream.msgs, JSON_COMPACT));
	rich_close(&a);
}

/* app servers are everyone's: even a client with roots is not asked. */
Test(calls, app_servers_get_no_roots)
{
	struct rich a;
	rich_open(&a);
	struct fx_req *r = call_and_wait(a.s, "shared__roots", "{}");
	cr_assert_null(fx_server_request(r));
	cr_assert_str_eq(fx_text(fx_response(r)), "[]");
	fx_req_free(r);
	cr_assert_eq(json_array_size(a.stream.msgs), 0);
	rich_close(&a);
}

static bool fx_asked(void *arg)
{
	return fx_server_request(arg) != NULL;
}

/* The session whose call asks is asked, on that call's stream, and its
 * answer goes back to the server. */
Test(calls, the_causing_session_is_asked)
{
	struct rich a;
	rich_open(&a);
	char *t = tool_call(3, "demo__roots", "{}");
	struct fx_req *r = fx_send(a.s, t);
	free(t);
	cr_assert(fx_run_until(fx_asked, r));
	json_t *q = fx_server_request(r);
	cr_assert_str_eq(json_string_value(json_object_get(q, "method")),
			 "roots/list");
	char *answer;
	if (asprintf(&answer,
		     "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"roots\":"
		     "[{\"uri\":\"file:///projA\"}]}}",
		     json_string_value(json_object_get(q, "id"))) < 0)
		abort();
	json_t *m = json_loads(answer, 0, NULL);
	free(answer);
	session_handle(a.s, m, NULL);
	json_decref(m);
	cr_assert(fx_run_until(fx_answered, r));
	cr_assert(strstr(fx_text(fx_response(r)), "file:///projA"));
	fx_req_free(r);
	cr_assert_eq(json_array_size(a.stream.msgs), 0);
	rich_close(&a);
}

/* Progress tokens: unique, opaque, keyed per runtime, dropped for good. */
Test(calls, progress_tokens_are_opaque_and_unique)
{
	struct tokens t, other;
	tokens_init(&t);
	tokens_init(&other);
	enum { N = 5000 };
	static char seen[N][TOKENS_LEN + 1];
	int fake;
	for (int i = 0; i < N; i++) {
		uint64_t tok = tokens_add(&t, &fake);
		cr_assert_neq(tok, 0);
		tokens_format(tok, seen[i]);
		cr_assert_eq(strlen(seen[i]), TOKENS_LEN);
		cr_assert_eq(tokens_find(&t, seen[i]), &fake);
		for (int k = i - 1; k >= 0 && k >= i - 50; k--)
			cr_assert_str_neq(seen[i], seen[k]);
		tokens_drop(&t, tok, &fake);
		cr_assert_null(tokens_find(&t, seen[i]), "dropped");
	}
	char a[TOKENS_LEN + 1], b[TOKENS_LEN + 1];
	uint64_t ta = tokens_add(&t, &fake), tb = tokens_add(&other, &fake);
	tokens_format(ta, a);
	tokens_format(tb, b);
	cr_assert_str_neq(a, b, "each runtime has its own key");
	cr_assert_null(tokens_find(&t, b));
	cr_assert_null(tokens_find(&t, "mcpv-0123456789abcdef-1"));
	cr_assert_null(tokens_find(&t, "mcpv-0123456789ABCDEF"));
	cr_assert_null(tokens_find(&t, NULL));
	tokens_free(&t);
	tokens_free(&other);
}

static int count_progress(struct fx_req *r, const char *token)
{
	int n = 0;
	size_t i;
	json_t *m;
	json_array_foreach(r->cap.msgs, i, m)
	{
		const char *meth =
			json_string_value(json_object_get(m, "method"));
		if (meth && strcmp(meth, "notifications/progress") == 0) {
			const char *t = json_string_value(json_object_get(
				json_object_get(m, "params"), "progressToken"));
			cr_assert_str_eq(t, token);
			n++;
		}
	}
	return n;
}

/* Two sessions on one shared server use the same client token at once:
 * each call gets its own progress, under the client's token. */
Test(calls, progress_comes_back_to_its_own_call)
{
	struct session *a = fx_open(NULL), *b = fx_open(NULL);
	const char *text =
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
		"\"params\":{\"name\":\"shared__sleep\",\"arguments\":{\"ms\":"
		"%d},\"_meta\":{\"progressToken\":\"tok\"}}}";
	char ta[256], tb[256];
	snprintf(ta, sizeof ta, text, 350);
	snprintf(tb, sizeof tb, text, 50);
	struct fx_req *ra = fx_send(a, ta), *rb = fx_send(b, tb);
	cr_assert(fx_run_until(fx_answered, ra));
	cr_assert(fx_run_until(fx_answered, rb));
	cr_assert_geq(count_progress(ra, "tok"), 2, "A's progress");
	cr_assert_leq(count_progress(rb, "tok"), 1, "B's only");
	fx_req_free(ra);
	fx_req_free(rb);
}

/* ---- a text call's answer, shaped by its caller ---- */

struct shaped {
	int calls;
	char *result; /* the result's text, as the scan found it */
	struct instance_answer a;
	const char *reply; /* what the shaper makes; NULL: the session's */
};

static char *shape_cb(void *arg, const char *msg,
		      const struct instance_answer *a, size_t *len)
{
	struct shaped *sh = arg;
	sh->calls++;
	sh->a = *a;
	free(sh->result);
	sh->result = strndup(msg + a->result.off, a->result.len);
	if (sh->reply == NULL)
		return NULL;
	*len = strlen(sh->reply);
	return strdup(sh->reply);
}

/* A demo__echo call of s as text, shaped by sh (NULL: none), into a
 * new capturing exchange. */
static struct fx_req *text_call(struct session *s, struct shaped *sh,
				const char *text)
{
	char *params;
	if (asprintf(
		    &params,
		    "{\"name\":\"demo__echo\",\"arguments\":{\"text\":\"%s\"}}",
		    text) < 0)
		abort();
	size_t name_off = strstr(params, "\"demo__echo\"") - params;
	struct session_text_route rt;
	cr_assert(session_route_text(s, params + name_off + 1, 10, &rt));
	cr_assert_null(rt.answer, "no shaper unless the caller sets one");
	if (sh) {
		rt.answer = shape_cb;
		rt.answer_arg = sh;
	}
	struct fx_req *r = calloc(1, sizeof *r);
	r->cap.msgs = json_array();
	r->ex = exchange_new(&fx_ops, &r->cap, 1);
	json_t *id = json_integer(5);
	session_call_text(s, &rt, id, params, strlen(params), name_off, 12,
			  r->ex);
	json_decref(id);
	free(params);
	return r;
}

/* The shaper gets the server's answer with what its one scan found (the
 * result, none of the members the revision sets), and what it makes is
 * what the client gets; NULL from it gives the session's form. */
Test(calls, text_answer_goes_to_the_shaper)
{
	struct session *s = fx_open(NULL);
	/* The server runs and its tools are known: the text path takes it. */
	fx_req_free(call_and_wait(s, "demo__echo", "{\"text\":\"warm\"}"));
	struct shaped sh = {
		.reply = "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"x\":1}}"};
	struct fx_req *r = text_call(s, &sh, "hi");
	cr_assert(fx_run_until(fx_answered, r));
	cr_assert_eq(sh.calls, 1);
	json_t *res = json_loads(sh.result, 0, NULL);
	cr_assert_not_null(res, "the result span: %s", sh.result);
	cr_assert_str_eq(
		json_string_value(json_object_get(
			json_array_get(json_object_get(res, "content"), 0),
			"text")),
		"hi");
	json_decref(res);
	cr_assert_eq(sh.a.result_type.len + sh.a.ttl_ms.len +
			     sh.a.cache_scope.len + sh.a.meta.len,
		     0);
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(fx_response(r), "result"), "x")),
		     1, "the shaper's text is the answer");
	fx_req_free(r);
	sh.reply = NULL;
	r = text_call(s, &sh, "again");
	cr_assert(fx_run_until(fx_answered, r));
	cr_assert_eq(sh.calls, 2);
	cr_assert_eq(json_integer_value(json_object_get(fx_response(r), "id")),
		     5);
	cr_assert_str_eq(fx_text(fx_response(r)), "again");
	fx_req_free(r);
	free(sh.result);
}

/* The shaper's arg is its HTTP side's: once the exchange is detached
 * (the client went) it is not called. */
Test(calls, detached_text_call_is_not_shaped)
{
	struct session *s = fx_open(NULL);
	fx_req_free(call_and_wait(s, "demo__echo", "{\"text\":\"warm\"}"));
	struct shaped sh = {.reply = "{}"};
	struct fx_req *gone = text_call(s, &sh, "gone");
	exchange_detach(gone->ex);
	/* The server answers in order: once the next call is answered, the
	 * first answer came. */
	struct fx_req *r = text_call(s, NULL, "next");
	cr_assert(fx_run_until(fx_answered, r));
	cr_assert_str_eq(fx_text(fx_response(r)), "next");
	cr_assert_eq(sh.calls, 0);
	cr_assert_eq(json_array_size(gone->cap.msgs), 0);
	fx_req_free(r);
	fx_req_free(gone);
}

/* The schema of the tool a text route found is the one the name routes
 * to the general way (session_tool_schema), without a second routing. */
Test(calls, text_route_gives_the_schema)
{
	struct session *s = fx_open(NULL);
	fx_req_free(call_and_wait(s, "demo__echo", "{\"text\":\"warm\"}"));
	fx_req_free(call_and_wait(s, "shared__echo", "{\"text\":\"warm\"}"));
	static const char *const names[] = {"demo__echo", "shared__add",
					    "demo__pid", NULL};
	for (size_t i = 0; names[i]; i++) {
		struct session_text_route rt;
		cr_assert(
			session_route_text(s, names[i], strlen(names[i]), &rt));
		json_t *schema = session_route_schema(&rt);
		cr_assert_not_null(schema, "%s", names[i]);
		cr_assert_eq(schema, session_tool_schema(s, names[i]), "%s",
			     names[i]);
		free(rt.tool);
	}
	json_t *add = session_tool_schema(s, "shared__add");
	cr_assert(json_object_get(json_object_get(add, "properties"), "b"));
}
