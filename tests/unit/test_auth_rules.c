/*
 * The rules of src/auth that need no server: where metadata is looked for
 * (RFC 9728 and RFC 8414 + OpenID Connect, in order, for issuers with and
 * without a path), whose resource a document may name, which URLs may be
 * used, which scopes a sign-in asks for (challenge, else scopes_supported,
 * else none; the step-up union; offline_access), which token endpoint
 * authentication is used, and what the token requests send for each.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "auth/form.h"
#include "auth/register.h"
#include "auth/scope.h"
#include "auth/token.h"
#include "auth/urls.h"
#include "util/xmalloc.h"

static void expect_cands(size_t n, char **got, const char *const *want)
{
	size_t w = 0;
	while (want[w])
		w++;
	cr_assert_eq(n, w, "%zu candidates, want %zu", n, w);
	for (size_t i = 0; i < n; i++) {
		cr_assert_str_eq(got[i], want[i], "candidate %zu", i);
		free(got[i]);
	}
}

Test(urls, prm_candidates_path_then_root)
{
	char *c[URLS_MAX_CANDIDATES];
	expect_cands(
		urls_prm_candidates("https://mcp.example.com/public/mcp", c), c,
		(const char *const[]){"https://mcp.example.com/.well-known/"
				      "oauth-protected-resource/public/mcp",
				      "https://mcp.example.com/.well-known/"
				      "oauth-protected-resource",
				      NULL});
	/* the query is no part of the path; a trailing slash goes */
	expect_cands(urls_prm_candidates("http://127.0.0.1:8/mcp/?x=1", c), c,
		     (const char *const[]){"http://127.0.0.1:8/.well-known/"
					   "oauth-protected-resource/mcp",
					   "http://127.0.0.1:8/.well-known/"
					   "oauth-protected-resource",
					   NULL});
	const char *root[] = {"https://mcp.example.com",
			      "https://mcp.example.com/"};
	for (int i = 0; i < 2; i++)
		expect_cands(urls_prm_candidates(root[i], c), c,
			     (const char *const[]){
				     "https://mcp.example.com/.well-known/"
				     "oauth-protected-resource",
				     NULL});
	cr_assert_eq(urls_prm_candidates("ftp://x/mcp", c), 0);
}

Test(urls, as_candidates_with_and_without_a_path)
{
	char *c[URLS_MAX_CANDIDATES];
	expect_cands(urls_as_candidates("https://auth.example.com/tenant1", c),
		     c,
		     (const char *const[]){
			     "https://auth.example.com/.well-known/"
			     "oauth-authorization-server/tenant1",
			     "https://auth.example.com/.well-known/"
			     "openid-configuration/tenant1",
			     "https://auth.example.com/tenant1/.well-known/"
			     "openid-configuration",
			     NULL});
	expect_cands(
		urls_as_candidates("https://auth.example.com", c), c,
		(const char *const[]){"https://auth.example.com/.well-known/"
				      "oauth-authorization-server",
				      "https://auth.example.com/.well-known/"
				      "openid-configuration",
				      NULL});
	expect_cands(
		urls_as_candidates("https://auth.example.com/", c), c,
		(const char *const[]){"https://auth.example.com/.well-known/"
				      "oauth-authorization-server",
				      "https://auth.example.com/.well-known/"
				      "openid-configuration",
				      NULL});
}

Test(urls, resource_belongs_to_the_endpoint)
{
	const char *ep = "https://mcp.example.com/mcp";
	cr_assert(urls_resource_ok("https://mcp.example.com/mcp", ep));
	cr_assert(urls_resource_ok("https://mcp.example.com/mcp/", ep));
	cr_assert(urls_resource_ok("https://mcp.example.com", ep));
	cr_assert(urls_resource_ok("HTTPS://MCP.example.com/mcp", ep));
	cr_assert(urls_resource_ok("https://mcp.example.com/mcp",
				   "https://mcp.example.com/mcp/sub"));
	cr_assert_not(urls_resource_ok("https://mcp.example.com/mcpx",
				       "https://mcp.example.com/mcp"));
	cr_assert_not(urls_resource_ok("https://mcp.example.com/mcp",
				       "https://mcp.example.com/mcpx"));
	cr_assert_not(urls_resource_ok("https://evil.example.com/mcp", ep));
	cr_assert_not(urls_resource_ok("http://mcp.example.com/mcp", ep));
	cr_assert_not(urls_resource_ok("https://mcp.example.com:444/mcp", ep));
	cr_assert_not(urls_resource_ok("https://mcp.example.com/other", ep));
	cr_assert_not(urls_resource_ok("https://mcp.example.com/mcp?x", ep));
}

Test(urls, secure_is_https_or_loopback_http)
{
	cr_assert(urls_secure("https://as.example.com/authorize"));
	cr_assert(urls_secure("http://localhost:9/x"));
	cr_assert(urls_secure("http://a.localhost/x"));
	cr_assert(urls_secure("http://127.0.0.1/x"));
	cr_assert(urls_secure("http://127.1.2.3:80/x"));
	cr_assert(urls_secure("http://[::1]:5/x"));
	cr_assert_not(urls_secure("http://as.example.com/authorize"));
	cr_assert_not(urls_secure("http://localhost.evil.com/x"));
	cr_assert_not(urls_secure("http://127.0.0.1.evil.com/x"));
	cr_assert_not(urls_secure("http://127.0.0/x"));
	cr_assert_not(urls_secure("file:///etc/passwd"));
	cr_assert_not(urls_secure("javascript:alert(1)"));
	cr_assert_not(urls_secure("https://"));
}

/* ---- scopes ---- */

static struct meta_list list_of(char **v, size_t n)
{
	return (struct meta_list){.v = v, .n = n, .present = true};
}

Test(scope, challenge_else_scopes_supported_else_none)
{
	char *prm_v[] = {"files:read", "files:write"};
	struct meta_list prm = list_of(prm_v, 2);
	struct meta_list none = {0};
	char *s = scope_select("mcp:tools", &prm, &none, NULL, NULL);
	cr_assert_str_eq(s, "mcp:tools");
	free(s);
	s = scope_select(NULL, &prm, &none, NULL, NULL);
	cr_assert_str_eq(s, "files:read files:write");
	free(s);
	s = scope_select("", &prm, &none, NULL, NULL);
	cr_assert_str_eq(s, "files:read files:write");
	free(s);
	cr_assert_null(scope_select(NULL, &none, &none, NULL, NULL));
	/* configured extras join, each word once */
	s = scope_select("a b", &prm, &none, NULL, "b c");
	cr_assert_str_eq(s, "a b c");
	free(s);
}

Test(scope, offline_access_only_where_listed_and_never_alone)
{
	char *as_v[] = {"openid", "offline_access"};
	struct meta_list as = list_of(as_v, 2);
	struct meta_list none = {0};
	char *s = scope_select("read", &none, &as, NULL, NULL);
	cr_assert_str_eq(s, "read offline_access");
	free(s);
	s = scope_select("read", &none, &none, NULL, NULL);
	cr_assert_str_eq(s, "read");
	free(s);
	cr_assert_null(scope_select(NULL, &none, &as, NULL, NULL));
}

Test(scope, step_up_is_the_union)
{
	char *prm_v[] = {"other"};
	struct meta_list prm = list_of(prm_v, 1);
	struct meta_list none = {0};
	/* earlier asked and granted, then what the 403 names; the
	 * resource's list is not added on a step-up */
	char *s = scope_select("write admin", &prm, &none, "read write", NULL);
	cr_assert_str_eq(s, "read write admin");
	free(s);
	s = scope_select(NULL, &prm, &none, "read", NULL);
	cr_assert_str_eq(s, "read");
	free(s);
	s = scope_union("a b", "b c");
	cr_assert_str_eq(s, "a b c");
	free(s);
	s = scope_union(NULL, "  x  ");
	cr_assert_str_eq(s, "x");
	free(s);
	cr_assert_null(scope_union(NULL, " "));
	cr_assert(scope_covers("a b c", "c a"));
	cr_assert(scope_covers("a", NULL));
	cr_assert_not(scope_covers("a b", "a bc"));
	cr_assert_not(scope_covers(NULL, "a"));
}

Test(scope, bad_words_and_limits)
{
	cr_assert(scope_bad("a\"b"));
	cr_assert(scope_bad("a\\b"));
	cr_assert(scope_bad("a\nb"));
	cr_assert(scope_bad("a\x7f"));
	cr_assert_not(scope_bad("files:read https://x/y"));
	struct buf b;
	buf_init(&b);
	for (int i = 0; i < SCOPE_MAX_WORDS + 5; i++)
		buf_printf(&b, "w%d ", i);
	char *s = scope_union(b.data, NULL);
	size_t words = 0;
	for (char *p = s; *p; p++)
		words += *p == ' ';
	cr_assert_eq(words + 1, SCOPE_MAX_WORDS);
	free(s);
	buf_reset(&b);
	for (int i = 0; i < 3; i++) {
		buf_printf(&b, "%d", i);
		for (int j = 0; j < SCOPE_MAX_LEN / 2; j++)
			buf_puts(&b, "x");
		buf_puts(&b, " ");
	}
	s = scope_union(b.data, NULL);
	cr_assert(strlen(s) <= SCOPE_MAX_LEN);
	cr_assert_eq(s[0], '0');
	free(s);
	buf_free(&b);
}

/* ---- token endpoint authentication ---- */

Test(register, auth_method_choice)
{
	char *basic_post_v[] = {"client_secret_basic", "client_secret_post"};
	char *post_v[] = {"client_secret_post"};
	char *none_v[] = {"none"};
	struct meta_list both = list_of(basic_post_v, 2);
	struct meta_list post = list_of(post_v, 1);
	struct meta_list nonel = list_of(none_v, 1);
	struct meta_list absent = {0};
	cr_assert_str_eq(reg_auth_method(&both, NULL, false), "none");
	cr_assert_str_eq(reg_auth_method(&both, NULL, true),
			 "client_secret_basic");
	cr_assert_str_eq(reg_auth_method(&post, NULL, true),
			 "client_secret_post");
	/* RFC 8414: none listed means client_secret_basic */
	cr_assert_str_eq(reg_auth_method(&absent, NULL, true),
			 "client_secret_basic");
	/* the registration's own, where the server supports it */
	cr_assert_str_eq(reg_auth_method(&both, "client_secret_post", true),
			 "client_secret_post");
	cr_assert_str_eq(reg_auth_method(&post, "client_secret_basic", true),
			 "client_secret_post");
	cr_assert_str_eq(reg_dcr_method(&absent), "none");
	cr_assert_str_eq(reg_dcr_method(&nonel), "none");
	cr_assert_str_eq(reg_dcr_method(&both), "client_secret_basic");
	cr_assert_str_eq(reg_dcr_method(&post), "client_secret_post");
}

static struct form_query body_of(const char *body)
{
	struct form_query q;
	cr_assert_eq(form_parse(body, strlen(body), &q), 0, "%s", body);
	return q;
}

Test(token, requests_for_each_auth_method)
{
	struct store_client c = {.client_id = "id:1",
				 .client_secret = "s&cret",
				 .auth_method = "client_secret_basic"};
	struct treq_opts o = {.token_endpoint = "https://as/token",
			      .client = &c,
			      .code = "the-code",
			      .code_verifier = "v",
			      .redirect_uri = "http://127.0.0.1:5/callback",
			      .resource = "https://mcp.example.com"};
	char *body, *auth;
	/* basic: id and secret form-encoded, then base64; no id in the
	 * body */
	treq_build(&o, &body, &auth);
	cr_assert_str_eq(auth, "Authorization: Basic aWQlM0ExOnMlMjZjcmV0");
	struct form_query q = body_of(body);
	cr_assert_str_eq(form_get(&q, "grant_type"), "authorization_code");
	cr_assert_str_eq(form_get(&q, "code"), "the-code");
	cr_assert_str_eq(form_get(&q, "code_verifier"), "v");
	cr_assert_str_eq(form_get(&q, "redirect_uri"),
			 "http://127.0.0.1:5/callback");
	/* exactly as published: no slash added */
	cr_assert_str_eq(form_get(&q, "resource"), "https://mcp.example.com");
	cr_assert_null(form_get(&q, "client_id"));
	cr_assert_null(form_get(&q, "client_secret"));
	form_query_clear(&q);
	free(body);
	free(auth);
	/* post */
	c.auth_method = "client_secret_post";
	treq_build(&o, &body, &auth);
	cr_assert_null(auth);
	q = body_of(body);
	cr_assert_str_eq(form_get(&q, "client_id"), "id:1");
	cr_assert_str_eq(form_get(&q, "client_secret"), "s&cret");
	form_query_clear(&q);
	free(body);
	/* none */
	c.auth_method = "none";
	c.client_secret = NULL;
	o.code = NULL;
	o.refresh_token = "rt";
	treq_build(&o, &body, &auth);
	cr_assert_null(auth);
	q = body_of(body);
	cr_assert_str_eq(form_get(&q, "grant_type"), "refresh_token");
	cr_assert_str_eq(form_get(&q, "refresh_token"), "rt");
	cr_assert_str_eq(form_get(&q, "client_id"), "id:1");
	cr_assert_str_eq(form_get(&q, "resource"), "https://mcp.example.com");
	cr_assert_null(form_get(&q, "client_secret"));
	cr_assert_null(form_get(&q, "code"));
	cr_assert_null(form_get(&q, "scope"));
	form_query_clear(&q);
	free(body);
}
