/*
 * Internal to src/auth: PKCE (RFC 7636) with S256, and the flow's state:
 * random values from the kernel, and the challenge a verifier gives.
 */
#ifndef MCPV_AUTH_PKCE_H
#define MCPV_AUTH_PKCE_H

#include <stdbool.h>

#define PKCE_VERIFIER_LEN 64 /* 256 bits as hex: within 43..128 */
#define PKCE_STATE_LEN 32    /* 128 bits as hex */

void pkce_verifier(char out[PKCE_VERIFIER_LEN + 1]);
void pkce_state(char out[PKCE_STATE_LEN + 1]);
/* BASE64URL(SHA256(verifier)). Caller frees. */
char *pkce_challenge(const char *verifier);
/* Whether a and b are equal, in time that does not depend on where they
 * differ (a state compared against what anyone on the machine sends). */
bool pkce_equal(const char *a, const char *b);

#endif
