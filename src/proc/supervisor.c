/*
 * One supervised program: spawning it in its own process group, framing
 * its stdout into messages (SUP_PIPES) or taking it as log lines
 * (SUP_LOGS), keeping the ring of log lines, writing to its stdin, and
 * noticing its exit. Owns the supervisor and its libuv handles; sup_stop.c
 * ends them.
 */
#include "proc/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonrpc/framer.h"
#include "proc/procfs.h"
#include "proc/stop.h"
#include "proc/supervisor_int.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* stdout usually reaches EOF just before the exit is reaped: wait this
 * long for the real exit status before reporting -1. */
#define SUP_EXIT_WAIT_MS 100
/* Output still in the pipes when the exit is reaped is read first, so
 * messages written before exit come before on_exit; at most this much. */
#define SUP_DRAIN_MAX (4 * 1024 * 1024)

/* What the pipe did not take at the end of a turn, queued: a copy of it,
 * or (a burst larger than the gather storage kept between turns) that
 * storage itself, which would be given back anyway, so a burst of tens of
 * megabytes is not copied once more. */
struct sup_write {
	uv_write_t req;
	char *storage; /* the handed-over gather storage, or NULL */
	char data[];   /* else the copy */
};

/* ---- stdout, stderr ---- */

static void sup_line_cb(void *ctx, const char *line, size_t len)
{
	struct supervisor *c = ctx;

	/* An earlier callback of this same feed may have stopped us. */
	if (c->state != SUP_RUNNING || c->reported)
		return;
	if (c->cbs.on_message != NULL)
		c->cbs.on_message(c->ctx, line, len);
}

static void sup_garbage_cb(void *ctx, const char *what)
{
	struct supervisor *c = ctx;

	if (c->state != SUP_RUNNING || c->reported)
		return;
	log_debug("pid %d: stdout: %s", (int)c->pid, what);
	if (c->cbs.on_garbage != NULL)
		c->cbs.on_garbage(c->ctx, what);
}

static void sup_overlong_cb(void *ctx, const char *head, size_t head_len,
			    const char *tail, size_t tail_len)
{
	struct supervisor *c = ctx;

	if (c->state != SUP_RUNNING || c->reported)
		return;
	if (c->cbs.on_overlong != NULL)
		c->cbs.on_overlong(c->ctx, head, head_len, tail, tail_len);
}

/* A new ring slot for stream's next line. The slot it takes is the
 * oldest; if that is another stream's open line (open for a whole ring of
 * lines), that line ends there. */
static struct sup_line *sup_log_open(struct supervisor *c, int stream)
{
	int slot = c->err_next;
	for (int i = 0; i < SUP_NSTREAMS; i++)
		if (c->open_slot[i] == slot)
			c->open_slot[i] = -1;
	struct sup_line *l = &c->err_ring[slot];
	l->len = 0;
	l->cut = false;
	c->err_next = (c->err_next + 1) % SUP_LOG_LINES;
	if (c->err_count < SUP_LOG_LINES)
		c->err_count++;
	c->open_slot[stream] = slot;
	return l;
}

static void sup_log_data(struct supervisor *c, int stream, const char *p,
			 size_t len)
{
	while (len > 0) {
		struct sup_line *l =
			c->open_slot[stream] >= 0
				? &c->err_ring[c->open_slot[stream]]
				: sup_log_open(c, stream);
		const char *nl = memchr(p, '\n', len);
		size_t seg = nl ? (size_t)(nl - p) : len;
		size_t room = SUP_LOG_LINE_MAX - l->len;
		size_t take = seg < room ? seg : room;

		memcpy(l->data + l->len, p, take);
		l->len += take;
		if (take < seg)
			l->cut = true;
		if (nl == NULL)
			return;
		if (!l->cut && l->len > 0 && l->data[l->len - 1] == '\r')
			l->len--;
		c->open_slot[stream] = -1;
		if (c->cbs.on_log != NULL && l->len > 0)
			c->cbs.on_log(c->ctx, l->data, l->len);
		p = nl + 1;
		len -= seg + 1;
	}
}

static void sup_out_data(struct supervisor *c, const char *data, size_t len)
{
	/* A log is kept to the end: it says why the program went. */
	if (c->mode == SUP_LOGS) {
		sup_log_data(c, SUP_OUT, data, len);
		return;
	}
	/* Once stopping or exited nobody listens; reading goes on only so
	 * that a server flushing on its way out does not block. */
	if (c->state != SUP_RUNNING || c->reported)
		return;
	framer_feed(c->framer, data, len, sup_line_cb, sup_garbage_cb, c);
}

static void sup_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct supervisor *c = h->data;

	if (h == (uv_handle_t *)&c->out)
		*buf = uv_buf_init(c->out_buf, sizeof c->out_buf);
	else
		*buf = uv_buf_init(c->err_buf, sizeof c->err_buf);
}

static void sup_eof_timer_cb(uv_timer_t *t)
{
	struct supervisor *c = t->data;

	if (c->state != SUP_RUNNING || c->reported)
		return;
	log_debug("pid %d: stdout closed, process still running", (int)c->pid);
	sup_report_exit(c, -1, 0);
	sup_stop(c);
}

static void sup_out_closed(struct supervisor *c)
{
	if (c->out_done)
		return;
	c->out_done = true;
	uv_read_stop((uv_stream_t *)&c->out);
	/* A log's end says nothing; the exit does. */
	if (c->mode == SUP_LOGS || c->state != SUP_RUNNING || c->reported)
		return;
	uv_timer_start(&c->eof_timer, sup_eof_timer_cb, SUP_EXIT_WAIT_MS, 0);
}

static void sup_out_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct supervisor *c = s->data;

	if (n > 0) {
		sup_out_data(c, buf->base, (size_t)n);
		return;
	}
	if (n == 0)
		return;
	if (n != UV_EOF)
		log_debug("pid %d: stdout: %s", (int)c->pid, uv_strerror(n));
	sup_out_closed(c);
}

void sup_pause(struct supervisor *c, bool on)
{
	/* Only a running server is held back; one that is stopping is
	 * read (its output dropped) so it can see the end of its stdin. A
	 * log is never held back. */
	if (on && (c->state != SUP_RUNNING || c->mode == SUP_LOGS))
		return;
	if (c->out_paused == on)
		return;
	c->out_paused = on;
	if (c->out_done)
		return;
	if (on)
		uv_read_stop((uv_stream_t *)&c->out);
	else
		uv_read_start((uv_stream_t *)&c->out, sup_alloc_cb,
			      sup_out_read_cb);
}

static void sup_err_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct supervisor *c = s->data;

	if (n > 0) {
		sup_log_data(c, SUP_ERR, buf->base, (size_t)n);
		return;
	}
	if (n == 0)
		return;
	c->err_done = true;
	uv_read_stop(s);
}

/* Reads what is already in a pipe without waiting for the loop. EOF is
 * left for the read callback, which will see it again. */
static void sup_drain_pipe(struct supervisor *c, uv_pipe_t *p, bool is_out)
{
	uv_os_fd_t fd;
	char buf[SUP_ERR_READ_BUF];
	size_t total = 0;

	if (uv_is_closing((uv_handle_t *)p) ||
	    uv_fileno((uv_handle_t *)p, &fd) != 0)
		return;
	/* A blocking read could hang on a grandchild holding the pipe. */
	int fl = fcntl(fd, F_GETFL);
	if (fl == -1 || !(fl & O_NONBLOCK))
		return;
	while (total < SUP_DRAIN_MAX) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n > 0) {
			total += (size_t)n;
			if (is_out)
				sup_out_data(c, buf, (size_t)n);
			else
				sup_log_data(c, SUP_ERR, buf, (size_t)n);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		break;
	}
}

static void sup_exit_cb(uv_process_t *proc, int64_t exit_status,
			int term_signal)
{
	struct supervisor *c = proc->data;

	log_debug("pid %d: exited, status %lld, signal %d", (int)c->pid,
		  (long long)exit_status, term_signal);
	c->exited = true;
	c->exit_status = exit_status;
	c->term_signal = term_signal;
	uv_timer_stop(&c->eof_timer);
	if (!c->out_done)
		sup_drain_pipe(c, &c->out, true);
	if (!c->err_done)
		sup_drain_pipe(c, &c->err, false);
	sup_report_exit(c, exit_status, term_signal);
	/* The leader is gone but its group may not be: the ladder runs on
	 * its own, whether or not the owner asks for a stop. */
	sup_leader_reaped(c);
}

/* ---- stdin ----
 *
 * Every message sent in one loop turn is gathered into c->gather and
 * written with one write(2) just before the loop waits again: a server
 * called by many sessions at once gets their requests in one write rather
 * than one each. The flush runs in a prepare handle, the last thing
 * before the loop polls, so a message sent anywhere (an I/O callback, a
 * check or close callback, a timer) goes out before the loop can block
 * waiting for its answer; a check handle would run too early for a send
 * from a timer, which runs before the poll of the same turn. */

/* on_drain is owed and there is room again: half the limit, so more than
 * one message fits before the next -ENOBUFS. */
static void sup_maybe_drain(struct supervisor *c)
{
	if (!c->want_drain || c->state != SUP_RUNNING || c->reported ||
	    c->in.write_queue_size + c->gather.len > SUP_MAX_QUEUED / 2)
		return;
	c->want_drain = false;
	if (c->cbs.on_drain != NULL)
		c->cbs.on_drain(c->ctx);
}

static void sup_write_cb(uv_write_t *req, int status)
{
	struct sup_write *w = (struct sup_write *)req;
	struct supervisor *c = req->handle->data;

	if (status < 0 && status != UV_ECANCELED)
		log_debug("stdin write: %s", uv_strerror(status));
	free(w->storage);
	free(w);
	if (status == 0)
		sup_maybe_drain(c);
}

/* The gathered bytes are written, queued or dropped: empty the gather,
 * keeping its storage for the next turn unless a burst made it large. */
static void sup_gather_reset(struct supervisor *c)
{
	if (c->gather.cap > SUP_GATHER_KEEP)
		buf_free(&c->gather);
	else
		buf_reset(&c->gather);
}

/* Queues gather[done..] behind whatever is queued already. */
static void sup_queue_rest(struct supervisor *c, size_t done)
{
	size_t rest = c->gather.len - done;
	struct sup_write *w;
	char *p;

	if (c->gather.cap > SUP_GATHER_KEEP) {
		w = xmalloc(sizeof *w);
		w->storage = buf_steal(&c->gather);
		p = w->storage + done;
	} else {
		w = xmalloc(sizeof *w + rest);
		w->storage = NULL;
		memcpy(w->data, c->gather.data + done, rest);
		p = w->data;
	}
	uv_buf_t b = uv_buf_init(p, (unsigned int)rest);
	int err = uv_write(&w->req, (uv_stream_t *)&c->in, &b, 1, sup_write_cb);
	if (err != 0) {
		log_debug("pid %d: stdin write: %s", (int)c->pid,
			  uv_strerror(err));
		free(w->storage);
		free(w);
	}
}

void sup_flush_stdin(struct supervisor *c)
{
	if (c->gather.len == 0)
		return;
	if (uv_is_closing((uv_handle_t *)&c->in)) {
		/* Every close on purpose flushes first; this is the
		 * program gone (sup_close_all), with nobody to read it. */
		sup_gather_reset(c);
		return;
	}
	size_t done = 0;
	/* Behind a queued write, a try would put these bytes first (libuv
	 * refuses such a try too; the order is ours to keep). */
	if (c->in.write_queue_size == 0) {
		uv_buf_t b = uv_buf_init(c->gather.data,
					 (unsigned int)c->gather.len);
		int n = uv_try_write((uv_stream_t *)&c->in, &b, 1);
		if (n < 0 && n != UV_EAGAIN) {
			/* As a failed queued write: the program's end is
			 * seen on its stdout and its exit, not here. */
			log_debug("pid %d: stdin write: %s", (int)c->pid,
				  uv_strerror(n));
			sup_gather_reset(c);
			return;
		}
		done = n > 0 ? (size_t)n : 0;
	}
	if (done < c->gather.len)
		sup_queue_rest(c, done);
	sup_gather_reset(c);
}

static void sup_flush_cb(uv_prepare_t *h)
{
	struct supervisor *c = h->data;

	sup_flush_stdin(c);
	/* Only when nothing was queued (a write callback says it
	 * otherwise); what on_drain sends goes in this same turn. */
	sup_maybe_drain(c);
	sup_flush_stdin(c);
	/* The gather is empty: a flush leaves nothing behind. */
	uv_prepare_stop(h);
}

int sup_send(struct supervisor *c, const char *data, size_t len)
{
	if (c->mode != SUP_PIPES || c->state != SUP_RUNNING || c->reported ||
	    uv_is_closing((uv_handle_t *)&c->in))
		return -EPIPE;
	size_t held = c->in.write_queue_size + c->gather.len;
	if (len >= SUP_MAX_QUEUED || held > SUP_MAX_QUEUED - len - 1) {
		c->want_drain = true;
		return -ENOBUFS;
	}

	if (c->gather.len == 0)
		uv_prepare_start(&c->flush, sup_flush_cb);
	size_t at = c->gather.len;
	buf_append(&c->gather, data, len);
	char *m = c->gather.data + at;
	/* Raw CR or LF can only be whitespace in valid JSON; as spaces they
	 * keep one message on one line for any reader's notion of a line. */
	for (char *q = memchr(m, '\n', len); q != NULL;
	     q = memchr(q + 1, '\n', len - (size_t)(q + 1 - m)))
		*q = ' ';
	for (char *q = memchr(m, '\r', len); q != NULL;
	     q = memchr(q + 1, '\r', len - (size_t)(q + 1 - m)))
		*q = ' ';
	buf_append(&c->gather, "\n", 1);
	return 0;
}

/* ---- spawn ---- */

static void sup_close_fds(int fds[3][2])
{
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 2; k++)
			if (fds[i][k] >= 0)
				close(fds[i][k]);
}

/* The pipes the program gets: stdin only in SUP_PIPES (in SUP_LOGS it
 * reads /dev/null). Plain pipes, not the socketpairs libuv makes for
 * UV_CREATE_PIPE: every message crosses this hop twice, and a pipe costs
 * the kernel less than a Unix socket. */
static int sup_make_pipes(enum sup_mode mode, int fds[3][2])
{
	for (int i = 0; i < 3; i++) {
		if (i == 0 && mode == SUP_LOGS)
			continue;
		if (pipe2(fds[i], O_CLOEXEC) < 0) {
			int err = -errno;
			sup_close_fds(fds);
			return err;
		}
	}
	/* Room for a burst (a large answer, a flood of stderr) so the
	 * program does not block before the loop reads; best effort. */
	fcntl(fds[1][0], F_SETPIPE_SZ, SUP_PIPE_BYTES);
	fcntl(fds[2][0], F_SETPIPE_SZ, SUP_PIPE_BYTES);
	return 0;
}

static struct supervisor *sup_new(uv_loop_t *loop, const struct sup_spec *spec,
				  const struct sup_cbs *cbs, void *ctx)
{
	struct supervisor *c = xcalloc(1, sizeof *c);
	c->cbs = *cbs;
	c->ctx = ctx;
	c->mode = spec->mode;
	c->state = SUP_RUNNING;
	c->grace_ms =
		spec->stop_grace_ms ? spec->stop_grace_ms : PROC_STOP_GRACE_MS;
	for (int i = 0; i < SUP_NSTREAMS; i++)
		c->open_slot[i] = -1;
	if (spec->token != NULL)
		strcpy(c->owner_token, spec->token);
	if (c->mode == SUP_PIPES) {
		c->framer = framer_new(SUP_MAX_LINE);
		framer_on_overlong(c->framer, sup_overlong_cb);
	}

	uv_pipe_init(loop, &c->in, 0);
	uv_pipe_init(loop, &c->out, 0);
	uv_pipe_init(loop, &c->err, 0);
	uv_timer_init(loop, &c->stdin_timer);
	uv_timer_init(loop, &c->eof_timer);
	uv_prepare_init(loop, &c->flush);
	buf_init(&c->gather);
	c->open_handles = 7; /* the six above and the process */
	c->in.data = c->out.data = c->err.data = c;
	c->stdin_timer.data = c->eof_timer.data = c->proc.data = c;
	c->flush.data = c;
	return c;
}

static void sup_start_reading(struct supervisor *c)
{
	int err = uv_read_start((uv_stream_t *)&c->out, sup_alloc_cb,
				sup_out_read_cb);
	if (err != 0) {
		log_warn("pid %d: cannot read stdout: %s", (int)c->pid,
			 uv_strerror(err));
		sup_out_closed(c);
	}
	err = uv_read_start((uv_stream_t *)&c->err, sup_alloc_cb,
			    sup_err_read_cb);
	if (err != 0) {
		log_warn("pid %d: cannot read stderr: %s", (int)c->pid,
			 uv_strerror(err));
		c->err_done = true;
	}
}

int sup_spawn(uv_loop_t *loop, const struct sup_spec *spec,
	      const struct sup_cbs *cbs, void *ctx, struct supervisor **out)
{
	char *file = NULL;
	char *parent = NULL;
	char **argv = NULL;
	char **env = NULL;
	struct supervisor *c = NULL;
	int err;

	*out = NULL;
	if (spec->token != NULL &&
	    (spec->token[0] == '\0' || strlen(spec->token) > SUP_TOKEN_MAX ||
	     strpbrk(spec->token, "=\n") != NULL))
		return -EINVAL;
	env = sup_build_env(spec->env, spec->token);
	err = sup_resolve_command(spec->command, env, spec->cwd, &file);
	if (err != 0) {
		log_debug("cannot run %s: %s",
			  spec->command ? spec->command : "(null)",
			  strerror(-err));
		sup_env_free(env);
		return err;
	}
	int fds[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
	err = sup_make_pipes(spec->mode, fds);
	if (err != 0) {
		sup_env_free(env);
		free(file);
		return err;
	}
	parent = xasprintf("%d", (int)getpid());
	argv = sup_build_argv(spec->command, file, parent, spec->args);
	c = sup_new(loop, spec, cbs, ctx);

	/* The child's ends: stdin reads, stdout and stderr write. */
	uv_stdio_container_t stdio[3];
	for (int i = 0; i < 3; i++) {
		int fd = fds[i][i == 0 ? 0 : 1];
		stdio[i].flags = fd >= 0 ? UV_INHERIT_FD : UV_IGNORE;
		stdio[i].data.fd = fd;
	}
	uv_process_options_t po = {
		.exit_cb = sup_exit_cb,
		.file = sup_exec_shim() ? sup_exec_shim() : file,
		.args = argv,
		.env = env,
		.cwd = spec->cwd,
		/* Own session and process group: the ladder signals -pid. */
		.flags = UV_PROCESS_DETACHED,
		.stdio_count = 3,
		.stdio = stdio,
	};
	err = uv_spawn(loop, &c->proc, &po);
	for (int i = 0; i < 3; i++) {
		int k = i == 0 ? 0 : 1; /* the child's end */
		if (fds[i][k] >= 0)
			close(fds[i][k]);
		fds[i][k] = -1;
	}
	if (err == 0) {
		if (fds[0][1] >= 0)
			uv_pipe_open(&c->in, fds[0][1]);
		uv_pipe_open(&c->out, fds[1][0]);
		uv_pipe_open(&c->err, fds[2][0]);
	} else {
		sup_close_fds(fds);
		log_debug("cannot run %s: %s", file, uv_strerror(err));
		c->discard = true;
		c->state = SUP_CLOSING;
		sup_close_all(c);
		goto out;
	}
	c->pid = c->proc.pid;
	c->start_time = procfs_start_time(c->pid);
	log_debug("pid %d: spawned %s%s", (int)c->pid, file,
		  sup_exec_shim() ? " through the exec shim" : "");
	sup_start_reading(c);
	*out = c;
out:
	free(argv);
	free(parent);
	free(file);
	sup_env_free(env);
	return err;
}

/* ---- accessors ---- */

pid_t sup_pid(const struct supervisor *c)
{
	return c->pid;
}

const char *sup_token(const struct supervisor *c)
{
	return c->owner_token;
}

uint64_t sup_start_time(const struct supervisor *c)
{
	return c->start_time;
}

/* Stderr is arbitrary bytes, and a cut can split a character; the tail
 * goes into JSON status, so invalid sequences become '?'. */
static void sup_append_utf8(struct buf *b, const char *s, size_t len)
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

char *sup_log_tail(const struct supervisor *c, int n)
{
	struct buf b;

	buf_init(&b);
	if (n > c->err_count)
		n = c->err_count;
	for (int i = 0; i < n; i++) {
		int idx = (c->err_next - n + i + SUP_LOG_LINES) % SUP_LOG_LINES;
		const struct sup_line *l = &c->err_ring[idx];
		if (i > 0)
			buf_append(&b, "\n", 1);
		sup_append_utf8(&b, l->data, l->len);
	}
	return buf_steal(&b);
}
