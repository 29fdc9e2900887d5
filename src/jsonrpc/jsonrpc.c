/* JSON-RPC 2.0 message shapes and MCP protocol versions. */
#include "jsonrpc/jsonrpc.h"

#include <string.h>

const char *const mcp_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
				    "2024-11-05", NULL};

bool jr_id_valid(const json_t *id)
{
	return id && (json_is_string(id) || json_is_integer(id));
}

enum jr_kind jr_classify(const json_t *msg, const char **why)
{
	const char *dummy;
	if (why == NULL)
		why = &dummy;
	if (!json_is_object(msg)) {
		*why = "message is not a JSON object";
		return JR_INVALID;
	}
	const json_t *v = json_object_get(msg, "jsonrpc");
	if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0) {
		*why = "\"jsonrpc\" must be \"2.0\"";
		return JR_INVALID;
	}
	const json_t *method = json_object_get(msg, "method");
	const json_t *id = json_object_get(msg, "id");
	if (method) {
		if (!json_is_string(method) ||
		    json_string_length(method) == 0 ||
		    json_string_length(method) > JR_MAX_METHOD) {
			*why = "\"method\" must be a non-empty string";
			return JR_INVALID;
		}
		const json_t *params = json_object_get(msg, "params");
		if (params && !json_is_object(params) &&
		    !json_is_array(params)) {
			*why = "\"params\" must be an object";
			return JR_INVALID;
		}
		if (id == NULL)
			return JR_NOTIFICATION;
		if (!jr_id_valid(id)) {
			*why = "\"id\" must be a string or an integer";
			return JR_INVALID;
		}
		return JR_REQUEST;
	}
	const json_t *result = json_object_get(msg, "result");
	const json_t *error = json_object_get(msg, "error");
	if ((result == NULL) == (error == NULL)) {
		*why = "a message needs \"method\", \"result\" or \"error\"";
		return JR_INVALID;
	}
	if (error && (!json_is_object(error) ||
		      !json_is_integer(json_object_get(error, "code")))) {
		*why = "\"error\" must be an object with an integer code";
		return JR_INVALID;
	}
	/* An error answer to a message whose id could not be read has id
	 * null; anything else must carry a valid id. */
	if (!jr_id_valid(id) && !(error && json_is_null(id))) {
		*why = "a response needs a string or integer \"id\"";
		return JR_INVALID;
	}
	return JR_RESPONSE;
}

const char *jr_method(const json_t *msg)
{
	return json_string_value(json_object_get(msg, "method"));
}

json_t *jr_params(const json_t *msg)
{
	return json_object_get(msg, "params");
}

json_t *jr_id(const json_t *msg)
{
	return json_object_get(msg, "id");
}

json_t *jr_request(json_t *id, const char *method, json_t *params)
{
	json_t *m = json_object();
	json_object_set_new(m, "jsonrpc", json_string("2.0"));
	json_object_set_new(m, "id", id);
	json_object_set_new(m, "method", json_string(method));
	if (params)
		json_object_set_new(m, "params", params);
	return m;
}

json_t *jr_notification(const char *method, json_t *params)
{
	json_t *m = json_object();
	json_object_set_new(m, "jsonrpc", json_string("2.0"));
	json_object_set_new(m, "method", json_string(method));
	if (params)
		json_object_set_new(m, "params", params);
	return m;
}

json_t *jr_result(const json_t *id, json_t *result)
{
	json_t *m = json_object();
	json_object_set_new(m, "jsonrpc", json_string("2.0"));
	json_object_set_new(m, "id", id ? json_deep_copy(id) : json_null());
	json_object_set_new(m, "result", result ? result : json_object());
	return m;
}

json_t *jr_error(const json_t *id, int code, const char *message, json_t *data)
{
	json_t *e = json_object();
	json_object_set_new(e, "code", json_integer(code));
	json_object_set_new(e, "message", json_string(message));
	if (data)
		json_object_set_new(e, "data", data);
	json_t *m = json_object();
	json_object_set_new(m, "jsonrpc", json_string("2.0"));
	json_object_set_new(m, "id", id ? json_deep_copy(id) : json_null());
	json_object_set_new(m, "error", e);
	return m;
}

bool jr_method_is_idempotent(const char *method)
{
	static const char *const safe[] = {"initialize",
					   "ping",
					   "tools/list",
					   "prompts/list",
					   "prompts/get",
					   "resources/list",
					   "resources/read",
					   "resources/templates/list",
					   "completion/complete",
					   "server/discover",
					   NULL};
	/* The first byte first: each forwarded request asks twice, and most
	 * names then need no strcmp at all, or one. */
	for (int i = 0; safe[i]; i++)
		if (safe[i][0] == method[0] && strcmp(method, safe[i]) == 0)
			return true;
	return false;
}

bool mcp_version_supported(const char *v)
{
	if (v == NULL)
		return false;
	for (int i = 0; mcp_versions[i]; i++)
		if (strcmp(v, mcp_versions[i]) == 0)
			return true;
	return false;
}

const char *mcp_version_negotiate(const char *requested)
{
	for (int i = 0; requested && mcp_versions[i]; i++)
		if (strcmp(requested, mcp_versions[i]) == 0)
			return mcp_versions[i];
	return MCP_LATEST_VERSION;
}
