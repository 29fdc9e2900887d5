/*
 * The loopback port allocator: the reserved set, the ring of recent
 * hand-outs, and the kernel as the source of candidates.
 */
#include "ports/ports.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"
#include "util/xmalloc.h"

struct ports {
	int *reserved; /* unordered; one per local server starting or
			  running, so a scan is cheap */
	size_t nreserved, cap;
	int recent[PORTS_RECENT]; /* 0: empty slot */
	size_t recent_next;
	ports_source_fn source;
	void *source_arg;
};

static struct ports *ports_process;

/* Asks the kernel for a free port on 127.0.0.1. */
static int ports_kernel_source(void *arg, int *port)
{
	(void)arg;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof sa;
	int rc = 0;
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		rc = -errno;
	else
		*port = ntohs(sa.sin_port);
	close(fd);
	return rc;
}

struct ports *ports_new(void)
{
	struct ports *p = xcalloc(1, sizeof *p);
	p->source = ports_kernel_source;
	return p;
}

void ports_free(struct ports *p)
{
	if (p == NULL)
		return;
	free(p->reserved);
	free(p);
}

struct ports *ports_default(void)
{
	if (ports_process == NULL)
		ports_process = ports_new();
	return ports_process;
}

void ports_default_free(void)
{
	ports_free(ports_process);
	ports_process = NULL;
}

void ports_set_source(struct ports *p, ports_source_fn fn, void *arg)
{
	p->source = fn ? fn : ports_kernel_source;
	p->source_arg = fn ? arg : NULL;
}

bool ports_is_reserved(const struct ports *p, int port)
{
	for (size_t i = 0; i < p->nreserved; i++)
		if (p->reserved[i] == port)
			return true;
	return false;
}

size_t ports_count(const struct ports *p)
{
	return p->nreserved;
}

static bool ports_is_recent(const struct ports *p, int port)
{
	for (size_t i = 0; i < PORTS_RECENT; i++)
		if (p->recent[i] == port)
			return true;
	return false;
}

/* 0: bound and closed; -errno from bind (EADDRINUSE: taken). */
static int ports_try_bind(int family, int port)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = 0;
	if (family == AF_INET6) {
		/* Only ::1 itself: 127.0.0.1 is checked on its own. */
		int one = 1;
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
		struct sockaddr_in6 sa = {.sin6_family = AF_INET6,
					  .sin6_port = htons((uint16_t)port),
					  .sin6_addr = IN6ADDR_LOOPBACK_INIT};
		if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
			rc = -errno;
	} else {
		struct sockaddr_in sa = {.sin_family = AF_INET,
					 .sin_port = htons((uint16_t)port),
					 .sin_addr.s_addr =
						 htonl(INADDR_LOOPBACK)};
		if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
			rc = -errno;
	}
	close(fd);
	return rc;
}

bool ports_loopback_free(int port)
{
	if (port <= 0 || port > 65535)
		return false;
	if (ports_try_bind(AF_INET, port) < 0)
		return false;
	int rc = ports_try_bind(AF_INET6, port);
	/* No IPv6 on this host (or no ::1): nothing can be bound there. */
	return rc == 0 || rc == -EAFNOSUPPORT || rc == -EADDRNOTAVAIL;
}

static void ports_take(struct ports *p, int port)
{
	if (p->nreserved == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 8;
		p->reserved =
			xrealloc(p->reserved, p->cap * sizeof *p->reserved);
	}
	p->reserved[p->nreserved++] = port;
	p->recent[p->recent_next] = port;
	p->recent_next = (p->recent_next + 1) % PORTS_RECENT;
}

int ports_reserve(struct ports *p, int *port)
{
	int fallback = 0; /* a recent one, taken if nothing else comes */
	int last_err = 0;
	for (int i = 0; i < PORTS_TRIES; i++) {
		int cand = 0;
		int rc = p->source(p->source_arg, &cand);
		if (rc < 0) {
			last_err = rc;
			continue;
		}
		if (cand <= 0 || cand > 65535 || ports_is_reserved(p, cand))
			continue;
		if (ports_is_recent(p, cand)) {
			if (fallback == 0)
				fallback = cand;
			continue;
		}
		if (!ports_loopback_free(cand))
			continue;
		ports_take(p, cand);
		*port = cand;
		return 0;
	}
	/* Checked again: it was free when offered, maybe not now. */
	if (fallback != 0 && ports_loopback_free(fallback)) {
		ports_take(p, fallback);
		*port = fallback;
		return 0;
	}
	if (last_err < 0 && fallback == 0) {
		log_warn("no loopback port: %s", strerror(-last_err));
		return last_err;
	}
	return -EADDRNOTAVAIL;
}

void ports_release(struct ports *p, int port)
{
	for (size_t i = 0; i < p->nreserved; i++) {
		if (p->reserved[i] == port) {
			p->reserved[i] = p->reserved[--p->nreserved];
			return;
		}
	}
}
