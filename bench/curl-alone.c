/*
 * What libcurl alone costs a call, for make bench: a client that does
 * nothing but MCP tools/call through libcurl's multi interface, with the
 * headers mcpvisor sends to a url server (Content-Type, Accept,
 * MCP-Protocol-Version, Mcp-Session-Id), each session on its own
 * keep-alive connection. A runtime that forwards to a url server through
 * libcurl does at least this much work a call on top of its own, so this
 * client's CPU a call bounds what "via mcpvisor / direct" can reach.
 *
 *   curl-alone URL [--sessions N] [--seconds S]
 *
 * Prints one JSON line: calls, calls/s, this process's CPU (user + system)
 * and its CPU a call. Each answer must echo the text of its call.
 */
#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>

#define CA_MAX_SESSIONS 64
#define CA_MAX_BODY 65536

struct ca_sess {
	CURL *h;
	struct curl_slist *hdrs;
	int phase; /* 0 initialize, 1 initialized, 2 calls */
	char sid[256];
	char text[64];
	char req[512];
	char body[CA_MAX_BODY];
	size_t blen;
	uint64_t n;
};

static struct ca_sess ca_s[CA_MAX_SESSIONS];
static const char *ca_url;

static double ca_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double ca_cpu(void)
{
	struct rusage r;

	getrusage(RUSAGE_SELF, &r);
	return (double)r.ru_utime.tv_sec + (double)r.ru_utime.tv_usec / 1e6 +
	       (double)r.ru_stime.tv_sec + (double)r.ru_stime.tv_usec / 1e6;
}

static void ca_die(const char *what)
{
	printf("{\"mode\":\"curl_alone\",\"ok\":false,\"errors\":1,"
	       "\"first_error\":\"%s\"}\n",
	       what);
	exit(1);
}

static size_t ca_header(char *b, size_t size, size_t n, void *u)
{
	struct ca_sess *s = u;
	size_t len = size * n, k;
	const char *v;

	if (len <= 15 || strncasecmp(b, "mcp-session-id:", 15) != 0)
		return len;
	v = b + 15;
	k = len - 15;
	while (k && *v == ' ') {
		v++;
		k--;
	}
	while (k && (v[k - 1] == '\r' || v[k - 1] == '\n'))
		k--;
	if (k >= sizeof(s->sid))
		return 0;
	memcpy(s->sid, v, k);
	s->sid[k] = '\0';
	return len;
}

static size_t ca_write(char *b, size_t size, size_t n, void *u)
{
	struct ca_sess *s = u;
	size_t len = size * n;

	if (s->blen + len >= sizeof(s->body))
		return 0;
	memcpy(s->body + s->blen, b, len);
	s->blen += len;
	return len;
}

/* Sets up the session's next request; its handle is out of the multi. */
static void ca_next(struct ca_sess *s, int idx)
{
	int n = 0;

	s->blen = 0;
	if (s->phase == 0) {
		n = snprintf(s->req, sizeof(s->req),
			     "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
			     "\"initialize\",\"params\":{\"protocolVersion\":"
			     "\"2025-11-25\",\"capabilities\":{},"
			     "\"clientInfo\":{\"name\":\"curl-alone\","
			     "\"version\":\"1\"}}}");
	} else if (s->phase == 1) {
		char line[300];

		snprintf(line, sizeof(line), "Mcp-Session-Id: %s", s->sid);
		s->hdrs = curl_slist_append(s->hdrs, line);
		s->hdrs = curl_slist_append(s->hdrs,
					    "MCP-Protocol-Version: 2025-11-25");
		curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, s->hdrs);
		n = snprintf(s->req, sizeof(s->req),
			     "{\"jsonrpc\":\"2.0\",\"method\":"
			     "\"notifications/initialized\"}");
	} else {
		s->n++;
		snprintf(s->text, sizeof(s->text), "ca-%d-%" PRIu64, idx, s->n);
		n = snprintf(s->req, sizeof(s->req),
			     "{\"jsonrpc\":\"2.0\",\"id\":%" PRIu64
			     ",\"method\":\"tools/call\",\"params\":{\"name\":"
			     "\"echo\",\"arguments\":{\"text\":\"%s\"}}}",
			     s->n, s->text);
	}
	curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, s->req);
	curl_easy_setopt(s->h, CURLOPT_POSTFIELDSIZE, (long)n);
}

static void ca_open(struct ca_sess *s)
{
	s->h = curl_easy_init();
	if (s->h == NULL)
		ca_die("curl_easy_init failed");
	s->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	s->hdrs = curl_slist_append(
		s->hdrs, "Accept: application/json, text/event-stream");
	curl_easy_setopt(s->h, CURLOPT_URL, ca_url);
	curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, s->hdrs);
	curl_easy_setopt(s->h, CURLOPT_HEADERFUNCTION, ca_header);
	curl_easy_setopt(s->h, CURLOPT_HEADERDATA, s);
	curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, ca_write);
	curl_easy_setopt(s->h, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(s->h, CURLOPT_PRIVATE, s);
	curl_easy_setopt(s->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(s->h, CURLOPT_TCP_NODELAY, 1L);
}

int main(int argc, char **argv)
{
	int ns = 8, ready = 0, running = 1, i;
	double secs = 2, t0 = 0, t1 = 0, c0 = 0, c1;
	uint64_t calls = 0;
	CURLM *m;

	if (argc < 2)
		ca_die("usage: curl-alone URL [--sessions N] [--seconds S]");
	ca_url = argv[1];
	for (i = 2; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--sessions") == 0)
			ns = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--seconds") == 0)
			secs = atof(argv[i + 1]);
		else
			ca_die("unknown option");
	}
	if (ns < 1 || ns > CA_MAX_SESSIONS || secs <= 0)
		ca_die("--sessions 1..64, --seconds > 0");
	curl_global_init(CURL_GLOBAL_DEFAULT);
	m = curl_multi_init();
	for (i = 0; i < ns; i++) {
		ca_open(&ca_s[i]);
		ca_next(&ca_s[i], i);
		curl_multi_add_handle(m, ca_s[i].h);
	}
	while (running) {
		struct CURLMsg *msg;
		int left, still;

		curl_multi_perform(m, &still);
		while ((msg = curl_multi_info_read(m, &left)) != NULL) {
			struct ca_sess *s;
			long code = 0;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
					  (char **)&s);
			curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code);
			if (msg->data.result != CURLE_OK || code / 100 != 2)
				ca_die("a request failed");
			curl_multi_remove_handle(m, s->h);
			if (s->phase == 2) {
				s->body[s->blen] = '\0';
				if (strstr(s->body, s->text) == NULL)
					ca_die("an answer lacks its echoed "
					       "text");
				if (t0 > 0)
					calls++;
			} else if (s->phase == 0 && s->sid[0] == '\0') {
				ca_die("initialize answered no Mcp-Session-Id");
			}
			if (s->phase < 2)
				s->phase++;
			if (s->phase == 2 && s->n == 0 && ++ready == ns) {
				t0 = ca_now();
				c0 = ca_cpu();
			}
			if (t0 > 0 && ca_now() - t0 >= secs) {
				running = 0;
				break;
			}
			ca_next(s, (int)(s - ca_s));
			curl_multi_add_handle(m, s->h);
		}
		if (running)
			curl_multi_poll(m, NULL, 0, 1000, NULL);
	}
	t1 = ca_now();
	c1 = ca_cpu();
	printf("{\"mode\":\"curl_alone\",\"sessions\":%d,\"seconds\":%.3f,"
	       "\"calls\":%" PRIu64 ",\"calls_per_s\":%.1f,"
	       "\"self_cpu_s\":%.6f,\"cpu_us_per_call\":%.2f,\"errors\":0,"
	       "\"ok\":true}\n",
	       ns, t1 - t0, calls, (double)calls / (t1 - t0), c1 - c0,
	       calls ? (c1 - c0) / (double)calls * 1e6 : 0.0);
	for (i = 0; i < ns; i++) {
		curl_multi_remove_handle(m, ca_s[i].h);
		curl_easy_cleanup(ca_s[i].h);
		curl_slist_free_all(ca_s[i].hdrs);
	}
	curl_multi_cleanup(m);
	curl_global_cleanup();
	return 0;
}
