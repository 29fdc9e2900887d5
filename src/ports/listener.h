/*
 * Local HTTP servers' addresses: the {port} template in args, env and
 * url; the loopback rule for their url; and the proof that what listens
 * on a port is the server we started (the socket's inode, from
 * /proc/net/tcp and tcp6, held by a process of our child's group or one
 * carrying our owner token), so mcpvisor never talks MCP to, nor signals,
 * a program that took the port first.
 */
#ifndef MCPV_PORTS_LISTENER_H
#define MCPV_PORTS_LISTENER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define LISTENER_TEMPLATE "{port}"
#define LISTENER_MAX_INODES 16 /* listeners counted on one port */
/* /proc/net/tcp holds one line per socket of the namespace; a host with
 * more than this many is read this far (the listener then may be missed,
 * and the server is not trusted). */
#define LISTENER_PROC_NET_MAX (8 * 1024 * 1024)

/* s with every "{port}" replaced by the port's digits; caller frees. */
char *listener_subst(const char *s, int port);

/* Whether the url's host is a loopback address: 127.0.0.1, [::1] or
 * localhost (any case), after an optional user info. 0 when it is;
 * -EINVAL when the url has no http:// or https:// host; -EPERM when the
 * host is something else. */
int listener_url_loopback(const char *url);

/* From the text of /proc/net/tcp (v6 false) or tcp6 (v6 true), the
 * inodes of the sockets in LISTEN state on port at an address that a
 * connection to the loopback can reach: 127.0.0.1, 0.0.0.0, ::1, ::,
 * ::ffff:127.0.0.1, ::ffff:0.0.0.0. Appends to inodes (at most max in
 * all, *n counts them). Malformed lines are skipped. */
void listener_parse_proc_net(const char *text, size_t len, bool v6, int port,
			     uint64_t *inodes, size_t max, size_t *n);

/* The listeners on port that a connection to the loopback can reach
 * (as above), of one family (AF_INET, AF_INET6), appended to inodes.
 * listener_diag asks the kernel through sock_diag, which filters by
 * state: a host with thousands of connections answers with its few
 * listeners, where /proc/net/tcp lists them all (13,000 lines took 35 ms
 * to read here, sock_diag 1 ms). 0, or -errno when netlink is not
 * available (-ENOENT: no such family). listener_proc reads /proc, the
 * fallback. */
int listener_diag(int family, int port, uint64_t *inodes, size_t max,
		  size_t *n);
void listener_proc(int family, int port, uint64_t *inodes, size_t max,
		   size_t *n);

enum listener_owner {
	LISTENER_NONE,	/* nothing listens there (yet) */
	LISTENER_OURS,	/* every listener is held by one of ours */
	LISTENER_OTHER, /* at least one is not: a squatter */
};

/* Who listens on the loopback port. Ours: processes of uid in process
 * group pgid, or whose environment holds env_name=token (token NULL:
 * only the group counts). Reads /proc: run it off the loop thread. */
enum listener_owner listener_owner(int port, uid_t uid, pid_t pgid,
				   const char *env_name, const char *token);

/* Whether a line a server printed says its port is taken (Node, Go,
 * Python, Rust, and the container engines: "address already in use"), and
 * not something else in use (a container's name).
 * Only the first LISTENER_LINE_MAX bytes are read. */
#define LISTENER_LINE_MAX 512
bool listener_says_addr_in_use(const char *line, size_t len);

#endif
