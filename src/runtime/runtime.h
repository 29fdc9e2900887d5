/*
 * The runtime: `mcpvisor serve`. Wires the loop, config, hub, pool and
 * endpoint together, writes the runtime file clients find it by, handles
 * signals, and drains everything on the way out.
 */
#ifndef MCPV_RUNTIME_H
#define MCPV_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct runtime_opts {
	const char *home;      /* --home, may be NULL */
	const char *config;    /* --config, may be NULL: the default file */
	int port;	       /* -1: default (7345, else any free one) */
	size_t page_size;      /* 0: default */
	uint64_t sse_close_ms; /* close long SSE answers on purpose; 0: never */
	uint64_t grace_ms;     /* drain grace; 0: the config's (or 10 s) */
	uint64_t session_timeout_ms; /* 0: the default (30 min) */
	size_t max_sessions;	     /* 0: the default (1024) */
	bool no_watch;		     /* --no-watch: reload only when asked */
	size_t log_max; /* the log file's rotation size; 0: LOG_FILE_MAX */
};

/* Runs until SIGTERM/SIGINT or a stop request. Returns the exit code. */
int runtime_serve(const struct runtime_opts *opts);

#endif
