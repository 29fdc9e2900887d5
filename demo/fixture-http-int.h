/*
 * fixture-http's inside, shared by fixture-http.c (streams, sessions, the
 * loop) and fixture-http-req.c (connections' requests, routes, flags).
 */
#ifndef FIXTURE_HTTP_INT_H
#define FIXTURE_HTTP_INT_H

#include <http_parser.h>
#include <uv.h>

#include "fixture-http.h"

#define FXH_MAX_BODY (4u << 20) /* one JSON-RPC message */
#define FXH_MAX_CONNS 1024
#define FXH_MAX_SESSIONS 256
#define FXH_MAX_EVENTS 512	/* kept per stream for replay */
#define FXH_KEEP_DONE 16	/* finished POST streams kept per session */
#define FXH_MAX_WQ (16u << 20)	/* unread output before a cut */
#define FXH_MAX_PEND (1u << 20) /* input held while answering */
#define FXH_HDR_MAX 1024

enum fxh_hdr {
	FXH_H_HOST,
	FXH_H_ORIGIN,
	FXH_H_ACCEPT,
	FXH_H_CTYPE,
	FXH_H_SESSION,
	FXH_H_VERSION,
	FXH_H_LAST_ID,
	FXH_H_AUTH,
	FXH_H_N,
};

struct fxh_event {
	uint64_t seq;
	char *text; /* the whole SSE event */
	size_t len;
};

/* A sequence of events for one client: the session's GET stream (number
 * 0) or the answer stream of one POSTed request. */
struct fxh_stream {
	struct fxh_stream *next;
	struct fxh_session *hs;
	unsigned num;
	json_t *rid;	       /* the request, for POST streams */
	struct fxh_conn *conn; /* where it is being written, or NULL */
	bool started;	       /* SSE headers written on conn */
	bool done;	       /* the response is in */
	bool forgotten;	       /* --drop-sse-unresumable */
	uint64_t seq;	       /* the last event's */
	uint64_t sent;	       /* the last event written */
	struct fxh_event *ev;  /* kept for replay, oldest first */
	size_t nev;
};

struct fxh_session {
	struct fxh_session *next;
	char id[33];
	void *user;
	bool legacy;
	bool priming; /* speaks 2025-11-25 or later: priming events */
	bool failed;  /* its initialize was refused */
	bool dead;    /* to be closed at the next prepare step */
	json_t *init_id;
	int64_t posts;
	unsigned next_num;
	struct fxh_stream *streams; /* POST streams, newest first */
	struct fxh_stream get;
};

struct fxh_conn {
	uv_tcp_t tcp;
	struct fxh_conn *next;
	http_parser parser;
	char hdr[FXH_H_N][FXH_HDR_MAX];
	size_t hlen[FXH_H_N];
	bool hseen[FXH_H_N];
	bool hbad; /* a header or the URL too long */
	char field[32];
	size_t flen;
	int cur; /* header whose value is being read, or -1 */
	bool in_value;
	char url[FXH_HDR_MAX];
	size_t ulen;
	char *body;
	size_t blen;
	bool too_big;
	bool ready; /* a whole request parsed, not handled yet */
	bool busy;  /* its answer is under way */
	bool keep_alive;
	bool closing;  /* uv_close called */
	bool shutting; /* closes once its output is out */
	bool resume;   /* held input to feed at the prepare step */
	struct fxh_stream *stream;
	char *pend;
	size_t plen;
};

struct fxh_state {
	const struct fxh_opts *o;
	const struct fxh_ops *ops;
	uv_loop_t loop;
	uv_tcp_t listener;
	uv_timer_t timer, delay, beat;
	uv_prepare_t prepare;
	uv_poll_t wake;
	uv_signal_t sigterm, sigint;
	http_parser_settings ps;
	struct fxh_conn *conns;
	size_t nconns;
	struct fxh_session *sessions;
	size_t nsessions;
	struct fxh_stream *dispatching; /* the POST being handed over */
	int64_t posts;
	int port;
	bool dropped; /* the drop fault fired */
	bool hung;    /* --hang-after reached */
	bool stopping;
	int rc;
};

extern struct fxh_state fxh;

void fxh_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* fixture-http.c */
void fxh_conn_close(struct fxh_conn *c);
void fxh_conn_shutdown(struct fxh_conn *c);
void fxh_conn_done(struct fxh_conn *c);
void fxh_write3(struct fxh_conn *c, const char *a, size_t alen, const char *b,
		size_t blen, const char *z, size_t zlen);
void fxh_respond(struct fxh_conn *c, int status, const char *extra,
		 const char *ctype, const char *body, size_t blen);
void fxh_respond_error(struct fxh_conn *c, int status, int code,
		       const char *message, const char *extra);
void fxh_sse_start(struct fxh_stream *st, bool prime);
void fxh_sse_end(struct fxh_stream *st);
void fxh_sse_cut(struct fxh_stream *st);
void fxh_replay(struct fxh_stream *st, uint64_t after);
void fxh_stream_free_events(struct fxh_stream *st);
struct fxh_stream *fxh_stream_open(struct fxh_session *hs, json_t *rid);
struct fxh_stream *fxh_stream_num(struct fxh_session *hs, unsigned num);
void fxh_stream_free(struct fxh_stream *st);
struct fxh_session *fxh_session_find(const char *id);
struct fxh_session *fxh_session_new(bool legacy);
void fxh_session_close(struct fxh_session *hs);
void fxh_stop(int rc);

/* fixture-http-req.c */
void fxh_parser_settings(void);
void fxh_conn_feed(struct fxh_conn *c, const char *p, size_t n);
void fxh_listen(void);

#endif
