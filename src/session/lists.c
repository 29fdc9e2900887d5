/*
 * A session's view of its servers' lists: the views over their
 * instances, the gather that starts what is needed to know them (and
 * answers with what it has once one slow server would hold the others),
 * the list requests with pagination, and list_changed when the view
 * changes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/filter.h"
#include "jsonrpc/jsonrpc.h"
#include "pool/pool.h"
#include "router/router.h"
#include "session/hub.h"
#include "session/hub_int.h"
#include "session/session_int.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* ---- views of the session's servers ---- */

const struct config_filter *session_filter_of(const struct server_config *srv,
					      enum instance_list which)
{
	switch (which) {
	case INSTANCE_TOOLS:
		return &srv->tools;
	case INSTANCE_PROMPTS:
		return &srv->prompts;
	default:
		/* Templates are resources to be: one filter for both. */
		return &srv->resources;
	}
}

void session_views_build(struct session *s, struct session_views *sv)
{
	struct pool_scope_ctx sc;
	session_scope_ctx(s, &sc);
	sv->n = 0;
	sv->servers = xcalloc(s->nsrv + 1, sizeof *sv->servers);
	sv->insts = xcalloc(s->nsrv + 1, sizeof *sv->insts);
	for (int w = 0; w < INSTANCE_NLISTS; w++)
		sv->v[w] = xcalloc(s->nsrv + 1, sizeof *sv->v[w]);
	for (size_t i = 0; i < s->nsrv; i++) {
		const struct server_config *srv = s->srv[i];
		if (!session_server_usable(srv))
			continue;
		struct instance *inst =
			pool_instance_find(hub_pool(s->hub), s->keys[i]);
		size_t k = sv->n++;
		sv->servers[k] = srv;
		sv->insts[k] = inst;
		for (int w = 0; w < INSTANCE_NLISTS; w++) {
			sv->v[w][k].prefix = srv->prefix;
			/* Without an instance, what the tool cache knows
			 * of a server this session alone would run. */
			sv->v[w][k].items =
				inst ? instance_list(inst,
						     (enum instance_list)w)
				     : pool_lists_offered(
					       hub_pool(s->hub), s->keys[i],
					       (enum instance_list)w);
			/* The model sees direct servers' tools and prompts;
			 * resources stay the client's to read, unless hidden
			 * servers should not show at all. */
			sv->v[w][k].visible =
				srv->exposure == EXPOSE_DIRECT ||
				(srv->exposure == EXPOSE_DEFERRED &&
				 (w == INSTANCE_RESOURCES ||
				  w == INSTANCE_TEMPLATES));
			/* Every list, search and route goes through these
			 * views: the one place a filter applies. */
			sv->v[w][k].filter =
				session_filter_of(srv, (enum instance_list)w);
		}
	}
}

bool session_notification_kept(struct session *s, struct instance *inst,
			       json_t *msg)
{
	if (strcmp(jr_method(msg), "notifications/resources/updated") != 0)
		return true;
	const struct server_config *srv =
		session_server(s, instance_name(inst));
	const char *uri =
		json_string_value(json_object_get(jr_params(msg), "uri"));
	return srv == NULL || config_filter_keeps(&srv->resources, uri);
}

void session_views_free(struct session_views *sv)
{
	free(sv->servers);
	free(sv->insts);
	for (int w = 0; w < INSTANCE_NLISTS; w++)
		free(sv->v[w]);
}

/* ---- gathering every server's list ---- */

/* A list across servers waits for the servers it had to start, but once
 * one of them (or one known before) has something to show, the others
 * get this long from the ask and no longer: one server that never
 * answers, or answers slowly, costs the others' tools nothing but this
 * wait. What comes later reaches the client as list_changed (its view
 * changed). With nothing to show yet, it waits for the first that has,
 * each bounded by its own startup timeout. */
#define SESSION_LIST_PATIENCE_MS 5000

struct gather {
	struct session *s;
	unsigned waiting;
	struct instance **held; /* instances leased during their start */
	size_t nheld;
	session_gather_done done; /* NULL once called */
	void *arg;
	bool patient; /* a list: answers with what it has, see above */
	bool offered; /* some server has a list to show */
	bool late;    /* the patience is over */
	bool timing;  /* timer initialised (closed before the free) */
	uv_timer_t timer;
};

static void session_gather_free(struct gather *g)
{
	session_unref(g->s);
	free(g->held);
	free(g);
}

static void session_gather_timer_close_cb(uv_handle_t *h)
{
	session_gather_free(h->data);
}

/* Answers (once), and goes once nothing is awaited any longer. */
static void session_gather_answer(struct gather *g)
{
	if (g->done) {
		session_gather_done done = g->done;
		g->done = NULL;
		done(g->s, g->arg);
	}
	if (g->waiting > 0)
		return;
	if (g->timing)
		uv_close((uv_handle_t *)&g->timer,
			 session_gather_timer_close_cb);
	else
		session_gather_free(g);
}

static void session_gather_timer_cb(uv_timer_t *t)
{
	struct gather *g = t->data;
	g->late = true;
	if (g->offered)
		session_gather_answer(g);
}

static void session_gather_ready_cb(void *arg, struct instance *inst, int err)
{
	struct gather *g = arg;
	/* A closed session holds no lease any more (its end let them go),
	 * and at the runtime's end its hub may be gone before the start it
	 * waited for is cancelled: nothing to release then. */
	for (size_t i = 0; inst && !g->s->closed && i < g->nheld; i++) {
		if (g->held[i] == inst) {
			pool_release(hub_pool(g->s->hub), inst, g->s->id);
			g->held[i] = g->held[--g->nheld];
			break;
		}
	}
	if (inst && err == 0)
		g->offered = true;
	if (--g->waiting == 0 || (g->late && g->offered))
		session_gather_answer(g);
}

/* Starts every usable server of the session that has no list yet, and
 * calls done once each is ready or failed, or (a list across servers)
 * once its patience is over and something can be shown. */
void session_gather(struct session *s, session_gather_done done, void *arg)
{
	session_gather_only(s, NULL, done, arg);
}

void session_gather_only(struct session *s, const struct server_config *only,
			 session_gather_done done, void *arg)
{
	struct pool_scope_ctx sc;
	session_scope_ctx(s, &sc);
	struct gather *g = xcalloc(1, sizeof *g);
	session_ref(s);
	g->s = s;
	g->done = done;
	g->arg = arg;
	/* A request for one server waits for that server. */
	g->patient = only == NULL;
	g->waiting = 1; /* held until every start is asked for */
	g->held = xcalloc(s->nsrv + 1, sizeof *g->held);
	struct pool *pool = hub_pool(s->hub);
	for (size_t i = 0; i < s->nsrv; i++) {
		const struct server_config *srv = s->srv[i];
		if ((only && srv != only) || !session_server_usable(srv) ||
		    pool_server_held_stopped(pool, srv->name))
			continue;
		/* Lists of a server of this session alone, known from the
		 * tool cache, need no instance until it is called. */
		if (pool_lists_known(pool, srv, &sc, s->keys[i])) {
			g->offered = true;
			continue;
		}
		struct instance *inst =
			pool_instance_for(pool, srv, &sc, s->keys[i]);
		enum instance_state st = instance_state(inst);
		if (st == INSTANCE_NEEDS_AUTH && !instance_signin_recheck(inst))
			continue;
		/* Lists known from an earlier run or from the tool cache are
		 * offered without starting anything: a dropped or idle server
		 * keeps offering what it had. */
		if (st == INSTANCE_READY || instance_lists_known(inst)) {
			g->offered = true;
			continue;
		}
		g->waiting++;
		pool_acquire(pool, inst, s->id);
		g->held[g->nheld++] = inst;
		instance_ensure(inst, session_gather_ready_cb, g);
	}
	if (g->patient && g->waiting > 1) {
		uv_timer_init(s->hub->loop, &g->timer);
		g->timer.data = g;
		g->timing = true;
		uv_timer_start(&g->timer, session_gather_timer_cb,
			       SESSION_LIST_PATIENCE_MS, 0);
	}
	session_gather_ready_cb(g, NULL, 0);
}

/* ---- list requests ---- */

struct list_req {
	struct exchange *ex;
	json_t *id;
	enum instance_list which;
	char *cursor;
};

static const char *const session_list_keys[INSTANCE_NLISTS] = {
	"tools", "prompts", "resources", "resourceTemplates"};

/* The two tools that stand for every deferred server's tools. */
static void session_add_deferred_tools(json_t *all)
{
	json_array_append_new(
		all,
		json_pack("{s:s,s:s,s:{s:s,s:{s:{s:s,s:s},s:{s:s}},s:[s]}}",
			  "name", SESSION_FIND_TOOL, "description",
			  "Search the tools that are not listed here by words "
			  "and get their names and input schemas; then call "
			  "one with " SESSION_CALL_TOOL ".",
			  "inputSchema", "type", "object", "properties",
			  "query", "type", "string", "description",
			  "words to look for in tool names and descriptions",
			  "limit", "type", "integer", "required", "query"));
	json_array_append_new(
		all, json_pack("{s:s,s:s,s:{s:s,s:{s:{s:s},s:{s:s}},s:[s]}}",
			       "name", SESSION_CALL_TOOL, "description",
			       "Call a tool found with " SESSION_FIND_TOOL
			       " by its name, with its arguments.",
			       "inputSchema", "type", "object", "properties",
			       "name", "type", "string", "arguments", "type",
			       "object", "required", "name"));
}

json_t *session_aggregate(struct session *s, enum instance_list which)
{
	struct session_views sv;
	session_views_build(s, &sv);
	json_t *all = router_aggregate(sv.v[which], sv.n, which);
	session_views_free(&sv);
	if (which == INSTANCE_TOOLS && session_has_deferred(s))
		session_add_deferred_tools(all);
	return all;
}

struct find_req {
	struct exchange *ex;
	json_t *id;
	char *query;
	size_t limit;
};

/* How many of the query's words a tool's name and description hold. */
static int session_find_score(const char *query, const char *name,
			      const char *desc)
{
	int score = 0;
	char *q = xstrdup(query);
	for (char *w = strtok(q, " \t,.;:"); w; w = strtok(NULL, " \t,.;:")) {
		if (strcasestr(name, w))
			score += 2;
		else if (desc && strcasestr(desc, w))
			score += 1;
	}
	free(q);
	return score;
}

static void session_find_answer(struct session *s, void *arg)
{
	struct find_req *fr = arg;
	if (!s->closed) {
		struct session_views sv;
		session_views_build(s, &sv);
		json_t *found = json_array();
		for (int want = 64;
		     want > 0 && json_array_size(found) < fr->limit; want--) {
			for (size_t i = 0; i < sv.n; i++) {
				if (sv.servers[i]->exposure != EXPOSE_DEFERRED)
					continue;
				size_t k;
				json_t *t;
				json_array_foreach(
					sv.v[INSTANCE_TOOLS][i].items, k, t)
				{
					const char *n = json_string_value(
						json_object_get(t, "name"));
					const char *d = json_string_value(
						json_object_get(t,
								"description"));
					if (n == NULL ||
					    json_array_size(found) >=
						    fr->limit ||
					    !router_keeps(
						    &sv.v[INSTANCE_TOOLS][i],
						    INSTANCE_TOOLS, t))
						continue;
					char *full = router_exposed_name(
						sv.servers[i]->prefix, n);
					if (session_find_score(fr->query, full,
							       d) == want) {
						json_t *c = json_copy(t);
						json_object_set_new(
							c, "name",
							json_string(full));
						json_array_append_new(found, c);
					}
					free(full);
				}
			}
		}
		session_views_free(&sv);
		char *text = json_dumps(found, JSON_INDENT(1));
		json_t *result = json_pack("{s:[{s:s,s:s}],s:{s:o}}", "content",
					   "type", "text", "text", text,
					   "structuredContent", "tools", found);
		free(text);
		session_reply(fr->ex, fr->id, result);
	}
	exchange_unref(fr->ex);
	json_decref(fr->id);
	free(fr->query);
	free(fr);
}

void session_find_deferred(struct session *s, json_t *id, json_t *args,
			   struct exchange *ex)
{
	const char *q = json_string_value(json_object_get(args, "query"));
	if (q == NULL) {
		session_reply_error(ex, id, JR_INVALID_PARAMS,
				    SESSION_FIND_TOOL " needs arguments.query "
						      "(a string)",
				    NULL);
		return;
	}
	json_int_t limit = json_integer_value(json_object_get(args, "limit"));
	struct find_req *fr = xcalloc(1, sizeof *fr);
	fr->ex = ex;
	exchange_ref(ex);
	fr->id = json_incref(id);
	fr->query = xstrndup(q, 1024);
	fr->limit =
		limit > 0 && limit <= 100 ? (size_t)limit : SESSION_FIND_LIMIT;
	session_gather(s, session_find_answer, fr);
}

static void session_list_answer(struct session *s, void *arg)
{
	struct list_req *lr = arg;
	if (s->closed) {
		exchange_unref(lr->ex);
		json_decref(lr->id);
		free(lr->cursor);
		free(lr);
		return;
	}
	json_t *all = session_aggregate(s, lr->which);
	json_t *page = NULL;
	char *next = NULL;
	if (router_paginate(all, lr->cursor, hub_page_size(s->hub), &page,
			    &next) < 0) {
		session_reply_error(lr->ex, lr->id, JR_INVALID_PARAMS,
				    "Invalid cursor: it was not made by this "
				    "runtime, or the list changed",
				    NULL);
	} else {
		json_t *result = json_object();
		json_object_set_new(result, session_list_keys[lr->which], page);
		if (next)
			json_object_set_new(result, "nextCursor",
					    json_string(next));
		session_reply(lr->ex, lr->id, result);
		if (lr->cursor == NULL) {
			json_decref(s->seen[lr->which]);
			s->seen[lr->which] = json_incref(all);
		}
	}
	free(next);
	json_decref(all);
	exchange_unref(lr->ex);
	json_decref(lr->id);
	free(lr->cursor);
	free(lr);
}

void session_list(struct session *s, json_t *id, json_t *params,
		  enum instance_list which, struct exchange *ex)
{
	json_t *cursor = json_object_get(params, "cursor");
	if (cursor && !json_is_string(cursor)) {
		session_reply_error(ex, id, JR_INVALID_PARAMS,
				    "\"cursor\" must be a string", NULL);
		return;
	}
	struct list_req *lr = xcalloc(1, sizeof *lr);
	lr->ex = ex;
	exchange_ref(ex);
	lr->id = json_incref(id);
	lr->which = which;
	lr->cursor = cursor ? xstrdup(json_string_value(cursor)) : NULL;
	session_gather(s, session_list_answer, lr);
}

/* Templates change with resources: one notification covers both. */
static const char *const session_list_notes[INSTANCE_NLISTS] = {
	"notifications/tools/list_changed",
	"notifications/prompts/list_changed",
	"notifications/resources/list_changed", NULL};

/* Tells the client list w changed; it lists again, and until then no
 * further notice is repeated. */
static void session_list_tell(struct session *s, int w)
{
	json_decref(s->seen[w]);
	s->seen[w] = NULL;
	json_t *msg = jr_notification(session_list_notes[w], NULL);
	session_notify(s, msg);
	json_decref(msg);
}

void session_lists_reset(struct session *s)
{
	for (int w = 0; w < INSTANCE_NLISTS; w++)
		if (s->seen[w] && session_list_notes[w])
			session_list_tell(s, w);
}

void session_lists_prime(struct session *s)
{
	for (int w = 0; w < INSTANCE_NLISTS; w++)
		if (s->seen[w] == NULL && session_list_notes[w])
			s->seen[w] =
				session_aggregate(s, (enum instance_list)w);
}

void session_lists_changed(struct session *s, struct instance *inst)
{
	for (int w = 0; w < INSTANCE_NLISTS; w++) {
		if (s->seen[w] == NULL || session_list_notes[w] == NULL)
			continue;
		json_t *now = session_aggregate(s, (enum instance_list)w);
		bool same = json_equal(now, s->seen[w]);
		json_decref(now);
		if (!same)
			session_list_tell(s, w);
	}
}

char *session_instructions(struct session *s)
{
	struct pool_scope_ctx sc;
	session_scope_ctx(s, &sc);
	struct buf b;
	buf_init(&b);
	buf_puts(&b, "mcpvisor runs this host's MCP servers; tools are named "
		     "server__tool.");
	for (size_t i = 0; i < s->nsrv; i++) {
		const struct server_config *srv = s->srv[i];
		if (!session_server_usable(srv) ||
		    srv->exposure == EXPOSE_HIDDEN)
			continue;
		const char *text = pool_instructions(hub_pool(s->hub), srv, &sc,
						     s->keys[i]);
		if (text && text[0])
			buf_printf(&b, "\n\n%s: %s", srv->name, text);
	}
	return buf_steal(&b);
}
