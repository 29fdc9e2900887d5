/*
 * libcurl's multi interface driven by the loop (httpc.h): one uv_poll per
 * socket curl asks for, kept for a connection's whole life, curl's own
 * timeout as a uv_timer (or, for "now", an idle turn), and each callback
 * run as one curl_multi_socket_action.
 */
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/httpc_int.h"
#include "util/xmalloc.h"

static void httpc_sock_close_cb(uv_handle_t *h)
{
	struct httpc_sock *s = h->data;
	struct httpc *c = s->c;
	free(s);
	httpc_handle_closed(c);
}

/* One curl_multi_socket_action, then what it finished and what its
 * callbacks asked for. */
static void httpc_action(struct httpc *c, curl_socket_t fd, int flags)
{
	int running = 0;
	c->depth++;
	c->in_curl++;
	c->cu->multi_socket_action(c->multi, fd, flags, &running);
	c->in_curl--;
	httpc_leave(c);
}

static void httpc_poll_cb(uv_poll_t *p, int status, int events)
{
	struct httpc_sock *s = p->data;
	int flags = 0;
	if (s->idle) {
		/* A cached connection the server closed or wrote to: curl
		 * finds out when it would reuse it (it checks); polling it
		 * until then would only spin. */
		uv_poll_stop(p);
		s->events = 0;
		return;
	}
	if (status < 0)
		flags = CURL_CSELECT_ERR;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	httpc_action(s->c, s->fd, flags);
}

static void httpc_timer_cb(uv_timer_t *t)
{
	httpc_action(t->data, CURL_SOCKET_TIMEOUT, 0);
}

static void httpc_now_cb(uv_idle_t *h)
{
	uv_idle_stop(h);
	httpc_action(h->data, CURL_SOCKET_TIMEOUT, 0);
}

void httpc_sock_close(struct httpc_sock *s)
{
	struct httpc *c = s->c;
	if (s->prev)
		s->prev->next = s->next;
	else
		c->socks = s->next;
	if (s->next)
		s->next->prev = s->prev;
	uv_close((uv_handle_t *)&s->poll, httpc_sock_close_cb);
}

static struct httpc_sock *httpc_sock_new(struct httpc *c, curl_socket_t fd)
{
	struct httpc_sock *s = xcalloc(1, sizeof *s);
	if (uv_poll_init_socket(c->loop, &s->poll, fd) < 0) {
		free(s);
		return NULL;
	}
	s->fd = fd;
	s->c = c;
	s->poll.data = s;
	s->next = c->socks;
	if (c->socks)
		c->socks->prev = s;
	c->socks = s;
	c->handles++;
	return s;
}

static struct httpc_sock *httpc_sock_find(struct httpc *c, curl_socket_t fd)
{
	for (struct httpc_sock *s = c->socks; s; s = s->next)
		if (s->fd == fd && s->conn)
			return s;
	return NULL;
}

int httpc_socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp,
		    void *socketp)
{
	struct httpc *c = userp;
	struct httpc_sock *s = socketp;
	if (what == CURL_POLL_REMOVE) {
		if (s == NULL)
			s = httpc_sock_find(c, fd);
		if (s == NULL)
			return 0;
		c->cu->multi_assign(c->multi, fd, NULL);
		if (!s->conn) {
			httpc_sock_close(s);
			return 0;
		}
		/* Kept in epoll as it is, unless it waited to write (that
		 * would fire at once, again and again). */
		s->idle = true;
		if (s->events & UV_WRITABLE) {
			uv_poll_stop(&s->poll);
			s->events = 0;
		}
		return 0;
	}
	if (s == NULL)
		s = httpc_sock_find(c, fd);
	if (s == NULL && (s = httpc_sock_new(c, fd)) == NULL)
		return -1;
	if (s->idle || socketp == NULL) {
		s->idle = false;
		c->cu->multi_assign(c->multi, fd, s);
	}
	int events = 0;
	if (what & CURL_POLL_IN)
		events |= UV_READABLE;
	if (what & CURL_POLL_OUT)
		events |= UV_WRITABLE;
	/* curl asks again for what is polled already: a kept connection
	 * that a new request reads. uv_poll_start would take the fd out of
	 * epoll and put it back (EPOLL_CTL_DEL now, ADD at the next poll):
	 * two system calls per request for nothing. */
	if (events == s->events)
		return 0;
	s->events = events;
	uv_poll_start(&s->poll, events, httpc_poll_cb);
	return 0;
}

/* curl's connection sockets are made here, so that their polls can live
 * as long as they do (see struct httpc_sock). */
curl_socket_t httpc_open_cb(void *userp, curlsocktype purpose,
			    struct curl_sockaddr *a)
{
	struct httpc *c = userp;
	curl_socket_t fd = socket(a->family, a->socktype, a->protocol);
	if (fd == CURL_SOCKET_BAD)
		return fd;
	struct httpc_sock *s = httpc_sock_new(c, fd);
	if (s == NULL) {
		close(fd);
		return CURL_SOCKET_BAD;
	}
	s->conn = true;
	s->idle = true;
	return fd;
}

int httpc_close_cb(void *userp, curl_socket_t fd)
{
	struct httpc *c = userp;
	struct httpc_sock *s = httpc_sock_find(c, fd);
	/* The poll lets the fd go first: its number may be reused at once. */
	if (s)
		httpc_sock_close(s);
	return close(fd);
}

int httpc_curl_timer_cb(CURLM *m, long ms, void *userp)
{
	struct httpc *c = userp;
	uv_idle_stop(&c->now);
	if (ms < 0) {
		uv_timer_stop(&c->timer);
	} else if (ms == 0) {
		uv_timer_stop(&c->timer);
		uv_idle_start(&c->now, httpc_now_cb);
	} else {
		uv_timer_start(&c->timer, httpc_timer_cb, (uint64_t)ms, 0);
	}
	return 0;
}
