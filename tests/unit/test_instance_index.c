/* An instance list's index by name (fake transport, fake clock): made with
 * each list the instance sets, made again when list_changed replaces it,
 * dropped with it, so a lookup never reads a list that went (ASan watches
 * the strings the index borrows). */
#include <stdlib.h>

#include "instance/listindex.h"
#include "instance_fixture.h"
#include "router/router.h"
#include "util/buf.h"

#define TOOLS_CHANGED                                                          \
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/"               \
	"list_changed\"}"

/* What the call path finds for name: the item of inst's tools, through
 * the index. */
static json_t *find(struct instance *inst, const char *name)
{
	struct router_view v = {"", instance_list(inst, INSTANCE_TOOLS), true,
				NULL};
	const char *orig = NULL;
	return router_view_item(&v, instance_list_index(inst, INSTANCE_TOOLS),
				INSTANCE_TOOLS, name, &orig);
}

Test(instance_index, a_replaced_list_is_indexed_anew_and_the_old_is_gone)
{
	struct instance *inst = make(0);
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	handshake_tools(conns[0]);
	cr_assert_null(instance_list_index(inst, INSTANCE_TOOLS),
		       "no list yet, no index");
	answer_tools(conns[0], "t", 50, NULL);
	cr_assert_eq(err, 0);
	const struct listindex *ix = instance_list_index(inst, INSTANCE_TOOLS);
	cr_assert_not_null(ix);
	cr_assert(listindex_of(ix, instance_list(inst, INSTANCE_TOOLS)));
	json_t *t7 = find(inst, "t7");
	cr_assert_eq(t7,
		     json_array_get(instance_list(inst, INSTANCE_TOOLS), 7));

	/* list_changed: a new list, none of the old names. */
	serve(conns[0], TOOLS_CHANGED);
	answer_tools(conns[0], "u", 120, NULL);
	json_t *tools = instance_list(inst, INSTANCE_TOOLS);
	cr_assert_eq(json_array_size(tools), 120);
	cr_assert(
		listindex_of(instance_list_index(inst, INSTANCE_TOOLS), tools),
		"the index is of the list now set");
	cr_assert_null(find(inst, "t7"), "the old list's name is gone");
	for (int i = 0; i < 120; i++) {
		char name[16];
		snprintf(name, sizeof name, "u%d", i);
		json_t *item = find(inst, name);
		cr_assert_eq(item, json_array_get(tools, (size_t)i), "%s",
			     name);
		cr_assert_eq(
			json_integer_value(json_object_get(
				json_object_get(item, "inputSchema"), "n")),
			i);
	}
	cr_assert_null(find(inst, "u120"));
	cr_assert_null(find(inst, ""));

	/* Stopped without keeping its lists: no list, no index. */
	instance_stop(inst, "test", false);
	cr_assert_null(instance_list(inst, INSTANCE_TOOLS));
	cr_assert_null(instance_list_index(inst, INSTANCE_TOOLS));
	finish(inst);
}

Test(instance_index, seeded_lists_are_indexed)
{
	struct instance *inst = make(0);
	json_t *seed = json_pack("{s:[{s:s},{s:s}],s:[{s:s,s:s}]}", "tools",
				 "name", "a", "name", "b", "resources", "uri",
				 "file:///x", "name", "x");
	instance_seed_lists(inst, seed);
	json_decref(seed);
	cr_assert_not_null(find(inst, "b"));
	cr_assert_null(find(inst, "c"));
	const struct listindex *rix =
		instance_list_index(inst, INSTANCE_RESOURCES);
	cr_assert_not_null(rix);
	cr_assert_not_null(listindex_find(rix, "file:///x"), "by uri");
	cr_assert_null(listindex_find(rix, "x"), "not by name");
	cr_assert_null(instance_list_index(inst, INSTANCE_TEMPLATES));
	finish(inst);
}

Test(listindex, the_first_of_a_name_stays_and_odd_items_are_left_out)
{
	json_t *list =
		json_pack("[{s:s,s:i},{s:i},{},{s:s,s:i}]", "name", "dup", "at",
			  0, "name", 5, "name", "dup", "at", 3);
	struct listindex ix = {0};
	listindex_build(&ix, list, INSTANCE_TOOLS);
	cr_assert(listindex_of(&ix, list));
	cr_assert_eq(json_integer_value(
			     json_object_get(listindex_find(&ix, "dup"), "at")),
		     0, "what a walk finds first");
	cr_assert_eq(ix.by_key.n, 1);
	/* Built again over another list: only that one's names. */
	json_t *other = json_pack("[{s:s}]", "name", "solo");
	listindex_build(&ix, other, INSTANCE_TOOLS);
	cr_assert(!listindex_of(&ix, list));
	cr_assert_null(listindex_find(&ix, "dup"));
	cr_assert_not_null(listindex_find(&ix, "solo"));
	json_decref(list);
	listindex_free(&ix);
	cr_assert(!listindex_of(&ix, other));
	json_decref(other);
	listindex_free(&ix); /* twice is harmless */
}
