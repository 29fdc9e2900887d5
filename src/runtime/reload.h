/*
 * Reloading the config: on `mcpvisor reload` and SIGHUP, and by itself when
 * the file changes on disk (watched through its folder, debounced; a write
 * that leaves the content as it was is no reload). A file that does not
 * load keeps the running config, and what is wrong goes to the log and to
 * status until the next good load. Each space's .mcp.json and the trust
 * store are watched too, so an edit of a space (which then needs allowing
 * again) or an `allow` reaches the sessions in it.
 */
#ifndef MCPV_RELOAD_H
#define MCPV_RELOAD_H

#include <stdbool.h>
#include <uv.h>

#include "config/config.h"
#include "util/sha256.h"

struct hub;
struct reloader;

/* Reads, hashes and parses the config at path: never NULL (fatal set when
 * it cannot be used); hash is "" when the file could not be read. */
struct config *reload_read(const char *path, char hash[SHA256_HEX_BYTES]);

/* Reloads into hub from config_path, whose content as running hashes to
 * hash. With watch, the file, the spaces' files and the trust store in
 * state_dir are watched from now. hub must outlive it. */
struct reloader *reloader_new(uv_loop_t *loop, struct hub *hub,
			      const char *config_path, const char *state_dir,
			      const char hash[SHA256_HEX_BYTES], bool watch);
/* Stops watching (the loop must run on to close the watches). NULL does
 * nothing. */
void reloader_free(struct reloader *r);
/* Loads the file and applies it (servers whose settings are unchanged
 * keep running). *msg says what was done or what is wrong (caller frees).
 * 0, or -EINVAL when the file does not load (the running config stays). */
int reloader_apply(struct reloader *r, char **msg);

#endif
