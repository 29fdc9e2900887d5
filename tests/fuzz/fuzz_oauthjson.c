/*
 * libFuzzer harness for the OAuth JSON readers (src/auth/meta.c: protected
 * resource metadata, authorization server metadata, token, error and
 * registration responses) and what the flow does at once with what they
 * give: the resource check and metadata URLs (src/auth/urls.c) and the
 * scope choice (src/auth/scope.c). The first byte picks the reader ("0"
 * resource metadata, "1" authorization server, "2" token, "3" error, "4"
 * registration), the rest is the document. Beyond the sanitizers: a refused
 * document leaves nothing behind (all fields NULL); an accepted one has its
 * required fields and keeps META_MAX_* (lists, URLs, tokens), an access token
 * fit for a header line and a lifetime of -1 or within a year; a chosen scope
 * keeps SCOPE_MAX_* and holds no byte a scope-token excludes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/meta.h"
#include "auth/scope.h"
#include "auth/urls.h"

static void fo_fail(const char *what)
{
	fprintf(stderr, "FAIL: %s\n", what);
	abort();
}

static void fo_list(const struct meta_list *l)
{
	if (l->n > META_MAX_LIST || (!l->present && l->n))
		fo_fail("a list past META_MAX_LIST or present but absent");
	for (size_t i = 0; i < l->n; i++)
		if (strlen(l->v[i]) > META_MAX_URL)
			fo_fail("a list entry past META_MAX_URL");
}

static void fo_url(const char *s, bool required)
{
	if (s == NULL) {
		if (required)
			fo_fail("a required URL is missing");
		return;
	}
	if (strlen(s) > META_MAX_URL)
		fo_fail("a URL past META_MAX_URL");
	char *c[URLS_MAX_CANDIDATES];
	size_t n = urls_as_candidates(s, c);
	if (n > URLS_MAX_CANDIDATES)
		fo_fail("too many candidates");
	for (size_t i = 0; i < n; i++) {
		if (!urls_secure(c[i]) && urls_secure(s))
			fo_fail("a candidate less secure than its issuer");
		free(c[i]);
	}
	n = urls_prm_candidates(s, c);
	for (size_t i = 0; i < n; i++)
		free(c[i]);
}

static void fo_scope(const char *s)
{
	if (s == NULL)
		return;
	if (strlen(s) > SCOPE_MAX_LEN)
		fo_fail("a scope past SCOPE_MAX_LEN");
	if (scope_bad(s))
		fo_fail("a chosen scope with a bad byte");
	size_t words = 1;
	for (const char *p = s; *p; p++)
		words += *p == ' ';
	if (words > SCOPE_MAX_WORDS)
		fo_fail("a scope past SCOPE_MAX_WORDS");
	if (s[0] == ' ' || s[strlen(s) - 1] == ' ' || strstr(s, "  "))
		fo_fail("a chosen scope with an empty word");
}

static void fo_prm(const char *d, size_t n)
{
	struct meta_prm m;
	const char *why = NULL;
	if (meta_parse_prm(d, n, &m, &why) < 0) {
		if (why == NULL || m.resource || m.authorization_servers.v)
			fo_fail("a refused PRM left something behind");
		return;
	}
	if (m.authorization_servers.n == 0)
		fo_fail("a PRM without authorization servers");
	fo_url(m.resource, true);
	fo_list(&m.authorization_servers);
	fo_list(&m.scopes_supported);
	(void)urls_resource_ok(m.resource, "https://mcp.example.com/mcp");
	(void)urls_resource_ok("https://mcp.example.com", m.resource);
	char *s = scope_select(NULL, &m.scopes_supported, &m.scopes_supported,
			       NULL, NULL);
	fo_scope(s);
	char *u = scope_union(s, m.resource);
	fo_scope(u);
	free(u);
	free(s);
	meta_prm_clear(&m);
}

static void fo_as(const char *d, size_t n)
{
	struct meta_as m;
	const char *why = NULL;
	if (meta_parse_as(d, n, &m, &why) < 0) {
		if (why == NULL || m.issuer || m.token_endpoint)
			fo_fail("a refused AS document left something behind");
		return;
	}
	fo_url(m.issuer, true);
	fo_url(m.authorization_endpoint, true);
	fo_url(m.token_endpoint, true);
	fo_url(m.registration_endpoint, false);
	fo_list(&m.scopes_supported);
	fo_list(&m.response_types_supported);
	fo_list(&m.code_challenge_methods_supported);
	fo_list(&m.token_endpoint_auth_methods_supported);
	char *s = scope_select("a b", &m.scopes_supported, &m.scopes_supported,
			       "c", NULL);
	fo_scope(s);
	free(s);
	meta_as_clear(&m);
}

static void fo_token(const char *d, size_t n)
{
	struct meta_token t;
	const char *why = NULL;
	if (meta_parse_token(d, n, &t, &why) < 0) {
		if (why == NULL || t.access_token || t.refresh_token)
			fo_fail("a refused token left something behind");
		return;
	}
	if (t.access_token == NULL || t.access_token[0] == '\0' ||
	    strlen(t.access_token) > META_MAX_TOKEN)
		fo_fail("an access token missing or past META_MAX_TOKEN");
	for (const unsigned char *p = (const unsigned char *)t.access_token; *p;
	     p++)
		if (*p < 0x21 || *p > 0x7e)
			fo_fail("an access token a header cannot carry");
	if (t.refresh_token && strlen(t.refresh_token) > META_MAX_TOKEN)
		fo_fail("a refresh token past META_MAX_TOKEN");
	if (t.expires_in != -1 &&
	    (t.expires_in < 0 || t.expires_in > 366 * 24 * 3600))
		fo_fail("a lifetime neither -1 nor within a year");
	char *s = scope_union(NULL, t.scope);
	fo_scope(s);
	free(s);
	meta_token_clear(&t);
}

static void fo_error(const char *d, size_t n)
{
	struct meta_error e;
	if (meta_parse_error(d, n, &e) < 0) {
		if (e.error || e.error_description)
			fo_fail("a refused error left something behind");
		return;
	}
	if (e.error && strlen(e.error) > META_MAX_WORD)
		fo_fail("an error past META_MAX_WORD");
	for (int k = 0; k < 2; k++) {
		const char *t = k ? e.error_description : e.error;
		for (const unsigned char *p = (const unsigned char *)t; p && *p;
		     p++)
			if (*p < 0x20 || *p > 0x7e || *p == '"' || *p == '\\')
				fo_fail("an error text outside RFC 6749 5.2");
	}
	meta_error_clear(&e);
}

static void fo_client(const char *d, size_t n)
{
	struct meta_client c;
	const char *why = NULL;
	if (meta_parse_client(d, n, &c, &why) < 0) {
		if (why == NULL || c.client_id || c.client_secret)
			fo_fail("a refused registration left something "
				"behind");
		return;
	}
	if (c.client_id == NULL || c.client_id[0] == '\0' ||
	    strlen(c.client_id) > META_MAX_URL)
		fo_fail("a client_id missing or past META_MAX_URL");
	if (c.client_secret_expires_at < 0)
		fo_fail("a negative secret expiry");
	meta_client_clear(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const char *d = (const char *)data + 1;
	size_t n = size - 1;
	switch ((uint8_t)(data[0] - (uint8_t)'0') % 5) {
	case 0:
		fo_prm(d, n);
		break;
	case 1:
		fo_as(d, n);
		break;
	case 2:
		fo_token(d, n);
		break;
	case 3:
		fo_error(d, n);
		break;
	default:
		fo_client(d, n);
		break;
	}
	return 0;
}
