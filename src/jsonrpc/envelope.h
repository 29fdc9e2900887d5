/*
 * The request envelope of MCP 2026-07-28 on Streamable HTTP: which era a
 * POSTed message speaks, and whether a modern one is well formed (the
 * MCP-Protocol-Version, Mcp-Method and Mcp-Name headers against the body,
 * the required _meta keys, the version, the revision's methods), with the
 * HTTP status and JSON-RPC error the revision names for each fault. Also
 * the header value encoding (SEP-2243: "=?base64?...?=" sentinels), the
 * Mcp-Param-* headers of x-mcp-header tool arguments, and the per-request
 * log level. Pure: no I/O, no state.
 */
#ifndef MCPV_ENVELOPE_H
#define MCPV_ENVELOPE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define MODERN_VERSION "2026-07-28"
/* The reserved codes of 2026-07-28 (basic/index.mdx, Error Codes). */
#define JR_HEADER_MISMATCH -32020
#define JR_MISSING_CAPABILITY -32021
#define JR_UNSUPPORTED_VERSION -32022

#define META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CLIENT_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_CLIENT_INFO "io.modelcontextprotocol/clientInfo"
#define META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
#define META_SERVER_INFO "io.modelcontextprotocol/serverInfo"
#define META_SUBSCRIPTION_ID "io.modelcontextprotocol/subscriptionId"

/* Header values longer than this are refused (-32020), decoded or not. */
#define ENVELOPE_MAX_HEADER 8192
/* An inputSchema with more x-mcp-header annotations than this, or with
 * subschemas nested deeper than this (through any keyword), is not one
 * envelope_schema_ok accepts; envelope_check_params looks no further. */
#define ENVELOPE_MAX_PARAMS 64
#define ENVELOPE_MAX_SCHEMA_DEPTH 64
/* An error message quotes at most this many bytes of what a client sent
 * (escaped, cut with "..."), so a message stays short whatever came. */
#define ENVELOPE_MAX_QUOTE 64

/* A request header by its lowercase name, or NULL: how the envelope reads
 * the HTTP request without knowing the HTTP module. */
typedef const char *(*envelope_header_fn)(void *arg, const char *lname);

enum envelope_era {
	ENVELOPE_LEGACY, /* 2025-11-25 and earlier: initialize, sessions */
	ENVELOPE_MODERN, /* 2026-07-28: _meta on every request */
};

/* The era of one message (any JSON value) of a POST: modern when its
 * params._meta carries the protocol-version claim (any value), or when
 * header_version (MCP-Protocol-Version, NULL: none) names a version that
 * is not a legacy one (2024-11-05 ... 2025-11-25) and sorts after them
 * (a date older than every revision is the 2025 path's to refuse);
 * legacy otherwise. */
enum envelope_era envelope_classify(json_t *msg, const char *header_version);

/* Log levels of MCP logging, in order; ENVELOPE_LOG_NONE: not asked. */
enum envelope_log {
	ENVELOPE_LOG_NONE = -1,
	ENVELOPE_LOG_DEBUG,
	ENVELOPE_LOG_INFO,
	ENVELOPE_LOG_NOTICE,
	ENVELOPE_LOG_WARNING,
	ENVELOPE_LOG_ERROR,
	ENVELOPE_LOG_CRITICAL,
	ENVELOPE_LOG_ALERT,
	ENVELOPE_LOG_EMERGENCY,
};

/* What a well-formed modern request declares (all borrowed from msg). */
struct envelope {
	const char *method;
	const char *version; /* MODERN_VERSION */
	json_t *client_caps; /* an object, maybe empty; NULL: a
				notification that did not send it */
	json_t *client_info; /* NULL: not sent */
	enum envelope_log log_level;
	json_t *progress_token; /* _meta.progressToken, NULL: none */
	bool notification;	/* no id: nothing to answer (202) */
};

/* A fault, as the revision says to answer it. */
struct envelope_err {
	int http_status; /* 400, or 404 for a method the revision lacks */
	int code;	 /* JSON-RPC error code */
	char *message;	 /* owned */
	json_t *data;	 /* owned; NULL: none */
};

void envelope_err_clear(struct envelope_err *err);

/* Checks one modern message (an object) in the order the conformance
 * suite's reference server does: a JSON-RPC request or notification
 * (-32600), MCP-Protocol-Version present (-32020), the required _meta
 * keys and their types (-32602; an initialize without the claim is
 * -32020, as the TypeScript SDK answers it), header equal to the claim
 * (-32020), a supported version (-32022, data {supported, requested}),
 * the log level (-32602), the method one of the revision's client
 * requests (404, -32601: initialize, ping, logging/setLevel,
 * resources/subscribe and the like are gone), Mcp-Method equal to the
 * method and Mcp-Name to params.name (tools/call, prompts/get) or
 * params.uri (resources/read), a string (-32602), sentinel-decoded,
 * surrounding spaces and tabs ignored (-32020). A notification (no id)
 * needs the version header but no _meta keys, and a "notifications/..."
 * method (-32600); Mcp-Method, when sent, must match. HTTP 400 for every
 * fault but the method (404). err is cleared first, so clearing it after
 * is always safe. 0 and env filled, or -1 and err filled. */
int envelope_check(json_t *msg, envelope_header_fn hdr, void *arg,
		   struct envelope *env, struct envelope_err *err);

/* A header value as sent: surrounding spaces and tabs dropped, every
 * byte then visible ASCII, space or tab, and a "=?base64?B64?=" sentinel
 * (any value that starts with "=?base64?" and ends with "?=") decoded:
 * standard alphabet, padded to a multiple of 4 (the conformance suite
 * refuses "=?base64?SGVsbG8?="), no stray bits; the decoded bytes must be
 * UTF-8 without NUL. A new string, or NULL when the value is not valid
 * or longer than ENVELOPE_MAX_HEADER. */
char *envelope_header_decode(const char *raw);
/* The value to send for s (UTF-8) in a header: s itself when it is
 * visible ASCII and inner spaces, not sentinel-shaped, else the sentinel.
 * envelope_header_decode gives s back. A new string. */
char *envelope_header_encode(const char *s);

/* The Mcp-Param-* headers of a tools/call against its tool's inputSchema
 * (x-mcp-header on properties reached through "properties" chains; the
 * header asked of hdr is "mcp-param-" and the annotation, lower-cased):
 * each argument so marked and present (not null) must come as its
 * header with the same value (strings exactly, numbers compared as
 * numbers, booleans as true/false), and a header for an absent or null
 * argument is refused (-32020); a marked argument that is an object or
 * array is -32602. arguments may be NULL. err is cleared first. 0, or -1
 * with err. */
int envelope_check_params(json_t *input_schema, json_t *arguments,
			  envelope_header_fn hdr, void *arg,
			  struct envelope_err *err);
/* Whether a tool's inputSchema uses x-mcp-header only as the revision
 * allows (server/tools.mdx, x-mcp-header): a non-empty token, unique
 * without regard to case, on properties whose "type" is string, integer
 * or boolean (or one of those and "null"), reached only through
 * "properties" (never items, $defs, oneOf, if, not...), within the
 * ENVELOPE_MAX_* limits. A schema without annotations is fine. */
bool envelope_schema_ok(json_t *input_schema);

/* Whether a notifications/message of level (its params.level, a name)
 * may go to a request that asked for want: never when it asked for
 * nothing, else when the level is want's or more severe. A level that is
 * none of the eight names (or NULL) passes only when want is DEBUG: the
 * client asked for everything, but a message of unknown weight must not
 * reach one that asked for errors only. */
bool envelope_log_passes(enum envelope_log want, const char *level);
/* A level's name ("debug" .. "emergency") as MCP spells it, and back;
 * ENVELOPE_LOG_NONE for a name that is none of the eight (or NULL), and
 * NULL for ENVELOPE_LOG_NONE. */
enum envelope_log envelope_log_parse(const char *name);
const char *envelope_log_name(enum envelope_log level);

#endif
