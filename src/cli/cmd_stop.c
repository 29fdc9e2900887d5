/* `mcpvisor stop`: ask the runtime to drain and stop, and wait for it. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include "cli/cli.h"
#include "runtime/runtime.h"

#define STOP_WAIT_MS 30000

static void stop_usage(FILE *f)
{
	fprintf(f, "usage: mcpvisor stop [--home DIR]\n"
		   "\n"
		   "Drains the runtime (calls in flight finish within the "
		   "grace period) and\n"
		   "stops it with every server it started.\n");
}

int cmd_stop(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"home", required_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *home = NULL;
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "H:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'H':
			home = optarg;
			break;
		case 'h':
			stop_usage(stdout);
			return CLI_OK;
		default:
			stop_usage(stderr);
			return CLI_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "mcpvisor stop: stopping one server is not "
				"supported yet\n");
		return CLI_USAGE;
	}
	struct runtime_info info;
	int rc = runtime_info_read(home, &info);
	long pid = info.pid;
	runtime_info_free(&info);
	if (rc < 0) {
		fprintf(stderr, "mcpvisor: no runtime is running\n");
		return CLI_NO_RUNTIME;
	}
	struct client *c;
	if ((rc = client_open(home, &c)) != CLI_OK)
		return rc;
	rc = client_post(c, "/control/stop");
	client_close(c);
	if (rc != CLI_OK)
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
