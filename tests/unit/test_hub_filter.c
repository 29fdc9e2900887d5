/*
 * Filters in a session over the demo server: the lists leave out what they
 * drop, a call of a filtered tool gets the answer of a missing one, and a
 * server's update of a filtered resource reaches no client.
 */
#include "hub_fixture.h"
#include "pool/pool.h"
#include "session/hub_int.h"
#include "session/session_int.h"

static void setup(void)
{
	char *text;
	if (asprintf(&text,
		     "{\"mcpServers\":{\"shared\":{\"command\":\"%s\","
		     "\"scope\":\"app\",\"tools\":{\"deny\":[\"add\"]},"
		     "\"resources\":{\"deny\":[\"demo://item/*\"]}}}}",
		     fx_demo_bin()) < 0)
		abort();
	fx_hub_open(text, true);
	free(text);
}

TestSuite(hub_filter, .init = setup, .fini = fx_teardown, .timeout = 30);

static json_t *ask(struct session *s, const char *text)
{
	struct fx_req *r = fx_send(s, text);
	cr_assert(fx_run_until(fx_answered, r), "%s answered", text);
	json_t *resp = json_incref(fx_response(r));
	fx_req_free(r);
	return resp;
}

static void first_inst_cb(void *arg, struct instance *inst)
{
	struct instance **out = arg;
	if (*out == NULL)
		*out = inst;
}

Test(hub_filter, lists_and_calls_leave_out_a_filtered_tool)
{
	struct session *s = fx_open(NULL);
	json_t *list = ask(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
			      "\"tools/list\"}");
	json_t *tools =
		json_object_get(json_object_get(list, "result"), "tools");
	cr_assert_gt(json_array_size(tools), 5);
	size_t i;
	json_t *t;
	json_array_foreach(tools, i, t) cr_assert_str_neq(
		json_string_value(json_object_get(t, "name")), "shared__add");
	json_t *a = ask(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
			   "\"tools/call\",\"params\":{\"name\":"
			   "\"shared__add\",\"arguments\":{\"a\":1,\"b\":2}}}");
	json_t *b = ask(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
			   "\"tools/call\",\"params\":{\"name\":"
			   "\"shared__zzz\",\"arguments\":{\"a\":1,\"b\":2}}}");
	char *ta = json_dumps(a, JSON_COMPACT);
	char *tb = json_dumps(b, JSON_COMPACT);
	char *at = strstr(tb, "shared__zzz");
	cr_assert_not_null(at);
	memcpy(at, "shared__add", 11); /* the same length */
	cr_assert_str_eq(ta, tb);
	cr_assert_not_null(strstr(ta, "Unknown tool \\\"shared__add\\\""), "%s",
			   ta);
	free(ta);
	free(tb);
	json_decref(a);
	json_decref(b);
	json_decref(list);
	hub_session_end(fx_hub, s);
}

Test(hub_filter, an_update_of_a_filtered_resource_reaches_no_client)
{
	struct session *s = fx_open(NULL);
	struct fx_capture stream = {json_array(), 0};
	struct exchange *ex = exchange_new(&fx_ops, &stream, 0);
	session_set_stream(s, ex);
	/* Listing starts the shared instance, which the session uses. */
	json_decref(ask(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
			   "\"resources/list\"}"));
	struct instance *inst = NULL;
	pool_foreach(hub_pool(fx_hub), first_inst_cb, &inst);
	cr_assert_not_null(inst);
	const char *uris[] = {"demo://item/7", "demo://readme"};
	for (size_t k = 0; k < 2; k++) {
		json_t *msg =
			json_pack("{s:s,s:s,s:{s:s}}", "jsonrpc", "2.0",
				  "method", "notifications/resources/updated",
				  "params", "uri", uris[k]);
		hub_instance_cbs.on_notification(fx_hub, inst, msg, NULL);
		json_decref(msg);
	}
	cr_assert_eq(json_array_size(stream.msgs), 1,
		     "only the kept resource's update");
	json_t *got = json_array_get(stream.msgs, 0);
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(got, "params"), "uri")),
			 "demo://readme");
	hub_session_end(fx_hub, s);
	exchange_unref(ex);
	json_decref(stream.msgs);
}
