/*
 * What the relay recalls of the host's session (relay/recall.h). List
 * digests: the "result" of a list answer is hashed as
 * canonical JSON (keys sorted). A runtime that lists the same servers
 * gives the same list (in the config's order, each server's items as the
 * server or the tool cache has them), so equal digests mean the host has
 * nothing to re-read; a stray difference costs only a list_changed the
 * host did not need. Lists are parsed here, off the call path.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "relay/recall.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

static const char *const list_methods[RL_N] = {
	"tools/list",
	"prompts/list",
	"resources/list",
};
static const char *const list_notes[RL_N] = {
	"notifications/tools/list_changed",
	"notifications/prompts/list_changed",
	"notifications/resources/list_changed",
};

enum relay_list relay_list_of(const char *method, const char *line,
			      const struct jsonscan_span *params)
{
	for (int l = 0; l < RL_N; l++) {
		if (strcmp(method, list_methods[l]) != 0)
			continue;
		if (params->len == 0)
			return (enum relay_list)l;
		static const char *const ck[] = {"cursor"};
		struct jsonscan_span c;
		if (jsonscan_members(line + params->off, params->len, ck, 1,
				     &c) < 0 ||
		    c.len != 0)
			return RL_NONE; /* a later page (or odd params) */
		return (enum relay_list)l;
	}
	return RL_NONE;
}

const char *relay_list_method(enum relay_list l)
{
	return list_methods[l];
}

const char *relay_list_changed(enum relay_list l)
{
	return list_notes[l];
}

/* The digest of the answer's result and whether it has a next page;
 * false when it has no result (an error). */
static bool list_digest(const char *msg, size_t len, unsigned char out[32],
			bool *paged)
{
	static const char *const rk[] = {"result"};
	static const char *const nk[] = {"nextCursor"};
	struct jsonscan_span r, n;
	if (jsonscan_members(msg, len, rk, 1, &r) < 0 || r.len == 0 ||
	    msg[r.off] != '{')
		return false;
	/* In canonical form: a runtime answering from its tool cache
	 * writes the same list with its keys sorted. */
	json_t *v = json_loadb(msg + r.off, r.len, 0, NULL);
	char *text = v ? json_dumps(v, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
	json_decref(v);
	if (text == NULL)
		return false;
	sha256_bytes(text, strlen(text), out);
	free(text);
	*paged = jsonscan_members(msg + r.off, r.len, nk, 1, &n) == 0 &&
		 n.len != 0 && strncmp(msg + r.off + n.off, "null", 4) != 0;
	return true;
}

void relay_lists_seen(struct relay_lists *ls, enum relay_list l,
		      const char *msg, size_t len)
{
	bool paged = false;
	if (!list_digest(msg, len, ls->digest[l], &paged))
		return; /* an error answer: the host has no list from it */
	ls->seen[l] = true;
	ls->paged[l] = paged;
}

bool relay_lists_changed(struct relay_lists *ls, enum relay_list l,
			 const char *msg, size_t len)
{
	unsigned char d[32];
	bool paged = false;
	if (!list_digest(msg, len, d, &paged))
		return true;
	bool changed = ls->paged[l] || paged ||
		       memcmp(d, ls->digest[l], sizeof d) != 0;
	memcpy(ls->digest[l], d, sizeof d);
	ls->paged[l] = paged;
	return changed;
}

/* ---- what a new session hears again ---- */

void recall_keep(struct replay **head, const char *method, const char *line,
		 size_t len, const struct jsonscan_span *params)
{
	char *key = NULL;
	bool drop = false;
	if (strcmp(method, "logging/setLevel") == 0) {
		key = xstrdup("logging");
	} else if (strcmp(method, "resources/subscribe") == 0 ||
		   strcmp(method, "resources/unsubscribe") == 0) {
		static const char *const uk[] = {"uri"};
		struct jsonscan_span u;
		if (params->len == 0 ||
		    jsonscan_members(line + params->off, params->len, uk, 1,
				     &u) < 0)
			return;
		key = xstrndup(line + params->off + u.off, u.len);
		drop = method[10] == 'u';
	} else {
		return;
	}
	struct replay **pp = head;
	while (*pp && strcmp((*pp)->key, key) != 0)
		pp = &(*pp)->next;
	if (*pp) {
		struct replay *old = *pp;
		*pp = old->next;
		free(old->key);
		free(old->line);
		free(old);
	}
	if (drop) {
		free(key);
		return;
	}
	struct replay *p = xcalloc(1, sizeof *p);
	p->key = key;
	p->line = xstrndup(line, len);
	p->len = len;
	p->next = *head;
	*head = p;
}

void recall_free(struct replay *head)
{
	while (head) {
		struct replay *p = head;
		head = p->next;
		free(p->key);
		free(p->line);
		free(p);
	}
}
