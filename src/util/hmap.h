/*
 * A small hash map from 64-bit keys to pointers, for keys that are numbers
 * already (progress tokens). Several values may share a key. String keys
 * go in a keymap (util/keymap.h), which hashes and compares them itself.
 */
#ifndef MCPV_HMAP_H
#define MCPV_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct hmap_node {
	struct hmap_node *next;
	uint64_t key;
	void *val;
};

struct hmap {
	struct hmap_node **b;
	size_t nb; /* a power of two, or 0 before the first put */
	size_t n;
};

void hmap_init(struct hmap *m);
/* Frees the nodes, not the values. */
void hmap_free(struct hmap *m);
void hmap_put(struct hmap *m, uint64_t key, void *val);
/* The first node of key, then hmap_next for the others; NULL at the end. */
struct hmap_node *hmap_first(const struct hmap *m, uint64_t key);
struct hmap_node *hmap_next(const struct hmap_node *n);
/* Removes the node of (key, val): 1, or 0 when there is none. */
int hmap_del(struct hmap *m, uint64_t key, const void *val);
/* A bijection of 64-bit values that scatters counters. */
uint64_t hmap_mix(uint64_t x);

#endif
