/*
 * Internal to src/auth: the client this flow signs in as, per
 * authorization server (by issuer), in the specification's order:
 * pre-registered credentials from the server's "oauth", a Client ID
 * Metadata Document where the server supports them, a registration kept
 * from before (Dynamic Client Registration, same issuer and redirect URI),
 * then a new Dynamic Client Registration (RFC 7591, application_type
 * "native"). Also the one choice of token endpoint authentication method.
 */
#ifndef MCPV_AUTH_REGISTER_H
#define MCPV_AUTH_REGISTER_H

#include "auth/meta.h"
#include "auth/store.h"

struct httpc;
struct config_oauth;
struct reg;

#define REG_CLIENT_NAME "mcpvisor"

/* err 0: c is the client (the callee's: move what you keep). Else -errno
 * and why (no secret). */
typedef void (*reg_cb)(void *arg, int err, const char *why,
		       struct store_client *c);

/* as: the validated metadata; oauth: the server's (may be NULL);
 * redirect_uri: the listener's. When no request is needed (a
 * pre-registered, metadata document or kept client) cb still runs later,
 * from the loop. 0 and *out, or -errno. */
int reg_start(struct httpc *h, const char *state_dir, const struct meta_as *as,
	      const struct config_oauth *oauth, const char *redirect_uri,
	      reg_cb cb, void *arg, struct reg **out);
void reg_cancel(struct reg *r);

/* The token endpoint authentication method to use: the registration's
 * own (registered, may be NULL) when the server supports it; with no
 * secret "none"; else client_secret_basic, then client_secret_post, as
 * the server lists them (RFC 8414: none listed means basic). */
const char *reg_auth_method(const struct meta_list *supported,
			    const char *registered, bool have_secret);
/* What a Dynamic Client Registration asks for: "none" (a public native
 * client, RFC 8252 8.4) where allowed, else what the server lists. */
const char *reg_dcr_method(const struct meta_list *supported);

#endif
