/*
 * MCP 2026-07-28 clients in front of the servers people have: a modern
 * request (envelope.h checked it) is served by a hidden session of its
 * principal and space, so servers are shared by scope as for 2025
 * clients; its answer is stamped as the revision asks (resultType, ttlMs,
 * cacheScope, serverInfo); a 2025-era server's request in the middle of a
 * call becomes input_required with a requestState (bridge.c), and
 * subscriptions/listen carries list changes (listen.c). The HTTP side is a
 * sink: the first message decides whether the answer is one JSON body or
 * an SSE stream.
 */
#ifndef MCPV_MODERN_H
#define MCPV_MODERN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "jsonrpc/envelope.h"

struct hub;
struct modern;
struct modern_req;

/* The HTTP side of one modern request. After json() or end() the request
 * never calls the sink again. */
struct modern_sink_ops {
	/* The whole answer, one JSON body (nothing was sent before). */
	void (*json)(void *ctx, int status, const char *body, size_t len);
	/* One SSE event; the first sends the SSE head. */
	void (*event)(void *ctx, const char *data, size_t len);
	/* The SSE answer ends. */
	void (*end)(void *ctx);
};

/* The longest principal, its NUL included: "own", or "key:" and the
 * SHA-256 of an API key in hex. */
#define MODERN_PRINCIPAL_MAX (4 + 64 + 1)

struct modern *modern_new(uv_loop_t *loop, struct hub *hub);
/* Cancels every waiting call and frees; the hub must still be alive. */
void modern_free(struct modern *m);

/* Serves one checked modern request (msg and env borrowed). principal
 * names the client (an API key's digest, or the runtime's own user; at
 * most MODERN_PRINCIPAL_MAX bytes with its NUL);
 * space may be NULL. param_headers: the request's Mcp-Param-* headers by
 * lower-case name (borrowed; NULL: none), checked against the tool's
 * inputSchema once its session knows the tool. The answer goes to the sink,
 * maybe before this returns: then NULL is returned and the sink is done.
 * Otherwise the handle, which the HTTP side gives to modern_release when it
 * goes. */
struct modern_req *modern_request(struct modern *m, json_t *msg,
				  const struct envelope *env,
				  const char *principal, const char *space,
				  json_t *param_headers,
				  const struct modern_sink_ops *ops, void *ctx);
/* A tools/call the endpoint scanned and found plainly well formed, as
 * text: envelope_check would accept it, and nothing in it asks for more
 * than forwarding (no logLevel, progressToken, requestState,
 * inputResponses or Mcp-Param-* headers). Offsets of values (their
 * quotes included) in body, and in params for name. */
struct modern_text_call {
	const char *body;
	size_t len;
	json_t *id; /* the request's id, borrowed */
	size_t params_off, params_len;
	size_t name_off, name_len;
	size_t id_off, id_len;
};

/* Serves tc as modern_request would, without parsing it: when its
 * principal's session in space is made and the name routes plainly to
 * one server's tool. False when it does not: nothing was done, and the
 * caller takes the general path (parse, envelope_check,
 * modern_request), which answers every other case. True: *out is what
 * modern_request would have returned. */
bool modern_call_text(struct modern *m, const struct modern_text_call *tc,
		      const char *principal, const char *space,
		      const struct modern_sink_ops *ops, void *ctx,
		      struct modern_req **out);

/* The HTTP side went away before the answer ended: a call kept for a
 * client's retry (input_required) stays; anything else is cancelled
 * upstream. The sink is not called again. */
void modern_release(struct modern_req *r);

/* The runtime drains: a call kept waiting for a client's retry cannot go
 * on (new requests are refused), so each is cancelled upstream now. */
void modern_drain(struct modern *m);
/* Calls waiting for a client's retry, and open listen streams. */
size_t modern_parked(const struct modern *m);
size_t modern_listeners(const struct modern *m);

#endif
