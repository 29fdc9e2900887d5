/*
 * `mcpvisor relay` on real I/O: the host on stdin/stdout (newline-
 * delimited JSON, jsonrpc/framer.c), the runtime through mcpc on the
 * loop's HTTP client, the launcher, and one loop timer for the core.
 */
#ifndef MCPV_RELAY_RUN_H
#define MCPV_RELAY_RUN_H

struct relay_run_opts {
	const char *home;  /* NULL: MCPVISOR_HOME or XDG */
	const char *url;   /* a runtime elsewhere; NULL: the home's socket */
	const char *space; /* absolute folder */
};

/* Runs until stdin ends. Returns the exit code. */
int relay_run(const struct relay_run_opts *o);

#endif
