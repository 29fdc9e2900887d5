/*
 * One check that an HTTP server answers on a loopback port: connect, send
 * a plain `GET /`, and see whether any bytes come back before the peer
 * closes or a deadline passes. A port proxy with nobody behind it (docker-
 * proxy while the container's server does not listen yet) accepts and
 * closes: no answer. Owns its handles; frees itself.
 */
#ifndef MCPV_PORTS_HTTP_PROBE_H
#define MCPV_PORTS_HTTP_PROBE_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

/* answered: some bytes came back. Once, never from inside http_probe. */
typedef void (*http_probe_cb)(void *ctx, bool answered);

/* 0, or -errno with no cb to come. */
int http_probe(uv_loop_t *loop, int port, uint64_t timeout_ms, http_probe_cb cb,
	       void *ctx);

#endif
