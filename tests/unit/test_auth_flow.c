/*
 * The sign-in flow against the fixture authorization server over real HTTP
 * on 127.0.0.1 (auth_fixture.h), its "browser" following the 302 to the
 * flow's loopback listener: the order of discovery (the challenge's
 * resource_metadata, the well-known URL at the endpoint's path, then the
 * root; RFC 8414 and OpenID Connect for issuers with and without a path),
 * the issuer and resource checks, PKCE S256 required, registration in
 * order (pre-registered, Client ID Metadata Document, Dynamic Client
 * Registration) kept per issuer, state, resource and PKCE on both
 * requests, the iss table of RFC 9207 as MCP 2026-07-28 gives it, token
 * endpoint authentication, scope choice and the 403 step-up with its cap.
 * Every wait runs the loop until its condition.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth/auth.h"
#include "auth/store.h"
#include "auth_fixture.h"
#include "config/config.h"

static uv_loop_t loop;
static struct httpc *hc;
static struct fx fx;
static struct auth *au;
static char dir[64];
static char url[128];
static char rm_url[192];
static const char *srv_name; /* the server a flow signs in */

static struct httpc *get_http(void *arg)
{
	return hc;
}

static void walk_close(uv_handle_t *h, void *arg)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void t_setup(void)
{
	cr_assert_eq(uv_loop_init(&loop), 0);
	memset(&fx, 0, sizeof fx);
	fx_start(&fx, &loop);
	const char *why = NULL;
	hc = httpc_new(&loop, &why);
	cr_assert_not_null(hc, "%s", why);
	snprintf(dir, sizeof dir, "/tmp/mcpv-auth-flow-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	au = auth_new(&loop, get_http, NULL, dir);
	srv_name = "srv";
	snprintf(url, sizeof url, "%s/mcp", fx.base);
	snprintf(rm_url, sizeof rm_url,
		 "Bearer resource_metadata=\"%s/.well-known/"
		 "oauth-protected-resource/mcp\"",
		 fx.base);
}

static void t_teardown(void)
{
	auth_free(au);
	httpc_free(hc);
	fx_stop(&fx);
	uv_walk(&loop, walk_close, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0, "a handle was left open");
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(flow, .init = t_setup, .fini = t_teardown, .timeout = 60);

#define RUN_UNTIL(cond)                                                        \
	do {                                                                   \
		while (!(cond))                                                \
			uv_run(&loop, UV_RUN_ONCE);                            \
	} while (0)

/* ---- one sign-in ---- */

struct run {
	struct auth_flow *f;
	bool no_browse; /* the test delivers the redirect itself */
	char *auth_url, *redirect_uri;
	struct fx_browser br;
	bool done;
	int err;
	char why[400];
};

static void on_url(void *arg, const char *u, const char *ru)
{
	struct run *r = arg;
	r->auth_url = xstrdup(u);
	r->redirect_uri = xstrdup(ru);
	if (!r->no_browse)
		fx_browse(&r->br, hc, u);
}

static void on_done(void *arg, int err, const char *why)
{
	struct run *r = arg;
	r->done = true;
	r->err = err;
	snprintf(r->why, sizeof r->why, "%s", why ? why : "");
	r->f = NULL;
}

static const struct auth_flow_cbs cbs = {on_url, on_done};

static void run_clear(struct run *r)
{
	free(r->auth_url);
	free(r->redirect_uri);
	free(r->br.location);
	memset(r, 0, sizeof *r);
}

/* Starts a flow for the 401 www (NULL: the fixture's own challenge);
 * status 0 asks the recorded challenge or the server. */
static void start(struct run *r, int status, const char *www,
		  const struct config_oauth *oauth)
{
	struct auth_flow_opts o = {
		.name = srv_name,
		.url = url,
		.oauth = oauth,
		.status = status,
		.www_authenticate = status && www == NULL ? rm_url : www};
	cr_assert_eq(auth_flow_start(au, &o, &cbs, r, &r->f), 0);
}

/* Runs a sign-in to its end (and the browser to its page). */
static int login_with(int status, const char *www,
		      const struct config_oauth *oauth, struct run *r)
{
	memset(r, 0, sizeof *r);
	start(r, status, www, oauth);
	RUN_UNTIL(r->done && (r->auth_url == NULL || r->br.done));
	return r->err;
}

static int login(struct run *r)
{
	return login_with(401, NULL, NULL, r);
}

/* The log from where it was last cut. */
static size_t log_mark;
static const char *log_since(void)
{
	const char *s = fx.log.data ? fx.log.data + log_mark : "";
	log_mark = fx.log.len;
	return s;
}

static char *authorize_param(const char *name)
{
	return fx_param(fx.last_authorize.data ? fx.last_authorize.data : "",
			name);
}

static char *token_param(const char *name)
{
	return fx_param(fx.last_token.data ? fx.last_token.data : "", name);
}

#define ASSERT_PARAM(getter, name, want)                                       \
	do {                                                                   \
		char *v_ = getter(name);                                       \
		const char *w_ = (want);                                       \
		if (w_ == NULL)                                                \
			cr_assert_null(v_, "%s=%s", name, v_);                 \
		else {                                                         \
			cr_assert_not_null(v_, "%s is missing", name);         \
			cr_assert_str_eq(v_, w_, "%s", name);                  \
		}                                                              \
		free(v_);                                                      \
	} while (0)

static const char *const SIGN_IN_TAIL = "POST /register\n"
					"GET /authorize\n"
					"POST /token\n";

static void expect_log(const char *discovery, const char *tail)
{
	char want[1024];
	snprintf(want, sizeof want, "%s%s", discovery, tail);
	cr_assert_str_eq(log_since(), want);
}

/* ---- discovery ---- */

Test(flow, prm_from_the_challenges_resource_metadata_first)
{
	fx.prm_path = "/custom/prm";
	char www[256];
	snprintf(www, sizeof www,
		 "Bearer error=\"invalid_token\", resource_metadata=\"%s"
		 "/custom/prm\"",
		 fx.base);
	struct run r;
	cr_assert_eq(login_with(401, www, NULL, &r), 0, "%s", r.why);
	expect_log("GET /custom/prm\n"
		   "GET /.well-known/oauth-authorization-server\n",
		   SIGN_IN_TAIL);
	struct auth_tokens t;
	cr_assert_eq(auth_store_load(dir, "srv", url, &t), 0);
	cr_assert_str_eq(t.access_token, fx.access_token);
	cr_assert_str_eq(t.refresh_token, fx.refresh_token);
	cr_assert_str_eq(t.issuer, fx.base);
	cr_assert_str_eq(t.resource, url);
	cr_assert_eq(t.generation, 1);
	auth_tokens_clear(&t);
	run_clear(&r);
}

Test(flow, prm_at_the_path_then_the_root)
{
	/* Only the root serves it: the path-inserted one is asked first. */
	fx.prm_path = "/.well-known/oauth-protected-resource";
	struct run r;
	cr_assert_eq(login_with(401, "Bearer", NULL, &r), 0, "%s", r.why);
	expect_log("GET /.well-known/oauth-protected-resource/mcp\n"
		   "GET /.well-known/oauth-protected-resource\n"
		   "GET /.well-known/oauth-authorization-server\n",
		   SIGN_IN_TAIL);
	run_clear(&r);
	/* Served at the path: the root is not asked. */
	fx.prm_path = NULL;
	cr_assert_eq(login_with(401, "Bearer realm=\"x\"", NULL, &r), 0);
	expect_log("GET /.well-known/oauth-protected-resource/mcp\n"
		   "GET /.well-known/oauth-authorization-server\n",
		   "GET /authorize\nPOST /token\n");
	run_clear(&r);
}

Test(flow, a_resource_metadata_url_that_fails_falls_back_to_well_known)
{
	char www[256];
	snprintf(www, sizeof www, "Bearer resource_metadata=\"%s/gone\"",
		 fx.base);
	struct run r;
	cr_assert_eq(login_with(401, www, NULL, &r), 0, "%s", r.why);
	expect_log("GET /gone\n"
		   "GET /.well-known/oauth-protected-resource/mcp\n"
		   "GET /.well-known/oauth-authorization-server\n",
		   SIGN_IN_TAIL);
	run_clear(&r);
}

Test(flow, the_probe_finds_the_challenge_when_none_is_known)
{
	struct run r;
	cr_assert_eq(login_with(0, NULL, NULL, &r), 0, "%s", r.why);
	expect_log("POST /mcp\n"
		   "GET /.well-known/oauth-protected-resource/mcp\n"
		   "GET /.well-known/oauth-authorization-server\n",
		   SIGN_IN_TAIL);
	run_clear(&r);
}

/* A 2026-07-28 server refuses a 2025 initialize with a 400 (no
 * MCP-Protocol-Version) and meets tools/list with the challenge: the
 * scope asked for is that challenge's, not the decoy scopes_supported the
 * metadata lists (conformance auth/scope-step-up at 2026-07-28). */
Test(flow, the_probe_goes_on_to_tools_list_after_an_initialize_refused)
{
	fx.init_status = 400;
	fx.challenge_scope = "mcp:tools";
	fx.prm_scopes = "[\"decoy:read\",\"decoy:write\"]";
	struct run r;
	cr_assert_eq(login_with(0, NULL, NULL, &r), 0, "%s", r.why);
	ASSERT_PARAM(authorize_param, "scope", "mcp:tools");
	/* initialize, then tools/list */
	expect_log("POST /mcp\n"
		   "POST /mcp\n"
		   "GET /.well-known/oauth-protected-resource/mcp\n"
		   "GET /.well-known/oauth-authorization-server\n",
		   SIGN_IN_TAIL);
	run_clear(&r);
}

Test(flow, a_resource_of_another_server_is_refused)
{
	const char *other[] = {"http://localhost:1/mcp", NULL, NULL};
	char mcpx[128], wrong_host[128];
	snprintf(mcpx, sizeof mcpx, "%s/mcpx", fx.base);
	snprintf(wrong_host, sizeof wrong_host, "http://127.0.0.1:%d/mcp",
		 fx.port);
	other[1] = mcpx;
	other[2] = wrong_host;
	for (int i = 0; i < 3; i++) {
		fx.prm_resource = other[i];
		struct run r;
		cr_assert_eq(login(&r), -EACCES, "%s", other[i]);
		cr_assert(strstr(r.why, "another resource"), "%s", r.why);
		/* nothing after the refused document */
		cr_assert_str_eq(
			log_since(),
			"GET /.well-known/oauth-protected-resource/mcp\n");
		run_clear(&r);
	}
	cr_assert_eq(fx.authorizes, 0);
}

Test(flow, as_metadata_for_an_issuer_with_a_path)
{
	fx.issuer_path = "/tenant1";
	const char *prm = "GET /.well-known/oauth-protected-resource/mcp\n";
	struct {
		const char *served;
		const char *asked;
	} cases[] = {
		{NULL, "GET /.well-known/oauth-authorization-server/tenant1\n"},
		{"/.well-known/openid-configuration/tenant1",
		 "GET /.well-known/oauth-authorization-server/tenant1\n"
		 "GET /.well-known/openid-configuration/tenant1\n"},
		{"/tenant1/.well-known/openid-configuration",
		 "GET /.well-known/oauth-authorization-server/tenant1\n"
		 "GET /.well-known/openid-configuration/tenant1\n"
		 "GET /tenant1/.well-known/openid-configuration\n"},
	};
	for (size_t i = 0; i < 3; i++) {
		fx.as_doc_path = cases[i].served;
		struct run r;
		cr_assert_eq(login(&r), 0, "%s", r.why);
		char want[512];
		snprintf(want, sizeof want, "%s%s", prm, cases[i].asked);
		/* the registration is kept after the first */
		expect_log(want, i == 0 ? SIGN_IN_TAIL
					: "GET /authorize\nPOST /token\n");
		run_clear(&r);
	}
	struct auth_tokens t;
	cr_assert_eq(auth_store_load(dir, "srv", url, &t), 0);
	char iss[128];
	snprintf(iss, sizeof iss, "%s/tenant1", fx.base);
	cr_assert_str_eq(t.issuer, iss);
	auth_tokens_clear(&t);
	/* Served nowhere: all three asked, then the flow gives up. */
	fx.as_doc_path = "/nowhere";
	struct run r;
	cr_assert_eq(login(&r), -EPROTO, "%s", r.why);
	char want[512];
	snprintf(want, sizeof want, "%s%s", prm, cases[2].asked);
	cr_assert_str_eq(log_since(), want);
	run_clear(&r);
}

Test(flow, as_metadata_for_an_issuer_without_a_path)
{
	fx.as_doc_path = "/.well-known/openid-configuration";
	struct run r;
	cr_assert_eq(login(&r), 0, "%s", r.why);
	expect_log("GET /.well-known/oauth-protected-resource/mcp\n"
		   "GET /.well-known/oauth-authorization-server\n"
		   "GET /.well-known/openid-configuration\n",
		   SIGN_IN_TAIL);
	run_clear(&r);
}

Test(flow, an_as_document_naming_another_issuer_is_not_used)
{
	char slash[128];
	snprintf(slash, sizeof slash, "%s/", fx.base);
	const char *wrong[] = {slash, "https://evil.example.com"};
	for (int i = 0; i < 2; i++) {
		fx.as_doc_issuer = wrong[i];
		struct run r;
		cr_assert_eq(login(&r), -EACCES, "%s", wrong[i]);
		cr_assert(strstr(r.why, "issuer"), "%s", r.why);
		/* both candidates asked, the document refused: nothing
		 * registered, nothing authorized */
		cr_assert_str_eq(
			log_since(),
			"GET /.well-known/oauth-protected-resource/mcp\n"
			"GET /.well-known/oauth-authorization-server\n"
			"GET /.well-known/openid-configuration\n");
		run_clear(&r);
	}
}

Test(flow, an_as_without_s256_is_refused)
{
	struct {
		bool none;
		const char *methods;
	} cases[] = {{true, NULL}, {false, "[\"plain\"]"}, {false, "[]"}};
	for (int i = 0; i < 3; i++) {
		fx.no_pkce = cases[i].none;
		fx.pkce_methods = cases[i].methods;
		struct run r;
		cr_assert_eq(login(&r), -EACCES);
		cr_assert(strstr(r.why, "S256"), "%s", r.why);
		run_clear(&r);
	}
	cr_assert_eq(fx.registers, 0);
	cr_assert_eq(fx.authorizes, 0);
	/* with S256 among others: signs in */
	fx.no_pkce = false;
	fx.pkce_methods = "[\"plain\",\"S256\"]";
	struct run r;
	cr_assert_eq(login(&r), 0, "%s", r.why);
	run_clear(&r);
}

/* ---- the two requests ---- */

Test(flow, pkce_state_and_resource_on_both_requests_exactly)
{
	/* The resource as published: no slash added (its origin alone),
	 * then one kept. */
	char res[2][128];
	snprintf(res[0], sizeof res[0], "%s", fx.base);
	snprintf(res[1], sizeof res[1], "%s/mcp/", fx.base);
	char first_state[64] = "";
	for (int i = 0; i < 2; i++) {
		fx.prm_resource = res[i];
		struct run r;
		cr_assert_eq(login(&r), 0, "%s", r.why);
		ASSERT_PARAM(authorize_param, "response_type", "code");
		ASSERT_PARAM(authorize_param, "client_id", "c1");
		ASSERT_PARAM(authorize_param, "redirect_uri", r.redirect_uri);
		ASSERT_PARAM(authorize_param, "code_challenge_method", "S256");
		ASSERT_PARAM(authorize_param, "resource", res[i]);
		ASSERT_PARAM(token_param, "resource", res[i]);
		ASSERT_PARAM(token_param, "grant_type", "authorization_code");
		ASSERT_PARAM(token_param, "code", "good-code");
		ASSERT_PARAM(token_param, "redirect_uri", r.redirect_uri);
		int port = 0;
		cr_assert_eq(sscanf(r.redirect_uri,
				    "http://127.0.0.1:%d/callback", &port),
			     1);
		cr_assert(port > 0);
		/* S256 of the verifier sent to the token endpoint */
		char *v = token_param("code_verifier");
		char *ch = authorize_param("code_challenge");
		cr_assert_not_null(v);
		cr_assert(strlen(v) >= 43 && strlen(v) <= 128);
		char *want = pkce_challenge(v);
		cr_assert_str_eq(ch, want);
		free(want);
		free(v);
		free(ch);
		char *st = authorize_param("state");
		cr_assert_not_null(st);
		cr_assert_geq(strlen(st), 22); /* >= 128 bits */
		cr_assert_str_neq(st, first_state);
		snprintf(first_state, sizeof first_state, "%s", st);
		free(st);
		run_clear(&r);
	}
	cr_assert_eq(fx.token_codes, 2);
}

Test(flow, a_redirect_with_the_wrong_state_is_ignored)
{
	struct run r = {.no_browse = true};
	start(&r, 401, NULL, NULL);
	RUN_UNTIL(r.auth_url != NULL);
	char bad[256];
	const char *why = NULL;
	snprintf(bad, sizeof bad, "%s?code=good-code&state=forged",
		 r.redirect_uri);
	cr_assert_eq(auth_flow_redirect(r.f, bad, &why), -EINVAL);
	snprintf(bad, sizeof bad, "%s?code=good-code", r.redirect_uri);
	cr_assert_eq(auth_flow_redirect(r.f, bad, &why), -EINVAL);
	/* the same at the listener: a page, and the flow waits on */
	struct fx_browser stray;
	snprintf(bad, sizeof bad, "%s?code=good-code&state=forged",
		 r.redirect_uri);
	fx_browse(&stray, hc, bad);
	RUN_UNTIL(stray.done);
	cr_assert_geq(stray.status, 400);
	free(stray.location);
	cr_assert_not(r.done);
	/* the right state on another path: the listener answers only
	 * GET /callback */
	char *state = fx_param(strchr(r.auth_url, '?') + 1, "state");
	char other[256];
	snprintf(other, sizeof other, "%.*s/other?code=good-code&state=%s",
		 (int)(strstr(r.redirect_uri, "/callback") - r.redirect_uri),
		 r.redirect_uri, state);
	free(state);
	fx_browse(&stray, hc, other);
	RUN_UNTIL(stray.done);
	cr_assert_eq(stray.status, 404);
	free(stray.location);
	cr_assert_not(r.done);
	cr_assert_eq(fx.token_codes, 0);
	/* the real one */
	fx_browse(&r.br, hc, r.auth_url);
	RUN_UNTIL(r.done && r.br.done);
	cr_assert_eq(r.err, 0, "%s", r.why);
	cr_assert_eq(fx.token_codes, 1);
	run_clear(&r);
}

Test(flow, the_pasted_redirect)
{
	struct run r = {.no_browse = true};
	start(&r, 401, NULL, NULL);
	RUN_UNTIL(r.auth_url != NULL);
	/* The browser was elsewhere: the authorization server saw the
	 * challenge; the user pastes where it sent them. */
	char *q = strchr(r.auth_url, '?');
	char *ch = fx_param(q + 1, "code_challenge");
	char *state = fx_param(q + 1, "state");
	snprintf(fx.challenge, sizeof fx.challenge, "%s", ch);
	struct buf paste;
	buf_init(&paste);
	buf_printf(&paste, "%s?code=good-code", r.redirect_uri);
	form_add(&paste, "state", state);
	form_add(&paste, "iss", fx.base);
	buf_puts(&paste, "\r\n");
	const char *why = NULL;
	cr_assert_eq(auth_flow_redirect(r.f, paste.data, &why), 0, "%s", why);
	RUN_UNTIL(r.done);
	cr_assert_eq(r.err, 0, "%s", r.why);
	cr_assert_eq(fx.token_codes, 1);
	buf_free(&paste);
	free(ch);
	free(state);
	run_clear(&r);
}

Test(flow, iss_as_the_table_says)
{
	struct {
		bool supported;
		enum fx_iss iss;
		bool ok;
	} rows[] = {
		{true, FX_ISS_CORRECT, true},  {true, FX_ISS_OMIT, false},
		{true, FX_ISS_WRONG, false},   {true, FX_ISS_SLASH, false},
		{false, FX_ISS_CORRECT, true}, {false, FX_ISS_WRONG, false},
		{false, FX_ISS_SLASH, false},  {false, FX_ISS_OMIT, true},
	};
	int codes = 0;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		fx.iss_supported = rows[i].supported;
		fx.iss = rows[i].iss;
		struct run r;
		int err = login(&r);
		if (rows[i].ok) {
			cr_assert_eq(err, 0, "row %zu: %s", i, r.why);
			codes++;
		} else {
			cr_assert_eq(err, -EACCES, "row %zu", i);
			cr_assert(strstr(r.why, "iss"), "row %zu: %s", i,
				  r.why);
		}
		/* the code never went to the token endpoint of a refused
		 * answer */
		cr_assert_eq(fx.token_codes, codes, "row %zu", i);
		run_clear(&r);
	}
}

/* ---- registration ---- */

Test(flow, pre_registered_client_first)
{
	fx.cimd = true;
	struct config_oauth o = {.client_id = "pre-id",
				 .client_secret = "pre-secret",
				 .client_metadata_url = "https://c.example/m"};
	struct run r;
	cr_assert_eq(login_with(401, NULL, &o, &r), 0, "%s", r.why);
	cr_assert_eq(fx.registers, 0);
	ASSERT_PARAM(authorize_param, "client_id", "pre-id");
	/* RFC 8414: no methods listed means client_secret_basic */
	cr_assert_str_eq(fx.last_token_auth, "Basic cHJlLWlkOnByZS1zZWNyZXQ=");
	ASSERT_PARAM(token_param, "client_id", NULL);
	ASSERT_PARAM(token_param, "client_secret", NULL);
	run_clear(&r);
}

Test(flow, client_id_metadata_document_where_supported)
{
	struct config_oauth o = {
		.client_metadata_url = "https://client.example.com/mcpv.json"};
	fx.cimd = true;
	struct run r;
	cr_assert_eq(login_with(401, NULL, &o, &r), 0, "%s", r.why);
	cr_assert_eq(fx.registers, 0);
	ASSERT_PARAM(authorize_param, "client_id", o.client_metadata_url);
	ASSERT_PARAM(token_param, "client_id", o.client_metadata_url);
	cr_assert_str_eq(fx.last_token_auth, "");
	run_clear(&r);
	/* not supported: Dynamic Client Registration */
	fx.cimd = false;
	cr_assert_eq(login_with(401, NULL, &o, &r), 0, "%s", r.why);
	cr_assert_eq(fx.registers, 1);
	ASSERT_PARAM(authorize_param, "client_id", "c1");
	run_clear(&r);
}

Test(flow, dynamic_registration_says_native_and_its_redirect)
{
	struct run r;
	cr_assert_eq(login(&r), 0, "%s", r.why);
	cr_assert_eq(fx.registers, 1);
	json_t *j = json_loadb(fx.last_register.data, fx.last_register.len, 0,
			       NULL);
	cr_assert_not_null(j);
	cr_assert_str_eq(json_string_value(json_object_get(j, "application_"
							      "type")),
			 "native");
	json_t *ru = json_object_get(j, "redirect_uris");
	cr_assert_eq(json_array_size(ru), 1);
	cr_assert_str_eq(json_string_value(json_array_get(ru, 0)),
			 r.redirect_uri);
	json_t *gt = json_object_get(j, "grant_types");
	bool code = false, refresh = false;
	for (size_t i = 0; i < json_array_size(gt); i++) {
		const char *g = json_string_value(json_array_get(gt, i));
		code |= g && strcmp(g, "authorization_code") == 0;
		refresh |= g && strcmp(g, "refresh_token") == 0;
	}
	cr_assert(code && refresh);
	cr_assert_str_eq(json_string_value(json_object_get(
				 j, "token_endpoint_auth_method")),
			 "none");
	json_decref(j);
	run_clear(&r);
}

Test(flow, no_way_to_register_says_what_to_configure)
{
	fx.no_register = true;
	struct run r;
	cr_assert_eq(login(&r), -EACCES);
	cr_assert(strstr(r.why, "clientId"), "%s", r.why);
	cr_assert_eq(fx.authorizes, 0);
	run_clear(&r);
}

Test(flow, registrations_kept_per_issuer_and_redone_when_it_changes)
{
	struct run r;
	cr_assert_eq(login(&r), 0, "%s", r.why);
	cr_assert_eq(fx.registers, 1);
	run_clear(&r);
	/* same issuer: the kept one */
	cr_assert_eq(login(&r), 0, "%s", r.why);
	cr_assert_eq(fx.registers, 1);
	ASSERT_PARAM(authorize_param, "client_id", "c1");
	run_clear(&r);
	/* the resource moved to another authorization server */
	fx.issuer_path = "/other";
	cr_assert_eq(login(&r), 0, "%s", r.why);
	cr_assert_eq(fx.registers, 2);
	ASSERT_PARAM(authorize_param, "client_id", "c2");
	struct auth_tokens t;
	cr_assert_eq(auth_store_load(dir, "srv", url, &t), 0);
	cr_assert_str_eq(t.client_id, "c2");
	cr_assert(strstr(t.issuer, "/other"));
	auth_tokens_clear(&t);
	run_clear(&r);
	/* and back: the first issuer's registration is still its own */
	fx.issuer_path = NULL;
	cr_assert_eq(login(&r), 0, "%s", r.why);
	cr_assert_eq(fx.registers, 2);
	ASSERT_PARAM(authorize_param, "client_id", "c1");
	run_clear(&r);
}

/* Refreshes name's tokens as after a 401 of its bearer. */
static void refresh_done(void *arg, int err, const char *why)
{
	*(int *)arg = err == 0 ? 1 : err;
}

static void refresh_server(const char *name)
{
	char *bearer = NULL;
	cr_assert_eq(auth_bearer(au, name, url, &bearer, NULL), 0, "%s", name);
	int done = 0;
	cr_assert_eq(
		auth_refresh(au, name, url, bearer, refresh_done, &done, NULL),
		0);
	RUN_UNTIL(done != 0);
	cr_assert_eq(done, 1, "%s: %d", name, done);
	free(bearer);
}

/* One issuer, two clients: one server's pre-registered in its config,
 * another's registered dynamically (with a secret). Neither's
 * registration may stand in for the other's: each refresh authenticates
 * as the client its tokens were issued to, whichever signed in last. */
Test(flow, two_servers_at_one_issuer_refresh_as_their_own_clients)
{
	fx.register_secret = true;
	struct config_oauth pre = {.client_id = "pre-id",
				   .client_secret = "pre-secret"};
	const char *pre_basic = "Basic cHJlLWlkOnByZS1zZWNyZXQ=";
	const char *dyn_basic = "Basic YzE6czNjcmV0";
	struct run r;
	srv_name = "pre";
	cr_assert_eq(login_with(401, NULL, &pre, &r), 0, "%s", r.why);
	run_clear(&r);
	srv_name = "dyn";
	cr_assert_eq(login(&r), 0, "%s", r.why);
	cr_assert_eq(fx.registers, 1);
	run_clear(&r);
	int refreshes = fx.token_refreshes;
	refresh_server("pre");
	cr_assert_str_eq(fx.last_token_auth, pre_basic);
	refresh_server("dyn");
	cr_assert_str_eq(fx.last_token_auth, dyn_basic);
	cr_assert_eq(fx.token_refreshes, refreshes + 2);
	/* the pre-registered server signs in again, last */
	srv_name = "pre";
	cr_assert_eq(login_with(401, NULL, &pre, &r), 0, "%s", r.why);
	run_clear(&r);
	refresh_server("dyn");
	cr_assert_str_eq(fx.last_token_auth, dyn_basic);
	refresh_server("pre");
	cr_assert_str_eq(fx.last_token_auth, pre_basic);
	/* and the dynamic registration is still the issuer's, kept */
	srv_name = "dyn";
	cr_assert_eq(login(&r), 0, "%s", r.why);
	cr_assert_eq(fx.registers, 1);
	cr_assert_str_eq(fx.last_token_auth, dyn_basic);
	run_clear(&r);
}

/* ---- token endpoint authentication ---- */

Test(flow, token_endpoint_auth_post_basic_none)
{
	struct config_oauth o = {.client_id = "pre-id",
				 .client_secret = "pre-secret"};
	struct run r;
	fx.auth_methods = "[\"client_secret_post\"]";
	cr_assert_eq(login_with(401, NULL, &o, &r), 0, "%s", r.why);
	cr_assert_str_eq(fx.last_token_auth, "");
	ASSERT_PARAM(token_param, "client_id", "pre-id");
	ASSERT_PARAM(token_param, "client_secret", "pre-secret");
	run_clear(&r);
	fx.auth_methods = "[\"client_secret_basic\",\"client_secret_post\"]";
	cr_assert_eq(login_with(401, NULL, &o, &r), 0, "%s", r.why);
	cr_assert_str_eq(fx.last_token_auth, "Basic cHJlLWlkOnByZS1zZWNyZXQ=");
	ASSERT_PARAM(token_param, "client_secret", NULL);
	run_clear(&r);
	/* a public client: its id in the body, nothing else */
	o.client_secret = NULL;
	cr_assert_eq(login_with(401, NULL, &o, &r), 0, "%s", r.why);
	cr_assert_str_eq(fx.last_token_auth, "");
	ASSERT_PARAM(token_param, "client_id", "pre-id");
	ASSERT_PARAM(token_param, "client_secret", NULL);
	run_clear(&r);
}

Test(flow, a_registered_secret_is_used_as_registered)
{
	fx.register_secret = true;
	fx.register_method = "client_secret_post";
	fx.auth_methods = "[\"client_secret_basic\",\"client_secret_post\"]";
	struct run r;
	cr_assert_eq(login(&r), 0, "%s", r.why);
	cr_assert_str_eq(fx.last_token_auth, "");
	ASSERT_PARAM(token_param, "client_id", "c1");
	ASSERT_PARAM(token_param, "client_secret", "s3cret");
	run_clear(&r);
}

/* ---- scopes ---- */

Test(flow, scope_from_the_challenge_else_the_resource_else_none)
{
	fx.prm_scopes = "[\"files:read\",\"files:write\"]";
	char www[256];
	snprintf(www, sizeof www, "%s, scope=\"mcp:tools\"", rm_url);
	struct run r;
	cr_assert_eq(login_with(401, www, NULL, &r), 0, "%s", r.why);
	ASSERT_PARAM(authorize_param, "scope", "mcp:tools");
	run_clear(&r);
	cr_assert_eq(login(&r), 0, "%s", r.why);
	ASSERT_PARAM(authorize_param, "scope", "files:read files:write");
	ASSERT_PARAM(authorize_param, "prompt", NULL);
	run_clear(&r);
	fx.prm_scopes = NULL;
	cr_assert_eq(login(&r), 0, "%s", r.why);
	ASSERT_PARAM(authorize_param, "scope", NULL);
	run_clear(&r);
	/* offline_access where the authorization server lists it */
	fx.as_scopes = "[\"offline_access\"]";
	cr_assert_eq(login_with(401, www, NULL, &r), 0, "%s", r.why);
	ASSERT_PARAM(authorize_param, "scope", "mcp:tools offline_access");
	ASSERT_PARAM(authorize_param, "prompt", "consent");
	run_clear(&r);
}

Test(flow, step_up_asks_the_union_and_is_capped)
{
	char www[256];
	snprintf(www, sizeof www, "%s, scope=\"read\"", rm_url);
	struct run r;
	cr_assert_eq(login_with(401, www, NULL, &r), 0, "%s", r.why);
	ASSERT_PARAM(authorize_param, "scope", "read");
	run_clear(&r);
	char *bearer = NULL;
	cr_assert_eq(auth_bearer(au, "srv", url, &bearer, NULL), 0);
	/* a 403 for more: sign in for the union */
	const char *more = "Bearer error=\"insufficient_scope\", "
			   "scope=\"write\"";
	cr_assert_eq(auth_challenge(au, "srv", url, 403, more, bearer),
		     AUTH_LOGIN);
	cr_assert_eq(login_with(0, NULL, NULL, &r), 0, "%s", r.why);
	ASSERT_PARAM(authorize_param, "scope", "read write");
	run_clear(&r);
	free(bearer);
	cr_assert_eq(auth_bearer(au, "srv", url, &bearer, NULL), 0);
	/* the same 403 again though "write" was granted: once more, then
	 * refused until a 403 names something new */
	for (int i = 0; i < AUTH_STEP_UP_REPEATS; i++)
		cr_assert_eq(auth_challenge(au, "srv", url, 403, more, bearer),
			     AUTH_LOGIN, "repeat %d", i);
	cr_assert_eq(auth_challenge(au, "srv", url, 403, more, bearer),
		     AUTH_REFUSED);
	cr_assert_eq(auth_challenge(au, "srv", url, 403, more, bearer),
		     AUTH_REFUSED);
	const char *admin = "Bearer error=\"insufficient_scope\", "
			    "scope=\"admin\"";
	cr_assert_eq(auth_challenge(au, "srv", url, 403, admin, bearer),
		     AUTH_LOGIN);
	cr_assert_eq(login_with(0, NULL, NULL, &r), 0, "%s", r.why);
	ASSERT_PARAM(authorize_param, "scope", "read write admin");
	run_clear(&r);
	free(bearer);
}

Test(flow, a_later_sign_in_asks_the_metadata_again)
{
	struct run r;
	cr_assert_eq(login(&r), 0, "%s", r.why);
	run_clear(&r);
	char *bearer = NULL;
	cr_assert_eq(auth_bearer(au, "srv", url, &bearer, NULL), 0);
	cr_assert_str_eq(bearer + 7, fx.access_token);
	/* a 401 with the refresh token refused would make this a sign-in;
	 * the flow fetches the resource's metadata afresh */
	log_since();
	cr_assert_eq(login_with(0, NULL, NULL, &r), 0, "%s", r.why);
	const char *want = "POST /mcp\n"
			   "GET /.well-known/oauth-protected-resource/mcp\n";
	const char *got = log_since();
	cr_assert(strncmp(got, want, strlen(want)) == 0, "%s", got);
	cr_assert_eq(fx.prm_gets, 2);
	free(bearer);
	run_clear(&r);
}

/* A pasted error redirect with the flow's state and this iss. */
static void paste_error(struct run *r, const char *iss)
{
	memset(r, 0, sizeof *r);
	r->no_browse = true;
	fx.iss_supported = true;
	start(r, 401, NULL, NULL);
	RUN_UNTIL(r->auth_url != NULL);
	char *state = fx_param(strchr(r->auth_url, '?') + 1, "state");
	struct buf paste;
	buf_init(&paste);
	buf_printf(&paste, "%s?error=access_denied", r->redirect_uri);
	form_add(&paste, "error_description", "Not today");
	form_add(&paste, "state", state);
	form_add(&paste, "iss", iss);
	const char *why = NULL;
	cr_assert_eq(auth_flow_redirect(r->f, paste.data, &why), 0, "%s", why);
	RUN_UNTIL(r->done);
	buf_free(&paste);
	free(state);
}

Test(flow, an_error_is_told_only_when_its_issuer_is_right)
{
	struct run r;
	paste_error(&r, "https://evil.example.com");
	cr_assert_eq(r.err, -EACCES);
	cr_assert(strstr(r.why, "another issuer"), "%s", r.why);
	cr_assert_null(strstr(r.why, "access_denied"), "%s", r.why);
	run_clear(&r);
	paste_error(&r, fx.base);
	cr_assert_eq(r.err, -EACCES);
	cr_assert(strstr(r.why, "access_denied"), "%s", r.why);
	run_clear(&r);
	cr_assert_eq(fx.token_codes, 0);
}

Test(flow, no_redirect_within_the_timeout_ends_the_flow)
{
	struct run r = {.no_browse = true};
	struct auth_flow_opts o = {.name = "srv",
				   .url = url,
				   .status = 401,
				   .www_authenticate = rm_url,
				   .timeout_ms = 50};
	cr_assert_eq(auth_flow_start(au, &o, &cbs, &r, &r.f), 0);
	RUN_UNTIL(r.done);
	cr_assert_not_null(r.auth_url);
	cr_assert_eq(r.err, -ETIMEDOUT);
	cr_assert_eq(fx.token_codes, 0);
	/* the listener is gone with it */
	struct fx_browser late;
	fx_browse(&late, hc, r.auth_url);
	RUN_UNTIL(late.done);
	cr_assert_neq(late.status, 200);
	free(late.location);
	run_clear(&r);
}

Test(flow, cancelled_or_freed_flows_say_nothing_more)
{
	/* cancelled while its URL is out */
	struct run r = {.no_browse = true};
	start(&r, 401, NULL, NULL);
	RUN_UNTIL(r.auth_url != NULL);
	auth_flow_cancel(r.f);
	/* the fixture answers; nothing listens for it any more */
	struct fx_browser b;
	fx_browse(&b, hc, r.auth_url);
	RUN_UNTIL(b.done);
	free(b.location);
	cr_assert_not(r.done);
	run_clear(&r);
	/* freed with discovery under way: no callback, no leak */
	struct run r2 = {0};
	start(&r2, 401, NULL, NULL);
	uv_run(&loop, UV_RUN_NOWAIT);
	auth_free(au);
	au = auth_new(&loop, get_http, NULL, dir);
	for (int i = 0; i < 20; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	cr_assert_not(r2.done);
	cr_assert_null(r2.auth_url);
}
