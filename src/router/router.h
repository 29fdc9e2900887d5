/*
 * Aggregation: the tools, prompts, resources and templates of a session's
 * servers as one list, names prefixed `prefix__name` in config order, and
 * the way back from a name the client sees to the server and the name the
 * server knows. Pure functions over views, so they are unit-tested alone.
 */
#ifndef MCPV_ROUTER_H
#define MCPV_ROUTER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "instance/instance.h"

#define ROUTER_DEFAULT_PAGE 500
#define ROUTER_SEP "__"
/* The longest tool name several hosts accept (they refuse the server, or
 * the whole list, over it). */
#define ROUTER_HOST_NAME_MAX 64

/* One server as a session sees it. */
struct router_view {
	const char *prefix; /* "" for none */
	json_t *items;	    /* the server's list (borrowed), NULL: unknown */
	bool visible;	    /* exposure direct */
	/* What of items the session may see and use (borrowed); NULL: all.
	 * Every function here leaves out what it does not keep, so a
	 * filtered item is to a client exactly an item that is not there. */
	const struct config_filter *filter;
};

/* Whether view v keeps item, an item of list which: a tool or prompt by
 * its name, a resource by its uri, a template by its uriTemplate. */
bool router_keeps(const struct router_view *v, enum instance_list which,
		  const json_t *item);

/* The name clients see. Caller frees. */
char *router_exposed_name(const char *prefix, const char *name);

/* The tool or prompt names (list which; none for resources and
 * templates, which are told apart by uri) that two or more visible views
 * give, as clients see them (prefixes `a__b` with `c` and `a` with `b__c`;
 * or two servers without a prefix): an object of each such name to the
 * array of those views' indices, in order. New reference. */
json_t *router_collisions(const struct router_view *views, size_t n,
			  enum instance_list which);

/* The aggregated list: every visible view's items in view order, each a
 * copy with its name prefixed. A tool or prompt name two views give (see
 * router_collisions) is in neither's; a name met twice in one view, and a
 * resource's uri or a template's name met twice, keeps its first owner.
 * New reference. */
json_t *router_aggregate(const struct router_view *views, size_t n,
			 enum instance_list which);

/* What router_resolve returns for a name two views give. */
#define ROUTER_AMBIGUOUS (-2)

/* Which view serves exposed name, among the views whose `visible` is
 * visible (true: what the model calls by name; false: the others, such as
 * deferred servers'), and the name that server knows (points into name or
 * into the item; valid while both live). Known items win; then the one
 * view whose prefix matches, whose items are unknown and whose filter
 * keeps the name. Returns the view index, -1 when none, or
 * ROUTER_AMBIGUOUS when the known items of two or more views give a tool
 * or prompt that name (router_collision_text says which). */
int router_resolve(const struct router_view *views, size_t n,
		   enum instance_list which, const char *name, bool visible,
		   const char **orig);

struct listindex;
/* What router_resolve finds on view v alone when v's items are known:
 * the item of v's list which that exposed name is, if v keeps it, and
 * the name the server knows in *orig (points into name). ix, an index of
 * v->items (instance_list_index), finds it by hash; without one (NULL,
 * or an index of another list) v->items are walked. NULL when v does not
 * give the name. */
json_t *router_view_item(const struct router_view *v,
			 const struct listindex *ix, enum instance_list which,
			 const char *name, const char **orig);

/* For a name router_resolve found ambiguous: which servers (servers[i]
 * is views[i]'s) give it as which of their own names, and what to change.
 * Lower case, for an error or a warning. Caller frees. */
char *router_collision_text(const struct router_view *views,
			    const struct server_config *const *servers,
			    size_t n, enum instance_list which,
			    const char *name, bool visible);

/* Which view serves a resource uri: an exact uri in a resources list, then
 * a template whose fixed leading part matches; either kept by its view's
 * filter, and the uri itself too (a read through a template is held to the
 * same filter as a listed resource). -1 when none. */
int router_resolve_uri(const struct router_view *resources,
		       const struct router_view *templates, size_t n,
		       const char *uri);

/* One page of list: *page gets a new array, *next a new cursor string or
 * NULL at the end. -EINVAL for a cursor this runtime did not make. */
int router_paginate(json_t *list, const char *cursor, size_t page_size,
		    json_t **page, char **next);

/* The names clients would see over ROUTER_HOST_NAME_MAX characters among
 * the items v keeps (v's list which must be tools), as a new array of
 * strings; *longest_own gets the length of the longest such tool's own
 * name (0 when none). */
json_t *router_long_names(const struct router_view *v, size_t *longest_own);

/* What to tell the user of server name whose tools (long, from
 * router_long_names) are too long with prefix: how many, the longest,
 * and the "prefix" that makes them fit, or the deny that hides a tool no
 * prefix can save. Caller frees. */
char *router_long_names_advice(const char *name, const char *prefix,
			       json_t *long_names, size_t longest_own);

/* A short human list of names for error messages ("a, b, c and 4 more").
 * Caller frees. */
char *router_names_summary(json_t *list, size_t max);

#endif
