/*
 * The text encodings OAuth uses: percent-encoding for form bodies and query
 * strings (RFC 3986 unreserved characters pass), the parsing of a query
 * string such as the redirect's (bounded: it comes from whoever reaches the
 * loopback listener), base64 (HTTP Basic) and base64url (PKCE).
 */
#ifndef MCPV_AUTH_FORM_H
#define MCPV_AUTH_FORM_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

#define FORM_MAX_QUERY 8192 /* a query string (the redirect's) */
#define FORM_MAX_PARAMS 32  /* parameters in it */

/* Appends s percent-encoded (every byte but ALPHA DIGIT - . _ ~). */
void form_escape(struct buf *out, const char *s);
/* Appends "&name=value" (no '&' when out is empty, or when it ends in '?'
 * or '&'), both escaped. A NULL value appends nothing. */
void form_add(struct buf *out, const char *name, const char *value);

struct form_param {
	char *name;  /* decoded */
	char *value; /* decoded */
};

struct form_query {
	struct form_param *params;
	size_t nparams;
};

/* Parses a query string (what follows '?', without a fragment):
 * name=value pairs split at '&', '+' as a space, %XX decoded. 0, or
 * -EINVAL (bad %-escape, a NUL decoded, a name twice: RFC 6749 4.1.2
 * says a response parameter must not repeat), -E2BIG (over FORM_MAX_QUERY
 * or FORM_MAX_PARAMS). q is filled only on 0. */
int form_parse(const char *s, size_t len, struct form_query *q);
/* A parameter's decoded value, NULL when absent. */
const char *form_get(const struct form_query *q, const char *name);
void form_query_clear(struct form_query *q);

#endif
