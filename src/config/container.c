/*
 * Container servers in a config: recognises a stdio command that runs a
 * container through an engine's CLI (`docker run ...`, `podman container
 * run ...`), reads the explicit "container" form, and checks both. What it
 * records (struct container_config) is what the container transport needs
 * to own the container without changing what the user asked for.
 *
 * The command form: the command is "docker" or "podman", or a path ending
 * in "/docker" or "/podman"; its args begin with "run" or "container",
 * "run" (global engine options before them, `docker --context x run`, are
 * not recognised: such a server stays a plain stdio server). Run's options
 * are read up to the image: "--opt=value" and the boolean options below
 * stand alone, any other "--opt" and the short options that take a value
 * take the next argument. From them: --name, --rm, --cidfile, what
 * mcpvisor refuses (-d, which would leave no server on the pipe;
 * mcpvisor.* labels, which are its own) and what it warns of (no -i: the
 * server gets no stdin; -t: a terminal instead of a pipe). A `run` with a
 * "url" is an HTTP container like the explicit form's: it publishes the
 * server's port once, `-p 127.0.0.1:{port}:PORT`, and {port} in its args
 * is the port mcpvisor allocates.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_int.h"
#include "util/xmalloc.h"

#define CTR_MAX_VOLUMES 64
#define CTR_MAX_ENGINE 200 /* the journal's bound on an engine as run */
#define CTR_MAX_NAME 128   /* the journal's bound on a container name */
#define CTR_MAX_IMAGE 1024
#define CTR_PORT "{port}"

/* Run's long options that take no value (docker's and podman's). */
static const char *const ctr_bool_long[] = {
	"--rm",
	"--init",
	"--interactive",
	"--tty",
	"--detach",
	"--privileged",
	"--read-only",
	"--read-only-tmpfs",
	"--no-healthcheck",
	"--oom-kill-disable",
	"--publish-all",
	"--disable-content-trust",
	"--quiet",
	"--help",
	"--replace",
	"--rmi",
	"--env-host",
	"--http-proxy",
	"--no-hosts",
	"--tls-verify",
	"--sig-proxy",
	"--passwd",
	"--use-all-host-env",
	NULL,
};

/* Run's short options that take a value (the rest are flags). */
#define CTR_SHORT_WITH_VALUE "acehlmpuvw"

static bool ctr_engine_name_ok(const char *cmd)
{
	const char *base = strrchr(cmd, '/');
	base = base ? base + 1 : cmd;
	return strcmp(base, "docker") == 0 || strcmp(base, "podman") == 0;
}

/* [A-Za-z0-9][A-Za-z0-9_.-]*: what docker and podman accept. */
static bool ctr_name_ok(const char *n)
{
	static const char alnum[] = "abcdefghijklmnopqrstuvwxyz"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	size_t len = strlen(n);
	if (len == 0 || len > CTR_MAX_NAME || strchr(alnum, n[0]) == NULL)
		return false;
	for (size_t i = 0; i < len; i++)
		if (strchr(alnum, n[i]) == NULL && strchr("_.-", n[i]) == NULL)
			return false;
	return true;
}

static bool ctr_is_bool_long(const char *opt, size_t len)
{
	for (int i = 0; ctr_bool_long[i]; i++)
		if (strlen(ctr_bool_long[i]) == len &&
		    strncmp(ctr_bool_long[i], opt, len) == 0)
			return true;
	return false;
}

/* What a -l/--label value may not be: mcpvisor's own labels would let a
 * config make a container look like another runtime's. */
static bool ctr_label_ours(const char *v)
{
	return strncmp(v, "mcpvisor.", 9) == 0;
}

/* What run's options say beyond what container_config keeps. */
struct ctr_seen {
	bool interactive; /* -i: the server's stdin is our pipe */
	bool tty;	  /* -t: a terminal instead */
	/* -p/--publish values that hold {port} (a run with a url) */
	const char *publish;
	int npublish;
};

struct ctr_opt {
	const char *name;  /* "--name", "-e" ... as written (not cut) */
	size_t name_len;   /* up to '=' for a long option */
	const char *value; /* NULL: a flag */
};

/* Reads run's options from args[i]; returns the index after them (the
 * image's), or -1 with the server's error set. */
static int ctr_scan_options(struct config_srv *c, struct container_config *cc,
			    int i, struct ctr_seen *seen)
{
	struct server_config *s = c->s;
	int n = (int)s->nargs;
	for (; i < n; i++) {
		const char *a = s->args[i];
		if (strcmp(a, "--") == 0)
			return i + 1;
		if (a[0] != '-' || a[1] == '\0')
			return i;
		struct ctr_opt o = {.name = a};
		if (a[1] == '-') {
			const char *eq = strchr(a, '=');
			o.name_len = eq ? (size_t)(eq - a) : strlen(a);
			if (eq)
				o.value = eq + 1;
			else if (!ctr_is_bool_long(a, o.name_len))
				o.value = i + 1 < n ? s->args[++i] : "";
		} else {
			/* A run of flags ("-it"), the last of which may
			 * take a value, attached or next. */
			size_t k = 1;
			while (a[k] && !strchr(CTR_SHORT_WITH_VALUE, a[k])) {
				if (a[k] == 'd')
					goto detached;
				seen->interactive |= a[k] == 'i';
				seen->tty |= a[k] == 't';
				k++;
			}
			if (a[k]) {
				o.name = a + k;
				o.name_len = 1;
				o.value = a[k + 1]    ? a + k + 1
					  : i + 1 < n ? s->args[++i]
						      : "";
			} else {
				continue;
			}
		}
#define CTR_IS(lit)                                                            \
	(o.name_len == strlen(lit) && !strncmp(o.name, lit, o.name_len))
		if (CTR_IS("--detach") || CTR_IS("-d")) {
			if (o.value && strcmp(o.value, "false") == 0)
				continue;
			goto detached;
		}
		if (CTR_IS("--interactive")) {
			seen->interactive =
				o.value == NULL || strcmp(o.value, "false");
		} else if (CTR_IS("--tty")) {
			seen->tty = o.value == NULL || strcmp(o.value, "false");
		} else if (CTR_IS("--cidfile")) {
			cc->cidfile = true;
		} else if (CTR_IS("--rm")) {
			cc->rm = o.value == NULL || strcmp(o.value, "false");
		} else if (CTR_IS("--name")) {
			if (s->args_tpl && s->args_tpl[i]) {
				/* Names are shown (status, logs, check):
				 * one made from a ${VAR} could show its
				 * value, which may be a secret. */
				config_srv_fail(
					c, "args",
					"--name: write the name itself, "
					"not a ${VAR} (a container's "
					"name is shown in status and "
					"logs)");
				return -1;
			}
			if (!ctr_name_ok(o.value)) {
				config_srv_fail(c, "args",
						"--name: a container name is 1 "
						"to %d letters, digits, \"_\", "
						"\".\" or \"-\", starting with "
						"a letter or digit",
						CTR_MAX_NAME);
				return -1;
			}
			free(cc->name);
			cc->name = xstrdup(o.value);
		} else if ((CTR_IS("--publish") || CTR_IS("p")) &&
			   strstr(o.value, CTR_PORT)) {
			seen->publish = o.value;
			seen->npublish++;
		} else if ((CTR_IS("--label") || CTR_IS("l")) &&
			   ctr_label_ours(o.value)) {
			config_srv_fail(c, "args",
					"labels starting with \"mcpvisor.\" "
					"are the ones mcpvisor adds to own "
					"the container");
			return -1;
		}
#undef CTR_IS
	}
	return i;
detached:
	config_srv_fail(c, "args",
			"-d/--detach: the container must stay attached: its "
			"stdin and stdout are how mcpvisor talks to the "
			"server");
	return -1;
}

/* The index of "run" in `ENGINE run ...` or `ENGINE container run ...`;
 * -1 when the command is no such thing. */
static int ctr_run_arg(const struct server_config *s)
{
	if (s->command == NULL || !ctr_engine_name_ok(s->command))
		return -1;
	if (s->nargs >= 1 && strcmp(s->args[0], "run") == 0)
		return 0;
	if (s->nargs >= 2 && strcmp(s->args[0], "container") == 0 &&
	    strcmp(s->args[1], "run") == 0)
		return 1;
	return -1;
}

/* A run with a url: its `-p 127.0.0.1:{port}:PORT` says the port inside;
 * it is served like the explicit HTTP form. */
static void ctr_command_http(struct config_srv *c, struct container_config *cc,
			     const struct ctr_seen *seen, int type)
{
	struct server_config *s = c->s;
	s->kind = SERVER_CONTAINER_HTTP;
	s->http_type = type == 3		? HTTP_TYPE_SSE
		       : type == 1 || type == 2 ? HTTP_TYPE_STREAMABLE
						: HTTP_TYPE_AUTO;
	static const char lo[] = "127.0.0.1:" CTR_PORT ":";
	const char *p = seen->publish;
	char *end = NULL;
	long port = p && strncmp(p, lo, sizeof lo - 1) == 0
			    ? strtol(p + sizeof lo - 1, &end, 10)
			    : 0;
	if (seen->npublish != 1 || port < 1 || port > 65535 ||
	    (*end != '\0' && strcmp(end, "/tcp") != 0)) {
		config_srv_fail(c, "args",
				"a `run` with a \"url\" publishes the "
				"server's port once, on loopback: \"-p\", "
				"\"127.0.0.1:{port}:PORT\" (PORT: where it "
				"listens inside)");
		return;
	}
	cc->port = (int)port;
	if (strstr(s->url, CTR_PORT) == NULL)
		config_srv_fail(c, "url",
				"must contain {port}, where mcpvisor puts "
				"the loopback port it publishes");
	else if (!config_url_is_loopback(s->url) || strstr(s->url, "[::1]"))
		config_srv_fail(c, "url",
				"the url's host must be loopback: 127.0.0.1 or "
				"localhost");
}

/* The command form: `ENGINE run ...` or `ENGINE container run ...`; with
 * a url, served over HTTP on the port it publishes. */
static bool ctr_command_form(struct config_srv *c, int type)
{
	struct server_config *s = c->s;
	int run = ctr_run_arg(s);
	if (run < 0)
		return false;
	struct container_config *cc = xcalloc(1, sizeof *cc);
	s->container = cc;
	s->kind = SERVER_CONTAINER;
	cc->run_arg = run;
	if (strlen(s->command) > CTR_MAX_ENGINE) {
		config_srv_fail(c, "command", "longer than %d bytes",
				CTR_MAX_ENGINE);
		return true;
	}
	cc->engine = xstrdup(s->command);
	struct ctr_seen seen = {0};
	int img = ctr_scan_options(c, cc, run + 1, &seen);
	if (img < 0)
		return true;
	if (s->url) {
		ctr_command_http(c, cc, &seen, type);
	} else if (seen.tty) {
		config_warn(c->cfg,
			    "%s: server \"%s\": `run` with -t: the server gets "
			    "a terminal, not a pipe (docker refuses: \"the "
			    "input device is not a TTY\"; output lines may end "
			    "in \\r\\n); use -i alone",
			    c->cfg->path, c->shown);
	} else if (!seen.interactive) {
		config_warn(c->cfg,
			    "%s: server \"%s\": `run` without -i: the server "
			    "gets no stdin, so it cannot read mcpvisor's "
			    "requests (hosts' configs write \"run\", \"-i\")",
			    c->cfg->path, c->shown);
	}
	if (img >= (int)s->nargs) {
		config_srv_fail(c, "args",
				"no image after \"run\" and its options");
		return true;
	}
	const char *tpl = s->args_tpl ? s->args_tpl[img] : NULL;
	cc->image = xstrdup(tpl ? tpl : s->args[img]);
	return true;
}

/* ---- the explicit form ---- */

static bool ctr_has_port(const char *v)
{
	return v != NULL && strstr(v, CTR_PORT) != NULL;
}

/* An array of strings (expanded) into *out; with tpl, the templates of
 * those that came from ${VAR}. */
static int ctr_strings(struct config_srv *c, const json_t *obj,
		       const char *field, size_t max, char ***out, char ***tpl,
		       size_t *n)
{
	json_t *a = json_object_get(obj, field);
	char *where = xasprintf("container.%s", field);
	int rc = 0;
	if (a == NULL || json_is_null(a))
		goto out;
	if (!json_is_array(a) || json_array_size(a) > max) {
		config_srv_fail(c, where,
				"expected an array of at most %zu strings",
				max);
		rc = -EINVAL;
		goto out;
	}
	size_t cnt = json_array_size(a);
	*out = xcalloc(cnt + 1, sizeof **out);
	if (tpl)
		*tpl = xcalloc(cnt + 1, sizeof **tpl);
	for (size_t i = 0; i < cnt; i++) {
		const char *v = json_string_value(json_array_get(a, i));
		if (v == NULL || strlen(v) > CONFIG_MAX_STRING) {
			config_srv_fail(c, where,
					"item %zu: expected a string of at "
					"most %d bytes",
					i, CONFIG_MAX_STRING);
			rc = -EINVAL;
			break;
		}
		char *item = xasprintf("item %zu", i);
		if (tpl && strstr(v, "${"))
			(*tpl)[*n] = xstrdup(v);
		config_srv_expand(c, where, item, v, &(*out)[(*n)++]);
		free(item);
		if (ctr_has_port(v)) {
			config_srv_fail(c, where,
					"{port} is the host's port; in the "
					"container the server listens on "
					"container.port");
			rc = -EINVAL;
			break;
		}
	}
out:
	free(where);
	return rc;
}

static void ctr_warn_fields(struct config_srv *c, const json_t *o)
{
	static const char *const known[] = {"image",   "port",	 "args", "env",
					    "volumes", "engine", NULL};
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)o, key, v)
	{
		bool ok = false;
		for (int i = 0; known[i]; i++)
			ok = ok || strcmp(key, known[i]) == 0;
		if (ok)
			continue;
		char *shown = config_show(key);
		config_warn(c->cfg,
			    "%s: server \"%s\": unknown field "
			    "\"container.%s\" (ignored)",
			    c->cfg->path, c->shown, shown);
		free(shown);
	}
}

static void ctr_explicit_image(struct config_srv *c, const json_t *o,
			       struct container_config *cc)
{
	json_t *img = json_object_get(o, "image");
	const char *raw = json_string_value(img);
	if (raw == NULL || raw[0] == '\0') {
		config_srv_fail(c, "container.image",
				"missing: the image to run (a string)");
		return;
	}
	if (strlen(raw) > CTR_MAX_IMAGE) {
		config_srv_fail(c, "container.image", "longer than %d bytes",
				CTR_MAX_IMAGE);
		return;
	}
	if (config_srv_expand(c, "container.image", NULL, raw, &cc->image) < 0)
		return;
	if (strstr(raw, "${"))
		cc->image_tpl = xstrdup(raw);
	/* It goes on a command line after the options: "-x" would be
	 * read as one. */
	if (cc->image[0] == '-' || cc->image[0] == '\0' ||
	    strpbrk(cc->image, " \t\r\n") || ctr_has_port(cc->image))
		config_srv_fail(c, "container.image",
				"not an image name (empty, starts with \"-\", "
				"holds a space or {port})");
}

static void ctr_explicit_engine(struct config_srv *c, const json_t *o,
				struct container_config *cc)
{
	json_t *e = json_object_get(o, "engine");
	if (e == NULL || json_is_null(e))
		return; /* chosen when it starts (transport/up_container.c) */
	const char *raw = json_string_value(e);
	char *v = NULL;
	if (raw == NULL || strlen(raw) > CTR_MAX_ENGINE ||
	    config_srv_expand(c, "container.engine", NULL, raw, &v) < 0 ||
	    !ctr_engine_name_ok(v)) {
		config_srv_fail(c, "container.engine",
				"expected \"docker\" or \"podman\", or a "
				"path ending in /docker or /podman");
		free(v);
		return;
	}
	cc->engine = v;
}

static void ctr_explicit_port(struct config_srv *c, const json_t *o,
			      struct container_config *cc)
{
	json_t *p = json_object_get(o, "port");
	if (p == NULL || json_is_null(p))
		return;
	if (!json_is_integer(p) || json_integer_value(p) < 1 ||
	    json_integer_value(p) > 65535) {
		config_srv_fail(c, "container.port",
				"expected the port the server listens on in "
				"the container, 1 to 65535");
		return;
	}
	cc->port = (int)json_integer_value(p);
}

/* "container": {...}. */
static void ctr_explicit_form(struct config_srv *c, const json_t *obj,
			      const json_t *o, int type)
{
	struct server_config *s = c->s;
	struct container_config *cc = xcalloc(1, sizeof *cc);
	s->container = cc;
	cc->run_arg = -1;
	cc->rm = true;
	if (!json_is_object(o)) {
		config_srv_fail(c, "container",
				"expected an object with \"image\", got %s",
				config_type_name(o));
		return;
	}
	if (s->command != NULL) {
		config_srv_fail(c, "container",
				"give either \"command\" (a `docker run` "
				"command line) or \"container\", not both");
		return;
	}
	static const char *const moved[] = {"args", "env", NULL};
	for (int i = 0; moved[i]; i++) {
		json_t *v = json_object_get(obj, moved[i]);
		if (v != NULL && !json_is_null(v)) {
			config_srv_fail(c, moved[i],
					"with \"container\" it goes inside "
					"it: \"container\": {\"%s\": ...}",
					moved[i]);
			return;
		}
	}
	ctr_explicit_image(c, o, cc);
	ctr_explicit_engine(c, o, cc);
	ctr_explicit_port(c, o, cc);
	ctr_strings(c, o, "args", CONFIG_MAX_ARGS, &cc->args, &cc->args_tpl,
		    &cc->nargs);
	ctr_strings(c, o, "volumes", CTR_MAX_VOLUMES, &cc->volumes, NULL,
		    &cc->nvolumes);
	for (size_t i = 0; i < cc->nvolumes; i++)
		if (cc->volumes[i][0] == '-' || cc->volumes[i][0] == '\0')
			config_srv_fail(c, "container.volumes",
					"item %zu: empty or starts with \"-\"",
					i);
	config_srv_parse_map(c, o, "env", false, &s->env, &s->env_tpl,
			     &s->nenv);
	for (size_t i = 0; i < s->nenv; i++)
		if (ctr_has_port(s->env[i].value))
			config_srv_fail(c, "container.env",
					"{port} is the host's port; in the "
					"container the server listens on "
					"container.port");
	ctr_warn_fields(c, o);
	if (cc->port == 0) {
		s->kind = SERVER_CONTAINER;
		if (s->url)
			config_srv_fail(c, "url",
					"a container served over HTTP needs "
					"container.port, the port its server "
					"listens on inside");
		else if (type > 0)
			config_srv_fail(c, "type",
					"a container without \"port\" is a "
					"stdio server");
		return;
	}
	s->kind = SERVER_CONTAINER_HTTP;
	s->http_type = type == 3		? HTTP_TYPE_SSE
		       : type == 1 || type == 2 ? HTTP_TYPE_STREAMABLE
						: HTTP_TYPE_AUTO;
	if (s->url == NULL)
		config_srv_fail(c, "url",
				"missing: with container.port, give the url "
				"it is reached at, such as "
				"\"http://127.0.0.1:{port}/mcp\"");
	else if (!ctr_has_port(s->url))
		config_srv_fail(c, "url",
				"must contain {port}, where mcpvisor puts "
				"the loopback port it publishes the "
				"container's port on");
	else if (!config_url_is_loopback(s->url) || strstr(s->url, "[::1]"))
		config_srv_fail(c, "url",
				"the url's host must be loopback: 127.0.0.1 or "
				"localhost: the container's port is published "
				"on 127.0.0.1 only");
	else if (type == 0)
		config_srv_fail(c, "type",
				"a container with \"port\" is reached over "
				"HTTP, not stdio");
}

bool config_container_settle(struct config_srv *c, const json_t *obj, int type)
{
	json_t *o = json_object_get(obj, "container");
	if (o != NULL && !json_is_null(o)) {
		ctr_explicit_form(c, obj, o, type);
		return true;
	}
	if (type > 0 && c->s->url == NULL)
		return false; /* "type" says a url server: it has none */
	if (type == 0 && c->s->url)
		return false; /* "stdio" with a url: refused as for any */
	return ctr_command_form(c, type);
}

static void ctr_free_strings(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void config_container_free(struct container_config *cc)
{
	if (cc == NULL)
		return;
	free(cc->engine);
	free(cc->image);
	free(cc->image_tpl);
	ctr_free_strings(cc->args, cc->nargs);
	ctr_free_strings(cc->args_tpl, cc->nargs);
	ctr_free_strings(cc->volumes, cc->nvolumes);
	free(cc->name);
	free(cc);
}

struct container_config *config_container_dup(const struct container_config *cc)
{
	if (cc == NULL)
		return NULL;
	struct container_config *d = xcalloc(1, sizeof *d);
	*d = *cc;
	d->engine = cc->engine ? xstrdup(cc->engine) : NULL;
	d->image = cc->image ? xstrdup(cc->image) : NULL;
	d->image_tpl = cc->image_tpl ? xstrdup(cc->image_tpl) : NULL;
	d->args = xstrvdup(cc->args, cc->nargs);
	d->args_tpl = xstrvdup(cc->args_tpl, cc->nargs);
	d->volumes = xstrvdup(cc->volumes, cc->nvolumes);
	d->name = cc->name ? xstrdup(cc->name) : NULL;
	return d;
}
