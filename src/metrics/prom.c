/*
 * Prometheus text exposition of the runtime's figures (prom.h): one
 * family after another, every server a sample of each.
 */
#include "metrics/prom.h"

#include <stdio.h>
#include <string.h>

void prom_label_value(struct buf *out, const char *s)
{
	buf_puts(out, "\"");
	for (const char *p = s ? s : ""; *p; p++) {
		if (*p == '\\')
			buf_puts(out, "\\\\");
		else if (*p == '"')
			buf_puts(out, "\\\"");
		else if (*p == '\n')
			buf_puts(out, "\\n");
		else
			buf_append(out, p, 1);
	}
	buf_puts(out, "\"");
}

static void prom_family(struct buf *out, const char *name, const char *type,
			const char *help)
{
	buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A value as the format writes numbers: integers exactly, reals with
 * enough digits, NaN for one that is not known. */
static void prom_number(struct buf *out, const json_t *v)
{
	if (json_is_integer(v))
		buf_printf(out, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		buf_printf(out, "%.9g", json_real_value(v));
	else
		buf_puts(out, "NaN");
}

/* name{server="..."} value, for each server; a missing field reads 0. */
static void prom_server_samples(struct buf *out, const json_t *servers,
				const char *name, const char *field)
{
	size_t i;
	const json_t *sv;
	json_array_foreach(servers, i, sv)
	{
		buf_printf(out, "%s{server=", name);
		prom_label_value(
			out, json_string_value(json_object_get(sv, "name")));
		buf_puts(out, "} ");
		const json_t *v = json_object_get(sv, field);
		if (v)
			prom_number(out, v);
		else
			buf_puts(out, "0");
		buf_puts(out, "\n");
	}
}

static void prom_servers(struct buf *out, const json_t *servers)
{
	size_t i;
	const json_t *sv;
	prom_family(out, "mcpvisor_server_info", "gauge",
		    "A server the runtime knows (always 1), with its scope "
		    "and state.");
	json_array_foreach(servers, i, sv)
	{
		buf_puts(out, "mcpvisor_server_info{server=");
		prom_label_value(
			out, json_string_value(json_object_get(sv, "name")));
		buf_puts(out, ",scope=");
		prom_label_value(
			out, json_string_value(json_object_get(sv, "scope")));
		buf_puts(out, ",state=");
		prom_label_value(
			out, json_string_value(json_object_get(sv, "state")));
		buf_puts(out, "} 1\n");
	}
	static const struct {
		const char *name, *type, *field, *help;
	} simple[] = {
		{"mcpvisor_server_instances", "gauge", "instances",
		 "Running connections (instances) of the server."},
		{"mcpvisor_server_sessions", "gauge", "sessions",
		 "Client sessions that use the server."},
		{"mcpvisor_server_calls_in_flight", "gauge", "inflight",
		 "Calls sent to the server and not answered yet."},
		{"mcpvisor_server_calls_total", "counter", "calls",
		 "Calls routed to the server that ended (tools, prompts, "
		 "resources, completions)."},
		{"mcpvisor_server_call_errors_total", "counter", "errors",
		 "Calls that ended in an error: the server's, or the "
		 "runtime's when the server could not take or finish them."},
		{"mcpvisor_server_restarts_total", "counter", "restarts",
		 "Starts of the server's instances after their first "
		 "(reconnects, restarts, starts after an idle close)."},
		{"mcpvisor_server_calls_per_second", "gauge", "callsPerSecond",
		 "Calls per second over the last 10 whole seconds."},
		{"mcpvisor_server_resident_memory_bytes", "gauge", "rssBytes",
		 "Resident memory of the processes the runtime started for "
		 "the server (their process groups)."},
	};
	for (size_t k = 0; k < sizeof simple / sizeof simple[0]; k++) {
		prom_family(out, simple[k].name, simple[k].type,
			    simple[k].help);
		prom_server_samples(out, servers, simple[k].name,
				    simple[k].field);
	}
	const char *dur = "mcpvisor_server_call_duration_seconds";
	prom_family(out, dur, "summary",
		    "Latency of the server's calls, from the client's "
		    "request to the answer: quantiles over the last minute "
		    "(NaN without calls), sum and count since the start.");
	static const struct {
		const char *q, *field;
	} qs[] = {{"0.5", "p50Ms"}, {"0.99", "p99Ms"}};
	json_array_foreach(servers, i, sv)
	{
		const char *name =
			json_string_value(json_object_get(sv, "name"));
		for (size_t k = 0; k < 2; k++) {
			buf_printf(out, "%s{server=", dur);
			prom_label_value(out, name);
			buf_printf(out, ",quantile=\"%s\"} ", qs[k].q);
			const json_t *ms = json_object_get(sv, qs[k].field);
			if (json_is_number(ms))
				buf_printf(out, "%.9g",
					   json_number_value(ms) / 1000.0);
			else
				buf_puts(out, "NaN");
			buf_puts(out, "\n");
		}
		buf_printf(out, "%s_sum{server=", dur);
		prom_label_value(out, name);
		buf_printf(out, "} %.9g\n",
			   json_number_value(
				   json_object_get(sv, "latencySeconds")));
		buf_printf(out, "%s_count{server=", dur);
		prom_label_value(out, name);
		buf_printf(out, "} %lld\n",
			   (long long)json_integer_value(
				   json_object_get(sv, "calls")));
	}
}

void prom_render(const json_t *figures, struct buf *out)
{
	const json_t *rt = json_object_get(figures, "runtime");
	static const struct {
		const char *name, *field, *help;
	} own[] = {
		{"mcpvisor_resident_memory_bytes", "rssBytes",
		 "Resident memory of the runtime itself."},
		{"mcpvisor_connections", "connections",
		 "Open HTTP connections to the runtime (TCP and Unix "
		 "socket)."},
		{"mcpvisor_sessions", "sessions", "Client sessions."},
	};
	for (size_t k = 0; k < sizeof own / sizeof own[0]; k++) {
		prom_family(out, own[k].name, "gauge", own[k].help);
		buf_printf(out, "%s ", own[k].name);
		const json_t *v = json_object_get(rt, own[k].field);
		prom_number(out, v);
		buf_puts(out, "\n");
	}
	prom_servers(out, json_object_get(figures, "servers"));
}
