/*
 * One stdio MCP server process: spawning it (directly or through the exec
 * shim) in its own process group, framing its stdout, keeping its stderr
 * ring, writing to its stdin, and the stop ladder over its group. Owns the
 * process's libuv handles and, until it is gone, its process group.
 */
#include "transport/stdio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "transport/framer.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define STDIO_OUT_READ_BUF (64 * 1024)
#define STDIO_ERR_READ_BUF 4096
/* stdout usually reaches EOF just before the exit is reaped: wait this
 * long for the real exit status before reporting -1. */
#define STDIO_EXIT_WAIT_MS 100
/* While a stop waits for orphaned group members that are not our
 * children (no subreaper), nothing signals their end: poll this often. */
#define STDIO_RECHECK_MS 20
/* Output still in the pipes when the exit is reaped is read first, so
 * messages written before exit come before on_exit; at most this much. */
#define STDIO_DRAIN_MAX (4 * 1024 * 1024)
#define STDIO_PROC_STAT_MAX 4096
/* glibc's execvp search path when PATH is unset. */
#define STDIO_DEFAULT_PATH "/bin:/usr/bin"

enum stdio_state {
	STDIO_RUNNING,	  /* serving */
	STDIO_STOP_STDIN, /* stdin closed, waiting for the group to leave */
	STDIO_STOP_TERM,  /* group sent SIGTERM, waiting */
	STDIO_STOP_KILL,  /* group sent SIGKILL, waiting */
	STDIO_CLOSING,	  /* handles closing; on_closed follows */
};

static const char *const stdio_state_names[] = {
	"running", "stop-stdin", "stop-term", "stop-kill", "closing",
};

struct stdio_errline {
	size_t len;
	bool cut; /* bytes past STDIO_STDERR_LINE_MAX were dropped */
	char data[STDIO_STDERR_LINE_MAX];
};

struct stdio_conn {
	struct stdio_conn_cbs cbs;
	void *ctx;
	enum stdio_state state;
	pid_t pid; /* also the process group id */
	uint64_t start_time;
	uint64_t grace_ms;

	uv_process_t proc;
	uv_pipe_t in, out, err;
	uv_timer_t ladder_timer;
	uv_timer_t recheck_timer;
	uv_timer_t eof_timer;
	uv_signal_t sigchld;
	int open_handles;

	bool discard;	     /* spawn failed: free silently once closed */
	bool exited;	     /* libuv reaped the leader */
	bool reported;	     /* on_exit was called */
	bool out_done;	     /* stdout reached EOF or failed */
	bool err_done;	     /* stderr reached EOF or failed */
	bool group_gone;     /* kill(-pgid, 0) said ESRCH: never signal again */
	int64_t exit_status; /* from libuv, once exited */
	int term_signal;

	struct framer *framer;
	char out_buf[STDIO_OUT_READ_BUF];
	char err_buf[STDIO_ERR_READ_BUF];

	struct stdio_errline err_ring[STDIO_STDERR_LINES];
	int err_next;  /* slot the next line opens */
	int err_count; /* lines held, up to STDIO_STDERR_LINES */
	bool err_open; /* the newest line has not seen its '\n' yet */
};

/* A queued write owns its copy of the message. */
struct stdio_write {
	uv_write_t req;
	char data[];
};

static char *stdio_shim_path;

static void stdio_ladder_check(struct stdio_conn *c);

static void stdio_set_state(struct stdio_conn *c, enum stdio_state state)
{
	log_debug("pid %d: %s -> %s", (int)c->pid, stdio_state_names[c->state],
		  stdio_state_names[state]);
	c->state = state;
}

void stdio_set_exec_shim(const char *path)
{
	free(stdio_shim_path);
	stdio_shim_path = path ? xstrdup(path) : NULL;
}

/* ---- command lookup ---- */

static int stdio_check_exec(const char *path, const char *cwd)
{
	char *full = NULL;
	struct stat st;
	int err = 0;

	/* The child chdirs before it execs, so a relative name is relative
	 * to cwd, not to us. */
	if (path[0] != '/' && cwd != NULL)
		full = xasprintf("%s/%s", cwd, path);
	const char *p = full ? full : path;
	if (strlen(p) >= PATH_MAX) {
		err = -ENAMETOOLONG;
		goto fail;
	}
	if (stat(p, &st) == -1) {
		err = -errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EACCES;
		goto fail;
	}
	if (access(p, X_OK) == -1)
		err = -errno;
fail:
	free(full);
	return err;
}

static const char *stdio_env_path(char *const *env)
{
	if (env == NULL)
		return getenv("PATH");
	for (; *env != NULL; env++) {
		if (strncmp(*env, "PATH=", 5) == 0)
			return *env + 5;
	}
	return NULL;
}

/*
 * Finds the file execvp would run, with the child's PATH and cwd, so that a
 * missing command fails here, synchronously, even when the exec shim (whose
 * own exec would succeed) stands in front of it.
 */
static int stdio_resolve_command(const char *cmd, char *const *env,
				 const char *cwd, char **out)
{
	*out = NULL;
	if (cmd == NULL)
		return -EINVAL;
	if (cmd[0] == '\0')
		return -ENOENT;
	if (strchr(cmd, '/') != NULL) {
		int err = stdio_check_exec(cmd, cwd);
		if (err == 0)
			*out = xstrdup(cmd);
		return err;
	}
	if (strlen(cmd) > NAME_MAX)
		return -ENAMETOOLONG;

	const char *path = stdio_env_path(env);
	if (path == NULL)
		path = STDIO_DEFAULT_PATH;
	bool denied = false;
	for (const char *p = path;;) {
		const char *colon = strchrnul(p, ':');
		size_t n = (size_t)(colon - p);
		/* An empty entry means the current directory. */
		char *cand = n ? xasprintf("%.*s/%s", (int)n, p, cmd)
			       : xasprintf("./%s", cmd);
		int err = stdio_check_exec(cand, cwd);
		if (err == 0) {
			*out = cand;
			return 0;
		}
		free(cand);
		if (err == -EACCES)
			denied = true;
		if (*colon == '\0')
			break;
		p = colon + 1;
	}
	return denied ? -EACCES : -ENOENT;
}

/* ---- handles and lifetime ---- */

static void stdio_close_cb(uv_handle_t *h)
{
	struct stdio_conn *c = h->data;

	if (--c->open_handles > 0)
		return;
	if (!c->discard && c->cbs.on_closed != NULL)
		c->cbs.on_closed(c->ctx);
	framer_free(c->framer);
	free(c);
}

static void stdio_close_handle(struct stdio_conn *c, void *handle)
{
	uv_handle_t *h = handle;

	if (!uv_is_closing(h))
		uv_close(h, stdio_close_cb);
}

static void stdio_close_all(struct stdio_conn *c)
{
	stdio_close_handle(c, &c->in);
	stdio_close_handle(c, &c->out);
	stdio_close_handle(c, &c->err);
	stdio_close_handle(c, &c->ladder_timer);
	stdio_close_handle(c, &c->recheck_timer);
	stdio_close_handle(c, &c->eof_timer);
	stdio_close_handle(c, &c->sigchld);
	stdio_close_handle(c, &c->proc);
}

static void stdio_report_exit(struct stdio_conn *c, int64_t exit_status,
			      int term_signal)
{
	if (c->reported)
		return;
	c->reported = true;
	if (c->cbs.on_exit != NULL)
		c->cbs.on_exit(c->ctx, exit_status, term_signal);
}

static void stdio_finish(struct stdio_conn *c)
{
	if (c->state == STDIO_CLOSING)
		return;
	stdio_set_state(c, STDIO_CLOSING);
	if (c->exited)
		stdio_report_exit(c, c->exit_status, c->term_signal);
	else
		stdio_report_exit(c, -1, 0);
	stdio_close_all(c);
	if (!c->exited) {
		/* libuv stops tracking the process once its handle closes;
		 * take the exit ourselves if it is there by now. */
		int st;
		if (waitpid(c->pid, &st, WNOHANG) != c->pid)
			log_warn("pid %d survived SIGKILL; left unreaped",
				 (int)c->pid);
	}
}

/* ---- the process group ---- */

/* Only meaningful once libuv has reaped the leader: before that the
 * leader itself keeps the group (and its id) alive. */
static bool stdio_group_gone(struct stdio_conn *c)
{
	if (c->group_gone)
		return true;
	if (!c->exited)
		return false;
	for (;;) {
		int st;
		/* Members are our children only when we are a subreaper;
		 * otherwise init reaps them and this finds nothing. */
		pid_t r = waitpid(-c->pid, &st, WNOHANG);
		if (r > 0) {
			log_debug("pid %d: reaped group member %d", (int)c->pid,
				  (int)r);
			continue;
		}
		if (r == -1 && errno == EINTR)
			continue;
		break;
	}
	/* Zombies still count as members, which is why they are reaped
	 * first. */
	if (kill(-c->pid, 0) == -1 && errno == ESRCH)
		c->group_gone = true;
	return c->group_gone;
}

static void stdio_signal_group(struct stdio_conn *c, int sig)
{
	if (c->group_gone)
		return;
	if (kill(-c->pid, sig) == 0) {
		log_debug("pid %d: group sent %s", (int)c->pid,
			  sig == SIGKILL ? "SIGKILL" : "SIGTERM");
		return;
	}
	if (errno == ESRCH && c->exited)
		c->group_gone = true;
	else
		log_warn("pid %d: cannot signal its group: %s", (int)c->pid,
			 strerror(errno));
}

/* One ladder step: signal the group and wait one grace period more. */
static void stdio_escalate(struct stdio_conn *c, int sig,
			   enum stdio_state next);

static void stdio_ladder_timer_cb(uv_timer_t *t)
{
	struct stdio_conn *c = t->data;

	if (stdio_group_gone(c)) {
		stdio_finish(c);
		return;
	}
	switch (c->state) {
	case STDIO_STOP_STDIN:
		stdio_escalate(c, SIGTERM, STDIO_STOP_TERM);
		break;
	case STDIO_STOP_TERM:
		stdio_escalate(c, SIGKILL, STDIO_STOP_KILL);
		break;
	case STDIO_STOP_KILL:
		log_warn("pid %d: process group still has members %llu ms "
			 "after SIGKILL; giving up on it",
			 (int)c->pid, (unsigned long long)c->grace_ms);
		stdio_finish(c);
		break;
	default:
		break;
	}
}

static void stdio_escalate(struct stdio_conn *c, int sig, enum stdio_state next)
{
	stdio_signal_group(c, sig);
	stdio_set_state(c, next);
	uv_timer_start(&c->ladder_timer, stdio_ladder_timer_cb, c->grace_ms, 0);
	if (c->group_gone)
		stdio_finish(c);
}

static void stdio_recheck_timer_cb(uv_timer_t *t)
{
	stdio_ladder_check(t->data);
}

static void stdio_sigchld_cb(uv_signal_t *s, int signum)
{
	stdio_ladder_check(s->data);
}

/* Re-evaluates a stop in progress: done when the leader is reaped and the
 * group is empty; members left behind by the leader get SIGTERM at once. */
static void stdio_ladder_check(struct stdio_conn *c)
{
	if (c->state == STDIO_RUNNING || c->state == STDIO_CLOSING ||
	    !c->exited)
		return;
	if (stdio_group_gone(c)) {
		stdio_finish(c);
		return;
	}
	if (c->state == STDIO_STOP_STDIN) {
		/* The leader is gone, and nothing else would tell its
		 * leftovers to go. */
		stdio_escalate(c, SIGTERM, STDIO_STOP_TERM);
		if (c->state == STDIO_CLOSING)
			return;
	}
	if (!uv_is_active((uv_handle_t *)&c->recheck_timer)) {
		uv_timer_start(&c->recheck_timer, stdio_recheck_timer_cb,
			       STDIO_RECHECK_MS, STDIO_RECHECK_MS);
		uv_signal_start(&c->sigchld, stdio_sigchld_cb, SIGCHLD);
	}
}

void stdio_conn_stop(struct stdio_conn *c)
{
	if (c == NULL || c->state != STDIO_RUNNING)
		return;
	stdio_set_state(c, STDIO_STOP_STDIN);
	uv_timer_stop(&c->eof_timer);
	/* A well-behaved server exits on stdin EOF; anything still queued
	 * for it is dropped (its callbacks see UV_ECANCELED). */
	stdio_close_handle(c, &c->in);
	uv_timer_start(&c->ladder_timer, stdio_ladder_timer_cb, c->grace_ms, 0);
	stdio_ladder_check(c);
}

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

static char **stdio_build_argv(const char *command, const char *file,
			       const char *parent, char *const *args)
{
	size_t nargs = 0;
	size_t i = 0;

	while (args != NULL && args[nargs] != NULL)
		nargs++;
	char **argv = xcalloc(nargs + 5, sizeof *argv);
	if (stdio_shim_path != NULL) {
		argv[i++] = stdio_shim_path;
		argv[i++] = "__exec";
		argv[i++] = (char *)parent;
		argv[i++] = (char *)file;
	} else {
		argv[i++] = (char *)command;
	}
	for (size_t k = 0; k < nargs; k++)
		argv[i++] = args[k];
	argv[i] = NULL;
	return argv;
}

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
	parent = xasprintf("%d", (int)getpid());
	argv = stdio_build_argv(opts->command, file, parent, opts->args);

	c = xcalloc(1, sizeof *c);
	c->cbs = *cbs;
	c->ctx = ctx;
	c->state = STDIO_RUNNING;
	c->grace_ms =
		opts->stop_grace_ms ? opts->stop_grace_ms : STDIO_STOP_GRACE_MS;
	c->framer = framer_new(STDIO_MAX_LINE);

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

	uv_stdio_container_t stdio[3] = {
		{.flags = UV_CREATE_PIPE | UV_READABLE_PIPE,
		 .data.stream = (uv_stream_t *)&c->in},
		{.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE,
		 .data.stream = (uv_stream_t *)&c->out},
		{.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE,
		 .data.stream = (uv_stream_t *)&c->err},
	};
	uv_process_options_t po = {
		.exit_cb = stdio_exit_cb,
		.file = stdio_shim_path ? stdio_shim_path : file,
		.args = argv,
		.env = (char **)opts->env,
		.cwd = opts->cwd,
		/* Own session and process group: the ladder signals -pid. */
		.flags = UV_PROCESS_DETACHED,
		.stdio_count = 3,
		.stdio = stdio,
	};
	err = uv_spawn(loop, &c->proc, &po);
	if (err != 0) {
		log_debug("cannot run %s: %s", file, uv_strerror(err));
		goto fail;
	}
	c->pid = c->proc.pid;
	c->start_time = proc_start_time(c->pid);
	log_debug("pid %d: spawned %s%s", (int)c->pid, file,
		  stdio_shim_path ? " through the exec shim" : "");

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

/* ---- exec shim and /proc ---- */

int stdio_exec_main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s __exec PARENT_PID COMMAND [ARGS]\n",
			argc > 0 ? argv[0] : "mcpvisor");
		return 127;
	}
	char *end;
	errno = 0;
	long parent = strtol(argv[2], &end, 10);
	if (errno != 0 || end == argv[2] || *end != '\0' || parent <= 0) {
		fprintf(stderr, "mcpvisor __exec: bad parent pid '%s'\n",
			argv[2]);
		return 127;
	}
	/* The server dies with the runtime even when the runtime is killed
	 * outright (the death signal follows the thread that forked us:
	 * libuv's loop thread). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1) {
		fprintf(stderr, "mcpvisor __exec: prctl: %s\n",
			strerror(errno));
		return 127;
	}
	/* The runtime may have died before the prctl: then no signal would
	 * ever come. */
	if (getppid() != (pid_t)parent) {
		fprintf(stderr, "mcpvisor __exec: parent %ld is gone\n",
			parent);
		return 127;
	}
	/* An ignored SIGPIPE would survive the exec into the server. */
	signal(SIGPIPE, SIG_DFL);
	execvp(argv[3], argv + 3);
	fprintf(stderr, "mcpvisor: cannot run %s: %s\n", argv[3],
		strerror(errno));
	return 127;
}

uint64_t proc_start_time(pid_t pid)
{
	char path[64];
	char buf[STDIO_PROC_STAT_MAX];
	size_t len = 0;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return 0;
	while (len < sizeof buf - 1) {
		ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
		if (n > 0) {
			len += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		break;
	}
	close(fd);
	buf[len] = '\0';

	/* Field 2 is "(comm)", and comm may hold spaces and parens. */
	char *p = strrchr(buf, ')');
	if (p == NULL)
		return 0;
	p++;
	for (int field = 3; field < 22; field++) {
		while (*p == ' ')
			p++;
		while (*p != ' ' && *p != '\0')
			p++;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 10);
	if (errno != 0 || end == p)
		return 0;
	return (uint64_t)v;
}
