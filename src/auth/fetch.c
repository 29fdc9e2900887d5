/* One bounded OAuth HTTP exchange on the loop's HTTP client. */
#include "auth/fetch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth/auth.h"
#include "auth/meta.h"
#include "auth/urls.h"
#include "http/httpc.h"
#include "util/buf.h"
#include "util/xmalloc.h"

struct afetch {
	struct httpc_req *req;
	afetch_cb cb;
	void *arg;
	struct buf body;
	size_t max_body;
	bool too_big;
	bool in_cb;
};

static bool afetch_on_body(void *ctx, struct httpc_req *r, const char *data,
			   size_t len)
{
	struct afetch *f = ctx;
	if (f->body.len + len > f->max_body) {
		f->too_big = true;
		return false;
	}
	buf_append(&f->body, data, len);
	return true;
}

/* Every value of name in r's head, joined with ", ". NULL when none. */
static char *afetch_join(const struct httpc_req *r, const char *name)
{
	struct buf head, out;
	buf_init(&head);
	buf_init(&out);
	httpc_head_copy(r, &head);
	const char *p = head.data, *end = head.data + head.len;
	while (p && p < end) {
		const char *v = p + strlen(p) + 1;
		if (strcasecmp(p, name) == 0) {
			if (out.len)
				buf_puts(&out, ", ");
			buf_puts(&out, v);
		}
		p = v + strlen(v) + 1;
	}
	buf_free(&head);
	if (out.len == 0) {
		buf_free(&out);
		return NULL;
	}
	return buf_steal(&out);
}

static void afetch_on_done(void *ctx, struct httpc_req *r, int err,
			   const char *why)
{
	struct afetch *f = ctx;
	char *www = NULL;
	struct afetch_result res = {.err = err, .why = why};
	if (f->too_big) {
		res.err = -EMSGSIZE;
		res.why = "the answer is too large";
	}
	/* The status even of an answer cut short: a probe needs no more. */
	res.status = httpc_status(r);
	if (res.err == 0) {
		res.body = f->body.data ? f->body.data : "";
		res.len = f->body.len;
		www = afetch_join(r, "WWW-Authenticate");
		res.www_authenticate = www;
		res.content_type = httpc_header(r, "Content-Type");
		res.mcp_session_id = httpc_header(r, "Mcp-Session-Id");
	}
	f->in_cb = true;
	f->cb(f->arg, &res);
	free(www);
	buf_free(&f->body);
	free(f);
}

int afetch_start(struct httpc *h, const struct afetch_opts *o, afetch_cb cb,
		 void *arg, struct afetch **out)
{
	if (!urls_secure(o->url))
		return -EINVAL;
	const char *hdrs[HTTPC_MAX_HEADERS + 1];
	size_t n = 0;
	bool accept = false;
	for (size_t i = 0; o->headers && o->headers[i]; i++) {
		if (n == HTTPC_MAX_HEADERS - 1)
			return -EINVAL;
		if (strncasecmp(o->headers[i], "Accept:", 7) == 0)
			accept = true;
		hdrs[n++] = o->headers[i];
	}
	if (!accept)
		hdrs[n++] = "Accept: application/json";
	hdrs[n] = NULL;
	struct afetch *f = xcalloc(1, sizeof *f);
	f->cb = cb;
	f->arg = arg;
	f->max_body = o->max_body ? o->max_body : META_MAX_DOC;
	buf_init(&f->body);
	struct httpc_opts ho = {
		.method = o->method,
		.url = o->url,
		.headers = hdrs,
		.body = o->body,
		.body_len = o->body_len,
		.total_timeout_ms =
			o->timeout_ms ? o->timeout_ms : AUTH_HTTP_TIMEOUT_MS,
	};
	static const struct httpc_cbs cbs = {
		.on_body = afetch_on_body,
		.on_done = afetch_on_done,
	};
	int rc = httpc_start(h, &ho, &cbs, f, &f->req);
	if (rc < 0) {
		buf_free(&f->body);
		free(f);
		return rc;
	}
	if (out)
		*out = f;
	return 0;
}

void afetch_cancel(struct afetch *f)
{
	if (f == NULL || f->in_cb)
		return;
	httpc_cancel(f->req);
	buf_free(&f->body);
	free(f);
}
