/*
 * Configuration: reads and validates `mcpServers` files (the format Claude
 * Desktop, Cursor and Claude Code share), expands ${VAR}, parses durations,
 * and describes a server's connection identity for instance keys. Knows
 * nothing of sockets or processes.
 */
#ifndef MCPV_CONFIG_H
#define MCPV_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_MAX_FILE_BYTES (1024 * 1024)
#define CONFIG_MAX_SERVERS 256
#define CONFIG_MAX_NAME 64
#define CONFIG_MAX_ARGS 256
#define CONFIG_MAX_ENV 256
#define CONFIG_MAX_STRING (64 * 1024)
#define CONFIG_MAX_API_KEYS 64
#define CONFIG_MAX_API_KEY 4096

#define CONFIG_DEFAULT_IDLE_MS (10 * 60 * 1000)
#define CONFIG_DEFAULT_STARTUP_MS (30 * 1000)
#define CONFIG_DEFAULT_GRACE_MS (10 * 1000)

enum server_kind {
	SERVER_STDIO,	    /* command (+ args, env, cwd) */
	SERVER_HTTP_REMOTE, /* url (+ headers) */
	SERVER_HTTP_LOCAL,  /* command + url with {port} */
	/* A stdio server in a container: "command" is docker or podman (or
	 * a path ending in either) with a "run" subcommand, or "container"
	 * without "port". */
	SERVER_CONTAINER,
	/* "container" with "port" and a url with {port}: served over HTTP
	 * on a loopback port mcpvisor allocates and the engine publishes. */
	SERVER_CONTAINER_HTTP,
};

/* How a url server speaks: "type" as written, or inferred. */
enum server_http_type {
	HTTP_TYPE_AUTO,	      /* no "type": Streamable HTTP, and the legacy
				 HTTP+SSE transport when the first POST
				 answers 400, 404 or 405 */
	HTTP_TYPE_STREAMABLE, /* "http" or "streamable-http" */
	HTTP_TYPE_SSE,	      /* "sse": the 2024-11-05 HTTP+SSE transport */
};

enum server_scope { SCOPE_SESSION, SCOPE_SPACE, SCOPE_APP };
enum server_exposure { EXPOSE_DIRECT, EXPOSE_HIDDEN, EXPOSE_DEFERRED };

struct config_kv {
	char *key;
	char *value; /* expanded; may hold a secret */
};

/* A container server (config/container.c). mcpvisor adds its labels and
 * (when the user gave none) a --name; nothing the user wrote is changed. */
struct container_config {
	/* The engine's CLI as run: the command form's command ("docker",
	 * "podman" or a path ending in either); the explicit form's
	 * "engine", NULL when not written (chosen when started). */
	char *engine;
	/* Command form: the index in the server's args of "run" (what
	 * mcpvisor adds goes right after it). -1 for the explicit form. */
	int run_arg;
	/* The image: the explicit form's "image"; the command form's first
	 * argument after run's options, for status only (its template when
	 * it came from ${VAR}). */
	char *image;
	/* The explicit form's image when it came from ${VAR}: its template
	 * (check shows that; the value is a secret like an arg's); NULL
	 * otherwise, and always in the command form (image is the template
	 * there, the value an arg). */
	char *image_tpl;
	/* Explicit form ("container": {...}); NULL and 0 for the command
	 * form. Its "env" is the server's env: passed as `-e KEY`, so no
	 * value is ever on a command line. */
	int port;    /* the container's port (HTTP form); 0: stdio, `-i` */
	char **args; /* after the image, expanded */
	/* For each arg that came from ${VAR}, its template (a secret is
	 * shown only so); NULL for plain ones. Same length as args. */
	char **args_tpl;
	size_t nargs;
	char **volumes; /* `-v` values as written */
	size_t nvolumes;
	/* Both forms. */
	char *name;   /* the --name the user gave; NULL: mcpvisor names it */
	bool rm;      /* --rm given (the explicit form always runs --rm) */
	bool cidfile; /* the user gave --cidfile (mcpvisor then adds none) */
};

/* "tools", "prompts", "resources": {"allow": [...], "deny": [...]}, each
 * entry a name with '*' globs (config/filter.c). Empty allow: all. */
struct config_filter {
	char **allow;
	size_t nallow;
	char **deny;
	size_t ndeny;
};

/* A url server's "oauth" (all optional): what `mcpvisor login` and the
 * runtime's sign-in use (src/auth/). */
struct config_oauth {
	char *client_id;     /* "clientId": a pre-registered client */
	char *client_secret; /* "clientSecret", expanded: a secret */
	/* Its template as written when it came from ${VAR}; NULL
	 * otherwise. */
	char *client_secret_tpl;
	/* "clientMetadataUrl": this client's Client ID Metadata Document
	 * (an https URL with a path), used where the authorization server
	 * supports them. */
	char *client_metadata_url;
	char **scopes; /* "scopes": asked for on top of what the server
			  names */
	size_t nscopes;
};

struct server_config {
	char *name;
	enum server_kind kind;
	char *command; /* resolved: relative paths with a '/' against the
			  config file's folder */
	char **args;
	/* For each arg that came from ${VAR}: its template as written (the
	 * value may be a secret, shown and stored only as the template or a
	 * fingerprint); NULL for plain args. Same length as args. */
	char **args_tpl;
	size_t nargs;
	struct config_kv *env;
	size_t nenv;
	/* For each env value that came from ${VAR}: its template as written
	 * (which variables made it decides whether it is a secret:
	 * config/secrets.h); NULL for plain ones, and NULL when none is.
	 * Same length as env. */
	char **env_tpl;
	char *cwd; /* NULL: decided by scope */
	char *url;
	struct config_kv *headers;
	size_t nheaders;
	char **headers_tpl;		 /* the same for headers */
	enum server_http_type http_type; /* url servers */
	/* The values that ${VAR}s put into url (from the environment),
	 * NULL-terminated, NULL when none: secrets wherever they sit in it
	 * (a token in the path is not found by the url's shape). */
	char **url_vars;
	enum server_scope scope;
	enum server_exposure exposure;
	char *prefix;		    /* never NULL; "" removes the prefix */
	int64_t startup_timeout_ms; /* CONFIG_DEFAULT_STARTUP_MS if unset */
	int64_t idle_timeout_ms;    /* -1: use the global one */
	int64_t tool_timeout_ms;    /* 0: none */
	bool disabled;
	/* Container kinds; NULL for the others. */
	struct container_config *container;
	/* url servers: "oauth"; NULL when not given. */
	struct config_oauth *oauth;
	/* What the server's lists keep (and what can be called). */
	struct config_filter tools, prompts, resources;
	/* Set when the server comes from a space's .mcp.json that the user
	 * has not allowed: the command that allows it. error says so too. */
	char *untrusted;
	/* Set when the entry is unusable: "FILE: server \"x\": field \"y\":
	 * what is wrong". The server is still listed (status shows it). */
	char *error;
};

struct config {
	char *path;  /* as given */
	char *fatal; /* whole file unusable (unreadable, not JSON, no map) */
	struct server_config *servers; /* in file order */
	size_t nservers;
	int64_t idle_timeout_ms;   /* global, default 10 minutes */
	int64_t shutdown_grace_ms; /* drain grace, default 10 s */
	char **warnings;	   /* unknown fields and the like */
	size_t nwarnings;
	/* "apiKeys": bearer keys that let another user's client in over
	 * TCP; expanded, secret (never logged or shown). */
	char **api_keys;
	size_t napi_keys;
};

/* Never returns NULL: a file that cannot be used sets cfg->fatal. */
struct config *config_load_file(const char *path);
/* path names the origin in messages and anchors relative paths. */
struct config *config_parse(const char *text, size_t len, const char *path);
void config_free(struct config *cfg);
/* Frees what one server entry holds and zeroes it (for a caller that
 * takes the entry out of cfg->servers). */
void config_server_clear(struct server_config *s);

/* A deep copy of a server's "oauth" (NULL for NULL), for whoever keeps
 * it past its config's life; config_oauth_free frees it. */
struct config_oauth *config_oauth_dup(const struct config_oauth *o);
/* Frees a server's "oauth" (NULL does nothing). */
void config_oauth_free(struct config_oauth *o);
/* "oauth" as `check` shows it: the client secret masked (or its ${VAR}
 * template). New reference. */
json_t *config_oauth_describe(const struct config_oauth *o);

/* A deep copy of a container's config (NULL for NULL), for whoever keeps
 * a server past its config's life; config_server_clear frees it. */
struct container_config *
config_container_dup(const struct container_config *cc);

const struct server_config *config_find(const struct config *cfg,
					const char *name);

/* "1500", 1500, "500ms", "2s", "10m", "1h" -> milliseconds. -EINVAL when
 * not a non-negative duration. */
int config_parse_duration(const json_t *v, int64_t *ms);

/* Expands ${VAR} and ${VAR:-default} from the environment. On an unset
 * variable without default returns -ENOENT and names it in *missing
 * (caller frees). -EINVAL: unterminated ${ or not a name; -E2BIG: result
 * over CONFIG_MAX_STRING. */
int config_expand(const char *in, char **out, char **missing);
/* The values the environment gives the ${VAR}s of in (defaults written
 * in the file are not secrets), NULL-terminated; NULL when none. */
char **config_expand_values(const char *in);

/* The server's connection identity: everything its connection is made
 * from (kind, command, args, env, cwd, url, headers, the transport of a
 * url server, timeouts), without
 * name, exposure or prefix. With fingerprint, every env and header value
 * is replaced by a salted SHA-256 fingerprint ("fp:<hex>") so the result
 * may be hashed into a file name; salt may be NULL. New reference. */
json_t *config_server_identity(const struct server_config *s, bool fingerprint,
			       const char *salt);

/* The server as `mcpvisor check` prints it, env and header values masked
 * as "***" and passwords in URLs removed; "transport" is "stdio" or
 * config_http_type_name's. New reference. */
json_t *config_server_describe(const struct server_config *s);

const char *config_scope_name(enum server_scope s);
const char *config_exposure_name(enum server_exposure e);
const char *config_kind_name(enum server_kind k);
/* "auto" (Streamable HTTP, falling back to legacy), "http" (Streamable
 * HTTP) or "sse" (the 2024-11-05 HTTP+SSE transport). */
const char *config_http_type_name(enum server_http_type t);

#endif
