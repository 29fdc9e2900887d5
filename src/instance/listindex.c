/* An instance list's items by name or uri, for lookups by hash. */
#include "instance/listindex.h"

#include <stddef.h>

const char *listindex_key(enum instance_list which)
{
	switch (which) {
	case INSTANCE_TOOLS:
	case INSTANCE_PROMPTS:
		return "name";
	case INSTANCE_RESOURCES:
		return "uri";
	default:
		return NULL;
	}
}

void listindex_free(struct listindex *ix)
{
	keymap_free(&ix->by_key);
	ix->list = NULL;
}

void listindex_build(struct listindex *ix, const json_t *list,
		     enum instance_list which)
{
	listindex_free(ix);
	const char *key = listindex_key(which);
	if (key == NULL || !json_is_array(list))
		return;
	/* Backwards, each put replacing the one after it: the first item
	 * of a key is the one that stays. */
	for (size_t i = json_array_size(list); i-- > 0;) {
		json_t *item = json_array_get(list, i);
		const char *k = json_string_value(json_object_get(item, key));
		if (k != NULL)
			keymap_put(&ix->by_key, k, item);
	}
	ix->list = list;
}
