/*
 * Internal to src/auth: the token endpoint's two requests, the code
 * exchange and the refresh (RFC 6749 4.1.3 and 6, with PKCE's verifier
 * and RFC 8707's resource), with the client authenticated as its
 * registration says (none, client_secret_basic, client_secret_post).
 */
#ifndef MCPV_AUTH_TOKEN_H
#define MCPV_AUTH_TOKEN_H

#include "auth/meta.h"
#include "auth/store.h"

struct httpc;
struct treq;

struct treq_opts {
	const char *token_endpoint;
	const struct store_client *client; /* id, secret, auth method */
	/* A code exchange: code, verifier, redirect_uri; a refresh:
	 * refresh_token (secret). */
	const char *code;
	const char *code_verifier;
	const char *redirect_uri;
	const char *refresh_token;
	const char *resource; /* exactly as the metadata published it */
};

/* err 0: t holds the answer (the callee's: move what you keep). Else
 * -EACCES when the server refused for good (oauth_error says how:
 * "invalid_grant", "invalid_client"...), another -errno when it may work
 * later; why has no secret. */
typedef void (*treq_cb)(void *arg, int err, const char *why,
			struct meta_token *t, const char *oauth_error);

int treq_start(struct httpc *h, const struct treq_opts *o, treq_cb cb,
	       void *arg, struct treq **out);
void treq_cancel(struct treq *r);

/* The form body and headers a token request sends (split out so tests
 * check them without a server): *body and hdr[0] (an Authorization line
 * or NULL; both secrets) for the caller to free. */
void treq_build(const struct treq_opts *o, char **body, char **auth_header);

#endif
