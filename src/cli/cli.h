/*
 * The command line: one function per subcommand, and a small MCP client
 * that reaches a running runtime through its Unix socket.
 */
#ifndef MCPV_CLI_H
#define MCPV_CLI_H

#include <jansson.h>

/* Exit codes shared by every subcommand. */
#define CLI_OK 0
#define CLI_FAILED 1	 /* the action failed (tool error, runtime error) */
#define CLI_USAGE 2	 /* bad arguments or config */
#define CLI_NO_RUNTIME 3 /* no runtime is running */

int cmd_serve(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_tools(int argc, char **argv);
int cmd_call(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_restart(int argc, char **argv);
int cmd_reload(int argc, char **argv);
int cmd_allow(int argc, char **argv);

struct client;

/* Finds the runtime of home (NULL: MCPVISOR_HOME or XDG). On failure
 * returns a CLI_* code with a message printed. */
int client_open(const char *home, struct client **out);
/* Ends the MCP session, if any, and frees. */
void client_close(struct client *c);
/* GET path on the socket; *out gets the JSON body. 0 or CLI_FAILED. */
int client_get_json(struct client *c, const char *path, json_t **out);
/* POST path with an empty body; *status gets the HTTP status and *body
 * the JSON answer when there is one (may be NULL). */
int client_post(struct client *c, const char *path, long *status,
		json_t **body);
/* One MCP request (initializing first when needed); *response is the
 * JSON-RPC response (result or error). 0 or CLI_FAILED. */
int client_request(struct client *c, const char *method, json_t *params,
		   json_t **response);

#endif
