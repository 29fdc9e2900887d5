/* Scope selection, union and coverage: the one place that decides which
 * scopes a sign-in asks for. */
#include "auth/scope.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/xmalloc.h"

bool scope_bad(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == '"' || *p == '\\' || *p >= 0x7f)
			return true;
	return false;
}

/* Whether word (len n) is one of the words of s. */
static bool scope_has(const char *s, const char *word, size_t n)
{
	if (s == NULL)
		return false;
	for (const char *p = s; *p;) {
		p += strspn(p, " ");
		size_t m = strcspn(p, " ");
		if (m == n && m > 0 && strncmp(p, word, n) == 0)
			return true;
		p += m;
	}
	return false;
}

struct scope_acc {
	struct buf b;
	size_t words;
};

static void scope_add(struct scope_acc *a, const char *word, size_t n)
{
	if (n == 0 || a->words == SCOPE_MAX_WORDS ||
	    a->b.len + 1 + n > SCOPE_MAX_LEN ||
	    scope_has(a->b.data ? a->b.data : "", word, n))
		return;
	char *w = xstrndup(word, n);
	bool bad = scope_bad(w);
	free(w);
	if (bad)
		return;
	if (a->b.len)
		buf_puts(&a->b, " ");
	buf_append(&a->b, word, n);
	a->words++;
}

static void scope_add_all(struct scope_acc *a, const char *s)
{
	if (s == NULL)
		return;
	for (const char *p = s; *p;) {
		p += strspn(p, " ");
		size_t m = strcspn(p, " ");
		scope_add(a, p, m);
		p += m;
	}
}

static char *scope_done(struct scope_acc *a)
{
	if (a->b.len == 0) {
		buf_free(&a->b);
		return NULL;
	}
	return buf_steal(&a->b);
}

char *scope_union(const char *a, const char *b)
{
	struct scope_acc acc = {0};
	buf_init(&acc.b);
	scope_add_all(&acc, a);
	scope_add_all(&acc, b);
	return scope_done(&acc);
}

bool scope_covers(const char *have, const char *want)
{
	if (want == NULL)
		return true;
	for (const char *p = want; *p;) {
		p += strspn(p, " ");
		size_t m = strcspn(p, " ");
		if (m > 0 && !scope_has(have, p, m))
			return false;
		p += m;
	}
	return true;
}

char *scope_select(const char *challenge, const struct meta_list *prm,
		   const struct meta_list *as, const char *earlier,
		   const char *extra)
{
	struct scope_acc acc = {0};
	buf_init(&acc.b);
	/* A step-up keeps what was asked and granted: a 403 names only what
	 * is missing for this request, and dropping the rest would lose
	 * access elsewhere. */
	scope_add_all(&acc, earlier);
	if (challenge && challenge[0]) {
		scope_add_all(&acc, challenge);
	} else if (earlier == NULL && prm) {
		for (size_t i = 0; i < prm->n; i++)
			scope_add_all(&acc, prm->v[i]);
	}
	scope_add_all(&acc, extra);
	/* offline_access asks for a refresh token: only where the server
	 * lists it, and never as the only scope (that would ask for
	 * nothing but it, where omitting scope asks for the defaults). */
	if (acc.b.len > 0 && as && meta_list_has(as, "offline_access"))
		scope_add(&acc, "offline_access", strlen("offline_access"));
	return scope_done(&acc);
}
