/*
 * Internal to src/auth: a server's lock taken from the loop without
 * blocking it. While another process holds it (refreshing, or a login
 * storing its tokens), the lock file is watched: its holder writes into it
 * as it lets go (store_unlock). A slow timer covers a holder that died
 * without a word (the kernel freed its lock, nothing was written).
 */
#ifndef MCPV_AUTH_LOCKWAIT_H
#define MCPV_AUTH_LOCKWAIT_H

#include <stdint.h>
#include <uv.h>

#define LOCKWAIT_RETRY_MS 5000

struct lockwait;

/* fd >= 0: the lock is ours (store_unlock it). Else err: -ETIMEDOUT
 * after max_ms, or the -errno of the lock file. */
typedef void (*lockwait_cb)(void *arg, int fd, int err);

/* cb never runs from inside this call. Never fails. */
struct lockwait *lockwait_start(uv_loop_t *loop, const char *state_dir,
				const char *key, uint64_t max_ms,
				lockwait_cb cb, void *arg);
/* No callback after this. NULL does nothing. */
void lockwait_cancel(struct lockwait *w);

#endif
