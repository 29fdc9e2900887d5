/*
 * The endpoint: an HTTP/1.1 server on 127.0.0.1 and on a Unix socket that
 * speaks MCP Streamable HTTP (2025-11-25) at /mcp and serves the runtime's
 * status at /status. Owns connections, limits, Origin checks and SSE
 * framing; hands JSON-RPC messages to sessions through the hub. Never
 * touches a process.
 */
#ifndef MCPV_ENDPOINT_H
#define MCPV_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define EP_MAX_CONNS 4096
#define EP_DEFAULT_PORT 7345

struct endpoint;
struct hub;

struct endpoint_opts {
	const char *host;	 /* "127.0.0.1" */
	int port;		 /* 0: any free port; -1: default, falling
				    back to any free one when taken */
	const char *socket_path; /* NULL: no Unix socket */
	size_t max_body;	 /* 0: HTTP_DEFAULT_MAX_BODY */
	/* Close a POST's SSE answer on purpose after this many ms (the client
	 * resumes with Last-Event-ID); 0: never. */
	uint64_t sse_close_ms;
	/* Control requests, accepted on the Unix socket only:
	 * POST /control/stop ("shutdown"), /control/reload ("reload"),
	 * /control/servers/NAME/stop and .../restart ("stop", "restart",
	 * ?force=1). Returns 0, -EBUSY (refused), -ENOENT or -EINVAL with
	 * *msg (caller frees). May be NULL. */
	int (*control)(void *arg, const char *action, const char *server,
		       bool force, char **msg);
	void *arg;
};

/* Binds and listens. Returns 0 or -errno, with *err a message to show. */
int endpoint_start(uv_loop_t *loop, struct hub *hub,
		   const struct endpoint_opts *opts, struct endpoint **out,
		   char **err);
int endpoint_port(const struct endpoint *ep);
/* Stops accepting new connections (drain). */
void endpoint_stop_accepting(struct endpoint *ep);
/* Draining: new requests are refused with 503; answers under way go on. */
void endpoint_set_draining(struct endpoint *ep);
/* Closes every connection and listener; frees once closed. */
void endpoint_free(struct endpoint *ep);

#endif
