/*
 * `mcpvisor check` on a server's lists: each filter as patterns, what it
 * keeps and drops when a running runtime of the config knows the server's
 * names, tool names too long for hosts, and names two servers give.
 */
#include "cli/check_lists.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "config/filter.h"
#include "home/info.h"
#include "router/router.h"
#include "util/xmalloc.h"

/* More than a screen of names says nothing more. */
#define CHECK_MAX_NAMES 100

static const char *const check_lists[] = {"tools", "prompts", "resources",
					  "resourceTemplates"};

/* The same file by its real path (a runtime may have been given another
 * spelling of it). */
static bool check_same_file(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];
	return a && b && realpath(a, ra) && realpath(b, rb) &&
	       strcmp(ra, rb) == 0;
}

json_t *check_lists_fetch(const char *home, const char *file)
{
	struct runtime_info info;
	int rc = runtime_info_read(home, &info);
	runtime_info_free(&info);
	if (rc != 0)
		return NULL;
	struct client *c;
	if (client_open(home, &c) != CLI_OK)
		return NULL;
	json_t *st = NULL;
	json_t *out = NULL;
	if (client_get_json(c, "/status", &st) == CLI_OK &&
	    check_same_file(json_string_value(json_object_get(st, "config")),
			    file)) {
		out = json_object();
		size_t i;
		json_t *sv;
		json_array_foreach(json_object_get(st, "servers"), i, sv)
		{
			const char *name =
				json_string_value(json_object_get(sv, "name"));
			if (name && json_object_get(sv, "offered"))
				json_object_set(out, name, sv);
		}
	}
	json_decref(st);
	client_close(c);
	return out;
}

/* The filter of sv that applies to list (by its status name). */
static const struct config_filter *
check_filter_of(const struct server_config *sv, const char *list)
{
	if (strcmp(list, "tools") == 0)
		return &sv->tools;
	if (strcmp(list, "prompts") == 0)
		return &sv->prompts;
	return &sv->resources;
}

/* Whether pattern matches one of names (an array of strings). */
static bool check_matches_any(const char *pattern, json_t *names)
{
	size_t i;
	json_t *n;
	json_array_foreach(names, i, n)
	{
		const char *name = json_string_value(n);
		if (name && config_glob_match(pattern, name))
			return true;
	}
	return false;
}

/* Patterns that match nothing the server offers, per filter, in d's
 * "unmatched": most often a typo ("get_isue"), or a name written with
 * the prefix; maybe on purpose (a tool that may come later). */
static void check_lists_unmatched(json_t *d, const struct server_config *sv,
				  json_t *offered)
{
	static const char *const own[] = {"tools", "prompts", "resources"};
	json_t *out = json_object();
	for (size_t k = 0; k < 3; k++) {
		const struct config_filter *f = check_filter_of(sv, own[k]);
		json_t *names = json_array();
		json_array_extend(names, json_object_get(offered, own[k]));
		if (k == 2)
			json_array_extend(
				names,
				json_object_get(offered, "resourceTemplates"));
		bool known = json_object_get(offered, own[k]) != NULL;
		json_t *none = json_array();
		for (size_t i = 0; known && i < f->nallow + f->ndeny; i++) {
			const char *p = i < f->nallow ? f->allow[i]
						      : f->deny[i - f->nallow];
			if (!check_matches_any(p, names))
				json_array_append_new(none, json_string(p));
		}
		if (json_array_size(none))
			json_object_set(out, own[k], none);
		json_decref(none);
		json_decref(names);
	}
	if (json_object_size(out))
		json_object_set(d, "unmatched", out);
	json_decref(out);
}

void check_lists_add(json_t *d, const struct server_config *sv, json_t *known)
{
	json_t *offered = json_object_get(known, "offered");
	if (offered == NULL || sv->error)
		return;
	json_t *filtered = json_object();
	for (size_t w = 0; w < 4; w++) {
		const struct config_filter *f =
			check_filter_of(sv, check_lists[w]);
		json_t *names = json_object_get(offered, check_lists[w]);
		if (!config_filter_active(f) || !json_is_array(names))
			continue;
		json_t *kept = json_array(), *dropped = json_array();
		size_t i;
		json_t *n;
		json_array_foreach(names, i, n)
		{
			const char *name = json_string_value(n);
			if (name)
				json_array_append(config_filter_keeps(f, name)
							  ? kept
							  : dropped,
						  n);
		}
		json_object_set_new(filtered, check_lists[w],
				    json_pack("{s:o,s:o}", "kept", kept,
					      "dropped", dropped));
	}
	if (json_object_size(filtered))
		json_object_set(d, "filtered", filtered);
	json_decref(filtered);
	check_lists_unmatched(d, sv, offered);
	/* Long names as this file would show them (its prefix and filter),
	 * for a server the host lists by name. */
	json_t *tools = json_object_get(offered, "tools");
	if (sv->exposure != EXPOSE_DIRECT || !json_is_array(tools))
		return;
	json_t *items = json_array();
	size_t i;
	json_t *n;
	json_array_foreach(tools, i, n)
	{
		if (json_is_string(n))
			json_array_append_new(items,
					      json_pack("{s:O}", "name", n));
	}
	struct router_view v = {sv->prefix, items, true, &sv->tools};
	size_t longest;
	json_t *long_names = router_long_names(&v, &longest);
	if (json_array_size(long_names)) {
		char *advice = router_long_names_advice(sv->name, sv->prefix,
							long_names, longest);
		json_object_set(d, "longToolNames", long_names);
		json_object_set_new(d, "longToolNamesAdvice",
				    json_string(advice));
		free(advice);
	}
	json_decref(long_names);
	json_decref(items);
}

/* The views of one list (tools or prompts) of cfg's servers as the
 * runtime would build them from known, each shown (visible) when its
 * exposure is direct, or, for !direct, when it is not: the two are
 * resolved apart. The items are new references, for check_views_free. */
static void check_views(const struct config *cfg, json_t *known,
			enum instance_list which, bool direct,
			struct router_view *v,
			const struct server_config **servers)
{
	const char *list = which == INSTANCE_TOOLS ? "tools" : "prompts";
	for (size_t i = 0; i < cfg->nservers; i++) {
		const struct server_config *sv = &cfg->servers[i];
		servers[i] = sv;
		json_t *names = json_object_get(
			json_object_get(json_object_get(known, sv->name),
					"offered"),
			list);
		bool usable = sv->error == NULL && !sv->disabled;
		json_t *items = NULL;
		if (usable && json_is_array(names)) {
			items = json_array();
			size_t k;
			json_t *n;
			json_array_foreach(names, k, n)
			{
				if (json_is_string(n))
					json_array_append_new(
						items,
						json_pack("{s:O}", "name", n));
			}
		}
		v[i] = (struct router_view){
			sv->prefix ? sv->prefix : "", items,
			usable && (sv->exposure == EXPOSE_DIRECT) == direct,
			which == INSTANCE_TOOLS ? &sv->tools : &sv->prompts};
	}
}

static void check_views_free(struct router_view *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_decref(v[i].items);
}

/* Adds to out the names of one list and one side that two servers give. */
static void check_collisions_of(const struct config *cfg, json_t *known,
				enum instance_list which, bool direct,
				json_t *out)
{
	size_t n = cfg->nservers;
	struct router_view *v = xcalloc(n + 1, sizeof *v);
	const struct server_config **servers = xcalloc(n + 1, sizeof *servers);
	check_views(cfg, known, which, direct, v, servers);
	json_t *col = router_collisions(v, n, which);
	const char *name;
	json_t *by;
	json_object_foreach(col, name, by)
	{
		json_t *names = json_array();
		bool deferred = false;
		size_t k;
		json_t *idx;
		json_array_foreach(by, k, idx)
		{
			const struct server_config *sv =
				servers[json_integer_value(idx)];
			json_array_append_new(names, json_string(sv->name));
			deferred = deferred || sv->exposure == EXPOSE_DEFERRED;
		}
		/* Hidden servers' names are called by no one: only a
		 * deferred server's make a call ambiguous. */
		if (!direct && !deferred) {
			json_decref(names);
			continue;
		}
		char *text =
			router_collision_text(v, servers, n, which, name, true);
		json_array_append_new(
			out,
			json_pack("{s:s,s:s,s:o,s:s}", "name", name, "list",
				  which == INSTANCE_TOOLS ? "tools" : "prompts",
				  "servers", names, "text", text));
		free(text);
	}
	json_decref(col);
	check_views_free(v, n);
	free(v);
	free(servers);
}

json_t *check_lists_collisions(const struct config *cfg, json_t *known)
{
	json_t *out = json_array();
	if (known == NULL)
		return out;
	check_collisions_of(cfg, known, INSTANCE_TOOLS, true, out);
	check_collisions_of(cfg, known, INSTANCE_PROMPTS, true, out);
	check_collisions_of(cfg, known, INSTANCE_TOOLS, false, out);
	return out;
}

int check_lists_warn_collisions(json_t *collisions)
{
	size_t i;
	json_t *c;
	json_array_foreach(collisions, i, c)
		fprintf(stderr, "warning: %s\n",
			json_string_value(json_object_get(c, "text")));
	return (int)json_array_size(collisions);
}

static void check_print_names(int w, const char *what, json_t *names)
{
	size_t n = json_array_size(names);
	printf("%-*s   %s %zu", w, "", what, n);
	size_t i;
	json_t *v;
	json_array_foreach(names, i, v)
	{
		if (i == CHECK_MAX_NAMES) {
			printf(" and %zu more", n - i);
			break;
		}
		printf("%s%s", i ? ", " : ": ", json_string_value(v));
	}
	printf("\n");
}

static void check_print_patterns(const char *what, json_t *pats)
{
	size_t i;
	json_t *v;
	printf(" %s ", what);
	json_array_foreach(pats, i, v)
		printf("%s%s", i ? ", " : "", json_string_value(v));
}

/* What one filter kept and dropped of a list, when known. */
static void check_print_filtered(int w, const char *list, json_t *r)
{
	if (r == NULL)
		return;
	char what[64];
	snprintf(what, sizeof what, "%s kept", list);
	check_print_names(w, what, json_object_get(r, "kept"));
	snprintf(what, sizeof what, "%s dropped", list);
	check_print_names(w, what, json_object_get(r, "dropped"));
}

void check_lists_print(json_t *d, int w)
{
	/* An invalid server is said to be so, and nothing more. */
	if (json_object_get(d, "error"))
		return;
	json_t *filters = json_object_get(d, "filters");
	json_t *filtered = json_object_get(d, "filtered");
	static const char *const own[] = {"tools", "prompts", "resources"};
	bool unknown = false;
	for (size_t k = 0; k < 3; k++) {
		json_t *f = json_object_get(filters, own[k]);
		if (f == NULL)
			continue;
		printf("%-*s %s:", w, "", own[k]);
		json_t *allow = json_object_get(f, "allow");
		json_t *deny = json_object_get(f, "deny");
		if (allow)
			check_print_patterns("allow", allow);
		if (allow && deny)
			printf(";");
		if (deny)
			check_print_patterns("deny", deny);
		printf("\n");
		check_print_filtered(w, own[k],
				     json_object_get(filtered, own[k]));
		/* Templates are resources to be: the same filter. */
		if (k == 2)
			check_print_filtered(
				w, "templates",
				json_object_get(filtered, "resourceTemplates"));
		json_t *none = json_object_get(json_object_get(d, "unmatched"),
					       own[k]);
		if (none)
			check_print_names(
				w, "patterns matching nothing offered", none);
		unknown = unknown || filtered == NULL;
	}
	if (unknown)
		printf("%-*s (what the filters keep shows by name once a "
		       "running runtime of\n%-*s  this config file has "
		       "listed the server)\n",
		       w, "", w, "");
}

int check_lists_warn(json_t *d)
{
	const char *advice =
		json_string_value(json_object_get(d, "longToolNamesAdvice"));
	if (advice == NULL)
		return 0;
	fprintf(stderr, "warning: %s\n", advice);
	return 1;
}
