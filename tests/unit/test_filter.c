/* Filters: '*' globs, what a filter keeps, how "tools", "prompts" and
 * "resources" are read and refused, that they stay out of a server's
 * connection identity, and how the router leaves out what they drop. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "config/filter.h"
#include "config_fixture.h"
#include "pool/pool.h"
#include "router/router.h"
#include "util/buf.h"
#include "util/xmalloc.h"

/* ---- globs ---- */

Test(filter, glob_literal_text_matches_only_itself)
{
	cr_assert(config_glob_match("echo", "echo"));
	cr_assert_not(config_glob_match("echo", "echo2"));
	cr_assert_not(config_glob_match("echo", "ech"));
	cr_assert_not(config_glob_match("echo", ""));
	cr_assert_not(config_glob_match("Echo", "echo"), "case-sensitive");
	/* '?', '[', '\\' and '.' are not special. */
	cr_assert(config_glob_match("a?b[c]\\.d", "a?b[c]\\.d"));
	cr_assert_not(config_glob_match("a?c", "abc"));
	cr_assert_not(config_glob_match("[ab]", "a"));
}

Test(filter, glob_star_matches_any_run_including_none)
{
	cr_assert(config_glob_match("*", ""));
	cr_assert(config_glob_match("*", "anything/at all"));
	cr_assert(config_glob_match("**", "x"));
	cr_assert(config_glob_match("get_*", "get_"));
	cr_assert(config_glob_match("get_*", "get_issue"));
	cr_assert_not(config_glob_match("get_*", "list_get_issue"));
	cr_assert(config_glob_match("*_issue", "create_issue"));
	cr_assert_not(config_glob_match("*_issue", "create_issues"));
	cr_assert(config_glob_match("*issue*", "issue"));
	cr_assert(config_glob_match("a*b*c", "abc"));
	cr_assert(config_glob_match("a*b*c", "aXXbYYc"));
	cr_assert_not(config_glob_match("a*b*c", "aXXcYYb"));
	/* Across '/', for uris. */
	cr_assert(config_glob_match("file:///home/*/.ssh/*",
				    "file:///home/me/.ssh/id_rsa"));
	cr_assert(config_glob_match("demo://item/*", "demo://item/{id}"));
}

Test(filter, glob_backtracks_to_the_last_star)
{
	/* The first "b" is not the one the pattern needs. */
	cr_assert(config_glob_match("a*b", "aXbYb"));
	cr_assert_not(config_glob_match("a*b", "aXbYbZ"));
	cr_assert(config_glob_match("*ab", "aab"));
	cr_assert(config_glob_match("*aab", "aaab"));
	cr_assert(config_glob_match("a*ab*b", "aabab"));
	cr_assert_not(config_glob_match("a*ab*bc", "aababb"));
	/* A '*' in the text is matched like any other character. */
	cr_assert(config_glob_match("a*", "a*"));
	cr_assert_not(config_glob_match("a*c", "a*b"));
}

Test(filter, glob_worst_case_is_bounded)
{
	/* A pattern of many stars against a long text that almost fits:
	 * quadratic at worst, not exponential (this would not finish). */
	char *pat = xcalloc(CONFIG_FILTER_MAX_PATTERN + 1, 1);
	for (size_t i = 0; i < CONFIG_FILTER_MAX_PATTERN - 1; i += 2)
		memcpy(pat + i, "a*", 2);
	pat[CONFIG_FILTER_MAX_PATTERN - 1] = 'b';
	char *text = xcalloc(8193, 1);
	memset(text, 'a', 8192);
	cr_assert_not(config_glob_match(pat, text));
	text[8191] = 'b';
	cr_assert(config_glob_match(pat, text));
	free(pat);
	free(text);
}

/* ---- what a filter keeps ---- */

static struct config_filter filter_of(char **allow, size_t nallow, char **deny,
				      size_t ndeny)
{
	struct config_filter f = {allow, nallow, deny, ndeny};
	return f;
}

Test(filter, deny_wins_and_empty_allow_keeps_everything)
{
	char *allow[] = {"get_*", "list_*"};
	char *deny[] = {"*_secret", "list_users"};
	struct config_filter none = filter_of(NULL, 0, NULL, 0);
	cr_assert(config_filter_keeps(&none, "anything"));
	cr_assert(config_filter_keeps(&none, NULL));
	cr_assert_not(config_filter_active(&none));

	struct config_filter only_deny = filter_of(NULL, 0, deny, 2);
	cr_assert(config_filter_keeps(&only_deny, "get_issue"));
	cr_assert_not(config_filter_keeps(&only_deny, "get_secret"));
	cr_assert_not(config_filter_keeps(&only_deny, "list_users"));

	struct config_filter both = filter_of(allow, 2, deny, 2);
	cr_assert(config_filter_keeps(&both, "get_issue"));
	cr_assert(config_filter_keeps(&both, "list_repos"));
	cr_assert_not(config_filter_keeps(&both, "create_issue"),
		      "not allowed");
	cr_assert_not(config_filter_keeps(&both, "get_secret"),
		      "allowed, but deny wins");
	cr_assert_not(config_filter_keeps(&both, "list_users"));
	/* An item without a name: nothing to match, so not kept. */
	cr_assert_not(config_filter_keeps(&both, NULL));
}

/* ---- reading the config ---- */

static const char *parse_error(const char *server_json)
{
	static char err[1024];
	struct config *cfg = cf_one(server_json);
	snprintf(err, sizeof err, "%s",
		 cfg->servers[0].error ? cfg->servers[0].error : "");
	config_free(cfg);
	return err;
}

Test(filter, reads_the_three_filters)
{
	struct config *cfg = cf_one(
		"{\"command\":\"x\",\"tools\":{\"allow\":[\"get_*\"],"
		"\"deny\":[\"get_secret\"]},\"prompts\":{\"deny\":[\"*\"]},"
		"\"resources\":{\"allow\":[\"docs://*\"]}}");
	const struct server_config *s = &cfg->servers[0];
	cr_assert_null(s->error, "%s", s->error);
	cr_assert_eq(s->tools.nallow, 1);
	cr_assert_str_eq(s->tools.allow[0], "get_*");
	cr_assert_eq(s->tools.ndeny, 1);
	cr_assert_eq(s->prompts.nallow, 0);
	cr_assert_eq(s->prompts.ndeny, 1);
	cr_assert_eq(s->resources.nallow, 1);
	char *d = cf_dump(config_server_describe(s));
	cf_assert_has(d, "\"filters\":{\"prompts\":{\"deny\":[\"*\"]},"
			 "\"resources\":{\"allow\":[\"docs://*\"]},"
			 "\"tools\":{\"allow\":[\"get_*\"],\"deny\":[\"get_"
			 "secret\"]}}");
	free(d);
	config_free(cfg);
}

Test(filter, absent_null_and_empty_filters_keep_everything)
{
	struct config *cfg =
		cf_one("{\"command\":\"x\",\"tools\":null,\"prompts\":{},"
		       "\"resources\":{\"allow\":[],\"deny\":null}}");
	const struct server_config *s = &cfg->servers[0];
	cr_assert_null(s->error, "%s", s->error);
	cr_assert_not(config_filter_active(&s->tools));
	cr_assert_not(config_filter_active(&s->prompts));
	cr_assert_not(config_filter_active(&s->resources));
	char *d = cf_dump(config_server_describe(s));
	cf_assert_lacks(d, "filters");
	free(d);
	config_free(cfg);
}

Test(filter, refuses_what_is_not_a_filter)
{
	cf_assert_has(parse_error("{\"command\":\"x\",\"tools\":[\"a\"]}"),
		      "t.json: server \"s\": field \"tools\": expected an "
		      "object with \"allow\" and/or \"deny\" (arrays of name "
		      "patterns), got array");
	/* A misspelt list must not let everything through. */
	cf_assert_has(parse_error("{\"command\":\"x\",\"prompts\":{\"alow\":"
				  "[\"a\"]}}"),
		      "field \"prompts\": unknown key \"alow\": a filter "
		      "takes only \"allow\" and \"deny\"");
	cf_assert_has(parse_error("{\"command\":\"x\",\"resources\":{\"deny\":"
				  "\"file://*\"}}"),
		      "field \"resources\": \"deny\": expected an array of "
		      "name patterns (strings), got string");
	cf_assert_has(
		parse_error(
			"{\"command\":\"x\",\"tools\":{\"allow\":[\"a\",1]}}"),
		"field \"tools\": \"allow\": item 1: expected a string, got "
		"number");
	cf_assert_has(
		parse_error("{\"command\":\"x\",\"tools\":{\"deny\":[\"\"]}}"),
		"\"deny\": item 0: an empty pattern matches nothing; "
		"\"*\" matches everything");
	cf_assert_has(parse_error("{\"command\":\"x\",\"tools\":{\"deny\":"
				  "[\"a\\nb\"]}}"),
		      "\"deny\": item 0: holds a control character");
}

static char *patterns_json(size_t n, size_t len)
{
	struct buf b;
	buf_init(&b);
	buf_puts(&b, "{\"command\":\"x\",\"tools\":{\"deny\":[");
	for (size_t i = 0; i < n; i++) {
		buf_puts(&b, i ? ",\"" : "\"");
		for (size_t k = 0; k < len; k++)
			buf_puts(&b, "p");
		buf_puts(&b, "\"");
	}
	buf_puts(&b, "]}}");
	return buf_steal(&b);
}

Test(filter, limits_on_count_and_length)
{
	char *ok = patterns_json(CONFIG_FILTER_MAX_PATTERNS, 4);
	cr_assert_str_eq(parse_error(ok), "");
	free(ok);
	char *many = patterns_json(CONFIG_FILTER_MAX_PATTERNS + 1, 4);
	cf_assert_has(parse_error(many),
		      "field \"tools\": \"deny\": 257 patterns, at most 256 "
		      "are allowed");
	free(many);
	char *edge = patterns_json(1, CONFIG_FILTER_MAX_PATTERN);
	cr_assert_str_eq(parse_error(edge), "");
	free(edge);
	char *longer = patterns_json(1, CONFIG_FILTER_MAX_PATTERN + 1);
	cf_assert_has(parse_error(longer),
		      "\"deny\": item 0: longer than 1024 bytes");
	free(longer);
}

Test(filter, a_pattern_written_with_the_prefix_is_pointed_out)
{
	struct config *cfg = cf_one(
		"{\"command\":\"x\",\"prefix\":\"gh\",\"tools\":{\"allow\":"
		"[\"gh__create_*\",\"list_*\"]},\"resources\":{\"allow\":"
		"[\"gh__x\"]}}");
	cr_assert_null(cfg->servers[0].error);
	cr_assert_eq(cfg->nwarnings, 1);
	cf_assert_has(cfg->warnings[0],
		      "server \"s\": field \"tools\": pattern "
		      "\"gh__create_*\" starts with the prefix \"gh__\"; "
		      "patterns match the server's own names, without the "
		      "prefix");
	config_free(cfg);
	/* The default prefix is the server's name. */
	cfg = cf_one("{\"command\":\"x\",\"prompts\":{\"deny\":[\"s__p\"]}}");
	cr_assert_eq(cfg->nwarnings, 1);
	config_free(cfg);
}

Test(filter, filters_are_not_part_of_the_connection)
{
	struct config *a = cf_one("{\"command\":\"x\",\"args\":[\"1\"]}");
	struct config *b =
		cf_one("{\"command\":\"x\",\"args\":[\"1\"],\"tools\":{"
		       "\"deny\":[\"*\"]},\"resources\":{\"allow\":[\"r\"]}}");
	char *ia = cf_dump(config_server_identity(&a->servers[0], true, "s"));
	char *ib = cf_dump(config_server_identity(&b->servers[0], true, "s"));
	cr_assert_str_eq(ia, ib);
	/* So they share an instance, and a reload that changes only a
	 * filter keeps the one that runs. */
	struct pool_scope_ctx sc = {"s1", NULL, "/tmp", NULL};
	char *ka = pool_instance_key(&a->servers[0], &sc, NULL);
	char *kb = pool_instance_key(&b->servers[0], &sc, NULL);
	cr_assert_str_eq(ka, kb);
	char *pa = pool_server_ident(&a->servers[0]);
	char *pb = pool_server_ident(&b->servers[0]);
	cr_assert_str_eq(pa, pb);
	free(ia);
	free(ib);
	free(ka);
	free(kb);
	free(pa);
	free(pb);
	config_free(a);
	config_free(b);
}

/* ---- the router leaves out what a filter drops ---- */

static json_t *items_of(const char *key, const char *names)
{
	json_t *a = json_array();
	char *copy = xstrdup(names);
	for (char *t = strtok(copy, ","); t; t = strtok(NULL, ","))
		json_array_append_new(a, json_pack("{s:s}", key, t));
	free(copy);
	return a;
}

static const char *name_at(json_t *list, size_t i)
{
	return json_string_value(
		json_object_get(json_array_get(list, i), "name"));
}

Test(filter, aggregate_leaves_out_what_the_filter_drops)
{
	char *deny[] = {"add"};
	char *allow[] = {"e*"};
	struct config_filter fd = filter_of(NULL, 0, deny, 1);
	struct config_filter fa = filter_of(allow, 1, NULL, 0);
	json_t *a = items_of("name", "echo,add,pid"),
	       *b = items_of("name", "echo,env,pid");
	struct router_view v[] = {{"demo", a, true, &fd},
				  {"other", b, true, &fa}};
	json_t *all = router_aggregate(v, 2, INSTANCE_TOOLS);
	cr_assert_eq(json_array_size(all), 4);
	cr_assert_str_eq(name_at(all, 0), "demo__echo");
	cr_assert_str_eq(name_at(all, 1), "demo__pid");
	cr_assert_str_eq(name_at(all, 2), "other__echo");
	cr_assert_str_eq(name_at(all, 3), "other__env");
	json_decref(all);
	json_decref(a);
	json_decref(b);
}

Test(filter, resolve_treats_a_filtered_name_as_absent)
{
	char *deny[] = {"add"};
	struct config_filter fd = filter_of(NULL, 0, deny, 1);
	json_t *a = items_of("name", "echo,add"), *b = items_of("name", "add");
	const char *orig = NULL;
	struct router_view one[] = {{"demo", a, true, &fd}};
	cr_assert_eq(router_resolve(one, 1, INSTANCE_TOOLS, "demo__add", true,
				    &orig),
		     -1);
	cr_assert_eq(router_resolve(one, 1, INSTANCE_TOOLS, "demo__echo", true,
				    &orig),
		     0);
	/* Two servers without prefix: the first one's "add" is filtered,
	 * so the later one's is the one a client sees, and the one a call
	 * reaches (a filtered name collides with nothing). */
	struct router_view two[] = {{"", a, true, &fd}, {"", b, true, NULL}};
	cr_assert_eq(router_resolve(two, 2, INSTANCE_TOOLS, "add", true, &orig),
		     1);
	json_t *all = router_aggregate(two, 2, INSTANCE_TOOLS);
	cr_assert_eq(json_array_size(all), 2);
	json_decref(all);
	/* Unknown lists: a name goes to the server its prefix names, unless
	 * the filter drops it (it never reaches the server then). */
	struct router_view unknown[] = {{"demo", NULL, true, &fd}};
	cr_assert_eq(router_resolve(unknown, 1, INSTANCE_TOOLS, "demo__add",
				    true, &orig),
		     -1);
	cr_assert_eq(router_resolve(unknown, 1, INSTANCE_TOOLS, "demo__nope",
				    true, &orig),
		     0);
	cr_assert_str_eq(orig, "nope");
	json_decref(a);
	json_decref(b);
}

Test(filter, resources_by_uri_and_templates_by_uri_template)
{
	char *deny[] = {"secret://*"};
	struct config_filter f = filter_of(NULL, 0, deny, 1);
	json_t *res = json_pack("[{s:s,s:s},{s:s,s:s}]", "name", "readme",
				"uri", "demo://readme", "name", "key", "uri",
				"secret://key");
	json_t *tpl = json_pack("[{s:s,s:s},{s:s,s:s}]", "name", "secret",
				"uriTemplate", "secret://{id}", "name", "any",
				"uriTemplate", "any://{path}");
	struct router_view r[] = {{"demo", res, true, &f}};
	struct router_view t[] = {{"demo", tpl, true, &f}};
	json_t *rl = router_aggregate(r, 1, INSTANCE_RESOURCES);
	cr_assert_eq(json_array_size(rl), 1);
	json_t *tl = router_aggregate(t, 1, INSTANCE_TEMPLATES);
	cr_assert_eq(json_array_size(tl), 1);
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(tl, 0), "uriTemplate")),
			 "any://{path}");
	cr_assert_eq(router_resolve_uri(r, t, 1, "demo://readme"), 0);
	cr_assert_eq(router_resolve_uri(r, t, 1, "secret://key"), -1);
	cr_assert_eq(router_resolve_uri(r, t, 1, "any://x"), 0);
	/* Through a kept template too, the uri itself is held to the
	 * filter. */
	char *deny2[] = {"any://private/*"};
	struct config_filter f2 = filter_of(NULL, 0, deny2, 1);
	struct router_view t2[] = {{"demo", tpl, true, &f2}};
	struct router_view r2[] = {{"demo", res, true, &f2}};
	cr_assert_eq(router_resolve_uri(r2, t2, 1, "any://public/x"), 0);
	cr_assert_eq(router_resolve_uri(r2, t2, 1, "any://private/x"), -1);
	json_decref(rl);
	json_decref(tl);
	json_decref(res);
	json_decref(tpl);
}

/* ---- names too long for hosts ---- */

Test(filter, long_names_count_kept_tools_with_the_prefix)
{
	/* 40 + 2 + 22 = 64 fits; 24 does not. */
	const char *prefix = "pppppppppppppppppppppppppppppppppppppppp";
	json_t *tools = items_of("name", "ttttttttttttttttttttt1,"
					 "tttttttttttttttttttttt23,"
					 "hidden_tttttttttttttttt23,short");
	char *deny[] = {"hidden_*"};
	struct config_filter f = filter_of(NULL, 0, deny, 1);
	struct router_view v = {prefix, tools, true, &f};
	size_t longest;
	json_t *longn = router_long_names(&v, &longest);
	cr_assert_eq(json_array_size(longn), 1, "the filtered one is not seen");
	cr_assert_eq(longest, 24);
	char *advice = router_long_names_advice("gh", prefix, longn, longest);
	cf_assert_has(advice, "server \"gh\": 1 tool name(s) longer than 64 "
			      "characters as clients see them");
	cf_assert_has(advice, "set its \"prefix\" to at most 38 characters");
	free(advice);
	json_decref(longn);
	json_decref(tools);
}

Test(filter, long_names_advice_when_no_prefix_fits)
{
	json_t *one = json_pack("[s]", "x");
	char *a = router_long_names_advice("s", "p", one, 63);
	cf_assert_has(a, "set its \"prefix\" to \"\" (no prefix)");
	free(a);
	char *b = router_long_names_advice("s", "", one, 65);
	cf_assert_has(b, "no \"prefix\" fixes: hide it with \"tools\": "
			 "{\"deny\": [...]}");
	free(b);
	json_decref(one);
}
