/*
 * What the pool knows of servers' lists without their instances: each tool
 * cache file read once (by cache name), and the lists offered to a session
 * for a server that only it would run, until it calls one (a "ghost": no
 * instance, no copy of the environment, for every session that merely
 * lists). Bookkeeping only; the pool decides when each is used.
 */
#ifndef MCPV_KNOWN_H
#define MCPV_KNOWN_H

#include <jansson.h>

struct known;
struct toolcache;

struct known *known_new(struct toolcache *cache);
void known_free(struct known *k);

/* The lists of cache file name, read from disk the first time (borrowed;
 * NULL when absent). */
json_t *known_cached(struct known *k, const char *name);
/* File name was written with lists, or dropped (NULL). k may be NULL. */
void known_cached_set(struct known *k, const char *name, json_t *lists);

/* The lists offered for instance key without an instance, or NULL. */
json_t *known_ghost(struct known *k, const char *key);
/* Offers lists for key to session_id until known_forget or the session is
 * gone. Returns them (borrowed). */
json_t *known_ghost_add(struct known *k, const char *key,
			const char *session_id, json_t *lists);
/* key got an instance. */
void known_forget(struct known *k, const char *key);
/* Every ghost of the session goes. */
void known_session_gone(struct known *k, const char *session_id);

#endif
