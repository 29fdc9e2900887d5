/*
 * Which scopes a sign-in asks for, decided here only: the challenge's
 * scope, else the resource's scopes_supported, else none (MCP
 * 2025-11-25 "Scope Selection Strategy"); on a step-up the union of what
 * was asked before, what was granted and what the 403 names (2026-07-28,
 * SEP-2350); offline_access only when the authorization server lists it
 * (SEP-2207). Scopes are space-separated words (RFC 6749 3.3).
 */
#ifndef MCPV_AUTH_SCOPE_H
#define MCPV_AUTH_SCOPE_H

#include <stdbool.h>
#include <stddef.h>

#include "auth/meta.h"

#define SCOPE_MAX_WORDS 64
#define SCOPE_MAX_LEN 4096

/* What the sign-in asks for (NULL: omit "scope"). challenge: the scope
 * of the 401/403 (NULL when none); prm: the resource's scopes_supported;
 * as: the authorization server's (for offline_access); earlier: what was
 * asked and granted before, for a step-up (NULL when this is no step-up);
 * extra: configured or asked on the command line (NULL: none). Caller
 * frees. The result keeps the order first seen and holds each word once,
 * at most SCOPE_MAX_WORDS and SCOPE_MAX_LEN (more is dropped). */
char *scope_select(const char *challenge, const struct meta_list *prm,
		   const struct meta_list *as, const char *earlier,
		   const char *extra);
/* a and b merged (either may be NULL), each word once. NULL when both
 * are empty. */
char *scope_union(const char *a, const char *b);
/* Whether every word of want is in have (NULL want: yes). */
bool scope_covers(const char *have, const char *want);
/* Whether s holds a byte RFC 6749's scope-token excludes (a quote, a
 * backslash, a control byte): then it is not used. */
bool scope_bad(const char *s);

#endif
