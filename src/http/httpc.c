/*
 * The loop's HTTP client: libcurl's multi interface driven by libuv (one
 * uv_poll per socket curl asks for, one uv_timer for curl's timeouts, one
 * silence timer per request). Owns the multi handle, its connection cache
 * and every request in flight. curl may not be re-entered from its own
 * callbacks, so what a callback asks for (cancel, start, resume, free) is
 * done when curl has returned.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/curlso.h"
#include "http/httpc.h"
#include "http/httpc_int.h"
#include "util/xmalloc.h"

static void httpc_free_now(struct httpc *c);
static void httpc_kick(struct httpc *c);
static size_t httpc_header_cb(char *p, size_t size, size_t n, void *ud);
static size_t httpc_write_cb(char *p, size_t size, size_t n, void *ud);
static int httpc_prereq_cb(void *ud, char *conn_primary_ip, char *conn_local_ip,
			   int conn_primary_port, int conn_local_port);

/* ---- handles ---- */

void httpc_handle_closed(struct httpc *c)
{
	if (--c->handles == 0 && c->closing)
		free(c);
}

static void httpc_timer_close_cb(uv_handle_t *h)
{
	httpc_handle_closed(h->data);
}

static void httpc_req_close_cb(uv_handle_t *h)
{
	struct httpc_req *r = h->data;
	struct httpc *c = r->c;
	free(r);
	httpc_handle_closed(c);
}

/* ---- ending a request ---- */

static bool httpc_sent_now(const struct httpc_req *r)
{
	/* curl replays only a request it wrote on a reused connection that
	 * then closed: the first write may have reached the server. */
	if (r->heard || r->replay_refused)
		return true;
	/* curl asks httpc_prereq_cb right before it writes a request: not
	 * asked, nothing went (and a kept handle's count is still the last
	 * request's until curl starts this one). */
	if (!r->added || r->attempts == 0)
		return false;
	/* Bytes of the request written to a socket, counted as they go
	 * (a partial write counts). */
	long size = 0;
	if (r->c->cu->easy_getinfo(r->easy, CURLINFO_REQUEST_SIZE, &size) !=
	    CURLE_OK)
		return true;
	return size > 0;
}

/* One option on easy handle e of libcurl cu, unless one before failed:
 * the setup functions below stop at the first failure, in rc. */
#define SET(opt, val)                                                          \
	do {                                                                   \
		if (rc == CURLE_OK)                                            \
			rc = cu->easy_setopt(e, opt, val);                     \
	} while (0)

/* The options every request gets alike (see httpc.h and the file head),
 * set once per easy handle: a handle kept between requests keeps them,
 * and httpc_setup sets only what a request may change. */
static CURLcode httpc_easy_setup(const struct httpc *c, CURL *e)
{
	const struct curlso *cu = c->cu;
	CURLcode rc = CURLE_OK;
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	/* A redirect must not carry our Authorization elsewhere. */
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_NOPROXY, "127.0.0.1,localhost,::1");
	SET(CURLOPT_HEADERFUNCTION, httpc_header_cb);
	SET(CURLOPT_WRITEFUNCTION, httpc_write_cb);
	SET(CURLOPT_PREREQFUNCTION, httpc_prereq_cb);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
	SET(CURLOPT_OPENSOCKETFUNCTION, httpc_open_cb);
	SET(CURLOPT_OPENSOCKETDATA, (void *)c);
	SET(CURLOPT_CLOSESOCKETFUNCTION, httpc_close_cb);
	SET(CURLOPT_CLOSESOCKETDATA, (void *)c);
	/* No CURLOPT_PIPEWAIT: a request would wait for a connection whose
	 * protocol is not known yet, which a silent stream never tells. */
	return rc;
}

/*
 * A finished easy handle back to the idle set, or freed when the set is
 * full or the client closes. A request that ended well leaves it as it
 * is, its options set for the next (curl_easy_reset and setting them all
 * again cost about 7,000 instructions and seven allocations a request):
 * only what points at the request's memory is let go here (its header
 * list, error buffer, parsed URL, the copy of its body). Any other end
 * (an error, a cancel, curl's own replay) resets the handle: curl's
 * count of replays (state.retrycount, which only curl_easy_reset zeroes)
 * and whatever a broken transfer left are gone, and the shared options
 * are set again.
 */
static void httpc_easy_put(struct httpc *c, CURL *e, bool clean)
{
	const struct curlso *cu = c->cu;
	if (c->closing || c->nidle == HTTPC_IDLE_EASY) {
		cu->easy_cleanup(e);
		return;
	}
	if (clean) {
		cu->easy_setopt(e, CURLOPT_HTTPHEADER, (void *)NULL);
		cu->easy_setopt(e, CURLOPT_ERRORBUFFER, (void *)NULL);
		cu->easy_setopt(e, CURLOPT_CURLU, (void *)NULL);
		/* Frees curl's copy of the body (COPYPOSTFIELDS). */
		cu->easy_setopt(e, CURLOPT_POSTFIELDS, (void *)NULL);
	} else {
		cu->easy_reset(e);
		if (httpc_easy_setup(c, e) != CURLE_OK) {
			cu->easy_cleanup(e);
			return;
		}
	}
	c->idle[c->nidle++] = e;
}

static CURL *httpc_easy_get(struct httpc *c)
{
	if (c->nidle > 0)
		return c->idle[--c->nidle];
	CURL *e = c->cu->easy_init();
	if (e && httpc_easy_setup(c, e) != CURLE_OK) {
		c->cu->easy_cleanup(e);
		e = NULL;
	}
	return e;
}

/* Removes r from curl (never from inside curl), tells its owner unless
 * it was cancelled, and frees it. */
static void httpc_end(struct httpc_req *r, int err, const char *why)
{
	struct httpc *c = r->c;
	const struct curlso *cu = c->cu;
	r->sent = httpc_sent_now(r);
	if (r->added) {
		c->in_curl++;
		cu->multi_remove_handle(c->multi, r->easy);
		c->in_curl--;
		r->added = false;
	}
	uv_timer_stop(&r->silence);
	if (!r->cancelled && r->cbs.on_done) {
		r->done = true;
		r->cbs.on_done(r->ctx, r, err, why);
	}
	if (r->prev)
		r->prev->next = r->next;
	else
		c->reqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	/* A clean end: curl finished the transfer and sent it once. */
	httpc_easy_put(c, r->easy, err == 0 && r->attempts <= 1);
	httpc_url_put(r->url);
	free(r->headers);
	buf_free(&r->head);
	uv_close((uv_handle_t *)&r->silence, httpc_req_close_cb);
}

/* What curl finished, and what was cancelled while curl ran. */
static void httpc_settle(struct httpc *c)
{
	const struct curlso *cu = c->cu;
	for (;;) {
		bool any = false;
		CURLMsg *m;
		int left;
		while (!c->closing &&
		       (m = cu->multi_info_read(c->multi, &left)) != NULL) {
			if (m->msg != CURLMSG_DONE)
				continue;
			struct httpc_req *r = NULL;
			cu->easy_getinfo(m->easy_handle, CURLINFO_PRIVATE,
					 (char **)&r);
			CURLcode code = m->data.result;
			const char *why;
			int err = curlso_errno(r->c->cu, code, r->heard,
					       r->errbuf, r->why, sizeof r->why,
					       &why);
			if (r->err) {
				err = r->err;
				why = r->err_why;
			}
			httpc_end(r, err, why);
			any = true;
		}
		if (c->cancelled > 0) {
			c->cancelled = 0;
			struct httpc_req *next;
			for (struct httpc_req *r = c->reqs; r; r = next) {
				next = r->next;
				if (r->cancelled)
					httpc_end(r, -ECANCELED, "");
			}
			any = true;
		}
		if (!any)
			break;
	}
}

void httpc_leave(struct httpc *c)
{
	if (c->depth > 1) {
		c->depth--;
		return;
	}
	if (!c->closing)
		httpc_settle(c);
	c->depth = 0;
	if (c->free_pending) {
		c->free_pending = false;
		httpc_free_now(c);
	}
}

/* ---- the response as it comes ---- */

static void httpc_silence_cb(uv_timer_t *t)
{
	struct httpc_req *r = t->data;
	struct httpc *c = r->c;
	if (r->cancelled || r->done)
		return;
	c->depth++;
	snprintf(r->why, sizeof r->why, "the server sent nothing for %llu ms",
		 (unsigned long long)r->silence_ms);
	httpc_end(r, -ETIMEDOUT, r->why);
	httpc_leave(c);
}

static void httpc_heard(struct httpc_req *r)
{
	r->heard = true;
	if (r->silence_ms && !r->paused)
		uv_timer_start(&r->silence, httpc_silence_cb, r->silence_ms, 0);
}

/* Keeps one header as "name\0value\0"; leading and trailing blanks of the
 * value dropped. Folded continuation lines (obsolete) are ignored. */
static void httpc_head_add(struct httpc_req *r, const char *p, size_t len)
{
	while (len && (p[len - 1] == '\n' || p[len - 1] == '\r'))
		len--;
	const char *colon = memchr(p, ':', len);
	if (colon == NULL || colon == p || p[0] == ' ' || p[0] == '\t')
		return;
	const char *v = colon + 1;
	const char *end = p + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	buf_append(&r->head, p, (size_t)(colon - p));
	buf_append(&r->head, "", 1);
	buf_append(&r->head, v, (size_t)(end - v));
	buf_append(&r->head, "", 1);
}

/* "HTTP/1.1 200 OK" or "HTTP/2 200": the code, or 0. */
static int httpc_status_line(const char *p, size_t len)
{
	const char *sp = memchr(p, ' ', len);
	if (sp == NULL || (size_t)(sp - p) + 4 > len)
		return 0;
	int code = 0;
	for (int i = 1; i <= 3; i++) {
		if (sp[i] < '0' || sp[i] > '9')
			return 0;
		code = code * 10 + (sp[i] - '0');
	}
	return code;
}

static size_t httpc_header_cb(char *p, size_t size, size_t n, void *ud)
{
	struct httpc_req *r = ud;
	size_t len = size * n;
	if (r->cancelled)
		return 0;
	httpc_heard(r);
	if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) {
		/* A new head (after a 1xx): it replaces the one before. */
		buf_reset(&r->head);
		r->status = httpc_status_line(p, len);
		r->head_done = false;
		return len;
	}
	if (r->head_done)
		return len; /* trailers */
	if ((len == 2 && p[0] == '\r') || (len == 1 && p[0] == '\n')) {
		if (r->status >= 100 && r->status < 200)
			return len; /* interim: the real head follows */
		r->head_done = true;
		if (r->cbs.on_head && !r->cbs.on_head(r->ctx, r) &&
		    !r->cancelled) {
			r->err = -ECANCELED;
			r->err_why = "the request was ended by its owner";
		}
		return r->cancelled || r->err ? 0 : len;
	}
	if (r->head.len + len + 2 > HTTPC_MAX_HEAD) {
		r->err = -EPROTO;
		r->err_why = "the response head is larger than 64 KiB";
		return 0;
	}
	httpc_head_add(r, p, len);
	return len;
}

/* The turn after a request used its budget: every request's count starts
 * again, and what the budget paused reads on (its kept piece at once). */
static void httpc_yield_cb(uv_check_t *h)
{
	struct httpc *c = h->data;
	uv_check_stop(h);
	c->depth++;
	for (struct httpc_req *r = c->reqs; r && !c->closing; r = r->next) {
		r->turn_bytes = 0;
		if (!r->yielded || r->paused || r->cancelled || !r->added)
			continue;
		r->yielded = false;
		c->in_curl++;
		c->cu->easy_pause(r->easy, CURLPAUSE_CONT);
		c->in_curl--;
	}
	httpc_leave(c);
}

static size_t httpc_write_cb(char *p, size_t size, size_t n, void *ud)
{
	struct httpc_req *r = ud;
	size_t len = size * n;
	if (r->cancelled)
		return 0;
	/* curl keeps this piece and gives it again on resume. */
	if (r->paused)
		return CURL_WRITEFUNC_PAUSE;
	if (r->turn_bytes >= HTTPC_TURN_BYTES) {
		r->yielded = true;
		uv_check_start(&r->c->yield, httpc_yield_cb);
		return CURL_WRITEFUNC_PAUSE;
	}
	r->turn_bytes += len;
	httpc_heard(r);
	if (r->cbs.on_body && !r->cbs.on_body(r->ctx, r, p, len) &&
	    !r->cancelled) {
		r->err = -ECANCELED;
		r->err_why = "the request was ended by its owner";
	}
	return r->cancelled || r->err ? 0 : len;
}

/*
 * curl sends a request again by itself when a reused keep-alive
 * connection closes before any byte of the answer (Curl_retry_request,
 * rewinding the body), up to five times. The server may have run it and
 * died, or a balancer reset it after the work: a tool call would run
 * twice. So a POST (every MCP message) is sent at most once by curl: its
 * second attempt is refused here, the transfer fails, and the owner hears
 * that it may have been sent; whether it goes again is the outbox's rule.
 * A GET or DELETE changes nothing (a stream's opening, a ping, a session's
 * end): curl may replay it, as on a cached connection the server closed
 * just as it was reused. Keep-alive and connection reuse are untouched.
 */
static int httpc_prereq_cb(void *ud, char *conn_primary_ip, char *conn_local_ip,
			   int conn_primary_port, int conn_local_port)
{
	struct httpc_req *r = ud;
	if (++r->attempts == 1 || !r->once)
		return CURL_PREREQFUNC_OK;
	r->replay_refused = true;
	r->err = -ECONNRESET;
	r->err_why = "the connection closed before any answer";
	return CURL_PREREQFUNC_ABORT;
}

/* ---- the kick: what could not be done inside curl ---- */

static void httpc_kick_cb(uv_timer_t *t)
{
	struct httpc *c = t->data;
	c->depth++;
	struct httpc_req *next;
	for (struct httpc_req *r = c->reqs; r && !c->closing; r = next) {
		next = r->next;
		if (r->cancelled)
			continue;
		if (r->queued) {
			r->queued = false;
			CURLMcode mc =
				c->cu->multi_add_handle(c->multi, r->easy);
			if (mc != CURLM_OK) {
				/* Ended below: its on_done may cancel next. */
				r->err = -ENOMEM;
				r->err_why = "the request could not be started";
				continue;
			}
			r->added = true;
		}
		if (r->resume) {
			r->resume = false;
			r->yielded = false;
			/* May deliver the kept piece right away. */
			c->in_curl++;
			c->cu->easy_pause(r->easy, CURLPAUSE_CONT);
			c->in_curl--;
		}
	}
	for (struct httpc_req *r = c->reqs; r && !c->closing; r = next) {
		next = r->next;
		if (!r->added && !r->queued && !r->cancelled && r->err) {
			httpc_end(r, r->err, r->err_why);
			next = c->reqs; /* on_done may have ended others */
		}
	}
	httpc_leave(c);
}

static void httpc_kick(struct httpc *c)
{
	uv_timer_start(&c->kick, httpc_kick_cb, 0, 0);
}

/* ---- API ---- */

struct httpc *httpc_new(uv_loop_t *loop, const char **why)
{
	const struct curlso *cu = curlso_get(why);
	if (cu == NULL)
		return NULL;
	CURLM *multi = cu->multi_init();
	if (multi == NULL) {
		if (why)
			*why = "libcurl could not make a multi handle";
		return NULL;
	}
	struct httpc *c = xcalloc(1, sizeof *c);
	c->loop = loop;
	c->cu = cu;
	c->multi = multi;
	uv_timer_init(loop, &c->timer);
	uv_timer_init(loop, &c->kick);
	uv_idle_init(loop, &c->now);
	uv_check_init(loop, &c->yield);
	c->timer.data = c->kick.data = c->now.data = c->yield.data = c;
	c->handles = 4;
	cu->multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, httpc_socket_cb);
	cu->multi_setopt(multi, CURLMOPT_SOCKETDATA, c);
	cu->multi_setopt(multi, CURLMOPT_TIMERFUNCTION, httpc_curl_timer_cb);
	cu->multi_setopt(multi, CURLMOPT_TIMERDATA, c);
	cu->multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS,
			 (long)HTTPC_MAX_HOST_CONNECTIONS);
	cu->multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long)HTTPC_MAX_CACHED);
	return c;
}

static void httpc_free_now(struct httpc *c)
{
	c->closing = true;
	/* Every request ends; an on_done that starts another is refused. */
	while (c->reqs) {
		struct httpc_req *r = c->reqs;
		httpc_end(r, -ECANCELED, "the HTTP client was closed");
	}
	while (c->nidle > 0)
		c->cu->easy_cleanup(c->idle[--c->nidle]);
	httpc_url_free_all(c);
	/* Closes the cached connections: their polls go through
	 * httpc_socket_cb. */
	c->cu->multi_cleanup(c->multi);
	c->multi = NULL;
	/* Whatever curl did not take back itself. */
	while (c->socks)
		httpc_sock_close(c->socks);
	uv_close((uv_handle_t *)&c->timer, httpc_timer_close_cb);
	uv_close((uv_handle_t *)&c->now, httpc_timer_close_cb);
	uv_close((uv_handle_t *)&c->yield, httpc_timer_close_cb);
	uv_close((uv_handle_t *)&c->kick, httpc_timer_close_cb);
}

void httpc_free(struct httpc *c)
{
	if (c == NULL || c->closing)
		return;
	if (c->depth > 0 || c->in_curl > 0) {
		c->free_pending = true;
		return;
	}
	httpc_free_now(c);
}

static bool httpc_header_ok(const char *h)
{
	const char *colon = strchr(h, ':');
	size_t n = strlen(h);
	/* "Name;" is libcurl's way to send a header with an empty value. */
	bool empty = !colon && n > 1 && h[n - 1] == ';' &&
		     strcspn(h, " \t;") == n - 1;
	return (empty || (colon && colon != h)) && strpbrk(h, "\r\n") == NULL;
}

/* The request's header lines as libcurl's list, nodes and texts in one
 * allocation (curl_slist_append makes two per line, for every request),
 * freed with free(). "Expect:" ends it: no "Expect: 100-continue" wait
 * before a large body. NULL when a line is not a valid header. */
static struct curl_slist *httpc_headers(const char *const *lines)
{
	static const char expect[] = "Expect:";
	size_t n = 0;
	size_t bytes = sizeof expect;
	for (; lines && lines[n]; n++) {
		if (n == HTTPC_MAX_HEADERS || !httpc_header_ok(lines[n]))
			return NULL;
		bytes += strlen(lines[n]) + 1;
	}
	struct curl_slist *l = xmalloc((n + 1) * sizeof *l + bytes);
	char *text = (char *)(l + n + 1);
	for (size_t i = 0; i <= n; i++) {
		const char *line = i < n ? lines[i] : expect;
		size_t len = strlen(line) + 1;
		l[i].data = memcpy(text, line, len);
		l[i].next = i < n ? &l[i + 1] : NULL;
		text += len;
	}
	return l;
}

/* Sets what a request may change, all of it every time: the handle may
 * come from a request with other options (httpc_easy_put); what every
 * request gets alike is set once (httpc_easy_setup). */
static int httpc_setup(struct httpc_req *r, const struct httpc_opts *o)
{
	const struct curlso *cu = r->c->cu;
	CURL *e = r->easy;
	CURLcode rc = CURLE_OK;
	SET(CURLOPT_PRIVATE, (void *)r);
	/* The text too: libcurl 7.88 then takes it as the transfer's own
	 * (its effective URL, what a replay reads) instead of printing the
	 * parsed one back; both say the same. */
	SET(CURLOPT_URL, o->url);
	SET(CURLOPT_CURLU, r->url ? r->url->u : NULL);
	SET(CURLOPT_UNIX_SOCKET_PATH, o->unix_socket);
	SET(CURLOPT_CONNECTTIMEOUT_MS,
	    (long)(o->connect_timeout_ms ? o->connect_timeout_ms
					 : HTTPC_CONNECT_TIMEOUT_MS));
	SET(CURLOPT_TIMEOUT_MS, (long)o->total_timeout_ms);
	SET(CURLOPT_HEADERDATA, (void *)r);
	SET(CURLOPT_WRITEDATA, (void *)r);
	SET(CURLOPT_ERRORBUFFER, r->errbuf);
	SET(CURLOPT_PREREQDATA, (void *)r);
	SET(CURLOPT_HTTPHEADER, r->headers);
	const char *m = o->method ? o->method : "GET";
	bool post = strcmp(m, "POST") == 0;
	/* GET, or a custom method's base when it sends no body. */
	if (!post && o->body == NULL)
		SET(CURLOPT_HTTPGET, 1L);
	else if (post)
		SET(CURLOPT_POST, 1L);
	SET(CURLOPT_CUSTOMREQUEST, post || strcmp(m, "GET") == 0 ? NULL : m);
	r->once = strcmp(m, "GET") != 0 && strcmp(m, "DELETE") != 0;
	if (o->body || post) {
		/* The size first: COPYPOSTFIELDS copies that many bytes. */
		SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)o->body_len);
		SET(CURLOPT_COPYPOSTFIELDS, o->body ? o->body : "");
	}
	return rc == CURLE_OK ? 0 : -EINVAL;
}

int httpc_start(struct httpc *c, const struct httpc_opts *opts,
		const struct httpc_cbs *cbs, void *ctx, struct httpc_req **out)
{
	const struct curlso *cu = c->cu;
	if (c->closing || opts->url == NULL ||
	    (strncasecmp(opts->url, "http://", 7) != 0 &&
	     strncasecmp(opts->url, "https://", 8) != 0) ||
	    (opts->body == NULL && opts->body_len > 0) ||
	    (opts->method && (opts->method[0] == '\0' ||
			      strpbrk(opts->method, " \r\n") != NULL)))
		return -EINVAL;
	struct curl_slist *hs = httpc_headers(opts->headers);
	if (hs == NULL)
		return -EINVAL;
	CURL *e = httpc_easy_get(c);
	if (e == NULL) {
		free(hs);
		return -ENOMEM;
	}
	struct httpc_req *r = xcalloc(1, sizeof *r);
	r->c = c;
	r->easy = e;
	r->url = httpc_url_take(c, opts->url);
	r->headers = hs;
	r->cbs = *cbs;
	r->ctx = ctx;
	r->silence_ms = opts->silence_timeout_ms;
	buf_init(&r->head);
	if (httpc_setup(r, opts) < 0) {
		httpc_easy_put(c, e, false);
		httpc_url_put(r->url);
		free(hs);
		free(r);
		return -EINVAL;
	}
	uv_timer_init(c->loop, &r->silence);
	r->silence.data = r;
	c->handles++;
	r->next = c->reqs;
	if (c->reqs)
		c->reqs->prev = r;
	c->reqs = r;
	if (r->silence_ms)
		uv_timer_start(&r->silence, httpc_silence_cb, r->silence_ms, 0);
	if (c->in_curl > 0) {
		r->queued = true;
		httpc_kick(c);
	} else if (cu->multi_add_handle(c->multi, e) != CURLM_OK) {
		r->cancelled = true;
		httpc_end(r, -ENOMEM, "");
		return -ENOMEM;
	} else {
		r->added = true;
	}
	if (out)
		*out = r;
	return 0;
}

void httpc_cancel(struct httpc_req *r)
{
	if (r == NULL || r->cancelled || r->done)
		return;
	r->cancelled = true;
	struct httpc *c = r->c;
	if (c->in_curl > 0) {
		c->cancelled++;
		return;
	}
	c->depth++;
	httpc_end(r, -ECANCELED, "");
	httpc_leave(c);
}

void httpc_pause(struct httpc_req *r, bool on)
{
	if (r->cancelled || r->done || r->paused == on)
		return;
	struct httpc *c = r->c;
	r->paused = on;
	if (on) {
		uv_timer_stop(&r->silence);
		r->resume = false;
		/* Inside curl the next piece is refused with
		 * CURL_WRITEFUNC_PAUSE instead. */
		if (c->in_curl == 0 && r->added) {
			c->in_curl++;
			c->cu->easy_pause(r->easy, CURLPAUSE_RECV);
			c->in_curl--;
		}
		return;
	}
	if (r->silence_ms)
		uv_timer_start(&r->silence, httpc_silence_cb, r->silence_ms, 0);
	/* Resuming delivers kept data at once: never inside the caller. */
	r->resume = true;
	httpc_kick(c);
}

uv_loop_t *httpc_loop(const struct httpc *c)
{
	return c->loop;
}

int httpc_status(const struct httpc_req *r)
{
	return r->head_done ? r->status : 0;
}

const char *httpc_header(const struct httpc_req *r, const char *name)
{
	return httpc_head_get(&r->head, name);
}

void httpc_head_copy(const struct httpc_req *r, struct buf *out)
{
	buf_reset(out);
	buf_append(out, r->head.data, r->head.len);
}

const char *httpc_head_get(const struct buf *head, const char *name)
{
	const char *p = head->data;
	const char *end = p + head->len;
	while (p && p < end) {
		const char *v = p + strlen(p) + 1;
		if (strcasecmp(p, name) == 0)
			return v;
		p = v + strlen(v) + 1;
	}
	return NULL;
}

bool httpc_sent(const struct httpc_req *r)
{
	return r->done ? r->sent : httpc_sent_now(r);
}
