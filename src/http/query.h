/*
 * The parts of a request target and of a form body (query.c).
 */
#ifndef MCPV_HTTP_QUERY_H
#define MCPV_HTTP_QUERY_H

#include <stddef.h>

/* Percent- and '+'-decodes s[0..len) (a query's or a form body's name or
 * value) into a new string; NULL on a bad escape or a decoded NUL, which
 * no caller could tell from the end. Caller frees. */
char *http_form_decode(const char *s, size_t len);
/* The value of query parameter name in url, percent-decoded; NULL when
 * absent. Caller frees. */
char *http_query_param(const char *url, const char *name);
/* url without its query string. Caller frees. */
char *http_url_path(const char *url);

#endif
