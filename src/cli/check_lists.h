/*
 * What `mcpvisor check` says of a server's lists: its filters as patterns
 * and, when a running runtime of the same config file has listed the
 * server, what each filter keeps and drops by name, and the tool names
 * over the 64 characters several hosts accept.
 */
#ifndef MCPV_CLI_CHECK_LISTS_H
#define MCPV_CLI_CHECK_LISTS_H

#include <jansson.h>

#include "config/config.h"

/* What the runtime of home knows of the servers of file (its status
 * objects by server name), or NULL when no runtime runs or it runs
 * another config file. Quiet: check works without a runtime. */
json_t *check_lists_fetch(const char *home, const char *file);

/* Adds to d, sv's description: "filtered" (per list, the names kept and
 * dropped), "unmatched" (per filter, the patterns that match nothing the
 * server offers) and "longToolNames" with "longToolNamesAdvice", from
 * known (sv's status object from check_lists_fetch; NULL: unknown). */
void check_lists_add(json_t *d, const struct server_config *sv, json_t *known);

/* The lines under a server's in the text output (under a name column w
 * wide): each filter's patterns and, when known, what it keeps and
 * drops. */
void check_lists_print(json_t *d, int w);

/* The warning (stderr) for tool names too long for hosts; 1 when there
 * was one. */
int check_lists_warn(json_t *d);

/* The tool and prompt names, as clients see them, that two or more servers
 * of cfg give (known: check_lists_fetch's; NULL: none known), which the
 * runtime lists for neither and refuses to call: an array of {"name",
 * "list", "servers": [names], "text"}. New reference. */
json_t *check_lists_collisions(const struct config *cfg, json_t *known);

/* A warning (stderr) for each of collisions; how many. */
int check_lists_warn_collisions(json_t *collisions);

#endif
