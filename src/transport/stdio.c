/*
 * One stdio MCP server process: spawning it in its own process group,
 * framing its stdout into messages, keeping its stderr ring, writing to its
 * stdin, and noticing its exit. Owns the connection and its libuv handles;
 * ladder.c ends them.
 */
#include "transport/stdio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/framer.h"
#include "transport/stdio_int.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* stdout usually reaches EOF just before the exit is reaped: wait this
 * long for the real exit status before reporting -1. */
#define STDIO_EXIT_WAIT_MS 100
/* Output still in the pipes when the exit is reaped is read first, so
 * messages written before exit come before on_exit; at most this much. */
#define STDIO_DRAIN_MAX (4 * 1024 * 1024)

/* A queued write owns its copy of the message. */
struct stdio_write {
	uv_write_t req;
	char data[];
};

/* ---- stdout, stderr ---- */

static void stdio_line_cb(void *ctx, const char *line, size_t len)
{
	struct stdio_conn *c = ctx;

	/* An earlier callback of this same feed may have stopped us. */
	if (c->state != STDIO_RUNNING || c->reported)
		return;
	if (c->cbs.on_message != NULL)
		c->cbs.on_message(c->ctx, line, len);
}

static void stdio_garbage_cb(void *ctx, const char *what)
{
	struct stdio_conn *c = ctx;

	if (c->state != STDIO_RUNNING || c->reported)
		return;
	log_debug("pid %d: stdout: %s", (int)c->pid, what);
	if (c->cbs.on_garbage != NULL)
		c->cbs.on_garbage(c->ctx, what);
}

static void stdio_overlong_cb(void *ctx, const char *head, size_t head_len,
			      const char *tail, size_t tail_len)
{
	struct stdio_conn *c = ctx;

	if (c->state != STDIO_RUNNING || c->reported)
		return;
	if (c->cbs.on_overlong != NULL)
		c->cbs.on_overlong(c->ctx, head, head_len, tail, tail_len);
}

static void stdio_out_data(struct stdio_conn *c, const char *data, size_t len)
{
	/* Once stopping or exited nobody listens; reading goes on only so
	 * that a server flushing on its way out does not block. */
	if (c->state != STDIO_RUNNING || c->reported)
		return;
	framer_feed(c->framer, data, len, stdio_line_cb, stdio_garbage_cb, c);
}

static void stdio_err_data(struct stdio_conn *c, const char *p, size_t len)
{
	while (len > 0) {
		if (!c->err_open) {
			struct stdio_errline *l = &c->err_ring[c->err_next];
			l->len = 0;
			l->cut = false;
			c->err_next = (c->err_next + 1) % STDIO_STDERR_LINES;
			if (c->err_count < STDIO_STDERR_LINES)
				c->err_count++;
			c->err_open = true;
		}
		int cur = (c->err_next + STDIO_STDERR_LINES - 1) %
			  STDIO_STDERR_LINES;
		struct stdio_errline *l = &c->err_ring[cur];
		const char *nl = memchr(p, '\n', len);
		size_t seg = nl ? (size_t)(nl - p) : len;
		size_t room = STDIO_STDERR_LINE_MAX - l->len;
		size_t take = seg < room ? seg : room;

		memcpy(l->data + l->len, p, take);
		l->len += take;
		if (take < seg)
			l->cut = true;
		if (nl == NULL)
			return;
		if (!l->cut && l->len > 0 && l->data[l->len - 1] == '\r')
			l->len--;
		c->err_open = false;
		if (c->cbs.on_stderr != NULL && l->len > 0)
			c->cbs.on_stderr(c->ctx, l->data, l->len);
		p = nl + 1;
		len -= seg + 1;
	}
}

static void stdio_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct stdio_conn *c = h->data;

	if (h == (uv_handle_t *)&c->out)
		*buf = uv_buf_init(c->out_buf, sizeof c->out_buf);
	else
		*buf = uv_buf_init(c->err_buf, sizeof c->err_buf);
}

static void stdio_eof_timer_cb(uv_timer_t *t)
{
	struct stdio_conn *c = t->data;

	if (c->state != STDIO_RUNNING || c->reported)
		return;
	log_debug("pid %d: stdout closed, process still running", (int)c->pid);
	stdio_report_exit(c, -1, 0);
	stdio_conn_stop(c);
}

static void stdio_out_closed(struct stdio_conn *c)
{
	if (c->out_done)
		return;
	c->out_done = true;
	uv_read_stop((uv_stream_t *)&c->out);
	if (c->state != STDIO_RUNNING || c->reported)
		return;
	uv_timer_start(&c->eof_timer, stdio_eof_timer_cb, STDIO_EXIT_WAIT_MS,
		       0);
}

static void stdio_out_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct stdio_conn *c = s->data;

	if (n > 0) {
		stdio_out_data(c, buf->base, (size_t)n);
		return;
	}
	if (n == 0)
		return;
	if (n != UV_EOF)
		log_debug("pid %d: stdout: %s", (int)c->pid, uv_strerror(n));
	stdio_out_closed(c);
}

void stdio_conn_pause(struct stdio_conn *c, bool on)
{
	/* Only a running server is held back; one that is stopping is
	 * read (its output dropped) so it can see the end of its stdin. */
	if (on && c->state != STDIO_RUNNING)
		return;
	if (c->out_paused == on)
		return;
	c->out_paused = on;
	if (c->out_done)
		return;
	if (on)
		uv_read_stop((uv_stream_t *)&c->out);
	else
		uv_read_start((uv_stream_t *)&c->out, stdio_alloc_cb,
			      stdio_out_read_cb);
}

static void stdio_err_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct stdio_conn *c = s->data;

	if (n > 0) {
		stdio_err_data(c, buf->base, (size_t)n);
		return;
	}
	if (n == 0)
		return;
	c->err_done = true;
	uv_read_stop(s);
}

/* Reads what is already in a pipe without waiting for the loop. EOF is
 * left for the read callback, which will see it again. */
static void stdio_drain_pipe(struct stdio_conn *c, uv_pipe_t *p, bool is_out)
{
	uv_os_fd_t fd;
	char buf[STDIO_ERR_READ_BUF];
	size_t total = 0;

	if (uv_is_closing((uv_handle_t *)p) ||
	    uv_fileno((uv_handle_t *)p, &fd) != 0)
		return;
	/* A blocking read could hang on a grandchild holding the pipe. */
	int fl = fcntl(fd, F_GETFL);
	if (fl == -1 || !(fl & O_NONBLOCK))
		return;
	while (total < STDIO_DRAIN_MAX) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n > 0) {
			total += (size_t)n;
			if (is_out)
				stdio_out_data(c, buf, (size_t)n);
			else
				stdio_err_data(c, buf, (size_t)n);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		break;
	}
}

static void stdio_exit_cb(uv_process_t *proc, int64_t exit_status,
			  int term_signal)
{
	struct stdio_conn *c = proc->data;

	log_debug("pid %d: exited, status %lld, signal %d", (int)c->pid,
		  (long long)exit_status, term_signal);
	c->exited = true;
	c->exit_status = exit_status;
	c->term_signal = term_signal;
	uv_timer_stop(&c->eof_timer);
	if (!c->out_done)
		stdio_drain_pipe(c, &c->out, true);
	if (!c->err_done)
		stdio_drain_pipe(c, &c->err, false);
	stdio_report_exit(c, exit_status, term_signal);
	/* The leader is gone but its group may not be: the ladder runs on
	 * its own, whether or not the owner asks for a stop. */
	if (c->state == STDIO_RUNNING)
		stdio_conn_stop(c);
	else
		stdio_ladder_check(c);
}

/* ---- stdin ---- */

static void stdio_write_cb(uv_write_t *req, int status)
{
	struct stdio_write *w = (struct stdio_write *)req;

	if (status < 0 && status != UV_ECANCELED)
		log_debug("stdin write: %s", uv_strerror(status));
	free(w);
}

int stdio_conn_send(struct stdio_conn *c, const char *data, size_t len)
{
	if (c->state != STDIO_RUNNING || c->reported ||
	    uv_is_closing((uv_handle_t *)&c->in))
		return -EPIPE;
	if (len >= STDIO_MAX_QUEUED ||
	    c->in.write_queue_size > STDIO_MAX_QUEUED - len - 1)
		return -ENOBUFS;

	struct stdio_write *w = xmalloc(sizeof *w + len + 1);
	memcpy(w->data, data, len);
	/* Raw CR or LF can only be whitespace in valid JSON; as spaces they
	 * keep one message on one line for any reader's notion of a line. */
	for (char *q = memchr(w->data, '\n', len); q != NULL;
	     q = memchr(q + 1, '\n', len - (size_t)(q + 1 - w->data)))
		*q = ' ';
	for (char *q = memchr(w->data, '\r', len); q != NULL;
	     q = memchr(q + 1, '\r', len - (size_t)(q + 1 - w->data)))
		*q = ' ';
	w->data[len] = '\n';

	uv_buf_t b = uv_buf_init(w->data, (unsigned int)(len + 1));
	int err =
		uv_write(&w->req, (uv_stream_t *)&c->in, &b, 1, stdio_write_cb);
	if (err != 0) {
		free(w);
		return err;
	}
	return 0;
}

/* ---- spawn ---- */

int stdio_conn_spawn(uv_loop_t *loop, const struct stdio_spawn_opts *opts,
		     const struct stdio_conn_cbs *cbs, void *ctx,
		     struct stdio_conn **out)
{
	char *file = NULL;
	char *parent = NULL;
	char **argv = NULL;
	struct stdio_conn *c = NULL;
	int err;

	*out = NULL;
	err = stdio_resolve_command(opts->command, opts->env, opts->cwd, &file);
	if (err != 0) {
		log_debug("cannot run %s: %s",
			  opts->command ? opts->command : "(null)",
			  strerror(-err));
		return err;
	}
	/* Plain pipes, not the socketpairs libuv makes for UV_CREATE_PIPE:
	 * every message crosses this hop twice, and a pipe costs the kernel
	 * less than a Unix socket. */
	int fds[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
	for (int i = 0; i < 3; i++) {
		if (pipe2(fds[i], O_CLOEXEC) < 0) {
			err = -errno;
			for (int k = 0; k < i; k++) {
				close(fds[k][0]);
				close(fds[k][1]);
			}
			free(file);
			return err;
		}
	}
	/* Room for a server's burst (a large answer, a flood of stderr) so
	 * it does not block before the loop reads; best effort. */
	fcntl(fds[1][0], F_SETPIPE_SZ, STDIO_PIPE_BYTES);
	fcntl(fds[2][0], F_SETPIPE_SZ, STDIO_PIPE_BYTES);
	parent = xasprintf("%d", (int)getpid());
	argv = stdio_build_argv(opts->command, file, parent, opts->args);

	c = xcalloc(1, sizeof *c);
	c->cbs = *cbs;
	c->ctx = ctx;
	c->state = STDIO_RUNNING;
	c->grace_ms =
		opts->stop_grace_ms ? opts->stop_grace_ms : STDIO_STOP_GRACE_MS;
	c->framer = framer_new(STDIO_MAX_LINE);
	framer_on_overlong(c->framer, stdio_overlong_cb);

	uv_pipe_init(loop, &c->in, 0);
	uv_pipe_init(loop, &c->out, 0);
	uv_pipe_init(loop, &c->err, 0);
	uv_timer_init(loop, &c->ladder_timer);
	uv_timer_init(loop, &c->recheck_timer);
	uv_timer_init(loop, &c->eof_timer);
	uv_signal_init(loop, &c->sigchld);
	c->open_handles = 8; /* the seven above and the process */
	c->in.data = c->out.data = c->err.data = c;
	c->ladder_timer.data = c->recheck_timer.data = c;
	c->eof_timer.data = c->sigchld.data = c->proc.data = c;

	/* The child's ends: stdin reads, stdout and stderr write. */
	int child[3] = {fds[0][0], fds[1][1], fds[2][1]};
	int mine[3] = {fds[0][1], fds[1][0], fds[2][0]};
	uv_stdio_container_t stdio[3];
	for (int i = 0; i < 3; i++) {
		stdio[i].flags = UV_INHERIT_FD;
		stdio[i].data.fd = child[i];
	}
	uv_process_options_t po = {
		.exit_cb = stdio_exit_cb,
		.file = stdio_exec_shim() ? stdio_exec_shim() : file,
		.args = argv,
		.env = (char **)opts->env,
		.cwd = opts->cwd,
		/* Own session and process group: the ladder signals -pid. */
		.flags = UV_PROCESS_DETACHED,
		.stdio_count = 3,
		.stdio = stdio,
	};
	err = uv_spawn(loop, &c->proc, &po);
	for (int i = 0; i < 3; i++)
		close(child[i]);
	if (err == 0) {
		uv_pipe_open(&c->in, mine[0]);
		uv_pipe_open(&c->out, mine[1]);
		uv_pipe_open(&c->err, mine[2]);
	} else {
		for (int i = 0; i < 3; i++)
			close(mine[i]);
	}
	if (err != 0) {
		log_debug("cannot run %s: %s", file, uv_strerror(err));
		goto fail;
	}
	c->pid = c->proc.pid;
	c->start_time = proc_start_time(c->pid);
	log_debug("pid %d: spawned %s%s", (int)c->pid, file,
		  stdio_exec_shim() ? " through the exec shim" : "");

	err = uv_read_start((uv_stream_t *)&c->out, stdio_alloc_cb,
			    stdio_out_read_cb);
	if (err != 0) {
		log_warn("pid %d: cannot read stdout: %s", (int)c->pid,
			 uv_strerror(err));
		stdio_out_closed(c);
	}
	err = uv_read_start((uv_stream_t *)&c->err, stdio_alloc_cb,
			    stdio_err_read_cb);
	if (err != 0) {
		log_warn("pid %d: cannot read stderr: %s", (int)c->pid,
			 uv_strerror(err));
		c->err_done = true;
	}
	free(argv);
	free(parent);
	free(file);
	*out = c;
	return 0;

fail:
	c->discard = true;
	c->state = STDIO_CLOSING;
	stdio_close_all(c);
	free(argv);
	free(parent);
	free(file);
	return err;
}

/* ---- accessors ---- */

pid_t stdio_conn_pid(const struct stdio_conn *c)
{
	return c->pid;
}

uint64_t stdio_conn_start_time(const struct stdio_conn *c)
{
	return c->start_time;
}

/* Stderr is arbitrary bytes, and a cut can split a character; the tail
 * goes into JSON status, so invalid sequences become '?'. */
static void stdio_append_utf8(struct buf *b, const char *s, size_t len)
{
	while (len > 0) {
		size_t ok = framer_utf8_prefix(s, len);
		buf_append(b, s, ok);
		if (ok == len)
			return;
		buf_append(b, "?", 1);
		s += ok + 1;
		len -= ok + 1;
	}
}

char *stdio_conn_stderr_tail(const struct stdio_conn *c, int n)
{
	struct buf b;

	buf_init(&b);
	if (n > c->err_count)
		n = c->err_count;
	for (int i = 0; i < n; i++) {
		int idx = (c->err_next - n + i + STDIO_STDERR_LINES) %
			  STDIO_STDERR_LINES;
		const struct stdio_errline *l = &c->err_ring[idx];
		if (i > 0)
			buf_append(&b, "\n", 1);
		stdio_append_utf8(&b, l->data, l->len);
	}
	return buf_steal(&b);
}
