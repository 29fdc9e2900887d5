/*
 * The one HTTP client of mcpvisor: libcurl's multi interface driven by the
 * libuv loop (uv_poll per socket, one uv_timer), used by every outbound
 * HTTP: remote and local HTTP upstreams (through mcpc), the relay, and the
 * terminal commands (through httpc_fetch, which runs a private loop).
 *
 * libcurl is loaded on first use (dlopen of Debian's libcurl.so.4, the
 * OpenSSL flavour), so a runtime that never speaks HTTP outward does not
 * carry it (linked, it and its dependencies add about 6 MB of RSS).
 * TLS verification is always on. Responses are streamed: the head, then
 * body chunks as they come, then one on_done.
 */
#ifndef MCPV_HTTP_HTTPC_H
#define MCPV_HTTP_HTTPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "util/buf.h"

#define HTTPC_CONNECT_TIMEOUT_MS 10000 /* default connect timeout */
#define HTTPC_MAX_HEADERS 64	       /* request headers */
#define HTTPC_MAX_HEAD (64 * 1024)     /* response head bytes */

struct httpc;	  /* one per loop: the multi handle */
struct httpc_req; /* one request in flight */

struct httpc_opts {
	const char *method; /* "GET", "POST", "DELETE" */
	const char *url;    /* http:// or https:// */
	/* Connect to this Unix socket instead of the URL's host (the URL
	 * still gives the path and Host header). NULL: TCP. */
	const char *unix_socket;
	/* "Name: value" lines, NULL-terminated, at most HTTPC_MAX_HEADERS;
	 * copied. May hold secrets: never logged. */
	const char *const *headers;
	const char *body; /* copied; NULL: none */
	size_t body_len;
	uint64_t connect_timeout_ms; /* 0: HTTPC_CONNECT_TIMEOUT_MS */
	/* No byte of the response for this long (after the request went):
	 * done with -ETIMEDOUT. 0: none (a long call may be silent). */
	uint64_t silence_timeout_ms;
	uint64_t total_timeout_ms; /* 0: none */
};

struct httpc_cbs {
	/* Status and headers are in (httpc_status, httpc_header). Return
	 * false to end the request (on_done follows with -ECANCELED). May
	 * be NULL. */
	bool (*on_head)(void *ctx, struct httpc_req *r);
	/* A piece of the body as it came (chunked decoding done). Return
	 * false to end the request. May be NULL (the body is dropped). */
	bool (*on_body)(void *ctx, struct httpc_req *r, const char *data,
			size_t len);
	/* Once, last: err 0 when the response was whole, else -errno
	 * (-ECONNREFUSED, -ETIMEDOUT, -ECONNRESET, -EHOSTUNREACH, -EPROTO
	 * for TLS and protocol errors, -ECANCELED) with why, one sentence
	 * that holds no header value (borrowed). The request is freed right
	 * after this returns. */
	void (*on_done)(void *ctx, struct httpc_req *r, int err,
			const char *why);
};

/* The client of a loop. NULL with *why set (static text) when libcurl
 * cannot be loaded. */
struct httpc *httpc_new(uv_loop_t *loop, const char **why);
/* Ends every request (on_done with -ECANCELED), closes its handles; freed
 * once they are closed (run the loop). From inside a callback it takes
 * effect when the callback returns. */
void httpc_free(struct httpc *c);

/* Starts a request. 0 and *out, or -errno (-EINVAL: bad options,
 * -ENOMEM) with no callback to come. */
int httpc_start(struct httpc *c, const struct httpc_opts *opts,
		const struct httpc_cbs *cbs, void *ctx, struct httpc_req **out);
/* Ends a request: no callback runs after this, not even on_done. Safe
 * from inside any callback (inside its own on_done it does nothing). */
void httpc_cancel(struct httpc_req *r);
/* Stops (on) or resumes reading the response body: backpressure. The
 * silence timeout does not run while stopped; what was held comes from
 * the next loop turn on, never from inside this call. */
void httpc_pause(struct httpc_req *r, bool on);

/* The loop the client runs on (for its users' own timers). */
uv_loop_t *httpc_loop(const struct httpc *c);

/* From on_head on: the status code (0 before). */
int httpc_status(const struct httpc_req *r);
/* A response header's value (name case-insensitive), NULL when absent;
 * valid until on_done returns. */
const char *httpc_header(const struct httpc_req *r, const char *name);
/* Copies the response head's headers into out (read them with
 * httpc_head_get), for a caller that keeps them past on_done. */
void httpc_head_copy(const struct httpc_req *r, struct buf *out);
/* Whether any byte of the request may have reached the server: false
 * only when it provably did not (no connection was made). */
bool httpc_sent(const struct httpc_req *r);

/* A whole exchange on a private loop, for the terminal commands: the
 * status in *status and the body in body (up to max_body bytes, then
 * -EMSGSIZE). on_sse: when not NULL and the answer is
 * text/event-stream, each event's data goes to it as it comes; return
 * false to stop reading (the exchange then ends with 0). 0 or -errno
 * with *why (borrowed, static or until the next call). */
int httpc_fetch(const struct httpc_opts *opts, int *status, struct buf *body,
		size_t max_body,
		bool (*on_sse)(void *arg, const char *data, size_t len),
		void *arg, const char **why);
/* httpc_fetch that also keeps the response head's headers in head (read
 * them with httpc_head_get); head may be NULL. */
int httpc_fetch_head(const struct httpc_opts *opts, int *status,
		     struct buf *head, struct buf *body, size_t max_body,
		     bool (*on_sse)(void *arg, const char *data, size_t len),
		     void *arg, const char **why);
/* A header's value (name case-insensitive) in a head httpc_fetch_head
 * filled, NULL when absent. */
const char *httpc_head_get(const struct buf *head, const char *name);

#endif
