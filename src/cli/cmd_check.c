/* `mcpvisor check`: validate a config and show how each server resolves,
 * secrets masked, with notes on what will keep a server from starting;
 * --start starts each one to see (cli/check_start.c). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/check_lists.h"
#include "cli/check_start.h"
#include "cli/cli.h"
#include "config/config.h"
#include "config/secrets.h"
#include "trust/trust.h"
#include "util/escape.h"
#include "util/paths.h"
#include "util/xmalloc.h"

static void check_usage(FILE *f)
{
	fprintf(f, "usage: mcpvisor check [FILE] [--start] [--json] [--home "
		   "DIR]\n"
		   "\n"
		   "Validates a config (default: the global one) and prints "
		   "how each server\n"
		   "resolves, one per line, with secrets masked; --json "
		   "prints the whole\n"
		   "resolution. Notes name a command or a script file that "
		   "is not there.\n"
		   "Under a server with filters, their patterns and, when a "
		   "running runtime\n"
		   "of this config has listed it, the names each one keeps "
		   "and drops;\n"
		   "warnings name tool names over 64 characters and names "
		   "two servers give\n"
		   "(which the runtime lists for neither).\n"
		   "--start starts each server, lists its tools and stops it "
		   "again, in a\n"
		   "private runtime of this config (your runtime, journal and "
		   "tool cache are\n"
		   "not touched), and says which failed and why: what a host "
		   "would meet.\n"
		   "Exits 2 when the config is wrong, 1 when a server failed "
		   "to start.\n");
}

/* Whether the server's command can run: an executable file, or a name
 * found in the server's PATH (its env's, else ours). Only a note: the
 * runtime may run with another PATH. */
static bool check_command_found(const struct server_config *sv)
{
	if (strchr(sv->command, '/'))
		return access(sv->command, X_OK) == 0;
	const char *path = getenv("PATH");
	for (size_t i = 0; i < sv->nenv; i++)
		if (strcmp(sv->env[i].key, "PATH") == 0)
			path = sv->env[i].value;
	bool found = false;
	char *dirs = xstrdup(path ? path : "/usr/bin:/bin");
	for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		char *full = xasprintf("%s/%s", d, sv->command);
		struct stat st;
		found = stat(full, &st) == 0 && S_ISREG(st.st_mode) &&
			access(full, X_OK) == 0;
		free(full);
	}
	free(dirs);
	return found;
}

/* Extensions of the script files interpreters run ("node
 * dist/index.js", "uv run server.py"). */
static const char *const check_script_exts[] = {
	".js", ".mjs", ".cjs", ".ts", ".mts", ".py",
	".rb", ".pl",  ".php", ".sh", ".jar", NULL,
};

static bool check_is_script(const char *a)
{
	size_t n = strlen(a);
	if (a[0] == '-')
		return false;
	for (size_t i = 0; check_script_exts[i]; i++) {
		size_t e = strlen(check_script_exts[i]);
		if (n > e && strcmp(a + n - e, check_script_exts[i]) == 0)
			return true;
	}
	return false;
}

/* What will keep sv from starting, as sentences (appended to notes): a
 * command that is not an executable file or not in PATH; a script file
 * its args name that is not there: absolute, or relative to its cwd when
 * it has one (else where it runs is decided when it starts); "~/", which
 * nothing expands (no shell runs the command). An argument that is a
 * secret is not quoted, nor looked at. */
static void check_notes(const struct server_config *sv, json_t *notes)
{
	if (sv->error || sv->disabled)
		return;
	if (sv->command && !check_command_found(sv)) {
		char *n = xasprintf(
			"server \"%s\": command \"%s\" %s", sv->name,
			sv->command,
			strchr(sv->command, '/')
				? "is not an executable file; it will fail "
				  "to start"
				: "is not in PATH; it will fail to start "
				  "unless the runtime has another PATH");
		json_array_append_new(notes, json_string(n));
		free(n);
	}
	for (size_t i = 0; i < sv->nargs; i++) {
		const char *a = sv->args[i];
		const char *tpl = sv->args_tpl ? sv->args_tpl[i] : NULL;
		if (a == NULL || !check_is_script(a) ||
		    secrets_arg_is_secret(sv->args, sv->nargs, i, tpl))
			continue;
		char *n = NULL;
		if (strncmp(a, "~/", 2) == 0) {
			n = xasprintf("server \"%s\": script \"%s\" starts "
				      "with ~, which is not expanded (no shell "
				      "runs the command): write the full path",
				      sv->name, a);
		} else if (a[0] == '/' || sv->cwd) {
			char *full = a[0] == '/'
					     ? xstrdup(a)
					     : xasprintf("%s/%s", sv->cwd, a);
			struct stat st;
			if (stat(full, &st) != 0)
				n = xasprintf("server \"%s\": script \"%s\" "
					      "does not exist; it will fail to "
					      "start",
					      sv->name, full);
			free(full);
		}
		if (n)
			json_array_append_new(notes, json_string(n));
		free(n);
	}
}

/* One argument as a shell would need it written. */
static void check_print_arg(const char *a)
{
	char *w = escape_shell_word(a);
	printf(" %s", w);
	free(w);
}

/* A container server's line: the image, the engine (or how it is
 * chosen), its port inside, name, args and volumes as written. */
static void check_print_container(json_t *c, int w)
{
	const char *engine = json_string_value(json_object_get(c, "engine"));
	const char *cname = json_string_value(json_object_get(c, "name"));
	printf("%-*s container: image %s, engine %s", w, "",
	       json_string_value(json_object_get(c, "image")),
	       engine ? engine : "(chosen at start)");
	long long port = json_integer_value(json_object_get(c, "port"));
	if (port > 0)
		printf(", port %lld inside, published on 127.0.0.1", port);
	printf(", name %s", cname ? cname : "(mcpvisor's)");
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(c, "args"), i, a)
	{
		if (i == 0)
			printf(", args");
		check_print_arg(json_string_value(a));
	}
	json_array_foreach(json_object_get(c, "volumes"), i, a)
	{
		printf(", -v");
		check_print_arg(json_string_value(a));
	}
	printf("\n");
}

/* name, kind, scope and transport (stdio; http, sse, or auto: Streamable
 * HTTP falling back to legacy), then what runs (command and args, or the url),
 * then the names of env and header values (never the values). */
static void check_print_server(json_t *d, int w, int kw)
{
	const char *name = json_string_value(json_object_get(d, "name"));
	const char *err = json_string_value(json_object_get(d, "error"));
	if (err) {
		/* The message itself goes to stderr with the others. */
		printf("%-*s invalid (see the error on stderr)\n", w,
		       name ? name : "?");
		return;
	}
	printf("%-*s %-*s scope %-8s transport %-5s", w, name, kw,
	       json_string_value(json_object_get(d, "kind")),
	       json_string_value(json_object_get(d, "scope")),
	       json_string_value(json_object_get(d, "transport")));
	const char *url = json_string_value(json_object_get(d, "url"));
	json_t *ctr = json_object_get(d, "container");
	if (url) {
		printf(" %s", url);
	} else if (json_object_get(d, "command") == NULL ||
		   json_is_null(json_object_get(d, "command"))) {
		printf(" image %s",
		       json_string_value(json_object_get(ctr, "image")));
	} else {
		printf(" %s", json_string_value(json_object_get(d, "command")));
		size_t i;
		json_t *a;
		json_array_foreach(json_object_get(d, "args"), i, a)
			check_print_arg(json_string_value(a));
	}
	if (json_is_true(json_object_get(d, "disabled")))
		printf("  (disabled)");
	printf("\n");
	if (ctr)
		check_print_container(ctr, w);
	static const char *const kv[] = {"env", "headers"};
	for (size_t k = 0; k < 2; k++) {
		json_t *o = json_object_get(d, kv[k]);
		if (json_object_size(o) == 0)
			continue;
		printf("%-*s %s:", w, "", kv[k]);
		const char *key;
		json_t *v;
		json_object_foreach(o, key, v)
			printf(" %s=%s", key, json_string_value(v));
		printf("\n");
	}
	/* The sign-in settings, the client secret masked (config/oauth.c). */
	json_t *oa = json_object_get(d, "oauth");
	if (json_object_size(oa)) {
		printf("%-*s oauth:", w, "");
		const char *key;
		json_t *v;
		json_object_foreach(oa, key, v)
		{
			if (!json_is_array(v)) {
				printf(" %s=%s", key, json_string_value(v));
				continue;
			}
			size_t i;
			json_t *e;
			printf(" %s=", key);
			json_array_foreach(v, i, e) printf(
				"%s%s", i ? "," : "", json_string_value(e));
		}
		printf("\n");
	}
}

/* The width of the name column (the longest name, at least 16) and of
 * the kind's (at least 6): a long one does not push a server's columns
 * out of line with the others'. */
static int check_name_width(const struct config *cfg, bool kind)
{
	int w = kind ? 6 : 16;
	for (size_t i = 0; i < cfg->nservers; i++) {
		const struct server_config *sv = &cfg->servers[i];
		size_t n = strlen(kind ? config_kind_name(sv->kind) : sv->name);
		if (n > (size_t)w)
			w = (int)n;
	}
	return w;
}

/* --start runs the servers of a config it was asked to check: never
 * those of a space the user has not allowed. */
static bool check_start_allowed(const struct config *cfg)
{
	for (size_t i = 0; i < cfg->nservers; i++) {
		if (cfg->servers[i].untrusted == NULL)
			continue;
		fprintf(stderr,
			"mcpvisor check: --start runs nothing of a space's "
			".mcp.json the user has not allowed: run `%s` "
			"first\n",
			cfg->servers[i].untrusted);
		return false;
	}
	return true;
}

/* The slowest server's startup timeout: how long --start waits. */
static long long check_start_wait_ms(const struct config *cfg)
{
	long long ms = 0;
	for (size_t i = 0; i < cfg->nservers; i++)
		if (cfg->servers[i].startup_timeout_ms > ms)
			ms = cfg->servers[i].startup_timeout_ms;
	return ms > 0 ? ms : CONFIG_DEFAULT_STARTUP_MS;
}

int cmd_check(int argc, char **argv)
{
	static const struct cli_spec spec = {
		"check", check_usage, CLI_OPT_JSON | CLI_OPT_START, 0, 1};
	struct cli_common o = {0};
	int rc = cli_parse_common(argc, argv, &spec, &o);
	if (rc >= 0)
		return rc;
	const char *home = o.home;
	int json = o.json;
	struct paths p;
	paths_resolve(&p, home);
	const char *file = o.nargs ? o.args[0] : p.config_file;
	/* A space's file is shown as the runtime would take it: untrusted
	 * until allowed. */
	const char *base = strrchr(file, '/');
	struct config *cfg = strcmp(base ? base + 1 : file, ".mcp.json") == 0
				     ? trust_load_space(p.state_dir, file, NULL)
				     : config_load_file(file);
	if (cfg->fatal) {
		fprintf(stderr, "mcpvisor check: %s\n", cfg->fatal);
		config_free(cfg);
		paths_free(&p);
		return CLI_USAGE;
	}
	int bad = 0, may_fail = 0;
	json_t *servers = json_array();
	/* A running runtime of this file knows the servers' names. */
	json_t *known = check_lists_fetch(home, file);
	for (size_t i = 0; i < cfg->nservers; i++) {
		json_t *d = config_server_describe(&cfg->servers[i]);
		check_lists_add(d, &cfg->servers[i],
				json_object_get(known, cfg->servers[i].name));
		json_t *notes = json_array();
		check_notes(&cfg->servers[i], notes);
		if (json_array_size(notes))
			may_fail++;
		json_object_set_new(d, "notes", notes);
		json_array_append_new(servers, d);
		if (cfg->servers[i].error)
			bad++;
	}
	json_t *collisions = check_lists_collisions(cfg, known);
	json_decref(known);
	json_t *started = NULL;
	if (o.start && check_start_allowed(cfg)) {
		/* Its own lines come after check's: flushed first. */
		fflush(stdout);
		started = check_start_run(file, check_start_wait_ms(cfg));
		if (started == NULL)
			rc = CLI_FAILED;
	}
	int w = check_name_width(cfg, false), kw = check_name_width(cfg, true);
	if (json) {
		json_t *warn = json_array();
		for (size_t i = 0; i < cfg->nwarnings; i++)
			json_array_append_new(warn,
					      json_string(cfg->warnings[i]));
		json_t *out =
			json_pack("{s:s,s:o,s:o,s:o,s:b}", "file", file,
				  "servers", servers, "warnings", warn,
				  "collisions", collisions, "ok", bad == 0);
		if (started)
			json_object_set(out, "start", started);
		char *s = json_dumps(out, JSON_INDENT(2));
		printf("%s\n", s);
		free(s);
		json_decref(out);
		if (started && rc < 0) {
			size_t i;
			json_t *r;
			rc = CLI_OK;
			json_array_foreach(started, i, r)
			{
				const char *res = json_string_value(
					json_object_get(r, "result"));
				if (res && strcmp(res, "ok") != 0 &&
				    strcmp(res, "not started") != 0)
					rc = CLI_FAILED;
			}
		}
	} else {
		size_t k;
		json_t *d;
		/* The names a runtime listed are the servers' text. */
		cli_escape_json(servers);
		json_array_foreach(servers, k, d)
		{
			check_print_server(d, w, kw);
			check_lists_print(d, w);
		}
		for (size_t i = 0; i < cfg->nwarnings; i++)
			fprintf(stderr, "warning: %s\n", cfg->warnings[i]);
		json_array_foreach(servers, k, d)
		{
			const char *err =
				json_string_value(json_object_get(d, "error"));
			if (err)
				fprintf(stderr, "error: %s\n", err);
			size_t j;
			json_t *n;
			json_array_foreach(json_object_get(d, "notes"), j, n)
				fprintf(stderr, "note: %s\n",
					json_string_value(n));
		}
		json_array_foreach(servers, k, d) check_lists_warn(d);
		check_lists_warn_collisions(collisions);
		json_decref(collisions);
		json_decref(servers);
		printf("%s: %zu server(s), %d with errors", file, cfg->nservers,
		       bad);
		if (may_fail)
			printf(", %d that may not start (see the notes)",
			       may_fail);
		printf("\n");
		if (started && rc < 0)
			rc = check_start_print(file, started, w) ? CLI_FAILED
								 : CLI_OK;
	}
	json_decref(started);
	config_free(cfg);
	paths_free(&p); /* file may be its config_file */
	if (bad)
		return CLI_USAGE;
	return rc < 0 ? CLI_OK : rc;
}
