/* Aggregation naming, routing back to a server, and pagination. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/filter.h"
#include "instance/listindex.h"
#include "router/router.h"

static json_t *tools_of(const char *names)
{
	json_t *a = json_array();
	char *copy = strdup(names);
	for (char *t = strtok(copy, ","); t; t = strtok(NULL, ","))
		json_array_append_new(a, json_pack("{s:s,s:{s:s}}", "name", t,
						   "inputSchema", "type",
						   "object"));
	free(copy);
	return a;
}

Test(router, exposed_names)
{
	char *a = router_exposed_name("github", "create_issue");
	cr_assert_str_eq(a, "github__create_issue");
	char *b = router_exposed_name("", "create_issue");
	cr_assert_str_eq(b, "create_issue");
	free(a);
	free(b);
}

Test(router, aggregate_in_view_order_with_prefixes)
{
	json_t *a = tools_of("echo,add"), *b = tools_of("echo");
	struct router_view v[] = {{"demo", a, true, NULL},
				  {"notes", b, true, NULL}};
	json_t *all = router_aggregate(v, 2, INSTANCE_TOOLS);
	cr_assert_eq(json_array_size(all), 3);
	const char *want[] = {"demo__echo", "demo__add", "notes__echo"};
	for (int i = 0; i < 3; i++)
		cr_assert_str_eq(json_string_value(json_object_get(
					 json_array_get(all, i), "name")),
				 want[i]);
	/* The server's own list is untouched. */
	cr_assert_str_eq(json_string_value(
				 json_object_get(json_array_get(a, 0), "name")),
			 "echo");
	/* Other fields are carried over. */
	cr_assert_not_null(
		json_object_get(json_array_get(all, 0), "inputSchema"));
	json_decref(all);
	json_decref(a);
	json_decref(b);
}

Test(router, hidden_and_unknown_views_are_skipped)
{
	json_t *a = tools_of("echo"), *b = tools_of("secret");
	struct router_view v[] = {{"demo", a, true, NULL},
				  {"hid", b, false, NULL},
				  {"later", NULL, true, NULL}};
	json_t *all = router_aggregate(v, 3, INSTANCE_TOOLS);
	cr_assert_eq(json_array_size(all), 1);
	json_decref(all);
	json_decref(a);
	json_decref(b);
}

/* One name two servers give is no one's: listed by neither, called on
 * neither; each server's other names are untouched. */
Test(router, a_name_two_servers_give_is_no_ones)
{
	json_t *a = tools_of("echo,add"), *b = tools_of("echo");
	struct router_view v[] = {{"", a, true, NULL}, {"", b, true, NULL}};
	json_t *all = router_aggregate(v, 2, INSTANCE_TOOLS);
	cr_assert_eq(json_array_size(all), 1);
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(all, 0), "name")),
			 "add");
	const char *orig = NULL;
	cr_assert_eq(router_resolve(v, 2, INSTANCE_TOOLS, "echo", true, &orig),
		     ROUTER_AMBIGUOUS);
	cr_assert_eq(router_resolve(v, 2, INSTANCE_TOOLS, "add", true, &orig),
		     0);
	json_decref(all);
	json_decref(a);
	json_decref(b);
}

Test(router, resolve_known_and_by_prefix)
{
	json_t *a = tools_of("echo,add"), *b = tools_of("x__y");
	struct router_view v[] = {{"demo", a, true, NULL},
				  {"", b, true, NULL},
				  {"gh", NULL, true, NULL}};
	const char *orig = NULL;
	cr_assert_eq(
		router_resolve(v, 3, INSTANCE_TOOLS, "demo__add", true, &orig),
		0);
	cr_assert_str_eq(orig, "add");
	/* No prefix: the name as is, even with a separator inside. */
	cr_assert_eq(router_resolve(v, 3, INSTANCE_TOOLS, "x__y", true, &orig),
		     1);
	cr_assert_str_eq(orig, "x__y");
	/* A server whose list is unknown gets names with its prefix. */
	cr_assert_eq(
		router_resolve(v, 3, INSTANCE_TOOLS, "gh__create", true, &orig),
		2);
	cr_assert_str_eq(orig, "create");
	cr_assert_eq(
		router_resolve(v, 3, INSTANCE_TOOLS, "demo__nope", true, &orig),
		-1);
	cr_assert_eq(router_resolve(v, 3, INSTANCE_TOOLS, "gh__", true, &orig),
		     -1);
	cr_assert_eq(router_resolve(v, 3, INSTANCE_TOOLS, "", true, &orig), -1);
	cr_assert_eq(
		router_resolve(v, 3, INSTANCE_TOOLS, "demoecho", true, &orig),
		-1);
	json_decref(a);
	json_decref(b);
}

Test(router, resolve_uri_exact_then_template)
{
	json_t *r0 = json_pack("[{s:s,s:s}]", "uri", "demo://readme", "name",
			       "readme");
	json_t *t0 = json_pack("[{s:s,s:s}]", "uriTemplate", "demo://item/{id}",
			       "name", "item");
	json_t *t1 = json_pack("[{s:s,s:s}]", "uriTemplate", "demo://{x}",
			       "name", "any");
	struct router_view res[] = {{"a", r0, true, NULL},
				    {"b", NULL, true, NULL}};
	struct router_view tpl[] = {{"a", NULL, true, NULL},
				    {"b", t0, true, NULL}};
	cr_assert_eq(router_resolve_uri(res, tpl, 2, "demo://readme"), 0);
	cr_assert_eq(router_resolve_uri(res, tpl, 2, "demo://item/42"), 1);
	cr_assert_eq(router_resolve_uri(res, tpl, 2, "other://x"), -1);
	/* The longest fixed part wins. */
	struct router_view tpl2[] = {{"a", t1, true, NULL},
				     {"b", t0, true, NULL}};
	cr_assert_eq(router_resolve_uri(res, tpl2, 2, "demo://item/1"), 1);
	json_decref(r0);
	json_decref(t0);
	json_decref(t1);
}

Test(router, paginate_walks_every_item_once)
{
	json_t *list = tools_of("a,b,c,d,e,f,g");
	char *cursor = NULL;
	size_t seen = 0;
	for (int pages = 0; pages < 10; pages++) {
		json_t *page;
		char *next;
		cr_assert_eq(router_paginate(list, cursor, 3, &page, &next), 0);
		seen += json_array_size(page);
		json_decref(page);
		free(cursor);
		cursor = next;
		if (cursor == NULL)
			break;
	}
	cr_assert_eq(seen, 7);
	json_decref(list);
}

Test(router, paginate_rejects_foreign_cursors)
{
	json_t *list = tools_of("a,b");
	json_t *page;
	char *next;
	const char *bad[] = {
		"", "x1", "o", "o-1", "o99", "o1x", "o18446744073709551616"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_assert_eq(router_paginate(list, bad[i], 3, &page, &next),
			     -EINVAL, "cursor %s", bad[i]);
	cr_assert_eq(router_paginate(list, "o2", 3, &page, &next), 0);
	cr_assert_eq(json_array_size(page), 0);
	cr_assert_null(next);
	json_decref(page);
	json_decref(list);
}

Test(router, names_summary)
{
	json_t *list = tools_of("a,b,c,d");
	char *s = router_names_summary(list, 2);
	cr_assert_str_eq(s, "a, b and 2 more");
	free(s);
	json_t *empty = json_array();
	s = router_names_summary(empty, 2);
	cr_assert_str_eq(s, "(none)");
	free(s);
	json_decref(list);
	json_decref(empty);
}

/* A tool or prompt name two servers give is in neither's list; a name one
 * server lists twice keeps its first; a resource's uri met twice keeps
 * its first owner. */
Test(router, duplicates_across_and_within_servers)
{
	static const struct {
		enum instance_list which;
		const char *a, *b; /* item names of views "" and "" */
		size_t want;
	} cases[] = {
		{INSTANCE_TOOLS, "echo,add", "add,sub", 2},
		{INSTANCE_TOOLS, "x,x,y", "y,z", 2},
		{INSTANCE_TOOLS, "x,x", "z", 2},
		{INSTANCE_PROMPTS, "p", "p,q", 1},
	};
	for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
		json_t *a = tools_of(cases[t].a), *b = tools_of(cases[t].b);
		struct router_view v[] = {{"", a, true, NULL},
					  {"", b, true, NULL}};
		json_t *all = router_aggregate(v, 2, cases[t].which);
		cr_assert_eq(json_array_size(all), cases[t].want, "case %zu",
			     t);
		json_decref(all);
		json_decref(a);
		json_decref(b);
	}
	/* Resources by uri, whatever their names; items without a uri stay. */
	json_t *r1 = json_pack("[{s:s,s:s},{s:s}]", "name", "a", "uri",
			       "file:///1", "name", "nouri");
	json_t *r2 = json_pack("[{s:s,s:s},{s:s,s:s},{s:s}]", "name", "b",
			       "uri", "file:///1", "name", "c", "uri",
			       "file:///2", "name", "nouri");
	struct router_view rv[] = {{"s1", r1, true, NULL},
				   {"s2", r2, true, NULL}};
	json_t *res = router_aggregate(rv, 2, INSTANCE_RESOURCES);
	cr_assert_eq(json_array_size(res), 4);
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(res, 0), "name")),
			 "s1__a");
	json_decref(res);
	json_decref(r1);
	json_decref(r2);
}

/* Each item is checked against the names taken so far by hash: 40,000
 * items aggregate in well under the bound (each against all before it
 * took minutes). */
Test(router, aggregate_is_linear, .timeout = 10)
{
	enum { N = 20000 };
	json_t *a = json_array(), *b = json_array();
	char name[32];
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof name, "tool_%d", i);
		json_array_append_new(a, json_pack("{s:s}", "name", name));
		json_array_append_new(b, json_pack("{s:s}", "name", name));
	}
	struct router_view v[] = {{"", a, true, NULL}, {"s", b, true, NULL}};
	json_t *all = router_aggregate(v, 2, INSTANCE_TOOLS);
	cr_assert_eq(json_array_size(all), 2 * N);
	json_decref(all);
	/* Every name given by both: each is found out by hash too, and
	 * none is listed. */
	v[1].prefix = "";
	all = router_aggregate(v, 2, INSTANCE_TOOLS);
	cr_assert_eq(json_array_size(all), 0, "names both give are no one's");
	json_decref(all);
	json_decref(a);
	json_decref(b);
}

/* Prefix "a__b" with tool "c" and prefix "a" with tool "b__c" both give
 * "a__b__c": named as a collision, listed by neither, and resolved to
 * neither (whatever the order); a server whose list is not known yet does
 * not make a known name ambiguous, and of two whose prefixes fit, neither
 * is guessed. */
Test(router, prefixed_names_that_collide)
{
	json_t *ab = tools_of("c,d"), *a = tools_of("b__c,e");
	for (int order = 0; order < 2; order++) {
		struct router_view v[2] = {{"a__b", ab, true, NULL},
					   {"a", a, true, NULL}};
		if (order) {
			struct router_view t = v[0];
			v[0] = v[1];
			v[1] = t;
		}
		json_t *col = router_collisions(v, 2, INSTANCE_TOOLS);
		cr_assert_eq(json_object_size(col), 1);
		json_t *by = json_object_get(col, "a__b__c");
		cr_assert_eq(json_array_size(by), 2);
		cr_assert_eq(json_integer_value(json_array_get(by, 0)), 0);
		cr_assert_eq(json_integer_value(json_array_get(by, 1)), 1);
		json_decref(col);
		json_t *all = router_aggregate(v, 2, INSTANCE_TOOLS);
		cr_assert_eq(json_array_size(all), 2, "a__b__d and a__e");
		size_t i;
		json_t *it;
		json_array_foreach(all, i, it) cr_assert_str_neq(
			json_string_value(json_object_get(it, "name")),
			"a__b__c");
		json_decref(all);
		const char *orig = NULL;
		cr_assert_eq(router_resolve(v, 2, INSTANCE_TOOLS, "a__b__c",
					    true, &orig),
			     ROUTER_AMBIGUOUS);
		cr_assert_eq(router_resolve(v, 2, INSTANCE_TOOLS, "a__b__d",
					    true, &orig),
			     order ? 1 : 0);
		cr_assert_str_eq(orig, "d");
		const struct server_config s0 = {.name = order ? "one" : "two"},
					   s1 = {.name = order ? "two" : "one"};
		const struct server_config *servers[] = {&s0, &s1};
		char *text = router_collision_text(
			v, servers, 2, INSTANCE_TOOLS, "a__b__c", true);
		cr_assert_not_null(strstr(text,
					  "server \"two\" (its tool \"c\", "
					  "prefix \"a__b\")"),
				   "%s", text);
		cr_assert_not_null(strstr(text, "server \"one\" (its tool "
						"\"b__c\", prefix \"a\")"),
				   "%s", text);
		cr_assert_not_null(strstr(text, "another \"prefix\""), "%s",
				   text);
		free(text);
	}
	/* Not yet known: the known list decides. */
	struct router_view later[] = {{"a__b", ab, true, NULL},
				      {"a", NULL, true, NULL}};
	const char *orig = NULL;
	cr_assert_eq(router_resolve(later, 2, INSTANCE_TOOLS, "a__b__c", true,
				    &orig),
		     0);
	/* Two unknown lists whose prefixes fit: learn them first. */
	struct router_view unknown[] = {{"a__b", NULL, true, NULL},
					{"a", NULL, true, NULL}};
	cr_assert_eq(router_resolve(unknown, 2, INSTANCE_TOOLS, "a__b__c", true,
				    &orig),
		     -1);
	cr_assert_eq(
		router_resolve(unknown, 2, INSTANCE_TOOLS, "a__x", true, &orig),
		1);
	json_decref(ab);
	json_decref(a);
}

/* What the model calls by name and what it does not are apart: a hidden
 * or deferred server's name does not take a shown server's, and a
 * deferred call resolves among the servers not shown by name. */
Test(router, shown_and_not_shown_names_are_apart)
{
	json_t *a = tools_of("echo"), *b = tools_of("echo");
	struct router_view v[] = {{"", a, false, NULL}, {"", b, true, NULL}};
	json_t *all = router_aggregate(v, 2, INSTANCE_TOOLS);
	cr_assert_eq(json_array_size(all), 1);
	json_decref(all);
	json_t *col = router_collisions(v, 2, INSTANCE_TOOLS);
	cr_assert_eq(json_object_size(col), 0);
	json_decref(col);
	const char *orig = NULL;
	cr_assert_eq(router_resolve(v, 2, INSTANCE_TOOLS, "echo", true, &orig),
		     1);
	cr_assert_eq(router_resolve(v, 2, INSTANCE_TOOLS, "echo", false, &orig),
		     0);
	json_decref(a);
	json_decref(b);
}

/* The call path finds a tool through its list's index: exactly what
 * router_resolve finds on the view alone (prefix, filter, a name met
 * twice, unknown and hostile names), and an index of another list is not
 * trusted. */
Test(router, view_item_by_index_is_resolve_on_the_view)
{
	json_t *a = tools_of("echo,add,a__b,add,secret_x,x");
	char *deny[] = {"secret_*"};
	struct config_filter f = {NULL, 0, deny, 1};
	struct listindex ix = {0};
	listindex_build(&ix, a, INSTANCE_TOOLS);
	const char *prefixes[] = {"", "demo", "a"};
	const struct config_filter *filters[] = {NULL, &f};
	const char *names[] = {"echo",
			       "add",
			       "a__b",
			       "secret_x",
			       "x",
			       "nope",
			       "",
			       "demo__echo",
			       "demo__add",
			       "demo__secret_x",
			       "demo__",
			       "demo_echo",
			       "a__a__b",
			       "a__b",
			       "a____b",
			       "demo__demo__echo",
			       "ECHO",
			       "echo ",
			       "demo__nope__x"};
	for (size_t p = 0; p < 3; p++)
		for (size_t k = 0; k < 2; k++)
			for (size_t i = 0; i < sizeof names / sizeof *names;
			     i++) {
				struct router_view v = {prefixes[p], a, true,
							filters[k]};
				const char *o1 = NULL, *o2 = NULL, *o3 = NULL;
				int want = router_resolve(&v, 1, INSTANCE_TOOLS,
							  names[i], true, &o1);
				json_t *by_ix = router_view_item(
					&v, &ix, INSTANCE_TOOLS, names[i], &o2);
				json_t *walked = router_view_item(
					&v, NULL, INSTANCE_TOOLS, names[i],
					&o3);
				cr_assert_eq(by_ix != NULL, want == 0,
					     "\"%s\" prefix \"%s\" filter %zu",
					     names[i], prefixes[p], k);
				cr_assert_eq(by_ix, walked, "%s", names[i]);
				if (want == 0) {
					cr_assert_eq(o2, o1);
					cr_assert_str_eq(
						json_string_value(
							json_object_get(
								by_ix, "name")),
						o1);
				}
			}
	/* A name met twice: the first item, as the walk finds it. */
	struct router_view plain = {"", a, true, NULL};
	const char *orig;
	cr_assert_eq(
		router_view_item(&plain, &ix, INSTANCE_TOOLS, "add", &orig),
		json_array_get(a, 1));
	/* An index of another list is not read: the view's list is walked. */
	json_t *b = tools_of("other");
	struct router_view vb = {"", b, true, NULL};
	cr_assert_not_null(
		router_view_item(&vb, &ix, INSTANCE_TOOLS, "other", &orig));
	cr_assert_null(
		router_view_item(&vb, &ix, INSTANCE_TOOLS, "echo", &orig));
	listindex_free(&ix);
	json_decref(a);
	json_decref(b);
}

/* Resources are looked up by uri (router_resolve_uri walks them); their
 * index is by uri too, never by name. */
Test(router, view_item_of_resources_is_by_name_and_walked)
{
	json_t *r =
		json_pack("[{s:s,s:s}]", "uri", "file:///a", "name", "alpha");
	struct listindex ix = {0};
	listindex_build(&ix, r, INSTANCE_RESOURCES);
	struct router_view v = {"", r, true, NULL};
	const char *orig;
	cr_assert_not_null(
		router_view_item(&v, &ix, INSTANCE_RESOURCES, "alpha", &orig));
	cr_assert_null(router_view_item(&v, &ix, INSTANCE_RESOURCES,
					"file:///a", &orig));
	listindex_free(&ix);
	json_decref(r);
}
