/* Protected resource and authorization server metadata discovery, tried
 * in order, checked as the specification and RFC 8414 3.3 ask. */
#include "auth/discover.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/fetch.h"
#include "auth/urls.h"
#include "util/log.h"
#include "util/xmalloc.h"

enum discover_phase { DISC_PRM, DISC_AS };

struct discover {
	struct httpc *h;
	char *endpoint;
	enum discover_phase phase;
	/* The URLs still to try in this phase, in order. */
	char *cand[URLS_MAX_CANDIDATES + 1];
	size_t ncand, at;
	char *issuer; /* asked for (DISC_AS) */
	struct afetch *f;
	struct discover_result r;
	discover_cb cb;
	void *arg;
	char why[400];
	/* The last failure of a candidate, said when none is left. */
	char last[160];
	bool refused; /* a document was found but refused: -EACCES */
};

static int discover_next(struct discover *d);
static void discover_give_up(struct discover *d);

static void discover_free_cands(struct discover *d)
{
	for (size_t i = 0; i < d->ncand; i++)
		free(d->cand[i]);
	d->ncand = d->at = 0;
}

static void discover_free(struct discover *d)
{
	discover_free_cands(d);
	free(d->endpoint);
	free(d->issuer);
	discover_result_clear(&d->r);
	free(d);
}

static void discover_end(struct discover *d, int err, const char *why)
{
	d->cb(d->arg, err, why, err == 0 ? &d->r : NULL);
	discover_free(d);
}

/* The authorization server metadata candidates of the PRM's first
 * authorization server. */
static void discover_as_phase(struct discover *d)
{
	discover_free_cands(d);
	d->phase = DISC_AS;
	d->issuer = xstrdup(d->r.prm.authorization_servers.v[0]);
	if (!urls_secure(d->issuer)) {
		discover_end(d, -EACCES,
			     "the authorization server's URL is neither https "
			     "nor on a loopback host");
		return;
	}
	d->ncand = urls_as_candidates(d->issuer, d->cand);
	d->last[0] = '\0';
	d->refused = false;
	if (discover_next(d) < 0)
		discover_give_up(d);
}

/* A PRM answer: 0 taken, <0 try the next. */
static int discover_take_prm(struct discover *d, const char *body, size_t len)
{
	const char *why = NULL;
	struct meta_prm m;
	if (meta_parse_prm(body, len, &m, &why) < 0) {
		snprintf(d->last, sizeof d->last,
			 "its protected resource metadata is not usable: %s",
			 why);
		return -EINVAL;
	}
	/* RFC 9728 3.3 and 7.3: a resource that is not this server's would
	 * have us get a token for another server. */
	if (!urls_resource_ok(m.resource, d->endpoint)) {
		meta_prm_clear(&m);
		d->refused = true;
		snprintf(d->last, sizeof d->last,
			 "its protected resource metadata names another "
			 "resource than the server's URL");
		return -EACCES;
	}
	d->r.prm = m;
	return 0;
}

static int discover_take_as(struct discover *d, const char *body, size_t len)
{
	const char *why = NULL;
	struct meta_as m;
	if (meta_parse_as(body, len, &m, &why) < 0) {
		snprintf(d->last, sizeof d->last,
			 "its authorization server metadata is not usable: "
			 "%s",
			 why);
		return -EINVAL;
	}
	/* RFC 8414 3.3: the issuer must be the one the URL was made from,
	 * byte for byte, or the document is not used at all. */
	if (strcmp(m.issuer, d->issuer) != 0) {
		meta_as_clear(&m);
		d->refused = true;
		snprintf(d->last, sizeof d->last,
			 "the authorization server metadata names another "
			 "issuer than %.80s",
			 d->issuer);
		return -EACCES;
	}
	d->r.as = m;
	return 0;
}

static void discover_done_cb(void *arg, const struct afetch_result *res)
{
	struct discover *d = arg;
	d->f = NULL;
	if (res->err < 0) {
		snprintf(d->last, sizeof d->last, "%s",
			 res->why ? res->why : "no answer");
		/* A server that cannot be reached at one URL cannot at the
		 * next of the same origin either. */
		snprintf(d->why, sizeof d->why, "%s metadata: %s",
			 d->phase == DISC_PRM ? "protected resource"
					      : "authorization server",
			 d->last);
		discover_end(d, res->err, d->why);
		return;
	}
	if (res->status == 200) {
		int rc = d->phase == DISC_PRM
				 ? discover_take_prm(d, res->body, res->len)
				 : discover_take_as(d, res->body, res->len);
		if (rc == 0) {
			if (d->phase == DISC_PRM) {
				discover_as_phase(d);
				return;
			}
			const struct meta_list *m =
				&d->r.as.code_challenge_methods_supported;
			if (!meta_list_has(m, "S256")) {
				discover_end(
					d, -EACCES,
					"the authorization server does not "
					"advertise PKCE with S256 "
					"(code_challenge_methods_supported), "
					"which MCP requires");
				return;
			}
			if (!urls_secure(d->r.as.authorization_endpoint) ||
			    !urls_secure(d->r.as.token_endpoint) ||
			    (d->r.as.registration_endpoint &&
			     !urls_secure(d->r.as.registration_endpoint))) {
				discover_end(d, -EACCES,
					     "an endpoint of the authorization "
					     "server is neither https nor on a "
					     "loopback host");
				return;
			}
			discover_end(d, 0, NULL);
			return;
		}
		/* A resource of another server ends discovery: another
		 * candidate would not make it this server's. */
		if (rc == -EACCES && d->phase == DISC_PRM) {
			discover_end(d, -EACCES, d->last);
			return;
		}
	} else if (!d->refused) {
		/* A refusal said more than a later 404 does. */
		snprintf(d->last, sizeof d->last, "HTTP %d", res->status);
	}
	d->at++;
	if (discover_next(d) < 0)
		discover_give_up(d);
}

/* Starts the next candidate: 0, or -ENOENT when none is left. */
static int discover_next(struct discover *d)
{
	while (d->at < d->ncand) {
		struct afetch_opts o = {.method = "GET", .url = d->cand[d->at]};
		log_debug("trying %s", d->cand[d->at]);
		if (afetch_start(d->h, &o, discover_done_cb, d, &d->f) == 0)
			return 0;
		snprintf(d->last, sizeof d->last,
			 "a metadata URL is neither https nor on a loopback "
			 "host");
		d->at++;
	}
	return -ENOENT;
}

static void discover_give_up(struct discover *d)
{
	if (d->phase == DISC_PRM)
		snprintf(d->why, sizeof d->why,
			 "the server publishes no usable protected resource "
			 "metadata (%s)",
			 d->last[0] ? d->last : "none found");
	else
		snprintf(d->why, sizeof d->why,
			 "the authorization server %.80s publishes no usable "
			 "metadata (%s)",
			 d->issuer, d->last[0] ? d->last : "none found");
	discover_end(d, d->refused ? -EACCES : -ENOENT, d->why);
}

int discover_start(struct httpc *h, const char *endpoint,
		   const char *resource_metadata, discover_cb cb, void *arg,
		   struct discover **out)
{
	if (urls_split(endpoint, NULL, NULL) < 0)
		return -EINVAL;
	struct discover *d = xcalloc(1, sizeof *d);
	d->h = h;
	d->endpoint = xstrdup(endpoint);
	d->cb = cb;
	d->arg = arg;
	d->phase = DISC_PRM;
	/* The challenge's URL first; the well-known ones after it in case
	 * it does not answer (a server behind a proxy that rewrote it). */
	if (resource_metadata && urls_secure(resource_metadata))
		d->cand[d->ncand++] = xstrdup(resource_metadata);
	char *wk[URLS_MAX_CANDIDATES];
	size_t n = urls_prm_candidates(endpoint, wk);
	for (size_t i = 0; i < n; i++) {
		if (d->ncand < URLS_MAX_CANDIDATES + 1 &&
		    (d->ncand == 0 || strcmp(d->cand[0], wk[i]) != 0))
			d->cand[d->ncand++] = wk[i];
		else
			free(wk[i]);
	}
	if (discover_next(d) < 0) {
		discover_free(d);
		return -EINVAL;
	}
	*out = d;
	return 0;
}

void discover_cancel(struct discover *d)
{
	if (d == NULL)
		return;
	afetch_cancel(d->f);
	discover_free(d);
}

void discover_result_clear(struct discover_result *r)
{
	meta_prm_clear(&r->prm);
	meta_as_clear(&r->as);
}
