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

int cmd_serve(int argc, char **argv)
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
	struct runtime_opts o = {.port = -1};
	const char *level = getenv("MCPVISOR_LOG");
	const char *page = getenv("MCPVISOR_PAGE_SIZE");
	const char *key_file = NULL;
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "c:p:H:l:h", longopts, NULL)) !=
	       -1) {
		switch (ch) {
		case 'c':
			o.config = optarg;
			break;
		case 'p': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v < 0 || v > 65535) {
				fprintf(stderr, "mcpvisor serve: --port takes "
						"0 to 65535\n");
				return CLI_USAGE;
			}
			o.port = (int)v;
			break;
		}
		case 'H':
			o.home = optarg;
			break;
		case 'l':
			level = optarg;
			break;
		case 'P':
			page = optarg;
			break;
		case 'S':
			o.sse_close_ms = strtoull(optarg, NULL, 10);
			break;
		case 'g':
		case 'T': {
			int64_t ms;
			json_t *v = json_string(optarg);
			int bad = config_parse_duration(v, &ms);
			json_decref(v);
			if (bad < 0) {
				fprintf(stderr,
					"mcpvisor serve: --%s takes a "
					"duration (1500, \"500ms\", "
					"\"2s\", \"10m\")\n",
					ch == 'g' ? "grace"
						  : "session-timeout");
				return CLI_USAGE;
			}
			if (ch == 'g')
				o.grace_ms = (uint64_t)ms;
			else
				o.session_timeout_ms = (uint64_t)ms;
			break;
		}
		case 'K':
			key_file = optarg;
			break;
		case 'M': {
			char *end;
			unsigned long long v = strtoull(optarg, &end, 10);
			if (*end || *optarg == '\0' || v == 0 || v > 1000000) {
				fprintf(stderr,
					"mcpvisor serve: --max-sessions "
					"takes 1 to 1000000\n");
				return CLI_USAGE;
			}
			o.max_sessions = (size_t)v;
			break;
		}
		case 'W':
			o.no_watch = true;
			break;
		case 'L': {
			char *end;
			unsigned long long v = strtoull(optarg, &end, 10);
			if (*end || *optarg == '\0' || v < 1024 ||
			    v > (1ull << 32)) {
				fprintf(stderr, "mcpvisor serve: --log-max "
						"takes 1024 to 4294967296 "
						"bytes\n");
				return CLI_USAGE;
			}
			o.log_max = (size_t)v;
			break;
		}
		case 'h':
			serve_usage(stdout);
			return CLI_OK;
		default:
			serve_usage(stderr);
			return CLI_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "mcpvisor serve: unexpected argument \"%s\"\n",
			argv[optind]);
		return CLI_USAGE;
	}
	if (level) {
		enum log_level lv;
		if (log_parse_level(level, &lv) < 0) {
			fprintf(stderr, "mcpvisor serve: log level is one of "
					"debug, info, warn, error\n");
			return CLI_USAGE;
		}
		log_set_level(lv);
	}
	if (page)
		o.page_size = (size_t)strtoul(page, NULL, 10);
	if (key_file) {
		char *err = NULL;
		if (auth_keys_load_file(key_file, &err) < 0) {
			fprintf(stderr, "mcpvisor serve: %s\n", err);
			free(err);
			return CLI_USAGE;
		}
	}
	int rc = runtime_serve(&o);
	auth_keys_clear();
	return rc;
}
