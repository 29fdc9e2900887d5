/*
 * SHA-256 on OpenSSL EVP. libcrypto is loaded on the first hash (dlopen),
 * as libcurl is on the first outbound HTTP: mapped and relocated at start
 * it is some 1.4 MB of an idle runtime's RSS, and a runtime that never
 * needs a digest never maps it. The EVP_MD is fetched once per process
 * because a fetch per call made small hashes 2.3x slower (NOTES.md).
 */
#include "util/sha256.h"

#include <dlfcn.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/dl.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* SHA-256's block: an HMAC key is padded or hashed to this length. */
#define SHA256_BLOCK 64

/* Debian's libcrypto3 (the one libssl-dev's headers describe). */
#define SHA256_CRYPTO_SO "libcrypto.so.3"

struct sha256_ctx {
	EVP_MD_CTX *md;
};

/* The few EVP functions used, typed as the headers declare them. */
static struct {
	__typeof__(&EVP_MD_fetch) md_fetch;
	__typeof__(&EVP_Digest) digest;
	__typeof__(&EVP_MD_CTX_new) ctx_new;
	__typeof__(&EVP_MD_CTX_free) ctx_free;
	__typeof__(&EVP_DigestInit_ex) init;
	__typeof__(&EVP_DigestUpdate) update;
	__typeof__(&EVP_DigestFinal_ex) final;
} evp;

static EVP_MD *sha256_md;
static pthread_once_t sha256_md_once = PTHREAD_ONCE_INIT;

#define SHA256_SYM(field, name) dl_sym(h, name, &evp.field, sizeof evp.field)

static void sha256_md_fetch_cb(void)
{
	/* Never unloaded: OpenSSL keeps global state for the process. */
	void *h = dlopen(SHA256_CRYPTO_SO, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL || !SHA256_SYM(md_fetch, "EVP_MD_fetch") ||
	    !SHA256_SYM(digest, "EVP_Digest") ||
	    !SHA256_SYM(ctx_new, "EVP_MD_CTX_new") ||
	    !SHA256_SYM(ctx_free, "EVP_MD_CTX_free") ||
	    !SHA256_SYM(init, "EVP_DigestInit_ex") ||
	    !SHA256_SYM(update, "EVP_DigestUpdate") ||
	    !SHA256_SYM(final, "EVP_DigestFinal_ex"))
		return;
	sha256_md = evp.md_fetch(NULL, "SHA256", NULL);
}

/* Failure here means a broken OpenSSL install; nothing can be hashed. */
static void sha256_die(const char *what)
{
	log_error("OpenSSL SHA-256 failed in %s (is %s installed?)", what,
		  SHA256_CRYPTO_SO);
	abort();
}

static const EVP_MD *sha256_get_md(void)
{
	pthread_once(&sha256_md_once, sha256_md_fetch_cb);
	if (sha256_md == NULL)
		sha256_die("EVP_MD_fetch");
	return sha256_md;
}

bool sha256_equal(const unsigned char a[32], const unsigned char b[32])
{
	/* Constant time: every byte is looked at, whatever differs. */
	volatile unsigned char diff = 0;
	for (int i = 0; i < SHA256_BYTES; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}

void sha256_bytes(const void *data, size_t len, unsigned char out[32])
{
	unsigned int n = 0;
	const EVP_MD *md = sha256_get_md();
	if (evp.digest(data, len, out, &n, md, NULL) != 1 || n != SHA256_BYTES)
		sha256_die("EVP_Digest");
}

static void sha256_to_hex(const unsigned char d[32], char out[65])
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < SHA256_BYTES; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 0xf];
	}
	out[2 * SHA256_BYTES] = '\0';
}

void sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char d[SHA256_BYTES];
	sha256_bytes(data, len, d);
	sha256_to_hex(d, out);
}

struct sha256_ctx *sha256_new(void)
{
	struct sha256_ctx *c = xcalloc(1, sizeof *c);
	const EVP_MD *md = sha256_get_md();
	c->md = evp.ctx_new();
	if (c->md == NULL)
		sha256_die("EVP_MD_CTX_new");
	if (evp.init(c->md, md, NULL) != 1)
		sha256_die("EVP_DigestInit_ex");
	return c;
}

void sha256_update(struct sha256_ctx *c, const void *data, size_t len)
{
	if (len > 0 && evp.update(c->md, data, len) != 1)
		sha256_die("EVP_DigestUpdate");
}

void sha256_final(struct sha256_ctx *c, unsigned char out[32])
{
	unsigned int n = 0;
	if (evp.final(c->md, out, &n) != 1 || n != SHA256_BYTES)
		sha256_die("EVP_DigestFinal_ex");
	if (evp.init(c->md, sha256_md, NULL) != 1)
		sha256_die("EVP_DigestInit_ex");
}

void sha256_final_hex(struct sha256_ctx *c, char out[65])
{
	unsigned char d[SHA256_BYTES];
	sha256_final(c, d);
	sha256_to_hex(d, out);
}

void sha256_free(struct sha256_ctx *c)
{
	if (c == NULL)
		return;
	evp.ctx_free(c->md);
	free(c);
}

void sha256_hmac(const void *key, size_t klen, const void *data, size_t len,
		 unsigned char out[32])
{
	/* RFC 2104: H((K ^ opad) || H((K ^ ipad) || data)). Built on the
	 * incremental API rather than EVP_MAC so the dlopen'd surface stays
	 * the few digest functions above. */
	unsigned char k[SHA256_BLOCK] = {0};
	unsigned char pad[SHA256_BLOCK];
	unsigned char inner[SHA256_BYTES];
	if (klen > SHA256_BLOCK)
		sha256_bytes(key, klen, k);
	else if (klen > 0)
		memcpy(k, key, klen);
	struct sha256_ctx *c = sha256_new();
	for (int i = 0; i < SHA256_BLOCK; i++)
		pad[i] = k[i] ^ 0x36;
	sha256_update(c, pad, sizeof pad);
	sha256_update(c, data, len);
	sha256_final(c, inner);
	for (int i = 0; i < SHA256_BLOCK; i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_update(c, pad, sizeof pad);
	sha256_update(c, inner, sizeof inner);
	sha256_final(c, out);
	sha256_free(c);
	/* The key, and what is derived from it, leave no copy on the stack. */
	explicit_bzero(k, sizeof k);
	explicit_bzero(pad, sizeof pad);
	explicit_bzero(inner, sizeof inner);
}
