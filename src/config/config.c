/*
 * Configuration: turns an `mcpServers` file into server_config entries, one
 * error per bad server so the good ones still run; owns ${VAR} expansion,
 * durations, and the identity and masked views of a server.
 */
#include "config/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/fsutil.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

/* Deadlines are computed as now + duration; 2^53 ms (285,000 years) keeps
 * that sum far from int64 overflow and exact in any JSON reader. */
#define CFG_MAX_DURATION_MS ((int64_t)1 << 53)
#define CFG_MAX_PREFIX 64
/* A file of a thousand unknown fields needs one screen, not a thousand. */
#define CFG_MAX_WARNINGS 100
/* How much of a name or enum value a message quotes. */
#define CFG_MAX_SHOWN 80

#define CFG_DURATION_FORMS                                                     \
	"expected a duration: milliseconds as a non-negative integer (1500) "  \
	"or a string of digits with ms, s, m or h (\"500ms\", \"2s\", "        \
	"\"10m\", \"1h\")"

enum cfg_expand_rc {
	CFG_EXPAND_OK,
	CFG_EXPAND_UNSET,
	CFG_EXPAND_UNTERMINATED,
	CFG_EXPAND_BADNAME,
	CFG_EXPAND_TOOLONG,
};

/* One server being parsed: where messages go and what they are anchored to. */
struct cfg_srv {
	struct config *cfg;
	struct server_config *s;
	const char *dir; /* absolute folder of the config file */
	char *shown;	 /* the name as messages quote it */
};

static const char *const cfg_server_fields[] = {
	"command",	  "args",	 "env",		"cwd",	    "url",
	"headers",	  "type",	 "scope",	"exposure", "prefix",
	"startupTimeout", "idleTimeout", "toolTimeout", "disabled", NULL,
};

static char *cfg_vformat(const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		return xstrdup("");
	char *s = xmalloc((size_t)n + 1);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

/* Names and values quoted in messages come from the file: escape what a
 * terminal would interpret and cut what would flood it. */
static char *cfg_show(const char *s)
{
	struct buf b;
	buf_init(&b);
	buf_append(&b, "", 0);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (b.len >= CFG_MAX_SHOWN) {
			buf_puts(&b, "...");
			break;
		}
		if (*p == '"' || *p == '\\')
			buf_printf(&b, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			buf_printf(&b, "\\x%02x", *p);
		else
			buf_append(&b, p, 1);
	}
	return buf_steal(&b);
}

static const char *cfg_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "boolean";
	case JSON_NULL:
		return "null";
	}
	return "unknown";
}

static bool cfg_utf8_ok(const char *s)
{
	json_t *t = json_string(s);
	if (t == NULL)
		return false;
	json_decref(t);
	return true;
}

/* NULL and invalid UTF-8 become null so a view never loses its key. */
static json_t *cfg_json_str(const char *s)
{
	json_t *t = s ? json_string(s) : NULL;
	return t ? t : json_null();
}

static void cfg_set_fatal(struct config *cfg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void cfg_set_fatal(struct config *cfg, const char *fmt, ...)
{
	if (cfg->fatal)
		return;
	va_list ap;
	va_start(ap, fmt);
	cfg->fatal = cfg_vformat(fmt, ap);
	va_end(ap);
}

static void cfg_warn(struct config *cfg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void cfg_warn(struct config *cfg, const char *fmt, ...)
{
	if (cfg->nwarnings > CFG_MAX_WARNINGS)
		return;
	cfg->warnings = xrealloc(cfg->warnings,
				 (cfg->nwarnings + 1) * sizeof *cfg->warnings);
	if (cfg->nwarnings == CFG_MAX_WARNINGS) {
		cfg->warnings[cfg->nwarnings++] =
			xasprintf("%s: more warnings not shown", cfg->path);
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	cfg->warnings[cfg->nwarnings++] = cfg_vformat(fmt, ap);
	va_end(ap);
}

/* The first error of a server is the one reported: later ones are often
 * consequences of it. */
static void srv_fail(struct cfg_srv *c, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void srv_fail(struct cfg_srv *c, const char *field, const char *fmt, ...)
{
	if (c->s->error)
		return;
	va_list ap;
	va_start(ap, fmt);
	char *what = cfg_vformat(fmt, ap);
	va_end(ap);
	if (field)
		c->s->error = xasprintf("%s: server \"%s\": field \"%s\": %s",
					c->cfg->path, c->shown, field, what);
	else
		c->s->error = xasprintf("%s: server \"%s\": %s", c->cfg->path,
					c->shown, what);
	free(what);
}

int config_parse_duration(const json_t *v, int64_t *ms)
{
	if (v == NULL)
		return -EINVAL;
	if (json_is_integer(v)) {
		json_int_t n = json_integer_value(v);
		if (n < 0 || n > CFG_MAX_DURATION_MS)
			return -EINVAL;
		*ms = n;
		return 0;
	}
	if (!json_is_string(v))
		return -EINVAL;
	const char *s = json_string_value(v);
	size_t len = json_string_length(v);
	size_t i = 0;
	int64_t n = 0;
	while (i < len && s[i] >= '0' && s[i] <= '9') {
		n = n * 10 + (s[i] - '0');
		if (n > CFG_MAX_DURATION_MS)
			return -EINVAL;
		i++;
	}
	if (i == 0)
		return -EINVAL;
	const char *unit = s + i;
	size_t ulen = len - i;
	int64_t mult;
	if (ulen == 0 || (ulen == 2 && memcmp(unit, "ms", 2) == 0))
		mult = 1;
	else if (ulen == 1 && unit[0] == 's')
		mult = 1000;
	else if (ulen == 1 && unit[0] == 'm')
		mult = 60 * 1000;
	else if (ulen == 1 && unit[0] == 'h')
		mult = 60 * 60 * 1000;
	else
		return -EINVAL;
	if (n > CFG_MAX_DURATION_MS / mult)
		return -EINVAL;
	*ms = n * mult;
	return 0;
}

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

/* Expands raw for field (where: "item 2", "\"TOKEN\"" or NULL). On failure
 * *out is a copy of raw, which holds no expanded value and so no secret. */
static int srv_expand(struct cfg_srv *c, const char *field, const char *where,
		      const char *raw, char **out)
{
	struct buf b;
	char *name = NULL;
	buf_init(&b);
	enum cfg_expand_rc rc = cfg_expand_into(raw, &b, &name);
	const char *sep = where ? ": " : "";
	where = where ? where : "";
	switch (rc) {
	case CFG_EXPAND_OK:
		if (!cfg_utf8_ok(b.data ? b.data : "")) {
			srv_fail(c, field,
				 "%s%snot valid UTF-8 after expansion", where,
				 sep);
			break;
		}
		*out = buf_steal(&b);
		return 0;
	case CFG_EXPAND_UNSET:
		srv_fail(c, field,
			 "%s%svariable \"%s\" is not set (write "
			 "${%s:-default} to give a default)",
			 where, sep, name, name);
		break;
	case CFG_EXPAND_UNTERMINATED:
		srv_fail(c, field, "%s%s\"${\" without a closing \"}\"", where,
			 sep);
		break;
	case CFG_EXPAND_BADNAME:
		srv_fail(c, field,
			 "%s%s\"${...}\" does not hold a variable name "
			 "(letters, digits and _, not starting with a "
			 "digit; ${NAME} or ${NAME:-default})",
			 where, sep);
		break;
	case CFG_EXPAND_TOOLONG:
		srv_fail(c, field, "%s%slonger than %d bytes after expansion",
			 where, sep, CONFIG_MAX_STRING);
		break;
	}
	free(name);
	buf_free(&b);
	*out = xstrdup(raw);
	return -EINVAL;
}

/* Lexical: "." and ".." are folded without looking at the disk, so the
 * result is stable whether or not the file exists yet. */
static char *cfg_path_normalize(const char *abs)
{
	size_t n = strlen(abs);
	char *out = xmalloc(n + 2);
	size_t len = 0;
	const char *p = abs;
	while (*p) {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		size_t cl = strcspn(p, "/");
		if (cl == 1 && p[0] == '.') {
			/* nothing */
		} else if (cl == 2 && p[0] == '.' && p[1] == '.') {
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
		} else {
			out[len++] = '/';
			memcpy(out + len, p, cl);
			len += cl;
		}
		p += cl;
	}
	if (len == 0)
		out[len++] = '/';
	out[len] = '\0';
	return out;
}

static char *cfg_path_join(const char *dir, const char *rel)
{
	char *joined = xasprintf("%s/%s", dir, rel);
	char *norm = cfg_path_normalize(joined);
	free(joined);
	return norm;
}

/* The folder relative paths in the file are resolved against. */
static char *cfg_dir_of(struct config *cfg, const char *path)
{
	char *cwd = NULL;
	if (path == NULL || path[0] != '/') {
		cwd = getcwd(NULL, 0);
		if (cwd == NULL) {
			cfg_warn(cfg,
				 "%s: cannot tell the current directory; "
				 "relative paths are taken from /",
				 cfg->path);
			cwd = xstrdup("/");
		}
	}
	if (path == NULL) {
		char *dir = cfg_path_normalize(cwd);
		free(cwd);
		return dir;
	}
	char *abs = cwd ? cfg_path_join(cwd, path) : cfg_path_normalize(path);
	free(cwd);
	char *slash = strrchr(abs, '/');
	if (slash == abs)
		slash[1] = '\0';
	else
		*slash = '\0';
	return abs;
}

/* 0: absent (or null), 1: *out set, -1: wrong type or too long. */
static int srv_get_string(struct cfg_srv *c, const json_t *obj,
			  const char *field, const char **out)
{
	json_t *v = json_object_get(obj, field);
	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v)) {
		srv_fail(c, field, "expected a string, got %s",
			 cfg_type_name(v));
		return -1;
	}
	if (json_string_length(v) > CONFIG_MAX_STRING) {
		srv_fail(c, field, "longer than %d bytes", CONFIG_MAX_STRING);
		return -1;
	}
	*out = json_string_value(v);
	return 1;
}

static void srv_check_name(struct cfg_srv *c)
{
	const char *name = c->s->name;
	size_t len = strlen(name);
	if (len == 0) {
		srv_fail(c, NULL, "the name must not be empty");
		return;
	}
	if (len > CONFIG_MAX_NAME) {
		srv_fail(c, NULL, "the name is longer than %d characters",
			 CONFIG_MAX_NAME);
		return;
	}
	if (strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_.-") != len)
		srv_fail(c, NULL,
			 "the name may only hold letters, digits, \"_\", "
			 "\".\" and \"-\"");
}

/* command or cwd: expanded, then anchored to the config file's folder when
 * relative (a command only when it has a '/'; bare names go to PATH). */
static char *srv_parse_path(struct cfg_srv *c, const json_t *obj,
			    const char *field, bool always_anchor)
{
	const char *raw;
	if (srv_get_string(c, obj, field, &raw) <= 0)
		return NULL;
	if (*raw == '\0') {
		srv_fail(c, field, "must not be empty");
		return NULL;
	}
	char *val;
	if (srv_expand(c, field, NULL, raw, &val) < 0)
		return val;
	if (*val == '\0') {
		srv_fail(c, field, "empty after expansion");
		return val;
	}
	if (val[0] != '/' && (always_anchor || strchr(val, '/'))) {
		char *abs = cfg_path_join(c->dir, val);
		free(val);
		val = abs;
		if (!cfg_utf8_ok(val))
			srv_fail(c, field, "the resolved path is not UTF-8");
	}
	return val;
}

static void srv_parse_args(struct cfg_srv *c, const json_t *obj)
{
	struct server_config *s = c->s;
	json_t *a = json_object_get(obj, "args");
	if (a == NULL || json_is_null(a))
		return;
	if (!json_is_array(a)) {
		srv_fail(c, "args", "expected an array of strings, got %s",
			 cfg_type_name(a));
		return;
	}
	size_t n = json_array_size(a);
	if (n > CONFIG_MAX_ARGS) {
		srv_fail(c, "args", "%zu items, at most %d are allowed", n,
			 CONFIG_MAX_ARGS);
		return;
	}
	/* One spare NULL so the list can go to exec as it is. */
	s->args = xcalloc(n + 1, sizeof *s->args);
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_array_get(a, i);
		if (!json_is_string(v)) {
			srv_fail(c, "args",
				 "expected an array of strings, got %s at "
				 "index %zu",
				 cfg_type_name(v), i);
			continue;
		}
		if (json_string_length(v) > CONFIG_MAX_STRING) {
			srv_fail(c, "args", "item %zu: longer than %d bytes", i,
				 CONFIG_MAX_STRING);
			continue;
		}
		char *where = xasprintf("item %zu", i);
		srv_expand(c, "args", where, json_string_value(v),
			   &s->args[s->nargs++]);
		free(where);
	}
}

static bool cfg_header_name_ok(const char *k)
{
	size_t len = strlen(k);
	return len > 0 && strspn(k, "abcdefghijklmnopqrstuvwxyz"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
				    "!#$%&'*+-.^_`|~") == len;
}

static bool cfg_env_name_ok(const char *k)
{
	return *k != '\0' && strchr(k, '=') == NULL;
}

/* env or headers: an object of strings whose values are expanded. */
static void srv_parse_map(struct cfg_srv *c, const json_t *obj,
			  const char *field, bool headers,
			  struct config_kv **out, size_t *nout)
{
	json_t *m = json_object_get(obj, field);
	if (m == NULL || json_is_null(m))
		return;
	if (!json_is_object(m)) {
		srv_fail(c, field, "expected an object of strings, got %s",
			 cfg_type_name(m));
		return;
	}
	size_t n = json_object_size(m);
	if (n > CONFIG_MAX_ENV) {
		srv_fail(c, field, "%zu entries, at most %d are allowed", n,
			 CONFIG_MAX_ENV);
		return;
	}
	if (n == 0)
		return;
	struct config_kv *kv = xcalloc(n, sizeof *kv);
	size_t i = 0;
	const char *key;
	json_t *v;
	json_object_foreach(m, key, v)
	{
		char *shown = cfg_show(key);
		char *where = xasprintf("\"%s\"", shown);
		free(shown);
		if (strlen(key) > CONFIG_MAX_STRING ||
		    !(headers ? cfg_header_name_ok(key)
			      : cfg_env_name_ok(key))) {
			srv_fail(c, field, "%s is not a valid %s name", where,
				 headers ? "header" : "variable");
		} else if (!json_is_string(v)) {
			srv_fail(c, field,
				 "expected an object of strings, got %s for "
				 "%s",
				 cfg_type_name(v), where);
		} else if (json_string_length(v) > CONFIG_MAX_STRING) {
			srv_fail(c, field, "%s: longer than %d bytes", where,
				 CONFIG_MAX_STRING);
		} else {
			kv[i].key = xstrdup(key);
			srv_expand(c, field, where, json_string_value(v),
				   &kv[i].value);
			/* A line break would let a value add headers of its
			 * own to every request. */
			if (headers && strpbrk(kv[i].value, "\r\n"))
				srv_fail(c, field,
					 "%s: the value holds a line "
					 "break",
					 where);
			i++;
		}
		free(where);
	}
	*out = kv;
	*nout = i;
}

static void srv_parse_url(struct cfg_srv *c, const json_t *obj)
{
	const char *raw;
	if (srv_get_string(c, obj, "url", &raw) <= 0)
		return;
	if (srv_expand(c, "url", NULL, raw, &c->s->url) < 0)
		return;
	const char *u = c->s->url;
	if (strncasecmp(u, "http://", 7) != 0 &&
	    strncasecmp(u, "https://", 8) != 0) {
		srv_fail(c, "url", "must start with http:// or https://");
		return;
	}
	for (const unsigned char *p = (const unsigned char *)u; *p; p++) {
		if (*p <= 0x20 || *p == 0x7f) {
			srv_fail(c, "url",
				 "holds a space or a control character");
			return;
		}
	}
}

/* Returns the enum index of v among names, -1 when absent, -2 when bad. */
static int srv_get_enum(struct cfg_srv *c, const json_t *obj, const char *field,
			const char *const *names, const char *expected)
{
	const char *v;
	int r = srv_get_string(c, obj, field, &v);
	if (r == 0)
		return -1;
	if (r < 0)
		return -2;
	for (int i = 0; names[i]; i++)
		if (strcmp(v, names[i]) == 0)
			return i;
	char *shown = cfg_show(v);
	srv_fail(c, field, "unknown value \"%s\": expected %s", shown,
		 expected);
	free(shown);
	return -2;
}

static void srv_get_duration(struct cfg_srv *c, const json_t *obj,
			     const char *field, int64_t *ms)
{
	json_t *v = json_object_get(obj, field);
	if (v == NULL || json_is_null(v))
		return;
	if (config_parse_duration(v, ms) < 0)
		srv_fail(c, field, CFG_DURATION_FORMS);
}

static void srv_parse_prefix(struct cfg_srv *c, const json_t *obj)
{
	const char *v;
	if (srv_get_string(c, obj, "prefix", &v) <= 0)
		return;
	size_t len = strlen(v);
	if (len > CFG_MAX_PREFIX) {
		srv_fail(c, "prefix", "longer than %d characters",
			 CFG_MAX_PREFIX);
		return;
	}
	if (strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		      "0123456789_-") != len) {
		srv_fail(c, "prefix",
			 "may only hold letters, digits, \"_\" and \"-\"");
		return;
	}
	c->s->prefix = xstrdup(v);
}

enum srv_type { SRV_TYPE_STDIO, SRV_TYPE_HTTP, SRV_TYPE_SHTTP, SRV_TYPE_SSE };

/* Settles the kind from the fields present and checks "type" agrees. */
static void srv_settle_kind(struct cfg_srv *c, int type)
{
	struct server_config *s = c->s;
	bool cmd = s->command != NULL, url = s->url != NULL;
	if (type == SRV_TYPE_SSE) {
		srv_fail(c, "type",
			 "the legacy SSE transport (\"sse\") is not supported; "
			 "point \"url\" at the server's Streamable HTTP "
			 "endpoint and use \"http\"");
	} else if (type == SRV_TYPE_STDIO && url) {
		srv_fail(c, "type", "\"stdio\" does not take a \"url\"");
	} else if (type == SRV_TYPE_STDIO && !cmd) {
		srv_fail(c, "type", "\"stdio\" needs a \"command\"");
	} else if ((type == SRV_TYPE_HTTP || type == SRV_TYPE_SHTTP) && !url) {
		srv_fail(c, "type", "\"%s\" needs a \"url\"",
			 type == SRV_TYPE_HTTP ? "http" : "streamable-http");
	}
	if (cmd && url) {
		s->kind = SERVER_HTTP_LOCAL;
		if (strstr(s->url, "{port}") == NULL)
			srv_fail(c, "url",
				 "with \"command\" the url must contain "
				 "{port}, where mcpvisor puts the port it "
				 "gives the server");
	} else if (url) {
		s->kind = SERVER_HTTP_REMOTE;
	} else {
		s->kind = SERVER_STDIO;
		if (!cmd)
			srv_fail(c, "command",
				 "missing: a server needs \"command\" (a "
				 "local program) or \"url\" (a Streamable "
				 "HTTP server)");
	}
}

static void srv_warn_fields(struct cfg_srv *c, const json_t *obj)
{
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)obj, key, v)
	{
		bool known = false;
		for (int i = 0; cfg_server_fields[i]; i++)
			known = known || strcmp(key, cfg_server_fields[i]) == 0;
		if (known)
			continue;
		char *shown = cfg_show(key);
		cfg_warn(c->cfg,
			 "%s: server \"%s\": unknown field \"%s\" (ignored)",
			 c->cfg->path, c->shown, shown);
		free(shown);
	}
	struct server_config *s = c->s;
	if (s->command == NULL && s->url != NULL) {
		static const char *const local[] = {"args", "env", "cwd"};
		for (size_t i = 0; i < 3; i++) {
			json_t *lv = json_object_get(obj, local[i]);
			if (lv != NULL && !json_is_null(lv))
				cfg_warn(c->cfg,
					 "%s: server \"%s\": field \"%s\" is "
					 "ignored without \"command\"",
					 c->cfg->path, c->shown, local[i]);
		}
	}
	json_t *h = json_object_get(obj, "headers");
	if (s->url == NULL && s->command != NULL && h != NULL &&
	    !json_is_null(h))
		cfg_warn(c->cfg,
			 "%s: server \"%s\": field \"headers\" is ignored "
			 "without \"url\"",
			 c->cfg->path, c->shown);
}

static void srv_parse(struct cfg_srv *c, const json_t *obj)
{
	static const char *const types[] = {"stdio", "http", "streamable-http",
					    "sse", NULL};
	static const char *const scopes[] = {"session", "space", "app", NULL};
	/* codemode and codemode-deferred are other hosts' names for
	 * deferred. */
	static const char *const exposures[] = {
		"direct", "hidden", "deferred", "codemode", "codemode-deferred",
		NULL};
	struct server_config *s = c->s;
	s->startup_timeout_ms = CONFIG_DEFAULT_STARTUP_MS;
	s->idle_timeout_ms = -1;
	s->tool_timeout_ms = 0;
	srv_check_name(c);
	if (!json_is_object(obj)) {
		srv_fail(c, NULL,
			 "expected an object with \"command\" or \"url\", got "
			 "%s",
			 cfg_type_name(obj));
		return;
	}
	s->command = srv_parse_path(c, obj, "command", false);
	srv_parse_args(c, obj);
	srv_parse_map(c, obj, "env", false, &s->env, &s->nenv);
	s->cwd = srv_parse_path(c, obj, "cwd", true);
	srv_parse_url(c, obj);
	srv_parse_map(c, obj, "headers", true, &s->headers, &s->nheaders);
	int type = srv_get_enum(c, obj, "type", types,
				"\"stdio\", \"http\" or \"streamable-http\"");
	int scope = srv_get_enum(c, obj, "scope", scopes,
				 "\"session\", \"space\" or \"app\"");
	if (scope >= 0)
		s->scope = (enum server_scope)scope;
	int exposure = srv_get_enum(
		c, obj, "exposure", exposures,
		"\"direct\", \"hidden\" or \"deferred\" (or its aliases "
		"\"codemode\" and \"codemode-deferred\")");
	if (exposure >= 0)
		s->exposure = exposure >= 2 ? EXPOSE_DEFERRED
					    : (enum server_exposure)exposure;
	srv_parse_prefix(c, obj);
	srv_get_duration(c, obj, "startupTimeout", &s->startup_timeout_ms);
	srv_get_duration(c, obj, "idleTimeout", &s->idle_timeout_ms);
	srv_get_duration(c, obj, "toolTimeout", &s->tool_timeout_ms);
	json_t *d = json_object_get(obj, "disabled");
	if (json_is_boolean(d))
		s->disabled = json_is_true(d);
	else if (d != NULL && !json_is_null(d))
		srv_fail(c, "disabled", "expected true or false, got %s",
			 cfg_type_name(d));
	srv_settle_kind(c, type);
	srv_warn_fields(c, obj);
}

/* jansson quotes the text near a syntax error, which may be a literal
 * secret: keep its reason, drop the quote. */
static char *cfg_json_reason(const char *text)
{
	const char *near = strstr(text, " near '");
	return near ? xstrndup(text, (size_t)(near - text)) : xstrdup(text);
}

static int cfg_top_duration(struct config *cfg, const json_t *root,
			    const char *field, int64_t *ms)
{
	json_t *v = json_object_get(root, field);
	if (v == NULL || json_is_null(v))
		return 0;
	if (config_parse_duration(v, ms) == 0)
		return 0;
	cfg_set_fatal(cfg, "%s: field \"%s\": %s", cfg->path, field,
		      CFG_DURATION_FORMS);
	return -EINVAL;
}

static struct config *cfg_new(const char *path)
{
	struct config *cfg = xcalloc(1, sizeof *cfg);
	cfg->path = xstrdup(path ? path : "<config>");
	cfg->idle_timeout_ms = CONFIG_DEFAULT_IDLE_MS;
	cfg->shutdown_grace_ms = CONFIG_DEFAULT_GRACE_MS;
	return cfg;
}

struct config *config_parse(const char *text, size_t len, const char *path)
{
	struct config *cfg = cfg_new(path);
	json_t *root = NULL;
	char *dir = NULL;
	if (len > CONFIG_MAX_FILE_BYTES) {
		cfg_set_fatal(cfg,
			      "%s: larger than %d bytes, the limit for a "
			      "config file",
			      cfg->path, CONFIG_MAX_FILE_BYTES);
		goto out;
	}
	json_error_t jerr;
	root = json_loadb(text ? text : "", text ? len : 0,
			  JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		char *why = cfg_json_reason(jerr.text);
		cfg_set_fatal(cfg, "%s: line %d, column %d: not valid JSON: %s",
			      cfg->path, jerr.line, jerr.column, why);
		free(why);
		goto out;
	}
	if (!json_is_object(root)) {
		cfg_set_fatal(cfg,
			      "%s: expected an object with \"mcpServers\" at "
			      "the top, got %s",
			      cfg->path, cfg_type_name(root));
		goto out;
	}
	json_t *servers = json_object_get(root, "mcpServers");
	if (servers == NULL) {
		cfg_set_fatal(cfg,
			      "%s: no \"mcpServers\" field: the file must "
			      "hold {\"mcpServers\": {\"name\": {\"command\": "
			      "...}}}",
			      cfg->path);
		goto out;
	}
	if (!json_is_object(servers)) {
		cfg_set_fatal(cfg,
			      "%s: field \"mcpServers\": expected an object "
			      "of servers by name, got %s",
			      cfg->path, cfg_type_name(servers));
		goto out;
	}
	if (json_object_size(servers) > CONFIG_MAX_SERVERS) {
		cfg_set_fatal(cfg, "%s: %zu servers, at most %d are supported",
			      cfg->path, json_object_size(servers),
			      CONFIG_MAX_SERVERS);
		goto out;
	}
	if (cfg_top_duration(cfg, root, "idleTimeout", &cfg->idle_timeout_ms) <
		    0 ||
	    cfg_top_duration(cfg, root, "shutdownGrace",
			     &cfg->shutdown_grace_ms) < 0)
		goto out;
	const char *key;
	json_t *v;
	json_object_foreach(root, key, v)
	{
		if (strcmp(key, "mcpServers") && strcmp(key, "idleTimeout") &&
		    strcmp(key, "shutdownGrace")) {
			char *shown = cfg_show(key);
			cfg_warn(cfg,
				 "%s: unknown top-level field \"%s\" "
				 "(ignored)",
				 cfg->path, shown);
			free(shown);
		}
	}
	dir = cfg_dir_of(cfg, path);
	cfg->servers =
		xcalloc(json_object_size(servers) + 1, sizeof *cfg->servers);
	json_object_foreach(servers, key, v)
	{
		struct server_config *s = &cfg->servers[cfg->nservers++];
		s->name = xstrdup(key);
		struct cfg_srv c = {
			.cfg = cfg, .s = s, .dir = dir, .shown = cfg_show(key)};
		srv_parse(&c, v);
		if (s->prefix == NULL)
			s->prefix = xstrdup(s->name);
		free(c.shown);
	}
out:
	free(dir);
	json_decref(root);
	return cfg;
}

struct config *config_load_file(const char *path)
{
	char *text = NULL;
	size_t len = 0;
	int rc = fsutil_read_file(path, CONFIG_MAX_FILE_BYTES, &text, &len);
	if (rc == 0) {
		struct config *cfg = config_parse(text, len, path);
		free(text);
		return cfg;
	}
	struct config *cfg = cfg_new(path);
	if (rc == -EFBIG)
		cfg_set_fatal(cfg,
			      "%s: larger than %d bytes, the limit for a "
			      "config file",
			      cfg->path, CONFIG_MAX_FILE_BYTES);
	else
		cfg_set_fatal(cfg, "%s: cannot read: %s", cfg->path,
			      strerror(-rc));
	return cfg;
}

static void cfg_free_kv(struct config_kv *kv, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

static void cfg_free_server(struct server_config *s)
{
	free(s->name);
	free(s->command);
	for (size_t i = 0; i < s->nargs; i++)
		free(s->args[i]);
	free(s->args);
	cfg_free_kv(s->env, s->nenv);
	free(s->cwd);
	free(s->url);
	cfg_free_kv(s->headers, s->nheaders);
	free(s->prefix);
	free(s->error);
}

void config_free(struct config *cfg)
{
	if (cfg == NULL)
		return;
	for (size_t i = 0; i < cfg->nservers; i++)
		cfg_free_server(&cfg->servers[i]);
	free(cfg->servers);
	for (size_t i = 0; i < cfg->nwarnings; i++)
		free(cfg->warnings[i]);
	free(cfg->warnings);
	free(cfg->path);
	free(cfg->fatal);
	free(cfg);
}

const struct server_config *config_find(const struct config *cfg,
					const char *name)
{
	if (cfg == NULL || name == NULL)
		return NULL;
	for (size_t i = 0; i < cfg->nservers; i++)
		if (strcmp(cfg->servers[i].name, name) == 0)
			return &cfg->servers[i];
	return NULL;
}

static char *cfg_fingerprint(const char *salt, const char *key,
			     const char *value)
{
	struct sha256_ctx *h = sha256_new();
	const char *sl = salt ? salt : "";
	char hex[SHA256_HEX_BYTES];
	sha256_update(h, sl, strlen(sl) + 1);
	sha256_update(h, key, strlen(key) + 1);
	sha256_update(h, value, strlen(value));
	sha256_final_hex(h, hex);
	sha256_free(h);
	return xasprintf("fp:%s", hex);
}

enum cfg_kv_view { CFG_KV_PLAIN, CFG_KV_FINGERPRINT, CFG_KV_MASKED };

static json_t *cfg_kv_json(const struct config_kv *kv, size_t n,
			   enum cfg_kv_view view, const char *salt)
{
	json_t *o = json_object();
	for (size_t i = 0; i < n; i++) {
		json_t *v;
		if (view == CFG_KV_MASKED) {
			v = json_string("***");
		} else if (view == CFG_KV_FINGERPRINT) {
			char *fp =
				cfg_fingerprint(salt, kv[i].key, kv[i].value);
			v = json_string(fp);
			free(fp);
		} else {
			v = cfg_json_str(kv[i].value);
		}
		json_object_set_new(o, kv[i].key, v);
	}
	return o;
}

static json_t *cfg_args_json(const struct server_config *s)
{
	json_t *a = json_array();
	for (size_t i = 0; i < s->nargs; i++)
		json_array_append_new(a, cfg_json_str(s->args[i]));
	return a;
}

/* Where the authority (after "scheme://") starts and how long it is. */
static const char *cfg_url_authority(const char *url, size_t *len)
{
	const char *p = strstr(url, "://");
	const char *auth = p ? p + 3 : url;
	*len = strcspn(auth, "/?#");
	return auth;
}

static bool cfg_url_has_secrets(const char *url)
{
	size_t alen;
	const char *auth = cfg_url_authority(url, &alen);
	return memchr(auth, '@', alen) != NULL || strpbrk(url, "?#") != NULL;
}

/* Userinfo may be a password or a token used as user name: drop it all.
 * Query values and fragments are where API keys travel: mask them. */
static char *cfg_url_mask(const char *url)
{
	struct buf b;
	size_t alen;
	const char *auth = cfg_url_authority(url, &alen);
	buf_init(&b);
	buf_append(&b, url, (size_t)(auth - url));
	const char *at = memrchr(auth, '@', alen);
	if (at) {
		buf_puts(&b, "***@");
		buf_append(&b, at + 1, (size_t)(auth + alen - at - 1));
	} else {
		buf_append(&b, auth, alen);
	}
	const char *rest = auth + alen;
	size_t plen = strcspn(rest, "?#");
	buf_append(&b, rest, plen);
	rest += plen;
	if (*rest == '?') {
		rest++;
		size_t qlen = strcspn(rest, "#");
		buf_puts(&b, "?");
		const char *q = rest;
		while (q < rest + qlen) {
			size_t seg = strcspn(q, "&#");
			const char *eq = memchr(q, '=', seg);
			if (eq) {
				buf_append(&b, q, (size_t)(eq - q) + 1);
				buf_puts(&b, "***");
			} else if (seg > 0) {
				buf_puts(&b, "***");
			}
			q += seg;
			if (*q == '&') {
				buf_puts(&b, "&");
				q++;
			}
		}
		rest += qlen;
	}
	if (*rest == '#')
		buf_puts(&b, rest[1] ? "#***" : "#");
	return buf_steal(&b);
}

json_t *config_server_identity(const struct server_config *s, bool fingerprint,
			       const char *salt)
{
	json_t *o = json_object();
	json_object_set_new(o, "kind", json_string(config_kind_name(s->kind)));
	json_object_set_new(o, "command", cfg_json_str(s->command));
	json_object_set_new(o, "args", cfg_args_json(s));
	enum cfg_kv_view view = fingerprint ? CFG_KV_FINGERPRINT : CFG_KV_PLAIN;
	json_object_set_new(o, "env", cfg_kv_json(s->env, s->nenv, view, salt));
	json_object_set_new(o, "cwd", cfg_json_str(s->cwd));
	if (s->url && fingerprint && cfg_url_has_secrets(s->url)) {
		char *fp = cfg_fingerprint(salt, "url", s->url);
		json_object_set_new(o, "url", json_string(fp));
		free(fp);
	} else {
		json_object_set_new(o, "url", cfg_json_str(s->url));
	}
	json_object_set_new(o, "headers",
			    cfg_kv_json(s->headers, s->nheaders, view, salt));
	json_object_set_new(o, "startupTimeout",
			    json_integer(s->startup_timeout_ms));
	json_object_set_new(o, "toolTimeout", json_integer(s->tool_timeout_ms));
	json_object_set_new(o, "idleTimeout", json_integer(s->idle_timeout_ms));
	return o;
}

json_t *config_server_describe(const struct server_config *s)
{
	json_t *o = json_object();
	json_object_set_new(o, "name", cfg_json_str(s->name));
	json_object_set_new(o, "kind", json_string(config_kind_name(s->kind)));
	json_object_set_new(o, "scope",
			    json_string(config_scope_name(s->scope)));
	json_object_set_new(o, "exposure",
			    json_string(config_exposure_name(s->exposure)));
	json_object_set_new(o, "prefix", cfg_json_str(s->prefix));
	json_object_set_new(o, "command", cfg_json_str(s->command));
	json_object_set_new(o, "args", cfg_args_json(s));
	json_object_set_new(o, "env",
			    cfg_kv_json(s->env, s->nenv, CFG_KV_MASKED, NULL));
	json_object_set_new(o, "cwd", cfg_json_str(s->cwd));
	if (s->url) {
		char *masked = cfg_url_mask(s->url);
		json_object_set_new(o, "url", cfg_json_str(masked));
		free(masked);
	} else {
		json_object_set_new(o, "url", json_null());
	}
	json_object_set_new(
		o, "headers",
		cfg_kv_json(s->headers, s->nheaders, CFG_KV_MASKED, NULL));
	json_object_set_new(o, "startupTimeout",
			    json_integer(s->startup_timeout_ms));
	json_object_set_new(o, "idleTimeout", json_integer(s->idle_timeout_ms));
	json_object_set_new(o, "toolTimeout", json_integer(s->tool_timeout_ms));
	json_object_set_new(o, "disabled", json_boolean(s->disabled));
	if (s->error)
		json_object_set_new(o, "error", cfg_json_str(s->error));
	return o;
}

const char *config_scope_name(enum server_scope s)
{
	switch (s) {
	case SCOPE_SESSION:
		return "session";
	case SCOPE_SPACE:
		return "space";
	case SCOPE_APP:
		return "app";
	}
	return "unknown";
}

const char *config_exposure_name(enum server_exposure e)
{
	switch (e) {
	case EXPOSE_DIRECT:
		return "direct";
	case EXPOSE_HIDDEN:
		return "hidden";
	case EXPOSE_DEFERRED:
		return "deferred";
	}
	return "unknown";
}

const char *config_kind_name(enum server_kind k)
{
	switch (k) {
	case SERVER_STDIO:
		return "stdio";
	case SERVER_HTTP_REMOTE:
		return "http-remote";
	case SERVER_HTTP_LOCAL:
		return "http-local";
	}
	return "unknown";
}
