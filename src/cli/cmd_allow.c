/* `mcpvisor allow [DIR]`: trust a space's .mcp.json, or revoke that. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "trust/trust.h"
#include "util/paths.h"

static void allow_usage(FILE *f)
{
	fprintf(f,
		"usage: mcpvisor allow [DIR] [--revoke] [--home DIR]\n"
		"\n"
		"Trusts the .mcp.json of DIR (default: the current folder): "
		"its servers run\n"
		"for sessions in that space. mcpvisor records the folder's "
		"real path and a\n"
		"SHA-256 of the file, so a changed file needs allowing again. "
		"Until then its\n"
		"servers show as untrusted and run nothing. --revoke forgets "
		"the folder.\n");
}

int cmd_allow(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"revoke", no_argument, NULL, 'r'},
		{"home", required_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *home = NULL;
	int revoke = 0, ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "rH:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'r':
			revoke = 1;
			break;
		case 'H':
			home = optarg;
			break;
		case 'h':
			allow_usage(stdout);
			return CLI_OK;
		default:
			allow_usage(stderr);
			return CLI_USAGE;
		}
	}
	if (argc - optind > 1) {
		allow_usage(stderr);
		return CLI_USAGE;
	}
	const char *dir = optind < argc ? argv[optind] : ".";
	struct paths p;
	paths_resolve(&p, home);
	char *msg = NULL;
	int rc = revoke ? trust_revoke(p.state_dir, dir, &msg)
			: trust_allow(p.state_dir, dir, &msg);
	paths_free(&p);
	fprintf(rc < 0 ? stderr : stdout, "mcpvisor%s: %s\n",
		rc < 0 ? " allow" : "", msg);
	free(msg);
	return rc < 0 ? CLI_FAILED : CLI_OK;
}
