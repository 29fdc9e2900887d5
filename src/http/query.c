/*
 * The parts of a request target and of a form body: percent- and
 * '+'-decoding, a query parameter's value, the path without its query.
 */
#include "http/query.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/xmalloc.h"

static int query_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

char *http_form_decode(const char *s, size_t len)
{
	char *out = xmalloc(len + 1);
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '+') {
			c = ' ';
		} else if (c == '%') {
			if (len - i < 3)
				goto fail;
			int hi = query_hexval(s[i + 1]);
			int lo = query_hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				goto fail;
			c = (char)(hi * 16 + lo);
			i += 2;
		}
		if (c == '\0')
			goto fail;
		out[o++] = c;
	}
	out[o] = '\0';
	return out;
fail:
	free(out);
	return NULL;
}

char *http_query_param(const char *url, const char *name)
{
	const char *q = strchr(url, '?');
	if (q == NULL)
		return NULL;
	const char *hash = strchr(url, '#');
	if (hash && hash < q)
		return NULL;
	q++;
	const char *end = strchr(q, '#');
	if (end == NULL)
		end = q + strlen(q);

	while (q < end) {
		const char *amp = memchr(q, '&', (size_t)(end - q));
		const char *pend = amp ? amp : end;
		const char *eq = memchr(q, '=', (size_t)(pend - q));
		const char *kend = eq ? eq : pend;
		if (kend > q) {
			char *key = http_form_decode(q, (size_t)(kend - q));
			bool match = key && strcmp(key, name) == 0;
			free(key);
			if (match) {
				if (eq == NULL)
					return xstrdup("");
				return http_form_decode(
					eq + 1, (size_t)(pend - eq - 1));
			}
		}
		q = amp ? amp + 1 : end;
	}
	return NULL;
}

char *http_url_path(const char *url)
{
	return xstrndup(url, strcspn(url, "?#"));
}
