/*
 * Internal to src/auth: one OAuth HTTP exchange on the loop's client (a
 * metadata GET, a registration, token or probe POST), its answer kept
 * whole up to a limit, redirects never followed (httpc follows none), the
 * headers OAuth reads copied out. Every URL is checked with urls_secure
 * before it goes.
 */
#ifndef MCPV_AUTH_FETCH_H
#define MCPV_AUTH_FETCH_H

#include <stddef.h>
#include <stdint.h>

struct httpc;
struct afetch;

#define AFETCH_MAX_BODY (256 * 1024)

struct afetch_opts {
	const char *method; /* "GET", "POST" */
	const char *url;
	/* "Name: value" lines, NULL-terminated (may hold a secret: never
	 * logged); Accept defaults to application/json. */
	const char *const *headers;
	const char *body;
	size_t body_len;
	size_t max_body;     /* 0: META_MAX_DOC */
	uint64_t timeout_ms; /* 0: AUTH_HTTP_TIMEOUT_MS */
};

struct afetch_result {
	int err;	  /* 0, or -errno: no answer (why says so) */
	const char *why;  /* static or the client's; no secret */
	int status;	  /* also with -EMSGSIZE (the body was cut) */
	const char *body; /* NUL-terminated; "" when none */
	size_t len;
	/* Every WWW-Authenticate line joined with ", "; NULL when none. */
	const char *www_authenticate;
	const char *content_type;   /* NULL when none */
	const char *mcp_session_id; /* NULL when none */
};

/* Called once (never from inside afetch_start); the result is valid for
 * the call only. */
typedef void (*afetch_cb)(void *arg, const struct afetch_result *r);

/* 0 and *out (may be NULL), -EINVAL (the URL is not https, nor http on
 * loopback), or -errno. */
int afetch_start(struct httpc *h, const struct afetch_opts *o, afetch_cb cb,
		 void *arg, struct afetch **out);
/* No callback after this. Inside its own callback: nothing to do. NULL
 * does nothing. */
void afetch_cancel(struct afetch *f);

#endif
