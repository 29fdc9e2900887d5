/* `mcpvisor stop`, `restart` and `reload`: the explicit controls, sent to
 * the runtime through its Unix socket. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli/cli.h"
#include "runtime/runtime.h"
#include "util/xmalloc.h"

#define STOP_WAIT_MS 60000

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
	fprintf(f, "usage: mcpvisor restart SERVER [--force] [--home DIR]\n"
		   "\n"
		   "Restarts SERVER's running instances (and lifts a `stop`). "
		   "Refuses while\n"
		   "one of its calls is in flight, naming it, unless "
		   "--force.\n");
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

struct control_opts {
	const char *home;
	int force;
};

static int control_parse(int argc, char **argv, struct control_opts *o,
			 void (*usage)(FILE *))
{
	static const struct option longopts[] = {
		{"home", required_argument, NULL, 'H'},
		{"force", no_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "H:fh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'H':
			o->home = optarg;
			break;
		case 'f':
			o->force = 1;
			break;
		case 'h':
			usage(stdout);
			return CLI_OK;
		default:
			usage(stderr);
			return CLI_USAGE;
		}
	}
	return -1;
}

/* Sends one control request and prints the runtime's answer. */
static int control_send(const char *home, const char *path)
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

int cmd_stop(int argc, char **argv)
{
	struct control_opts o = {0};
	int rc = control_parse(argc, argv, &o, stop_usage);
	if (rc >= 0)
		return rc;
	if (optind < argc) {
		char *path = xasprintf("/control/servers/%s/stop%s",
				       argv[optind], o.force ? "?force=1" : "");
		rc = control_send(o.home, path);
		free(path);
		return rc;
	}
	struct runtime_info info;
	rc = runtime_info_read(o.home, &info);
	long pid = info.pid;
	runtime_info_free(&info);
	if (rc < 0) {
		fprintf(stderr, "mcpvisor: no runtime is running\n");
		return CLI_NO_RUNTIME;
	}
	if ((rc = control_send(o.home, "/control/stop")) != CLI_OK)
		return rc;
	/* The runtime is not our child: watch its pid until it is gone. */
	for (int waited = 0; waited < STOP_WAIT_MS; waited += 20) {
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
			printf("mcpvisor: runtime %ld stopped\n", pid);
			return CLI_OK;
		}
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "mcpvisor: runtime %ld is still running after %d s\n",
		pid, STOP_WAIT_MS / 1000);
	return CLI_FAILED;
}

int cmd_restart(int argc, char **argv)
{
	struct control_opts o = {0};
	int rc = control_parse(argc, argv, &o, restart_usage);
	if (rc >= 0)
		return rc;
	if (optind >= argc) {
		restart_usage(stderr);
		return CLI_USAGE;
	}
	char *path = xasprintf("/control/servers/%s/restart%s", argv[optind],
			       o.force ? "?force=1" : "");
	rc = control_send(o.home, path);
	free(path);
	return rc;
}

int cmd_reload(int argc, char **argv)
{
	struct control_opts o = {0};
	int rc = control_parse(argc, argv, &o, reload_usage);
	if (rc >= 0)
		return rc;
	return control_send(o.home, "/control/reload");
}
