/*
 * SHA-256 through OpenSSL EVP, the digest fetched once and reused: the hash
 * behind tool-cache file names and secret fingerprints, and HMAC-SHA-256
 * (RFC 2104) on top of it, the MAC of the requestState mcpvisor seals.
 */
#ifndef MCPV_SHA256_H
#define MCPV_SHA256_H

#include <stdbool.h>
#include <stddef.h>

#define SHA256_BYTES 32
#define SHA256_HEX_BYTES 65 /* 64 hex digits and the NUL */

void sha256_bytes(const void *data, size_t len, unsigned char out[32]);
/* Whether two digests are equal, in constant time (for secrets). */
bool sha256_equal(const unsigned char a[32], const unsigned char b[32]);
/* Lowercase hex, NUL-terminated. */
void sha256_hex(const void *data, size_t len, char out[65]);
/* HMAC-SHA-256 (RFC 2104) of data under key, any key length (a key longer
 * than the 64-byte block is hashed first, as the RFC says). */
void sha256_hmac(const void *key, size_t klen, const void *data, size_t len,
		 unsigned char out[32]);

/* Incremental hashing for data that comes in pieces. */
struct sha256_ctx;

struct sha256_ctx *sha256_new(void);
void sha256_update(struct sha256_ctx *c, const void *data, size_t len);
/* Finishes the digest and readies c for a new one. */
void sha256_final(struct sha256_ctx *c, unsigned char out[32]);
void sha256_final_hex(struct sha256_ctx *c, char out[65]);
void sha256_free(struct sha256_ctx *c);

#endif
