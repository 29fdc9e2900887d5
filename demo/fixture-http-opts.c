/*
 * fixture-http's flags: --http PORT and the fault modes, parsed the same way
 * by every fixture.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture-http.h"

/* ---- flags ------------------------------------------------------------ */

const char fxh_usage[] =
	"  --http PORT            serve MCP over Streamable HTTP on "
	"127.0.0.1:PORT\n"
	"                         (not stdio); 0 picks a free port; says\n"
	"                         \"listening on PORT\" on stderr; exits 98 "
	"when the\n"
	"                         port is taken (EADDRINUSE). The echo tool "
	"over\n"
	"                         --http serves make bench's HTTP row.\n"
	"  --http-env VAR         the same with PORT from environment "
	"variable VAR\n"
	"  --auth TOKEN           401 (WWW-Authenticate with "
	"resource_metadata)\n"
	"                         unless \"Authorization: Bearer TOKEN\"\n"
	"  --expire-after N       a session's POST after its Nth gets 404: "
	"the\n"
	"                         session is forgotten\n"
	"  --drop-sse-once        the first tools/call answer stream is cut "
	"after\n"
	"                         its priming event; GET with Last-Event-ID "
	"resumes\n"
	"  --drop-sse-unresumable the same, but resuming gets a stream that "
	"ends\n"
	"                         without the answer\n"
	"  --hang-after N         answer N POSTs, then nothing at all\n"
	"  --legacy-sse           serve only the 2024-11-05 HTTP+SSE "
	"transport:\n"
	"                         GET /sse (or /mcp), POST /messages; POST "
	"/mcp is 405\n"
	"  --listen-all           bind 0.0.0.0, not 127.0.0.1: inside a "
	"container,\n"
	"                         where a published port reaches eth0; "
	"Host and\n"
	"                         Origin must still name a loopback "
	"address\n"
	"  --sse-retry MS         the SSE retry field (default 100)\n"
	"  --heartbeat MS         a comment on open SSE streams every MS\n";

void fxh_opts_init(struct fxh_opts *o, const char *prog)
{
	*o = (struct fxh_opts){.retry_ms = 100, .wake_fd = -1, .prog = prog};
}

static int fxh_num(const char *prog, const char *flag, const char *v,
		   long long min, long long max, long long *out)
{
	char *end;
	long long n;

	errno = 0;
	n = v ? strtoll(v, &end, 10) : 0;
	if (!v || errno || end == v || *end || n < min || n > max) {
		fprintf(stderr, "%s: %s takes a number from %lld to %lld\n",
			prog, flag, min, max);
		return -1;
	}
	*out = n;
	return 0;
}

int fxh_parse_flag(struct fxh_opts *o, int argc, char **argv, int *i)
{
	const char *f = argv[*i];
	const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
	long long n = 0;

	if (strcmp(f, "--drop-sse-once") == 0) {
		o->drop_once = true;
		return 1;
	} else if (strcmp(f, "--drop-sse-unresumable") == 0) {
		o->drop_unresumable = true;
		return 1;
	} else if (strcmp(f, "--legacy-sse") == 0) {
		o->legacy = true;
		return 1;
	} else if (strcmp(f, "--listen-all") == 0) {
		o->listen_all = true;
		return 1;
	} else if (strcmp(f, "--auth") == 0) {
		if (!v || !*v) {
			fprintf(stderr, "%s: --auth needs a token\n", o->prog);
			return -1;
		}
		o->auth = v;
	} else if (strcmp(f, "--http") == 0 || strcmp(f, "--http-env") == 0) {
		const char *p = f[6] == '\0' ? v : v ? getenv(v) : NULL;

		if (f[6] != '\0' && !p) {
			fprintf(stderr, "%s: --http-env: %s is not set\n",
				o->prog, v ? v : "(no name)");
			return -1;
		}
		if (fxh_num(o->prog, f, p, 0, 65535, &n) < 0)
			return -1;
		o->on = true;
		o->port = (int)n;
	} else if (strcmp(f, "--expire-after") == 0) {
		if (fxh_num(o->prog, f, v, 1, LLONG_MAX, &n) < 0)
			return -1;
		o->expire_after = n;
	} else if (strcmp(f, "--hang-after") == 0) {
		if (fxh_num(o->prog, f, v, 1, LLONG_MAX, &n) < 0)
			return -1;
		o->hang_after = n;
	} else if (strcmp(f, "--sse-retry") == 0) {
		if (fxh_num(o->prog, f, v, 0, 3600000, &n) < 0)
			return -1;
		o->retry_ms = n;
	} else if (strcmp(f, "--heartbeat") == 0) {
		if (fxh_num(o->prog, f, v, 1, 3600000, &n) < 0)
			return -1;
		o->heartbeat_ms = n;
	} else {
		return 0;
	}
	(*i)++; /* its value */
	return 1;
}

int fxh_check_opts(const struct fxh_opts *o)
{
	if (!o->on && (o->auth || o->expire_after || o->hang_after ||
		       o->drop_once || o->drop_unresumable || o->legacy ||
		       o->heartbeat_ms || o->listen_all)) {
		fprintf(stderr, "%s: the HTTP fault flags need --http\n",
			o->prog);
		return -1;
	}
	return 0;
}
