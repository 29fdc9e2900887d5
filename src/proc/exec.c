/*
 * Running a supervised program's command: its environment, finding the
 * file execvp would run (so a missing command fails at spawn), building
 * the argv, and the exec shim that sets the parent-death signal before it
 * execs. Owns the shim's path.
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

#include "proc/owner.h"
#include "proc/supervisor.h"
#include "proc/supervisor_int.h"
#include "util/xmalloc.h"

/* glibc's execvp search path when PATH is unset. */
#define SUP_DEFAULT_PATH "/bin:/usr/bin"

static char *sup_shim_path;

void sup_set_exec_shim(const char *path)
{
	free(sup_shim_path);
	sup_shim_path = path ? xstrdup(path) : NULL;
}

const char *sup_exec_shim(void)
{
	return sup_shim_path;
}

/* ---- environment ---- */

static size_t sup_env_keylen(const char *kv)
{
	const char *eq = strchr(kv, '=');
	return eq ? (size_t)(eq - kv) : strlen(kv);
}

/* Whether env sets the variable named by kv's key. */
static bool sup_env_has(char *const *env, const char *kv)
{
	size_t klen = sup_env_keylen(kv);
	for (; env != NULL && *env != NULL; env++)
		if (sup_env_keylen(*env) == klen &&
		    strncmp(*env, kv, klen) == 0)
			return true;
	return false;
}

static bool sup_env_is_owner(const char *kv)
{
	return strncmp(kv, PROC_OWNER_ENV "=", strlen(PROC_OWNER_ENV "=")) == 0;
}

/* The owner variable is always ours: neither the runtime's own (it may
 * run under another runtime) nor the config's may stand in for it, or the
 * ladder and the journal would look for the wrong processes. */
char **sup_build_env(char *const *env, const char *token)
{
	extern char **environ;
	size_t n = 0, m = 0;
	while (environ[n])
		n++;
	while (env != NULL && env[m])
		m++;
	char **out = xcalloc(n + m + 2, sizeof *out);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!sup_env_is_owner(environ[i]) &&
		    !sup_env_has(env, environ[i]))
			out[k++] = xstrdup(environ[i]);
	for (size_t j = 0; j < m; j++)
		if (!sup_env_is_owner(env[j]))
			out[k++] = xstrdup(env[j]);
	if (token != NULL)
		out[k++] = xasprintf("%s=%s", PROC_OWNER_ENV, token);
	out[k] = NULL;
	return out;
}

char **sup_env_from_config(const struct config_kv *kv, size_t n)
{
	char **out = xcalloc(n + 1, sizeof *out);
	for (size_t i = 0; i < n; i++)
		out[i] = xasprintf("%s=%s", kv[i].key, kv[i].value);
	return out;
}

void sup_env_free(char **env)
{
	for (size_t i = 0; env != NULL && env[i] != NULL; i++)
		free(env[i]);
	free(env);
}

/* ---- command lookup ---- */

static int sup_check_exec(const char *path, const char *cwd)
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

static const char *sup_env_path(char *const *env)
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
int sup_resolve_command(const char *cmd, char *const *env, const char *cwd,
			char **out)
{
	*out = NULL;
	if (cmd == NULL)
		return -EINVAL;
	if (cmd[0] == '\0')
		return -ENOENT;
	if (strchr(cmd, '/') != NULL) {
		int err = sup_check_exec(cmd, cwd);
		if (err == 0)
			*out = xstrdup(cmd);
		return err;
	}
	if (strlen(cmd) > NAME_MAX)
		return -ENAMETOOLONG;

	const char *path = sup_env_path(env);
	if (path == NULL)
		path = SUP_DEFAULT_PATH;
	bool denied = false;
	for (const char *p = path;;) {
		const char *colon = strchrnul(p, ':');
		size_t n = (size_t)(colon - p);
		/* An empty entry means the current directory. */
		char *cand = n ? xasprintf("%.*s/%s", (int)n, p, cmd)
			       : xasprintf("./%s", cmd);
		int err = sup_check_exec(cand, cwd);
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

char **sup_build_argv(const char *command, const char *file, const char *parent,
		      char *const *args)
{
	size_t nargs = 0;
	size_t i = 0;

	while (args != NULL && args[nargs] != NULL)
		nargs++;
	char **argv = xcalloc(nargs + 5, sizeof *argv);
	if (sup_shim_path != NULL) {
		argv[i++] = sup_shim_path;
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

int sup_exec_main(int argc, char **argv)
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
