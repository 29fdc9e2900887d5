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

/* A stream's event id names the stream too ("S-N": stream S, event N of
 * the session), so a client that comes back after its last event left the
 * ring still finds its stream, and is told what it can no longer get. */
static void session_event_id(char *id, uint64_t stream, uint64_t n)
{
	/* Two 20-digit numbers and a dash fit EXCHANGE_EVENT_ID_MAX. */
	size_t k = buf_fmt_u64(id, stream);
	id[k++] = '-';
	buf_fmt_u64(id + k, n);
}

static const char *session_record_cb(void *rctx, uint64_t stream, json_t *msg,
				     char *text, size_t *len, char *id,
				     uint64_t *event, char **spill)
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
		/* Delivered live, but the ring keeps only its number, so the
		 * bound holds without exception; an answer's request knows
		 * the number, and a resume tells the client it was lost.
		 * The caller frees the text once delivered. */
		keep = xstrdup("");
		keep_len = 0;
		*spill = data;
	}
	uint64_t n;
	const char *kept = session_ring_push(s, stream, keep, keep_len, &n);
	if (*spill)
		kept = data;
	struct stream_rec *r = session_stream_by_no(s, stream);
	if (r)
		r->last_id = n;
	session_event_id(id, stream, n);
	*event = n;
	return kept;
}

static void session_stream_free(struct session *s, struct stream_rec *r)
{
	s->streams_cost -= r->cost;
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

/* Forgets streams nobody can resume any more. One a connection holds or
 * that is parked stays. One that answers requests stays after it ended,
 * newest first, within SESSION_MAX_STREAMS and SESSION_REQ_BYTES of
 * request records: that record is what tells a client resuming late that
 * an answer is lost, so it outlives the events in the ring. One without
 * requests (a standing stream) stays while it has events in the ring. */
void session_streams_prune(struct session *s)
{
	unsigned kept = 0;
	size_t bytes = 0;
	struct stream_rec **pp = &s->streams;
	while (*pp) {
		struct stream_rec *r = *pp;
		bool drop = false;
		if (r->parked_ms == 0 && !exchange_attached(r->ex))
			drop = kept >= SESSION_MAX_STREAMS ||
			       (r->cost ? bytes + r->cost > SESSION_REQ_BYTES
					: !session_stream_in_ring(s, r));
		if (drop) {
			*pp = r->next;
			s->nstreams--;
			session_stream_free(s, r);
		} else {
			kept++;
			bytes += r->cost;
			pp = &r->next;
		}
	}
}

uint64_t session_stream_open(struct session *s, struct exchange *ex)
{
	/* Pruning walks every record: it runs when they reach twice a
	 * bound and brings them back to it (the sweep prunes too). */
	if (s->nstreams >= 2 * SESSION_MAX_STREAMS ||
	    s->streams_cost > 2 * SESSION_REQ_BYTES)
		session_streams_prune(s);
	struct stream_rec *r = xcalloc(1, sizeof *r);
	r->no = ++s->next_stream;
	r->ex = ex;
	r->cost = exchange_footprint(ex);
	s->streams_cost += r->cost;
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
	session_event_id(id, exchange_stream(ex), n);
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

/* "S-N" (see session_event_id). */
static bool session_parse_event_id(const char *text, uint64_t *stream,
				   uint64_t *n)
{
	char *end;
	if (*text < '0' || *text > '9')
		return false;
	unsigned long long a = strtoull(text, &end, 10);
	if (*end != '-' || end[1] < '0' || end[1] > '9')
		return false;
	unsigned long long b = strtoull(end + 1, &end, 10);
	if (*end != '\0')
		return false;
	*stream = a;
	*n = b;
	return true;
}

/* Whether event n can still be replayed: in the ring (whose ids are
 * consecutive) and kept whole. */
static bool session_ring_replays(struct session *s, uint64_t n)
{
	if (s->ring_count == 0 || n < s->ring[s->ring_head].id)
		return false;
	uint64_t k = n - s->ring[s->ring_head].id;
	if (k >= s->ring_count)
		return false;
	return s->ring[(s->ring_head + k) % SESSION_RING_EVENTS].len > 0;
}

/* The answer a client gets in place of one it can no longer have: its
 * answer was dropped (lost), or it was stopped before it had one. */
static char *session_stand_in(const struct exchange_req *q, bool lost)
{
	char *m = xasprintf(
		"%s; %s.",
		lost ? "The answer was dropped because the client did not "
		       "read it in time, and it is no longer kept for replay"
		     : "The request was stopped before it was answered, "
		       "because its stream was closed and not resumed in "
		       "time",
		q->safe ? "the request changes nothing and can be sent again"
			: "it may or may not have taken effect, so check "
			  "before retrying");
	json_t *err = jr_error(q->id, JR_SERVER_UNAVAILABLE, m,
			       json_pack("{s:b,s:b}", "answerDropped", lost,
					 "retrySafe", q->safe));
	free(m);
	char *text = json_dumps(err, JSON_COMPACT);
	json_decref(err);
	return text;
}

struct replay_ev {
	uint64_t n; /* UINT64_MAX: no event of its own, goes last */
	const char *data;
	size_t len;
	char *own;
};

static int replay_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct replay_ev *)a)->n;
	uint64_t y = ((const struct replay_ev *)b)->n;
	return x < y ? -1 : x > y;
}

/* What a client that saw the stream up to event last gets: the stream's
 * events after it that the ring still has, and for each request whose
 * answer came after it but is not among them, an error in its place; for
 * a stream that ended, the same for each request never answered. */
static json_t *session_replay(struct session *s, struct stream_rec *r,
			      uint64_t last)
{
	size_t nq;
	const struct exchange_req *qs = exchange_reqs(r->ex, &nq);
	bool ended = exchange_finished(r->ex);
	struct replay_ev *evs = xcalloc(s->ring_count + nq + 1, sizeof *evs);
	size_t k = 0;
	for (size_t i = 0; i < s->ring_count; i++) {
		struct ring_ev *ev =
			&s->ring[(s->ring_head + i) % SESSION_RING_EVENTS];
		if (ev->stream == r->no && ev->id > last && ev->len > 0)
			evs[k++] = (struct replay_ev){ev->id, ev->data, ev->len,
						      NULL};
	}
	for (size_t i = 0; i < nq; i++) {
		const struct exchange_req *q = &qs[i];
		bool lost = q->answered && q->event > last &&
			    !session_ring_replays(s, q->event);
		if (!lost && (q->answered || !ended))
			continue;
		char *t = session_stand_in(q, lost);
		evs[k++] = (struct replay_ev){lost ? q->event : UINT64_MAX, t,
					      strlen(t), t};
	}
	qsort(evs, k, sizeof *evs, replay_cmp);
	json_t *out = json_array();
	for (size_t i = 0; i < k; i++) {
		json_t *ev =
			json_pack("{s:s%}", "data", evs[i].data, evs[i].len);
		if (evs[i].n != UINT64_MAX) {
			char id[EXCHANGE_EVENT_ID_MAX];
			session_event_id(id, r->no, evs[i].n);
			json_object_set_new(ev, "id", json_string(id));
		}
		json_array_append_new(out, ev);
		free(evs[i].own);
	}
	free(evs);
	return out;
}

int session_stream_resume(struct session *s, const char *last_event_id,
			  struct exchange **ex, json_t **events)
{
	uint64_t stream, last;
	if (!session_parse_event_id(last_event_id, &stream, &last))
		return -ENOENT;
	struct stream_rec *r = session_stream_by_no(s, stream);
	if (r == NULL || last > r->last_id)
		return -ENOENT;
	/* A stream another connection still holds is not taken from it:
	 * two connections would share one exchange, and the old one's
	 * close would end the new one's calls. */
	if (exchange_attached(r->ex))
		return -EBUSY;
	*events = session_replay(s, r, last);
	*ex = NULL;
	r->parked_ms = 0;
	if (!exchange_finished(r->ex)) {
		exchange_ref(r->ex);
		*ex = r->ex;
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
		session_stream_free(s, r);
	}
	while (s->ring_count)
		session_ring_drop_oldest(s);
	free(s->ring);
	s->ring = NULL;
}
