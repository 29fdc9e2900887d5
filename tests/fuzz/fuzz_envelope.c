/*
 * libFuzzer harness for the 2026-07-28 request envelope
 * (src/jsonrpc/envelope.c, envelope_params.c), which reads what any HTTP
 * client POSTs: headers and a JSON body. The input is header lines
 * ("name:value", names lower-cased here) up to an empty line, then the
 * body. Beyond the sanitizers: a header value decodes to UTF-8 no longer
 * than itself, and encoded again decodes to the same; any UTF-8 value
 * encodes to printable ASCII that decodes back; an accepted request is
 * modern, names its method, version and id as the body does; a refused
 * one has a short UTF-8 message, a status and code the revision names,
 * and data only with -32022; the Mcp-Param check (against the body's
 * "schema", or a fixed one) refuses only with -32020 or -32602.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/envelope.h"
#include "jsonrpc/framer.h"
#include "jsonrpc/jsonrpc.h"

#define FE_MAX_INPUT (64 * 1024)
#define FE_MAX_HDRS 16

struct fe_hdrs {
	char *name[FE_MAX_HDRS];
	char *value[FE_MAX_HDRS];
	int n;
};

static const char *fe_get(void *arg, const char *lname)
{
	struct fe_hdrs *h = arg;
	for (int i = 0; i < h->n; i++)
		if (strcmp(h->name[i], lname) == 0)
			return h->value[i];
	return NULL;
}

static void fe_fail(const char *what, const uint8_t *in, size_t len)
{
	fprintf(stderr, "FAIL: %s (input of %zu bytes: %.*s)\n", what, len,
		(int)(len < 200 ? len : 200), (const char *)in);
	abort();
}

static bool fe_utf8(const char *s, size_t n)
{
	return framer_utf8_prefix(s, n) == n;
}

/* The sentinel both ways on one header value. */
static void fe_value(const char *raw, const uint8_t *in, size_t size)
{
	size_t rlen = strlen(raw);
	char *d = envelope_header_decode(raw);
	if (d != NULL) {
		size_t dlen = strlen(d);
		if (dlen > rlen)
			fe_fail("decoded longer than sent", in, size);
		if (!fe_utf8(d, dlen))
			fe_fail("decoded to bytes that are not UTF-8", in,
				size);
		if (rlen > ENVELOPE_MAX_HEADER)
			fe_fail("decoded a value past ENVELOPE_MAX_HEADER", in,
				size);
		char *e = envelope_header_encode(d);
		char *d2 = envelope_header_decode(e);
		/* A long value may grow past the limit when encoded. */
		if (strlen(e) <= ENVELOPE_MAX_HEADER &&
		    (d2 == NULL || strcmp(d, d2) != 0))
			fe_fail("decode(encode(decode(x))) differs", in, size);
		free(d2);
		free(e);
		free(d);
	}
	if (!fe_utf8(raw, rlen))
		return;
	char *e = envelope_header_encode(raw);
	size_t elen = strlen(e);
	for (size_t i = 0; i < elen; i++)
		if (e[i] < 0x20 || e[i] > 0x7e)
			fe_fail("encoded to a byte outside printable ASCII", in,
				size);
	if (elen > 0 && (e[0] == ' ' || e[elen - 1] == ' '))
		fe_fail("encoded with surrounding space", in, size);
	if (elen <= ENVELOPE_MAX_HEADER) {
		char *back = envelope_header_decode(e);
		if (back == NULL || strcmp(back, raw) != 0)
			fe_fail("decode(encode(x)) is not x", in, size);
		free(back);
	}
	free(e);
}

static void fe_check_err(const struct envelope_err *err, const uint8_t *in,
			 size_t size, bool params)
{
	if (err->message == NULL)
		fe_fail("a fault without a message", in, size);
	size_t mlen = strlen(err->message);
	if (mlen > 1024 || !fe_utf8(err->message, mlen))
		fe_fail("a message too long or not UTF-8", in, size);
	for (size_t i = 0; i < mlen; i++)
		if ((unsigned char)err->message[i] < 0x20)
			fe_fail("a control byte in a message", in, size);
	int c = err->code;
	if (params) {
		if (err->http_status != 400 ||
		    (c != JR_HEADER_MISMATCH && c != JR_INVALID_PARAMS) ||
		    err->data != NULL)
			fe_fail("a Mcp-Param fault of another kind", in, size);
		return;
	}
	if ((err->http_status == 404) != (c == JR_METHOD_NOT_FOUND) ||
	    (err->http_status != 400 && err->http_status != 404))
		fe_fail("a status that does not go with its code", in, size);
	if (c != JR_INVALID_REQUEST && c != JR_METHOD_NOT_FOUND &&
	    c != JR_INVALID_PARAMS && c != JR_HEADER_MISMATCH &&
	    c != JR_UNSUPPORTED_VERSION)
		fe_fail("a code the envelope does not give", in, size);
	if ((err->data != NULL) != (c == JR_UNSUPPORTED_VERSION))
		fe_fail("data where there should be none, or none", in, size);
	if (c == JR_UNSUPPORTED_VERSION) {
		json_t *sup = json_object_get(err->data, "supported");
		if (json_array_size(sup) != 1 ||
		    strcmp(json_string_value(json_array_get(sup, 0)),
			   MODERN_VERSION) != 0 ||
		    !json_is_string(json_object_get(err->data, "requested")))
			fe_fail("a -32022 without its data", in, size);
	}
}

static void fe_request(json_t *msg, struct fe_hdrs *h, const uint8_t *in,
		       size_t size)
{
	const char *pv = fe_get(h, "mcp-protocol-version");
	enum envelope_era era = envelope_classify(msg, pv);
	struct envelope env;
	struct envelope_err err;
	if (envelope_check(msg, fe_get, h, &env, &err) == 0) {
		if (era != ENVELOPE_MODERN)
			fe_fail("accepted a message classified legacy", in,
				size);
		if (env.method == NULL ||
		    strcmp(env.method, jr_method(msg)) != 0 ||
		    strcmp(env.version, MODERN_VERSION) != 0)
			fe_fail("accepted with another method or version", in,
				size);
		if (env.notification != (json_object_get(msg, "id") == NULL))
			fe_fail("notification or not, wrongly", in, size);
		if (!env.notification && !json_is_object(env.client_caps))
			fe_fail("a request without its capabilities", in, size);
		if (env.log_level < ENVELOPE_LOG_NONE ||
		    env.log_level > ENVELOPE_LOG_EMERGENCY)
			fe_fail("a log level out of range", in, size);
		if (err.message != NULL)
			fe_fail("accepted with a message", in, size);
		json_t *params = json_object_get(msg, "params");
		json_t *meta = json_object_get(params, "_meta");
		json_t *lv = json_object_get(meta, META_LOG_LEVEL);
		const char *level = json_string_value(lv);
		if (envelope_log_passes(ENVELOPE_LOG_NONE, level))
			fe_fail("a log passes to one that asked for none", in,
				size);
		if (env.log_level != ENVELOPE_LOG_NONE &&
		    !envelope_log_passes(env.log_level, level))
			fe_fail("its own log level does not pass", in, size);
	} else {
		if (env.method != NULL)
			fe_fail("refused, but env filled", in, size);
		fe_check_err(&err, in, size, false);
	}
	envelope_err_clear(&err);
}

/* Marked arguments of each kind, one nested. */
static const char fe_schema[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"s\":{\"type\":\"string\",\"x-mcp-header\":\"S\"},"
	"\"i\":{\"type\":\"integer\",\"x-mcp-header\":\"I\"},"
	"\"b\":{\"type\":\"boolean\",\"x-mcp-header\":\"b\"},"
	"\"o\":{\"type\":\"object\",\"properties\":{"
	"\"z\":{\"type\":[\"string\",\"null\"],\"x-mcp-header\":\"Z\"}}}}}";

static void fe_params(json_t *msg, struct fe_hdrs *h, const uint8_t *in,
		      size_t size)
{
	json_t *own = NULL;
	json_t *schema =
		json_is_object(msg) ? json_object_get(msg, "schema") : NULL;
	if (schema == NULL)
		schema = own = json_loads(fe_schema, 0, NULL);
	(void)envelope_schema_ok(schema);
	json_t *params =
		json_is_object(msg) ? json_object_get(msg, "params") : NULL;
	json_t *args = json_is_object(params)
			       ? json_object_get(params, "arguments")
			       : NULL;
	struct envelope_err err;
	if (envelope_check_params(schema, args, fe_get, h, &err) < 0)
		fe_check_err(&err, in, size, true);
	else if (err.message != NULL)
		fe_fail("params accepted with a message", in, size);
	envelope_err_clear(&err);
	json_decref(own);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > FE_MAX_INPUT)
		return 0;
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	struct fe_hdrs h = {.n = 0};
	/* Header lines up to an empty one; a NUL ends the input for them. */
	char *p = text, *end = text + strlen(text);
	while (p < end && h.n < FE_MAX_HDRS) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			break;
		*nl = '\0';
		if (p == nl) {
			p = nl + 1;
			break;
		}
		char *colon = strchr(p, ':');
		if (colon != NULL) {
			*colon = '\0';
			for (char *c = p; *c; c++)
				*c = (char)tolower((unsigned char)*c);
			h.name[h.n] = p;
			h.value[h.n] = colon + 1;
			h.n++;
		}
		p = nl + 1;
	}
	for (int i = 0; i < h.n; i++)
		fe_value(h.value[i], data, size);
	size_t body_off = (size_t)(p - text);
	json_t *msg = json_loadb((const char *)data + body_off, size - body_off,
				 JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	fe_request(msg, &h, data, size);
	fe_params(msg, &h, data, size);
	json_decref(msg);
	free(text);
	return 0;
}
