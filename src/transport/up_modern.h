/*
 * The 2026-07-28 side of an HTTP upstream: the instance speaks 2025 to
 * its transport (initialize, notifications/initialized, requests by id);
 * this finds out the server's era and, for a server of the revision,
 * speaks it instead. The initialize becomes a server/discover probe (the
 * revision's fallback rules: a DiscoverResult naming 2026-07-28 is
 * modern; anything else, a 4xx without an answer included, is not, and
 * the initialize goes as it came); a modern server's discover answer is
 * given to the instance as the initialize answer. Then every request goes
 * with the revision's _meta (protocol version, clientCapabilities: the
 * request's own when a modern client sent them, else those the instance
 * initialized with, which are its client's; clientInfo: the instance's),
 * and the standard headers (Mcp-Param-* for a tool's x-mcp-header
 * arguments; a tool whose annotations the revision forbids is not
 * listed), without a session; notifications to the server are dropped
 * (cancellation is the stream's end, mcpc_forget); list changes come from
 * one subscriptions/listen stream, passed on as 2025 list_changed. A
 * 2025 client's call that the server answers with input_required is
 * carried on by mcpvisor (up_mrtr.c).
 */
#ifndef MCPV_TRANSPORT_UP_MODERN_H
#define MCPV_TRANSPORT_UP_MODERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jsonrpc/outbox.h"

struct mcpc;
struct upm;

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

/* probe: find out the era at the initialize; false: the server is known
 * to be of a 2025 revision, and everything goes as it comes. */
struct upm *upm_new(struct mcpc *m, bool probe, const struct upm_out *out,
		    void *ctx);
void upm_free(struct upm *p);

/* One message from the instance: 1 when it went (or was dropped) the
 * era's way, 0 when the caller sends it as it is (mcpc_send), or -errno
 * as for mcpc_send. */
int upm_send(struct upm *p, const char *msg, size_t len, int64_t id);
/* What came from the server: true when it was dealt with here (passed on
 * changed, or dropped), false when the caller passes it on as it came. */
bool upm_message(struct upm *p, const char *msg, size_t len, int64_t related);
/* A lost answer: true when it was the probe's or the listen stream's (dealt
 * with here). */
bool upm_lost(struct upm *p, int64_t id, enum outbox_fact f);
/* Request id is cancelled (its stream goes: the revision's cancel). */
void upm_forget(struct upm *p, int64_t id);
/* Whether the server speaks 2026-07-28 (known after the probe). */
bool upm_modern(const struct upm *p);

#endif
