/*
 * The figures behind /metrics and `mcpvisor top`: latency bins and
 * quantiles, the one-minute window sliding on a fake clock, the registry
 * by server name, the Prometheus text (families, escaping, NaN), memory
 * of process groups read from /proc, and top's table fitting a terminal.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/top_view.h"
#include "metrics/metrics.h"
#include "metrics/procmem.h"
#include "metrics/prom.h"
#include "metrics/window.h"
#include "proc/procfs.h"
#include "util/clock.h"

#define SEC 1000000ull

static uint64_t fake_us;

static uint64_t fake_clock_us(void)
{
	return fake_us;
}

/* ---- bins and quantiles ---- */

Test(window, bins_are_two_per_octave)
{
	const struct {
		uint64_t us;
		unsigned bin;
	} cases[] = {{0, 0},
		     {1, 0},
		     {2, 1},
		     {3, 2},
		     {4, 3},
		     {5, 3},
		     {6, 4},
		     {7, 4},
		     {8, 5},
		     {1000, 18},
		     {1023, 18},
		     {1024, 19},
		     {UINT64_MAX, WINDOW_BINS - 1}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		cr_assert_eq(window_bin(cases[i].us), cases[i].bin,
			     "%llu us: bin %u", (unsigned long long)cases[i].us,
			     window_bin(cases[i].us));
	cr_assert_eq(window_bin_low(18), 768);
	cr_assert_eq(window_bin_high(18), 1024);
	/* Every value lies within its bin's bounds. */
	for (uint64_t v = 0; v < 200000; v += 7) {
		unsigned b = window_bin(v);
		cr_assert(window_bin_low(b) <= v && v < window_bin_high(b),
			  "%llu in bin %u", (unsigned long long)v, b);
	}
}

Test(window, quantiles_from_bins)
{
	uint32_t bins[WINDOW_BINS] = {0};
	cr_assert_eq(window_quantile(bins, 0, 0.5), 0, "no values");
	bins[18] = 1; /* one value in [768, 1024): the bin's middle */
	cr_assert_eq(window_quantile(bins, 1, 0.5), 896);
	cr_assert_eq(window_quantile(bins, 1, 0.99), 896);
	bins[18] = 50;
	bins[3] = 50; /* [4, 6) */
	/* rank 50 is the last of bin 3; rank 99 the 49th of bin 18 */
	cr_assert_eq(window_quantile(bins, 100, 0.5), 6);
	cr_assert_eq(window_quantile(bins, 100, 0.99), 1016);
	cr_assert_eq(window_quantile(bins, 100, 0.01), 4);
}

/* ---- the window on a fake clock ---- */

static void record(struct window *w, uint64_t at_us, uint64_t lat_us,
		   bool error)
{
	window_begin(w);
	window_end(w, at_us - lat_us, at_us, error);
}

Test(window, last_minute_slides_and_buckets_are_reused)
{
	static struct window w;
	window_init(&w);
	struct window_view v;
	window_read(&w, 100 * SEC, &v);
	cr_assert_eq(v.calls_minute, 0);
	cr_assert_eq(v.p50_us, 0);
	cr_assert_eq(v.rate, 0.0);
	for (int i = 0; i < 10; i++)
		record(&w, 100 * SEC + 1000 * i, 1000, i == 0);
	record(&w, 105 * SEC, 100000, false);

	window_read(&w, 105 * SEC + SEC / 2, &v);
	cr_assert_eq(v.calls_total, 11);
	cr_assert_eq(v.errors_total, 1);
	cr_assert_eq(v.calls_minute, 11);
	cr_assert_eq(v.errors_minute, 1);
	cr_assert_eq(v.latency_us_total, 10 * 1000 + 100000);
	cr_assert_eq(v.inflight, 0);
	/* The rate counts whole seconds before the current one: the ten at
	 * second 100, not the one at 105 yet. */
	cr_assert_float_eq(v.rate, 1.0, 1e-9);
	cr_assert(v.p50_us >= 768 && v.p50_us < 1024, "p50 %llu",
		  (unsigned long long)v.p50_us);
	cr_assert(v.p99_us >= 98304 && v.p99_us < 131072, "p99 %llu",
		  (unsigned long long)v.p99_us);

	/* Second 100 leaves the minute at 160; 105 stays. */
	window_read(&w, 160 * SEC, &v);
	cr_assert_eq(v.calls_minute, 1);
	cr_assert_eq(v.errors_minute, 0);
	cr_assert_eq(v.rate, 0.0, "nothing in the last ten seconds");
	cr_assert_eq(v.calls_total, 11, "totals stay");
	/* Second 160 takes second 100's bucket, cleared first. */
	record(&w, 160 * SEC + SEC / 5, 10, false);
	window_read(&w, 160 * SEC + SEC / 2, &v);
	cr_assert_eq(v.calls_minute, 2);
	window_read(&w, 170 * SEC, &v);
	cr_assert_eq(v.calls_minute, 1, "105 is gone at 170");
	cr_assert_float_eq(v.rate, 0.1, 1e-9);
	window_read(&w, 300 * SEC, &v);
	cr_assert_eq(v.calls_minute, 0);
	cr_assert_eq(v.p99_us, 0);
	cr_assert_eq(v.calls_total, 12);
}

Test(window, inflight_counts_calls_under_way)
{
	static struct window w;
	window_init(&w);
	window_begin(&w);
	window_begin(&w);
	window_end(&w, 0, 5, false);
	struct window_view v;
	window_read(&w, 1, &v);
	cr_assert_eq(v.inflight, 1);
	cr_assert_eq(v.calls_total, 1);
}

/* ---- the registry ---- */

static bool keep_b(void *arg, const char *name)
{
	return strcmp(name, "b") == 0;
}

Test(metrics, servers_by_name_with_exact_latency)
{
	clock_set_source_us(fake_clock_us);
	fake_us = 50 * SEC;
	struct metrics *m = metrics_new();
	struct metrics_server *a = metrics_server(m, "a");
	cr_assert_eq(metrics_server(m, "a"), a, "one entry per name");
	cr_assert_null(metrics_find(m, "zz"));
	json_t *o = metrics_server_json(a, clock_now_us());
	cr_assert_null(json_object_get(o, "p50Ms"), "no calls, no p50");
	json_decref(o);
	metrics_call_begin(a);
	uint64_t started = clock_now_us();
	fake_us += 5000; /* 5 ms: bin [4096, 6144) */
	metrics_call_end(a, started, false);
	metrics_call_begin(a);
	metrics_call_end(a, clock_now_us(), true);
	metrics_restarted(a);
	o = metrics_server_json(a, clock_now_us());
	cr_assert_eq(json_integer_value(json_object_get(o, "calls")), 2);
	cr_assert_eq(json_integer_value(json_object_get(o, "errors")), 1);
	cr_assert_eq(json_integer_value(json_object_get(o, "restarts")), 1);
	cr_assert_eq(json_integer_value(json_object_get(o, "inflight")), 0);
	cr_assert_float_eq(json_real_value(json_object_get(o, "p99Ms")), 5.12,
			   1e-9);
	cr_assert_float_eq(json_real_value(json_object_get(o, "p50Ms")), 0.001,
			   1e-9);
	cr_assert_float_eq(
		json_real_value(json_object_get(o, "latencySeconds")), 0.005,
		1e-12);
	json_decref(o);
	metrics_free(m);
	clock_set_source_us(NULL);
}

Test(metrics, prune_keeps_what_is_kept_or_in_flight)
{
	struct metrics *m = metrics_new();
	metrics_server(m, "a");
	metrics_server(m, "b");
	struct metrics_server *c = metrics_server(m, "c");
	metrics_call_begin(c);
	metrics_prune(m, keep_b, NULL);
	cr_assert_null(metrics_find(m, "a"));
	cr_assert_not_null(metrics_find(m, "b"));
	cr_assert_eq(metrics_find(m, "c"), c, "a call of it is in flight");
	/* The list's tail is right after a prune: new entries join it. */
	struct metrics_server *d = metrics_server(m, "d");
	cr_assert_eq(metrics_find(m, "d"), d);
	metrics_call_end(c, 0, false);
	metrics_prune(m, keep_b, NULL);
	cr_assert_null(metrics_find(m, "c"));
	cr_assert_null(metrics_find(m, "d"));
	metrics_server(m, "e");
	metrics_free(m); /* leaks, if any, fail under ASan */
}

/* ---- Prometheus text ---- */

static json_t *sample_figures(void)
{
	return json_pack(
		"{s:{s:i,s:i,s:i,s:i},s:[{s:s,s:s,s:s,s:i,s:i,s:i,s:i,s:i,s:i,"
		"s:f,s:f,s:f,s:f,s:i},{s:s,s:s,s:s,s:i,s:i,s:i,s:i,s:i,s:i,"
		"s:f,s:f,s:i}]}",
		"runtime", "pid", 42, "rssBytes", 4096000, "connections", 3,
		"sessions", 2, "servers", "name", "we\"ird\\name\nx", "state",
		"running", "scope", "app", "instances", 1, "sessions", 2,
		"inflight", 1, "calls", 3, "errors", 1, "restarts", 2,
		"callsPerSecond", 0.5, "latencySeconds", 0.25, "p50Ms", 0.125,
		"p99Ms", 12.0, "rssBytes", 1839104, "name", "idle", "state",
		"not running", "scope", "session", "instances", 0, "sessions",
		0, "inflight", 0, "calls", 0, "errors", 0, "restarts", 0,
		"callsPerSecond", 0.0, "latencySeconds", 0.0, "rssBytes", 0);
}

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; p && *p;) {
		if (strncmp(p, line, n) == 0 && (p[n] == '\n' || !p[n]))
			return true;
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return false;
}

Test(prom, families_counters_summary_and_escaped_labels)
{
	json_t *fig = sample_figures();
	struct buf b;
	buf_init(&b);
	prom_render(fig, &b);
	const char *t = b.data;
	const char *want[] = {
		"# TYPE mcpvisor_resident_memory_bytes gauge",
		"mcpvisor_resident_memory_bytes 4096000",
		"mcpvisor_connections 3",
		"mcpvisor_sessions 2",
		"# TYPE mcpvisor_server_info gauge",
		"mcpvisor_server_info{server=\"we\\\"ird\\\\name\\nx\","
		"scope=\"app\",state=\"running\"} 1",
		"mcpvisor_server_info{server=\"idle\",scope=\"session\","
		"state=\"not running\"} 1",
		"# TYPE mcpvisor_server_calls_total counter",
		"mcpvisor_server_calls_total{server=\"we\\\"ird\\\\name\\nx\"} "
		"3",
		"mcpvisor_server_call_errors_total{server=\"we\\\"ird\\\\name"
		"\\nx\"} 1",
		"# TYPE mcpvisor_server_restarts_total counter",
		"mcpvisor_server_restarts_total{server=\"idle\"} 0",
		"mcpvisor_server_calls_in_flight{server=\"we\\\"ird\\\\name\\nx"
		"\"} 1",
		"mcpvisor_server_calls_per_second{server="
		"\"we\\\"ird\\\\name\\nx"
		"\"} 0.5",
		"mcpvisor_server_resident_memory_bytes{server=\"idle\"} 0",
		"# TYPE mcpvisor_server_call_duration_seconds summary",
		"mcpvisor_server_call_duration_seconds{server=\"we\\\"ird\\\\"
		"name\\nx\",quantile=\"0.5\"} 0.000125",
		"mcpvisor_server_call_duration_seconds{server=\"we\\\"ird\\\\"
		"name\\nx\",quantile=\"0.99\"} 0.012",
		"mcpvisor_server_call_duration_seconds_sum{server=\"we\\\"ird"
		"\\\\name\\nx\"} 0.25",
		"mcpvisor_server_call_duration_seconds_count{server=\"we\\\"ird"
		"\\\\name\\nx\"} 3",
		"mcpvisor_server_call_duration_seconds{server=\"idle\","
		"quantile=\"0.99\"} NaN",
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		cr_assert(has_line(t, want[i]), "missing line: %s\n---\n%s",
			  want[i], t);
	/* Every sample belongs to a family declared before it (HELP then
	 * TYPE), and counters are named _total. */
	char declared[64][96];
	size_t nd = 0;
	for (const char *p = t; *p;) {
		size_t len = strcspn(p, "\n");
		char line[512];
		cr_assert_lt(len, sizeof line);
		memcpy(line, p, len);
		line[len] = '\0';
		p += len + (p[len] == '\n');
		cr_assert_neq(line[0], '\0', "no empty lines");
		char name[96], type[32];
		if (sscanf(line, "# TYPE %95s %31s", name, type) == 2) {
			cr_assert(strcmp(type, "counter") != 0 ||
					  strstr(name, "_total") ==
						  name + strlen(name) - 6,
				  "counter %s ends in _total", name);
			cr_assert(nd < 64);
			snprintf(declared[nd++], sizeof declared[0], "%s",
				 name);
			continue;
		}
		if (line[0] == '#') {
			cr_assert(strncmp(line, "# HELP ", 7) == 0, "%s", line);
			continue;
		}
		size_t nlen = strcspn(line, "{ ");
		bool found = false;
		for (size_t i = 0; i < nd && !found; i++) {
			size_t dl = strlen(declared[i]);
			found = strncmp(line, declared[i], dl) == 0 &&
				(nlen == dl ||
				 (nlen == dl + 4 &&
				  strncmp(line + dl, "_sum", 4) == 0) ||
				 (nlen == dl + 6 &&
				  strncmp(line + dl, "_count", 6) == 0));
		}
		cr_assert(found, "sample of an undeclared family: %s", line);
	}
	buf_free(&b);
	json_decref(fig);
}

/* ---- memory from /proc ---- */

Test(procmem, stat_fields_after_the_command_name)
{
	const char *text = "1234 (a) b (c) S 1 77 88 0 -1 4194560 0 0 0 0 1 "
			   "2 0 0 20 0 1 0 12345 1000000 321 "
			   "18446744073709551615 1 1\n";
	struct procfs_stat st;
	cr_assert_eq(procfs_parse_stat(text, strlen(text), &st), 0);
	cr_assert_eq(st.pgrp, 77);
	cr_assert_eq(st.sid, 88);
	cr_assert_eq(st.rss_pages, 321);
	cr_assert_eq(procfs_parse_stat(text, 40, &st), -EINVAL, "cut short");
	cr_assert_eq(procfs_parse_stat("12 no paren", 11, &st), -EINVAL);
}

static uint64_t statm_rss(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
	FILE *f = fopen(path, "r");
	unsigned long long size = 0, res = 0;
	if (f && fscanf(f, "%llu %llu", &size, &res) != 2)
		res = 0;
	if (f)
		fclose(f);
	return res * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* A session leader and a grandchild that moved to a group of its own:
 * both count for the leader's group, as a server's processes do. */
Test(procmem, a_group_counts_its_processes_and_its_session, .timeout = 10)
{
	int ready[2];
	cr_assert_eq(pipe(ready), 0);
	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		setsid();
		pid_t gc = fork();
		if (gc == 0) {
			setpgid(0, 0);
			pid_t self = getpid();
			if (write(ready[1], &self, sizeof self) < 0)
				_exit(1);
			pause();
			_exit(0);
		}
		pause();
		_exit(0);
	}
	pid_t gc = 0;
	cr_assert_eq(read(ready[0], &gc, sizeof gc), (ssize_t)sizeof gc);
	cr_assert_gt(gc, 1);
	pid_t groups[2] = {child, 999999999};
	uint64_t rss[2] = {1, 1};
	cr_assert_eq(procmem_groups_rss(groups, 2, rss), 0);
	uint64_t want = statm_rss(child) + statm_rss(gc);
	kill(gc, SIGKILL);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	/* Both processes, read a moment apart from statm. */
	cr_assert(rss[0] > want - want / 10 && rss[0] < want + want / 10,
		  "%llu against %llu", (unsigned long long)rss[0],
		  (unsigned long long)want);
	cr_assert_gt(rss[0], want / 2 + want / 10, "the grandchild counts");
	cr_assert_eq(rss[1], 0, "a group with no process");
	cr_assert_gt(procmem_self_rss(), 0);
}

/* ---- top's table ---- */

static size_t count_lines(const char *t)
{
	size_t n = 0;
	for (; t && *t; t++)
		n += *t == '\n';
	return n;
}

Test(top_view, fits_the_terminal)
{
	json_t *fig = sample_figures();
	json_t *servers = json_object_get(fig, "servers");
	json_object_set_new(json_array_get(servers, 1), "name",
			    json_string("a-server-name-much-longer-than-24"));
	struct buf b;
	buf_init(&b);
	top_view_render(fig, 0, 0, &b);
	cr_assert_eq(count_lines(b.data), 4, "%s", b.data);
	cr_assert(strstr(b.data, "runtime pid 42  rss 3.9M  connections 3  "
				 "sessions 2  servers 2"),
		  "%s", b.data);
	cr_assert(strstr(b.data, "SERVER"), "%s", b.data);
	cr_assert(strstr(b.data, "we\"ird\\name\\nx           running"),
		  "a control character in a name is shown escaped: %s", b.data);
	cr_assert(strstr(b.data, "a-server-name-much-long~ not running"), "%s",
		  b.data);
	cr_assert(strstr(b.data, "  0.125   12.0 ") ||
			  strstr(b.data, "   0.125     12.0"),
		  "%s", b.data);
	cr_assert(strstr(b.data, "1.8M"), "%s", b.data);
	cr_assert(strstr(b.data, "       -        -"), "no p50 yet: %s",
		  b.data);
	buf_reset(&b);
	/* 40 columns, 3 rows: every line cut, and a line for the rest. */
	top_view_render(fig, 40, 3, &b);
	cr_assert_eq(count_lines(b.data), 3, "%s", b.data);
	for (const char *p = b.data; *p;) {
		size_t len = strcspn(p, "\n");
		cr_assert_leq(len, 40, "%.*s", (int)len, p);
		p += len + 1;
	}
	cr_assert(strstr(b.data, "... 2 more server(s)"), "%s", b.data);
	buf_free(&b);
	json_decref(fig);
}

Test(top_view, lines_cut_by_characters_not_bytes)
{
	struct buf b;
	buf_init(&b);
	top_view_line(&b, "h\xc3\xa9llo\nrest", 2);
	cr_assert_str_eq(b.data, "h\xc3\xa9\n");
	buf_reset(&b);
	top_view_line(&b, "short", 80);
	cr_assert_str_eq(b.data, "short\n");
	buf_free(&b);
}
