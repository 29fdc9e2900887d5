/*
 * Unit tests for url servers in the config module: the transport "type"
 * (http, streamable-http, sse, inferred), the loopback rule and {port}
 * places of a local server, and that the transport and the headers (as
 * fingerprints, never their values) make the connection identity.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/secrets.h"
#include "config_fixture.h"
#include "util/xmalloc.h"

#define TH_SECRET "tok-7Qx91-SECRET"

/* The server's error, which must start with the usual head and contain
 * want. */
static void th_assert_error(const char *server_json, const char *want)
{
	struct config *cfg = cf_one(server_json);
	const char *err = cfg->servers[0].error;
	cr_assert_not_null(err, "no error for %s", server_json);
	cr_assert_eq(strncmp(err, "t.json: server \"s\": ", 20), 0, "%s", err);
	cf_assert_has(err, want);
	config_free(cfg);
}

static void th_assert_ok(const char *server_json)
{
	struct config *cfg = cf_one(server_json);
	cr_assert_null(cfg->servers[0].error, "%s: %s", server_json,
		       cfg->servers[0].error);
	config_free(cfg);
}

Test(config_http, type_sets_the_transport)
{
	static const struct {
		const char *json;
		enum server_kind kind;
		enum server_http_type type;
		const char *name;
	} cases[] = {
		{"{\"url\": \"https://h/mcp\"}", SERVER_HTTP_REMOTE,
		 HTTP_TYPE_AUTO, "auto"},
		{"{\"url\": \"https://h/mcp\", \"type\": \"http\"}",
		 SERVER_HTTP_REMOTE, HTTP_TYPE_STREAMABLE, "http"},
		{"{\"url\": \"https://h/mcp\", \"type\": \"streamable-http\"}",
		 SERVER_HTTP_REMOTE, HTTP_TYPE_STREAMABLE, "http"},
		{"{\"url\": \"https://h/sse\", \"type\": \"sse\"}",
		 SERVER_HTTP_REMOTE, HTTP_TYPE_SSE, "sse"},
		{"{\"command\": \"srv\", \"args\": [\"{port}\"], \"url\": "
		 "\"http://127.0.0.1:{port}/sse\", \"type\": \"sse\"}",
		 SERVER_HTTP_LOCAL, HTTP_TYPE_SSE, "sse"},
		{"{\"command\": \"srv\", \"url\": "
		 "\"http://127.0.0.1:{port}/mcp\"}",
		 SERVER_HTTP_LOCAL, HTTP_TYPE_AUTO, "auto"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct config *cfg = cf_one(cases[i].json);
		const struct server_config *s = &cfg->servers[0];
		cr_assert_null(s->error, "%s: %s", cases[i].json, s->error);
		cr_assert_eq(s->kind, cases[i].kind, "%s", cases[i].json);
		cr_assert_eq(s->http_type, cases[i].type, "%s", cases[i].json);
		json_t *d = config_server_describe(s);
		cr_assert_str_eq(
			json_string_value(json_object_get(d, "transport")),
			cases[i].name, "%s", cases[i].json);
		json_decref(d);
		config_free(cfg);
	}
	struct config *cfg = cf_one("{\"command\": \"srv\"}");
	json_t *d = config_server_describe(&cfg->servers[0]);
	cr_assert_str_eq(json_string_value(json_object_get(d, "transport")),
			 "stdio");
	json_decref(d);
	config_free(cfg);
	cr_assert_str_eq(config_http_type_name(HTTP_TYPE_AUTO), "auto");
	cr_assert_str_eq(config_http_type_name(HTTP_TYPE_STREAMABLE), "http");
	cr_assert_str_eq(config_http_type_name(HTTP_TYPE_SSE), "sse");
}

Test(config_http, sse_needs_a_url_and_unknown_types_name_sse)
{
	th_assert_error("{\"type\": \"sse\", \"command\": \"x\"}",
			"field \"type\": \"sse\" needs a \"url\"");
	th_assert_error("{\"type\": \"websocket\", \"url\": \"https://h/\"}",
			"field \"type\": unknown value \"websocket\": expected "
			"\"stdio\", \"http\", \"streamable-http\" or \"sse\"");
}

Test(config_http, local_url_hosts_that_are_loopback)
{
	static const char *const ok[] = {
		"http://127.0.0.1:{port}/mcp",
		"http://[::1]:{port}/mcp",
		"http://localhost:{port}/mcp",
		"HTTP://LocalHost:{port}",
		"https://localhost:{port}/mcp?x=1",
		"http://user@127.0.0.1:{port}/mcp",
		"http://127.0.0.1:{port}",
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		char *j = xasprintf("{\"command\": \"srv\", \"url\": \"%s\"}",
				    ok[i]);
		th_assert_ok(j);
		free(j);
	}
}

Test(config_http, local_url_hosts_that_are_not_loopback)
{
	static const char *const bad[] = {
		"http://0.0.0.0:{port}/mcp",
		"http://192.168.1.20:{port}/mcp",
		"http://example.com:{port}/mcp",
		"http://127.0.0.1.example.com:{port}/mcp",
		"http://localhost.example.com:{port}/mcp",
		"http://[::2]:{port}/mcp",
		"http://[::1:{port}/mcp",
		/* userinfo that looks like a host: the host is after '@' */
		"http://127.0.0.1@example.com:{port}/mcp",
		"http://:{port}/mcp",
		"http://{port}/mcp",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *j = xasprintf("{\"command\": \"srv\", \"url\": \"%s\"}",
				    bad[i]);
		th_assert_error(j, "field \"url\": with \"command\" the url's "
				   "host must be loopback (127.0.0.1, [::1] "
				   "or localhost)");
		free(j);
	}
}

/* The url may come from a variable holding a token (userinfo, query):
 * the message names the field, never the url. */
Test(config_http, loopback_error_never_shows_the_url)
{
	setenv("MCPV_TH_URL", "http://" TH_SECRET "@10.0.0.1:{port}/mcp", 1);
	struct config *cfg =
		cf_one("{\"command\": \"srv\", \"url\": \"${MCPV_TH_URL}\"}");
	cf_assert_has(cfg->servers[0].error, "field \"url\"");
	cf_assert_lacks(cfg->servers[0].error, TH_SECRET);
	cf_assert_lacks(cfg->servers[0].error, "10.0.0.1");
	config_free(cfg);
}

Test(config_http, port_only_in_args_env_and_url)
{
	th_assert_ok("{\"command\": \"srv\", \"args\": [\"--port={port}\"], "
		     "\"env\": {\"PORT\": \"{port}\"}, \"url\": "
		     "\"http://localhost:{port}/mcp\"}");
	th_assert_error("{\"url\": \"http://127.0.0.1:{port}/mcp\"}",
			"field \"url\": {port} is only for a local server");
	th_assert_error("{\"command\": \"srv\", \"url\": "
			"\"http://127.0.0.1:8080/mcp\"}",
			"field \"url\": with \"command\" the url must contain "
			"{port}");
	th_assert_error("{\"command\": \"/opt/{port}/srv\", \"url\": "
			"\"http://127.0.0.1:{port}/mcp\"}",
			"field \"command\": {port} is replaced only in "
			"\"args\", \"env\" and \"url\"");
	th_assert_error("{\"command\": \"srv\", \"cwd\": \"/w/{port}\", "
			"\"url\": \"http://127.0.0.1:{port}/mcp\"}",
			"field \"cwd\": {port} is replaced only in");
	th_assert_error("{\"url\": \"https://h/mcp\", \"headers\": "
			"{\"X-Port\": \"{port}\"}}",
			"field \"headers\": {port} is replaced only in");
}

/* A stdio server may pass "{port}" on purpose: a warning, not an error. */
Test(config_http, port_in_a_stdio_server_warns)
{
	struct config *cfg =
		cf_one("{\"command\": \"srv\", \"args\": [\"{port}\"]}");
	cr_assert_null(cfg->servers[0].error, "%s", cfg->servers[0].error);
	cr_assert_eq(cfg->nwarnings, 1);
	cf_assert_has(cfg->warnings[0],
		      "server \"s\": field \"args\": {port} is passed as "
		      "written");
	config_free(cfg);
	cfg = cf_one("{\"command\": \"srv\", \"env\": {\"P\": \"{port}\"}}");
	cr_assert_eq(cfg->nwarnings, 1);
	cf_assert_has(cfg->warnings[0], "field \"env\": {port}");
	config_free(cfg);
}

/* The identity of two url servers that differ only in what is named. */
static char *th_identity(const char *server_json, bool fp)
{
	struct config *cfg = cf_one(server_json);
	cr_assert_null(cfg->servers[0].error, "%s", cfg->servers[0].error);
	char *id =
		cf_dump(config_server_identity(&cfg->servers[0], fp, "salt"));
	config_free(cfg);
	return id;
}

Test(config_http, identity_holds_the_transport)
{
	char *a = th_identity("{\"url\": \"https://h/mcp\"}", true);
	char *b = th_identity("{\"url\": \"https://h/mcp\", \"type\": "
			      "\"http\"}",
			      true);
	char *c = th_identity("{\"url\": \"https://h/mcp\", \"type\": "
			      "\"streamable-http\"}",
			      true);
	char *d = th_identity("{\"url\": \"https://h/mcp\", \"type\": "
			      "\"sse\"}",
			      true);
	cf_assert_has(a, "\"type\":\"auto\"");
	cf_assert_has(b, "\"type\":\"http\"");
	cf_assert_has(d, "\"type\":\"sse\"");
	cr_assert_str_neq(a, b);
	cr_assert_str_neq(b, d);
	/* Two spellings of one transport are one instance. */
	cr_assert_str_eq(b, c);
	free(a);
	free(b);
	free(c);
	free(d);
	/* A stdio server's identity is what it was before url servers, so
	 * its instance key and tool cache name do not change. */
	char *s = th_identity("{\"command\": \"srv\"}", true);
	cf_assert_lacks(s, "\"type\"");
	free(s);
}

Test(config_http, headers_are_fingerprinted_in_the_identity)
{
	setenv("MCPV_TH_TOKEN", TH_SECRET, 1);
	const char *j = "{\"url\": \"https://h/mcp\", \"headers\": "
			"{\"Authorization\": \"Bearer ${MCPV_TH_TOKEN}\"}}";
	char *fp = th_identity(j, true);
	cf_assert_lacks(fp, TH_SECRET);
	cf_assert_has(fp, "\"Authorization\":\"fp:");
	char *plain = th_identity(j, false);
	cf_assert_has(plain, "Bearer " TH_SECRET);
	/* A new credential is a new connection: the instance with the old
	 * one (needs_auth, say) is not the one a changed config gets. */
	setenv("MCPV_TH_TOKEN", TH_SECRET "-rotated", 1);
	char *fp2 = th_identity(j, true);
	cr_assert_str_neq(fp, fp2);
	free(fp);
	free(fp2);
	free(plain);
}

Test(config_http, check_view_masks_headers_and_url_secrets)
{
	setenv("MCPV_TH_TOKEN", TH_SECRET, 1);
	struct config *cfg = cf_one(
		"{\"url\": \"https://u:${MCPV_TH_TOKEN}@h/mcp?key=${MCPV_TH_"
		"TOKEN}\", \"type\": \"sse\", \"headers\": {\"Authorization\": "
		"\"Bearer ${MCPV_TH_TOKEN}\", \"X-Api-Key\": "
		"\"${MCPV_TH_TOKEN}\"}}");
	cr_assert_null(cfg->servers[0].error, "%s", cfg->servers[0].error);
	char *d = cf_dump(config_server_describe(&cfg->servers[0]));
	cf_assert_lacks(d, TH_SECRET);
	cf_assert_has(d, "\"Authorization\":\"***\"");
	cf_assert_has(d, "\"X-Api-Key\":\"***\"");
	cf_assert_has(d, "\"url\":\"https://***@h/mcp?key=***\"");
	cf_assert_has(d, "\"transport\":\"sse\"");
	free(d);
	char *id = cf_dump(config_server_identity(&cfg->servers[0], true, "s"));
	cf_assert_lacks(id, TH_SECRET);
	free(id);
	config_free(cfg);
}

/* An unset variable in a header is named, its neighbours' values not. */
Test(config_http, unset_header_variable_is_named)
{
	unsetenv("MCPV_TH_UNSET");
	th_assert_error("{\"url\": \"https://h/mcp\", \"headers\": "
			"{\"Authorization\": \"Bearer ${MCPV_TH_UNSET}\"}}",
			"field \"headers\": \"Authorization\": variable "
			"\"MCPV_TH_UNSET\" is not set");
}

/* A server refusing a token may quote it without its scheme. */
Test(config_http, a_header_credential_is_masked_without_its_scheme)
{
	setenv("MCPV_TH_TOKEN", TH_SECRET, 1);
	struct config *cfg =
		cf_one("{\"url\": \"https://h/mcp\", \"headers\": "
		       "{\"Authorization\": \"Bearer ${MCPV_TH_TOKEN}\"}}");
	struct secrets *sec = secrets_new();
	secrets_add_config(sec, cfg);
	char *m = secrets_mask(sec, "401: invalid token " TH_SECRET
				    "; sent Bearer " TH_SECRET);
	cr_assert_str_eq(m, "401: invalid token ***; sent ***");
	free(m);
	secrets_free(sec);
	config_free(cfg);
}

/* A ${VAR} in a url's path is as secret as one in its query: masked in
 * the check view, fingerprinted in the identity, masked by the secrets. */
Test(config_http, a_url_variable_in_the_path_is_a_secret)
{
	setenv("MCPV_TH_TOKEN", TH_SECRET, 1);
	struct config *cfg =
		cf_one("{\"url\": \"https://h/${MCPV_TH_TOKEN}/mcp\"}");
	cr_assert_null(cfg->servers[0].error, "%s", cfg->servers[0].error);
	char *d = cf_dump(config_server_describe(&cfg->servers[0]));
	cf_assert_lacks(d, TH_SECRET);
	cf_assert_has(d, "\"url\":\"https://h/***/mcp\"");
	free(d);
	char *id = cf_dump(config_server_identity(&cfg->servers[0], true, "s"));
	cf_assert_lacks(id, TH_SECRET);
	free(id);
	struct secrets *sec = secrets_new();
	secrets_add_config(sec, cfg);
	char *m = secrets_mask(sec, "GET /" TH_SECRET "/mcp failed");
	cr_assert_str_eq(m, "GET /***/mcp failed");
	free(m);
	secrets_free(sec);
	config_free(cfg);
}
