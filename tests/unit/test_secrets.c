/*
 * Unit tests of the one rule of what is secret (config/secrets.c): by
 * what a value is (a header value, an env value named or shaped like a
 * secret, a url's credentials, a value from a variable that is not
 * plainly a path), never by the name of the server it belongs to, never a
 * common variable such as HOME; and the views that ask it: the set that
 * masks a server's text, check's description, a host file's dry run.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/secrets.h"
#include "config_fixture.h"
#include "util/xmalloc.h"

Test(secrets, names_that_say_secret)
{
	static const char *const secret[] = {
		"TOKEN",	  "GITHUB_PERSONAL_ACCESS_TOKEN",
		"apiKey",	  "X-Api-Key",
		"Authorization",  "password",
		"DB_PASS",	  "SESSION_ID",
		"AWS_SECRET_KEY", "primaryApiKey",
		"clientSecret",	  "GITHUBTOKEN",
		"oauthAccount",	  "api-key",
		"GITHUB_PAT",	  "APIKey",
	};
	static const char *const plain[] = {
		"HOME",	    "PATH",  "DEBUG",		"NODE_ENV", "MONKEY",
		"AUTHOR",   "type",  "command",		"args",	    "LOG_LEVEL",
		"PASSPORT", "theme", "KEYBOARD_LAYOUT",
	};
	for (size_t i = 0; i < sizeof secret / sizeof secret[0]; i++)
		cr_assert(secrets_name_is_secret(secret[i]), "%s", secret[i]);
	for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
		cr_assert(!secrets_name_is_secret(plain[i]), "%s", plain[i]);
}

Test(secrets, values_shaped_like_secrets)
{
	static const char *const secret[] = {
		"ghp_0123456789abcdefghijklmnopqrstuvwxyz",
		"sk-ant-api03-AbCdEf0123456789",
		"Bearer something",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
		"5f3a9c1e77d2b8a4c6e1",
		"tok-5f3a9c1e77d2b8a4",
	};
	static const char *const plain[] = {
		"npx",
		"stdio",
		"production",
		"true",
		"/home/me/projects",
		"~/notes",
		"/usr/bin:/bin",
		"@modelcontextprotocol/server-filesystem",
		"claude-3-5-sonnet-20241022",
		"0f0e0d0c-0000-4000-8000-000000000000",
		"sk-short",
	};
	for (size_t i = 0; i < sizeof secret / sizeof secret[0]; i++)
		cr_assert(secrets_value_is_secret(secret[i]), "%s", secret[i]);
	for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
		cr_assert(!secrets_value_is_secret(plain[i]), "%s", plain[i]);
}

Test(secrets, variables_that_are_paths_or_common_are_not_secret)
{
	cr_assert(!secrets_var_is_secret("HOME", "/home/me"));
	cr_assert(!secrets_var_is_secret("USER", "me-the-user"));
	cr_assert(!secrets_var_is_secret("PWD", "/srv/x"));
	cr_assert(!secrets_var_is_secret("LC_ALL", "en_US.UTF-8"));
	cr_assert(!secrets_var_is_secret("XDG_DATA_HOME", "/d"));
	cr_assert(!secrets_var_is_secret("PROJECT_DIR", "/home/me/p"));
	cr_assert(!secrets_var_is_secret("LIST", "/a:/b/c"));
	cr_assert(secrets_var_is_secret("MY_VALUE", "hunter2x"));
	cr_assert(secrets_var_is_secret(NULL, "hunter2x"));
	cr_assert(secrets_var_is_secret("ANYTHING", "/a?token=x"));
}

Test(secrets, options_that_carry_a_secret)
{
	char *args[] = {"--token",
			"abc123def",
			"--api-key=sk-value-1",
			"--verbose",
			"--out",
			"result.txt",
			"--password",
			"/run/pw",
			"plain",
			"--say",
			"boom: no key (token=abc-9)",
			NULL};
	size_t n = 11;
	/* A path is where a secret is kept, not one; text with a '=' in it
	 * is no option. */
	static const char *const shown[] = {
		"--token",
		"***",
		"--api-key=***",
		"--verbose",
		"--out",
		"result.txt",
		"--password",
		"/run/pw",
		"plain",
		"--say",
		"boom: no key (token=abc-9)",
	};
	for (size_t i = 0; i < n; i++) {
		char *s = secrets_arg_shown(args, n, i, NULL);
		cr_assert_str_eq(s, shown[i], "arg %zu", i);
		free(s);
	}
	/* A template shows as written, whatever its value. */
	char *s = secrets_arg_shown(args, n, 1, "${T}");
	cr_assert_str_eq(s, "${T}");
	free(s);
}

/* The case: ${HOME} in args is the path the user needs in a
 * message ("Cannot access directory /home/me/x"); env values that are
 * switches and modes are not secrets; what is named or shaped like one,
 * or comes from a variable that is not a path, is. */
Test(secrets, a_servers_text_keeps_paths_and_plain_values)
{
	setenv("HOME", "/home/secrets-test", 1);
	setenv("MCPV_TS_SECRET", "envS3CRET-999", 1);
	setenv("MCPV_TS_DIR", "/srv/data", 1);
	struct config *cfg = cf_one(
		"{\"command\": \"npx\", \"args\": [\"-y\", \"srv\", "
		"\"${HOME}/projects\", \"${MCPV_TS_DIR}\", \"--key\", "
		"\"${MCPV_TS_SECRET}\"], \"env\": {\"DEBUG\": \"true\", "
		"\"NODE_ENV\": \"production\", \"GITHUB_TOKEN\": "
		"\"ghp_literal0123456789\", \"FROM\": \"${MCPV_TS_SECRET}\", "
		"\"DB\": \"postgres://u:pw-5678@db/x\"}}");
	cr_assert_null(cfg->servers[0].error, "%s", cfg->servers[0].error);
	struct secrets *sec = secrets_new();
	secrets_add_config(sec, cfg);
	char *m = secrets_mask(
		sec, "Cannot access directory /home/secrets-test/projects "
		     "or /srv/data in production (npx stdio); token "
		     "ghp_literal0123456789, var envS3CRET-999, db u:pw-5678");
	cr_assert_str_eq(m, "Cannot access directory /home/secrets-test/"
			    "projects or /srv/data in production (npx stdio); "
			    "token ***, var ***, db ***");
	free(m);
	/* check shows the same: templates as written, what is not secret
	 * as it is, "***" for a literal secret, a url's credentials. */
	json_t *d = config_server_describe(&cfg->servers[0]);
	char *dd = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
	cf_assert_has(dd, "\"${HOME}/projects\"");
	cf_assert_has(dd, "\"DEBUG\":\"true\"");
	cf_assert_has(dd, "\"NODE_ENV\":\"production\"");
	cf_assert_has(dd, "\"GITHUB_TOKEN\":\"***\"");
	cf_assert_has(dd, "\"FROM\":\"${MCPV_TS_SECRET}\"");
	cf_assert_has(dd, "\"DB\":\"postgres://***@db/x\"");
	cf_assert_lacks(dd, "envS3CRET");
	cf_assert_lacks(dd, "ghp_literal");
	cf_assert_lacks(dd, "pw-5678");
	free(dd);
	json_decref(d);
	secrets_free(sec);
	config_free(cfg);
}

static json_t *ts_json(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);
	cr_assert_not_null(j, "%s", e.text);
	return j;
}

/* The case: a server named secret-api, 1password, or with
 * "auth", "session" or "private" in its name had its whole entry masked
 * in setup's dry run, and then its plain values ("npx", "stdio")
 * everywhere in the diff. A server's name says nothing of its values. */
Test(secrets, a_servers_name_masks_nothing)
{
	static const char *const names[] = {"secret-api", "1password",
					    "github-auth", "browser-session",
					    "private-notes"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char *text = xasprintf(
			"{\"mcpServers\": {\"%s\": {\"type\": \"stdio\", "
			"\"command\": \"npx\", \"args\": [\"-y\", "
			"\"@acme/mcp-server\"], \"env\": {\"LOG\": "
			"\"debug\", \"API_TOKEN\": \"tok-FIXED-0001\"}}}}",
			names[i]);
		json_t *doc = ts_json(text);
		struct secrets *sec = secrets_new();
		json_t *m = secrets_mask_json(doc, sec);
		json_t *e = json_object_get(json_object_get(m, "mcpServers"),
					    names[i]);
		cr_assert_str_eq(
			json_string_value(json_object_get(e, "command")), "npx",
			"%s", names[i]);
		cr_assert_str_eq(json_string_value(json_object_get(e, "type")),
				 "stdio");
		cr_assert_str_eq(json_string_value(json_array_get(
					 json_object_get(e, "args"), 1)),
				 "@acme/mcp-server");
		json_t *env = json_object_get(e, "env");
		cr_assert_str_eq(json_string_value(json_object_get(env, "LOG")),
				 "debug");
		cr_assert_str_eq(
			json_string_value(json_object_get(env, "API_TOKEN")),
			"***");
		/* The text of the diff: only the token goes. */
		char *shown =
			secrets_mask(sec, "\"type\": \"stdio\", \"command\":"
					  " \"npx\" tok-FIXED-0001");
		cr_assert_str_eq(shown, "\"type\": \"stdio\", \"command\": "
					"\"npx\" ***");
		free(shown);
		json_decref(m);
		json_decref(doc);
		secrets_free(sec);
		free(text);
	}
}

/* Outside the server entries a key that names a secret still hides its
 * value (Claude Code's "oauthAccount", "primaryApiKey"), and a string
 * shaped like a secret anywhere. */
Test(secrets, a_host_files_other_keys)
{
	json_t *doc = ts_json(
		"{\"primaryApiKey\": \"sk-ant-key\", \"oauthAccount\": "
		"{\"emailAddress\": \"me@example.com\"}, \"userID\": "
		"\"0a1b2c3d4e5f60718293a4b5c6d7e8f9\", \"theme\": \"dark\", "
		"\"servers\": {\"x\": {\"url\": "
		"\"https://h/mcp#section\", \"headers\": {\"A\": "
		"\"${input:tok}\", \"B\": \"plain-value\"}}}}");
	struct secrets *sec = secrets_new();
	json_t *m = secrets_mask_json(doc, sec);
	char *t = json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS);
	cf_assert_has(t, "\"primaryApiKey\":\"***\"");
	cf_assert_has(t, "\"emailAddress\":\"***\"");
	cf_assert_has(t, "\"userID\":\"***\"");
	cf_assert_has(t, "\"theme\":\"dark\"");
	cf_assert_has(t, "\"url\":\"https://h/mcp#section\"");
	cf_assert_has(t, "\"A\":\"${input:tok}\"");
	cf_assert_has(t, "\"B\":\"***\"");
	free(t);
	json_decref(m);
	json_decref(doc);
	secrets_free(sec);
}

Test(secrets, a_urls_credentials)
{
	static const struct {
		const char *url, *shown;
	} v[] = {
		{"https://u:p@h/x?a=1&b#frag",
		 "https://***@h/x?a=***&***#frag"},
		{"https://h/cb#access_token=abc&x=1",
		 "https://h/cb#access_token=***&x=***"},
		{"https://h/x#5f3a9c1e77d2b8a4c6e1", "https://h/x#***"},
		{"http://localhost:3001/mcp", "http://localhost:3001/mcp"},
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		char *s = secrets_mask_url(v[i].url, NULL);
		cr_assert_str_eq(s, v[i].shown);
		free(s);
	}
}
