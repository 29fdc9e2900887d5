/*
 * Inside the endpoint room: the listener and connection structures its
 * files share, and their internal functions. Not for use outside
 * src/endpoint/.
 */
#ifndef MCPV_ENDPOINT_INT_H
#define MCPV_ENDPOINT_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "endpoint/endpoint.h"
#include "http/httpparse.h"
#include "session/exchange.h"
#include "session/session.h"
#include "util/buf.h"

struct session;
struct modern;
struct modern_req;

/* A read buffer grown past this by a large body is let go afterwards. */
#define EP_READ_KEEP (64 * 1024)
#define EP_MAX_BATCH 100
#define EP_SSE_RETRY_MS 1000
/* An answer that comes first and alone goes as a plain JSON body up to
 * this size; a larger one goes as an SSE stream, which a client cut off
 * half-way can resume (Last-Event-ID from its priming event). */
#define EP_JSON_ANSWER_MAX (64 * 1024)
/* Output a connection may hold (its queued writes plus what waits for the
 * end of the loop turn). Over it, the client is not reading: an SSE
 * answer is dropped (parked; the client resumes with Last-Event-ID),
 * anything else is closed. One message larger than the cap still goes
 * out when nothing else is queued. */
#define EP_OUT_CAP ((size_t)8 * 1024 * 1024)
/* Pipelined requests wait while more output than this is queued, so a
 * client that sends and never reads stalls instead of growing memory. */
#define EP_OUT_LOW ((size_t)256 * 1024)
/* How long a connection holding output of a paused server (util/flow.h)
 * may make no write progress before its stream is set aside. */
#define EP_PAUSE_STALL_MS 5000
/* How often deadlines are checked (the clock decides, this only wakes). */
#define EP_SWEEP_MS 500
/* An open SSE answer that wrote nothing for this long gets a comment (a
 * heartbeat, SPEC Relay): a relay sees the stream is alive, and a peer
 * that went away fails the write, so its connection is closed even while
 * nothing is read from it. */
#define EP_HEARTBEAT_MS 1000
/* Pipelined requests one connection gets per loop turn; the rest go on
 * in the next turn, so other connections interleave. */
#define EP_TURN_REQUESTS 4

struct endpoint {
	uv_loop_t *loop;
	struct hub *hub;
	uv_tcp_t tcp_slots[2]; /* the second for a fallback port */
	uv_tcp_t *tcp;
	uv_pipe_t pipe;
	bool have_tcp, have_pipe;
	int port;
	char *socket_path;
	size_t max_body;
	uint64_t sse_close_ms;
	uint64_t header_timeout_ms, idle_timeout_ms;
	/* Input one connection may hold: one whole request (head and
	 * body); past it, reading stops until the request is answered. */
	size_t in_cap;
	struct modern *modern; /* the 2026-07-28 side */
	struct conn *conns;
	size_t nconns;	    /* all connections */
	size_t nconns_unix; /* of which on the Unix socket (own budget) */
	uv_timer_t sweep;   /* header, idle and stalled-writer deadlines */
	unsigned open_handles;
	bool freeing;
	bool draining;
	int (*control)(void *arg, const char *action, const char *server,
		       bool force, char **msg);
	void *control_arg;
	/* Output is gathered per connection and written once per loop turn,
	 * after every callback of that turn has run, or before the loop
	 * waits when a timer made it. */
	uv_check_t flush;
	uv_prepare_t flush_early;
	struct conn *dirty;
	/* Connections whose turn's share ran out, resumed next turn. */
	uv_idle_t again;
	struct conn *deferred;
	char rbuf[64 * 1024]; /* every read lands here first */
};

/* Who is at the other end of a TCP connection (auth.c), learnt once. */
enum ep_peer { EP_PEER_UNKNOWN, EP_PEER_OWN, EP_PEER_OTHER };

enum conn_state {
	CONN_READING, /* waiting for (the rest of) a request */
	CONN_BUSY,    /* a request is being answered */
	CONN_LINGER,  /* answered an early error: reading what the client
			 still sends, so closing does not reset the answer */
	CONN_CLOSING,
};

/* How long and how much an early error waits for the client's rest. */
#define EP_LINGER_MS 2000
#define EP_LINGER_BYTES (16 * 1024 * 1024)

struct conn {
	struct conn *next, **pprev;
	struct endpoint *ep;
	union {
		uv_handle_t h;
		uv_stream_t s;
		uv_tcp_t tcp;
		uv_pipe_t pipe;
	} u;
	bool is_unix;
	unsigned char peer; /* enum ep_peer */
	enum conn_state state;
	struct httpparse *hp;
	struct buf in;
	bool keep_alive;
	bool sent_continue;
	bool linger;	 /* close by lingering (an early error) */
	size_t lingered; /* bytes thrown away while lingering */
	uv_shutdown_t shutdown;

	/* The answer under way. */
	struct hub_init *init; /* an initialize waiting on its space */
	struct hub_metrics_req *metrics; /* /metrics waiting on /proc */
	bool metrics_json;		 /* ... answered as JSON */
	json_t *init_id;
	struct exchange *ex;
	struct modern_req *mreq; /* a 2026-07-28 request under way */
	/* Session of ex ("": none), for cancel on disconnect; kept here,
	 * not allocated, as every call names one. */
	char session_id[SESSION_ID_LEN + 1];
	bool sse; /* answering as an SSE stream */
	bool sse_started;
	bool standing; /* the session's GET stream */
	bool batch;
	json_t *collected; /* JSON mode: responses so far */
	bool close_after;
	uv_timer_t early_timer; /* closes a long SSE answer on purpose */
	struct buf out;		/* written at the end of the loop turn */
	/* Backpressure (util/flow.h): flow_out bytes of out are the output
	 * of the server behind flow, counted there until the socket takes
	 * them. out holds one server's counted bytes at a time: another
	 * server's output first sends them on their way (a write request
	 * then carries its flow and count until its callback). */
	struct flow *flow;
	size_t flow_out;
	struct conn *dirty_next;
	bool dirty;
	/* The session's replay stream of ex opens (numbered, primed) only
	 * when the answer streams (ep_stream_open): one that goes as a
	 * plain JSON body cannot be resumed, so nothing of it is kept. */
	bool open_pending;
	bool prime_pending; /* the SSE priming event is still to be sent */
	char prime_id[EXCHANGE_EVENT_ID_MAX];
	/* The first message of a POST's answer, held until the end of the
	 * loop turn decides the form: the answer alone is a plain JSON body
	 * with a length; anything else starts the SSE stream, this first. */
	bool held;
	struct buf held_data;
	char held_id[EXCHANGE_EVENT_ID_MAX]; /* "": it had no event id */
	int handles; /* open libuv handles of this conn */

	/* Limits. */
	bool reading;	 /* uv_read_start is in effect */
	bool processing; /* inside ep_conn_process (no recursion) */
	bool idle;	 /* between requests, nothing of the next one yet */
	bool over;	 /* output went over EP_OUT_CAP: dropped at flush */
	uint64_t deadline_ms; /* header or idle deadline; 0: none */
	uint64_t write_ms;    /* last progress of queued writes */
	uint64_t sse_ms;      /* last bytes of the SSE answer (heartbeats) */
	uint64_t event_ms;    /* last SSE event (not a heartbeat) */
	uint64_t paused_ms;   /* reading stopped by the input cap; 0: not */
	unsigned served;      /* pipelined requests in a row, this turn */
	bool deferred;	      /* on ep->deferred */
	struct conn *deferred_next;
	const char *lent; /* unparsed bytes in the endpoint's read buffer,
			     during a read callback only */
	size_t lent_len;
};

/* endpoint.c: connections, writing and simple answers */
/* output.c, for the connection's life: the counted bytes of its output
 * are gone (written, failed or dropped); what waits to be written; write
 * what waits now (<0: the connection failed). */
void ep_flow_settle(struct conn *c);
size_t ep_conn_pending(const struct conn *c);
int ep_conn_flush(struct conn *c);
void ep_write(struct conn *c, const char *data, size_t len);
void ep_write_buf(struct conn *c, struct buf *b);
/* Small output formatted straight into c's output buffer (an answer's
 * head): ep_out_begin gives the buffer (NULL when c takes no output), and
 * ep_out_end(c, where it began) counts what was added as ep_write does. */
struct buf *ep_out_begin(struct conn *c);
void ep_out_end(struct conn *c, size_t from);
/* c has output for the end of this loop turn (or a held message). */
void ep_conn_mark_dirty(struct conn *c);
/* Closes at once (what the socket does not take now is dropped).
 * Idempotent: any path may call it, once or more. */
void ep_conn_close(struct conn *c);
/* Closes a connection whose client stopped reading: a POST's SSE stream is
 * parked first, so its calls go on and the client can resume it. */
void ep_conn_overflow(struct conn *c);
/* Closes connections past their deadline (header, idle, stalled writes)
 * at time now; the sweep timer calls it with clock_now_ms(). */
void ep_sweep(struct endpoint *ep, uint64_t now);

/* deadlines.c: the sweep (deadlines, heartbeats) and eviction at the cap */
void ep_sweep_cb(uv_timer_t *t);
/* Closes the connection idle the longest (else the oldest still sending
 * its request) on that listener; false if there is none. */
bool ep_evict_idle(struct endpoint *ep, bool is_unix);
/* The connection's share of this loop turn ran out: the rest of its
 * pipelined requests go on in the next turn. */
void ep_conn_defer(struct conn *c);
/* endpoint.c: pipelined requests go on once output has drained. */
void ep_conn_resume(struct conn *c);
/* The current request is answered: read the next one. */
void ep_conn_request_done(struct conn *c);
void ep_respond(struct conn *c, int status, const char *ctype, const char *body,
		size_t len, const char *extra);
void ep_respond_json(struct conn *c, int status, json_t *body,
		     const char *extra);
/* An HTTP-level error with a JSON-RPC error body. */
void ep_fail(struct conn *c, int status, int code, const char *message);
/* "Mcp-Session-Id: ID\r\n" when c answers in a session, else "", into
 * out (no allocation: it goes with every call's answer); or appended. */
#define EP_SESSION_HEADER_MAX (sizeof "Mcp-Session-Id: \r\n" + SESSION_ID_LEN)
void ep_session_header(const struct conn *c, char out[EP_SESSION_HEADER_MAX]);
void ep_put_session_header(const struct conn *c, struct buf *b);
/* Opens the session's replay stream of a POST's answer when it is still
 * to open (mcp.c); ep_sse_start calls it. */
void ep_stream_open(struct conn *c);
void ep_sse_start(struct conn *c);
/* Holds the first message of a POST's answer (ep_sse_start sends it as
 * the stream's first event if the stream starts). */
void ep_hold(struct conn *c, const char *event_id, const char *data,
	     size_t len);
/* The held message is the whole answer: sent as a JSON body. False when
 * there is none, or the stream has started. */
bool ep_answer_held(struct conn *c);
void ep_sse_write(struct conn *c, const char *id, const char *data, size_t len,
		  long retry_ms);

/* modern.c: the 2026-07-28 side of /mcp */
/* A POST body (parsed) whose message is modern is answered: true. */
bool ep_modern_post(struct conn *c, const struct http_request *req,
		    json_t *body);
/* A plain 2026-07-28 tools/call (the common case), checked and forwarded
 * as text before any parse: true when taken (answered or under way). */
bool ep_modern_text_call(struct conn *c, const struct http_request *req);
/* A GET or DELETE naming a 2026-07-28 version: 405, true. */
bool ep_modern_other(struct conn *c, const struct http_request *req);

/* mcp.c: Streamable HTTP and the path routing of a request */
void ep_handle_request(struct conn *c);

/* auth.c: whether the request may go on (its peer, its key, its space);
 * when not, it has been answered. */
bool ep_admit(struct conn *c, const struct http_request *req);

/* control.c: status and control actions */
void ep_handle_status(struct conn *c, const struct http_request *req);
void ep_handle_control(struct conn *c, const struct http_request *req,
		       const char *path);
/* GET /metrics: the figures as Prometheus text (?format=json: as JSON,
 * for `mcpvisor top`), on the Unix socket only. */
void ep_handle_metrics(struct conn *c, const struct http_request *req);

#endif
