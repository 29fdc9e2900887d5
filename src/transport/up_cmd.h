/*
 * Internal to src/transport: the stdio and local HTTP upstreams driven with
 * a command line another transport built (the container transport runs the
 * engine's CLI through them), and the hooks where such a transport does
 * what differs: how the port is proved, and what is stopped before the
 * program's own stop ladder.
 */
#ifndef MCPV_TRANSPORT_UP_CMD_H
#define MCPV_TRANSPORT_UP_CMD_H

#include <stdbool.h>

#include "ports/listener.h"
#include "transport/upstream.h"

/* A program to run: borrowed, valid during the call it is given to. */
struct up_cmd {
	const char *command; /* looked up in PATH without '/' */
	char *const *args;   /* argv[1..], NULL-terminated */
	char *const *env;    /* "KEY=VALUE" over the runtime's; may be NULL */
};

/* ---- up_stdio.c ---- */

/* upstream_stdio's open with cmd instead of the server's command, args
 * and env (spec->server is not read). */
int up_stdio_open_cmd(uv_loop_t *loop, const struct upstream_spec *spec,
		      const struct up_cmd *cmd, const struct upstream_cbs *cbs,
		      void *ctx, struct upstream **out);
/* Closes the program's stdin and nothing else (a stdio upstream's). Its
 * exit is a fault as before; stop still runs the ladder. */
void up_stdio_close_stdin(struct upstream *u);

/* ---- up_local.c ---- */

struct upl_driver {
	/* The program for the reserved port, once, inside open. Fills cmd
	 * (with strings the driver keeps until the upstream is closed). 0
	 * or -errno (open fails with it). */
	int (*build)(void *dctx, int port, struct up_cmd *cmd);
	/* Something accepts connections on port: whose listener it is, told
	 * once through upl_proved, never from inside this call. NULL: the
	 * listener proof (a process of the program's group or token). */
	void (*prove)(void *dctx, struct upstream *u, int port);
	/* Before the program's stop ladder (after the HTTP session closed):
	 * ends what the program started elsewhere, then calls
	 * upl_driver_stopped, never from inside this call. NULL: none. */
	void (*stop)(void *dctx, struct upstream *u);
};

/* upstream_http_local's open with the program drv builds (spec->server's
 * url, headers and type are still read; its command is not). */
int upl_open_driven(uv_loop_t *loop, const struct upstream_spec *spec,
		    const struct upl_driver *drv, void *dctx,
		    const struct upstream_cbs *cbs, void *ctx,
		    struct upstream **out);
/* The answer to drv->prove. */
void upl_proved(struct upstream *u, enum listener_owner owner);
/* The answer to drv->stop. */
void upl_driver_stopped(struct upstream *u);

#endif
