/*
 * The 2026-07-28 side of an upstream, whatever carries it (HTTP: up_http.c;
 * stdio: up_stdio.c, through the small sending interface below): the
 * instance speaks 2025 to its transport (initialize,
 * notifications/initialized, requests by id); this finds out the server's
 * era and, for a server of the revision, speaks it instead.
 *
 * The probe: over HTTP (and on a process known to be of the revision) the
 * initialize becomes server/discover (the revision's fallback rules: a
 * DiscoverResult naming 2026-07-28 is modern; anything else, a 4xx without
 * an answer included, is not, and the initialize goes as it came). On a
 * process of unknown era the initialize goes first, as it came (some 2025
 * stdio servers exit on an unknown method before it: nothing else may
 * reach one), and only its error is followed by server/discover on the
 * same process. A modern server's discover answer is given to the
 * instance as the initialize answer.
 *
 * Then every request goes with the revision's _meta (protocol version,
 * clientCapabilities: the request's own when a modern client sent them,
 * else those the instance initialized with, which are its client's;
 * clientInfo: the instance's; logLevel: what a 2025 client's
 * logging/setLevel asked, answered here), over HTTP with the standard
 * headers (Mcp-Param-* for a tool's x-mcp-header arguments; a tool whose
 * annotations the revision forbids is not listed), without a session.
 * Cancellation is the stream's end over HTTP, notifications/cancelled on
 * a channel (stdio); other notifications to the server are dropped. List
 * changes and the resources a 2025 client subscribed to (resources/
 * subscribe and unsubscribe, answered here) come from one
 * subscriptions/listen stream, opened again with the new filter when the
 * set changes, passed on as 2025 notifications. A 2025 client's call that
 * the server answers with input_required is carried on by mcpvisor
 * (up_mrtr.c).
 */
#ifndef MCPV_TRANSPORT_UP_MODERN_H
#define MCPV_TRANSPORT_UP_MODERN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jsonrpc/outbox.h"

struct upm;

/* How messages reach the server: the transport's side. */
struct upm_wire {
	/* A message of the revision (over HTTP its POST gets the standard
	 * headers from the message, and the header lines given, NULL-ended;
	 * a channel ignores them). 0 or -errno. */
	int (*post)(void *w, const char *msg, size_t len, int64_t id,
		    const char *const *headers);
	/* A message as it came (the 2025 way). 0 or -errno. */
	int (*send)(void *w, const char *msg, size_t len, int64_t id);
	/* Request id's answer is no longer waited for: its stream goes (the
	 * revision's cancellation over HTTP). NULL on a channel. */
	void (*forget)(void *w, int64_t id);
	/* Asks the transport to call upm_run_later soon, outside of its
	 * send (what upm_send answers itself cannot reach the instance from
	 * inside the send: the instance keeps the request only after). */
	void (*kick)(void *w);
	/* One channel for every message (stdio): answers are known by their
	 * id and listen streams by the subscription id in _meta,
	 * cancellation is notifications/cancelled. */
	bool channel;
};

/* How the era is found out at the initialize. */
enum upm_probe {
	UPM_PROBE_NONE,	      /* known to be 2025: everything as it comes */
	UPM_PROBE_DISCOVER,   /* server/discover first (HTTP; a process
				 known to be of the revision) */
	UPM_PROBE_AFTER_INIT, /* the initialize first, as it came; its error
				 is followed by server/discover (a process
				 of unknown era) */
};

/* Where what the server sends goes (the upstream's callbacks). */
struct upm_out {
	void (*message)(void *ctx, const char *msg, size_t len,
			int64_t related);
	void (*lost)(void *ctx, int64_t id, enum outbox_fact f);
};

/* A listen stream that ends within UPM_LISTEN_SHORT_MS of its request is
 * short-lived; after UPM_MAX_RELISTENS of those in a row, list changes
 * are no longer listened for. */
#define UPM_LISTEN_SHORT_MS 10000
#define UPM_MAX_RELISTENS 5
/* input_required rounds mcpvisor answers for a 2025 client's call before
 * it gives up on the call. */
#define UPM_MAX_ROUNDS 8

/* wire and wctx are borrowed for the life of the upm. */
struct upm *upm_new(const struct upm_wire *wire, void *wctx, enum upm_probe how,
		    const struct upm_out *out, void *ctx);
void upm_free(struct upm *p);
/* What the instance's clients subscribed to before this upstream (uri ->
 * count, from upstream_spec.subs; copied): the first listen stream
 * follows them, and unsubscribes count down from them. Right after
 * upm_new. */
void upm_follow(struct upm *p, const json_t *subs);

/* One message from the instance: 1 when it went (or was dropped) the
 * era's way, 0 when the caller sends it as it is (the wire's send), or -errno
 * as for the wire's send. */
int upm_send(struct upm *p, const char *msg, size_t len, int64_t id);
/* What came from the server: true when it was dealt with here (passed on
 * changed, or dropped), false when the caller passes it on as it came.
 * related: as the transport knows it (0 on a channel: found here). */
bool upm_message(struct upm *p, const char *msg, size_t len, int64_t related);
/* A lost answer: true when it was the probe's or the listen stream's (dealt
 * with here). */
bool upm_lost(struct upm *p, int64_t id, enum outbox_fact f);
/* Request id is cancelled (its stream goes: the revision's cancel over
 * HTTP; on a channel the instance's notifications/cancelled says it). */
void upm_forget(struct upm *p, int64_t id);
/* Gives the instance what was answered inside upm_send (wire kick). */
void upm_run_later(struct upm *p);
/* Whether the server speaks 2026-07-28 (known after the probe). */
bool upm_modern(const struct upm *p);

#endif
