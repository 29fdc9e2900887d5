/*
 * Internal to src/auth: what struct auth holds and what its parts (the
 * cache and watch in auth.c, refresh.c, flow.c) share.
 */
#ifndef MCPV_AUTH_INT_H
#define MCPV_AUTH_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "auth/auth.h"
#include "auth/store.h"

struct filewatch;
struct refresh;

/* One server the runtime asked about: its token file as last read. */
struct auth_entry {
	struct auth_entry *next;
	char *name;
	char *url;
	char key[STORE_KEY_HEX + 1];
	bool loaded;
	int load_rc; /* 0, -ENOENT, -EINVAL... */
	struct store_tokens s;
	bool asked;	    /* auth_bearer was called: the watch reports it */
	struct refresh *rf; /* the refresh in flight, NULL when none */
	/* SHA-256 of the access token our last refresh got, and when: a
	 * 401 on it right after means refreshing does not help. */
	unsigned char refreshed[32];
	uint64_t refreshed_ms;
	bool has_refreshed;
};

struct auth {
	uv_loop_t *loop;
	struct httpc *(*http)(void *arg);
	void *http_arg;
	char *state_dir;
	struct auth_entry *entries;
	struct filewatch *watch;
	auth_watch_cb watch_cb;
	void *watch_arg;
	struct auth_flow *flows; /* in flight, ended by auth_free */
};

/* The entry of name at url, made when missing (not loaded). */
struct auth_entry *auth_entry_get(struct auth *a, const char *name,
				  const char *url);
/* Re-reads e's file: 1 when it differs from what was cached, 0 when not. */
int auth_entry_load(struct auth *a, struct auth_entry *e);
/* The loop's HTTP client, NULL with *why when libcurl cannot be had. */
struct httpc *auth_http(struct auth *a, const char **why);

/* refresh.c: ends every refresh of e (no callbacks). */
void refresh_drop(struct refresh *rf);

/* flow.c: a flow unlinks itself from a->flows when it ends. */
void flow_unlink(struct auth *a, struct auth_flow *f);

#endif
