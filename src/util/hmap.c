/* A chained hash map of 64-bit keys, grown to keep chains short. */
#include "util/hmap.h"

#include <stdlib.h>

#include "util/xmalloc.h"

uint64_t hmap_mix(uint64_t x)
{
	/* splitmix64's finaliser: invertible, so distinct in, distinct out. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

void hmap_init(struct hmap *m)
{
	m->b = NULL;
	m->nb = m->n = 0;
}

void hmap_free(struct hmap *m)
{
	for (size_t i = 0; i < m->nb; i++) {
		struct hmap_node *n = m->b[i];
		while (n) {
			struct hmap_node *next = n->next;
			free(n);
			n = next;
		}
	}
	free(m->b);
	hmap_init(m);
}

static size_t hmap_slot(const struct hmap *m, uint64_t key)
{
	/* Keys may be counters: mix before taking the low bits. */
	return (size_t)(hmap_mix(key) & (m->nb - 1));
}

static void hmap_grow(struct hmap *m)
{
	size_t old_nb = m->nb;
	struct hmap_node **old = m->b;
	m->nb = old_nb ? old_nb * 2 : 16;
	m->b = xcalloc(m->nb, sizeof *m->b);
	for (size_t i = 0; i < old_nb; i++) {
		struct hmap_node *n = old[i];
		while (n) {
			struct hmap_node *next = n->next;
			size_t s = hmap_slot(m, n->key);
			n->next = m->b[s];
			m->b[s] = n;
			n = next;
		}
	}
	free(old);
}

void hmap_put(struct hmap *m, uint64_t key, void *val)
{
	if (m->n >= m->nb)
		hmap_grow(m);
	struct hmap_node *n = xmalloc(sizeof *n);
	n->key = key;
	n->val = val;
	size_t s = hmap_slot(m, key);
	n->next = m->b[s];
	m->b[s] = n;
	m->n++;
}

struct hmap_node *hmap_first(const struct hmap *m, uint64_t key)
{
	if (m->nb == 0)
		return NULL;
	struct hmap_node *n = m->b[hmap_slot(m, key)];
	while (n && n->key != key)
		n = n->next;
	return n;
}

struct hmap_node *hmap_next(const struct hmap_node *n)
{
	uint64_t key = n->key;
	for (n = n->next; n && n->key != key; n = n->next)
		;
	return (struct hmap_node *)n;
}

int hmap_del(struct hmap *m, uint64_t key, const void *val)
{
	if (m->nb == 0)
		return 0;
	for (struct hmap_node **pp = &m->b[hmap_slot(m, key)]; *pp;
	     pp = &(*pp)->next) {
		struct hmap_node *n = *pp;
		if (n->key == key && n->val == val) {
			*pp = n->next;
			free(n);
			m->n--;
			return 1;
		}
	}
	return 0;
}
