/*
 * Inside the loop's HTTP client: its state, shared by httpc.c (requests,
 * their answers, the API), httpc_loop.c (curl driven by libuv) and
 * httpc_url.c (the URLs kept parsed).
 */
#ifndef MCPV_HTTP_HTTPC_INT_H
#define MCPV_HTTP_HTTPC_INT_H

#include <stdbool.h>

#include "http/curlso.h"
#include "http/httpc.h"
#include "util/buf.h"

/* Connections per host: every open SSE stream (a session's GET stream, a
 * long call's answer) holds one over HTTP/1.1, so this is generous;
 * requests past it wait for a free connection. */
#define HTTPC_MAX_HOST_CONNECTIONS 32
/* Idle connections kept for reuse. */
#define HTTPC_MAX_CACHED 32
/* Body bytes one request hands its owner before it yields to the rest of
 * the loop (its transfer is paused until the next turn): a server that
 * writes as fast as the socket takes it cannot keep the loop inside
 * curl's reads. */
#define HTTPC_TURN_BYTES (256 * 1024)
/* Finished easy handles kept for the next requests: making one and
 * freeing it cost more than a third of curl's work for a small call
 * (its state, its buffers); one holds a 16 KiB read buffer. */
#define HTTPC_IDLE_EASY 16
#define HTTPC_WHY_MAX 200
/* Parsed URLs kept (see struct httpc_url): a runtime talks to a few
 * servers, each at one URL. */
#define HTTPC_URLS 8

/* A URL as libcurl parsed it, handed to each request to it
 * (CURLOPT_CURLU): libcurl then copies the parts instead of parsing the
 * text and printing it back, which is about a tenth of its work for a
 * small call. Kept while any request uses it, then until its slot is
 * needed (the least recently taken goes). */
struct httpc_url {
	char *text; /* NULL: a free slot */
	CURLU *u;
	unsigned users; /* requests that hold it */
	uint64_t last;	/* httpc's count of takes when last taken */
};

struct httpc_sock {
	uv_poll_t poll;
	curl_socket_t fd;
	struct httpc *c;
	struct httpc_sock *prev, *next;
	/* A connection's socket (made by httpc_open_cb): its poll lives
	 * until curl closes it (httpc_close_cb), not only while a transfer
	 * uses it, so a kept-alive connection is not taken out of epoll and
	 * put back (three or four system calls) on every request. */
	bool conn;
	bool idle;  /* a conn curl has no interest in now (in its cache) */
	int events; /* UV_READABLE, UV_WRITABLE polled for; 0: stopped */
};

struct httpc {
	uv_loop_t *loop;
	const struct curlso *cu;
	CURLM *multi;
	uv_timer_t timer; /* curl's own timeout */
	/* curl's "now" (a timeout of 0): on the next idle turn, not as a
	 * 0 ms timer, which libuv would run again within the same timers
	 * phase: a transfer that always has more to read would then keep
	 * the loop there, never polling anything else. */
	uv_idle_t now;
	/* After the poll of a turn: resumes what the turn budget paused. */
	uv_check_t yield;
	uv_timer_t kick; /* deferred adds and resumes */
	struct httpc_req *reqs;
	struct httpc_sock *socks;    /* polled for curl */
	CURL *idle[HTTPC_IDLE_EASY]; /* set up, for the next requests */
	int nidle;
	struct httpc_url urls[HTTPC_URLS];
	uint64_t url_takes;
	int handles;   /* open uv handles; freed at 0 once closing */
	int depth;     /* inside our dispatch: httpc_free waits */
	int in_curl;   /* inside a curl call: curl may not be re-entered */
	int cancelled; /* requests cancelled inside curl, to remove */
	bool closing;  /* httpc_free ran: nothing new starts */
	bool free_pending;
};

struct httpc_req {
	struct httpc *c;
	struct httpc_req *prev, *next;
	CURL *easy;
	struct httpc_url *url; /* NULL: libcurl parses the text itself */
	struct curl_slist *headers;
	struct httpc_cbs cbs;
	void *ctx;
	uv_timer_t silence;
	uint64_t silence_ms;
	struct buf head; /* the final head: "name\0value\0" pairs */
	int status;
	bool head_done;
	bool heard;	/* any byte of a response came */
	bool added;	/* in the multi handle */
	bool queued;	/* to add at the kick */
	bool cancelled; /* no callback any more; removed when curl allows */
	bool paused;
	bool resume; /* to resume at the kick */
	/* Paused by the turn budget (not by its owner): resumed at the
	 * kick, on the next turn of the loop. */
	bool yielded;
	size_t turn_bytes; /* body bytes since the last kick */
	bool done;	   /* on_done runs or ran */
	bool sent;	   /* valid once done */
	/* Times curl was about to send it: a second is curl's own replay
	 * on a fresh connection, which is refused (see httpc_prereq_cb). */
	unsigned attempts;
	bool replay_refused;
	bool once; /* a POST: never sent twice by curl */
	int err;   /* our own reason, before curl's */
	const char *err_why;
	char why[HTTPC_WHY_MAX];
	char errbuf[CURL_ERROR_SIZE];
};

/* httpc.c: after a dispatch, what curl finished and what its callbacks
 * asked for; one of c's uv handles closed. */
void httpc_leave(struct httpc *c);
void httpc_handle_closed(struct httpc *c);

/* httpc_url.c: the parsed form of url for one more request, or NULL
 * (all slots held by requests in flight, or a URL libcurl refuses: the
 * request then gives libcurl the text, which reports the error as
 * before); given back with httpc_url_put (NULL is fine) once the
 * request's easy handle no longer points at it. httpc_url_free_all when
 * no request holds any. */
struct httpc_url *httpc_url_take(struct httpc *c, const char *url);
void httpc_url_put(struct httpc_url *u);
void httpc_url_free_all(struct httpc *c);

/* httpc_loop.c: curl's callbacks (CURLMOPT_SOCKETFUNCTION,
 * CURLOPT_OPENSOCKETFUNCTION, CURLOPT_CLOSESOCKETFUNCTION,
 * CURLMOPT_TIMERFUNCTION), and closing a socket's poll. */
int httpc_socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp,
		    void *socketp);
curl_socket_t httpc_open_cb(void *userp, curlsocktype purpose,
			    struct curl_sockaddr *a);
int httpc_close_cb(void *userp, curl_socket_t fd);
int httpc_curl_timer_cb(CURLM *m, long ms, void *userp);
void httpc_sock_close(struct httpc_sock *s);

#endif
