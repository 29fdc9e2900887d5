/* A file watched through its folder, on a real loop and file system: in
 * place writes, replacement by rename, a burst, other names, and a folder
 * that goes and comes back. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "util/filewatch.h"

static char root[] = "/tmp/mcpv-fw-XXXXXX";
static char sub[256], file[300];
static uv_loop_t loop;
static uv_timer_t bound;
static unsigned calls, last_events;
static bool timed_out;

static void fw_cb(void *arg, const char *path, unsigned events,
		  uint64_t span_ms)
{
	(void)arg;
	(void)span_ms;
	cr_assert_str_eq(path, file);
	calls++;
	last_events = events;
	uv_stop(&loop);
}

static void fw_bound_cb(uv_timer_t *t)
{
	(void)t;
	timed_out = true;
	uv_stop(&loop);
}

/* Runs the loop until a callback or ms pass; true when one came. */
static bool fw_wait(uint64_t ms)
{
	unsigned before = calls;
	timed_out = false;
	uv_timer_start(&bound, fw_bound_cb, ms, 0);
	while (calls == before && !timed_out)
		uv_run(&loop, UV_RUN_ONCE);
	uv_timer_stop(&bound);
	return calls > before;
}

static void fw_write(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void fw_setup(void)
{
	cr_assert_not_null(mkdtemp(root));
	snprintf(sub, sizeof sub, "%s/conf", root);
	snprintf(file, sizeof file, "%s/mcp.json", sub);
	mkdir(sub, 0700);
	fw_write(file, "{}");
	uv_loop_init(&loop);
	uv_timer_init(&loop, &bound);
}

static void fw_teardown(void)
{
	uv_close((uv_handle_t *)&bound, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0, "a handle was left open");
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(filewatch, .init = fw_setup, .fini = fw_teardown, .timeout = 20);

Test(filewatch, an_in_place_write_is_one_callback)
{
	struct filewatch *w = filewatch_new(&loop, file, fw_cb, NULL);
	cr_assert_eq(filewatch_armed(w), 1);
	fw_write(file, "{\"a\":1}");
	cr_assert(fw_wait(3000));
	/* Nothing more comes of it. */
	cr_assert_not(fw_wait(2 * FILEWATCH_QUIET_MS));
	cr_assert_eq(calls, 1);
	filewatch_free(w);
}

Test(filewatch, a_replacement_by_rename_is_seen)
{
	struct filewatch *w = filewatch_new(&loop, file, fw_cb, NULL);
	char tmp[400];
	snprintf(tmp, sizeof tmp, "%s/.mcp.json.swp", sub);
	fw_write(tmp, "{\"b\":2}");
	cr_assert_eq(rename(tmp, file), 0);
	cr_assert(fw_wait(3000));
	/* And again: the watch is on the folder, not the replaced file. */
	fw_write(tmp, "{\"b\":3}");
	cr_assert_eq(rename(tmp, file), 0);
	cr_assert(fw_wait(3000));
	cr_assert_eq(calls, 2);
	filewatch_free(w);
}

Test(filewatch, a_burst_of_writes_is_one_callback)
{
	struct filewatch *w = filewatch_new(&loop, file, fw_cb, NULL);
	for (int i = 0; i < 20; i++) {
		char text[32];
		snprintf(text, sizeof text, "{\"n\":%d}", i);
		fw_write(file, text);
		uv_run(&loop, UV_RUN_NOWAIT); /* events read as they come */
	}
	cr_assert(fw_wait(3000));
	cr_assert_gt(last_events, 1);
	cr_assert_not(fw_wait(2 * FILEWATCH_QUIET_MS));
	cr_assert_eq(calls, 1);
	filewatch_free(w);
}

Test(filewatch, other_names_in_the_folder_are_ignored)
{
	struct filewatch *w = filewatch_new(&loop, file, fw_cb, NULL);
	char other[400];
	snprintf(other, sizeof other, "%s/other.json", sub);
	fw_write(other, "{}");
	unlink(other);
	cr_assert_not(fw_wait(3 * FILEWATCH_QUIET_MS));
	filewatch_free(w);
}

Test(filewatch, a_folder_replaced_is_watched_again)
{
	struct filewatch *w = filewatch_new(&loop, file, fw_cb, NULL);
	char old[400], cmd[1000];
	snprintf(old, sizeof old, "%s/conf.old", root);
	/* The folder renamed away and a new one put in its place. */
	cr_assert_eq(rename(sub, old), 0);
	mkdir(sub, 0700);
	fw_write(file, "{\"new\":1}");
	cr_assert(fw_wait(3000));
	/* The new folder's file is the one watched now. */
	fw_write(file, "{\"new\":2}");
	cr_assert(fw_wait(3000));
	/* Removed outright, then back a moment later: the re-arm timer. */
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", sub);
	cr_assert_eq(system(cmd), 0);
	/* The file's removal is a change (its reader finds it gone). */
	cr_assert(fw_wait(3000));
	cr_assert_eq(filewatch_armed(w), 0);
	mkdir(sub, 0700);
	fw_write(file, "{\"back\":1}");
	cr_assert(fw_wait(FILEWATCH_REARM_MS + 3000));
	cr_assert_eq(filewatch_armed(w), 1);
	filewatch_free(w);
}

Test(filewatch, a_folder_that_does_not_exist_yet)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", sub);
	cr_assert_eq(system(cmd), 0);
	struct filewatch *w = filewatch_new(&loop, file, fw_cb, NULL);
	cr_assert_eq(filewatch_armed(w), 0);
	mkdir(sub, 0700);
	fw_write(file, "{}");
	cr_assert(fw_wait(FILEWATCH_REARM_MS + 3000));
	filewatch_free(w);
}

Test(filewatch, a_symlink_is_watched_at_its_target_and_followed)
{
	char dots[300], t1[400], t2[400];
	snprintf(dots, sizeof dots, "%s/dotfiles", root);
	mkdir(dots, 0700);
	snprintf(t1, sizeof t1, "%s/one.json", dots);
	snprintf(t2, sizeof t2, "%s/two.json", dots);
	fw_write(t1, "{}");
	fw_write(t2, "{}");
	unlink(file);
	cr_assert_eq(symlink(t1, file), 0);
	struct filewatch *w = filewatch_new(&loop, file, fw_cb, NULL);
	/* The target edited in its own folder: reported as the link. */
	fw_write(t1, "{\"t\":1}");
	cr_assert(fw_wait(3000));
	/* The link pointed elsewhere: seen, and from then on the new
	 * target is the one that counts. */
	char tmp[400];
	snprintf(tmp, sizeof tmp, "%s/.link", sub);
	cr_assert_eq(symlink(t2, tmp), 0);
	cr_assert_eq(rename(tmp, file), 0);
	cr_assert(fw_wait(3000));
	fw_write(t2, "{\"t\":2}");
	cr_assert(fw_wait(3000));
	fw_write(t1, "{\"t\":3}");
	cr_assert_not(fw_wait(3 * FILEWATCH_QUIET_MS), "the old target");
	filewatch_free(w);
}
