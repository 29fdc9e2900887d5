/*
 * Backpressure from clients to a producer (a server instance). A flow
 * counts the bytes a producer made that still wait on client connections
 * (gathered or queued, not yet taken by the socket). Over the high-water
 * mark the producer is told to pause (it stops reading the server's
 * stdout); at or under the low-water mark it is told to go on.
 *
 * Attribution: whatever the endpoint writes while a producer's message is
 * being handled (flow_current is set around it) is that producer's. Every
 * byte a connection kept under a flow is given back once: when the socket
 * took it, when its write failed or was cancelled, or when the connection
 * closed. A connection holds a reference, so a flow outlives its producer
 * for as long as output it made is still queued.
 *
 * Why a "current producer" and not a tag on each exchange: everything a
 * server's line causes reaches the connections synchronously, inside the
 * instance's message callback (answers on the fast text path, parsed
 * answers, notifications, requests to the client). One pointer set around
 * that callback attributes all of it, with no change to the session or
 * exchange APIs and no allocation: ep_write tests one pointer, and a
 * connection's write request carries one flow and a byte count. Bytes a
 * line causes that are not the server's (a pipelined request answered
 * when the server's answer ends it) are counted too, and given back the
 * same way: the sums never drift.
 *
 * What pausing costs: calls to a paused server wait until its slow
 * clients read, leave, or are closed by the endpoint's stalled-writer
 * deadline (the idle timeout); a server restarted while its flow is over
 * the low mark starts paused.
 */
#ifndef MCPV_FLOW_H
#define MCPV_FLOW_H

#include <stdbool.h>
#include <stddef.h>

#define FLOW_HIGH ((size_t)4 * 1024 * 1024)
#define FLOW_LOW ((size_t)1 * 1024 * 1024)

struct flow {
	size_t queued;
	size_t high, low;
	bool paused;
	int refs;
	/* Told when the flow crosses a mark; NULL once the producer is gone. */
	void (*pause)(void *arg, bool on);
	void *arg;
};

/* The producer whose output is being delivered now; NULL outside. */
extern struct flow *flow_current;

struct flow *flow_new(void (*pause)(void *arg, bool on), void *arg);
void flow_ref(struct flow *f);
void flow_unref(struct flow *f);
/* The producer is gone: no more calls to pause. Drops its reference. */
void flow_detach(struct flow *f);
void flow_add(struct flow *f, size_t n);
void flow_sub(struct flow *f, size_t n);

#endif
