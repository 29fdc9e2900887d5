/*
 * The engine command line of a container server: what mcpvisor adds to own
 * the container (its labels, a --name when the user gave none, a loopback
 * publish of the HTTP form's port) around what the user wrote, which is
 * never changed; and which engine runs it.
 */
#ifndef MCPV_CONTAINER_CONTAINER_CMD_H
#define MCPV_CONTAINER_CONTAINER_CMD_H

#include "config/config.h"

/* Names mcpvisor gives: CONTAINER_NAME_PREFIX<server>-<12 hex>. */
#define CONTAINER_NAME_PREFIX "mcpv-"
#define CONTAINER_NAME_HEX 6 /* random bytes: 12 hex digits */
/* Which engine runs an explicit "container" without "engine". */
#define CONTAINER_ENGINE_ENV "MCPVISOR_CONTAINER_ENGINE"

/* The engine for s: the one it names (command form: its command;
 * explicit: "engine"), else $MCPVISOR_CONTAINER_ENGINE when it names
 * docker or podman, else "docker" when PATH has it, else "podman". New
 * string. */
char *container_engine_for(const struct server_config *s);

/* A fresh name for a container of server name. New string. */
char *container_new_name(const char *server);

struct container_cmd_in {
	const struct server_config *s; /* a container server */
	const char *name;	       /* the container's (user's or ours) */
	const char *token;	       /* mcpvisor.owner */
	const char *key; /* instance key: mcpvisor.key is its hash;
			    NULL: no such label */
	int host_port;	 /* HTTP form: the loopback port it is published on */
	/* Where the engine writes the container's id once it made it
	 * (--cidfile, after the labels); NULL: none. */
	const char *cidfile;
};

/* The engine's arguments (after the engine), NULL-terminated:
 * command form: the user's args with, right after "run", the labels,
 * --cidfile and (when the user gave none) --name; explicit form: run --rm [-i]
 * --name NAME labels [-p 127.0.0.1:PORT:CPORT] [-e KEY]... [-v VOL]... IMAGE
 * ARGS... (env values never on the command line: the engine reads them
 * from its own environment). Free with container_args_free. */
char **container_args(const struct container_cmd_in *in);
void container_args_free(char **args);

#endif
