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

/* TCP connections; at the cap the longest-idle keep-alive one is closed
 * to make room, and refused only when none is idle. */
#define EP_MAX_CONNS 4096
/* The Unix socket has its own budget, so a TCP flood never locks out the
 * CLI (status, stop). */
#define EP_MAX_UNIX_CONNS 256
/* A request's head must arrive within this from its first byte (or from
 * the connection), and its body must keep coming at least this often. */
#define EP_HEADER_TIMEOUT_MS 10000
/* A keep-alive connection between requests, and a writer whose client
 * takes nothing, are closed after this long. */
#define EP_IDLE_TIMEOUT_MS 60000
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
	/* 0: EP_HEADER_TIMEOUT_MS and EP_IDLE_TIMEOUT_MS. */
	uint64_t header_timeout_ms, idle_timeout_ms;
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
