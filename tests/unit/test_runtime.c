/*
 * Unit tests for finding the runtime of a home (home/info.c): the
 * home's lock decides whether a runtime runs, never the pid in the runtime
 * file (which another program may have by now); the runtime file is
 * removed only while it names this process. A lock held through a second
 * open file stands in for another runtime (flock conflicts between open
 * files, even in one process).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "home/info.h"
#include "util/fsutil.h"
#include "util/paths.h"
#include "util/xmalloc.h"

static char rtt_home[PATH_MAX];
static struct paths rtt_p;

static void rtt_init(void)
{
	strcpy(rtt_home, "/tmp/mcpv-runtime-XXXXXX");
	cr_assert_not_null(mkdtemp(rtt_home), "mkdtemp: %s", strerror(errno));
	paths_resolve(&rtt_p, rtt_home);
	char *err = NULL;
	cr_assert_eq(paths_create(&rtt_p, &err), 0, "%s", err);
}

static int rtt_rm(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void rtt_fini(void)
{
	paths_free(&rtt_p);
	nftw(rtt_home, rtt_rm, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(runtime, .init = rtt_init, .fini = rtt_fini);

static void rtt_write_file(long pid)
{
	char *s = xasprintf("{\"pid\":%ld,\"port\":1234,\"url\":"
			    "\"http://127.0.0.1:1234/mcp\",\"socket\":\"%s\"}",
			    pid, rtt_p.socket_path);
	cr_assert_eq(
		fsutil_write_atomic(rtt_p.runtime_file, s, strlen(s), 0600), 0);
	free(s);
}

Test(runtime, the_lock_admits_one_holder)
{
	long holder = -1;
	int fd = runtime_lock_take(rtt_p.lock_file, &holder);
	cr_assert_geq(fd, 0, "%s", strerror(-fd));
	long other = -1;
	cr_assert_eq(runtime_lock_take(rtt_p.lock_file, &other), -EWOULDBLOCK);
	cr_assert_eq(other, (long)getpid(), "names the holder");
	cr_assert_eq(runtime_lock_probe(rtt_p.lock_file, &other, NULL), 1);
	cr_assert_eq(other, (long)getpid());
	close(fd);
	cr_assert_eq(runtime_lock_probe(rtt_p.lock_file, &other, NULL), 0);
	fd = runtime_lock_take(rtt_p.lock_file, &holder);
	cr_assert_geq(fd, 0, "free again once its holder is gone");
	close(fd);
}

Test(runtime, no_file_and_no_lock_is_no_runtime)
{
	struct runtime_info info;
	cr_assert_eq(runtime_info_read(rtt_home, &info), -ENOENT);
	runtime_info_free(&info);
}

/* Finding 12 and x5: the file names a live process (here, our parent,
 * like a reused pid), but no runtime holds the home. */
Test(runtime, a_live_pid_without_the_lock_is_stale)
{
	rtt_write_file((long)getppid());
	struct runtime_info info;
	cr_assert_eq(runtime_info_read(rtt_home, &info), -ESRCH);
	cr_assert_eq(info.pid, (long)getppid());
	runtime_info_free(&info);
	/* stop clears it; a new runtime may start. */
	cr_assert_eq(runtime_info_clear(rtt_home), 0);
	cr_assert_eq(access(rtt_p.runtime_file, F_OK), -1);
	long holder;
	int fd = runtime_lock_take(rtt_p.lock_file, &holder);
	cr_assert_geq(fd, 0);
	close(fd);
}

Test(runtime, the_holder_named_by_the_file_is_found)
{
	long holder;
	int fd = runtime_lock_take(rtt_p.lock_file, &holder);
	cr_assert_geq(fd, 0);
	struct runtime_info info;
	/* Starting: locked, no file yet. */
	cr_assert_eq(runtime_info_read(rtt_home, &info), -EAGAIN);
	cr_assert_eq(info.pid, (long)getpid());
	runtime_info_free(&info);
	/* A file left by an earlier runtime is not the holder's. */
	rtt_write_file((long)getppid());
	cr_assert_eq(runtime_info_read(rtt_home, &info), -EAGAIN);
	runtime_info_free(&info);
	rtt_write_file((long)getpid());
	cr_assert_eq(runtime_info_read(rtt_home, &info), 0);
	cr_assert_eq(info.port, 1234);
	cr_assert_str_eq(info.socket, rtt_p.socket_path);
	runtime_info_free(&info);
	cr_assert_eq(runtime_info_clear(rtt_home), -EBUSY,
		     "never cleared under a live runtime");
	cr_assert_eq(access(rtt_p.runtime_file, F_OK), 0);
	close(fd);
}

Test(runtime, the_runtime_file_is_removed_only_by_the_process_it_names)
{
	rtt_write_file((long)getppid());
	runtime_file_remove_own(rtt_p.runtime_file);
	cr_assert_eq(access(rtt_p.runtime_file, F_OK), 0, "another's file");
	rtt_write_file((long)getpid());
	runtime_file_remove_own(rtt_p.runtime_file);
	cr_assert_eq(access(rtt_p.runtime_file, F_OK), -1);
}

Test(runtime, a_socket_that_answers_is_seen)
{
	cr_assert_not(runtime_socket_answers(rtt_p.socket_path));
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	strcpy(addr.sun_path, rtt_p.socket_path);
	cr_assert_eq(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
	cr_assert_not(runtime_socket_answers(rtt_p.socket_path),
		      "bound but not listening: nobody answers");
	cr_assert_eq(listen(fd, 4), 0);
	cr_assert(runtime_socket_answers(rtt_p.socket_path));
	/* A runtime from before the lock: its socket answers, so it runs,
	 * and stop never removes its file. */
	rtt_write_file((long)getppid());
	struct runtime_info info;
	cr_assert_eq(runtime_info_read(rtt_home, &info), 0);
	runtime_info_free(&info);
	cr_assert_eq(runtime_info_clear(rtt_home), -EBUSY);
	cr_assert_eq(access(rtt_p.runtime_file, F_OK), 0);
	close(fd);
	/* Left behind by a dead runtime: stale, and clear removes both. */
	cr_assert_eq(runtime_info_read(rtt_home, &info), -ESRCH);
	runtime_info_free(&info);
	cr_assert_eq(runtime_info_clear(rtt_home), 0);
	cr_assert_eq(access(rtt_p.socket_path, F_OK), -1);
	cr_assert_eq(access(rtt_p.runtime_file, F_OK), -1);
}
