/*
 * Peer uid of a loopback TCP connection. The runtime serves only its own
 * user on TCP; this is how it learns who connected, once per connection.
 * sock_diag answers with one exact lookup; /proc/net/tcp is the fallback
 * for kernels built without INET_DIAG.
 */
#include "endpoint/peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One line of /proc/net/tcp6 is about 170 bytes. */
#define PEER_PROC_LINE 512
/* Where the peer's socket could be: a single exact answer. */
#define PEER_NL_BUF 8192

struct peer_tuple {
	int family;
	/* The client's end: its address is our peer's, its peer is us. */
	unsigned char src[16], dst[16];
	uint16_t sport, dport; /* host order */
};

static int peer_tuple_of(int fd, struct peer_tuple *t)
{
	struct sockaddr_storage local, remote;
	socklen_t ll = sizeof local, rl = sizeof remote;
	if (getsockname(fd, (struct sockaddr *)&local, &ll) < 0 ||
	    getpeername(fd, (struct sockaddr *)&remote, &rl) < 0)
		return -errno;
	memset(t, 0, sizeof *t);
	t->family = local.ss_family;
	if (local.ss_family == AF_INET) {
		const struct sockaddr_in *l = (const void *)&local;
		const struct sockaddr_in *r = (const void *)&remote;
		memcpy(t->src, &r->sin_addr, 4);
		memcpy(t->dst, &l->sin_addr, 4);
		t->sport = ntohs(r->sin_port);
		t->dport = ntohs(l->sin_port);
		return 0;
	}
	if (local.ss_family == AF_INET6) {
		const struct sockaddr_in6 *l = (const void *)&local;
		const struct sockaddr_in6 *r = (const void *)&remote;
		memcpy(t->src, &r->sin6_addr, 16);
		memcpy(t->dst, &l->sin6_addr, 16);
		t->sport = ntohs(r->sin6_port);
		t->dport = ntohs(l->sin6_port);
		return 0;
	}
	return -EAFNOSUPPORT;
}

static int peer_uid_netlink(const struct peer_tuple *t, uid_t *uid)
{
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC,
			NETLINK_SOCK_DIAG);
	if (nl < 0)
		return -errno;
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req;
	memset(&req, 0, sizeof req);
	req.nh.nlmsg_len = sizeof req;
	req.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.nh.nlmsg_seq = 1;
	req.r.sdiag_family = (unsigned char)t->family;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0U;
	req.r.id.idiag_sport = htons(t->sport);
	req.r.id.idiag_dport = htons(t->dport);
	memcpy(req.r.id.idiag_src, t->src, 16);
	memcpy(req.r.id.idiag_dst, t->dst, 16);
	req.r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	int rc = -ENOENT;
	if (sendto(nl, &req, sizeof req, 0, (struct sockaddr *)&kernel,
		   sizeof kernel) < 0) {
		rc = -errno;
		goto out;
	}
	char *buf = malloc(PEER_NL_BUF);
	if (buf == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	ssize_t n;
	do
		n = recv(nl, buf, PEER_NL_BUF, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		rc = -errno;
		free(buf);
		goto out;
	}
	int len = (int)n;
	for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, len);
	     h = NLMSG_NEXT(h, len)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);
			rc = e->error < 0 ? e->error : -ENOENT;
			break;
		}
		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
		    h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
			continue;
		const struct inet_diag_msg *m = NLMSG_DATA(h);
		*uid = (uid_t)m->idiag_uid;
		rc = 0;
		break;
	}
	free(buf);
out:
	close(nl);
	return rc;
}

/* The address as /proc/net/tcp prints it: each 32-bit word of the address
 * as the host prints that integer, in hex. */
static void peer_proc_addr(const unsigned char *a, size_t len, uint16_t port,
			   char *out, size_t outlen)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i += 4) {
		uint32_t w;
		memcpy(&w, a + i, 4);
		o += (size_t)snprintf(out + o, outlen - o, "%08X", w);
	}
	snprintf(out + o, outlen - o, ":%04X", port);
}

static int peer_uid_proc(const struct peer_tuple *t, uid_t *uid)
{
	bool v4 = t->family == AF_INET;
	char want_local[64], want_rem[64];
	peer_proc_addr(t->src, v4 ? 4 : 16, t->sport, want_local,
		       sizeof want_local);
	peer_proc_addr(t->dst, v4 ? 4 : 16, t->dport, want_rem,
		       sizeof want_rem);
	FILE *f = fopen(v4 ? "/proc/net/tcp" : "/proc/net/tcp6", "re");
	if (f == NULL)
		return -errno;
	char line[PEER_PROC_LINE];
	int rc = -ENOENT;
	while (fgets(line, sizeof line, f)) {
		char local[64], rem[64];
		unsigned long u;
		if (sscanf(line, " %*s %63s %63s %*s %*s %*s %*s %lu", local,
			   rem, &u) != 3)
			continue;
		if (strcmp(local, want_local) == 0 &&
		    strcmp(rem, want_rem) == 0) {
			*uid = (uid_t)u;
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

int peer_tcp_uid_proc(int fd, uid_t *uid)
{
	struct peer_tuple t;
	int rc = peer_tuple_of(fd, &t);
	return rc < 0 ? rc : peer_uid_proc(&t, uid);
}

int peer_tcp_uid(int fd, uid_t *uid)
{
	struct peer_tuple t;
	int rc = peer_tuple_of(fd, &t);
	if (rc < 0)
		return rc;
	/* -ENOENT may also mean the kernel has no TCP handler for
	 * sock_diag: the text table decides then. */
	rc = peer_uid_netlink(&t, uid);
	return rc == 0 ? 0 : peer_uid_proc(&t, uid);
}
