/*
 * Where OAuth looks and what it accepts, as plain string work on the URLs
 * servers publish (never re-serialised: a resource or issuer is compared
 * and sent exactly as written): the protected resource metadata and
 * authorization server metadata candidates in the specification's order,
 * the check that a resource belongs to the server, and which URLs may be
 * used at all (https, or http on a loopback host).
 */
#ifndef MCPV_AUTH_URLS_H
#define MCPV_AUTH_URLS_H

#include <stdbool.h>
#include <stddef.h>

#define URLS_MAX_CANDIDATES 3

/* Splits an http(s) URL into its origin ("scheme://authority", as
 * written) and path (from the first '/' after the authority to the query
 * or fragment; "" when none). 0, or -EINVAL when it is no http(s) URL
 * with a host, or holds a byte no URL carries. Either out may be NULL;
 * the caller frees. */
int urls_split(const char *url, char **origin, char **path);

/* Whether a URL may be fetched or shown for sign-in: https, or http whose
 * host is loopback (localhost, *.localhost, 127.0.0.0/8, [::1]). */
bool urls_secure(const char *url);
/* Whether its host is loopback, as urls_secure takes it. */
bool urls_loopback(const char *url);

/* The protected resource metadata URLs for an MCP endpoint, in order: the
 * path-inserted one (when the endpoint has a path), then the root one
 * (RFC 9728 3.1). Returns how many were set in out (caller frees each). */
size_t urls_prm_candidates(const char *endpoint,
			   char *out[URLS_MAX_CANDIDATES]);
/* The authorization server metadata URLs for an issuer, in order: with a
 * path, RFC 8414 path-inserted, OIDC path-inserted, OIDC path-appended;
 * without, RFC 8414 then OIDC. */
size_t urls_as_candidates(const char *issuer, char *out[URLS_MAX_CANDIDATES]);

/* Whether the resource a protected resource metadata document names is
 * the endpoint's: the same origin (scheme and host compared without case)
 * and its path a prefix of the endpoint's on a segment boundary ("/mcp"
 * covers "/mcp" and "/mcp/x", not "/mcpx"; "" covers all). */
bool urls_resource_ok(const char *resource, const char *endpoint);

/* Whether two URLs have the same origin (scheme and host without case). */
bool urls_same_origin(const char *a, const char *b);

#endif
