/*
 * Internal to src/auth: the loopback redirect listener of a flow (RFC 8252
 * 7.3): 127.0.0.1 on an ephemeral port (or the one asked), GET /callback
 * only, a few connections at a time, each bounded in time and size. What a
 * callback's query says is for the flow to judge; a refused one (a wrong
 * state: anyone on the machine can reach the port) leaves the listener
 * waiting.
 */
#ifndef MCPV_AUTH_LOOPBACK_H
#define MCPV_AUTH_LOOPBACK_H

#include <stddef.h>
#include <uv.h>

#define LOOPBACK_MAX_CONNS 8
#define LOOPBACK_READ_MS 10000 /* a connection's request, whole */
#define LOOPBACK_PATH "/callback"

struct loopback;

/* The query of a GET /callback (without '?', may be ""). Return 0 when
 * it ends the flow (the page says so), else a refusal: the page shows
 * *msg (static, no secret) and the listener waits on. The listener may be
 * freed from inside. */
typedef int (*loopback_cb)(void *arg, const char *query, const char **msg);

/* Listens on 127.0.0.1:port (0: any free one). 0 and *out, *bound (the
 * port), or -errno (-EADDRINUSE for a taken port). */
int loopback_start(uv_loop_t *loop, int port, loopback_cb cb, void *arg,
		   struct loopback **out, int *bound);
/* Stops listening and drops its connections (the last page is still
 * written when it was the one accepted); memory goes once libuv closed the
 * handles. NULL does nothing. */
void loopback_free(struct loopback *l);

#endif
