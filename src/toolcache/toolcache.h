/*
 * The tool cache: each server's last lists (tools, prompts, resources,
 * templates), written atomically (write, fsync, rename) to
 * CACHE_DIR/tools/<sha256>.json. The name hashes the instance key with
 * every secret reduced to a salted fingerprint, so no secret reaches the
 * file or its name. A corrupt or foreign file is ignored with a warning.
 */
#ifndef MCPV_TOOLCACHE_H
#define MCPV_TOOLCACHE_H

#include <jansson.h>
#include <stdbool.h>
#include <uv.h>

#define TOOLCACHE_MAX_BYTES (8 * 1024 * 1024)
#define TOOLCACHE_FORMAT 1
/* What an attached cache keeps in memory (file texts); past it, loads of
 * what was left out read the disk. */
#define TOOLCACHE_MEM_MAX (64 * 1024 * 1024)

struct toolcache;

/* cache_dir: the runtime's cache directory (tools/ is made inside, 0700).
 * The salt for fingerprints is kept in cache_dir/salt (created once, 0600,
 * random), so names are stable across restarts but useless elsewhere. */
int toolcache_open(const char *cache_dir, struct toolcache **out);
void toolcache_free(struct toolcache *tc);

/* From now on no disk I/O on the loop: every file in tools/ is read into
 * memory now (before the loop serves), loads are answered from memory,
 * and stores and drops are written in the thread pool, one at a time and
 * in order (an op not yet started is replaced by a newer one for the same
 * name). Without a loop (tools, tests) every call goes to the disk. */
void toolcache_attach(struct toolcache *tc, uv_loop_t *loop);
/* Stops queueing (before the loop is closed); queued ops still complete in
 * the loop, and whatever is left is done by toolcache_free. */
void toolcache_detach(struct toolcache *tc);

/* The salt, for config_server_identity(..., true, salt). */
const char *toolcache_salt(const struct toolcache *tc);

/* The file name part (64 hex chars) for an identity document: canonical
 * JSON (sorted keys, compact) of ident hashed with SHA-256. ident must
 * already hold fingerprints, never secrets. Caller frees. */
char *toolcache_name(const json_t *ident);

/* Stores lists (an object {"tools":[...],"prompts":[...],...}) under
 * name. The file also records the format and the name it was written as,
 * so a copied or renamed file is not trusted. 0 or -errno: -EINVAL for a
 * name that is not 64 lowercase hex digits, or lists with a member other
 * than tools, prompts, resources, resourceTemplates (arrays of objects),
 * instructions and era (strings); -EFBIG when the file would pass
 * TOOLCACHE_MAX_BYTES.
 */
int toolcache_store(struct toolcache *tc, const char *name,
		    const json_t *lists);
/* Loads lists stored under name: a new reference, or NULL when absent,
 * corrupt, foreign or over the size limit (logged as a warning unless
 * simply absent). */
json_t *toolcache_load(struct toolcache *tc, const char *name);
/* True when no name can be found: every file is in memory and there are
 * none. Callers skip computing a name (a SHA-256) that cannot match. */
bool toolcache_empty(const struct toolcache *tc);
/* Drops the file (a server that failed to start). */
void toolcache_drop(struct toolcache *tc, const char *name);

#endif
