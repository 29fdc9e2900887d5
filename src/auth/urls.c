/* Discovery URL candidates and the checks on the URLs servers publish,
 * done on the strings as written. */
#include "auth/urls.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/xmalloc.h"

#define PRM_WELL_KNOWN "/.well-known/oauth-protected-resource"
#define AS_WELL_KNOWN "/.well-known/oauth-authorization-server"
#define OIDC_WELL_KNOWN "/.well-known/openid-configuration"

int urls_split(const char *url, char **origin, char **path)
{
	size_t skip;
	if (strncasecmp(url, "https://", 8) == 0)
		skip = 8;
	else if (strncasecmp(url, "http://", 7) == 0)
		skip = 7;
	else
		return -EINVAL;
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return -EINVAL;
	const char *auth = url + skip;
	size_t alen = strcspn(auth, "/?#");
	if (alen == 0)
		return -EINVAL;
	/* A user part would make the host another one than it reads as. */
	if (memchr(auth, '@', alen))
		return -EINVAL;
	const char *p = auth + alen;
	size_t plen = *p == '/' ? strcspn(p, "?#") : 0;
	if (origin)
		*origin = xstrndup(url, skip + alen);
	if (path)
		*path = xstrndup(p, plen);
	return 0;
}

/* The host of an http(s) URL, lower-cased, without port or brackets'
 * content changed ("[::1]" stays so). NULL when none. */
static char *urls_host(const char *url)
{
	char *origin = NULL;
	if (urls_split(url, &origin, NULL) < 0)
		return NULL;
	const char *a = strstr(origin, "://") + 3;
	size_t n;
	if (*a == '[')
		n = strcspn(a, "]") + 1;
	else
		n = strcspn(a, ":");
	char *h = xstrndup(a, n);
	for (char *q = h; *q; q++)
		*q = (char)tolower((unsigned char)*q);
	free(origin);
	return h;
}

bool urls_loopback(const char *url)
{
	char *h = urls_host(url);
	if (h == NULL)
		return false;
	bool ok = false;
	size_t n = strlen(h);
	if (strcmp(h, "localhost") == 0 || strcmp(h, "[::1]") == 0 ||
	    (n > 10 && strcmp(h + n - 10, ".localhost") == 0)) {
		ok = true;
	} else if (strncmp(h, "127.", 4) == 0) {
		/* 127.a.b.c, digits only. */
		int dots = 0;
		ok = true;
		for (const char *q = h + 4; *q; q++) {
			if (*q == '.')
				dots++;
			else if (!isdigit((unsigned char)*q))
				ok = false;
		}
		ok = ok && dots == 2;
	}
	free(h);
	return ok;
}

bool urls_secure(const char *url)
{
	if (urls_split(url, NULL, NULL) < 0)
		return false;
	if (strncasecmp(url, "https://", 8) == 0)
		return true;
	return urls_loopback(url);
}

/* path without one trailing '/' ("/" becomes ""). */
static char *urls_trim(const char *path)
{
	size_t n = strlen(path);
	if (n > 0 && path[n - 1] == '/')
		n--;
	return xstrndup(path, n);
}

size_t urls_prm_candidates(const char *endpoint, char *out[URLS_MAX_CANDIDATES])
{
	char *origin, *path;
	if (urls_split(endpoint, &origin, &path) < 0)
		return 0;
	size_t n = 0;
	char *p = urls_trim(path);
	if (p[0] != '\0')
		out[n++] = xasprintf("%s%s%s", origin, PRM_WELL_KNOWN, p);
	out[n++] = xasprintf("%s%s", origin, PRM_WELL_KNOWN);
	free(p);
	free(origin);
	free(path);
	return n;
}

size_t urls_as_candidates(const char *issuer, char *out[URLS_MAX_CANDIDATES])
{
	char *origin, *path;
	if (urls_split(issuer, &origin, &path) < 0)
		return 0;
	size_t n = 0;
	char *p = urls_trim(path);
	if (p[0] != '\0') {
		out[n++] = xasprintf("%s%s%s", origin, AS_WELL_KNOWN, p);
		out[n++] = xasprintf("%s%s%s", origin, OIDC_WELL_KNOWN, p);
		out[n++] = xasprintf("%s%s%s", origin, p, OIDC_WELL_KNOWN);
	} else {
		out[n++] = xasprintf("%s%s", origin, AS_WELL_KNOWN);
		out[n++] = xasprintf("%s%s", origin, OIDC_WELL_KNOWN);
	}
	free(p);
	free(origin);
	free(path);
	return n;
}

/* An origin compared as RFC 3986 says scheme and host compare: without
 * case. The port as written (":443" and none differ; servers publish
 * them alike). */
bool urls_same_origin(const char *a, const char *b)
{
	char *oa = NULL, *ob = NULL;
	bool same = urls_split(a, &oa, NULL) == 0 &&
		    urls_split(b, &ob, NULL) == 0 && strcasecmp(oa, ob) == 0;
	free(oa);
	free(ob);
	return same;
}

bool urls_resource_ok(const char *resource, const char *endpoint)
{
	char *rp = NULL, *ep = NULL;
	bool ok = false;
	if (!urls_same_origin(resource, endpoint) ||
	    strpbrk(resource, "?#") != NULL)
		goto done;
	urls_split(resource, NULL, &rp);
	urls_split(endpoint, NULL, &ep);
	char *r = urls_trim(rp);
	size_t n = strlen(r);
	ok = strncmp(ep, r, n) == 0 && (ep[n] == '\0' || ep[n] == '/');
	free(r);
done:
	free(rp);
	free(ep);
	return ok;
}
