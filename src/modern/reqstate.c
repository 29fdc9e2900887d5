/*
 * The requestState seal: the runtime's key, the states sealed and not yet
 * opened (a bounded table, oldest first), and the checks that open one. A
 * state is "v1." base64url(payload) "." base64url(HMAC-SHA-256 of it),
 * every part of fixed length, so anything else is refused before it is
 * decoded.
 */
#include "modern/reqstate.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "util/clock.h"
#include "util/hmap.h"
#include "util/random.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

#define RS_DEFAULT_MAX_LIVE 4096
#define RS_KEY_BYTES 32
#define RS_HANDLE_BYTES 16

/* The payload: handle, seal serial, expiry (big-endian), principal tag,
 * request tag. The serial tells two rounds of one handle apart, so a
 * state opened in round one cannot be spent again once round two has
 * sealed the same handle. */
#define RS_OFF_HANDLE 0
#define RS_OFF_SERIAL 16
#define RS_OFF_EXPIRY 24
#define RS_OFF_PRINCIPAL 32
#define RS_OFF_REQUEST 64
#define RS_PAYLOAD_BYTES 96

/* base64url without padding of n bytes. */
#define RS_B64_LEN(n) (((n)*4 + 2) / 3)
#define RS_PREFIX "v1."
#define RS_PREFIX_LEN 3
#define RS_PAYLOAD_CHARS RS_B64_LEN(RS_PAYLOAD_BYTES)
#define RS_MAC_CHARS RS_B64_LEN(SHA256_BYTES)
#define RS_STATE_LEN (RS_PREFIX_LEN + RS_PAYLOAD_CHARS + 1 + RS_MAC_CHARS)

_Static_assert(RS_STATE_LEN <= REQSTATE_MAX_LEN, "a state fits its limit");
_Static_assert(REQSTATE_HANDLE_LEN == 2 * RS_HANDLE_BYTES + 1,
	       "a handle is its bytes in hex");

/* What each HMAC under the one key is of, so no tag can stand for
 * another. */
#define RS_LABEL_MAC "mcpvisor requestState v1 mac"
#define RS_LABEL_PRINCIPAL "mcpvisor requestState v1 principal"
#define RS_LABEL_REQUEST "mcpvisor requestState v1 request"
#define RS_LABEL_MAX 64
_Static_assert(sizeof RS_LABEL_PRINCIPAL <= RS_LABEL_MAX &&
		       sizeof RS_LABEL_REQUEST <= RS_LABEL_MAX,
	       "a tag's label fits rs_tag's buffer");

/* A live state: sealed, not yet opened, forgotten or swept. */
struct rs_entry {
	struct rs_entry *prev, *next; /* in the order sealed */
	unsigned char handle[RS_HANDLE_BYTES];
	uint64_t serial;
	uint64_t expiry_ms;
};

struct reqstate {
	unsigned char key[RS_KEY_BYTES];
	size_t max_live;
	uint64_t serial;
	/* By the handle's first 8 bytes (random already); several entries
	 * may share them. */
	struct hmap live;
	/* Oldest first: sealed with one TTL on a monotonic clock, so the
	 * head is also the first to expire. */
	struct rs_entry *head, *tail;
};

/* Exactly RS_B64_LEN(n) characters into n bytes (canonical: no flipped
 * character decodes to the same bytes). */
static bool rs_b64u_decode(const char *in, unsigned char *out, size_t n)
{
	/* RS_B64_LEN(n) characters hold at most n bytes. */
	return base64_decode(in, RS_B64_LEN(n), out, BASE64_URL, false) ==
	       (long)n;
}

static void rs_put64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (unsigned char)v;
		v >>= 8;
	}
}

static uint64_t rs_get64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

/* 2n lowercase hex digits into n bytes; false for anything else. */
static bool rs_unhex(const char *hex, unsigned char *out, size_t n)
{
	for (size_t i = 0; i < 2 * n; i++) {
		char c = hex[i];
		int v;
		if (c >= '0' && c <= '9')
			v = c - '0';
		else if (c >= 'a' && c <= 'f')
			v = c - 'a' + 10;
		else
			return false;
		if (i % 2 == 0)
			out[i / 2] = (unsigned char)(v << 4);
		else
			out[i / 2] |= (unsigned char)v;
	}
	return hex[2 * n] == '\0';
}

static void rs_hex(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/* HMAC(key, label NUL digest): a tag for one kind of thing. */
static void rs_tag(const struct reqstate *rs, const char *label,
		   const unsigned char digest[32], unsigned char out[32])
{
	unsigned char msg[RS_LABEL_MAX + SHA256_BYTES];
	size_t ll = strlen(label) + 1;
	memcpy(msg, label, ll);
	memcpy(msg + ll, digest, SHA256_BYTES);
	sha256_hmac(rs->key, sizeof rs->key, msg, ll + SHA256_BYTES, out);
}

/* Keyed, so a state shows neither the principal (a uid is easily guessed
 * from its plain hash) nor the params. */
static void rs_principal_tag(const struct reqstate *rs, const char *principal,
			     unsigned char out[32])
{
	unsigned char d[SHA256_BYTES];
	if (principal == NULL)
		principal = "";
	sha256_bytes(principal, strlen(principal), d);
	rs_tag(rs, RS_LABEL_PRINCIPAL, d, out);
}

static void rs_request_tag(const struct reqstate *rs, const char *method,
			   const unsigned char digest[32],
			   unsigned char out[32])
{
	unsigned char d[SHA256_BYTES];
	struct sha256_ctx *c = sha256_new();
	if (method == NULL)
		method = "";
	/* The method's NUL ends it: no method runs into the digest. */
	sha256_update(c, method, strlen(method) + 1);
	sha256_update(c, digest, SHA256_BYTES);
	sha256_final(c, d);
	sha256_free(c);
	rs_tag(rs, RS_LABEL_REQUEST, d, out);
}

static void rs_mac(const struct reqstate *rs,
		   const unsigned char payload[RS_PAYLOAD_BYTES],
		   unsigned char out[32])
{
	unsigned char msg[sizeof RS_LABEL_MAC + RS_PAYLOAD_BYTES];
	memcpy(msg, RS_LABEL_MAC, sizeof RS_LABEL_MAC);
	memcpy(msg + sizeof RS_LABEL_MAC, payload, RS_PAYLOAD_BYTES);
	sha256_hmac(rs->key, sizeof rs->key, msg, sizeof msg, out);
}

static uint64_t rs_map_key(const unsigned char handle[RS_HANDLE_BYTES])
{
	return rs_get64(handle);
}

static struct rs_entry *rs_find(const struct reqstate *rs,
				const unsigned char handle[RS_HANDLE_BYTES])
{
	for (struct hmap_node *n = hmap_first(&rs->live, rs_map_key(handle)); n;
	     n = hmap_next(n)) {
		struct rs_entry *e = n->val;
		if (memcmp(e->handle, handle, RS_HANDLE_BYTES) == 0)
			return e;
	}
	return NULL;
}

static void rs_remove(struct reqstate *rs, struct rs_entry *e)
{
	hmap_del(&rs->live, rs_map_key(e->handle), e);
	if (e->prev)
		e->prev->next = e->next;
	else
		rs->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		rs->tail = e->prev;
	free(e);
}

/* Drops the expired states, which wait at the head. */
static void rs_sweep(struct reqstate *rs, uint64_t now)
{
	while (rs->head && rs->head->expiry_ms <= now)
		rs_remove(rs, rs->head);
}

struct reqstate *reqstate_new(size_t max_live)
{
	struct reqstate *rs = xcalloc(1, sizeof *rs);
	char hex[2 * RS_KEY_BYTES + 1];
	random_hex(hex, RS_KEY_BYTES);
	rs_unhex(hex, rs->key, RS_KEY_BYTES);
	explicit_bzero(hex, sizeof hex);
	rs->max_live = max_live ? max_live : RS_DEFAULT_MAX_LIVE;
	hmap_init(&rs->live);
	return rs;
}

void reqstate_free(struct reqstate *rs)
{
	if (rs == NULL)
		return;
	while (rs->head)
		rs_remove(rs, rs->head);
	hmap_free(&rs->live);
	explicit_bzero(rs->key, sizeof rs->key);
	free(rs);
}

static int rs_digest_write_cb(const char *buf, size_t size, void *data)
{
	sha256_update(data, buf, size);
	return 0;
}

void reqstate_digest(const char *method, json_t *params, unsigned char out[32])
{
	struct sha256_ctx *c = sha256_new();
	if (method == NULL)
		method = "";
	/* The method's NUL ends it: JSON text never holds a raw NUL, so no
	 * method and params read as another pair. */
	sha256_update(c, method, strlen(method) + 1);
	json_t *p;
	if (params == NULL) {
		p = json_object();
	} else if (json_is_object(params)) {
		/* A shallow copy: the members that change between rounds
		 * go, the rest are shared. */
		p = json_copy(params);
		json_object_del(p, "_meta");
		json_object_del(p, "inputResponses");
		json_object_del(p, "requestState");
	} else {
		p = json_incref(params);
	}
	json_dump_callback(p, rs_digest_write_cb, c,
			   JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	json_decref(p);
	sha256_final(c, out);
	sha256_free(c);
}

void reqstate_handle(char out[REQSTATE_HANDLE_LEN])
{
	random_hex(out, RS_HANDLE_BYTES);
}

char *reqstate_seal(struct reqstate *rs, const char *handle,
		    const char *principal, const char *method,
		    const unsigned char digest[32])
{
	unsigned char payload[RS_PAYLOAD_BYTES];
	unsigned char mac[SHA256_BYTES];
	if (handle == NULL ||
	    strnlen(handle, REQSTATE_HANDLE_LEN) != REQSTATE_HANDLE_LEN - 1 ||
	    !rs_unhex(handle, payload + RS_OFF_HANDLE, RS_HANDLE_BYTES))
		return NULL;
	uint64_t now = clock_now_ms();
	rs_sweep(rs, now);
	struct rs_entry *old = rs_find(rs, payload + RS_OFF_HANDLE);
	if (old)
		rs_remove(rs, old);
	while (rs->live.n >= rs->max_live)
		rs_remove(rs, rs->head);

	struct rs_entry *e = xcalloc(1, sizeof *e);
	memcpy(e->handle, payload + RS_OFF_HANDLE, RS_HANDLE_BYTES);
	e->serial = ++rs->serial;
	e->expiry_ms = now + REQSTATE_TTL_MS;
	rs_put64(payload + RS_OFF_SERIAL, e->serial);
	rs_put64(payload + RS_OFF_EXPIRY, e->expiry_ms);
	rs_principal_tag(rs, principal, payload + RS_OFF_PRINCIPAL);
	rs_request_tag(rs, method, digest, payload + RS_OFF_REQUEST);
	rs_mac(rs, payload, mac);

	e->prev = rs->tail;
	if (rs->tail)
		rs->tail->next = e;
	else
		rs->head = e;
	rs->tail = e;
	hmap_put(&rs->live, rs_map_key(e->handle), e);

	char *s = xmalloc(RS_STATE_LEN + 1);
	memcpy(s, RS_PREFIX, RS_PREFIX_LEN);
	base64_encode(s + RS_PREFIX_LEN, payload, RS_PAYLOAD_BYTES, BASE64_URL,
		      false);
	s[RS_PREFIX_LEN + RS_PAYLOAD_CHARS] = '.';
	base64_encode(s + RS_PREFIX_LEN + RS_PAYLOAD_CHARS + 1, mac,
		      SHA256_BYTES, BASE64_URL, false);
	return s;
}

enum reqstate_verdict reqstate_open(struct reqstate *rs, const char *state,
				    const char *principal, const char *method,
				    const unsigned char digest[32],
				    char handle[REQSTATE_HANDLE_LEN])
{
	unsigned char payload[RS_PAYLOAD_BYTES];
	unsigned char mac[SHA256_BYTES], want[SHA256_BYTES];
	if (handle)
		handle[0] = '\0';
	/* The form first, on a length that is bounded before anything is
	 * read past it. */
	if (state == NULL ||
	    strnlen(state, REQSTATE_MAX_LEN + 1) != RS_STATE_LEN ||
	    memcmp(state, RS_PREFIX, RS_PREFIX_LEN) != 0 ||
	    state[RS_PREFIX_LEN + RS_PAYLOAD_CHARS] != '.' ||
	    !rs_b64u_decode(state + RS_PREFIX_LEN, payload, RS_PAYLOAD_BYTES) ||
	    !rs_b64u_decode(state + RS_PREFIX_LEN + RS_PAYLOAD_CHARS + 1, mac,
			    SHA256_BYTES))
		return REQSTATE_MALFORMED;
	rs_mac(rs, payload, want);
	if (!sha256_equal(mac, want))
		return REQSTATE_TAMPERED;

	/* Authentic from here: the handle is ours to name. */
	if (handle)
		rs_hex(payload + RS_OFF_HANDLE, RS_HANDLE_BYTES, handle);
	uint64_t now = clock_now_ms();
	rs_sweep(rs, now);
	if (rs_get64(payload + RS_OFF_EXPIRY) <= now)
		return REQSTATE_EXPIRED;
	unsigned char tag[SHA256_BYTES];
	rs_principal_tag(rs, principal, tag);
	if (!sha256_equal(tag, payload + RS_OFF_PRINCIPAL))
		return REQSTATE_FOREIGN;
	rs_request_tag(rs, method, digest, tag);
	if (!sha256_equal(tag, payload + RS_OFF_REQUEST))
		return REQSTATE_MISMATCH;
	struct rs_entry *e = rs_find(rs, payload + RS_OFF_HANDLE);
	if (e == NULL || e->serial != rs_get64(payload + RS_OFF_SERIAL))
		return REQSTATE_USED;
	rs_remove(rs, e);
	return REQSTATE_OK;
}

bool reqstate_claims(const char *state)
{
	return state && strncmp(state, RS_PREFIX, RS_PREFIX_LEN) == 0;
}

void reqstate_peek(const char *state, char handle[REQSTATE_HANDLE_LEN])
{
	unsigned char payload[RS_PAYLOAD_BYTES];
	handle[0] = '\0';
	size_t n = state ? strnlen(state, REQSTATE_MAX_LEN + 1) : 0;
	if (n > REQSTATE_MAX_LEN || n <= RS_PREFIX_LEN + RS_PAYLOAD_CHARS ||
	    memcmp(state, RS_PREFIX, RS_PREFIX_LEN) != 0 ||
	    state[RS_PREFIX_LEN + RS_PAYLOAD_CHARS] != '.' ||
	    !rs_b64u_decode(state + RS_PREFIX_LEN, payload, RS_PAYLOAD_BYTES))
		return;
	rs_hex(payload + RS_OFF_HANDLE, RS_HANDLE_BYTES, handle);
}

void reqstate_forget(struct reqstate *rs, const char *handle)
{
	unsigned char h[RS_HANDLE_BYTES];
	if (handle == NULL ||
	    strnlen(handle, REQSTATE_HANDLE_LEN) != REQSTATE_HANDLE_LEN - 1 ||
	    !rs_unhex(handle, h, RS_HANDLE_BYTES))
		return;
	struct rs_entry *e = rs_find(rs, h);
	if (e)
		rs_remove(rs, e);
}

const char *reqstate_verdict_str(enum reqstate_verdict v)
{
	switch (v) {
	case REQSTATE_OK:
		return "requestState accepted";
	case REQSTATE_MALFORMED:
		return "requestState malformed";
	case REQSTATE_TAMPERED:
		return "requestState integrity check failed";
	case REQSTATE_EXPIRED:
		return "requestState expired";
	case REQSTATE_USED:
		return "requestState already used";
	case REQSTATE_FOREIGN:
		return "requestState belongs to another client";
	case REQSTATE_MISMATCH:
		return "requestState does not match this request";
	}
	return "requestState refused";
}

size_t reqstate_live(const struct reqstate *rs)
{
	/* Expired states not swept yet are not live; they wait at the
	 * head, so only those are walked. */
	uint64_t now = clock_now_ms();
	size_t n = rs->live.n;
	for (const struct rs_entry *e = rs->head; e && e->expiry_ms <= now;
	     e = e->next)
		n--;
	return n;
}
