/*
 * Loopback ports for local HTTP servers: the kernel picks a free one (bind
 * 127.0.0.1:0, read it, close), and this allocator keeps what it handed
 * out reserved until the server has bound it or is gone, so two starts at
 * the same moment never get the same port, and skips the ports it handed
 * out most recently when the kernel offers them again (a server that just
 * stopped may still be seen there by a slow client).
 *
 * Loop thread only (no locking). Reservations only protect against this
 * process: another program can still take a port between our close and
 * the server's bind; the local upstream detects that (EADDRINUSE, or a
 * listener that is not ours) and starts again on a new port.
 */
#ifndef MCPV_PORTS_PORTS_H
#define MCPV_PORTS_PORTS_H

#include <stdbool.h>
#include <stddef.h>

#define PORTS_RECENT 32 /* ring of ports handed out last */
#define PORTS_TRIES 64	/* candidates looked at per reservation */

struct ports;

/* Offers one candidate port (> 0) in *port, or -errno. The default asks
 * the kernel; tests put a fake in its place. */
typedef int (*ports_source_fn)(void *arg, int *port);

struct ports *ports_new(void);
/* Drops every reservation. ports_free(NULL) does nothing. */
void ports_free(struct ports *p);

/* The allocator of the process: the reservations only mean something
 * when every local server of one runtime draws from the same set (two
 * sets could hand out one port twice), and the port space they stand for
 * is the host's, not any one owner's. Created on first use; freed by
 * ports_default_free (at exit, for leak checkers). */
struct ports *ports_default(void);
void ports_default_free(void);

/* A free loopback port in *port, reserved until ports_release. A
 * candidate is taken only when it is not reserved and nothing is bound
 * to it on 127.0.0.1 or ::1 (servers that listen on "localhost" may take
 * either). A port handed out recently is taken only when no other came
 * in PORTS_TRIES offers. 0, -EADDRNOTAVAIL when every offer was
 * reserved or taken, or the source's -errno. */
int ports_reserve(struct ports *p, int *port);
/* The server bound it, or its process is gone: it may be handed out
 * again (after the others, see PORTS_RECENT). No-op for a port that is
 * not reserved. */
void ports_release(struct ports *p, int port);
bool ports_is_reserved(const struct ports *p, int port);
size_t ports_count(const struct ports *p);

/* Replaces where candidates come from (NULL: the kernel again). */
void ports_set_source(struct ports *p, ports_source_fn fn, void *arg);

/* Whether port can be bound on 127.0.0.1 and on ::1 right now (::1 is
 * not checked where IPv6 is missing). Binds and closes at once, without
 * SO_REUSEADDR, so any socket bound there counts as taken. */
bool ports_loopback_free(int port);

#endif
