/*
 * Who may use the endpoint: on TCP, the runtime's own user (by the peer
 * uid the kernel reports) and clients that present one of the bearer API
 * keys; on the Unix socket (mode 0600), whoever can open it.
 */
#ifndef MCPV_AUTH_H
#define MCPV_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#define AUTH_MAX_KEY_FILE (64 * 1024)

/* Reads `serve --api-key-file`: one key per line; blank lines and lines
 * starting with '#' are skipped. Refused (-EPERM) when the file is
 * readable or writable by anyone but its owner. The keys are the
 * runtime's for its life. 0 or -errno with *err a message (caller frees).
 */
int auth_keys_load_file(const char *path, char **err);
/* Forgets the keys of auth_keys_load_file. */
void auth_keys_clear(void);
/* How many keys the file gave. */
size_t auth_file_key_count(void);

/* Whether presented (len bytes) is one of keys, or of the file's keys,
 * in time that does not depend on where they differ. */
bool auth_key_match(char *const *keys, size_t nkeys, const char *presented,
		    size_t len);

#endif
