/*
 * The container engine's CLI as short commands: one spawn per command (no
 * shell, stdin /dev/null, a session and process group of its own), its
 * stdout kept up to a bound, the last non-blank stderr line as its error
 * line, and a deadline at which the whole group is killed. On top: the
 * stop ladder for one container. The list of owned containers is in
 * engine_list.c.
 */
#include "container/engine.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "container/engine_int.h"
#include "proc/stop.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define ENGINE_ERR_LINE_MAX 512
/* After the command exited: how long something it started may keep its
 * output pipes open before what came is taken as the answer. */
#define ENGINE_DRAIN_MS 1000
#define ENGINE_READ_CHUNK 16384

struct engine_job {
	uv_process_t proc;
	uv_pipe_t out;
	uv_pipe_t err;
	uv_timer_t timer;
	int handles; /* open handles; the job is freed after the last */
	engine_cb cb;
	void *ctx;
	uint64_t timeout_ms;
	bool exited, out_eof, err_eof;
	bool killed; /* the group got SIGKILL at the deadline */
	bool done;   /* cb called (or not to be called) */
	int64_t exit_status;
	struct buf stdout_buf;
	char cur[ENGINE_ERR_LINE_MAX]; /* the stderr line coming */
	size_t cur_len;
	bool cur_blank;
	bool cur_cut; /* longer than ENGINE_ERR_LINE_MAX */
	char last[ENGINE_ERR_LINE_MAX + 1]; /* last non-blank line */
	char rbuf[ENGINE_READ_CHUNK];
};

static void engine_close_cb(uv_handle_t *h)
{
	struct engine_job *job = h->data;
	if (--job->handles > 0)
		return;
	buf_free(&job->stdout_buf);
	free(job);
}

static void engine_close(uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, engine_close_cb);
}

static void engine_close_all(struct engine_job *job)
{
	engine_close((uv_handle_t *)&job->proc);
	engine_close((uv_handle_t *)&job->out);
	engine_close((uv_handle_t *)&job->err);
	engine_close((uv_handle_t *)&job->timer);
}

/* The stderr line just ended: kept when it says something, cut at a
 * character boundary and freed of control characters (it reaches log
 * lines and status). */
static void engine_line_end(struct engine_job *job)
{
	size_t n = job->cur_len;
	bool cut = job->cur_cut;
	job->cur_len = 0;
	job->cur_cut = false;
	if (job->cur_blank)
		return;
	job->cur_blank = true;
	const unsigned char *c = (const unsigned char *)job->cur;
	while (n > 0 && isspace(c[n - 1]))
		n--;
	size_t start = 0;
	while (start < n && isspace(c[start]))
		start++;
	if (cut) {
		/* Drop a UTF-8 sequence the cut left incomplete. */
		size_t k = n;
		while (k > start && (c[k - 1] & 0xc0) == 0x80)
			k--;
		if (k > start && (c[k - 1] & 0x80)) {
			size_t need = c[k - 1] >= 0xf0	 ? 4
				      : c[k - 1] >= 0xe0 ? 3
							 : 2;
			if (n - (k - 1) < need)
				n = k - 1;
		}
	}
	size_t o = 0;
	for (size_t i = start; i < n; i++)
		job->last[o++] =
			(c[i] < 0x20 || c[i] == 0x7f) ? ' ' : (char)c[i];
	job->last[o] = '\0';
}

static void engine_err_feed(struct engine_job *job, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n') {
			engine_line_end(job);
			continue;
		}
		if (job->cur_len < sizeof job->cur)
			job->cur[job->cur_len++] = p[i];
		else
			job->cur_cut = true;
		if (!isspace((unsigned char)p[i]))
			job->cur_blank = false;
	}
}

static void engine_finish(struct engine_job *job, int err)
{
	if (job->done)
		return;
	job->done = true;
	engine_line_end(job);
	struct engine_result r = {
		.exit_status = job->exited && !job->killed
				       ? (int)job->exit_status
				       : -1,
		.err = err,
		.out = job->stdout_buf.data ? job->stdout_buf.data : "",
		.err_line = job->last,
	};
	engine_close_all(job);
	job->cb(job->ctx, &r);
}

static bool engine_settled(const struct engine_job *job)
{
	return job->exited && job->out_eof && job->err_eof;
}

static void engine_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
	struct engine_job *job = h->data;
	*b = uv_buf_init(job->rbuf, sizeof job->rbuf);
}

static void engine_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
	struct engine_job *job = s->data;
	bool is_out = s == (uv_stream_t *)&job->out;
	if (nread < 0) {
		uv_read_stop(s);
		if (is_out)
			job->out_eof = true;
		else
			job->err_eof = true;
		if (engine_settled(job))
			engine_finish(job, job->killed ? -ETIMEDOUT : 0);
		return;
	}
	if (!is_out) {
		engine_err_feed(job, b->base, (size_t)nread);
		return;
	}
	size_t room = ENGINE_OUT_MAX - job->stdout_buf.len;
	buf_append(&job->stdout_buf, b->base,
		   (size_t)nread < room ? (size_t)nread : room);
}

static void engine_kill_group(struct engine_job *job)
{
	/* The leader is a session and group leader (UV_PROCESS_DETACHED):
	 * -pid is its group, the engine's helpers included. Only before its
	 * exit was seen: until then it is not reaped, so its pid (and the
	 * group's number) cannot name anything else. */
	if (kill(-job->proc.pid, SIGKILL) < 0 && errno != ESRCH)
		log_debug("kill -%d: %s", (int)job->proc.pid, strerror(errno));
}

static void engine_timer_cb(uv_timer_t *t)
{
	struct engine_job *job = t->data;
	if (!job->exited && !job->killed) {
		log_debug("engine pid %d: no end after %llu ms; group killed",
			  (int)job->proc.pid,
			  (unsigned long long)job->timeout_ms);
		job->killed = true;
		engine_kill_group(job);
		/* Its leader may take this long to be reaped before we
		 * stop waiting (stuck in the kernel). */
		uv_timer_start(&job->timer, engine_timer_cb, PROC_KILL_WAIT_MS,
			       0);
		return;
	}
	if (job->exited && !job->killed) {
		/* Ended, but something it started holds its output open.
		 * Not signalled: with the leader reaped, -pid may name
		 * another group by now. It gets EPIPE once we close. */
		engine_finish(job, 0);
		return;
	}
	engine_finish(job, -ETIMEDOUT);
}

static void engine_exit_cb(uv_process_t *p, int64_t status, int sig)
{
	struct engine_job *job = p->data;
	job->exited = true;
	/* Killed by a signal not ours: the shell's convention. */
	job->exit_status = sig ? 128 + sig : status;
	if (engine_settled(job)) {
		engine_finish(job, job->killed ? -ETIMEDOUT : 0);
		return;
	}
	if (!job->killed && uv_timer_get_due_in(&job->timer) > ENGINE_DRAIN_MS)
		uv_timer_start(&job->timer, engine_timer_cb, ENGINE_DRAIN_MS,
			       0);
}

int engine_run(uv_loop_t *loop, const char *engine, const char *const *args,
	       uint64_t timeout_ms, engine_cb cb, void *ctx)
{
	if (!engine || !*engine || !cb)
		return -EINVAL;
	const char *argv[ENGINE_ARGS_MAX + 2];
	size_t argc = 0;
	argv[argc++] = engine;
	for (size_t i = 0; args && args[i]; i++) {
		if (argc > ENGINE_ARGS_MAX)
			return -E2BIG;
		argv[argc++] = args[i];
	}
	argv[argc] = NULL;

	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0)
		return -errno;
	struct engine_job *job = xcalloc(1, sizeof *job);
	job->cb = cb;
	job->ctx = ctx;
	job->timeout_ms = timeout_ms;
	job->cur_blank = true;
	buf_init(&job->stdout_buf);
	buf_reserve(&job->stdout_buf, 1);
	job->stdout_buf.data[0] = '\0';
	uv_pipe_init(loop, &job->out, 0);
	uv_pipe_init(loop, &job->err, 0);
	uv_timer_init(loop, &job->timer);
	job->proc.data = job->out.data = job->err.data = job->timer.data = job;
	job->handles = 4;

	uv_stdio_container_t stdio[3] = {
		{.flags = UV_INHERIT_FD, .data.fd = devnull},
		{.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE,
		 .data.stream = (uv_stream_t *)&job->out},
		{.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE,
		 .data.stream = (uv_stream_t *)&job->err},
	};
	uv_process_options_t po = {
		.exit_cb = engine_exit_cb,
		.file = engine,
		.args = (char **)argv,
		/* Own session and group: the deadline kills -pid. */
		.flags = UV_PROCESS_DETACHED,
		.stdio_count = 3,
		.stdio = stdio,
	};
	int rc = uv_spawn(loop, &job->proc, &po);
	close(devnull);
	if (rc < 0) {
		/* No cb: the caller hears it from the return value. */
		job->done = true;
		engine_close_all(job);
		return rc;
	}
	uv_read_start((uv_stream_t *)&job->out, engine_alloc_cb,
		      engine_read_cb);
	uv_read_start((uv_stream_t *)&job->err, engine_alloc_cb,
		      engine_read_cb);
	uv_timer_start(&job->timer, engine_timer_cb, timeout_ms, 0);
	return 0;
}

static void engine_result_copy_cb(void *ctx, const struct engine_result *r)
{
	struct engine_result *dst = ctx;
	dst->exit_status = r->exit_status;
	dst->err = r->err;
	dst->out = xstrdup(r->out);
	dst->err_line = xstrdup(r->err_line);
}

/* Runs the loop until nothing is left on it, then closes it. */
static void engine_loop_drain(uv_loop_t *loop)
{
	uv_run(loop, UV_RUN_DEFAULT);
	if (uv_loop_close(loop) != 0)
		log_warn("engine: private loop still has handles");
}

int engine_run_sync(const char *engine, const char *const *args,
		    uint64_t timeout_ms, struct engine_result *r)
{
	memset(r, 0, sizeof *r);
	uv_loop_t loop;
	int rc = uv_loop_init(&loop);
	if (rc == 0) {
		rc = engine_run(&loop, engine, args, timeout_ms,
				engine_result_copy_cb, r);
		engine_loop_drain(&loop);
	}
	if (rc < 0) {
		r->exit_status = -1;
		r->err = rc;
		r->out = xstrdup("");
		r->err_line = xstrdup("");
	}
	return r->err;
}

void engine_result_clear(struct engine_result *r)
{
	if (!r)
		return;
	free(r->out);
	free(r->err_line);
	r->out = r->err_line = NULL;
}

bool engine_says_gone(const char *err_line)
{
	static const char *const gone[] = {
		"no such container",		/* docker, podman */
		"no container with name or id", /* podman stop, rm */
		"no container with id or name", "no such object", /* inspect */
	};
	if (!err_line)
		return false;
	for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
		if (strcasestr(err_line, gone[i]))
			return true;
	}
	return false;
}

char *engine_why(const char *engine, const char *what,
		 const struct engine_result *r)
{
	if (r->err == -ENOENT)
		return xasprintf("%s not found (is it installed?)", engine);
	if (r->err == -ETIMEDOUT)
		return xasprintf("%s %s did not end in time; killed", engine,
				 what);
	if (r->err < 0)
		return xasprintf("%s %s: %s", engine, what, strerror(-r->err));
	if (r->err_line && *r->err_line)
		return xstrdup(r->err_line);
	return xasprintf("%s %s exited with status %d", engine, what,
			 r->exit_status);
}

/* ---- the stop ladder ---- */

struct engine_rm {
	uv_loop_t *loop;
	char *engine;
	char *ref;
	unsigned stop_secs;
	engine_removed_cb cb;
	void *ctx;
};

static void engine_rm_free(struct engine_rm *x)
{
	free(x->engine);
	free(x->ref);
	free(x);
}

static void engine_rm_done(struct engine_rm *x, bool gone, const char *why)
{
	x->cb(x->ctx, gone, why);
	engine_rm_free(x);
}

static void engine_rm_cb(void *ctx, const struct engine_result *r)
{
	struct engine_rm *x = ctx;
	if (r->err == 0 &&
	    (r->exit_status == 0 || engine_says_gone(r->err_line))) {
		engine_rm_done(x, true, NULL);
		return;
	}
	char *why = engine_why(x->engine, "rm", r);
	engine_rm_done(x, false, why);
	free(why);
}

static void engine_stop_cb(void *ctx, const struct engine_result *r)
{
	struct engine_rm *x = ctx;
	if (r->err == 0 && r->exit_status != 0 &&
	    engine_says_gone(r->err_line)) {
		/* Gone already (a --rm container removes itself). */
		engine_rm_done(x, true, NULL);
		return;
	}
	if (r->err == 0 && r->exit_status != 0)
		log_debug("%s stop %s: %s", x->engine, x->ref, r->err_line);
	/* rm -f even when stop failed: it kills what stop could not. */
	const char *args[] = {"rm", "-f", x->ref, NULL};
	int rc = engine_run(x->loop, x->engine, args, ENGINE_TIMEOUT_MS,
			    engine_rm_cb, x);
	if (rc < 0) {
		struct engine_result fail = {.exit_status = -1, .err = rc};
		char *why = engine_why(x->engine, "rm", &fail);
		engine_rm_done(x, false, why);
		free(why);
	}
}

int engine_remove(uv_loop_t *loop, const char *engine, const char *ref,
		  unsigned stop_secs, engine_removed_cb cb, void *ctx)
{
	if (!ref || !*ref || !cb)
		return -EINVAL;
	struct engine_rm *x = xcalloc(1, sizeof *x);
	x->loop = loop;
	x->engine = xstrdup(engine ? engine : "");
	x->ref = xstrdup(ref);
	x->stop_secs = stop_secs;
	x->cb = cb;
	x->ctx = ctx;
	char secs[16];
	snprintf(secs, sizeof secs, "%u", stop_secs);
	const char *args[] = {"stop", "-t", secs, ref, NULL};
	int rc = engine_run(loop, engine, args,
			    (uint64_t)stop_secs * 1000 + ENGINE_TIMEOUT_MS,
			    engine_stop_cb, x);
	if (rc < 0)
		engine_rm_free(x);
	return rc;
}

struct engine_rm_sync {
	bool gone;
	char *why;
};

static void engine_removed_sync_cb(void *ctx, bool gone, const char *why)
{
	struct engine_rm_sync *s = ctx;
	s->gone = gone;
	s->why = why ? xstrdup(why) : NULL;
}

bool engine_remove_sync(const char *engine, const char *ref, unsigned stop_secs,
			char **why)
{
	struct engine_rm_sync s = {0};
	uv_loop_t loop;
	int rc = uv_loop_init(&loop);
	if (rc == 0) {
		rc = engine_remove(&loop, engine, ref, stop_secs,
				   engine_removed_sync_cb, &s);
		engine_loop_drain(&loop);
	}
	if (rc < 0) {
		struct engine_result fail = {.exit_status = -1, .err = rc};
		s.gone = false;
		s.why = engine_why(engine ? engine : "", "stop", &fail);
	}
	if (why)
		*why = s.why;
	else
		free(s.why);
	return s.gone;
}
