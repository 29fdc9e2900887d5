/*
 * Leases on one instance: which sessions use it (members) and which hold
 * it with a request in flight (holders), counted exactly: once per session
 * per instance, never negative, every change made in one step so that an
 * interrupted request cannot leave a stale count. Also when it became
 * unheld, for the idle deadline. Pure bookkeeping, no timers.
 */
#ifndef MCPV_LEASE_H
#define MCPV_LEASE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lease_set;

/* now_ms: when the instance was made; it counts as unheld from then. */
struct lease_set *lease_set_new(uint64_t now_ms);
void lease_set_free(struct lease_set *ls);

/* The session uses the instance (idempotent). */
void lease_join(struct lease_set *ls, const char *session_id);
/* A request of the session starts: joins if needed and counts it. True
 * when the instance went from unheld to held. */
bool lease_take(struct lease_set *ls, const char *session_id);
/* A request of the session ends (never below zero). True when the instance
 * went from held to unheld; the idle clock starts at now_ms. */
bool lease_drop(struct lease_set *ls, const char *session_id, uint64_t now_ms);
/* The session is gone: its membership and all its leases go in one step.
 * True when that left the instance unheld (idle clock starts). */
bool lease_leave(struct lease_set *ls, const char *session_id, uint64_t now_ms);

unsigned lease_members(const struct lease_set *ls);
/* Sessions with at least one request in flight. */
unsigned lease_holders(const struct lease_set *ls);
/* Requests in flight over all sessions. */
unsigned lease_requests(const struct lease_set *ls);
bool lease_is_member(const struct lease_set *ls, const char *session_id);
/* When the instance last became unheld (or was made); meaningful only
 * while lease_holders() == 0. */
uint64_t lease_idle_since(const struct lease_set *ls);
/* Whether an instance idle for idle_ms should close now. */
bool lease_idle_due(const struct lease_set *ls, uint64_t now_ms,
		    uint64_t idle_ms);
/* Restarts the idle clock (a fresh start with nobody holding it). */
void lease_touch(struct lease_set *ls, uint64_t now_ms);

/* The i-th member's session id (order changes as members leave), or NULL
 * past the end; *requests (may be NULL) gets its requests in flight. */
const char *lease_member_at(const struct lease_set *ls, size_t i,
			    unsigned *requests);

/* ["session id", ...] of the members; holders get "(n requests)". */
json_t *lease_describe(const struct lease_set *ls);

#endif
