/*
 * The pool: instances by canonical key, who uses and holds them (leases),
 * their idle timers, the ownership journal of what they run and the tool
 * cache of their lists. It creates an instance the first time a key is
 * asked for. A session's own instance closes when its session ends; a
 * shared one (app, space) stays for the idle timeout after its last
 * session; any instance closes after the idle timeout when nobody holds
 * it, and at once when its server is removed or its settings change.
 * What an instance owns (processes, containers) is journaled while it
 * lives; url servers share one HTTP client, made on first use.
 * Knows nothing of JSON-RPC beyond passing messages on.
 */
#ifndef MCPV_POOL_H
#define MCPV_POOL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config/config.h"
#include "instance/instance.h"

struct pool;
struct journal;
struct toolcache;

/* Where a session stands, for the scope rules. */
struct pool_scope_ctx {
	const char *session_id; /* the asking session */
	const char *space;	/* its folder; NULL: a private one */
	const char *app_dir;	/* where the runtime started */
	/* Capabilities to advertise to a server this session starts: only
	 * what its client can answer (roots the runtime answers itself). */
	const char *client_caps_json;
};

/* cbs receive the instances' messages (ctx is passed back). journal and
 * cache may be NULL; they stay owned by the caller. */
struct pool *pool_new(uv_loop_t *loop, const struct instance_cbs *cbs,
		      void *ctx, struct journal *journal,
		      struct toolcache *cache);
/* Closes every instance; they finish stopping on the loop. The HTTP
 * client goes with the last of them (run the loop before closing it). */
void pool_free(struct pool *pool);
struct httpc;
/* The loop's HTTP client, made on first use (it loads libcurl, so a
 * runtime of stdio servers never carries it): what every url server's
 * instance gets. NULL when it cannot be made (logged once; tried again
 * at the next call). */
struct httpc *pool_http(struct pool *pool);
struct auth;
/* The sign-in of url servers (auth/auth.h): instances made from now on
 * send the tokens a holds for their server, refresh them, and wait for a
 * login when only that helps. Borrowed (it outlives the pool's instances'
 * use of it: freed after pool_free). NULL: none. */
void pool_set_auth(struct pool *pool, struct auth *a);
/* The sign-in pool_set_auth gave, or NULL. */
struct auth *pool_auth(struct pool *pool);
/* The tokens stored for server name at url changed (a login, a logout,
 * another process's refresh): its instances hear it (one that waited for
 * a sign-in starts). */
void pool_credentials_changed(struct pool *pool, const char *name,
			      const char *url);
/* The global idle timeout, for servers without their own. */
void pool_set_idle_ms(struct pool *pool, uint64_t ms);

/* The instance key: canonical JSON of name, scope, connection identity,
 * resolved cwd and roots (and the session or space that owns it). Caller
 * frees. *cwd gets the resolved working directory (caller frees). */
char *pool_instance_key(const struct server_config *s,
			const struct pool_scope_ctx *sc, char **cwd);

/* The instance for s as seen from sc, whose key is key (from
 * pool_instance_key, which callers compute once and keep), created (not
 * started) if needed, with the session joined as a user. */
struct instance *pool_instance_for(struct pool *pool,
				   const struct server_config *s,
				   const struct pool_scope_ctx *sc,
				   const char *key);
/* The existing instance of key, or NULL. Starts nothing. */
struct instance *pool_instance_find(struct pool *pool, const char *key);

/* The lists the tool cache knows for a server this session would run
 * alone (session scope, or space scope without a space), offered without
 * making an instance: borrowed, valid until the session is gone; NULL when
 * the key has an instance, the scope is shared or nothing is cached. */
json_t *pool_lists_known(struct pool *pool, const struct server_config *s,
			 const struct pool_scope_ctx *sc, const char *key);
/* The lists the tool cache holds for s as seen from sc (an object of
 * "tools", "prompts", ...; borrowed), whether or not anything runs it;
 * NULL when none. For status, which has no session to ask for. */
json_t *pool_lists_cached(struct pool *pool, const struct server_config *s,
			  const struct pool_scope_ctx *sc);
/* What key offers for list which: its instance's list, or the lists
 * pool_lists_known found for it (borrowed), or NULL. */
json_t *pool_lists_offered(struct pool *pool, const char *key,
			   enum instance_list which);

/* The instructions of the server behind key: its instance's, or the tool
 * cache's (borrowed; NULL when unknown). Starts nothing. */
const char *pool_instructions(struct pool *pool, const struct server_config *s,
			      const struct pool_scope_ctx *sc, const char *key);

/* Calls fn with the session id of each session that uses inst (joined
 * it), or only of those with a request in flight on it (holders_only).
 * fn must not change inst's leases. */
void pool_foreach_member(struct pool *pool, struct instance *inst,
			 bool holders_only,
			 void (*fn)(void *arg, const char *session_id),
			 void *arg);

/* A request of session_id runs on inst: it holds the instance. */
void pool_acquire(struct pool *pool, struct instance *inst,
		  const char *session_id);
/* That request ended. */
void pool_release(struct pool *pool, struct instance *inst,
		  const char *session_id);
/* The session ended: it leaves every instance in one step. Its own
 * instances close at once; shared ones nobody uses any longer stay for
 * their idle time (at once when not running). */
void pool_session_gone(struct pool *pool, const char *session_id);
/* The connection identity of s as the pool compares it. Caller frees. */
char *pool_server_ident(const struct server_config *s);
/* The config changed: instances whose server is no longer wanted in the
 * same settings (wanted(arg, name, ident) false: removed, disabled or
 * changed) close at once; the others are left untouched. Returns how
 * many closed. */
unsigned pool_reload(struct pool *pool,
		     bool (*wanted)(void *arg, const char *name,
				    const char *ident),
		     void *arg);

/* Explicit stop of a server (name) or all (NULL): its instances stop and
 * drop their lists; they stay stopped until pool_restart or a reload. */
void pool_stop_server(struct pool *pool, const char *name);
/* Whether a server was stopped explicitly. */
bool pool_server_held_stopped(const struct pool *pool, const char *name);
/* Restarts a server's running instances and lifts an explicit stop. */
void pool_restart_server(struct pool *pool, const char *name);

/* Calls fn for every instance, in creation order. */
void pool_foreach(struct pool *pool,
		  void (*fn)(void *arg, struct instance *inst), void *arg);
/* Leases and idle deadline of inst, for status. New reference. */
json_t *pool_describe(struct pool *pool, struct instance *inst);
/* Requests in flight over every instance. */
unsigned pool_requests(const struct pool *pool);

#endif
