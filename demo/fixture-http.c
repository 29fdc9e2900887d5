/*
 * fixture-http: see fixture-http.h. One libuv loop; one http_parser per
 * connection; sessions hold streams (the GET stream and one per POSTed
 * request) whose events are kept for Last-Event-ID replay.
 *
 * Sessions are only freed between fixture callbacks (in request handlers
 * and in the prepare step), never from inside fxh_send: the fixture may be
 * in the middle of working on one.
 */
#include "fixture-http.h"

#include <errno.h>
#include <http_parser.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>
#include <uv.h>

#include "fixture-http-int.h"

struct fxh_state fxh;

void fxh_log(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", fxh.o->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- connections: writing ------------------------------------------- */

struct fxh_wreq {
	uv_write_t req;
	char data[];
};

static void fxh_on_written(uv_write_t *req, int status)
{
	free(req);
	(void)status; /* a failed write shows up as a read error too */
}

static void fxh_on_conn_closed(uv_handle_t *h)
{
	struct fxh_conn *c = h->data;
	struct fxh_conn **pp;

	for (pp = &fxh.conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	fxh.nconns--;
	free(c->body);
	free(c->pend);
	free(c);
}

static void fxh_detach(struct fxh_conn *c)
{
	if (c->stream && c->stream->conn == c) {
		/* The legacy transport's session lives as long as its
		 * stream. */
		if (c->stream->hs->legacy)
			c->stream->hs->dead = true;
		c->stream->conn = NULL;
		c->stream->started = false;
	}
	c->stream = NULL;
}

void fxh_conn_close(struct fxh_conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	fxh_detach(c);
	uv_close((uv_handle_t *)&c->tcp, fxh_on_conn_closed);
}

static void fxh_on_shutdown(uv_shutdown_t *req, int status)
{
	struct fxh_conn *c = req->data;

	free(req);
	fxh_conn_close(c); /* a no-op when fxh_stop closed it already */
}

/* Closes after what is written has gone out. */
void fxh_conn_shutdown(struct fxh_conn *c)
{
	uv_shutdown_t *req;

	if (c->closing || c->shutting)
		return;
	fxh_detach(c);
	req = malloc(sizeof(*req));
	if (!req)
		abort();
	req->data = c;
	c->shutting = true;
	if (uv_shutdown(req, (uv_stream_t *)&c->tcp, fxh_on_shutdown) < 0) {
		free(req);
		fxh_conn_close(c);
	}
}

/* Writes a, then b (may be NULL), then c (may be NULL) in one request. */
void fxh_write3(struct fxh_conn *c, const char *a, size_t alen, const char *b,
		size_t blen, const char *z, size_t zlen)
{
	struct fxh_wreq *w;
	uv_buf_t buf;

	if (c->closing || c->shutting)
		return;
	/* A client that stops reading must not make us hold its output
	 * without bound. */
	if (c->tcp.write_queue_size > FXH_MAX_WQ) {
		fxh_log("a client stopped reading: closing its connection");
		fxh_conn_close(c);
		return;
	}
	w = malloc(sizeof(*w) + alen + blen + zlen);
	if (!w)
		abort();
	memcpy(w->data, a, alen);
	if (blen)
		memcpy(w->data + alen, b, blen);
	if (zlen)
		memcpy(w->data + alen + blen, z, zlen);
	buf = uv_buf_init(w->data, (unsigned)(alen + blen + zlen));
	if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1, fxh_on_written) <
	    0) {
		free(w);
		fxh_conn_close(c);
	}
}

/* The answer on c is complete: the connection takes its next request. */
void fxh_conn_done(struct fxh_conn *c)
{
	fxh_detach(c);
	c->busy = false;
	if (!c->keep_alive)
		fxh_conn_shutdown(c);
	else if (c->plen > 0)
		c->resume = true; /* fed from the prepare step, not nested */
}

static const char *fxh_reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 202:
		return "Accepted";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 406:
		return "Not Acceptable";
	case 409:
		return "Conflict";
	case 413:
		return "Payload Too Large";
	case 415:
		return "Unsupported Media Type";
	default:
		return "Service Unavailable";
	}
}

/* A whole answer. extra: header lines, each ending in \r\n, or NULL. */
void fxh_respond(struct fxh_conn *c, int status, const char *extra,
		 const char *ctype, const char *body, size_t blen)
{
	char head[1024];
	int n;

	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 %d %s\r\n%s%s%s%sContent-Length: %zu\r\n"
		     "Connection: %s\r\n\r\n",
		     status, fxh_reason(status), ctype ? "Content-Type: " : "",
		     ctype ? ctype : "", ctype ? "\r\n" : "",
		     extra ? extra : "", blen,
		     c->keep_alive ? "keep-alive" : "close");
	fxh_write3(c, head, (size_t)n, body, blen, NULL, 0);
	fxh_conn_done(c);
}

/* An HTTP error with a JSON-RPC error body, as MCP servers answer. */
void fxh_respond_error(struct fxh_conn *c, int status, int code,
		       const char *message, const char *extra)
{
	json_t *j = json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0",
			      "id", "error", "code", code, "message", message);
	char *text = json_dumps(j, JSON_COMPACT);

	fxh_respond(c, status, extra, "application/json", text,
		    text ? strlen(text) : 0);
	free(text);
	json_decref(j);
}

/* ---- streams ---------------------------------------------------------- */

static void fxh_chunk(struct fxh_conn *c, const char *text, size_t len)
{
	char head[24];
	int n = snprintf(head, sizeof(head), "%zx\r\n", len);

	fxh_write3(c, head, (size_t)n, text, len, "\r\n", 2);
}

/* Answers st's connection with the SSE headers, and a priming event (an
 * id, the retry field, no data) when the session's revision has them or
 * when forced. */
void fxh_sse_start(struct fxh_stream *st, bool prime)
{
	char head[512], ev[128];
	struct fxh_conn *c = st->conn;
	int n;

	if (!c || st->started)
		return;
	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
		     "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n"
		     "%s%s%sConnection: keep-alive\r\n\r\n",
		     st->hs->legacy ? "" : "Mcp-Session-Id: ",
		     st->hs->legacy ? "" : st->hs->id,
		     st->hs->legacy ? "" : "\r\n");
	fxh_write3(c, head, (size_t)n, NULL, 0, NULL, 0);
	st->started = true;
	if (prime) {
		n = snprintf(ev, sizeof(ev),
			     "id: %u-0\nretry: %lld\ndata: \n\n", st->num,
			     (long long)fxh.o->retry_ms);
		fxh_chunk(c, ev, (size_t)n);
	}
}

/* Ends st's connection's answer properly; the stream itself lives on. */
void fxh_sse_end(struct fxh_stream *st)
{
	struct fxh_conn *c = st->conn;

	if (!c)
		return;
	fxh_write3(c, "0\r\n\r\n", 5, NULL, 0, NULL, 0);
	st->conn = NULL;
	st->started = false;
	c->stream = NULL;
	fxh_conn_done(c);
}

/* Cuts st's connection with no end of body: a dropped stream. */
void fxh_sse_cut(struct fxh_stream *st)
{
	struct fxh_conn *c = st->conn;

	if (!c)
		return;
	st->conn = NULL;
	st->started = false;
	c->stream = NULL;
	c->keep_alive = false;
	fxh_conn_shutdown(c);
}

static void fxh_write_event(struct fxh_stream *st, const struct fxh_event *e)
{
	fxh_chunk(st->conn, e->text, e->len);
	st->sent = e->seq;
}

/* Writes the kept events after seq on st's connection. */
void fxh_replay(struct fxh_stream *st, uint64_t after)
{
	for (size_t i = 0; i < st->nev && st->conn; i++)
		if (st->ev[i].seq > after)
			fxh_write_event(st, &st->ev[i]);
}

static void fxh_emit(struct fxh_stream *st, const char *json)
{
	struct fxh_event e;
	int n;

	if (st->hs->legacy) {
		char *text;

		n = asprintf(&text, "event: message\ndata: %s\n\n", json);
		if (n < 0)
			abort();
		if (st->conn)
			fxh_chunk(st->conn, text, (size_t)n);
		free(text);
		return;
	}
	e.seq = ++st->seq;
	n = asprintf(&e.text,
		     "id: %u-%" PRIu64 "\nevent: message\ndata: %s\n\n",
		     st->num, e.seq, json);
	if (n < 0)
		abort();
	e.len = (size_t)n;
	if (st->conn && st->started)
		fxh_write_event(st, &e);
	if (st->forgotten) {
		free(e.text);
		return;
	}
	/* Kept for replay; the oldest go first past the bound. */
	if (st->nev == FXH_MAX_EVENTS) {
		free(st->ev[0].text);
		memmove(st->ev, st->ev + 1, (st->nev - 1) * sizeof(*st->ev));
		st->nev--;
	}
	if (!st->ev) {
		st->ev = calloc(FXH_MAX_EVENTS, sizeof(*st->ev));
		if (!st->ev)
			abort();
	}
	st->ev[st->nev++] = e;
}

void fxh_stream_free_events(struct fxh_stream *st)
{
	for (size_t i = 0; i < st->nev; i++)
		free(st->ev[i].text);
	free(st->ev);
	st->ev = NULL;
	st->nev = 0;
}

struct fxh_stream *fxh_stream_open(struct fxh_session *hs, json_t *rid)
{
	for (struct fxh_stream *st = hs->streams; st && rid; st = st->next)
		if (!st->done && json_equal(st->rid, rid))
			return st;
	return NULL;
}

struct fxh_stream *fxh_stream_num(struct fxh_session *hs, unsigned num)
{
	if (num == 0)
		return &hs->get;
	for (struct fxh_stream *st = hs->streams; st; st = st->next)
		if (st->num == num)
			return st;
	return NULL;
}

void fxh_stream_free(struct fxh_stream *st)
{
	if (st->conn)
		fxh_sse_cut(st);
	json_decref(st->rid);
	fxh_stream_free_events(st);
	if (st != &st->hs->get)
		free(st);
}

/* Finished POST streams are kept a while for late resumption. */
static void fxh_retire(struct fxh_session *hs)
{
	size_t kept = 0;

	for (struct fxh_stream **pp = &hs->streams; *pp;) {
		struct fxh_stream *st = *pp;

		if (st->done && !st->conn && ++kept > FXH_KEEP_DONE) {
			*pp = st->next;
			fxh_stream_free(st);
			continue;
		}
		pp = &st->next;
	}
}

/* Server-initiated changes that concern no request in particular. */
static bool fxh_unsolicited(const char *method)
{
	return method &&
	       (strstr(method, "/list_changed") ||
		strcmp(method, "notifications/resources/updated") == 0);
}

/* The answer to the session's initialize says which revision it speaks. */
static void fxh_note_init(struct fxh_session *hs, json_t *msg)
{
	const char *v = json_string_value(json_object_get(
		json_object_get(msg, "result"), "protocolVersion"));

	if (!v)
		hs->failed = true;
	else
		hs->priming = strcmp(v, "2025-11-25") >= 0;
	json_decref(hs->init_id);
	hs->init_id = NULL;
}

void fxh_send(struct fxh_session *hs, json_t *cause, json_t *msg)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	json_t *id = json_object_get(msg, "id");
	bool response = !method && id &&
			(json_object_get(msg, "result") ||
			 json_object_get(msg, "error"));
	struct fxh_stream *st = NULL;
	char *text;

	if (!msg)
		return;
	if (hs->dead || fxh.hung) {
		json_decref(msg);
		return;
	}
	text = json_dumps(msg, JSON_COMPACT);
	if (!text)
		abort();
	if (response && hs->init_id && json_equal(id, hs->init_id))
		fxh_note_init(hs, msg);
	if (response)
		st = fxh_stream_open(hs, id);
	else if (!fxh_unsolicited(method))
		st = fxh_stream_open(hs, cause);
	if (!st || hs->legacy)
		st = &hs->get;
	if (response && st != &hs->get && st == fxh.dispatching &&
	    !st->started && st->conn && st->nev == 0) {
		/* Answered at once with nothing before: plain JSON. */
		char extra[80];
		struct fxh_conn *c = st->conn;

		snprintf(extra, sizeof(extra), "Mcp-Session-Id: %s\r\n",
			 hs->id);
		st->conn = NULL;
		c->stream = NULL;
		st->done = true;
		fxh_respond(c, 200, extra, "application/json", text,
			    strlen(text));
	} else {
		fxh_sse_start(st, st != &hs->get && hs->priming);
		fxh_emit(st, text);
		if (response && st != &hs->get) {
			st->done = true;
			fxh_sse_end(st);
		}
	}
	if (response)
		fxh_retire(hs);
	free(text);
	json_decref(msg);
}

void fxh_end_stream(struct fxh_session *hs, json_t *cause)
{
	struct fxh_stream *st = fxh_stream_open(hs, cause);

	if (!st || !st->conn || hs->legacy)
		return;
	fxh_sse_start(st, true);
	fxh_sse_end(st);
}

/* ---- sessions --------------------------------------------------------- */

/* Finds a live session and moves it to the front: the list is in order of
 * use, so that the one to forget when full is the least recently used. */
struct fxh_session *fxh_session_find(const char *id)
{
	struct fxh_session **pp, *hs;

	for (pp = &fxh.sessions; id && (hs = *pp); pp = &hs->next) {
		if (strcmp(hs->id, id) != 0)
			continue;
		if (hs->dead)
			return NULL;
		*pp = hs->next;
		hs->next = fxh.sessions;
		fxh.sessions = hs;
		return hs;
	}
	return NULL;
}

struct fxh_session *fxh_session_new(bool legacy)
{
	struct fxh_session *hs;
	unsigned char rnd[16];

	if (fxh.nsessions >= FXH_MAX_SESSIONS) {
		/* Clients rarely DELETE theirs: forget the least recently
		 * used, as servers do (its client gets 404). */
		struct fxh_session *old = fxh.sessions;

		while (old->next)
			old = old->next;
		fxh_log("forgetting session %s: %d sessions", old->id,
			FXH_MAX_SESSIONS);
		fxh_session_close(old);
	}
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return NULL;
	hs = calloc(1, sizeof(*hs));
	if (!hs)
		abort();
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(hs->id + 2 * i, 3, "%02x", rnd[i]);
	hs->legacy = legacy;
	hs->get.hs = hs;
	hs->user = fxh.ops->open(hs);
	if (!hs->user) {
		free(hs);
		return NULL;
	}
	hs->next = fxh.sessions;
	fxh.sessions = hs;
	fxh.nsessions++;
	return hs;
}

void fxh_session_close(struct fxh_session *hs)
{
	struct fxh_session **pp;

	for (pp = &fxh.sessions; *pp; pp = &(*pp)->next) {
		if (*pp == hs) {
			*pp = hs->next;
			break;
		}
	}
	fxh.nsessions--;
	fxh.ops->close(hs->user);
	while (hs->streams) {
		struct fxh_stream *st = hs->streams;

		hs->streams = st->next;
		fxh_stream_free(st);
	}
	if (hs->get.conn && !hs->legacy)
		fxh_sse_end(&hs->get);
	else if (hs->get.conn)
		fxh_sse_cut(&hs->get);
	fxh_stream_free(&hs->get);
	json_decref(hs->init_id);
	free(hs);
}

/* ---- the loop --------------------------------------------------------- */

static void fxh_on_timer(uv_timer_t *t)
{
	/* Nothing: the prepare step that follows runs the fixture's tick. */
}

static void fxh_on_beat(uv_timer_t *t)
{
	static const char beat[] = ": heartbeat\n\n";

	for (struct fxh_session *hs = fxh.sessions; hs; hs = hs->next) {
		if (hs->get.conn && hs->get.started)
			fxh_chunk(hs->get.conn, beat, sizeof(beat) - 1);
		for (struct fxh_stream *st = hs->streams; st; st = st->next)
			if (st->conn && st->started)
				fxh_chunk(st->conn, beat, sizeof(beat) - 1);
	}
}

static void fxh_close_handle(uv_handle_t *h)
{
	if (h->loop && !uv_is_closing(h))
		uv_close(h, NULL);
}

void fxh_stop(int rc)
{
	if (fxh.stopping)
		return;
	fxh.stopping = true;
	fxh.rc = rc;
	while (fxh.sessions)
		fxh_session_close(fxh.sessions);
	for (struct fxh_conn *c = fxh.conns; c; c = c->next)
		fxh_conn_close(c);
	fxh_close_handle((uv_handle_t *)&fxh.listener);
	fxh_close_handle((uv_handle_t *)&fxh.timer);
	fxh_close_handle((uv_handle_t *)&fxh.delay);
	fxh_close_handle((uv_handle_t *)&fxh.beat);
	fxh_close_handle((uv_handle_t *)&fxh.prepare);
	fxh_close_handle((uv_handle_t *)&fxh.wake);
	fxh_close_handle((uv_handle_t *)&fxh.sigterm);
	fxh_close_handle((uv_handle_t *)&fxh.sigint);
}

/* Before each wait: free what died, feed held input, run the fixture. */
static void fxh_on_prepare(uv_prepare_t *h)
{
	int ms;

	for (struct fxh_session *hs = fxh.sessions, *next; hs; hs = next) {
		next = hs->next;
		if (hs->dead)
			fxh_session_close(hs);
	}
	for (struct fxh_conn *c = fxh.conns; c; c = c->next) {
		if (c->resume && !c->busy && !c->closing && !c->shutting) {
			char *p = c->pend;
			size_t n = c->plen;

			c->resume = false;
			c->pend = NULL;
			c->plen = 0;
			fxh_conn_feed(c, p, n);
			free(p);
		}
	}
	if (fxh.stopping)
		return;
	ms = fxh.ops->tick();
	if (ms == FXH_STOP)
		fxh_stop(0);
	else if (ms < 0)
		uv_timer_stop(&fxh.timer);
	else
		uv_timer_start(&fxh.timer, fxh_on_timer, (uint64_t)ms, 0);
}

static void fxh_on_wake(uv_poll_t *p, int status, int events)
{
	char drain[64];

	while (read(fxh.o->wake_fd, drain, sizeof(drain)) > 0)
		;
}

static void fxh_on_signal(uv_signal_t *s, int signum)
{
	fxh_log("signal %d: stopping", signum);
	fxh_stop(0);
}

static void fxh_on_delay(uv_timer_t *t)
{
	fxh_listen();
}

int fxh_serve(const struct fxh_opts *o, const struct fxh_ops *ops)
{
	fxh.o = o;
	fxh.ops = ops;
	fxh.rc = 0;
	if (uv_loop_init(&fxh.loop) < 0)
		return 1;
	fxh_parser_settings();
	uv_tcp_init(&fxh.loop, &fxh.listener);
	uv_timer_init(&fxh.loop, &fxh.timer);
	uv_timer_init(&fxh.loop, &fxh.delay);
	uv_timer_init(&fxh.loop, &fxh.beat);
	uv_prepare_init(&fxh.loop, &fxh.prepare);
	uv_prepare_start(&fxh.prepare, fxh_on_prepare);
	if (o->wake_fd >= 0 &&
	    uv_poll_init(&fxh.loop, &fxh.wake, o->wake_fd) == 0)
		uv_poll_start(&fxh.wake, UV_READABLE, fxh_on_wake);
	if (o->own_signals) {
		uv_signal_init(&fxh.loop, &fxh.sigterm);
		uv_signal_start(&fxh.sigterm, fxh_on_signal, SIGTERM);
		uv_signal_init(&fxh.loop, &fxh.sigint);
		uv_signal_start(&fxh.sigint, fxh_on_signal, SIGINT);
	}
	if (o->heartbeat_ms > 0)
		uv_timer_start(&fxh.beat, fxh_on_beat,
			       (uint64_t)o->heartbeat_ms,
			       (uint64_t)o->heartbeat_ms);
	if (o->listen_delay_ms > 0) {
		fxh_log("slow start: listening in %lld ms",
			(long long)o->listen_delay_ms);
		uv_timer_start(&fxh.delay, fxh_on_delay,
			       (uint64_t)o->listen_delay_ms, 0);
	} else {
		fxh_listen();
	}
	uv_run(&fxh.loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&fxh.loop) != 0)
		fxh_log("loop closed with handles open");
	return fxh.rc;
}
