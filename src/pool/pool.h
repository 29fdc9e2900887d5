/*
 * The pool: instances by canonical key. It creates an instance the first
 * time a key is asked for, hands instance events to the runtime's hub, and
 * closes every instance on drain. Knows nothing of JSON-RPC beyond passing
 * messages on.
 */
#ifndef MCPV_POOL_H
#define MCPV_POOL_H

#include <jansson.h>
#include <stdbool.h>
#include <uv.h>

#include "config/config.h"
#include "instance/instance.h"

struct pool;

/* Where a session stands, for the scope rules. */
struct pool_scope_ctx {
	const char *session_id; /* the asking session */
	const char *space;	/* its folder; NULL: a private one */
	const char *app_dir;	/* where the runtime started */
	/* Capabilities to advertise to a server this session starts: only
	 * what its client can answer (roots the runtime answers itself). */
	const char *client_caps_json;
};

struct pool *pool_new(uv_loop_t *loop, const struct instance_cbs *cbs,
		      void *ctx);
/* Closes every instance; they finish stopping on the loop. */
void pool_drain(struct pool *pool);
void pool_free(struct pool *pool);

/* The instance key: canonical JSON of name, scope, connection identity,
 * resolved cwd and roots (and the session or space that owns it). Caller
 * frees. *cwd gets the resolved working directory (caller frees). */
char *pool_instance_key(const struct server_config *s,
			const struct pool_scope_ctx *sc, char **cwd);

/* The instance for s as seen from sc, created (not started) if needed. */
struct instance *pool_instance_for(struct pool *pool,
				   const struct server_config *s,
				   const struct pool_scope_ctx *sc);
/* The existing instance for s and sc, or NULL. Starts nothing. */
struct instance *pool_instance_find(struct pool *pool,
				    const struct server_config *s,
				    const struct pool_scope_ctx *sc);

/* Calls fn for every instance, in creation order. */
void pool_foreach(struct pool *pool,
		  void (*fn)(void *arg, struct instance *inst), void *arg);
/* Closes (and frees, once stopped) the instances whose server is named
 * name, or every one when name is NULL. */
void pool_close_server(struct pool *pool, const char *name);

#endif
