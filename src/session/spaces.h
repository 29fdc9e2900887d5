/*
 * The .mcp.json of each space, read off the loop. A space's file is read
 * and hashed by a thread-pool thread (a slow or hung filesystem under a
 * space folder must not stall every session), and what was read is kept
 * per space: each request revalidates it with one stat in the same work
 * item (an edit is seen), and requests for a space while its work item
 * runs wait for that one, so sessions opened at once share one read.
 */
#ifndef MCPV_SPACES_H
#define MCPV_SPACES_H

#include <uv.h>

#include "trust/trust.h"

/* Spaces kept at most: a client names any folder it likes. */
#define SPACES_MAX 256

struct spaces;
struct spaces_wait;

/* ts is borrowed (trust_space_ref to keep it); never NULL. */
typedef void (*spaces_cb)(void *arg, const char *dir, struct trust_space *ts);

struct spaces *spaces_new(uv_loop_t *loop);
/* Waiters are dropped; a work item under way finishes and frees itself. */
void spaces_free(struct spaces *sp);
/* Loads dir's .mcp.json (dir absolute); cb runs later, on the loop. The
 * handle is the caller's until cb runs: spaces_cancel drops the wait (and
 * must be called even after spaces_free, which detaches it; cb never
 * comes then). NULL when cb already ran. */
struct spaces_wait *spaces_get(struct spaces *sp, const char *dir, spaces_cb cb,
			       void *arg);
void spaces_cancel(struct spaces_wait *w);
/* The same without a handle (cb with the same arg waits once). */
void spaces_refresh(struct spaces *sp, const char *dir, spaces_cb cb,
		    void *arg);
/* From now on each space's .mcp.json is watched (util/filewatch.h): after
 * an edit it is read again, and when what it says changed (its content,
 * or whether the trust store allows it) on_change gets the new result, as
 * a reload gives it. An edit that leaves it as it was does nothing. */
void spaces_watch(struct spaces *sp, spaces_cb on_change, void *arg);
/* Every space read again and compared the same way: the trust store
 * changed (`mcpvisor allow` or `revoke`). */
void spaces_recheck(struct spaces *sp);
/* The last result for dir, or NULL (borrowed; no disk). */
struct trust_space *spaces_cached(struct spaces *sp, const char *dir);

#endif
