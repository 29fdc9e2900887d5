/*
 * An index of one server list by what a client names its items by: a
 * tool's or prompt's name, a resource's uri (templates are matched by
 * their leading part, so they have none). Made where the instance sets a
 * list and freed where the list goes, so that finding the tool a call
 * names costs a hash, not a walk of 20-150 items.
 */
#ifndef MCPV_LISTINDEX_H
#define MCPV_LISTINDEX_H

#include <jansson.h>
#include <stdbool.h>

#include "instance/instance.h"
#include "util/keymap.h"

/* Embedded in its owner; all zero is no index. */
struct listindex {
	/* The list indexed (borrowed; its owner holds it as long as the
	 * index): an index is used only with the very list it was made of,
	 * so a list that was replaced is walked rather than misread. */
	const json_t *list;
	/* key -> the first item of list with that key; the keys are the
	 * items' own strings. */
	struct keymap by_key;
};

/* The member items of list which are found by ("name", "uri"), or NULL
 * for a list that is not indexed (templates). */
const char *listindex_key(enum instance_list which);
/* Indexes list (borrowed, not NULL) of kind which, replacing what ix
 * indexed. Items without a string key are left out; of items that share a
 * key, the first is kept (what a walk finds first). The list must not
 * change while indexed. */
void listindex_build(struct listindex *ix, const json_t *list,
		     enum instance_list which);
/* Drops the index (ix then indexes nothing). */
void listindex_free(struct listindex *ix);
/* Whether ix indexes list (and so may stand for a walk of it). */
static inline bool listindex_of(const struct listindex *ix, const json_t *list)
{
	return ix != NULL && list != NULL && ix->list == list;
}
/* The first item whose key is key, or NULL. */
static inline json_t *listindex_find(const struct listindex *ix,
				     const char *key)
{
	return keymap_get(&ix->by_key, key);
}

#endif
