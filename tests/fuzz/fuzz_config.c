/*
 * libFuzzer harness for config loading (src/config/): config_parse on the
 * input as a buffer and, for every fourth input, config_load_file on the
 * same bytes in a temp file; then every view of every server. Beyond the
 * sanitizers: the file and the buffer give the same config; a server
 * without an error is within the named limits; a secret never shows: the
 * marker below, written into an env or header value or an API key, or
 * expanded from ${FZSECRET} there or in an arg, appears in no message or
 * masked view unless the input also has it where it is not a secret; and
 * secrets_mask leaves no secret value in text that holds them all.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "config/filter.h"
#include "config/secrets.h"
#include "util/buf.h"

#define FC_MARKER "s3cr3tQ"
#define FC_PATH "/fuzz/project/.mcp.json"

static char fc_tmp[4096];

static void fc_cleanup(void)
{
	if (fc_tmp[0])
		unlink(fc_tmp);
}

/* CONFIG_MAX_FILE_BYTES is beyond any -max_len worth fuzzing with: a file
 * exactly that long loads, one byte more is refused, from a file and from
 * a buffer alike. Checked once, at start. */
static void fc_check_file_limit(void)
{
	static const char obj[] = "{\"mcpServers\":{}}";
	size_t n = CONFIG_MAX_FILE_BYTES + 1;
	char *text = malloc(n);
	memset(text, ' ', n);
	memcpy(text, obj, sizeof obj - 1);
	for (size_t len = n - 1; len <= n; len++) {
		FILE *f = fopen(fc_tmp, "wb");
		if (f == NULL || fwrite(text, 1, len, f) != len || fclose(f))
			abort();
		struct config *a = config_load_file(fc_tmp);
		struct config *b = config_parse(text, len, fc_tmp);
		bool over = len > CONFIG_MAX_FILE_BYTES;
		if ((a->fatal != NULL) != over || (b->fatal != NULL) != over ||
		    (over && (!strstr(a->fatal, "larger than") ||
			      strcmp(a->fatal, b->fatal) != 0))) {
			fprintf(stderr,
				"fuzz_config: FAIL: a file of %zu bytes: "
				"%s\n",
				len, a->fatal ? a->fatal : "loaded");
			abort();
		}
		config_free(a);
		config_free(b);
	}
	free(text);
}

static void fc_init(void)
{
	setenv("FZSECRET", FC_MARKER "-from-env", 1);
	setenv("FZEMPTY", "", 1);
	/* Values at CONFIG_MAX_STRING and half of it put the expansion
	 * limit's edges within a few bytes of input. */
	char *big = malloc(CONFIG_MAX_STRING + 1);
	memset(big, 'x', CONFIG_MAX_STRING);
	big[CONFIG_MAX_STRING] = '\0';
	setenv("FZEDGE", big, 1);
	big[CONFIG_MAX_STRING / 2] = '\0';
	setenv("FZHALF", big, 1);
	free(big);
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	int n = snprintf(fc_tmp, sizeof fc_tmp, "%s/fuzz-config-XXXXXX", dir);
	int fd = n > 0 && (size_t)n < sizeof fc_tmp ? mkstemp(fc_tmp) : -1;
	if (fd < 0) {
		perror("fuzz_config: mkstemp");
		abort();
	}
	close(fd);
	atexit(fc_cleanup);
	fc_check_file_limit();
}

static bool fc_marker_in_name(const char *s)
{
	/* ${s3cr3tQ} names a variable: messages may quote a name. */
	for (const char *d = strstr(s, "${"); d; d = strstr(d + 2, "${")) {
		size_t n = strcspn(d + 2, "}:");
		const char *m = strstr(d + 2, FC_MARKER);
		if (m && m < d + 2 + n)
			return true;
	}
	return false;
}

enum fc_role { FC_PLAIN, FC_SECRET, FC_ARG };

/* Whether expanding s forms the marker without ${FZSECRET}: literal text
 * joined across an empty variable or a default ("s3cr3${FZEMPTY:-tQ}")
 * is text the input wrote, not a secret. */
static bool fc_formed(const char *s)
{
	if (strstr(s, "${") == NULL)
		return false;
	setenv("FZSECRET", "benign-value", 1);
	char *out = NULL, *missing = NULL;
	config_expand(s, &out, &missing);
	bool hit = out != NULL && strstr(out, FC_MARKER) != NULL;
	free(out);
	free(missing);
	setenv("FZSECRET", FC_MARKER "-from-env", 1);
	return hit;
}

/* Whether the input shows the marker where it is no secret: in a name, in
 * a plain string, or expanded from ${FZSECRET} in a field shown as is.
 * role: what the strings of v are (env and header values are secrets; an
 * arg is shown as written, its ${VAR} unexpanded). */
static bool fc_public(const json_t *v, enum fc_role role)
{
	const char *k;
	json_t *x;
	size_t i;
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		if (role == FC_SECRET)
			return fc_marker_in_name(s);
		if (strstr(s, FC_MARKER) || fc_formed(s))
			return true;
		return role == FC_PLAIN && strstr(s, "FZSECRET");
	}
	if (json_is_array(v)) {
		json_array_foreach(v, i, x)
		{
			if (fc_public(x, role))
				return true;
		}
		return false;
	}
	if (!json_is_object(v))
		return false;
	json_object_foreach((json_t *)v, k, x)
	{
		if (strstr(k, FC_MARKER))
			return true;
		enum fc_role r = FC_PLAIN;
		if (!strcmp(k, "env") || !strcmp(k, "headers") ||
		    !strcmp(k, "apiKeys"))
			r = FC_SECRET;
		else if (!strcmp(k, "args"))
			r = FC_ARG;
		if (json_is_object(x) && r == FC_SECRET) {
			const char *k2;
			json_t *x2;
			json_object_foreach(x, k2, x2)
			{
				/* An env value is secret by the one rule
				 * (config/secrets.h): by its name or shape,
				 * or the variable it came from; otherwise it
				 * is shown as written. */
				if (!strcmp(k, "env") && json_is_string(x2) &&
				    strstr(json_string_value(x2), FC_MARKER) &&
				    (strstr(json_string_value(x2), "${") ||
				     !secrets_env_is_secret(
					     k2, json_string_value(x2), NULL)))
					return true;
				if (strstr(k2, FC_MARKER) ||
				    fc_public(x2, json_is_string(x2)
							  ? FC_SECRET
							  : FC_PLAIN))
					return true;
			}
		} else if (fc_public(x, json_is_array(x) && r != FC_PLAIN
						? r
						: FC_PLAIN)) {
			return true;
		}
	}
	return false;
}

static void fc_no_secret(const char *what, const char *text, bool public)
{
	if (!public && text && strstr(text, FC_MARKER)) {
		fprintf(stderr, "fuzz_config: FAIL: secret shown in %s: %s\n",
			what, text);
		abort();
	}
}

static void fc_fail(const char *what, const char *name)
{
	fprintf(stderr, "fuzz_config: FAIL: %s (server \"%s\")\n", what,
		name ? name : "");
	abort();
}

static char *fc_dump(json_t *v)
{
	char *t = json_dumps(v, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(v);
	if (t == NULL)
		fc_fail("a view does not serialise", NULL);
	return t;
}

static void fc_gather(const char ***v, size_t *n, const char *s)
{
	/* Shorter values are not secrets (SECRETS_MIN_LEN); a value with
	 * '*' could be re-formed by the "***" that masks another; one that
	 * still holds "${" was not expanded (its server has an error): a
	 * template is what the user wrote, no secret. */
	if (s == NULL || strlen(s) < SECRETS_MIN_LEN || strchr(s, '*') ||
	    strstr(s, "${"))
		return;
	*v = realloc(*v, (*n + 1) * sizeof **v);
	(*v)[(*n)++] = s;
}

/* A server's stderr is shown through secrets_mask: text holding every
 * secret value, run together so they overlap, keeps none of them. */
static void fc_check_mask(const struct config *cfg, const char *input)
{
	const char **v = NULL;
	size_t n = 0;
	for (size_t i = 0; i < cfg->nservers; i++) {
		const struct server_config *s = &cfg->servers[i];
		/* What the one rule (config/secrets.h) calls secret: every
		 * header value, env values and args by their name, shape or
		 * the variable they came from. */
		for (size_t k = 0; k < s->nenv; k++)
			if (secrets_env_is_secret(
				    s->env[k].key, s->env[k].value,
				    s->env_tpl ? s->env_tpl[k] : NULL))
				fc_gather(&v, &n, s->env[k].value);
		for (size_t k = 0; k < s->nheaders; k++)
			fc_gather(&v, &n, s->headers[k].value);
		for (size_t k = 0; k < s->nargs; k++)
			if (secrets_arg_is_secret(s->args, s->nargs, k,
						  s->args_tpl ? s->args_tpl[k]
							      : NULL))
				fc_gather(&v, &n, s->args[k]);
	}
	for (size_t k = 0; k < cfg->napi_keys; k++)
		fc_gather(&v, &n, cfg->api_keys[k]);
	struct buf text;
	buf_init(&text);
	buf_puts(&text, input);
	buf_puts(&text, "\n");
	for (size_t k = 0; k < n; k++)
		buf_puts(&text, v[k]);
	struct secrets *sec = secrets_new();
	secrets_add_config(sec, cfg);
	char *masked = secrets_mask(sec, text.data);
	for (size_t k = 0; k < n; k++) {
		if (strstr(masked, v[k])) {
			fprintf(stderr, "secret: %s\nmasked: %.2000s\n", v[k],
				masked);
			fc_fail("secrets_mask left a secret", NULL);
		}
	}
	free(masked);
	secrets_free(sec);
	buf_free(&text);
	free(v);
}

/* A filter of a server without an error is within its limits, and its
 * patterns match as globs must: each one its own text (a '*' matches
 * itself), a pattern with its stars dropped, "*" everything; deny wins
 * whatever allow says. The server's name and prefix are matched too, as
 * text from the input. */
static void fc_check_filter(const struct server_config *s,
			    const struct config_filter *f)
{
	if (s->error == NULL && (f->nallow > CONFIG_FILTER_MAX_PATTERNS ||
				 f->ndeny > CONFIG_FILTER_MAX_PATTERNS))
		fc_fail("a filter over the pattern limit has no error",
			s->name);
	for (size_t k = 0; k < f->nallow + f->ndeny; k++) {
		const char *p =
			k < f->nallow ? f->allow[k] : f->deny[k - f->nallow];
		size_t len = strlen(p);
		if (s->error == NULL &&
		    (len == 0 || len > CONFIG_FILTER_MAX_PATTERN))
			fc_fail("a pattern over a limit has no error", s->name);
		if (!config_glob_match(p, p) || !config_glob_match("*", p))
			fc_fail("a pattern does not match itself", s->name);
		char *bare = strdup(p);
		size_t n = 0;
		for (size_t i = 0; i < len; i++)
			if (p[i] != '*')
				bare[n++] = p[i];
		bare[n] = '\0';
		if (!config_glob_match(p, bare))
			fc_fail("a pattern does not match its text without "
				"stars",
				s->name);
		if (k >= f->nallow && config_filter_keeps(f, bare))
			fc_fail("a denied name is kept", s->name);
		free(bare);
	}
	config_filter_keeps(f, s->name);
	config_filter_keeps(f, s->prefix);
}

/* Every view of every server; with out, a digest of the whole config. */
static void fc_check(const struct config *cfg, bool public, char **out)
{
	json_t *all = json_array();
	if (cfg->fatal && cfg->nservers)
		fc_fail("a fatal error with servers", NULL);
	if (cfg->nservers > CONFIG_MAX_SERVERS)
		fc_fail("more than CONFIG_MAX_SERVERS servers", NULL);
	fc_no_secret("the fatal error", cfg->fatal, public);
	json_array_append_new(all, json_string(cfg->fatal ? cfg->fatal : ""));
	for (size_t i = 0; i < cfg->nwarnings; i++) {
		fc_no_secret("a warning", cfg->warnings[i], public);
		json_array_append_new(all, json_string(cfg->warnings[i]));
	}
	for (size_t i = 0; i < cfg->nservers; i++) {
		const struct server_config *s = &cfg->servers[i];
		fc_no_secret("a server error", s->error, public);
		if (config_find(cfg, s->name) != s)
			fc_fail("config_find finds another server", s->name);
		if (s->error == NULL &&
		    (strlen(s->name) > CONFIG_MAX_NAME ||
		     s->nargs > CONFIG_MAX_ARGS || s->nenv > CONFIG_MAX_ENV))
			fc_fail("a server over a limit has no error", s->name);
		fc_check_filter(s, &s->tools);
		fc_check_filter(s, &s->prompts);
		fc_check_filter(s, &s->resources);
		char *d = fc_dump(config_server_describe(s));
		fc_no_secret("describe", d, public);
		char *fp = fc_dump(config_server_identity(s, true, "salt"));
		fc_no_secret("the fingerprinted identity", fp, public);
		char *fp2 = fc_dump(config_server_identity(s, true, "salt"));
		if (strcmp(fp, fp2) != 0)
			fc_fail("identity differs between two calls", s->name);
		free(fc_dump(config_server_identity(s, false, NULL)));
		json_array_append_new(all, json_string(d));
		json_array_append_new(all, json_string(fp));
		json_array_append_new(all,
				      json_string(s->error ? s->error : ""));
		free(d);
		free(fp);
		free(fp2);
	}
	if (out)
		*out = fc_dump(all);
	else
		json_decref(all);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	if (!ready) {
		fc_init();
		ready = true;
	}
	const char *text = (const char *)data;
	/* The flags config_parse reads with, so the walk sees its tree. */
	json_t *root = json_loadb(text, size, JSON_REJECT_DUPLICATES, NULL);
	/* Unreadable input: the fatal error must quote none of it. */
	bool public = root && fc_public(root, FC_PLAIN);
	json_decref(root);

	bool via_file = size % 4 == 0;
	struct config *cfg =
		config_parse(text, size, via_file ? fc_tmp : FC_PATH);
	char *digest = NULL;
	fc_check(cfg, public, via_file ? &digest : NULL);
	char *input = strndup(text, size);
	fc_check_mask(cfg, input);
	free(input);
	config_free(cfg);
	if (!via_file)
		return 0;

	FILE *f = fopen(fc_tmp, "wb");
	if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		fc_fail("cannot write the temp file", NULL);
	cfg = config_load_file(fc_tmp);
	char *digest2 = NULL;
	fc_check(cfg, public, &digest2);
	config_free(cfg);
	if (strcmp(digest, digest2) != 0) {
		fprintf(stderr, "buffer: %s\nfile:   %s\n", digest, digest2);
		fc_fail("the file and the buffer give different configs", NULL);
	}
	free(digest);
	free(digest2);
	return 0;
}
