/*
 * The hub: the runtime's sessions by id, the config they resolve servers
 * from, the pool of instances, and the way a server's messages find the
 * session they belong to (progress, logging, list changes, requests).
 */
#ifndef MCPV_HUB_H
#define MCPV_HUB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "config/config.h"
#include "pool/pool.h"

struct hub;
struct session;

/* Takes ownership of cfg. app_dir: where app-scoped servers start. */
struct hub *hub_new(uv_loop_t *loop, struct config *cfg, const char *app_dir);
/* Ends every session and closes every instance. */
void hub_free(struct hub *hub);

const struct config *hub_config(const struct hub *hub);
struct pool *hub_pool(struct hub *hub);
const char *hub_app_dir(const struct hub *hub);
size_t hub_page_size(const struct hub *hub);
void hub_set_page_size(struct hub *hub, size_t n);

/* Answers an initialize: a new session and the result to send. space may
 * be NULL. */
json_t *hub_initialize(struct hub *hub, json_t *params, const char *space,
		       struct session **out);
struct session *hub_session_find(struct hub *hub, const char *id);
/* Ends a session (DELETE): its calls are cancelled upstream. */
void hub_session_end(struct hub *hub, struct session *s);
size_t hub_session_count(const struct hub *hub);

/* Status of every server and instance. */
json_t *hub_status(struct hub *hub, bool verbose);

/* Calls fn for every session. */
void hub_foreach_session(struct hub *hub,
			 void (*fn)(void *arg, struct session *s), void *arg);

#endif
