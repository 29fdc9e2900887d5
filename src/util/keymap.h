/*
 * A map from strings to pointers, by hash: the pool's instances by key,
 * leases by session id, the hub's sessions by id; the one string hash of
 * the code base (keymap_hash). Keys are borrowed: each
 * must stay valid and unchanged while it is in the map (the value usually
 * owns it). Lookups hash the key a word at a time, so that long canonical
 * keys that share a prefix cost little more than short ones.
 *
 * The hash starts from a random seed drawn once per process: some keys
 * come from outside (the tool names a remote server lists), and with a
 * hash known in advance a server could list names that all land in one
 * slot and make each index build quadratic. Nothing may depend on the
 * order of the slots.
 */
#ifndef MCPV_KEYMAP_H
#define MCPV_KEYMAP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct keymap_slot {
	const char *key; /* NULL: empty */
	void *val;
	uint64_t hash;
};

/* Embedded in its owner; all zero is an empty map. */
struct keymap {
	struct keymap_slot *slots;
	size_t cap; /* a power of two, or 0 */
	size_t n;
	/* The slot of the last key found, plus one (0: none): the same key
	 * is often looked up again at once (a call's instance, its lease),
	 * and comparing it costs less than hashing it again. */
	size_t last;
};

void keymap_init(struct keymap *m);
/* Frees the table, not the keys or values. */
void keymap_free(struct keymap *m);
/* The value of key, or NULL. */
void *keymap_find(const struct keymap *m, const char *key);
/* The same, inline for the key found last (the hot path's case). */
static inline void *keymap_get(const struct keymap *m, const char *key)
{
	if (m->last) {
		const struct keymap_slot *hit = &m->slots[m->last - 1];
		if (hit->key && strcmp(hit->key, key) == 0)
			return hit->val;
	}
	return keymap_find(m, key);
}
/* Maps key (borrowed) to val (not NULL), replacing an earlier value. */
void keymap_put(struct keymap *m, const char *key, void *val);
/* Removes key; returns its value, or NULL when it was absent. */
void *keymap_del(struct keymap *m, const char *key);
size_t keymap_count(const struct keymap *m);
uint64_t keymap_hash(const char *key);
/* Replaces the seed (tests: the same keys under two seeds). Only before
 * any map holds a key: the hashes stored in the slots are the old seed's. */
void keymap_seed_set(uint64_t seed);

#endif
