/* `mcpvisor status`: every server and instance, as a table or JSON. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void status_usage(FILE *f)
{
	fprintf(f, "usage: mcpvisor status [--json] [-v] [--home DIR]\n"
		   "\n"
		   "Shows the runtime's endpoint and each configured server "
		   "with its instances:\n"
		   "state (not running, starting, running, idle, failed, "
		   "needs_auth), scope,\n"
		   "sessions holding it, calls in flight and the last error "
		   "with the server's\n"
		   "stderr. -v adds pids, keys and the socket.\n");
}

/* The lines of a server with no instance: why it is not running (its
 * last failure, kept after its instance is gone), else that it is not
 * running now. */
static void status_print_idle_server(const char *name, const char *scope,
				     json_t *sv)
{
	json_t *lf = json_object_get(sv, "lastFailure");
	/* Not "failed": the failure may be old, and a later start may have
	 * gone well; "last failed" says what it was. */
	const char *state = json_is_true(json_object_get(sv, "disabled"))
				    ? "disabled"
				    : "not running";
	printf("%-16s %-12s scope %s", name, state, scope);
	if (lf)
		printf(" (last failed: %s)",
		       json_string_value(json_object_get(lf, "reason")));
	printf("\n");
	/* Its stderr (secrets masked) is only in the verbose view. */
	const char *err = json_string_value(json_object_get(lf, "stderr"));
	if (err && err[0]) {
		printf("    stderr:\n");
		for (const char *p = err; *p;) {
			size_t n = strcspn(p, "\n");
			printf("      %.*s\n", (int)n, p);
			p += n + (p[n] == '\n');
		}
	}
}

static void status_print_text(json_t *st, const struct client *c, int verbose)
{
	printf("runtime pid %lld, endpoint http://127.0.0.1:%lld/mcp, %lld "
	       "session(s)\n",
	       json_integer_value(json_object_get(st, "pid")),
	       json_integer_value(json_object_get(st, "port")),
	       json_integer_value(json_object_get(st, "sessions")));
	if (client_asked_port(c))
		printf("  (port %d was taken when it started, so it chose "
		       "another)\n",
		       client_asked_port(c));
	if (verbose)
		printf("  socket %s\n", client_socket(c));
	size_t i;
	json_t *sv;
	json_array_foreach(json_object_get(st, "servers"), i, sv)
	{
		const char *name =
			json_string_value(json_object_get(sv, "name"));
		const char *scope =
			json_string_value(json_object_get(sv, "scope"));
		if (scope == NULL)
			scope = "(from a space's .mcp.json)";
		const char *cerr =
			json_string_value(json_object_get(sv, "configError"));
		json_t *insts = json_object_get(sv, "instances");
		const char *untrusted =
			json_string_value(json_object_get(sv, "untrusted"));
		if (untrusted) {
			printf("%-16s %-10s from %s/.mcp.json: run `%s`\n",
			       name, "untrusted",
			       json_string_value(json_object_get(sv, "space")),
			       untrusted);
			continue;
		}
		if (cerr) {
			printf("%-16s config error: %s\n", name, cerr);
			continue;
		}
		bool held = json_is_true(json_object_get(sv, "stoppedByUser"));
		if (held)
			printf("%-16s stopped by `mcpvisor stop`; `mcpvisor "
			       "restart %s` starts it again\n",
			       name, name);
		if (json_array_size(insts) == 0) {
			if (!held)
				status_print_idle_server(name, scope, sv);
			continue;
		}
		size_t j;
		json_t *in;
		json_array_foreach(insts, j, in)
		{
			const char *state =
				json_string_value(json_object_get(in, "state"));
			size_t holders = json_array_size(
				json_object_get(in, "sessions"));
			long long inflight = json_integer_value(
				json_object_get(in, "inflight"));
			long long ntools = json_integer_value(json_object_get(
				json_object_get(in, "lists"), "tools"));
			long long holders_n = json_integer_value(
				json_object_get(in, "holders"));
			bool idle = strcmp(state, "running") == 0 &&
				    holders_n == 0 && inflight == 0;
			printf("%-16s %-12s scope %s, %lld tool(s), %zu "
			       "session(s), %lld call(s) in flight",
			       name, idle ? "idle" : state, scope, ntools,
			       holders, inflight);
			if (verbose && json_object_get(in, "pid"))
				printf(", pid %lld",
				       json_integer_value(
					       json_object_get(in, "pid")));
			json_t *closes = json_object_get(in, "idleClosesInMs");
			if (closes && strcmp(state, "running") == 0)
				printf(", idle close in %.1f s",
				       (double)json_integer_value(closes) /
					       1000.0);
			printf("\n");
			const char *err =
				json_string_value(json_object_get(in, "error"));
			const char *note =
				json_string_value(json_object_get(in, "note"));
			json_t *next = json_object_get(in, "nextAttemptInMs");
			if (err)
				printf("    reason: %s%s%s\n", err,
				       note ? " " : "", note ? note : "");
			if (next)
				printf("    next attempt in %.1f s\n",
				       (double)json_integer_value(next) /
					       1000.0);
			const char *tail = json_string_value(
				json_object_get(in, "stderr"));
			if (tail && (err || verbose)) {
				printf("    stderr:\n");
				const char *p = tail;
				while (*p) {
					const char *eol = strchr(p, '\n');
					int len = eol ? (int)(eol - p)
						      : (int)strlen(p);
					printf("      %.*s\n", len, p);
					p = eol ? eol + 1 : p + len;
				}
			}
			if (verbose)
				printf("    key: %s\n",
				       json_string_value(
					       json_object_get(in, "key")));
		}
	}
}

int cmd_status(int argc, char **argv)
{
	static const struct cli_spec spec = {
		"status", status_usage, CLI_OPT_JSON | CLI_OPT_VERBOSE, 0, 0};
	struct cli_common o = {0};
	int rc = cli_parse_common(argc, argv, &spec, &o);
	if (rc >= 0)
		return rc;
	struct client *c;
	if ((rc = client_open(o.home, &c)) != CLI_OK)
		return rc;
	json_t *st = NULL;
	rc = client_get_json(c, o.verbose ? "/status?verbose=1" : "/status",
			     &st);
	if (rc == CLI_OK && o.json) {
		char *s = json_dumps(st, JSON_INDENT(2) | JSON_SORT_KEYS);
		printf("%s\n", s);
		free(s);
	} else if (rc == CLI_OK) {
		status_print_text(st, c, o.verbose);
	}
	client_close(c);
	json_decref(st);
	return rc;
}
