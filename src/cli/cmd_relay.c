/* `mcpvisor relay`: the stdio front door to the runtime (relay/). */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/cli.h"
#include "relay/run.h"

static void relay_usage(FILE *f)
{
	fprintf(f,
		"usage: mcpvisor relay [--home DIR] [--space DIR] [--url URL]\n"
		"\n"
		"Speaks MCP on stdin/stdout for a host that can only launch a\n"
		"command, and carries it to the runtime of the home (its Unix\n"
		"socket), starting one in the background when none runs.\n"
		"--space DIR: the space (default: the working directory).\n"
		"--url URL: a runtime elsewhere (never started or stopped).\n"
		"MCPVISOR_API_KEY: the key for a runtime that asks for one.\n");
}

int cmd_relay(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"home", required_argument, NULL, 'H'},
		{"space", required_argument, NULL, 's'},
		{"url", required_argument, NULL, 'u'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct relay_run_opts o = {0};
	const char *space = NULL;
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "H:s:u:h", longopts, NULL)) !=
	       -1) {
		switch (ch) {
		case 'H':
			o.home = optarg;
			break;
		case 's':
			space = optarg;
			break;
		case 'u':
			o.url = optarg;
			break;
		case 'h':
			relay_usage(stdout);
			return CLI_OK;
		default:
			relay_usage(stderr);
			return CLI_USAGE;
		}
	}
	if (optind < argc) {
		relay_usage(stderr);
		return CLI_USAGE;
	}
	char cwd[PATH_MAX];
	char *abs = realpath(space ? space : ".", NULL);
	if (abs == NULL) {
		fprintf(stderr,
			"mcpvisor relay: the space %s is not a "
			"folder\n",
			space ? space : (getcwd(cwd, sizeof cwd) ? cwd : "."));
		return CLI_USAGE;
	}
	o.space = abs;
	int rc = relay_run(&o);
	free(abs);
	return rc;
}
