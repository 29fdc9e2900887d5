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

struct hub;
struct reloader;

/* The bytes of the config file as last read: a change that comes back to
 * them is no reload. Kept, not hashed: comparing costs less than a digest,
 * and a digest would start OpenSSL (some 2 MB of resident pages) in a
 * runtime that may never need it. */
struct reload_seen {
	char *text; /* NULL: the file could not be read */
	size_t len;
};
void reload_seen_clear(struct reload_seen *seen);

/* Reads and parses the config at path, keeping its bytes in *seen (cleared
 * first): never NULL (fatal set when it cannot be used). */
struct config *reload_read(const char *path, struct reload_seen *seen);

/* Reloads into hub from config_path, whose content as running is *seen
 * (taken: *seen is empty after). With watch, the file, the spaces' files
 * and the trust store in state_dir are watched from now. hub must outlive
 * it. */
struct reloader *reloader_new(uv_loop_t *loop, struct hub *hub,
			      const char *config_path, const char *state_dir,
			      struct reload_seen *seen, bool watch);
/* Stops watching (the loop must run on to close the watches). NULL does
 * nothing. */
void reloader_free(struct reloader *r);
/* Loads the file and applies it (servers whose settings are unchanged
 * keep running). *msg says what was done or what is wrong (caller frees).
 * 0, or -EINVAL when the file does not load (the running config stays). */
int reloader_apply(struct reloader *r, char **msg);

#endif
