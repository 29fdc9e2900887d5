/*
 * fixture-http: the test fixtures' MCP Streamable HTTP transport (and the
 * 2024-11-05 HTTP+SSE one), with fault modes for end-to-end tests. A small
 * single-threaded server on libuv and libhttp-parser, loopback only.
 *
 * The fixture keeps its behaviour and hands messages over: the layer calls
 * open/message/close for each MCP session and tick after every event; the
 * fixture answers with fxh_send, naming the client request the message
 * belongs to, so that progress, logs and the fixture's own requests go on
 * the POST stream of the call that caused them.
 */
#ifndef FIXTURE_HTTP_H
#define FIXTURE_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct fxh_session;

/* tick's answer when the fixture wants the server to stop. */
#define FXH_STOP (-2)

struct fxh_ops {
	/* A new session (an initialize without Mcp-Session-Id, or a GET of
	 * the legacy SSE stream). Returns the fixture's state for it, or
	 * NULL to refuse it (503). */
	void *(*open)(struct fxh_session *hs);
	/* One JSON-RPC message object from the session's client. */
	void (*message)(void *user, json_t *msg);
	/* The session is over (DELETE, expiry, stream gone, stop): free the
	 * state; fxh_send must not be called for it any more. */
	void (*close)(void *user);
	/* Runs due timers. Returns the ms until it wants to run again, -1
	 * for no timer, or FXH_STOP. Called after every loop event. */
	int (*tick)(void);
};

struct fxh_opts {
	bool on;		 /* --http or --http-env given */
	int port;		 /* 0: the kernel picks one */
	const char *auth;	 /* --auth TOKEN: 401 without it */
	int64_t expire_after;	 /* POSTs a session lives for; 0: forever */
	int64_t hang_after;	 /* POSTs answered before hanging; 0: never */
	bool drop_once;		 /* --drop-sse-once */
	bool drop_unresumable;	 /* --drop-sse-unresumable */
	bool legacy;		 /* --legacy-sse */
	bool listen_all;	 /* --listen-all: 0.0.0.0, for a container */
	int64_t retry_ms;	 /* SSE retry field */
	int64_t heartbeat_ms;	 /* SSE comment interval; 0: none */
	int64_t listen_delay_ms; /* nothing bound before then (slow start) */
	int wake_fd;	  /* -1, or an fd (signal pipe) that wakes tick */
	bool own_signals; /* SIGTERM/SIGINT stop the server */
	const char *prog; /* prefix of log lines */
};

/* The flags fxh_parse_flag takes, for a fixture's usage text. */
extern const char fxh_usage[];

/* Initializes o with the defaults. */
void fxh_opts_init(struct fxh_opts *o, const char *prog);

/* Takes argv[*i] (and its value, advancing *i) when it is one of the HTTP
 * flags. Returns 1 when taken, 0 when not ours, -1 on a bad value (said on
 * stderr). */
int fxh_parse_flag(struct fxh_opts *o, int argc, char **argv, int *i);

/* Checks the flags together (fault modes need --http). 0 or -1. */
int fxh_check_opts(const struct fxh_opts *o);

/* Binds 127.0.0.1:port (0.0.0.0:port with listen_all), says "PROG: listening on
 * PORT" on stderr and serves until tick returns FXH_STOP or a signal arrives
 * (own_signals). Returns the process exit code: 0, 98 when the port is taken
 * (EADDRINUSE), 1 on another error. */
int fxh_serve(const struct fxh_opts *o, const struct fxh_ops *ops);

/* Sends msg (ownership taken) to hs's client. A response goes on the stream
 * of its request. Other messages go on the POST stream of the request
 * cause when it is still open, else on the GET stream; list_changed and
 * resources/updated always go on the GET stream. */
void fxh_send(struct fxh_session *hs, json_t *cause, json_t *msg);

/* Closes the POST stream of request cause now, before its answer (SEP-1699
 * polling); the client gets what follows by GET with Last-Event-ID. */
void fxh_end_stream(struct fxh_session *hs, json_t *cause);

#endif
