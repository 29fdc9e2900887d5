/*
 * runtime_launch (see launch.h): fork twice so the runtime belongs to no
 * one that might forget to reap it; the middle process reports the
 * runtime's pid through a pipe, and the runtime's own end of the pipe
 * (close-on-exec) reports an exec failure or, by closing, a success.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "home/launch.h"
#include "proc/procfs.h"
#include "util/fsutil.h"
#include "util/paths.h"
#include "util/xmalloc.h"

static int log_open(const char *home)
{
	struct paths p;
	paths_resolve(&p, home);
	int rc = fsutil_private_dir(p.state_dir, true, NULL);
	if (rc < 0) {
		paths_free(&p);
		return rc;
	}
	char *path = xasprintf("%s/" LAUNCH_LOG_NAME, p.state_dir);
	paths_free(&p);
	int fd = open(path,
		      O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
		      0600);
	free(path);
	/* Appended to, never cut here: the runtime that writes it rotates
	 * it (util/log.h), and a second runtime refused by the home's lock
	 * must not touch the running one's file. */
	return fd < 0 ? -errno : fd;
}

static bool read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

/* In the runtime-to-be, between fork and exec: only async-signal-safe
 * calls, and on any failure the errno goes up the pipe. */
static void child_exec(int wfd, int logfd, const char *exe, const char *cwd,
		       char *const argv[], char *const envp[])
{
	int e = 0;
	/* Close-on-exec: dup2 gives fd 0 without the flag, and the
	 * runtime keeps no second descriptor of it. */
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null == 0)
		null = fcntl(0, F_SETFD, 0) < 0 ? -1 : 0; /* dup2 would not */
	if (null < 0 || dup2(null, 0) < 0 || dup2(logfd, 1) < 0 ||
	    dup2(logfd, 2) < 0 || (cwd && chdir(cwd) < 0))
		e = errno;
	if (!e) {
		execve(exe, argv, envp);
		e = errno;
	}
	if (write(wfd, &e, sizeof e) < 0) {
		/* The parent then sees an early EOF and reports EIO. */
	}
	_exit(127);
}

/* Our environment with the entries env names replaced or removed; built
 * before fork, so the child only calls execve. */
static char **env_build(char *const env[])
{
	extern char **environ;
	size_t n = 0, m = 0;
	while (environ[n])
		n++;
	while (env && env[m])
		m++;
	char **out = xcalloc(n + m + 1, sizeof *out);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		bool named = false;
		for (size_t j = 0; j < m && !named; j++) {
			size_t len = strcspn(env[j], "=");
			named = strncmp(environ[i], env[j], len) == 0 &&
				environ[i][len] == '=';
		}
		if (!named)
			out[k++] = environ[i];
	}
	for (size_t j = 0; j < m; j++)
		if (strchr(env[j], '='))
			out[k++] = env[j];
	return out;
}

int runtime_launch(const char *home, const char *exe, const char *cwd,
		   char *const args[], char *const env[], pid_t *pid_out,
		   uint64_t *start)
{
	*pid_out = 0;
	*start = 0;
	char self[PATH_MAX];
	if (!exe) {
		ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
		if (n < 0)
			return -errno;
		self[n] = '\0';
		exe = self;
	}
	size_t nargs = 0;
	while (args[nargs])
		nargs++;
	char **argv = xcalloc(nargs + 3, sizeof *argv);
	argv[0] = (char *)"mcpvisor";
	argv[1] = (char *)"serve";
	for (size_t i = 0; i < nargs; i++)
		argv[i + 2] = args[i];
	int logfd = log_open(home);
	if (logfd < 0) {
		free(argv);
		return logfd;
	}
	/* Two pipes: the middle process writes the runtime's pid on one, the
	 * runtime its exec error on the other (EOF when exec worked). On one
	 * pipe a quick exec failure could come before the pid and be read as
	 * part of it. */
	int fds[2], efds[2];
	if (pipe2(fds, O_CLOEXEC) < 0) {
		int e = errno;
		close(logfd);
		free(argv);
		return -e;
	}
	if (pipe2(efds, O_CLOEXEC) < 0) {
		int e = errno;
		close(fds[0]);
		close(fds[1]);
		close(logfd);
		free(argv);
		return -e;
	}
	char **envp = env_build(env);
	pid_t mid = fork();
	if (mid == 0) {
		close(fds[0]);
		close(efds[0]);
		/* A session of its own: no terminal's SIGHUP or ^C reaches
		 * it, and it outlives the command that started it. */
		setsid();
		pid_t rt = fork();
		if (rt == 0)
			child_exec(efds[1], logfd, exe, cwd, argv, envp);
		close(efds[1]);
		long v = rt;
		if (write(fds[1], &v, sizeof v) < 0) {
			/* The parent sees EOF and reports EIO. */
		}
		_exit(0);
	}
	int e = mid < 0 ? errno : 0;
	close(fds[1]);
	close(efds[1]);
	close(logfd);
	free(argv);
	free(envp);
	long rt = 0;
	int exec_err = 0;
	if (!e) {
		while (waitpid(mid, NULL, 0) < 0 && errno == EINTR) {
		}
		if (!read_full(fds[0], &rt, sizeof rt) || rt <= 0)
			e = rt < 0 ? EAGAIN : EIO;
		else if (read_full(efds[0], &exec_err, sizeof exec_err))
			e = exec_err ? exec_err : EIO;
	}
	close(fds[0]);
	close(efds[0]);
	if (e)
		return -e;
	*pid_out = (pid_t)rt;
	*start = procfs_start_time((pid_t)rt);
	return 0;
}
