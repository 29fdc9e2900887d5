/*
 * libFuzzer harness for ${VAR} expansion and durations in config values
 * (src/config/expand.c, duration.c), each checked against a reference
 * written from their documented contract (config.h): results within
 * CONFIG_MAX_STRING and 2^53 ms, a missing variable named and unset, and
 * the same verdict and value as the reference.
 *
 * Input: the text to expand (up to a NUL), also read as a duration string;
 * its first 8 bytes are also read as an integer duration.
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "util/buf.h"

#define FE_MAX_MS ((int64_t)1 << 53)

static void fe_init(void)
{
	setenv("FZA", "a", 1);
	setenv("FZEMPTY", "", 1);
	setenv("FZ_CURLY", "}${FZA}", 1); /* values are not expanded again */
	char *big = malloc(CONFIG_MAX_STRING + 1);
	memset(big, 'x', CONFIG_MAX_STRING);
	big[CONFIG_MAX_STRING] = '\0';
	setenv("FZEDGE", big, 1);
	big[CONFIG_MAX_STRING / 2] = '\0';
	setenv("FZHALF", big, 1);
	free(big);
}

static bool fe_name_ok(const char *p, size_t n)
{
	if (n == 0 || (*p >= '0' && *p <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_",
			    p[i]) ||
		    p[i] == '\0')
			return false;
	return true;
}

/* The contract: ${NAME} is NAME's value; ${NAME:-text} is text when NAME
 * is unset or empty, text being literal up to the first '}'; the first
 * failure in reading order decides the error; the result is at most
 * CONFIG_MAX_STRING bytes. */
static int fe_ref_expand(const char *in, struct buf *out, char **missing)
{
	size_t i = 0, n = strlen(in);
	while (i < n) {
		const char *d = strstr(in + i, "${");
		if (d == NULL) {
			buf_append(out, in + i, n - i);
			break;
		}
		size_t at = (size_t)(d - in);
		buf_append(out, in + i, at - i);
		size_t body = at + 2, close = body;
		while (close < n && in[close] != '}')
			close++;
		if (close == n)
			return -EINVAL;
		size_t nend = close, dflt = 0;
		for (size_t j = body; j + 1 < close; j++) {
			if (in[j] == ':' && in[j + 1] == '-') {
				nend = j;
				dflt = j + 2;
				break;
			}
		}
		if (!fe_name_ok(in + body, nend - body))
			return -EINVAL;
		char *name = strndup(in + body, nend - body);
		const char *val = getenv(name);
		if (dflt && (val == NULL || val[0] == '\0')) {
			buf_append(out, in + dflt, close - dflt);
		} else if (val) {
			buf_append(out, val, strlen(val));
		} else {
			*missing = name;
			return -ENOENT;
		}
		free(name);
		if (out->len > CONFIG_MAX_STRING)
			return -E2BIG;
		i = close + 1;
	}
	return out->len > CONFIG_MAX_STRING ? -E2BIG : 0;
}

static void fe_fail(const char *what, const char *in)
{
	fprintf(stderr, "fuzz_expand: FAIL: %s\ninput: %.300s\n", what, in);
	abort();
}

static void fe_check_expand(const char *in)
{
	char *out = (char *)1, *missing = (char *)1;
	int rc = config_expand(in, &out, &missing);
	struct buf ref;
	buf_init(&ref);
	char *rmissing = NULL;
	int rrc = fe_ref_expand(in, &ref, &rmissing);
	if (rc != rrc)
		fe_fail("a verdict other than the reference's", in);
	if (rc == 0) {
		if (out == NULL || strlen(out) > CONFIG_MAX_STRING ||
		    strcmp(out, ref.data ? ref.data : "") != 0)
			fe_fail("a value other than the reference's", in);
	} else if (out != NULL) {
		fe_fail("a value with an error", in);
	}
	if (rc == -ENOENT) {
		if (missing == NULL || strcmp(missing, rmissing) != 0 ||
		    getenv(missing) != NULL)
			fe_fail("not the missing variable named", in);
	} else if (missing != NULL) {
		fe_fail("a missing variable without -ENOENT", in);
	}
	/* Without missing, an unset variable is still an error. */
	char *out2 = NULL;
	if (config_expand(in, &out2, NULL) != rc)
		fe_fail("another verdict without missing", in);
	free(out);
	free(out2);
	free(missing);
	free(rmissing);
	buf_free(&ref);
}

/* The contract: digits, then nothing (ms), "ms", "s", "m" or "h"; a value
 * over 2^53 ms is refused. */
static int fe_ref_duration(const char *s, size_t len, int64_t *ms)
{
	size_t i = 0;
	unsigned __int128 n = 0;
	while (i < len && s[i] >= '0' && s[i] <= '9') {
		if (n <= FE_MAX_MS)
			n = n * 10 + (unsigned)(s[i] - '0');
		i++;
	}
	if (i == 0)
		return -EINVAL;
	const char *u = s + i;
	size_t ul = len - i;
	unsigned __int128 mult;
	if (ul == 0 || (ul == 2 && !memcmp(u, "ms", 2)))
		mult = 1;
	else if (ul == 1 && *u == 's')
		mult = 1000;
	else if (ul == 1 && *u == 'm')
		mult = 60000;
	else if (ul == 1 && *u == 'h')
		mult = 3600000;
	else
		return -EINVAL;
	if (n > FE_MAX_MS || n * mult > FE_MAX_MS)
		return -EINVAL;
	*ms = (int64_t)(n * mult);
	return 0;
}

static void fe_check_duration(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	json_t *v = json_stringn_nocheck(s, size);
	int64_t ms = -1, rms = -1;
	int rc = config_parse_duration(v, &ms);
	int rrc = fe_ref_duration(s, size, &rms);
	json_decref(v);
	if (rc != rrc || (rc == 0 && ms != rms))
		fe_fail("a duration other than the reference's", "");

	if (size >= 8) {
		int64_t n;
		memcpy(&n, data, 8);
		v = json_integer(n);
		rc = config_parse_duration(v, &ms);
		json_decref(v);
		bool ok = n >= 0 && n <= FE_MAX_MS;
		if ((rc == 0) != ok || (ok && ms != n))
			fe_fail("an integer duration misread", "");
	}
	v = json_real(1.5);
	if (config_parse_duration(v, &ms) == 0)
		fe_fail("a real taken as a duration", "");
	json_decref(v);
	if (config_parse_duration(NULL, &ms) == 0)
		fe_fail("nothing taken as a duration", "");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	if (!ready) {
		fe_init();
		ready = true;
	}
	char *in = strndup((const char *)data, size);
	fe_check_expand(in);
	free(in);
	fe_check_duration(data, size);
	return 0;
}
