/* Percent-encoding, query strings and base64 for the OAuth requests and
 * the redirect mcpvisor receives. */
#include "auth/form.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http/query.h"
#include "util/xmalloc.h"

static bool form_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	       c == '~';
}

void form_escape(struct buf *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (form_unreserved(*p)) {
			buf_append(out, p, 1);
		} else {
			char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
			buf_append(out, e, 3);
		}
	}
}

void form_add(struct buf *out, const char *name, const char *value)
{
	if (value == NULL)
		return;
	if (out->len > 0 && out->data[out->len - 1] != '?' &&
	    out->data[out->len - 1] != '&')
		buf_puts(out, "&");
	form_escape(out, name);
	buf_puts(out, "=");
	form_escape(out, value);
}

void form_query_clear(struct form_query *q)
{
	for (size_t i = 0; i < q->nparams; i++) {
		free(q->params[i].name);
		free(q->params[i].value);
	}
	free(q->params);
	q->params = NULL;
	q->nparams = 0;
}

int form_parse(const char *s, size_t len, struct form_query *q)
{
	struct form_query r = {0};
	int rc = 0;
	if (len > FORM_MAX_QUERY)
		return -E2BIG;
	size_t i = 0;
	while (i < len) {
		size_t end = i;
		while (end < len && s[end] != '&')
			end++;
		if (end > i) {
			if (r.nparams == FORM_MAX_PARAMS) {
				rc = -E2BIG;
				goto fail;
			}
			const char *eq = memchr(s + i, '=', end - i);
			size_t nlen = eq ? (size_t)(eq - (s + i)) : end - i;
			char *name = http_form_decode(s + i, nlen);
			char *value = eq ? http_form_decode(eq + 1,
							    end - nlen - i - 1)
					 : xstrdup("");
			if (name == NULL || value == NULL || name[0] == '\0' ||
			    form_get(&r, name) != NULL) {
				free(name);
				free(value);
				rc = -EINVAL;
				goto fail;
			}
			r.params = xrealloc(r.params,
					    (r.nparams + 1) * sizeof *r.params);
			r.params[r.nparams].name = name;
			r.params[r.nparams].value = value;
			r.nparams++;
		}
		i = end + 1;
	}
	*q = r;
	return 0;
fail:
	form_query_clear(&r);
	return rc;
}

const char *form_get(const struct form_query *q, const char *name)
{
	for (size_t i = 0; i < q->nparams; i++)
		if (strcmp(q->params[i].name, name) == 0)
			return q->params[i].value;
	return NULL;
}
