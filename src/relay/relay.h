/*
 * The relay's core: the host's MCP session on stdio carried to the runtime
 * across losses. It decides (what is lost, what is sent again, when to
 * ping, when to tell the host) and does no I/O: the session to the
 * runtime, the ping, finding or replacing the runtime, the host's stdout
 * and the timer are the caller's (relay/run.c on mcpc, or a test's fakes),
 * and their results come back through the relay_* event calls. Time is
 * clock_now_ms(), so tests drive it with the fake clock.
 *
 * The host may speak either era on the same stdio: a message whose
 * params._meta claims MCP 2026-07-28 is forwarded as one (no initialize
 * needed, cancelled by dropping its stream), a subscriptions/listen is
 * kept open across runtimes; the rest is the 2025 session.
 */
#ifndef MCPV_RELAY_RELAY_H
#define MCPV_RELAY_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jsonrpc/outbox.h"

/* Silence on a request (no byte, no heartbeat) before the runtime is
 * pinged: the runtime writes a heartbeat about once a second. */
#define RELAY_SILENCE_MS 1500
/* A ping that has no answer after this: the runtime is lost. */
#define RELAY_PING_TIMEOUT_MS 1000
/* A request waits at most this long for a recovery; then the host hears
 * that the runtime is still coming (hosts give up after about 60 s). */
#define RELAY_RECOVERY_CAP_MS 45000
/* Host lines longer than this get an error. */
#define RELAY_MAX_LINE (16 * 1024 * 1024)

/* Why the runtime is lost; what recovery may do depends on it. */
enum relay_loss {
	RELAY_LOSS_NONE,    /* no runtime yet (the relay is starting) */
	RELAY_LOSS_REFUSED, /* it could not be reached */
	RELAY_LOSS_STREAM,  /* a stream ended with no answer */
	RELAY_LOSS_SILENT,  /* pings went unanswered */
};

struct relay_ops {
	/* A new session to the runtime recovery found (the old one is
	 * closed). 0 or -errno (then: lost, refused). */
	int (*link_open)(void *ctx);
	/* One message; id > 0 for a request (ours), 0 otherwise. 0 or
	 * -errno (nothing was sent). */
	int (*link_send)(void *ctx, const char *msg, size_t len, int64_t id);
	/* One message of MCP 2026-07-28 (its params._meta claims the
	 * version): a POST of its own, no session, its answer and stream
	 * reported with related = id; dropping its stream (link_forget)
	 * cancels it. As link_send otherwise. */
	int (*link_send_modern)(void *ctx, const char *msg, size_t len,
				int64_t id);
	void (*link_forget)(void *ctx, int64_t id);
	/* Drops the session; no event of it comes after this. */
	void (*link_close)(void *ctx);
	/* A ping on a separate connection; relay_ping_done follows (not from
	 * inside this call). */
	void (*ping)(void *ctx);
	/* Find, start or replace the runtime after a loss of this kind;
	 * relay_recovered follows (not from inside this call). */
	void (*recover)(void *ctx, enum relay_loss why);
	/* One message for the host, without its newline. */
	void (*host_write)(void *ctx, const char *msg, size_t len);
	/* Call relay_tick at clock time at_ms (replaces an earlier wish). */
	void (*arm)(void *ctx, uint64_t at_ms);
	/* The last of the host's requests was answered (relay_pending is 0).
	 * May be NULL. */
	void (*settled)(void *ctx);
};

struct relay;

struct relay *relay_new(const struct relay_ops *ops, void *ctx);
/* Settles nothing more; closes the link when open. */
void relay_free(struct relay *r);
/* Begins: finds or starts the runtime (recover with RELAY_LOSS_NONE). */
void relay_start(struct relay *r);

/* From the host: one line (framed), or a line the framer refused. */
void relay_host_line(struct relay *r, const char *line, size_t len);
void relay_host_garbage(struct relay *r, const char *what);

/* From the session to the runtime (mcpc's callbacks). */
void relay_link_message(struct relay *r, const char *msg, size_t len,
			int64_t related);
/* What mcpc knows of request id whose answer will not come. */
void relay_link_lost(struct relay *r, int64_t id, enum outbox_fact f);
void relay_link_heartbeat(struct relay *r);
enum relay_fault {
	RELAY_FAULT_AUTH,    /* 401/403: the runtime asks for a credential */
	RELAY_FAULT_REFUSED, /* it could not be reached at all */
	RELAY_FAULT_EXPIRED, /* it no longer knows the session (404) */
	RELAY_FAULT_BROKEN,  /* anything else: not MCP, a broken stream */
};
/* The session is unusable; facts: what mcpc knew of requests it had not
 * settled (refused unprocessed, never sent). */
void relay_link_fault(struct relay *r, enum relay_fault f, const char *text,
		      const struct outbox_fact_of *facts, size_t nfacts);

void relay_ping_done(struct relay *r, bool answered);
/* Recovery ended: fail NULL when a runtime is ready for link_open, else
 * one sentence for the host (what to stop, which port to set). */
void relay_recovered(struct relay *r, const char *fail);
/* The clock reached a time asked with arm. */
void relay_tick(struct relay *r);

/* For tests and status: requests in flight, recoveries begun. */
size_t relay_pending(const struct relay *r);
unsigned relay_recoveries(const struct relay *r);
bool relay_live(const struct relay *r);

#endif
