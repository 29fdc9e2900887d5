/*
 * What the hub tells of its servers' names: the names each server offers
 * before its filters (for status and `mcpvisor check`), and tool names
 * too long for hosts, in status and in the log.
 */
#include <stdlib.h>
#include <string.h>

#include "config/filter.h"
#include "router/router.h"
#include "session/hub_int.h"
#include "session/session_int.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* The capabilities a session advertises for a client that can answer
 * neither sampling nor elicitation (session.c): the tool cache's name for
 * what such a client sees. */
#define HUB_NAMES_CAPS "{\"roots\":{\"listChanged\":true}}"

static const char *const hub_names_lists_keys[INSTANCE_NLISTS] = {
	"tools", "prompts", "resources", "resourceTemplates"};

/* The server an instance runs for: the global config's, else the first
 * session's that names it (a server only a space's file has). */
static const struct server_config *hub_names_server(struct hub *hub,
						    const char *name)
{
	const struct server_config *sv = config_find(hub->cfg, name);
	for (struct hub_entry *e = hub->sessions; e && sv == NULL; e = e->next)
		sv = session_server(e->s, name);
	return sv;
}

/* The view of inst's tools a client of sv sees; a server not shown by
 * name (hidden, deferred) has no names a host could refuse. */
static bool hub_names_view(const struct server_config *sv,
			   struct instance *inst, struct router_view *v)
{
	json_t *tools = instance_list(inst, INSTANCE_TOOLS);
	if (sv->exposure != EXPOSE_DIRECT || tools == NULL)
		return false;
	*v = (struct router_view){sv->prefix, tools, true, &sv->tools};
	return true;
}

static void hub_names_note_cb(void *arg, struct instance *inst)
{
	hub_names_note(arg, inst);
}

void hub_names_note(struct hub *hub, struct instance *inst)
{
	const char *name = instance_name(inst);
	const struct server_config *sv = hub_names_server(hub, name);
	struct router_view v;
	if (sv == NULL || !hub_names_view(sv, inst, &v))
		return;
	size_t longest;
	json_t *long_names = router_long_names(&v, &longest);
	char *text = json_dumps(long_names, JSON_COMPACT);
	/* Once per change, not per instance or per list_changed. */
	if (hub->long_names == NULL)
		hub->long_names = json_object();
	const char *before =
		json_string_value(json_object_get(hub->long_names, name));
	bool same = before ? strcmp(before, text) == 0
			   : json_array_size(long_names) == 0;
	if (!same) {
		json_object_set_new(hub->long_names, name, json_string(text));
		if (json_array_size(long_names)) {
			char *advice = router_long_names_advice(
				name, sv->prefix, long_names, longest);
			log_warn("%s", advice);
			free(advice);
		}
	}
	free(text);
	json_decref(long_names);
}

void hub_names_recheck(struct hub *hub)
{
	pool_foreach(hub->pool, hub_names_note_cb, hub);
}

struct hub_names_find {
	const char *name;
	struct instance *inst;
};

static void hub_names_find_cb(void *arg, struct instance *inst)
{
	struct hub_names_find *f = arg;
	if (f->inst == NULL && strcmp(instance_name(inst), f->name) == 0 &&
	    instance_list(inst, INSTANCE_TOOLS) != NULL)
		f->inst = inst;
}

/* Each item's own name (or uri) in list which. */
static json_t *hub_names_of(json_t *items, enum instance_list which)
{
	static const char *const keys[INSTANCE_NLISTS] = {"name", "name", "uri",
							  "uriTemplate"};
	json_t *out = json_array();
	size_t i;
	json_t *item;
	json_array_foreach(items, i, item)
	{
		json_t *n = json_object_get(item, keys[which]);
		if (json_is_string(n))
			json_array_append(out, n);
	}
	return out;
}

/* sv's lists as an object of "tools", "prompts", ... (new reference):
 * its first instance's that knows them, else the tool cache's for a
 * client that can answer neither sampling nor elicitation (what the CLI
 * and most hosts are); NULL when neither knows them. */
static json_t *hub_names_lists(struct hub *hub, const struct server_config *sv)
{
	struct hub_names_find f = {sv->name, NULL};
	pool_foreach(hub->pool, hub_names_find_cb, &f);
	if (f.inst)
		return instance_lists_json(f.inst);
	struct pool_scope_ctx sc = {.app_dir = hub->app_dir,
				    .client_caps_json = HUB_NAMES_CAPS};
	json_t *cached = pool_lists_cached(hub->pool, sv, &sc);
	return cached ? json_incref(cached) : NULL;
}

void hub_status_names(struct hub *hub, const struct server_config *sv,
		      json_t *o, enum hub_status_detail detail)
{
	json_t *lists = hub_names_lists(hub, sv);
	if (lists == NULL)
		return;
	/* What the server offers, before filters: what `check` applies a
	 * filter to. Not over TCP, where nothing filtered should show. */
	if (detail != HUB_STATUS_PUBLIC) {
		json_t *offered = json_object();
		for (int w = 0; w < INSTANCE_NLISTS; w++) {
			json_t *items =
				json_object_get(lists, hub_names_lists_keys[w]);
			if (json_is_array(items))
				json_object_set_new(
					offered, hub_names_lists_keys[w],
					hub_names_of(items,
						     (enum instance_list)w));
		}
		json_object_set_new(o, "offered", offered);
	}
	json_t *tools = json_object_get(lists, "tools");
	if (sv->exposure == EXPOSE_DIRECT && json_is_array(tools)) {
		struct router_view v = {sv->prefix, tools, true, &sv->tools};
		size_t longest;
		json_t *long_names = router_long_names(&v, &longest);
		if (json_array_size(long_names)) {
			char *advice = router_long_names_advice(
				sv->name, sv->prefix, long_names, longest);
			json_object_set(o, "longToolNames", long_names);
			json_object_set_new(o, "longToolNamesAdvice",
					    json_string(advice));
			free(advice);
		}
		json_decref(long_names);
	}
	json_decref(lists);
}
