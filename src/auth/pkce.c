/* PKCE S256 and the flow's state value. */
#include "auth/pkce.h"

#include <string.h>

#include "util/base64.h"
#include "util/buf.h"
#include "util/random.h"
#include "util/sha256.h"

void pkce_verifier(char out[PKCE_VERIFIER_LEN + 1])
{
	random_hex(out, PKCE_VERIFIER_LEN / 2);
}

void pkce_state(char out[PKCE_STATE_LEN + 1])
{
	random_hex(out, PKCE_STATE_LEN / 2);
}

char *pkce_challenge(const char *verifier)
{
	unsigned char d[SHA256_BYTES];
	struct buf b;
	sha256_bytes(verifier, strlen(verifier), d);
	buf_init(&b);
	base64_append(&b, d, sizeof d, BASE64_URL, false);
	return buf_steal(&b);
}

bool pkce_equal(const char *a, const char *b)
{
	unsigned char da[SHA256_BYTES], db[SHA256_BYTES];
	sha256_bytes(a, strlen(a), da);
	sha256_bytes(b, strlen(b), db);
	return sha256_equal(da, db);
}
