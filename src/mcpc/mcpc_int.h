/*
 * Inside the MCP client session: the session, and its streams (one per
 * HTTP request in flight or waiting to be made again). Shared by mcpc.c
 * (Streamable HTTP and the common parts) and legacy.c (HTTP+SSE).
 */
#ifndef MCPV_MCPC_MCPC_INT_H
#define MCPV_MCPC_MCPC_INT_H

#include <uv.h>

#include "http/httpc.h"
#include "http/sse.h"
#include "jsonrpc/msgq.h"
#include "mcpc/mcpc.h"
#include "util/buf.h"

#define MCPC_RETRY_MS 1000	     /* before a resumption, without retry */
#define MCPC_RETRY_MAX_MS 60000	     /* the most a server's retry may ask */
#define MCPC_GET_TRIES 5	     /* failed GET stream openings in a row */
#define MCPC_DELETE_MS 2000	     /* the DELETE on close waits this long */
#define MCPC_ANSWERED_LINGER_MS 1000 /* a stream after its answer */
#define MCPC_MAX_SESSION_ID 256	     /* Mcp-Session-Id, protocol version */
#define MCPC_MAX_CHALLENGE 8192	     /* a WWW-Authenticate passed on */
/* The most requests wait for the GET stream's answer after initialized: a
 * server that holds its headers until a first event must not stop them. */
#define MCPC_GATE_MS 1000
/* Bytes of unfinished messages held across streams before all but one
 * wait (see struct mcpc's partial). */
#define MCPC_MAX_PARTIAL (4 * 1024 * 1024)

enum mc_kind {
	MC_POST,	/* one message; the answer's stream when a request */
	MC_RESUME,	/* GET + Last-Event-ID for a POST's stream */
	MC_GET,		/* the standing GET stream (Streamable HTTP) */
	MC_LEGACY_GET,	/* the legacy transport's one SSE stream */
	MC_LEGACY_POST, /* one message to the legacy endpoint */
	MC_DELETE,	/* the session's end */
};

struct mc_stream {
	struct mc_stream *next, *prev;
	struct mcpc *m;
	enum mc_kind kind;
	struct httpc_req *req; /* NULL while waiting (due) or done */
	int64_t id;	       /* the request it carries the answer of */
	bool sse;	       /* the response is text/event-stream */
	bool json;	       /* the response is application/json */
	bool had_session;      /* the request carried our session id */
	bool parser_on;	       /* sse is initialised */
	bool answered;	       /* its answer was delivered */
	bool got_head;	       /* a response head came */
	bool dead;	       /* let go; freed when no callback runs */
	bool progress;	       /* an event or new id came on this response */
	bool waiting;	       /* counted in m->waiting: no head yet */
	bool held_back;	       /* paused while another message completes */
	size_t partial;	       /* bytes of an unfinished message held */
	size_t sent_len;       /* its body's bytes, while waiting */
	bool opens_get;	       /* notifications/initialized: GET after it */
	/* A message of 2026-07-28 (mcpc_send_modern): no session, no
	 * resumption, its own header lines (version, method, name; NULL
	 * when none), an error status that carries its answer. */
	bool modern;
	char *modern_hdr[3];
	char **extra_hdr; /* more lines (Mcp-Param-*), NULL-terminated */
	/* "Authorization: ..." from the provider as this request went (a
	 * secret, wiped when let go), NULL when none. */
	char *auth_line;
	int status;	   /* the response's status, 0 before its head */
	int tries;	   /* resumptions or reopenings failed in a row */
	uint64_t retry_ms; /* the server's retry, or MCPC_RETRY_MS */
	uint64_t due;	   /* clock ms when to (re)open; 0: not waiting */
	struct sse parser;
	struct buf body; /* a JSON answer as it comes */
	char *last_id;	 /* the last event id of this stream, or NULL */
};

/* Which transport the session speaks. */
enum mc_transport {
	MC_UNDECIDED,  /* auto mode, nothing sent yet */
	MC_DECIDING,   /* auto mode: the first POST finds out; others wait */
	MC_STREAMABLE, /* Streamable HTTP */
	MC_LEGACY,     /* HTTP+SSE */
};

/* The session's life: open, unusable after a fault, or let go. */
enum mc_life {
	MC_OPEN,
	MC_FAULTED, /* on_fault ran */
	MC_CLOSING, /* mcpc_close ran */
};

struct mcpc {
	struct httpc *http;
	uv_loop_t *loop;
	uv_timer_t timer; /* the earliest due stream */
	char *url;
	char **headers; /* the configured "Name: value" lines */
	size_t nheaders;
	const char *(*authorization)(void *arg); /* see mcpc_opts */
	void *auth_arg;
	char *unix_socket;
	enum mcpc_mode mode;
	enum mc_transport transport;
	enum mc_life life;
	bool ever_ok;	  /* a response came from the server */
	bool get_opened;  /* the standing GET stream was started */
	bool first_seen;  /* the first request was sent */
	bool refuses_503; /* its 503 proves a request unprocessed */
	bool paused;	  /* reading is stopped (mcpc_pause) */
	/* Messages sent with no response head yet, and their bytes (with
	 * those held, bounded by MCPC_MAX_WAITING); want_drain: a send was
	 * refused, on_drain is owed; drain_due: it goes from the timer. */
	size_t waiting;
	size_t waiting_bytes;
	bool want_drain;
	bool drain_due;
	/* Bytes of unfinished messages held across streams (JSON bodies,
	 * events still coming). Past MCPC_MAX_PARTIAL only the leader reads
	 * on; the others wait until its message is whole, so answers that
	 * come at once are held one at a time, as on a stdio pipe. */
	size_t partial;
	struct mc_stream *leader;
	/* From notifications/initialized until the GET stream is answered
	 * (or is none): other messages wait, so that a request the server
	 * sends on that stream at once, unrelated to any POST, is not sent
	 * before the stream exists and lost. */
	bool gated;
	uint64_t gate_due; /* when what waits goes anyway (clock ms) */
	uint64_t connect_timeout_ms;
	struct mcpc_cbs cbs;
	void *ctx;
	int busy; /* callbacks of ours running: frees wait */
	struct mc_stream *streams;
	struct mc_stream *dead;
	/* Messages waiting for the transport to be known (auto mode before
	 * the first answer, legacy before the endpoint event, the gate). */
	struct msgq held;
	int64_t init_id; /* the initialize request, 0: none seen */
	char *init_msg;	 /* auto mode: the initialize, to send again */
	size_t init_len;
	char *session_hdr; /* "Mcp-Session-Id: ..." */
	char *session_id;  /* its value (for describe) */
	char *version_hdr; /* "MCP-Protocol-Version: ..." */
	char *version;	   /* its value */
	/* The version the last modern message claimed (for describe when
	 * no initialize settled one). */
	char *modern_version;
	char *endpoint; /* legacy: where messages are POSTed */
	void (*done)(void *arg);
	void *done_arg;
};

/* stream.c */
struct mc_stream *mc_stream_new(struct mcpc *m, enum mc_kind kind, int64_t id);
void mc_stream_drop(struct mc_stream *s);
/* Wipes and frees the Authorization line s went with. */
void mc_stream_forget_auth(struct mc_stream *s);
/* s has its response head, or ended: it no longer counts as waiting. */
void mc_unwait(struct mc_stream *s);
/* What s holds of an unfinished message is now n bytes: past the bound,
 * the streams other than the leader wait. */
void mc_partial(struct mc_stream *s, size_t n);
/* Applies the pause s should have (the session's, or held back). */
void mc_apply_pause(struct mc_stream *s);
void mc_drop_all(struct mcpc *m);
/* Frees the streams let go, unless a callback of ours is running. */
void mc_reap(struct mcpc *m);
/* Reopens s after delay_ms (or, when its request is still on, ends it
 * then: an answered stream that lingers). */
void mc_due(struct mc_stream *s, uint64_t delay_ms);
/* Sets the timer for the earliest stream due. */
void mc_arm(struct mcpc *m);
void mc_held_free(struct mcpc *m);
/* The bounds have room again: on_drain when a send was refused. */
void mc_maybe_drain(struct mcpc *m);
bool mc_is_json(struct httpc_req *r);
/* A printable token that fits a header line (session id, version). */
bool mc_token_ok(const char *v, size_t n);
int mc_stream_start(struct mc_stream *s, const char *method, const char *url,
		    const char *body, size_t len);
/* mcpc.c: what a Streamable HTTP response means, by kind */
bool mc_post_head(struct mc_stream *s, int status);
bool mc_get_head(struct mc_stream *s, int status);
void mc_post_done(struct mc_stream *s, int status, int err, bool sent);
void mc_resume_done(struct mc_stream *s, int status, int err, bool sent);
void mc_get_done(struct mc_stream *s, int status, int err, bool sent);
void mc_fault(struct mcpc *m, enum mcpc_fault f, int status, const char *text,
	      const char *resource_metadata);
/* A request that got no response (err: the HTTP client's): a fault when
 * the server was never reached, else the request is lost. */
void mc_no_response(struct mc_stream *s, int err, bool sent);
/* Why a request got no answer (err: the HTTP client's -errno, 0 when it
 * gave none), naming the server's address ("localhost:3001") and the
 * cause. Caller frees. */
char *mc_unreachable_text(const struct mcpc *m, int err);
/* The same, with the request whose POST the server refused unprocessed
 * (a 404 for the session), 0 when none. */
void mc_fault_refused(struct mcpc *m, enum mcpc_fault f, int status,
		      const char *text, int64_t refused_id);
/* A status that ends the session (401, 403, 404 with our session id):
 * true when it did. */
bool mc_status_fault(struct mc_stream *s, int status);
/* Whether the response head says text/event-stream. */
bool mc_is_sse(struct httpc_req *r);
void mc_sse_begin(struct mc_stream *s);
/* One message from the server on stream s: delivered, with s's request
 * as related. false when it is not JSON-RPC (a fault was reported). */
/* Whether msg is the answer (result or error) to request id. */
bool mc_answers(const char *msg, size_t len, int64_t id);
bool mc_message(struct mcpc *m, struct mc_stream *s, const char *msg,
		size_t len);
void mc_lost(struct mcpc *m, int64_t id, enum outbox_fact f);
/* Sends what was held, in order. */
void mc_flush_held(struct mcpc *m);
void mc_ungate(struct mcpc *m);
/* The DELETE on close ended, or there is none: let everything go. */
void mc_close_finish(struct mcpc *m);

/* modern.c */
/* A modern POST's response head and end (mc_post_head, mc_post_done
 * send them here). */
bool mc_modern_head(struct mc_stream *s, int status);
void mc_modern_done(struct mc_stream *s, int status, int err, bool sent);

/* legacy.c */
/* Opens the legacy stream (auto mode: the initialize is held first). */
int mc_legacy_open(struct mcpc *m);
int mc_legacy_post(struct mcpc *m, const char *msg, size_t len, int64_t id);
void mc_legacy_event(struct mc_stream *s, const char *event, const char *data,
		     size_t len);
bool mc_legacy_head(struct mc_stream *s, int status);
void mc_legacy_get_done(struct mc_stream *s, int err);
void mc_legacy_post_done(struct mc_stream *s, int status, int err, bool sent);
/* Resolves ref against base: a new string, or NULL when it is on another
 * origin or is no URL we can use. */
char *mc_url_resolve(const char *base, const char *ref);

#endif
