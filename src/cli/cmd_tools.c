/* `mcpvisor tools` and `mcpvisor call`: the runtime as an MCP client sees
 * it. */
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
		   "(server__tool), and\n"
		   "on stderr each server that failed, or whose list failed, "
		   "with the reason and\n"
		   "its stderr. Exits 1 when a server failed, 2 when SERVER "
		   "is not configured.\n");
}

static void call_usage(FILE *f)
{
	fprintf(f, "usage: mcpvisor call TOOL [JSON] [--json] [--home DIR]\n"
		   "\n"
		   "Calls TOOL (the name clients see, e.g. demo__echo) with "
		   "the JSON object\n"
		   "of arguments. Exits 1 when the call fails or the tool "
		   "reports an error\n"
		   "(then shown on stderr, as the other errors are).\n");
}

/* The stderr lines of a failure, indented, at most a few. */
static void tools_print_stderr(const char *tail)
{
	int shown = 0;
	for (const char *p = tail; p && *p && shown < 3; shown++) {
		const char *eol = strchr(p, '\n');
		int len = eol ? (int)(eol - p) : (int)strlen(p);
		fprintf(stderr, "    stderr: %.*s\n", len, p);
		p = eol ? eol + 1 : p + len;
	}
}

/* The error, and the server's stderr lines when the error carries them
 * (a server that failed to start says why there, e.g. a missing key). */
static int cli_print_error(const char *what, json_t *resp)
{
	cli_escape_json(resp);
	json_t *err = json_object_get(resp, "error");
	const char *msg = json_string_value(json_object_get(err, "message"));
	fprintf(stderr, "mcpvisor: %s failed: %s\n", what,
		msg ? msg : "(no message)");
	tools_print_stderr(json_string_value(
		json_object_get(json_object_get(err, "data"), "stderr")));
	return CLI_FAILED;
}

/* Prints why a server offers no working tools; true when it failed now,
 * in this session's list (a server stopped by the user or not allowed is
 * only noted; a server's lastFailure is history, not this list's). */
static bool tools_report_server(json_t *sv)
{
	const char *name = json_string_value(json_object_get(sv, "name"));
	const char *cerr =
		json_string_value(json_object_get(sv, "configError"));
	if (cerr) {
		fprintf(stderr,
			"mcpvisor: server \"%s\" has a config error: "
			"%s\n",
			name, cerr);
		return true;
	}
	if (json_is_true(json_object_get(sv, "disabled")))
		return false;
	if (json_is_true(json_object_get(sv, "stoppedByUser"))) {
		fprintf(stderr,
			"mcpvisor: server \"%s\" is stopped by `mcpvisor "
			"stop`; `mcpvisor restart %s` starts it again\n",
			name, name);
		return false;
	}
	bool failed = false;
	size_t i;
	json_t *in;
	json_array_foreach(json_object_get(sv, "instances"), i, in)
	{
		/* A list that failed (too large, unreadable) offers none of
		 * its items: this list is short of them. */
		const char *lk;
		json_t *lv;
		json_object_foreach(json_object_get(in, "listErrors"), lk, lv)
		{
			fprintf(stderr, "mcpvisor: server \"%s\": %s\n", name,
				json_string_value(lv));
			failed = true;
		}
		const char *state =
			json_string_value(json_object_get(in, "state"));
		if (state == NULL || (strcmp(state, "failed") != 0 &&
				      strcmp(state, "needs_auth") != 0))
			continue;
		const char *err =
			json_string_value(json_object_get(in, "error"));
		fprintf(stderr, "mcpvisor: server \"%s\" %s: %s\n", name,
			strcmp(state, "failed") == 0 ? "failed"
						     : "needs authorization",
			err ? err : "(no reason given)");
		const char *tail =
			json_string_value(json_object_get(in, "stderr"));
		if (tail == NULL)
			tail = json_string_value(json_object_get(
				json_object_get(in, "lastFailure"), "stderr"));
		tools_print_stderr(tail);
		failed = true;
	}
	/* A space's server the user has not allowed lists no tools: not a
	 * failure, but say what allows it. */
	const char *cmd = json_string_value(json_object_get(sv, "untrusted"));
	if (cmd) {
		fprintf(stderr, "%-32s untrusted (space %s): run `%s`\n", name,
			json_string_value(json_object_get(sv, "space")), cmd);
		return failed;
	}
	return failed;
}

/* Every page of tools/list in this client's session. */
static int tools_list_all(struct client *c, json_t *all)
{
	char *cursor = NULL;
	int rc = CLI_OK;
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
	return rc;
}

/* True (and says so, naming the servers there are) when status has no
 * server named name. */
static bool tools_no_such(json_t *servers, const char *name)
{
	size_t i;
	json_t *sv;
	json_array_foreach(servers, i, sv)
	{
		const char *n = json_string_value(json_object_get(sv, "name"));
		if (n && strcmp(n, name) == 0)
			return false;
	}
	fprintf(stderr, "mcpvisor tools: no server named \"%s\"", name);
	json_array_foreach(servers, i, sv)
		fprintf(stderr, "%s%s", i ? ", " : " (servers: ",
			json_string_value(json_object_get(sv, "name")));
	fprintf(stderr, "%s\n", json_array_size(servers) ? ")" : "");
	return true;
}

static void tools_print(json_t *all, const char *server, int json)
{
	json_t *shown = json_array();
	size_t i;
	json_t *t;
	size_t plen = server ? strlen(server) : 0;
	json_array_foreach(all, i, t)
	{
		const char *name =
			json_string_value(json_object_get(t, "name"));
		if (server &&
		    (name == NULL || strncmp(name, server, plen) != 0 ||
		     strncmp(name + plen, ROUTER_SEP, 2) != 0))
			continue;
		json_array_append(shown, t);
	}
	if (json) {
		char *s = json_dumps(shown, JSON_INDENT(2));
		printf("%s\n", s);
		free(s);
	} else {
		json_array_foreach(shown, i, t)
		{
			const char *d = json_string_value(
				json_object_get(t, "description"));
			printf("%-32s %s\n",
			       json_string_value(json_object_get(t, "name")),
			       d ? d : "");
		}
	}
	json_decref(shown);
}

int cmd_tools(int argc, char **argv)
{
	static const struct cli_spec spec = {"tools", tools_usage, CLI_OPT_JSON,
					     0, 1};
	struct cli_common o = {0};
	int rc = cli_parse_common(argc, argv, &spec, &o);
	if (rc >= 0)
		return rc;
	const char *server = o.nargs ? o.args[0] : NULL;
	struct client *c;
	if ((rc = client_open(o.home, &c)) != CLI_OK)
		return rc;
	json_t *all = json_array();
	json_t *st = NULL;
	/* An unknown SERVER is known from status before anything starts. */
	if (server && (rc = client_get_json(c, "/status", &st)) == CLI_OK) {
		cli_escape_json(st);
		if (tools_no_such(json_object_get(st, "servers"), server))
			rc = CLI_USAGE;
	}
	json_decref(st);
	st = NULL;
	if (rc == CLI_OK)
		rc = tools_list_all(c, all);
	/* Status while this session still holds what the list started: a
	 * server that failed to start is there, with its reason. Verbose:
	 * the stderr lines (secrets masked) are in that view only. */
	if (rc == CLI_OK)
		rc = client_get_json(c, "/status?verbose=1", &st);
	client_close(c);
	if (rc == CLI_OK) {
		/* What servers wrote is shown, not sent to the terminal. */
		cli_escape_json(st);
		if (!o.json)
			cli_escape_json(all);
		tools_print(all, server, o.json);
		size_t i;
		json_t *sv;
		json_array_foreach(json_object_get(st, "servers"), i, sv)
		{
			const char *n =
				json_string_value(json_object_get(sv, "name"));
			if (server && (n == NULL || strcmp(n, server) != 0))
				continue;
			if (tools_report_server(sv))
				rc = CLI_FAILED;
		}
	}
	json_decref(st);
	json_decref(all);
	return rc;
}

int cmd_call(int argc, char **argv)
{
	static const struct cli_spec spec = {"call", call_usage, CLI_OPT_JSON,
					     1, 2};
	struct cli_common o = {0};
	int rc = cli_parse_common(argc, argv, &spec, &o);
	if (rc >= 0)
		return rc;
	const char *tool = o.args[0];
	json_t *args = NULL;
	if (o.nargs > 1) {
		json_error_t jerr;
		args = json_loads(o.args[1], 0, &jerr);
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
		/* The tool's output is shown as lines, never sent raw. A
		 * tool's error (arguments it refused, say) reads as every
		 * other error does: on stderr, "mcpvisor: " first. */
		cli_escape_json(result);
		FILE *out = is_error ? stderr : stdout;
		size_t i;
		json_t *item;
		json_array_foreach(json_object_get(result, "content"), i, item)
		{
			const char *type = json_string_value(
				json_object_get(item, "type"));
			if (is_error && i == 0)
				fprintf(out, "mcpvisor: %s failed: ", tool);
			if (type && strcmp(type, "text") == 0)
				fprintf(out, "%s\n",
					json_string_value(
						json_object_get(item, "text")));
			else
				fprintf(out, "[%s content]\n",
					type ? type : "?");
		}
		if (is_error &&
		    json_array_size(json_object_get(result, "content")) == 0)
			fprintf(out,
				"mcpvisor: %s failed (the tool gave no "
				"message)\n",
				tool);
	}
	json_decref(resp);
	return is_error ? CLI_FAILED : CLI_OK;
}
