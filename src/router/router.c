/* Aggregated lists, prefixed names and the names two servers give,
 * routing back, and pagination. */
#include "router/router.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/filter.h"
#include "instance/listindex.h"
#include "util/buf.h"
#include "util/xmalloc.h"

/* Every kind of item is named by "name"; resources are also told
 * apart by "uri". */
static const char *router_name_key(enum instance_list which)
{
	(void)which;
	return "name";
}

char *router_exposed_name(const char *prefix, const char *name)
{
	if (prefix == NULL || prefix[0] == '\0')
		return xstrdup(name);
	return xasprintf("%s" ROUTER_SEP "%s", prefix, name);
}

/* What a filter matches an item of list which by. */
static const char *router_filter_key(enum instance_list which)
{
	switch (which) {
	case INSTANCE_RESOURCES:
		return "uri";
	case INSTANCE_TEMPLATES:
		return "uriTemplate";
	default:
		return "name";
	}
}

bool router_keeps(const struct router_view *v, enum instance_list which,
		  const json_t *item)
{
	if (v->filter == NULL || !config_filter_active(v->filter))
		return true;
	const char *text = json_string_value(
		json_object_get(item, router_filter_key(which)));
	return config_filter_keeps(v->filter, text);
}

/* The first item of v's list which whose key is value and that v keeps,
 * or NULL; through ix when it indexes v's items by that key. */
static json_t *router_view_find(const struct router_view *v,
				const struct listindex *ix,
				enum instance_list which, const char *key,
				const char *value)
{
	const char *by = listindex_key(which);
	if (listindex_of(ix, v->items) && by && strcmp(by, key) == 0) {
		/* The index has the first item of the key. A filter matches
		 * tools and prompts by name and resources by uri, the key
		 * itself: what it keeps of one it keeps of all that share
		 * it, so the first is the walk's answer too. */
		json_t *item = listindex_find(ix, value);
		return item && router_keeps(v, which, item) ? item : NULL;
	}
	size_t i;
	json_t *item;
	json_array_foreach(v->items, i, item)
	{
		const char *s = json_string_value(json_object_get(item, key));
		if (s && strcmp(s, value) == 0 && router_keeps(v, which, item))
			return item;
	}
	return NULL;
}

/* name without v's prefix and separator, or NULL when it does not carry
 * them (a view without a prefix takes every name as is). */
static const char *router_unprefixed(const struct router_view *v,
				     const char *name)
{
	size_t plen = strlen(v->prefix);
	if (plen == 0)
		return name;
	if (strncmp(name, v->prefix, plen) != 0 ||
	    strncmp(name + plen, ROUTER_SEP, strlen(ROUTER_SEP)) != 0)
		return NULL;
	return name + plen + strlen(ROUTER_SEP);
}

/* Tools and prompts are called by the name clients see: two servers that
 * give one name make it no one's. */
static bool router_routed_by_name(enum instance_list which)
{
	return which == INSTANCE_TOOLS || which == INSTANCE_PROMPTS;
}

json_t *router_collisions(const struct router_view *views, size_t n,
			  enum instance_list which)
{
	json_t *out = json_object();
	size_t shown = 0;
	for (size_t v = 0; v < n; v++)
		shown += views[v].visible && views[v].items != NULL;
	if (!router_routed_by_name(which) || shown < 2)
		return out;
	/* The first view that gives each name, by hash: linear. */
	json_t *owner = json_object();
	for (size_t v = 0; v < n; v++) {
		if (!views[v].visible || views[v].items == NULL)
			continue;
		size_t i;
		json_t *item;
		json_array_foreach(views[v].items, i, item)
		{
			const char *name = json_string_value(
				json_object_get(item, "name"));
			if (name == NULL ||
			    !router_keeps(&views[v], which, item))
				continue;
			char *exposed =
				router_exposed_name(views[v].prefix, name);
			json_t *first = json_object_get(owner, exposed);
			if (first == NULL) {
				json_object_set_new(
					owner, exposed,
					json_integer((json_int_t)v));
			} else if (json_integer_value(first) != (json_int_t)v) {
				json_t *by = json_object_get(out, exposed);
				if (by == NULL) {
					by = json_array();
					json_array_append(by, first);
					json_object_set_new(out, exposed, by);
				}
				/* A server that lists a name twice is
				 * still one server. */
				json_int_t last =
					json_integer_value(json_array_get(
						by, json_array_size(by) - 1));
				if (last != (json_int_t)v)
					json_array_append_new(
						by,
						json_integer((json_int_t)v));
			}
			free(exposed);
		}
	}
	json_decref(owner);
	return out;
}

json_t *router_aggregate(const struct router_view *views, size_t n,
			 enum instance_list which)
{
	json_t *out = json_array();
	/* Names (or uris) already taken, by hash, each to its place in out:
	 * each item is checked once, not against every item before it. */
	json_t *taken = json_object();
	/* By place in out: the view it came from, and whether another view
	 * gives its name too (then it goes, at the end). */
	size_t *from = NULL, cap = 0;
	bool *gone = NULL, any_gone = false;
	const char *key = router_name_key(which);
	bool by_uri = which == INSTANCE_RESOURCES;
	bool by_name = router_routed_by_name(which);
	for (size_t v = 0; v < n; v++) {
		if (!views[v].visible || views[v].items == NULL)
			continue;
		size_t i;
		json_t *item;
		json_array_foreach(views[v].items, i, item)
		{
			const char *name =
				json_string_value(json_object_get(item, key));
			if (name == NULL ||
			    !router_keeps(&views[v], which, item))
				continue;
			char *exposed =
				router_exposed_name(views[v].prefix, name);
			/* Resources are told apart by uri, the rest by
			 * name: the first owner of either keeps it, but a
			 * tool or prompt name two servers give is no
			 * one's. */
			const char *uri =
				json_string_value(json_object_get(item, "uri"));
			const char *id = by_uri ? uri : exposed;
			json_t *at = id ? json_object_get(taken, id) : NULL;
			if (at != NULL) {
				size_t k = (size_t)json_integer_value(at);
				if (by_name && from[k] != v) {
					gone[k] = true;
					any_gone = true;
				}
				free(exposed);
				continue;
			}
			size_t k = json_array_size(out);
			if (k == cap) {
				cap = cap ? 2 * cap : 64;
				from = xrealloc(from, cap * sizeof *from);
				gone = xrealloc(gone, cap * sizeof *gone);
			}
			from[k] = v;
			gone[k] = false;
			json_t *copy = json_copy(item);
			json_object_set_new(copy, key, json_string(exposed));
			json_array_append_new(out, copy);
			if (id)
				json_object_set_new(
					taken, id, json_integer((json_int_t)k));
			free(exposed);
		}
	}
	if (any_gone) {
		json_t *kept = json_array();
		for (size_t k = 0; k < json_array_size(out); k++)
			if (!gone[k])
				json_array_append(kept, json_array_get(out, k));
		json_decref(out);
		out = kept;
	}
	free(from);
	free(gone);
	json_decref(taken);
	return out;
}

json_t *router_view_item(const struct router_view *v,
			 const struct listindex *ix, enum instance_list which,
			 const char *name, const char **orig)
{
	const char *rest = v->items ? router_unprefixed(v, name) : NULL;
	json_t *item = rest ? router_view_find(v, ix, which,
					       router_name_key(which), rest)
			    : NULL;
	if (item)
		*orig = rest;
	return item;
}

/* Whether v's known list which holds exposed name (and v keeps it); *orig
 * gets the name the server knows. */
static bool router_view_claims(const struct router_view *v,
			       enum instance_list which, const char *name,
			       const char **orig)
{
	return router_view_item(v, NULL, which, name, orig) != NULL;
}

int router_resolve(const struct router_view *views, size_t n,
		   enum instance_list which, const char *name, bool visible,
		   const char **orig)
{
	int found = -1;
	for (size_t v = 0; v < n; v++) {
		const char *rest;
		if (views[v].visible != visible ||
		    !router_view_claims(&views[v], which, name, &rest))
			continue;
		/* Two servers give the name: calling either would be a
		 * guess (and which one a list showed, another). */
		if (found >= 0 && router_routed_by_name(which))
			return ROUTER_AMBIGUOUS;
		if (found < 0) {
			found = (int)v;
			*orig = rest;
		}
	}
	if (found >= 0)
		return found;
	/* Not among the known lists: a server whose prefix fits and whose
	 * list is not known yet may have it, unless its filter drops the
	 * name (which then never reaches it, even should its list stay
	 * unknown). Only one such server: of two, the known lists decide
	 * once learnt. */
	const char *rest = NULL;
	for (size_t v = 0; v < n; v++) {
		if (views[v].items != NULL || views[v].visible != visible ||
		    views[v].prefix[0] == '\0')
			continue;
		const char *r = router_unprefixed(&views[v], name);
		if (r == NULL || *r == '\0' ||
		    (views[v].filter != NULL &&
		     !config_filter_keeps(views[v].filter, r)))
			continue;
		if (found >= 0)
			return -1;
		found = (int)v;
		rest = r;
	}
	if (found >= 0)
		*orig = rest;
	return found;
}

char *router_collision_text(const struct router_view *views,
			    const struct server_config *const *servers,
			    size_t n, enum instance_list which,
			    const char *name, bool visible)
{
	struct buf b;
	buf_init(&b);
	const char *what = which == INSTANCE_PROMPTS ? "prompt" : "tool";
	buf_printf(&b, "the %s name \"%s\" is given by", what, name);
	size_t count = 0;
	for (size_t v = 0; v < n; v++) {
		const char *rest;
		if (views[v].visible != visible ||
		    !router_view_claims(&views[v], which, name, &rest))
			continue;
		buf_printf(&b,
			   "%s server \"%s\" (its %s \"%s\", prefix \"%s\")",
			   count ? " and" : "", servers[v]->name, what, rest,
			   views[v].prefix);
		count++;
	}
	buf_printf(&b, ": mcpvisor lists and calls neither; give one of them "
		       "another \"prefix\"");
	return buf_steal(&b);
}

/* The part of a URI template before its first expression. */
static size_t router_template_fixed(const char *tpl)
{
	const char *brace = strchr(tpl, '{');
	return brace ? (size_t)(brace - tpl) : strlen(tpl);
}

int router_resolve_uri(const struct router_view *resources,
		       const struct router_view *templates, size_t n,
		       const char *uri)
{
	for (size_t v = 0; v < n; v++)
		if (resources[v].items &&
		    router_view_find(&resources[v], NULL, INSTANCE_RESOURCES,
				     "uri", uri))
			return (int)v;
	int best = -1;
	size_t best_len = 0;
	for (size_t v = 0; v < n; v++) {
		size_t i;
		json_t *item;
		if (templates[v].items == NULL ||
		    (templates[v].filter &&
		     !config_filter_keeps(templates[v].filter, uri)))
			continue;
		json_array_foreach(templates[v].items, i, item)
		{
			const char *tpl = json_string_value(
				json_object_get(item, "uriTemplate"));
			if (tpl == NULL ||
			    !router_keeps(&templates[v], INSTANCE_TEMPLATES,
					  item))
				continue;
			size_t fixed = router_template_fixed(tpl);
			if (fixed > 0 && fixed >= best_len &&
			    strncmp(uri, tpl, fixed) == 0 &&
			    (best < 0 || fixed > best_len)) {
				best = (int)v;
				best_len = fixed;
			}
		}
	}
	return best;
}

int router_paginate(json_t *list, const char *cursor, size_t page_size,
		    json_t **page, char **next)
{
	size_t start = 0;
	if (cursor) {
		char *end;
		if (cursor[0] != 'o' || cursor[1] == '\0')
			return -EINVAL;
		errno = 0;
		unsigned long long v = strtoull(cursor + 1, &end, 10);
		if (errno || *end != '\0' || v > json_array_size(list))
			return -EINVAL;
		start = (size_t)v;
	}
	if (page_size == 0)
		page_size = ROUTER_DEFAULT_PAGE;
	size_t total = json_array_size(list);
	size_t stop = start + page_size < total ? start + page_size : total;
	json_t *out = json_array();
	for (size_t i = start; i < stop; i++)
		json_array_append(out, json_array_get(list, i));
	*page = out;
	*next = stop < total ? xasprintf("o%zu", stop) : NULL;
	return 0;
}

json_t *router_long_names(const struct router_view *v, size_t *longest_own)
{
	json_t *out = json_array();
	size_t plen = v->prefix && v->prefix[0]
			      ? strlen(v->prefix) + strlen(ROUTER_SEP)
			      : 0;
	*longest_own = 0;
	size_t i;
	json_t *item;
	json_array_foreach(v->items, i, item)
	{
		const char *name =
			json_string_value(json_object_get(item, "name"));
		if (name == NULL || !router_keeps(v, INSTANCE_TOOLS, item) ||
		    plen + strlen(name) <= ROUTER_HOST_NAME_MAX)
			continue;
		char *full = router_exposed_name(v->prefix, name);
		json_array_append_new(out, json_string(full));
		free(full);
		if (strlen(name) > *longest_own)
			*longest_own = strlen(name);
	}
	return out;
}

char *router_long_names_advice(const char *name, const char *prefix,
			       json_t *long_names, size_t longest_own)
{
	struct buf b;
	buf_init(&b);
	size_t n = json_array_size(long_names);
	const char *worst = NULL;
	size_t i;
	json_t *v;
	json_array_foreach(long_names, i, v)
	{
		const char *s = json_string_value(v);
		if (worst == NULL || strlen(s) > strlen(worst))
			worst = s;
	}
	buf_printf(&b,
		   "server \"%s\": %zu tool name(s) longer than %d "
		   "characters as clients see them, which several hosts "
		   "refuse (longest: %s, %zu)",
		   name, n, ROUTER_HOST_NAME_MAX, worst ? worst : "?",
		   worst ? strlen(worst) : (size_t)0);
	size_t room = ROUTER_HOST_NAME_MAX - strlen(ROUTER_SEP);
	if (longest_own < room)
		buf_printf(&b,
			   "; set its \"prefix\" to at most %zu "
			   "characters (now \"%s\")",
			   room - longest_own, prefix);
	else if (longest_own <= ROUTER_HOST_NAME_MAX)
		buf_printf(&b, "; set its \"prefix\" to \"\" (no prefix)");
	else
		buf_printf(&b,
			   "; the server's own name is over %d "
			   "characters, which no \"prefix\" fixes: hide "
			   "it with \"tools\": {\"deny\": [...]}",
			   ROUTER_HOST_NAME_MAX);
	return buf_steal(&b);
}

char *router_names_summary(json_t *list, size_t max)
{
	struct buf b;
	buf_init(&b);
	size_t n = json_array_size(list);
	size_t shown = n < max ? n : max;
	for (size_t i = 0; i < shown; i++) {
		const char *name = json_string_value(
			json_object_get(json_array_get(list, i), "name"));
		if (i)
			buf_puts(&b, ", ");
		buf_puts(&b, name ? name : "?");
	}
	if (n > shown)
		buf_printf(&b, " and %zu more", n - shown);
	if (n == 0)
		buf_puts(&b, "(none)");
	return buf_steal(&b);
}
