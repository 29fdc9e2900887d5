/*
 * Progress tokens the runtime sends to servers in place of its clients':
 * opaque (nothing of a session in them), unique in the runtime, and mapped
 * back to their call in O(1). A bijection of a counter under a random key
 * makes them distinct without a check and tells a server nothing.
 */
#ifndef MCPV_TOKENS_H
#define MCPV_TOKENS_H

#include <stdint.h>

#include "util/hmap.h"

#define TOKENS_PREFIX "mcpv-"
#define TOKENS_LEN (5 + 16)

struct tokens {
	struct hmap map; /* token -> what it stands for */
	uint64_t key, seq;
};

void tokens_init(struct tokens *t);
void tokens_free(struct tokens *t);
/* A new token (never 0) for val. */
uint64_t tokens_add(struct tokens *t, void *val);
void tokens_drop(struct tokens *t, uint64_t tok, void *val);
/* The token's text, TOKENS_LEN + 1 bytes with the NUL. */
void tokens_format(uint64_t tok, char *out);
/* What a token's text stands for, or NULL (not ours, or dropped). */
void *tokens_find(const struct tokens *t, const char *text);

#endif
