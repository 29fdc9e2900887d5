/*
 * One file watched for changes through its folder (inotify by way of
 * uv_fs_event), so that an editor replacing the file by rename (vim, VS
 * Code, `mv tmp FILE`) is seen as well as one writing it in place. Other
 * names in the folder are ignored; a burst of events becomes one callback
 * (debounce.h, on the replaceable clock); when the folder itself goes
 * (removed, renamed away) the watch is armed again on whatever folder holds
 * the path next, tried every FILEWATCH_REARM_MS while there is none. A path
 * that is a symlink (into a dotfiles folder) is watched at its target too.
 */
#ifndef MCPV_FILEWATCH_H
#define MCPV_FILEWATCH_H

#include <stdint.h>
#include <uv.h>

/* A burst is over after this long without an event, or this long after
 * its first event: an editor's save (write, rename, chmod) is one burst. */
#define FILEWATCH_QUIET_MS 200
#define FILEWATCH_MAX_MS 2000
#define FILEWATCH_REARM_MS 1000

struct filewatch;

/* The file may have changed: events is how many file system events the
 * burst folded (a re-armed watch counts one), span_ms their spread. The
 * callback may free the watch. */
typedef void (*filewatch_cb)(void *arg, const char *path, unsigned events,
			     uint64_t span_ms);

/* Watches path (made absolute against the working folder). Its folder need
 * not exist yet. Never NULL. */
struct filewatch *filewatch_new(uv_loop_t *loop, const char *path,
				filewatch_cb cb, void *arg);
/* Stops at once (no callback after this); the memory goes once libuv has
 * closed the handles, so the loop must run on. NULL does nothing. */
void filewatch_free(struct filewatch *w);
/* 1 while the folder is watched, 0 while waiting for it to exist. */
int filewatch_armed(const struct filewatch *w);

#endif
