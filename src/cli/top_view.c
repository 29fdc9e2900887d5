/*
 * The table of `mcpvisor top` (top_view.h): one line per server with its
 * state, scope, instances, sessions, calls in flight, calls, calls per
 * second, p50 and p99 over the last minute, errors, restarts and memory.
 */
#include "cli/top_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"
#include "util/xmalloc.h"

void top_view_line(struct buf *out, const char *line, int cols)
{
	size_t len = strcspn(line, "\n");
	if (cols > 0) {
		int seen = 0;
		size_t i = 0;
		for (; i < len; i++) {
			/* A UTF-8 continuation byte is part of the
			 * character before it. */
			if (((unsigned char)line[i] & 0xC0) == 0x80)
				continue;
			if (seen == cols)
				break;
			seen++;
		}
		len = i;
	}
	buf_append(out, line, len);
	buf_puts(out, "\n");
}

/* Bytes as a short human figure: 512B, 6.4K, 12.0M, 1.2G. */
static void top_view_bytes(char *out, size_t size, long long v)
{
	static const char units[] = "BKMGT";
	double d = (double)v;
	int u = 0;
	while (d >= 1024.0 && u < 4) {
		d /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(out, size, "%lldB", v);
	else
		snprintf(out, size, "%.1f%c", d, units[u]);
}

/* Milliseconds with three significant places or so; "-" when unknown. */
static void top_view_ms(char *out, size_t size, const json_t *v)
{
	if (!json_is_number(v)) {
		snprintf(out, size, "-");
		return;
	}
	double ms = json_number_value(v);
	if (ms < 10.0)
		snprintf(out, size, "%.3f", ms);
	else if (ms < 1000.0)
		snprintf(out, size, "%.1f", ms);
	else
		snprintf(out, size, "%.0f", ms);
}

static long long top_view_int(const json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

/* A server's name as shown (escaped: a control character in it must not
 * move the cursor or break the line), at most TOP_VIEW_NAME_MAX bytes, a
 * longer one ending in "~"; returns its length. */
static size_t top_view_name(char shown[TOP_VIEW_NAME_MAX + 2], const json_t *sv)
{
	const char *name = json_string_value(json_object_get(sv, "name"));
	if (name == NULL)
		name = "?";
	size_t n = escape_into(shown, TOP_VIEW_NAME_MAX + 2, name, strlen(name),
			       0);
	if (n > TOP_VIEW_NAME_MAX) {
		/* Cut at a character, not inside one. */
		n = TOP_VIEW_NAME_MAX - 1;
		while (n > 0 && ((unsigned char)shown[n] & 0xC0) == 0x80)
			n--;
		shown[n++] = '~';
		shown[n] = '\0';
	}
	return n;
}

#define TOP_VIEW_HEAD "%-*s %-11s %-7s %4s %4s %4s %8s %7s %8s %8s %6s %8s %7s"

void top_view_render(const json_t *figures, int cols, int rows, struct buf *out)
{
	const json_t *rt = json_object_get(figures, "runtime");
	const json_t *servers = json_object_get(figures, "servers");
	char rss[32], line[512];
	top_view_bytes(rss, sizeof rss, top_view_int(rt, "rssBytes"));
	snprintf(line, sizeof line,
		 "runtime pid %lld  rss %s  connections %lld  sessions %lld  "
		 "servers %zu",
		 top_view_int(rt, "pid"), rss, top_view_int(rt, "connections"),
		 top_view_int(rt, "sessions"), json_array_size(servers));
	top_view_line(out, line, cols);
	int used = 2;
	/* The file on disk is not what runs, as status says. */
	const char *rerr = json_string_value(json_object_get(
		json_object_get(figures, "reloadError"), "message"));
	if (rerr) {
		char *shown = escape_str(rerr, 0);
		char *l = xasprintf("config not reloaded (the previous config "
				    "runs): %s",
				    shown);
		top_view_line(out, l, cols);
		free(l);
		free(shown);
		used++;
	}
	int width = 6;
	size_t i;
	const json_t *sv;
	json_array_foreach(servers, i, sv)
	{
		char shown[TOP_VIEW_NAME_MAX + 2];
		int n = (int)top_view_name(shown, sv);
		if (n > width)
			width = n;
	}
	snprintf(line, sizeof line, TOP_VIEW_HEAD, width, "SERVER", "STATE",
		 "SCOPE", "INST", "SESS", "INFL", "CALLS", "CALLS/S", "P50 ms",
		 "P99 ms", "ERRORS", "RESTARTS", "MEM");
	top_view_line(out, line, cols);
	size_t n = json_array_size(servers);
	json_array_foreach(servers, i, sv)
	{
		if (rows > 0 && used == rows - 1 && i + 1 < n) {
			snprintf(line, sizeof line, "... %zu more server(s)",
				 n - i);
			top_view_line(out, line, cols);
			break;
		}
		if (rows > 0 && used >= rows)
			break;
		char shown[TOP_VIEW_NAME_MAX + 2];
		top_view_name(shown, sv);
		char rate[32], p50[32], p99[32], mem[32];
		snprintf(rate, sizeof rate, "%.1f",
			 json_number_value(
				 json_object_get(sv, "callsPerSecond")));
		top_view_ms(p50, sizeof p50, json_object_get(sv, "p50Ms"));
		top_view_ms(p99, sizeof p99, json_object_get(sv, "p99Ms"));
		top_view_bytes(mem, sizeof mem, top_view_int(sv, "rssBytes"));
		const char *state =
			json_string_value(json_object_get(sv, "state"));
		const char *scope =
			json_string_value(json_object_get(sv, "scope"));
		snprintf(line, sizeof line,
			 "%-*s %-11s %-7s %4lld %4lld %4lld %8lld %7s %8s %8s "
			 "%6lld %8lld %7s",
			 width, shown, state ? state : "?", scope ? scope : "?",
			 top_view_int(sv, "instances"),
			 top_view_int(sv, "sessions"),
			 top_view_int(sv, "inflight"),
			 top_view_int(sv, "calls"), rate, p50, p99,
			 top_view_int(sv, "errors"),
			 top_view_int(sv, "restarts"), mem);
		top_view_line(out, line, cols);
		used++;
	}
}
