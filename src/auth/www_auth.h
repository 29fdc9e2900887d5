/*
 * The WWW-Authenticate header (RFC 9110 11.6.1): every challenge in it, each
 * a scheme and either a token68 or auth-params whose values may be quoted
 * strings with backslash escapes. A server's 401 and 403 say here where its
 * protected resource metadata is, which scope it wants and why it refused.
 */
#ifndef MCPV_AUTH_WWW_AUTH_H
#define MCPV_AUTH_WWW_AUTH_H

#include <stddef.h>

#define WWW_AUTH_MAX_LEN 8192	  /* the header's value (all lines) */
#define WWW_AUTH_MAX_CHALLENGES 8 /* schemes in it */
#define WWW_AUTH_MAX_PARAMS 16	  /* auth-params of one challenge */

struct www_auth_param {
	char *name;  /* lower-cased */
	char *value; /* unquoted, escapes removed */
};

struct www_auth_challenge {
	char *scheme;  /* as written ("Bearer") */
	char *token68; /* NULL unless the challenge is one */
	struct www_auth_param *params;
	size_t nparams;
};

struct www_auth {
	struct www_auth_challenge *ch;
	size_t n;
};

/* Parses the value (several header lines joined with ", " are one value).
 * 0, -EINVAL (not the grammar: the challenge cannot be trusted in part) or
 * -E2BIG (over a limit). w is filled only on 0. A parameter named twice
 * in one challenge keeps its first value. */
int www_auth_parse(const char *s, size_t len, struct www_auth *w);
void www_auth_clear(struct www_auth *w);
/* The first challenge of scheme (case-insensitive), NULL when none. */
const struct www_auth_challenge *www_auth_find(const struct www_auth *w,
					       const char *scheme);
/* A parameter's value (name case-insensitive), NULL when absent. */
const char *www_auth_param(const struct www_auth_challenge *c,
			   const char *name);

#endif
