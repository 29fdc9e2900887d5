/*
 * Unit tests for the hosts' config files (config/hosts.c, hosts_show.c,
 * hosts_edit.c): where each host's file is found under a test HOME, which
 * entries move and how (the editors' variables, ${env:X} kept empty when
 * not set, fields mcpvisor has no equivalent for, relative paths, unset
 * variables), the plan (moved, clash, the same server but for "type":
 * "stdio", relay placed where the first moved entry was, other keys and
 * order kept, a second run changes nothing), masking for display (of a
 * file's own bytes too), the layout of a new file, and the plan made on
 * each fixture's text: every byte outside the moved entries kept.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/hosts.h"
#include "config/jsonc.h"
#include "config/secrets.h"
#include "util/fsutil.h"
#include "util/xmalloc.h"

#define TH_MCPV "/tmp/mcpvisor-unit-hosts/mcp.json"

static json_t *th_json(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);
	cr_assert_not_null(j, "bad test JSON: %s", e.text);
	return j;
}

static const struct host_info *th_host(const char *name)
{
	const struct host_info *h = hosts_find(name);
	cr_assert_not_null(h, "%s", name);
	return h;
}

/* The converted entry as compact text, or NULL with the reason in *why. */
static char *th_convert(const char *host, const char *entry, char **why)
{
	json_t *e = th_json(entry);
	json_t *out = hosts_convert(th_host(host), "s", e, TH_MCPV, why);
	json_decref(e);
	if (out == NULL)
		return NULL;
	char *t = json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(out);
	return t;
}

Test(hosts, known_hosts_and_their_shapes)
{
	cr_assert_null(hosts_find("claude"));
	cr_assert_str_eq(th_host("vscode")->servers_key, "servers");
	cr_assert_str_eq(th_host("cursor")->servers_key, "mcpServers");
	cr_assert(th_host("claude-code")->typed);
	cr_assert_not(th_host("claude-desktop")->typed);
}

static void th_touch(const char *path)
{
	char *dir = xstrdup(path);
	*strrchr(dir, '/') = '\0';
	cr_assert_eq(fsutil_mkdir_p(dir, 0700), 0);
	free(dir);
	cr_assert_eq(fsutil_write_atomic(path, "{}", 2, 0600), 0);
}

Test(hosts, default_paths_under_home_and_xdg)
{
	char dir[] = "/tmp/mcpvisor-hosts-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	setenv("HOME", dir, 1);
	unsetenv("XDG_CONFIG_HOME");
	char *p = hosts_default_path(th_host("claude-desktop"));
	char *want =
		xasprintf("%s/.config/Claude/claude_desktop_config.json", dir);
	cr_assert_str_eq(p, want, "nothing there: this platform's place");
	free(p);
	free(want);
	/* Only the macOS file exists: it is the one found. */
	char *mac = xasprintf("%s/Library/Application Support/Code/User/"
			      "mcp.json",
			      dir);
	th_touch(mac);
	p = hosts_default_path(th_host("vscode"));
	cr_assert_str_eq(p, mac);
	free(p);
	/* Electron apps follow XDG_CONFIG_HOME on Linux. */
	char *xdg = xasprintf("%s/xdg", dir);
	setenv("XDG_CONFIG_HOME", xdg, 1);
	char *lin = xasprintf("%s/Code/User/mcp.json", xdg);
	th_touch(lin);
	p = hosts_default_path(th_host("vscode"));
	cr_assert_str_eq(p, lin);
	free(p);
	p = hosts_default_path(th_host("claude-code"));
	want = xasprintf("%s/.claude.json", dir);
	cr_assert_str_eq(p, want);
	free(p);
	free(want);
	p = hosts_default_path(th_host("cursor"));
	want = xasprintf("%s/.cursor/mcp.json", dir);
	cr_assert_str_eq(p, want);
	free(p);
	free(want);
	unsetenv("HOME");
	cr_assert_null(hosts_default_path(th_host("cursor")));
	free(mac);
	free(lin);
	free(xdg);
	char *cmd = xasprintf("rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
}

Test(hosts, relay_entries)
{
	json_t *e = th_json(
		"{\"command\": \"/opt/bin/mcpvisor\", \"args\": [\"relay\"]}");
	cr_assert(hosts_is_relay(e));
	json_decref(e);
	e = th_json("{\"command\": \"mcpvisor\", \"args\": [\"serve\"]}");
	cr_assert_not(hosts_is_relay(e));
	json_decref(e);
	e = th_json("{\"command\": \"not-mcpvisor\", \"args\": [\"relay\"]}");
	cr_assert_not(hosts_is_relay(e));
	json_decref(e);
	e = hosts_relay_entry(th_host("vscode"), "mcpvisor", "/h");
	char *t = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
	cr_assert_str_eq(t, "{\"type\":\"stdio\",\"command\":\"mcpvisor\","
			    "\"args\":[\"relay\",\"--home\",\"/h\"]}");
	cr_assert(hosts_is_relay(e));
	free(t);
	json_decref(e);
	e = hosts_relay_entry(th_host("claude-desktop"), "/x/mcpvisor", NULL);
	t = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
	cr_assert_str_eq(t,
			 "{\"command\":\"/x/mcpvisor\",\"args\":[\"relay\"]}");
	free(t);
	json_decref(e);
}

Test(hosts, editor_variables_rewritten_or_refused)
{
	char *why = NULL;
	char *t = th_convert("cursor",
			     "{\"command\": \"npx\", \"env\": {\"K\": "
			     "\"${env:API_KEY}\", \"H\": \"${userHome}/x\"}}",
			     &why);
	/* Not set, the editor gives it empty: so does ${X:-}. */
	cr_assert_str_eq(t, "{\"command\":\"npx\",\"env\":{\"K\":\"${API_"
			    "KEY:-}\",\"H\":\"${HOME}/x\"}}");
	free(t);
	cr_assert_null(th_convert("vscode",
				  "{\"type\": \"stdio\", \"command\": \"npx\", "
				  "\"env\": {\"K\": \"${input:key}\"}}",
				  &why));
	cr_assert(strstr(why, "${input:key}"), "%s", why);
	free(why);
	cr_assert_null(th_convert("vscode",
				  "{\"command\": \"node\", \"args\": "
				  "[\"${workspaceFolder}/s.js\"]}",
				  &why));
	cr_assert(strstr(why, "workspaceFolder"), "%s", why);
	free(why);
	/* Claude Code writes mcpvisor's own ${VAR:-default}: it moves as
	 * is, and an unset variable is no error here (it may be set where
	 * the runtime runs). */
	unsetenv("MCPV_UNIT_HOSTS_UNSET");
	t = th_convert("claude-code",
		       "{\"type\": \"http\", \"url\": "
		       "\"https://${MCPV_UNIT_HOSTS_UNSET}/mcp\", "
		       "\"headers\": {\"A\": \"Bearer ${T:-x}\"}}",
		       &why);
	cr_assert_not_null(t, "%s", why);
	cr_assert(strstr(t, "${MCPV_UNIT_HOSTS_UNSET}"));
	free(t);
	t = th_convert("cursor", "{\"url\": \"${MCPV_UNIT_HOSTS_UNSET}\"}",
		       &why);
	cr_assert_not_null(t, "a url that is one variable: %s", why);
	free(t);
}

Test(hosts, entries_mcpvisor_cannot_represent)
{
	static const struct {
		const char *entry, *says;
	} cases[] = {
		{"{\"command\": \"x\", \"envFile\": \"/e\"}", "envFile"},
		{"{\"command\": \"x\", \"autoApprove\": []}", "autoApprove"},
		{"{\"command\": \"./bin/server\"}", "relative"},
		{"{\"command\": \"~/bin/server\"}", "relative"},
		{"{\"command\": \"/bin/x\", \"cwd\": \"sub\"}", "cwd"},
		{"{\"type\": \"stdio\", \"url\": \"https://x/mcp\"}", "stdio"},
		{"{\"url\": \"ftp://x/mcp\"}", "url"},
		{"{\"args\": [\"a\"]}", "command"},
		{"[1]", "object"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *why = NULL;
		char *t = th_convert("claude-desktop", cases[i].entry, &why);
		cr_assert_null(t, "%s moved", cases[i].entry);
		cr_assert(why && strstr(why, cases[i].says), "%s: %s",
			  cases[i].entry, why ? why : "(none)");
		free(why);
	}
	char *why = NULL;
	json_t *e = th_json("{\"command\": \"x\"}");
	json_t *out =
		hosts_convert(th_host("cursor"), "my notes", e, TH_MCPV, &why);
	cr_assert_null(out, "a name mcpvisor refuses stays");
	cr_assert(strstr(why, "name"), "%s", why);
	free(why);
	json_decref(e);
}

static json_t *th_relay(const char *host)
{
	return hosts_relay_entry(th_host(host), "mcpvisor", NULL);
}

static const char *th_action(const struct hosts_plan *p, const char *name)
{
	size_t i;
	json_t *it;
	json_array_foreach(p->items, i, it)
	{
		if (strcmp(json_string_value(json_object_get(it, "name")),
			   name) == 0)
			return json_string_value(json_object_get(it, "action"));
	}
	return NULL;
}

static char *th_keys(const json_t *obj)
{
	char *out = xstrdup("");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)obj, k, v)
	{
		char *n = xasprintf("%s%s%s", out, *out ? "," : "", k);
		free(out);
		out = n;
	}
	return out;
}

Test(hosts, plan_moves_keeps_and_places_the_relay)
{
	json_t *host = th_json(
		"{\"first\": 1, \"mcpServers\": {"
		"\"keep-me\": {\"command\": \"x\", \"envFile\": \"/e\"},"
		"\"a\": {\"command\": \"/bin/a\", \"env\": {\"T\": "
		"\"s3cr3t!\"}},"
		"\"clash\": {\"command\": \"/bin/new\"},"
		"\"same\": {\"command\": \"/bin/same\"},"
		"\"off\": {\"command\": \"/bin/off\", \"disabled\": true}},"
		"\"last\": [1, 2]}");
	json_t *mine = th_json("{\"idleTimeout\": \"5m\", \"mcpServers\": {"
			       "\"clash\": {\"command\": \"/bin/old\"},"
			       "\"same\": {\"command\": \"/bin/same\"}}}");
	json_t *relay = th_relay("claude-desktop");
	struct hosts_plan p;
	char *err = NULL;
	cr_assert_eq(hosts_plan(th_host("claude-desktop"), host, mine, relay,
				TH_MCPV, &p, &err),
		     0);
	cr_assert(p.changed);
	cr_assert(p.relay_added);
	cr_assert_str_eq(th_action(&p, "keep-me"), "cannot");
	cr_assert_str_eq(th_action(&p, "a"), "moved");
	cr_assert_str_eq(th_action(&p, "clash"), "clash");
	cr_assert_str_eq(th_action(&p, "same"), "same");
	cr_assert_str_eq(th_action(&p, "off"), "moved");
	/* The relay where "a" was; other keys and their order kept. */
	char *k = th_keys(p.host);
	cr_assert_str_eq(k, "first,mcpServers,last");
	free(k);
	k = th_keys(json_object_get(p.host, "mcpServers"));
	cr_assert_str_eq(k, "keep-me,mcpvisor,clash");
	free(k);
	k = th_keys(json_object_get(p.mcpv, "mcpServers"));
	cr_assert_str_eq(k, "clash,same,a,off");
	free(k);
	/* Never overwritten; secrets and disabled move as they are. */
	json_t *srv = json_object_get(p.mcpv, "mcpServers");
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(srv, "clash"), "command")),
			 "/bin/old");
	cr_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(json_object_get(srv, "a"), "env"),
			"T")),
		"s3cr3t!");
	cr_assert(json_is_true(
		json_object_get(json_object_get(srv, "off"), "disabled")));
	cr_assert_str_eq(
		json_string_value(json_object_get(p.mcpv, "idleTimeout")),
		"5m");
	/* The inputs were not changed. */
	cr_assert_not_null(
		json_object_get(json_object_get(host, "mcpServers"), "a"));
	/* A second run on the result changes nothing. */
	struct hosts_plan q;
	cr_assert_eq(hosts_plan(th_host("claude-desktop"), p.host, p.mcpv,
				relay, TH_MCPV, &q, &err),
		     0);
	cr_assert_not(q.changed);
	cr_assert_not(q.relay_added);
	cr_assert_str_eq(th_action(&q, "mcpvisor"), "relay");
	hosts_plan_free(&q);
	hosts_plan_free(&p);
	json_decref(host);
	json_decref(mine);
	json_decref(relay);
}

Test(hosts, plan_relay_name_taken_and_empty_hosts)
{
	json_t *host = th_json("{\"servers\": {\"mcpvisor\": {\"command\": "
			       "\"x\", \"dev\": {}}, \"b\": {\"type\": "
			       "\"stdio\", \"command\": \"/bin/b\"}},"
			       "\"inputs\": []}");
	json_t *mine = json_object();
	json_t *relay = th_relay("vscode");
	struct hosts_plan p;
	char *err = NULL;
	cr_assert_eq(hosts_plan(th_host("vscode"), host, mine, relay, TH_MCPV,
				&p, &err),
		     0);
	cr_assert_str_eq(p.relay_name, "mcpvisor-relay");
	char *k = th_keys(json_object_get(p.host, "servers"));
	cr_assert_str_eq(k, "mcpvisor,mcpvisor-relay");
	free(k);
	k = th_keys(p.host);
	cr_assert_str_eq(k, "servers,inputs");
	free(k);
	hosts_plan_free(&p);
	json_decref(host);
	/* No servers at all: the relay is added, nothing else. */
	host = json_object();
	cr_assert_eq(hosts_plan(th_host("vscode"), host, mine, relay, TH_MCPV,
				&p, &err),
		     0);
	cr_assert(p.changed);
	cr_assert_eq(json_object_size(json_object_get(p.host, "servers")), 1);
	hosts_plan_free(&p);
	json_decref(host);
	/* Servers that are not an object: refused. */
	host = th_json("{\"servers\": []}");
	cr_assert_eq(hosts_plan(th_host("vscode"), host, mine, relay, TH_MCPV,
				&p, &err),
		     -EINVAL);
	cr_assert_not_null(err);
	free(err);
	json_decref(host);
	json_decref(mine);
	json_decref(relay);
}

Test(hosts, claude_code_projects_are_listed_and_left)
{
	json_t *host = th_json(
		"{\"mcpServers\": {}, \"projects\": {\"/p\": {\"mcpServers\": "
		"{\"pw\": {\"type\": \"stdio\", \"command\": \"npx\"}}}}}");
	json_t *mine = json_object();
	json_t *relay = th_relay("claude-code");
	struct hosts_plan p;
	char *err = NULL;
	cr_assert_eq(hosts_plan(th_host("claude-code"), host, mine, relay,
				TH_MCPV, &p, &err),
		     0);
	cr_assert_str_eq(th_action(&p, "/p: pw"), "project");
	cr_assert(json_equal(json_object_get(host, "projects"),
			     json_object_get(p.host, "projects")));
	cr_assert_eq(json_object_size(json_object_get(p.mcpv, "mcpServers")),
		     0);
	hosts_plan_free(&p);
	json_decref(host);
	json_decref(mine);
	json_decref(relay);
}

Test(hosts, mask_hides_every_secret_and_collects_it)
{
	json_t *doc = th_json(
		"{\"mcpServers\": {\"r\": {\"url\": "
		"\"https://user:pa55word@h/mcp?token=tok_abcdef&x=1#frag\", "
		"\"headers\": {\"Authorization\": \"Bearer hdr_secret\"}, "
		"\"env\": {\"K\": \"env_secret\", \"R\": \"${TOKEN}\"}, "
		"\"args\": [\"plain\"]}}, "
		"\"primaryApiKey\": \"sk-ant-key\", \"oauthAccount\": "
		"{\"emailAddress\": \"me@example.com\"}, \"theme\": \"dark\"}");
	struct secrets *sec = secrets_new();
	json_t *m = hosts_mask(doc, sec);
	char *t = json_dumps(m, JSON_COMPACT | JSON_PRESERVE_ORDER);
	static const char *const hidden[] = {
		"pa55word",   "tok_abcdef", "hdr_secret",
		"env_secret", "sk-ant-key", "me@example.com",
	};
	for (size_t i = 0; i < sizeof hidden / sizeof hidden[0]; i++)
		cr_assert_null(strstr(t, hidden[i]), "%s shown: %s", hidden[i],
			       t);
	cr_assert(strstr(t, "https://***@h/mcp?token=***&x=***#frag"), "%s", t);
	cr_assert(strstr(t, "\"plain\"") && strstr(t, "\"dark\""));
	/* What was hidden is known to sec: text from elsewhere is masked. */
	char *again = secrets_mask(sec, "x Bearer hdr_secret tok_abcdef y");
	cr_assert_str_eq(again, "x *** *** y");
	free(again);
	/* A reference alone names a secret's source, and is none. */
	again = secrets_mask(sec, "set ${TOKEN}");
	cr_assert_str_eq(again, "set ${TOKEN}");
	free(again);
	free(t);
	json_decref(m);
	json_decref(doc);
	secrets_free(sec);
}

static void th_roundtrip(const char *path)
{
	char *text = NULL;
	size_t len = 0;
	cr_assert_eq(fsutil_read_user_file(path, 1 << 20, &text, &len), 0, "%s",
		     path);
	json_t *doc = th_json(text);
	char *out = hosts_dump(doc, text);
	cr_assert_str_eq(out, text, "%s is not laid out as it was", path);
	free(out);
	free(text);
	json_decref(doc);
}

Test(hosts, dump_keeps_the_files_layout)
{
	/* The fixtures are written as each host writes them. */
	th_roundtrip("tests/e2e/fixtures/hosts/claude-desktop.json");
	th_roundtrip("tests/e2e/fixtures/hosts/claude-code.json");
	th_roundtrip("tests/e2e/fixtures/hosts/cursor.json");
	th_roundtrip("tests/e2e/fixtures/hosts/vscode.json");
	json_t *doc = th_json("{\"a\": [1, {\"b\": []}], \"c\": \"d\"}");
	char *t = hosts_dump(doc, "{\n    \"x\": 1}");
	cr_assert_str_eq(t, "{\n    \"a\": [\n        1,\n        {\n     "
			    "       \"b\": []\n        }\n    ],\n    \"c\": "
			    "\"d\"\n}");
	free(t);
	t = hosts_dump(doc, NULL);
	cr_assert_str_eq(t, "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n "
			    "   }\n  ],\n  \"c\": \"d\"\n}\n");
	free(t);
	json_decref(doc);
}

Test(hosts, a_relay_of_another_home_becomes_this_homes)
{
	json_t *host = th_json("{\"mcpServers\": {\"mcpvisor\": {\"command\": "
			       "\"mcpvisor\", \"args\": [\"relay\", "
			       "\"--home=/old\"]}, \"a\": {\"command\": "
			       "\"/bin/a\"}}}");
	json_t *mine = json_object();
	json_t *relay =
		hosts_relay_entry(th_host("cursor"), "mcpvisor", "/new");
	cr_assert_str_eq(hosts_relay_home(relay), "/new");
	struct hosts_plan p, q;
	char *err = NULL;
	cr_assert_eq(hosts_plan(th_host("cursor"), host, mine, relay, TH_MCPV,
				&p, &err),
		     0);
	cr_assert_str_eq(th_action(&p, "mcpvisor"), "repoint");
	cr_assert_str_eq(th_action(&p, "a"), "moved");
	cr_assert_not(p.relay_added);
	json_t *servers = json_object_get(p.host, "mcpServers");
	cr_assert_eq(json_object_size(servers), 1);
	cr_assert_str_eq(hosts_relay_home(json_object_get(servers, "mcpvisor")),
			 "/new");
	/* The same home again: nothing to do. */
	cr_assert_eq(hosts_plan(th_host("cursor"), p.host, p.mcpv, relay,
				TH_MCPV, &q, &err),
		     0);
	cr_assert_not(q.changed);
	hosts_plan_free(&q);
	hosts_plan_free(&p);
	/* The default home: a relay without --home, or with MCPVISOR_HOME. */
	json_t *e =
		th_json("{\"command\": \"mcpvisor\", \"args\": "
			"[\"relay\"], \"env\": {\"MCPVISOR_HOME\": \"/e\"}}");
	cr_assert_str_eq(hosts_relay_home(e), "/e");
	json_decref(e);
	e = th_json("{\"command\": \"mcpvisor\", \"args\": [\"relay\"]}");
	cr_assert_null(hosts_relay_home(e));
	json_decref(e);
	json_decref(host);
	json_decref(mine);
	json_decref(relay);
}

Test(hosts, the_same_server_but_for_type_stdio_is_no_clash)
{
	/* VS Code requires "type"; the same server moved from Claude
	 * Desktop before has none. */
	json_t *host = th_json(
		"{\"servers\": {\"fetch\": {\"type\": \"stdio\", \"command\": "
		"\"uvx\", \"args\": [\"mcp-server-fetch\"], \"env\": {}},"
		"\"other\": {\"type\": \"stdio\", \"command\": \"uvx\"},"
		"\"web\": {\"type\": \"http\", \"url\": \"https://x/mcp\"}}}");
	json_t *mine = th_json(
		"{\"mcpServers\": {\"fetch\": {\"command\": \"uvx\", \"args\": "
		"[\"mcp-server-fetch\"]}, \"other\": {\"command\": \"uvx\", "
		"\"args\": [\"x\"]}, \"web\": {\"url\": \"https://x/mcp\"}}}");
	json_t *relay = th_relay("vscode");
	struct hosts_plan p;
	char *err = NULL;
	cr_assert_eq(hosts_plan(th_host("vscode"), host, mine, relay, TH_MCPV,
				&p, &err),
		     0);
	cr_assert_str_eq(th_action(&p, "fetch"), "same");
	cr_assert_str_eq(th_action(&p, "other"), "clash", "other args");
	/* "http" is not what a url alone means (mcpvisor tries both). */
	cr_assert_str_eq(th_action(&p, "web"), "clash");
	cr_assert(json_equal(p.mcpv, mine), "mcpvisor's entry untouched");
	cr_assert_eq(json_object_size(p.moved), 0);
	hosts_plan_free(&p);
	json_decref(host);
	json_decref(mine);
	json_decref(relay);
}

Test(hosts, editor_env_variables_are_named_in_the_plan)
{
	json_t *host = th_json(
		"{\"servers\": {\"d\": {\"type\": \"stdio\", \"command\": "
		"\"/bin/d\", \"args\": [\"${env:LEVEL}\"], \"env\": "
		"{\"DEBUG\": "
		"\"${env:DEBUG}\", \"B\": \"${env:LEVEL}/${env:DEBUG}\"}},"
		"\"plain\": {\"type\": \"stdio\", \"command\": \"/bin/p\"}}}");
	json_t *mine = json_object();
	json_t *relay = th_relay("vscode");
	struct hosts_plan p;
	char *err = NULL;
	cr_assert_eq(hosts_plan(th_host("vscode"), host, mine, relay, TH_MCPV,
				&p, &err),
		     0);
	json_t *vars = json_object_get(json_array_get(p.items, 0), "vars");
	char *t = json_dumps(vars, JSON_COMPACT);
	cr_assert_str_eq(t, "[\"LEVEL\",\"DEBUG\"]");
	free(t);
	cr_assert_null(json_object_get(json_array_get(p.items, 1), "vars"));
	json_t *d = json_object_get(p.moved, "d");
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(d, "env"), "B")),
			 "${LEVEL:-}/${DEBUG:-}");
	hosts_plan_free(&p);
	json_decref(host);
	json_decref(mine);
	json_decref(relay);
}

static struct jsonc *th_jsonc(const char *text)
{
	struct jsonc *j;
	struct jsonc_error e;
	cr_assert_eq(jsonc_parse(text, strlen(text), 0, &j, &e), 0, "%s: %s",
		     text, e.text);
	return j;
}

static char *th_read(const char *path, size_t *len)
{
	char *text = NULL;
	cr_assert_eq(fsutil_read_user_file(path, 1 << 20, &text, len), 0, "%s",
		     path);
	return text;
}

/* s with each from replaced by to. Caller frees. */
static char *th_replace(const char *s, const char *from, const char *to)
{
	char *out = xstrdup("");
	for (const char *p = s;;) {
		const char *hit = strstr(p, from);
		char *n = xasprintf("%s%.*s%s", out,
				    (int)(hit ? (size_t)(hit - p) : strlen(p)),
				    p, hit ? to : "");
		free(out);
		out = n;
		if (hit == NULL)
			return out;
		p = hit + strlen(from);
	}
}

/* The plan for the host file at path made on its text: every byte
 * before and after the servers' object kept, and each entry that stays
 * there byte for byte; the text reads as the plan's JSON. */
static char *th_edit_fixture(const char *host, const char *path,
			     const json_t *mine, struct hosts_plan *p)
{
	size_t len;
	char *text = th_read(path, &len);
	const struct host_info *h = th_host(host);
	struct jsonc *j;
	struct jsonc_error je;
	cr_assert_eq(jsonc_parse(text, len, 0, &j, &je), 0, "%s: %s", path,
		     je.text);
	json_t *relay = hosts_relay_entry(h, "mcpvisor", "/h");
	char *err = NULL, *out = NULL;
	cr_assert_eq(hosts_plan(h, jsonc_root(j)->value, mine, relay, TH_MCPV,
				p, &err),
		     0);
	cr_assert_eq(hosts_edit_host(h, p, j, &out, &err), 0, "%s: %s", path,
		     err);
	const struct jsonc_node *srv =
		jsonc_member(jsonc_root(j), h->servers_key);
	size_t tail = len - srv->end;
	cr_assert_eq(strncmp(out, text, srv->start + 1), 0, "%s: head", path);
	cr_assert_str_eq(out + strlen(out) - tail, text + srv->end, "%s: tail",
			 path);
	const char *at = out + srv->start;
	for (size_t i = 0; i < srv->nkids; i++) {
		const struct jsonc_node *k = srv->kids[i];
		const char *act = th_action(p, k->name);
		if (strcmp(act, "moved") == 0 || strcmp(act, "same") == 0)
			continue;
		char *bytes =
			xstrndup(text + k->name_start, k->end - k->name_start);
		const char *hit = strstr(at, bytes);
		cr_assert_not_null(hit, "%s: %s is not kept as it was", path,
				   k->name);
		at = hit + strlen(bytes);
		free(bytes);
	}
	json_decref(relay);
	jsonc_free(j);
	free(text);
	return out;
}

Test(hosts, setup_on_each_fixture_keeps_every_byte_outside_the_moved)
{
	static const char *const hosts[] = {"claude-desktop", "claude-code",
					    "cursor", "vscode"};
	for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++) {
		char *path =
			xasprintf("tests/e2e/fixtures/hosts/%s.json", hosts[i]);
		json_t *mine = json_object();
		struct hosts_plan p;
		char *out = th_edit_fixture(hosts[i], path, mine, &p);
		/* A plain JSON file stays plain JSON. */
		struct jsonc *j;
		struct jsonc_error je;
		cr_assert_eq(
			jsonc_parse(out, strlen(out), JSONC_STRICT, &j, &je), 0,
			"%s: %s", path, je.text);
		jsonc_free(j);
		free(out);
		hosts_plan_free(&p);
		json_decref(mine);
		free(path);
	}
}

Test(hosts, setup_on_a_jsonc_file_cuts_the_moved_entries_only)
{
	const char *path = "tests/e2e/fixtures/hosts/vscode-jsonc.json";
	json_t *mine = th_json("{\"idleTimeout\": \"5m\", \"mcpServers\": "
			       "{\"fetch\": {\"command\": \"uvx\", \"args\": "
			       "[\"mcp-server-fetch\"]}}}");
	struct hosts_plan p;
	char *out = th_edit_fixture("vscode", path, mine, &p);
	cr_assert_str_eq(th_action(&p, "memory"), "moved");
	cr_assert_str_eq(th_action(&p, "debug"), "moved");
	cr_assert_str_eq(th_action(&p, "github"), "moved");
	cr_assert_str_eq(th_action(&p, "fetch"), "same");
	cr_assert_str_eq(th_action(&p, "perplexity"), "cannot");
	size_t len;
	char *raw = th_read("tests/e2e/fixtures/hosts/vscode-jsonc.setup.json",
			    &len);
	char *a = th_replace(raw, "@MCPVISOR@", "mcpvisor");
	char *want = th_replace(a, "@MH@", "/h");
	cr_assert_str_eq(out, want);
	free(raw);
	free(a);
	free(want);
	free(out);
	/* mcpvisor's config: the moved servers added after its own, its
	 * bytes kept. */
	const char *before =
		"{\n  \"idleTimeout\": \"5m\",\n  \"mcpServers\": "
		"{\n    \"fetch\": {\"command\": \"uvx\", \"args\": "
		"[\"mcp-server-fetch\"]}\n  }\n}\n";
	char *err = NULL;
	struct jsonc *bj = th_jsonc(before);
	cr_assert_eq(hosts_edit_mcpv(&p, bj, NULL, &out, &err), 0, "%s", err);
	jsonc_free(bj);
	cr_assert_str_eq(
		out,
		"{\n  \"idleTimeout\": \"5m\",\n  \"mcpServers\": {\n    "
		"\"fetch\": {\"command\": \"uvx\", \"args\": "
		"[\"mcp-server-fetch\"]},\n    \"memory\": {\n      \"type\": "
		"\"stdio\",\n      \"command\": \"@DEMO@\",\n      \"args\": "
		"[\"--name\", \"memory\"]\n    },\n    \"debug\": {\n      "
		"\"type\": \"stdio\",\n      \"command\": \"@DEMO@\",\n      "
		"\"args\": [\"--name\", \"debug\"],\n      \"env\": {\n        "
		"\"DEBUG\": \"${DEBUG:-}\"\n      }\n    },\n    \"github\": "
		"{\n "
		"     \"type\": \"http\",\n      \"url\": "
		"\"https://api.githubcopilot.com/mcp/\",\n      \"headers\": "
		"{\n "
		"       \"Authorization\": \"Bearer ghp_FIXTURESECRET0007\"\n "
		"     }\n    }\n  }\n}\n");
	free(out);
	/* A minified config gets minified entries. */
	const char *mini =
		"{\"idleTimeout\":\"5m\",\"mcpServers\":{\"fetch\":"
		"{\"command\":\"uvx\",\"args\":[\"mcp-server-fetch\"]}}}";
	bj = th_jsonc(mini);
	cr_assert_eq(hosts_edit_mcpv(&p, bj, NULL, &out, &err), 0, "%s", err);
	jsonc_free(bj);
	cr_assert(strncmp(out, mini, strlen(mini) - 2) == 0, "%s", out);
	cr_assert(strstr(out, "]},\"memory\":{\"type\":\"stdio\","), "%s", out);
	cr_assert_null(strchr(out, '\n'), "%s", out);
	free(out);
	/* A new file is laid out like the host's (tabs). */
	raw = th_read(path, &len);
	cr_assert_eq(hosts_edit_mcpv(&p, NULL, raw, &out, &err), 0);
	cr_assert(
		strstr(out, "\n\t\"mcpServers\": {\n\t\t\"fetch\": {\n\t\t\t"),
		"%s", out);
	free(out);
	/* Not the file the plan was made from: nothing comes out. */
	bj = th_jsonc("{\"servers\": {}}");
	cr_assert_eq(hosts_edit_host(th_host("vscode"), &p, bj, &out, &err),
		     -EINVAL);
	cr_assert_null(out);
	cr_assert(strstr(err, "does not read back as planned"), "%s", err);
	free(err);
	jsonc_free(bj);
	bj = th_jsonc("{\"mcpServers\": []}");
	cr_assert_eq(hosts_edit_mcpv(&p, bj, NULL, &out, &err), -EINVAL);
	cr_assert(strstr(err, "mcpServers"), "%s", err);
	free(err);
	jsonc_free(bj);
	free(raw);
	hosts_plan_free(&p);
	json_decref(mine);
}

Test(hosts, mask_text_masks_the_files_own_bytes)
{
	const char *t =
		"{\n\t// was: Bearer ghp_SECRET1\n\t/* \"env\": {\"K\": "
		"\"sk-SECRET3\", \"L\":\"a\\\"b\"}, see https://x */\n"
		"\t\"servers\": {\"g\": "
		"{\"url\": \"https://u:pw_SECRET2@h/mcp\", \"headers\": "
		"{\"A\": \"Bearer \\u0067hp_SECRET1\"},},},\n}";
	struct secrets *sec = secrets_new();
	char *m = hosts_mask_text(t, strlen(t), sec);
	/* The header's value is known by its value, escapes decoded, and
	 * masked in the comment too; what is commented out has its values
	 * masked; other bytes as they were. */
	cr_assert_str_eq(
		m, "{\n\t// was: ***\n\t/* \"env\": {\"K\": \"***\", "
		   "\"L\":\"***\"}, see https://x */\n\t\"servers\": {\"g\": "
		   "{\"url\": \"https://***@h/mcp\", \"headers\": "
		   "{\"A\": \"***\"},},},\n}");
	free(m);
	secrets_free(sec);
}
