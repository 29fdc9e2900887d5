/* String keys to pointers: open addressing, linear probing, deletion by
 * backward shift (no tombstones, so a busy map never degrades). */
#include "util/keymap.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/random.h"
#include "util/xmalloc.h"

#define KEYMAP_MIN_CAP 8

/* Drawn on the first hash (see keymap.h). */
static uint64_t keymap_seed;
static bool keymap_seeded;

void keymap_seed_set(uint64_t seed)
{
	keymap_seed = seed;
	keymap_seeded = true;
}

static uint64_t keymap_seed_get(void)
{
	if (__builtin_expect(!keymap_seeded, 0)) {
		random_bytes(&keymap_seed, sizeof keymap_seed);
		keymap_seeded = true;
	}
	return keymap_seed;
}

uint64_t keymap_hash(const char *key)
{
	/* Eight bytes per step (most keys are canonical JSON of a few
	 * hundred bytes); the tail and the length finish it. Each step
	 * multiplies, so how two keys' states differ after a word depends
	 * on the seed: colliding keys cannot be made without it. */
	size_t len = strlen(key);
	uint64_t h = (0x9e3779b97f4a7c15ULL ^ keymap_seed_get()) ^ len;
	const unsigned char *p = (const unsigned char *)key;
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
		p += 8;
		len -= 8;
	}
	uint64_t w = 0;
	memcpy(&w, p, len);
	/* The tail, then a full finish (MurmurHash3's): a multiply carries
	 * only upward, so without it the low bits, which pick the slot,
	 * would follow a few input bits whatever the seed. */
	h ^= w;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

void keymap_init(struct keymap *m)
{
	m->slots = NULL;
	m->cap = 0;
	m->n = 0;
	m->last = 0;
}

void keymap_free(struct keymap *m)
{
	free(m->slots);
	keymap_init(m);
}

size_t keymap_count(const struct keymap *m)
{
	return m->n;
}

/* The slot of key, or of the empty slot where it would go. */
static struct keymap_slot *keymap_slot(const struct keymap *m, const char *key,
				       uint64_t h)
{
	size_t mask = m->cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct keymap_slot *sl = &m->slots[i];
		if (sl->key == NULL ||
		    (sl->hash == h && strcmp(sl->key, key) == 0))
			return sl;
	}
}

void *keymap_find(const struct keymap *m, const char *key)
{
	if (m->n == 0)
		return NULL;
	struct keymap_slot *sl = keymap_slot(m, key, keymap_hash(key));
	if (sl->key == NULL)
		return NULL;
	/* Only a cache of where the last key was: lookups stay const. */
	((struct keymap *)m)->last = (size_t)(sl - m->slots) + 1;
	return sl->val;
}

static void keymap_grow(struct keymap *m)
{
	struct keymap_slot *old = m->slots;
	size_t oldcap = m->cap;
	m->last = 0;
	m->cap = oldcap ? oldcap * 2 : KEYMAP_MIN_CAP;
	m->slots = xcalloc(m->cap, sizeof *m->slots);
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].key)
			*keymap_slot(m, old[i].key, old[i].hash) = old[i];
	free(old);
}

void keymap_put(struct keymap *m, const char *key, void *val)
{
	/* At most half full, so probes stay short. */
	if ((m->n + 1) * 2 > m->cap)
		keymap_grow(m);
	uint64_t h = keymap_hash(key);
	struct keymap_slot *sl = keymap_slot(m, key, h);
	if (sl->key == NULL)
		m->n++;
	sl->key = key;
	sl->val = val;
	sl->hash = h;
}

void *keymap_del(struct keymap *m, const char *key)
{
	if (m->n == 0)
		return NULL;
	struct keymap_slot *sl = keymap_slot(m, key, keymap_hash(key));
	if (sl->key == NULL)
		return NULL;
	void *val = sl->val;
	size_t mask = m->cap - 1;
	m->last = 0; /* entries move back */
	size_t hole = (size_t)(sl - m->slots);
	/* Moves back every later entry of the run that may not stay behind
	 * the hole, so each stays reachable from its home slot. */
	for (size_t i = (hole + 1) & mask; m->slots[i].key;
	     i = (i + 1) & mask) {
		size_t home = m->slots[i].hash & mask;
		bool stays = hole <= i ? (home > hole && home <= i)
				       : (home > hole || home <= i);
		if (stays)
			continue;
		m->slots[hole] = m->slots[i];
		hole = i;
	}
	m->slots[hole].key = NULL;
	m->slots[hole].val = NULL;
	m->n--;
	return val;
}
