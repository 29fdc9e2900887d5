/*
 * Instance keys: canonical JSON (sorted keys) of the server's name, scope,
 * working folder, roots and owner (the session or space), and its
 * connection identity, with or without its secrets.
 */
#include "pool/keys.h"

#include <jansson.h>
#include <stdlib.h>

#include "toolcache/toolcache.h"
#include "util/xmalloc.h"

/* Name, scope, cwd, roots and owner of an instance; the connection is
 * added by the callers, with or without secrets. */
static json_t *pool_key_base(const struct server_config *s,
			     const struct pool_scope_ctx *sc, bool per_session,
			     const char **cwd)
{
	json_t *key = json_object();
	json_object_set_new(key, "name", json_string(s->name));
	json_object_set_new(key, "scope",
			    json_string(config_scope_name(s->scope)));
	const char *dir;
	json_t *roots = json_array();
	switch (s->scope) {
	case SCOPE_SESSION:
		if (per_session)
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
		} else if (per_session) {
			/* A session without a space has a private one. */
			json_object_set_new(
				key, "space",
				json_pack("{s:s}", "private", sc->session_id));
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
	if (cwd)
		*cwd = resolved;
	return key;
}

char *pool_instance_key(const struct server_config *s,
			const struct pool_scope_ctx *sc, char **cwd)
{
	const char *dir = NULL;
	json_t *key = pool_key_base(s, sc, true, &dir);
	json_object_set_new(key, "connection",
			    config_server_identity(s, false, NULL));
	char *out = json_dumps(key, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(key);
	if (cwd)
		*cwd = dir ? xstrdup(dir) : NULL;
	return out;
}

char *pool_key_public(const char *salt, const struct server_config *s,
		      const struct pool_scope_ctx *sc)
{
	json_t *key = pool_key_base(s, sc, true, NULL);
	json_object_set_new(key, "connection",
			    config_server_identity(s, true, salt));
	char *out = json_dumps(key, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(key);
	return out;
}

char *pool_key_cache_name(struct toolcache *cache,
			  const struct server_config *s,
			  const struct pool_scope_ctx *sc)
{
	if (cache == NULL)
		return NULL;
	json_t *key = pool_key_base(s, sc, false, NULL);
	json_object_set_new(
		key, "connection",
		config_server_identity(s, true, toolcache_salt(cache)));
	/* A server may offer other tools to a client that can answer
	 * sampling or elicitation: one file per capability set. */
	json_t *caps = sc->client_caps_json
			       ? json_loads(sc->client_caps_json, 0, NULL)
			       : NULL;
	json_object_set_new(key, "clientCapabilities",
			    caps ? caps : json_object());
	char *name = toolcache_name(key);
	json_decref(key);
	return name;
}

bool pool_key_per_session(const struct server_config *s,
			  const struct pool_scope_ctx *sc)
{
	return s->scope == SCOPE_SESSION ||
	       (s->scope == SCOPE_SPACE && sc->space == NULL);
}

char *pool_server_ident(const struct server_config *s)
{
	json_t *id = config_server_identity(s, false, NULL);
	char *out = json_dumps(id, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(id);
	return out;
}
