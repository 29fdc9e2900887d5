/*
 * Running a stdio server's command: finding the file execvp would run, so
 * a missing command fails at spawn, building the argv, and the exec shim
 * that sets the parent-death signal before it execs. Owns the shim's path.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transport/stdio.h"
#include "transport/stdio_int.h"
#include "util/xmalloc.h"

/* glibc's execvp search path when PATH is unset. */
#define STDIO_DEFAULT_PATH "/bin:/usr/bin"

static char *stdio_shim_path;

void stdio_set_exec_shim(const char *path)
{
	free(stdio_shim_path);
	stdio_shim_path = path ? xstrdup(path) : NULL;
}

const char *stdio_exec_shim(void)
{
	return stdio_shim_path;
}

/* ---- command lookup ---- */

static int stdio_check_exec(const char *path, const char *cwd)
{
	char *full = NULL;
	struct stat st;
	int err = 0;

	/* The child chdirs before it execs, so a relative name is relative
	 * to cwd, not to us. */
	if (path[0] != '/' && cwd != NULL)
		full = xasprintf("%s/%s", cwd, path);
	const char *p = full ? full : path;
	if (strlen(p) >= PATH_MAX) {
		err = -ENAMETOOLONG;
		goto fail;
	}
	if (stat(p, &st) == -1) {
		err = -errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EACCES;
		goto fail;
	}
	if (access(p, X_OK) == -1)
		err = -errno;
fail:
	free(full);
	return err;
}

static const char *stdio_env_path(char *const *env)
{
	if (env == NULL)
		return getenv("PATH");
	for (; *env != NULL; env++) {
		if (strncmp(*env, "PATH=", 5) == 0)
			return *env + 5;
	}
	return NULL;
}

/*
 * Finds the file execvp would run, with the child's PATH and cwd, so that a
 * missing command fails here, synchronously, even when the exec shim (whose
 * own exec would succeed) stands in front of it.
 */
int stdio_resolve_command(const char *cmd, char *const *env, const char *cwd,
			  char **out)
{
	*out = NULL;
	if (cmd == NULL)
		return -EINVAL;
	if (cmd[0] == '\0')
		return -ENOENT;
	if (strchr(cmd, '/') != NULL) {
		int err = stdio_check_exec(cmd, cwd);
		if (err == 0)
			*out = xstrdup(cmd);
		return err;
	}
	if (strlen(cmd) > NAME_MAX)
		return -ENAMETOOLONG;

	const char *path = stdio_env_path(env);
	if (path == NULL)
		path = STDIO_DEFAULT_PATH;
	bool denied = false;
	for (const char *p = path;;) {
		const char *colon = strchrnul(p, ':');
		size_t n = (size_t)(colon - p);
		/* An empty entry means the current directory. */
		char *cand = n ? xasprintf("%.*s/%s", (int)n, p, cmd)
			       : xasprintf("./%s", cmd);
		int err = stdio_check_exec(cand, cwd);
		if (err == 0) {
			*out = cand;
			return 0;
		}
		free(cand);
		if (err == -EACCES)
			denied = true;
		if (*colon == '\0')
			break;
		p = colon + 1;
	}
	return denied ? -EACCES : -ENOENT;
}

/* ---- argv and the exec shim ---- */

char **stdio_build_argv(const char *command, const char *file,
			const char *parent, char *const *args)
{
	size_t nargs = 0;
	size_t i = 0;

	while (args != NULL && args[nargs] != NULL)
		nargs++;
	char **argv = xcalloc(nargs + 5, sizeof *argv);
	if (stdio_shim_path != NULL) {
		argv[i++] = stdio_shim_path;
		argv[i++] = "__exec";
		argv[i++] = (char *)parent;
		argv[i++] = (char *)file;
	} else {
		argv[i++] = (char *)command;
	}
	for (size_t k = 0; k < nargs; k++)
		argv[i++] = args[k];
	argv[i] = NULL;
	return argv;
}

int stdio_exec_main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s __exec PARENT_PID COMMAND [ARGS]\n",
			argc > 0 ? argv[0] : "mcpvisor");
		return 127;
	}
	char *end;
	errno = 0;
	long parent = strtol(argv[2], &end, 10);
	if (errno != 0 || end == argv[2] || *end != '\0' || parent <= 0) {
		fprintf(stderr, "mcpvisor __exec: bad parent pid '%s'\n",
			argv[2]);
		return 127;
	}
	/* The server dies with the runtime even when the runtime is killed
	 * outright (the death signal follows the thread that forked us:
	 * libuv's loop thread). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1) {
		fprintf(stderr, "mcpvisor __exec: prctl: %s\n",
			strerror(errno));
		return 127;
	}
	/* The runtime may have died before the prctl: then no signal would
	 * ever come. */
	if (getppid() != (pid_t)parent) {
		fprintf(stderr, "mcpvisor __exec: parent %ld is gone\n",
			parent);
		return 127;
	}
	/* An ignored SIGPIPE would survive the exec into the server. */
	signal(SIGPIPE, SIG_DFL);
	execvp(argv[3], argv + 3);
	fprintf(stderr, "mcpvisor: cannot run %s: %s\n", argv[3],
		strerror(errno));
	return 127;
}
