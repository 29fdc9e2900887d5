/*
 * ${VAR} and ${VAR:-default} expansion of config values from the
 * environment, and the messages a server gets when a value cannot be
 * expanded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_int.h"
#include "util/buf.h"
#include "util/xmalloc.h"

enum cfg_expand_rc {
	CFG_EXPAND_OK,
	CFG_EXPAND_UNSET,
	CFG_EXPAND_UNTERMINATED,
	CFG_EXPAND_BADNAME,
	CFG_EXPAND_TOOLONG,
};

static bool cfg_var_name_ok(const char *p, size_t n)
{
	if (n == 0 || (p[0] >= '0' && p[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = p[i];
		if (!(ch == '_' || (ch >= 'a' && ch <= 'z') ||
		      (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')))
			return false;
	}
	return true;
}

/* Defaults are literal and end at the first '}', as in the hosts whose
 * files we read: no nesting, no escapes. */
static enum cfg_expand_rc cfg_expand_into(const char *in, struct buf *out,
					  char **missing)
{
	const char *p = in;
	while (*p) {
		const char *dollar = strstr(p, "${");
		if (dollar == NULL) {
			buf_puts(out, p);
			break;
		}
		buf_append(out, p, (size_t)(dollar - p));
		const char *body = dollar + 2;
		const char *close = strchr(body, '}');
		if (close == NULL)
			return CFG_EXPAND_UNTERMINATED;
		const char *dflt = strstr(body, ":-");
		size_t nlen = (dflt && dflt < close) ? (size_t)(dflt - body)
						     : (size_t)(close - body);
		if (!cfg_var_name_ok(body, nlen))
			return CFG_EXPAND_BADNAME;
		char *name = xstrndup(body, nlen);
		const char *val = getenv(name);
		if (dflt && dflt < close && (val == NULL || *val == '\0')) {
			buf_append(out, dflt + 2, (size_t)(close - dflt - 2));
		} else if (val != NULL) {
			buf_puts(out, val);
		} else {
			*missing = name;
			return CFG_EXPAND_UNSET;
		}
		free(name);
		if (out->len > CONFIG_MAX_STRING)
			return CFG_EXPAND_TOOLONG;
		p = close + 1;
	}
	if (out->len > CONFIG_MAX_STRING)
		return CFG_EXPAND_TOOLONG;
	return CFG_EXPAND_OK;
}

int config_expand(const char *in, char **out, char **missing)
{
	struct buf b;
	char *name = NULL;
	buf_init(&b);
	*out = NULL;
	if (missing)
		*missing = NULL;
	enum cfg_expand_rc rc = cfg_expand_into(in, &b, &name);
	if (rc == CFG_EXPAND_OK) {
		*out = buf_steal(&b);
		return 0;
	}
	buf_free(&b);
	if (rc == CFG_EXPAND_UNSET) {
		if (missing)
			*missing = name;
		else
			free(name);
		return -ENOENT;
	}
	return rc == CFG_EXPAND_TOOLONG ? -E2BIG : -EINVAL;
}

char **config_expand_values(const char *in)
{
	char **out = NULL;
	size_t n = 0;
	for (const char *p = strstr(in, "${"); p; p = strstr(p, "${")) {
		const char *body = p + 2;
		const char *close = strchr(body, '}');
		if (close == NULL)
			break;
		const char *dflt = strstr(body, ":-");
		size_t nlen = (dflt && dflt < close) ? (size_t)(dflt - body)
						     : (size_t)(close - body);
		p = close + 1;
		if (!cfg_var_name_ok(body, nlen))
			continue;
		char *name = xstrndup(body, nlen);
		const char *val = getenv(name);
		free(name);
		if (val == NULL || *val == '\0')
			continue;
		out = xrealloc(out, (n + 2) * sizeof *out);
		out[n++] = xstrdup(val);
		out[n] = NULL;
	}
	return out;
}

/* Expands raw for field (where: "item 2", "\"TOKEN\"" or NULL). On failure
 * *out is a copy of raw, which holds no expanded value and so no secret. */
int config_srv_expand(struct config_srv *c, const char *field,
		      const char *where, const char *raw, char **out)
{
	struct buf b;
	char *name = NULL;
	buf_init(&b);
	enum cfg_expand_rc rc = cfg_expand_into(raw, &b, &name);
	const char *sep = where ? ": " : "";
	where = where ? where : "";
	switch (rc) {
	case CFG_EXPAND_OK:
		if (!config_utf8_ok(b.data ? b.data : "")) {
			config_srv_fail(c, field,
					"%s%snot valid UTF-8 after expansion",
					where, sep);
			break;
		}
		*out = buf_steal(&b);
		return 0;
	case CFG_EXPAND_UNSET:
		config_srv_fail(c, field,
				"%s%svariable \"%s\" is not set (write "
				"${%s:-default} to give a default)",
				where, sep, name, name);
		break;
	case CFG_EXPAND_UNTERMINATED:
		config_srv_fail(c, field, "%s%s\"${\" without a closing \"}\"",
				where, sep);
		break;
	case CFG_EXPAND_BADNAME:
		config_srv_fail(c, field,
				"%s%s\"${...}\" does not hold a variable name "
				"(letters, digits and _, not starting with a "
				"digit; ${NAME} or ${NAME:-default})",
				where, sep);
		break;
	case CFG_EXPAND_TOOLONG:
		config_srv_fail(c, field,
				"%s%slonger than %d bytes after expansion",
				where, sep, CONFIG_MAX_STRING);
		break;
	}
	free(name);
	buf_free(&b);
	*out = xstrdup(raw);
	return -EINVAL;
}
