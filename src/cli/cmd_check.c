/* `mcpvisor check`: validate a config and show how each server resolves,
 * secrets masked. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "config/config.h"
#include "trust/trust.h"
#include "util/paths.h"

static void check_usage(FILE *f)
{
	fprintf(f, "usage: mcpvisor check [FILE] [--json] [--home DIR]\n"
		   "\n"
		   "Validates a config (default: the global one) and prints "
		   "how each server\n"
		   "resolves, with env and header values masked. Exits 2 when "
		   "anything is wrong.\n");
}

int cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"home", required_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *home = NULL;
	int json = 0, ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "jH:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			json = 1;
			break;
		case 'H':
			home = optarg;
			break;
		case 'h':
			check_usage(stdout);
			return CLI_OK;
		default:
			check_usage(stderr);
			return CLI_USAGE;
		}
	}
	struct paths p;
	paths_resolve(&p, home);
	const char *file = optind < argc ? argv[optind] : p.config_file;
	/* A space's file is shown as the runtime would take it: untrusted
	 * until allowed. */
	const char *base = strrchr(file, '/');
	struct config *cfg = strcmp(base ? base + 1 : file, ".mcp.json") == 0
				     ? trust_load_space(p.state_dir, file, NULL)
				     : config_load_file(file);
	paths_free(&p);
	if (cfg->fatal) {
		fprintf(stderr, "mcpvisor check: %s\n", cfg->fatal);
		config_free(cfg);
		return CLI_USAGE;
	}
	int bad = 0;
	json_t *servers = json_array();
	for (size_t i = 0; i < cfg->nservers; i++) {
		json_array_append_new(servers,
				      config_server_describe(&cfg->servers[i]));
		if (cfg->servers[i].error)
			bad++;
	}
	if (json) {
		json_t *warn = json_array();
		for (size_t i = 0; i < cfg->nwarnings; i++)
			json_array_append_new(warn,
					      json_string(cfg->warnings[i]));
		json_t *o =
			json_pack("{s:s,s:o,s:o,s:b}", "file", file, "servers",
				  servers, "warnings", warn, "ok", bad == 0);
		char *s = json_dumps(o, JSON_INDENT(2));
		printf("%s\n", s);
		free(s);
		json_decref(o);
	} else {
		char *s = json_dumps(servers, JSON_INDENT(2));
		printf("%s\n", s);
		free(s);
		json_decref(servers);
		for (size_t i = 0; i < cfg->nwarnings; i++)
			fprintf(stderr, "warning: %s\n", cfg->warnings[i]);
		for (size_t i = 0; i < cfg->nservers; i++) {
			const struct server_config *sv = &cfg->servers[i];
			if (sv->error)
				fprintf(stderr, "error: %s\n", sv->error);
			else if (sv->kind != SERVER_STDIO)
				fprintf(stderr,
					"note: server \"%s\" is reached by "
					"url: "
					"it is valid, but mcpvisor does not "
					"serve url servers yet (only stdio)\n",
					sv->name);
		}
		printf("%s: %zu server(s), %d with errors\n", file,
		       cfg->nservers, bad);
	}
	config_free(cfg);
	return bad ? CLI_USAGE : CLI_OK;
}
