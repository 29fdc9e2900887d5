/*
 * `mcpvisor check --start`: each server of a config started, its tools
 * listed and stopped again, as a host would start them, by a private
 * runtime of that config in a home of its own that is removed after.
 */
#ifndef MCPV_CLI_CHECK_START_H
#define MCPV_CLI_CHECK_START_H

#include <jansson.h>

/* How long a private runtime may take to open its socket. */
#define CHECK_START_RUNTIME_MS 15000
/* How long it may take to stop once asked, before SIGKILL. */
#define CHECK_START_STOP_MS 15000

/* Runs the servers of file (already validated) in a private runtime and
 * returns one object per server of its status: {"name", "result" ("ok",
 * "failed", "needs_auth", "not started"), "tools" (count), "error",
 * "stderr"}, in the config's order. NULL, with why printed, when the
 * runtime itself could not start. wait_ms: how long the slowest server
 * may take to start (its startupTimeout). New reference. */
json_t *check_start_run(const char *file, long long wait_ms);

/* The lines of those results under the name column (w wide) and the
 * count; 0 when every server that was started is ok, else 1. */
int check_start_print(const char *file, json_t *results, int w);

#endif
