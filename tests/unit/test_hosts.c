/*
 * Unit tests for the hosts' config files (config/hosts.c, hosts_show.c):
 * where each host's file is found under a test HOME, which entries move
 * and how (the editors' variables, fields mcpvisor has no equivalent for,
 * relative paths, unset variables), the plan (moved, clash, identical,
 * relay placed where the first moved entry was, other keys and order
 * kept, a second run changes nothing), masking for display, and the
 * layout of the text written (indent unit, inline arrays, final newline).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/hosts.h"
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
	cr_assert_str_eq(t, "{\"command\":\"npx\",\"env\":{\"K\":\"${API_"
			    "KEY}\",\"H\":\"${HOME}/x\"}}");
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
