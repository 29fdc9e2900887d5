/*
 * What the journal still holds when a runtime stops, named for its log:
 * whatever could not be confirmed gone (journal.h).
 */
#include <stdlib.h>

#include "journal/journal_int.h"
#include "util/buf.h"

char *journal_left_text(const struct journal *j)
{
	if (j == NULL)
		return NULL;
	struct buf b;
	buf_init(&b);
	for (size_t i = 0; i < j->n; i++) {
		const struct journal_entry *e = &j->entries[i];
		if (e->carried)
			continue;
		if (b.len)
			buf_puts(&b, ", ");
		if (e->kind == UPSTREAM_OWNED_CONTAINER)
			buf_printf(&b, "container %s (%s)",
				   e->container_name ? e->container_name
						     : e->container_id,
				   e->engine ? e->engine : "?");
		else
			buf_printf(&b, "process %d", (int)e->pid);
	}
	if (b.len == 0) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}
