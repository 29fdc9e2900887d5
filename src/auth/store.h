/*
 * Internal to src/auth: the files behind the token store. Under
 * <state_dir>/auth/ (every folder private, 0700):
 *   tokens/<key>.json       a server's tokens (0600), key = store_key()
 *   tokens/<key>.lock       flock'd by whoever writes or refreshes them
 *   tokens/<key>.challenge  the last 401/403 challenge (for the next flow)
 *   tokens/changed          rewritten after every token write or removal:
 *                           the one file a runtime watches
 *   clients/c-<sha>.json    one client at one authorization server (by
 *                           issuer and client id), with its secret (0600):
 *                           what a refresh authenticates as
 *   clients/<sha>.json      the issuer's dynamic registration, shared by
 *                           the servers that have no client of their own
 *                           there (by issuer alone)
 */
#ifndef MCPV_AUTH_STORE_H
#define MCPV_AUTH_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "auth/auth.h"

#define STORE_MAX_FILE (128 * 1024)
#define STORE_KEY_HEX 32

/* The key of name at url: hex of SHA-256(name NUL url), first 32
 * digits, in out (STORE_KEY_HEX + 1 bytes). */
void store_key(const char *name, const char *url, char out[STORE_KEY_HEX + 1]);

/* Makes (create) or proves the auth folders private. 0 or -errno. */
int store_dirs(const char *state_dir, bool create);
/* "<state_dir>/auth/tokens/<key><ext>". Caller frees. */
char *store_path(const char *state_dir, const char *key, const char *ext);
/* "<state_dir>/auth/tokens/changed". Caller frees. */
char *store_changed_path(const char *state_dir);

/* A token file: the tokens and what the flow asked for. */
struct store_tokens {
	struct auth_tokens t;
	char *requested_scope; /* NULL: none asked */
};
void store_tokens_clear(struct store_tokens *s);

/* Reads key's tokens. 0, -ENOENT, -EINVAL (damaged), -errno. */
int store_read(const char *state_dir, const char *key, struct store_tokens *s);
/* Writes name's tokens at url atomically (0600) and rewrites the changed
 * file; s->t.generation is written as it is. The caller holds the lock. */
int store_write(const char *state_dir, const char *name, const char *url,
		const struct store_tokens *s);
/* Removes key's tokens and rewrites the changed file. 0 or -ENOENT. The
 * caller holds the lock. */
int store_remove(const char *state_dir, const char *key);

/* Takes key's lock: 0 and *fd; with wait false -EWOULDBLOCK while another
 * holds it. */
int store_lock(const char *state_dir, const char *key, bool wait, int *fd);
/* Lets it go, after writing a byte into the lock file: a waiter in
 * another process watches that file to learn it is free. */
void store_unlock(int fd);

/* The last challenge of a server (store_challenge_*). */
struct store_challenge {
	int status;		 /* 401, 403; 0: none */
	char *scope;		 /* its scope; NULL: none */
	char *resource_metadata; /* NULL: none */
	char *error;		 /* "insufficient_scope"...; NULL: none */
	int64_t at;		 /* unix seconds */
	/* Step-ups for scopes already asked for, in a row. */
	int repeats;
	bool refused; /* AUTH_REFUSED was said */
};
void store_challenge_clear(struct store_challenge *c);
int store_challenge_read(const char *state_dir, const char *key,
			 struct store_challenge *c);
int store_challenge_write(const char *state_dir, const char *key,
			  const struct store_challenge *c);
void store_challenge_remove(const char *state_dir, const char *key);

/* A client registration at one authorization server. */
struct store_client {
	char *issuer;
	char *source;	     /* "pre", "cimd", "dcr" */
	char *client_id;     /* not a secret */
	char *client_secret; /* secret; NULL: a public client */
	char *auth_method;   /* "none", "client_secret_basic", "..._post" */
	char *redirect_uri;  /* the one registered (dcr) */
	int64_t secret_expires_at; /* unix seconds; 0: never */
};
void store_client_clear(struct store_client *c);
/* The issuer's shared (dynamic) registration. 0, -ENOENT, -EINVAL. */
int store_client_read(const char *state_dir, const char *issuer,
		      struct store_client *c);
/* The registration of client_id at issuer, whatever its source. 0,
 * -ENOENT, -EINVAL. */
int store_client_find(const char *state_dir, const char *issuer,
		      const char *client_id, struct store_client *c);
/* Keeps c under its issuer and id; a "dcr" one also as the issuer's
 * shared registration (a pre-registered or metadata document client never
 * replaces it: another server at the issuer may be signed in with it). */
int store_client_write(const char *state_dir, const struct store_client *c);
/* Forgets c: its file, and the shared one while it is c. */
int store_client_remove(const char *state_dir, const struct store_client *c);

/* Wall-clock seconds, for what outlives the process (expires_at); tests
 * replace it. NULL restores time(). */
int64_t store_now(void);
void store_set_now(int64_t (*now)(void));

#endif
