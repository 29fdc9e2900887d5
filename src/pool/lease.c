/* Members and holders of one instance, counted exactly. */
#include "pool/lease.h"

#include <stdlib.h>
#include <string.h>

#include "util/keymap.h"
#include "util/xmalloc.h"

struct lease_member {
	char *session_id;
	unsigned requests;
	size_t index; /* in m[] */
};

/* Members in an array (for walks) and by session id (for the lookup of
 * every acquire and release: an app instance may have a thousand). */
struct lease_set {
	struct lease_member **m;
	size_t n, cap;
	struct keymap by_id;
	unsigned holders;
	unsigned requests;
	uint64_t idle_since;
};

struct lease_set *lease_set_new(uint64_t now_ms)
{
	struct lease_set *ls = xcalloc(1, sizeof *ls);
	ls->idle_since = now_ms;
	return ls;
}

void lease_set_free(struct lease_set *ls)
{
	if (ls == NULL)
		return;
	for (size_t i = 0; i < ls->n; i++) {
		free(ls->m[i]->session_id);
		free(ls->m[i]);
	}
	free(ls->m);
	keymap_free(&ls->by_id);
	free(ls);
}

static struct lease_member *lease_find(const struct lease_set *ls,
				       const char *session_id)
{
	return keymap_get(&ls->by_id, session_id);
}

static struct lease_member *lease_add(struct lease_set *ls,
				      const char *session_id)
{
	struct lease_member *m = lease_find(ls, session_id);
	if (m)
		return m;
	if (ls->n == ls->cap) {
		ls->cap = ls->cap ? ls->cap * 2 : 4;
		ls->m = xrealloc(ls->m, ls->cap * sizeof *ls->m);
	}
	m = xcalloc(1, sizeof *m);
	m->session_id = xstrdup(session_id);
	m->index = ls->n;
	ls->m[ls->n++] = m;
	keymap_put(&ls->by_id, m->session_id, m);
	return m;
}

void lease_join(struct lease_set *ls, const char *session_id)
{
	lease_add(ls, session_id);
}

bool lease_take(struct lease_set *ls, const char *session_id)
{
	struct lease_member *m = lease_add(ls, session_id);
	ls->requests++;
	if (m->requests++ > 0)
		return false;
	return ls->holders++ == 0;
}

bool lease_drop(struct lease_set *ls, const char *session_id, uint64_t now_ms)
{
	struct lease_member *m = lease_find(ls, session_id);
	if (m == NULL || m->requests == 0)
		return false;
	ls->requests--;
	if (--m->requests > 0)
		return false;
	if (--ls->holders > 0)
		return false;
	ls->idle_since = now_ms;
	return true;
}

bool lease_leave(struct lease_set *ls, const char *session_id, uint64_t now_ms)
{
	struct lease_member *m = lease_find(ls, session_id);
	if (m == NULL)
		return false;
	bool was_holding = m->requests > 0;
	ls->requests -= m->requests;
	keymap_del(&ls->by_id, session_id);
	struct lease_member *last = ls->m[--ls->n];
	ls->m[m->index] = last;
	last->index = m->index;
	free(m->session_id);
	free(m);
	if (!was_holding)
		return false;
	if (--ls->holders > 0)
		return false;
	ls->idle_since = now_ms;
	return true;
}

unsigned lease_members(const struct lease_set *ls)
{
	return (unsigned)ls->n;
}

unsigned lease_holders(const struct lease_set *ls)
{
	return ls->holders;
}

unsigned lease_requests(const struct lease_set *ls)
{
	return ls->requests;
}

bool lease_is_member(const struct lease_set *ls, const char *session_id)
{
	return lease_find(ls, session_id) != NULL;
}

uint64_t lease_idle_since(const struct lease_set *ls)
{
	return ls->idle_since;
}

bool lease_idle_due(const struct lease_set *ls, uint64_t now_ms,
		    uint64_t idle_ms)
{
	return ls->holders == 0 && now_ms >= ls->idle_since &&
	       now_ms - ls->idle_since >= idle_ms;
}

void lease_touch(struct lease_set *ls, uint64_t now_ms)
{
	ls->idle_since = now_ms;
}

json_t *lease_describe(const struct lease_set *ls)
{
	json_t *a = json_array();
	for (size_t i = 0; i < ls->n; i++)
		json_array_append_new(a, json_pack("{s:s,s:i}", "session",
						   ls->m[i]->session_id,
						   "requests",
						   (int)ls->m[i]->requests));
	return a;
}

const char *lease_member_at(const struct lease_set *ls, size_t i,
			    unsigned *requests)
{
	if (i >= ls->n)
		return NULL;
	if (requests)
		*requests = ls->m[i]->requests;
	return ls->m[i]->session_id;
}
