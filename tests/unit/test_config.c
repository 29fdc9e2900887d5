/*
 * Unit tests for the config module (parsing, errors, ${VAR} expansion,
 * durations, identity and masked views) and for the SHA-256 helper it uses.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "config_fixture.h"
#include "util/buf.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

#define TC_SECRET "s3cr3t-VALUE-9f2c"

static struct config *tc_parse(const char *text, const char *path)
{
	return config_parse(text, strlen(text), path);
}

static const char *tc_env(const struct server_config *s, const char *key)
{
	for (size_t i = 0; i < s->nenv; i++)
		if (strcmp(s->env[i].key, key) == 0)
			return s->env[i].value;
	return NULL;
}

static char *tc_tmpdir(void)
{
	char *dir = xstrdup("/tmp/mcpv-test-config-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	return dir;
}

static void tc_write(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(data, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

Test(config, valid_all_kinds)
{
	setenv("MCPV_T_A", "alpha", 1);
	setenv("MCPV_T_SECRET", TC_SECRET, 1);
	const char *text =
		"{\"idleTimeout\": \"5m\", \"shutdownGrace\": 2000,\n"
		" \"mcpServers\": {\n"
		"  \"demo\": {\"command\": \"../build/demo-server\",\n"
		"    \"args\": [\"--mode\", \"${MCPV_T_A}\"],\n"
		"    \"env\": {\"TOKEN\": \"${MCPV_T_SECRET}\", \"PLAIN\": "
		"\"x\"},\n"
		"    \"cwd\": \"data\", \"scope\": \"space\",\n"
		"    \"exposure\": \"codemode\", \"startupTimeout\": \"2s\",\n"
		"    \"toolTimeout\": 60000, \"idleTimeout\": \"1h\"},\n"
		"  \"github\": {\"type\": \"http\",\n"
		"    \"url\": \"https://api.example.com/mcp\",\n"
		"    \"headers\": {\"Authorization\": \"Bearer "
		"${MCPV_T_SECRET}\"},\n"
		"    \"prefix\": \"gh\", \"scope\": \"app\"},\n"
		"  \"web\": {\"command\": \"node\",\n"
		"    \"args\": [\"srv.js\", \"--port\", \"{port}\"],\n"
		"    \"url\": \"http://127.0.0.1:{port}/mcp\",\n"
		"    \"type\": \"streamable-http\", \"exposure\": \"hidden\",\n"
		"    \"prefix\": \"\"},\n"
		"  \"off\": {\"command\": \"/usr/bin/true\", \"disabled\": "
		"true,\n"
		"    \"type\": \"stdio\", \"exposure\": "
		"\"codemode-deferred\"}\n"
		" }}";
	struct config *cfg = tc_parse(text, "/srv/conf/mcp.json");
	cr_assert_null(cfg->fatal, "%s", cfg->fatal);
	cr_assert_eq(cfg->nwarnings, 0, "warning: %s",
		     cfg->nwarnings ? cfg->warnings[0] : "");
	cr_assert_str_eq(cfg->path, "/srv/conf/mcp.json");
	cr_assert_eq(cfg->idle_timeout_ms, 5 * 60 * 1000);
	cr_assert_eq(cfg->shutdown_grace_ms, 2000);
	cr_assert_eq(cfg->nservers, 4);
	for (size_t i = 0; i < cfg->nservers; i++)
		cr_assert_null(cfg->servers[i].error, "%s",
			       cfg->servers[i].error);

	const struct server_config *d = &cfg->servers[0];
	cr_assert_str_eq(d->name, "demo");
	cr_assert_eq(d->kind, SERVER_STDIO);
	cr_assert_str_eq(d->command, "/srv/build/demo-server");
	cr_assert_eq(d->nargs, 2);
	cr_assert_str_eq(d->args[0], "--mode");
	cr_assert_str_eq(d->args[1], "alpha");
	cr_assert_eq(d->nenv, 2);
	cr_assert_str_eq(tc_env(d, "TOKEN"), TC_SECRET);
	cr_assert_str_eq(tc_env(d, "PLAIN"), "x");
	cr_assert_str_eq(d->cwd, "/srv/conf/data");
	cr_assert_null(d->url);
	cr_assert_eq(d->scope, SCOPE_SPACE);
	cr_assert_eq(d->exposure, EXPOSE_DEFERRED);
	cr_assert_str_eq(d->prefix, "demo");
	cr_assert_eq(d->startup_timeout_ms, 2000);
	cr_assert_eq(d->idle_timeout_ms, 3600 * 1000);
	cr_assert_eq(d->tool_timeout_ms, 60000);
	cr_assert_not(d->disabled);

	const struct server_config *g = &cfg->servers[1];
	cr_assert_str_eq(g->name, "github");
	cr_assert_eq(g->kind, SERVER_HTTP_REMOTE);
	cr_assert_null(g->command);
	cr_assert_str_eq(g->url, "https://api.example.com/mcp");
	cr_assert_eq(g->nheaders, 1);
	cr_assert_str_eq(g->headers[0].key, "Authorization");
	cr_assert_str_eq(g->headers[0].value, "Bearer " TC_SECRET);
	cr_assert_str_eq(g->prefix, "gh");
	cr_assert_eq(g->scope, SCOPE_APP);
	cr_assert_eq(g->exposure, EXPOSE_DIRECT);
	cr_assert_eq(g->startup_timeout_ms, CONFIG_DEFAULT_STARTUP_MS);
	cr_assert_eq(g->idle_timeout_ms, -1);
	cr_assert_eq(g->tool_timeout_ms, 0);

	const struct server_config *w = &cfg->servers[2];
	cr_assert_eq(w->kind, SERVER_HTTP_LOCAL);
	cr_assert_str_eq(w->command, "node");
	cr_assert_str_eq(w->url, "http://127.0.0.1:{port}/mcp");
	cr_assert_str_eq(w->args[2], "{port}");
	cr_assert_str_eq(w->prefix, "");
	cr_assert_eq(w->exposure, EXPOSE_HIDDEN);
	cr_assert_eq(w->scope, SCOPE_SESSION);

	const struct server_config *o = &cfg->servers[3];
	cr_assert_eq(o->kind, SERVER_STDIO);
	cr_assert_str_eq(o->command, "/usr/bin/true");
	cr_assert(o->disabled);
	cr_assert_eq(o->exposure, EXPOSE_DEFERRED);
	cr_assert_null(o->cwd);

	cr_assert_eq(config_find(cfg, "web"), w);
	cr_assert_null(config_find(cfg, "nope"));
	config_free(cfg);
}

Test(config, empty_map_and_free_null)
{
	struct config *cfg = tc_parse("{\"mcpServers\": {}}", "t.json");
	cr_assert_null(cfg->fatal);
	cr_assert_eq(cfg->nservers, 0);
	cr_assert_eq(cfg->idle_timeout_ms, CONFIG_DEFAULT_IDLE_MS);
	cr_assert_eq(cfg->shutdown_grace_ms, CONFIG_DEFAULT_GRACE_MS);
	config_free(cfg);
	config_free(NULL);
	sha256_free(NULL);
}

Test(config, servers_keep_file_order)
{
	struct config *cfg = tc_parse(
		"{\"mcpServers\": {\"zeta\": {\"command\": \"a\"}, \"alpha\": "
		"{\"command\": \"b\"}, \"mid\": {\"command\": \"c\"}}}",
		"t.json");
	cr_assert_eq(cfg->nservers, 3);
	cr_assert_str_eq(cfg->servers[0].name, "zeta");
	cr_assert_str_eq(cfg->servers[1].name, "alpha");
	cr_assert_str_eq(cfg->servers[2].name, "mid");
	config_free(cfg);
}

Test(config, not_json_has_line_and_column)
{
	struct config *cfg = tc_parse(
		"{\n  \"mcpServers\": {\n    \"a\": {,\n  }\n}", "t.json");
	cf_assert_has(cfg->fatal, "t.json: line 3, column ");
	cf_assert_has(cfg->fatal, "not valid JSON");
	cr_assert_eq(cfg->nservers, 0);
	config_free(cfg);

	cfg = tc_parse("", "empty.json");
	cf_assert_has(cfg->fatal, "empty.json: line ");
	cf_assert_has(cfg->fatal, "not valid JSON");
	config_free(cfg);

	cfg = config_parse("\x01\xff\x00garbage", 10, "bin.json");
	cf_assert_has(cfg->fatal, "not valid JSON");
	config_free(cfg);

	cfg = tc_parse("{\"mcpServers\": {\"a\": {\"command\": \"x\"}, \"a\": "
		       "{\"command\": \"y\"}}}",
		       "dup.json");
	cf_assert_has(cfg->fatal, "dup.json: line 1");
	cf_assert_has(cfg->fatal, "duplicate");
	config_free(cfg);
}

Test(config, top_level_shape_errors)
{
	struct config *cfg = tc_parse("{\"servers\": {}}", "t.json");
	cf_assert_has(cfg->fatal, "t.json: no \"mcpServers\" field");
	config_free(cfg);

	cfg = tc_parse("{\"mcpServers\": [1, 2]}", "t.json");
	cf_assert_has(cfg->fatal, "t.json: field \"mcpServers\": expected an "
				  "object of servers by name, got array");
	config_free(cfg);

	cfg = tc_parse("{\"mcpServers\": \"x\"}", "t.json");
	cf_assert_has(cfg->fatal, "got string");
	config_free(cfg);

	cfg = tc_parse("[]", "t.json");
	cf_assert_has(cfg->fatal, "t.json: expected an object with "
				  "\"mcpServers\" at the top, got array");
	config_free(cfg);

	cfg = tc_parse("{\"mcpServers\": {}, \"idleTimeout\": \"soon\"}",
		       "t.json");
	cf_assert_has(cfg->fatal,
		      "t.json: field \"idleTimeout\": expected a duration");
	config_free(cfg);

	cfg = tc_parse("{\"mcpServers\": {}, \"shutdownGrace\": -5}", "t.json");
	cf_assert_has(cfg->fatal, "field \"shutdownGrace\"");
	config_free(cfg);
}

Test(config, unknown_fields_are_warnings)
{
	struct config *cfg = tc_parse(
		"{\"theme\": \"dark\", \"mcpServers\": {\"s\": {\"command\": "
		"\"x\", \"autoApprove\": [], \"headers\": {}}, \"r\": "
		"{\"url\": "
		"\"https://h/mcp\", \"args\": [\"a\"]}}}",
		"t.json");
	cr_assert_null(cfg->fatal);
	cr_assert_null(cfg->servers[0].error);
	cr_assert_null(cfg->servers[1].error);
	cr_assert_eq(cfg->nwarnings, 4);
	cr_assert_str_eq(cfg->warnings[0],
			 "t.json: unknown top-level field \"theme\" (ignored)");
	cr_assert_str_eq(cfg->warnings[1], "t.json: server \"s\": unknown "
					   "field \"autoApprove\" (ignored)");
	cr_assert_str_eq(cfg->warnings[2],
			 "t.json: server \"s\": field \"headers\" is ignored "
			 "without \"url\"");
	cr_assert_str_eq(cfg->warnings[3],
			 "t.json: server \"r\": field \"args\" is ignored "
			 "without \"command\"");
	config_free(cfg);
}

Test(config, warnings_are_bounded)
{
	struct buf b;
	buf_init(&b);
	buf_puts(&b, "{\"mcpServers\": {\"s\": {\"command\": \"x\"");
	for (int i = 0; i < 500; i++)
		buf_printf(&b, ", \"f%d\": 1", i);
	buf_puts(&b, "}}}");
	struct config *cfg = config_parse(b.data, b.len, "t.json");
	cr_assert_null(cfg->servers[0].error);
	cr_assert_lt(cfg->nwarnings, 200);
	cf_assert_has(cfg->warnings[cfg->nwarnings - 1], "more warnings");
	config_free(cfg);
	buf_free(&b);
}

struct tc_bad {
	const char *server;
	const char *error; /* expected, after "t.json: server \"s\": " */
};

static void tc_check_bad(const struct tc_bad *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct config *cfg = cf_one(cases[i].server);
		const struct server_config *s = &cfg->servers[0];
		char *want =
			xasprintf("t.json: server \"s\": %s", cases[i].error);
		cr_assert_not_null(s->error, "no error for %s",
				   cases[i].server);
		cr_assert_eq(strncmp(s->error, want, strlen(want)), 0,
			     "for %s\n got: %s\nwant: %s...", cases[i].server,
			     s->error, want);
		cr_assert_str_eq(s->name, "s");
		cr_assert_not_null(s->prefix);
		free(want);
		config_free(cfg);
	}
}

Test(config, bad_field_types)
{
	static const struct tc_bad cases[] = {
		{"\"just a string\"",
		 "expected an object with \"command\" or \"url\", got string"},
		{"[]", "expected an object with \"command\" or \"url\", got "
		       "array"},
		{"{\"command\": 5}",
		 "field \"command\": expected a string, got number"},
		{"{\"command\": [\"x\"]}",
		 "field \"command\": expected a string, got array"},
		{"{\"command\": \"\"}", "field \"command\": must not be empty"},
		{"{\"command\": \"x\", \"args\": 42}",
		 "field \"args\": expected an array of strings, got number"},
		{"{\"command\": \"x\", \"args\": \"a b\"}",
		 "field \"args\": expected an array of strings, got string"},
		{"{\"command\": \"x\", \"args\": [\"a\", 5]}",
		 "field \"args\": expected an array of strings, got number at "
		 "index 1"},
		{"{\"command\": \"x\", \"env\": []}",
		 "field \"env\": expected an object of strings, got array"},
		{"{\"command\": \"x\", \"env\": {\"A\": 1}}",
		 "field \"env\": expected an object of strings, got number for "
		 "\"A\""},
		{"{\"command\": \"x\", \"env\": {\"A=B\": \"1\"}}",
		 "field \"env\": \"A=B\" is not a valid variable name"},
		{"{\"command\": \"x\", \"env\": {\"\": \"1\"}}",
		 "field \"env\": \"\" is not a valid variable name"},
		{"{\"command\": \"x\", \"cwd\": true}",
		 "field \"cwd\": expected a string, got boolean"},
		{"{\"command\": \"x\", \"cwd\": \"\"}",
		 "field \"cwd\": must not be empty"},
		{"{\"url\": 5}",
		 "field \"url\": expected a string, got number"},
		{"{\"url\": \"ftp://h/x\"}",
		 "field \"url\": must start with http:// or https://"},
		{"{\"url\": \"example.com/mcp\"}",
		 "field \"url\": must start with http:// or https://"},
		{"{\"url\": \"https://h/a b\"}",
		 "field \"url\": holds a space or a control character"},
		{"{\"url\": \"https://h\", \"headers\": \"x\"}",
		 "field \"headers\": expected an object of strings, got "
		 "string"},
		{"{\"url\": \"https://h\", \"headers\": {\"A\": 1}}",
		 "field \"headers\": expected an object of strings, got number "
		 "for \"A\""},
		{"{\"url\": \"https://h\", \"headers\": {\"Bad Name\": \"1\"}}",
		 "field \"headers\": \"Bad Name\" is not a valid header name"},
		{"{\"command\": \"x\", \"type\": 1}",
		 "field \"type\": expected a string, got number"},
		{"{\"command\": \"x\", \"scope\": 1}",
		 "field \"scope\": expected a string, got number"},
		{"{\"command\": \"x\", \"exposure\": false}",
		 "field \"exposure\": expected a string, got boolean"},
		{"{\"command\": \"x\", \"prefix\": 1}",
		 "field \"prefix\": expected a string, got number"},
		{"{\"command\": \"x\", \"startupTimeout\": true}",
		 "field \"startupTimeout\": expected a duration"},
		{"{\"command\": \"x\", \"idleTimeout\": {}}",
		 "field \"idleTimeout\": expected a duration"},
		{"{\"command\": \"x\", \"toolTimeout\": [1]}",
		 "field \"toolTimeout\": expected a duration"},
		{"{\"command\": \"x\", \"disabled\": \"yes\"}",
		 "field \"disabled\": expected true or false, got string"},
		{"{\"command\": \"x\", \"disabled\": 1}",
		 "field \"disabled\": expected true or false, got number"},
	};
	tc_check_bad(cases, sizeof cases / sizeof cases[0]);
}

Test(config, bad_enum_values)
{
	static const struct tc_bad cases[] = {
		{"{\"command\": \"x\", \"type\": \"grpc\"}",
		 "field \"type\": unknown value \"grpc\": expected \"stdio\", "
		 "\"http\", \"streamable-http\" or \"sse\""},
		{"{\"command\": \"x\", \"scope\": \"global\"}",
		 "field \"scope\": unknown value \"global\": expected "
		 "\"session\", \"space\" or \"app\""},
		{"{\"command\": \"x\", \"exposure\": \"visible\"}",
		 "field \"exposure\": unknown value \"visible\": expected "
		 "\"direct\", \"hidden\" or \"deferred\""},
		{"{\"command\": \"x\", \"scope\": \"Session\"}",
		 "field \"scope\": unknown value \"Session\""},
		{"{\"command\": \"x\", \"type\": \"std\\nio\"}",
		 "field \"type\": unknown value \"std\\x0aio\""},
	};
	tc_check_bad(cases, sizeof cases / sizeof cases[0]);
}

Test(config, enum_values_and_aliases)
{
	static const struct {
		const char *v;
		enum server_exposure e;
	} ex[] = {
		{"direct", EXPOSE_DIRECT},
		{"hidden", EXPOSE_HIDDEN},
		{"deferred", EXPOSE_DEFERRED},
		{"codemode", EXPOSE_DEFERRED},
		{"codemode-deferred", EXPOSE_DEFERRED},
	};
	for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
		char *js = xasprintf(
			"{\"command\": \"x\", \"exposure\": \"%s\"}", ex[i].v);
		struct config *cfg = cf_one(js);
		cr_assert_null(cfg->servers[0].error, "%s",
			       cfg->servers[0].error);
		cr_assert_eq(cfg->servers[0].exposure, ex[i].e, "%s", ex[i].v);
		config_free(cfg);
		free(js);
	}
	static const struct {
		const char *v;
		enum server_scope sc;
	} sc[] = {
		{"session", SCOPE_SESSION},
		{"space", SCOPE_SPACE},
		{"app", SCOPE_APP},
	};
	for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
		char *js = xasprintf("{\"command\": \"x\", \"scope\": \"%s\"}",
				     sc[i].v);
		struct config *cfg = cf_one(js);
		cr_assert_null(cfg->servers[0].error);
		cr_assert_eq(cfg->servers[0].scope, sc[i].sc);
		cr_assert_str_eq(config_scope_name(sc[i].sc), sc[i].v);
		config_free(cfg);
		free(js);
	}
	cr_assert_str_eq(config_exposure_name(EXPOSE_DEFERRED), "deferred");
	cr_assert_str_eq(config_kind_name(SERVER_STDIO), "stdio");
	cr_assert_str_eq(config_kind_name(SERVER_HTTP_REMOTE), "http-remote");
	cr_assert_str_eq(config_kind_name(SERVER_HTTP_LOCAL), "http-local");
}

Test(config, bad_durations_in_servers)
{
	static const struct tc_bad cases[] = {
		{"{\"command\": \"x\", \"startupTimeout\": \"5 sec\"}",
		 "field \"startupTimeout\": expected a duration: milliseconds "
		 "as a non-negative integer (1500) or a string of digits with "
		 "ms, s, m or h (\"500ms\", \"2s\", \"10m\", \"1h\")"},
		{"{\"command\": \"x\", \"idleTimeout\": -1}",
		 "field \"idleTimeout\": expected a duration"},
		{"{\"command\": \"x\", \"toolTimeout\": 1.5}",
		 "field \"toolTimeout\": expected a duration"},
		{"{\"command\": \"x\", \"toolTimeout\": \"1d\"}",
		 "field \"toolTimeout\": expected a duration"},
	};
	tc_check_bad(cases, sizeof cases / sizeof cases[0]);
}

Test(config, durations_table)
{
	static const struct {
		const char *json;
		int64_t ms;
	} ok[] = {
		{"0", 0},
		{"1500", 1500},
		{"\"1500\"", 1500},
		{"\"0\"", 0},
		{"\"007\"", 7},
		{"\"500ms\"", 500},
		{"\"0ms\"", 0},
		{"\"2s\"", 2000},
		{"\"10m\"", 600000},
		{"\"1h\"", 3600000},
		{"\"48h\"", 48LL * 3600000},
		{"9007199254740992", 9007199254740992LL},
	};
	static const char *const bad[] = {
		"-1",
		"1.5",
		"1500.0",
		"1e3",
		"\"\"",
		"\"-5\"",
		"\"+5\"",
		"\"1.5s\"",
		"\"5 s\"",
		"\" 5\"",
		"\"5 \"",
		"\"5d\"",
		"\"5S\"",
		"\"5sec\"",
		"\"5mss\"",
		"\"ms\"",
		"\"s\"",
		"\"0x10\"",
		"\"99999999999999999999999\"",
		"\"9007199254740993\"",
		"\"9999999999999h\"",
		"9007199254740993",
		"true",
		"null",
		"[1]",
		"{}",
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		json_t *v = json_loads(ok[i].json, JSON_DECODE_ANY, NULL);
		cr_assert_not_null(v, "%s", ok[i].json);
		int64_t ms = -42;
		cr_assert_eq(config_parse_duration(v, &ms), 0, "%s",
			     ok[i].json);
		cr_assert_eq(ms, ok[i].ms, "%s: %lld", ok[i].json,
			     (long long)ms);
		json_decref(v);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		json_t *v = json_loads(bad[i], JSON_DECODE_ANY, NULL);
		cr_assert_not_null(v, "%s", bad[i]);
		int64_t ms = -42;
		cr_assert_eq(config_parse_duration(v, &ms), -EINVAL, "%s",
			     bad[i]);
		cr_assert_eq(ms, -42, "%s changed the output", bad[i]);
		json_decref(v);
	}
	int64_t ms;
	cr_assert_eq(config_parse_duration(NULL, &ms), -EINVAL);
}

Test(config, server_names)
{
	char name64[CONFIG_MAX_NAME + 1], name65[CONFIG_MAX_NAME + 2];
	memset(name64, 'a', CONFIG_MAX_NAME);
	name64[CONFIG_MAX_NAME] = '\0';
	memset(name65, 'b', CONFIG_MAX_NAME + 1);
	name65[CONFIG_MAX_NAME + 1] = '\0';
	char *text = xasprintf(
		"{\"mcpServers\": {\"%s\": {\"command\": \"x\"}, \"%s\": "
		"{\"command\": \"x\"}, \"a b\": {\"command\": \"x\"}, "
		"\"x/y\": {\"command\": \"x\"}, \"\": {\"command\": \"x\"}, "
		"\"h\\u00e9\\\"\": {\"command\": \"x\"}, "
		"\"ok_1.2-3\": {\"command\": \"x\"}}}",
		name64, name65);
	struct config *cfg = tc_parse(text, "t.json");
	free(text);
	cr_assert_null(cfg->fatal, "%s", cfg->fatal);
	cr_assert_eq(cfg->nservers, 7);
	cr_assert_null(cfg->servers[0].error, "%s", cfg->servers[0].error);
	char *want = xasprintf("t.json: server \"%s\": the name is longer than "
			       "64 characters",
			       name65);
	cr_assert_str_eq(cfg->servers[1].error, want);
	free(want);
	cr_assert_str_eq(cfg->servers[2].error,
			 "t.json: server \"a b\": the name may only hold "
			 "letters, digits, \"_\", \".\" and \"-\"");
	cf_assert_has(cfg->servers[3].error, "server \"x/y\": the name may");
	cf_assert_has(cfg->servers[4].error,
		      "server \"\": the name must not be empty");
	/* Quotes and non-ASCII are escaped in messages. */
	cf_assert_has(cfg->servers[5].error, "server \"h\\xc3\\xa9\\\"\": ");
	cr_assert_null(cfg->servers[6].error);
	for (size_t i = 0; i < cfg->nservers; i++) {
		cr_assert_not_null(cfg->servers[i].name);
		cr_assert_str_eq(cfg->servers[i].prefix, cfg->servers[i].name);
	}
	config_free(cfg);
}

Test(config, prefixes)
{
	struct config *cfg = cf_one("{\"command\": \"x\", \"prefix\": \"\"}");
	cr_assert_null(cfg->servers[0].error);
	cr_assert_str_eq(cfg->servers[0].prefix, "");
	config_free(cfg);

	cfg = cf_one("{\"command\": \"x\", \"prefix\": \"Gh_1-x\"}");
	cr_assert_null(cfg->servers[0].error);
	cr_assert_str_eq(cfg->servers[0].prefix, "Gh_1-x");
	config_free(cfg);

	static const struct tc_bad cases[] = {
		{"{\"command\": \"x\", \"prefix\": \"bad.prefix\"}",
		 "field \"prefix\": may only hold letters, digits, \"_\" and "
		 "\"-\""},
		{"{\"command\": \"x\", \"prefix\": \"a b\"}",
		 "field \"prefix\": may only hold"},
		{"{\"command\": \"x\", \"prefix\": "
		 "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		 "aa"
		 "aaaa\"}",
		 "field \"prefix\": longer than 64 characters"},
	};
	tc_check_bad(cases, sizeof cases / sizeof cases[0]);

	cfg = cf_one(
		"{\"command\": \"x\", \"prefix\": "
		"\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaa\"}");
	cr_assert_null(cfg->servers[0].error, "64 chars must pass: %s",
		       cfg->servers[0].error);
	config_free(cfg);

	cfg = cf_one("{\"command\": \"x\", \"prefix\": \"no.t\"}");
	cr_assert_str_eq(cfg->servers[0].prefix, "s");
	config_free(cfg);
}

static char *tc_args_json(size_t n)
{
	struct buf b;
	buf_init(&b);
	buf_puts(&b, "{\"command\": \"x\", \"args\": [");
	for (size_t i = 0; i < n; i++)
		buf_printf(&b, "%s\"a%zu\"", i ? "," : "", i);
	buf_puts(&b, "]}");
	return buf_steal(&b);
}

static char *tc_env_json(size_t n)
{
	struct buf b;
	buf_init(&b);
	buf_puts(&b, "{\"command\": \"x\", \"env\": {");
	for (size_t i = 0; i < n; i++)
		buf_printf(&b, "%s\"V%zu\": \"v\"", i ? "," : "", i);
	buf_puts(&b, "}}");
	return buf_steal(&b);
}

Test(config, count_and_length_limits)
{
	char *js = tc_args_json(CONFIG_MAX_ARGS);
	struct config *cfg = cf_one(js);
	cr_assert_null(cfg->servers[0].error);
	cr_assert_eq(cfg->servers[0].nargs, CONFIG_MAX_ARGS);
	config_free(cfg);
	free(js);

	js = tc_args_json(CONFIG_MAX_ARGS + 1);
	cfg = cf_one(js);
	cr_assert_str_eq(cfg->servers[0].error,
			 "t.json: server \"s\": field \"args\": 257 items, at "
			 "most 256 are allowed");
	config_free(cfg);
	free(js);

	js = tc_env_json(CONFIG_MAX_ENV);
	cfg = cf_one(js);
	cr_assert_null(cfg->servers[0].error);
	cr_assert_eq(cfg->servers[0].nenv, CONFIG_MAX_ENV);
	config_free(cfg);
	free(js);

	js = tc_env_json(CONFIG_MAX_ENV + 1);
	cfg = cf_one(js);
	cf_assert_has(cfg->servers[0].error,
		      "field \"env\": 257 entries, at most 256");
	config_free(cfg);
	free(js);

	char *big = xmalloc(CONFIG_MAX_STRING + 2);
	memset(big, 'x', CONFIG_MAX_STRING + 1);
	big[CONFIG_MAX_STRING + 1] = '\0';
	js = xasprintf("{\"command\": \"x\", \"args\": [\"%s\"]}", big);
	cfg = cf_one(js);
	cf_assert_has(cfg->servers[0].error,
		      "field \"args\": item 0: longer than 65536 bytes");
	config_free(cfg);
	free(js);
	js = xasprintf("{\"command\": \"%s\"}", big);
	cfg = cf_one(js);
	cf_assert_has(cfg->servers[0].error,
		      "field \"command\": longer than 65536 bytes");
	config_free(cfg);
	free(js);
	free(big);
}

Test(config, too_many_servers)
{
	struct buf b;
	for (int n = CONFIG_MAX_SERVERS; n <= CONFIG_MAX_SERVERS + 1; n++) {
		buf_init(&b);
		buf_puts(&b, "{\"mcpServers\": {");
		for (int i = 0; i < n; i++)
			buf_printf(&b, "%s\"s%d\": {\"command\": \"x\"}",
				   i ? "," : "", i);
		buf_puts(&b, "}}");
		struct config *cfg = config_parse(b.data, b.len, "t.json");
		if (n == CONFIG_MAX_SERVERS) {
			cr_assert_null(cfg->fatal);
			cr_assert_eq(cfg->nservers, (size_t)n);
		} else {
			cr_assert_str_eq(cfg->fatal,
					 "t.json: 257 servers, at most 256 are "
					 "supported");
			cr_assert_eq(cfg->nservers, 0);
		}
		config_free(cfg);
		buf_free(&b);
	}
}

Test(config, expansion_errors)
{
	unsetenv("MCPV_T_UNSET");
	static const struct tc_bad cases[] = {
		{"{\"command\": \"x\", \"env\": {\"T\": \"${MCPV_T_UNSET}\"}}",
		 "field \"env\": \"T\": variable \"MCPV_T_UNSET\" is not set "
		 "(write ${MCPV_T_UNSET:-default} to give a default)"},
		{"{\"command\": \"x\", \"args\": [\"a\", "
		 "\"--k=${MCPV_T_UNSET}\"]}",
		 "field \"args\": item 1: variable \"MCPV_T_UNSET\" is not "
		 "set"},
		{"{\"command\": \"${MCPV_T_UNSET}/bin/x\"}",
		 "field \"command\": variable \"MCPV_T_UNSET\" is not set"},
		{"{\"command\": \"x\", \"cwd\": \"${MCPV_T_UNSET}\"}",
		 "field \"cwd\": variable \"MCPV_T_UNSET\""},
		{"{\"url\": \"https://h/${MCPV_T_UNSET}\"}",
		 "field \"url\": variable \"MCPV_T_UNSET\""},
		{"{\"url\": \"https://h/\", \"headers\": {\"X-K\": "
		 "\"${MCPV_T_UNSET}\"}}",
		 "field \"headers\": \"X-K\": variable \"MCPV_T_UNSET\""},
		{"{\"url\": \"https://h/${MCPV_T_UNSET\"}",
		 "field \"url\": \"${\" without a closing \"}\""},
		{"{\"command\": \"x\", \"env\": {\"T\": \"${\"}}",
		 "field \"env\": \"T\": \"${\" without a closing \"}\""},
		{"{\"command\": \"x\", \"args\": [\"${}\"]}",
		 "field \"args\": item 0: \"${...}\" does not hold a variable "
		 "name"},
		{"{\"command\": \"x\", \"args\": [\"${A-b}\"]}",
		 "field \"args\": item 0: \"${...}\" does not hold"},
	};
	tc_check_bad(cases, sizeof cases / sizeof cases[0]);

	/* The failed value is kept unexpanded, never half expanded. */
	setenv("MCPV_T_A", "alpha", 1);
	struct config *cfg = cf_one("{\"command\": \"x\", \"env\": {\"T\": "
				    "\"${MCPV_T_A}${MCPV_T_UNSET}\"}}");
	cr_assert_str_eq(cfg->servers[0].env[0].value,
			 "${MCPV_T_A}${MCPV_T_UNSET}");
	config_free(cfg);
}

Test(config, expand_table)
{
	setenv("MCPV_T_A", "alpha", 1);
	setenv("MCPV_T_EMPTY", "", 1);
	unsetenv("MCPV_T_UNSET");
	static const struct {
		const char *in, *out;
	} ok[] = {
		{"", ""},
		{"plain", "plain"},
		{"${MCPV_T_A}", "alpha"},
		{"x-${MCPV_T_A}-y", "x-alpha-y"},
		{"${MCPV_T_A}${MCPV_T_A}", "alphaalpha"},
		{"${MCPV_T_UNSET:-def}", "def"},
		{"${MCPV_T_UNSET:-}", ""},
		{"${MCPV_T_UNSET:-a:-b c}", "a:-b c"},
		{"${MCPV_T_EMPTY:-def}", "def"},
		{"${MCPV_T_EMPTY}", ""},
		{"${MCPV_T_A:-def}", "alpha"},
		{"$${MCPV_T_A}", "$alpha"},
		{"a$b", "a$b"},
		{"$", "$"},
		{"cost $5 {x} }", "cost $5 {x} }"},
		{"$MCPV_T_A", "$MCPV_T_A"},
		{"{port}", "{port}"},
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		char *out = NULL, *missing = (char *)"sentinel";
		cr_assert_eq(config_expand(ok[i].in, &out, &missing), 0, "%s",
			     ok[i].in);
		cr_assert_str_eq(out, ok[i].out, "%s", ok[i].in);
		cr_assert_null(missing);
		free(out);
	}
	static const struct {
		const char *in;
		int rc;
	} bad[] = {
		{"${MCPV_T_UNSET}", -ENOENT}, {"a ${MCPV_T_UNSET} b", -ENOENT},
		{"${MCPV_T_A", -EINVAL},      {"${", -EINVAL},
		{"x${MCPV_T_A}${", -EINVAL},  {"${}", -EINVAL},
		{"${:-x}", -EINVAL},	      {"${1X}", -EINVAL},
		{"${A B}", -EINVAL},	      {"${MCPV_T_A-x}", -EINVAL},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *out = (char *)"sentinel", *missing = NULL;
		cr_assert_eq(config_expand(bad[i].in, &out, &missing),
			     bad[i].rc, "%s", bad[i].in);
		cr_assert_null(out, "%s", bad[i].in);
		if (bad[i].rc == -ENOENT)
			cr_assert_str_eq(missing, "MCPV_T_UNSET");
		else
			cr_assert_null(missing);
		free(missing);
	}
	char *out = NULL;
	cr_assert_eq(config_expand("${MCPV_T_UNSET}", &out, NULL), -ENOENT);

	char *big = xmalloc(CONFIG_MAX_STRING / 2 + 100);
	memset(big, 'b', CONFIG_MAX_STRING / 2 + 99);
	big[CONFIG_MAX_STRING / 2 + 99] = '\0';
	setenv("MCPV_T_BIG", big, 1);
	free(big);
	cr_assert_eq(config_expand("${MCPV_T_BIG}", &out, NULL), 0);
	free(out);
	cr_assert_eq(config_expand("${MCPV_T_BIG}${MCPV_T_BIG}", &out, NULL),
		     -E2BIG);
	cr_assert_null(out);
}

Test(config, expansion_in_every_field)
{
	setenv("MCPV_T_A", "alpha", 1);
	struct config *cfg = cf_one(
		"{\"command\": \"/opt/${MCPV_T_A}/bin\", \"args\": "
		"[\"${MCPV_T_A}\"], \"env\": {\"E\": \"${MCPV_T_A}\"}, "
		"\"cwd\": "
		"\"/w/${MCPV_T_A}\", \"url\": "
		"\"http://localhost:{port}/${MCPV_T_A}\", \"headers\": {\"H\": "
		"\"${MCPV_T_A}\"}}");
	const struct server_config *s = &cfg->servers[0];
	cr_assert_null(s->error, "%s", s->error);
	cr_assert_str_eq(s->command, "/opt/alpha/bin");
	cr_assert_str_eq(s->args[0], "alpha");
	cr_assert_str_eq(s->env[0].value, "alpha");
	cr_assert_str_eq(s->cwd, "/w/alpha");
	cr_assert_str_eq(s->url, "http://localhost:{port}/alpha");
	cr_assert_str_eq(s->headers[0].value, "alpha");
	cr_assert_eq(s->kind, SERVER_HTTP_LOCAL);
	config_free(cfg);
}

Test(config, kinds_and_type_agreement)
{
	static const struct tc_bad cases[] = {
		{"{\"command\": \"node\", \"url\": "
		 "\"http://127.0.0.1:8080/mcp\"}",
		 "field \"url\": with \"command\" the url must contain {port}"},
		{"{}", "field \"command\": missing: a server needs "
		       "\"command\" (a local program) or \"url\""},
		{"{\"args\": [\"x\"], \"env\": {}}",
		 "field \"command\": missing"},
		{"{\"type\": \"stdio\", \"url\": \"https://h/mcp\"}",
		 "field \"type\": \"stdio\" does not take a \"url\""},
		{"{\"type\": \"stdio\"}",
		 "field \"type\": \"stdio\" needs a \"command\""},
		{"{\"type\": \"http\", \"command\": \"x\"}",
		 "field \"type\": \"http\" needs a \"url\""},
		{"{\"type\": \"streamable-http\", \"command\": \"x\"}",
		 "field \"type\": \"streamable-http\" needs a \"url\""},
	};
	tc_check_bad(cases, sizeof cases / sizeof cases[0]);

	struct config *cfg = cf_one("{\"command\": \"node\", \"url\": "
				    "\"http://127.0.0.1:8080/mcp\"}");
	cr_assert_eq(cfg->servers[0].kind, SERVER_HTTP_LOCAL);
	config_free(cfg);
	cfg = cf_one("{\"type\": \"http\", \"url\": \"HTTPS://h/mcp\"}");
	cr_assert_null(cfg->servers[0].error);
	cr_assert_eq(cfg->servers[0].kind, SERVER_HTTP_REMOTE);
	config_free(cfg);
}

Test(config, header_line_break_is_refused)
{
	setenv("MCPV_T_NL", TC_SECRET "\r\nX-Evil: 1", 1);
	struct config *cfg =
		cf_one("{\"url\": \"https://h/mcp\", \"headers\": {\"X-A\": "
		       "\"${MCPV_T_NL}\"}}");
	cr_assert_str_eq(cfg->servers[0].error,
			 "t.json: server \"s\": field \"headers\": \"X-A\": "
			 "the value holds a line break");
	config_free(cfg);
}

Test(config, one_bad_server_keeps_the_others)
{
	struct config *cfg = tc_parse(
		"{\"mcpServers\": {\"a\": {\"command\": \"x\"}, \"db\": "
		"{\"command\": \"pg\", \"args\": 42, \"env\": {\"K\": \"v\"}, "
		"\"scope\": \"app\", \"prefix\": \"d\"}, \"c\": {\"url\": "
		"\"https://h/mcp\"}}}",
		"examples/bad.json");
	cr_assert_null(cfg->fatal);
	cr_assert_eq(cfg->nservers, 3);
	cr_assert_null(cfg->servers[0].error);
	cr_assert_null(cfg->servers[2].error);
	cr_assert_eq(cfg->servers[2].kind, SERVER_HTTP_REMOTE);
	const struct server_config *db = config_find(cfg, "db");
	cr_assert_str_eq(db->error,
			 "examples/bad.json: server \"db\": field \"args\": "
			 "expected an array of strings, got number");
	/* The rest of the bad entry is still parsed. */
	cr_assert_str_eq(db->command, "pg");
	cr_assert_str_eq(tc_env(db, "K"), "v");
	cr_assert_eq(db->scope, SCOPE_APP);
	cr_assert_str_eq(db->prefix, "d");
	config_free(cfg);
}

static char *tc_example_path(void)
{
	char *here = xstrdup(__FILE__);
	char *slash = strrchr(here, '/');
	if (slash)
		*slash = '\0';
	char *p = xasprintf("%s/../../examples/bad.json", slash ? here : ".");
	free(here);
	return p;
}

Test(config, example_bad_json)
{
	unsetenv("MCPV_EXAMPLE_TOKEN");
	char *path = tc_example_path();
	struct config *cfg = config_load_file(path);
	cr_assert_null(cfg->fatal, "%s", cfg->fatal);
	static const struct {
		const char *name, *error;
	} want[] = {
		{"ok", NULL},
		{"db", "field \"args\": expected an array of strings, got "
		       "number"},
		{"lan", "field \"url\": with \"command\" the url's host must "
			"be loopback"},
		{"local", "field \"url\": with \"command\" the url must "
			  "contain {port}"},
		{"bad name!", "the name may only hold"},
		{"slow", "field \"toolTimeout\": expected a duration"},
		{"remote", "field \"headers\": \"Authorization\": variable "
			   "\"MCPV_EXAMPLE_TOKEN\" is not set"},
		{"nothing", "field \"command\": missing"},
		{"typo", "field \"exposure\": unknown value \"visible\""},
	};
	cr_assert_eq(cfg->nservers, sizeof want / sizeof want[0]);
	for (size_t i = 0; i < cfg->nservers; i++) {
		const struct server_config *s = &cfg->servers[i];
		cr_assert_str_eq(s->name, want[i].name);
		if (want[i].error == NULL) {
			cr_assert_null(s->error, "%s", s->error);
			continue;
		}
		char *head =
			xasprintf("%s: server \"%s\": ", path, want[i].name);
		cr_assert_eq(strncmp(s->error, head, strlen(head)), 0, "%s",
			     s->error);
		cf_assert_has(s->error, want[i].error);
		free(head);
	}
	cr_assert_geq(cfg->nwarnings, 2);
	cf_assert_has(cfg->warnings[0], "unknown top-level field \"theme\"");
	cf_assert_has(cfg->warnings[1],
		      "server \"typo\": unknown field \"autoApprove\"");
	config_free(cfg);
	free(path);
}

Test(config, relative_paths_resolve_against_the_file)
{
	struct config *cfg = tc_parse(
		"{\"mcpServers\": {"
		"\"a\": {\"command\": \"../build/demo-server\", \"cwd\": "
		"\"data/./x/\"},"
		"\"b\": {\"command\": \"./srv\", \"cwd\": \"..\"},"
		"\"c\": {\"command\": \"node\", \"cwd\": \"/abs/dir\"},"
		"\"d\": {\"command\": \"/usr/bin/env\", \"cwd\": \".\"},"
		"\"e\": {\"command\": \"../../../../x\"}}}",
		"/srv/conf//mcp.json");
	cr_assert_str_eq(cfg->servers[0].command, "/srv/build/demo-server");
	cr_assert_str_eq(cfg->servers[0].cwd, "/srv/conf/data/x");
	cr_assert_str_eq(cfg->servers[1].command, "/srv/conf/srv");
	cr_assert_str_eq(cfg->servers[1].cwd, "/srv");
	cr_assert_str_eq(cfg->servers[2].command, "node");
	cr_assert_str_eq(cfg->servers[2].cwd, "/abs/dir");
	cr_assert_str_eq(cfg->servers[3].command, "/usr/bin/env");
	cr_assert_str_eq(cfg->servers[3].cwd, "/srv/conf");
	cr_assert_str_eq(cfg->servers[4].command, "/x");
	config_free(cfg);

	/* A relative config path is anchored to the current directory. */
	char *dir = tc_tmpdir();
	cr_assert_eq(chdir(dir), 0);
	char *cwd = getcwd(NULL, 0);
	cr_assert_not_null(cwd);
	cfg = tc_parse("{\"mcpServers\": {\"a\": {\"command\": "
		       "\"../build/demo-server\", \"cwd\": \"w\"}}}",
		       "examples/mcp.json");
	char *want = xasprintf("%s/build/demo-server", cwd);
	cr_assert_str_eq(cfg->servers[0].command, want);
	free(want);
	want = xasprintf("%s/examples/w", cwd);
	cr_assert_str_eq(cfg->servers[0].cwd, want);
	free(want);
	config_free(cfg);

	cfg = config_parse("{\"mcpServers\": {\"a\": {\"command\": \"./x\"}}}",
			   strlen("{\"mcpServers\": {\"a\": {\"command\": "
				  "\"./x\"}}}"),
			   NULL);
	want = xasprintf("%s/x", cwd);
	cr_assert_str_eq(cfg->servers[0].command, want);
	cr_assert_str_eq(cfg->path, "<config>");
	free(want);
	config_free(cfg);
	cr_assert_eq(chdir("/"), 0);
	cr_assert_eq(rmdir(dir), 0);
	free(cwd);
	free(dir);
}

Test(config, load_file_limits)
{
	char *dir = tc_tmpdir();
	char *path = xasprintf("%s/mcp.json", dir);

	const char *head = "{\"mcpServers\": {}}";
	char *data = xmalloc(CONFIG_MAX_FILE_BYTES + 1);
	memset(data, ' ', CONFIG_MAX_FILE_BYTES + 1);
	memcpy(data, head, strlen(head));
	tc_write(path, data, CONFIG_MAX_FILE_BYTES);
	struct config *cfg = config_load_file(path);
	cr_assert_null(cfg->fatal, "a file at the limit must load: %s",
		       cfg->fatal);
	config_free(cfg);

	tc_write(path, data, CONFIG_MAX_FILE_BYTES + 1);
	cfg = config_load_file(path);
	char *want = xasprintf("%s: larger than 1048576 bytes, the limit for "
			       "a config file",
			       path);
	cr_assert_str_eq(cfg->fatal, want);
	cr_assert_eq(cfg->nservers, 0);
	config_free(cfg);
	free(want);

	cfg = config_parse(data, CONFIG_MAX_FILE_BYTES + 1, "big.json");
	cf_assert_has(cfg->fatal, "big.json: larger than 1048576 bytes");
	config_free(cfg);
	free(data);

	cr_assert_eq(unlink(path), 0);
	cfg = config_load_file(path);
	want = xasprintf("%s: cannot read: No such file or directory", path);
	cr_assert_str_eq(cfg->fatal, want);
	free(want);
	config_free(cfg);

	cfg = config_load_file(dir);
	cf_assert_has(cfg->fatal, "cannot read");
	config_free(cfg);

	cr_assert_eq(rmdir(dir), 0);
	free(path);
	free(dir);
}

Test(config, load_file_ok)
{
	char *dir = tc_tmpdir();
	char *path = xasprintf("%s/mcp.json", dir);
	const char *text =
		"{\"mcpServers\": {\"a\": {\"command\": \"./run\"}}}";
	tc_write(path, text, strlen(text));
	struct config *cfg = config_load_file(path);
	cr_assert_null(cfg->fatal);
	cr_assert_str_eq(cfg->path, path);
	char *want = xasprintf("%s/run", dir);
	cr_assert_str_eq(cfg->servers[0].command, want);
	free(want);
	config_free(cfg);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(rmdir(dir), 0);
	free(path);
	free(dir);
}

static const char *tc_identity_server =
	"{\"command\": \"/bin/srv\", \"args\": [\"-v\"], \"env\": "
	"{\"TOKEN\": \"${MCPV_T_SECRET}\", \"A\": \"1\"}, \"url\": "
	"\"http://127.0.0.1:{port}/mcp\", \"headers\": {\"Authorization\": "
	"\"Bearer ${MCPV_T_SECRET}\"}, \"toolTimeout\": \"1m\"}";

Test(config, identity_is_canonical)
{
	setenv("MCPV_T_SECRET", TC_SECRET, 1);
	struct config *a = tc_parse(
		"{\"mcpServers\": {\"one\": {\"command\": \"x\", \"env\": "
		"{\"A\": \"1\", \"B\": \"2\"}, \"headers\": {}, \"exposure\": "
		"\"hidden\", \"prefix\": \"p\", \"disabled\": true}}}",
		"a.json");
	struct config *b = tc_parse(
		"{\"mcpServers\": {\"two\": {\"env\": {\"B\": \"2\", \"A\": "
		"\"1\"}, \"command\": \"x\"}}}",
		"b.json");
	char *da = cf_dump(config_server_identity(&a->servers[0], false, NULL));
	char *db = cf_dump(config_server_identity(&b->servers[0], false, NULL));
	cr_assert_str_eq(da, db);
	cr_assert_str_eq(
		da,
		"{\"args\":[],\"command\":\"x\",\"cwd\":null,\"env\":{\"A\":"
		"\"1\",\"B\":\"2\"},\"headers\":{},\"idleTimeout\":-1,"
		"\"kind\":\"stdio\",\"startupTimeout\":30000,"
		"\"toolTimeout\":0,\"url\":null}");
	free(da);
	free(db);
	config_free(a);
	config_free(b);

	struct config *c = cf_one(tc_identity_server);
	json_t *id = config_server_identity(&c->servers[0], false, NULL);
	cr_assert_str_eq(json_string_value(json_object_get(id, "kind")),
			 "http-local");
	cr_assert(json_is_integer(json_object_get(id, "toolTimeout")));
	cr_assert_eq(json_integer_value(json_object_get(id, "toolTimeout")),
		     60000);
	cr_assert(json_is_integer(json_object_get(id, "startupTimeout")));
	cr_assert(json_is_integer(json_object_get(id, "idleTimeout")));
	cr_assert_null(json_object_get(id, "name"));
	cr_assert_null(json_object_get(id, "exposure"));
	cr_assert_null(json_object_get(id, "prefix"));
	cr_assert_null(json_object_get(id, "disabled"));
	/* Without fingerprints the identity is the real connection. */
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(id, "env"), "TOKEN")),
			 TC_SECRET);
	json_decref(id);
	config_free(c);
}

static char *tc_expected_fp(const char *salt, const char *key,
			    const char *value)
{
	struct buf b;
	buf_init(&b);
	buf_append(&b, salt, strlen(salt) + 1);
	buf_append(&b, key, strlen(key) + 1);
	buf_puts(&b, value);
	char hex[65];
	sha256_hex(b.data, b.len, hex);
	buf_free(&b);
	return xasprintf("fp:%s", hex);
}

Test(config, identity_fingerprints)
{
	setenv("MCPV_T_SECRET", TC_SECRET, 1);
	struct config *c = cf_one(tc_identity_server);
	const struct server_config *s = &c->servers[0];
	cr_assert_null(s->error, "%s", s->error);
	json_t *i1 = config_server_identity(s, true, "salt-1");
	json_t *i2 = config_server_identity(s, true, "salt-2");
	json_t *i1b = config_server_identity(s, true, "salt-1");
	json_t *i0 = config_server_identity(s, true, NULL);

	const char *fp1 = json_string_value(
		json_object_get(json_object_get(i1, "env"), "TOKEN"));
	const char *fp2 = json_string_value(
		json_object_get(json_object_get(i2, "env"), "TOKEN"));
	const char *fp0 = json_string_value(
		json_object_get(json_object_get(i0, "env"), "TOKEN"));
	char *want = tc_expected_fp("salt-1", "TOKEN", TC_SECRET);
	cr_assert_str_eq(fp1, want);
	free(want);
	want = tc_expected_fp("", "TOKEN", TC_SECRET);
	cr_assert_str_eq(fp0, want);
	free(want);
	cr_assert_str_neq(fp1, fp2);
	cr_assert_eq(strlen(fp1), 3 + 64);
	/* The key is part of the fingerprint: same value, other key. */
	const char *fpa = json_string_value(
		json_object_get(json_object_get(i1, "env"), "A"));
	want = tc_expected_fp("salt-1", "A", "1");
	cr_assert_str_eq(fpa, want);
	free(want);
	const char *fph = json_string_value(json_object_get(
		json_object_get(i1, "headers"), "Authorization"));
	want = tc_expected_fp("salt-1", "Authorization", "Bearer " TC_SECRET);
	cr_assert_str_eq(fph, want);
	free(want);
	/* A url without userinfo or query is no secret and stays. */
	cr_assert_str_eq(json_string_value(json_object_get(i1, "url")),
			 "http://127.0.0.1:{port}/mcp");

	char *d1 = cf_dump(i1), *d2 = cf_dump(i2), *d1b = cf_dump(i1b),
	     *d0 = cf_dump(i0);
	cr_assert_str_eq(d1, d1b);
	cr_assert_str_neq(d1, d2);
	cf_assert_lacks(d1, TC_SECRET);
	cf_assert_lacks(d2, TC_SECRET);
	cf_assert_lacks(d0, TC_SECRET);
	cf_assert_lacks(d1, "s3cr3t");
	free(d1);
	free(d2);
	free(d1b);
	free(d0);
	config_free(c);
}

Test(config, identity_fingerprints_urls)
{
	static const struct {
		const char *url;
		bool hidden;
	} cases[] = {
		{"https://user:" TC_SECRET "@h.example/mcp", true},
		{"https://" TC_SECRET "@h.example/mcp", true},
		{"https://h.example/mcp?key=" TC_SECRET, true},
		{"https://h.example/mcp#" TC_SECRET, true},
		{"https://h.example/mcp", false},
		{"https://h.example/a@b", false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *js = xasprintf("{\"url\": \"%s\"}", cases[i].url);
		struct config *c = cf_one(js);
		cr_assert_null(c->servers[0].error, "%s", c->servers[0].error);
		json_t *id = config_server_identity(&c->servers[0], true, "x");
		const char *u = json_string_value(json_object_get(id, "url"));
		if (cases[i].hidden) {
			char *want = tc_expected_fp("x", "url", cases[i].url);
			cr_assert_str_eq(u, want, "%s", cases[i].url);
			free(want);
		} else {
			cr_assert_str_eq(u, cases[i].url);
		}
		json_decref(id);
		config_free(c);
		free(js);
	}
}

Test(config, describe_masks_secrets)
{
	setenv("MCPV_T_SECRET", TC_SECRET, 1);
	static const struct {
		const char *url, *masked;
	} urls[] = {
		{"https://user:${MCPV_T_SECRET}@h.example:8443/"
		 "mcp?key=${MCPV_T_"
		 "SECRET}&mode=x#${MCPV_T_SECRET}",
		 "https://***@h.example:8443/mcp?key=***&mode=***#***"},
		{"https://${MCPV_T_SECRET}@h.example/mcp",
		 "https://***@h.example/mcp"},
		{"https://h.example/mcp?${MCPV_T_SECRET}&a=&b",
		 "https://h.example/mcp?***&a=***&***"},
		{"https://h.example/mcp?", "https://h.example/mcp?"},
		{"https://h.example/a@b/mcp", "https://h.example/a@b/mcp"},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp"},
	};
	for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
		char *js = xasprintf(
			"{\"url\": \"%s\", \"headers\": {\"Authorization\": "
			"\"Bearer ${MCPV_T_SECRET}\"}}",
			urls[i].url);
		struct config *c = cf_one(js);
		cr_assert_null(c->servers[0].error, "%s", c->servers[0].error);
		json_t *d = config_server_describe(&c->servers[0]);
		cr_assert_str_eq(json_string_value(json_object_get(d, "url")),
				 urls[i].masked);
		cr_assert_str_eq(json_string_value(json_object_get(
					 json_object_get(d, "headers"),
					 "Authorization")),
				 "***");
		char *dump = cf_dump(d);
		cf_assert_lacks(dump, TC_SECRET);
		free(dump);
		config_free(c);
		free(js);
	}

	struct config *c = cf_one(
		"{\"command\": \"srv\", \"args\": [\"a\"], \"env\": "
		"{\"TOKEN\": "
		"\"${MCPV_T_SECRET}\", \"PLAIN\": \"visible?\", \"API_KEY\": "
		"\"lit-9f2c-key\"}, \"scope\": "
		"\"space\", \"exposure\": \"codemode\", \"prefix\": \"p\", "
		"\"startupTimeout\": \"3s\", \"disabled\": true}");
	char *dump = cf_dump(config_server_describe(&c->servers[0]));
	cr_assert_str_eq(
		dump,
		"{\"args\":[\"a\"],\"command\":\"srv\",\"cwd\":null,"
		"\"disabled\":true,\"env\":{\"API_KEY\":\"***\",\"PLAIN\":"
		"\"visible?\",\"TOKEN\":\"${MCPV_T_SECRET}\"},\"exposure\":"
		"\"deferred\",\"headers\":{},"
		"\"idleTimeout\":-1,\"kind\":\"stdio\",\"name\":\"s\","
		"\"prefix\":\"p\",\"scope\":\"space\",\"startupTimeout\":"
		"3000,\"toolTimeout\":0,\"transport\":\"stdio\","
		"\"url\":null}");
	free(dump);
	config_free(c);

	c = cf_one("{\"command\": \"x\", \"args\": 42}");
	json_t *d = config_server_describe(&c->servers[0]);
	cr_assert_str_eq(json_string_value(json_object_get(d, "error")),
			 c->servers[0].error);
	json_decref(d);
	config_free(c);
}

/* Every message and every view of servers that carry a secret in env,
 * headers or url, good or broken. */
Test(config, secrets_never_leak)
{
	setenv("MCPV_T_SECRET", TC_SECRET, 1);
	setenv("MCPV_T_SECRET_URL", "ftp://u:" TC_SECRET "@h/x", 1);
	setenv("MCPV_T_NL", TC_SECRET "\nX: y", 1);
	unsetenv("MCPV_T_UNSET");
	const char *text =
		"{\"mcpServers\": {"
		"\"good\": {\"command\": \"x\", \"env\": {\"T\": "
		"\"${MCPV_T_SECRET}\"}},"
		"\"badurl\": {\"url\": \"${MCPV_T_SECRET_URL}\"},"
		"\"nl\": {\"url\": \"https://h/\", \"headers\": {\"A\": "
		"\"${MCPV_T_NL}\"}},"
		"\"unset\": {\"command\": \"x\", \"env\": {\"T\": "
		"\"${MCPV_T_SECRET}\", \"U\": \"${MCPV_T_UNSET}\"}},"
		"\"port\": {\"command\": \"x\", \"url\": "
		"\"https://u:${MCPV_T_SECRET}@h/mcp\"},"
		"\"extra\": {\"url\": \"https://h/?k=${MCPV_T_SECRET}\", "
		"\"env\": {\"T\": \"${MCPV_T_SECRET}\"}, \"bogus\": 1},"
		"\"types\": {\"command\": \"x\", \"headers\": {\"H\": "
		"\"${MCPV_T_SECRET}\"}, \"type\": \"http\"}"
		"}}";
	struct config *cfg = tc_parse(text, "t.json");
	cr_assert_null(cfg->fatal);
	cr_assert_eq(cfg->nservers, 7);
	static const bool broken[] = {false, true,  true, true,
				      true,  false, true};
	for (size_t i = 0; i < cfg->nservers; i++)
		cr_assert_eq(cfg->servers[i].error != NULL, broken[i], "%s: %s",
			     cfg->servers[i].name, cfg->servers[i].error);
	for (size_t i = 0; i < cfg->nservers; i++) {
		const struct server_config *s = &cfg->servers[i];
		cf_assert_lacks(s->error, TC_SECRET);
		char *d = cf_dump(config_server_describe(s));
		cf_assert_lacks(d, TC_SECRET);
		free(d);
		d = cf_dump(config_server_identity(s, true, "salt"));
		cf_assert_lacks(d, TC_SECRET);
		free(d);
	}
	cr_assert_gt(cfg->nwarnings, 0);
	for (size_t i = 0; i < cfg->nwarnings; i++)
		cf_assert_lacks(cfg->warnings[i], TC_SECRET);
	config_free(cfg);

	/* A literal secret in a broken file is not quoted back. */
	cfg = tc_parse(
		"{\"mcpServers\": {\"a\": {\"env\": {\"T\": \"" TC_SECRET,
		"t.json");
	cf_assert_has(cfg->fatal, "not valid JSON");
	cf_assert_lacks(cfg->fatal, "s3cr3t");
	config_free(cfg);
	cfg = tc_parse("{\"mcpServers\": {\"a\": {\"env\": {\"T\": " TC_SECRET
		       "}}}}",
		       "t.json");
	cf_assert_has(cfg->fatal, "not valid JSON");
	cf_assert_lacks(cfg->fatal, "s3cr3t");
	config_free(cfg);
}

Test(sha256, known_vectors)
{
	static const struct {
		const char *in, *hex;
	} v[] = {
		{"abc",
		 "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff6"
		 "1f20015ad"},
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b"
		     "7852b855"},
		{"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		 "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db"
		 "06c1"},
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		char hex[65];
		sha256_hex(v[i].in, strlen(v[i].in), hex);
		cr_assert_str_eq(hex, v[i].hex, "%s", v[i].in);

		unsigned char raw[32];
		sha256_bytes(v[i].in, strlen(v[i].in), raw);
		char back[65];
		for (int k = 0; k < 32; k++)
			snprintf(back + 2 * k, 3, "%02x", raw[k]);
		cr_assert_str_eq(back, v[i].hex);

		/* Byte by byte, twice on one context: it resets after final. */
		struct sha256_ctx *c = sha256_new();
		for (int round = 0; round < 2; round++) {
			for (size_t k = 0; v[i].in[k]; k++)
				sha256_update(c, v[i].in + k, 1);
			sha256_final_hex(c, hex);
			cr_assert_str_eq(hex, v[i].hex);
		}
		sha256_free(c);
	}
}

Test(config, args_from_variables_are_shown_as_templates)
{
	setenv("MCPV_T_ARGSECRET", "arg-secret-4242", 1);
	const char *text =
		"{\"mcpServers\":{\"s\":{\"command\":\"x\",\"args\":["
		"\"--plain\",\"--token=${MCPV_T_ARGSECRET}\"]}}}";
	struct config *cfg = config_parse(text, strlen(text), "/tmp/a.json");
	const struct server_config *s = &cfg->servers[0];
	cr_assert_null(s->error);
	cr_assert_str_eq(s->args[1], "--token=arg-secret-4242",
			 "the server gets the value");
	json_t *d = config_server_describe(s);
	char *dd = json_dumps(d, 0);
	cr_assert_null(strstr(dd, "arg-secret-4242"), "%s", dd);
	cr_assert_not_null(strstr(dd, "--token=${MCPV_T_ARGSECRET}"));
	cr_assert_not_null(strstr(dd, "--plain"));
	json_t *id = config_server_identity(s, true, "salt");
	char *ii = json_dumps(id, 0);
	cr_assert_null(strstr(ii, "arg-secret-4242"), "%s", ii);
	cr_assert_not_null(strstr(ii, "fp:"));
	/* Another value gives another fingerprint: settings still differ. */
	setenv("MCPV_T_ARGSECRET", "other", 1);
	struct config *cfg2 = config_parse(text, strlen(text), "/tmp/a.json");
	json_t *id2 = config_server_identity(&cfg2->servers[0], true, "salt");
	cr_assert(!json_equal(id, id2));
	free(dd);
	free(ii);
	json_decref(d);
	json_decref(id);
	json_decref(id2);
	config_free(cfg);
	config_free(cfg2);
	unsetenv("MCPV_T_ARGSECRET");
}
