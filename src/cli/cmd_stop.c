/* `mcpvisor stop`, `restart` and `reload`: the explicit controls, sent to
 * the runtime through its Unix socket. `restart` without a server restarts
 * the runtime itself (cli/restart.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/restart.h"
#include "home/info.h"
#include "util/paths.h"
#include "util/xmalloc.h"

static void stop_usage(FILE *f)
{
	fprintf(f, "usage: mcpvisor stop [SERVER] [--force] [--home DIR]\n"
		   "\n"
		   "Without SERVER: drains the runtime (calls in flight "
		   "finish within the\n"
		   "grace period) and stops it with every server it started.\n"
		   "With SERVER: stops that server and drops its tools at "
		   "once; it stays\n"
		   "stopped until `mcpvisor restart SERVER`. Refuses while "
		   "one of its calls\n"
		   "is in flight, naming it, unless --force.\n");
}

static void restart_usage(FILE *f)
{
	fprintf(f, "usage: mcpvisor restart [SERVER] [--force] [--home DIR]\n"
		   "\n"
		   "Without SERVER: restarts the runtime itself. It drains "
		   "and stops as\n"
		   "`mcpvisor stop` does, and a new runtime starts in the "
		   "background on the\n"
		   "same home with the same options (output in the state "
		   "directory's\n"
		   "runtime.log). Meanwhile a restart mark in the state "
		   "directory tells\n"
		   "relays to wait for the new runtime instead of starting "
		   "one.\n"
		   "With SERVER: restarts SERVER's running instances (and "
		   "lifts a `stop`).\n"
		   "Refuses while one of its calls is in flight, naming it, "
		   "unless --force.\n");
}

static void reload_usage(FILE *f)
{
	fprintf(f, "usage: mcpvisor reload [--home DIR]\n"
		   "\n"
		   "Re-reads the config (as SIGHUP does): servers whose "
		   "settings did not\n"
		   "change keep running untouched; changed or removed ones "
		   "close.\n");
}

int stop_control_send(const char *home, const char *path)
{
	struct client *c;
	int rc = client_open(home, &c);
	if (rc != CLI_OK)
		return rc;
	long status = 0;
	json_t *body = NULL;
	rc = client_post(c, path, &status, &body);
	client_close(c);
	if (rc != CLI_OK)
		return rc;
	const char *msg = json_string_value(json_object_get(body, "message"));
	FILE *out = status == 200 ? stdout : stderr;
	fprintf(out, "mcpvisor: %s\n", msg ? msg : "(no answer)");
	json_decref(body);
	return status == 200 ? CLI_OK : status == 404 ? CLI_USAGE : CLI_FAILED;
}

int stop_wait(const char *home, long pid)
{
	struct paths p;
	paths_resolve(&p, home);
	int rc = CLI_FAILED;
	for (int waited = 0; waited < STOP_WAIT_MS; waited += 20) {
		long holder;
		if (!runtime_lock_probe(p.lock_file, &holder, NULL)) {
			printf("mcpvisor: runtime %ld stopped\n", pid);
			rc = CLI_OK;
			break;
		}
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (rc != CLI_OK)
		fprintf(stderr,
			"mcpvisor: runtime %ld is still running after %d s\n",
			pid, STOP_WAIT_MS / 1000);
	paths_free(&p);
	return rc;
}

int cmd_stop(int argc, char **argv)
{
	static const struct cli_spec spec = {"stop", stop_usage, CLI_OPT_FORCE,
					     0, 1};
	struct cli_common o = {0};
	int rc = cli_parse_common(argc, argv, &spec, &o);
	if (rc >= 0)
		return rc;
	if (o.nargs) {
		char *path = xasprintf("/control/servers/%s/stop%s", o.args[0],
				       o.force ? "?force=1" : "");
		rc = stop_control_send(o.home, path);
		free(path);
		return rc;
	}
	struct runtime_info info;
	rc = runtime_info_read(o.home, &info);
	long pid = info.pid;
	if (rc == -EPERM)
		fprintf(stderr, "mcpvisor: %s\n", info.error);
	runtime_info_free(&info);
	if (rc == -EPERM)
		return CLI_FAILED;
	if (rc == -ESRCH && runtime_info_clear(o.home) == 0) {
		/* What a runtime killed with SIGKILL leaves: nothing holds
		 * the home, so its file only misleads. */
		fprintf(stderr,
			"mcpvisor: no runtime is running; removed the runtime "
			"file that pid %ld left\n",
			pid);
		return CLI_NO_RUNTIME;
	}
	if (rc == -ENOENT || rc == -ESRCH) {
		fprintf(stderr, "mcpvisor: no runtime is running\n");
		return CLI_NO_RUNTIME;
	}
	if ((rc = stop_control_send(o.home, "/control/stop")) != CLI_OK)
		return rc;
	return stop_wait(o.home, pid);
}

int cmd_restart(int argc, char **argv)
{
	static const struct cli_spec spec = {"restart", restart_usage,
					     CLI_OPT_FORCE, 0, 1};
	struct cli_common o = {0};
	int rc = cli_parse_common(argc, argv, &spec, &o);
	if (rc >= 0)
		return rc;
	if (o.nargs == 0)
		return restart_runtime(o.home);
	char *path = xasprintf("/control/servers/%s/restart%s", o.args[0],
			       o.force ? "?force=1" : "");
	rc = stop_control_send(o.home, path);
	free(path);
	return rc;
}

int cmd_reload(int argc, char **argv)
{
	static const struct cli_spec spec = {"reload", reload_usage, 0, 0, 0};
	struct cli_common o = {0};
	int rc = cli_parse_common(argc, argv, &spec, &o);
	if (rc >= 0)
		return rc;
	return stop_control_send(o.home, "/control/reload");
}
