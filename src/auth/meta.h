/*
 * The JSON documents of OAuth, read into structs with named limits: the
 * protected resource metadata (RFC 9728), the authorization server metadata
 * (RFC 8414, OpenID Connect Discovery), the token response (RFC 6749 5.1),
 * an error response (5.2) and the registration response (RFC 7591). Every
 * one comes from a server: a field of the wrong type, a string too long or
 * a list too long refuses the document.
 */
#ifndef MCPV_AUTH_META_H
#define MCPV_AUTH_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define META_MAX_DOC (64 * 1024)   /* a metadata or registration document */
#define META_MAX_URL 2048	   /* an endpoint, issuer or resource */
#define META_MAX_LIST 64	   /* entries of a list */
#define META_MAX_WORD 256	   /* a scope, a method name */
#define META_MAX_TOKEN (16 * 1024) /* an access or refresh token */
#define META_MAX_TEXT 1024	   /* error_description, client_name */

/* A list of strings; present false when the field was absent. */
struct meta_list {
	char **v;
	size_t n;
	bool present;
};

bool meta_list_has(const struct meta_list *l, const char *s);

struct meta_prm {
	char *resource; /* as published, never normalised */
	struct meta_list authorization_servers;
	struct meta_list scopes_supported;
};

struct meta_as {
	char *issuer;
	char *authorization_endpoint;
	char *token_endpoint;
	char *registration_endpoint; /* NULL: no DCR */
	struct meta_list scopes_supported;
	struct meta_list response_types_supported;
	struct meta_list code_challenge_methods_supported;
	struct meta_list token_endpoint_auth_methods_supported;
	bool client_id_metadata_document_supported;
	/* authorization_response_iss_parameter_supported (RFC 9207) */
	bool iss_parameter_supported;
};

struct meta_token {
	char *access_token;  /* secret */
	char *token_type;    /* "Bearer" (checked, case-insensitive) */
	char *refresh_token; /* secret; NULL: none */
	char *scope;	     /* NULL: not said */
	int64_t expires_in;  /* seconds; -1: not said */
};

struct meta_error {
	/* "invalid_grant"...; NULL when absent or when it holds a byte
	 * RFC 6749 5.2 excludes (both are shown to the user) */
	char *error;
	char *error_description; /* the same */
};

struct meta_client {
	char *client_id;
	char *client_secret;		  /* secret; NULL: a public client */
	char *token_endpoint_auth_method; /* NULL: not said */
	int64_t client_secret_expires_at; /* 0: never */
};

/* Each parser: 0 with out filled, -EINVAL (not JSON, a required field
 * missing, a wrong type) or -E2BIG (a limit); *why (static) says which. */
int meta_parse_prm(const char *doc, size_t len, struct meta_prm *out,
		   const char **why);
int meta_parse_as(const char *doc, size_t len, struct meta_as *out,
		  const char **why);
int meta_parse_token(const char *doc, size_t len, struct meta_token *out,
		     const char **why);
int meta_parse_error(const char *doc, size_t len, struct meta_error *out);
int meta_parse_client(const char *doc, size_t len, struct meta_client *out,
		      const char **why);

void meta_prm_clear(struct meta_prm *m);
void meta_as_clear(struct meta_as *m);
void meta_token_clear(struct meta_token *m); /* wipes the secrets */
void meta_error_clear(struct meta_error *m);
void meta_client_clear(struct meta_client *m);

/* Overwrites a secret string's bytes and frees it. NULL does nothing. */
void meta_wipe(char *s);

#endif
