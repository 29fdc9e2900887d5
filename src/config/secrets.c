/*
 * The one rule of what is secret (secrets.h): by a value's name, its
 * shape, and the variables that made it. The set of a config's secret
 * values is in secrets_set.c, the masked views in secrets_show.c.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/secrets.h"
#include "config/secrets_int.h"
#include "util/xmalloc.h"

/* A run of letters and digits this long, with both in it, is a key or a
 * token ("5f3a9c1e77d2b8a4"), not a word or a number. */
#define SECRETS_RUN_LEN 16
/* What a known token prefix is followed by, at least ("ghp_" + 36). */
#define SECRETS_PREFIX_REST 10
/* Names and values are judged by their first this many bytes. */
#define SECRETS_NAME_MAX 256

/* Words that name a secret wherever they sit in a name or a value
 * ("GITHUBTOKEN", "my-secret"). Compared in lower case. */
static const char *const secrets_strong[] = {
	"token",      "secret",	     "passw",	    "passphrase",
	"apikey",     "api_key",     "api-key",	    "credential",
	"privatekey", "private_key", "private-key", NULL,
};

/* Words that name a secret only as a whole word of a name: "API_KEY",
 * "authKey", "X-Auth", but not "MONKEY", "AUTHOR" or "PATH". */
static const char *const secrets_weak[] = {
	"key",	   "keys",   "pass",	"auth",	     "authorization",
	"oauth",   "cookie", "cookies", "session",   "sessionid",
	"private", "pat",    "pin",	"otp",	     "jwt",
	"bearer",  "cred",   "creds",	"signature", "salt",
	NULL,
};

/* Variables that hold no secret whatever their value: who and where the
 * user is, the locale, the terminal. */
static const char *const secrets_common_vars[] = {
	"HOME",	  "USER",   "LOGNAME",	"USERNAME", "PWD",	 "OLDPWD",
	"SHELL",  "PATH",   "LANG",	"LANGUAGE", "TERM",	 "TMPDIR",
	"TMP",	  "TEMP",   "HOSTNAME", "HOST",	    "PORT",	 "DISPLAY",
	"EDITOR", "VISUAL", "TZ",	"NODE_ENV", "COLORTERM", NULL,
};
static const char *const secrets_common_prefixes[] = {"LC_", "XDG_", NULL};

/* Prefixes of well-known tokens (GitHub, GitLab, Slack, OpenAI and
 * Anthropic, Stripe, AWS, Google, npm, PyPI, Hugging Face, Shopify). */
static const char *const secrets_prefixes[] = {
	"ghp_",	 "gho_",  "ghu_",   "ghs_",  "ghr_",  "github_pat_", "glpat-",
	"xoxb-", "xoxp-", "xoxa-",  "xoxr-", "xoxs-", "xapp-",	     "sk-",
	"sk_",	 "rk_",	  "AKIA",   "ASIA",  "AIza",  "ya29.",	     "npm_",
	"pypi-", "hf_",	  "shpat_", NULL,
};

/* Credential schemes as a header or an env value carries them. */
static const char *const secrets_schemes[] = {"Bearer ", "Basic ", "Token ",
					      "Bot ", NULL};

static bool secrets_in(const char *const *list, const char *s)
{
	for (size_t i = 0; list[i]; i++)
		if (strcasecmp(list[i], s) == 0)
			return true;
	return false;
}

static bool secrets_has_strong_word(const char *s)
{
	for (size_t i = 0; secrets_strong[i]; i++)
		if (strcasestr(s, secrets_strong[i]))
			return true;
	return false;
}

/* A boolean or the like: a switch, never a secret. */
bool secrets_switch(const char *v)
{
	static const char *const words[] = {"true", "false", "yes",  "no",
					    "on",   "off",   "null", NULL};
	return secrets_in(words, v);
}

/* One path ("/x", "~/x", "./x", "../x", "~") of plain path characters
 * (UTF-8 names included), of len bytes. */
static bool secrets_one_path(const char *p, size_t len)
{
	bool start = (len >= 1 && p[0] == '/') ||
		     (len >= 1 && p[0] == '~' && (len == 1 || p[1] == '/')) ||
		     (len >= 2 && p[0] == '.' && p[1] == '/') ||
		     (len >= 3 && p[0] == '.' && p[1] == '.' && p[2] == '/');
	if (!start)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c < 0x80 && !isalnum(c) && strchr("/._-+@~ ,", c) == NULL)
			return false;
	}
	return true;
}

/* A path, or a ':'-separated list of them (PATH, PYTHONPATH): it says
 * where something is, which the user needs to read in a message. */
bool secrets_plain_path(const char *v)
{
	if (v[0] == '\0')
		return false;
	for (const char *p = v;;) {
		size_t n = strcspn(p, ":");
		if (!secrets_one_path(p, n))
			return false;
		if (p[n] == '\0')
			return true;
		p += n + 1;
	}
}

bool secrets_name_is_secret(const char *name)
{
	if (name == NULL || name[0] == '\0')
		return false;
	char lower[SECRETS_NAME_MAX + 1];
	size_t n = strlen(name);
	if (n > SECRETS_NAME_MAX)
		n = SECRETS_NAME_MAX;
	if (secrets_has_strong_word(name))
		return true;
	/* Whole words: split at what is not a letter or digit, where a
	 * lower-case letter meets an upper-case one ("apiKey"), where
	 * capitals meet a capitalised word ("APIKey"), and between letters
	 * and digits ("oauth2"). */
	size_t w = 0;
	for (size_t i = 0; i <= n; i++) {
		unsigned char c = i < n ? (unsigned char)name[i] : 0;
		unsigned char prev = i ? (unsigned char)name[i - 1] : 0;
		unsigned char next = i + 1 < n ? (unsigned char)name[i + 1] : 0;
		bool cut = !isalnum(c) || (islower(prev) && isupper(c)) ||
			   (isupper(prev) && isupper(c) && islower(next)) ||
			   (isalpha(prev) && isdigit(c)) ||
			   (isdigit(prev) && isalpha(c));
		if (cut && w > 0) {
			lower[w] = '\0';
			if (secrets_in(secrets_weak, lower))
				return true;
			w = 0;
		}
		if (isalnum(c))
			lower[w++] = (char)tolower(c);
	}
	return false;
}

/* A maximal run of letters and digits of SECRETS_RUN_LEN or more with
 * both in it. */
static bool secrets_random_run(const char *v)
{
	for (const char *p = v; *p;) {
		size_t n = 0;
		bool alpha = false, digit = false;
		while (isalnum((unsigned char)p[n])) {
			alpha = alpha || isalpha((unsigned char)p[n]);
			digit = digit || isdigit((unsigned char)p[n]);
			n++;
		}
		if (n >= SECRETS_RUN_LEN && alpha && digit)
			return true;
		p += n ? n : 1;
	}
	return false;
}

bool secrets_value_is_secret(const char *value)
{
	if (value == NULL || strlen(value) < SECRETS_MIN_LEN ||
	    secrets_switch(value) || secrets_plain_path(value))
		return false;
	for (size_t i = 0; secrets_schemes[i]; i++) {
		size_t n = strlen(secrets_schemes[i]);
		if (strncasecmp(value, secrets_schemes[i], n) == 0 &&
		    value[n] != '\0' && value[n] != ' ')
			return true;
	}
	for (size_t i = 0; secrets_prefixes[i]; i++) {
		size_t n = strlen(secrets_prefixes[i]);
		if (strncmp(value, secrets_prefixes[i], n) == 0 &&
		    strlen(value + n) >= SECRETS_PREFIX_REST &&
		    strpbrk(value, " \t") == NULL)
			return true;
	}
	/* A JSON Web Token: base64 of '{"' and dots between its parts. */
	if (strncmp(value, "eyJ", 3) == 0 && strchr(value, '.') &&
	    strlen(value) >= 2 * SECRETS_PREFIX_REST)
		return true;
	return secrets_random_run(value);
}

bool secrets_var_is_secret(const char *name, const char *value)
{
	if (value == NULL || strlen(value) < SECRETS_MIN_LEN ||
	    secrets_switch(value) || secrets_plain_path(value))
		return false;
	if (name == NULL)
		return true;
	if (secrets_in(secrets_common_vars, name))
		return false;
	for (size_t i = 0; secrets_common_prefixes[i]; i++)
		if (strncmp(name, secrets_common_prefixes[i],
			    strlen(secrets_common_prefixes[i])) == 0)
			return false;
	return true;
}

static bool secrets_var_name_ok(const char *p, size_t n)
{
	if (n == 0 || n > SECRETS_NAME_MAX || isdigit((unsigned char)p[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(p[i] == '_' || isalnum((unsigned char)p[i])))
			return false;
	return true;
}

/* Walks the ${VAR}s of tpl as config/expand.c expands them: each
 * variable's value from the environment, or, unset or empty, the default
 * written in the file (no secret: it is in the file for anyone to read).
 * Adds each value that is a secret to sec (may be NULL); true when there
 * was one. */
bool secrets_tpl_scan(const char *tpl, struct secrets *sec)
{
	bool any = false;
	for (const char *p = strstr(tpl, "${"); p; p = strstr(p, "${")) {
		const char *body = p + 2;
		const char *close = strchr(body, '}');
		if (close == NULL)
			break;
		const char *dflt = strstr(body, ":-");
		size_t nlen = (dflt && dflt < close) ? (size_t)(dflt - body)
						     : (size_t)(close - body);
		p = close + 1;
		if (!secrets_var_name_ok(body, nlen))
			continue;
		char *name = xstrndup(body, nlen);
		const char *val = getenv(name);
		if (val && val[0] && secrets_var_is_secret(name, val)) {
			any = true;
			if (sec)
				secrets_add(sec, val);
		}
		free(name);
	}
	return any;
}

bool secrets_is_url(const char *v)
{
	const char *p = strstr(v, "://");
	return p && p > v &&
	       strspn(v, "abcdefghijklmnopqrstuvwxyz"
			 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-") ==
		       (size_t)(p - v);
}

bool secrets_env_is_secret(const char *name, const char *v, const char *tpl)
{
	if (v == NULL || strlen(v) < SECRETS_MIN_LEN || secrets_switch(v) ||
	    secrets_plain_path(v))
		return false;
	if (tpl && secrets_tpl_scan(tpl, NULL))
		return true;
	if (secrets_name_is_secret(name))
		return true;
	/* A url's secrets are its credentials, not where it points. */
	if (secrets_is_url(v))
		return false;
	/* A value that says what it is ("my-api-token-1"). */
	return secrets_value_is_secret(v) || secrets_has_strong_word(v);
}

/* An option's name without its dashes, when a is one ("--api-key",
 * "-token"); NULL otherwise. */
static const char *secrets_option(const char *a)
{
	if (a[0] != '-' || a[1] == '\0')
		return NULL;
	return a + strspn(a, "-");
}

/* The part of args[i] (a literal, as written) that is a secret: all of
 * it, the value of "--name=value" or "name=value", or NULL. */
const char *secrets_arg_part(char *const *args, size_t n, size_t i)
{
	const char *a = args[i];
	if (strlen(a) < SECRETS_MIN_LEN || secrets_switch(a) ||
	    secrets_plain_path(a))
		return NULL;
	const char *eq = strchr(a, '=');
	if (eq && eq > a && !secrets_is_url(a)) {
		/* "--api-key=X", "token=X": a name, not any text with a
		 * '=' in it. */
		const char *name = a + strspn(a, "-");
		char *nm = xstrndup(name, (size_t)(eq - name));
		bool named =
			nm[0] &&
			strspn(nm, "abcdefghijklmnopqrstuvwxyz"
				   "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
				strlen(nm) &&
			secrets_name_is_secret(nm) &&
			strlen(eq + 1) >= SECRETS_MIN_LEN &&
			!secrets_plain_path(eq + 1);
		free(nm);
		if (named)
			return eq + 1;
	}
	if (i > 0 && i < n && args[i - 1] && a[0] != '-') {
		const char *opt = secrets_option(args[i - 1]);
		if (opt && strchr(opt, '=') == NULL &&
		    secrets_name_is_secret(opt))
			return a;
	}
	if (secrets_is_url(a))
		return NULL;
	return secrets_value_is_secret(a) ? a : NULL;
}

bool secrets_arg_is_secret(char *const *args, size_t n, size_t i,
			   const char *tpl)
{
	if (i >= n || args[i] == NULL)
		return false;
	if (tpl)
		return secrets_tpl_scan(tpl, NULL);
	return secrets_arg_part(args, n, i) != NULL;
}
