/*
 * Trust in spaces: a space's .mcp.json names commands to run, and anyone
 * who can write a folder can write one. Its servers run only after the
 * user allowed that file (`mcpvisor allow`), as direnv does: the store
 * keeps each allowed folder's real path and the SHA-256 of the file's
 * content, so a changed file needs allowing again.
 */
#ifndef MCPV_TRUST_H
#define MCPV_TRUST_H

#include "config/config.h"

#define TRUST_FILE "trust.json"
#define TRUST_MAX_FILE (4 * 1024 * 1024)

/* The state directory whose store the runtime reads (set once at start;
 * unset: no space is trusted). Copies dir. */
void trust_set_state_dir(const char *dir);
void trust_clear_state_dir(void);

/* Loads file, a space's config, through the store of state_dir (NULL:
 * the runtime's): read once, hashed and parsed from the same bytes. When
 * it is not allowed, every server in it gets untrusted (the command that
 * allows it) and an error saying so, and those that would override a
 * server of global are left out, so the user's own servers keep working.
 * Never NULL. */
struct config *trust_load_space(const char *state_dir, const char *file,
				const struct config *global);

/* When name (a tool or prompt name as clients see it) belongs to an
 * untrusted server among srv, the error to answer with; else NULL. */
const char *trust_refusal(const struct server_config *const *srv, size_t n,
			  const char *name);

/* Records dir's .mcp.json as allowed (folder's real path, content hash),
 * or forgets it. *msg says what was done or why not (caller frees).
 * 0 or -errno. */
int trust_allow(const char *state_dir, const char *dir, char **msg);
int trust_revoke(const char *state_dir, const char *dir, char **msg);

#endif
