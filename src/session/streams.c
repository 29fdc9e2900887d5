/*
 * A session's numbered SSE streams: the replay ring of recent events, the
 * parking of streams closed on purpose, resumption after Last-Event-ID,
 * and the standing GET stream.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/jsonrpc.h"
#include "pool/pool.h"
#include "router/router.h"
#include "session/hub.h"
#include "session/session_int.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/jsonscan.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* ---- numbered streams and the replay ring ---- */

static void session_ring_drop_oldest(struct session *s)
{
	struct ring_ev *ev = &s->ring[s->ring_head];
	s->ring_bytes -= ev->len;
	free(ev->data);
	ev->data = NULL;
	s->ring_head = (s->ring_head + 1) % SESSION_RING_EVENTS;
	s->ring_count--;
}

static const char *session_ring_push(struct session *s, uint64_t stream,
				     char *data, size_t len, uint64_t *id)
{
	while (s->ring_count > 0 && (s->ring_count == SESSION_RING_EVENTS ||
				     s->ring_bytes + len > SESSION_RING_BYTES))
		session_ring_drop_oldest(s);
	if (s->ring == NULL)
		s->ring = xcalloc(SESSION_RING_EVENTS, sizeof *s->ring);
	size_t slot = (s->ring_head + s->ring_count) % SESSION_RING_EVENTS;
	struct ring_ev *ev = &s->ring[slot];
	ev->id = s->next_event_id++;
	ev->stream = stream;
	ev->data = data;
	ev->len = len;
	s->ring_count++;
	s->ring_bytes += len;
	*id = ev->id;
	return data;
}

/* The stream's record; the newest streams come first, and the one being
 * written is nearly always the newest. */
static struct stream_rec *session_stream_by_no(struct session *s, uint64_t no)
{
	for (struct stream_rec *r = s->streams; r; r = r->next)
		if (r->no == no)
			return r;
	return NULL;
}

/* What the ring keeps of an event over its byte bound: for a response,
 * an error with the same id, so a client that resumes learns the answer
 * was lost instead of waiting for it; else nothing (an empty event, not
 * replayed). The ring's bound holds without exception. */
static char *session_ring_stub(json_t *msg, const char *text, size_t len,
			       size_t *stub_len)
{
	static const char *const keys[] = {"id", "method"};
	struct jsonscan_span sp[2] = {{0, 0}, {0, 0}};
	char *id = NULL;
	if (msg) {
		json_t *jid = json_object_get(msg, "id");
		if (jid && json_object_get(msg, "method") == NULL)
			id = json_dumps(jid, JSON_COMPACT | JSON_ENCODE_ANY);
	} else if (jsonscan_members(text, len, keys, 2, sp) >= 0 &&
		   sp[0].len > 0 && sp[1].len == 0) {
		id = xstrndup(text + sp[0].off, sp[0].len);
	}
	if (id == NULL) {
		*stub_len = 0;
		return xstrdup("");
	}
	char *stub = xasprintf(
		"{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,"
		"\"message\":\"The answer (%zu bytes) was larger than the "
		"replay buffer keeps and was lost with the connection; "
		"send the request again\"}}",
		id, JR_INTERNAL_ERROR, len);
	free(id);
	*stub_len = strlen(stub);
	return stub;
}

static const char *session_record_cb(void *rctx, uint64_t stream, json_t *msg,
				     char *text, size_t *len, char *id,
				     char **spill)
{
	struct session *s = rctx;
	char *data = text;
	if (data == NULL) {
		data = json_dumps(msg, JSON_COMPACT);
		*len = strlen(data);
	}
	char *keep = data;
	size_t keep_len = *len;
	if (keep_len > SESSION_RING_BYTES) {
		/* Delivered live, but kept only as its stub; the caller
		 * frees the text once delivered. */
		keep = session_ring_stub(msg, data, *len, &keep_len);
		*spill = data;
	}
	uint64_t n;
	const char *kept = session_ring_push(s, stream, keep, keep_len, &n);
	if (*spill)
		kept = data;
	struct stream_rec *r = session_stream_by_no(s, stream);
	if (r)
		r->last_id = n;
	buf_fmt_u64(id, n);
	return kept;
}

static void session_stream_free(struct stream_rec *r)
{
	exchange_clear_recorder(r->ex);
	exchange_unref(r->ex);
	free(r);
}

/* Event ids grow, so a stream has events left in the ring exactly when
 * its newest one is not older than the ring's oldest. */
static bool session_stream_in_ring(struct session *s, struct stream_rec *r)
{
	return s->ring_count > 0 && r->last_id >= s->ring[s->ring_head].id;
}

/* Forgets streams nobody can resume any more: ended and out of the
 * ring, or too many. */
void session_streams_prune(struct session *s)
{
	struct stream_rec **pp = &s->streams;
	while (*pp) {
		struct stream_rec *r = *pp;
		bool over = s->nstreams > SESSION_MAX_STREAMS &&
			    exchange_finished(r->ex);
		bool gone = (exchange_finished(r->ex) ||
			     !exchange_attached(r->ex)) &&
			    r->parked_ms == 0 && !session_stream_in_ring(s, r);
		if (over || gone) {
			*pp = r->next;
			s->nstreams--;
			session_stream_free(r);
		} else {
			pp = &r->next;
		}
	}
}

uint64_t session_stream_open(struct session *s, struct exchange *ex)
{
	/* Pruning walks every record: it runs when they reach twice the
	 * bound and brings them back to it (the sweep prunes too). */
	if (s->nstreams >= 2 * SESSION_MAX_STREAMS)
		session_streams_prune(s);
	struct stream_rec *r = xcalloc(1, sizeof *r);
	r->no = ++s->next_stream;
	r->ex = ex;
	exchange_ref(ex);
	r->next = s->streams;
	s->streams = r;
	s->nstreams++;
	exchange_set_recorder(ex, session_record_cb, s, r->no);
	return r->no;
}

void session_stream_prime(struct session *s, struct exchange *ex, char *id)
{
	uint64_t n;
	session_ring_push(s, exchange_stream(ex), xstrdup(""), 0, &n);
	struct stream_rec *r = session_stream_by_no(s, exchange_stream(ex));
	if (r)
		r->last_id = n;
	buf_fmt_u64(id, n);
}

static struct stream_rec *session_stream_find(struct session *s,
					      struct exchange *ex)
{
	for (struct stream_rec *r = s->streams; r; r = r->next)
		if (r->ex == ex)
			return r;
	return NULL;
}

void session_stream_park(struct session *s, struct exchange *ex)
{
	struct stream_rec *r = session_stream_find(s, ex);
	if (r && !exchange_finished(ex))
		r->parked_ms = clock_now_ms();
}

int session_stream_resume(struct session *s, const char *last_event_id,
			  struct exchange **ex, json_t **events)
{
	char *end;
	unsigned long long last = strtoull(last_event_id, &end, 10);
	if (*last_event_id == '\0' || *end != '\0')
		return -ENOENT;
	uint64_t stream = 0;
	for (size_t i = 0; i < s->ring_count; i++) {
		struct ring_ev *ev =
			&s->ring[(s->ring_head + i) % SESSION_RING_EVENTS];
		if (ev->id == last) {
			stream = ev->stream;
			break;
		}
	}
	if (stream == 0)
		return -ENOENT;
	/* A stream another connection still holds is not taken from it:
	 * two connections would share one exchange, and the old one's
	 * close would end the new one's calls. */
	for (struct stream_rec *r = s->streams; r; r = r->next)
		if (r->no == stream && exchange_attached(r->ex))
			return -EBUSY;
	json_t *out = json_array();
	for (size_t i = 0; i < s->ring_count; i++) {
		struct ring_ev *ev =
			&s->ring[(s->ring_head + i) % SESSION_RING_EVENTS];
		if (ev->stream != stream || ev->id <= last || ev->len == 0)
			continue;
		char id[24];
		snprintf(id, sizeof id, "%llu", (unsigned long long)ev->id);
		json_array_append_new(out,
				      json_pack("{s:s,s:s%}", "id", id, "data",
						ev->data, ev->len));
	}
	*events = out;
	*ex = NULL;
	for (struct stream_rec *r = s->streams; r; r = r->next) {
		if (r->no != stream)
			continue;
		r->parked_ms = 0;
		if (!exchange_finished(r->ex)) {
			exchange_ref(r->ex);
			*ex = r->ex;
		}
		break;
	}
	return 0;
}

/* ---- the standing stream and server messages ---- */

void session_set_stream(struct session *s, struct exchange *ex)
{
	if (s->stream) {
		/* The old stream's client is told it ended (it may come
		 * back), rather than left waiting on a silent stream. */
		struct exchange *old = s->stream;
		s->stream = NULL;
		exchange_end(old);
		exchange_unref(old);
	}
	s->stream = ex;
	if (ex)
		exchange_ref(ex);
}

void session_drop_stream(struct session *s, struct exchange *ex)
{
	if (s->stream == ex)
		session_set_stream(s, NULL);
}

bool session_has_stream(const struct session *s)
{
	return s->stream && exchange_attached(s->stream);
}

void session_notify(struct session *s, json_t *msg)
{
	if (s->stream && exchange_attached(s->stream))
		exchange_send(s->stream, msg);
}

void session_sweep(struct session *s, uint64_t now_ms)
{
	for (struct stream_rec *r = s->streams; r; r = r->next) {
		if (r->parked_ms == 0 ||
		    now_ms - r->parked_ms < SESSION_PARK_MS)
			continue;
		r->parked_ms = 0;
		session_exchange_gone(s, r->ex);
	}
	session_streams_prune(s);
}

void session_streams_destroy(struct session *s)
{
	while (s->streams) {
		struct stream_rec *r = s->streams;
		s->streams = r->next;
		session_stream_free(r);
	}
	while (s->ring_count)
		session_ring_drop_oldest(s);
	free(s->ring);
	s->ring = NULL;
}
