/* The input_required bridge (modern/bridge.c) keeping a 2025 server's
 * mid-call request for its modern client: a request without params is
 * kept with an empty params object, and nothing of it leaks (ASan's leak
 * check ends the test's process with an error when it does). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "modern/modern_int.h"

/* A call parked for its client's retry: a server request that comes now
 * waits for the next round (no session, no timer is touched). */
static void parked(struct modern_req *r)
{
	memset(r, 0, sizeof *r);
	r->state = MREQ_PARKED;
	r->pending = json_object();
	r->method = "tools/call";
}

Test(bridge, server_request_without_params_is_kept_and_freed)
{
	struct modern_req r;
	parked(&r);
	json_t *msg = json_loads("{\"jsonrpc\":\"2.0\",\"id\":\"r1\","
				 "\"method\":\"roots/list\"}",
				 0, NULL);
	bridge_server_request(&r, msg);
	json_decref(msg);
	cr_assert_eq(json_object_size(r.pending), 1);
	json_t *kept = json_object_get(r.pending, "input-1");
	cr_assert_not_null(kept);
	cr_assert_str_eq(json_string_value(json_object_get(kept, "method")),
			 "roots/list");
	json_t *params = json_object_get(kept, "params");
	cr_assert(json_is_object(params) && json_object_size(params) == 0);
	/* The only reference is the pending set's. */
	cr_assert_eq(params->refcount, 1);
	json_decref(r.pending);
}

Test(bridge, server_request_params_are_shared_not_copied)
{
	struct modern_req r;
	parked(&r);
	json_t *msg = json_loads(
		"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":"
		"\"elicitation/create\",\"params\":{\"message\":\"m\"}}",
		0, NULL);
	bridge_server_request(&r, msg);
	json_t *params = json_object_get(msg, "params");
	cr_assert_eq(json_object_get(json_object_get(r.pending, "input-1"),
				     "params"),
		     params);
	cr_assert_eq(params->refcount, 2);
	json_decref(msg);
	json_decref(r.pending);
}
