/*
 * The URLs the loop's HTTP client has parsed, kept for the next requests
 * to them (struct httpc_url): libcurl parses a text URL on every transfer
 * and prints it back whole; given the parsed handle (CURLOPT_CURLU) it
 * only copies it.
 */
#include <stdlib.h>
#include <string.h>

#include "http/httpc_int.h"
#include "util/xmalloc.h"

/* What libcurl itself asks of a URL given as text (url.c,
 * parseurlandfillconn), so that a URL means the same either way. */
#define HTTPC_URL_FLAGS (CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME)

static void httpc_url_clear(const struct curlso *cu, struct httpc_url *u)
{
	cu->url_cleanup(u->u);
	free(u->text);
	u->u = NULL;
	u->text = NULL;
}

struct httpc_url *httpc_url_take(struct httpc *c, const char *text)
{
	struct httpc_url *slot = NULL;
	for (int i = 0; i < HTTPC_URLS; i++) {
		struct httpc_url *u = &c->urls[i];
		if (u->text && strcmp(u->text, text) == 0) {
			slot = u;
			goto taken;
		}
		/* A free slot has never been taken: it goes first. */
		if (u->users == 0 && (slot == NULL || u->last < slot->last))
			slot = u;
	}
	if (slot == NULL)
		return NULL;
	CURLU *h = c->cu->url();
	if (h == NULL || c->cu->url_set(h, CURLUPART_URL, text,
					HTTPC_URL_FLAGS) != CURLUE_OK) {
		c->cu->url_cleanup(h);
		return NULL;
	}
	httpc_url_clear(c->cu, slot);
	slot->text = xstrdup(text);
	slot->u = h;
taken:
	slot->users++;
	slot->last = ++c->url_takes;
	return slot;
}

void httpc_url_put(struct httpc_url *u)
{
	if (u)
		u->users--;
}

void httpc_url_free_all(struct httpc *c)
{
	for (int i = 0; i < HTTPC_URLS; i++)
		httpc_url_clear(c->cu, &c->urls[i]);
}
