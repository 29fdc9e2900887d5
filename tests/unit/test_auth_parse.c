/*
 * The OAuth parsers of src/auth, without a server: WWW-Authenticate
 * (several challenges, quoted strings with escapes, token68, the params MCP
 * reads, garbage and the limits), the metadata, token, error and
 * registration JSON (required fields, wrong types, limits), the redirect's
 * query string, base64 and the RFC 7636 PKCE vector.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/form.h"
#include "auth/meta.h"
#include "auth/pkce.h"
#include "auth/www_auth.h"
#include "util/buf.h"
#include "util/xmalloc.h"

/* ---- WWW-Authenticate ---- */

static int wa(const char *s, struct www_auth *w)
{
	return www_auth_parse(s, strlen(s), w);
}

Test(www_auth, the_mcp_bearer_challenge)
{
	struct www_auth w;
	cr_assert_eq(wa("Bearer resource_metadata=\"https://mcp.example.com/"
			".well-known/oauth-protected-resource/mcp\", "
			"scope=\"files:read files:write\"",
			&w),
		     0);
	cr_assert_eq(w.n, 1);
	const struct www_auth_challenge *c = www_auth_find(&w, "bearer");
	cr_assert_not_null(c);
	cr_assert_str_eq(c->scheme, "Bearer");
	cr_assert_null(c->token68);
	cr_assert_str_eq(www_auth_param(c, "resource_metadata"),
			 "https://mcp.example.com/.well-known/"
			 "oauth-protected-resource/mcp");
	cr_assert_str_eq(www_auth_param(c, "SCOPE"), "files:read files:write");
	cr_assert_null(www_auth_param(c, "error"));
	www_auth_clear(&w);
}

Test(www_auth, step_up_with_error_first_or_last)
{
	const char *v[] = {
		"Bearer error=\"insufficient_scope\", scope=\"a b\", "
		"resource_metadata=\"https://x/prm\"",
		"Bearer resource_metadata=\"https://x/prm\", scope=\"a b\", "
		"error=\"insufficient_scope\"",
		/* unquoted tokens, odd spacing and empty list elements */
		"Bearer  ,error=insufficient_scope ,scope=\"a b\",,"
		"resource_metadata = \"https://x/prm\"",
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		struct www_auth w;
		cr_assert_eq(wa(v[i], &w), 0, "%s", v[i]);
		const struct www_auth_challenge *c =
			www_auth_find(&w, "Bearer");
		cr_assert_not_null(c);
		cr_assert_str_eq(www_auth_param(c, "error"),
				 "insufficient_scope", "%s", v[i]);
		cr_assert_str_eq(www_auth_param(c, "scope"), "a b");
		cr_assert_str_eq(www_auth_param(c, "resource_metadata"),
				 "https://x/prm");
		www_auth_clear(&w);
	}
}

Test(www_auth, several_challenges_each_with_its_params)
{
	struct www_auth w;
	/* As several header lines joined with ", ": a Basic with a realm
	 * whose quoted string holds a comma and an escaped quote, a token68
	 * scheme, then Bearer and DPoP. */
	cr_assert_eq(
		wa("Basic realm=\"a, \\\"b\\\"\", charset=UTF-8, "
		   "Negotiate YWJj+/de==, "
		   "Bearer realm=\"mcp\", error=\"invalid_token\", "
		   "error_description=\"The access token \\\\expired\\\\\", "
		   "DPoP algs=\"ES256 PS256\"",
		   &w),
		0);
	cr_assert_eq(w.n, 4);
	cr_assert_str_eq(w.ch[0].scheme, "Basic");
	cr_assert_eq(w.ch[0].nparams, 2);
	cr_assert_str_eq(www_auth_param(&w.ch[0], "realm"), "a, \"b\"");
	cr_assert_str_eq(www_auth_param(&w.ch[0], "charset"), "UTF-8");
	cr_assert_str_eq(w.ch[1].scheme, "Negotiate");
	cr_assert_str_eq(w.ch[1].token68, "YWJj+/de==");
	cr_assert_eq(w.ch[1].nparams, 0);
	const struct www_auth_challenge *b = www_auth_find(&w, "BEARER");
	cr_assert_eq(b, &w.ch[2]);
	cr_assert_str_eq(www_auth_param(b, "realm"), "mcp");
	cr_assert_str_eq(www_auth_param(b, "error"), "invalid_token");
	cr_assert_str_eq(www_auth_param(b, "error_description"),
			 "The access token \\expired\\");
	cr_assert_str_eq(www_auth_param(www_auth_find(&w, "dpop"), "algs"),
			 "ES256 PS256");
	cr_assert_null(www_auth_find(&w, "Digest"));
	www_auth_clear(&w);
}

Test(www_auth, bare_schemes_and_token68_at_the_end)
{
	struct www_auth w;
	cr_assert_eq(wa("Bearer", &w), 0);
	cr_assert_eq(w.n, 1);
	cr_assert_eq(w.ch[0].nparams, 0);
	www_auth_clear(&w);
	cr_assert_eq(wa("Bearer, Basic abc=", &w), 0);
	cr_assert_eq(w.n, 2);
	cr_assert_str_eq(w.ch[1].token68, "abc=");
	www_auth_clear(&w);
	/* "scope=" alone is a token68 (it may end in '='), not a param */
	cr_assert_eq(wa("Bearer scope=", &w), 0);
	cr_assert_str_eq(w.ch[0].token68, "scope=");
	cr_assert_eq(w.ch[0].nparams, 0);
	www_auth_clear(&w);
	cr_assert_eq(wa("", &w), 0);
	cr_assert_eq(w.n, 0);
	www_auth_clear(&w);
}

Test(www_auth, a_param_named_twice_keeps_the_first)
{
	struct www_auth w;
	cr_assert_eq(wa("Bearer scope=\"a\", SCOPE=\"b\"", &w), 0);
	cr_assert_eq(w.ch[0].nparams, 1);
	cr_assert_str_eq(www_auth_param(&w.ch[0], "scope"), "a");
	www_auth_clear(&w);
}

Test(www_auth, garbage_is_refused_whole)
{
	const char *bad[] = {
		"Bearer scope=\"unterminated",
		"Bearer scope=\"ends in a backslash\\",
		"Bearer scope=\"a\x01"
		"b\"", /* a control byte */
		"Bearer scope=\"a\nb\"",
		"\"Bearer\"",
		"Bearer \"x\"",
		"Bearer scope=a b", /* two values */
		"Bearer abc def",   /* token68 then junk */
		"=x",
		"Bearer realm=\"x\" error=\"y\"", /* a comma is missing */
		"Bearer; scope=x",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct www_auth w = {(void *)1, 99};
		cr_assert_eq(wa(bad[i], &w), -EINVAL, "%s", bad[i]);
		/* w untouched on failure */
		cr_assert_eq(w.n, 99, "%s", bad[i]);
	}
	struct www_auth w;
	cr_assert_eq(www_auth_parse("Bearer\0 x", 9, &w), -EINVAL);
}

Test(www_auth, limits)
{
	struct www_auth w;
	struct buf b;
	buf_init(&b);
	/* WWW_AUTH_MAX_CHALLENGES schemes, then one more */
	for (int i = 0; i < WWW_AUTH_MAX_CHALLENGES; i++)
		buf_printf(&b, "%sS%d", i ? ", " : "", i);
	cr_assert_eq(wa(b.data, &w), 0);
	cr_assert_eq(w.n, WWW_AUTH_MAX_CHALLENGES);
	www_auth_clear(&w);
	buf_puts(&b, ", Extra");
	cr_assert_eq(wa(b.data, &w), -E2BIG);
	/* WWW_AUTH_MAX_PARAMS params, then one more */
	buf_reset(&b);
	buf_puts(&b, "Bearer ");
	for (int i = 0; i < WWW_AUTH_MAX_PARAMS; i++)
		buf_printf(&b, "%sp%d=v", i ? ", " : "", i);
	cr_assert_eq(wa(b.data, &w), 0);
	cr_assert_eq(w.ch[0].nparams, WWW_AUTH_MAX_PARAMS);
	www_auth_clear(&w);
	buf_puts(&b, ", last=v");
	cr_assert_eq(wa(b.data, &w), -E2BIG);
	/* WWW_AUTH_MAX_LEN bytes, then one more */
	buf_reset(&b);
	buf_puts(&b, "Bearer scope=\"");
	while (b.len < WWW_AUTH_MAX_LEN - 1)
		buf_puts(&b, "a");
	buf_puts(&b, "\"");
	cr_assert_eq(b.len, WWW_AUTH_MAX_LEN);
	cr_assert_eq(wa(b.data, &w), 0);
	www_auth_clear(&w);
	buf_puts(&b, " ");
	cr_assert_eq(wa(b.data, &w), -E2BIG);
	buf_free(&b);
}

/* ---- the JSON documents ---- */

static int prm(const char *s, struct meta_prm *m, const char **why)
{
	return meta_parse_prm(s, strlen(s), m, why);
}

Test(meta, prm_keeps_resource_verbatim)
{
	struct meta_prm m;
	const char *why = NULL;
	cr_assert_eq(prm("{\"resource\":\"https://Example.com\","
			 "\"authorization_servers\":[\"https://as/t1\","
			 "\"https://as2\"],\"scopes_supported\":[\"a\",\"b\"],"
			 "\"bearer_methods_supported\":[\"header\"]}",
			 &m, &why),
		     0, "%s", why);
	/* no slash added, no case folding */
	cr_assert_str_eq(m.resource, "https://Example.com");
	cr_assert_eq(m.authorization_servers.n, 2);
	cr_assert_str_eq(m.authorization_servers.v[0], "https://as/t1");
	cr_assert(m.scopes_supported.present);
	cr_assert(meta_list_has(&m.scopes_supported, "b"));
	cr_assert_not(meta_list_has(&m.scopes_supported, "c"));
	meta_prm_clear(&m);
	cr_assert_eq(prm("{\"resource\":\"https://x\","
			 "\"authorization_servers\":[\"https://as\"]}",
			 &m, &why),
		     0);
	cr_assert_not(m.scopes_supported.present);
	meta_prm_clear(&m);
}

Test(meta, prm_refused)
{
	const char *bad[] = {
		"",
		"[]",
		"{\"resource\":\"https://x\"}",
		"{\"resource\":\"https://x\",\"authorization_servers\":[]}",
		"{\"authorization_servers\":[\"https://as\"]}",
		"{\"resource\":1,\"authorization_servers\":[\"https://as\"]}",
		"{\"resource\":\"https://x\",\"authorization_servers\":"
		"\"https://as\"}",
		"{\"resource\":\"https://x\",\"authorization_servers\":[1]}",
		"{\"resource\":\"https://x\",\"authorization_servers\":"
		"[\"https://as\"],\"scopes_supported\":[null]}",
		"{\"resource\":\"https://x\\u0000y\",\"authorization_servers\":"
		"[\"https://as\"]}",
		"{\"resource\":\"https://x\",\"resource\":\"https://y\","
		"\"authorization_servers\":[\"https://as\"]}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct meta_prm m;
		const char *why = NULL;
		cr_assert_eq(prm(bad[i], &m, &why), -EINVAL, "%s", bad[i]);
		cr_assert_not_null(why);
		cr_assert_null(m.resource);
	}
}

Test(meta, limits)
{
	struct buf b;
	buf_init(&b);
	struct meta_prm m;
	const char *why;
	/* META_MAX_LIST entries, then one more */
	buf_puts(&b, "{\"resource\":\"https://x\",\"authorization_servers\":"
		     "[\"https://as\"],\"scopes_supported\":[\"s\"");
	for (int i = 1; i < META_MAX_LIST; i++)
		buf_puts(&b, ",\"s\"");
	buf_puts(&b, "]}");
	cr_assert_eq(meta_parse_prm(b.data, b.len, &m, &why), 0);
	cr_assert_eq(m.scopes_supported.n, META_MAX_LIST);
	meta_prm_clear(&m);
	b.len -= 2;
	buf_puts(&b, ",\"s\"]}");
	cr_assert_eq(meta_parse_prm(b.data, b.len, &m, &why), -E2BIG);
	/* META_MAX_URL, then one more */
	for (int extra = 0; extra < 2; extra++) {
		buf_reset(&b);
		buf_puts(&b, "{\"resource\":\"https://");
		while (b.len < 13 + META_MAX_URL + (size_t)extra)
			buf_puts(&b, "a");
		buf_puts(&b, "\",\"authorization_servers\":[\"https://as\"]}");
		cr_assert_eq(meta_parse_prm(b.data, b.len, &m, &why),
			     extra ? -E2BIG : 0);
		if (!extra) {
			cr_assert_eq(strlen(m.resource), META_MAX_URL);
			meta_prm_clear(&m);
		}
	}
	/* META_MAX_DOC, then one more: spaces count */
	for (int extra = 0; extra < 2; extra++) {
		buf_reset(&b);
		buf_puts(&b, "{\"resource\":\"https://x\","
			     "\"authorization_servers\":[\"https://as\"]}");
		while (b.len < META_MAX_DOC + (size_t)extra)
			buf_puts(&b, " ");
		cr_assert_eq(meta_parse_prm(b.data, b.len, &m, &why),
			     extra ? -EINVAL : 0);
		if (!extra)
			meta_prm_clear(&m);
	}
	buf_free(&b);
}

Test(meta, as_fields)
{
	const char *doc =
		"{\"issuer\":\"https://as.example.com/t1\","
		"\"authorization_endpoint\":\"https://as.example.com/"
		"authorize\","
		"\"token_endpoint\":\"https://as.example.com/token\","
		"\"registration_endpoint\":\"https://as.example.com/register\","
		"\"code_challenge_methods_supported\":[\"plain\",\"S256\"],"
		"\"token_endpoint_auth_methods_supported\":[\"client_secret_"
		"post\"],\"client_id_metadata_document_supported\":true,"
		"\"authorization_response_iss_parameter_supported\":true,"
		"\"scopes_supported\":[\"openid\",\"offline_access\"]}";
	struct meta_as m;
	const char *why = NULL;
	cr_assert_eq(meta_parse_as(doc, strlen(doc), &m, &why), 0, "%s", why);
	cr_assert_str_eq(m.issuer, "https://as.example.com/t1");
	cr_assert_str_eq(m.registration_endpoint,
			 "https://as.example.com/register");
	cr_assert(meta_list_has(&m.code_challenge_methods_supported, "S256"));
	cr_assert(meta_list_has(&m.token_endpoint_auth_methods_supported,
				"client_secret_post"));
	cr_assert(m.client_id_metadata_document_supported);
	cr_assert(m.iss_parameter_supported);
	meta_as_clear(&m);
	const char *bad[] = {
		"{\"authorization_endpoint\":\"https://a\",\"token_endpoint\":"
		"\"https://t\"}",
		"{\"issuer\":\"https://a\",\"token_endpoint\":\"https://t\"}",
		"{\"issuer\":\"https://a\",\"authorization_endpoint\":"
		"\"https://a\"}",
		"{\"issuer\":\"https://a\",\"authorization_endpoint\":"
		"\"https://a\",\"token_endpoint\":\"https://t\","
		"\"client_id_metadata_document_supported\":\"true\"}",
		"{\"issuer\":\"https://a\",\"authorization_endpoint\":"
		"\"https://a\",\"token_endpoint\":\"https://t\","
		"\"code_challenge_methods_supported\":\"S256\"}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_assert_eq(meta_parse_as(bad[i], strlen(bad[i]), &m, &why),
			     -EINVAL, "%s", bad[i]);
		cr_assert_null(m.issuer);
	}
}

static int tok(const char *s, struct meta_token *t)
{
	const char *why;
	return meta_parse_token(s, strlen(s), t, &why);
}

Test(meta, token_response)
{
	struct meta_token t;
	cr_assert_eq(tok("{\"access_token\":\"at\",\"token_type\":\"bearer\","
			 "\"expires_in\":3600,\"refresh_token\":\"rt\","
			 "\"scope\":\"a b\"}",
			 &t),
		     0);
	cr_assert_str_eq(t.access_token, "at");
	cr_assert_str_eq(t.refresh_token, "rt");
	cr_assert_str_eq(t.scope, "a b");
	cr_assert_eq(t.expires_in, 3600);
	meta_token_clear(&t);
	/* quoted, fractional, absent, negative, absurd lifetimes */
	struct {
		const char *v;
		int64_t want;
	} life[] = {
		{"\"120\"", 120},	{"59.9", 59},
		{"null", -1},		{"-5", -1},
		{"1e300", -1},		{"-1e300", -1},
		{"\"12x\"", -1},	{"99999999999999999", -1},
		{"31622400", 31622400}, {"31622401", -1},
	};
	for (size_t i = 0; i < sizeof life / sizeof life[0]; i++) {
		char doc[160];
		snprintf(doc, sizeof doc,
			 "{\"access_token\":\"at\",\"token_type\":\"Bearer\","
			 "\"expires_in\":%s}",
			 life[i].v);
		cr_assert_eq(tok(doc, &t), 0, "%s", doc);
		cr_assert_eq(t.expires_in, life[i].want, "%s: %lld", doc,
			     (long long)t.expires_in);
		cr_assert_null(t.refresh_token);
		meta_token_clear(&t);
	}
	const char *bad[] = {
		"{\"token_type\":\"Bearer\"}",
		"{\"access_token\":\"\",\"token_type\":\"Bearer\"}",
		"{\"access_token\":\"at\"}",
		"{\"access_token\":\"at\",\"token_type\":\"mac\"}",
		"{\"access_token\":\"a t\",\"token_type\":\"Bearer\"}",
		"{\"access_token\":\"a\\r\\nX: y\",\"token_type\":\"Bearer\"}",
		"{\"access_token\":7,\"token_type\":\"Bearer\"}",
		"{\"access_token\":\"at\",\"token_type\":\"Bearer\","
		"\"refresh_token\":[]}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_assert_eq(tok(bad[i], &t), -EINVAL, "%s", bad[i]);
		cr_assert_null(t.access_token);
	}
	/* META_MAX_TOKEN */
	struct buf b;
	buf_init(&b);
	for (int extra = 0; extra < 2; extra++) {
		buf_reset(&b);
		buf_puts(&b, "{\"token_type\":\"Bearer\",\"access_token\":\"");
		for (int i = 0; i < META_MAX_TOKEN + extra; i++)
			buf_puts(&b, "t");
		buf_puts(&b, "\"}");
		cr_assert_eq(tok(b.data, &t), extra ? -E2BIG : 0);
		meta_token_clear(&t);
	}
	buf_free(&b);
}

Test(meta, error_and_client)
{
	struct meta_error e;
	const char *s = "{\"error\":\"invalid_grant\",\"error_description\":"
			"\"gone\"}";
	cr_assert_eq(meta_parse_error(s, strlen(s), &e), 0);
	cr_assert_str_eq(e.error, "invalid_grant");
	cr_assert_str_eq(e.error_description, "gone");
	meta_error_clear(&e);
	/* RFC 6749 5.2's characters only: what a terminal would run, or a
	 * line break into the log, is dropped */
	const char *esc[] = {"{\"error\":\"invalid_grant\\u001b[2J\","
			     "\"error_description\":\"a\\nb\"}",
			     "{\"error\":\"x\\\"y\",\"error_description\":"
			     "\"caf\u00e9\"}"};
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(meta_parse_error(esc[i], strlen(esc[i]), &e), 0);
		cr_assert_null(e.error, "%s", esc[i]);
		cr_assert_null(e.error_description, "%s", esc[i]);
	}
	s = "{\"error\":\"invalid_grant\",\"error_description\":"
	    "\"it's 100% gone!\"}";
	cr_assert_eq(meta_parse_error(s, strlen(s), &e), 0);
	cr_assert_str_eq(e.error_description, "it's 100% gone!");
	meta_error_clear(&e);
	cr_assert_eq(meta_parse_error("{\"error\":5}", 11, &e), -EINVAL);
	cr_assert_eq(meta_parse_error("nope", 4, &e), -EINVAL);

	struct meta_client c;
	const char *why;
	s = "{\"client_id\":\"c1\",\"client_secret\":\"s\","
	    "\"token_endpoint_auth_method\":\"client_secret_post\","
	    "\"client_secret_expires_at\":1900000000}";
	cr_assert_eq(meta_parse_client(s, strlen(s), &c, &why), 0);
	cr_assert_str_eq(c.client_id, "c1");
	cr_assert_str_eq(c.client_secret, "s");
	cr_assert_str_eq(c.token_endpoint_auth_method, "client_secret_post");
	cr_assert_eq(c.client_secret_expires_at, 1900000000);
	meta_client_clear(&c);
	s = "{\"client_id\":\"\"}";
	cr_assert_eq(meta_parse_client(s, strlen(s), &c, &why), -EINVAL);
	s = "{\"client_secret\":\"s\"}";
	cr_assert_eq(meta_parse_client(s, strlen(s), &c, &why), -EINVAL);
}

/* ---- the redirect's query ---- */

Test(form, redirect_query)
{
	struct form_query q;
	const char *s = "code=a%2Bb+c&state=xyz&iss=https%3A%2F%2Fas%2F&empty=&"
			"flag&&";
	cr_assert_eq(form_parse(s, strlen(s), &q), 0);
	cr_assert_str_eq(form_get(&q, "code"), "a+b c");
	cr_assert_str_eq(form_get(&q, "state"), "xyz");
	cr_assert_str_eq(form_get(&q, "iss"), "https://as/");
	cr_assert_str_eq(form_get(&q, "empty"), "");
	cr_assert_str_eq(form_get(&q, "flag"), "");
	cr_assert_null(form_get(&q, "error"));
	cr_assert_eq(q.nparams, 5);
	form_query_clear(&q);
	const char *bad[] = {"code=%", "code=%4",	  "code=%zz",
			     "a=%00",  "state=1&state=2", "=v"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct form_query w = {(void *)1, 77};
		cr_assert_eq(form_parse(bad[i], strlen(bad[i]), &w), -EINVAL,
			     "%s", bad[i]);
		cr_assert_eq(w.nparams, 77);
	}
	/* FORM_MAX_PARAMS, then one more; FORM_MAX_QUERY, then one more */
	struct buf b;
	buf_init(&b);
	for (int i = 0; i < FORM_MAX_PARAMS; i++)
		buf_printf(&b, "%sp%d=v", i ? "&" : "", i);
	cr_assert_eq(form_parse(b.data, b.len, &q), 0);
	form_query_clear(&q);
	buf_puts(&b, "&one=more");
	cr_assert_eq(form_parse(b.data, b.len, &q), -E2BIG);
	buf_reset(&b);
	buf_puts(&b, "code=");
	while (b.len < FORM_MAX_QUERY)
		buf_puts(&b, "c");
	cr_assert_eq(form_parse(b.data, b.len, &q), 0);
	form_query_clear(&q);
	buf_puts(&b, "c");
	cr_assert_eq(form_parse(b.data, b.len, &q), -E2BIG);
	buf_free(&b);
}

Test(form, escape_round_trip)
{
	struct buf b;
	buf_init(&b);
	form_add(&b, "redirect_uri", "http://127.0.0.1:5/callback");
	form_add(&b, "scope", "a b+c");
	form_add(&b, "none", NULL);
	cr_assert_str_eq(b.data, "redirect_uri=http%3A%2F%2F127.0.0.1%3A5%"
				 "2Fcallback&scope=a%20b%2Bc");
	struct form_query q;
	cr_assert_eq(form_parse(b.data, b.len, &q), 0);
	cr_assert_str_eq(form_get(&q, "scope"), "a b+c");
	form_query_clear(&q);
	buf_free(&b);
}

/* ---- PKCE ---- */

Test(pkce, rfc7636_appendix_b)
{
	char *c = pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk");
	cr_assert_str_eq(c, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
	free(c);
}

Test(pkce, verifier_and_state_are_fresh)
{
	char v1[PKCE_VERIFIER_LEN + 1], v2[PKCE_VERIFIER_LEN + 1];
	char s1[PKCE_STATE_LEN + 1], s2[PKCE_STATE_LEN + 1];
	pkce_verifier(v1);
	pkce_verifier(v2);
	pkce_state(s1);
	pkce_state(s2);
	cr_assert_eq(strlen(v1), PKCE_VERIFIER_LEN);
	cr_assert(PKCE_VERIFIER_LEN >= 43 && PKCE_VERIFIER_LEN <= 128);
	cr_assert_eq(strlen(s1), PKCE_STATE_LEN);
	cr_assert_str_neq(v1, v2);
	cr_assert_str_neq(s1, s2);
	cr_assert(pkce_equal(s1, s1));
	cr_assert_not(pkce_equal(s1, s2));
	cr_assert_not(pkce_equal("abc", "abcd"));
	cr_assert_not(pkce_equal("abcd", "abc"));
	cr_assert_not(pkce_equal("", "a"));
}
