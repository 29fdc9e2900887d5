/*
 * What /metrics and `mcpvisor top` show: each server's figures (its calls
 * as counted in metrics/, its instances' states and sessions, the memory
 * of the processes they own) and the runtime's. Memory comes from /proc,
 * read by a thread-pool job so the loop never waits on it.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics/metrics.h"
#include "metrics/procmem.h"
#include "session/hub.h"
#include "session/hub_int.h"
#include "session/session_int.h"
#include "util/clock.h"
#include "util/xmalloc.h"

struct hub_metrics_req {
	uv_work_t work;
	struct hub *hub; /* NULL once the hub is gone */
	struct hub_metrics_req *next;
	bool cancelled;
	hub_metrics_cb cb;
	void *arg;
	/* What the job reads: each owned process group and its server. */
	size_t n, cap;
	pid_t *groups;
	char **names;
	uint64_t *rss;
	uint64_t self_rss;
};

/* How a server's instances stand together: the liveliest state wins, so
 * one running instance among failed ones reads "running". */
static int hub_metrics_rank(const char *state)
{
	static const char *const order[] = {
		"stopped",  "failed", "needs_auth", "stopping",
		"starting", "idle",   "running"};
	for (int i = 0; i < (int)(sizeof order / sizeof order[0]); i++)
		if (strcmp(order[i], state) == 0)
			return i;
	return -1;
}

struct hub_metrics_walk {
	struct hub *hub;
	const char *name;
	size_t instances, sessions;
	const char *state;
};

static void hub_metrics_inst_cb(void *arg, struct instance *inst)
{
	struct hub_metrics_walk *w = arg;
	if (strcmp(instance_name(inst), w->name) != 0)
		return;
	enum instance_state st = instance_state(inst);
	json_t *p = pool_describe(w->hub->pool, inst);
	const char *state = instance_state_name(st);
	/* As status says it: running, but nobody holds it. */
	if (st == INSTANCE_READY &&
	    json_integer_value(json_object_get(p, "holders")) == 0 &&
	    instance_inflight(inst) == 0)
		state = "idle";
	if (st != INSTANCE_STOPPED)
		w->instances++;
	w->sessions += json_array_size(json_object_get(p, "members"));
	json_decref(p);
	if (w->state == NULL ||
	    hub_metrics_rank(state) > hub_metrics_rank(w->state))
		w->state = state;
}

/* The server's config: the global one's, else a session's space's. */
static const struct server_config *hub_metrics_config(struct hub *hub,
						      const char *name)
{
	const struct server_config *sv = config_find(hub->cfg, name);
	for (struct hub_entry *e = hub->sessions; e && !sv; e = e->next)
		if (e->s->space_cfg)
			sv = config_find(e->s->space_cfg, name);
	return sv;
}

static json_t *hub_metrics_server(struct hub *hub, const char *name,
				  const json_t *rss, uint64_t now_us)
{
	const struct server_config *sv = hub_metrics_config(hub, name);
	struct hub_metrics_walk w = {.hub = hub, .name = name};
	pool_foreach(hub->pool, hub_metrics_inst_cb, &w);
	const char *state = w.state;
	if (sv && sv->error)
		state = "error";
	else if (sv && sv->disabled)
		state = "disabled";
	else if (pool_server_held_stopped(hub->pool, name))
		state = "stopped";
	else if (state == NULL || strcmp(state, "stopped") == 0)
		state = "not running";
	struct metrics_server *ms = metrics_find(hub->metrics, name);
	json_t *o =
		ms ? metrics_server_json(ms, now_us)
		   : json_pack("{s:i,s:i,s:i,s:i,s:f,s:i,s:i,s:f}", "inflight",
			       0, "calls", 0, "errors", 0, "restarts", 0,
			       "callsPerSecond", 0.0, "calls1m", 0, "errors1m",
			       0, "latencySeconds", 0.0);
	json_object_set_new(o, "name", json_string(name));
	json_object_set_new(o, "state", json_string(state));
	json_object_set_new(
		o, "scope",
		json_string(sv ? config_scope_name(sv->scope) : "session"));
	json_object_set_new(o, "instances",
			    json_integer((json_int_t)w.instances));
	json_object_set_new(o, "sessions",
			    json_integer((json_int_t)w.sessions));
	json_t *bytes = json_object_get(rss, name);
	json_object_set_new(o, "rssBytes",
			    json_integer(json_is_integer(bytes)
						 ? json_integer_value(bytes)
						 : 0));
	return o;
}

struct hub_metrics_names {
	json_t *seen; /* name -> true */
	json_t *order;
};

static void hub_metrics_add_name(struct hub_metrics_names *nm, const char *name)
{
	if (json_object_get(nm->seen, name))
		return;
	json_object_set_new(nm->seen, name, json_true());
	json_array_append_new(nm->order, json_string(name));
}

static void hub_metrics_name_cb(void *arg, struct instance *inst)
{
	hub_metrics_add_name(arg, instance_name(inst));
}

/* Figures are kept for servers some config names or an instance runs;
 * the others' go (a server removed by a reload). */
static bool hub_metrics_keep_cb(void *arg, const char *name)
{
	struct hub_metrics_names *nm = arg;
	return json_object_get(nm->seen, name) != NULL;
}

json_t *hub_metrics(struct hub *hub, const json_t *rss, uint64_t self_rss)
{
	uint64_t now_us = clock_now_us();
	struct hub_metrics_names nm = {json_object(), json_array()};
	for (size_t i = 0; i < hub->cfg->nservers; i++)
		hub_metrics_add_name(&nm, hub->cfg->servers[i].name);
	pool_foreach(hub->pool, hub_metrics_name_cb, &nm);
	/* A space's server that ran and is idle now: its figures stay
	 * while one of its sessions still has it in its config. */
	for (struct hub_entry *e = hub->sessions; e; e = e->next) {
		const struct config *sc = e->s->space_cfg;
		for (size_t i = 0; sc && i < sc->nservers; i++)
			if (sc->servers[i].untrusted == NULL &&
			    metrics_find(hub->metrics, sc->servers[i].name))
				hub_metrics_add_name(&nm, sc->servers[i].name);
	}
	metrics_prune(hub->metrics, hub_metrics_keep_cb, &nm);
	json_t *servers = json_array();
	size_t i;
	json_t *n;
	json_array_foreach(nm.order, i, n)
	{
		json_array_append_new(
			servers, hub_metrics_server(hub, json_string_value(n),
						    rss, now_us));
	}
	json_decref(nm.seen);
	json_decref(nm.order);
	json_t *fig = json_pack("{s:{s:I,s:I,s:I},s:o}", "runtime", "pid",
				(json_int_t)getpid(), "rssBytes",
				(json_int_t)self_rss, "sessions",
				(json_int_t)hub->nsessions, "servers", servers);
	/* As status says it: top shows it too. */
	if (hub->reload_error)
		json_object_set_new(
			fig, "reloadError",
			json_pack("{s:s,s:I}", "message", hub->reload_error,
				  "at", (json_int_t)hub->reload_error_at));
	return fig;
}

/* ---- the memory read, off the loop ---- */

/* The process its instance runs leads its own session and group (the
 * supervisor starts it so), so that group is what the server owns. */
static void hub_metrics_group_cb(void *arg, struct instance *inst)
{
	struct hub_metrics_req *r = arg;
	pid_t pid = instance_pid(inst);
	if (pid <= 0 || r->n >= PROCMEM_MAX_GROUPS)
		return;
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 16;
		r->groups = xrealloc(r->groups, r->cap * sizeof *r->groups);
		r->names = xrealloc(r->names, r->cap * sizeof *r->names);
	}
	r->groups[r->n] = pid;
	r->names[r->n] = xstrdup(instance_name(inst));
	r->n++;
}

/* In a thread-pool thread: only /proc and the request's own arrays. */
static void hub_metrics_work_cb(uv_work_t *w)
{
	struct hub_metrics_req *r = w->data;
	r->rss = xcalloc(r->n ? r->n : 1, sizeof *r->rss);
	(void)procmem_groups_rss(r->groups, r->n, r->rss);
	r->self_rss = procmem_self_rss();
}

static void hub_metrics_req_free(struct hub_metrics_req *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->names[i]);
	free(r->names);
	free(r->groups);
	free(r->rss);
	free(r);
}

static void hub_metrics_unlink(struct hub_metrics_req *r)
{
	if (r->hub == NULL)
		return;
	struct hub_metrics_req **pp = &r->hub->metrics_reqs;
	while (*pp != r)
		pp = &(*pp)->next;
	*pp = r->next;
}

static void hub_metrics_after_cb(uv_work_t *w, int status)
{
	struct hub_metrics_req *r = w->data;
	hub_metrics_unlink(r);
	if (r->hub && !r->cancelled) {
		json_t *rss = json_object();
		for (size_t i = 0; r->rss && i < r->n; i++) {
			json_t *had = json_object_get(rss, r->names[i]);
			json_object_set_new(
				rss, r->names[i],
				json_integer(json_integer_value(had) +
					     (json_int_t)r->rss[i]));
		}
		json_t *fig = hub_metrics(r->hub, rss, r->self_rss);
		json_decref(rss);
		r->cb(r->arg, fig);
		json_decref(fig);
	}
	hub_metrics_req_free(r);
}

struct hub_metrics_req *hub_metrics_async(struct hub *hub, hub_metrics_cb cb,
					  void *arg)
{
	struct hub_metrics_req *r = xcalloc(1, sizeof *r);
	r->hub = hub;
	r->cb = cb;
	r->arg = arg;
	pool_foreach(hub->pool, hub_metrics_group_cb, r);
	r->work.data = r;
	if (uv_queue_work(hub->loop, &r->work, hub_metrics_work_cb,
			  hub_metrics_after_cb) < 0) {
		hub_metrics_req_free(r);
		json_t *fig = hub_metrics(hub, NULL, procmem_self_rss());
		cb(arg, fig);
		json_decref(fig);
		return NULL;
	}
	r->next = hub->metrics_reqs;
	hub->metrics_reqs = r;
	return r;
}

void hub_metrics_cancel(struct hub_metrics_req *r)
{
	if (r)
		r->cancelled = true;
}

void hub_metrics_orphan(struct hub *hub)
{
	while (hub->metrics_reqs) {
		struct hub_metrics_req *r = hub->metrics_reqs;
		hub->metrics_reqs = r->next;
		r->hub = NULL;
	}
}
