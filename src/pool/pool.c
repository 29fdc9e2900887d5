/*
 * Instances by canonical key, created on first use and closed on drain.
 */
#include "pool/pool.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/xmalloc.h"

struct pool_entry {
	struct pool_entry *next;
	struct instance *inst;
};

struct pool {
	uv_loop_t *loop;
	struct instance_cbs cbs;
	void *ctx;
	struct pool_entry *entries; /* newest last */
};

struct pool *pool_new(uv_loop_t *loop, const struct instance_cbs *cbs,
		      void *ctx)
{
	struct pool *pool = xcalloc(1, sizeof *pool);
	pool->loop = loop;
	pool->cbs = *cbs;
	pool->ctx = ctx;
	return pool;
}

char *pool_instance_key(const struct server_config *s,
			const struct pool_scope_ctx *sc, char **cwd)
{
	json_t *key = json_object();
	json_object_set_new(key, "name", json_string(s->name));
	json_object_set_new(key, "scope",
			    json_string(config_scope_name(s->scope)));
	json_object_set_new(key, "connection",
			    config_server_identity(s, false, NULL));
	const char *dir;
	json_t *roots = json_array();
	switch (s->scope) {
	case SCOPE_SESSION:
		json_object_set_new(key, "session",
				    json_string(sc->session_id));
		dir = sc->space ? sc->space : sc->app_dir;
		if (sc->space)
			json_array_append_new(roots, json_string(sc->space));
		break;
	case SCOPE_SPACE:
		if (sc->space) {
			json_object_set_new(key, "space",
					    json_string(sc->space));
			json_array_append_new(roots, json_string(sc->space));
		} else {
			/* A session without a space has a private one. */
			json_object_set_new(key, "space",
					    json_pack("{s:s}", "private",
						      sc->session_id));
		}
		dir = sc->space ? sc->space : sc->app_dir;
		break;
	case SCOPE_APP:
	default:
		dir = sc->app_dir;
		break;
	}
	const char *resolved = s->cwd ? s->cwd : dir;
	json_object_set_new(key, "cwd",
			    resolved ? json_string(resolved) : json_null());
	json_object_set_new(key, "roots", roots);
	char *out = json_dumps(key, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(key);
	if (cwd)
		*cwd = resolved ? xstrdup(resolved) : NULL;
	return out;
}

struct instance *pool_instance_find(struct pool *pool,
				    const struct server_config *s,
				    const struct pool_scope_ctx *sc)
{
	char *key = pool_instance_key(s, sc, NULL);
	struct instance *found = NULL;
	for (struct pool_entry *e = pool->entries; e; e = e->next) {
		if (strcmp(instance_key(e->inst), key) == 0) {
			found = e->inst;
			break;
		}
	}
	free(key);
	return found;
}

struct instance *pool_instance_for(struct pool *pool,
				   const struct server_config *s,
				   const struct pool_scope_ctx *sc)
{
	char *cwd = NULL;
	char *key = pool_instance_key(s, sc, &cwd);
	struct pool_entry **tail = &pool->entries;
	for (struct pool_entry *e = pool->entries; e; e = e->next) {
		if (strcmp(instance_key(e->inst), key) == 0) {
			free(key);
			free(cwd);
			return e->inst;
		}
		tail = &e->next;
	}
	struct instance_spec spec = {
		.server = s,
		.key = key,
		.cwd = cwd,
		.client_caps_json = sc->client_caps_json
					    ? sc->client_caps_json
					    : "{\"roots\":{\"listChanged\":true}}",
	};
	struct pool_entry *e = xcalloc(1, sizeof *e);
	e->inst = instance_new(pool->loop, &spec, &pool->cbs, pool->ctx);
	*tail = e;
	log_debug("new instance %s", key);
	free(key);
	free(cwd);
	return e->inst;
}

void pool_foreach(struct pool *pool,
		  void (*fn)(void *arg, struct instance *inst), void *arg)
{
	for (struct pool_entry *e = pool->entries; e; e = e->next)
		fn(arg, e->inst);
}

void pool_close_server(struct pool *pool, const char *name)
{
	struct pool_entry **pp = &pool->entries;
	while (*pp) {
		struct pool_entry *e = *pp;
		if (name == NULL || strcmp(instance_name(e->inst), name) == 0) {
			*pp = e->next;
			instance_free(e->inst);
			free(e);
		} else {
			pp = &e->next;
		}
	}
}

void pool_drain(struct pool *pool)
{
	pool_close_server(pool, NULL);
}

void pool_free(struct pool *pool)
{
	if (pool == NULL)
		return;
	pool_close_server(pool, NULL);
	free(pool);
}
