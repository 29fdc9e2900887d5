/*
 * httpc_fetch: one whole HTTP exchange on a private loop, for the terminal
 * commands. A text/event-stream answer can be read event by event (a tool
 * call's answer stays open while the call runs), with a small line parser
 * of its own: the CLI needs only each event's data.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http/httpc.h"

struct fetch {
	int *status;
	struct buf *head;
	struct buf *body;
	size_t max;
	bool (*on_sse)(void *arg, const char *data, size_t len);
	void *arg;
	bool sse;
	bool stopped; /* on_sse said stop: a whole exchange */
	bool done;
	int err;
	const char *why;
	struct buf line; /* the SSE line so far */
	struct buf data; /* the SSE event's data so far */
	bool has_data;
};

static char fetch_why[256];

static bool fetch_head_cb(void *ctx, struct httpc_req *r)
{
	struct fetch *f = ctx;
	*f->status = httpc_status(r);
	if (f->head)
		httpc_head_copy(r, f->head);
	const char *ct = httpc_header(r, "content-type");
	f->sse = f->on_sse && ct &&
		 strncasecmp(ct, "text/event-stream", 17) == 0;
	return true;
}

/* One SSE line (no line ending): data lines gather, a blank line ends
 * the event, comments (": hb") and other fields are skipped. */
static bool fetch_sse_line(struct fetch *f, const char *p, size_t len)
{
	if (len == 0) {
		bool go = true;
		if (f->has_data)
			go = f->on_sse(f->arg, f->data.data ? f->data.data : "",
				       f->data.len);
		buf_reset(&f->data);
		f->has_data = false;
		return go;
	}
	if (len >= 5 && memcmp(p, "data:", 5) == 0) {
		size_t skip = len > 5 && p[5] == ' ' ? 6 : 5;
		if (f->has_data)
			buf_append(&f->data, "\n", 1);
		buf_append(&f->data, p + skip, len - skip);
		f->has_data = true;
	}
	return true;
}

static bool fetch_body_cb(void *ctx, struct httpc_req *r, const char *p,
			  size_t len)
{
	struct fetch *f = ctx;
	if (!f->sse) {
		if (f->body->len + len > f->max) {
			f->err = -EMSGSIZE;
			f->why = "the answer is larger than the limit";
			return false;
		}
		buf_append(f->body, p, len);
		return true;
	}
	for (size_t i = 0; i < len; i++) {
		if (p[i] != '\n') {
			buf_append(&f->line, p + i, 1);
			if (f->line.len + f->data.len > f->max) {
				f->err = -EMSGSIZE;
				f->why = "an event is larger than the limit";
				return false;
			}
			continue;
		}
		size_t n = f->line.len;
		if (n && f->line.data[n - 1] == '\r')
			n--;
		bool go =
			fetch_sse_line(f, f->line.data ? f->line.data : "", n);
		buf_reset(&f->line);
		if (!go) {
			f->stopped = true;
			return false;
		}
	}
	return true;
}

static void fetch_done_cb(void *ctx, struct httpc_req *r, int err,
			  const char *why)
{
	struct fetch *f = ctx;
	f->done = true;
	if (f->stopped) {
		f->err = 0;
	} else if (f->err == 0 && err < 0) {
		f->err = err;
		snprintf(fetch_why, sizeof fetch_why, "%.250s", why);
		f->why = fetch_why;
	}
}

int httpc_fetch(const struct httpc_opts *opts, int *status, struct buf *body,
		size_t max_body,
		bool (*on_sse)(void *arg, const char *data, size_t len),
		void *arg, const char **why)
{
	return httpc_fetch_head(opts, status, NULL, body, max_body, on_sse, arg,
				why);
}

int httpc_fetch_head(const struct httpc_opts *opts, int *status,
		     struct buf *head, struct buf *body, size_t max_body,
		     bool (*on_sse)(void *arg, const char *data, size_t len),
		     void *arg, const char **why)
{
	static const struct httpc_cbs cbs = {
		.on_head = fetch_head_cb,
		.on_body = fetch_body_cb,
		.on_done = fetch_done_cb,
	};
	struct fetch f = {
		.status = status,
		.head = head,
		.body = body,
		.max = max_body,
		.on_sse = on_sse,
		.arg = arg,
	};
	*status = 0;
	*why = "";
	uv_loop_t loop;
	if (uv_loop_init(&loop) < 0) {
		*why = "cannot make an event loop";
		return -ENOMEM;
	}
	struct httpc *c = httpc_new(&loop, why);
	if (c == NULL) {
		uv_loop_close(&loop);
		return -ENOSYS;
	}
	buf_init(&f.line);
	buf_init(&f.data);
	int rc = httpc_start(c, opts, &cbs, &f, NULL);
	if (rc < 0) {
		*why = "the request is not valid";
		f.done = true;
		f.err = rc;
	}
	while (!f.done)
		uv_run(&loop, UV_RUN_ONCE);
	httpc_free(c);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	buf_free(&f.line);
	buf_free(&f.data);
	if (f.err < 0 && f.why)
		*why = f.why;
	return f.err;
}
