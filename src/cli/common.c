/* The options every subcommand shares: --home, --help, --json, -v,
 * --force and check's --start, with one check of the positional
 * arguments; and what makes the runtime's answers safe to print. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/buf.h"
#include "util/escape.h"
#include "util/xmalloc.h"

/* key: the member v is the value of (NULL in an array or at the top). */
static void cli_escape_value(json_t *v, const char *key)
{
	if (json_is_string(v)) {
		bool lines = key && (strcmp(key, "stderr") == 0 ||
				     strcmp(key, "text") == 0);
		char *shown = escape_str(json_string_value(v),
					 lines ? ESCAPE_LINES : 0);
		json_string_set(v, shown);
		free(shown);
	} else if (json_is_object(v)) {
		const char *k;
		json_t *m;
		json_object_foreach(v, k, m) cli_escape_value(m, k);
	} else if (json_is_array(v)) {
		size_t i;
		json_t *m;
		json_array_foreach(v, i, m) cli_escape_value(m, NULL);
	}
}

void cli_escape_json(json_t *v)
{
	cli_escape_value(v, NULL);
}

char *cli_serve_command(const char *home)
{
	if (home == NULL)
		return xstrdup("mcpvisor serve");
	/* Absolute: the command is run from wherever the user is. */
	char cwd[PATH_MAX];
	char *abs = home[0] == '/' || getcwd(cwd, sizeof cwd) == NULL
			    ? xstrdup(home)
			    : xasprintf("%s/%s", cwd, home);
	char *word = escape_shell_word(abs);
	char *cmd = xasprintf("mcpvisor serve --home %s", word);
	free(word);
	free(abs);
	return cmd;
}

int cli_parse_common(int argc, char **argv, const struct cli_spec *spec,
		     struct cli_common *o)
{
	static const struct option all[] = {
		{"home", required_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{"json", no_argument, NULL, 'j'},
		{"verbose", no_argument, NULL, 'v'},
		{"force", no_argument, NULL, 'f'},
		{"start", no_argument, NULL, 's'},
		{NULL, 0, NULL, 0},
	};
	/* Only the options this command takes: another is a usage error. */
	struct option longopts[sizeof all / sizeof all[0]];
	char shortopts[16] = "H:h";
	size_t n = 0, k = 3;
	for (size_t i = 0; all[i].name; i++) {
		unsigned bit = all[i].val == 'j'   ? CLI_OPT_JSON
			       : all[i].val == 'v' ? CLI_OPT_VERBOSE
			       : all[i].val == 'f' ? CLI_OPT_FORCE
			       : all[i].val == 's' ? CLI_OPT_START
						   : 0;
		if (bit && !(spec->opts & bit))
			continue;
		longopts[n++] = all[i];
		if (all[i].val == 'v')
			shortopts[k++] = 'v';
	}
	longopts[n] = (struct option){NULL, 0, NULL, 0};
	shortopts[k] = '\0';
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, shortopts, longopts, NULL)) !=
	       -1) {
		switch (ch) {
		case 'H':
			o->home = optarg;
			break;
		case 'j':
			o->json = 1;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'f':
			o->force = 1;
			break;
		case 's':
			o->start = 1;
			break;
		case 'h':
			spec->usage(stdout);
			return CLI_OK;
		default:
			spec->usage(stderr);
			return CLI_USAGE;
		}
	}
	o->args = argv + optind;
	o->nargs = argc - optind;
	if (o->nargs > spec->max_args) {
		fprintf(stderr, "mcpvisor %s: unexpected argument \"%s\"\n\n",
			spec->name, o->args[spec->max_args]);
		spec->usage(stderr);
		return CLI_USAGE;
	}
	if (o->nargs < spec->min_args) {
		spec->usage(stderr);
		return CLI_USAGE;
	}
	return -1;
}
