/* `mcpvisor tools` and `mcpvisor call`: the runtime as an MCP client sees
 * it. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "router/router.h"

#define TOOLS_MAX_PAGES 1000

static void tools_usage(FILE *f)
{
	fprintf(f, "usage: mcpvisor tools [SERVER] [--json] [--home DIR]\n"
		   "\n"
		   "Lists the tools clients see, by the names they see "
		   "(server__tool).\n");
}

static void call_usage(FILE *f)
{
	fprintf(f, "usage: mcpvisor call TOOL [JSON] [--json] [--home DIR]\n"
		   "\n"
		   "Calls TOOL (the name clients see, e.g. demo__echo) with "
		   "the JSON object\n"
		   "of arguments. Exits 1 when the call fails or the tool "
		   "reports an error.\n");
}

struct cli_common {
	const char *home;
	int json;
};

/* Parses --home, --json, --help; returns -1 to go on, else an exit code. */
static int cli_parse_common(int argc, char **argv, struct cli_common *o,
			    void (*usage)(FILE *))
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"home", required_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "jH:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			o->json = 1;
			break;
		case 'H':
			o->home = optarg;
			break;
		case 'h':
			usage(stdout);
			return CLI_OK;
		default:
			usage(stderr);
			return CLI_USAGE;
		}
	}
	return -1;
}

static int cli_print_error(const char *what, json_t *resp)
{
	json_t *err = json_object_get(resp, "error");
	const char *msg = json_string_value(json_object_get(err, "message"));
	fprintf(stderr, "mcpvisor: %s failed: %s\n", what,
		msg ? msg : "(no message)");
	return CLI_FAILED;
}

/* Servers of a space's .mcp.json that the user has not allowed list no
 * tools: say which, and what allows them (on stderr, after the list). */
static void tools_note_untrusted(struct client *c, const char *server)
{
	json_t *st = NULL;
	if (client_get_json(c, "/status", &st) != CLI_OK)
		return;
	size_t i;
	json_t *sv;
	json_array_foreach(json_object_get(st, "servers"), i, sv)
	{
		const char *name =
			json_string_value(json_object_get(sv, "name"));
		const char *cmd =
			json_string_value(json_object_get(sv, "untrusted"));
		if (cmd == NULL || name == NULL ||
		    (server && strcmp(server, name) != 0))
			continue;
		fprintf(stderr, "%-32s untrusted (space %s): run `%s`\n", name,
			json_string_value(json_object_get(sv, "space")), cmd);
	}
	json_decref(st);
}

int cmd_tools(int argc, char **argv)
{
	struct cli_common o = {0};
	int rc = cli_parse_common(argc, argv, &o, tools_usage);
	if (rc >= 0)
		return rc;
	const char *server = optind < argc ? argv[optind] : NULL;
	struct client *c;
	if ((rc = client_open(o.home, &c)) != CLI_OK)
		return rc;
	json_t *all = json_array();
	char *cursor = NULL;
	for (int page = 0; page < TOOLS_MAX_PAGES; page++) {
		json_t *params = json_object();
		if (cursor)
			json_object_set_new(params, "cursor",
					    json_string(cursor));
		json_t *resp = NULL;
		rc = client_request(c, "tools/list", params, &resp);
		json_decref(params);
		free(cursor);
		cursor = NULL;
		if (rc != CLI_OK)
			break;
		json_t *result = json_object_get(resp, "result");
		if (result == NULL) {
			rc = cli_print_error("tools/list", resp);
			json_decref(resp);
			break;
		}
		json_array_extend(all, json_object_get(result, "tools"));
		const char *next = json_string_value(
			json_object_get(result, "nextCursor"));
		cursor = next ? strdup(next) : NULL;
		json_decref(resp);
		if (cursor == NULL)
			break;
	}
	free(cursor);
	if (rc == CLI_OK && !o.json)
		tools_note_untrusted(c, server);
	client_close(c);
	if (rc == CLI_OK) {
		json_t *shown = json_array();
		size_t i;
		json_t *t;
		size_t plen = server ? strlen(server) : 0;
		json_array_foreach(all, i, t)
		{
			const char *name =
				json_string_value(json_object_get(t, "name"));
			if (server &&
			    (strncmp(name, server, plen) != 0 ||
			     strncmp(name + plen, ROUTER_SEP, 2) != 0))
				continue;
			json_array_append(shown, t);
		}
		if (o.json) {
			char *s = json_dumps(shown, JSON_INDENT(2));
			printf("%s\n", s);
			free(s);
		} else {
			json_array_foreach(shown, i, t)
			{
				const char *d = json_string_value(
					json_object_get(t, "description"));
				printf("%-32s %s\n",
				       json_string_value(
					       json_object_get(t, "name")),
				       d ? d : "");
			}
		}
		json_decref(shown);
	}
	json_decref(all);
	return rc;
}

int cmd_call(int argc, char **argv)
{
	struct cli_common o = {0};
	int rc = cli_parse_common(argc, argv, &o, call_usage);
	if (rc >= 0)
		return rc;
	if (optind >= argc || argc - optind > 2) {
		call_usage(stderr);
		return CLI_USAGE;
	}
	const char *tool = argv[optind];
	json_t *args = NULL;
	if (optind + 1 < argc) {
		json_error_t jerr;
		args = json_loads(argv[optind + 1], 0, &jerr);
		if (!json_is_object(args)) {
			fprintf(stderr,
				"mcpvisor call: the arguments must be a JSON "
				"object, e.g. '{\"text\":\"hi\"}'%s%s\n",
				args ? "" : ": ", args ? "" : jerr.text);
			json_decref(args);
			return CLI_USAGE;
		}
	}
	struct client *c;
	if ((rc = client_open(o.home, &c)) != CLI_OK) {
		json_decref(args);
		return rc;
	}
	json_t *params = json_pack("{s:s,s:o}", "name", tool, "arguments",
				   args ? args : json_object());
	json_t *resp = NULL;
	rc = client_request(c, "tools/call", params, &resp);
	json_decref(params);
	client_close(c);
	if (rc != CLI_OK)
		return rc;
	json_t *result = json_object_get(resp, "result");
	if (result == NULL) {
		rc = cli_print_error(tool, resp);
		json_decref(resp);
		return rc;
	}
	bool is_error = json_is_true(json_object_get(result, "isError"));
	if (o.json) {
		char *s = json_dumps(result, JSON_INDENT(2));
		printf("%s\n", s);
		free(s);
	} else {
		size_t i;
		json_t *item;
		json_array_foreach(json_object_get(result, "content"), i, item)
		{
			const char *type = json_string_value(
				json_object_get(item, "type"));
			if (type && strcmp(type, "text") == 0)
				printf("%s\n",
				       json_string_value(
					       json_object_get(item, "text")));
			else
				printf("[%s content]\n", type ? type : "?");
		}
	}
	json_decref(resp);
	return is_error ? CLI_FAILED : CLI_OK;
}
