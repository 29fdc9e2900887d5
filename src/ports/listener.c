/*
 * The {port} template, the loopback rule for local servers' urls, and who
 * holds the listening socket on a loopback port.
 */
#include "ports/listener.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proc/procfs.h"
#include "proc/snap.h"
#include "util/buf.h"
#include "util/xmalloc.h"

#define LISTENER_STATE_LISTEN 0x0A /* include/net/tcp_states.h */
#define LISTENER_VALUE_MAX 128	   /* an owner token and then some */

char *listener_subst(const char *s, int port)
{
	char digits[16];
	snprintf(digits, sizeof digits, "%d", port);
	size_t tlen = strlen(LISTENER_TEMPLATE);
	struct buf b;
	buf_init(&b);
	for (const char *p = s;;) {
		const char *hit = strstr(p, LISTENER_TEMPLATE);
		if (hit == NULL) {
			buf_append(&b, p, strlen(p));
			break;
		}
		buf_append(&b, p, (size_t)(hit - p));
		buf_append(&b, digits, strlen(digits));
		p = hit + tlen;
	}
	return buf_steal(&b);
}

int listener_url_loopback(const char *url)
{
	const char *p;
	if (strncasecmp(url, "http://", 7) == 0)
		p = url + 7;
	else if (strncasecmp(url, "https://", 8) == 0)
		p = url + 8;
	else
		return -EINVAL;
	/* The authority ends at the path, query or fragment; user info
	 * ends at its last '@'. */
	size_t alen = strcspn(p, "/?#");
	const char *end = p + alen;
	for (const char *q = end; q > p; q--) {
		if (q[-1] == '@') {
			p = q;
			break;
		}
	}
	const char *host = p;
	size_t hlen;
	if (*p == '[') {
		const char *close = memchr(p, ']', (size_t)(end - p));
		if (close == NULL)
			return -EINVAL;
		host = p + 1;
		hlen = (size_t)(close - host);
		if (close + 1 != end && close[1] != ':')
			return -EINVAL;
	} else {
		const char *colon = memchr(p, ':', (size_t)(end - p));
		hlen = (size_t)((colon ? colon : end) - p);
	}
	if (hlen == 0)
		return -EINVAL;
	static const char *const loopback[] = {"127.0.0.1", "::1", "localhost"};
	for (size_t i = 0; i < sizeof loopback / sizeof *loopback; i++) {
		if (strlen(loopback[i]) == hlen &&
		    strncasecmp(host, loopback[i], hlen) == 0)
			return 0;
	}
	return -EPERM;
}

/* Hex address of /proc/net/tcp: 32-bit words each printed in host order
 * (so the bytes come out as in memory). 0, or -EINVAL. */
static int listener_parse_addr(const char *s, size_t len, uint8_t *out,
			       size_t outlen)
{
	if (len != outlen * 2)
		return -EINVAL;
	for (size_t w = 0; w < outlen / 4; w++) {
		char hex[9];
		memcpy(hex, s + w * 8, 8);
		hex[8] = '\0';
		char *end;
		unsigned long v = strtoul(hex, &end, 16);
		if (*end != '\0')
			return -EINVAL;
		uint32_t v32 = (uint32_t)v;
		memcpy(out + w * 4, &v32, 4);
	}
	return 0;
}

static bool listener_reachable(const uint8_t *a, bool v6)
{
	static const uint8_t lo4[4] = {127, 0, 0, 1};
	static const uint8_t any4[4] = {0, 0, 0, 0};
	if (!v6)
		return memcmp(a, lo4, 4) == 0 || memcmp(a, any4, 4) == 0;
	static const uint8_t lo6[16] = {[15] = 1};
	static const uint8_t any6[16] = {0};
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
	if (memcmp(a, lo6, 16) == 0 || memcmp(a, any6, 16) == 0)
		return true;
	return memcmp(a, mapped, 12) == 0 && listener_reachable(a + 12, false);
}

/* One line: "sl local rem st txq:rxq tr:when retrnsmt uid timeout inode". */
static void listener_parse_line(const char *line, size_t len, bool v6, int port,
				uint64_t *inodes, size_t max, size_t *n)
{
	char copy[512];
	if (len >= sizeof copy)
		return;
	memcpy(copy, line, len);
	copy[len] = '\0';
	char *save = NULL;
	char *field[10];
	size_t nf = 0;
	for (char *t = strtok_r(copy, " \t", &save); t && nf < 10;
	     t = strtok_r(NULL, " \t", &save))
		field[nf++] = t;
	if (nf < 10)
		return;
	char *colon = strchr(field[1], ':');
	if (colon == NULL)
		return;
	uint8_t addr[16];
	size_t alen = v6 ? 16 : 4;
	if (listener_parse_addr(field[1], (size_t)(colon - field[1]), addr,
				alen) < 0 ||
	    !listener_reachable(addr, v6))
		return;
	char *end;
	unsigned long lport = strtoul(colon + 1, &end, 16);
	unsigned long state = strtoul(field[3], NULL, 16);
	if (*end != '\0' || lport != (unsigned long)port ||
	    state != LISTENER_STATE_LISTEN)
		return;
	unsigned long long inode = strtoull(field[9], &end, 10);
	if (*end != '\0' || inode == 0 || *n >= max)
		return;
	inodes[(*n)++] = inode;
}

void listener_parse_proc_net(const char *text, size_t len, bool v6, int port,
			     uint64_t *inodes, size_t max, size_t *n)
{
	const char *p = text, *end = text + len;
	bool header = true;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t llen = (size_t)((nl ? nl : end) - p);
		if (!header)
			listener_parse_line(p, llen, v6, port, inodes, max, n);
		header = false;
		p += llen + 1;
	}
}

/* Reads a /proc file whose size stat does not tell. 0 or -errno. */
static int listener_read(const char *path, struct buf *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char chunk[16384];
	int rc = 0;
	while (out->len < LISTENER_PROC_NET_MAX) {
		ssize_t r = read(fd, chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			rc = -errno;
		if (r <= 0)
			break;
		buf_append(out, chunk, (size_t)r);
	}
	close(fd);
	return rc;
}

void listener_proc(int family, int port, uint64_t *inodes, size_t max,
		   size_t *n)
{
	bool v6 = family == AF_INET6;
	struct buf b;
	buf_init(&b);
	if (listener_read(v6 ? "/proc/net/tcp6" : "/proc/net/tcp", &b) == 0)
		listener_parse_proc_net(b.data ? b.data : "", b.len, v6, port,
					inodes, max, n);
	buf_free(&b);
}

/* Marks in held[] the inodes that pid has open. */
static void listener_mark_fds(pid_t pid, const uint64_t *inodes, size_t n,
			      bool *held)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(dir);
	if (d == NULL)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char link[64];
		ssize_t l =
			readlinkat(dirfd(d), e->d_name, link, sizeof link - 1);
		if (l <= 0)
			continue;
		link[l] = '\0';
		unsigned long long ino;
		if (sscanf(link, "socket:[%llu]", &ino) != 1)
			continue;
		for (size_t i = 0; i < n; i++)
			if (inodes[i] == ino)
				held[i] = true;
	}
	closedir(d);
}

#define LISTENER_TCP_LISTEN 10 /* TCP_LISTEN in include/net/tcp_states.h */

int listener_diag(int family, int port, uint64_t *inodes, size_t max, size_t *n)
{
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC,
			NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req = {
		.nh = {.nlmsg_len = sizeof req,
		       .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
		.r = {.sdiag_family = (uint8_t)family,
		      .sdiag_protocol = IPPROTO_TCP,
		      .idiag_states = 1u << LISTENER_TCP_LISTEN},
	};
	int rc = 0;
	if (send(fd, &req, sizeof req, 0) < 0) {
		rc = -errno;
		goto out;
	}
	char buf[16384] __attribute__((aligned(NLMSG_ALIGNTO)));
	for (;;) {
		ssize_t len = recv(fd, buf, sizeof buf, 0);
		if (len < 0 && errno == EINTR)
			continue;
		if (len <= 0) {
			rc = len < 0 ? -errno : -EIO;
			goto out;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf;
		     NLMSG_OK(h, (size_t)len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_DONE)
				goto out;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);
				rc = e->error < 0 ? e->error : -EPROTO;
				goto out;
			}
			const struct inet_diag_msg *m = NLMSG_DATA(h);
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof *m) ||
			    ntohs(m->id.idiag_sport) != port ||
			    m->idiag_inode == 0 || *n >= max)
				continue;
			uint8_t addr[16];
			memcpy(addr, m->id.idiag_src, sizeof addr);
			if (listener_reachable(addr, family == AF_INET6))
				inodes[(*n)++] = m->idiag_inode;
		}
	}
out:
	close(fd);
	return rc;
}

/* Is the process st (of uid, alive) ours: in group pgid (by_token
 * false), or carrying env_name=token (by_token true)? */
static bool listener_is_ours(const struct procfs_stat *st, uid_t uid,
			     pid_t pgid, const char *env_name,
			     const char *token, bool by_token)
{
	uid_t owner;
	if (procfs_state_dead(st->state) ||
	    (!by_token && (pgid <= 0 || st->pgrp != pgid)) ||
	    (by_token && st->pgrp == pgid) || /* the first pass saw it */
	    procfs_uid(st->pid, &owner) < 0 || owner != uid)
		return false;
	if (!by_token)
		return true;
	char value[LISTENER_VALUE_MAX];
	return proc_snap_environ(st, uid, env_name, value, sizeof value) == 0 &&
	       strcmp(value, token) == 0;
}

static bool listener_all_held(const bool *held, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!held[i])
			return false;
	return true;
}

enum listener_owner listener_owner(int port, uid_t uid, pid_t pgid,
				   const char *env_name, const char *token)
{
	uint64_t inodes[LISTENER_MAX_INODES];
	size_t n = 0;
	static const int families[] = {AF_INET, AF_INET6};
	for (size_t i = 0; i < 2; i++) {
		size_t before = n;
		int rc = listener_diag(families[i], port, inodes,
				       LISTENER_MAX_INODES, &n);
		if (rc == 0 || (families[i] == AF_INET6 && rc == -ENOENT))
			continue;
		n = before; /* no sock_diag here: the kernel's text */
		listener_proc(families[i], port, inodes, LISTENER_MAX_INODES,
			      &n);
	}
	if (n == 0)
		return LISTENER_NONE;
	bool held[LISTENER_MAX_INODES] = {false};
	struct proc_snap *snap = NULL;
	if (proc_snap_take(&snap) < 0)
		return LISTENER_OTHER; /* unproven is not ours */
	/* The group first: its stat lines are in the snapshot.
	 * Environments (the costly read) only when a listener is still
	 * unaccounted for. */
	for (int pass = 0; pass < 2 && !listener_all_held(held, n); pass++) {
		if (pass == 1 && token == NULL)
			break;
		for (size_t i = 0; i < proc_snap_count(snap); i++) {
			const struct procfs_stat *st = proc_snap_at(snap, i);
			if (listener_is_ours(st, uid, pgid, env_name, token,
					     pass == 1))
				listener_mark_fds(st->pid, inodes, n, held);
		}
	}
	proc_snap_free(snap);
	return listener_all_held(held, n) ? LISTENER_OURS : LISTENER_OTHER;
}

/* Node, Go, Python, Rust and Java servers; podman ("bind: address
 * already in use") and docker ("port is already allocated"); a server's
 * own "Port N is already in use". Not a bare "already in use": the
 * engines say that of a container name taken, which no new port cures. */
bool listener_says_addr_in_use(const char *line, size_t len)
{
	static const char *const pats[] = {
		"eaddrinuse",	  "address already in use",
		"address in use", "port is already allocated",
		"errno 98",	  "os error 98",
	};
	char low[LISTENER_LINE_MAX + 1];
	size_t n = len < LISTENER_LINE_MAX ? len : LISTENER_LINE_MAX;
	for (size_t i = 0; i < n; i++)
		low[i] = (char)(line[i] >= 'A' && line[i] <= 'Z'
					? line[i] - 'A' + 'a'
					: line[i]);
	low[n] = '\0';
	for (size_t i = 0; i < sizeof pats / sizeof *pats; i++)
		if (strstr(low, pats[i]) != NULL)
			return true;
	const char *port = strstr(low, "port ");
	const char *inuse = strstr(low, "already in use");
	return port && inuse && port < inuse && strstr(low, "name") == NULL;
}
