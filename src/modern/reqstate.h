/*
 * The requestState mcpvisor gives a 2026-07-28 client when it answers
 * input_required for a call it keeps waiting upstream (SEP-2322): an
 * opaque string, authenticated with a key made for this runtime (HMAC
 * with SHA-256), bound to the client (its principal), to the method and a
 * digest of the request's params, short-lived and good once. It names the
 * waiting call by a random handle; it carries nothing else a client could
 * read or use (the principal and the request are in it only as digests
 * keyed with the runtime's key). Time comes from util/clock.h.
 */
#ifndef MCPV_REQSTATE_H
#define MCPV_REQSTATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A state is good this long after it was made. */
#define REQSTATE_TTL_MS (10 * 60 * 1000)
/* Handles: 128 random bits, as 32 hex digits and a NUL. */
#define REQSTATE_HANDLE_LEN 33
/* A state string is at most this long (a longer one is refused unread). */
#define REQSTATE_MAX_LEN 512

struct reqstate;

/* A new key from the kernel's random source; at most max_live states
 * outstanding (0: 4096): sealing one more forgets the oldest. */
struct reqstate *reqstate_new(size_t max_live);
void reqstate_free(struct reqstate *rs);

/* The digest a state binds: method and params, with params' _meta,
 * inputResponses and requestState left out (they change between rounds),
 * as canonical JSON (sorted keys). params may be NULL, which digests as
 * {} does. out: 32 bytes. */
void reqstate_digest(const char *method, json_t *params, unsigned char out[32]);

/* Makes a state for the call waiting under handle (32 lowercase hex
 * digits, written by the caller from util/random.h or by
 * reqstate_handle), bound to principal (any string; NULL is ""), method
 * and digest. Returns the state string (caller frees), or NULL when handle
 * is not of that form. The state is live until opened, expired or
 * forgotten; one state per handle is live: sealing a handle again (the
 * next round of the same call) makes the earlier state USED, and each
 * state differs from the one before. */
char *reqstate_seal(struct reqstate *rs, const char *handle,
		    const char *principal, const char *method,
		    const unsigned char digest[32]);
/* A fresh random handle into out. */
void reqstate_handle(char out[REQSTATE_HANDLE_LEN]);

enum reqstate_verdict {
	REQSTATE_OK,	    /* authentic, live, this client's: now used */
	REQSTATE_MALFORMED, /* not a state of this form, or too long */
	REQSTATE_TAMPERED,  /* the MAC does not match (another key too) */
	REQSTATE_EXPIRED,   /* older than REQSTATE_TTL_MS */
	REQSTATE_USED,	    /* opened before, or forgotten */
	REQSTATE_FOREIGN,   /* another principal's */
	REQSTATE_MISMATCH,  /* another method or other params */
};

/* Opens a state sent back by a client: the verdict, and the handle it
 * names into handle (REQSTATE_HANDLE_LEN; may be NULL) when the MAC holds
 * (any verdict but MALFORMED and TAMPERED, which write ""), so the caller
 * can cancel the call it names. The first failing check gives the
 * verdict, in this order: the form, the MAC, expiry, the principal, the
 * request, whether it is still live. Only REQSTATE_OK uses it up; a state
 * that is USED, EXPIRED, FOREIGN or MISMATCH stays as it was (a foreign
 * client cannot spend another's state). principal NULL is "". */
enum reqstate_verdict reqstate_open(struct reqstate *rs, const char *state,
				    const char *principal, const char *method,
				    const unsigned char digest[32],
				    char handle[REQSTATE_HANDLE_LEN]);
/* Whether state has the form's prefix: mcpvisor made it (or it was made
 * to look so), whatever else is wrong with it. */
bool reqstate_claims(const char *state);
/* The handle a state names, read without checking it (into handle;
 * "" when the state is not of this form): after a tampered state, the
 * caller may cancel the call it names, when that call is the same
 * client's. */
void reqstate_peek(const char *state, char handle[REQSTATE_HANDLE_LEN]);
/* Forgets the live state naming handle (its call ended or was
 * cancelled): opening it later gives REQSTATE_USED. */
void reqstate_forget(struct reqstate *rs, const char *handle);
/* A short reason for a verdict, for the client's error message. */
const char *reqstate_verdict_str(enum reqstate_verdict v);
/* Live states now (for status and tests). */
size_t reqstate_live(const struct reqstate *rs);

#endif
