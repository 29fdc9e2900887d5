/* Cache files read once, and lists offered without instances. */
#include "pool/known.h"

#include <stdbool.h>
#include <stdlib.h>

#include "toolcache/toolcache.h"
#include "util/keymap.h"
#include "util/xmalloc.h"

struct known_ghost {
	struct known_ghost *next; /* of the same session */
	char *key;
	char *session_id;
	json_t *lists;
};

struct known_file {
	char *name;
	json_t *lists; /* NULL: not in the cache */
};

struct known {
	struct toolcache *cache;
	struct keymap files;	 /* cache name -> known_file */
	struct keymap ghosts;	 /* instance key -> known_ghost */
	struct keymap ghosts_of; /* session id -> its first known_ghost */
};

struct known *known_new(struct toolcache *cache)
{
	struct known *k = xcalloc(1, sizeof *k);
	k->cache = cache;
	return k;
}

static void known_ghost_free(struct known_ghost *g)
{
	free(g->key);
	free(g->session_id);
	json_decref(g->lists);
	free(g);
}

void known_free(struct known *k)
{
	if (k == NULL)
		return;
	/* Each session's chain from its head; the maps go last. */
	for (size_t i = 0; i < k->ghosts_of.cap; i++) {
		struct known_ghost *g = k->ghosts_of.slots[i].val;
		while (g) {
			struct known_ghost *next = g->next;
			known_ghost_free(g);
			g = next;
		}
	}
	for (size_t i = 0; i < k->files.cap; i++) {
		struct known_file *f = k->files.slots[i].val;
		if (f == NULL)
			continue;
		free(f->name);
		json_decref(f->lists);
		free(f);
	}
	keymap_free(&k->ghosts_of);
	keymap_free(&k->ghosts);
	keymap_free(&k->files);
	free(k);
}

static struct known_file *known_file(struct known *k, const char *name,
				     bool load)
{
	struct known_file *f = keymap_get(&k->files, name);
	if (f == NULL) {
		f = xcalloc(1, sizeof *f);
		f->name = xstrdup(name);
		if (load && k->cache)
			f->lists = toolcache_load(k->cache, name);
		keymap_put(&k->files, f->name, f);
	}
	return f;
}

json_t *known_cached(struct known *k, const char *name)
{
	return known_file(k, name, true)->lists;
}

void known_cached_set(struct known *k, const char *name, json_t *lists)
{
	if (k == NULL) /* an instance still closing as the pool goes */
		return;
	struct known_file *f = known_file(k, name, false);
	json_decref(f->lists);
	f->lists = json_incref(lists);
}

json_t *known_ghost(struct known *k, const char *key)
{
	struct known_ghost *g = keymap_get(&k->ghosts, key);
	return g ? g->lists : NULL;
}

json_t *known_ghost_add(struct known *k, const char *key,
			const char *session_id, json_t *lists)
{
	struct known_ghost *g = keymap_get(&k->ghosts, key);
	if (g)
		return g->lists;
	g = xcalloc(1, sizeof *g);
	g->key = xstrdup(key);
	g->session_id = xstrdup(session_id);
	g->lists = json_incref(lists);
	g->next = keymap_get(&k->ghosts_of, session_id);
	keymap_put(&k->ghosts, g->key, g);
	keymap_put(&k->ghosts_of, g->session_id, g);
	return g->lists;
}

void known_forget(struct known *k, const char *key)
{
	struct known_ghost *g = keymap_get(&k->ghosts, key);
	if (g == NULL)
		return;
	struct known_ghost *first = keymap_get(&k->ghosts_of, g->session_id);
	keymap_del(&k->ghosts, key);
	if (first == g) {
		keymap_del(&k->ghosts_of, g->session_id);
		if (g->next)
			keymap_put(&k->ghosts_of, g->next->session_id, g->next);
	} else {
		while (first->next != g)
			first = first->next;
		first->next = g->next;
	}
	known_ghost_free(g);
}

void known_session_gone(struct known *k, const char *session_id)
{
	struct known_ghost *g = keymap_del(&k->ghosts_of, session_id);
	while (g) {
		struct known_ghost *next = g->next;
		keymap_del(&k->ghosts, g->key);
		known_ghost_free(g);
		g = next;
	}
}
