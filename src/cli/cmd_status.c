/* `mcpvisor status`: every server and instance, as a table or JSON. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "util/buf.h"

/* The name column is as wide as the longest name, at least this: a long
 * name does not push a server's columns out of line with the others'. */
#define STATUS_NAME_MIN 16

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
		   "stderr; for a url server its transport, url (secrets "
		   "masked), the port\n"
		   "a local one serves on, and what to set when it needs "
		   "credentials;\n"
		   "for a container server its container's name, image and "
		   "engine.\n"
		   "-v adds pids, container ids, keys and the socket.\n");
}

/* How a server is reached, after its scope: nothing for stdio (most
 * servers, and the table stays as it was), else the transport and the
 * loopback port a local one serves on. */
static void status_reach_text(struct buf *b, json_t *o)
{
	const char *t = json_string_value(json_object_get(o, "transport"));
	if (t == NULL || strcmp(t, "stdio") == 0)
		return;
	buf_printf(b, ", %s", t);
	json_t *port = json_object_get(o, "port");
	if (json_integer_value(port) > 0)
		buf_printf(b, " on port %lld", json_integer_value(port));
	const char *image = json_string_value(json_object_get(o, "image"));
	const char *name = json_string_value(json_object_get(o, "container"));
	const char *engine = json_string_value(json_object_get(o, "engine"));
	if (name)
		buf_printf(b, " %s", name);
	if (image)
		buf_printf(b, " (image %s%s%s)", image, engine ? ", " : "",
			   engine ? engine : "");
}

/* The lines under a server's: its url (masked by the runtime) and, when it
 * refused our credentials, what its challenge named and what to set. */
static void status_reach_lines(struct buf *b, json_t *o)
{
	const char *url = json_string_value(json_object_get(o, "url"));
	if (url)
		buf_printf(b, "    url: %s\n", url);
	const char *cid = json_string_value(json_object_get(o, "containerId"));
	if (cid)
		buf_printf(b, "    container id: %s\n", cid);
	json_t *auth = json_object_get(o, "auth");
	const char *rm =
		json_string_value(json_object_get(auth, "resourceMetadata"));
	const char *hint = json_string_value(json_object_get(auth, "hint"));
	if (rm)
		buf_printf(b, "    resource metadata: %s\n", rm);
	long long code = json_integer_value(json_object_get(auth, "status"));
	if (hint && code > 0)
		buf_printf(b, "    needs auth (HTTP %lld): %s\n", code, hint);
	else if (hint)
		buf_printf(b, "    needs auth: %s\n", hint);
}

/* When, as a reader wants it: the time of day (with the date when not
 * today) and how long ago. at_ms: ms since the epoch. */
static void status_when(struct buf *b, long long at_ms)
{
	time_t at = (time_t)(at_ms / 1000), now = time(NULL);
	struct tm tm_at, tm_now;
	localtime_r(&at, &tm_at);
	localtime_r(&now, &tm_now);
	char day[64];
	bool today = tm_at.tm_year == tm_now.tm_year &&
		     tm_at.tm_yday == tm_now.tm_yday;
	strftime(day, sizeof day, today ? "%H:%M:%S" : "%Y-%m-%d %H:%M:%S",
		 &tm_at);
	long long ago = now > at ? (long long)(now - at) : 0;
	if (ago < 60)
		buf_printf(b, "at %s, %lld s ago", day, ago);
	else if (ago < 3600)
		buf_printf(b, "at %s, %lld min ago", day, ago / 60);
	else if (ago < 86400)
		buf_printf(b, "at %s, %lld h ago", day, ago / 3600);
	else
		buf_printf(b, "at %s, %lld d ago", day, ago / 86400);
}

/* A last failure as one phrase: what it was and when, and whether a start
 * went well since (recovered: the failure is history). */
static void status_failure_text(struct buf *b, json_t *lf, bool recovered)
{
	buf_printf(b, "last failed: %s, ",
		   json_string_value(json_object_get(lf, "reason")));
	status_when(b, json_integer_value(json_object_get(lf, "at")));
	if (recovered)
		buf_puts(b, "; recovered since");
}

/* The lines of a server with no instance: why it is not running (its
 * last failure, kept after its instance is gone, with when and whether it
 * recovered since), else that it is not running now. */
static void status_print_idle_server(int w, const char *name, const char *scope,
				     json_t *sv, int verbose)
{
	json_t *lf = json_object_get(sv, "lastFailure");
	/* Not "failed": the failure may be old, and a later start may have
	 * gone well; "last failed" says what it was. */
	const char *state = json_is_true(json_object_get(sv, "disabled"))
				    ? "disabled"
				    : "not running";
	bool recovered = json_object_get(lf, "recoveredAt") != NULL;
	struct buf b;
	buf_init(&b);
	status_reach_text(&b, sv);
	printf("%-*s %-12s scope %s%s", w, name, state, scope,
	       b.len ? b.data : "");
	if (lf) {
		buf_reset(&b);
		status_failure_text(&b, lf, recovered);
		printf(" (%s)", b.data);
	}
	printf("\n");
	buf_reset(&b);
	status_reach_lines(&b, sv);
	fputs(b.len ? b.data : "", stdout);
	buf_free(&b);
	/* What it printed then (secrets masked): why it is not running; once
	 * it recovered, history for the verbose view. */
	const char *err = json_string_value(json_object_get(lf, "stderr"));
	if (err && err[0] && (!recovered || verbose)) {
		printf("    stderr:\n");
		for (const char *p = err; *p;) {
			size_t n = strcspn(p, "\n");
			printf("      %.*s\n", (int)n, p);
			p += n + (p[n] == '\n');
		}
	}
}

/* One instance as text: its line, then reason, backoff and stderr. */
static void status_instance_text(struct buf *b, int w, const char *name,
				 const char *scope, json_t *in, int verbose)
{
	const char *state = json_string_value(json_object_get(in, "state"));
	size_t holders = json_array_size(json_object_get(in, "sessions"));
	long long inflight =
		json_integer_value(json_object_get(in, "inflight"));
	long long ntools = json_integer_value(
		json_object_get(json_object_get(in, "lists"), "tools"));
	long long holders_n =
		json_integer_value(json_object_get(in, "holders"));
	if (state == NULL)
		state = "?";
	bool idle = strcmp(state, "running") == 0 && holders_n == 0 &&
		    inflight == 0;
	buf_printf(b, "%-*s %-12s scope %s", w, name, idle ? "idle" : state,
		   scope);
	status_reach_text(b, in);
	buf_printf(b, ", %lld tool(s), %zu session(s), %lld call(s) in flight",
		   ntools, holders, inflight);
	if (verbose && json_object_get(in, "pid"))
		buf_printf(b, ", pid %lld",
			   json_integer_value(json_object_get(in, "pid")));
	json_t *closes = json_object_get(in, "idleClosesInMs");
	/* Whole seconds: instances closing within the same second still
	 * read (and group) as one line. */
	if (closes && strcmp(state, "running") == 0)
		buf_printf(b, ", idle close in %lld s",
			   (json_integer_value(closes) + 999) / 1000);
	buf_puts(b, "\n");
	const char *err = json_string_value(json_object_get(in, "error"));
	const char *note = json_string_value(json_object_get(in, "note"));
	json_t *next = json_object_get(in, "nextAttemptInMs");
	if (err)
		buf_printf(b, "    reason: %s%s%s\n", err, note ? " " : "",
			   note ? note : "");
	if (next)
		buf_printf(b, "    next attempt in %.1f s\n",
			   (double)json_integer_value(next) / 1000.0);
	/* A failure it came back from: when, so it reads as history. A
	 * failed instance's own reason is above. */
	json_t *lf = json_object_get(in, "lastFailure");
	if (lf && err == NULL && strcmp(state, "failed") != 0 &&
	    strcmp(state, "needs_auth") != 0) {
		buf_puts(b, "    ");
		status_failure_text(b, lf, strcmp(state, "running") == 0);
		buf_puts(b, "\n");
	}
	/* A list that failed offers nothing: why. */
	const char *lk;
	json_t *lv;
	json_object_foreach(json_object_get(in, "listErrors"), lk, lv)
		buf_printf(b, "    list failed: %s\n", json_string_value(lv));
	status_reach_lines(b, in);
	const char *tail = json_string_value(json_object_get(in, "stderr"));
	if (tail && (err || verbose)) {
		buf_puts(b, "    stderr:\n");
		const char *p = tail;
		while (*p) {
			const char *eol = strchr(p, '\n');
			int len = eol ? (int)(eol - p) : (int)strlen(p);
			buf_printf(b, "      %.*s\n", len, p);
			p = eol ? eol + 1 : p + len;
		}
	}
	if (verbose)
		buf_printf(b, "    key: %s\n",
			   json_string_value(json_object_get(in, "key")));
}

/* A server's instances, identical ones once with their count: hosts that
 * never end their sessions (the Inspector, mcp-remote) leave many
 * instances that read the same. The JSON keeps every one. */
static void status_print_instances(int w, const char *name, const char *scope,
				   json_t *insts, int verbose)
{
	json_t *texts = json_array();	/* distinct texts, first seen first */
	json_t *counts = json_object(); /* text -> how many */
	size_t j;
	json_t *in;
	json_array_foreach(insts, j, in)
	{
		struct buf b;
		buf_init(&b);
		status_instance_text(&b, w, name, scope, in, verbose);
		char *text = buf_steal(&b);
		json_t *n = json_object_get(counts, text);
		if (n) {
			json_integer_set(n, json_integer_value(n) + 1);
		} else {
			json_array_append_new(texts, json_string(text));
			json_object_set_new(counts, text, json_integer(1));
		}
		free(text);
	}
	json_t *t;
	json_array_foreach(texts, j, t)
	{
		const char *text = json_string_value(t);
		long long n = json_integer_value(json_object_get(counts, text));
		const char *eol = strchr(text, '\n');
		if (n > 1)
			printf("%.*s (x%lld)%s", (int)(eol - text), text, n,
			       eol);
		else
			fputs(text, stdout);
	}
	json_decref(texts);
	json_decref(counts);
}

#define STATUS_LABELS_SHOWN 8

/* Sessions by client and space, each with its label (not its id). */
static void status_print_sessions(json_t *list, int verbose)
{
	if (json_array_size(list) == 0)
		return;
	json_t *groups = json_array(); /* [{client, space, labels}] */
	json_t *index = json_object(); /* "client\nspace" -> group */
	size_t i;
	json_t *s;
	json_array_foreach(list, i, s)
	{
		const char *client =
			json_string_value(json_object_get(s, "client"));
		const char *space =
			json_string_value(json_object_get(s, "space"));
		const char *label =
			json_string_value(json_object_get(s, "label"));
		char *k = NULL;
		if (asprintf(&k, "%s\n%s", client ? client : "",
			     space ? space : "") < 0)
			abort();
		json_t *g = json_object_get(index, k);
		if (g == NULL) {
			g = json_pack("{s:s,s:s,s:[]}", "client",
				      client ? client : "?", "space",
				      space ? space : "", "labels");
			json_array_append_new(groups, g);
			json_object_set(index, k, g);
		}
		free(k);
		json_array_append_new(json_object_get(g, "labels"),
				      json_string(label ? label : "?"));
	}
	printf("sessions:\n");
	json_t *g;
	json_array_foreach(groups, i, g)
	{
		json_t *labels = json_object_get(g, "labels");
		size_t n = json_array_size(labels);
		const char *space =
			json_string_value(json_object_get(g, "space"));
		printf("  client %s, %s%s: %zu session(s):",
		       json_string_value(json_object_get(g, "client")),
		       space[0] ? "space " : "no space", space, n);
		size_t k;
		json_t *l;
		json_array_foreach(labels, k, l)
		{
			if (!verbose && k == STATUS_LABELS_SHOWN) {
				printf(" and %zu more (-v shows all)",
				       n - STATUS_LABELS_SHOWN);
				break;
			}
			printf(" %s", json_string_value(l));
		}
		printf("\n");
	}
	json_decref(groups);
	json_decref(index);
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
	const char *rerr = json_string_value(
		json_object_get(json_object_get(st, "reloadError"), "message"));
	if (rerr)
		printf("config not reloaded (the previous config runs): %s\n",
		       rerr);
	size_t i;
	json_t *sv;
	int w = STATUS_NAME_MIN;
	json_array_foreach(json_object_get(st, "servers"), i, sv)
	{
		const char *name =
			json_string_value(json_object_get(sv, "name"));
		if (name && strlen(name) > (size_t)w)
			w = (int)strlen(name);
	}
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
			printf("%-*s %-10s from %s/.mcp.json: run `%s`\n", w,
			       name, "untrusted",
			       json_string_value(json_object_get(sv, "space")),
			       untrusted);
			continue;
		}
		if (cerr) {
			printf("%-*s config error: %s\n", w, name, cerr);
			continue;
		}
		bool held = json_is_true(json_object_get(sv, "stoppedByUser"));
		if (held)
			printf("%-*s stopped by `mcpvisor stop`; `mcpvisor "
			       "restart %s` starts it again\n",
			       w, name, name);
		if (json_array_size(insts) == 0) {
			if (!held)
				status_print_idle_server(w, name, scope, sv,
							 verbose);
			continue;
		}
		status_print_instances(w, name, scope, insts, verbose);
	}
	/* Under the table, where it is not lost among a server's lines. */
	json_array_foreach(json_object_get(st, "servers"), i, sv)
	{
		const char *advice = json_string_value(
			json_object_get(sv, "longToolNamesAdvice"));
		if (advice)
			printf("warning: %s\n", advice);
	}
	status_print_sessions(json_object_get(st, "sessionList"), verbose);
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
		cli_escape_json(st);
		status_print_text(st, c, o.verbose);
	}
	client_close(c);
	json_decref(st);
	return rc;
}
