/*
 * JSON-RPC 2.0 as MCP uses it: classifying messages, building requests,
 * answers and errors, and the MCP protocol versions this runtime speaks.
 * Knows nothing of HTTP or instances.
 */
#ifndef MCPV_JSONRPC_H
#define MCPV_JSONRPC_H

#include <jansson.h>
#include <stdbool.h>

#define JR_PARSE_ERROR -32700
#define JR_INVALID_REQUEST -32600
#define JR_METHOD_NOT_FOUND -32601
#define JR_INVALID_PARAMS -32602
#define JR_INTERNAL_ERROR -32603
/* MCP's own: a resource that does not exist. */
#define JR_RESOURCE_NOT_FOUND -32002
/* Implementation-defined server errors (-32000 to -32099). */
#define JR_SERVER_UNAVAILABLE -32000
#define JR_REQUEST_CANCELLED -32800
/* A request that took longer than its deadline (as MCP SDKs use it). */
#define JR_REQUEST_TIMEOUT -32001

#define JR_MAX_METHOD 256
/* The longest message taken or sent on any transport, either way. */
#define JR_MAX_MESSAGE (16 * 1024 * 1024)

enum jr_kind {
	JR_INVALID,
	JR_REQUEST,
	JR_NOTIFICATION,
	JR_RESPONSE,
};

/* Classifies msg. On JR_INVALID, *why says what is wrong (static). */
enum jr_kind jr_classify(const json_t *msg, const char **why);
/* A valid id: a string or an integer (never null, bool or real). */
bool jr_id_valid(const json_t *id);

const char *jr_method(const json_t *msg);
json_t *jr_params(const json_t *msg); /* borrowed, may be NULL */
json_t *jr_id(const json_t *msg);     /* borrowed, may be NULL */

/* The builders return new references; they steal params/result/data. */
json_t *jr_request(json_t *id, const char *method, json_t *params);
json_t *jr_notification(const char *method, json_t *params);
json_t *jr_result(const json_t *id, json_t *result);
json_t *jr_error(const json_t *id, int code, const char *message, json_t *data);

/* Requests that change nothing, so that re-sending them after a reconnect
 * is safe (initialize, the lists, reads, ping). */
bool jr_method_is_idempotent(const char *method);

/* The MCP revisions spoken, newest first. */
extern const char *const mcp_versions[];
#define MCP_LATEST_VERSION "2025-11-25"
bool mcp_version_supported(const char *v);
/* The version to answer an initialize with: the requested one when
 * supported, else the latest. */
const char *mcp_version_negotiate(const char *requested);

#endif
