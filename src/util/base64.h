/*
 * Base64 (RFC 4648), the standard and the URL alphabets, one codec for
 * every user: HTTP Basic credentials and PKCE (auth/), the header values
 * of 2026-07-28 (jsonrpc/envelope), the sealed requestState (modern/).
 * Decoding is canonical: one encoding per byte string (bits past the last
 * byte must be 0), so no changed character decodes to the same bytes.
 */
#ifndef MCPV_BASE64_H
#define MCPV_BASE64_H

#include <stdbool.h>
#include <stddef.h>

struct buf;

enum base64_alphabet {
	BASE64_STD, /* A-Z a-z 0-9 + / */
	BASE64_URL, /* A-Z a-z 0-9 - _ */
};

/* Characters the encoding of len bytes takes, padded or not. */
size_t base64_encoded_len(size_t len, bool pad);
/* Writes the encoding of data into out (base64_encoded_len + 1 bytes),
 * NUL-terminated; '=' padding when pad. Returns the characters written. */
size_t base64_encode(char *out, const void *data, size_t len,
		     enum base64_alphabet a, bool pad);
/* The same, appended to a buffer. */
void base64_append(struct buf *out, const void *data, size_t len,
		   enum base64_alphabet a, bool pad);
/* Decodes n characters into out (room for n / 4 * 3 + 2 bytes). padded:
 * n is a multiple of 4 and '=' may end the last group; else no '='
 * appears. The number of bytes, or -1 for any other character, a bad
 * length or padding, or bits set past the last byte. */
long base64_decode(const char *in, size_t n, unsigned char *out,
		   enum base64_alphabet a, bool padded);

#endif
