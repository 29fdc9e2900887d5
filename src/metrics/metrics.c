/*
 * Figures per server by name: a map for the hot path's lookup, a list for
 * walks in the order servers were first seen (metrics.h).
 */
#include "metrics/metrics.h"

#include <stdlib.h>

#include "metrics/window.h"
#include "util/clock.h"
#include "util/keymap.h"
#include "util/xmalloc.h"

struct metrics_server {
	struct metrics_server *next;
	char *name;
	struct window win;
	uint64_t restarts;
};

struct metrics {
	struct keymap by_name; /* name (the entry's own) -> entry */
	struct metrics_server *first, **tail;
};

struct metrics *metrics_new(void)
{
	struct metrics *m = xcalloc(1, sizeof *m);
	keymap_init(&m->by_name);
	m->tail = &m->first;
	return m;
}

void metrics_free(struct metrics *m)
{
	if (m == NULL)
		return;
	keymap_free(&m->by_name);
	while (m->first) {
		struct metrics_server *s = m->first;
		m->first = s->next;
		free(s->name);
		free(s);
	}
	free(m);
}

struct metrics_server *metrics_find(const struct metrics *m, const char *name)
{
	return keymap_get(&m->by_name, name);
}

struct metrics_server *metrics_server(struct metrics *m, const char *name)
{
	struct metrics_server *s = keymap_get(&m->by_name, name);
	if (s)
		return s;
	s = xcalloc(1, sizeof *s);
	s->name = xstrdup(name);
	window_init(&s->win);
	*m->tail = s;
	m->tail = &s->next;
	keymap_put(&m->by_name, s->name, s);
	return s;
}

void metrics_call_begin(struct metrics_server *s)
{
	window_begin(&s->win);
}

void metrics_call_end(struct metrics_server *s, uint64_t started_us, bool error)
{
	window_end(&s->win, started_us, clock_now_us(), error);
}

void metrics_restarted(struct metrics_server *s)
{
	s->restarts++;
}

void metrics_prune(struct metrics *m, bool (*keep)(void *arg, const char *name),
		   void *arg)
{
	struct metrics_server **pp = &m->first;
	while (*pp) {
		struct metrics_server *s = *pp;
		if (s->win.inflight > 0 || keep(arg, s->name)) {
			pp = &s->next;
			continue;
		}
		*pp = s->next;
		keymap_del(&m->by_name, s->name);
		free(s->name);
		free(s);
	}
	m->tail = pp;
}

/* Milliseconds with microsecond precision, as JSON carries them. */
static json_t *metrics_ms(uint64_t us)
{
	return json_real((double)us / 1000.0);
}

json_t *metrics_server_json(const struct metrics_server *s, uint64_t now_us)
{
	struct window_view v;
	window_read(&s->win, now_us, &v);
	json_t *o = json_pack("{s:I,s:I,s:I,s:I,s:f,s:I,s:I,s:f}", "inflight",
			      (json_int_t)v.inflight, "calls",
			      (json_int_t)v.calls_total, "errors",
			      (json_int_t)v.errors_total, "restarts",
			      (json_int_t)s->restarts, "callsPerSecond", v.rate,
			      "calls1m", (json_int_t)v.calls_minute, "errors1m",
			      (json_int_t)v.errors_minute, "latencySeconds",
			      (double)v.latency_us_total / 1e6);
	if (v.calls_minute > 0) {
		json_object_set_new(o, "p50Ms", metrics_ms(v.p50_us));
		json_object_set_new(o, "p99Ms", metrics_ms(v.p99_us));
	}
	return o;
}
