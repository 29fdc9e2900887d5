/*
 * The runtime of a home as the CLI, the relay and the runtime itself see
 * it: the lock that makes one runtime the home's only one, and the runtime
 * file that says where it listens.
 */
#ifndef MCPV_HOME_INFO_H
#define MCPV_HOME_INFO_H

#include <stdbool.h>

/* What the runtime file says (home/info.c). */
struct runtime_info {
	long pid;
	int port;
	int asked_port; /* the default port when it was taken, else 0 */
	char *url;
	char *socket;
	char *error; /* why the home cannot be used, when -EPERM */
};

/* Finds the runtime of home. The home's lock decides whether one runs, not
 * the pid in the file (a pid may be reused); a runtime file whose socket
 * answers without the lock is a runtime from before it (an upgraded binary)
 * and counts as running. Returns 0 with info filled;
 * -ENOENT when no runtime holds the home; -ESRCH when none does but a
 * runtime file is left (stale; info has what it says); -EAGAIN when one
 * holds the home but has no endpoint yet, or no more (starting, stopping;
 * info.pid is the holder's); -EPERM when the home's folders are not
 * private (info.error says why). */
int runtime_info_read(const char *home, struct runtime_info *info);
void runtime_info_free(struct runtime_info *info);
/* Removes a stale runtime file and socket while no runtime holds the home
 * and nothing answers on the socket. 0, or -EBUSY when a runtime runs. */
int runtime_info_clear(const char *home);

/* The home's lock file: taken by runtime_serve before anything in the home
 * is read and held for its whole life (flock, so the kernel drops it when
 * the process dies however it dies). Returns the fd, or -EWOULDBLOCK with
 * *holder the pid of the runtime that holds it (0 when unknown). */
int runtime_lock_take(const char *lock_file, long *holder);
/* 1 when a runtime holds the lock (*holder its pid, 0 when unknown), 0 when
 * none does; then *fd (when not NULL) holds a shared lock that keeps a new
 * runtime out until closed (-1 when there is no lock file). */
int runtime_lock_probe(const char *lock_file, long *holder, int *fd);
/* Removes the runtime file only while it names this process: a file that a
 * later runtime wrote is its own. */
void runtime_file_remove_own(const char *runtime_file);
/* True when something accepts connections on the Unix socket at path: a
 * live runtime's socket, never to be unlinked. */
bool runtime_socket_answers(const char *path);

#endif
