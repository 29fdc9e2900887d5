/*
 * OAuth for hosted MCP servers, as the MCP authorization specification
 * (2025-11-25, 2026-07-28) asks of a client: the API the runtime and
 * `mcpvisor login` use. It owns the token store (files under the state
 * folder), refresh (one at a time per server, in this process and across
 * processes), what a 401 or 403 means, and the authorization flow with its
 * loopback listener. It knows nothing of sessions or instances.
 *
 * For the runtime, in short:
 *   - auth_new() once per loop; auth_watch() to hear of a login;
 *   - before each request of a url server: auth_bearer() gives the
 *     Authorization value (or -ENOENT: send none), and when to refresh;
 *   - on a 401 or 403: auth_challenge() says what to do (send again, refresh,
 *     sign in, give up); auth_refresh() refreshes, single-flight;
 *   - for URL-mode elicitation: auth_flow_start() gives the URL to show and
 *     ends once the tokens are stored (the runtime holds its listener).
 *
 * Secrets: tokens, client secrets, codes and verifiers never reach a log, an
 * error text (every `why` here is free of them), status or a cache. Only
 * the Authorization value from auth_bearer() carries one, for the wire.
 */
#ifndef MCPV_AUTH_AUTH_H
#define MCPV_AUTH_AUTH_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

struct httpc;
struct config_oauth; /* config/config.h: a server's "oauth" */

/* Refresh this long before the access token expires. */
#define AUTH_REFRESH_EARLY_MS (60 * 1000)
/* A whole token or refresh request, connect to last byte. */
#define AUTH_HTTP_TIMEOUT_MS (30 * 1000)
/* How long a refresh waits for another process's refresh of the same
 * server (it holds the server's lock) before giving up with -ETIMEDOUT. */
#define AUTH_LOCK_WAIT_MS (2 * AUTH_HTTP_TIMEOUT_MS)
/* An interactive flow (login, an elicitation) waits this long for the
 * browser's redirect. */
#define AUTH_FLOW_TIMEOUT_MS (5 * 60 * 1000)
/* A 403 insufficient_scope whose scopes were all asked for already may
 * ask for a new sign-in this many times; then auth_challenge says
 * AUTH_REFUSED until a sign-in asks for more. */
#define AUTH_STEP_UP_REPEATS 1

/* ---- The token store ----
 *
 * A server's tokens live in <state_dir>/auth/tokens/<key>.json, key the
 * first 32 hex digits of SHA-256(name NUL url): a server renamed, or moved
 * to another url, signs in again. Folders 0700, files 0600, written by
 * atomic rename under the server's lock (<key>.lock, flock). Client
 * registrations live beside them in auth/clients/, one per client at an
 * authorization server (by issuer and client id), and the issuer's
 * dynamic registration that servers without a client of their own share.
 */

struct auth_tokens {
	char *access_token;  /* secret */
	char *refresh_token; /* secret; NULL: none was issued */
	char *token_type;    /* as issued ("Bearer") */
	char *scope;	     /* granted, else asked for; NULL: none */
	/* Unix seconds; 0: the authorization server gave no lifetime. */
	int64_t expires_at;
	char *issuer;	      /* the authorization server's */
	char *resource;	      /* the RFC 8707 resource it is for */
	char *token_endpoint; /* where it is refreshed */
	char *client_id;      /* the client it was issued to */
	/* Each write adds one: the file changed since it was read. */
	uint64_t generation;
};

/* Frees what t holds and zeroes it (secrets are wiped first). */
void auth_tokens_clear(struct auth_tokens *t);

/* Reads name's tokens at url. 0; -ENOENT when none are stored; -EINVAL
 * when the file is damaged (it is then as good as none); -errno. */
int auth_store_load(const char *state_dir, const char *name, const char *url,
		    struct auth_tokens *out);
/* Stores t for name at url, under the server's lock (waits for it: for
 * the terminal and tests; the loop never calls this). t->generation is
 * set to the stored one plus one. 0 or -errno. */
int auth_store_save(const char *state_dir, const char *name, const char *url,
		    struct auth_tokens *t);
/* Forgets name's tokens at url (the client registrations stay). 0, or
 * -ENOENT when there were none. */
int auth_store_forget(const char *state_dir, const char *name, const char *url);
/* The token file of name at url (it need not exist). Caller frees. */
char *auth_store_path(const char *state_dir, const char *name, const char *url);

/* ---- The runtime's side ---- */

struct auth;

/* One per loop. http gives the loop's HTTP client when first needed (the
 * pool's lazy one: pool_http); state_dir is the home's state folder
 * (copied). Never NULL. */
struct auth *auth_new(uv_loop_t *loop, struct httpc *(*http)(void *arg),
		      void *http_arg, const char *state_dir);
/* Cancels what is in flight (no callback runs after this), stops the
 * watch. The memory goes once libuv has closed the handles. NULL does
 * nothing. */
void auth_free(struct auth *a);

/* The Authorization header's value for name at url now ("Bearer ..."; a
 * secret, caller frees) in *value, from a cache of the token file (read on
 * first use, kept fresh by the watch). *refresh_in_ms: when to refresh
 * before the token expires (AUTH_REFRESH_EARLY_MS ahead; 0: now, -1:
 * never: no lifetime or no refresh token). Returns 0; -ENOENT when no
 * tokens are stored (send no Authorization); -EKEYEXPIRED when the access
 * token has expired and there is no refresh token (a sign-in is needed;
 * *value is still set, a server may accept it). Either out may be NULL. */
int auth_bearer(struct auth *a, const char *name, const char *url, char **value,
		int64_t *refresh_in_ms);

/* What a 401 or 403 means, decided in one place (auth_challenge). */
enum auth_verdict {
	/* The stored token is newer than the one refused (a login or
	 * another process's refresh): send again with auth_bearer's. */
	AUTH_RETRY,
	/* Refresh (auth_refresh), then send again. */
	AUTH_REFRESH,
	/* A sign-in is needed: no tokens, no refresh token, the refreshed
	 * token was refused too, or a 403 asks for more scopes. The
	 * challenge is kept for the flow (login reads it): its scope, its
	 * resource_metadata. */
	AUTH_LOGIN,
	/* A 403 insufficient_scope for scopes already asked for, past
	 * AUTH_STEP_UP_REPEATS: signing in again will not help until the
	 * user grants more. Do not start a flow by itself. */
	AUTH_REFUSED,
};

/* The server at url answered status (401 or 403) with this
 * WWW-Authenticate header (NULL when absent) to a request that carried
 * sent (the Authorization value, NULL when none). Records the challenge
 * (for login and auth_flow_start), and says what to do. */
enum auth_verdict auth_challenge(struct auth *a, const char *name,
				 const char *url, int status,
				 const char *www_authenticate,
				 const char *sent);

/* The end of a refresh or a flow: err 0 when new tokens are stored (read
 * them with auth_bearer); -EACCES when it failed for good (the refresh
 * token was refused, none is stored, the server's registration is gone):
 * a sign-in is needed; another -errno when it may work later (-ETIMEDOUT,
 * -ECONNREFUSED, -EPROTO: a bad answer, -ECANCELED) and the tokens stay.
 * why: one sentence without a secret (borrowed for the call). */
typedef void (*auth_done_cb)(void *arg, int err, const char *why);

struct auth_req; /* a refresh waiting for its result */

/* Refreshes name's tokens at url: single-flight (a refresh already
 * running for the server, in this process or another, is waited for and
 * its result shared), compare-and-swap (done under the server's lock,
 * after re-reading the file: tokens that changed since sent was refused
 * are taken as they are, with no request; a rotated refresh token is
 * stored before the lock is let go; a refused refresh token is forgotten
 * only while it is still the stored one). sent: the Authorization value
 * that was refused, NULL for a refresh ahead of expiry. cb runs once,
 * never from inside this call. 0 and *out (may be NULL) or -errno. */
int auth_refresh(struct auth *a, const char *name, const char *url,
		 const char *sent, auth_done_cb cb, void *arg,
		 struct auth_req **out);
/* Ends the wait: cb does not run (the refresh itself goes on for the
 * others). NULL does nothing. */
void auth_req_cancel(struct auth_req *r);

/* Tokens changed on disk: a login or logout (any process), another
 * process's refresh. cb runs once per server the runtime has asked
 * auth_bearer about whose file changed, with the cache already re-read:
 * call auth_bearer again (-ENOENT after a logout). One watch of the token
 * folder on the loop, a burst of writes is one callback (FILEWATCH_QUIET_MS
 * later). One cb per auth; NULL stops it. */
typedef void (*auth_watch_cb)(void *arg, const char *name, const char *url);
void auth_watch(struct auth *a, auth_watch_cb cb, void *arg);
/* Re-reads name's token file now (as the watch does). 1 when it changed
 * since last read, 0 when not, -errno. */
int auth_reload(struct auth *a, const char *name, const char *url);

/* ---- The authorization flow ---- */

struct auth_flow;

struct auth_flow_opts {
	const char *name;		  /* the server's name in the config */
	const char *url;		  /* its MCP endpoint */
	const struct config_oauth *oauth; /* NULL: none configured */
	/* The challenge that asks for it (401 or 403 and its
	 * WWW-Authenticate); 0 and NULL: the one auth_challenge recorded
	 * for the server, else the flow asks the server itself (an
	 * initialize, then tools/list, without a token). */
	int status;
	const char *www_authenticate;
	/* Scopes to ask for on top of what the challenge selects, space
	 * separated (login --scope); NULL: none. */
	const char *scope;
	/* 0: an ephemeral port for the loopback listener. */
	int port;
	uint64_t timeout_ms; /* 0: AUTH_FLOW_TIMEOUT_MS */
};

struct auth_flow_cbs {
	/* The authorization URL is ready (discovery and registration are
	 * done): show it. redirect_uri is where the listener waits
	 * ("http://127.0.0.1:PORT/callback"). The URL carries no secret (a
	 * PKCE challenge and a state only); it is http or https, checked. */
	void (*on_url)(void *arg, const char *auth_url,
		       const char *redirect_uri);
	/* Once, last: 0 when the tokens are stored. */
	auth_done_cb on_done;
};

/* Starts the flow: discovery (protected resource metadata, authorization
 * server metadata), registration (from the config, a Client ID Metadata
 * Document, Dynamic Client Registration), then on_url, then the redirect
 * (the loopback listener on 127.0.0.1, or auth_flow_redirect), the token
 * request, and the tokens stored. Callbacks never run from inside this
 * call. 0 and *out, or -errno. */
int auth_flow_start(struct auth *a, const struct auth_flow_opts *o,
		    const struct auth_flow_cbs *cbs, void *arg,
		    struct auth_flow **out);
/* The redirect URL the user pasted (from a browser on another machine):
 * checked as the listener checks what it gets. 0 when it was the one (the
 * flow goes on to the token request), else -EINVAL with *why (static). */
int auth_flow_redirect(struct auth_flow *f, const char *redirect_url,
		       const char **why);
/* Ends the flow: no callback after this; the listener closes. NULL does
 * nothing; not after on_done (the flow is gone then). */
void auth_flow_cancel(struct auth_flow *f);

#endif
