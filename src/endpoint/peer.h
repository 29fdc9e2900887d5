/*
 * The user behind a loopback TCP connection, read from the kernel's socket
 * table: the client's end of the connection is a socket like any other,
 * and the kernel records which uid opened it.
 */
#ifndef MCPV_PEER_H
#define MCPV_PEER_H

#include <sys/types.h>

/* The uid that owns the other end of the connected TCP socket fd (both
 * ends on this host). Asks netlink sock_diag for the one socket with the
 * connection's 4-tuple reversed; when that fails, /proc/net/tcp and
 * tcp6. 0, or -ENOENT when no socket matches (the peer is not local or
 * already gone), or another -errno. */
int peer_tcp_uid(int fd, uid_t *uid);
/* The same through /proc/net/tcp and tcp6 alone (the fallback). */
int peer_tcp_uid_proc(int fd, uid_t *uid);

#endif
