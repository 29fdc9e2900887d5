/*
 * What names an instance (inside the pool): its key with secrets as
 * salted fingerprints, for status and the journal; its tool cache file;
 * whether the key names one session. pool_instance_key and
 * pool_server_ident (pool.h) are made here too.
 */
#ifndef MCPV_POOL_KEYS_H
#define MCPV_POOL_KEYS_H

#include <stdbool.h>

#include "config/config.h"
#include "pool/pool.h"

struct toolcache;

/* The key as it may be shown and stored: every env value and header a
 * fingerprint salted with salt. Caller frees. */
char *pool_key_public(const char *salt, const struct server_config *s,
		      const struct pool_scope_ctx *sc);
/* The cache's name for what s resolves to: the key with every secret a
 * fingerprint salted with the cache's salt, and without the session (its
 * tools are the same for any session with these settings), one per
 * client capability set. NULL without a cache. Caller frees. */
char *pool_key_cache_name(struct toolcache *cache,
			  const struct server_config *s,
			  const struct pool_scope_ctx *sc);
/* Whether the key names one session (session scope, or space scope
 * without a space): the instance ends with it. */
bool pool_key_per_session(const struct server_config *s,
			  const struct pool_scope_ctx *sc);

#endif
