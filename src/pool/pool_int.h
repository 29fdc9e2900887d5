/*
 * The pool's own structures, for its files: pool.c (entries, keys in use,
 * sessions, reload) and idle.c (the idle timer, and the revive of a
 * followed instance that failed).
 */
#ifndef MCPV_POOL_INT_H
#define MCPV_POOL_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "instance/instance.h"
#include "pool/pool.h"
#include "util/keymap.h"

struct pool_entry {
	struct pool_entry *next, *prev;
	struct pool *pool;
	struct instance *inst;
	char *name;
	char *ident;	  /* connection identity, to notice changes */
	char *cache_name; /* tool cache file, NULL without a cache */
	struct lease_set *leases;
	uint64_t idle_ms;
	uv_timer_t idle_timer;
	unsigned live;	  /* owned resources (processes, containers)
			     not yet gone */
	bool per_session; /* its key names one session: it ends with it */
	bool closing;	  /* closed; kept until what it owns is gone */
};

struct pool_held {
	struct pool_held *next;
	char *name;
};

struct pool {
	uv_loop_t *loop;
	struct instance_cbs cbs;
	void *ctx;
	struct journal *journal;
	struct toolcache *cache;
	uint64_t idle_ms;
	struct pool_entry *entries; /* oldest first */
	struct pool_entry *last;
	struct keymap by_key;	/* instance key -> entry */
	struct known *known;	/* lists known without instances */
	struct pool_held *held; /* servers stopped on purpose */
	unsigned nclosing;	/* closed entries not yet freed */
	/* The loop's HTTP client, made when the first url server starts
	 * (it loads libcurl): a runtime of stdio servers never carries it. */
	struct httpc *http;
	bool http_said;	   /* its failure was logged */
	struct auth *auth; /* url servers' tokens; borrowed, NULL: none */
	char salt[65];	   /* for fingerprints of secrets */
	bool freeing;
};

/* idle.c: (re)arms e's timer: the idle close of an entry no request
 * holds, or the start again of a followed one that failed. */
void pool_idle_arm(struct pool_entry *e);
/* idle.c: whether sessions that use it follow resources of its server
 * (their updates come when the resources change, not when asked). */
bool pool_entry_followed(const struct pool_entry *e);

/* pool.c: closes e at once (why is logged); freed once what it owns is
 * gone. */
void pool_entry_close(struct pool_entry *e, const char *why);

#endif
