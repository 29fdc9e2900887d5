/* What a stopping runtime names as not confirmed gone: the journal's
 * entries, containers by name and engine, processes by pid. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "journal/journal.h"
#include "util/xmalloc.h"

Test(journal_left, names_what_is_left)
{
	char dir[] = "/tmp/jl-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	struct journal *j = NULL;
	cr_assert_eq(journal_open(dir, &j), 0);
	cr_assert_null(journal_left_text(j), "nothing left");
	char token[JOURNAL_TOKEN_LEN + 1];
	journal_new_token(token);
	struct upstream_owned c = {
		.kind = UPSTREAM_OWNED_CONTAINER,
		.token = token,
		.engine = "podman",
		.container_name = "mcpv-s-0123456789ab",
	};
	cr_assert_eq(journal_add_owned(j, &c, "k"), 0);
	struct upstream_owned p = {
		.kind = UPSTREAM_OWNED_PROCESS,
		.token = token,
		.pid = 4242,
		.pgid = 4242,
		.start_time = 1,
	};
	cr_assert_eq(journal_add_owned(j, &p, "k"), 0);
	char *text = journal_left_text(j);
	cr_assert_str_eq(text, "container mcpv-s-0123456789ab (podman), "
			       "process 4242");
	free(text);
	cr_assert_eq(journal_remove_owned(j, &p), 0);
	cr_assert_eq(journal_remove_owned(j, &c), 0);
	cr_assert_null(journal_left_text(j));
	journal_free(j);
	char *rm = xasprintf("rm -rf %s", dir);
	cr_assert_eq(system(rm), 0);
	free(rm);
}
