/* Opaque progress tokens and their table. */
#include "session/tokens.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/random.h"

void tokens_init(struct tokens *t)
{
	char key[17];
	hmap_init(&t->map);
	random_hex(key, 8);
	t->key = strtoull(key, NULL, 16);
	t->seq = 0;
}

void tokens_free(struct tokens *t)
{
	hmap_free(&t->map);
}

uint64_t tokens_add(struct tokens *t, void *val)
{
	uint64_t tok;
	do
		tok = hmap_mix(t->key ^ ++t->seq);
	while (tok == 0);
	hmap_put(&t->map, tok, val);
	return tok;
}

void tokens_drop(struct tokens *t, uint64_t tok, void *val)
{
	hmap_del(&t->map, tok, val);
}

void tokens_format(uint64_t tok, char *out)
{
	snprintf(out, TOKENS_LEN + 1, TOKENS_PREFIX "%016llx",
		 (unsigned long long)tok);
}

void *tokens_find(const struct tokens *t, const char *text)
{
	size_t plen = strlen(TOKENS_PREFIX);
	if (text == NULL || strlen(text) != TOKENS_LEN ||
	    strncmp(text, TOKENS_PREFIX, plen) != 0)
		return NULL;
	uint64_t tok = 0;
	for (const char *p = text + plen; *p; p++) {
		int d = *p >= '0' && *p <= '9'	 ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
						 : -1;
		if (d < 0)
			return NULL;
		tok = tok << 4 | (uint64_t)d;
	}
	struct hmap_node *n = hmap_first(&t->map, tok);
	return n ? n->val : NULL;
}
