/*
 * Restarting the runtime itself (see restart.h). The new runtime must be
 * the one the user had: the same options, so they are read from the old
 * runtime's own command line and working directory (/proc) before it
 * stops, and its start is awaited until its socket answers. A restart mark
 * covers the whole gap, so a relay that meanwhile finds no runtime waits
 * instead of starting a second one with other options.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/restart.h"
#include "home/info.h"
#include "home/launch.h"
#include "home/mark.h"
#include "proc/procfs.h"
#include "util/xmalloc.h"

#define CMDLINE_MAX (64 * 1024)
#define POLL_NS (10 * 1000 * 1000)

/* The runtime's options that live in its environment. */
static const char *const carried_env[] = {"MCPVISOR_LOG", "MCPVISOR_PAGE_SIZE"};
#define NCARRIED (sizeof carried_env / sizeof carried_env[0])

struct old_runtime {
	char **args; /* after "serve", NULL-terminated */
	char *cwd;
	char *env[NCARRIED + 1]; /* "NAME=VALUE", or "NAME" to remove */
};

/* True when arg (at *i) is a --home option; skips its value too. */
static bool is_home_opt(char **argv, size_t n, size_t *i)
{
	const char *a = argv[*i];
	if (strncmp(a, "--home=", 7) == 0 || (strncmp(a, "-H", 2) == 0 && a[2]))
		return true;
	if (strcmp(a, "--home") == 0 || strcmp(a, "-H") == 0) {
		if (*i + 1 < n)
			(*i)++;
		return true;
	}
	return false;
}

/* Reads pid's command line and working directory. With home given, its
 * --home is replaced by home made absolute (its path was relative to the
 * restart's directory, and the runtime starts in the old one's). */
static int old_read(long pid, const char *home, struct old_runtime *old)
{
	memset(old, 0, sizeof *old);
	uid_t uid;
	if (procfs_uid((pid_t)pid, &uid) < 0 || uid != geteuid())
		return -EPERM;
	char *text = xmalloc(CMDLINE_MAX + 1);
	size_t len = 0;
	int rc = procfs_cmdline((pid_t)pid, text, CMDLINE_MAX, &len);
	if (rc < 0) {
		free(text);
		return rc;
	}
	text[len] = '\0';
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += text[i] == '\0';
	char **argv = xcalloc(n + 1, sizeof *argv);
	size_t k = 0;
	for (size_t i = 0; i < len && k < n; i += strlen(text + i) + 1)
		argv[k++] = text + i;
	/* `mcpvisor serve ...`: anything else is not a runtime we know how
	 * to start again. */
	if (k < 2 || strcmp(argv[1], "serve") != 0) {
		free(argv);
		free(text);
		return -EINVAL;
	}
	old->args = xcalloc(k + 2, sizeof *old->args);
	size_t m = 0;
	for (size_t i = 2; i < k; i++) {
		if (home && is_home_opt(argv, k, &i))
			continue;
		old->args[m++] = xstrdup(argv[i]);
	}
	if (home) {
		char *abs = realpath(home, NULL);
		old->args[m++] = xasprintf("--home=%s", abs ? abs : home);
		free(abs);
	}
	free(argv);
	free(text);
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/cwd", pid);
	char cwd[PATH_MAX];
	ssize_t c = readlink(path, cwd, sizeof cwd - 1);
	if (c > 0) {
		cwd[c] = '\0';
		old->cwd = xstrdup(cwd);
	}
	for (size_t i = 0; i < NCARRIED; i++) {
		char value[4096];
		if (procfs_environ_get((pid_t)pid, uid, carried_env[i], value,
				       sizeof value) == 0)
			old->env[i] = xasprintf("%s=%s", carried_env[i], value);
		else
			old->env[i] = xstrdup(carried_env[i]);
	}
	return 0;
}

static void old_free(struct old_runtime *old)
{
	for (size_t i = 0; old->args && old->args[i]; i++)
		free(old->args[i]);
	free(old->args);
	free(old->cwd);
	for (size_t i = 0; i < NCARRIED; i++)
		free(old->env[i]);
}

/* Waits for a runtime to answer on home's socket. The one we started, or
 * one that took the home first (*who its pid). CLI_* code. */
static int start_wait(const char *home, pid_t pid, uint64_t start, long *who)
{
	for (int waited = 0; waited < START_WAIT_MS; waited += 10) {
		struct runtime_info info;
		int rc = runtime_info_read(home, &info);
		bool up = rc == 0 && runtime_socket_answers(info.socket);
		*who = info.pid;
		runtime_info_free(&info);
		if (up)
			return CLI_OK;
		/* Ours died (a port taken, a config gone bad) and no other
		 * took the home: nothing will answer. */
		if (rc != -EAGAIN && !procfs_alive(pid, start))
			return CLI_FAILED;
		struct timespec ts = {0, POLL_NS};
		nanosleep(&ts, NULL);
	}
	return CLI_FAILED;
}

int restart_runtime(const char *home)
{
	struct runtime_info info;
	int rc = runtime_info_read(home, &info);
	long pid = info.pid;
	if (rc == -EPERM)
		fprintf(stderr, "mcpvisor: %s\n", info.error);
	runtime_info_free(&info);
	if (rc == -EPERM)
		return CLI_FAILED;
	if (rc == -EAGAIN) {
		fprintf(stderr,
			"mcpvisor: runtime %ld is starting or stopping; try "
			"again in a moment\n",
			pid);
		return CLI_FAILED;
	}
	if (rc < 0) {
		char *serve = cli_serve_command(home);
		fprintf(stderr,
			"mcpvisor: no runtime is running (start one with "
			"`%s`)\n",
			serve);
		free(serve);
		return CLI_NO_RUNTIME;
	}
	struct old_runtime old;
	if ((rc = old_read(pid, home, &old)) < 0) {
		old_free(&old);
		fprintf(stderr,
			"mcpvisor: cannot read how runtime %ld was started "
			"(%s); stop it with `mcpvisor stop` and start it "
			"again\n",
			pid, strerror(-rc));
		return CLI_FAILED;
	}
	/* The mark first: from the moment the runtime stops accepting, a
	 * relay must know a new one is coming. */
	if ((rc = mark_write(home, pid)) < 0) {
		old_free(&old);
		fprintf(stderr, "mcpvisor: cannot write the restart mark: %s\n",
			strerror(-rc));
		return CLI_FAILED;
	}
	if ((rc = stop_control_send(home, "/control/stop")) != CLI_OK ||
	    (rc = stop_wait(home, pid)) != CLI_OK) {
		mark_clear(home);
		old_free(&old);
		return rc;
	}
	pid_t npid;
	uint64_t nstart;
	rc = runtime_launch(home, NULL, old.cwd, old.args, old.env, &npid,
			    &nstart);
	old_free(&old);
	if (rc < 0) {
		mark_clear(home);
		fprintf(stderr, "mcpvisor: cannot start the new runtime: %s\n",
			strerror(-rc));
		return CLI_FAILED;
	}
	long who = 0;
	rc = start_wait(home, npid, nstart, &who);
	mark_clear(home);
	if (rc != CLI_OK) {
		fprintf(stderr,
			"mcpvisor: the new runtime (pid %ld) did not come up; "
			"its output is in the state directory's "
			"runtime.log\n",
			(long)npid);
		return rc;
	}
	if (who != (long)npid)
		printf("mcpvisor: runtime %ld is running (it took the home "
		       "before the one restart started)\n",
		       who);
	else
		printf("mcpvisor: runtime restarted as pid %ld\n", (long)npid);
	return CLI_OK;
}
