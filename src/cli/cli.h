/*
 * The command line: one function per subcommand, and a small MCP client
 * that reaches a running runtime through its Unix socket.
 */
#ifndef MCPV_CLI_H
#define MCPV_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

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
int cmd_relay(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_setup(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_login(int argc, char **argv);
int cmd_logout(int argc, char **argv);

/* The options every command repeats, parsed once (cli/common.c). */
#define CLI_OPT_JSON 1u	   /* --json */
#define CLI_OPT_VERBOSE 2u /* -v, --verbose */
#define CLI_OPT_FORCE 4u   /* --force */
#define CLI_OPT_START 8u   /* --start (check) */

struct cli_spec {
	const char *name; /* for messages: "tools" */
	void (*usage)(FILE *);
	unsigned opts;		/* CLI_OPT_* beyond --home and --help */
	int min_args, max_args; /* positional arguments */
};

struct cli_common {
	const char *home; /* --home DIR; NULL: MCPVISOR_HOME or XDG */
	int json, verbose, force, start;
	char **args; /* the positional arguments */
	int nargs;
};

/* Parses --home, --help and the options spec allows, and checks the
 * number of positional arguments. Returns -1 to go on, else the exit code
 * (usage printed). */
int cli_parse_common(int argc, char **argv, const struct cli_spec *spec,
		     struct cli_common *o);

/* Makes every string in v (an answer of the runtime) safe to print, in
 * place: escaped as util/escape.h does, so what a server wrote (a tool's
 * description, an error, a stderr line, a call's result) cannot drive the
 * terminal or fake a line. The values of "stderr" and "text" keep their
 * line breaks (they are shown as lines). For the text views: --json
 * prints JSON, which carries its own escapes. */
void cli_escape_json(json_t *v);

/* The command that starts a runtime on home (NULL: MCPVISOR_HOME or XDG,
 * which `mcpvisor serve` finds by itself), as the user would type it:
 * "mcpvisor serve --home /abs/home". Caller frees. */
char *cli_serve_command(const char *home);

struct client;

/* Finds the runtime of home (NULL: MCPVISOR_HOME or XDG). On failure
 * returns a CLI_* code with a message printed. Every request after it is
 * bounded: a plain one by MCPVISOR_TIMEOUT (default 10 s) as a whole, an
 * MCP one by 5 s of silence (its answer stream carries heartbeats, so a
 * long call waits on). */
int client_open(const char *home, struct client **out);
/* The pid of the runtime the client talks to, its Unix socket, and the
 * port it asked for when that was taken (else 0). */
long client_pid(const struct client *c);
const char *client_socket(const struct client *c);
int client_asked_port(const struct client *c);
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
