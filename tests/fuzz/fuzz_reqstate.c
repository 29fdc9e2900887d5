/*
 * libFuzzer harness for the requestState seal (src/modern/reqstate.c),
 * which opens whatever string a client sends back. The input is a flags
 * byte, a clock byte, then fields split at '\n': a state (or edits to one),
 * a principal, a method and params as JSON. Beyond the sanitizers: a
 * state the harness did not seal never opens (MALFORMED or TAMPERED, no
 * handle, MALFORMED past REQSTATE_MAX_LEN); a sealed state with any byte
 * changed never opens; an unchanged one gives the verdict its clock,
 * principal and request call for, opens once, then is USED; the digest
 * ignores _meta, inputResponses and requestState; the table stays within
 * its bound. The key is made once per run, so each run's key is fixed.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modern/reqstate.h"
#include "util/clock.h"

#define FR_MAX_LIVE 8

/* The flags byte. */
#define FR_SEALED 0x01	     /* open a state sealed here, edited by field 0 */
#define FR_FOREIGN 0x02	     /* opened by another principal */
#define FR_OTHER_METHOD 0x04 /* opened for another method */
#define FR_OTHER_PARAMS 0x08 /* opened with other params */
#define FR_FORGET 0x10	     /* field 0 handed to reqstate_forget first */
#define FR_ROUNDS 0x20	     /* sealed twice under one handle */

static uint64_t fr_now = 1000000;

static uint64_t fr_clock(void)
{
	return fr_now;
}

static void fr_fail(const char *what, const uint8_t *in, size_t len)
{
	fprintf(stderr, "FAIL: %s (input of %zu bytes: %.200s)\n", what, len,
		(const char *)in);
	abort();
}

/* Field i of the input (split at '\n', after the two leading bytes) as a
 * fresh string; an embedded NUL ends it. */
static char *fr_field(const uint8_t *data, size_t size, int i)
{
	size_t start = 2, end;
	for (int k = 0; k < i && start <= size; k++) {
		while (start < size && data[start] != '\n')
			start++;
		start++;
	}
	if (start > size)
		start = size;
	end = start;
	while (end < size && data[end] != '\n')
		end++;
	char *s = malloc(end - start + 1);
	memcpy(s, data + start, end - start);
	s[end - start] = '\0';
	return s;
}

static json_t *fr_params(const char *text)
{
	return json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
}

/* The digest must not see what changes between rounds. */
static void fr_check_digest(const char *method, json_t *params,
			    const uint8_t *in, size_t len)
{
	unsigned char a[32], b[32];
	reqstate_digest(method, params, a);
	if (!json_is_object(params))
		return;
	json_t *round = json_deep_copy(params);
	json_object_set_new(round, "_meta", json_string("x"));
	json_object_set_new(round, "inputResponses", json_object());
	json_object_set_new(round, "requestState", json_string("v1.x"));
	reqstate_digest(method, round, b);
	json_decref(round);
	if (memcmp(a, b, 32) != 0)
		fr_fail("the digest sees _meta, inputResponses or "
			"requestState",
			in, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct reqstate *rs;
	static uint64_t serial;
	if (rs == NULL) {
		clock_set_source(fr_clock);
		rs = reqstate_new(FR_MAX_LIVE);
	}
	if (size < 2)
		return 0;
	unsigned flags = data[0];
	/* 128 steps to the TTL: the upper half of the byte expires. */
	uint64_t advance = (uint64_t)data[1] * (REQSTATE_TTL_MS / 128);
	char *f0 = fr_field(data, size, 0);
	char *principal = fr_field(data, size, 1);
	char *method = fr_field(data, size, 2);
	char *ptext = fr_field(data, size, 3);
	json_t *params = fr_params(ptext);
	unsigned char digest[32];
	reqstate_digest(method, params, digest);
	fr_check_digest(method, params, data, size);
	char h[REQSTATE_HANDLE_LEN];
	if (flags & FR_FORGET)
		reqstate_forget(rs, f0);

	if (!(flags & FR_SEALED)) {
		memcpy(h, "x", 2);
		enum reqstate_verdict v =
			reqstate_open(rs, f0, principal, method, digest, h);
		if (v != REQSTATE_MALFORMED && v != REQSTATE_TAMPERED)
			fr_fail("a state not sealed here got past the MAC",
				data, size);
		if (h[0] != '\0')
			fr_fail("a handle without the MAC", data, size);
		if (strlen(f0) > REQSTATE_MAX_LEN && v != REQSTATE_MALFORMED)
			fr_fail("past REQSTATE_MAX_LEN but not MALFORMED", data,
				size);
		if (reqstate_verdict_str(v) == NULL)
			fr_fail("a verdict without a reason", data, size);
		goto out;
	}

	/* Handles sharing their first 8 bytes share a bucket too. */
	char handle[REQSTATE_HANDLE_LEN];
	snprintf(handle, sizeof handle, "0000000000000000%016llx",
		 (unsigned long long)++serial);
	char *state = reqstate_seal(rs, handle, principal, method, digest);
	if (state == NULL)
		fr_fail("a good handle refused", data, size);
	if (flags & FR_ROUNDS) {
		char *again =
			reqstate_seal(rs, handle, principal, method, digest);
		if (strcmp(again, state) == 0)
			fr_fail("two rounds, one state", data, size);
		if (reqstate_open(rs, state, principal, method, digest, h) !=
		    REQSTATE_USED)
			fr_fail("the earlier round's state is not USED", data,
				size);
		free(state);
		state = again;
	}
	if (strlen(state) > REQSTATE_MAX_LEN)
		fr_fail("a sealed state past REQSTATE_MAX_LEN", data, size);
	if (reqstate_live(rs) > FR_MAX_LIVE)
		fr_fail("more live than max_live", data, size);

	/* Field 0 as (position, xor) pairs on the sealed state; a position
	 * past the end appends. */
	size_t slen = strlen(state);
	char *edited = calloc(1, slen + strlen(f0) / 2 + 1);
	memcpy(edited, state, slen);
	for (size_t i = 0; f0[i] && f0[i + 1]; i += 2) {
		size_t pos = (unsigned char)f0[i];
		unsigned char x = (unsigned char)f0[i + 1];
		if (pos < slen)
			edited[pos] = (char)(edited[pos] ^ x);
		else
			edited[slen++] = (char)x;
	}
	bool same = strcmp(edited, state) == 0;

	const char *who = principal;
	char *other = NULL;
	if (flags & FR_FOREIGN) {
		other = malloc(strlen(principal) + 2);
		sprintf(other, "%s!", principal);
		who = other;
	}
	/* Another method, or other params, in what the open is given. */
	const char *m = flags & FR_OTHER_METHOD ? "other/method" : method;
	unsigned char d2[32];
	memcpy(d2, digest, 32);
	if (flags & FR_OTHER_PARAMS)
		d2[0] ^= 1;
	bool mismatch = strcmp(m, method) != 0 || (flags & FR_OTHER_PARAMS);

	fr_now += advance;
	memcpy(h, "x", 2);
	enum reqstate_verdict v = reqstate_open(rs, edited, who, m, d2, h);
	if (!same) {
		if (v != REQSTATE_MALFORMED && v != REQSTATE_TAMPERED)
			fr_fail("an edited state got past the MAC", data, size);
		if (h[0] != '\0')
			fr_fail("a handle without the MAC", data, size);
	} else {
		enum reqstate_verdict want = REQSTATE_OK;
		if (advance >= REQSTATE_TTL_MS)
			want = REQSTATE_EXPIRED;
		else if (flags & FR_FOREIGN)
			want = REQSTATE_FOREIGN;
		else if (mismatch)
			want = REQSTATE_MISMATCH;
		if (v != want)
			fr_fail(reqstate_verdict_str(v), data, size);
		if (strcmp(h, handle) != 0)
			fr_fail("the handle is not the one sealed", data, size);
		if (v == REQSTATE_OK &&
		    reqstate_open(rs, edited, principal, method, digest, h) !=
			    REQSTATE_USED)
			fr_fail("opened twice", data, size);
		if (v != REQSTATE_OK && v != REQSTATE_EXPIRED &&
		    reqstate_open(rs, state, principal, method, digest, h) !=
			    REQSTATE_OK)
			fr_fail("a refused open spent the state", data, size);
	}
	free(other);
	free(edited);
	free(state);
out:
	json_decref(params);
	free(f0);
	free(principal);
	free(method);
	free(ptext);
	return 0;
}
