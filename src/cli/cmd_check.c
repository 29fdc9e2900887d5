/* `mcpvisor check`: validate a config and show how each server resolves,
 * secrets masked. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/check_lists.h"
#include "cli/cli.h"
#include "config/config.h"
#include "trust/trust.h"
#include "util/paths.h"
#include "util/xmalloc.h"

static void check_usage(FILE *f)
{
	fprintf(f, "usage: mcpvisor check [FILE] [--json] [--home DIR]\n"
		   "\n"
		   "Validates a config (default: the global one) and prints "
		   "how each server\n"
		   "resolves, one per line, with env and header values "
		   "masked; --json prints\n"
		   "the whole resolution. Under a server with filters, "
		   "their patterns and,\n"
		   "when a running runtime of this config has listed it, "
		   "the names each one\n"
		   "keeps and drops; warnings name tool names over 64 "
		   "characters and\n"
		   "names two servers give (which the runtime lists for "
		   "neither).\n"
		   "Exits 2 when anything is wrong.\n");
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

/* One argument as a shell would need it written. */
static void check_print_arg(const char *a)
{
	if (a[0] && strpbrk(a, " \t\"'\\$`") == NULL) {
		printf(" %s", a);
		return;
	}
	printf(" '");
	for (const char *p = a; *p; p++)
		if (*p == '\'')
			printf("'\\''");
		else
			putchar(*p);
	printf("'");
}

/* A container server's line: the image, the engine (or how it is
 * chosen), its port inside, name, args and volumes as written. */
static void check_print_container(json_t *c)
{
	const char *engine = json_string_value(json_object_get(c, "engine"));
	const char *cname = json_string_value(json_object_get(c, "name"));
	printf("%-16s container: image %s, engine %s", "",
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
static void check_print_server(json_t *d)
{
	const char *name = json_string_value(json_object_get(d, "name"));
	const char *err = json_string_value(json_object_get(d, "error"));
	if (err) {
		/* The message itself goes to stderr with the others. */
		printf("%-16s invalid (see the error on stderr)\n",
		       name ? name : "?");
		return;
	}
	printf("%-16s %-6s scope %-8s transport %-5s", name,
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
		check_print_container(ctr);
	static const char *const kv[] = {"env", "headers"};
	for (size_t k = 0; k < 2; k++) {
		json_t *o = json_object_get(d, kv[k]);
		if (json_object_size(o) == 0)
			continue;
		printf("%-16s %s:", "", kv[k]);
		const char *key;
		json_t *v;
		json_object_foreach(o, key, v)
			printf(" %s=%s", key, json_string_value(v));
		printf("\n");
	}
}

int cmd_check(int argc, char **argv)
{
	static const struct cli_spec spec = {"check", check_usage, CLI_OPT_JSON,
					     0, 1};
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
	int bad = 0;
	json_t *servers = json_array();
	/* A running runtime of this file knows the servers' names. */
	json_t *known = check_lists_fetch(home, file);
	for (size_t i = 0; i < cfg->nservers; i++) {
		json_t *d = config_server_describe(&cfg->servers[i]);
		check_lists_add(d, &cfg->servers[i],
				json_object_get(known, cfg->servers[i].name));
		json_array_append_new(servers, d);
		if (cfg->servers[i].error)
			bad++;
	}
	json_t *collisions = check_lists_collisions(cfg, known);
	json_decref(known);
	if (json) {
		json_t *warn = json_array();
		for (size_t i = 0; i < cfg->nwarnings; i++)
			json_array_append_new(warn,
					      json_string(cfg->warnings[i]));
		json_t *out =
			json_pack("{s:s,s:o,s:o,s:o,s:b}", "file", file,
				  "servers", servers, "warnings", warn,
				  "collisions", collisions, "ok", bad == 0);
		char *s = json_dumps(out, JSON_INDENT(2));
		printf("%s\n", s);
		free(s);
		json_decref(out);
	} else {
		size_t k;
		json_t *d;
		/* The names a runtime listed are the servers' text. */
		cli_escape_json(servers);
		json_array_foreach(servers, k, d)
		{
			check_print_server(d);
			check_lists_print(d);
		}
		for (size_t i = 0; i < cfg->nwarnings; i++)
			fprintf(stderr, "warning: %s\n", cfg->warnings[i]);
		for (size_t i = 0; i < cfg->nservers; i++) {
			const struct server_config *sv = &cfg->servers[i];
			if (sv->error)
				fprintf(stderr, "error: %s\n", sv->error);
			else if (sv->command && !check_command_found(sv))
				fprintf(stderr,
					"note: server \"%s\": command \"%s\" "
					"%s\n",
					sv->name, sv->command,
					strchr(sv->command, '/')
						? "is not an executable file; "
						  "it will fail to start"
						: "is not in PATH; it will "
						  "fail to start unless the "
						  "runtime has another PATH");
		}
		json_array_foreach(servers, k, d) check_lists_warn(d);
		check_lists_warn_collisions(collisions);
		json_decref(collisions);
		json_decref(servers);
		printf("%s: %zu server(s), %d with errors\n", file,
		       cfg->nservers, bad);
	}
	config_free(cfg);
	paths_free(&p); /* file may be its config_file */
	return bad ? CLI_USAGE : CLI_OK;
}
