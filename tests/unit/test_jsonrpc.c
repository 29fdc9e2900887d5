/* JSON-RPC message classification, builders and MCP version negotiation. */
#include <criterion/criterion.h>
#include <string.h>

#include "jsonrpc/jsonrpc.h"

static enum jr_kind classify(const char *text)
{
	json_t *m = json_loads(text, 0, NULL);
	cr_assert_not_null(m, "test JSON must parse: %s", text);
	const char *why = NULL;
	enum jr_kind k = jr_classify(m, &why);
	if (k == JR_INVALID)
		cr_assert_not_null(why);
	json_decref(m);
	return k;
}

Test(jsonrpc, kinds)
{
	cr_assert_eq(
		classify("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"),
		JR_REQUEST);
	cr_assert_eq(
		classify("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"x\","
			 "\"params\":{}}"),
		JR_REQUEST);
	cr_assert_eq(classify("{\"jsonrpc\":\"2.0\",\"method\":\"n\"}"),
		     JR_NOTIFICATION);
	cr_assert_eq(classify("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"),
		     JR_RESPONSE);
	cr_assert_eq(classify("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":"
			      "{\"code\":-32700,\"message\":\"x\"}}"),
		     JR_RESPONSE);
}

Test(jsonrpc, malformed_messages)
{
	const char *bad[] = {
		"[]",
		"{}",
		"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"x\"}",
		"{\"jsonrpc\":2,\"id\":1,\"method\":\"x\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"x\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"x\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"x\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"x\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":3}",
		"{\"jsonrpc\":\"2.0\",\"id\":1}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"x\"}}",
		"{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_assert_eq(classify(bad[i]), JR_INVALID, "%s", bad[i]);
	const char *why;
	cr_assert_eq(jr_classify(NULL, &why), JR_INVALID);
}

Test(jsonrpc, oversize_method_is_invalid)
{
	char method[JR_MAX_METHOD + 2];
	memset(method, 'm', sizeof method - 1);
	method[sizeof method - 1] = '\0';
	json_t *m = json_pack("{s:s,s:i,s:s}", "jsonrpc", "2.0", "id", 1,
			      "method", method);
	cr_assert_eq(jr_classify(m, NULL), JR_INVALID);
	json_decref(m);
}

Test(jsonrpc, builders_round_trip)
{
	json_t *id = json_integer(7);
	json_t *r = jr_result(id, json_pack("{s:i}", "x", 1));
	cr_assert_eq(jr_classify(r, NULL), JR_RESPONSE);
	cr_assert_eq(json_integer_value(jr_id(r)), 7);
	json_t *e = jr_error(NULL, JR_METHOD_NOT_FOUND, "nope", NULL);
	cr_assert_eq(jr_classify(e, NULL), JR_RESPONSE);
	cr_assert(json_is_null(jr_id(e)));
	cr_assert_eq(json_integer_value(json_object_get(
			     json_object_get(e, "error"), "code")),
		     -32601);
	json_t *q = jr_request(json_string("a"), "tools/list", NULL);
	cr_assert_eq(jr_classify(q, NULL), JR_REQUEST);
	json_t *n = jr_notification("notifications/initialized", NULL);
	cr_assert_eq(jr_classify(n, NULL), JR_NOTIFICATION);
	json_decref(id);
	json_decref(r);
	json_decref(e);
	json_decref(q);
	json_decref(n);
}

Test(jsonrpc, idempotent_methods)
{
	cr_assert(jr_method_is_idempotent("tools/list"));
	cr_assert(jr_method_is_idempotent("resources/read"));
	cr_assert(jr_method_is_idempotent("ping"));
	cr_assert(!jr_method_is_idempotent("tools/call"));
	cr_assert(!jr_method_is_idempotent("resources/subscribe"));
	cr_assert(!jr_method_is_idempotent("anything/else"));
}

Test(jsonrpc, version_negotiation)
{
	cr_assert_str_eq(mcp_version_negotiate("2025-06-18"), "2025-06-18");
	cr_assert_str_eq(mcp_version_negotiate("2024-11-05"), "2024-11-05");
	cr_assert_str_eq(mcp_version_negotiate("2099-01-01"), "2025-11-25");
	cr_assert_str_eq(mcp_version_negotiate(NULL), "2025-11-25");
	cr_assert(mcp_version_supported("2025-03-26"));
	cr_assert(!mcp_version_supported("2025-13-01"));
	cr_assert(!mcp_version_supported(NULL));
}
