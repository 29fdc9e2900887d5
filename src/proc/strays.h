/*
 * What a stop reaches beyond the processes it was given: the members of a
 * process group, and the processes of our uid that carry an owner token
 * (whatever left the group with setsid or setpgid still has the token in
 * its environment). One snapshot, read in the thread pool, finds both;
 * the token is looked for below us when we are a subreaper (orphans of our
 * servers come to us, and no other process's environment is read).
 */
#ifndef MCPV_PROC_STRAYS_H
#define MCPV_PROC_STRAYS_H

#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

#include "proc/snap.h"

/* What one search found. */
struct strays {
	int rc;			 /* 0, or -errno when /proc could not be read */
	struct proc_owned *live; /* group members and token carriers */
	size_t nlive;
	struct proc_owned *dead; /* group members that wait to be reaped */
	size_t ndead;
};

/* The search is back; found is valid during the call only. Called once,
 * never from inside strays_search. */
typedef void (*strays_cb)(void *ctx, const struct strays *found);

/* Searches for the members of the group led by leader (0: none; the
 * leader itself is never found) and the carriers of PROC_OWNER_ENV=token
 * (NULL or "": none). 0, or -errno with no callback to come. */
int strays_search(uv_loop_t *loop, pid_t leader, const char *token,
		  strays_cb cb, void *ctx);

#endif
