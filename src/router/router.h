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

#include "instance/instance.h"

#define ROUTER_DEFAULT_PAGE 500
#define ROUTER_SEP "__"

/* One server as a session sees it. */
struct router_view {
	const char *prefix; /* "" for none */
	json_t *items;	    /* the server's list (borrowed), NULL: unknown */
	bool visible;	    /* exposure direct */
};

/* The name clients see. Caller frees. */
char *router_exposed_name(const char *prefix, const char *name);

/* The aggregated list: every visible view's items in view order, each a
 * copy with its name prefixed. A name met twice keeps its first owner.
 * New reference. */
json_t *router_aggregate(const struct router_view *views, size_t n,
			 enum instance_list which);

/* Which view serves exposed name, and the name that server knows (points
 * into name or into the item; valid while both live). Known items win;
 * then a view whose prefix matches and whose items are unknown. Returns
 * the view index or -1. */
int router_resolve(const struct router_view *views, size_t n,
		   enum instance_list which, const char *name,
		   const char **orig);

/* Which view serves a resource uri: an exact uri in a resources list, then
 * a template whose fixed leading part matches. -1 when none. */
int router_resolve_uri(const struct router_view *resources,
		       const struct router_view *templates, size_t n,
		       const char *uri);

/* One page of list: *page gets a new array, *next a new cursor string or
 * NULL at the end. -EINVAL for a cursor this runtime did not make. */
int router_paginate(json_t *list, const char *cursor, size_t page_size,
		    json_t **page, char **next);

/* A short human list of names for error messages ("a, b, c and 4 more").
 * Caller frees. */
char *router_names_summary(json_t *list, size_t max);

#endif
