/*
 * Finding, starting and replacing the runtime of a home for the relay.
 * A runtime this relay started (known by pid and start time) may be
 * stopped (the stop ladder: SIGTERM, the grace, SIGKILL; the relay stops
 * its own runtime only once it is lost: frozen or broken) and replaced;
 * any other is never signalled: the host is told what to stop. The home's lock
 * decides which of several starting relays' runtimes wins; the others find the
 * winner's runtime file.
 */
#ifndef MCPV_RELAY_LAUNCH_H
#define MCPV_RELAY_LAUNCH_H

#include <stdbool.h>
#include <uv.h>

#include "relay/relay.h"

/* The most a start (or a marked restart) is waited for. */
#define LAUNCH_START_MS 30000
/* Where no event can tell that the home changed (no inotify on its
 * folders, no pidfd for a process it waits on), it is looked at again
 * this often. */
#define LAUNCH_BLIND_MS 50

struct launch;

/* done(arg, fail): fail NULL when a runtime answers at launch_socket,
 * else one sentence for the host (borrowed for the call). */
typedef void (*launch_done_cb)(void *arg, const char *fail);

/* home NULL: MCPVISOR_HOME or XDG. */
struct launch *launch_new(uv_loop_t *loop, const char *home,
			  launch_done_cb done, void *arg);
/* Closes its handles; the runtime it started runs on (other hosts may use
 * it). Run the loop after. */
void launch_free(struct launch *l);
void launch_recover(struct launch *l, enum relay_loss why);
/* The Unix socket of the runtime found last. */
const char *launch_socket(const struct launch *l);
/* The runtime this relay started, while it is the one found. */
bool launch_owns(const struct launch *l);

/* "pid N (COMMAND)" from /proc, for what to tell the host (to free). */
char *launch_describe_pid(long pid);

#endif
