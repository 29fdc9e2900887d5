/* The requestState seal (authentic, single-use, bound to the client and
 * the request, short-lived) on a fake clock, and the HMAC-SHA-256 under
 * it against RFC 4231's vectors. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "modern/reqstate.h"
#include "util/clock.h"
#include "util/sha256.h"

static uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now;
}

static void fake_clock_on(void)
{
	fake_now = 5000000;
	clock_set_source(fake_clock);
}

static void fake_clock_off(void)
{
	clock_set_source(NULL);
}

TestSuite(reqstate, .init = fake_clock_on, .fini = fake_clock_off);

static void unhex(const char *hex, unsigned char *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		cr_assert_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
		out[i] = (unsigned char)v;
	}
}

static void expect_hmac(const void *key, size_t klen, const char *data,
			const char *want_hex)
{
	unsigned char got[32], want[32];
	size_t n = strlen(want_hex) / 2;
	unhex(want_hex, want, n);
	sha256_hmac(key, klen, data, strlen(data), got);
	cr_assert_arr_eq(got, want, n, "HMAC of \"%.40s\"", data);
}

/* RFC 4231 section 4, HMAC-SHA-256 of each test case. */
Test(reqstate, hmac_sha256_rfc4231_vectors)
{
	unsigned char k[131];
	memset(k, 0x0b, 20);
	expect_hmac(k, 20, "Hi There",
		    "b0344c61d8db38535ca8afceaf0bf12b"
		    "881dc200c9833da726e9376c2e32cff7");
	expect_hmac("Jefe", 4, "what do ya want for nothing?",
		    "5bdcc146bf60754e6a042426089575c7"
		    "5a003f089d2739839dec58b964ec3843");
	char dd[51], cd[51];
	memset(dd, 0xdd, 50);
	dd[50] = '\0';
	memset(cd, 0xcd, 50);
	cd[50] = '\0';
	memset(k, 0xaa, 20);
	expect_hmac(k, 20, dd,
		    "773ea91e36800e46854db8ebd09181a7"
		    "2959098b3ef8c122d9635514ced565fe");
	for (int i = 0; i < 25; i++)
		k[i] = (unsigned char)(i + 1);
	expect_hmac(k, 25, cd,
		    "82558a389a443c0ea4cc819899f2083a"
		    "85f0faa3e578f8077a2e3ff46729665b");
	/* Test case 5 gives the first 128 bits only. */
	memset(k, 0x0c, 20);
	expect_hmac(k, 20, "Test With Truncation",
		    "a3b6167473100ee06e0c796c2955552b");
	/* A key longer than the block is hashed first. */
	memset(k, 0xaa, 131);
	expect_hmac(k, 131,
		    "Test Using Larger Than Block-Size Key - Hash Key First",
		    "60e431591ee0b67f0d8a26aacbf5b77f"
		    "8e0bc6213728c5140546040f0ee37f54");
	expect_hmac(k, 131,
		    "This is a test using a larger than block-size key and a "
		    "larger than block-size data. The key needs to be hashed "
		    "before being used by the HMAC algorithm.",
		    "9b09ffa71b942fcb27635fbcd5b0e944"
		    "bfdc63644f0713938a7f51535c3a35e2");
}

/* Either side of the block size, and the empty key and message (values
 * from Python's hmac module). */
Test(reqstate, hmac_sha256_key_lengths_around_the_block)
{
	unsigned char k[65];
	memset(k, 'a', sizeof k);
	expect_hmac(k, 64, "block",
		    "5a6f7a0b42d6ea1bd154a9ed687b0a62"
		    "1e9bc635c1c5105730aed283feb459a5");
	expect_hmac(k, 65, "block",
		    "d37edf159bc052722a73143d190d799b"
		    "edad84bed38ad68679bd225d65d5e1cc");
	expect_hmac("", 0, "",
		    "b613679a0814d9ec772f95d778c35fc5"
		    "ff1697c493715653c6c712144292c5ad");
}

static json_t *params(const char *text)
{
	json_error_t err;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &err);
	cr_assert_not_null(j, "%s: %s", text, err.text);
	return j;
}

static void digest_of(const char *method, const char *text,
		      unsigned char out[32])
{
	json_t *p = text ? params(text) : NULL;
	reqstate_digest(method, p, out);
	json_decref(p);
}

#define CALL_PARAMS "{\"name\":\"ask\",\"arguments\":{\"q\":1}}"

/* A state sealed for alice's tools/call of CALL_PARAMS. */
struct sealed {
	char handle[REQSTATE_HANDLE_LEN];
	unsigned char digest[32];
	char *state;
};

static void seal_one(struct reqstate *rs, const char *principal,
		     struct sealed *s)
{
	reqstate_handle(s->handle);
	digest_of("tools/call", CALL_PARAMS, s->digest);
	s->state = reqstate_seal(rs, s->handle, principal, "tools/call",
				 s->digest);
	cr_assert_not_null(s->state);
}

static enum reqstate_verdict open_as(struct reqstate *rs, const char *state,
				     const char *principal,
				     const struct sealed *s, char *handle)
{
	return reqstate_open(rs, state, principal, "tools/call", s->digest,
			     handle);
}

Test(reqstate, a_state_opens_once_for_its_owner_and_names_its_call)
{
	struct reqstate *rs = reqstate_new(0);
	struct sealed s;
	seal_one(rs, "uid:1000", &s);
	cr_assert_leq(strlen(s.state), REQSTATE_MAX_LEN);
	cr_assert_eq(strncmp(s.state, "v1.", 3), 0);
	cr_assert_eq(reqstate_live(rs), 1);
	char h[REQSTATE_HANDLE_LEN] = "x";
	cr_assert_eq(open_as(rs, s.state, "uid:1000", &s, h), REQSTATE_OK);
	cr_assert_str_eq(h, s.handle);
	cr_assert_eq(reqstate_live(rs), 0);
	/* The replay is refused, and still names the call to cancel. */
	memset(h, 0, sizeof h);
	cr_assert_eq(open_as(rs, s.state, "uid:1000", &s, h), REQSTATE_USED);
	cr_assert_str_eq(h, s.handle);
	/* A NULL handle out is allowed. */
	cr_assert_eq(open_as(rs, s.state, "uid:1000", &s, NULL), REQSTATE_USED);
	free(s.state);
	reqstate_free(rs);
}

static const char b64u[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

Test(reqstate, no_changed_character_opens)
{
	struct reqstate *rs = reqstate_new(0);
	struct sealed s;
	seal_one(rs, "uid:1000", &s);
	size_t len = strlen(s.state);
	char *t = strdup(s.state);
	char h[REQSTATE_HANDLE_LEN];
	size_t tampered = 0;
	for (size_t i = 0; i < len; i++) {
		/* Every other character of the alphabet, and each bit of
		 * the byte flipped (a NUL among them cuts the string). */
		char subs[64 + 8];
		size_t n = 0;
		for (const char *c = b64u; *c; c++)
			if (*c != s.state[i])
				subs[n++] = *c;
		for (int b = 0; b < 8; b++)
			subs[n++] = (char)(s.state[i] ^ (1 << b));
		for (size_t k = 0; k < n; k++) {
			t[i] = subs[k];
			strcpy(h, "x");
			enum reqstate_verdict v =
				open_as(rs, t, "uid:1000", &s, h);
			cr_assert(v == REQSTATE_TAMPERED ||
					  v == REQSTATE_MALFORMED,
				  "byte %zu as 0x%02x: %s", i,
				  (unsigned char)subs[k],
				  reqstate_verdict_str(v));
			cr_assert_str_eq(h, "", "no handle without the MAC");
			tampered += v == REQSTATE_TAMPERED;
		}
		t[i] = s.state[i];
	}
	/* Most changes decode and reach the MAC. */
	cr_assert_gt(tampered, len * 40);
	/* None of them spent it. */
	cr_assert_eq(open_as(rs, s.state, "uid:1000", &s, h), REQSTATE_OK);
	free(t);
	free(s.state);
	reqstate_free(rs);
}

Test(reqstate, the_conformance_suites_tamper_is_refused)
{
	struct reqstate *rs = reqstate_new(0);
	struct sealed s;
	seal_one(rs, "uid:1000", &s);
	char *t = malloc(strlen(s.state) + sizeof "-TAMPERED");
	strcpy(t, s.state);
	strcat(t, "-TAMPERED");
	char h[REQSTATE_HANDLE_LEN];
	cr_assert_neq(open_as(rs, t, "uid:1000", &s, h), REQSTATE_OK);
	/* Cut short, too. */
	t[strlen(s.state) - 1] = '\0';
	cr_assert_eq(open_as(rs, t, "uid:1000", &s, h), REQSTATE_MALFORMED);
	cr_assert_eq(open_as(rs, s.state, "uid:1000", &s, h), REQSTATE_OK);
	free(t);
	free(s.state);
	reqstate_free(rs);
}

/* A client that spoilt its state (as the suite's tamper does) gets its
 * call cancelled, so the caller can read the handle unchecked; garbage
 * names nothing. */
Test(reqstate, a_tampered_state_still_names_its_handle_unchecked)
{
	struct reqstate *rs = reqstate_new(0);
	struct sealed s;
	seal_one(rs, "uid:1000", &s);
	char *t = malloc(strlen(s.state) + sizeof "-TAMPERED");
	strcpy(t, s.state);
	strcat(t, "-TAMPERED");
	char h[REQSTATE_HANDLE_LEN] = "x";
	reqstate_peek(t, h);
	cr_assert_str_eq(h, s.handle);
	cr_assert(reqstate_claims(t));
	cr_assert_not(reqstate_claims("AEAD-protected blob"));
	cr_assert_not(reqstate_claims(NULL));
	reqstate_peek("v1.garbage", h);
	cr_assert_str_eq(h, "");
	reqstate_peek("", h);
	cr_assert_str_eq(h, "");
	t[10] = '!';
	reqstate_peek(t, h);
	cr_assert_str_eq(h, "");
	free(t);
	free(s.state);
	reqstate_free(rs);
}

Test(reqstate, what_is_not_a_state_is_malformed)
{
	struct reqstate *rs = reqstate_new(0);
	struct sealed s;
	seal_one(rs, "uid:1000", &s);
	char h[REQSTATE_HANDLE_LEN];
	cr_assert_eq(open_as(rs, NULL, "uid:1000", &s, h), REQSTATE_MALFORMED);
	cr_assert_eq(open_as(rs, "", "uid:1000", &s, h), REQSTATE_MALFORMED);
	cr_assert_eq(open_as(rs, "AEAD-protected blob", "uid:1000", &s, h),
		     REQSTATE_MALFORMED);
	char *t = strdup(s.state);
	t[1] = '2'; /* another version */
	cr_assert_eq(open_as(rs, t, "uid:1000", &s, h), REQSTATE_MALFORMED);
	free(t);
	/* Past the limit: refused unread (the string need not even end
	 * where a shorter one would be looked at). */
	char big[REQSTATE_MAX_LEN + 2];
	memset(big, 'A', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	cr_assert_eq(open_as(rs, big, "uid:1000", &s, h), REQSTATE_MALFORMED);
	cr_assert_eq(reqstate_live(rs), 1);
	free(s.state);
	reqstate_free(rs);
}

Test(reqstate, a_state_expires_after_its_ttl)
{
	struct reqstate *rs = reqstate_new(0);
	struct sealed a, b;
	seal_one(rs, "uid:1000", &a);
	seal_one(rs, "uid:1000", &b);
	char h[REQSTATE_HANDLE_LEN];
	fake_now += REQSTATE_TTL_MS - 1;
	cr_assert_eq(reqstate_live(rs), 2);
	cr_assert_eq(open_as(rs, a.state, "uid:1000", &a, h), REQSTATE_OK);
	fake_now += 1;
	cr_assert_eq(reqstate_live(rs), 0);
	cr_assert_eq(open_as(rs, b.state, "uid:1000", &b, h), REQSTATE_EXPIRED);
	cr_assert_str_eq(h, b.handle);
	/* Expired comes first: a replay or another client hears it too. */
	cr_assert_eq(open_as(rs, a.state, "uid:1000", &a, h), REQSTATE_EXPIRED);
	cr_assert_eq(open_as(rs, b.state, "uid:0", &b, h), REQSTATE_EXPIRED);
	free(a.state);
	free(b.state);
	reqstate_free(rs);
}

Test(reqstate, another_client_cannot_open_or_spend_it)
{
	struct reqstate *rs = reqstate_new(0);
	struct sealed s;
	seal_one(rs, "key:alice", &s);
	char h[REQSTATE_HANDLE_LEN];
	cr_assert_eq(open_as(rs, s.state, "key:bob", &s, h), REQSTATE_FOREIGN);
	cr_assert_str_eq(h, s.handle);
	cr_assert_eq(open_as(rs, s.state, NULL, &s, h), REQSTATE_FOREIGN);
	cr_assert_eq(open_as(rs, s.state, "key:alic", &s, h), REQSTATE_FOREIGN);
	/* Foreign comes before the request: bob learns nothing more. */
	cr_assert_eq(reqstate_open(rs, s.state, "key:bob", "prompts/get",
				   s.digest, h),
		     REQSTATE_FOREIGN);
	cr_assert_eq(reqstate_live(rs), 1);
	cr_assert_eq(open_as(rs, s.state, "key:alice", &s, h), REQSTATE_OK);
	/* And after it is spent, still foreign to bob. */
	cr_assert_eq(open_as(rs, s.state, "key:bob", &s, h), REQSTATE_FOREIGN);
	free(s.state);

	/* NULL is the empty principal. */
	reqstate_handle(s.handle);
	s.state = reqstate_seal(rs, s.handle, NULL, "tools/call", s.digest);
	cr_assert_eq(open_as(rs, s.state, "x", &s, h), REQSTATE_FOREIGN);
	cr_assert_eq(open_as(rs, s.state, "", &s, h), REQSTATE_OK);
	free(s.state);
	reqstate_free(rs);
}

Test(reqstate, another_request_cannot_open_it)
{
	struct reqstate *rs = reqstate_new(0);
	struct sealed s;
	seal_one(rs, "uid:1000", &s);
	char h[REQSTATE_HANDLE_LEN];
	unsigned char other[32];
	digest_of("tools/call", "{\"name\":\"ask\",\"arguments\":{\"q\":2}}",
		  other);
	cr_assert_eq(
		reqstate_open(rs, s.state, "uid:1000", "tools/call", other, h),
		REQSTATE_MISMATCH);
	cr_assert_str_eq(h, s.handle);
	/* The method is bound beside the digest, and in it. */
	cr_assert_eq(reqstate_open(rs, s.state, "uid:1000", "prompts/get",
				   s.digest, h),
		     REQSTATE_MISMATCH);
	digest_of("prompts/get", CALL_PARAMS, other);
	cr_assert_eq(
		reqstate_open(rs, s.state, "uid:1000", "tools/call", other, h),
		REQSTATE_MISMATCH);
	cr_assert_eq(open_as(rs, s.state, "uid:1000", &s, h), REQSTATE_OK);
	/* Spent: the request is still looked at first. */
	cr_assert_eq(reqstate_open(rs, s.state, "uid:1000", "prompts/get",
				   s.digest, h),
		     REQSTATE_MISMATCH);
	free(s.state);
	reqstate_free(rs);
}

Test(reqstate, the_digest_ignores_what_changes_between_rounds)
{
	unsigned char a[32], b[32];
	digest_of("tools/call", CALL_PARAMS, a);
	digest_of("tools/call",
		  "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
		  "\"2026-07-28\"},\"arguments\":{\"q\":1},"
		  "\"inputResponses\":{\"x\":{\"action\":\"accept\"}},"
		  "\"requestState\":\"v1.abc\",\"name\":\"ask\"}",
		  b);
	cr_assert_arr_eq(a, b, 32);
	/* Key order, nested too, and white space do not count. */
	digest_of("tools/call",
		  "{ \"arguments\" : {\"q\":1}, \"name\" : \"ask\" }", b);
	cr_assert_arr_eq(a, b, 32);
	unsigned char c[32], d[32];
	digest_of("tools/call", "{\"arguments\":{\"a\":[1,{\"y\":2,\"x\":3}]}}",
		  c);
	digest_of("tools/call", "{\"arguments\":{\"a\":[1,{\"x\":3,\"y\":2}]}}",
		  d);
	cr_assert_arr_eq(c, d, 32);
	/* The same names deeper down are arguments, and count. */
	digest_of("tools/call",
		  "{\"arguments\":{\"a\":[1,{\"x\":3,\"y\":2}],\"_meta\":1}}",
		  d);
	cr_assert_arr_neq(c, d, 32);
	/* No params is the empty object, and what is left out leaves it. */
	digest_of("tools/call", NULL, c);
	digest_of("tools/call", "{\"_meta\":{}}", d);
	cr_assert_arr_eq(c, d, 32);
	/* Another argument, name or method counts. */
	digest_of("tools/call",
		  "{\"name\":\"ask\",\"arguments\":{\"q\":\"1\"}}", b);
	cr_assert_arr_neq(a, b, 32);
	digest_of("tools/call", "{\"name\":\"Ask\",\"arguments\":{\"q\":1}}",
		  b);
	cr_assert_arr_neq(a, b, 32);
	digest_of("resources/read", CALL_PARAMS, b);
	cr_assert_arr_neq(a, b, 32);
	/* The method ends where the params begin. */
	digest_of("a", "11", c);
	digest_of("a1", "1", d);
	cr_assert_arr_neq(c, d, 32);
}

Test(reqstate, one_runtimes_state_is_nothing_to_another)
{
	struct reqstate *one = reqstate_new(0), *two = reqstate_new(0);
	struct sealed s;
	seal_one(one, "uid:1000", &s);
	char h[REQSTATE_HANDLE_LEN] = "x";
	cr_assert_eq(open_as(two, s.state, "uid:1000", &s, h),
		     REQSTATE_TAMPERED);
	cr_assert_str_eq(h, "");
	cr_assert_eq(open_as(one, s.state, "uid:1000", &s, h), REQSTATE_OK);
	free(s.state);
	reqstate_free(one);
	reqstate_free(two);
}

/* The payload's bytes, decoded as the module does not expose. */
static size_t decode(const char *in, size_t n, unsigned char *out)
{
	size_t o = 0;
	unsigned acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		const char *p = strchr(b64u, in[i]);
		cr_assert_not_null(p);
		acc = (acc << 6) | (unsigned)(p - b64u);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
		}
	}
	return o;
}

static bool contains(const unsigned char *hay, size_t n, const void *needle,
		     size_t k)
{
	for (size_t i = 0; i + k <= n; i++)
		if (memcmp(hay + i, needle, k) == 0)
			return true;
	return false;
}

Test(reqstate, the_state_shows_neither_the_client_nor_the_params)
{
	struct reqstate *rs = reqstate_new(0);
	struct sealed s;
	seal_one(rs, "uid:1000", &s);
	const char *dot = strchr(s.state + 3, '.');
	cr_assert_not_null(dot);
	unsigned char payload[REQSTATE_MAX_LEN];
	size_t n = decode(s.state + 3, (size_t)(dot - s.state - 3), payload);
	unsigned char d[32];
	sha256_bytes("uid:1000", strlen("uid:1000"), d);
	cr_assert_not(contains(payload, n, "uid:1000", 8));
	cr_assert_not(contains(payload, n, d, 8), "no plain hash of it");
	cr_assert_not(contains(payload, n, s.digest, 8));
	cr_assert_null(strstr(s.state, "uid"));
	/* The handle is all it names. */
	unsigned char hb[16];
	unhex(s.handle, hb, sizeof hb);
	cr_assert(contains(payload, n, hb, sizeof hb));
	free(s.state);
	reqstate_free(rs);
}

Test(reqstate, the_table_keeps_at_most_max_live_dropping_the_oldest)
{
	struct reqstate *rs = reqstate_new(4);
	struct sealed s[6];
	char h[REQSTATE_HANDLE_LEN];
	for (int i = 0; i < 6; i++) {
		seal_one(rs, "uid:1000", &s[i]);
		cr_assert_leq(reqstate_live(rs), 4);
		fake_now += 1;
	}
	cr_assert_eq(reqstate_live(rs), 4);
	cr_assert_eq(open_as(rs, s[0].state, "uid:1000", &s[0], h),
		     REQSTATE_USED);
	cr_assert_eq(open_as(rs, s[1].state, "uid:1000", &s[1], h),
		     REQSTATE_USED);
	cr_assert_str_eq(h, s[1].handle);
	for (int i = 2; i < 6; i++)
		cr_assert_eq(open_as(rs, s[i].state, "uid:1000", &s[i], h),
			     REQSTATE_OK, "state %d", i);
	cr_assert_eq(reqstate_live(rs), 0);
	for (int i = 0; i < 6; i++)
		free(s[i].state);
	reqstate_free(rs);
}

Test(reqstate, expired_states_are_not_live)
{
	struct reqstate *rs = reqstate_new(8);
	struct sealed s;
	/* Many more than max_live over time, none opened: only those of
	 * the last TTL count (ASan sees that the swept ones are freed). */
	for (int i = 0; i < 100; i++) {
		seal_one(rs, "uid:1000", &s);
		free(s.state);
		cr_assert_leq(reqstate_live(rs), 8);
		fake_now += REQSTATE_TTL_MS / 3;
	}
	cr_assert_leq(reqstate_live(rs), 3);
	fake_now += REQSTATE_TTL_MS;
	cr_assert_eq(reqstate_live(rs), 0);
	reqstate_free(rs);
}

Test(reqstate, a_forgotten_state_is_used)
{
	struct reqstate *rs = reqstate_new(0);
	struct sealed a, b;
	seal_one(rs, "uid:1000", &a);
	seal_one(rs, "uid:1000", &b);
	char h[REQSTATE_HANDLE_LEN];
	reqstate_forget(rs, a.handle);
	reqstate_forget(rs, a.handle);
	reqstate_forget(rs, "not a handle");
	reqstate_forget(rs, NULL);
	cr_assert_eq(reqstate_live(rs), 1);
	cr_assert_eq(open_as(rs, a.state, "uid:1000", &a, h), REQSTATE_USED);
	cr_assert_str_eq(h, a.handle);
	cr_assert_eq(open_as(rs, b.state, "uid:1000", &b, h), REQSTATE_OK);
	free(a.state);
	free(b.state);
	reqstate_free(rs);
}

Test(reqstate, the_next_round_of_a_call_replaces_its_state)
{
	struct reqstate *rs = reqstate_new(0);
	struct sealed s;
	seal_one(rs, "uid:1000", &s);
	char h[REQSTATE_HANDLE_LEN];
	cr_assert_eq(open_as(rs, s.state, "uid:1000", &s, h), REQSTATE_OK);
	/* Round two waits under the same handle: a new state, and the
	 * first one stays spent. */
	char *two =
		reqstate_seal(rs, s.handle, "uid:1000", "tools/call", s.digest);
	cr_assert_str_neq(two, s.state);
	cr_assert_eq(open_as(rs, s.state, "uid:1000", &s, h), REQSTATE_USED);
	/* Sealed again before it was used: only the newest is good. */
	char *three =
		reqstate_seal(rs, s.handle, "uid:1000", "tools/call", s.digest);
	cr_assert_eq(reqstate_live(rs), 1);
	cr_assert_eq(open_as(rs, two, "uid:1000", &s, h), REQSTATE_USED);
	cr_assert_eq(open_as(rs, three, "uid:1000", &s, h), REQSTATE_OK);
	cr_assert_str_eq(h, s.handle);
	free(two);
	free(three);
	free(s.state);
	reqstate_free(rs);
}

Test(reqstate, a_handle_must_be_one)
{
	struct reqstate *rs = reqstate_new(0);
	unsigned char d[32] = {0};
	cr_assert_null(reqstate_seal(rs, NULL, "p", "tools/call", d));
	cr_assert_null(reqstate_seal(rs, "", "p", "tools/call", d));
	cr_assert_null(reqstate_seal(rs, "0123456789ABCDEF0123456789abcdef",
				     "p", "tools/call", d));
	cr_assert_null(reqstate_seal(rs, "0123456789abcdef0123456789abcde", "p",
				     "tools/call", d));
	cr_assert_null(reqstate_seal(rs, "0123456789abcdef0123456789abcdef0",
				     "p", "tools/call", d));
	cr_assert_eq(reqstate_live(rs), 0);
	char *s = reqstate_seal(rs, "0123456789abcdef0123456789abcdef", "p",
				"tools/call", d);
	cr_assert_not_null(s);
	char h[REQSTATE_HANDLE_LEN];
	cr_assert_eq(reqstate_open(rs, s, "p", "tools/call", d, h),
		     REQSTATE_OK);
	cr_assert_str_eq(h, "0123456789abcdef0123456789abcdef");
	free(s);
	/* Two fresh handles differ. */
	char a[REQSTATE_HANDLE_LEN], b[REQSTATE_HANDLE_LEN];
	reqstate_handle(a);
	reqstate_handle(b);
	cr_assert_eq(strlen(a), REQSTATE_HANDLE_LEN - 1);
	cr_assert_str_neq(a, b);
	reqstate_free(rs);
}

Test(reqstate, each_verdict_has_its_own_short_reason)
{
	enum reqstate_verdict all[] = {
		REQSTATE_OK,	   REQSTATE_MALFORMED, REQSTATE_TAMPERED,
		REQSTATE_EXPIRED,  REQSTATE_USED,      REQSTATE_FOREIGN,
		REQSTATE_MISMATCH,
	};
	size_t n = sizeof all / sizeof all[0];
	for (size_t i = 0; i < n; i++) {
		const char *s = reqstate_verdict_str(all[i]);
		cr_assert_not_null(s);
		cr_assert_lt(strlen(s), 64);
		cr_assert_eq(strncmp(s, "requestState ", 13), 0, "%s", s);
		for (size_t k = 0; k < i; k++)
			cr_assert_str_neq(s, reqstate_verdict_str(all[k]));
	}
	cr_assert_str_eq(reqstate_verdict_str(REQSTATE_TAMPERED),
			 "requestState integrity check failed");
	reqstate_free(NULL);
}
