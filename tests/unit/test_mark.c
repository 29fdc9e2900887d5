/*
 * Unit tests for the restart mark (home/mark.c) and the detached start
 * of a runtime (home/launch.c). The mark counts only while the restart
 * that wrote it lives and is young; its first line is the old pid alone
 * (what the relay's reader takes). A launched program is a grandchild in
 * its own session, with the arguments, folder and environment asked for,
 * and its output in the state directory's runtime.log.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "home/launch.h"
#include "home/mark.h"
#include "proc/procfs.h"
#include "util/fsutil.h"
#include "util/paths.h"
#include "util/xmalloc.h"

static char mt_home[PATH_MAX];
static struct paths mt_p;

static void mt_init(void)
{
	strcpy(mt_home, "/tmp/mcpv-mark-XXXXXX");
	cr_assert_not_null(mkdtemp(mt_home), "mkdtemp: %s", strerror(errno));
	paths_resolve(&mt_p, mt_home);
	char *err = NULL;
	cr_assert_eq(paths_create(&mt_p, &err), 0, "%s", err);
}

static int mt_rm(const char *p, const struct stat *st, int flag,
		 struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void mt_fini(void)
{
	paths_free(&mt_p);
	nftw(mt_home, mt_rm, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(mark, .init = mt_init, .fini = mt_fini);

static char *mt_read(const char *name)
{
	char *path = xasprintf("%s/%s", mt_p.state_dir, name);
	char *text = NULL;
	int rc = fsutil_read_file(path, 1 << 20, &text, NULL);
	free(path);
	return rc < 0 ? NULL : text;
}

Test(mark, written_read_and_cleared)
{
	struct restart_mark m;
	cr_assert_eq(mark_read(mt_home, &m), -ENOENT);
	cr_assert_eq(mark_write(mt_home, 4242), 0);
	cr_assert_eq(mark_read(mt_home, &m), 0);
	cr_assert_eq(m.old_pid, 4242);
	cr_assert_eq(m.by_pid, (long)getpid());
	cr_assert_eq(m.by_start, procfs_start_time(getpid()));
	char *text = mt_read("restart.mark");
	cr_assert_not_null(text);
	cr_assert_eq(strncmp(text, "4242\n{", 6), 0, "%s", text);
	free(text);
	cr_assert_eq(mark_clear(mt_home), 0);
	cr_assert_eq(mark_read(mt_home, &m), -ENOENT);
	cr_assert_eq(mark_clear(mt_home), 0, "clearing no mark is fine");
}

Test(mark, left_by_a_restart_that_died_is_stale)
{
	pid_t child = fork();
	if (child == 0)
		_exit(mark_write(mt_home, 77) == 0 ? 0 : 1);
	int st;
	cr_assert_eq(waitpid(child, &st, 0), child);
	cr_assert_eq(WEXITSTATUS(st), 0);
	struct restart_mark m;
	cr_assert_eq(mark_read(mt_home, &m), -ESTALE);
	cr_assert_eq(m.old_pid, 77, "still says what it was");
}

Test(mark, too_old_or_garbled_is_stale)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	long long old = (long long)ts.tv_sec * 1000 - MARK_MAX_AGE_MS - 1000;
	char *s =
		xasprintf("5\n{\"oldPid\":5,\"byPid\":%ld,\"byStart\":%llu,"
			  "\"time\":%lld}\n",
			  (long)getpid(),
			  (unsigned long long)procfs_start_time(getpid()), old);
	char *path = xasprintf("%s/restart.mark", mt_p.state_dir);
	cr_assert_eq(fsutil_write_atomic(path, s, strlen(s), 0600), 0);
	struct restart_mark m;
	cr_assert_eq(mark_read(mt_home, &m), -ESTALE);
	cr_assert_eq(fsutil_write_atomic(path, "junk", 4, 0600), 0);
	cr_assert_eq(mark_read(mt_home, &m), -ESTALE);
	free(path);
	free(s);
}

/* A stand-in for `mcpvisor`: prints its arguments, two variables, its
 * folder, and whether its session is ours. */
static char *mt_script(void)
{
	char *path = xasprintf("%s/fake-mcpvisor", mt_home);
	const char *body =
		"#!/bin/sh\n"
		"sid=$(cut -d' ' -f6 /proc/$$/stat)\n"
		"echo \"args=$* foo=$MT_FOO bar=${MT_BAR-unset} cwd=$(pwd) "
		"our_session=$([ \"$sid\" = \"$MT_SID\" ] && echo yes || "
		"echo no) pid=$$\"\n";
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(body, f);
	fclose(f);
	chmod(path, 0700);
	return path;
}

Test(mark, launch_detached_with_args_env_and_folder)
{
	char *exe = mt_script();
	char *args[] = {"--port", "0", NULL};
	setenv("MT_BAR", "gone", 1);
	char sid[32];
	snprintf(sid, sizeof sid, "%ld", (long)getsid(0));
	setenv("MT_SID", sid, 1);
	char *env[] = {"MT_FOO=given", "MT_BAR", NULL};
	pid_t pid;
	uint64_t start;
	cr_assert_eq(runtime_launch(mt_home, exe, "/", args, env, &pid, &start),
		     0);
	unsetenv("MT_BAR");
	unsetenv("MT_SID");
	cr_assert_gt(pid, 0);
	/* Not our child: nothing for us to reap. */
	cr_assert_eq(waitpid(pid, NULL, WNOHANG), -1);
	cr_assert_eq(errno, ECHILD);
	char *want = xasprintf("args=serve --port 0 foo=given bar=unset cwd=/ "
			       "our_session=no pid=%ld\n",
			       (long)pid);
	char *text = NULL;
	for (int i = 0; i < 500; i++) {
		free(text);
		text = mt_read(LAUNCH_LOG_NAME);
		if (text && strstr(text, want))
			break;
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	cr_assert_not_null(text);
	cr_assert_not_null(strstr(text, want), "log: %s\nwant: %s", text, want);
	free(text);
	free(want);
	free(exe);
}

Test(mark, launch_reports_an_exec_failure)
{
	char *exe = xasprintf("%s/missing", mt_home);
	char *args[] = {NULL};
	pid_t pid;
	uint64_t start;
	cr_assert_eq(
		runtime_launch(mt_home, exe, NULL, args, NULL, &pid, &start),
		-ENOENT);
	free(exe);
}
