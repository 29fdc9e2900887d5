/*
 * The runtime's figures per server, by name: its calls over the last
 * minute and since the start (window.h), and how often its instances
 * restarted. What the hub counts as calls end; shown by /metrics and
 * `mcpvisor top`. An entry is made on first use and keeps its address
 * until it is pruned, which never happens while a call of it is in flight.
 */
#ifndef MCPV_METRICS_H
#define MCPV_METRICS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct metrics;
struct metrics_server;

struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);

/* The figures of server name, made on first use (name is copied). O(1). */
struct metrics_server *metrics_server(struct metrics *m, const char *name);
/* The same, or NULL: makes nothing. */
struct metrics_server *metrics_find(const struct metrics *m, const char *name);

/* A call to the server started; it ended (at clock_now_us()), having
 * started at started_us (clock_now_us() then), failed or not. O(1). */
void metrics_call_begin(struct metrics_server *s);
void metrics_call_end(struct metrics_server *s, uint64_t started_us,
		      bool error);
/* One of the server's instances started again (not its first start). */
void metrics_restarted(struct metrics_server *s);

/* Drops the figures of every server for which keep(arg, name) is false
 * and that has no call in flight. */
void metrics_prune(struct metrics *m, bool (*keep)(void *arg, const char *name),
		   void *arg);

/* A server's figures at now_us, as JSON: inflight, calls, errors,
 * restarts (totals since the start), callsPerSecond, calls1m, errors1m,
 * p50Ms and p99Ms (over the last minute; absent without calls),
 * latencySeconds (sum since the start). New reference. */
json_t *metrics_server_json(const struct metrics_server *s, uint64_t now_us);

#endif
