/* `mcpvisor serve`: parse options and run the runtime. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "config/config.h"
#include "endpoint/auth.h"
#include "runtime/runtime.h"
#include "util/log.h"

static void serve_usage(FILE *f)
{
	fprintf(f, "usage: mcpvisor serve [--config FILE] [--port N] "
		   "[--home DIR] [--log-level LEVEL]\n"
		   "                      [--grace DURATION] "
		   "[--session-timeout DURATION]\n"
		   "                      [--sse-close-after MS] "
		   "[--api-key-file FILE]\n"
		   "\n"
		   "Runs the runtime in the foreground: a Streamable HTTP MCP "
		   "endpoint at\n"
		   "http://127.0.0.1:PORT/mcp and the same on a Unix socket in "
		   "the runtime\n"
		   "directory. --port 0 takes any free port; without --port, "
		   "7345 or a free\n"
		   "one when 7345 is taken. SIGTERM or SIGINT drains and "
		   "stops it.\n"
		   "--sse-close-after MS closes a call's SSE answer after MS "
		   "ms; the client\n"
		   "resumes it with Last-Event-ID (for proxies that cut long "
		   "streams).\n"
		   "--grace DURATION: how long calls in flight may run on "
		   "after SIGTERM\n"
		   "(default: the config's shutdownGrace, else 10 s). "
		   "--session-timeout\n"
		   "DURATION: sessions idle that long are dropped (default "
		   "30 m).\n"
		   "--api-key-file FILE: bearer keys, one a line, that let "
		   "other users'\n"
		   "clients in over TCP (the file must be private: chmod "
		   "600).\n"
		   "--max-sessions N: at most N sessions (default 1024); at "
		   "the cap the one\n"
		   "idle longest ends, and initialize gets 503 when all are "
		   "busy.\n"
		   "One runtime per home: a second serve on the same home "
		   "exits 2, naming the\n"
		   "running one. Without --config: HOME/mcp.json, or "
		   "$XDG_CONFIG_HOME/mcpvisor/mcp.json.\n"
		   "The config file is watched: an edit applies as `mcpvisor "
		   "reload` does, and\n"
		   "one that does not load leaves the running config (status "
		   "says why);\n"
		   "--no-watch: reload only when asked.\n"
		   "--log-max BYTES: in the background its log file "
		   "(STATE/runtime.log) is\n"
		   "rotated past this size (default 1 MiB; one previous file "
		   "is kept).\n");
}

/* What the command line asks for: the runtime's options, and what is
 * the process's (log level, page size, API keys). */
struct serve_args {
	struct runtime_opts o;
	const char *level;
	const char *page;
	const char *key_file;
	bool help;
};

/* A whole number in [min, max]; false when arg is not one. */
static bool serve_number(const char *arg, unsigned long long min,
			 unsigned long long max, unsigned long long *out)
{
	char *end;
	unsigned long long v = strtoull(arg, &end, 10);
	if (*end || *arg == '\0' || *arg == '-' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* --grace, --session-timeout: a duration as the config writes one. */
static int serve_duration(const char *name, const char *arg, uint64_t *out)
{
	int64_t ms;
	json_t *v = json_string(arg);
	int bad = config_parse_duration(v, &ms);
	json_decref(v);
	if (bad < 0) {
		fprintf(stderr,
			"mcpvisor serve: --%s takes a duration (1500, "
			"\"500ms\", \"2s\", \"10m\")\n",
			name);
		return CLI_USAGE;
	}
	*out = (uint64_t)ms;
	return CLI_OK;
}

/* One option into a. CLI_OK, or CLI_USAGE (said on stderr). */
static int serve_option(int ch, struct serve_args *a)
{
	struct runtime_opts *o = &a->o;
	unsigned long long v;
	switch (ch) {
	case 'c':
		o->config = optarg;
		return CLI_OK;
	case 'p':
		if (!serve_number(optarg, 0, 65535, &v)) {
			fprintf(stderr,
				"mcpvisor serve: --port takes 0 to 65535\n");
			return CLI_USAGE;
		}
		o->port = (int)v;
		return CLI_OK;
	case 'H':
		o->home = optarg;
		return CLI_OK;
	case 'l':
		a->level = optarg;
		return CLI_OK;
	case 'P':
		a->page = optarg;
		return CLI_OK;
	case 'S':
		o->sse_close_ms = strtoull(optarg, NULL, 10);
		return CLI_OK;
	case 'g':
		return serve_duration("grace", optarg, &o->grace_ms);
	case 'T':
		return serve_duration("session-timeout", optarg,
				      &o->session_timeout_ms);
	case 'K':
		a->key_file = optarg;
		return CLI_OK;
	case 'M':
		if (!serve_number(optarg, 1, 1000000, &v)) {
			fprintf(stderr, "mcpvisor serve: --max-sessions takes "
					"1 to 1000000\n");
			return CLI_USAGE;
		}
		o->max_sessions = (size_t)v;
		return CLI_OK;
	case 'W':
		o->no_watch = true;
		return CLI_OK;
	case 'L':
		if (!serve_number(optarg, 1024, 1ull << 32, &v)) {
			fprintf(stderr, "mcpvisor serve: --log-max takes 1024 "
					"to 4294967296 bytes\n");
			return CLI_USAGE;
		}
		o->log_max = (size_t)v;
		return CLI_OK;
	case 'h':
		a->help = true;
		return CLI_OK;
	default:
		serve_usage(stderr);
		return CLI_USAGE;
	}
}

static int serve_parse(int argc, char **argv, struct serve_args *a)
{
	static const struct option longopts[] = {
		{"config", required_argument, NULL, 'c'},
		{"port", required_argument, NULL, 'p'},
		{"home", required_argument, NULL, 'H'},
		{"log-level", required_argument, NULL, 'l'},
		{"page-size", required_argument, NULL, 'P'},
		{"sse-close-after", required_argument, NULL, 'S'},
		{"grace", required_argument, NULL, 'g'},
		{"session-timeout", required_argument, NULL, 'T'},
		{"api-key-file", required_argument, NULL, 'K'},
		{"max-sessions", required_argument, NULL, 'M'},
		{"no-watch", no_argument, NULL, 'W'},
		{"log-max", required_argument, NULL, 'L'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "c:p:H:l:h", longopts, NULL)) !=
	       -1) {
		int rc = serve_option(ch, a);
		if (rc != CLI_OK || a->help)
			return rc;
	}
	if (optind < argc) {
		fprintf(stderr, "mcpvisor serve: unexpected argument \"%s\"\n",
			argv[optind]);
		return CLI_USAGE;
	}
	return CLI_OK;
}

/* What is the process's, not the runtime's: the log level, the page
 * size, the API keys. CLI_OK or CLI_USAGE (said on stderr). */
static int serve_settle(struct serve_args *a)
{
	if (a->level) {
		enum log_level lv;
		if (log_parse_level(a->level, &lv) < 0) {
			fprintf(stderr, "mcpvisor serve: log level is one of "
					"debug, info, warn, error\n");
			return CLI_USAGE;
		}
		log_set_level(lv);
	}
	if (a->page)
		a->o.page_size = (size_t)strtoul(a->page, NULL, 10);
	if (a->key_file) {
		char *err = NULL;
		if (auth_keys_load_file(a->key_file, &err) < 0) {
			fprintf(stderr, "mcpvisor serve: %s\n", err);
			free(err);
			return CLI_USAGE;
		}
	}
	return CLI_OK;
}

int cmd_serve(int argc, char **argv)
{
	struct serve_args a = {
		.o = {.port = -1},
		.level = getenv("MCPVISOR_LOG"),
		.page = getenv("MCPVISOR_PAGE_SIZE"),
	};
	int rc = serve_parse(argc, argv, &a);
	if (rc != CLI_OK)
		return rc;
	if (a.help) {
		serve_usage(stdout);
		return CLI_OK;
	}
	rc = serve_settle(&a);
	if (rc != CLI_OK)
		return rc;
	rc = runtime_serve(&a.o);
	auth_keys_clear();
	return rc;
}
