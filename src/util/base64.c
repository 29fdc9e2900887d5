/* Base64 of RFC 4648: one codec, two alphabets, canonical decoding. */
#include "util/base64.h"

#include <stdint.h>

#include "util/buf.h"

static const char *const base64_chars[] = {
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
};

size_t base64_encoded_len(size_t len, bool pad)
{
	return pad ? (len + 2) / 3 * 4 : (len * 4 + 2) / 3;
}

size_t base64_encode(char *out, const void *data, size_t len,
		     enum base64_alphabet a, bool pad)
{
	const unsigned char *p = data;
	const char *chars = base64_chars[a];
	size_t o = 0;
	for (size_t i = 0; i < len; i += 3) {
		size_t n = len - i < 3 ? len - i : 3;
		uint32_t v = (uint32_t)p[i] << 16;
		if (n > 1)
			v |= (uint32_t)p[i + 1] << 8;
		if (n > 2)
			v |= p[i + 2];
		out[o++] = chars[v >> 18 & 63];
		out[o++] = chars[v >> 12 & 63];
		if (n > 1)
			out[o++] = chars[v >> 6 & 63];
		if (n > 2)
			out[o++] = chars[v & 63];
		for (size_t k = n; pad && k < 3; k++)
			out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

void base64_append(struct buf *out, const void *data, size_t len,
		   enum base64_alphabet a, bool pad)
{
	buf_reserve(out, base64_encoded_len(len, pad) + 1);
	out->len += base64_encode(out->data + out->len, data, len, a, pad);
}

static int base64_value(unsigned char c, enum base64_alphabet a)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == (a == BASE64_STD ? '+' : '-'))
		return 62;
	if (c == (a == BASE64_STD ? '/' : '_'))
		return 63;
	return -1;
}

long base64_decode(const char *in, size_t n, unsigned char *out,
		   enum base64_alphabet a, bool padded)
{
	size_t end = n;
	if (padded) {
		if (n % 4 != 0)
			return -1;
		while (end > 0 && n - end < 2 && in[end - 1] == '=')
			end--;
	} else if (n % 4 == 1) {
		return -1; /* one character holds no byte */
	}
	uint32_t acc = 0;
	int bits = 0;
	size_t o = 0;
	for (size_t i = 0; i < end; i++) {
		int v = base64_value((unsigned char)in[i], a);
		if (v < 0)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (acc != 0 || (padded && end % 4 == 1))
		return -1;
	return (long)o;
}
