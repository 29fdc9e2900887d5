/*
 * MCP load generator for make bench. Speaks newline JSON-RPC to a stdio
 * server it spawns, or Streamable HTTP (keep-alive, JSON and SSE answers) over
 * TCP or a Unix socket; drives every session from one epoll loop, checks every
 * answer and prints one JSON line per run. It also hosts a gateway for run.sh:
 * starts it, times its first answer, samples the RSS of the gateway and of
 * everything it spawned, and stops it.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LG_MAX_SESSIONS 4096
#define LG_ID_STRIDE 4096 /* request id = seq * stride + session index */
#define LG_MAX_HEADER 65536
#define LG_MAX_BODY (8 * 1024 * 1024)
#define LG_MAX_LINE (8 * 1024 * 1024)
#define LG_MAX_SID 256
#define LG_MAX_URL 1024
#define LG_MAX_ERR 512
#define LG_MAX_EVENTS 256
#define LG_MAX_PROCS 8192
#define LG_MAX_CHILDREN 256 /* stdio servers, with one per session */
#define LG_MAX_CALLS 10000000
#define LG_OPEN_PARALLEL 32 /* sessions opened at once: keeps backlogs sane */
#define LG_READ_CHUNK 65536
#define LG_RETRY_NS (2 * 1000000ULL)
#define LG_SAMPLE_NS (100 * 1000000ULL)
#define LG_TICK_MS 50
#define LG_PROTO "2025-11-25"
#define LG_MODERN "2026-07-28"
/* What every 2026-07-28 request carries in params._meta. */
#define LG_MODERN_META                                                         \
	"\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"" LG_MODERN  \
	"\",\"io.modelcontextprotocol/clientCapabilities\":{},"                \
	"\"io.modelcontextprotocol/clientInfo\":{\"name\":"                    \
	"\"mcpvisor-bench\",\"version\":\"1.0.0\"}}"

enum lg_target { LG_T_STDIO, LG_T_TCP, LG_T_UNIX };

enum lg_mode {
	LG_M_NONE,
	LG_M_LATENCY,
	LG_M_THROUGHPUT,
	LG_M_SESSIONS,
	LG_M_FIRST,
	LG_M_LIST,
	LG_M_HOST,
	LG_M_TREE,
	LG_M_FREEPORT,
	LG_M_NOW,
};

enum lg_phase {
	LG_PH_NEW,
	LG_PH_INIT,
	LG_PH_NOTIFY,
	LG_PH_READY,
	LG_PH_LIST,
	LG_PH_CALL,
	LG_PH_DELETE,
	LG_PH_CLOSED,
	LG_PH_FAILED,
};

enum lg_rstate {
	LG_RS_HDR,
	LG_RS_CLEN,
	LG_RS_CHUNK_SIZE,
	LG_RS_CHUNK_DATA,
	LG_RS_CHUNK_CRLF,
	LG_RS_TRAILER,
	LG_RS_UNTIL_EOF,
	LG_RS_DONE,
};

enum lg_ev {
	LG_EV_SESS = 1,
	LG_EV_CHILD_IN,
	LG_EV_CHILD_OUT,
	LG_EV_SIG,
	LG_EV_STDIN,
};

struct lg_buf {
	char *p;
	size_t off; /* data is p[off..len) */
	size_t len;
	size_t cap;
};

struct lg_msg {
	int has_id;
	int id_is_int;
	int64_t id;
	int has_result;
	int has_error;
	int has_method;
	const char *result;
	size_t result_len;
	const char *error;
	size_t error_len;
};

struct lg_resp {
	enum lg_rstate state;
	int status;
	int chunked;
	int sse;
	int close;
	int has_clen;
	size_t left; /* of the body (Content-Length) or of the chunk */
	struct lg_buf body;
	char sid[LG_MAX_SID];
};

struct lg_sess {
	int idx;
	int fd; /* HTTP connection; -1 when closed */
	int connecting;
	int want_out;
	struct lg_buf rb;
	struct lg_buf wb;
	struct lg_resp resp;
	char sid[LG_MAX_SID];
	enum lg_phase phase;
	int inflight;
	int64_t want_id; /* -1 for a notification */
	uint64_t seq;
	uint64_t t_sent;
	uint64_t t_init;
	uint64_t retry_at;
	uint64_t calls; /* tools/call answered, warm-up included */
	char text[64];	/* what tools/call must echo */
};

struct lg_child {
	pid_t pid;
	int in_fd;
	int out_fd;
	int want_out;
	struct lg_buf wb;
	struct lg_buf rb;
	int idx;
	int inited; /* its first session finished initialize */
	int dead;
};

struct lg {
	/* options */
	enum lg_target target;
	enum lg_mode mode;
	char host[256];
	int port;
	char path[LG_MAX_URL];
	char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char hosthdr[300];
	char **cmd;
	long calls;
	long warmup_calls;
	int sessions;
	int open;
	double seconds;
	double warmup;
	long timeout_ms;
	long settle_ms;
	long stop_ms;
	const char *runtime_file;
	const char *log_file;
	const char *ready;
	pid_t rss_pid;
	int hold;
	int modern; /* --modern: stateless 2026-07-28 requests, no session */
	uint64_t since_ns;
	json_t *meta;

	/* state */
	int ep;
	int sigfd;
	struct lg_sess *s;
	int ns;
	struct lg_child *child; /* stdio servers: one, or one per session */
	int nchild;
	int per_session; /* --stdio-per-session */
	int ready_init;	 /* host: ready once initialize is answered */
	int retry;	 /* failures before the first answer are retried */
	int finished;
	int started;  /* sessions started so far (sessions mode) */
	int ready_n;  /* sessions that finished initialize */
	int failed_n; /* sessions that failed for good */
	int inflight;
	uint64_t t_start;
	uint64_t t_run; /* all sessions ready */
	uint64_t t_win0;
	uint64_t t_win1;
	uint64_t deadline;
	uint64_t t_ready; /* first-call: answered */
	uint64_t list_ns;
	uint64_t init_ns;
	uint64_t window_calls;
	uint64_t all_calls; /* throughput: every call answered, warm-up too */
	long attempts;
	long errors;
	char first_error[LG_MAX_ERR];
	char retry_error[LG_MAX_ERR];
	uint64_t *lat;
	size_t nlat;
	size_t cap_lat;
	int got_signal;
	int stdin_eof;
};

static struct lg G;

static uint64_t lg_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static double lg_ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static void lg_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("loadgen: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static void *lg_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		lg_die("out of memory");
	return p;
}

static void lg_buf_reserve(struct lg_buf *b, size_t more)
{
	size_t cap;

	if (b->off > 0 && b->off == b->len) {
		b->off = 0;
		b->len = 0;
	}
	if (b->len + more <= b->cap)
		return;
	if (b->off > 0) {
		memmove(b->p, b->p + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
		if (b->len + more <= b->cap)
			return;
	}
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more)
		cap *= 2;
	b->p = lg_xrealloc(b->p, cap);
	b->cap = cap;
}

static void lg_buf_add(struct lg_buf *b, const void *d, size_t n)
{
	if (n == 0)
		return;
	lg_buf_reserve(b, n);
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static size_t lg_buf_size(const struct lg_buf *b)
{
	return b->len - b->off;
}

static char *lg_buf_data(const struct lg_buf *b)
{
	return b->p + b->off;
}

static void lg_buf_consume(struct lg_buf *b, size_t n)
{
	b->off += n;
	if (b->off == b->len) {
		b->off = 0;
		b->len = 0;
	}
}

static void lg_buf_reset(struct lg_buf *b)
{
	b->off = 0;
	b->len = 0;
}

static void lg_buf_free(struct lg_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static void lg_error(const char *fmt, ...)
{
	va_list ap;

	G.errors++;
	if (G.first_error[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(G.first_error, sizeof(G.first_error), fmt, ap);
	va_end(ap);
}

static void lg_lat_add(uint64_t ns)
{
	if (G.nlat == G.cap_lat) {
		G.cap_lat = G.cap_lat ? G.cap_lat * 2 : 4096;
		G.lat = lg_xrealloc(G.lat, G.cap_lat * sizeof(*G.lat));
	}
	G.lat[G.nlat++] = ns;
}

/* A cheap JSON scanner: finds the top-level members of one message without
 * building a tree, so that checking answers does not dominate the timing. */

static const char *lg_json_ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static const char *lg_json_str(const char *p, const char *e)
{
	for (p++; p < e; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return NULL;
}

static const char *lg_json_skip(const char *p, const char *e)
{
	const char *s;
	int depth = 0;

	p = lg_json_ws(p, e);
	if (p >= e)
		return NULL;
	if (*p == '"')
		return lg_json_str(p, e);
	if (*p == '{' || *p == '[') {
		while (p < e) {
			if (*p == '"') {
				p = lg_json_str(p, e);
				if (p == NULL)
					return NULL;
				continue;
			}
			if (*p == '{' || *p == '[')
				depth++;
			else if ((*p == '}' || *p == ']') && --depth == 0)
				return p + 1;
			p++;
		}
		return NULL;
	}
	for (s = p; p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ' &&
		    *p != '\t' && *p != '\n' && *p != '\r';
	     p++)
		;
	return p > s ? p : NULL;
}

static int lg_msg_scan(const char *p, size_t n, struct lg_msg *m)
{
	const char *e = p + n;

	memset(m, 0, sizeof(*m));
	p = lg_json_ws(p, e);
	if (p >= e || *p != '{')
		return -EINVAL;
	p = lg_json_ws(p + 1, e);
	if (p < e && *p == '}')
		return 0;
	for (;;) {
		const char *k, *ke, *v, *ve;
		size_t kl;

		p = lg_json_ws(p, e);
		if (p >= e || *p != '"')
			return -EINVAL;
		k = p + 1;
		ke = lg_json_str(p, e);
		if (ke == NULL)
			return -EINVAL;
		kl = (size_t)(ke - 1 - k);
		p = lg_json_ws(ke, e);
		if (p >= e || *p != ':')
			return -EINVAL;
		v = lg_json_ws(p + 1, e);
		ve = lg_json_skip(v, e);
		if (ve == NULL)
			return -EINVAL;
		if (kl == 2 && memcmp(k, "id", 2) == 0) {
			const char *q = v;
			int neg = 0;

			m->has_id = 1;
			if (*q == '-') {
				neg = 1;
				q++;
			}
			if (q < ve && isdigit((unsigned char)*q)) {
				m->id_is_int = 1;
				for (; q < ve && isdigit((unsigned char)*q);
				     q++)
					m->id = m->id * 10 + (*q - '0');
				if (neg)
					m->id = -m->id;
			}
		} else if (kl == 6 && memcmp(k, "result", 6) == 0) {
			m->has_result = 1;
			m->result = v;
			m->result_len = (size_t)(ve - v);
		} else if (kl == 5 && memcmp(k, "error", 5) == 0) {
			m->has_error = 1;
			m->error = v;
			m->error_len = (size_t)(ve - v);
		} else if (kl == 6 && memcmp(k, "method", 6) == 0) {
			m->has_method = 1;
		}
		p = lg_json_ws(ve, e);
		if (p < e && *p == ',') {
			p++;
			continue;
		}
		if (p < e && *p == '}')
			return 0;
		return -EINVAL;
	}
}

/* The value of the top-level member key of the object p[0..n): 0 with
 * *v and *vn set, -1 when p is not an object or has no such member. */
static int lg_json_member(const char *p, size_t n, const char *key,
			  const char **v, size_t *vn)
{
	const char *e = p + n;
	size_t want = strlen(key);
	int found = -1;

	p = lg_json_ws(p, e);
	if (p >= e || *p != '{')
		return -1;
	p = lg_json_ws(p + 1, e);
	if (p < e && *p == '}')
		return -1;
	for (;;) {
		const char *k, *ke, *vs, *ve;

		if (p >= e || *p != '"')
			return -1;
		k = p + 1;
		ke = lg_json_str(p, e);
		if (ke == NULL)
			return -1;
		p = lg_json_ws(ke, e);
		if (p >= e || *p != ':')
			return -1;
		vs = lg_json_ws(p + 1, e);
		ve = lg_json_skip(vs, e);
		if (ve == NULL)
			return -1;
		if ((size_t)(ke - 1 - k) == want && memcmp(k, key, want) == 0) {
			*v = vs;
			*vn = (size_t)(ve - vs);
			found = 0; /* the last one counts, as jansson keeps */
		}
		p = lg_json_ws(ve, e);
		if (p < e && *p == ',') {
			p = lg_json_ws(p + 1, e);
			continue;
		}
		return p < e && *p == '}' ? found : -1;
	}
}

/* Forward declarations: the session state machine and the transports call
 * each other. */
static void lg_sess_reply(struct lg_sess *s, int ok);
static void lg_sess_fail(struct lg_sess *s, const char *fmt, ...);
static void lg_sess_start(struct lg_sess *s);

static void lg_ep_set(int fd, uint64_t tag, uint32_t events, int op)
{
	struct epoll_event ev = {.events = events, .data.u64 = tag};

	if (epoll_ctl(G.ep, op, fd, &ev) < 0)
		lg_die("epoll_ctl: %s", strerror(errno));
}

static uint64_t lg_tag(enum lg_ev kind, int idx)
{
	return ((uint64_t)kind << 32) | (uint32_t)idx;
}

/* Checks one JSON-RPC answer against the request in flight. */
static int lg_check(struct lg_sess *s, const struct lg_msg *m, enum lg_phase ph)
{
	if (m->has_error) {
		lg_sess_fail(s, "json-rpc error: %.*s", (int)m->error_len,
			     m->error);
		return -1;
	}
	if (!m->has_result) {
		lg_sess_fail(s, "answer without result");
		return -1;
	}
	if (G.modern) {
		/* 2026-07-28: every result says what it is. */
		const char *v = NULL;
		size_t vn = 0;

		if (lg_json_member(m->result, m->result_len, "resultType", &v,
				   &vn) < 0 ||
		    vn != 10 || memcmp(v, "\"complete\"", 10) != 0) {
			lg_sess_fail(s,
				     "result is not resultType complete: %.*s",
				     (int)(m->result_len > 200 ? 200
							       : m->result_len),
				     m->result);
			return -1;
		}
	}
	if (ph == LG_PH_CALL && memmem(m->result, m->result_len, s->text,
				       strlen(s->text)) == NULL) {
		lg_sess_fail(s, "tools/call answer lacks the echoed text: %.*s",
			     (int)(m->result_len > 200 ? 200 : m->result_len),
			     m->result);
		return -1;
	}
	if (ph == LG_PH_LIST &&
	    memmem(m->result, m->result_len, "\"echo\"", 6) == NULL) {
		lg_sess_fail(s, "tools/list lacks the tool echo");
		return -1;
	}
	return 0;
}

/* stdio transport: one child shared by every logical session, each with
 * one request in flight and its own ids. */

static struct lg_child *lg_child_of(const struct lg_sess *s)
{
	return &G.child[G.per_session ? s->idx : 0];
}

static void lg_child_flush(struct lg_child *c)
{
	while (lg_buf_size(&c->wb) > 0) {
		ssize_t n = write(c->in_fd, lg_buf_data(&c->wb),
				  lg_buf_size(&c->wb));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (!c->want_out) {
				lg_ep_set(c->in_fd,
					  lg_tag(LG_EV_CHILD_IN, c->idx),
					  EPOLLOUT, EPOLL_CTL_ADD);
				c->want_out = 1;
			}
			return;
		}
		if (n < 0)
			lg_die("write to server: %s", strerror(errno));
		lg_buf_consume(&c->wb, (size_t)n);
	}
	if (c->want_out) {
		epoll_ctl(G.ep, EPOLL_CTL_DEL, c->in_fd, NULL);
		c->want_out = 0;
	}
}

static void lg_child_spawn(struct lg_child *c)
{
	int in[2], out[2];

	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		lg_die("pipe: %s", strerror(errno));
	c->pid = fork();
	if (c->pid < 0)
		lg_die("fork: %s", strerror(errno));
	if (c->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execvp(G.cmd[0], G.cmd);
		fprintf(stderr, "loadgen: exec %s: %s\n", G.cmd[0],
			strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in_fd = in[1];
	c->out_fd = out[0];
	fcntl(c->in_fd, F_SETFL, O_NONBLOCK);
	fcntl(c->out_fd, F_SETFL, O_NONBLOCK);
	lg_ep_set(c->out_fd, lg_tag(LG_EV_CHILD_OUT, c->idx), EPOLLIN,
		  EPOLL_CTL_ADD);
}

static void lg_child_line(struct lg_child *c, const char *p, size_t n)
{
	struct lg_msg m;
	struct lg_sess *s;
	enum lg_phase ph;

	if (lg_msg_scan(p, n, &m) < 0) {
		lg_error("server wrote a line that is not a JSON object: %.*s",
			 (int)(n > 200 ? 200 : n), p);
		return;
	}
	if (m.has_method)
		return; /* a notification or a request of the server's */
	if (!m.has_id || !m.id_is_int || m.id < 0) {
		lg_error("answer with an id we never sent: %.*s",
			 (int)(n > 200 ? 200 : n), p);
		return;
	}
	if (m.id % LG_ID_STRIDE >= G.ns ||
	    lg_child_of(&G.s[m.id % LG_ID_STRIDE]) != c) {
		lg_error("answer with an id we never sent: %" PRId64, m.id);
		return;
	}
	s = &G.s[m.id % LG_ID_STRIDE];
	if (!s->inflight || s->want_id != m.id) {
		lg_error("answer %" PRId64 " that nobody waits for", m.id);
		return;
	}
	ph = s->phase;
	if (lg_check(s, &m, ph) == 0)
		lg_sess_reply(s, 1);
}

static void lg_child_read(struct lg_child *c)
{
	for (;;) {
		ssize_t n;
		char *d, *nl;
		size_t used = 0;

		lg_buf_reserve(&c->rb, LG_READ_CHUNK);
		n = read(c->out_fd, c->rb.p + c->rb.len, c->rb.cap - c->rb.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			lg_error("server closed its stdout");
			c->dead = 1;
			epoll_ctl(G.ep, EPOLL_CTL_DEL, c->out_fd, NULL);
			for (int i = 0; i < G.ns; i++)
				if (G.s[i].inflight &&
				    lg_child_of(&G.s[i]) == c)
					lg_sess_fail(&G.s[i], "server gone");
			G.finished = 1;
			return;
		}
		c->rb.len += (size_t)n;
		d = lg_buf_data(&c->rb);
		while ((nl = memchr(d + used, '\n',
				    lg_buf_size(&c->rb) - used))) {
			size_t len = (size_t)(nl - (d + used));

			if (len > 0)
				lg_child_line(c, d + used, len);
			used += len + 1;
		}
		lg_buf_consume(&c->rb, used);
		if (lg_buf_size(&c->rb) > LG_MAX_LINE)
			lg_die("server line over %d bytes", LG_MAX_LINE);
		if ((size_t)n < LG_READ_CHUNK)
			return;
	}
}

static long lg_proc_status_kb(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t kl = strlen(key);
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
			kb = strtol(line + kl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return kb;
}

static void lg_cpu_put(json_t *out, const char *key, int who)
{
	struct rusage ru;

	if (getrusage(who, &ru) < 0)
		return;
	json_object_set_new(
		out, key,
		json_real((double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
			  (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) /
				  1e6));
}

/* Stops every stdio server; their peak RSS (VmHWM) is summed. */
static void lg_children_stop(json_t *out)
{
	uint64_t until = lg_now() + 2000000000ULL;
	long hwm = 0;
	int status;

	if (G.nchild == 0)
		return;
	for (int i = 0; i < G.nchild; i++) {
		long kb = lg_proc_status_kb(G.child[i].pid, "VmHWM");

		if (kb > 0)
			hwm += kb;
		close(G.child[i].in_fd);
	}
	json_object_set_new(out, "server_hwm_kb", json_integer(hwm));
	json_object_set_new(out, "servers", json_integer(G.nchild));
	for (int i = 0; i < G.nchild; i++) {
		struct lg_child *c = &G.child[i];

		while (waitpid(c->pid, &status, WNOHANG) == 0) {
			if (lg_now() > until) {
				kill(c->pid, SIGKILL);
				waitpid(c->pid, &status, 0);
				break;
			}
			usleep(1000);
		}
		close(c->out_fd);
		lg_buf_free(&c->wb);
		lg_buf_free(&c->rb);
	}
	lg_cpu_put(out, "server_cpu_s", RUSAGE_CHILDREN);
	free(G.child);
	G.child = NULL;
	G.nchild = 0;
}

/* HTTP transport: one keep-alive connection per session. */

static void lg_resp_reset(struct lg_resp *r)
{
	struct lg_buf body = r->body;

	lg_buf_reset(&body);
	memset(r, 0, sizeof(*r));
	r->body = body;
}

static void lg_conn_close(struct lg_sess *s)
{
	if (s->fd < 0)
		return;
	epoll_ctl(G.ep, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	s->fd = -1;
	s->connecting = 0;
	s->want_out = 0;
	lg_buf_reset(&s->rb);
	lg_buf_reset(&s->wb);
	lg_resp_reset(&s->resp);
}

static int lg_conn_open(struct lg_sess *s)
{
	struct sockaddr_in in4 = {0};
	struct sockaddr_un un = {0};
	struct sockaddr *sa;
	socklen_t salen;
	int fd, one = 1, err;

	if (G.target == LG_T_UNIX) {
		un.sun_family = AF_UNIX;
		memcpy(un.sun_path, G.unix_path, strlen(G.unix_path));
		sa = (struct sockaddr *)&un;
		salen = sizeof(un);
	} else {
		in4.sin_family = AF_INET;
		in4.sin_port = htons((uint16_t)G.port);
		if (inet_pton(AF_INET, G.host, &in4.sin_addr) != 1)
			lg_die("host must be an IPv4 address: %s", G.host);
		sa = (struct sockaddr *)&in4;
		salen = sizeof(in4);
	}
	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return -errno;
	if (G.target == LG_T_TCP)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	s->connecting = 0;
	if (connect(fd, sa, salen) < 0) {
		if (errno != EINPROGRESS) {
			err = -errno;
			close(fd);
			return err;
		}
		s->connecting = 1;
	}
	s->fd = fd;
	s->want_out = s->connecting;
	lg_buf_reset(&s->rb);
	lg_resp_reset(&s->resp);
	lg_ep_set(fd, lg_tag(LG_EV_SESS, s->idx),
		  EPOLLIN | (s->connecting ? EPOLLOUT : 0), EPOLL_CTL_ADD);
	return 0;
}

static void lg_conn_flush(struct lg_sess *s)
{
	if (s->fd < 0 || s->connecting)
		return;
	while (lg_buf_size(&s->wb) > 0) {
		ssize_t n = send(s->fd, lg_buf_data(&s->wb),
				 lg_buf_size(&s->wb), MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (!s->want_out) {
				lg_ep_set(s->fd, lg_tag(LG_EV_SESS, s->idx),
					  EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD);
				s->want_out = 1;
			}
			return;
		}
		if (n < 0) {
			lg_sess_fail(s, "send: %s", strerror(errno));
			return;
		}
		lg_buf_consume(&s->wb, (size_t)n);
	}
	if (s->want_out) {
		lg_ep_set(s->fd, lg_tag(LG_EV_SESS, s->idx), EPOLLIN,
			  EPOLL_CTL_MOD);
		s->want_out = 0;
	}
}

/* The headers of a 2026-07-28 request (SEP-2243): its version, method
 * and, for a call, the tool's name. */
static void lg_modern_headers(char *out, size_t cap, const char *method,
			      const char *name)
{
	snprintf(out, cap,
		 "MCP-Protocol-Version: " LG_MODERN "\r\n"
		 "Mcp-Method: %s\r\n"
		 "%s%s%s",
		 method, name ? "Mcp-Name: " : "", name ? name : "",
		 name ? "\r\n" : "");
}

/* extra: more header lines (each ending in CRLF), or NULL. */
static void lg_http_send(struct lg_sess *s, const char *verb, const char *body,
			 size_t blen, const char *extra)
{
	char hdr[1024];
	int n, err;

	if (s->fd < 0 && (err = lg_conn_open(s)) < 0) {
		lg_sess_fail(s, "connect: %s", strerror(-err));
		return;
	}
	n = snprintf(hdr, sizeof(hdr),
		     "%s %s HTTP/1.1\r\n"
		     "Host: %s\r\n"
		     "Accept: application/json, text/event-stream\r\n"
		     "Content-Type: application/json\r\n"
		     "Content-Length: %zu\r\n"
		     "%s%s%s"
		     "%s"
		     "\r\n",
		     verb, G.path, G.hosthdr, blen,
		     s->sid[0] ? "Mcp-Session-Id: " : "", s->sid,
		     s->sid[0] ? "\r\n" : "",
		     extra ? extra
		     : s->phase != LG_PH_INIT
			     ? "MCP-Protocol-Version: " LG_PROTO "\r\n"
			     : "");
	lg_buf_add(&s->wb, hdr, (size_t)n);
	lg_buf_add(&s->wb, body, blen);
	lg_conn_flush(s);
}

static int lg_resp_headers(struct lg_resp *r, const char *p, size_t n)
{
	const char *e = p + n, *eol;
	const char *sp;

	eol = memchr(p, '\n', n);
	if (eol == NULL || n < 12 || memcmp(p, "HTTP/1.", 7) != 0)
		return -1;
	sp = memchr(p, ' ', (size_t)(eol - p));
	if (sp == NULL || eol - sp < 4)
		return -1;
	r->status = atoi(sp + 1);
	for (p = eol + 1; p < e; p = eol + 1) {
		const char *colon, *v, *ve;
		size_t nl;

		eol = memchr(p, '\n', (size_t)(e - p));
		if (eol == NULL)
			eol = e;
		ve = eol;
		if (ve > p && ve[-1] == '\r')
			ve--;
		if (ve == p)
			break;
		colon = memchr(p, ':', (size_t)(ve - p));
		if (colon == NULL)
			return -1;
		nl = (size_t)(colon - p);
		for (v = colon + 1; v < ve && (*v == ' ' || *v == '\t'); v++)
			;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
#define LG_HDR_IS(name)                                                        \
	(nl == sizeof(name) - 1 && strncasecmp(p, name, nl) == 0)
		if (LG_HDR_IS("content-length")) {
			r->has_clen = 1;
			r->left = (size_t)strtoull(v, NULL, 10);
		} else if (LG_HDR_IS("transfer-encoding")) {
			r->chunked = memmem(v, (size_t)(ve - v), "chunked",
					    7) != NULL;
		} else if (LG_HDR_IS("content-type")) {
			r->sse = (size_t)(ve - v) >= 17 &&
				 strncasecmp(v, "text/event-stream", 17) == 0;
		} else if (LG_HDR_IS("connection")) {
			r->close =
				memmem(v, (size_t)(ve - v), "close", 5) != NULL;
		} else if (LG_HDR_IS("mcp-session-id")) {
			size_t l = (size_t)(ve - v);

			if (l >= sizeof(r->sid))
				return -1;
			memcpy(r->sid, v, l);
			r->sid[l] = '\0';
		}
#undef LG_HDR_IS
	}
	if (r->chunked)
		r->has_clen = 0;
	return 0;
}

static int lg_resp_take(struct lg_resp *r, struct lg_buf *b, size_t want)
{
	size_t n = lg_buf_size(b);

	if (n > want)
		n = want;
	if (lg_buf_size(&r->body) + n > LG_MAX_BODY)
		return -1;
	lg_buf_add(&r->body, lg_buf_data(b), n);
	lg_buf_consume(b, n);
	r->left -= n;
	return 0;
}

/* Returns 1 when the response is complete, 0 when more bytes are needed,
 * -1 on a malformed response (the reason is left in *why). */
static int lg_resp_parse(struct lg_sess *s, int eof, const char **why)
{
	struct lg_resp *r = &s->resp;
	struct lg_buf *b = &s->rb;

	for (;;) {
		char *d = lg_buf_data(b), *end;
		size_t n = lg_buf_size(b);

		switch (r->state) {
		case LG_RS_HDR:
			end = n >= 4 ? memmem(d, n, "\r\n\r\n", 4) : NULL;
			if (end == NULL) {
				*why = n > LG_MAX_HEADER ? "header too large"
				       : eof		 ? "connection closed"
							 : NULL;
				return *why ? -1 : 0;
			}
			if (lg_resp_headers(r, d, (size_t)(end - d) + 2) < 0) {
				*why = "malformed response header";
				return -1;
			}
			lg_buf_consume(b, (size_t)(end - d) + 4);
			if (r->status >= 100 && r->status < 200) {
				lg_resp_reset(r);
				continue;
			}
			if (r->status == 204 || r->status == 304)
				r->state = LG_RS_DONE;
			else if (r->chunked)
				r->state = LG_RS_CHUNK_SIZE;
			else if (r->has_clen)
				r->state = r->left ? LG_RS_CLEN : LG_RS_DONE;
			else
				r->state = LG_RS_UNTIL_EOF;
			continue;
		case LG_RS_CLEN:
		case LG_RS_CHUNK_DATA:
			if (lg_resp_take(r, b, r->left) < 0) {
				*why = "body too large";
				return -1;
			}
			if (r->left > 0) {
				*why = eof ? "connection closed in body" : NULL;
				return eof ? -1 : 0;
			}
			r->state = r->state == LG_RS_CLEN ? LG_RS_DONE
							  : LG_RS_CHUNK_CRLF;
			continue;
		case LG_RS_CHUNK_SIZE:
		case LG_RS_TRAILER:
			end = memmem(d, n, "\r\n", 2);
			if (end == NULL) {
				*why = n > 1024 ? "chunk line too long"
				       : eof	? "connection closed in chunk"
						: NULL;
				return *why ? -1 : 0;
			}
			if (r->state == LG_RS_TRAILER) {
				r->state =
					end == d ? LG_RS_DONE : LG_RS_TRAILER;
			} else {
				char *hx;

				r->left = (size_t)strtoull(d, &hx, 16);
				if (hx == d) {
					*why = "bad chunk size";
					return -1;
				}
				r->state = r->left ? LG_RS_CHUNK_DATA
						   : LG_RS_TRAILER;
			}
			lg_buf_consume(b, (size_t)(end - d) + 2);
			continue;
		case LG_RS_CHUNK_CRLF:
			if (n < 2) {
				*why = eof ? "connection closed in chunk"
					   : NULL;
				return eof ? -1 : 0;
			}
			if (d[0] != '\r' || d[1] != '\n') {
				*why = "chunk not followed by CRLF";
				return -1;
			}
			lg_buf_consume(b, 2);
			r->state = LG_RS_CHUNK_SIZE;
			continue;
		case LG_RS_UNTIL_EOF:
			r->left = n;
			if (lg_resp_take(r, b, n) < 0) {
				*why = "body too large";
				return -1;
			}
			if (!eof)
				return 0;
			r->close = 1;
			r->state = LG_RS_DONE;
			continue;
		case LG_RS_DONE:
			return 1;
		}
	}
}

/* Finds the answer to the request in flight among the events of an SSE
 * body; priming events (empty data) and notifications are skipped. */
static int lg_sse_find(struct lg_sess *s, struct lg_msg *m)
{
	const char *p = lg_buf_data(&s->resp.body);
	const char *e = p + lg_buf_size(&s->resp.body);
	struct lg_buf data = {0};
	int found = 0;

	while (p < e && !found) {
		const char *eol = memchr(p, '\n', (size_t)(e - p));
		const char *le, *v;

		if (eol == NULL)
			break; /* an unterminated line is not an event */
		le = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
		if (le == p) {
			if (lg_buf_size(&data) > 0 &&
			    lg_msg_scan(lg_buf_data(&data), lg_buf_size(&data),
					m) == 0 &&
			    !m->has_method && m->has_id && m->id_is_int &&
			    m->id == s->want_id)
				found = 1;
			if (!found)
				lg_buf_reset(&data);
		} else if ((size_t)(le - p) >= 5 &&
			   memcmp(p, "data:", 5) == 0) {
			v = p + 5;
			if (v < le && *v == ' ')
				v++;
			if (lg_buf_size(&data) > 0)
				lg_buf_add(&data, "\n", 1);
			lg_buf_add(&data, v, (size_t)(le - v));
		}
		p = eol + 1;
	}
	if (found) {
		/* m points into data: keep the bytes in the session. */
		lg_buf_reset(&s->resp.body);
		lg_buf_add(&s->resp.body, lg_buf_data(&data),
			   lg_buf_size(&data));
		lg_msg_scan(lg_buf_data(&s->resp.body),
			    lg_buf_size(&s->resp.body), m);
	}
	lg_buf_free(&data);
	return found ? 0 : -1;
}

static void lg_http_done(struct lg_sess *s, int eof)
{
	struct lg_resp *r = &s->resp;
	enum lg_phase ph = s->phase;
	struct lg_msg m;
	int ok = 0, closing = r->close || eof;

	if (r->sid[0] != '\0' && ph == LG_PH_INIT)
		memcpy(s->sid, r->sid, sizeof(s->sid));
	if (ph == LG_PH_DELETE) {
		ok = 1;
	} else if (r->status < 200 || r->status > 299) {
		lg_sess_fail(s, "HTTP %d: %.*s", r->status,
			     (int)(lg_buf_size(&r->body) > 200
					   ? 200
					   : lg_buf_size(&r->body)),
			     lg_buf_data(&r->body));
		return;
	} else if (s->want_id < 0) {
		ok = 1; /* 202 for a notification */
	} else if (r->sse) {
		if (lg_sse_find(s, &m) < 0) {
			lg_sess_fail(s, "SSE stream ended without the answer");
			return;
		}
		ok = lg_check(s, &m, ph) == 0;
	} else {
		if (lg_msg_scan(lg_buf_data(&r->body), lg_buf_size(&r->body),
				&m) < 0) {
			lg_sess_fail(s, "answer is not a JSON object: %.*s",
				     (int)(lg_buf_size(&r->body) > 200
						   ? 200
						   : lg_buf_size(&r->body)),
				     lg_buf_data(&r->body));
			return;
		}
		if (!m.has_id || !m.id_is_int || m.id != s->want_id) {
			lg_sess_fail(s, "answer for another id");
			return;
		}
		ok = lg_check(s, &m, ph) == 0;
	}
	if (!ok)
		return;
	lg_resp_reset(r);
	if (closing)
		lg_conn_close(s);
	lg_sess_reply(s, 1);
}

static void lg_conn_event(struct lg_sess *s, uint32_t events)
{
	const char *why = NULL;
	int eof = 0, rc;

	if (s->fd < 0)
		return;
	if (s->connecting && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
		int err = 0;
		socklen_t el = sizeof(err);

		getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &el);
		if (err != 0) {
			lg_sess_fail(s, "connect: %s", strerror(err));
			return;
		}
		s->connecting = 0;
		lg_conn_flush(s);
		if (s->fd < 0)
			return;
	} else if (events & EPOLLOUT) {
		lg_conn_flush(s);
		if (s->fd < 0)
			return;
	}
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	for (;;) {
		ssize_t n;

		lg_buf_reserve(&s->rb, LG_READ_CHUNK);
		n = recv(s->fd, s->rb.p + s->rb.len, s->rb.cap - s->rb.len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			if (!s->inflight) {
				lg_conn_close(s);
				return;
			}
			lg_sess_fail(s, "recv: %s", strerror(errno));
			return;
		}
		if (n == 0) {
			eof = 1;
			break;
		}
		s->rb.len += (size_t)n;
		if ((size_t)n < LG_READ_CHUNK)
			break;
	}
	if (!s->inflight) {
		/* The server closed an idle keep-alive connection. */
		if (eof)
			lg_conn_close(s);
		else if (lg_buf_size(&s->rb) > 0)
			lg_sess_fail(s, "unexpected bytes on an idle "
					"connection");
		return;
	}
	rc = lg_resp_parse(s, eof, &why);
	if (rc < 0) {
		lg_sess_fail(s, "%s", why);
		return;
	}
	if (rc == 1)
		lg_http_done(s, eof);
	else if (eof)
		lg_sess_fail(s, "connection closed");
	if (eof && s->fd >= 0 && !s->inflight)
		lg_conn_close(s);
}

/* The session state machine, shared by both transports. */

static void lg_sess_send(struct lg_sess *s, enum lg_phase ph,
			 const char *method)
{
	char body[1024], extra[256];
	int n;

	s->phase = ph;
	s->inflight = 1;
	G.inflight++;
	if (ph == LG_PH_NOTIFY) {
		s->want_id = -1;
		n = snprintf(body, sizeof(body),
			     "{\"jsonrpc\":\"2.0\",\"method\":\"%s\"}", method);
	} else {
		int64_t id = (int64_t)(++s->seq * LG_ID_STRIDE + s->idx);
		const char *params = G.modern ? "{" LG_MODERN_META "}" : "{}";
		char call[512];

		s->want_id = id;
		if (ph == LG_PH_INIT) {
			params = "{\"protocolVersion\":\"" LG_PROTO
				 "\",\"capabilities\":{},\"clientInfo\":{"
				 "\"name\":\"mcpvisor-bench\",\"version\":"
				 "\"1.0.0\"}}";
		} else if (ph == LG_PH_CALL) {
			snprintf(s->text, sizeof(s->text), "lg-%d-%" PRIu64,
				 s->idx, s->seq);
			snprintf(call, sizeof(call),
				 "{\"name\":\"echo\",\"arguments\":{\"text\":"
				 "\"%s\"}%s}",
				 s->text, G.modern ? "," LG_MODERN_META : "");
			params = call;
		}
		n = snprintf(body, sizeof(body),
			     "{\"jsonrpc\":\"2.0\",\"id\":%" PRId64
			     ",\"method\":\"%s\",\"params\":%s}",
			     id, method, params);
	}
	s->t_sent = lg_now();
	if (G.target == LG_T_STDIO) {
		lg_buf_add(&lg_child_of(s)->wb, body, (size_t)n);
		lg_buf_add(&lg_child_of(s)->wb, "\n", 1);
		if (ph == LG_PH_NOTIFY)
			lg_sess_reply(s, 1); /* stdio notifications get none */
		return;
	}
	if (G.modern)
		lg_modern_headers(extra, sizeof(extra), method,
				  ph == LG_PH_CALL ? "echo" : NULL);
	lg_http_send(s, "POST", body, (size_t)n, G.modern ? extra : NULL);
}

static void lg_sess_delete(struct lg_sess *s)
{
	s->phase = LG_PH_DELETE;
	s->inflight = 1;
	G.inflight++;
	s->want_id = -1;
	s->t_sent = lg_now();
	lg_http_send(s, "DELETE", "", 0, NULL);
}

static void lg_sess_call(struct lg_sess *s)
{
	lg_sess_send(s, LG_PH_CALL, "tools/call");
}

static void lg_sess_fail(struct lg_sess *s, const char *fmt, ...)
{
	char msg[LG_MAX_ERR];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (s->inflight) {
		s->inflight = 0;
		G.inflight--;
	}
	if (G.target != LG_T_STDIO)
		lg_conn_close(s);
	if (s->phase == LG_PH_DELETE) {
		s->phase = LG_PH_CLOSED;
		return;
	}
	if (G.retry) {
		/* The gateway is still starting: try again shortly. */
		snprintf(G.retry_error, sizeof(G.retry_error), "%s", msg);
		s->sid[0] = '\0';
		s->phase = LG_PH_NEW;
		s->retry_at = lg_now() + LG_RETRY_NS;
		return;
	}
	lg_error("session %d: %s", s->idx, msg);
	if (s->phase == LG_PH_CALL &&
	    (G.mode == LG_M_THROUGHPUT || G.mode == LG_M_LATENCY)) {
		/* A failed call counts as done; the session goes on (on a
		 * new connection if need be) from the next loop turn. */
		s->calls++;
		s->phase = LG_PH_READY;
		s->retry_at = lg_now();
		return;
	}
	s->phase = LG_PH_FAILED;
	G.failed_n++;
}

static void lg_run_begin(void)
{
	G.t_run = lg_now();
	if (G.mode == LG_M_THROUGHPUT) {
		G.t_win0 = G.t_run + (uint64_t)(G.warmup * 1e9);
		G.t_win1 = G.t_win0 + (uint64_t)(G.seconds * 1e9);
	}
	for (int i = 0; i < G.ns; i++)
		if (G.s[i].phase == LG_PH_READY)
			lg_sess_call(&G.s[i]);
}

static void lg_sess_ready(struct lg_sess *s)
{
	s->phase = LG_PH_READY;
	G.ready_n++;
	if (G.mode == LG_M_HOST && G.ready_init) {
		G.finished = 1;
		return;
	}
	switch (G.mode) {
	case LG_M_FIRST:
	case LG_M_HOST:
	case LG_M_LIST:
		G.init_ns = lg_now() - s->t_init;
		lg_sess_send(s, LG_PH_LIST, "tools/list");
		break;
	case LG_M_LATENCY:
	case LG_M_THROUGHPUT:
		if (G.ready_n + G.failed_n == G.ns)
			lg_run_begin();
		break;
	default:
		break;
	}
	if (G.target == LG_T_STDIO && !G.per_session && s->idx == 0) {
		G.child[0].inited = 1;
		for (int i = 1; i < G.ns; i++)
			if (G.s[i].phase == LG_PH_NEW)
				lg_sess_ready(&G.s[i]);
	}
}

static void lg_sess_reply(struct lg_sess *s, int ok)
{
	uint64_t t = lg_now(), lat = t - s->t_sent;

	s->inflight = 0;
	G.inflight--;
	switch (s->phase) {
	case LG_PH_INIT:
		if (G.ready_init && G.t_ready == 0)
			G.t_ready = t;
		lg_sess_send(s, LG_PH_NOTIFY, "notifications/initialized");
		return;
	case LG_PH_NOTIFY:
		lg_sess_ready(s);
		return;
	case LG_PH_LIST:
		G.list_ns = lat;
		if (G.mode == LG_M_LIST) {
			s->phase = LG_PH_READY;
			G.finished = 1;
		} else {
			lg_sess_call(s);
		}
		return;
	case LG_PH_DELETE:
		s->phase = LG_PH_CLOSED;
		return;
	case LG_PH_CALL:
		break;
	default:
		return;
	}
	s->phase = LG_PH_READY;
	s->calls++;
	if (G.mode == LG_M_FIRST || G.mode == LG_M_HOST) {
		G.t_ready = t;
		G.finished = 1;
		return;
	}
	if (G.mode == LG_M_LATENCY) {
		if ((long)s->calls > G.warmup_calls)
			lg_lat_add(lat);
		if ((long)s->calls < G.warmup_calls + G.calls)
			lg_sess_call(s);
		else
			G.finished = 1;
		return;
	}
	if (G.mode == LG_M_THROUGHPUT) {
		G.all_calls++;
		if (t >= G.t_win0 && t < G.t_win1) {
			G.window_calls++;
			lg_lat_add(lat);
		}
		if (t < G.t_win1)
			lg_sess_call(s);
	}
}

static void lg_sess_start(struct lg_sess *s)
{
	if (G.target == LG_T_STDIO && !G.per_session && s->idx > 0) {
		if (G.child[0].inited)
			lg_sess_ready(s);
		return;
	}
	G.attempts++;
	s->retry_at = 0;
	s->t_init = lg_now();
	if (G.modern) {
		/* 2026-07-28 has no initialize: every request stands alone. */
		lg_sess_ready(s);
		return;
	}
	lg_sess_send(s, LG_PH_INIT, "initialize");
}

static void lg_check_timeouts(uint64_t now)
{
	uint64_t limit = (uint64_t)G.timeout_ms * 1000000ULL;

	for (int i = 0; i < G.ns; i++) {
		struct lg_sess *s = &G.s[i];

		if (s->inflight && now - s->t_sent > limit)
			lg_sess_fail(s, "no answer within %ld ms",
				     G.timeout_ms);
		if (s->phase == LG_PH_NEW && s->retry_at && now >= s->retry_at)
			lg_sess_start(s);
		else if (s->phase == LG_PH_READY && s->retry_at &&
			 now >= s->retry_at) {
			s->retry_at = 0;
			if (G.mode == LG_M_LATENCY &&
			    (long)s->calls < G.warmup_calls + G.calls) {
				lg_sess_call(s);
			} else if (G.mode == LG_M_LATENCY) {
				G.finished = 1;
			} else if (G.mode == LG_M_THROUGHPUT &&
				   now < G.t_win1) {
				lg_sess_call(s);
			}
		}
	}
}

static void lg_signal_event(void)
{
	struct signalfd_siginfo si;

	while (read(G.sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		if (si.ssi_signo != SIGCHLD)
			G.got_signal = 1;
}

static void lg_stdin_event(void)
{
	char b[4096];
	ssize_t n = read(0, b, sizeof(b));

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		G.stdin_eof = 1;
		epoll_ctl(G.ep, EPOLL_CTL_DEL, 0, NULL);
	}
}

/* One turn of the loop: waits at most wait_ms for events. */
static void lg_loop_once(int wait_ms)
{
	struct epoll_event evs[LG_MAX_EVENTS];
	int n;

	for (int i = 0; i < G.nchild; i++)
		if (lg_buf_size(&G.child[i].wb) > 0 && !G.child[i].dead)
			lg_child_flush(&G.child[i]);
	n = epoll_wait(G.ep, evs, LG_MAX_EVENTS, wait_ms);
	for (int i = 0; i < n; i++) {
		uint64_t tag = evs[i].data.u64;
		int idx = (int)(uint32_t)tag;

		switch ((enum lg_ev)(tag >> 32)) {
		case LG_EV_SESS:
			lg_conn_event(&G.s[idx], evs[i].events);
			break;
		case LG_EV_CHILD_OUT:
			lg_child_read(&G.child[idx]);
			break;
		case LG_EV_CHILD_IN:
			lg_child_flush(&G.child[idx]);
			break;
		case LG_EV_SIG:
			lg_signal_event();
			break;
		case LG_EV_STDIN:
			lg_stdin_event();
			break;
		}
	}
}

static int lg_wait_ms(uint64_t now)
{
	uint64_t until = now + (uint64_t)LG_TICK_MS * 1000000ULL;
	uint64_t soonest = until;

	for (int i = 0; i < G.ns && G.ns <= 64; i++)
		if (G.s[i].retry_at && G.s[i].retry_at < soonest)
			soonest = G.s[i].retry_at;
	if (G.mode == LG_M_THROUGHPUT && G.t_win1 && G.t_win1 > now &&
	    G.t_win1 < soonest)
		soonest = G.t_win1;
	if (G.deadline && G.deadline < soonest)
		soonest = G.deadline > now ? G.deadline : now;
	if (soonest <= now)
		return 0;
	return (int)((soonest - now + 999999) / 1000000);
}

/* Runs the loop until the mode is done or the deadline passes. */
static void lg_loop(void)
{
	uint64_t last_check = lg_now();

	while (!G.finished && !G.got_signal) {
		uint64_t now = lg_now();

		if (G.deadline && now >= G.deadline) {
			lg_error("run did not finish within %ld ms",
				 G.timeout_ms);
			break;
		}
		if (now - last_check >= 2 * 1000000ULL) {
			lg_check_timeouts(now);
			last_check = now;
		}
		if (G.mode == LG_M_THROUGHPUT && G.t_win1 && now >= G.t_win1 &&
		    G.inflight == 0)
			break;
		if ((G.mode == LG_M_LATENCY || G.mode == LG_M_THROUGHPUT) &&
		    G.failed_n == G.ns)
			break;
		/* The last session to settle may have failed: go with the
		 * others. */
		if ((G.mode == LG_M_LATENCY || G.mode == LG_M_THROUGHPUT) &&
		    G.t_run == 0 && G.ready_n > 0 &&
		    G.ready_n + G.failed_n == G.ns)
			lg_run_begin();
		if (G.mode == LG_M_SESSIONS && G.ready_n + G.failed_n == G.ns)
			break;
		while (G.mode == LG_M_SESSIONS && G.started < G.ns &&
		       G.started - G.ready_n - G.failed_n < LG_OPEN_PARALLEL)
			lg_sess_start(&G.s[G.started++]);
		if ((G.mode == LG_M_LIST || G.mode == LG_M_FIRST ||
		     G.mode == LG_M_HOST) &&
		    G.failed_n > 0)
			break;
		lg_loop_once(lg_wait_ms(now));
	}
}

/* Ends every HTTP session politely (DELETE), within two seconds. */
static void lg_sessions_close(void)
{
	uint64_t until;
	int pending = 0;

	if (G.target == LG_T_STDIO)
		return;
	G.retry = 0;
	for (int i = 0; i < G.ns; i++) {
		struct lg_sess *s = &G.s[i];

		if (s->inflight) {
			s->inflight = 0;
			G.inflight--;
			lg_conn_close(s);
		}
		if (s->sid[0] != '\0' && s->phase != LG_PH_FAILED) {
			lg_sess_delete(s);
			pending++;
		}
	}
	until = lg_now() + 2000000000ULL;
	while (G.inflight > 0 && lg_now() < until)
		lg_loop_once(LG_TICK_MS);
	for (int i = 0; i < G.ns; i++)
		lg_conn_close(&G.s[i]);
}

static void lg_sessions_alloc(int n)
{
	G.ns = n;
	G.s = calloc((size_t)n, sizeof(*G.s));
	if (G.s == NULL)
		lg_die("out of memory");
	for (int i = 0; i < n; i++) {
		G.s[i].idx = i;
		G.s[i].fd = -1;
	}
}

static void lg_sessions_free(void)
{
	for (int i = 0; i < G.ns; i++) {
		lg_conn_close(&G.s[i]);
		lg_buf_free(&G.s[i].rb);
		lg_buf_free(&G.s[i].wb);
		lg_buf_free(&G.s[i].resp.body);
	}
	free(G.s);
	G.s = NULL;
	G.ns = 0;
}

/* /proc helpers: RSS of a process and of its descendants. */

static long lg_proc_rss_kb(pid_t pid)
{
	char path[64];
	long size = 0, rss = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	if (fscanf(f, "%ld %ld", &size, &rss) != 2)
		rss = -1;
	fclose(f);
	return rss < 0 ? -1 : rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Fills out with the descendants of root (not root itself). */
static int lg_proc_tree(pid_t root, pid_t *out, int max)
{
	static pid_t pids[LG_MAX_PROCS], ppids[LG_MAX_PROCS];
	int n = 0, found = 0, grew = 1;
	struct dirent *de;
	DIR *d = opendir("/proc");

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) && n < LG_MAX_PROCS) {
		char path[300], buf[512], *rp;
		ssize_t len;
		int fd;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		rp = strrchr(buf, ')');
		if (rp == NULL)
			continue;
		pids[n] = (pid_t)atoi(de->d_name);
		ppids[n] = (pid_t)strtol(rp + 4, NULL, 10); /* ") S ppid" */
		n++;
	}
	closedir(d);
	while (grew) {
		grew = 0;
		for (int i = 0; i < n; i++) {
			int in = 0, parent = ppids[i] == root;

			for (int j = 0; j < found && !parent; j++)
				parent = ppids[i] == out[j];
			if (!parent)
				continue;
			for (int j = 0; j < found && !in; j++)
				in = out[j] == pids[i];
			if (!in && found < max) {
				out[found++] = pids[i];
				grew = 1;
			}
		}
	}
	return found;
}

static long lg_tree_rss_kb(pid_t root, int *nprocs)
{
	static pid_t tree[LG_MAX_PROCS];
	int n = lg_proc_tree(root, tree, LG_MAX_PROCS);
	long total = 0;

	for (int i = 0; i < n; i++) {
		long kb = lg_proc_rss_kb(tree[i]);

		if (kb > 0)
			total += kb;
	}
	if (nprocs)
		*nprocs = n;
	return total;
}

static void lg_set_meta(json_t *out)
{
	const char *k;
	json_t *v;

	json_object_foreach(G.meta, k, v) json_object_set(out, k, v);
}

static void lg_print(json_t *out)
{
	json_dumpf(out, stdout, JSON_COMPACT | JSON_REAL_PRECISION(6));
	fputc('\n', stdout);
	fflush(stdout);
}

static int lg_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double lg_pct(double q)
{
	size_t i;

	if (G.nlat == 0)
		return 0;
	i = (size_t)(q * (double)(G.nlat - 1) + 0.5);
	return lg_ms(G.lat[i]);
}

static void lg_stats(json_t *out)
{
	double sum = 0;

	if (G.nlat == 0)
		return;
	qsort(G.lat, G.nlat, sizeof(*G.lat), lg_cmp_u64);
	for (size_t i = 0; i < G.nlat; i++)
		sum += (double)G.lat[i];
	json_object_set_new(out, "p50_ms", json_real(lg_pct(0.50)));
	json_object_set_new(out, "p90_ms", json_real(lg_pct(0.90)));
	json_object_set_new(out, "p99_ms", json_real(lg_pct(0.99)));
	json_object_set_new(out, "mean_ms",
			    json_real(sum / (double)G.nlat / 1e6));
	json_object_set_new(out, "min_ms", json_real(lg_ms(G.lat[0])));
	json_object_set_new(out, "max_ms", json_real(lg_ms(G.lat[G.nlat - 1])));
}

static const char *lg_target_name(void)
{
	return G.target == LG_T_STDIO ? "stdio"
	       : G.target == LG_T_TCP ? "tcp"
				      : "unix";
}

static json_t *lg_result_new(const char *mode)
{
	json_t *out = json_object();

	json_object_set_new(out, "mode", json_string(mode));
	json_object_set_new(out, "transport", json_string(lg_target_name()));
	json_object_set_new(out, "protocol",
			    json_string(G.modern ? LG_MODERN : LG_PROTO));
	lg_set_meta(out);
	return out;
}

static void lg_result_errors(json_t *out, int done)
{
	json_object_set_new(out, "errors", json_integer(G.errors));
	json_object_set_new(out, "ok", json_boolean(done && G.errors == 0));
	if (G.first_error[0] != '\0')
		json_object_set_new(out, "first_error",
				    json_string(G.first_error));
}

static void lg_setup_loop(void)
{
	sigset_t set;

	G.ep = epoll_create1(EPOLL_CLOEXEC);
	if (G.ep < 0)
		lg_die("epoll: %s", strerror(errno));
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	G.sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (G.sigfd < 0)
		lg_die("signalfd: %s", strerror(errno));
	lg_ep_set(G.sigfd, lg_tag(LG_EV_SIG, 0), EPOLLIN, EPOLL_CTL_ADD);
}

static void lg_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Runs one measuring mode against the target and prints its line. */
static int lg_run(void)
{
	int nsess = 1, done;
	json_t *out;

	lg_raise_nofile();
	lg_setup_loop();
	G.t_start = lg_now();
	if (G.mode == LG_M_THROUGHPUT)
		nsess = G.sessions;
	else if (G.mode == LG_M_SESSIONS)
		nsess = G.open;
	lg_sessions_alloc(nsess);
	if (G.target == LG_T_STDIO) {
		if (G.mode == LG_M_SESSIONS)
			lg_die("sessions mode needs an HTTP target");
		G.nchild = G.per_session ? nsess : 1;
		if (G.nchild > LG_MAX_CHILDREN)
			lg_die("at most %d stdio servers", LG_MAX_CHILDREN);
		G.child = calloc((size_t)G.nchild, sizeof(*G.child));
		if (G.child == NULL)
			lg_die("out of memory");
		for (int i = 0; i < G.nchild; i++) {
			G.child[i].idx = i;
			lg_child_spawn(&G.child[i]);
		}
	}
	if (G.mode == LG_M_FIRST && G.target != LG_T_STDIO)
		G.retry = 1;
	G.deadline = 0;
	if (G.mode == LG_M_FIRST || G.mode == LG_M_LIST ||
	    G.mode == LG_M_SESSIONS)
		G.deadline = G.t_start + (uint64_t)G.timeout_ms * 1000000ULL;
	if (G.mode != LG_M_SESSIONS)
		for (int i = 0; i < nsess; i++)
			lg_sess_start(&G.s[i]);
	lg_loop();
	if (G.mode == LG_M_FIRST && G.t_ready == 0)
		lg_error("no answer: %s", G.retry_error);
	G.retry = 0;

	switch (G.mode) {
	case LG_M_LATENCY:
		out = lg_result_new("latency");
		done = G.finished;
		json_object_set_new(out, "calls", json_integer((long)G.nlat));
		lg_stats(out);
		break;
	case LG_M_THROUGHPUT: {
		double secs = (double)(G.t_win1 - G.t_win0) / 1e9;

		out = lg_result_new("throughput");
		done = G.t_win1 != 0 && G.failed_n == 0;
		json_object_set_new(out, "sessions", json_integer(G.ns));
		json_object_set_new(out, "seconds", json_real(secs));
		json_object_set_new(out, "calls",
				    json_integer((long)G.window_calls));
		/* What the run's CPU figures divide by. */
		json_object_set_new(out, "calls_all",
				    json_integer((long)G.all_calls));
		json_object_set_new(
			out, "calls_per_s",
			json_real(secs > 0 ? (double)G.window_calls / secs
					   : 0));
		json_object_set_new(out, "failed_sessions",
				    json_integer(G.failed_n));
		lg_stats(out);
		break;
	}
	case LG_M_SESSIONS:
		out = lg_result_new("sessions");
		done = G.ready_n == G.ns;
		json_object_set_new(out, "open", json_integer(G.ns));
		json_object_set_new(out, "opened", json_integer(G.ready_n));
		json_object_set_new(out, "open_ms",
				    json_real(lg_ms(lg_now() - G.t_start)));
		json_object_set_new(out, "connections_held", json_boolean(1));
		if (G.rss_pid > 0) {
			int np = 0;
			long tree;

			if (G.settle_ms > 0)
				usleep((useconds_t)G.settle_ms * 1000);
			tree = lg_tree_rss_kb(G.rss_pid, &np);
			json_object_set_new(
				out, "rss_kb",
				json_integer(lg_proc_rss_kb(G.rss_pid)));
			json_object_set_new(
				out, "tree_rss_kb",
				json_integer(tree + lg_proc_rss_kb(G.rss_pid)));
		}
		break;
	case LG_M_FIRST: {
		uint64_t since = G.since_ns ? G.since_ns : G.t_start;

		out = lg_result_new("first-call");
		done = G.t_ready != 0;
		json_object_set_new(
			out, "first_call_ms",
			json_real(done ? lg_ms(G.t_ready - since) : -1));
		json_object_set_new(out, "first_list_ms",
				    json_real(lg_ms(G.list_ns)));
		json_object_set_new(out, "attempts", json_integer(G.attempts));
		break;
	}
	case LG_M_LIST:
	default:
		out = lg_result_new("list");
		done = G.finished;
		json_object_set_new(out, "init_ms",
				    json_real(lg_ms(G.init_ns)));
		json_object_set_new(out, "list_ms",
				    json_real(lg_ms(G.list_ns)));
		break;
	}
	if (G.got_signal)
		lg_error("interrupted by a signal");
	lg_result_errors(out, done);
	if (G.mode == LG_M_SESSIONS) {
		/* Hold the sessions open until stdin closes or a signal. */
		lg_print(out);
		json_decref(out);
		out = NULL;
		fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
		if (epoll_ctl(G.ep, EPOLL_CTL_ADD, 0,
			      &(struct epoll_event){
				      .events = EPOLLIN,
				      .data.u64 = lg_tag(LG_EV_STDIN, 0)}) < 0)
			G.stdin_eof = 1; /* /dev/null or a file */
		while (!G.stdin_eof && !G.got_signal)
			lg_loop_once(1000);
	}
	lg_sessions_close();
	if (out)
		lg_cpu_put(out, "self_cpu_s", RUSAGE_SELF);
	if (out) {
		lg_children_stop(out);
		lg_print(out);
		json_decref(out);
	} else {
		json_t *tmp = json_object();

		lg_children_stop(tmp);
		json_decref(tmp);
	}
	lg_sessions_free();
	free(G.lat);
	return done && G.errors == 0 ? 0 : 1;
}

/* Host mode: the gateway is our child, so that we can time its start, sample
 * it and its descendants, and stop them all. */

static pid_t lg_host_spawn(void)
{
	sigset_t none;
	pid_t pid = fork();
	int fd;

	if (pid != 0)
		return pid;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0)
		dup2(fd, 0);
	if (G.log_file)
		fd = open(G.log_file, O_WRONLY | O_CREAT | O_APPEND, 0644);
	else
		fd = open("/dev/null", O_WRONLY);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	execvp(G.cmd[0], G.cmd);
	fprintf(stderr, "loadgen: exec %s: %s\n", G.cmd[0], strerror(errno));
	_exit(127);
}

static int lg_parse_url(const char *url)
{
	const char *h = url, *c, *sl;

	if (strncmp(h, "http://", 7) != 0)
		return -EINVAL;
	h += 7;
	sl = strchr(h, '/');
	if (sl == NULL)
		sl = h + strlen(h);
	c = memchr(h, ':', (size_t)(sl - h));
	if (c == NULL || (size_t)(c - h) >= sizeof(G.host))
		return -EINVAL;
	memcpy(G.host, h, (size_t)(c - h));
	G.host[c - h] = '\0';
	G.port = atoi(c + 1);
	snprintf(G.path, sizeof(G.path), "%s", *sl ? sl : "/");
	snprintf(G.hosthdr, sizeof(G.hosthdr), "%s:%d", G.host, G.port);
	return G.port > 0 ? 0 : -EINVAL;
}

/* Reads url (and socket) from the runtime file once it is complete. */
static int lg_runtime_read(json_t *out)
{
	json_error_t jerr;
	json_t *rt = json_load_file(G.runtime_file, 0, &jerr);
	const char *url, *sock;
	int rc = -EAGAIN;

	if (rt == NULL)
		return -EAGAIN;
	url = json_string_value(json_object_get(rt, "url"));
	sock = json_string_value(json_object_get(rt, "socket"));
	if (url && lg_parse_url(url) == 0) {
		json_object_set_new(out, "url", json_string(url));
		if (sock)
			json_object_set_new(out, "socket", json_string(sock));
		if (sock && G.target == LG_T_UNIX)
			snprintf(G.unix_path, sizeof(G.unix_path), "%s", sock);
		else
			G.target = LG_T_TCP;
		rc = 0;
	}
	json_decref(rt);
	return rc;
}

static int lg_host_alive(pid_t pid, int *status)
{
	return waitpid(pid, status, WNOHANG) == 0;
}

static void lg_host_sleep(uint64_t ns)
{
	lg_loop_once((int)((ns + 999999) / 1000000));
}

static int lg_host_connect_once(void)
{
	struct lg_sess s = {.fd = -1};
	struct epoll_event ev;
	int rc = lg_conn_open(&s);

	if (rc < 0)
		return rc;
	if (s.connecting) {
		/* Loopback connects finish at once or fail at once. */
		int e = 0;
		socklen_t el = sizeof(e);
		int ep = epoll_create1(EPOLL_CLOEXEC);

		ev.events = EPOLLOUT;
		ev.data.u64 = 0;
		epoll_ctl(ep, EPOLL_CTL_ADD, s.fd, &ev);
		epoll_wait(ep, &ev, 1, 100);
		close(ep);
		getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &e, &el);
		rc = e ? -e : 0;
	}
	lg_conn_close(&s);
	lg_buf_free(&s.rb);
	lg_buf_free(&s.wb);
	lg_buf_free(&s.resp.body);
	return rc;
}

static void lg_host_stop(pid_t pid, json_t *out, int *status, int already_dead)
{
	static pid_t tree[LG_MAX_PROCS];
	uint64_t t0 = lg_now(), until;
	int n, leftover = 0, exited = already_dead, st;

	if (!exited) {
		kill(-pid, SIGTERM);
		kill(pid, SIGTERM);
		until = t0 + (uint64_t)G.stop_ms * 1000000ULL;
		while (!(exited = !lg_host_alive(pid, status)) &&
		       lg_now() < until)
			lg_host_sleep(5000000ULL);
		json_object_set_new(out, "stop_ms",
				    json_real(lg_ms(lg_now() - t0)));
		if (!exited) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, status, 0);
			json_object_set_new(out, "killed", json_true());
		}
	}
	/* Orphans come to us (we are a subreaper): give them a second to go,
	 * then count and kill what is left. */
	until = lg_now() + 1000000000ULL;
	for (;;) {
		while (waitpid(-1, &st, WNOHANG) > 0)
			;
		n = lg_proc_tree(getpid(), tree, LG_MAX_PROCS);
		if (n == 0 || lg_now() >= until)
			break;
		lg_host_sleep(10000000ULL);
	}
	for (int i = 0; i < n; i++) {
		char path[64], buf[256];
		int fd;
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)tree[i]);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len > 0) {
			char *rp;

			buf[len] = '\0';
			rp = strrchr(buf, ')');
			if (rp && rp[2] == 'Z')
				continue;
		}
		leftover++;
		kill(tree[i], SIGKILL);
	}
	while (waitpid(-1, &st, WNOHANG) > 0)
		;
	json_object_set_new(out, "leftover", json_integer(leftover));
}

static int lg_host(void)
{
	uint64_t t0, until, next_sample;
	long peak_rss = 0, peak_tree = 0, rss, tree;
	int status = 0, dead = 0, peak_np = 0, np = 0, samples = 0, ok = 1;
	json_t *out;
	pid_t pid;

	lg_raise_nofile();
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() == 1)
		return 1;
	lg_setup_loop();
	out = lg_result_new("host");
	t0 = lg_now();
	pid = lg_host_spawn();
	if (pid < 0)
		lg_die("fork: %s", strerror(errno));
	json_object_set_new(out, "pid", json_integer(pid));
	until = t0 + (uint64_t)G.timeout_ms * 1000000ULL;

	while (G.runtime_file && lg_runtime_read(out) < 0) {
		dead = !lg_host_alive(pid, &status);
		if (dead || lg_now() > until || G.got_signal) {
			lg_error("no runtime file %s%s", G.runtime_file,
				 dead ? " (the gateway exited)" : "");
			goto fail;
		}
		lg_host_sleep(LG_RETRY_NS);
	}
	if (strcmp(G.ready, "connect") == 0) {
		while (lg_host_connect_once() < 0) {
			dead = !lg_host_alive(pid, &status);
			if (dead || lg_now() > until || G.got_signal) {
				lg_error("never accepted a connection%s",
					 dead ? " (the gateway exited)" : "");
				goto fail;
			}
			lg_host_sleep(LG_RETRY_NS);
		}
		G.t_ready = lg_now();
	} else if (strcmp(G.ready, "call") == 0 ||
		   strcmp(G.ready, "init") == 0) {
		G.ready_init = strcmp(G.ready, "init") == 0;
		lg_sessions_alloc(1);
		G.retry = 1;
		G.deadline = until;
		lg_sess_start(&G.s[0]);
		while (!G.finished && !G.got_signal && lg_now() < until) {
			uint64_t now = lg_now();

			if (!lg_host_alive(pid, &status)) {
				dead = 1;
				break;
			}
			lg_check_timeouts(now);
			lg_loop_once(lg_wait_ms(now));
		}
		if (G.t_ready == 0 || !G.finished) {
			lg_error("no answer%s: %s",
				 dead ? " (the gateway exited)" : "",
				 G.retry_error);
			goto fail;
		}
		if (!G.ready_init)
			json_object_set_new(out, "first_list_ms",
					    json_real(lg_ms(G.list_ns)));
		json_object_set_new(out, "attempts", json_integer(G.attempts));
		lg_sessions_close();
		lg_sessions_free();
	} else {
		G.t_ready = lg_now();
	}
	json_object_set_new(out, "ready_ms", json_real(lg_ms(G.t_ready - t0)));
	if (G.settle_ms > 0)
		lg_host_sleep((uint64_t)G.settle_ms * 1000000ULL);
	rss = lg_proc_rss_kb(pid);
	tree = lg_tree_rss_kb(getpid(), &np);
	json_object_set_new(out, "rss_kb", json_integer(rss));
	json_object_set_new(out, "tree_rss_kb", json_integer(tree));
	json_object_set_new(out, "nprocs", json_integer(np));
	lg_result_errors(out, 1);
	lg_print(out);
	json_decref(out);

	/* Sample until told to stop. */
	out = lg_result_new("host-exit");
	json_object_set_new(out, "pid", json_integer(pid));
	peak_rss = rss;
	peak_tree = tree;
	peak_np = np;
	next_sample = lg_now() + LG_SAMPLE_NS;
	while (!G.got_signal) {
		uint64_t now = lg_now();

		if (!lg_host_alive(pid, &status)) {
			dead = 1;
			lg_error("the gateway exited by itself");
			break;
		}
		if (now >= next_sample) {
			rss = lg_proc_rss_kb(pid);
			tree = lg_tree_rss_kb(getpid(), &np);
			if (rss > peak_rss)
				peak_rss = rss;
			if (tree > peak_tree)
				peak_tree = tree;
			if (np > peak_np)
				peak_np = np;
			samples++;
			next_sample = now + LG_SAMPLE_NS;
		}
		lg_host_sleep(next_sample > now ? next_sample - now : 0);
	}
	if (!dead) {
		long hwm = lg_proc_status_kb(pid, "VmHWM");

		json_object_set_new(out, "gateway_hwm_kb", json_integer(hwm));
		if (hwm > peak_rss)
			peak_rss = hwm;
	}
	json_object_set_new(out, "peak_rss_kb", json_integer(peak_rss));
	json_object_set_new(out, "peak_tree_rss_kb", json_integer(peak_tree));
	json_object_set_new(out, "peak_nprocs", json_integer(peak_np));
	json_object_set_new(out, "samples", json_integer(samples));
	json_object_set_new(out, "rss_method",
			    json_string("gateway: max(VmHWM, sampled VmRSS); "
					"tree: sampled sum of VmRSS of the "
					"gateway and its descendants every "
					"100 ms"));
	lg_host_stop(pid, out, &status, dead);
	if (WIFEXITED(status))
		json_object_set_new(out, "exit_status",
				    json_integer(WEXITSTATUS(status)));
	else if (WIFSIGNALED(status))
		json_object_set_new(out, "exit_signal",
				    json_integer(WTERMSIG(status)));
	lg_result_errors(out, !dead);
	lg_print(out);
	json_decref(out);
	return dead || G.errors ? 1 : 0;

fail:
	ok = 0;
	lg_host_stop(pid, out, &status, dead);
	if (dead && WIFEXITED(status))
		json_object_set_new(out, "exit_status",
				    json_integer(WEXITSTATUS(status)));
	lg_result_errors(out, ok);
	lg_print(out);
	json_decref(out);
	lg_sessions_free();
	return 1;
}

static int lg_tree_print(pid_t root)
{
	static pid_t tree[LG_MAX_PROCS];
	int n = lg_proc_tree(root, tree, LG_MAX_PROCS);

	printf("%d\n", (int)root);
	for (int i = 0; i < n; i++)
		printf("%d\n", (int)tree[i]);
	return 0;
}

static int lg_freeport(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) < 0)
		lg_die("freeport: %s", strerror(errno));
	printf("%d\n", ntohs(a.sin_port));
	close(fd);
	return 0;
}

static void lg_usage(void)
{
	fputs("usage: loadgen TARGET MODE [options] [-- CMD ARGS...]\n"
	      "targets: --stdio (spawns CMD, shared by all sessions),\n"
	      "         --stdio-per-session (one CMD per session),\n"
	      "         --url http://127.0.0.1:P/mcp,\n"
	      "         --unix PATH [--path /mcp]\n"
	      "         --modern: HTTP as MCP 2026-07-28 (no initialize, no\n"
	      "         session; _meta and headers on every request)\n"
	      "modes:   latency [--calls N] [--warmup-calls N]\n"
	      "         throughput [--sessions N] [--seconds S] [--warmup S]\n"
	      "         sessions --open N [--rss-pid PID] [--settle-ms N]\n"
	      "         first-call [--since-ns T]   list\n"
	      "         host [--runtime-file F] [--ready "
	      "call|init|connect|none]\n"
	      "              [--settle-ms N] [--stop-ms N] [--log FILE]\n"
	      "              -- CMD ARGS...\n"
	      "         tree PID   freeport   now\n"
	      "common:  --timeout-ms N  --meta key=value (repeatable)\n",
	      stderr);
	exit(2);
}

static const char *lg_arg(int argc, char **argv, int *i)
{
	if (*i + 1 >= argc)
		lg_usage();
	return argv[++*i];
}

static void lg_parse(int argc, char **argv)
{
	static const struct {
		const char *name;
		enum lg_mode mode;
	} modes[] = {
		{"latency", LG_M_LATENCY},   {"throughput", LG_M_THROUGHPUT},
		{"sessions", LG_M_SESSIONS}, {"first-call", LG_M_FIRST},
		{"list", LG_M_LIST},	     {"host", LG_M_HOST},
		{"tree", LG_M_TREE},	     {"freeport", LG_M_FREEPORT},
		{"now", LG_M_NOW},
	};
	int have_target = 0;

	G.target = LG_T_TCP;
	G.calls = 2000;
	G.warmup_calls = 50;
	G.sessions = 1;
	G.open = 100;
	G.seconds = 3;
	G.warmup = 0.25;
	G.timeout_ms = 10000;
	G.ready = "call";
	G.stop_ms = 5000;
	G.meta = json_object();
	snprintf(G.path, sizeof(G.path), "/mcp");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0) {
			G.cmd = argv + i + 1;
			if (G.cmd[0] == NULL)
				lg_usage();
			break;
		} else if (strcmp(a, "--stdio") == 0) {
			G.target = LG_T_STDIO;
			have_target = 1;
		} else if (strcmp(a, "--stdio-per-session") == 0) {
			G.target = LG_T_STDIO;
			G.per_session = 1;
			have_target = 1;
		} else if (strcmp(a, "--url") == 0) {
			if (lg_parse_url(lg_arg(argc, argv, &i)) < 0)
				lg_die("bad --url (http://IPV4:PORT/PATH)");
			G.target = LG_T_TCP;
			have_target = 1;
		} else if (strcmp(a, "--unix") == 0) {
			const char *p = lg_arg(argc, argv, &i);

			if (strlen(p) >= sizeof(G.unix_path))
				lg_die("socket path too long: %s", p);
			snprintf(G.unix_path, sizeof(G.unix_path), "%s", p);
			snprintf(G.hosthdr, sizeof(G.hosthdr), "localhost");
			G.target = LG_T_UNIX;
			have_target = 1;
		} else if (strcmp(a, "--modern") == 0) {
			G.modern = 1;
		} else if (strcmp(a, "--path") == 0) {
			snprintf(G.path, sizeof(G.path), "%s",
				 lg_arg(argc, argv, &i));
		} else if (strcmp(a, "--calls") == 0) {
			G.calls = atol(lg_arg(argc, argv, &i));
		} else if (strcmp(a, "--warmup-calls") == 0) {
			G.warmup_calls = atol(lg_arg(argc, argv, &i));
		} else if (strcmp(a, "--sessions") == 0) {
			G.sessions = atoi(lg_arg(argc, argv, &i));
		} else if (strcmp(a, "--open") == 0) {
			G.open = atoi(lg_arg(argc, argv, &i));
		} else if (strcmp(a, "--seconds") == 0) {
			G.seconds = atof(lg_arg(argc, argv, &i));
		} else if (strcmp(a, "--warmup") == 0) {
			G.warmup = atof(lg_arg(argc, argv, &i));
		} else if (strcmp(a, "--timeout-ms") == 0) {
			G.timeout_ms = atol(lg_arg(argc, argv, &i));
		} else if (strcmp(a, "--settle-ms") == 0) {
			G.settle_ms = atol(lg_arg(argc, argv, &i));
		} else if (strcmp(a, "--stop-ms") == 0) {
			G.stop_ms = atol(lg_arg(argc, argv, &i));
		} else if (strcmp(a, "--runtime-file") == 0) {
			G.runtime_file = lg_arg(argc, argv, &i);
		} else if (strcmp(a, "--log") == 0) {
			G.log_file = lg_arg(argc, argv, &i);
		} else if (strcmp(a, "--ready") == 0) {
			G.ready = lg_arg(argc, argv, &i);
		} else if (strcmp(a, "--rss-pid") == 0) {
			G.rss_pid = (pid_t)atoi(lg_arg(argc, argv, &i));
		} else if (strcmp(a, "--since-ns") == 0) {
			G.since_ns = strtoull(lg_arg(argc, argv, &i), NULL, 10);
		} else if (strcmp(a, "--meta") == 0) {
			const char *kv = lg_arg(argc, argv, &i);
			const char *eq = strchr(kv, '=');

			char key[64];

			if (eq == NULL || (size_t)(eq - kv) >= sizeof(key))
				lg_die("--meta wants key=value");
			memcpy(key, kv, (size_t)(eq - kv));
			key[eq - kv] = '\0';
			json_object_set_new(G.meta, key, json_string(eq + 1));
		} else if (a[0] == '-') {
			lg_usage();
		} else if (G.mode == LG_M_NONE) {
			for (size_t m = 0; m < sizeof(modes) / sizeof(*modes);
			     m++)
				if (strcmp(a, modes[m].name) == 0)
					G.mode = modes[m].mode;
			if (G.mode == LG_M_NONE)
				lg_usage();
		} else if (G.mode == LG_M_TREE && G.rss_pid == 0) {
			G.rss_pid = (pid_t)atoi(a);
		} else {
			lg_usage();
		}
	}
	if (G.mode == LG_M_NONE)
		lg_usage();
	if (G.target == LG_T_TCP && G.hosthdr[0] == '\0')
		lg_parse_url("http://127.0.0.1:7345/mcp");
	if (G.calls < 1 || G.calls > LG_MAX_CALLS || G.warmup_calls < 0 ||
	    G.sessions < 1 || G.sessions > LG_MAX_SESSIONS || G.open < 1 ||
	    G.open > LG_MAX_SESSIONS || G.seconds <= 0 || G.warmup < 0 ||
	    G.timeout_ms < 1)
		lg_die("a count is out of range");
	if ((G.target == LG_T_STDIO || G.mode == LG_M_HOST) && G.cmd == NULL)
		lg_die("this target needs -- CMD ARGS...");
	if (G.mode == LG_M_HOST && !have_target && !G.runtime_file &&
	    strcmp(G.ready, "none") != 0)
		lg_die("host needs --url, --unix or --runtime-file");
	if (G.mode == LG_M_HOST && G.target == LG_T_STDIO)
		lg_die("host probes over HTTP");
	if (G.modern && (G.target == LG_T_STDIO ||
			 (G.mode != LG_M_LATENCY && G.mode != LG_M_THROUGHPUT &&
			  G.mode != LG_M_LIST && G.mode != LG_M_FIRST)))
		lg_die("--modern is for latency, throughput, list and "
		       "first-call over HTTP");
}

int main(int argc, char **argv)
{
	int rc;

	lg_parse(argc, argv);
	switch (G.mode) {
	case LG_M_TREE:
		return lg_tree_print(G.rss_pid);
	case LG_M_FREEPORT:
		return lg_freeport();
	case LG_M_NOW:
		printf("%" PRIu64 "\n", lg_now());
		return 0;
	case LG_M_HOST:
		rc = lg_host();
		break;
	default:
		rc = lg_run();
		break;
	}
	json_decref(G.meta);
	return rc;
}
