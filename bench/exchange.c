/*
 * One HTTP exchange and nothing else, for make bench: POSTs the bench's
 * tools/call to PORT on 127.0.0.1 over one keep-alive connection, one at a
 * time, and reads each answer by its Content-Length, with no JSON work.
 * Against nginx's fixed answer this is what one HTTP exchange on loopback
 * costs at all, the part of a hop through mcpvisor that no runtime can
 * remove.
 *
 *   exchange PORT [--calls N]
 *
 * Prints one JSON line with the latency percentiles (the first 1,000
 * exchanges warm up and are not counted). Every answer must be a 200 with
 * a Content-Length.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define EX_WARMUP 1000
#define EX_MAX_ANSWER 16384

static const char ex_body[] =
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
	"{\"name\":\"echo\",\"arguments\":{\"text\":\"hello\"}}}";

static void ex_die(const char *what)
{
	printf("{\"mode\":\"exchange\",\"ok\":false,\"errors\":1,"
	       "\"first_error\":\"%s: %s\"}\n",
	       what, errno ? strerror(errno) : "bad answer");
	exit(1);
}

static double ex_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int ex_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Reads one answer: a 200 head with a Content-Length, then that body. */
static void ex_answer(int fd, char *buf)
{
	size_t got = 0;
	long need = -1;

	errno = 0;
	while (need < 0 || (long)got < need) {
		ssize_t k = read(fd, buf + got, EX_MAX_ANSWER - 1 - got);
		char *end, *cl;

		if (k <= 0)
			ex_die("read");
		got += (size_t)k;
		buf[got] = '\0';
		if (need >= 0 || (end = strstr(buf, "\r\n\r\n")) == NULL) {
			if (got >= EX_MAX_ANSWER - 1)
				ex_die("answer too long");
			continue;
		}
		cl = strcasestr(buf, "\r\ncontent-length:");
		if (strncmp(buf, "HTTP/1.1 200 ", 13) != 0 || cl == NULL ||
		    cl > end)
			ex_die("answer");
		need = (end + 4 - buf) + atol(cl + 17);
		if (need >= EX_MAX_ANSWER)
			ex_die("answer too long");
	}
	if ((long)got != need)
		ex_die("answer");
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	char req[512], *buf = malloc(EX_MAX_ANSWER);
	int fd, one = 1, calls = 20000, rl, i;
	double *lat, sum = 0;

	if (argc < 2)
		ex_die("usage: exchange PORT [--calls N]");
	if (argc == 4 && strcmp(argv[2], "--calls") == 0)
		calls = atoi(argv[3]);
	lat = malloc(sizeof(*lat) * (size_t)(calls > 0 ? calls : 1));
	if (calls < 1 || buf == NULL || lat == NULL)
		ex_die("--calls");
	a.sin_port = htons((uint16_t)atoi(argv[1]));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		ex_die("connect");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	rl = snprintf(req, sizeof(req),
		      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		      "Accept: application/json, text/event-stream\r\n"
		      "Content-Type: application/json\r\n"
		      "MCP-Protocol-Version: 2025-11-25\r\n"
		      "Content-Length: %zu\r\n\r\n%s",
		      sizeof(ex_body) - 1, ex_body);
	for (i = 0; i < EX_WARMUP + calls; i++) {
		double t0 = ex_now();

		if (write(fd, req, (size_t)rl) != rl)
			ex_die("write");
		ex_answer(fd, buf);
		if (i >= EX_WARMUP) {
			lat[i - EX_WARMUP] = ex_now() - t0;
			sum += lat[i - EX_WARMUP];
		}
	}
	qsort(lat, (size_t)calls, sizeof(*lat), ex_cmp);
	printf("{\"mode\":\"exchange\",\"calls\":%d,\"p50_ms\":%.6f,"
	       "\"p90_ms\":%.6f,\"p99_ms\":%.6f,\"mean_ms\":%.6f,\"errors\":0,"
	       "\"ok\":true}\n",
	       calls, lat[calls / 2] * 1e3, lat[calls * 9 / 10] * 1e3,
	       lat[calls * 99 / 100] * 1e3, sum / calls * 1e3);
	close(fd);
	free(lat);
	free(buf);
	return 0;
}
