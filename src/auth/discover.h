/*
 * Internal to src/auth: discovery for one flow, asked fresh every time (a
 * server may move to another authorization server): the protected
 * resource metadata (the challenge's resource_metadata, else the
 * well-known URLs at the endpoint's path, then at its root), the check
 * that its resource is the endpoint's, then the authorization server
 * metadata of its first authorization server in the specification's order,
 * whose issuer must be the one asked for, and which must offer PKCE S256.
 */
#ifndef MCPV_AUTH_DISCOVER_H
#define MCPV_AUTH_DISCOVER_H

#include "auth/meta.h"

struct httpc;
struct discover;

struct discover_result {
	struct meta_prm prm;
	struct meta_as as; /* as.issuer is the validated issuer */
};

/* err 0: r is filled (the callee's: move what you keep out of it). Else
 * -errno and why (no secret): -ENOENT nothing found, -EACCES a check
 * refused what was found, or the HTTP error. */
typedef void (*discover_cb)(void *arg, int err, const char *why,
			    struct discover_result *r);

/* endpoint: the MCP server's URL; resource_metadata: the challenge's, or
 * NULL. cb never runs from inside this call. 0 and *out, or -errno. */
int discover_start(struct httpc *h, const char *endpoint,
		   const char *resource_metadata, discover_cb cb, void *arg,
		   struct discover **out);
void discover_cancel(struct discover *d);
void discover_result_clear(struct discover_result *r);

#endif
